// Eager vs tgc on the CPU (op-coverage issue, point 6): a 10-op pointwise
// chain, softmax, layer_norm, a GELU MLP, a transformer encoder layer and a
// ResNet basic block, each at a small (cache-resident or launch-bound) and
// a large (memory- or compute-bound) size, plus the machine's copy
// bandwidth. bench/cpu_compare.py runs this binary and torch.compile on the
// same workloads in one run and prints the table of ratios.
//
// Benchmark names: cpu/<workload>/<size>/<eager|tgc>; bytes_per_second is
// set for the memory-bound workloads (bytes read + written once).
#include "bench/models/Models.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <benchmark/benchmark.h>

#include <functional>

namespace {

/// Every workload takes three tensors (unused ones are a 1-element dummy).
using Fn = std::function<torch::Tensor(torch::Tensor, torch::Tensor, torch::Tensor)>;

struct Workload {
  std::string name;
  std::string size;
  std::function<std::vector<torch::Tensor>()> inputs; ///< padded to three by run()
  Fn fn;
  int64_t bytes = 0; ///< memory traffic of one call when memory-bound, else 0
};

std::vector<Workload> workloads() {
  static auto mlp = tgc::models::geluMlp(512, 2048);
  static auto layer = tgc::models::transformerLayer(256, 4);
  static tgc::models::BasicBlock block(64);
  static bool init = [] {
    layer->eval();
    block->randomizeStatistics();
    block->eval();
    return true;
  }();
  (void)init;
  std::vector<Workload> w;
  for (auto [size, rows] : {std::pair<std::string, int64_t>{"small", 256}, {"large", 4096}}) {
    int64_t n = rows * 1024 * 4;
    w.push_back({"chain10", size, [=] { return std::vector{torch::randn({rows, 1024}), torch::randn({1024})}; },
                 [](auto x, auto y, auto) { return tgc::models::chain10(x, y); }, 2 * n});
    w.push_back({"softmax", size, [=] { return std::vector{torch::randn({rows, 1024})}; },
                 [](auto x, auto, auto) { return torch::softmax(x, -1); }, 2 * n});
    w.push_back({"layer_norm", size,
                 [=] { return std::vector{torch::randn({rows, 1024}), torch::randn({1024}), torch::randn({1024})}; },
                 [](auto x, auto w, auto b) { return torch::layer_norm(x, {1024}, w, b); }, 2 * n});
  }
  w.push_back({"gelu_mlp", "small", [] { return std::vector{torch::randn({16, 512})}; },
               [](auto x, auto, auto) { return mlp->forward(x); }});
  w.push_back({"gelu_mlp", "large", [] { return std::vector{torch::randn({512, 512})}; },
               [](auto x, auto, auto) { return mlp->forward(x); }});
  w.push_back({"transformer", "small", [] { return std::vector{torch::randn({32, 2, 256})}; },
               [](auto x, auto, auto) { return layer->forward(x); }});
  w.push_back({"transformer", "large", [] { return std::vector{torch::randn({128, 8, 256})}; },
               [](auto x, auto, auto) { return layer->forward(x); }});
  w.push_back({"resnet_block", "small", [] { return std::vector{torch::randn({1, 64, 14, 14})}; },
               [](auto x, auto, auto) { return block->forward(x); }});
  w.push_back({"resnet_block", "large", [] { return std::vector{torch::randn({8, 64, 28, 28})}; },
               [](auto x, auto, auto) { return block->forward(x); }});
  return w;
}

void run(benchmark::State &state, const Workload &w, bool compiled) {
  torch::NoGradGuard g;
  torch::manual_seed(0);
  std::vector<torch::Tensor> in = w.inputs();
  while (in.size() < 3)
    in.push_back(torch::ones({1}));
  Fn f = w.fn;
  if (compiled) {
    auto c = std::make_shared<tgc::Compiled<Fn>>(tgc::compile(w.fn));
    f = [c](torch::Tensor a, torch::Tensor b, torch::Tensor d) { return (*c)(a, b, d); };
    // Compile, and check once against eager.
    torch::Tensor want = w.fn(in[0], in[1], in[2]), got = f(in[0], in[1], in[2]);
    if (!torch::allclose(got, want, 1e-3, 1e-3))
      state.SkipWithError("tgc result differs from eager");
  }
  for (auto _ : state)
    benchmark::DoNotOptimize(f(in[0], in[1], in[2]));
  if (w.bytes)
    state.SetBytesProcessed(int64_t(state.iterations()) * w.bytes);
}

void copyBandwidth(benchmark::State &state) {
  torch::Tensor x = torch::randn({4096, 1024}), y = torch::empty_like(x);
  for (auto _ : state)
    y.copy_(x);
  state.SetBytesProcessed(int64_t(state.iterations()) * x.nbytes() * 2);
}

} // namespace

int main(int argc, char **argv) {
  benchmark::RegisterBenchmark("cpu/copy/large/eager", copyBandwidth)->UseRealTime();
  static std::vector<Workload> all = workloads();
  for (const Workload &w : all)
    for (bool compiled : {false, true})
      benchmark::RegisterBenchmark(
          ("cpu/" + w.name + "/" + w.size + "/" + (compiled ? "tgc" : "eager")).c_str(),
          [&w, compiled](benchmark::State &s) { run(s, w, compiled); })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
