// End-to-end walking skeleton: (a * b + 1).relu() through every stage.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

auto skeleton = [](torch::Tensor a, torch::Tensor b) { return (a * b + 1).relu(); };

TEST(WalkingSkeleton, MatchesEagerOnSeveralShapes) {
  tgc::reset();
  auto f = tgc::compile(skeleton);
  torch::manual_seed(0);
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7}, {7}}, {{4, 8}, {4, 8}}, {{4, 8}, {8}}, {{3, 1, 5}, {1, 6, 5}}, {{}, {}}};
  for (auto &[sa, sb] : shapes) {
    torch::Tensor a = torch::randn(sa), b = torch::randn(sb);
    torch::Tensor got = f(a, b);
    torch::Tensor want = skeleton(a, b);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6))
        << "max error " << (got - want).abs().max().item<float>();
  }
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 5);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(WalkingSkeleton, ProductsAreRoundedLikeEagerNotContracted) {
  // a * b is -1 up to rounding, so a * b + 1 is that rounding error: eager
  // rounds the product first, and a kernel contracting into an FMA would
  // return the exact residual instead (the flake this test pins down).
  auto f = tgc::compile([](torch::Tensor a, torch::Tensor b) { return a * b + 1; });
  torch::Tensor a = torch::rand({4096}) + 0.5, b = -1 / a;
  torch::Tensor want = a * b + 1, got = f(a, b);
  EXPECT_TRUE(torch::equal(got, want))
      << (got != want).sum().item<int64_t>() << " of 4096 differ";
  EXPECT_GT((want != 0).sum().item<int64_t>(), 0) << "the test needs rounding residuals";
}

TEST(WalkingSkeleton, ThreeOpChainIsOneKernel) {
  tgc::reset();
  auto f = tgc::compile(skeleton);
  torch::Tensor a = torch::randn({16, 32}), b = torch::randn({16, 32});
  torch::Tensor got = f(a, b);
  EXPECT_TRUE(torch::allclose(got, skeleton(a, b)));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 1);
  EXPECT_LE(s.kernels_compiled, 1); // 0 when an earlier run cached it
  EXPECT_EQ(s.kernel_launches, 1);
  EXPECT_EQ(s.extern_calls, 0);
  // A second call replays the plan: one more launch, nothing compiled.
  torch::Tensor again = f(b, a);
  EXPECT_TRUE(torch::allclose(again, skeleton(b, a)));
  s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 1);
  EXPECT_EQ(s.kernel_launches, 2);
  EXPECT_EQ(s.cache_hits_memory, 1);
}

TEST(WalkingSkeleton, NonContiguousInputsAreReadInPlace) {
  tgc::reset();
  auto f = tgc::compile(skeleton);
  torch::Tensor a = torch::randn({8, 6}).t(), b = torch::randn({6, 16}).slice(1, 0, 16, 2);
  ASSERT_FALSE(a.is_contiguous());
  ASSERT_FALSE(b.is_contiguous());
  torch::Tensor got = f(a, b);
  EXPECT_TRUE(torch::allclose(got, skeleton(a, b)));
  EXPECT_EQ(tgc::stats().kernel_launches, 1);
}

} // namespace
