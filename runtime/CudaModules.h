//===- CudaModules.h - a CUDA plan's kernels: NVRTC, modules, launches ----===//
#ifndef TGC_RUNTIME_CUDAMODULES_H
#define TGC_RUNTIME_CUDAMODULES_H

#include "runtime/Backend.h"

namespace tgc {

/// Where launches go. Unset members mean PyTorch's choice (c10::cuda): its
/// current device for a device without an index, and the device's current
/// stream. Tests of the driver path set both (there is no CUDA runtime
/// without a GPU).
struct CudaStreams {
  int (*currentDevice)() = nullptr;
  void *(*currentStream)(int device) = nullptr; ///< returns a CUstream
};

/// A launcher for built kernels: kernel i of the plan is `names[i]`. At the
/// first launch on a device it loads (cuModuleLoadData, once per device, in
/// the device's primary context) the cubin built for that device's
/// architecture, else the PTX (which the driver compiles); then it launches
/// with cuLaunchKernel on the device's current stream, the grid capped at a
/// few waves of the device's multiprocessors (the kernels are grid-stride
/// loops). The context current before a launch is current again after it.
/// The modules are unloaded when the launcher goes. Needs the driver, not
/// NVRTC.
KernelLauncher cudaLauncherFromImages(std::vector<std::string> names, const KernelImages &images,
                                      CudaStreams streams = {});

} // namespace tgc

#endif // TGC_RUNTIME_CUDAMODULES_H
