// Whole models built with torch::nn, random weights: compiled output equals
// eager, and a forward launches at most a stated fraction of the kernels
// eager runs (tgc kernels + computing ATen calls against eager's ATen ops;
// views excluded on both sides, as they move no data). Library calls (mm,
// bmm, convolution) count on both sides, so the bound per model is what
// fusion can reach around them.
#include "tgc/tgc.h"

#include "bench/models/Models.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>

namespace {

/// Whether the ATen op `name` ("aten::view" or "aten::mul.Tensor") returns a
/// view of an input.
bool isViewOp(const std::string &qualified) {
  auto dot = qualified.find('.', qualified.find("::"));
  std::string name = qualified.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op)
    return false;
  const auto &returns = op->schema().returns();
  return !returns.empty() && returns[0].alias_info() && !returns[0].alias_info()->isWrite();
}

struct Counts {
  int64_t eagerKernels = 0; ///< ATen ops eager runs, views excluded
  int64_t tgcLaunches = 0;  ///< tgc kernels + computing ATen calls per forward
};

/// Compiles `fn`, checks it against eager on `inputs` and counts kernels.
template <class F, class... T>
Counts check(const std::string &name, F fn, double tol, double bound, int breaks, T... inputs) {
  SCOPED_TRACE(name);
  Counts counts;
  tgc::Explanation e = tgc::explain(fn, inputs...);
  EXPECT_EQ(e.graph_break_count, breaks) << e.str();
  for (const auto &ops : e.graph_ops)
    for (const std::string &op : ops)
      counts.eagerKernels += !isViewOp(op);
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor want = fn(inputs...);
  compiled(inputs...); // compile
  tgc::Stats before = tgc::stats();
  torch::Tensor got = compiled(inputs...);
  tgc::Stats after = tgc::stats();
  EXPECT_EQ(after.eager_fallbacks, 0);
  if (breaks == 0)
    EXPECT_EQ(after.captures - before.captures, 0) << "the second call replays";
  EXPECT_EQ(after.graphs_compiled - before.graphs_compiled, 0) << "the second call compiles nothing";
  counts.tgcLaunches = (after.kernel_launches - before.kernel_launches) +
                       (after.extern_calls - before.extern_calls);
  EXPECT_TRUE(torch::allclose(got, want, tol, tol))
      << "max error " << (got - want).abs().max().item<double>();
  std::printf("[ model ] %-18s eager ATen kernels %3lld, tgc launches %3lld (%lld kernels + %lld ATen calls)\n",
              name.c_str(), (long long)counts.eagerKernels, (long long)counts.tgcLaunches,
              (long long)(after.kernel_launches - before.kernel_launches),
              (long long)(after.extern_calls - before.extern_calls));
  EXPECT_LE(counts.tgcLaunches, bound * counts.eagerKernels)
      << "tgc must launch at most " << bound << " of what eager runs";
  return counts;
}

TEST(Models, Mlp) {
  torch::manual_seed(1);
  torch::NoGradGuard noGrad;
  torch::nn::Sequential mlp = tgc::models::epilogueMlp();
  auto fn = [&](torch::Tensor x) { return mlp->forward(x); };
  // Three GEMMs with everything else in their epilogues: as many launches
  // as eager (whose addmm adds the bias inside the GEMM), none extra.
  Counts c = check("mlp", fn, 1e-4, 1.0, 0, torch::randn({32, 256}));
  EXPECT_EQ(c.tgcLaunches, 6) << "3 GEMMs + bias/GELU, bias/ReLU, bias/LayerNorm kernels";
}

TEST(Models, ResNetBasicBlockEval) {
  torch::manual_seed(2);
  torch::NoGradGuard noGrad;
  tgc::models::BasicBlock block(32);
  block->randomizeStatistics();
  block->eval();
  auto fn = [&](torch::Tensor x) { return block->forward(x); };
  check("resnet_block", fn, 1e-4, 0.5, 0, torch::randn({2, 32, 16, 16}));
}

