//===- PackageFormat.h - the container of an AOT package file -------------===//
//
// A package file is a fixed header, a table of named sections and the
// sections' bytes:
//
//   0   magic "TGCPKG\r\n"          8 bytes
//   8   format version              u32 (kPackageFormat)
//   12  reserved                    u32 (0)
//   16  tgc version                 32 bytes, NUL-padded
//   48  LibTorch version            32 bytes, NUL-padded
//   80  section count               u64
//   88  table bytes                 u64
//   96  header checksum             16 hex digits: contentHash of bytes 0..95
//   112 table: per section: name (u32 length + bytes), compression (u8:
//       0 none, 1 zstd), offset, stored size, raw size (u64 each), checksum
//       of the stored bytes (16 hex digits); then the table's own checksum
//   ... section bytes
//
// Reading checks the magic, then the versions (a package of another tgc or
// LibTorch is a Version error even when other bytes differ too), then every
// checksum and bound; no length is trusted.
//
// A signed package has a last, uncompressed section "signature": "TGCSIG1\0",
// the signer's Ed25519 public key (32 bytes) and an Ed25519 signature (64
// bytes) of the BLAKE2b-512 digest of: "tgc-package-signature-v1\0", header
// bytes 8..79 (format, reserved, versions), then per other section in table
// order its name (u32 length + bytes), compression (u8), raw and stored
// sizes (u64) and stored bytes. When trusted keys are given the signature
// is checked before anything is decompressed.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_PACKAGEFORMAT_H
#define TGC_RUNTIME_PACKAGEFORMAT_H

#include "tgc/Package.h"

#include <map>
#include <string>
#include <vector>

namespace tgc {

constexpr uint32_t kPackageFormat = 2; ///< 2: CUDA segments list their cubins per arch
constexpr size_t kPackageHeaderBytes = 112;

/// One section to write.
struct SectionInput {
  std::string name;
  std::string bytes;
  bool compress = false; ///< store zstd-compressed
};

/// An Ed25519 key pair (libsodium's layout: the 64-byte secret key holds
/// the public key in its last 32 bytes).
struct SigningKey {
  std::string secret;    ///< 64 bytes
  std::string publicKey; ///< 32 bytes
};
/// A new random key pair.
SigningKey generateSigningKey();
/// The key files `tgc-aot keygen` writes: one line each,
/// "tgc-ed25519-secret-key <128 hex>" and "tgc-ed25519-public-key <64 hex>".
std::string secretKeyText(const SigningKey &key);
std::string publicKeyText(const std::string &publicKey);
/// Parses a secret key file's text; throws std::invalid_argument.
SigningKey parseSecretKey(const std::string &text);
/// Parses a public key (a .pub file's text or 64 hex digits) into its 32
/// bytes; throws std::invalid_argument.
std::string parsePublicKey(const std::string &text);

/// The bytes of a package file holding `sections`, stamped with this
/// build's tgc and LibTorch versions; signed with `sign` when given.
std::string encodePackage(const std::vector<SectionInput> &sections,
                          const SigningKey *sign = nullptr);

/// A verified package file: its sections by name, decompressed.
struct DecodedPackage {
  std::vector<PackageSection> infos; ///< in file order
  std::map<std::string, std::string> sections;
};

/// Verifies and decodes a package file's bytes; throws PackageError
/// (Format, Version, Checksum, or Signature when `trustedKeys` (32-byte
/// public keys) is not empty and no valid signature by one of them is
/// there). `what` names the file in messages.
DecodedPackage decodePackage(const std::string &file, const std::string &what,
                             const std::vector<std::string> &trustedKeys = {});

/// The LibTorch version packages are stamped with (TORCH_VERSION).
const char *torchVersionString();

} // namespace tgc

#endif // TGC_RUNTIME_PACKAGEFORMAT_H
