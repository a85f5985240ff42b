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
  std::string log;   ///< NVRTC's program log (ptxas's report included; kept in the cache)
  std::string error; ///< why it failed, with the saved source's path
  bool fromCache = false; ///< taken from the kernel layer of the cache
};

/// Whether libnvrtc could be loaded (TGC_NVRTC_LIBRARY, libnvrtc.so.13,
/// /usr/local/cuda/lib64/libnvrtc.so); `why` says what was tried.
bool nvrtcAvailable(std::string *why = nullptr);

/// NVRTC's version as "major.minor".
std::string nvrtcVersion();

/// The options tgc passes (docs/cuda-backend.md says why): -std=c++17,
/// --gpu-architecture=<arch>, line info for profilers, ptxas's resource
/// report (-Xptxas=-v, for the spill log), the toolkit's include directory.
std::vector<std::string> nvrtcOptions(const std::string &arch);

/// Compiles `source` for `arch` ("sm_80", "sm_90"): cubin for that exact
/// architecture plus PTX, from the kernel layer of the cache when it holds
/// them (unless `useCache` is false), else compiled and stored there. On an
/// error the source is saved under the cache directory and its path is in
/// `error`.
NvrtcResult compileCuda(const std::string &source, const std::string &name,
                        const std::string &arch, bool useCache = true);
/// The same without consulting or filling the cache.
NvrtcResult compileCudaUncached(const std::string &source, const std::string &name,
                                const std::string &arch);
/// What to compile for a device of architecture `smArch` ("sm_90"): that
/// architecture when this NVRTC knows it (cubin), else "compute_XY" for the
/// newest one it knows below (PTX, which the driver compiles when loading).
std::string nvrtcTargetFor(const std::string &smArch);

/// compileCuda for each source (names[i] its kernel), on `threads` threads
/// (0: up to 8, the hardware's count); results in the sources' order.
std::vector<NvrtcResult> compileCudaAll(const std::vector<std::string> &sources,
                                        const std::vector<std::string> &names,
                                        const std::string &arch, unsigned threads = 0,
                                        bool useCache = true);

/// What ptxas reported (-Xptxas=-v, in the log) and the PTX declares for
/// one entry function.
struct KernelResources {
  bool reported = false; ///< the log has ptxas's report of the entry
  int registers = 0;
  int64_t sharedBytes = 0; ///< static shared memory
  int64_t stackBytes = 0, spillStoreBytes = 0, spillLoadBytes = 0;
  int params = -1;    ///< parameters of the PTX entry, -1: no such entry
  int maxThreads = 0; ///< .maxntid's product (__launch_bounds__), 0: none
};
KernelResources kernelResources(const NvrtcResult &r, const std::string &name);

/// The key inputs of a CUDA kernel artifact.
KeyInputs cudaKernelKey(const std::string &source, const std::string &arch);

} // namespace tgc

#endif // TGC_RUNTIME_NVRTC_H
