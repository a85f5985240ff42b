// Per-call overhead of a replayed compiled callable vs eager, on tiny tensors
// where the work is negligible: a 1-op and a 20-op function. The tgc
// overhead per call is about tgc(1 op) - eager(1 op) + one ATen op.
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <benchmark/benchmark.h>

namespace {

torch::Tensor oneOp(torch::Tensor x) { return x + 1; }

torch::Tensor twentyOps(torch::Tensor x, torch::Tensor y) {
  torch::Tensor z = x;
  for (int i = 0; i < 5; ++i)
    z = ((z * y + 1).sigmoid() - x).relu();
  return z;
}

void BM_Eager_1op(benchmark::State &state) {
  torch::NoGradGuard g;
  torch::Tensor x = torch::randn({8});
  for (auto _ : state)
    benchmark::DoNotOptimize(oneOp(x));
}

void BM_Tgc_1op(benchmark::State &state) {
  torch::NoGradGuard g;
  auto f = tgc::compile(oneOp);
  torch::Tensor x = torch::randn({8});
  f(x);
  for (auto _ : state)
    benchmark::DoNotOptimize(f(x));
}

void BM_Eager_20ops(benchmark::State &state) {
  torch::NoGradGuard g;
  torch::Tensor x = torch::randn({8}), y = torch::randn({8});
  for (auto _ : state)
    benchmark::DoNotOptimize(twentyOps(x, y));
}

void BM_Tgc_20ops(benchmark::State &state) {
  torch::NoGradGuard g;
  auto f = tgc::compile(twentyOps);
  torch::Tensor x = torch::randn({8}), y = torch::randn({8});
  f(x, y);
  int64_t before = tgc::stats().kernel_launches;
  for (auto _ : state)
    benchmark::DoNotOptimize(f(x, y));
  state.counters["kernels_per_call"] =
      double(tgc::stats().kernel_launches - before) / double(state.iterations());
}

BENCHMARK(BM_Eager_1op);
BENCHMARK(BM_Tgc_1op);
BENCHMARK(BM_Eager_20ops);
BENCHMARK(BM_Tgc_20ops);

} // namespace

BENCHMARK_MAIN();
