// Eager vs tgc on the CPU for fusable workloads (op-coverage issue, point 6):
// a 10-op pointwise chain, softmax, layer_norm and a GELU MLP, each at a
// memory-bound size. Ratios are read from one run of this binary.
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <benchmark/benchmark.h>

namespace {

torch::Tensor chain10(torch::Tensor x, torch::Tensor y) {
  return ((((x * y + 1).sigmoid() - x).relu() * 2 + y).tanh() * x - 0.5).abs();
}
torch::Tensor softmax(torch::Tensor x, torch::Tensor) { return torch::softmax(x, -1); }
torch::Tensor layerNorm(torch::Tensor x, torch::Tensor w) {
  return torch::layer_norm(x, {x.size(-1)}, w, w);
}

template <torch::Tensor (*F)(torch::Tensor, torch::Tensor)>
void run(benchmark::State &state, bool compiled) {
  torch::NoGradGuard g;
  torch::manual_seed(0);
  int64_t rows = 4096, cols = 1024; // 16 MiB per f32 tensor: memory-bound
  torch::Tensor x = torch::randn({rows, cols}), y = torch::randn({cols});
  auto f = tgc::compile(F);
  if (compiled)
    f(x, y);
  for (auto _ : state)
    benchmark::DoNotOptimize(compiled ? f(x, y) : F(x, y));
  state.SetBytesProcessed(int64_t(state.iterations()) * x.nbytes() * 2);
}

void BM_Chain10_Eager(benchmark::State &s) { run<chain10>(s, false); }
void BM_Chain10_Tgc(benchmark::State &s) { run<chain10>(s, true); }
void BM_Softmax_Eager(benchmark::State &s) { run<softmax>(s, false); }
void BM_Softmax_Tgc(benchmark::State &s) { run<softmax>(s, true); }
void BM_LayerNorm_Eager(benchmark::State &s) { run<layerNorm>(s, false); }
void BM_LayerNorm_Tgc(benchmark::State &s) { run<layerNorm>(s, true); }

void copyBandwidth(benchmark::State &state) {
  torch::Tensor x = torch::randn({4096, 1024}), y = torch::empty_like(x);
  for (auto _ : state)
    y.copy_(x);
  state.SetBytesProcessed(int64_t(state.iterations()) * x.nbytes() * 2);
}

BENCHMARK(copyBandwidth)->UseRealTime();
BENCHMARK(BM_Chain10_Eager)->UseRealTime();
BENCHMARK(BM_Chain10_Tgc)->UseRealTime();
BENCHMARK(BM_Softmax_Eager)->UseRealTime();
BENCHMARK(BM_Softmax_Tgc)->UseRealTime();
BENCHMARK(BM_LayerNorm_Eager)->UseRealTime();
BENCHMARK(BM_LayerNorm_Tgc)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
