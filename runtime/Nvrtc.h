//===- Nvrtc.h - CUDA C++ to cubin/PTX through NVRTC (loaded at run time) -===//
#ifndef TGC_RUNTIME_NVRTC_H
#define TGC_RUNTIME_NVRTC_H

#include "runtime/ArtifactCache.h"

#include <string>
#include <vector>

namespace tgc {

struct NvrtcResult {
  bool ok = false;
  std::string cubin; ///< empty when only PTX was requested or on failure
  std::string ptx;
  std::string log;   ///< NVRTC's program log
  std::string error; ///< why it failed, with the saved source's path
  bool fromCache = false; ///< taken from the kernel layer of the cache
};

/// Whether libnvrtc could be loaded (TGC_NVRTC_LIBRARY, libnvrtc.so.13,
/// /usr/local/cuda/lib64/libnvrtc.so); `why` says what was tried.
bool nvrtcAvailable(std::string *why = nullptr);

/// NVRTC's version as "major.minor".
std::string nvrtcVersion();

/// The options tgc passes: -std=c++17, --gpu-architecture=<arch>, the
/// toolkit's include directory, and line info for profilers.
std::vector<std::string> nvrtcOptions(const std::string &arch);

/// Compiles `source` for `arch` ("sm_80", "sm_90"): cubin for that exact
/// architecture plus PTX. On an error the source is saved under the cache
/// directory and its path is in `error`.
NvrtcResult compileCuda(const std::string &source, const std::string &name,
                        const std::string &arch);
/// The same without consulting or filling the cache.
NvrtcResult compileCudaUncached(const std::string &source, const std::string &name,
                                const std::string &arch);
/// The key inputs of a CUDA kernel artifact.
KeyInputs cudaKernelKey(const std::string &source, const std::string &arch);

} // namespace tgc

#endif // TGC_RUNTIME_NVRTC_H
