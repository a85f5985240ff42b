// Reductions over any dims: cases shared by ReductionTest and the emulated
// CUDA matrix (tests/emu).
#ifndef TGC_TESTS_E2E_REDUCTIONCASES_H
#define TGC_TESTS_E2E_REDUCTIONCASES_H


#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace tgc::test::reductions {

using Fn = std::function<torch::Tensor(torch::Tensor)>;

struct ReductionCase {
  std::string name;
  Fn fn; ///< takes a [6, 5, 8] tensor
  bool floatOnly = true;
};

inline std::vector<ReductionCase> cases() {
  using torch::indexing::None;
  return {
      {"sum_last", [](auto x) { return x.sum(-1); }, false},
      {"sum_first", [](auto x) { return x.sum(0); }, false},
      {"sum_middle_keepdim", [](auto x) { return x.sum(1, true); }, false},
      {"sum_outer_two", [](auto x) { return x.sum(std::vector<int64_t>{0, 2}); }, false},
      {"sum_all", [](auto x) { return x.sum(); }, false},
      {"mean_first_keepdim", [](auto x) { return x.mean({0}, true); }},
      {"mean_all", [](auto x) { return x.mean(); }},
      {"prod_middle", [](auto x) { return (x * 0.5).prod(1); }},
      {"prod_int", [](auto x) { return ((x.abs() < 5).to(x.scalar_type()) + 1).prod(0); }, false},
      {"amax_first", [](auto x) { return x.amax(0); }, false},
      {"amin_two_keepdim", [](auto x) { return x.amin({0, 1}, true); }, false},
      {"var_last", [](auto x) { return x.var(-1); }},
      {"var_first_unbiased0", [](auto x) { return torch::var(x, {0}, 0, false); }},
      {"std_middle_keepdim", [](auto x) { return torch::std(x, {1}, 1, true); }},
      {"std_all", [](auto x) { return x.std(); }},
      {"var_mean", [](auto x) { auto [v, m] = torch::var_mean(x, {2}, 1, true); return v + m; }},
      {"logsumexp_last", [](auto x) { return torch::logsumexp(x, {-1}); }},
      {"logsumexp_first_keepdim", [](auto x) { return torch::logsumexp(x, {0}, true); }},
      {"norm2", [](auto x) { return torch::linalg_vector_norm(x, 2, {-1}); }},
      {"norm1_first", [](auto x) { return torch::linalg_vector_norm(x, 1, {0}); }},
      {"norm_inf", [](auto x) { return torch::linalg_vector_norm(x, INFINITY, {1, 2}); }},
      {"norm_3_all", [](auto x) { return torch::linalg_vector_norm(x, 3); }},
      {"norm_method", [](auto x) { return x.norm(2, {1}, true); }},
  };
}

} // namespace tgc::test::reductions

#endif
