//===- CudaModules.h - a CUDA plan's kernels: NVRTC, modules, launches ----===//
#ifndef TGC_RUNTIME_CUDAMODULES_H
#define TGC_RUNTIME_CUDAMODULES_H

#include "runtime/Backend.h"

namespace tgc {

/// A launcher for built kernels: kernel i of the plan is `names[i]`. At the
/// first launch on a device it loads (cuModuleLoadData, once per device)
/// the cubin built for that device's architecture, else the PTX (which the
/// driver compiles); then it launches with cuLaunchKernel on PyTorch's
/// current stream of the buffers' device. Needs the driver, not NVRTC.
KernelLauncher cudaLauncherFromImages(std::vector<std::string> names, const KernelImages &images);

} // namespace tgc

#endif // TGC_RUNTIME_CUDAMODULES_H
