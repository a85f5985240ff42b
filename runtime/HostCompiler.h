//===- HostCompiler.h - generated C++ to a loaded shared object -----------===//
#ifndef TGC_RUNTIME_HOSTCOMPILER_H
#define TGC_RUNTIME_HOSTCOMPILER_H

#include <memory>
#include <string>

#include "runtime/ArtifactCache.h"

namespace tgc {

/// A dlopen'ed shared object, closed when the last owner lets go.
class SharedObject {
public:
  static std::shared_ptr<SharedObject> open(const std::string &path,
                                            std::string &error);
  /// Loads a shared object from bytes (a cache entry) under a path unique in
  /// this process; the staging file is removed once loaded.
  static std::shared_ptr<SharedObject> openBytes(const std::string &bytes,
                                                 const std::string &name,
                                                 std::string &error);
  ~SharedObject();
  void *symbol(const std::string &name) const;
  const std::string &path() const { return path_; }

private:
  SharedObject(void *handle, std::string path)
      : handle_(handle), path_(std::move(path)) {}
  void *handle_;
  std::string path_;
  int fd_ = -1; ///< memfd backing an in-memory object
};

/// The host compiler command (TGC_CXX, else c++) and the flags tgc uses;
/// both are part of every CPU artifact's key.
std::string hostCompilerCommand();
std::string hostCompilerFlags();
/// Libraries generated kernels link: glibc's libmvec for vector math.
std::string hostLinkFlags();
/// `<compiler> --version`, first line; cached.
const std::string &hostCompilerVersion();
/// This machine's CPU as code built with -march=native depends on it: its
/// model name and a hash of its feature flags (/proc/cpuinfo), e.g.
/// "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz flags:3f1c...". Part of
/// every CPU kernel's and autotune result's key, so a cache directory moved
/// to another CPU is a miss rather than an illegal instruction or a stale
/// timing. "unknown-cpu" when /proc/cpuinfo cannot be read.
const std::string &hostCpuId();

/// The bytes of `source`'s shared object: from the kernel layer of the cache
/// (unless `useCache` is false), else compiled and stored there. On a
/// compiler failure the source is kept and named in the error. The CPU
/// Backend (runtime/Backend.h) builds and loads through this.
struct SharedObjectBytes {
  std::string bytes;
  std::string key;       ///< its kernel-layer key
  bool compiled = false; ///< false when the bytes came from disk
  std::string error;     ///< set when bytes is empty
};
SharedObjectBytes buildSharedObject(const std::string &source, bool useCache = true);

/// The key inputs of a CPU kernel artifact.
KeyInputs hostKernelKey(const std::string &source);

} // namespace tgc

#endif // TGC_RUNTIME_HOSTCOMPILER_H
