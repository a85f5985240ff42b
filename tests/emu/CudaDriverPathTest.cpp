// The real CUDA launch path (runtime/CudaModules.cpp, CudaDriver.cpp) against
// a recording fake driver (FakeCuda.h), with NVRTC's real cubins and PTX:
// modules loaded once per device in that device's context, the image that
// fits each device (cubin, else PTX), function names, grid and block,
// argument identity, the stream, the previous context restored after each
// call, failures named with the driver's text, modules unloaded at the end.
#include "runtime/CudaDriver.h"
#include "runtime/CudaModules.h"
#include "runtime/Nvrtc.h"
#include "runtime/Plan.h"
#include "tests/emu/FakeCuda.h"
#include "tests/emu/TestKernels.h"

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <thread>

namespace tgc {
namespace {

// Before any test reaches cuda::driver(); a ctest entry may name another library.
const bool kFakeSelected = [] { return ::setenv("TGC_CUDA_LIBRARY", TGC_FAKE_CUDA_LIBRARY, 0) == 0; }();

fakecuda::State &fake() {
  static fakecuda::State *s = [] {
    void *h = ::dlopen(TGC_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      throw std::runtime_error(std::string("cannot open the fake driver: ") + ::dlerror());
    auto get = reinterpret_cast<fakecuda::State *(*)()>(::dlsym(h, "tgcFakeCuda"));
    return get();
  }();
  return *s;
}

int pytorchsDevice() { return 1; } // what c10::cuda::current_device() would say
void *streamOf(int device) { return reinterpret_cast<void *>(uintptr_t(0x5000 + device)); }
const CudaStreams kStreams{pytorchsDevice, streamOf};

/// Two kernels as the CUDA backend builds them: cubins for sm_90 and sm_80,
/// PTX of the first architecture.
struct Built {
  std::vector<std::string> names{"pointwise_vec4", "row_sum"};
  KernelImages images;
  std::vector<KernelStep> steps;
};

const Built &built() {
  static const Built b = [] {
    Built b;
    b.images.archs = {"sm_90", "sm_80"};
    b.images.cubins.resize(2);
    std::map<std::string, std::string> sources;
    for (const auto &[name, source] : emu::kernels::all())
      sources[name] = source;
    for (const std::string &name : b.names) {
      for (size_t a = 0; a < 2; ++a) {
        NvrtcResult r = compileCuda(sources.at(name), name, b.images.archs[a]);
        if (!r.ok)
          throw std::runtime_error(name + ": " + r.error);
        b.images.cubins[a].push_back(r.cubin);
        if (a == 0)
          b.images.ptx.push_back(r.ptx);
      }
      KernelStep k;
      k.name = name;
      k.block = name == "row_sum" ? 1024 : 256;
      k.grid = 40;
      b.steps.push_back(k);
    }
    return b;
  }();
  return b;
}

class CudaDriverPath : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(nvrtcAvailable(&why)) << why; // the toolkit is a dependency
    ASSERT_TRUE(kFakeSelected);
    ASSERT_TRUE(cuda::driver().handle) << cuda::driver().why;
    built();
    fake().clearRecords();
    fake().makeCurrent(-1);
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().devices = {{9, 0, 132}, {8, 0, 108}, {10, 0, 148}};
    fake().params = {{"pointwise_vec4", 3}, {"row_sum", 2}}; // their pointer parameters
  }
  void TearDown() override { fake().makeCurrent(-1); }

  static KernelLauncher launcher() { return cudaLauncherFromImages(built().names, built().images, kStreams); }

  /// Launches kernel `k` on `device` with three distinct buffers as its arguments.
  static std::vector<void *> launch(const KernelLauncher &l, size_t k, const c10::Device &device,
                                    int64_t grid = 40) {
    static char buffers[3][64];
    std::vector<void *> bufs{buffers[0] + device.index(), buffers[1], buffers[2] + k};
    int64_t n = 4096;
    std::vector<void *> args{&bufs[0], &bufs[1], &bufs[2], &n};
    KernelStep step = built().steps[k];
    step.grid = grid;
    l(k, step, device, args.data());
    return bufs;
  }

