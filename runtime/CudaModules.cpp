//===- CudaModules.cpp - a CUDA plan's kernels: NVRTC, modules, launches --===//
#include "runtime/CudaModules.h"

#include "runtime/CudaDriver.h"
#include "runtime/Nvrtc.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>

namespace tgc {

namespace {

/// The compiled images of a plan's kernels and their functions per device.
struct LoadedKernels {
  std::vector<std::string> names, images; ///< cubin, or PTX with its NUL
  std::mutex mutex;
  struct PerDevice {
    std::vector<CUfunction> functions;
    int64_t maxGrid = 0; ///< blocks worth launching: a few waves per SM
  };
  std::unordered_map<int, PerDevice> devices;

  /// Loads the modules into `device`'s primary context the first time.
  const PerDevice &on(int device) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = devices.find(device);
    if (it != devices.end())
      return it->second;
    const cuda::DriverApi &d = cuda::driver();
    PerDevice p;
    for (size_t i = 0; i < images.size(); ++i) {
      CUmodule m;
      CUfunction f;
      cuda::check(d.cuModuleLoadData(&m, images[i].data()), ("cuModuleLoadData " + names[i]).c_str());
      cuda::check(d.cuModuleGetFunction(&f, m, names[i].c_str()), "cuModuleGetFunction");
      p.functions.push_back(f);
    }
    p.maxGrid = int64_t(cuda::multiprocessors(device)) * 32;
    return devices.emplace(device, std::move(p)).first->second;
  }
};

} // namespace

KernelLauncher cudaLauncherFromImages(std::vector<std::string> names,
                                     std::vector<std::string> images) {
  auto loaded = std::make_shared<LoadedKernels>();
  loaded->names = std::move(names);
  loaded->images = std::move(images);
  return [loaded](size_t index, const KernelStep &k, const at::Device &device, void **args) {
    TORCH_CHECK(device.is_cuda(), "tgc: a CUDA plan got inputs on ", device.str());
    int dev = device.has_index() ? device.index() : c10::cuda::current_device();
    cuda::makeCurrent(dev);
    const LoadedKernels::PerDevice &p = loaded->on(dev);
    // Grid-stride kernels: capping the grid only adds trips to the loops.
    unsigned grid = (unsigned)std::max<int64_t>(1, std::min(k.grid, p.maxGrid));
    CUstream stream = c10::cuda::getCurrentCUDAStream(dev).stream();
    cuda::check(cuda::driver().cuLaunchKernel(p.functions[index], grid, 1, 1, (unsigned)k.block, 1,
                                              1, 0, stream, args, nullptr),
                ("cuLaunchKernel " + k.name).c_str());
  };
}

KernelLauncher cudaLauncher(const Plan &plan, int64_t &compiled, std::string &error) {
  const cuda::DriverApi &d = cuda::driver();
  std::string why;
  if (!d.handle || !nvrtcAvailable(&why)) {
    error = "running a CUDA plan needs the NVIDIA driver and NVRTC: " + (d.handle ? why : d.why);
    return {};
  }
  std::vector<std::string> names, images;
  for (const KernelStep &k : plan.kernels)
    names.push_back(k.name);
  std::string arch = nvrtcTargetFor(cuda::deviceArch(c10::cuda::current_device()));
  std::vector<NvrtcResult> built = compileCudaAll(plan.cudaSources, names, arch);
  for (NvrtcResult &r : built) {
    if (!r.ok) {
      error = r.error;
      return {};
    }
    compiled += !r.fromCache;
    images.push_back(!r.cubin.empty() ? std::move(r.cubin) : r.ptx + '\0');
  }
  return cudaLauncherFromImages(std::move(names), std::move(images));
}

} // namespace tgc
