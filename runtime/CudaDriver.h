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
  X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleGetFunction)                \
  X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuGetErrorString)

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

/// Makes `device`'s primary context (the one PyTorch's runtime uses)
/// current on this thread.
void makeCurrent(int device);

/// The device's compute capability as NVRTC's architecture, "sm_90".
std::string deviceArch(int device);

/// Streaming multiprocessors of the device (to size grid-stride grids).
int multiprocessors(int device);

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDADRIVER_H
