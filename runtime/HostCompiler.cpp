//===- HostCompiler.cpp - compiling and loading CPU kernels ---------------===//
#include "runtime/HostCompiler.h"

#include "runtime/ArtifactCache.h"
#include "runtime/FaultInjection.h"
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include "runtime/Log.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace tgc {

std::shared_ptr<SharedObject> SharedObject::open(const std::string &path,
                                                 std::string &error) {
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    error = "cannot load " + path + ": " + (e ? e : "unknown dlopen error");
    return nullptr;
  }
  return std::shared_ptr<SharedObject>(new SharedObject(h, path));
}

SharedObject::~SharedObject() {
  dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

void *SharedObject::symbol(const std::string &name) const {
  return dlsym(handle_, name.c_str());
}

std::string hostCompilerCommand() {
  const char *cxx = std::getenv("TGC_CXX");
  return cxx && *cxx ? cxx : "c++";
}

std::string hostCompilerFlags() {
  // No contraction of a * b + c into an FMA: eager rounds the product (its
  // ops are separate kernels), and so must a fused kernel, or a chain like
  // (a * b + 1).relu() differs from eager near zero.
  return "-std=c++17 -O3 -march=native -ffp-contract=off -fno-math-errno -fopenmp -fPIC -shared -w";
}

std::string hostLinkFlags() { return "-lmvec -lm"; }

static std::string runCommand(const std::string &cmd, int &status) {
  std::string out;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    status = -1;
    return "cannot run: " + cmd;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  status = pclose(p);
  return out;
}

const std::string &hostCompilerVersion() {
  static const std::string version = [] {
    int status = 0;
    std::string out = runCommand(hostCompilerCommand() + " --version", status);
    return out.substr(0, out.find('\n'));
  }();
  return version;
}

std::shared_ptr<SharedObject> SharedObject::openBytes(const std::string &bytes,
                                                      const std::string &name,
                                                      std::string &error) {
  // dlopen recognizes libraries by path: every object gets a path no other
  // object of this process ever had, so a library that dlclose could not
  // unload can never stand in for a new one. The file is removed right
  // after loading (the mapping stays).
  static std::atomic<uint64_t> counter{0};
  std::string path = (fs::temp_directory_path() /
                      ("tgc-" + std::to_string(getpid()) + "-" +
                       std::to_string(counter++) + "-XXXXXX.so"))
                         .string();
  int fd = mkstemps(path.data(), 3);
  if (fd >= 0) {
    bool ok = writeAll(fd, bytes);
    ::close(fd);
    std::shared_ptr<SharedObject> so = ok ? open(path, error) : nullptr;
    ::unlink(path.c_str());
    if (so) {
      so->path_ = name;
      return so;
    }
  }
  // No writable temporary directory: an anonymous in-memory file, kept open
  // while loaded so its /proc/self/fd path stays unique.
  fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0 || !writeAll(fd, bytes)) {
    if (fd >= 0)
      ::close(fd);
    error = std::string("cannot stage the shared object for loading: ") + std::strerror(errno);
    return nullptr;
  }
  auto so = open("/proc/self/fd/" + std::to_string(fd), error);
  if (!so) {
    ::close(fd);
    return nullptr;
  }
  so->path_ = name;
  so->fd_ = fd;
  return so;
}

const std::string &hostCpuId() {
  static const std::string id = [] {
    std::string text;
    if (!readFile("/proc/cpuinfo", text))
      return std::string("unknown-cpu");
    // The first processor's lines are everyone's here.
    auto field = [&](const std::string &name) {
      size_t at = text.find("\n" + name);
      if (at == std::string::npos)
        at = text.rfind(name, 0) == 0 ? 0 : std::string::npos;
      if (at == std::string::npos)
        return std::string();
      size_t colon = text.find(':', at), end = text.find('\n', at + 1);
      if (colon == std::string::npos || colon > end)
        return std::string();
      size_t from = text.find_first_not_of(' ', colon + 1);
      return from < end ? text.substr(from, end - from) : std::string();
    };
    std::string model = field("model name");
    std::string flags = field("flags");
    if (model.empty())
      model = "unknown-cpu";
    return model + " flags:" + contentHash(flags);
  }();
  return id;
}

KeyInputs hostKernelKey(const std::string &source) {
  KeyInputs k = baseKeyInputs();
  k.content = source;
  k.toolchain = hostCompilerCommand() + " " + hostCompilerFlags() + " " + hostLinkFlags() +
                " " + hostCompilerVersion();
  k.arch = "host-native " + hostCpuId();
  return k;
}

SharedObjectBytes buildSharedObject(const std::string &source, bool useCache) {
  SharedObjectBytes r;
  r.key = buildKey(hostKernelKey(source));
  ArtifactCache &cache = ArtifactCache::current();
  if (useCache)
    if (std::optional<std::string> bytes = cache.get(Layer::Kernel, r.key)) {
      r.bytes = std::move(*bytes);
      return r;
    }
  if (faultInjected(FaultStage::HostCompiler)) {
    r.error = "host compiler failed: " + injectedFaultMessage(FaultStage::HostCompiler);
    return r;
  }
  // Compile in a private scratch directory, then publish into the cache.
  std::string pattern = (fs::temp_directory_path() / "tgc-build-XXXXXX").string();
  if (!mkdtemp(pattern.data())) {
    r.error = std::string("cannot create a build directory: ") + std::strerror(errno);
    return r;
  }
  fs::path dir(pattern);
  std::string src = (dir / "kernels.cpp").string(), so = (dir / "kernels.so").string();
  if (!writeFileAtomic(src, source)) {
    r.error = "cannot write generated source to " + src;
    return r;
  }
  std::string cmd = hostCompilerCommand() + " " + hostCompilerFlags() + " " + src + " -o " + so + " " +
                    hostLinkFlags();
  int status = 0;
  std::string output = runCommand(cmd, status);
  if (status != 0 || !readFile(so, r.bytes) || r.bytes.empty()) {
    r.bytes.clear();
    r.error = "host compiler failed (" + cmd + "); generated source kept at " + src +
              ":\n" + output;
    return r;
  }
  // (not fs::remove_all: LibTorch exports a broken copy of it that wins
  // symbol resolution in some processes)
  ::unlink(src.c_str());
  ::unlink(so.c_str());
  ::rmdir(dir.c_str());
  cache.put(Layer::Kernel, r.key, r.bytes);
  r.compiled = true;
  log("kernels", "compiled CPU kernels " + r.key);
  return r;
}

} // namespace tgc
