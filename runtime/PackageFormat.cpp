//===- PackageFormat.cpp - writing and verifying package files ------------===//
#include "runtime/PackageFormat.h"

#include "runtime/ArtifactCache.h"
#include "runtime/ByteStream.h"

#include <sodium.h>
#include <torch/version.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <stdexcept>

namespace tgc {

namespace {

constexpr char kMagic[8] = {'T', 'G', 'C', 'P', 'K', 'G', '\r', '\n'};
constexpr size_t kHashChars = 16;
constexpr size_t kVersionChars = 32;
/// No section of a sane package decompresses past this.
constexpr uint64_t kMaxRawBytes = uint64_t(1) << 36;

using Kind = PackageError::Kind;

std::string padded(const std::string &s) {
  std::string out = s.substr(0, kVersionChars);
  out.resize(kVersionChars, '\0');
  return out;
}

std::string unpadded(const std::string &s) { return s.substr(0, s.find('\0')); }

std::string compress(const std::string &raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  if (ZSTD_isError(n))
    throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::string decompress(const std::string &stored, uint64_t raw, const std::string &name) {
  unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (raw > kMaxRawBytes || declared != raw)
    throw PackageError(Kind::Checksum, "section " + name + " declares " + std::to_string(raw) +
                                           " bytes but its zstd frame disagrees");
  // Streamed into a buffer that grows with what really comes out: a
  // declared size is a claim, and a few hostile bytes must not reserve
  // gigabytes.
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream *)> ds(ZSTD_createDStream(),
                                                                ZSTD_freeDStream);
  if (!ds)
    throw std::runtime_error("zstd: out of memory");
  std::string out(std::min<uint64_t>(raw, uint64_t(1) << 20), '\0');
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  size_t produced = 0;
  for (;;) {
    if (produced == out.size() && out.size() < raw)
      out.resize(std::min<uint64_t>(raw, uint64_t(out.size()) * 2));
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    const size_t before = in.pos;
    size_t rc = ZSTD_decompressStream(ds.get(), &o, &in);
    if (ZSTD_isError(rc))
      throw PackageError(Kind::Checksum, "section " + name + " does not decompress: " +
                                             ZSTD_getErrorName(rc));
    const bool progressed = o.pos != produced || in.pos != before;
    produced = o.pos;
    if (rc == 0)
      break; // the frame is complete
    if (!progressed) // more output than declared, or the input ended inside the frame
      throw PackageError(Kind::Checksum, "section " + name + " does not decompress to the " +
                                             std::to_string(raw) + " bytes it declares");
  }
  if (produced != raw || in.pos != in.size)
    throw PackageError(Kind::Checksum, "section " + name + " decompresses to " +
                                           std::to_string(produced) + " bytes, not the " +
                                           std::to_string(raw) + " it declares");
  out.resize(produced);
  return out;
}

/// Throws unless the stored checksum `hash` matches `data`.
void checkHash(const std::string &data, const std::string &hash, const std::string &what,
               const std::string &file) {
  std::string actual = contentHash(data);
  if (actual != hash)
    throw PackageError(Kind::Checksum, file + ": checksum mismatch in " + what + " (stored " +
                                           hash + ", computed " + actual +
                                           "): the package is corrupt");
}

constexpr char kSignatureSection[] = "signature";
constexpr char kSignatureMagic[8] = {'T', 'G', 'C', 'S', 'I', 'G', '1', '\0'};
constexpr size_t kSignatureBytes = 8 + crypto_sign_PUBLICKEYBYTES + crypto_sign_BYTES;

void initSodium() {
  static const int rc = sodium_init();
  if (rc < 0)
    throw std::runtime_error("libsodium does not initialize");
}

std::string hex(const std::string &bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char *>(bytes.data()),
                 bytes.size());
  out.pop_back();
  return out;
}

/// `text` is "<prefix> <hex of n bytes>" (or, with an empty prefix allowed,
/// just the hex): the n bytes.
std::string parseKey(const std::string &text, const std::string &prefix, size_t n,
                     bool bareHexAllowed) {
  std::string t = text;
  while (!t.empty() && std::isspace((unsigned char)t.back()))
    t.pop_back();
  size_t start = t.find_first_not_of(" \t\r\n");
  t = start == std::string::npos ? "" : t.substr(start);
  if (t.rfind(prefix + " ", 0) == 0)
    t = t.substr(prefix.size() + 1);
  else if (!bareHexAllowed)
    throw std::invalid_argument("not a " + prefix + " file (tgc-aot keygen writes one)");
  std::string bytes(n, '\0');
  size_t got = 0;
  const char *end = nullptr;
  if (t.size() != 2 * n ||
      sodium_hex2bin(reinterpret_cast<unsigned char *>(bytes.data()), n, t.data(), t.size(),
                     nullptr, &got, &end) != 0 ||
      got != n)
    throw std::invalid_argument("a " + prefix + " is " + std::to_string(2 * n) +
                                " hex digits after '" + prefix + " '");
  return bytes;
}

/// One section as the signature covers it.
struct StoredSection {
  std::string name;
  bool compressed = false;
  uint64_t raw = 0;
  std::string stored;
};

/// The digest a package signature signs (see PackageFormat.h).
std::string signedDigest(const std::string &headerFields, const std::vector<StoredSection> &all) {
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, crypto_generichash_BYTES_MAX);
  auto add = [&](const void *p, size_t n) {
    crypto_generichash_update(&st, static_cast<const unsigned char *>(p), n);
  };
  static const char domain[] = "tgc-package-signature-v1";
  add(domain, sizeof domain); // with its NUL
  add(headerFields.data(), headerFields.size());
  for (const StoredSection &s : all) {
    if (s.name == kSignatureSection)
      continue;
    uint32_t nameLen = s.name.size();
    uint8_t comp = s.compressed ? 1 : 0;
    uint64_t raw = s.raw, stored = s.stored.size();
    add(&nameLen, 4);
    add(s.name.data(), s.name.size());
    add(&comp, 1);
    add(&raw, 8);
    add(&stored, 8);
    add(s.stored.data(), s.stored.size());
  }
  std::string digest(crypto_generichash_BYTES_MAX, '\0');
  crypto_generichash_final(&st, reinterpret_cast<unsigned char *>(digest.data()), digest.size());
  return digest;
}

