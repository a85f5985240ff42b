//===- tgc-cache.cpp - inspect, verify, clear, export and import the cache -===//
#include "runtime/ArtifactCache.h"
#include "runtime/HostCompiler.h"

#include <CLI/CLI.hpp>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace tgc;

namespace {

/// Documented exit codes.
enum Exit { kOk = 0, kCorrupt = 1, kUsage = 2, kIoError = 3 };

constexpr char kArchiveMagic[8] = {'T', 'G', 'C', 'A', 'R', 'C', 'H', '1'};

void appendU64(std::string &s, uint64_t v) { s.append(reinterpret_cast<const char *>(&v), 8); }

int stats(const std::string &dir) {
  std::map<std::string, std::pair<int, uint64_t>> perLayer;
  int entries = 0;
  uint64_t bytes = 0;
  for (const EntryInfo &e : ArtifactCache::list(dir)) {
    auto &[n, b] = perLayer[layerName(e.layer)];
    ++n;
    b += e.bytes;
    ++entries;
    bytes += e.bytes;
  }
  long long hits = 0, misses = 0;
  std::string text;
  if (readFile(dir + "/stats", text))
    std::sscanf(text.c_str(), "%lld %lld", &hits, &misses);
  std::cout << "cache directory: " << dir << "\n"
            << "entries: " << entries << "\nbytes: " << bytes << "\n";
  for (auto &[layer, nb] : perLayer)
    std::cout << "  " << layer << ": " << nb.first << " entries, " << nb.second << " bytes\n";
  std::cout << "hits: " << hits << "\nmisses: " << misses << "\n";
  return kOk;
}

int ls(const std::string &dir) {
  for (const EntryInfo &e : ArtifactCache::list(dir))
    std::cout << layerName(e.layer) << "\t" << e.key << "\t" << e.bytes << "\n";
  return kOk;
}

int verify(const std::string &dir) {
  int bad = 0, good = 0, unsafe = 0;
  // Entries are native code: who may write them matters as much as whether
  // they are intact.
  for (const std::string &problem : ArtifactCache::audit(dir)) {
    ++unsafe;
    std::cout << "UNSAFE " << problem << "\n";
  }
  for (const EntryInfo &e : ArtifactCache::list(dir)) {
    std::string why;
    if (ArtifactCache::verifyEntry(e.path, &why)) {
      ++good;
    } else {
      ++bad;
      std::cout << "CORRUPT " << e.path << ": " << why << "\n";
    }
  }
  std::cout << good << " entries ok, " << bad << " corrupt, " << unsafe << " unsafe\n";
  return bad || unsafe ? kCorrupt : kOk;
}

int clear(const std::string &dir) {
  int removed = 0;
  std::error_code ec;
  // list() holds the regular files of real layer directories only: a layer
  // that is a symbolic link is not followed out of the cache.
  for (const EntryInfo &e : ArtifactCache::list(dir))
    removed += ::unlink(e.path.c_str()) == 0;
  for (const std::string &problem : ArtifactCache::audit(dir))
    std::cout << "left alone: " << problem << "\n";
  fs::remove(dir + "/stats", ec);
  std::cout << "removed " << removed << " entries from " << dir << "\n";
  return kOk;
}

int exportTo(const std::string &dir, const std::string &file) {
  std::string raw(kArchiveMagic, 8);
  int n = 0;
  for (const EntryInfo &e : ArtifactCache::list(dir)) {
    std::string data, why;
    if (!ArtifactCache::verifyEntry(e.path, &why)) {
      std::cerr << "tgc-cache: skipping corrupt entry " << e.path << ": " << why << "\n";
      continue;
    }
    readFile(e.path, data);
    std::string name = std::string(layerName(e.layer)) + "/" + e.key + ".tgc";
    appendU64(raw, name.size());
    raw += name;
    appendU64(raw, data.size());
    raw += data;
    ++n;
  }
  std::string packed(ZSTD_compressBound(raw.size()), '\0');
  size_t size = ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), 3);
  if (ZSTD_isError(size)) {
    std::cerr << "tgc-cache: compression failed: " << ZSTD_getErrorName(size) << "\n";
    return kIoError;
  }
  packed.resize(size);
  if (!writeFileAtomic(file, packed)) {
    std::cerr << "tgc-cache: cannot write " << file << "\n";
    return kIoError;
  }
  std::cout << "exported " << n << " entries to " << file << " (" << size << " bytes)\n";
  return kOk;
}

