// Compiled training on the CUDA backend, checked on the CPU: each model's
// segments become training graphs of device "cuda" (the joint graph is
// recorded from autograd on the CUDA segment, as on a GPU), both halves are
// compiled for CUDA, their kernels run in the emulator and the backward runs
// when autograd calls it. Outputs, input gradients, parameter gradients and
// batch norm's running statistics are compared with eager autograd on the
// CPU; every forward and backward kernel also compiles with NVRTC for sm_80
// and sm_90.
#include "bench/models/Models.h"
#include "runtime/TrainingGraph.h"
#include "tests/emu/EmulatedGraph.h"
#include "tests/gpu/GpuCaseBuilder.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tgc::emu {
namespace {

using torch::Tensor;

void expectClose(const Tensor &got, const Tensor &want, double tol, const std::string &what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, tol, tol))
      << what << ": max error " << (g - w).abs().max().item<double>() << " max abs " << w.abs().max().item<double>();
}


/// `got` (tgc) is no further from `exact` than twice eager's `want`, plus
/// `tol` relative to the largest magnitude.
void expectNoWorse(const Tensor &got, const Tensor &want, const Tensor &exact, double tol,
                   const std::string &what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.sizes(), exact.sizes()) << what;
  double mine = (got.to(torch::kDouble) - exact).abs().max().item<double>();
  double eager = (want.to(torch::kDouble) - exact).abs().max().item<double>();
  double scale = exact.abs().max().item<double>();
  EXPECT_LE(mine, 2 * eager + tol * scale)
      << what << ": tgc is " << mine << " from float64, eager " << eager << " (max |x| " << scale << ")";
}

/// Runs `forward` of `mine` emulated as CUDA training graphs and of `eager`
/// through eager autograd on the same input, backpropagates the same random
/// output gradient through both and compares outputs, the input's gradient,
/// every parameter's gradient and every buffer. Returns the run (its plans).
template <class M>
EmulatedRun checkTraining(M eager, M mine, const Tensor &input, double tol,
                          size_t minSegments = 1, M reference = nullptr) {
  tgc::models::copyState(*mine, *eager);
  Tensor x1 = input.clone().requires_grad_(true), x2 = input.clone().requires_grad_(true);
  EmulatedRun run = runEmulatedTraining(
      [&](const std::vector<Tensor> &in) { return std::vector<Tensor>{mine->forward(in[0])}; },
      {x1});
  Tensor want = eager->forward(x2);
  EXPECT_GE(run.segments.size(), minSegments);
  expectClose(run.outputs[0], want, tol, "output");
  EXPECT_TRUE(run.outputs[0].requires_grad()) << "the compiled forward is not differentiable";
  torch::manual_seed(99);
  Tensor tangent = torch::randn(want.sizes()).to(want.scalar_type());
  run.outputs[0].backward(tangent);
  want.backward(tangent);
  if (reference) {
    // Half types: eager rounds every op, tgc's kernels once, so neither
    // equals the other; both are held to a float64 run of the same model.
    Tensor x3 = input.to(torch::kDouble).requires_grad_(true);
    reference->forward(x3).backward(tangent.to(torch::kDouble));
    expectNoWorse(x1.grad(), x2.grad(), x3.grad(), tol, "grad of the input");
    auto pm = mine->named_parameters(), pe = eager->named_parameters();
    for (auto &p : reference->named_parameters())
      expectNoWorse(pm[p.key()].grad(), pe[p.key()].grad(), p.value().grad(), tol,
                    "grad of " + p.key());
  } else {
    expectClose(x1.grad(), x2.grad(), tol, "grad of the input");
    auto pm = mine->named_parameters(), pe = eager->named_parameters();
    for (auto &p : pe)
      expectClose(pm[p.key()].grad(), p.value().grad(), tol, "grad of " + p.key());
  }
  auto bm = mine->named_buffers(), be = eager->named_buffers();
  for (auto &b : be)
    expectClose(bm[b.key()], b.value(), tol, "buffer " + b.key());
  // Forward and backward plans: both halves of every training graph.
  EXPECT_GE(run.plans.size(), 2 * minSegments);
  size_t kernels = 0;
  for (const Plan &p : run.plans)
    kernels += p.kernels.size();
  EXPECT_GE(kernels, 2u) << "no CUDA kernel ran";
  for (const char *arch : {"sm_80", "sm_90"})
    EXPECT_EQ(compileAllWithNvrtc(run.plans, arch), "") << arch;
  return run;
}

