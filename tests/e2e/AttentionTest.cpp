// Attention (issue 17, point 5): attention spelled out as matmul, scale,
// masks, softmax and matmul (as traced Swin, Hugging Face "eager" attention
// and hand-written blocks have it) compiles to one ATen SDPA call, compared
// with eager on random inputs; patterns that must stay as they are do.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  torch::Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  ASSERT_TRUE(torch::isfinite(w).all().item<bool>()) << "the eager result itself is not finite";
  double scale = std::max(1.0, w.abs().max().item<double>());
  double err = (g - w).abs().max().item<double>();
  EXPECT_LE(err, tol * scale) << "max error " << err << " (max |x| " << scale << ")";
}

/// Compiles with a debug dump and a fresh cache of its own, so the plan of
/// every graph it compiles can be read back.
class Dumped {
public:
  explicit Dumped(const std::string &name)
      : dir_(testing::TempDir() + "/attention_" + name + "_" + std::to_string(getpid())) {
    std::filesystem::remove_all(dir_);
    setenv("TGC_DEBUG_DIR", dir_.c_str(), 1);
    tgc::reset();
  }
  ~Dumped() { unsetenv("TGC_DEBUG_DIR"); }
  tgc::Options options(bool fuse = true) const {
    tgc::Options o;
    o.cache_dir = dir_ + "/cache";
    o.fuse_attention = fuse;
    return o;
  }
  /// Every plan compiled so far, as text.
  std::string plans() const {
    std::string text;
    if (!std::filesystem::exists(dir_))
      return text;
    for (const auto &f : std::filesystem::directory_iterator(dir_))
      if (f.path().string().size() > 9 &&
          f.path().string().compare(f.path().string().size() - 9, 9, ".plan.txt") == 0) {
        std::ifstream in(f.path());
        std::stringstream ss;
        ss << in.rdbuf();
        text += ss.str();
      }
    return text;
  }

private:
  std::string dir_;
};

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    n++;
  return n;
}

const char *kFlash = "extern aten::_scaled_dot_product_flash_attention_for_cpu";

/// Hugging Face's eager attention: projections of x viewed as [b, h, l, e]
/// by transpose (not contiguous), q k^T / sqrt(e) + mask, softmax, times v,
/// and the heads merged back.
torch::Tensor hfAttention(torch::Tensor x, torch::Tensor wq, torch::Tensor wk, torch::Tensor wv,
                          torch::Tensor mask, int64_t heads) {
  const int64_t b = x.size(0), l = x.size(1), d = x.size(2), e = d / heads;
  auto split = [&](torch::Tensor t) { return t.view({b, l, heads, e}).transpose(1, 2); };
  torch::Tensor q = split(torch::matmul(x, wq)), k = split(torch::matmul(x, wk)),
                v = split(torch::matmul(x, wv));
  torch::Tensor s = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(e));
  if (mask.defined())
    s = s + mask;
  torch::Tensor p = torch::softmax(s, -1);
  return torch::matmul(p, v).transpose(1, 2).reshape({b, l, d});
}

struct HfCase {
  const char *name;
  std::vector<int64_t> maskShape; ///< empty: no mask
};

class HfMasks : public testing::TestWithParam<HfCase> {};

