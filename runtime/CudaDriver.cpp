//===- CudaDriver.cpp - the CUDA driver API, opened at run time -----------===//
#include "runtime/CudaDriver.h"

#include "runtime/Log.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <unordered_map>

namespace tgc::cuda {

const DriverApi &driver() {
  static const DriverApi api = [] {
    DriverApi a;
    const char *env = std::getenv("TGC_CUDA_LIBRARY");
    const char *path = env && *env ? env : "libcuda.so.1";
    if (!(a.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
      a.why = std::string("the CUDA driver (") + path + ") cannot be loaded: " + dlerror();
      return a;
    }
#define TGC_CUDA_FN(name)                                                      \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(a.handle, #name));        \
  if (!a.name) {                                                               \
    a.why = std::string(path) + " lacks " #name;                               \
    a.handle = nullptr;                                                        \
    return a;                                                                  \
  }
    TGC_CUDA_FUNCTIONS(TGC_CUDA_FN)
#undef TGC_CUDA_FN
    if (CUresult rc = a.cuInit(0); rc != CUDA_SUCCESS) {
      const char *msg = nullptr;
      a.cuGetErrorString(rc, &msg);
      a.why = std::string("cuInit failed: ") + (msg ? msg : "CUDA error " + std::to_string(rc));
      a.handle = nullptr;
    }
    return a;
  }();
  return api;
}

std::string errorText(CUresult rc) {
  const char *msg = nullptr;
  if (driver().cuGetErrorString && driver().cuGetErrorString(rc, &msg) != CUDA_SUCCESS)
    msg = nullptr;
  return msg ? msg : "CUDA error " + std::to_string(rc);
}

void check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS)
    return;
  TORCH_CHECK(false, "tgc: ", what, ": ", errorText(rc));
}

/// The device's primary context, retained once per process.
static CUcontext primaryContext(const DriverApi &d, int device) {
  static std::mutex mutex;
  static std::unordered_map<int, CUcontext> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device);
  if (it == contexts.end()) {
    CUdevice dev;
    CUcontext ctx;
    check(d.cuDeviceGet(&dev, device), ("cuDeviceGet " + std::to_string(device)).c_str());
    check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    it = contexts.emplace(device, ctx).first;
  }
  return it->second;
}

ContextGuard::ContextGuard(int device) {
  const DriverApi &d = driver();
  TORCH_CHECK(d.handle, "tgc: ", d.why);
  CUcontext ctx = primaryContext(d, device);
  check(d.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ == ctx)
    return;
  check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  restore_ = true;
}

ContextGuard::~ContextGuard() {
  if (!restore_)
    return;
  // A destructor cannot throw; a failure here leaves the thread on the
  // device's context, which the warning says.
  if (CUresult rc = driver().cuCtxSetCurrent(previous_); rc != CUDA_SUCCESS)
    warn("tgc: restoring the previous CUDA context failed: " + errorText(rc));
}

static int attribute(int device, CUdevice_attribute a) {
  const DriverApi &d = driver();
  TORCH_CHECK(d.handle, "tgc: ", d.why);
  CUdevice dev;
  int v = 0;
  check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
  check(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
  return v;
}

std::string deviceArch(int device) {
  return "sm_" + std::to_string(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) +
         std::to_string(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
}

int multiprocessors(int device) {
  return attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

} // namespace tgc::cuda