/// Throws PackageError(Signature) unless `all` holds a valid signature by
/// one of `trustedKeys` over the other sections.
void checkSignature(const std::string &headerFields, const std::vector<StoredSection> &all,
                    const std::vector<std::string> &trustedKeys, const std::string &what) {
  initSodium();
  const StoredSection *sig = nullptr;
  for (const StoredSection &s : all)
    if (s.name == kSignatureSection)
      sig = &s;
  if (!sig)
    throw PackageError(Kind::Signature,
                       what + " is not signed, and a signature by one of " +
                           std::to_string(trustedKeys.size()) +
                           " trusted key(s) is required (sign it with tgc-aot compile --sign)");
  if (sig->compressed || sig->stored.size() != kSignatureBytes ||
      sig->stored.compare(0, 8, kSignatureMagic, 8) != 0)
    throw PackageError(Kind::Signature, what + ": its signature section is malformed");
  std::string signer = sig->stored.substr(8, crypto_sign_PUBLICKEYBYTES);
  bool trusted = false;
  for (const std::string &k : trustedKeys)
    trusted = trusted || k == signer;
  if (!trusted)
    throw PackageError(Kind::Signature, what + " is signed by key " + hex(signer) +
                                            ", which is not one of the trusted keys");
  std::string digest = signedDigest(headerFields, all);
  const auto *sigBytes =
      reinterpret_cast<const unsigned char *>(sig->stored.data() + 8 + crypto_sign_PUBLICKEYBYTES);
  if (crypto_sign_verify_detached(sigBytes, reinterpret_cast<const unsigned char *>(digest.data()),
                                  digest.size(),
                                  reinterpret_cast<const unsigned char *>(signer.data())) != 0)
    throw PackageError(Kind::Signature, what + ": the signature does not match its contents: "
                                               "the package was modified after it was signed");
}