int importFrom(const std::string &dir, const std::string &file) {
  if (std::string why = checkCacheDirectory(dir, true); !why.empty()) {
    std::cerr << "tgc-cache: refusing to import into " << dir << ": " << why << "\n";
    return kIoError;
  }
  std::string packed;
  if (!readFile(file, packed)) {
    std::cerr << "tgc-cache: cannot read " << file << "\n";
    return kIoError;
  }
  unsigned long long rawSize = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (rawSize == ZSTD_CONTENTSIZE_ERROR || rawSize == ZSTD_CONTENTSIZE_UNKNOWN ||
      rawSize > (1ull << 36)) {
    std::cerr << "tgc-cache: " << file << " is not a tgc-cache export (not zstd)\n";
    return kCorrupt;
  }
  std::string raw(rawSize, '\0');
  size_t got = ZSTD_decompress(raw.data(), raw.size(), packed.data(), packed.size());
  if (ZSTD_isError(got) || got != rawSize || raw.compare(0, 8, kArchiveMagic, 8) != 0) {
    std::cerr << "tgc-cache: " << file << " is corrupt or not a tgc-cache export\n";
    return kCorrupt;
  }
  size_t pos = 8;
  int imported = 0, rejected = 0;
  auto u64 = [&](uint64_t &v) {
    if (raw.size() - pos < 8)
      return false;
    std::memcpy(&v, raw.data() + pos, 8);
    pos += 8;
    return true;
  };
  while (pos < raw.size()) {
    uint64_t nameLen, dataLen;
    if (!u64(nameLen) || nameLen > raw.size() - pos) {
      std::cerr << "tgc-cache: truncated archive\n";
      return kCorrupt;
    }
    std::string name = raw.substr(pos, nameLen);
    pos += nameLen;
    if (!u64(dataLen) || dataLen > raw.size() - pos) {
      std::cerr << "tgc-cache: truncated archive\n";
      return kCorrupt;
    }
    std::string data = raw.substr(pos, dataLen);
    pos += dataLen;
    // Names are layer/key.tgc only: nothing escapes the cache directory.
    fs::path rel(name);
    bool safe = rel.has_parent_path() && rel.parent_path().has_filename() &&
                !rel.parent_path().has_parent_path() && name.find("..") == std::string::npos;
    std::string dest = dir + "/" + name;
    std::string why;
    if (!safe || !writeFileAtomic(dest, data, 0600) || !ArtifactCache::verifyEntry(dest, &why)) {
      std::error_code ec;
      if (safe)
        fs::remove(dest, ec);
      std::cerr << "tgc-cache: rejected entry " << name << (why.empty() ? "" : ": " + why) << "\n";
      ++rejected;
      continue;
    }
    ++imported;
  }
  std::cout << "imported " << imported << " entries into " << dir << "\n";
  return rejected ? kCorrupt : kOk;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tgc-cache: inspect and manage tgc's compiled-artifact cache.\n\n"
               "The cache directory is --dir, else TGC_CACHE_DIR, else $XDG_CACHE_HOME/tgc,\n"
               "else ~/.cache/tgc.\n\n"
               "Examples:\n"
               "  tgc-cache stats                      entries, bytes, hits and misses\n"
               "  tgc-cache ls                         one line per entry: layer, key, bytes\n"
               "  tgc-cache verify                     check every entry's checksum, owner and mode\n"
               "  tgc-cache export cache.tgcz          one zstd archive of all entries\n"
               "  tgc-cache --dir /mnt/c import cache.tgcz\n"
               "  tgc-cache clear\n"
               "  tgc-cache compiler                   the command CPU kernels are built with\n\n"
               "Entries are native code tgc loads and runs: the cache directory and its\n"
               "layers must be owned by you (or root) and not writable by group or others,\n"
               "and no layer or entry may be a symbolic link (TGC_CACHE_SHARED=1 lifts the\n"
               "owner and mode checks for a cache several users write). verify reports\n"
               "what breaks this as UNSAFE.\n\n"
               "Exit codes: 0 success, 1 corrupt or unsafe entries or archive, 2 usage error,\n"
               "3 I/O error."};
  std::string dir;
  app.add_option("--dir", dir, "cache directory (default: as described above)");
  app.require_subcommand(1);
  std::string file;
  auto *cStats = app.add_subcommand("stats", "entries, bytes, hits, misses");
  auto *cLs = app.add_subcommand("ls", "list entries");
  auto *cVerify = app.add_subcommand(
      "verify", "check every entry, owners and modes; exit 1 on corruption or unsafe files");
  auto *cClear = app.add_subcommand("clear", "remove every entry");
  auto *cExport = app.add_subcommand("export", "write all entries to one zstd archive");
  cExport->add_option("FILE", file, "archive to write")->required();
  auto *cImport = app.add_subcommand("import", "add the entries of an archive (verified)");
  cImport->add_option("FILE", file, "archive to read")->required()->check(CLI::ExistingFile);
  auto *cCompiler = app.add_subcommand(
      "compiler", "print the host compiler and the command line CPU kernels are built with");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    return e.get_exit_code() == 0 ? rc : kUsage;
  }
  if (cCompiler->parsed()) {
    // Part of every CPU kernel's cache key; tests/zoo/check_vectorized.py
    // reads the command to rebuild kernels with a vectorization report.
    std::cout << "compiler: " << hostCompilerVersion() << "\n"
              << "command: " << hostCompilerCommand() << " " << hostCompilerFlags()
              << " SOURCE -o OBJECT " << hostLinkFlags() << "\n";
    return kOk;
  }
  if (dir.empty())
    dir = cacheDir();
  if (cStats->parsed()) return stats(dir);
  if (cLs->parsed()) return ls(dir);
  if (cVerify->parsed()) return verify(dir);
  if (cClear->parsed()) return clear(dir);
  if (cExport->parsed()) return exportTo(dir, file);
  if (cImport->parsed()) return importFrom(dir, file);
  return kUsage;
}
