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

/// The bytes of a package file holding `sections`, stamped with this
/// build's tgc and LibTorch versions.
std::string encodePackage(const std::vector<SectionInput> &sections);

/// A verified package file: its sections by name, decompressed.
struct DecodedPackage {
  std::vector<PackageSection> infos; ///< in file order
  std::map<std::string, std::string> sections;
};

/// Verifies and decodes a package file's bytes; throws PackageError
/// (Format, Version or Checksum). `what` names the file in messages.
DecodedPackage decodePackage(const std::string &file, const std::string &what);

/// The LibTorch version packages are stamped with (TORCH_VERSION).
const char *torchVersionString();

} // namespace tgc

#endif // TGC_RUNTIME_PACKAGEFORMAT_H