/// Checks magic, versions and header checksum; returns (count, table bytes).
std::pair<uint64_t, uint64_t> readHeader(const std::string &file, const std::string &what) {
  if (file.size() < sizeof(kMagic) || file.compare(0, 8, kMagic, 8) != 0)
    throw PackageError(Kind::Format, what + " is not a tgc package (no TGCPKG magic)");
  if (file.size() < kPackageHeaderBytes)
    throw PackageError(Kind::Checksum, what + " is truncated: " + std::to_string(file.size()) +
                                           " bytes, shorter than the package header");
  Reader r(file);
  r.raw(8);
  uint32_t format = r.u32();
  r.u32();
  std::string tgcVersion = unpadded(r.raw(kVersionChars));
  std::string torchVersion = unpadded(r.raw(kVersionChars));
  if (format != kPackageFormat)
    throw PackageError(Kind::Version, what + " has package format " + std::to_string(format) +
                                          "; this tgc reads format " +
                                          std::to_string(kPackageFormat));
  if (tgcVersion != kTgcVersion || torchVersion != torchVersionString())
    throw PackageError(Kind::Version,
                       what + " was written by tgc " + tgcVersion + " with LibTorch " +
                           torchVersion + "; this is tgc " + kTgcVersion + " with LibTorch " +
                           torchVersionString() + ". Recompile the model with this tgc-aot.");
  uint64_t count = uint64_t(r.i64());
  uint64_t tableBytes = uint64_t(r.i64());
  checkHash(file.substr(0, 96), r.raw(kHashChars), "the header", what);
  return {count, tableBytes};
}

} // namespace

const char *torchVersionString() { return TORCH_VERSION; }

SigningKey generateSigningKey() {
  initSodium();
  SigningKey k;
  k.secret.resize(crypto_sign_SECRETKEYBYTES);
  k.publicKey.resize(crypto_sign_PUBLICKEYBYTES);
  crypto_sign_keypair(reinterpret_cast<unsigned char *>(k.publicKey.data()),
                      reinterpret_cast<unsigned char *>(k.secret.data()));
  return k;
}

std::string secretKeyText(const SigningKey &key) {
  return "tgc-ed25519-secret-key " + hex(key.secret) + "\n";
}

std::string publicKeyText(const std::string &publicKey) {
  return "tgc-ed25519-public-key " + hex(publicKey) + "\n";
}

SigningKey parseSecretKey(const std::string &text) {
  initSodium();
  SigningKey k;
  k.secret = parseKey(text, "tgc-ed25519-secret-key", crypto_sign_SECRETKEYBYTES, false);
  k.publicKey.resize(crypto_sign_PUBLICKEYBYTES);
  crypto_sign_ed25519_sk_to_pk(reinterpret_cast<unsigned char *>(k.publicKey.data()),
                               reinterpret_cast<const unsigned char *>(k.secret.data()));
  return k;
}

std::string parsePublicKey(const std::string &text) {
  return parseKey(text, "tgc-ed25519-public-key", crypto_sign_PUBLICKEYBYTES, true);
}