TEST(Models, TransformerEncoderLayer) {
  torch::manual_seed(3);
  torch::NoGradGuard noGrad;
  auto layer = tgc::models::transformerLayer(128, 4);
  layer->eval();
  auto fn = [&](torch::Tensor x) { return layer->forward(x); };
  // torch::nn's attention compares query, key and value with torch::equal;
  // capture predicts equal(x, x) (guarded by a NaN check), so one graph.
  check("transformer_layer", fn, 1e-4, 0.6, 0, torch::randn({16, 4, 128}));
}

TEST(Models, LstmCellStep) {
  torch::manual_seed(4);
  torch::NoGradGuard noGrad;
  torch::nn::LSTMCell cell(128, 256);
  auto fn = [&](torch::Tensor x, torch::Tensor h, torch::Tensor c) {
    auto [h2, c2] = cell->forward(x, std::make_tuple(h, c));
    return torch::cat({h2, c2}, 1);
  };
  check("lstm_cell", fn, 1e-5, 0.5, 0, torch::randn({16, 128}), torch::randn({16, 256}),
        torch::randn({16, 256}));
}

TEST(Models, Gpt2Block) {
  torch::manual_seed(5);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(128, 4);
  auto fn = [&](torch::Tensor x) { return block->forward(x); };
  check("gpt2_block", fn, 1e-4, 0.65, 0, torch::randn({2, 32, 128}));
}

} // namespace

namespace {

TEST(MemoryPlanning, GptBlockReusesIntermediates) {
  torch::manual_seed(6);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(128, 4);
  torch::Tensor x = torch::randn({2, 32, 128});
  tgc::reset();
  auto f = tgc::compile(block);
  torch::Tensor want = block->forward(x);
  EXPECT_TRUE(torch::allclose(f->forward(x), want, 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(f->forward(x), want, 1e-4, 1e-4)) << "arena reused across calls";
  tgc::Stats s = tgc::stats();
  std::printf("[ memory ] gpt2_block: arena %lld bytes, %lld without reuse\n",
              (long long)s.arena_bytes, (long long)s.unshared_bytes);
  EXPECT_GT(s.arena_bytes, 0);
  EXPECT_LT(s.arena_bytes, s.unshared_bytes) << "some intermediates share bytes";
}

/// Counts the bytes the default CPU allocator hands out.
struct CountingCpuAllocator final : c10::Allocator {
  explicit CountingCpuAllocator(c10::Allocator *base) : base(base) {}
  c10::DataPtr allocate(size_t n) override {
    bytes += int64_t(n);
    return base->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return base->raw_deleter(); }
  void copy_data(void *dst, const void *src, std::size_t n) const override {
    base->copy_data(dst, src, n);
  }
  c10::Allocator *base;
  std::atomic<int64_t> bytes{0};
};

TEST(MemoryPlanning, ArenasAreKeptBetweenCallsWithinABound) {
  torch::manual_seed(7);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(64, 4);
  torch::Tensor x = torch::randn({2, 16, 64});
  tgc::reset();
  auto f = tgc::compile(block);
  torch::Tensor want = block->forward(x);
  f->forward(x); // compile
  c10::Allocator *previous = c10::GetCPUAllocator();
  static CountingCpuAllocator *counting = new CountingCpuAllocator(previous);
  c10::SetCPUAllocator(counting, /*priority=*/100);
  struct Restore {
    c10::Allocator *a;
    ~Restore() {
      c10::SetCPUAllocator(a, /*priority=*/101);
      unsetenv("TGC_ARENA_CACHE_BYTES");
    }
  } restore{previous};
  auto bytesOfCall = [&] {
    int64_t before = counting->bytes;
    EXPECT_TRUE(torch::allclose(f->forward(x), want, 1e-4, 1e-4));
    return counting->bytes - before;
  };
  setenv("TGC_ARENA_CACHE_BYTES", "0", 1); // keep nothing: every call allocates its arena
  bytesOfCall();
  int64_t unkept = bytesOfCall();
  unsetenv("TGC_ARENA_CACHE_BYTES"); // the default bound: the next call keeps its arena
  bytesOfCall();
  int64_t kept = bytesOfCall();
  int64_t arena = tgc::stats().arena_bytes;
  ASSERT_GT(arena, 0);
  EXPECT_EQ(unkept - kept, arena) << "the second call reused the first one's arena";
}

} // namespace
