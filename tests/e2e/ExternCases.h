// Library ops tgc calls through ATen with a fused epilogue: cases shared by
// ExternOpsTest and the emulated CUDA matrix (tests/emu).
#ifndef TGC_TESTS_E2E_EXTERNCASES_H
#define TGC_TESTS_E2E_EXTERNCASES_H

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace tgc::test::externs {

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

inline std::vector<ExternCase> cases() {
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

inline torch::Tensor rnd(std::vector<int64_t> shape, torch::ScalarType dt) {
  return (torch::randn(shape) * 0.5).to(dt);
}

/// The first input transposed in its last two dims (same shape, other
/// strides) when it has two or more dims.
inline torch::Tensor transposedLike(std::vector<int64_t> shape, torch::ScalarType dt) {
  if (shape.size() < 2)
    return rnd(shape, dt);
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return rnd(shape, dt).transpose(-1, -2);
}

} // namespace tgc::test::externs

#endif
