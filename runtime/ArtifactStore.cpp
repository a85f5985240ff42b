//===- ArtifactStore.cpp - cache directory, hashing, atomic writes --------===//
#include "runtime/ArtifactStore.h"

#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace tgc {

bool cacheDisabled() {
  const char *d = std::getenv("TGC_DISABLE_CACHE");
  return d && std::string(d) == "1";
}

std::string cacheDir() {
  if (cacheDisabled()) {
    static const std::string tmp = [] {
      std::string pattern = (fs::temp_directory_path() / "tgc-nocache-XXXXXX").string();
      char *made = mkdtemp(pattern.data());
      return std::string(made ? made : "/tmp");
    }();
    return tmp;
  }
  if (const char *d = std::getenv("TGC_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "tgc").string();
  const char *home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "tgc").string();
}

std::string contentHash(const std::string &data) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                (unsigned long long)XXH64(data.data(), data.size(), 0));
  return buf;
}

bool writeFileAtomic(const std::string &path, const std::string &data) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    contentHash(path + std::to_string((uintptr_t)&data));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out.write(data.data(), data.size()))
      return fs::remove(tmp, ec), false;
  }
  fs::rename(tmp, path, ec);
  if (ec)
    fs::remove(tmp, ec);
  return !ec;
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

} // namespace tgc
