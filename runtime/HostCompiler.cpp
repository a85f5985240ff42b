//===- HostCompiler.cpp - compiling and loading CPU kernels ---------------===//
#include "runtime/HostCompiler.h"

#include "runtime/ArtifactStore.h"
#include "runtime/Counters.h"
#include "runtime/Log.h"

#include <array>
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

SharedObject::~SharedObject() { dlclose(handle_); }

void *SharedObject::symbol(const std::string &name) const {
  return dlsym(handle_, name.c_str());
}

std::string hostCompilerCommand() {
  const char *cxx = std::getenv("TGC_CXX");
  return cxx && *cxx ? cxx : "c++";
}

std::string hostCompilerFlags() {
  return "-std=c++17 -O3 -march=native -fno-math-errno -fopenmp -fPIC -shared -w";
}

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

HostCompileResult compileSharedObject(const std::string &source) {
  HostCompileResult r;
  std::string key = contentHash(source + "\n" + hostCompilerCommand() + "\n" +
                                hostCompilerFlags() + "\n" +
                                hostCompilerVersion() + "\ntgc-0.1");
  fs::path dir = fs::path(cacheDir()) / "kernels" / "cpu";
  std::string so = (dir / (key + ".so")).string();
  std::error_code ec;
  if (fs::exists(so, ec)) {
    if ((r.object = SharedObject::open(so, r.error))) {
      counters().cacheHitsDisk++;
      return r;
    }
    log("kernels", "evicting unloadable " + so + ": " + r.error);
    fs::remove(so, ec);
  }
  fs::create_directories(dir, ec);
  std::string stem = (dir / (key + ".tmp." + std::to_string(getpid()))).string();
  std::string src = stem + ".cpp", tmpSo = stem + ".so";
  if (!writeFileAtomic(src, source)) {
    r.error = "cannot write generated source to " + src;
    return r;
  }
  std::string cmd = hostCompilerCommand() + " " + hostCompilerFlags() + " " +
                    src + " -o " + tmpSo;
  int status = 0;
  std::string output = runCommand(cmd, status);
  if (status != 0) {
    std::string kept = (dir / (key + ".failed.cpp")).string();
    fs::rename(src, kept, ec);
    r.error = "host compiler failed (" + cmd + "); generated source kept at " +
              kept + ":\n" + output;
    return r;
  }
  fs::remove(src, ec);
  fs::rename(tmpSo, so, ec); // atomic publish
  if (ec) {
    r.error = "cannot publish " + so + ": " + ec.message();
    return r;
  }
  r.compiled = true;
  r.object = SharedObject::open(so, r.error);
  log("kernels", "compiled " + so);
  return r;
}

} // namespace tgc
