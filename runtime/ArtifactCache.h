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
// Entries are native code, so only their owner may put them there: the
// directory and its layers are created 0700 and entries 0600, and before
// the first read or write of a directory tgc checks that it and its layers
// are owned by this user (or root) and not writable by group or others, and
// that no layer is a symbolic link. An unsafe directory disables the disk
// cache for the process with one warning; an unsafe entry (a symbolic link,
// another owner, group- or world-writable) is evicted, never loaded.
// TGC_CACHE_SHARED=1 opts into a cache several users write (directories
// keep the umask's mode; owners and modes are not checked, symbolic links
// still are): any of those users can then run code in the others' processes.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_ARTIFACTCACHE_H
#define TGC_RUNTIME_ARTIFACTCACHE_H

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct stat;

namespace tgc {

/// tgc's version; part of every key.
constexpr const char *kTgcVersion = "0.1.0";

enum class Layer : uint32_t { Kernel = 1, Graph = 2, Autotune = 3 };
const char *layerName(Layer layer);

/// The cache directory from the environment (see above).
std::string cacheDir();
/// Whether TGC_DISABLE_CACHE=1: nothing is read from or written to disk.
bool cacheDisabled();
/// Whether TGC_CACHE_SHARED=1 (see above).
bool cacheShared();

/// Why a cache directory, layer or entry with status `st` may not be
/// trusted ("owned by uid 1001, not by this user (uid 1000)", "writable by
/// group or others (mode 0775)"), or "" when it may. Shared caches: "".
std::string unsafeOwnership(const struct stat &st);
/// Checks the cache directory `dir` and its layers as described above;
/// with `create`, first creates what is missing (0700, parents included).
/// Returns "" when safe (or absent and not created), else why not.
std::string checkCacheDirectory(const std::string &dir, bool create);
/// Reads the entry file `path` through one descriptor opened without
/// following symbolic links, refusing a file that is not regular or not
/// safely owned (`why` says which).
bool readEntryFile(const std::string &path, std::string &data, std::string *why);

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
/// created exclusively with permissions `mode` less the umask, then
/// rename), creating parent directories. Returns false on failure.
bool writeFileAtomic(const std::string &path, const std::string &data, unsigned mode = 0666);
/// Writes all of `bytes` to the descriptor `fd`; false on a short write.
bool writeAll(int fd, const std::string &bytes);
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

  /// Entries of the directory `dir` (all layers): regular files only, and
  /// no layer that is a symbolic link (nothing outside `dir` is listed).
  static std::vector<EntryInfo> list(const std::string &dir);
  /// Everything `tgc-cache verify` reports as unsafe in `dir`: the
  /// directory or a layer (see checkCacheDirectory), symbolic links among
  /// the entries, entries owned by someone else or writable by others.
  /// Each is "path: why".
  static std::vector<std::string> audit(const std::string &dir);
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
  /// Whether `dir` passed checkCacheDirectory (checked once per process
  /// and directory; a failure warns once and disables the disk cache).
  bool trusted(const std::string &dir) const;
  std::string dir_; ///< "" follows the environment
  std::atomic<int64_t> hits_{0}, misses_{0};
  std::once_flag readOnlyWarning_;
  mutable std::mutex trustMutex_;
  mutable std::map<std::string, bool> trust_; ///< checkCacheDirectory's verdict per directory
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
