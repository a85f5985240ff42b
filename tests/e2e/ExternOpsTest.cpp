// Library ops tgc calls through ATen (mm, bmm, addmm, linear, matmul,
// convolution, scaled_dot_product_attention) × dtype × layout: results
// match eager, and the pointwise epilogue after each runs as one tgc kernel.
#include "tgc/tgc.h"

#include "tests/e2e/ExternCases.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

using namespace tgc::test::externs;

class ExternOps : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(ExternOps, MatchEagerWithOneEpilogueKernel) {
  auto [index, dtype] = GetParam();
  ExternCase c = cases()[index];
  torch::NoGradGuard noGrad;
  for (std::string layout : {"contiguous", "transposed", "zero_size"}) {
    SCOPED_TRACE(c.name + " / " + layout + " / " + c10::toString(dtype));
    torch::manual_seed(index);
    bool zero = layout == "zero_size";
    const auto &shapes = zero ? c.zeroShapes : c.shapes;
    T a = layout == "transposed" ? transposedLike(shapes[0], dtype) : rnd(shapes[0], dtype);
    T b = layout == "transposed" ? transposedLike(shapes[1], dtype) : rnd(shapes[1], dtype);
    T bias = rnd(shapes[2], dtype);
    tgc::reset();
    auto f = tgc::compile(c.fn);
    f(a, b, bias); // compile
    tgc::Stats before = tgc::stats();
    T got = f(a, b, bias);
    tgc::Stats after = tgc::stats();
    bool half = dtype == torch::kHalf || dtype == torch::kBFloat16;
    // Half types: tgc's epilogue keeps the library result in float until it
    // rounds once; eager rounds after the library call and after each op.
    T want = c.fn(a, b, bias);
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), want.scalar_type());
    double tol = half ? 3e-2 : 1e-5;
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol))
        << "max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
    EXPECT_EQ(after.eager_fallbacks, 0);
    // (Transposed q/k/v take ATen's math path for attention: more calls.)
    if (layout == "contiguous") {
      EXPECT_EQ(after.extern_calls - before.extern_calls, c.externs) << "ATen calls per call";
      EXPECT_EQ(after.kernel_launches - before.kernel_launches, c.kernels) << "epilogue kernels";
    }
  }
}

std::string caseName(const ::testing::TestParamInfo<ExternOps::ParamType> &info) {
  return cases()[std::get<0>(info.param)].name + "_" + c10::toString(std::get<1>(info.param));
}

std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)cases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf})
      out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Library, ExternOps, ::testing::ValuesIn(matrix()), caseName);

} // namespace
