//===- GpuCase.cpp - a compiled CUDA program as a file, for GPU machines --===//
#include "tests/gpu/GpuCase.h"

#include "runtime/ArtifactCache.h"
#include "runtime/ByteStream.h"
#include "runtime/CudaDriver.h"
#include "runtime/CudaModules.h"
#include "runtime/Nvrtc.h"

#include <c10/cuda/CUDAFunctions.h>
#include <torch/cuda.h>
#include <torch/serialize.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tgc::gpu {

namespace {

constexpr int64_t kFormat = 1;

std::string pickle(const std::vector<at::Tensor> &ts) {
  std::vector<char> bytes = torch::pickle_save(c10::IValue(ts));
  return std::string(bytes.begin(), bytes.end());
}

std::vector<at::Tensor> unpickle(const std::string &s) {
  c10::IValue v = torch::pickle_load(std::vector<char>(s.begin(), s.end()));
  return v.toTensorVector();
}

} // namespace

void writeGpuCase(const GpuCase &c, const std::string &path) {
  Writer w;
  w.i64(kFormat);
  w.str(c.name);
  w.str(serializePlan(c.plan));
  w.str(serializePlan(c.eager));
  w.str(c.arch);
  w.i64(c.images.size());
  for (const std::string &i : c.images)
    w.str(i);
  w.str(pickle(c.inputs));
  w.str(pickle(c.expected));
  w.f64(c.tol);
  if (!writeFileAtomic(path, w.out))
    throw std::runtime_error("cannot write " + path);
}

GpuCase readGpuCase(const std::string &path) {
  std::string data;
  if (!readFile(path, data))
    throw std::runtime_error("cannot read " + path);
  Reader r(data);
  if (r.i64() != kFormat)
    throw std::runtime_error(path + ": not a GPU case of this version");
  GpuCase c;
  c.name = r.str();
  std::string error;
  if (!deserializePlan(r.str(), c.plan, error) || !deserializePlan(r.str(), c.eager, error))
    throw std::runtime_error(path + ": " + error);
  c.arch = r.str();
  c.images.resize(r.count(8));
  for (std::string &i : c.images)
    i = r.str();
  c.inputs = unpickle(r.str());
  c.expected = unpickle(r.str());
  c.tol = r.f64();
  return c;
}

std::string buildImages(GpuCase &c, const std::string &arch) {
  std::vector<std::string> names;
  for (const KernelStep &k : c.plan.kernels)
    names.push_back(k.name);
  c.arch = arch;
  c.images.clear();
  for (NvrtcResult &r : compileCudaAll(c.plan.cudaSources, names, arch)) {
    if (!r.ok)
      return r.error;
    c.images.push_back(std::move(r.cubin));
  }
  return "";
}

std::shared_ptr<CompiledGraph> loadOnDevice(const GpuCase &c, std::string &error) {
  if (cuda::deviceArch(c10::cuda::current_device()) != c.arch)
    return CompiledGraph::load(c.plan, error);
  std::vector<std::string> names;
  for (const KernelStep &k : c.plan.kernels)
    names.push_back(k.name);
  return CompiledGraph::loadWithLauncher(c.plan, cudaLauncherFromImages(names, c.images), error);
}

std::string whyNoGpu() {
  if (!cuda::driver().handle)
    return cuda::driver().why;
  if (!torch::cuda::is_available())
    return "PyTorch sees no CUDA device (torch::cuda::is_available() is false)";
  return "";
}

} // namespace tgc::gpu
