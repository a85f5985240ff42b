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

TEST(RowKernels, SoftmaxOverOtherDimsIsOneKernelWithEagersLayout) {
  torch::NoGradGuard g;
  auto contiguousLike = [](auto fn, torch::Tensor x, int64_t kernels = 1) {
    tgc::reset();
    auto f = tgc::compile(fn);
    torch::Tensor got = f(x), want = fn(x);
    expectClose(got, want);
    EXPECT_EQ(got.strides(), want.strides()) << "the result is laid out as eager's";
    EXPECT_EQ(tgc::stats().kernel_launches, kernels);
    EXPECT_EQ(tgc::stats().extern_calls, 0);
  };
  contiguousLike([](torch::Tensor x) { return torch::softmax(x, 0); }, torch::randn({33, 6}) * 4);
  contiguousLike([](torch::Tensor x) { return torch::log_softmax(x, 1); }, torch::randn({3, 17, 5}) * 3);
  // The producer fuses; a consumer reads the result through the permute
  // back, outside the row space, so it is a second kernel (for now).
  contiguousLike([](torch::Tensor x) { return torch::softmax(x * 2, -2) + 1; }, torch::randn({2, 9, 4}),
                 2);
  // A transposed input: eager's result follows the input's layout.
  contiguousLike([](torch::Tensor x) { return torch::softmax(x, 0); }, torch::randn({8, 12}).t());
  check([](torch::Tensor x) { return torch::softmax(x, 0); }, torch::randn({40, 3}).to(torch::kBFloat16),
        1, 2e-2);
}

TEST(RowKernels, BatchNormTrainingUpdatesRunningStatistics) {
  torch::NoGradGuard g;
  for (auto dt : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(7);
    torch::nn::BatchNorm2d eager(torch::nn::BatchNorm2dOptions(6).momentum(0.2));
    eager->weight.uniform_(0.5, 1.5);
    eager->bias.uniform_(-0.5, 0.5);
    torch::nn::BatchNorm2d mine(torch::nn::BatchNorm2dOptions(6).momentum(0.2));
    mine->weight.copy_(eager->weight);
    mine->bias.copy_(eager->bias);
    eager->train();
    mine->train();
    tgc::reset();
    auto f = tgc::compile([&](torch::Tensor x) { return mine(x).relu(); });
    double tol = dt == torch::kFloat ? 1e-5 : 2e-2;
    for (int step = 0; step < 3; ++step) {
      torch::Tensor x = (torch::randn({4, 6, 5, 7}) * 2 + 1).to(dt);
      if (step == 2)
        x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); // channels last
      torch::Tensor want = eager(x.to(torch::kFloat)).relu().to(dt);
      expectClose(f(x), want, tol);
      expectClose(mine->running_mean, eager->running_mean, 1e-5);
      expectClose(mine->running_var, eager->running_var, dt == torch::kFloat ? 1e-5 : 1e-4);
      EXPECT_EQ(mine->num_batches_tracked.item<int64_t>(), step + 1);
    }
    tgc::Stats s = tgc::stats();
    EXPECT_EQ(s.eager_fallbacks, 0);
  }
}

TEST(RowKernels, SumsAreAccurateAndHalfTypesAccumulateInFloat) {
  torch::NoGradGuard g;
  // 2^20 floats around 1000: a naive float sum loses about 1e-4 relative;
  // lane-blocked float (short rows) and double (long rows) sums do not.
  torch::manual_seed(11);
  torch::Tensor x = torch::rand({2, 1 << 20}) + 1000;
  auto f = tgc::compile([](torch::Tensor t) { return t.sum(-1); });
  torch::Tensor exact = x.to(torch::kDouble).sum(-1);
  double rel = ((f(x).to(torch::kDouble) - exact).abs() / exact).max().item<double>();
  EXPECT_LT(rel, 1e-6);
  // 4096 ones in bfloat16: accumulating in bfloat16 would stop at 256.
  auto h = tgc::compile([](torch::Tensor t) { return t.sum(-1); });
  torch::Tensor ones = torch::ones({3, 4096}, torch::kBFloat16);
  EXPECT_TRUE(torch::equal(h(ones), torch::full({3}, 4096, torch::kBFloat16)));
  torch::Tensor r = torch::randn({5, 3000}).to(torch::kHalf);
  expectClose(h(r), r.to(torch::kFloat).sum(-1).to(torch::kHalf), 2e-2);
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
