//===- Backend.cpp - the CPU and CUDA backends' artifacts -----------------===//
#include "runtime/Backend.h"

#include "runtime/Counters.h"
#include "runtime/CudaDriver.h"
#include "runtime/CudaModules.h"
#include "runtime/FaultInjection.h"
#include "runtime/Log.h"
#include "runtime/Nvrtc.h"

#include <c10/cuda/CUDAFunctions.h>

namespace tgc {

std::shared_ptr<CompiledGraph> DeviceBackend::compile(Plan plan, int64_t &compiled,
                                                      std::string &error) const {
  compiled = 0;
  std::vector<std::string> archs;
  if (!plan.kernels.empty()) {
    archs = jitArchs(error);
    if (archs.empty())
      return nullptr;
  }
  KernelImages images;
  if (!build(plan, archs, images, error))
    return nullptr;
  if (!plan.kernels.empty() && faultInjected(FaultStage::Load))
    throw std::bad_alloc(); // as loading a large artifact may
  std::shared_ptr<CompiledGraph> g = load(plan, images, error);
  if (!g && images.compiled == 0 && !plan.kernels.empty()) {
    log("kernels", std::string("cached ") + name() + " kernels do not load (" + error +
                       "); building them again");
    error.clear();
    images = KernelImages();
    if (build(plan, archs, images, error, /*useCache=*/false))
      g = load(std::move(plan), images, error);
  }
  if (g) {
    compiled = images.compiled;
    if (images.compiled == 0 && images.cached > 0)
      counters().cacheHitsDisk++;
  }
  return g;
}

namespace {

class CpuBackend final : public DeviceBackend {
public:
  const char *name() const override { return "cpu"; }
  c10::DeviceType deviceType() const override { return c10::DeviceType::CPU; }
  std::vector<std::string> jitArchs(std::string &) const override { return {"host"}; }

  bool build(const Plan &plan, const std::vector<std::string> &archs, KernelImages &out,
             std::string &error, bool useCache) const override {
    if (plan.kernels.empty())
      return true;
    if (archs != std::vector<std::string>{"host"}) {
      error = "the CPU backend builds for the host only";
      return false;
    }
    SharedObjectBytes so = buildSharedObject(plan.cpuSource, useCache);
    if (!so.error.empty()) {
      error = so.error;
      return false;
    }
    out.object = std::move(so.bytes);
    out.objectKey = so.key;
    (so.compiled ? out.compiled : out.cached) += plan.kernels.size();
    return true;
  }

  std::shared_ptr<CompiledGraph> load(Plan plan, const KernelImages &images,
                                      std::string &error) const override {
    std::shared_ptr<SharedObject> object;
    if (!plan.kernels.empty()) {
      if (images.object.empty()) {
        error = "the plan has " + std::to_string(plan.kernels.size()) +
                " kernels and no shared object holds them";
        return nullptr;
      }
      object = SharedObject::openBytes(images.object, images.objectKey + ".so", error);
      if (!object)
        return nullptr;
    }
    return CompiledGraph::loadWith(std::move(plan), std::move(object), error);
  }
};

class CudaBackend final : public DeviceBackend {
public:
  const char *name() const override { return "cuda"; }
  c10::DeviceType deviceType() const override { return c10::DeviceType::CUDA; }

  std::vector<std::string> jitArchs(std::string &error) const override {
    const cuda::DriverApi &d = cuda::driver();
    std::string why;
    if (!d.handle || !nvrtcAvailable(&why)) {
      error = "running a CUDA plan needs the NVIDIA driver and NVRTC: " + (d.handle ? why : d.why);
      return {};
    }
    return {nvrtcTargetFor(cuda::deviceArch(c10::cuda::current_device()))};
  }

  bool build(const Plan &plan, const std::vector<std::string> &archs, KernelImages &out,
             std::string &error, bool useCache) const override {
    if (plan.kernels.empty())
      return true;
    if (plan.cudaSources.size() != plan.kernels.size()) {
      error = "a CUDA plan needs one source per kernel";
      return false;
    }
    std::vector<std::string> names;
    for (const KernelStep &k : plan.kernels)
      names.push_back(k.name);
    for (size_t a = 0; a < archs.size(); ++a) {
      std::vector<NvrtcResult> built = compileCudaAll(plan.cudaSources, names, archs[a], 0, useCache);
      std::vector<std::string> cubins;
      for (size_t k = 0; k < built.size(); ++k) {
        NvrtcResult &r = built[k];
        if (!r.ok) {
          error = r.error;
          return false;
        }
        (r.fromCache ? out.cached : out.compiled)++;
        cubins.push_back(std::move(r.cubin));
        if (a == 0)
          out.ptx.push_back(std::move(r.ptx));
      }
      out.archs.push_back(archs[a]);
      out.cubins.push_back(std::move(cubins));
    }
    return true;
  }

  std::shared_ptr<CompiledGraph> load(Plan plan, const KernelImages &images,
                                      std::string &error) const override {
    if (plan.kernels.empty())
      return CompiledGraph::loadWith(std::move(plan), nullptr, error);
    bool complete = images.ptx.size() == plan.kernels.size();
    for (const std::vector<std::string> &c : images.cubins)
      complete = complete || c.size() == plan.kernels.size();
    if (!complete || images.cubins.size() != images.archs.size()) {
      error = "the CUDA images do not cover the plan's " + std::to_string(plan.kernels.size()) +
              " kernels";
      return nullptr;
    }
    std::vector<std::string> names;
    for (const KernelStep &k : plan.kernels)
      names.push_back(k.name);
    return CompiledGraph::loadWithLauncher(std::move(plan),
                                           cudaLauncherFromImages(std::move(names), images), error);
  }
};

} // namespace

const DeviceBackend &cpuBackend() {
  static const CpuBackend b;
  return b;
}

const DeviceBackend &cudaBackend() {
  static const CudaBackend b;
  return b;
}

const DeviceBackend *backendFor(const std::string &device) {
  std::string type = device.substr(0, device.find(':'));
  if (type == "cpu")
    return &cpuBackend();
  if (type == "cuda")
    return &cudaBackend();
  return nullptr;
}

} // namespace tgc
