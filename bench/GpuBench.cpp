// Eager vs tgc on a GPU, with tgc_runtime only (the H200 check machine has
// no MLIR): runs each .tgccase from tgc-gpu-prepare twice on cuda:0, as its
// eager plan (the captured ATen ops one by one, what eager runs) and as
// tgc's compiled plan, on the same random inputs; checks they agree; and
// prints one JSON object per line: time per call, bytes moved, the
// device-to-device copy bandwidth measured in the same run.
//
// Usage: tgc-bench-gpu <dir-of-.tgccase> [--min-time 0.3]
#include "tests/gpu/GpuCase.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

namespace {

using torch::Tensor;

/// Median seconds per call of `fn` over batches filling about `minTime`.
double secondsPerCall(const std::function<void()> &fn, double minTime) {
  for (int i = 0; i < 3; ++i)
    fn();
  torch::cuda::synchronize();
  std::vector<double> samples;
  auto start = std::chrono::steady_clock::now();
  int batch = 1;
  while (samples.size() < 5 ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < minTime) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i)
      fn();
    torch::cuda::synchronize();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples.push_back(s / batch);
    if (s < 0.01)
      batch *= 2;
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

Tensor randomLike(const tgc::TensorSpec &s) {
  auto opts = torch::TensorOptions().dtype(tgc::toScalarType(s.dtype)).device(torch::kCUDA);
  Tensor t = at::empty_strided(s.sizes, s.strides, opts);
  if (at::isFloatingType(t.scalar_type()))
    t.normal_(0, 0.5);
  else
    t.zero_();
  return t;
}

int64_t bytesOf(const tgc::TensorSpec &s) {
  return s.numel() * c10::elementSize(tgc::toScalarType(s.dtype));
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: tgc-bench-gpu <dir> [--min-time S]\n";
    return 2;
  }
  double minTime = argc > 3 ? std::atof(argv[3]) : 0.3;
  if (std::string why = tgc::gpu::whyNoGpu(); !why.empty()) {
    std::cerr << "tgc-bench-gpu: no GPU: " << why << "\n";
    return 3;
  }
  torch::NoGradGuard noGrad;
  torch::manual_seed(0);
  // Device-to-device copy of 1 GiB: the bandwidth a memory-bound kernel can reach.
  Tensor src = torch::empty({int64_t(1) << 29}, torch::dtype(torch::kBFloat16).device(torch::kCUDA));
  Tensor dst = torch::empty_like(src);
  src.normal_();
  double copy = secondsPerCall([&] { dst.copy_(src); }, minTime);
  std::cout << "{\"copy_gbps\": " << 2.0 * src.nbytes() / copy / 1e9 << "}" << std::endl;
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(argv[1]))
    if (e.path().extension() == ".tgccase")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  int status = 0;
  for (const std::string &f : files) {
    tgc::gpu::GpuCase c = tgc::gpu::readGpuCase(f);
    std::vector<Tensor> inputs;
    int64_t bytes = 0;
    for (int v : c.plan.inputs) {
      inputs.push_back(randomLike(c.plan.values[v]));
      bytes += bytesOf(c.plan.values[v]);
    }
    for (int v : c.plan.outputs)
      bytes += bytesOf(c.plan.values[v]);
    std::string error;
    auto tgcGraph = tgc::gpu::loadOnDevice(c, error);
    auto eagerGraph = tgcGraph ? tgc::CompiledGraph::load(c.eager, error) : nullptr;
    if (!tgcGraph || !eagerGraph) {
      std::cerr << c.name << ": " << error << "\n";
      status = 1;
      continue;
    }
    Tensor want = eagerGraph->run(inputs)[0].to(torch::kFloat);
    Tensor got = tgcGraph->run(inputs)[0].to(torch::kFloat);
    double err = (got - want).abs().max().item<double>() / std::max(1e-6, want.abs().max().item<double>());
    double eager = secondsPerCall([&] { eagerGraph->run(inputs); }, minTime);
    double tgc = secondsPerCall([&] { tgcGraph->run(inputs); }, minTime);
    std::cout << "{\"name\": \"" << c.name << "\", \"eager_us\": " << eager * 1e6
              << ", \"tgc_us\": " << tgc * 1e6 << ", \"bytes\": " << bytes
              << ", \"kernels\": " << c.plan.kernels.size() << ", \"aten_calls\": "
              << c.plan.externs.size() << ", \"rel_err\": " << err << "}" << std::endl;
  }
  return status;
}
