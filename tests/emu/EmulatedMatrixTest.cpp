// The e2e matrices and models with device "cuda", on the CPU: each program
// is captured, compiled for CUDA, its kernels run in the emulator (extern
// steps through CPU ATen) and compared with eager; every kernel source also
// compiles with NVRTC for sm_80 and sm_90. Cases come from the CPU
// matrices' own lists (tests/e2e/*Cases.h), in every dtype and layout the
// CPU matrices run; a subset of them is also written to the GPU corpus.
#include "bench/models/Models.h"
#include "tests/e2e/ExternCases.h"
#include "tests/e2e/IndexingCases.h"
#include "tests/e2e/LayoutCases.h"
#include "tests/e2e/OpMatrixCases.h"
#include "tests/e2e/RandomTensors.h"
#include "tests/e2e/ReductionCases.h"
#include "tests/emu/EmulatedGraph.h"
#include "compiler/capture/Tracer.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/Executor.h"

#include <c10/util/Exception.h>
#include <map>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tgc::emu {
namespace {

using torch::Tensor;

bool isHalf(torch::ScalarType t) { return t == torch::kHalf || t == torch::kBFloat16; }

void expectClose(const Tensor &got, const Tensor &want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, tol, tol, true))
      << "max error " << (g.numel() ? (g - w).abs().nan_to_num(0).max().item<double>() : 0.0);
}

/// Runs `fn` emulated and checks every kernel compiles with NVRTC.
EmulatedRun emulate(const Program &fn, const std::vector<Tensor> &inputs,
                    unsigned maxGrid = 1u << 20) {
  EmulatedRun r = runEmulated(fn, inputs, maxGrid);
  for (const char *arch : {"sm_80", "sm_90"})
    EXPECT_EQ(compileAllWithNvrtc(r.plans, arch), "") << arch;
  return r;
}

/// The current test's name plus a running number: one GPU case per call.
std::string caseName() {
  static std::map<std::string, int> seen;
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  return name + "." + std::to_string(seen[name]++);
}

/// emulate(), then output 0 against `want` (exactly when `tol` is 0); the
/// run is kept for the GPU tests when TGC_GPU_CORPUS_DIR is set.
void checkEmulated(const Program &fn, const std::vector<Tensor> &inputs, const Tensor &want,
                   double tol, unsigned maxGrid = 1u << 20, bool record = true) {
  EmulatedRun r = emulate(fn, inputs, maxGrid);
  if (tol == 0) {
    ASSERT_EQ(r.outputs[0].sizes(), want.sizes());
    EXPECT_TRUE(torch::equal(r.outputs[0], want)) << "got\n" << r.outputs[0] << "\nwant\n" << want;
  } else {
    expectClose(r.outputs[0], want, tol);
  }
  if (record)
    recordGpuCase(caseName(), r, {want}, tol);
}

//===----------------------------------------------------------------------===//
// Pointwise op matrix
//===----------------------------------------------------------------------===//

/// The layouts of a dtype whose programs also go to the GPU corpus
/// (tools/gpu-check.sh): float32 all of them, the others a contiguous
/// (vector path) and a strided or broadcast one, which keeps the corpus
/// within what a GPU check machine is sent. Every layout runs emulated.
bool inCorpus(torch::ScalarType dt, const std::string &layout) {
  std::vector<std::string> names;
  if (dt == torch::kFloat)
    return true;
  if (dt == torch::kBool)
    names = {"contiguous"};
  else if (dt == torch::kBFloat16 || dt == torch::kLong)
    names = {"contiguous", "broadcast"};
  else
    names = {"transposed"};
  return std::find(names.begin(), names.end(), layout) != names.end();
}

class EmulatedPointwise : public ::testing::TestWithParam<int> {};

