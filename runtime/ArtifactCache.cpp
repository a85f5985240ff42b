//===- ArtifactCache.cpp - entry format, atomic writes, eviction ----------===//
#include "runtime/ArtifactCache.h"

#include "runtime/CodegenHash.h"
#include "runtime/Log.h"

#include <torch/version.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace tgc {

namespace {

constexpr char kMagic[8] = {'T', 'G', 'C', 'A', 'C', 'H', 'E', '1'};

void appendU32(std::string &s, uint32_t v) { s.append(reinterpret_cast<const char *>(&v), 4); }
void appendU64(std::string &s, uint64_t v) { s.append(reinterpret_cast<const char *>(&v), 8); }

/// Every cache object of the process by directory ("" is the environment's).
/// Never destroyed: compiled callables and the exit handler outlive statics.
struct Registry {
  std::mutex mutex;
  std::map<std::string, ArtifactCache *> caches;
};
Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

void persistAll() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &[dir, cache] : r.caches)
    cache->persistStats();
}

thread_local ArtifactCache *scoped = nullptr;

} // namespace

const char *layerName(Layer layer) {
  switch (layer) {
  case Layer::Kernel: return "kernels";
  case Layer::Graph: return "graphs";
  case Layer::Autotune: return "autotune";
  }
  return "unknown";
}

bool cacheDisabled() {
  const char *d = std::getenv("TGC_DISABLE_CACHE");
  return d && std::string(d) == "1";
}

bool cacheShared() {
  const char *d = std::getenv("TGC_CACHE_SHARED");
  return d && std::string(d) == "1";
}

std::string cacheDir() {
  if (const char *d = std::getenv("TGC_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "tgc").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "tgc").string();
  // No home: a per-user name (another user who creates it first makes it
  // fail the ownership check, never a shared cache).
  return "/tmp/tgc-cache-" + std::to_string(geteuid());
}

std::string unsafeOwnership(const struct stat &st) {
  if (cacheShared())
    return "";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return std::string("writable by group or others (mode ") + mode + ")";
  }
  return "";
}

namespace {

/// Why an entry file with status `st` (from lstat or fstat) may not be
/// loaded, or "" when it may.
std::string unsafeEntry(const struct stat &st) {
  if (S_ISLNK(st.st_mode))
    return "a symbolic link";
  if (!S_ISREG(st.st_mode))
    return "not a regular file";
  return unsafeOwnership(st);
}

/// mkdir -p with `mode` for the components it creates.
void makeDirectories(const fs::path &dir, mode_t mode) {
  fs::path partial;
  for (const fs::path &part : dir) {
    partial /= part;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST)
      return;
  }
}

} // namespace

std::string checkCacheDirectory(const std::string &dir, bool create) {
  // Private unless the user asked for a shared cache (then the umask's).
  const mode_t mode = cacheShared() ? 0777 : 0700;
  if (create)
    makeDirectories(fs::absolute(dir), mode);
  struct stat st;
  // The directory itself may be a symbolic link the user made (a cache on
  // another disk); what it points to must be safe.
  if (::stat(dir.c_str(), &st) != 0)
    return create ? std::string("cannot create it: ") + std::strerror(errno) : "";
  if (!S_ISDIR(st.st_mode))
    return "not a directory";
  if (std::string why = unsafeOwnership(st); !why.empty())
    return why;
  for (Layer layer : {Layer::Kernel, Layer::Graph, Layer::Autotune}) {
    std::string sub = dir + "/" + layerName(layer);
    if (::lstat(sub.c_str(), &st) != 0) {
      if (create)
        ::mkdir(sub.c_str(), mode); // a read-only cache may lack layers
      if (::lstat(sub.c_str(), &st) != 0)
        continue;
    }
    if (S_ISLNK(st.st_mode))
      return std::string("its layer ") + layerName(layer) + " is a symbolic link";
    if (!S_ISDIR(st.st_mode))
      return std::string("its layer ") + layerName(layer) + " is not a directory";
    if (std::string why = unsafeOwnership(st); !why.empty())
      return std::string("its layer ") + layerName(layer) + " is " + why;
  }
  return "";
}

bool readEntryFile(const std::string &path, std::string &data, std::string *why) {
  auto fail = [&](const std::string &w) {
    if (why)
      *why = w;
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(errno == ELOOP ? "a symbolic link" : std::string("unreadable: ") +
                                                         std::strerror(errno));
  struct stat st;
  std::string unsafe = ::fstat(fd, &st) != 0 ? "not a regular file" : unsafeEntry(st);
  if (!unsafe.empty()) {
    ::close(fd);
    return fail(unsafe);
  }
  data.resize(size_t(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n <= 0)
      break;
    done += size_t(n);
  }
  ::close(fd);
  data.resize(done); // a shorter read is a truncated entry, caught by its header
  return true;
}

std::string contentHash(const std::string &data) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                (unsigned long long)XXH64(data.data(), data.size(), 0));
  return buf;
}