TEST_P(HfMasks, DecomposedAttentionIsOneFlashCallAndMatchesEager) {
  const HfCase &c = GetParam();
  torch::NoGradGuard noGrad;
  torch::manual_seed(3);
  const int64_t b = 2, l = 7, d = 32, h = 4;
  torch::Tensor x = torch::randn({b, l, d});
  torch::Tensor wq = torch::randn({d, d}) * 0.3, wk = torch::randn({d, d}) * 0.3,
                wv = torch::randn({d, d});
  torch::Tensor mask;
  if (!c.maskShape.empty()) {
    mask = torch::randn(c.maskShape);
    // Masked-out keys as Hugging Face spells them: a large negative.
    mask.masked_fill_(torch::rand(c.maskShape) < 0.25, -1e4);
  }
  Dumped dump(c.name);
  auto f = tgc::compile([](torch::Tensor x, torch::Tensor wq, torch::Tensor wk, torch::Tensor wv,
                           torch::Tensor m) { return hfAttention(x, wq, wk, wv, m, 4); },
                        dump.options());
  auto g =
      tgc::compile([](torch::Tensor x, torch::Tensor wq, torch::Tensor wk,
                      torch::Tensor wv) { return hfAttention(x, wq, wk, wv, torch::Tensor(), 4); },
                   dump.options());
  torch::Tensor got = mask.defined() ? f(x, wq, wk, wv, mask) : g(x, wq, wk, wv);
  expectClose(got, hfAttention(x, wq, wk, wv, mask, h), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
  std::string plans = dump.plans();
  EXPECT_EQ(count(plans, kFlash), 1u) << plans;
  EXPECT_EQ(count(plans, "extern aten::bmm"), 0u) << plans;
  EXPECT_EQ(count(plans, "_softmax"), 0u) << plans;
  // Replays, on new values: the SDPA call is a typed one, like the mms.
  for (int i = 0; i < 2; ++i) {
    torch::Tensor y = torch::randn({b, l, d});
    int64_t boxed = tgc::stats().boxed_calls, calls = tgc::stats().extern_calls;
    torch::Tensor r = mask.defined() ? f(y, wq, wk, wv, mask) : g(y, wq, wk, wv);
    EXPECT_EQ(tgc::stats().boxed_calls, boxed) << tgc::stats().str();
    EXPECT_GE(tgc::stats().extern_calls, calls + 4) << "3 projections and SDPA";
    expectClose(r, hfAttention(y, wq, wk, wv, mask, h), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Attention, HfMasks,
                         testing::Values(HfCase{"nomask", {}},
                                         HfCase{"padding", {2, 1, 1, 7}}, // [b, 1, 1, s]
                                         HfCase{"bias", {1, 4, 7, 7}},    // [1, h, l, s]
                                         HfCase{"full", {2, 4, 7, 7}},    // [b, h, l, s]
                                         HfCase{"square", {7, 7}},        // [l, s]
                                         HfCase{"row", {7}}),             // [s]
                         [](const testing::TestParamInfo<HfCase> &i) { return i.param.name; });

TEST(Attention, ACausalMaskOfMinusInfinityMatchesEager) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(4);
  const int64_t b = 1, l = 9, d = 16;
  torch::Tensor x = torch::randn({b, l, d});
  torch::Tensor wq = torch::randn({d, d}) * 0.3, wk = torch::randn({d, d}) * 0.3,
                wv = torch::randn({d, d});
  torch::Tensor causal =
      torch::full({l, l}, -INFINITY).triu(1); // -inf above the diagonal, 0 elsewhere
  Dumped dump("causal");
  auto f = tgc::compile([](torch::Tensor x, torch::Tensor wq, torch::Tensor wk, torch::Tensor wv,
                           torch::Tensor m) { return hfAttention(x, wq, wk, wv, m, 2); },
                        dump.options());
  expectClose(f(x, wq, wk, wv, causal), hfAttention(x, wq, wk, wv, causal, 2), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
}

/// torchvision's Swin: q scaled before q k^T, a relative position bias
/// [1, h, n, n] added, and for shifted windows the scores viewed 5-d to add
/// the window mask [1, nw, 1, n, n], then viewed back.
torch::Tensor swinAttention(torch::Tensor qkv, torch::Tensor bias, torch::Tensor windowMask,
                            int64_t heads) {
  const int64_t bw = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3, e = c / heads;
  torch::Tensor t = qkv.reshape({bw, n, 3, heads, e}).permute({2, 0, 3, 1, 4});
  torch::Tensor q = t[0], k = t[1], v = t[2];
  q = q * std::pow(double(e), -0.5);
  torch::Tensor a = q.matmul(k.transpose(-2, -1));
  a = a + bias;
  if (windowMask.defined()) {
    const int64_t nw = windowMask.size(0);
    a = a.view({bw / nw, nw, heads, n, n});
    a = a + windowMask.unsqueeze(1).unsqueeze(0);
    a = a.view({-1, heads, n, n});
  }
  a = torch::softmax(a, -1);
  return a.matmul(v).transpose(1, 2).reshape({bw, n, c});
}

TEST(Attention, SwinShiftedWindowsPassTheirMasksAsOne) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(5);
  const int64_t nw = 4, bw = 2 * nw, n = 16, heads = 2, c = 48;
  torch::Tensor qkv = torch::randn({bw, n, 3 * c});
  torch::Tensor bias = torch::randn({1, heads, n, n});
  torch::Tensor windowMask = torch::zeros({nw, n, n});
  windowMask.masked_fill_(torch::rand({nw, n, n}) < 0.3, -100.0); // Swin's -100
  Dumped dump("swin");
  auto shifted = tgc::compile([](torch::Tensor qkv, torch::Tensor bias,
                                 torch::Tensor m) { return swinAttention(qkv, bias, m, 2); },
                              dump.options());
  auto plain =
      tgc::compile([](torch::Tensor qkv,
                      torch::Tensor bias) { return swinAttention(qkv, bias, torch::Tensor(), 2); },
                   dump.options());
  expectClose(shifted(qkv, bias, windowMask), swinAttention(qkv, bias, windowMask, heads), 1e-5);
  expectClose(plain(qkv, bias), swinAttention(qkv, bias, torch::Tensor(), heads), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 2) << tgc::stats().str();
  std::string plans = dump.plans();
  EXPECT_EQ(count(plans, kFlash), 2u) << plans;
  EXPECT_EQ(count(plans, "extern aten::bmm"), 0u) << plans;
  torch::Tensor qkv2 = torch::randn({bw, n, 3 * c});
  expectClose(shifted(qkv2, bias, windowMask), swinAttention(qkv2, bias, windowMask, heads), 1e-5);
}

TEST(Attention, ThreeDimensionalBmmsWithAScaleAfterTheMaskMatchEager) {
  // (q k^T + mask) * scale: the mask is scaled too, so it is computed by
  // the same chain (from zeros), not passed as it is.
  torch::NoGradGuard noGrad;
  torch::manual_seed(6);
  auto attn = [](torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor m) {
    torch::Tensor s = (torch::bmm(q, k.transpose(1, 2)) + m) * 0.25;
    return torch::bmm(torch::softmax(s, 2), v);
  };
  torch::Tensor q = torch::randn({6, 5, 8}), k = torch::randn({6, 11, 8}),
                v = torch::randn({6, 11, 8}), m = torch::randn({5, 11});
  Dumped dump("bmm3d");
  auto f = tgc::compile(attn, dump.options());
  expectClose(f(q, k, v, m), attn(q, k, v, m), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
  EXPECT_EQ(count(dump.plans(), "extern aten::bmm"), 0u) << dump.plans();
  // q as a transposed view (its last dim strided) and k^T given as it is
  // (no k behind it): not what SDPA takes, so the bmms stay, and the
  // result is still eager's.
  auto g = tgc::compile(
      [](torch::Tensor qt, torch::Tensor kt, torch::Tensor v) {
        return torch::bmm(torch::softmax(torch::bmm(qt.transpose(1, 2), kt) * 0.5, -1), v);
      },
      dump.options());
  torch::Tensor qt = torch::randn({6, 8, 5}), kt = torch::randn({6, 8, 11});
  expectClose(g(qt, kt, v),
              torch::bmm(torch::softmax(torch::bmm(qt.transpose(1, 2), kt) * 0.5, -1), v), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
  EXPECT_EQ(count(dump.plans(), "extern aten::bmm"), 2u) << dump.plans();
  // v with another head size than q and k: ATen's CPU flash kernel does not
  // take it, so the bmms stay.
  torch::Tensor v12 = torch::randn({6, 11, 12});
  expectClose(f(q, k, v12, m), attn(q, k, v12, m), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
  EXPECT_EQ(count(dump.plans(), "extern aten::bmm"), 4u) << dump.plans();
}

TEST(Attention, BFloat16MatchesEagerWithinItsPrecision) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(7);
  const int64_t b = 2, l = 12, d = 32;
  torch::Tensor x = torch::randn({b, l, d}).to(torch::kBFloat16);
  torch::Tensor wq = (torch::randn({d, d}) * 0.2).to(torch::kBFloat16),
                wk = (torch::randn({d, d}) * 0.2).to(torch::kBFloat16),
                wv = torch::randn({d, d}).to(torch::kBFloat16);
  torch::Tensor mask = torch::randn({b, 1, 1, l}).to(torch::kBFloat16);
  Dumped dump("bf16");
  auto f = tgc::compile([](torch::Tensor x, torch::Tensor wq, torch::Tensor wk, torch::Tensor wv,
                           torch::Tensor m) { return hfAttention(x, wq, wk, wv, m, 4); },
                        dump.options());
  torch::Tensor got = f(x, wq, wk, wv, mask);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  // Against an f32 run of the same bf16 values: bf16's rounding of the
  // intermediates, a few units of its 2^-8 precision.
  torch::Tensor want = hfAttention(x.to(torch::kFloat), wq.to(torch::kFloat), wk.to(torch::kFloat),
                                   wv.to(torch::kFloat), mask.to(torch::kFloat), 4);
  expectClose(got.to(torch::kFloat), want, 3e-2);
  EXPECT_EQ(tgc::stats().fused_attentions, 1) << tgc::stats().str();
}

TEST(Attention, ProbabilitiesThatAreReadElsewhereKeepTheDecomposedForm) {
  // Returning the attention weights (output_attentions=True), or a score
  // read twice: SDPA does not expose them, so nothing is fused.
  torch::NoGradGuard noGrad;
  torch::manual_seed(8);
  auto withWeights = [](torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    torch::Tensor p = torch::softmax(torch::matmul(q, k.transpose(-1, -2)) * 0.3, -1);
    return std::make_tuple(torch::matmul(p, v), p);
  };
  auto scoresTwice = [](torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    torch::Tensor s = torch::matmul(q, k.transpose(-1, -2));
    return torch::matmul(torch::softmax(s, -1), v) + s.sum(-1, true);
  };
  auto notLastDim = [](torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    torch::Tensor s = torch::matmul(q, k.transpose(-1, -2));
    return torch::matmul(torch::softmax(s, -2), v);
  };
  torch::Tensor q = torch::randn({2, 3, 6, 8}), k = torch::randn({2, 3, 6, 8}),
                v = torch::randn({2, 3, 6, 8});
  Dumped dump("kept");
  auto f = tgc::compile(withWeights, dump.options());
  auto [o, p] = f(q, k, v);
  auto [eo, ep] = withWeights(q, k, v);
  expectClose(o, eo, 1e-5);
  expectClose(p, ep, 1e-5);
  auto g = tgc::compile(scoresTwice, dump.options());
  expectClose(g(q, k, v), scoresTwice(q, k, v), 1e-5);
  auto h = tgc::compile(notLastDim, dump.options());
  expectClose(h(q, k, v), notLastDim(q, k, v), 1e-5);
  // An empty sequence: eager's empty result, nothing for SDPA.
  auto e = tgc::compile(withWeights, dump.options());
  torch::Tensor q0 = torch::randn({2, 3, 0, 8});
  auto [o0, p0] = e(q0, k, v);
  EXPECT_EQ(o0.sizes(), (std::vector<int64_t>{2, 3, 0, 8}));
  EXPECT_EQ(p0.sizes(), (std::vector<int64_t>{2, 3, 0, 6}));
  EXPECT_EQ(tgc::stats().fused_attentions, 0) << tgc::stats().str();
  EXPECT_EQ(count(dump.plans(), kFlash), 0u) << dump.plans();
}

TEST(Attention, AnEmptyKeySequenceIsLeftToTheDecomposedOps) {
  torch::NoGradGuard noGrad;
  auto attn = [](torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    return torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-1, -2)), -1), v);
  };
  torch::Tensor q = torch::randn({1, 2, 4, 8}), k = torch::randn({1, 2, 0, 8}),
                v = torch::randn({1, 2, 0, 8});
  Dumped dump("empty");
  auto f = tgc::compile(attn, dump.options());
  torch::Tensor got = f(q, k, v);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{1, 2, 4, 8}));
  // Softmax over no keys sums nothing: eager returns zeros here.
  EXPECT_TRUE(torch::equal(got, attn(q, k, v)));
  EXPECT_EQ(tgc::stats().fused_attentions, 0) << tgc::stats().str();
}

