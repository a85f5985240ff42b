// Layout ops (views, permutes, slices, flips, reshapes) are tg.remap ops:
// a kernel that reads them reads the original buffer through the composed
// index map, so no copy and no ATen call happens; a view that an ATen op
// consumes stays a zero-copy ATen view.
#include "tgc/tgc.h"

#include "tests/e2e/ExpectCompiled.h"

#include "tests/e2e/LayoutCases.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

using namespace tgc::test::layouts;

torch::Tensor rnd(std::vector<int64_t> shape, torch::ScalarType dt) {
  if (at::isFloatingType(dt))
    return (torch::randn(shape) * 2).to(dt);
  return torch::randint(-20, 20, shape).to(dt);
}

class LayoutOps : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(LayoutOps, KernelsReadThroughTheMap) {
  auto [index, dtype] = GetParam();
  LayoutCase c = cases()[index];
  torch::NoGradGuard noGrad;
  // Contiguous, and a non-contiguous input of the same shape.
  std::vector<std::pair<std::string, torch::Tensor>> inputs = {
      {"contiguous", rnd({4, 6, 10}, dtype)},
      {"permuted", rnd({10, 4, 6}, dtype).permute({1, 2, 0})},
  };
  for (auto &[layout, x] : inputs) {
    SCOPED_TRACE(c.name + " / " + layout + " / " + c10::toString(dtype));
    bool viewOnly = c.name == "view_merge" || c.name == "flatten";
    if (viewOnly && !x.is_contiguous())
      continue; // view() of this layout is an error in eager too
    tgc::reset();
    auto f = tgc::compile(c.fn);
    torch::Tensor got = f(x);
    torch::Tensor want = c.fn(x);
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), want.scalar_type());
    EXPECT_TRUE(torch::equal(got, want)) << "max error "
        << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
    tgc::Stats s = tgc::stats();
    EXPECT_EQ(s.eager_fallbacks, 0);
    EXPECT_EQ(s.extern_calls, 0) << "a layout op was not absorbed into a kernel";
    EXPECT_EQ(s.kernel_launches, 1) << "layout ops and their consumer are one kernel";
  }
}

std::string caseName(const ::testing::TestParamInfo<LayoutOps::ParamType> &info) {
  return cases()[std::get<0>(info.param)].name + "_" + c10::toString(std::get<1>(info.param));
}

std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)cases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kLong, torch::kInt})
      out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Views, LayoutOps, ::testing::ValuesIn(matrix()), caseName);

TEST(LayoutOpsExtern, ViewsFeedingMatmulStayZeroCopy) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x, torch::Tensor w) {
    // linear = t(w) + addmm; the head split is view + transpose.
    return torch::matmul(x.view({8, 4, 16}).transpose(0, 1), w.t()).relu();
  };
  torch::Tensor x = torch::randn({8, 64}), w = torch::randn({32, 16});
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor got = f(x, w);
  EXPECT_TRUE(torch::allclose(got, fn(x, w), 1e-5, 1e-5));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.kernel_launches, 1) << "relu only: no copy kernel for the views";
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(LayoutOpsExtern, ReturnedViewAliasesItsInput) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) { return x.transpose(0, 1); };
  torch::Tensor x = torch::randn({3, 5});
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor got = f(x);
  EXPECT_TRUE(torch::equal(got, x.t()));
  EXPECT_EQ(got.data_ptr(), x.data_ptr()) << "a returned view is a view, as in eager";
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 1);
  EXPECT_EQ(s.view_calls, 1) << "the compiled graph made the view";
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(LayoutOpsExtern, WritesThroughViewsStayVisible) {
  torch::NoGradGuard noGrad;
  auto fn = [](torch::Tensor x) {
    auto row = x.select(0, 1);
    row.mul_(2);
    return x.t() + 1;
  };
  torch::Tensor a = torch::randn({3, 4}), b = a.clone();
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor got = f(a);
  torch::Tensor want = fn(b);
  EXPECT_TRUE(torch::equal(got, want));
  EXPECT_TRUE(torch::equal(a, b)) << "the input was written through the view";
  tgc::test::expectCompiled(1, 1);
}

} // namespace

namespace {

TEST(LayoutOpsExtern, WritesToSplitPartsReachTheBase) {
  torch::NoGradGuard noGrad;
  // The parts are written in place; reading the base afterwards must see it.
  auto fn = [](torch::Tensor x) {
    auto y = x * 2;
    auto parts = y.split(3, 1);
    parts[0].sigmoid_();
    parts[1].tanh_();
    return y + 1;
  };
  // Written parts whose base nobody reads again are functionalized.
  auto fn2 = [](torch::Tensor x) {
    auto parts = (x * 2).split(3, 1);
    return parts[0].sigmoid_() * parts[1].tanh_();
  };
  torch::Tensor x = torch::randn({4, 6});
  tgc::reset();
  auto f = tgc::compile(fn);
  EXPECT_TRUE(torch::allclose(f(x), fn(x), 1e-6, 1e-6));
  tgc::reset();
  auto f2 = tgc::compile(fn2);
  EXPECT_TRUE(torch::allclose(f2(x), fn2(x), 1e-6, 1e-6));
  EXPECT_LE(tgc::stats().kernel_launches, 2) << "functionalized: kernels only";
  EXPECT_EQ(tgc::stats().extern_calls, 0);
}

} // namespace