  static size_t count(const char *call) {
    std::lock_guard<std::mutex> lock(fake().mutex);
    return std::count(fake().calls.begin(), fake().calls.end(), call);
  }
};

const c10::Device kDev0(c10::DeviceType::CUDA, 0), kDev1(c10::DeviceType::CUDA, 1),
    kDev2(c10::DeviceType::CUDA, 2);

TEST_F(CudaDriverPath, ModulesLoadOncePerDeviceWithTheImageThatFitsIt) {
  {
    KernelLauncher l = launcher();
    for (int round = 0; round < 3; ++round)
      for (size_t k = 0; k < 2; ++k) {
        launch(l, k, kDev0);
        launch(l, k, kDev1);
      }
    launch(l, 0, kDev2); // sm_100: no cubin, so the sm_90 PTX, which the driver compiles

    std::lock_guard<std::mutex> lock(fake().mutex);
    ASSERT_EQ(fake().modules.size(), 6u); // 2 kernels x 3 devices, not once per launch
    const Built &b = built();
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(fake().modules[k].device, 0);
      // (Not EXPECT_EQ: a failure would print the images.)
      EXPECT_TRUE(fake().modules[k].image == b.images.cubins[0][k]) << "device 0: the sm_90 cubin";
      EXPECT_EQ(fake().modules[2 + k].device, 1);
      EXPECT_TRUE(fake().modules[2 + k].image == b.images.cubins[1][k]) << "device 1: the sm_80 cubin";
      EXPECT_EQ(fake().modules[4 + k].device, 2);
      EXPECT_TRUE(fake().modules[4 + k].ptx);
      EXPECT_TRUE(fake().modules[4 + k].image == std::string(b.images.ptx[k].c_str()))
          << "device 2: the PTX";
    }
    ASSERT_EQ(fake().functions.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(fake().functions[i].name, b.names[i % 2]);
      EXPECT_EQ(fake().functions[i].module, i);
    }
    // One primary context retained per device, for the whole process.
    EXPECT_LE(fake().retains[0] + fake().retains[1] + fake().retains[2], 3);
    EXPECT_EQ(fake().launches.size(), 13u);
  }
  // The launcher gone, every module is unloaded, each in its own context.
  std::lock_guard<std::mutex> lock(fake().mutex);
  for (const fakecuda::Module &m : fake().modules)
    EXPECT_EQ(m.unloadedFrom, m.device);
  EXPECT_EQ(fake().currentDevice(), -1) << "unloading left a context current";
}

TEST_F(CudaDriverPath, ConcurrentFirstLaunchesLoadOnce) {
  KernelLauncher l = launcher();
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&l, t] { launch(l, t % 2, kDev1); });
  for (std::thread &t : threads)
    t.join();
  std::lock_guard<std::mutex> lock(fake().mutex);
  EXPECT_EQ(fake().modules.size(), 2u);
  EXPECT_EQ(fake().launches.size(), 6u);
}

TEST_F(CudaDriverPath, LaunchesCarryTheGeometryArgumentsAndStream) {
  KernelLauncher l = launcher();
  std::vector<void *> a = launch(l, 0, kDev0, /*grid=*/40);
  std::vector<void *> b = launch(l, 1, kDev1, /*grid=*/1 << 24);
  std::vector<void *> c = launch(l, 0, c10::Device(c10::DeviceType::CUDA), /*grid=*/1 << 24);
  std::vector<void *> d = launch(l, 0, kDev2, /*grid=*/0);

  std::lock_guard<std::mutex> lock(fake().mutex);
  const std::vector<fakecuda::Launch> &ls = fake().launches;
  ASSERT_EQ(ls.size(), 4u);
  // Kernel, device, stream of that device.
  EXPECT_EQ(ls[0].name, "pointwise_vec4");
  EXPECT_EQ(ls[0].device, 0);
  EXPECT_EQ(ls[0].stream, streamOf(0));
  EXPECT_EQ(ls[1].name, "row_sum");
  EXPECT_EQ(ls[1].device, 1);
  EXPECT_EQ(ls[1].stream, streamOf(1));
  EXPECT_EQ(ls[2].device, 1) << "a device without an index is PyTorch's current one";
  EXPECT_EQ(ls[2].stream, streamOf(1));
  EXPECT_EQ(ls[3].device, 2);
  // The plan's grid, capped at 32 blocks per SM of the device; never 0.
  EXPECT_EQ(ls[0].grid[0], 40u);
  EXPECT_EQ(ls[1].grid[0], 108u * 32);
  EXPECT_EQ(ls[2].grid[0], 108u * 32);
  EXPECT_EQ(ls[3].grid[0], 1u);
  for (const fakecuda::Launch &x : ls) {
    EXPECT_EQ(x.grid[1] * x.grid[2] * x.block[1] * x.block[2], 1u);
    EXPECT_EQ(x.shared, 0u);
  }
  EXPECT_EQ(ls[0].block[0], 256u);
  EXPECT_EQ(ls[1].block[0], 1024u);
  // The kernel sees the buffers it was given, in order.
  EXPECT_EQ(ls[0].args, (std::vector<void *>{a[0], a[1], a[2]}));
  EXPECT_EQ(ls[1].args, (std::vector<void *>{b[0], b[1]}));
  EXPECT_EQ(ls[3].args, (std::vector<void *>{d[0], d[1], d[2]}));
}

