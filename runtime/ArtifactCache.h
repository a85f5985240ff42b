//===- ArtifactCache.h - compiled artifacts persisted on disk -------------===//
//
// One directory (TGC_CACHE_DIR, else $XDG_CACHE_HOME/tgc, else ~/.cache/tgc,
// or a compiled callable's Options::cache_dir) with three layers: compiled kernels (shared objects, cubins), compiled
// graphs (serialized Plans that reference kernels by key) and autotune
// results. Every entry is one file `<layer>/<key>.tgc`: a header naming its
// layer and key, the payload size and an xxHash64 checksum, then the
// payload. Writes are atomic (temp file + rename); a corrupt, truncated or
// misplaced entry is evicted and treated as a miss, never loaded.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_ARTIFACTCACHE_H
#define TGC_RUNTIME_ARTIFACTCACHE_H

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// tgc's version; part of every key.
constexpr const char *kTgcVersion = "0.1.0";

enum class Layer : uint32_t { Kernel = 1, Graph = 2, Autotune = 3 };
const char *layerName(Layer layer);

/// The cache directory from the environment (see above).
std::string cacheDir();
/// Whether TGC_DISABLE_CACHE=1: nothing is read from or written to disk.
bool cacheDisabled();

/// The one content hash of tgc (xxHash64, 16 hex digits).
std::string contentHash(const std::string &data);

/// Everything a cached artifact depends on. Every field is hashed into the
/// key, so changing any of them is a miss.
struct KeyInputs {
  std::string content;      ///< canonical graph or kernel source
  std::string tgcVersion = kTgcVersion;
  std::string codegenHash;  ///< hash of tgc's compiler sources (build time)
  std::string toolchain;    ///< host compiler or NVRTC version and flags
  std::string arch;         ///< GPU arch (sm_90) or host CPU
  std::string torchVersion; ///< LibTorch version
  std::string options;      ///< compile options that change the output
};
/// The one cache-key builder.
std::string buildKey(const KeyInputs &in);
/// KeyInputs with tgc's codegen hash and LibTorch's version filled in.
KeyInputs baseKeyInputs();

/// Writes `data` to `path` atomically (temp file in the same directory,
/// then rename), creating parent directories. Returns false on failure.
bool writeFileAtomic(const std::string &path, const std::string &data);
bool readFile(const std::string &path, std::string &data);

/// One entry as stored.
struct EntryInfo {
  Layer layer;
  std::string key;
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime = 0; ///< last use, nanoseconds since the epoch
};

/// The on-disk cache of one directory. Stateless apart from per-process
/// counters and the one read-only warning; safe to use from many threads
/// and processes.
class ArtifactCache {
public:
  /// The cache of the environment's directory (cacheDir(), read at each use).
  static ArtifactCache &instance();
  /// The cache of `dir`, one object per directory for the process (so its
  /// hit/miss counts add up); "" is instance().
  static ArtifactCache &forDirectory(const std::string &dir);
  /// The cache this thread's compilations use: the one a CacheScope names,
  /// else instance(). Kernel builds reach the cache through this, so a
  /// callable's cache_dir holds its kernels as well as its graphs.
  static ArtifactCache &current();

  /// The directory this cache reads and writes now.
  std::string dir() const;

  /// The verified payload of `key`, or nullopt (a miss). Corrupt entries
  /// are evicted. A hit refreshes the entry's LRU time.
  std::optional<std::string> get(Layer layer, const std::string &key);
  /// Stores `payload` atomically; then enforces TGC_CACHE_MAX_BYTES. On a
  /// read-only directory warns once and returns false.
  bool put(Layer layer, const std::string &key, const std::string &payload);

  /// Entries of the directory `dir` (all layers).
  static std::vector<EntryInfo> list(const std::string &dir);
  /// Checks one entry file; `why` says what is wrong.
  static bool verifyEntry(const std::string &path, std::string *why,
                          std::string *payload = nullptr);
  /// Encodes an entry file's bytes.
  static std::string encode(Layer layer, const std::string &key, const std::string &payload);
  /// Evicts least-recently-used entries of `dir` until at most `maxBytes`.
  static void evictToCap(const std::string &dir, uint64_t maxBytes);
  /// Path of an entry.
  static std::string pathOf(const std::string &dir, Layer layer, const std::string &key);

  int64_t hits() const;
  int64_t misses() const;
  /// Adds this process's hits and misses to `<dir>/stats` (at exit).
  void persistStats() const;

private:
  explicit ArtifactCache(std::string dir);
  std::string dir_; ///< "" follows the environment
  std::atomic<int64_t> hits_{0}, misses_{0};
  std::once_flag readOnlyWarning_;
};

/// While alive, ArtifactCache::current() on this thread is `cache` (scopes
/// nest). Threads a compilation starts take the scope along explicitly.
class CacheScope {
public:
  explicit CacheScope(ArtifactCache &cache);
  ~CacheScope();
  CacheScope(const CacheScope &) = delete;
  CacheScope &operator=(const CacheScope &) = delete;

private:
  ArtifactCache *previous_;
};

} // namespace tgc

#endif // TGC_RUNTIME_ARTIFACTCACHE_H