TEST_P(EmulatedPointwise, MatchesEager) {
  using namespace tgc::test::pointwise;
  const OpCase op = cases()[GetParam()];
  torch::NoGradGuard noGrad;
  // The CPU matrix's dtypes and layouts, all of them.
  for (auto dt : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf, torch::kLong,
                  torch::kInt, torch::kBool}) {
    if ((op.floatOnly && !at::isFloatingType(dt)) || (op.intOnly && at::isFloatingType(dt)) ||
        (dt == torch::kBool && !boolCases().count(op.name)))
      continue;
    for (const Layout &layout : layouts()) {
      SCOPED_TRACE(op.name + " / " + layout.name + " / " + c10::toString(dt));
      torch::manual_seed(GetParam());
      auto [a, b] = layout.make(dt);
      if (op.positive) {
        a = a.abs() + 0.5;
        b = b.abs() + 0.5;
      }
      Tensor want = op.fn(a, b);
      if (isHalf(dt)) // tgc computes in float and rounds once
        want = op.fn(a.to(torch::kFloat), b.to(torch::kFloat)).to(want.scalar_type());
      checkEmulated([&](const auto &in) { return std::vector<Tensor>{op.fn(in[0], in[1])}; }, {a, b},
                    want, isHalf(dt) ? op.halfTol : 1e-5, 3, inCorpus(dt, layout.name));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, EmulatedPointwise,
                         ::testing::Range(0, (int)tgc::test::pointwise::cases().size()),
                         [](const auto &info) { return tgc::test::pointwise::cases()[info.param].name; });

//===----------------------------------------------------------------------===//
// Reductions, indexing, layout ops
//===----------------------------------------------------------------------===//

class EmulatedReductions : public ::testing::TestWithParam<int> {};

TEST_P(EmulatedReductions, MatchEager) {
  const auto c = tgc::test::reductions::cases()[GetParam()];
  torch::NoGradGuard noGrad;
  // The CPU matrix's dtypes, contiguous and permuted.
  for (auto dt : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kLong}) {
    if (c.floatOnly && dt == torch::kLong)
      continue;
    for (bool permuted : {false, true}) {
      SCOPED_TRACE(c.name + " / " + c10::toString(dt) + (permuted ? " / permuted" : ""));
      torch::manual_seed(GetParam());
      Tensor x = permuted ? torch::randn({8, 6, 5}).permute({1, 2, 0}) : torch::randn({6, 5, 8});
      x = at::isFloatingType(dt) ? x.to(dt) : (x * 10).to(dt);
      Tensor want = c.fn(x);
      if (isHalf(dt))
        want = c.fn(x.to(torch::kFloat)).to(want.scalar_type());
      checkEmulated([&](const auto &in) { return std::vector<Tensor>{c.fn(in[0])}; }, {x}, want,
                    isHalf(dt) ? 3e-2 : 1e-4, 1u << 20,
                    /*record=*/dt != torch::kDouble && (!permuted || dt == torch::kFloat));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, EmulatedReductions,
                         ::testing::Range(0, (int)tgc::test::reductions::cases().size()),
                         [](const auto &info) { return tgc::test::reductions::cases()[info.param].name; });

class EmulatedIndexing : public ::testing::TestWithParam<int> {};

TEST_P(EmulatedIndexing, MatchesEagerExactly) {
  using namespace tgc::test::indexing;
  const IndexCase c = cases()[GetParam()];
  torch::NoGradGuard noGrad;
  struct Run {
    std::string layout;
    torch::ScalarType dt, index;
  };
  bool intIndex = c.name.rfind("gather", 0) != 0 && c.high > 1;
  // The runs that also go to the GPU corpus.
  const std::vector<Run> corpus = {Run{"contiguous", torch::kFloat, torch::kLong},
                                   Run{"transposed", torch::kFloat, torch::kLong},
                                   Run{"broadcast", torch::kBFloat16,
                                       intIndex ? torch::kInt : torch::kLong}};
  // The CPU matrix's grid: dtypes x layouts x index types.
  for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kLong, torch::kInt})
    for (std::string layout : {"contiguous", "transposed", "broadcast"})
      for (auto itype : {torch::kLong, torch::kInt}) {
        if (itype == torch::kInt && !intIndex)
          continue; // gather takes int64 only; cat/stack/pad take no index
        SCOPED_TRACE(c.name + " / " + layout + " / " + c10::toString(dt) + " / index " +
                     c10::toString(itype));
        torch::manual_seed(GetParam());
        Tensor x = layoutOf(layout, c.data, dt);
        Tensor i = torch::randint(c.low, c.high, c.index).to(itype);
        if (layout == "transposed" && c.index.size() == 2) // a strided index
          i = torch::randint(c.low, c.high, {c.index[1], c.index[0]}).to(itype).t();
        bool record = std::any_of(corpus.begin(), corpus.end(), [&](const Run &r) {
          return r.layout == layout && r.dt == dt && r.index == itype;
        });
        checkEmulated([&](const auto &in) { return std::vector<Tensor>{c.fn(in[0], in[1])}; },
                      {x, i}, c.fn(x, i), 0, 2, record);
      }
}

