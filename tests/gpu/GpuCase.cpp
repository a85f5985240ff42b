//===- GpuCase.cpp - a compiled CUDA program as a file, for GPU machines --===//
#include "tests/gpu/GpuCase.h"

#include "runtime/ArtifactCache.h"
#include "runtime/ByteStream.h"
#include "runtime/CudaDriver.h"
#include "runtime/Backend.h"
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
constexpr int64_t kTrainingFormat = 1;

std::string pickle(const std::vector<at::Tensor> &ts) {
  std::vector<char> bytes = torch::pickle_save(c10::IValue(ts));
  return std::string(bytes.begin(), bytes.end());
}

std::vector<at::Tensor> unpickle(const std::string &s) {
  c10::IValue v = torch::pickle_load(std::vector<char>(s.begin(), s.end()));
  return v.toTensorVector();
}

void writeCase(Writer &w, const GpuCase &c) {
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
}

GpuCase readCase(Reader &r, const std::string &path) {
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

std::string fileContents(const std::string &path) {
  std::string data;
  if (!readFile(path, data))
    throw std::runtime_error("cannot read " + path);
  return data;
}

void writeOut(const Writer &w, const std::string &path) {
  if (!writeFileAtomic(path, w.out))
    throw std::runtime_error("cannot write " + path);
}

} // namespace

void writeGpuCase(const GpuCase &c, const std::string &path) {
  Writer w;
  writeCase(w, c);
  writeOut(w, path);
}

GpuCase readGpuCase(const std::string &path) {
  std::string data = fileContents(path);
  Reader r(data);
  return readCase(r, path);
}

void writeGpuTrainingCase(const GpuTrainingCase &c, const std::string &path) {
  Writer w;
  w.i64(kTrainingFormat);
  w.str(c.name);
  writeCase(w, c.forward);
  writeCase(w, c.backward);
  w.str(serializePlan(c.eager));
  w.i64(c.layout.numPrimals);
  w.i64(c.layout.numOutputs);
  w.i64(c.layout.backwardInputs.size());
  for (const TrainingLayout::Source &s : c.layout.backwardInputs) {
    w.i64(s.kind);
    w.i64(s.index);
  }
  w.ids(c.layout.tangentOf);
  w.ids(c.layout.gradOf);
  w.i64(c.layout.savedBytes);
  w.i64(c.requiresGrad.size());
  for (bool b : c.requiresGrad)
    w.u8(b);
  writeOut(w, path);
}

GpuTrainingCase readGpuTrainingCase(const std::string &path) {
  std::string data = fileContents(path);
  Reader r(data);
  if (r.i64() != kTrainingFormat)
    throw std::runtime_error(path + ": not a GPU training case of this version");
  GpuTrainingCase c;
  c.name = r.str();
  c.forward = readCase(r, path);
  c.backward = readCase(r, path);
  std::string error;
  if (!deserializePlan(r.str(), c.eager, error))
    throw std::runtime_error(path + ": " + error);
  c.layout.numPrimals = r.i64();
  c.layout.numOutputs = r.i64();
  c.layout.backwardInputs.resize(r.count(16));
  for (TrainingLayout::Source &s : c.layout.backwardInputs) {
    int64_t kind = r.i64();
    if (kind < TrainingLayout::Source::Primal || kind > TrainingLayout::Source::Tangent)
      throw std::runtime_error(path + ": bad backward input kind");
    s.kind = TrainingLayout::Source::Kind(kind);
    s.index = int(r.i64());
  }
  c.layout.tangentOf = r.ids();
  c.layout.gradOf = r.ids();
  c.layout.savedBytes = r.i64();
  c.requiresGrad.resize(r.count(1));
  for (size_t i = 0; i < c.requiresGrad.size(); ++i)
    c.requiresGrad[i] = r.u8() != 0;
  if (!r.done())
    throw std::runtime_error(path + ": trailing data");
  // The wiring must fit the plans: a bad file fails here, not in a backward.
  const TrainingLayout &l = c.layout;
  bool fits = l.numPrimals == c.forward.plan.inputs.size() &&
              l.numPrimals == c.requiresGrad.size() && l.numPrimals == c.eager.inputs.size() &&
              l.numOutputs <= c.forward.plan.outputs.size() &&
              l.backwardInputs.size() == c.backward.plan.inputs.size() &&
              l.gradOf.size() == c.backward.plan.outputs.size();
  for (const TrainingLayout::Source &s : l.backwardInputs) {
    size_t bound = s.kind == TrainingLayout::Source::Primal          ? l.numPrimals
                   : s.kind == TrainingLayout::Source::ForwardOutput ? c.forward.plan.outputs.size()
                                                                     : l.tangentOf.size();
    fits = fits && s.index >= 0 && size_t(s.index) < bound;
  }
  for (int k : l.tangentOf)
    fits = fits && k >= 0 && size_t(k) < l.numOutputs;
  for (int k : l.gradOf)
    fits = fits && k >= 0 && size_t(k) < l.numPrimals;
  if (!fits)
    throw std::runtime_error(path + ": the training layout does not fit its plans");
  return c;
}

std::shared_ptr<TrainingGraph> loadTrainingOnDevice(const GpuTrainingCase &c, std::string &error) {
  auto g = std::make_shared<TrainingGraph>();
  g->forward = loadOnDevice(c.forward, error);
  g->backward = g->forward ? loadOnDevice(c.backward, error) : nullptr;
  if (!g->backward)
    return nullptr;
  g->layout = c.layout;
  return g;
}

std::string buildImages(GpuCase &c, const std::string &arch) {
  KernelImages images;
  std::string error;
  c.arch = arch;
  c.images.clear();
  if (!cudaBackend().build(c.plan, {arch}, images, error))
    return error;
  if (!images.cubins.empty())
    c.images = std::move(images.cubins[0]);
  return "";
}

std::shared_ptr<CompiledGraph> loadOnDevice(const GpuCase &c, std::string &error) {
  if (cuda::deviceArch(c10::cuda::current_device()) != c.arch)
    return CompiledGraph::load(c.plan, error);
  KernelImages images;
  images.archs = {c.arch};
  images.cubins = {c.images};
  return cudaBackend().load(c.plan, images, error);
}

std::string whyNoGpu() {
  if (!cuda::driver().handle)
    return cuda::driver().why;
  if (!torch::cuda::is_available())
    return "PyTorch sees no CUDA device (torch::cuda::is_available() is false)";
  return "";
}

} // namespace tgc::gpu
