// Eager vs tgc on a GPU, with tgc_runtime only (the H200 check machine has
// no MLIR): runs each .tgccase from tgc-gpu-prepare twice on cuda:0, as its
// eager plan (the captured ATen ops one by one, what eager runs) and as
// tgc's compiled plan, on the same random inputs; checks they agree; and
// prints one JSON object per line: time per call, bytes moved, the
// device-to-device copy bandwidth measured in the same run. Each .tgctrain
// is a training step (zero_grad, forward, loss = mean(out^2) in float32,
// backward, AdamW): eager runs the captured ops under autograd, tgc its
// compiled forward and backward as one autograd node; after one step from
// the same weights the loss and every gradient are compared.
//
// Usage: tgc-bench-gpu <dir-of-.tgccase> [--min-time 0.3]
#include "tests/gpu/GpuCase.h"

#include <torch/cuda.h>
#include <torch/optim/adamw.h>
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

/// Relative max difference of `a` and `b` (float32 or wider).
double relErr(const Tensor &a, const Tensor &b) {
  Tensor x = a.to(torch::kFloat), y = b.to(torch::kFloat);
  return (x - y).abs().max().item<double>() / std::max(1e-6, y.abs().max().item<double>());
}

/// One side of the training comparison: its own copy of the weights and
/// its own optimizer.
struct Trainer {
  std::vector<Tensor> primals, weights;
  std::unique_ptr<torch::optim::AdamW> opt;
  std::function<std::vector<Tensor>(const std::vector<Tensor> &)> forward;
  Tensor loss;

  Trainer(const std::vector<Tensor> &init, const std::vector<bool> &grad,
          std::function<std::vector<Tensor>(const std::vector<Tensor> &)> fwd)
      : forward(std::move(fwd)) {
    for (size_t i = 0; i < init.size(); ++i) {
      primals.push_back(init[i].clone().requires_grad_(grad[i]));
      if (grad[i])
        weights.push_back(primals.back());
    }
    opt = std::make_unique<torch::optim::AdamW>(weights, torch::optim::AdamWOptions(1e-4));
  }
  void step() {
    opt->zero_grad(true);
    loss = forward(primals)[0].to(torch::kFloat).square().mean();
    loss.backward();
    opt->step();
  }
};

/// A .tgctrain: eager vs tgc training steps; one JSON line.
int benchTraining(const std::string &file, double minTime) {
  torch::AutoGradMode gradMode(true);
  tgc::gpu::GpuTrainingCase c = tgc::gpu::readGpuTrainingCase(file);
  std::string error;
  auto tgcGraph = tgc::gpu::loadTrainingOnDevice(c, error);
  auto eagerGraph = tgcGraph ? tgc::CompiledGraph::load(c.eager, error) : nullptr;
  if (!tgcGraph || !eagerGraph) {
    std::cerr << c.name << ": " << error << "\n";
    return 1;
  }
  std::vector<Tensor> init;
  for (size_t i = 0; i < c.eager.inputs.size(); ++i) {
    Tensor t = randomLike(c.eager.values[c.eager.inputs[i]]);
    if (c.requiresGrad[i] && at::isFloatingType(t.scalar_type()))
      t.normal_(0, 0.02); // weights as a transformer initializes them
    init.push_back(t);
  }
  Trainer eager(init, c.requiresGrad, [&](const std::vector<Tensor> &p) { return eagerGraph->run(p); });
  Trainer mine(init, c.requiresGrad, [&](const std::vector<Tensor> &p) {
    return tgc::applyTraining(tgcGraph, p);
  });
  // One step from the same weights: the loss and every gradient agree.
  eager.opt->zero_grad(true);
  mine.opt->zero_grad(true);
  eager.loss = eager.forward(eager.primals)[0].to(torch::kFloat).square().mean();
  mine.loss = mine.forward(mine.primals)[0].to(torch::kFloat).square().mean();
  eager.loss.backward();
  mine.loss.backward();
  double err = relErr(mine.loss, eager.loss);
  for (size_t i = 0; i < eager.weights.size(); ++i) {
    const Tensor &g = mine.weights[i].grad(), &w = eager.weights[i].grad();
    if (g.defined() != w.defined()) {
      std::cerr << c.name << ": weight " << i << " has a gradient on one side only\n";
      return 1;
    }
    if (g.defined()) // a weight the output does not use has none on both
      err = std::max(err, relErr(g, w));
  }
  double eagerTime = secondsPerCall([&] { eager.step(); }, minTime);
  double tgcTime = secondsPerCall([&] { mine.step(); }, minTime);
  std::cout << "{\"name\": \"" << c.name << "\", \"training\": 1, \"eager_us\": " << eagerTime * 1e6
            << ", \"tgc_us\": " << tgcTime * 1e6 << ", \"bytes\": 0, \"kernels\": "
            << c.forward.plan.kernels.size() + c.backward.plan.kernels.size()
            << ", \"aten_calls\": " << c.forward.plan.externs.size() + c.backward.plan.externs.size()
            << ", \"saved_bytes\": " << c.layout.savedBytes << ", \"rel_err\": " << err << "}"
            << std::endl;
  return 0;
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
  std::vector<std::string> files, training;
  for (const auto &e : std::filesystem::directory_iterator(argv[1])) {
    if (e.path().extension() == ".tgccase")
      files.push_back(e.path().string());
    if (e.path().extension() == ".tgctrain")
      training.push_back(e.path().string());
  }
  std::sort(training.begin(), training.end());
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
  for (const std::string &f : training) {
    try {
      status |= benchTraining(f, minTime);
    } catch (const std::exception &e) {
      std::cerr << f << ": " << e.what() << "\n";
      status = 1;
    }
  }
  return status;
}
