// Reductions over rows, softmax, log_softmax and layer_norm as row kernels.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol))
      << "max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
}

template <class F> void check(F fn, torch::Tensor x, int64_t kernels, double tol = 1e-5) {
  tgc::reset();
  auto f = tgc::compile(fn);
  expectClose(f(x), fn(x), tol);
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.kernel_launches, kernels);
}

TEST(RowKernels, SoftmaxIsOneKernel) {
  torch::NoGradGuard g;
  check([](torch::Tensor x) { return torch::softmax(x, -1); }, torch::randn({6, 37}) * 4, 1);
  check([](torch::Tensor x) { return torch::log_softmax(x, 1); }, torch::randn({5, 64}) * 3, 1);
  // A producer and a consumer fuse into the same kernel.
  check([](torch::Tensor x) { return torch::softmax(x * 2 + 1, -1) * 3; }, torch::randn({4, 3, 9}), 1);
  // Non-contiguous input read in place.
  check([](torch::Tensor x) { return torch::softmax(x, -1); }, torch::randn({16, 12}).t(), 1);
}

TEST(RowKernels, LayerNormIsOneKernel) {
  torch::NoGradGuard g;
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({32}));
  ln->weight.uniform_(0.5, 1.5);
  ln->bias.uniform_(-0.5, 0.5);
  check([&](torch::Tensor x) { return ln(x); }, torch::randn({3, 5, 32}) * 2 + 1, 1);
  check([](torch::Tensor x) { return torch::layer_norm(x, {4, 8}); }, torch::randn({6, 4, 8}), 1);
}

TEST(RowKernels, TrailingReductions) {
  torch::NoGradGuard g;
  check([](torch::Tensor x) { return x.sum(-1, true); }, torch::randn({7, 100}), 1);
  // (without keepdim an ATen view follows the kernel; it launches nothing)
  check([](torch::Tensor x) { return (x * x).sum({1, 2}); }, torch::randn({3, 4, 5}), 1);
  check([](torch::Tensor x) { return x.mean(-1); }, torch::randn({4, 33}), 1);
  check([](torch::Tensor x) { return x.amax(-1) - x.amin(-1); }, torch::randn({8, 9}), 3);
  check([](torch::Tensor x) { return x.exp().sum(); }, torch::randn({5, 6}), 1);
  check([](torch::Tensor x) { return x.sum(-1); }, torch::randint(-50, 50, {4, 10}), 1);
}

TEST(RowKernels, NanPropagatesThroughMax) {
  torch::NoGradGuard g;
  torch::Tensor x = torch::randn({3, 5});
  x[1][2] = NAN;
  auto f = tgc::compile([](torch::Tensor t) { return t.amax(-1); });
  torch::Tensor got = f(x);
  EXPECT_TRUE(std::isnan(got[1].item<float>()));
  EXPECT_EQ(got[0].item<float>(), x[0].max().item<float>());
}

TEST(RowKernels, HalfTypes) {
  torch::NoGradGuard g;
  for (auto dt : {torch::kHalf, torch::kBFloat16})
    check([](torch::Tensor x) { return torch::softmax(x, -1); }, torch::randn({4, 50}).to(dt), 1,
          1e-2);
}

} // namespace