std::string buildKey(const KeyInputs &in) {
  // Length-prefixed fields: no two different inputs share a key string.
  std::string all;
  for (const std::string *f : {&in.content, &in.tgcVersion, &in.codegenHash, &in.toolchain,
                               &in.arch, &in.torchVersion, &in.options}) {
    all += std::to_string(f->size()) + ":" + *f + ";";
  }
  // Two independent 64-bit hashes: 128 bits of key.
  return contentHash(all) + contentHash("tgc-key-salt" + all);
}

KeyInputs baseKeyInputs() {
  KeyInputs k;
  k.codegenHash = TGC_CODEGEN_HASH;
  k.torchVersion = TORCH_VERSION;
  return k;
}

bool writeFileAtomic(const std::string &path, const std::string &data, unsigned mode) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter++);
  // Exclusive and not through a symbolic link: the file is new and ours.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return false;
  const bool written = writeAll(fd, data);
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    return false;
  }
  fs::rename(tmp, path, ec);
  if (ec)
    fs::remove(tmp, ec);
  return !ec;
}

bool writeAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

bool readFile(const std::string &path, std::string &data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  data = ss.str();
  return true;
}

ArtifactCache::ArtifactCache(std::string dir) : dir_(std::move(dir)) {}

ArtifactCache &ArtifactCache::instance() { return forDirectory(""); }

ArtifactCache &ArtifactCache::forDirectory(const std::string &dir) {
  // One object per directory however it is spelled ("c", "./c/", "/abs/c").
  std::string canonical = dir.empty() ? "" : fs::absolute(dir).lexically_normal().string();
  if (canonical.size() > 1 && canonical.back() == '/')
    canonical.pop_back();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.caches.empty())
    std::atexit(persistAll);
  ArtifactCache *&cache = r.caches[canonical];
  if (!cache)
    cache = new ArtifactCache(canonical);
  return *cache;
}

ArtifactCache &ArtifactCache::current() { return scoped ? *scoped : instance(); }

std::string ArtifactCache::dir() const { return dir_.empty() ? cacheDir() : dir_; }

int64_t ArtifactCache::hits() const { return hits_; }
int64_t ArtifactCache::misses() const { return misses_; }

void ArtifactCache::persistStats() const {
  if (cacheDisabled() || (hits_ == 0 && misses_ == 0))
    return;
  std::string path = dir() + "/stats";
  if (!trusted(dir()))
    return;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  if (flock(fd, LOCK_EX) == 0) {
    char buf[64] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    long long h = 0, m = 0;
    if (n > 0)
      std::sscanf(buf, "%lld %lld", &h, &m);
    std::string line =
        std::to_string(h + hits_.load()) + " " + std::to_string(m + misses_.load()) + "\n";
    if (ftruncate(fd, 0) == 0)
      (void)!pwrite(fd, line.data(), line.size(), 0);
    flock(fd, LOCK_UN);
  }
  ::close(fd);
}

CacheScope::CacheScope(ArtifactCache &cache) : previous_(scoped) { scoped = &cache; }
CacheScope::~CacheScope() { scoped = previous_; }

std::string ArtifactCache::pathOf(const std::string &dir, Layer layer, const std::string &key) {
  return dir + "/" + layerName(layer) + "/" + key + ".tgc";
}

std::string ArtifactCache::encode(Layer layer, const std::string &key,
                                  const std::string &payload) {
  std::string s(kMagic, 8);
  appendU32(s, static_cast<uint32_t>(layer));
  appendU32(s, key.size());
  s += key;
  appendU64(s, payload.size());
  appendU64(s, XXH64(payload.data(), payload.size(), 0));
  s += payload;
  return s;
}

bool ArtifactCache::verifyEntry(const std::string &path, std::string *why,
                                std::string *payload) {
  std::string data;
  auto fail = [&](const std::string &w) {
    if (why)
      *why = w;
    return false;
  };
  std::string unsafe;
  if (!readEntryFile(path, data, &unsafe))
    return fail(unsafe);
  if (data.size() < 16 || std::memcmp(data.data(), kMagic, 8) != 0)
    return fail("not a tgc cache entry (bad magic)");
  uint32_t layer, keyLen;
  std::memcpy(&layer, data.data() + 8, 4);
  std::memcpy(&keyLen, data.data() + 12, 4);
  if (data.size() < 16 + size_t(keyLen) + 16)
    return fail("truncated header");
  std::string key = data.substr(16, keyLen);
  uint64_t size, sum;
  std::memcpy(&size, data.data() + 16 + keyLen, 8);
  std::memcpy(&sum, data.data() + 24 + keyLen, 8);
  size_t start = 32 + keyLen;
  if (data.size() != start + size)
    return fail("truncated or padded payload (" + std::to_string(data.size() - start) +
                " bytes, header says " + std::to_string(size) + ")");
  fs::path p(path);
  if (p.stem().string() != key || p.parent_path().filename().string() !=
                                      layerName(static_cast<Layer>(layer)))
    return fail("entry for key " + key + " stored under " + p.string());
  if (XXH64(data.data() + start, size, 0) != sum)
    return fail("checksum mismatch");
  if (payload)
    *payload = data.substr(start);
  return true;
}

