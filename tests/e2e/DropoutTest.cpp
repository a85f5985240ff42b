// Dropout with tgc's counter-based RNG (Philox4x32-10 keyed by a seed drawn
// per call from ATen's default generator): statistically a dropout, exactly
// scaled, fused with its neighbours, reproducible under torch::manual_seed.
#include "tgc/tgc.h"

#include "tests/e2e/ExpectCompiled.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

TEST(Dropout, KeepsOneMinusPScaledAndFuses) {
  torch::NoGradGuard noGrad;
  const double p = 0.3;
  auto fn = [p](torch::Tensor x, torch::Tensor y) { return torch::dropout(x, p, true) + y; };
  torch::Tensor x = torch::randn({256, 512}).abs() + 0.5, y = torch::randn({512});
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor out = f(x, y) - y;
  torch::Tensor kept = out != 0;
  double keepRate = kept.to(torch::kDouble).mean().item<double>();
  // 131072 Bernoulli(0.7) draws: the standard deviation of the rate is 0.0013.
  EXPECT_NEAR(keepRate, 1 - p, 0.01);
  EXPECT_TRUE(torch::allclose(out.masked_select(kept), (x / (1 - p)).masked_select(kept), 1e-5, 1e-5));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.kernel_launches, 1) << "random mask, scale and the add in one kernel";
  EXPECT_EQ(s.extern_calls, 1) << "one ATen call: the per-call seed";
  // Rows and columns are independent: no visible pattern along either axis.
  torch::Tensor rowRate = kept.to(torch::kDouble).mean(1), colRate = kept.to(torch::kDouble).mean(0);
  EXPECT_LT((rowRate - (1 - p)).abs().max().item<double>(), 0.1);
  EXPECT_LT((colRate - (1 - p)).abs().max().item<double>(), 0.15);
}

TEST(Dropout, FreshMaskEachCallReproducibleUnderManualSeed) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) { return torch::dropout(x, 0.5, true); };
  torch::Tensor x = torch::randn({64, 64}).abs() + 1;
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::manual_seed(7);
  torch::Tensor a = f(x);
  torch::Tensor b = f(x);
  EXPECT_FALSE(torch::equal(a, b)) << "each call draws a new seed";
  torch::manual_seed(7);
  torch::Tensor c = f(x);
  EXPECT_TRUE(torch::equal(a, c)) << "the seed comes from ATen's default generator";
  tgc::test::expectCompiled(1, 3);
  EXPECT_EQ(tgc::stats().captures, 1) << "the masks come from the replayed graph";
}

TEST(Dropout, EvalModeIsTheIdentity) {
  torch::NoGradGuard noGrad;
  torch::nn::Dropout drop(0.5);
  drop->eval();
  auto fn = [&](torch::Tensor x) { return drop->forward(x) * 2; };
  torch::Tensor x = torch::randn({8, 8});
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::equal(f(x), x * 2));
  tgc::test::expectCompiled(1, 1);
}

} // namespace
