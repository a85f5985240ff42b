// The JIT on CUDA tensors (tgc::compile): the e2e matrices' cases and the
// models on cuda:0 against eager on the same device, kernels compiled by
// NVRTC for the device and launched on PyTorch's current stream. Needs a
// GPU and MLIR; every test skips, saying why, without a GPU. The last test
// runs where there is no driver: a CUDA plan then fails to load with a
// message, and nothing else needs libcuda.
#include "tgc/tgc.h"

#include "bench/models/Models.h"
#include "runtime/Executor.h"
#include "tests/e2e/IndexingCases.h"
#include "tests/e2e/OpMatrixCases.h"
#include "tests/e2e/ReductionCases.h"
#include "tests/gpu/GpuCase.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using torch::Tensor;

#define TGC_NEED_GPU()                                                         \
  if (std::string why = tgc::gpu::whyNoGpu(); !why.empty())                    \
  GTEST_SKIP() << "no GPU: " << why

void expectClose(const Tensor &got, const Tensor &want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  EXPECT_EQ(got.device(), want.device());
  Tensor g = got.cpu().to(torch::kDouble), w = want.cpu().to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, tol, tol, true))
      << "max error " << (g.numel() ? (g - w).abs().nan_to_num(0).max().item<double>() : 0.0);
}

/// Compiles `fn`, runs it twice, checks against eager and that kernels ran.
template <class F, class... T> void check(F fn, double tol, T... inputs) {
  tgc::reset();
  auto f = tgc::compile(fn);
  f(inputs...);
  Tensor got = f(inputs...);
  expectClose(got, fn(inputs...), tol);
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0) << "the CUDA plan did not load";
  EXPECT_GE(s.kernel_launches, 1);
}

bool isHalf(torch::ScalarType t) { return t == torch::kHalf || t == torch::kBFloat16; }

TEST(GpuJit, PointwiseMatrix) {
  TGC_NEED_GPU();
  using namespace tgc::test::pointwise;
  torch::NoGradGuard g;
  for (const OpCase &op : cases())
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kLong}) {
      if ((op.floatOnly && dt == torch::kLong) || (op.intOnly && dt != torch::kLong))
        continue;
      for (const Layout &layout : layouts()) {
        SCOPED_TRACE(op.name + " / " + layout.name + " / " + c10::toString(dt));
        auto [a, b] = layout.make(dt);
        if (op.positive)
          a = a.abs() + 0.5, b = b.abs() + 0.5;
        a = a.cuda(), b = b.cuda();
        // Half types: eager rounds every op, tgc once.
        check(op.fn, isHalf(dt) ? std::max(op.halfTol, 3e-2) : 1e-5, a, b);
      }
    }
}

TEST(GpuJit, Reductions) {
  TGC_NEED_GPU();
  torch::NoGradGuard g;
  for (const auto &c : tgc::test::reductions::cases())
    for (auto dt : {torch::kFloat, torch::kBFloat16}) {
      SCOPED_TRACE(c.name + " / " + c10::toString(dt));
      check(c.fn, isHalf(dt) ? 3e-2 : 1e-4, torch::randn({6, 5, 8}).to(dt).cuda());
      check(c.fn, isHalf(dt) ? 3e-2 : 1e-4, torch::randn({8, 6, 5}).to(dt).cuda().permute({1, 2, 0}));
    }
  // Rows of every launch shape: lanes of a warp, a warp, a block.
  for (int64_t n : {5, 300, 3000, 70000})
    check([](Tensor x) { return torch::softmax(x, -1) + torch::layer_norm(x, {x.size(-1)}); }, 1e-4,
          torch::randn({33, n}).cuda());
}

TEST(GpuJit, IndexingAndIndexErrors) {
  TGC_NEED_GPU();
  using namespace tgc::test::indexing;
  torch::NoGradGuard g;
  for (const IndexCase &c : cases()) {
    SCOPED_TRACE(c.name);
    Tensor x = layoutOf("contiguous", c.data, torch::kFloat).cuda();
    Tensor i = torch::randint(c.low, c.high, c.index).cuda();
    check(c.fn, 0, x, i);
  }
  auto embed = tgc::compile([](Tensor w, Tensor i) { return torch::embedding(w, i) * 2; });
  Tensor w = torch::randn({10, 6}).cuda();
  embed(w, torch::tensor({1, 2}).cuda());
  EXPECT_THROW(embed(w, torch::tensor({1, 10}).cuda()), c10::IndexError);
}