TEST(EmulatedTraining, MlpGradientsMatchEager) {
  torch::manual_seed(1);
  auto eager = tgc::models::epilogueMlp(), mine = tgc::models::epilogueMlp();
  EmulatedRun run = checkTraining(eager, mine, torch::randn({32, 256}), 1e-4);
  // One training graph: a forward plan and a backward plan with kernels.
  ASSERT_EQ(run.plans.size(), 2u);
  EXPECT_GE(run.plans[1].kernels.size(), 1u) << "the backward launched no tgc kernel";
}

TEST(EmulatedTraining, Gpt2BlockGradientsMatchEager) {
  torch::manual_seed(2);
  tgc::models::Gpt2Block eager(64, 4), mine(64, 4);
  checkTraining(eager, mine, torch::randn({2, 16, 64}), 2e-4);
}

TEST(EmulatedTraining, ResNetBasicBlockInTrainingModeUpdatesRunningStatistics) {
  torch::manual_seed(3);
  tgc::models::BasicBlock eager(8), mine(8);
  eager->train();
  mine->train();
  // A channels-last input: the batch norm kernels read it in place.
  Tensor x = torch::randn({4, 8, 8, 8}).contiguous(torch::MemoryFormat::ChannelsLast);
  checkTraining(eager, mine, x, 2e-4);
}

TEST(EmulatedTraining, GraphBreaksGiveEachSegmentItsBackward) {
  torch::manual_seed(4);
  auto eager = tgc::models::transformerLayer(64, 4), mine = tgc::models::transformerLayer(64, 4);
  // torch::nn's attention compares q, k and v on the host: three segments.
  checkTraining(eager, mine, torch::randn({8, 2, 64}), 2e-4, /*minSegments=*/2);
}

TEST(EmulatedTraining, BFloat16MlpGradientsMatchEager) {
  torch::manual_seed(5);
  auto eager = tgc::models::epilogueMlp(), mine = tgc::models::epilogueMlp(),
       exact = tgc::models::epilogueMlp();
  eager->to(torch::kBFloat16);
  tgc::models::copyState(*exact, *eager); // bfloat16 weights, held exactly in float64
  exact->to(torch::kDouble);
  mine->to(torch::kBFloat16);
  checkTraining(eager, mine, torch::randn({16, 256}).to(torch::kBFloat16), 2e-2, 1, exact);
}

// The GPU benchmark's training transformer in bfloat16 (tgc-gpu-prepare's
// train_transformer_layer, smaller): layer norm's statistics are float for
// bfloat16 inputs, and the backward must take them as ATen gives them.
TEST(EmulatedTraining, BFloat16Gpt2BlockGradientsMatchEager) {
  torch::manual_seed(7);
  tgc::models::Gpt2Block eager(64, 4), mine(64, 4), exact(64, 4);
  eager->to(torch::kBFloat16);
  tgc::models::copyState(*exact, *eager);
  exact->to(torch::kDouble);
  mine->to(torch::kBFloat16);
  checkTraining(eager, mine, torch::randn({2, 16, 64}).to(torch::kBFloat16), 3e-2, 1, exact);
}

