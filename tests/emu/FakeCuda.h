//===- FakeCuda.h - a recording stand-in for libcuda (driver-path tests) --===//
//
// libtgc_fake_cuda.so exports the driver entry points tgc's runtime resolves
// (runtime/CudaDriver.h) and behaves like a driver with a few devices: primary
// contexts, a current context per thread, modules that must match the
// device (a cubin's SM from its ELF flags, PTX no newer than the device),
// functions that must be in their image, launches that must come from the
// function's context. Each call is recorded; a test selects the library with
// TGC_CUDA_LIBRARY, opens it itself and reads the record through
// tgcFakeCuda(). The images are not run.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TESTS_EMU_FAKECUDA_H
#define TGC_TESTS_EMU_FAKECUDA_H

#include <cuda.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tgc::fakecuda {

struct Device {
  int major, minor, multiprocessors;
};

struct Module {
  int device;        ///< of the context current at cuModuleLoadData
  std::string image; ///< the bytes loaded (a cubin, or PTX without its NUL)
  bool ptx;
  int unloadedFrom = -1; ///< the current context's device at cuModuleUnload, -1: loaded
};

struct Function {
  size_t module;
  std::string name;
};

struct Launch {
  int device; ///< of the current context
  std::string name;
  unsigned grid[3], block[3], shared;
  CUstream stream;
  std::vector<void *> args; ///< *kernelParams[i], for the kernel's declared parameter count
};

struct State {
  std::mutex mutex;
  /// Devices by ordinal; default: sm_90 with 132 SMs, sm_80 with 108, sm_100 with 148.
  std::vector<Device> devices;
  /// Parameters of each kernel (by name): how many kernelParams a launch reads.
  std::map<std::string, int> params;
  /// The next call of the named entry point fails with this result.
  std::map<std::string, CUresult> failNext;

  std::vector<std::string> calls; ///< "cuModuleLoadData", in order
  std::vector<int> retains;       ///< cuDevicePrimaryCtxRetain per device
  std::vector<Module> modules;
  std::vector<Function> functions;
  std::vector<Launch> launches;

  /// This thread's current context as a device ordinal (-1: none), and to set it.
  int (*currentDevice)() = nullptr;
  void (*makeCurrent)(int device) = nullptr;
  /// Forgets every record (the configuration stays).
  void (*clearRecords)() = nullptr;
};

} // namespace tgc::fakecuda

extern "C" tgc::fakecuda::State *tgcFakeCuda();

#endif // TGC_TESTS_EMU_FAKECUDA_H
