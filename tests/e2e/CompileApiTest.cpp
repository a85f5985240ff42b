// tgc::compile's contract: signatures, specialization, semantics kept, fallbacks.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  double tol = want.scalar_type() == torch::kHalf || want.scalar_type() == torch::kBFloat16
                   ? 1e-2
                   : 1e-5;
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol))
      << "max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
}

TEST(CompileApi, TupleAndVectorResults) {
  auto tup = tgc::compile([](torch::Tensor a) { return std::make_tuple(a.exp(), a.neg()); });
  auto vec = tgc::compile([](torch::Tensor a) { return std::vector<torch::Tensor>{a.tanh(), a * 2}; });
  torch::Tensor a = torch::randn({5, 3});
  auto [e, n] = tup(a);
  expectClose(e, a.exp());
  expectClose(n, a.neg());
  auto v = vec(a);
  ASSERT_EQ(v.size(), 2u);
  expectClose(v[0], a.tanh());
  expectClose(v[1], a * 2);
}

TEST(CompileApi, ScalarArgumentsAreSpecializedByValue) {
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor a, double s, int64_t k) { return a * s + k; });
  torch::Tensor a = torch::randn({4});
  expectClose(f(a, 2.5, 3), a * 2.5 + 3);
  expectClose(f(a, -1.0, 7), a * -1.0 + 7);
  expectClose(f(a, 2.5, 3), a * 2.5 + 3);
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 2);
  EXPECT_EQ(s.recompiles, 1);
  EXPECT_EQ(s.cache_hits_memory, 1);
}

TEST(CompileApi, TypePromotionAndBroadcasting) {
  auto f = tgc::compile([](torch::Tensor i, torch::Tensor x) { return (i + x) * i; });
  torch::Tensor i = torch::randint(-5, 5, {3, 1}, torch::kLong);
  torch::Tensor x = torch::randn({1, 4});
  expectClose(f(i, x), (i + x) * i); // long + float -> float
  auto g = tgc::compile([](torch::Tensor a, torch::Tensor b) { return a * b - a; });
  torch::Tensor ia = torch::randint(-9, 9, {6}, torch::kInt), ib = torch::randint(-9, 9, {6}, torch::kInt);
  torch::Tensor got = g(ia, ib);
  EXPECT_TRUE(torch::equal(got, ia * ib - ia));
}

TEST(CompileApi, HalfTypesComputeInFloat) {
  torch::manual_seed(7);
  auto fn = [](torch::Tensor a, torch::Tensor b) { return torch::gelu(a * b + 1) - a.sigmoid(); };
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    auto f = tgc::compile(fn);
    torch::Tensor a = torch::randn({8, 16}).to(dtype), b = torch::randn({16}).to(dtype);
    // tgc keeps intermediates in float (as Inductor does); the reference is
    // the same math in float32, rounded once to the half type.
    torch::Tensor want = fn(a.to(torch::kFloat), b.to(torch::kFloat)).to(dtype);
    expectClose(f(a, b), want);
  }
}

TEST(CompileApi, ZeroSizeAndZeroDim) {
  auto f = tgc::compile([](torch::Tensor a, torch::Tensor b) { return (a - b).abs().sqrt(); });
  torch::Tensor e = torch::randn({0, 5});
  expectClose(f(e, torch::randn({5})), (e - torch::randn({5})).abs().sqrt());
  torch::Tensor s = torch::randn({}), t = torch::randn({});
  expectClose(f(s, t), (s - t).abs().sqrt());
}

TEST(CompileApi, CapturedParametersStayLive) {
  torch::Tensor w = torch::randn({3});
  auto f = tgc::compile([&w](torch::Tensor x) { return x * w; });
  torch::Tensor x = torch::randn({2, 3});
  expectClose(f(x), x * w);
  w.mul_(3); // an optimizer step updates the parameter in place
  expectClose(f(x), x * w);
}

TEST(CompileApi, RandomOpsDrawFreshValuesEachCall) {
  auto f = tgc::compile([](torch::Tensor x) { return x + torch::rand({64}); });
  torch::Tensor x = torch::zeros({64});
  torch::Tensor r1 = f(x), r2 = f(x);
  EXPECT_FALSE(torch::equal(r1, r2));
  EXPECT_TRUE((r1 >= 0).all().item<bool>() && (r1 < 1).all().item<bool>());
}

TEST(CompileApi, InPlaceOnInputsIsKept) {
  auto f = tgc::compile([](torch::Tensor x) {
    x.add_(1);
    return x * 2;
  });
  torch::Tensor x = torch::randn({4}), ref = x.clone();
  torch::Tensor y = f(x);
  expectClose(x, ref + 1);
  expectClose(y, (ref + 1) * 2);
}

TEST(CompileApi, HostValueBreaksTheGraphAndResumes) {
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor x) {
    return x.sum().item<float>() > 0 ? x.exp() : x.neg();
  });
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({6});
    torch::Tensor want = x.sum().item<float>() > 0 ? x.exp() : x.neg();
    expectClose(f(x), want);
  }
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.graph_breaks, 3); // one per call
  EXPECT_LE(s.graphs_compiled, 3); // sum; exp; neg - each compiled once
}

TEST(CompileApi, FullgraphTurnsABreakIntoAnError) {
  tgc::Options opts;
  opts.fullgraph = true;
  auto f = tgc::compile([](torch::Tensor x) { return x * x.max().item<float>(); }, opts);
  try {
    f(torch::randn({3}));
    FAIL() << "expected an error";
  } catch (const c10::Error &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("graph break"), std::string::npos) << msg;
    EXPECT_NE(msg.find("_local_scalar_dense"), std::string::npos) << msg;
  }
}

TEST(CompileApi, RecompileLimitRunsEagerlyAfterwards) {
  tgc::reset();
  tgc::Options opts;
  opts.recompile_limit = 2;
  auto f = tgc::compile([](torch::Tensor x) { return x + 1; }, opts);
  for (int n = 1; n <= 4; ++n) {
    torch::Tensor x = torch::randn({n});
    expectClose(f(x), x + 1);
  }
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 2);
  EXPECT_EQ(s.eager_fallbacks, 2);
}

TEST(CompileApi, ExternOpsAndFusedKernelsTogether) {
  tgc::reset();
  torch::NoGradGuard noGrad;
  torch::nn::Linear lin(16, 8);
  auto fn = [&](torch::Tensor x) { return torch::relu(lin(x)) * 2 + 1; };
  auto f = tgc::compile(fn);
  torch::Tensor x = torch::randn({4, 16});
  expectClose(f(x), fn(x));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.kernel_launches, 1); // relu, *2, +1 fused after the addmm
  EXPECT_GE(s.extern_calls, 1);
}

} // namespace