INSTANTIATE_TEST_SUITE_P(Ops, EmulatedIndexing,
                         ::testing::Range(0, (int)tgc::test::indexing::cases().size()),
                         [](const auto &info) { return tgc::test::indexing::cases()[info.param].name; });

TEST(EmulatedIndexingErrors, OutOfRangeIndicesRaiseIndexError) {
  torch::NoGradGuard noGrad;
  Tensor w = torch::randn({10, 6});
  auto embed = [](const auto &in) { return std::vector<Tensor>{torch::embedding(in[0], in[1]) * 2}; };
  EXPECT_THROW(emulate(embed, {w, torch::tensor({1, 10, 3})}), c10::IndexError);
  Tensor self = torch::randn({4, 5}), src = torch::randn({3, 5});
  auto scatter = [](const auto &in) {
    return std::vector<Tensor>{torch::scatter_add(in[0], 0, in[1], in[2]) + 1};
  };
  Tensor good = torch::randint(0, 4, {3, 5});
  checkEmulated(scatter, {self, good, src}, torch::scatter_add(self, 0, good, src) + 1, 1e-6);
  Tensor bad = good.clone();
  bad.index_put_({2, 3}, 4);
  EXPECT_THROW(emulate(scatter, {self, bad, src}), c10::IndexError);
}

TEST(EmulatedLayouts, KernelsReadThroughTheMap) {
  torch::NoGradGuard noGrad;
  for (const auto &c : tgc::test::layouts::cases())
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kLong, torch::kInt})
      for (bool permuted : {false, true}) {
        if (permuted && (c.name == "view_merge" || c.name == "flatten"))
          continue; // view() of a permuted tensor is an error in eager too
        SCOPED_TRACE(c.name + " / " + c10::toString(dt) + (permuted ? " / permuted" : ""));
        Tensor x = permuted ? tgc::test::rnd({10, 4, 6}, dt).permute({1, 2, 0})
                            : tgc::test::rnd({4, 6, 10}, dt);
        checkEmulated([&](const auto &in) { return std::vector<Tensor>{c.fn(in[0])}; }, {x}, c.fn(x),
                      0, 1u << 20, /*record=*/dt == torch::kFloat);
      }
}

TEST(EmulatedRowsOtherDims, SoftmaxOverAnyDimMatchesEagersValuesAndLayout) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(11);
  auto softmax0 = [](const auto &in) { return std::vector<Tensor>{torch::softmax(in[0], 0)}; };
  auto logSoftmax1 = [](const auto &in) { return std::vector<Tensor>{torch::log_softmax(in[0], 1)}; };
  auto withConsumer = [](const auto &in) { return std::vector<Tensor>{torch::softmax(in[0] * 2, -2) + 1}; };
  for (auto [fn, x] : std::vector<std::pair<Program, Tensor>>{
           {softmax0, torch::randn({33, 6}) * 4},
           {logSoftmax1, torch::randn({3, 17, 5}) * 3},
           {withConsumer, torch::randn({2, 9, 4})},
           {softmax0, torch::randn({8, 12}).t()}}) {
    SCOPED_TRACE(::testing::PrintToString(x.sizes()));
    Tensor want = fn({x})[0];
    EmulatedRun r = emulate(fn, {x});
    expectClose(r.outputs[0], want, 1e-5);
    EXPECT_EQ(r.outputs[0].strides(), want.strides()) << "the result is laid out as eager's";
  }
  Tensor xb = torch::randn({40, 3}).to(torch::kBFloat16);
  checkEmulated(softmax0, {xb}, torch::softmax(xb.to(torch::kFloat), 0).to(torch::kBFloat16), 2e-2);
}

