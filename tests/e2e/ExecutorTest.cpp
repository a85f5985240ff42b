// The lean executor: views a compiled graph makes are computed when the plan
// loads (no dispatcher call per replay), GEMMs write into the arena through
// out= forms, and a replay allocates nothing for the executor's own
// bookkeeping. Every case compares with eager on random inputs, strided and
// offset ones included.
#include "runtime/Executor.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>

namespace {

/// operator new calls of this process while `counting` (the executor's
/// bookkeeping, TensorImpls and StorageImpls; tensor data comes from
/// c10's allocator, which does not call operator new).
std::atomic<bool> counting{false};
std::atomic<int64_t> newCalls{0};

} // namespace

void *operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed))
    newCalls.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  double scale = want.abs().max().item<double>() + 1.0;
  double err = (got - want).abs().max().item<double>();
  EXPECT_LE(err, 1e-5 * scale) << "max error " << err;
}

/// `f` compiled, checked against eager on `args`, then the counters of one
/// more replay.
template <typename C, typename F, typename... Args>
tgc::Stats replayStats(C &compiled, F &f, Args... args) {
  expectClose(compiled(args...), f(args...));
  expectClose(compiled(args...), f(args...)); // the arena is kept from here on
  tgc::Stats before = tgc::stats();
  torch::Tensor got = compiled(args...);
  tgc::Stats after = tgc::stats();
  expectClose(got, f(args...));
  tgc::Stats d;
#define TGC_COUNTER(name, member, doc) d.name = after.name - before.name;
#include "tgc/Counters.def"
  return d;
}

TEST(Executor, ViewsBetweenGemmsAreResolvedAtLoad) {
  torch::NoGradGuard noGrad;
  // Views that kernels read are folded into their indexing; these sit
  // between ATen calls (t, view, transpose, select, slice of GEMM results
  // and of a strided, offset input), so the plan keeps them as steps, and
  // none of them is an ATen call on a replay.
  auto fn = [](torch::Tensor x, torch::Tensor w, torch::Tensor y) {
    torch::Tensor m = torch::mm(x.t(), w);                       // [8, 12]
    torch::Tensor v = m.view({4, 2, 12}).transpose(0, 1);        // [2, 4, 12]
    torch::Tensor b = torch::bmm(v, y.select(0, 1));             // [2, 4, 3]
    torch::Tensor s = b.select(2, 1).t();                        // [4, 2]
    return torch::relu(torch::mm(s, b.select(0, 0).slice(1, 0, 2).t()));
  };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor big = torch::randn({9, 20});
  // A strided input with a storage offset: its views start where it does.
  torch::Tensor x = big.slice(0, 1, 9).slice(1, 2, 20, 2).t(); // [9, 8], offset 22
  ASSERT_NE(x.storage_offset(), 0);
  torch::Tensor w = torch::randn({9, 12});
  torch::Tensor y = torch::randn({3, 2, 12, 3});
  tgc::Stats d = replayStats(compiled, fn, x, w, y);
  EXPECT_EQ(d.eager_fallbacks, 0);
  EXPECT_EQ(d.view_calls, 0) << "every view was made by the executor\n" << d.str();
  EXPECT_GE(d.views_resolved, 5) << d.str();
  EXPECT_EQ(d.extern_calls, 3) << "mm, bmm, mm\n" << d.str();
}

TEST(Executor, ViewsOfInputsFollowEachCallsStorageOffset) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x, torch::Tensor w) { return torch::mm(x.select(0, 2), w) + 1; };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor w = torch::randn({5, 3});
  for (int64_t offset : {0, 7, 31}) {
    // Same sizes and strides, another place in another storage each call.
    torch::Tensor x = torch::randn({offset + 60}).slice(0, offset, offset + 60).view({3, 4, 5});
    expectClose(compiled(x, w), fn(x, w));
  }
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

TEST(Executor, SplitResultsAreViewsAtTheirOwnOffsets) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) {
    auto parts = torch::relu(x).split(3, 1); // [5,3] [5,3] [5,2]
    return torch::mm(parts[0], parts[1].t()) + parts[2].sum();
  };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  tgc::Stats d = replayStats(compiled, fn, torch::randn({5, 8}));
  EXPECT_EQ(d.eager_fallbacks, 0);
  EXPECT_EQ(d.view_calls, 0) << d.str();
}

