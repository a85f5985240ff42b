// Speed of the CUDA-on-CPU emulator used by the tests (tests/emu): CUDA
// threads per second on a vectorized pointwise kernel (1 and 2 workers) and
// a warp-shuffle row sum, and the cost of one small launch. Informs how big
// the emulated test matrices can be; asserts nothing, so it is a benchmark.
#include "tests/emu/CudaEmulator.h"
#include "tests/emu/TestKernels.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

namespace {

using namespace tgc::emu;

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// CUDA threads per second on pointwise_vec4 over 4M floats; arg: workers.
void BM_PointwiseVec4(benchmark::State &state) {
  auto m = Module::compile(kernels::kPointwiseVec4);
  const long long n = 1 << 22;
  auto a = randomFloats(n, 13), b = randomFloats(n, 14);
  std::vector<float> out(n);
  LaunchConfig cfg{{(unsigned)(n / 4 / 256)}, {256}};
  cfg.workers = state.range(0);
  for (auto _ : state)
    launch(m, "pointwise_vec4", cfg, a.data(), b.data(), out.data(), n);
  state.counters["cuda_threads"] =
      benchmark::Counter(double(n / 4) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PointwiseVec4)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Launch overhead: blocks x threads per launch and workers, as an op matrix
/// launches many small kernels.
void BM_SmallLaunch(benchmark::State &state) {
  auto m = Module::compile(kernels::kPointwiseVec4);
  unsigned blocks = state.range(0), threads = state.range(1);
  const long long n = 4LL * blocks * threads;
  std::vector<float> x = randomFloats(n, 15);
  LaunchConfig cfg{{blocks}, {threads}};
  cfg.workers = state.range(2);
  for (auto _ : state)
    launch(m, "pointwise_vec4", cfg, x.data(), x.data(), x.data(), n);
}
BENCHMARK(BM_SmallLaunch)
    ->Args({1, 64, 1})
    ->Args({4, 256, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// A row sum: 256 threads per row, warp shuffles and one barrier each.
void BM_RowSum(benchmark::State &state) {
  auto r = Module::compile(kernels::kRowSum);
  const int rows = 2048, cols = 1024;
  auto x = randomFloats(size_t(rows) * cols, 16);
  std::vector<float> sums(rows);
  for (auto _ : state)
    launch(r, "row_sum", {{(unsigned)rows}, {256}}, x.data(), sums.data(), cols);
  state.counters["cuda_threads"] =
      benchmark::Counter(double(rows) * 256 * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RowSum)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
