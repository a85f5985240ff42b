// The pointwise op matrix: cases and input layouts, shared by the CPU e2e
// test (OpMatrixTest) and the emulated CUDA matrix (tests/emu).
#ifndef TGC_TESTS_E2E_OPMATRIXCASES_H
#define TGC_TESTS_E2E_OPMATRIXCASES_H

#include "tests/e2e/RandomTensors.h"

#include <torch/torch.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tgc::test::pointwise {

using Fn = std::function<torch::Tensor(torch::Tensor, torch::Tensor)>;

struct OpCase {
  std::string name;
  Fn fn;
  bool floatOnly = true;
  bool positive = false; ///< inputs must be positive (log, sqrt, pow)
  bool intOnly = false;  ///< integer and bool types only (bitwise ops)
  /// Tolerance for float16/bfloat16 results: one rounding of the result is
  /// 2^-8 relative; discontinuous ops (fmod) may round to the other side.
  double halfTol = 1e-2;
};

inline std::vector<OpCase> cases() {
  return {
      {"add", [](auto a, auto b) { return a + b * 2; }, false},
      {"sub_alpha", [](auto a, auto b) { return torch::sub(a, b, 3); }, false},
      {"mul", [](auto a, auto b) { return a * b; }, false},
      {"div", [](auto a, auto b) { return a / (b.abs() + 1); }},
      {"maximum", [](auto a, auto b) { return torch::maximum(a, b); }, false},
      {"minimum", [](auto a, auto b) { return torch::minimum(a, b); }, false},
      {"neg_abs", [](auto a, auto) { return -a.abs(); }, false},
      {"relu", [](auto a, auto) { return a.relu(); }, false},
      {"exp_log", [](auto a, auto) { return a.exp() + a.abs().log(); }},
      {"log1p_expm1", [](auto a, auto) { return a.abs().log1p() - a.expm1(); }},
      {"tanh_sigmoid", [](auto a, auto) { return a.tanh() * a.sigmoid(); }},
      {"sqrt_rsqrt", [](auto a, auto) { return a.sqrt() + a.rsqrt(); }, true, true},
      {"erf", [](auto a, auto) { return a.erf(); }},
      {"gelu", [](auto a, auto) { return torch::gelu(a); }},
      {"gelu_tanh", [](auto a, auto) { return torch::gelu(a, "tanh"); }},
      {"silu", [](auto a, auto) { return torch::silu(a); }},
      {"softplus", [](auto a, auto) { return torch::softplus(a * 8, 1.5, 10); }},
      {"mish", [](auto a, auto) { return torch::mish(a); }},
      // Scaled past -3 and 3, where both bend.
      {"hardswish_hardsigmoid", [](auto a, auto b) {
         return torch::hardswish(a * 4) + torch::hardsigmoid(b * 4) * 3;
       }},
      {"hardswish_inplace", [](auto a, auto) {
         auto t = a * 4, u = a * 5;
         return torch::hardswish_(t) - torch::hardsigmoid_(u);
       }},
      {"sin_cos", [](auto a, auto) { return a.sin() * a.cos(); }},
      {"pow2", [](auto a, auto) { return a.pow(2) + a.abs().pow(1.5); }},
      {"clamp", [](auto a, auto) { return a.clamp(-0.5, 0.7); }},
      {"leaky_relu", [](auto a, auto) { return torch::leaky_relu(a, 0.1); }},
      {"compare_where", [](auto a, auto b) { return torch::where(a > b, a, b * 2); }, false},
      {"compare_scalar", [](auto a, auto) { return (a >= 0.25).to(a.scalar_type()) + (a != a); }, false},
      {"masked_fill", [](auto a, auto b) { return a.masked_fill(b < 0, 7); }, false},
      {"cast", [](auto a, auto) { return a.to(torch::kInt).to(torch::kFloat) * 0.5; }},
      {"rounding", [](auto a, auto b) {
         return a.floor() + a.ceil() * 3 + (a * 2.5).round() + a.trunc() * 5;
       }},
      {"fmod_remainder", [](auto a, auto b) {
         // Integral divisors: exact in every float type, so fmod's jumps do not
         // depend on where an intermediate was rounded.
         auto d = b.abs().round() + 1;
         return torch::fmod(a * 3, d) + torch::remainder(a * 3, -d) * 2 + torch::remainder(a, 0.75);
       }},
      {"logical", [](auto a, auto b) {
         return torch::logical_and(a, b) ^ torch::logical_or(a > 0, b) ^ torch::logical_xor(a, b < 1) ^ torch::logical_not(a);
       }, false},
      {"bitwise", [](auto a, auto b) { return (a & b) | (a ^ 5) | (~b & 12); }, false, false, true},
      {"shifts", [](auto a, auto b) {
         // Shift amounts up to 40 include ones past int32's width (ATen: 0, or the sign).
         auto s = b.abs() * 2;
         return torch::bitwise_left_shift(a, s) + torch::bitwise_right_shift(a, s) + torch::bitwise_left_shift(a, 3);
       }, false, false, true},
  };
}

struct Layout {
  std::string name;
  std::function<std::pair<torch::Tensor, torch::Tensor>(torch::ScalarType)> make;
};

using tgc::test::rnd;

inline std::vector<Layout> layouts() {
  return {
      {"contiguous", [](auto dt) { return std::make_pair(rnd({6, 10}, dt), rnd({6, 10}, dt)); }},
      {"transposed", [](auto dt) { return std::make_pair(rnd({10, 6}, dt).t(), rnd({6, 10}, dt)); }},
      {"broadcast", [](auto dt) { return std::make_pair(rnd({6, 10}, dt), rnd({10}, dt)); }},
      {"zero_size", [](auto dt) { return std::make_pair(rnd({0, 10}, dt), rnd({0, 10}, dt)); }},
      {"zero_dim", [](auto dt) { return std::make_pair(rnd({}, dt), rnd({}, dt)); }},
  };
}

/// The cases ATen defines for bool tensors.
inline const std::set<std::string> &boolCases() {
  static const std::set<std::string> names = {"logical", "bitwise", "compare_where",
                                              "compare_scalar", "masked_fill", "maximum"};
  return names;
}

} // namespace tgc::test::pointwise

#endif