TEST(Executor, AbsoluteOffsetsStayAtenViews) {
  torch::NoGradGuard noGrad;
  // as_strided's storage offset is absolute: not an alias the executor can
  // move with its base, so ATen makes it (and reads the input's storage).
  auto fn = [](torch::Tensor x) { return torch::relu(x.as_strided({2, 3}, {1, 2}, 3)) * 2; };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor x = torch::randn({20}).slice(0, 4, 16);
  expectClose(compiled(x), fn(x));
  expectClose(compiled(x), fn(x));
  EXPECT_EQ(tgc::stats().views_resolved, 0) << tgc::stats().str();
}

TEST(Executor, GemmsWriteIntoTheArena) {
  torch::NoGradGuard noGrad;
  // mm, addmm (the linear layer) and bmm between kernels: each writes its
  // result into the kept arena, so a replay allocates nothing itself.
  torch::Tensor w1 = torch::randn({16, 32}), b1 = torch::randn({32}), w2 = torch::randn({32, 8});
  auto fn = [&](torch::Tensor x) {
    torch::Tensor h = torch::gelu(torch::addmm(b1, torch::relu(x), w1));
    torch::Tensor g = torch::tanh(torch::mm(h, w2)).view({2, 3, 8});
    return torch::bmm(g, g.transpose(1, 2)) * 0.5;
  };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  tgc::Stats d = replayStats(compiled, fn, torch::randn({6, 16}));
  EXPECT_EQ(d.eager_fallbacks, 0);
  EXPECT_EQ(d.extern_out_calls, 3) << "each GEMM's result is an intermediate\n" << d.str();
  EXPECT_EQ(d.executor_allocations, 1) << "the returned result only\n" << d.str();
  EXPECT_EQ(d.plan_runs, 1);
}

TEST(Executor, BackToBackReplaysKeepResultsApart) {
  torch::NoGradGuard noGrad;
  // Results of one replay must not share the kept arena with the next.
  auto fn = [](torch::Tensor x, torch::Tensor w) {
    return torch::relu(torch::mm(torch::sigmoid(x), w)).sum(1);
  };
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor w = torch::randn({7, 5});
  torch::Tensor x1 = torch::randn({4, 7}), x2 = torch::randn({4, 7});
  torch::Tensor r1 = compiled(x1, w), r2 = compiled(x2, w), r3 = compiled(x1, w);
  expectClose(r1, fn(x1, w));
  expectClose(r2, fn(x2, w));
  expectClose(r3, fn(x1, w));
}

/// A plan of ATen calls only: `views` transposes of the input (each the
/// next one's base), then mm of the last with the input.
tgc::Plan viewChain(int views) {
  tgc::Plan p;
  p.values.push_back({{6, 6}, {6, 1}, tgc::DType::Float32});
  p.inputs = {0};
  auto tensorArg = [](int v) {
    tgc::ArgValue a;
    a.kind = tgc::ArgValue::Tensor;
    a.tensors = {v};
    return a;
  };
  for (int i = 0; i < views; ++i) {
    const tgc::TensorSpec &in = p.values.back();
    p.values.push_back({{6, 6}, {in.strides[1], in.strides[0]}, tgc::DType::Float32});
    p.externs.push_back({"aten::t", "", {tensorArg(i)}, {i + 1}});
    p.steps.push_back({tgc::Step::Extern, i});
  }
  p.values.push_back({{6, 6}, {6, 1}, tgc::DType::Float32});
  p.externs.push_back({"aten::mm", "", {tensorArg(views), tensorArg(0)}, {views + 1}});
  p.steps.push_back({tgc::Step::Extern, views});
  p.outputs = {views + 1};
  return p;
}

