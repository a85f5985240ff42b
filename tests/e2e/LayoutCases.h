// Layout-op cases (views, permutes, slices, flips), shared by LayoutOpsTest
// and the emulated CUDA matrix (tests/emu).
#ifndef TGC_TESTS_E2E_LAYOUTCASES_H
#define TGC_TESTS_E2E_LAYOUTCASES_H


#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace tgc::test::layouts {

using Fn = std::function<torch::Tensor(torch::Tensor)>;

struct LayoutCase {
  std::string name;
  Fn fn; ///< takes a [4, 6, 10] tensor (or a view of that shape)
};

inline std::vector<LayoutCase> cases() {
  return {
      {"permute", [](auto x) { return x.permute({2, 0, 1}) * 2; }},
      {"transpose", [](auto x) { return x.transpose(0, 2) + 1; }},
      {"t_of_select", [](auto x) { return x.select(0, 2).t() * 3; }},
      {"view_merge", [](auto x) { return x.view({24, 10}) + 1; }},
      {"reshape_split", [](auto x) { return x.reshape({4, 3, 2, 5, 2}) * 2; }},
      {"reshape_transposed", [](auto x) { return x.transpose(1, 2).reshape({40, 6}) + 1; }},
      {"flatten", [](auto x) { return x.flatten() - 1; }},
      {"unsqueeze_squeeze", [](auto x) { return x.unsqueeze(1).squeeze(1).unsqueeze(-1) * 2; }},
      {"expand", [](auto x) { return x.select(2, 3).unsqueeze(-1).expand({4, 6, 5}) + 1; }},
      {"slice", [](auto x) { return x.slice(2, 1, 9, 3) * 2; }},
      {"slice_negative", [](auto x) { return x.slice(1, -4, 100) + x.slice(1, 0, 4); }},
      {"select_negative", [](auto x) { return x.select(-1, -2) * 2; }},
      {"narrow_chunk", [](auto x) { auto c = x.chunk(2, 2); return c[0] - c[1]; }},
      {"flip", [](auto x) { return x.flip({0, 2}) * 2; }},
      {"flip_alone", [](auto x) { return x.flip({1}); }},
      {"mixed_chain", [](auto x) { return x.permute({1, 0, 2}).reshape({6, 40}).slice(1, 5, 35).flip({0}) * x.reshape({6, 40}).slice(1, 0, 30); }},
  };
}

} // namespace tgc::test::layouts

#endif