TEST(Attention, OptionsFuseAttentionFalseKeepsTheBmms) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(9);
  torch::Tensor x = torch::randn({1, 5, 16});
  torch::Tensor wq = torch::randn({16, 16}) * 0.3, wk = torch::randn({16, 16}) * 0.3,
                wv = torch::randn({16, 16});
  Dumped dump("off");
  auto f =
      tgc::compile([](torch::Tensor x, torch::Tensor wq, torch::Tensor wk,
                      torch::Tensor wv) { return hfAttention(x, wq, wk, wv, torch::Tensor(), 2); },
                   dump.options(/*fuse=*/false));
  expectClose(f(x, wq, wk, wv), hfAttention(x, wq, wk, wv, torch::Tensor(), 2), 1e-5);
  EXPECT_EQ(tgc::stats().fused_attentions, 0);
  EXPECT_EQ(count(dump.plans(), "extern aten::bmm"), 2u) << dump.plans();
}

TEST(Attention, TrainingGraphsKeepTheDecomposedFormAndTheirGradients) {
  // SDPA's backward is not the bmms': graphs that need gradients are left
  // as traced.
  torch::manual_seed(10);
  auto attn = [](torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    return torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-1, -2)) * 0.35, -1), v);
  };
  torch::Tensor q = torch::randn({2, 2, 5, 8}, torch::requires_grad()),
                k = torch::randn({2, 2, 5, 8}, torch::requires_grad()),
                v = torch::randn({2, 2, 5, 8}, torch::requires_grad());
  Dumped dump("training");
  auto f = tgc::compile(attn, dump.options());
  torch::Tensor got = f(q, k, v);
  got.sum().backward();
  std::vector<torch::Tensor> grads = {q.grad().clone(), k.grad().clone(), v.grad().clone()};
  for (auto *t : {&q, &k, &v})
    t->mutable_grad().reset();
  torch::Tensor want = attn(q, k, v);
  want.sum().backward();
  expectClose(got.detach(), want.detach(), 1e-5);
  expectClose(grads[0], q.grad(), 1e-4);
  expectClose(grads[1], k.grad(), 1e-4);
  expectClose(grads[2], v.grad(), 1e-4);
  EXPECT_EQ(tgc::stats().fused_attentions, 0) << tgc::stats().str();
}

} // namespace
