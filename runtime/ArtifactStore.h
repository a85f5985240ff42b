//===- ArtifactStore.h - where compiled artifacts live on disk ------------===//
#ifndef TGC_RUNTIME_ARTIFACTSTORE_H
#define TGC_RUNTIME_ARTIFACTSTORE_H

#include <cstdint>
#include <string>

namespace tgc {

/// The cache directory: TGC_CACHE_DIR, else $XDG_CACHE_HOME/tgc, else
/// ~/.cache/tgc; a fresh per-process temporary directory when
/// TGC_DISABLE_CACHE=1 (artifacts must still be files to be loaded).
std::string cacheDir();

/// Whether TGC_DISABLE_CACHE=1.
bool cacheDisabled();

/// The one content hash of tgc (xxHash64, hex).
std::string contentHash(const std::string &data);

/// Writes `data` to `path` atomically (temp file in the same directory,
/// then rename), creating parent directories. Returns false on failure.
bool writeFileAtomic(const std::string &path, const std::string &data);

bool readFile(const std::string &path, std::string &data);

} // namespace tgc

#endif // TGC_RUNTIME_ARTIFACTSTORE_H