TEST(EmulatedRowsOtherDims, BatchNormTrainingUpdatesRunningStatistics) {
  torch::NoGradGuard noGrad;
  for (auto dt : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(12);
    torch::nn::BatchNorm2d eager(6), mine(6);
    eager->to(dt);
    mine->to(dt);
    for (int step = 0; step < 2; ++step) {
      // Channels-last on the second step: the per-channel rows are strided.
      Tensor x = torch::randn({4, 6, 5, 7}).to(dt) * 2 + 1;
      if (step == 1)
        x = x.contiguous(torch::MemoryFormat::ChannelsLast);
      EmulatedRun r =
          emulate([&](const auto &in) { return std::vector<Tensor>{mine->forward(in[0])}; }, {x});
      Tensor want = eager->forward(x);
      double tol = isHalf(dt) ? 3e-2 : 1e-4;
      expectClose(r.outputs[0], want, tol);
      expectClose(mine->running_mean, eager->running_mean, tol);
      expectClose(mine->running_var, eager->running_var, tol);
      EXPECT_EQ(mine->num_batches_tracked.item<int64_t>(), eager->num_batches_tracked.item<int64_t>());
    }
  }
}

TEST(EmulatedDropout, KeepsOneMinusPScaledFreshEachCallAndReproducible) {
  torch::NoGradGuard noGrad;
  const double p = 0.3;
  auto fn = [p](const auto &in) { return std::vector<Tensor>{torch::dropout(in[0], p, true) + in[1]}; };
  Tensor x = torch::randn({256, 512}).abs() + 0.5, y = torch::randn({512});
  torch::manual_seed(7);
  EmulatedRun first = emulate(fn, {x, y});
  Tensor out = first.outputs[0] - y, kept = out != 0;
  // 131072 Bernoulli(0.7) draws: the standard deviation of the rate is 0.0013.
  EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), 1 - p, 0.01);
  EXPECT_TRUE(torch::allclose(out.masked_select(kept), (x / (1 - p)).masked_select(kept), 1e-5, 1e-5));
  Tensor rowRate = kept.to(torch::kDouble).mean(1), colRate = kept.to(torch::kDouble).mean(0);
  EXPECT_LT((rowRate - (1 - p)).abs().max().item<double>(), 0.1);
  EXPECT_LT((colRate - (1 - p)).abs().max().item<double>(), 0.15);
  ASSERT_EQ(first.plans.size(), 1u);
  EXPECT_EQ(first.plans[0].kernels.size(), 1u) << "mask, scale and add in one kernel";
  Tensor again = emulate(fn, {x, y}).outputs[0];
  EXPECT_FALSE(torch::equal(again, first.outputs[0])) << "each call draws a new seed";
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(emulate(fn, {x, y}).outputs[0], first.outputs[0]))
      << "the seed comes from ATen's default generator";
}

TEST(EmulatedExternOps, EpiloguesMatchEager) {
  // The library call runs on CPU ATen; its fused epilogue is a tgc kernel.
  torch::NoGradGuard noGrad;
  using namespace tgc::test::externs;
  for (const ExternCase &c : cases())
    for (auto dt : {torch::kFloat, torch::kBFloat16}) {
      SCOPED_TRACE(c.name + " / " + c10::toString(dt));
      torch::manual_seed(7);
      Tensor a = dt == torch::kFloat ? transposedLike(c.shapes[0], dt) : rnd(c.shapes[0], dt);
      Tensor b = rnd(c.shapes[1], dt), bias = rnd(c.shapes[2], dt);
      checkEmulated([&](const auto &in) { return std::vector<Tensor>{c.fn(in[0], in[1], in[2])}; },
                    {a, b, bias}, c.fn(a, b, bias), dt == torch::kFloat ? 1e-5 : 3e-2);
    }
}

//===----------------------------------------------------------------------===//
// Models (bench/models): extern steps (mm, conv, attention) on CPU ATen
//===----------------------------------------------------------------------===//

