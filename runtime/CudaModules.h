//===- CudaModules.h - a CUDA plan's kernels: NVRTC, modules, launches ----===//
#ifndef TGC_RUNTIME_CUDAMODULES_H
#define TGC_RUNTIME_CUDAMODULES_H

#include "runtime/Executor.h"

namespace tgc {

/// Compiles every kernel of the CUDA `plan` for the current device's
/// architecture (NVRTC, in parallel threads, through the kernel cache; PTX
/// when NVRTC does not know the architecture) and returns a launcher that
/// loads them (cuModuleLoadData, once per device) and launches them with
/// cuLaunchKernel on PyTorch's current stream of the buffers' device.
/// `compiled` counts the kernels NVRTC built (not cached). Returns an empty
/// launcher with `error` set when there is no driver, no NVRTC, or a kernel
/// does not compile (the message names the saved source).
KernelLauncher cudaLauncher(const Plan &plan, int64_t &compiled, std::string &error);

/// A launcher for kernels compiled ahead of time: `images[i]` (a cubin for
/// the device's architecture, or PTX ending in NUL) holds kernel
/// `names[i]`, the plan's i-th kernel. Needs the driver, not NVRTC.
KernelLauncher cudaLauncherFromImages(std::vector<std::string> names,
                                     std::vector<std::string> images);

} // namespace tgc

#endif // TGC_RUNTIME_CUDAMODULES_H