bool ArtifactCache::trusted(const std::string &dir) const {
  std::lock_guard<std::mutex> lock(trustMutex_);
  auto it = trust_.find(dir);
  if (it != trust_.end())
    return it->second;
  std::string why = checkCacheDirectory(dir, true);
  if (!why.empty())
    warn("the cache directory " + dir + " is not safe to load native code from (" + why +
         "): the disk cache is off for this process. Fix its owner and mode (chmod 700), "
         "use another TGC_CACHE_DIR, or set TGC_CACHE_SHARED=1 for a cache several users "
         "write (any of them can then run code in the others' processes)");
  trust_[dir] = why.empty();
  return why.empty();
}

std::optional<std::string> ArtifactCache::get(Layer layer, const std::string &key) {
  if (cacheDisabled())
    return std::nullopt;
  std::string dir = this->dir();
  if (!trusted(dir))
    return std::nullopt;
  std::string path = pathOf(dir, layer, key);
  std::error_code ec;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    misses_++;
    return std::nullopt;
  }
  std::string why, payload;
  if (!verifyEntry(path, &why, &payload)) {
    warn("cache entry " + path + " is invalid (" + why + "); evicting and rebuilding it");
    fs::remove(path, ec);
    misses_++;
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW); // LRU: last use now
  hits_++;
  return payload;
}

bool ArtifactCache::put(Layer layer, const std::string &key, const std::string &payload) {
  if (cacheDisabled())
    return false;
  std::string dir = this->dir();
  if (!trusted(dir))
    return false;
  std::string path = pathOf(dir, layer, key);
  if (!writeFileAtomic(path, encode(layer, key, payload), 0600)) {
    std::call_once(readOnlyWarning_, [&] {
      warn("cannot write to the cache directory " + dir + " (" + std::strerror(errno) +
           "); hits are still served, misses compile in memory only");
    });
    return false;
  }
  if (const char *cap = std::getenv("TGC_CACHE_MAX_BYTES"); cap && *cap)
    evictToCap(dir, std::strtoull(cap, nullptr, 10));
  return true;
}

std::vector<EntryInfo> ArtifactCache::list(const std::string &dir) {
  std::vector<EntryInfo> out;
  for (Layer layer : {Layer::Kernel, Layer::Graph, Layer::Autotune}) {
    std::error_code ec;
    fs::path sub = fs::path(dir) / layerName(layer);
    if (!fs::is_directory(fs::symlink_status(sub, ec)))
      continue; // absent, or a symbolic link out of the cache
    for (const auto &e : fs::directory_iterator(sub, ec)) {
      if (e.path().extension() != ".tgc")
        continue;
      struct stat st;
      if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      out.push_back({layer, e.path().stem().string(), e.path().string(),
                     (uint64_t)st.st_size, (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec});
    }
  }
  return out;
}

std::vector<std::string> ArtifactCache::audit(const std::string &dir) {
  std::vector<std::string> problems;
  if (std::string why = checkCacheDirectory(dir, false); !why.empty())
    problems.push_back(dir + ": " + why);
  for (Layer layer : {Layer::Kernel, Layer::Graph, Layer::Autotune}) {
    std::error_code ec;
    fs::path sub = fs::path(dir) / layerName(layer);
    if (!fs::is_directory(fs::symlink_status(sub, ec)))
      continue;
    for (const auto &e : fs::directory_iterator(sub, ec)) {
      struct stat st;
      if (::lstat(e.path().c_str(), &st) != 0)
        continue;
      if (std::string why = unsafeEntry(st); !why.empty())
        problems.push_back(e.path().string() + ": " + why);
    }
  }
  return problems;
}

void ArtifactCache::evictToCap(const std::string &dir, uint64_t maxBytes) {
  std::vector<EntryInfo> entries = list(dir);
  uint64_t total = 0;
  for (const EntryInfo &e : entries)
    total += e.bytes;
  if (total <= maxBytes)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const EntryInfo &a, const EntryInfo &b) { return a.mtime < b.mtime; });
  std::error_code ec;
  for (const EntryInfo &e : entries) {
    if (total <= maxBytes)
      break;
    if (fs::remove(e.path, ec))
      total -= e.bytes;
    log("cache", "evicted (size cap) " + e.path);
  }
}

} // namespace tgc
