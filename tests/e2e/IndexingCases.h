// Indexing, concatenation and padding cases and data layouts, shared by
// IndexingTest and the emulated CUDA matrix (tests/emu).
#ifndef TGC_TESTS_E2E_INDEXINGCASES_H
#define TGC_TESTS_E2E_INDEXINGCASES_H

#include "tests/e2e/RandomTensors.h"

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace tgc::test::indexing {

using Fn = std::function<torch::Tensor(torch::Tensor, torch::Tensor)>;

/// A case: a function of a data tensor and an integer index tensor, and how
/// to make both for a dtype and a layout.
struct IndexCase {
  std::string name;
  Fn fn;
  std::vector<int64_t> data;  ///< shape of the data tensor
  std::vector<int64_t> index; ///< shape of the index tensor
  int64_t low, high;          ///< index range
  int kernels = 1;            ///< kernels one call launches
};

inline std::vector<IndexCase> cases() {
  using T = torch::Tensor;
  return {
      {"embedding", [](T w, T i) { return torch::embedding(w, i); }, {10, 6}, {4, 5}, 0, 10},
      {"embedding_fused", [](T w, T i) { return torch::embedding(w, i) * 2 + 1; }, {10, 6}, {7}, 0, 10},
      {"index_select0", [](T x, T i) { return x.index_select(0, i); }, {9, 5}, {6}, 0, 9},
      {"index_select1", [](T x, T i) { return x.index_select(1, i) - x.select(1, 0).unsqueeze(1); },
       {4, 9, 3}, {11}, 0, 9},
      {"index_select_scalar", [](T x, T i) { return x.index_select(1, i[0]); }, {4, 9}, {3}, 0, 9,
       1},
      {"gather1", [](T x, T i) { return torch::gather(x, 1, i); }, {5, 8}, {5, 3}, 0, 8},
      {"gather0", [](T x, T i) { return torch::gather(x, 0, i).abs(); }, {6, 4}, {9, 2}, 0, 6},
      {"index_one", [](T x, T i) { return x.index({i}); }, {7, 3}, {2, 4}, -7, 7},
      {"index_middle",
       [](T x, T i) { return x.index({torch::indexing::Slice(), i}); }, {3, 8, 2}, {5}, -8, 8},
      {"index_broadcast",
       [](T x, T i) { return x.index({i.unsqueeze(1), i.slice(0, 0, 2)}); }, {6, 6}, {5}, -6, 6},
      {"index_apart",
       [](T x, T i) { return x.index({i, torch::indexing::Slice(), i.flip(0)}); }, {5, 3, 5}, {4},
       -5, 5},
      // A computed piece is its own kernel: concat reads pieces as buffers.
      {"cat0", [](T x, T) { return torch::cat({x, x * 2, x.slice(0, 0, 1)}, 0); }, {4, 5}, {1}, 0, 1,
       2},
      {"cat1_fused", [](T x, T) { return torch::cat({x, x.flip(1)}, 1).relu(); }, {4, 5}, {1}, 0, 1},
      {"cat_empty_legacy",
       [](T x, T) { return torch::cat({x, torch::empty({0}, x.options()), x}, 1); }, {3, 2}, {1}, 0,
       1},
      {"stack0", [](T x, T) { return torch::stack({x, x + 1}, 0); }, {3, 4}, {1}, 0, 1, 2},
      {"stack_last", [](T x, T) { return torch::stack({x, x * 3, x}, 2); }, {3, 4}, {1}, 0, 1, 2},
      {"pad", [](T x, T) { return torch::constant_pad_nd(x, {1, 2, 0, 3}, 2); }, {3, 4}, {1}, 0, 1},
      {"pad_crop", [](T x, T) { return torch::constant_pad_nd(x, {-1, 2, 1, -2}); }, {5, 6}, {1}, 0,
       1},
      {"pad_3d", [](T x, T) { return torch::constant_pad_nd(x, {1, 1, 1, 1}) * 2; }, {2, 3, 4}, {1},
       0, 1},
  };
}

using tgc::test::rnd;

/// Data layouts: contiguous, transposed (same shape, other strides) and a
/// broadcast (expanded) tensor.
inline torch::Tensor layoutOf(const std::string &layout, std::vector<int64_t> shape, torch::ScalarType dt) {
  if (layout == "transposed") {
    std::vector<int64_t> rev(shape.rbegin(), shape.rend());
    std::vector<int64_t> perm;
    for (int64_t d = shape.size() - 1; d >= 0; --d)
      perm.push_back(d);
    return rnd(rev, dt).permute(perm);
  }
  if (layout == "broadcast") {
    std::vector<int64_t> one = shape;
    one[0] = 1;
    return rnd(one, dt).expand(shape);
  }
  return rnd(shape, dt);
}

} // namespace tgc::test::indexing

#endif