TEST_F(CudaDriverPath, TheContextCurrentBeforeALaunchIsCurrentAfterIt) {
  KernelLauncher l = launcher();
  for (int before : {-1, 0, 1, 2}) {
    fake().makeCurrent(before);
    for (size_t k = 0; k < 2; ++k)
      for (const c10::Device &d : {kDev0, kDev1, kDev2}) {
        launch(l, k, d);
        EXPECT_EQ(fake().currentDevice(), before) << "after a launch on " << d;
      }
  }
  // Another thread starts with no context and ends with none.
  std::thread([&l] {
    launch(l, 0, kDev0);
    EXPECT_EQ(fake().currentDevice(), -1);
  }).join();
  // Already on the right context: no switch at all.
  fake().makeCurrent(0);
  size_t switches = count("cuCtxSetCurrent");
  launch(l, 0, kDev0);
  EXPECT_EQ(count("cuCtxSetCurrent"), switches);
  // A failed launch restores it too.
  fake().makeCurrent(2);
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().failNext["cuLaunchKernel"] = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  }
  EXPECT_THROW(launch(l, 1, kDev0), c10::Error);
  EXPECT_EQ(fake().currentDevice(), 2);
}

/// The message of what `f` throws.
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const c10::Error &e) {
    return e.what_without_backtrace();
  }
  return "(nothing thrown)";
}

TEST_F(CudaDriverPath, FailuresNameTheCallTheKernelAndTheDriversText) {
  KernelLauncher l = launcher();
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().failNext["cuLaunchKernel"] = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  }
  EXPECT_EQ(errorOf([&] { launch(l, 1, kDev0); }),
            "tgc: cuLaunchKernel row_sum: too many resources requested for launch");
  launch(l, 1, kDev0); // the next launch works

  // A cubin the device cannot run: the driver's refusal, named, and the
  // modules loaded before it unloaded again.
  KernelImages wrong = built().images;
  std::swap(wrong.cubins[0][1], wrong.cubins[1][1]); // "sm_90" row_sum is sm_80 code
  KernelLauncher w = cudaLauncherFromImages(built().names, wrong, kStreams);
  size_t before;
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    before = fake().modules.size();
  }
  EXPECT_EQ(errorOf([&] { launch(w, 0, kDev0); }),
            "tgc: cuModuleLoadData row_sum (sm_90): no kernel image is available for execution "
            "on the device");
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    ASSERT_EQ(fake().modules.size(), before + 1); // pointwise_vec4's, then the refusal
    EXPECT_EQ(fake().modules[before].unloadedFrom, 0) << "a module of the failed load stayed";
  }
  launch(w, 0, kDev2); // device 2 takes the PTX: that works
  // A name the image lacks.
  KernelLauncher n = cudaLauncherFromImages({"pointwise_vec4", "row_summ"}, built().images, kStreams);
  EXPECT_EQ(errorOf([&] { launch(n, 0, kDev1); }),
            "tgc: cuModuleGetFunction row_summ: named symbol not found");
  // No image for the device: cubins only, for other architectures.
  KernelImages cubinsOnly = built().images;
  cubinsOnly.ptx.clear();
  KernelLauncher c = cudaLauncherFromImages(built().names, cubinsOnly, kStreams);
  EXPECT_EQ(errorOf([&] { launch(c, 0, kDev2); }),
            "tgc: kernel pointwise_vec4 has no image for a sm_100 device (built for sm_90, sm_80, "
            "without PTX)");
  launch(c, 0, kDev1); // that launcher still serves the devices it has cubins for
  // A device that is not there; an error code the driver has no text for.
  EXPECT_EQ(errorOf([&] { launch(l, 0, c10::Device(c10::DeviceType::CUDA, 5)); }),
            "tgc: cuDeviceGet 5: invalid device ordinal");
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().failNext["cuLaunchKernel"] = CUresult(12345);
  }
  EXPECT_EQ(errorOf([&] { launch(l, 0, kDev1); }), "tgc: cuLaunchKernel pointwise_vec4: CUDA error 12345");
  // A CPU device is refused before the driver is asked.
  EXPECT_EQ(errorOf([&] { l(0, built().steps[0], c10::Device(c10::DeviceType::CPU), nullptr); }),
            "tgc: a CUDA plan got inputs on cpu");
  EXPECT_EQ(fake().currentDevice(), -1);
}

// Run by their own ctest entries (a process each: the driver is resolved
// once per process): TGC_CUDA_LIBRARY names a library that is missing, one
// without the entry points, or the fake with a failing cuInit, and
// TGC_EXPECT_DRIVER_ERROR the text every launch must fail with.
TEST(CudaDriverUnavailable, EveryLaunchSaysWhy) {
  const char *expected = std::getenv("TGC_EXPECT_DRIVER_ERROR");
  if (!expected)
    GTEST_SKIP() << "run by the cuda_driver.unavailable.* ctest entries";
  EXPECT_EQ(cuda::driver().handle, nullptr);
  EXPECT_EQ(cuda::driver().why, expected);
  KernelLauncher l = cudaLauncherFromImages({"k"}, KernelImages(), kStreams);
  KernelStep step;
  step.name = "k";
  EXPECT_EQ(errorOf([&] { l(0, step, kDev0, nullptr); }), std::string("tgc: ") + expected);
}

} // namespace
} // namespace tgc
