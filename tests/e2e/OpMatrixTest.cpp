// Op × dtype × layout matrix for the ops tg lowers itself: each must match
// eager and compile to kernels only (no ATen call, no fallback).
#include "tgc/tgc.h"

#include "tests/e2e/OpMatrixCases.h"

#include "tests/e2e/RandomTensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <set>

namespace {

using namespace tgc::test::pointwise;

class OpMatrix : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(OpMatrix, MatchesEagerWithKernelsOnly) {
  auto [index, dtype] = GetParam();
  OpCase op = cases()[index];
  torch::NoGradGuard noGrad;
  for (const Layout &layout : layouts()) {
    SCOPED_TRACE(op.name + " / " + layout.name + " / " + c10::toString(dtype));
    torch::manual_seed(index);
    auto [a, b] = layout.make(dtype);
    if (op.positive) {
      a = a.abs() + 0.5;
      b = b.abs() + 0.5;
    }
    tgc::reset();
    auto f = tgc::compile(op.fn);
    torch::Tensor got = f(a, b);
    bool half = dtype == torch::kHalf || dtype == torch::kBFloat16;
    // Half types: tgc keeps intermediates in float, so the reference is the
    // float32 computation rounded once.
    torch::Tensor want = half ? op.fn(a.to(torch::kFloat), b.to(torch::kFloat)).to(got.scalar_type())
                              : op.fn(a, b);
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), want.scalar_type());
    double tol = half ? op.halfTol : dtype == torch::kDouble ? 1e-10 : 1e-5;
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol, true))
        << "max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>()
        << " at got " << got.flatten()[(got.to(torch::kDouble) - want.to(torch::kDouble)).abs().flatten().argmax()].item<double>()
        << " want " << want.flatten()[(got.to(torch::kDouble) - want.to(torch::kDouble)).abs().flatten().argmax()].item<double>();
    tgc::Stats s = tgc::stats();
    EXPECT_EQ(s.eager_fallbacks, 0);
    EXPECT_EQ(s.extern_calls, 0) << "an op was not lowered by tg";
    EXPECT_GE(s.kernel_launches, 1);
  }
}

std::string caseName(const ::testing::TestParamInfo<OpMatrix::ParamType> &info) {
  return cases()[std::get<0>(info.param)].name + "_" + c10::toString(std::get<1>(info.param));
}

/// Every op with every dtype it is defined for (float-only ops get the four
/// float types; the others the integer types too).
std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)cases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf, torch::kLong,
                    torch::kInt, torch::kBool})
      if ((!cases()[i].floatOnly || at::isFloatingType(dt)) &&
          (!cases()[i].intOnly || !at::isFloatingType(dt)) &&
          (dt != torch::kBool || boolCases().count(cases()[i].name)))
        out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pointwise, OpMatrix, ::testing::ValuesIn(matrix()), caseName);

} // namespace
