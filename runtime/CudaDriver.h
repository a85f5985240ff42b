//===- CudaDriver.h - the CUDA driver API, opened at run time -------------===//
//
// libcuda is dlopen'ed on first use, so tgc_runtime loads and runs CPU plans
// on machines without an NVIDIA driver; only a CUDA plan asks for it.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_CUDADRIVER_H
#define TGC_RUNTIME_CUDADRIVER_H

#include <cuda.h>

#include <string>

namespace tgc::cuda {

/// The driver entry points tgc uses, resolved once.
#define TGC_CUDA_FUNCTIONS(X)                                                  \
  X(cuInit) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) \
  X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuModuleLoadData)                   \
  X(cuModuleGetFunction) X(cuModuleUnload) X(cuLaunchKernel) X(cuGetErrorString)

struct DriverApi {
  void *handle = nullptr;
  std::string why; ///< why the driver is unavailable
#define TGC_CUDA_FN(name) decltype(&::name) name = nullptr;
  TGC_CUDA_FUNCTIONS(TGC_CUDA_FN)
#undef TGC_CUDA_FN
};

/// The driver (TGC_CUDA_LIBRARY, else libcuda.so.1), initialized; `handle`
/// is null and `why` says what failed when there is none.
const DriverApi &driver();

/// Throws c10::Error "<what>: <driver's message>" unless `rc` is success.
void check(CUresult rc, const char *what);

/// The driver's text for `rc` ("invalid device context"), else "CUDA error <rc>".
std::string errorText(CUresult rc);

/// Makes `device`'s primary context (the one PyTorch's runtime uses) current
/// on this thread while the guard lives, then makes the context that was
/// current before current again: the CUDA runtime reads its current device
/// from the current context, so a launch on device 1 must not move
/// PyTorch's current device off 0. Costs one cuCtxGetCurrent when the
/// context is already the right one.
class ContextGuard {
public:
  explicit ContextGuard(int device);
  ~ContextGuard();
  ContextGuard(const ContextGuard &) = delete;
  ContextGuard &operator=(const ContextGuard &) = delete;

private:
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

/// The device's compute capability as NVRTC's architecture, "sm_90".
std::string deviceArch(int device);

/// Streaming multiprocessors of the device (to size grid-stride grids).
int multiprocessors(int device);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDADRIVER_H