void checkModel(const Program &fn, const std::vector<Tensor> &inputs, double tol) {
  checkEmulated(fn, inputs, fn(inputs)[0], tol);
}

TEST(EmulatedModels, Mlp) {
  torch::manual_seed(1);
  torch::NoGradGuard noGrad;
  torch::nn::Sequential mlp = tgc::models::epilogueMlp();
  checkModel([&](const auto &in) { return std::vector<Tensor>{mlp->forward(in[0])}; },
             {torch::randn({32, 256})}, 1e-4);
}

TEST(EmulatedModels, ResNetBasicBlockEval) {
  torch::manual_seed(2);
  torch::NoGradGuard noGrad;
  tgc::models::BasicBlock block(32);
  block->randomizeStatistics();
  block->eval();
  checkModel([&](const auto &in) { return std::vector<Tensor>{block->forward(in[0])}; },
             {torch::randn({2, 32, 16, 16})}, 1e-4);
}

TEST(EmulatedModels, TransformerEncoderLayer) {
  torch::manual_seed(3);
  torch::NoGradGuard noGrad;
  auto layer = tgc::models::transformerLayer(128, 4);
  layer->eval();
  // Two graph breaks (torch::nn's attention reads q == k on the host).
  checkModel([&](const auto &in) { return std::vector<Tensor>{layer->forward(in[0])}; },
             {torch::randn({16, 4, 128})}, 1e-4);
}

TEST(EmulatedModels, LstmCellStep) {
  torch::manual_seed(4);
  torch::NoGradGuard noGrad;
  torch::nn::LSTMCell cell(128, 256);
  checkModel(
      [&](const auto &in) {
        auto [h, c] = cell->forward(in[0], std::make_tuple(in[1], in[2]));
        return std::vector<Tensor>{torch::cat({h, c}, 1)};
      },
      // f32 through two GEMMs of depth 128 and 256, where eager's addmm fuses
      // the bias and the plan adds it in an epilogue kernel: 1e-5 (below that
      // bound) failed once in a clean-clone CI run (max error 3.6e-5) and
      // passed on rerun; 1e-4 is what the other f32 model cases here use.
      {torch::randn({16, 128}), torch::randn({16, 256}), torch::randn({16, 256})}, 1e-4);
}

TEST(EmulatedModels, Gpt2Block) {
  torch::manual_seed(5);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(128, 4);
  checkModel([&](const auto &in) { return std::vector<Tensor>{block->forward(in[0])}; },
             {torch::randn({2, 32, 128})}, 1e-4);
}

TEST(EmulatedModels, Gpt2BlockInBFloat16) {
  torch::manual_seed(6);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(128, 4);
  block->to(torch::kBFloat16);
  checkModel([&](const auto &in) { return std::vector<Tensor>{block->forward(in[0])}; },
             {torch::randn({2, 32, 128}).to(torch::kBFloat16)}, 6e-2);
}

// What a GPU run showed: a kernel handed a tensor of another device read a
// host address on the GPU and poisoned the context for every later call.
// The executor refuses it with a clear error instead (a Meta tensor in a
// CPU plan stands for the wrong device here).
TEST(EmulatedDevices, AKernelGivenATensorOfAnotherDeviceIsAnErrorNotAFault) {
  Tensor x = torch::randn({4, 8});
  TraceContext ctx("cpu");
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({x});
    ctx.finish({(in[0] * torch::linspace(0.5, 1.5, 8)).exp()});
  }
  PipelineResult r = runPipeline(ctx.segment());
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_FALSE(r.plan.kernels.empty());
  bool moved = false;
  for (ExternStep &e : r.plan.externs)
    for (ArgValue &a : e.args)
      if (e.op == "aten::linspace" && a.kind == ArgValue::Device) {
        a.s = "meta";
        moved = true;
      }
  ASSERT_TRUE(moved) << r.plan.str();
  std::string error;
  auto graph = CompiledGraph::load(r.plan, error);
  ASSERT_TRUE(graph) << error;
  try {
    graph->run({x});
    FAIL() << "a Meta tensor reached a CPU kernel";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("is on meta"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace tgc::emu