TEST(GpuJit, Models) {
  TGC_NEED_GPU();
  torch::NoGradGuard g;
  torch::manual_seed(1);
  auto mlp = tgc::models::epilogueMlp();
  mlp->to(torch::kCUDA);
  check([&](Tensor x) { return mlp->forward(x); }, 1e-3, torch::randn({32, 256}).cuda());
  tgc::models::BasicBlock block(32);
  block->randomizeStatistics();
  block->eval();
  block->to(torch::kCUDA);
  check([&](Tensor x) { return block->forward(x); }, 1e-3, torch::randn({2, 32, 16, 16}).cuda());
  auto layer = tgc::models::transformerLayer(128, 4);
  layer->eval();
  layer->to(torch::kCUDA);
  check([&](Tensor x) { return layer->forward(x); }, 1e-3, torch::randn({16, 4, 128}).cuda());
  torch::nn::LSTMCell cell(128, 256);
  cell->to(torch::kCUDA);
  check(
      [&](Tensor x, Tensor h, Tensor c) {
        auto [h2, c2] = cell->forward(x, std::make_tuple(h, c));
        return torch::cat({h2, c2}, 1);
      },
      1e-4, torch::randn({16, 128}).cuda(), torch::randn({16, 256}).cuda(),
      torch::randn({16, 256}).cuda());
  tgc::models::Gpt2Block gpt(128, 4);
  gpt->to(torch::kCUDA, torch::kBFloat16);
  check([&](Tensor x) { return gpt->forward(x); }, 6e-2,
        torch::randn({2, 32, 128}).to(torch::kBFloat16).cuda());
}

TEST(GpuJit, RunsOnTheCurrentStreamAndTheInputsDevice) {
  TGC_NEED_GPU();
  torch::NoGradGuard g;
  auto fn = [](Tensor x) { return torch::softmax(x * 2, -1).relu(); };
  auto f = tgc::compile(fn);
  Tensor x = torch::randn({64, 1000}).cuda();
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    Tensor got = f(x);
    side.synchronize(); // the launches were queued on `side`
    expectClose(got, fn(x), 1e-5);
  }
  if (torch::cuda::device_count() < 2)
    GTEST_SKIP() << "one GPU: the second-device check needs two";
  Tensor x1 = x.to(torch::Device(torch::kCUDA, 1));
  Tensor got = f(x1);
  EXPECT_EQ(got.device(), x1.device());
  expectClose(got, fn(x1), 1e-5);
}

/// Three AdamW steps of `mine` compiled and `eager` on cuda from the same
/// weights: loss, input gradient and every parameter gradient each step.
template <class M> void checkTraining(M eager, M mine, Tensor input, double tol) {
  tgc::models::copyState(*mine, *eager);
  tgc::reset();
  auto f = tgc::compile([&](Tensor x) { return mine->forward(x); });
  torch::optim::AdamW optEager(eager->parameters(), torch::optim::AdamWOptions(1e-3));
  torch::optim::AdamW optMine(mine->parameters(), torch::optim::AdamWOptions(1e-3));
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Tensor x1 = input.clone().requires_grad_(true), x2 = input.clone().requires_grad_(true);
    optEager.zero_grad();
    optMine.zero_grad();
    Tensor lossMine = f(x1).to(torch::kFloat).square().mean(),
           lossEager = eager->forward(x2).to(torch::kFloat).square().mean();
    expectClose(lossMine, lossEager, tol);
    lossMine.backward();
    lossEager.backward();
    expectClose(x1.grad(), x2.grad(), tol);
    auto pm = mine->named_parameters();
    for (auto &p : eager->named_parameters()) {
      SCOPED_TRACE("grad of " + p.key());
      ASSERT_TRUE(pm[p.key()].grad().defined());
      expectClose(pm[p.key()].grad(), p.value().grad(), tol);
    }
    optEager.step();
    optMine.step();
  }
  tgc::Stats s = tgc::stats();
  EXPECT_GE(s.training_graphs, 1);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(GpuJit, TrainingGradientsMatchEager) {
  TGC_NEED_GPU();
  torch::manual_seed(7);
  auto mlpEager = tgc::models::epilogueMlp(), mlpMine = tgc::models::epilogueMlp();
  mlpEager->to(torch::kCUDA);
  mlpMine->to(torch::kCUDA);
  checkTraining(mlpEager, mlpMine, torch::randn({32, 256}).cuda(), 1e-3);
  tgc::models::Gpt2Block gptEager(128, 4), gptMine(128, 4);
  gptEager->to(torch::kCUDA);
  gptMine->to(torch::kCUDA);
  checkTraining(gptEager, gptMine, torch::randn({2, 32, 128}).cuda(), 1e-3);
  tgc::models::BasicBlock blockEager(16), blockMine(16);
  blockEager->to(torch::kCUDA);
  blockMine->to(torch::kCUDA);
  checkTraining(blockEager, blockMine, torch::randn({4, 16, 8, 8}).cuda(), 1e-3);
}

TEST(GpuRuntime, WithoutADriverACudaPlanFailsToLoadWithAReason) {
  if (tgc::gpu::whyNoGpu().empty())
    GTEST_SKIP() << "this machine has a GPU";
  tgc::Plan plan;
  plan.device = "cuda";
  plan.values = {{{4}, {1}, tgc::DType::Float32}, {{4}, {1}, tgc::DType::Float32}};
  plan.inputs = {0};
  plan.outputs = {1};
  plan.kernels = {{"k0", {0}, {1}, 4}};
  plan.steps = {{tgc::Step::Kernel, 0}};
  plan.cudaSources = {"extern \"C\" __global__ void k0(const float *a, float *b) {}"};
  std::string error;
  EXPECT_EQ(tgc::CompiledGraph::load(plan, error), nullptr);
  EXPECT_NE(error.find("needs the NVIDIA driver"), std::string::npos) << error;
}

} // namespace