// What tgc-gpu-prepare writes for the GPU training benchmark: both halves
// and their wiring survive the file, and run (emulated) to eager's
// gradients, the way tgc-bench-gpu runs them on a GPU.
TEST(EmulatedTraining, GpuTrainingCaseRoundTripsAndMatchesEager) {
  torch::manual_seed(6);
  auto eager = tgc::models::geluMlp(64, 256), mine = tgc::models::geluMlp(64, 256);
  tgc::models::copyState(*mine, *eager);
  std::vector<Tensor> planInputs;
  tgc::gpu::GpuTrainingCase made = tgc::gpu::trainingCaseFromProgram(
      "mlp", [&](const auto &in) { return std::vector<Tensor>{mine->forward(in[0])}; },
      {torch::randn({32, 64})}, planInputs);
  std::string path = (std::filesystem::temp_directory_path() / "tgc-emu-mlp.tgctrain").string();
  tgc::gpu::writeGpuTrainingCase(made, path);
  tgc::gpu::GpuTrainingCase c = tgc::gpu::readGpuTrainingCase(path);
  std::filesystem::remove(path);
  EXPECT_EQ(c.name, "mlp");
  ASSERT_EQ(c.requiresGrad.size(), planInputs.size());
  EXPECT_FALSE(c.requiresGrad[0]) << "the input";
  for (size_t i = 1; i < planInputs.size(); ++i)
    EXPECT_TRUE(c.requiresGrad[i]) << "weight " << i;
  EXPECT_EQ(c.layout.backwardInputs.size(), made.layout.backwardInputs.size());
  EXPECT_EQ(c.layout.gradOf, made.layout.gradOf);
  EXPECT_EQ(c.forward.images.size(), c.forward.plan.kernels.size());
  EXPECT_EQ(c.backward.images.size(), c.backward.plan.kernels.size());
  EXPECT_GE(c.backward.plan.kernels.size(), 1u);

  auto g = std::make_shared<TrainingGraph>();
  g->forward = loadEmulatedPlan(c.forward.plan);
  g->backward = loadEmulatedPlan(c.backward.plan);
  g->layout = c.layout;
  Tensor x = torch::randn({32, 64});
  std::vector<Tensor> primals{x};
  for (size_t i = 1; i < planInputs.size(); ++i)
    primals.push_back(planInputs[i].detach().clone().requires_grad_(true));
  Tensor got = applyTraining(g, primals)[0];
  Tensor want = eager->forward(x);
  expectClose(got, want, 1e-4, "output");
  got.square().mean().backward();
  want.square().mean().backward();
  // Lifted weights come in parameter order: 0.weight, 0.bias, 2.weight, 2.bias.
  std::vector<Tensor> params = eager->parameters();
  ASSERT_EQ(params.size(), primals.size() - 1);
  for (size_t i = 0; i < params.size(); ++i)
    expectClose(primals[i + 1].grad(), params[i].grad(), 1e-4, "grad of weight " + std::to_string(i));

  // The benchmark's eager side: the case's segment op by op under autograd
  // (here on the CPU) trains like the module.
  Plan eagerPlan = c.eager;
  eagerPlan.device = "cpu";
  for (ExternStep &e : eagerPlan.externs)
    for (ArgValue &a : e.args)
      if (a.kind == ArgValue::Device)
        a.s = "cpu";
  std::string error;
  auto eagerGraph = CompiledGraph::load(eagerPlan, error);
  ASSERT_TRUE(eagerGraph) << error;
  std::vector<Tensor> eagerPrimals{x};
  for (size_t i = 1; i < planInputs.size(); ++i)
    eagerPrimals.push_back(planInputs[i].detach().clone().requires_grad_(true));
  Tensor out = eagerGraph->run(eagerPrimals)[0];
  ASSERT_TRUE(out.requires_grad()) << "autograd did not record the eager plan";
  out.square().mean().backward();
  for (size_t i = 0; i < params.size(); ++i)
    expectClose(eagerPrimals[i + 1].grad(), params[i].grad(), 1e-5, "eager plan's grad " + std::to_string(i));
}

} // namespace
} // namespace tgc::emu