std::string encodePackage(const std::vector<SectionInput> &sections, const SigningKey *sign) {
  std::vector<StoredSection> all;
  for (const SectionInput &s : sections)
    all.push_back({s.name, s.compress, s.bytes.size(), s.compress ? compress(s.bytes) : s.bytes});
  // Bytes 8..79 of the header: what the signature covers besides sections.
  Writer fields;
  fields.u32(kPackageFormat);
  fields.u32(0);
  fields.raw(padded(kTgcVersion));
  fields.raw(padded(torchVersionString()));
  if (sign) {
    initSodium();
    std::string digest = signedDigest(fields.out, all);
    std::string signature(crypto_sign_BYTES, '\0');
    crypto_sign_detached(reinterpret_cast<unsigned char *>(signature.data()), nullptr,
                         reinterpret_cast<const unsigned char *>(digest.data()), digest.size(),
                         reinterpret_cast<const unsigned char *>(sign->secret.data()));
    std::string bytes = std::string(kSignatureMagic, 8) + sign->publicKey + signature;
    all.push_back({kSignatureSection, false, bytes.size(), bytes});
  }
  Writer table;
  // Offsets depend on the table's size, which does not depend on offsets.
  size_t tableBytes = 0;
  for (const StoredSection &s : all)
    tableBytes += 4 + s.name.size() + 1 + 3 * 8 + kHashChars;
  uint64_t offset = kPackageHeaderBytes + tableBytes + kHashChars;
  for (const StoredSection &s : all) {
    table.u32(s.name.size());
    table.raw(s.name);
    table.u8(s.compressed ? 1 : 0);
    table.i64(offset);
    table.i64(s.stored.size());
    table.i64(s.raw);
    table.raw(contentHash(s.stored));
    offset += s.stored.size();
  }
  Writer out;
  out.raw(std::string(kMagic, 8));
  out.raw(fields.out);
  out.i64(all.size());
  out.i64(table.out.size());
  out.raw(contentHash(out.out));
  out.raw(table.out);
  out.raw(contentHash(table.out));
  for (const StoredSection &s : all)
    out.raw(s.stored);
  return out.out;
}

DecodedPackage decodePackage(const std::string &file, const std::string &what,
                             const std::vector<std::string> &trustedKeys) {
  auto [count, tableBytes] = readHeader(file, what);
  const uint64_t size = file.size();
  if (tableBytes > size - kPackageHeaderBytes ||
      size - kPackageHeaderBytes - tableBytes < kHashChars)
    throw PackageError(Kind::Checksum, what + " is truncated: its section table needs " +
                                           std::to_string(tableBytes) + " bytes");
  std::string tableData = file.substr(kPackageHeaderBytes, tableBytes);
  checkHash(tableData, file.substr(kPackageHeaderBytes + tableBytes, kHashChars),
            "the section table", what);
  DecodedPackage pkg;
  std::vector<StoredSection> stored;
  std::set<std::string> names;
  try {
    Reader r(tableData);
    for (uint64_t i = 0; i < count; ++i) {
      PackageSection info;
      info.name = r.raw(r.u32());
      info.compressed = r.u8() == 1;
      uint64_t offset = uint64_t(r.i64());
      info.stored = uint64_t(r.i64());
      info.raw = uint64_t(r.i64());
      std::string hash = r.raw(kHashChars);
      if (!names.insert(info.name).second)
        throw PackageError(Kind::Format, what + " holds section " + info.name + " twice");
      if (offset > size || info.stored > size - offset)
        throw PackageError(Kind::Checksum,
                           what + " is truncated: section " + info.name + " ends at byte " +
                               std::to_string(offset + info.stored) + " but the file has " +
                               std::to_string(size) + " bytes");
      std::string bytes = file.substr(offset, info.stored);
      checkHash(bytes, hash, "section " + info.name, what);
      stored.push_back({info.name, info.compressed, info.raw, std::move(bytes)});
      pkg.infos.push_back(std::move(info));
    }
    if (!r.done())
      throw std::runtime_error("trailing bytes");
  } catch (const std::runtime_error &e) {
    if (dynamic_cast<const PackageError *>(&e))
      throw;
    throw PackageError(Kind::Format, what + ": malformed section table (" + e.what() + ")");
  }
  // The signature covers the stored bytes: nothing an untrusted writer made
  // is decompressed or parsed before it is checked.
  if (!trustedKeys.empty())
    checkSignature(file.substr(8, 72), stored, trustedKeys, what);
  for (StoredSection &s : stored)
    pkg.sections[s.name] = s.compressed ? decompress(s.stored, s.raw, s.name) : std::move(s.stored);
  return pkg;
}

} // namespace tgc
