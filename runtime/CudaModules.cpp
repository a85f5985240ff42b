//===- CudaModules.cpp - a CUDA plan's kernels: NVRTC, modules, launches --===//
#include "runtime/CudaModules.h"

#include "runtime/CudaDriver.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>

namespace tgc {

namespace {

/// The built images of a plan's kernels and their functions per device.
struct LoadedKernels {
  std::vector<std::string> names;
  KernelImages images;
  CudaStreams streams;
  std::mutex mutex;
  struct PerDevice {
    std::vector<CUmodule> modules;
    std::vector<CUfunction> functions;
    int64_t maxGrid = 0; ///< blocks worth launching: a few waves per SM
  };
  std::unordered_map<int, PerDevice> devices;

  LoadedKernels() = default;
  LoadedKernels(const LoadedKernels &) = delete;
  LoadedKernels &operator=(const LoadedKernels &) = delete;
  ~LoadedKernels() {
    for (auto &[device, p] : devices)
      unload(device, p.modules);
  }

  /// Unloads `modules` from `device`'s context. Errors are ignored: at
  /// process exit the driver may already be gone, and then so are they.
  static void unload(int device, const std::vector<CUmodule> &modules) {
    if (modules.empty())
      return;
    try {
      cuda::ContextGuard guard(device);
      for (CUmodule m : modules)
        cuda::driver().cuModuleUnload(m);
    } catch (const c10::Error &) {
    }
  }

  /// Kernel i's image for a device of architecture `arch`: its cubin, else
  /// its PTX with the NUL cuModuleLoadData wants.
  std::string imageFor(size_t i, const std::string &arch) const {
    for (size_t a = 0; a < images.archs.size(); ++a)
      if (images.archs[a] == arch && i < images.cubins[a].size() && !images.cubins[a][i].empty())
        return images.cubins[a][i];
    if (i < images.ptx.size() && !images.ptx[i].empty())
      return images.ptx[i] + '\0';
    std::string built;
    for (const std::string &a : images.archs)
      built += (built.empty() ? "" : ", ") + a;
    TORCH_CHECK(false, "tgc: kernel ", names[i], " has no image for a ", arch, " device (built for ",
                built, ", without PTX)");
  }

  /// Loads the modules into `device`'s primary context (current: the
  /// caller holds a ContextGuard) the first time.
  const PerDevice &on(int device) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = devices.find(device);
    if (it != devices.end())
      return it->second;
    const cuda::DriverApi &d = cuda::driver();
    const std::string arch = cuda::deviceArch(device);
    PerDevice p;
    try {
      for (size_t i = 0; i < names.size(); ++i) {
        std::string image = imageFor(i, arch);
        CUmodule m;
        CUfunction f;
        cuda::check(d.cuModuleLoadData(&m, image.data()),
                    ("cuModuleLoadData " + names[i] + " (" + arch + ")").c_str());
        p.modules.push_back(m);
        cuda::check(d.cuModuleGetFunction(&f, m, names[i].c_str()),
                    ("cuModuleGetFunction " + names[i]).c_str());
        p.functions.push_back(f);
      }
      p.maxGrid = int64_t(cuda::multiprocessors(device)) * 32;
    } catch (...) {
      unload(device, p.modules); // a later launch tries again from scratch
      throw;
    }
    return devices.emplace(device, std::move(p)).first->second;
  }
};

int pytorchDevice() { return c10::cuda::current_device(); }

void *pytorchStream(int device) { return c10::cuda::getCurrentCUDAStream(device).stream(); }

} // namespace

KernelLauncher cudaLauncherFromImages(std::vector<std::string> names, const KernelImages &images,
                                      CudaStreams streams) {
  auto loaded = std::make_shared<LoadedKernels>();
  loaded->names = std::move(names);
  loaded->images = images;
  loaded->streams.currentDevice = streams.currentDevice ? streams.currentDevice : pytorchDevice;
  loaded->streams.currentStream = streams.currentStream ? streams.currentStream : pytorchStream;
  return [loaded](size_t index, const KernelStep &k, const at::Device &device, void **args) {
    TORCH_CHECK(device.is_cuda(), "tgc: a CUDA plan got inputs on ", device.str());
    TORCH_CHECK(index < loaded->names.size(), "tgc: kernel ", index, " of a plan with ",
                loaded->names.size(), " kernels");
    int dev = device.has_index() ? device.index() : loaded->streams.currentDevice();
    cuda::ContextGuard context(dev);
    const LoadedKernels::PerDevice &p = loaded->on(dev);
    // Grid-stride kernels: capping the grid only adds trips to the loops.
    unsigned grid = (unsigned)std::max<int64_t>(1, std::min(k.grid, p.maxGrid));
    auto stream = static_cast<CUstream>(loaded->streams.currentStream(dev));
    cuda::check(cuda::driver().cuLaunchKernel(p.functions[index], grid, 1, 1, (unsigned)k.block, 1,
                                              1, 0, stream, args, nullptr),
                ("cuLaunchKernel " + k.name).c_str());
  };
}

} // namespace tgc
