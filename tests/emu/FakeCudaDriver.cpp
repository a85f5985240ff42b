//===- FakeCudaDriver.cpp - a recording stand-in for libcuda -------------===//
#include "tests/emu/FakeCuda.h"

#include <cstdlib>
#include <cstring>
#include <algorithm>

using tgc::fakecuda::State;

namespace {

constexpr int kMaxDevices = 8;

/// A context is the address of one of these: the device's primary context.
struct Context {
  int device;
};
Context contexts[kMaxDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
thread_local CUcontext current = nullptr;
bool initialized = false;

/// Stable addresses for CUmodule and CUfunction handles: index + 1.
template <typename H> H handle(size_t index) { return reinterpret_cast<H>(index + 1); }
template <typename H> size_t indexOf(H h) { return reinterpret_cast<size_t>(h) - 1; }

int currentDevice() {
  return current ? reinterpret_cast<Context *>(current)->device : -1;
}

State &state() {
  static State *s = [] {
    auto *st = new State;
    st->devices = {{9, 0, 132}, {8, 0, 108}, {10, 0, 148}};
    st->currentDevice = currentDevice;
    st->makeCurrent = [](int device) {
      current = device < 0 ? nullptr : reinterpret_cast<CUcontext>(&contexts[device]);
    };
    st->clearRecords = [] {
      State &x = *tgcFakeCuda();
      std::lock_guard<std::mutex> lock(x.mutex);
      x.calls.clear();
      x.retains.assign(kMaxDevices, 0);
      x.modules.clear();
      x.functions.clear();
      x.launches.clear();
      x.failNext.clear();
    };
    st->retains.assign(kMaxDevices, 0);
    return st;
  }();
  return *s;
}

/// Records the call; returns the failure injected for it, if any.
CUresult enter(State &s, const char *name) {
  s.calls.push_back(name);
  auto it = s.failNext.find(name);
  if (it == s.failNext.end())
    return CUDA_SUCCESS;
  CUresult rc = it->second;
  s.failNext.erase(it);
  return rc;
}

/// A cubin's SM (ELF64 e_flags bits 8-15 in NVIDIA's ABI version 8), or -1.
int cubinSm(const unsigned char *image) {
  uint32_t flags;
  std::memcpy(&flags, image + 48, 4);
  return image[8] >= 8 ? int((flags >> 8) & 0xff) : -1;
}

/// PTX's ".target sm_XY" as XY, or -1.
int ptxSm(const std::string &ptx) {
  size_t at = ptx.find(".target sm_");
  return at == std::string::npos ? -1 : std::atoi(ptx.c_str() + at + 11);
}

} // namespace

extern "C" {

State *tgcFakeCuda() { return &state(); }

CUresult CUDAAPI cuInit(unsigned int flags) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuInit"))
    return rc;
  if (const char *e = std::getenv("TGC_FAKE_CUDA_INIT_ERROR"); e && *e)
    return CUresult(std::atoi(e));
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  initialized = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuDeviceGet"))
    return rc;
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= int(s.devices.size()) || ordinal >= kMaxDevices)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice device) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuDeviceGetAttribute"))
    return rc;
  if (device < 0 || device >= int(s.devices.size()))
    return CUDA_ERROR_INVALID_DEVICE;
  const tgc::fakecuda::Device &d = s.devices[device];
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = d.major; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = d.minor; return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = d.multiprocessors; return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuDevicePrimaryCtxRetain"))
    return rc;
  if (device < 0 || device >= int(s.devices.size()))
    return CUDA_ERROR_INVALID_DEVICE;
  s.retains[device]++;
  *ctx = reinterpret_cast<CUcontext>(&contexts[device]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *ctx) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuCtxGetCurrent"))
    return rc;
  *ctx = current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuCtxSetCurrent"))
    return rc;
  auto *c = reinterpret_cast<Context *>(ctx);
  if (c && (c < contexts || c >= contexts + kMaxDevices))
    return CUDA_ERROR_INVALID_CONTEXT;
  current = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuModuleLoadData"))
    return rc;
  int dev = currentDevice();
  if (dev < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  const auto *bytes = static_cast<const unsigned char *>(image);
  const int deviceSm = s.devices[dev].major * 10 + s.devices[dev].minor;
  tgc::fakecuda::Module m{dev, {}, false};
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    // The section and program header tables end an NVIDIA cubin.
    uint64_t phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    std::memcpy(&phoff, bytes + 32, 8);
    std::memcpy(&shoff, bytes + 40, 8);
    std::memcpy(&phentsize, bytes + 54, 2);
    std::memcpy(&phnum, bytes + 56, 2);
    std::memcpy(&shentsize, bytes + 58, 2);
    std::memcpy(&shnum, bytes + 60, 2);
    if (cubinSm(bytes) != deviceSm)
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    uint64_t end = std::max(shoff + uint64_t(shnum) * shentsize, phoff + uint64_t(phnum) * phentsize);
    m.image.assign(reinterpret_cast<const char *>(bytes), end);
  } else {
    m.image = reinterpret_cast<const char *>(bytes); // up to the NUL it must have
    m.ptx = true;
    int sm = ptxSm(m.image);
    if (m.image.find(".version") == std::string::npos)
      return CUDA_ERROR_INVALID_IMAGE;
    if (sm < 0 || sm > deviceSm)
      return CUDA_ERROR_INVALID_PTX; // the JIT cannot target an older device
  }
  s.modules.push_back(std::move(m));
  *module = handle<CUmodule>(s.modules.size() - 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuModuleGetFunction"))
    return rc;
  size_t m = indexOf(module);
  if (m >= s.modules.size() || s.modules[m].unloadedFrom >= 0)
    return CUDA_ERROR_INVALID_HANDLE;
  const std::string &image = s.modules[m].image;
  // PTX declares ".entry name("; a cubin's string table holds "name\0".
  bool found = s.modules[m].ptx
                   ? image.find(std::string(".entry ") + name + "(") != std::string::npos
                   : image.find(std::string(1, '\0') + name + std::string(1, '\0')) !=
                         std::string::npos;
  if (!found)
    return CUDA_ERROR_NOT_FOUND;
  s.functions.push_back({m, name});
  *function = handle<CUfunction>(s.functions.size() - 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuModuleUnload"))
    return rc;
  size_t m = indexOf(module);
  if (m >= s.modules.size() || s.modules[m].unloadedFrom >= 0)
    return CUDA_ERROR_INVALID_HANDLE;
  if (currentDevice() != s.modules[m].device)
    return CUDA_ERROR_INVALID_CONTEXT;
  s.modules[m].unloadedFrom = currentDevice();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, CUstream stream, void **params,
                                void **extra) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult rc = enter(s, "cuLaunchKernel"))
    return rc;
  size_t fi = indexOf(f);
  if (fi >= s.functions.size())
    return CUDA_ERROR_INVALID_HANDLE;
  const tgc::fakecuda::Function &fn = s.functions[fi];
  const tgc::fakecuda::Module &m = s.modules[fn.module];
  int dev = currentDevice();
  if (dev < 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (m.unloadedFrom >= 0 || m.device != dev) // a function of another context
    return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > 1024 || extra)
    return CUDA_ERROR_INVALID_VALUE;
  tgc::fakecuda::Launch l{dev, fn.name, {gx, gy, gz}, {bx, by, bz}, shared, stream, {}};
  int n = s.params.count(fn.name) ? s.params[fn.name] : 0;
  for (int i = 0; i < n; ++i)
    l.args.push_back(*static_cast<void **>(params[i]));
  s.launches.push_back(std::move(l));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_SUCCESS: *text = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; break;
  case CUDA_ERROR_NOT_INITIALIZED: *text = "initialization error"; break;
  case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
  case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal"; break;
  case CUDA_ERROR_INVALID_IMAGE: *text = "device kernel image is invalid"; break;
  case CUDA_ERROR_INVALID_CONTEXT: *text = "invalid device context"; break;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *text = "no kernel image is available for execution on the device";
    break;
  case CUDA_ERROR_INVALID_PTX: *text = "a PTX JIT compilation failed"; break;
  case CUDA_ERROR_INVALID_HANDLE: *text = "invalid resource handle"; break;
  case CUDA_ERROR_NOT_FOUND: *text = "named symbol not found"; break;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: *text = "too many resources requested for launch"; break;
  default: *text = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

} // extern "C"