TEST(Executor, AReplayAllocatesOneTensorPerViewAndNothingPerStep) {
  torch::NoGradGuard noGrad;
  std::string error;
  auto shortPlan = tgc::CompiledGraph::load(viewChain(1), error);
  ASSERT_TRUE(shortPlan) << error;
  auto longPlan = tgc::CompiledGraph::load(viewChain(41), error);
  ASSERT_TRUE(longPlan) << error;
  torch::Tensor x = torch::randn({6, 6});
  auto newsPerRun = [&](const tgc::CompiledGraph &g) {
    std::vector<at::Tensor> in{x};
    g.run(in); // scratch vectors grow once
    int64_t before = newCalls.load();
    counting = true;
    std::vector<at::Tensor> out = g.run(in);
    counting = false;
    int64_t n = newCalls.load() - before;
    // 41 transposes are the identity or one transpose: x^T x or x x.
    expectClose(out[0], g.plan().externs.size() % 2 == 0 ? x.t().mm(x) : x.mm(x));
    return n;
  };
  const int64_t shortNews = newsPerRun(*shortPlan), longNews = newsPerRun(*longPlan);
  // Each view is a TensorImpl and the version counter its constructor
  // makes (then replaced by the base's, as ATen's views do): 2 per view,
  // nothing per step for arguments, stacks or values.
  EXPECT_EQ(longNews - shortNews, 2 * 40);
  // The returned vector, mm's result (TensorImpl, its version counter,
  // StorageImpl) and the one view.
  EXPECT_LE(shortNews, 6) << shortNews << " operator new calls";
}

TEST(Executor, UnderAutogradViewsAndGemmsRecordTheirBackward) {
  // A plan of ATen calls run op by op for a segment that needs gradients:
  // views and GEMMs go through autograd, not the executor's fast paths.
  std::string error;
  auto g = tgc::CompiledGraph::load(viewChain(3), error);
  ASSERT_TRUE(g) << error;
  torch::Tensor x = torch::randn({6, 6}, torch::requires_grad());
  torch::Tensor out = g->run({x})[0];
  ASSERT_TRUE(out.requires_grad());
  out.square().sum().backward();
  torch::Tensor x2 = x.detach().clone().requires_grad_(true);
  x2.t().mm(x2).square().sum().backward();
  expectClose(x.grad(), x2.grad());
}

} // namespace

TEST(Executor, ProfileRanksStepsAndSumsThemPerOp) {
  torch::NoGradGuard noGrad;
  // A plan of two GEMMs and kernels: TGC_PROFILE set when it loads makes
  // every replay time its steps; tgc::profile() ranks them and sums them
  // per op, and results stay those of eager.
  auto fn = [](torch::Tensor x, torch::Tensor w) {
    torch::Tensor h = torch::relu(torch::mm(x, w) + 0.5);
    return torch::sigmoid(torch::mm(h, w.t())) * 3;
  };
  tgc::reset();
  ASSERT_EQ(setenv("TGC_PROFILE", "1", 1), 0);
  auto compiled = tgc::compile(fn); // its plan loads on the first call

  torch::Tensor w = torch::randn({48, 40});
  const int calls = 5;
  for (int i = 0; i < calls; ++i) {
    torch::Tensor x = torch::randn({64, 48});
    expectClose(compiled(x, w), fn(x, w));
  }
  unsetenv("TGC_PROFILE");
  const std::string report = tgc::profile();
  tgc::Stats s = tgc::stats();
  ASSERT_EQ(s.graphs_compiled, 1) << s.str();
  // Every call ran the plan: the first (capture) call too.
  EXPECT_NE(report.find(std::to_string(s.plan_runs) + " runs"), std::string::npos) << report;
  EXPECT_GE(s.plan_runs, calls - 1) << s.str();
  EXPECT_NE(report.find("extern aten::mm"), std::string::npos) << report;
  EXPECT_NE(report.find("kernel "), std::string::npos) << report;
  EXPECT_NE(report.find("between them"), std::string::npos) << report;
  // The per-op sums: both GEMMs in one line, the kernels in another, and
  // the shares of all ops add up to 100%.
  const size_t byOp = report.find("by op:");
  ASSERT_NE(byOp, std::string::npos) << report;
  EXPECT_NE(report.find("aten::mm (2 steps)", byOp), std::string::npos) << report;
  double shares = 0;
  std::istringstream lines(report.substr(byOp));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    double share = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), " %lf%%", &share), 1) << line;
    EXPECT_GE(share, 0) << line; // a resolved view may round to 0.0%
    shares += share;
  }
  EXPECT_NEAR(shares, 100.0, 0.5) << report;
  // reset() zeroes the times with the graphs gone: nothing to report.
  tgc::reset();
  EXPECT_EQ(tgc::profile(), "");
}
