// Reductions over any dims (trailing, leading, interleaved, all), with and
// without keepdim: one row kernel each, compared with eager.
#include "tgc/tgc.h"

#include "tests/e2e/ExpectCompiled.h"

#include "tests/e2e/ReductionCases.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

using namespace tgc::test::reductions;

torch::Tensor rnd(std::vector<int64_t> shape, torch::ScalarType dt) {
  if (at::isFloatingType(dt))
    return torch::randn(shape).to(dt);
  return torch::randint(-20, 20, shape).to(dt);
}

class Reductions : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(Reductions, OneRowKernelMatchesEager) {
  auto [index, dtype] = GetParam();
  ReductionCase c = cases()[index];
  torch::NoGradGuard noGrad;
  std::vector<std::pair<std::string, torch::Tensor>> inputs = {
      {"contiguous", rnd({6, 5, 8}, dtype)},
      {"transposed", rnd({8, 5, 6}, dtype).transpose(0, 2)},
  };
  for (auto &[layout, x] : inputs) {
    SCOPED_TRACE(c.name + " / " + layout + " / " + c10::toString(dtype));
    tgc::reset();
    auto f = tgc::compile(c.fn);
    torch::Tensor got = f(x);
    bool half = dtype == torch::kHalf || dtype == torch::kBFloat16;
    torch::Tensor want = half ? c.fn(x.to(torch::kFloat)).to(got.scalar_type()) : c.fn(x);
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), want.scalar_type());
    double tol = half ? 2e-2 : dtype == torch::kDouble ? 1e-10 : 1e-5;
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol, true))
        << "max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
    tgc::Stats s = tgc::stats();
    EXPECT_EQ(s.eager_fallbacks, 0);
    EXPECT_EQ(s.kernel_launches, 1) << "one row kernel, producers and consumers included";
    EXPECT_LE(s.extern_calls, 1) << "at most the zero-copy view to the result's shape";
  }
}

std::string caseName(const ::testing::TestParamInfo<Reductions::ParamType> &info) {
  return cases()[std::get<0>(info.param)].name + "_" + c10::toString(std::get<1>(info.param));
}

std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)cases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kLong})
      if (!cases()[i].floatOnly || at::isFloatingType(dt))
        out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rows, Reductions, ::testing::ValuesIn(matrix()), caseName);

TEST(ReductionEdges, NanAndInfinityFollowATen) {
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({4, 7});
  x[1][3] = NAN;
  x[2].fill_(-INFINITY);
  x[3][0] = INFINITY;
  auto fn = [](torch::Tensor t) {
    return torch::stack({torch::logsumexp(t, {1}), t.amax(1), t.sum(1), t.var(1)});
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor got = f(x), want = fn(x);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5, /*equal_nan=*/true)) << got << want;
  tgc::test::expectCompiled(1, 1);
}

} // namespace

namespace {

// Index-built ops: triu/tril masks and arange are computed in the kernels
// that read them (tg.iota -> tgk.index), never loaded from memory.
TEST(IndexOps, TriuTrilArangeMatchEager) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) {
    auto a = torch::triu(x, 1) + torch::tril(x, -2) * 2;
    auto r = torch::arange(x.size(-1), x.options()) * 0.5 + torch::arange(3, 3 + 2 * x.size(-1), 2, x.options());
    return a + r;
  };
  for (auto shape : {std::vector<int64_t>{5, 7}, std::vector<int64_t>{2, 6, 6}}) {
    torch::Tensor x = torch::randn(shape);
    tgc::reset();
    auto f = tgc::compile(fn);
    EXPECT_TRUE(torch::allclose(f(x), fn(x), 1e-6, 1e-6));
    tgc::Stats s = tgc::stats();
    EXPECT_EQ(s.extern_calls, 0);
    EXPECT_EQ(s.kernel_launches, 1);
  }
}

TEST(IndexOps, CausalMaskFusesIntoSoftmax) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor att) {
    int64_t t = att.size(-1);
    auto mask = torch::ones({t, t}, att.options().dtype(torch::kBool)).triu(1);
    return torch::softmax(att.masked_fill(mask, -INFINITY), -1);
  };
  torch::Tensor att = torch::randn({2, 3, 8, 8});
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::allclose(f(att), fn(att), 1e-6, 1e-6));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.extern_calls, 0);
  EXPECT_EQ(s.kernel_launches, 1) << "mask, masked_fill and softmax in one row kernel";
}

TEST(IndexOps, RmsNormIsOneRowKernel) {
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({6, 64}), w = torch::randn({64});
  auto fn = [](torch::Tensor x, torch::Tensor w) { return torch::rms_norm(x, {64}, w, 1e-6); };
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::allclose(f(x, w), fn(x, w), 1e-5, 1e-5));
  EXPECT_EQ(tgc::stats().kernel_launches, 1);
  EXPECT_EQ(tgc::stats().extern_calls, 0);
}

} // namespace

namespace {

TEST(ArgReductions, ArgmaxArgminAndMaxDimMatchEager) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) {
    auto [mv, mi] = x.max(1);
    auto [nv, ni] = x.min(0, true);
    return std::make_tuple(x.argmax(-1), x.argmin(0, true), x.argmax(), mv, mi, nv, ni);
  };
  for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kLong}) {
    SCOPED_TRACE(c10::toString(dt));
    // Ties (small integers) must give the first position, as in eager.
    torch::Tensor x = torch::randint(-3, 3, {6, 5, 7}).to(dt);
    torch::Tensor xt = torch::randint(-3, 3, {7, 5, 6}).to(dt).transpose(0, 2);
    for (torch::Tensor in : {x, xt}) {
      tgc::reset();
      auto f = tgc::compile(fn);
      auto got = f(in);
      auto want = fn(in);
      EXPECT_TRUE(torch::equal(std::get<0>(got), std::get<0>(want)));
      EXPECT_TRUE(torch::equal(std::get<1>(got), std::get<1>(want)));
      EXPECT_TRUE(torch::equal(std::get<2>(got), std::get<2>(want)));
      EXPECT_TRUE(torch::equal(std::get<3>(got), std::get<3>(want)));
      EXPECT_TRUE(torch::equal(std::get<4>(got), std::get<4>(want)));
      EXPECT_TRUE(torch::equal(std::get<5>(got), std::get<5>(want)));
      EXPECT_TRUE(torch::equal(std::get<6>(got), std::get<6>(want)));
      EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
      EXPECT_EQ(tgc::stats().extern_calls, 0) << "all lowered to row kernels";
    }
  }
  // NaN is the maximum and the minimum, first one wins.
  torch::Tensor n = torch::randn({3, 5});
  n[1][2] = NAN;
  n[1][4] = NAN;
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor x) { return std::make_tuple(x.argmax(1), x.argmin(1)); });
  auto [a, b] = f(n);
  EXPECT_TRUE(torch::equal(a, n.argmax(1)));
  EXPECT_TRUE(torch::equal(b, n.argmin(1)));
}

} // namespace
