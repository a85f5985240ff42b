//===- PackageFormat.cpp - writing and verifying package files ------------===//
#include "runtime/PackageFormat.h"

#include "runtime/ArtifactCache.h"
#include "runtime/ByteStream.h"

#include <torch/version.h>
#include <zstd.h>

#include <set>

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
  std::string out(raw, '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), stored.data(), stored.size());
  if (ZSTD_isError(n) || n != raw)
    throw PackageError(Kind::Checksum, "section " + name + " does not decompress");
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

std::string encodePackage(const std::vector<SectionInput> &sections) {
  std::vector<std::string> stored;
  Writer table;
  for (const SectionInput &s : sections)
    stored.push_back(s.compress ? compress(s.bytes) : s.bytes);
  // Offsets depend on the table's size, which does not depend on offsets.
  size_t tableBytes = 0;
  for (const SectionInput &s : sections)
    tableBytes += 4 + s.name.size() + 1 + 3 * 8 + kHashChars;
  uint64_t offset = kPackageHeaderBytes + tableBytes + kHashChars;
  for (size_t i = 0; i < sections.size(); ++i) {
    table.u32(sections[i].name.size());
    table.raw(sections[i].name);
    table.u8(sections[i].compress ? 1 : 0);
    table.i64(offset);
    table.i64(stored[i].size());
    table.i64(sections[i].bytes.size());
    table.raw(contentHash(stored[i]));
    offset += stored[i].size();
  }
  Writer out;
  out.raw(std::string(kMagic, 8));
  out.u32(kPackageFormat);
  out.u32(0);
  out.raw(padded(kTgcVersion));
  out.raw(padded(torchVersionString()));
  out.i64(sections.size());
  out.i64(table.out.size());
  out.raw(contentHash(out.out));
  out.raw(table.out);
  out.raw(contentHash(table.out));
  for (const std::string &s : stored)
    out.raw(s);
  return out.out;
}

DecodedPackage decodePackage(const std::string &file, const std::string &what) {
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
      pkg.sections[info.name] =
          info.compressed ? decompress(bytes, info.raw, info.name) : std::move(bytes);
      pkg.infos.push_back(std::move(info));
    }
    if (!r.done())
      throw std::runtime_error("trailing bytes");
  } catch (const std::runtime_error &e) {
    if (dynamic_cast<const PackageError *>(&e))
      throw;
    throw PackageError(Kind::Format, what + ": malformed section table (" + e.what() + ")");
  }
  return pkg;
}

} // namespace tgc
