// Library ops tgc calls through ATen (mm, bmm, addmm, linear, matmul,
// convolution, scaled_dot_product_attention) × dtype × layout: results
// match eager, and the pointwise epilogue after each runs as one tgc kernel.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace {

using T = torch::Tensor;
using Fn = std::function<T(T, T, T)>;

struct ExternCase {
  std::string name;
  Fn fn;
  /// Shapes of the three inputs for the layouts "contiguous" and
  /// "zero_size" (a zero batch or row count).
  std::vector<std::vector<int64_t>> shapes, zeroShapes;
  int64_t externs, kernels; ///< ATen calls and tgc kernels per call (non-empty)
};

std::vector<ExternCase> cases() {
  return {
      {"mm_relu", [](T a, T b, T) { return torch::mm(a, b).relu(); }, {{8, 16}, {16, 12}, {1}},
       {{0, 16}, {16, 12}, {1}}, 1, 1},
      {"addmm_gelu", [](T a, T b, T c) { return torch::gelu(torch::addmm(c, a, b)); },
       {{8, 16}, {16, 12}, {12}}, {{0, 16}, {16, 12}, {12}}, 1, 1},
      {"bmm_scale", [](T a, T b, T) { return torch::bmm(a, b) * 0.5; }, {{3, 8, 16}, {3, 16, 5}, {1}},
       {{0, 8, 16}, {0, 16, 5}, {1}}, 1, 1},
      {"linear_silu", [](T x, T w, T b) { return torch::silu(torch::linear(x, w, b)); },
       {{2, 7, 16}, {12, 16}, {12}}, {{0, 7, 16}, {12, 16}, {12}}, 1, 1},
      {"matmul_broadcast", [](T a, T b, T c) { return torch::matmul(a, b) + c; },
       {{2, 4, 8, 16}, {16, 6}, {6}}, {{2, 0, 8, 16}, {16, 6}, {6}}, 1, 1},
      {"matmul_vector", [](T a, T b, T) { return torch::matmul(a, b.select(1, 0)).tanh(); },
       {{8, 16}, {16, 3}, {1}}, {{0, 16}, {16, 3}, {1}}, 1, 1},
      {"conv2d_bias_relu",
       [](T x, T w, T b) { return torch::conv2d(x, w, b, 1, 1).relu(); },
       {{2, 4, 9, 9}, {6, 4, 3, 3}, {6}}, {{0, 4, 9, 9}, {6, 4, 3, 3}, {6}}, 1, 1},
      {"conv2d_strided",
       [](T x, T w, T) { return torch::conv2d(x, w, std::optional<T>(), torch::IntArrayRef{2, 2}) * 2; },
       {{1, 3, 11, 10}, {5, 3, 3, 3}, {1}}, {{0, 3, 11, 10}, {5, 3, 3, 3}, {1}}, 1, 1},
      {"conv1d_bias_add",
       [](T x, T w, T b) { return torch::conv1d(x, w, b, 1, 2) + 1; },
       {{2, 3, 17}, {4, 3, 5}, {4}}, {{0, 3, 17}, {4, 3, 5}, {4}}, 1, 1},
      {"sdpa_causal",
       [](T q, T k, T v) {
         return torch::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true) * 2;
       },
       {{2, 3, 8, 16}, {2, 3, 8, 16}, {2, 3, 8, 16}}, {{0, 3, 8, 16}, {0, 3, 8, 16}, {0, 3, 8, 16}},
       1, 1},
  };
}

torch::Tensor rnd(std::vector<int64_t> shape, torch::ScalarType dt) {
  return (torch::randn(shape) * 0.5).to(dt);
}

/// The first input transposed in its last two dims (same shape, other
/// strides) when it has two or more dims.
torch::Tensor transposedLike(std::vector<int64_t> shape, torch::ScalarType dt) {
  if (shape.size() < 2)
    return rnd(shape, dt);
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return rnd(shape, dt).transpose(-1, -2);
}

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
