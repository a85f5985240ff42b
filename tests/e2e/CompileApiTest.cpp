// tgc::compile's contract: signatures, specialization, semantics kept, fallbacks.
#include "tgc/tgc.h"

#include "runtime/Counters.h"
#include "tests/e2e/ExpectCompiled.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace {

using tgc::test::expectCompiled;

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
  tgc::reset();
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
  expectCompiled(2, 2);
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
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor i, torch::Tensor x) { return (i + x) * i; });
  torch::Tensor i = torch::randint(-5, 5, {3, 1}, torch::kLong);
  torch::Tensor x = torch::randn({1, 4});
  expectClose(f(i, x), (i + x) * i); // long + float -> float
  auto g = tgc::compile([](torch::Tensor a, torch::Tensor b) { return a * b - a; });
  torch::Tensor ia = torch::randint(-9, 9, {6}, torch::kInt), ib = torch::randint(-9, 9, {6}, torch::kInt);
  torch::Tensor got = g(ia, ib);
  EXPECT_TRUE(torch::equal(got, ia * ib - ia));
  expectCompiled(2, 2);
}

TEST(CompileApi, HalfTypesComputeInFloat) {
  torch::manual_seed(7);
  auto fn = [](torch::Tensor a, torch::Tensor b) { return torch::gelu(a * b + 1) - a.sigmoid(); };
  tgc::reset();
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    auto f = tgc::compile(fn);
    torch::Tensor a = torch::randn({8, 16}).to(dtype), b = torch::randn({16}).to(dtype);
    // tgc keeps intermediates in float (as Inductor does); the reference is
    // the same math in float32, rounded once to the half type.
    torch::Tensor want = fn(a.to(torch::kFloat), b.to(torch::kFloat)).to(dtype);
    expectClose(f(a, b), want);
  }
  expectCompiled(2, 2);
}

TEST(CompileApi, ZeroSizeAndZeroDim) {
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor a, torch::Tensor b) { return (a - b).abs().sqrt(); });
  torch::Tensor e = torch::randn({0, 5});
  expectClose(f(e, torch::randn({5})), (e - torch::randn({5})).abs().sqrt());
  torch::Tensor s = torch::randn({}), t = torch::randn({});
  expectClose(f(s, t), (s - t).abs().sqrt());
  expectCompiled(2, 1); // the empty one may launch nothing
}

TEST(CompileApi, CapturedParametersStayLive) {
  torch::Tensor w = torch::randn({3});
  tgc::reset();
  auto f = tgc::compile([&w](torch::Tensor x) { return x * w; });
  torch::Tensor x = torch::randn({2, 3});
  expectClose(f(x), x * w);
  w.mul_(3); // an optimizer step updates the parameter in place
  expectClose(f(x), x * w);
  expectCompiled(1, 2);
  EXPECT_EQ(tgc::stats().captures, 1) << "the update is seen by the replay";
}

TEST(CompileApi, RandomOpsDrawFreshValuesEachCall) {
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor x) { return x + torch::rand({64}); });
  torch::Tensor x = torch::zeros({64});
  torch::Tensor r1 = f(x), r2 = f(x);
  EXPECT_FALSE(torch::equal(r1, r2));
  EXPECT_TRUE((r1 >= 0).all().item<bool>() && (r1 < 1).all().item<bool>());
  expectCompiled(1, 2);
  EXPECT_EQ(tgc::stats().captures, 1) << "fresh values come from the replayed graph";
}

TEST(CompileApi, InPlaceOnInputsIsKept) {
  tgc::reset();
  auto f = tgc::compile([](torch::Tensor x) {
    x.add_(1);
    return x * 2;
  });
  torch::Tensor x = torch::randn({4}), ref = x.clone();
  torch::Tensor y = f(x);
  expectClose(x, ref + 1);
  expectClose(y, (ref + 1) * 2);
  expectCompiled(1, 1);
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

// --- Options: every field does what tgc.h says ----------------------------------

/// A fresh, empty directory under the test's temporary directory.
std::string freshDir(const std::string &name) {
  std::string dir = testing::TempDir() + "/tgc-api-" + name + "-" + std::to_string(::getpid());
  // (not fs::remove_all: LibTorch exports a broken copy of it)
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  return dir;
}

/// Entries of one layer ("graphs", "kernels") of a cache directory.
int entriesIn(const std::string &dir, const std::string &layer) {
  std::error_code ec;
  int n = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir + "/" + layer, ec))
    n += e.path().extension() == ".tgc";
  return n;
}

TEST(CompileOptions, CacheDirIsPerCallableAndLeavesTheEnvironmentAlone) {
  tgc::reset();
  const char *env = std::getenv("TGC_CACHE_DIR");
  std::string before = env ? env : "<unset>";
  auto fn = [](torch::Tensor a, torch::Tensor b) { return (a * b).sigmoid() + a; };
  tgc::Options oa, ob;
  oa.cache_dir = freshDir("a");
  ob.cache_dir = freshDir("b");
  auto fa = tgc::compile(fn, oa);
  auto fb = tgc::compile(fn, ob);
  torch::Tensor a = torch::randn({6, 5}), b = torch::randn({5});
  expectClose(fa(a, b), fn(a, b));
  expectClose(fb(a, b), fn(a, b));
  env = std::getenv("TGC_CACHE_DIR");
  EXPECT_EQ(env ? env : "<unset>", before) << "cache_dir must not set TGC_CACHE_DIR";
  // The same graph, compiled once per directory (not served from memory
  // across directories): each directory holds its graph and its kernels.
  for (const std::string &dir : {oa.cache_dir, ob.cache_dir}) {
    EXPECT_EQ(entriesIn(dir, "graphs"), 1) << dir;
    EXPECT_EQ(entriesIn(dir, "kernels"), 1) << dir;
  }
  EXPECT_EQ(tgc::stats().graphs_compiled, 2);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
  // A third callable on directory a: a memory hit, nothing compiled.
  auto fa2 = tgc::compile(fn, oa);
  expectClose(fa2(a, b), fn(a, b));
  EXPECT_EQ(tgc::stats().graphs_compiled, 2);
  EXPECT_EQ(tgc::stats().cache_hits_memory, 1);
}

TEST(CompileOptions, UnimplementedModesWarnOnceCompileAsDefaultAndKeyTheirGraphs) {
  // ReduceOverhead (CUDA graphs) is the mode not implemented yet.
  tgc::reset();
  auto fn = [](torch::Tensor x) { return (x * 3).tanh() - x; };
  torch::Tensor x = torch::randn({4, 7});
  std::string dir = freshDir("modes");
  auto withMode = [&](tgc::Mode m) {
    tgc::Options o;
    o.mode = m;
    o.cache_dir = dir;
    return tgc::compile(fn, o);
  };
  testing::internal::CaptureStderr();
  auto autotuned = withMode(tgc::Mode::ReduceOverhead);
  auto again = withMode(tgc::Mode::ReduceOverhead);
  auto plain = withMode(tgc::Mode::Default);
  expectClose(autotuned(x), fn(x));
  expectClose(again(x), fn(x));
  expectClose(plain(x), fn(x));
  std::string err = testing::internal::GetCapturedStderr();
  size_t first = err.find("mode reduce-overhead");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_NE(err.find("compiling as mode default", first), std::string::npos) << err;
  EXPECT_EQ(err.find("mode reduce-overhead", first + 1), std::string::npos) << "warns once: " << err;
  // Compiled (not eager), once per mode: the mode is part of the graph key.
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.kernel_launches, 3);
  EXPECT_EQ(s.graphs_compiled, 2);
  EXPECT_EQ(s.pipelines_run, 2);
  EXPECT_EQ(entriesIn(dir, "graphs"), 2);
}

TEST(CompileOptions, DynamicShapesAreRejectedUntilImplemented) {
  tgc::Options o;
  o.dynamic = true;
  auto fn = [](torch::Tensor x) { return x + 1; };
  try {
    tgc::compile(fn, o);
    FAIL() << "dynamic = true must not silently specialize";
  } catch (const std::invalid_argument &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("dynamic"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not implemented"), std::string::npos) << msg;
  }
}

TEST(CompileOptions, BackendMustMatchTheInputsDevice) {
  tgc::reset();
  auto fn = [](torch::Tensor x) { return x.exp() * 2; };
  torch::Tensor x = torch::randn({3, 4});
  tgc::Options cuda;
  cuda.backend = tgc::Backend::Cuda;
  auto onCuda = tgc::compile(fn, cuda);
  try {
    onCuda(x);
    FAIL() << "a CPU input with backend = Cuda must be an error";
  } catch (const std::invalid_argument &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("backend"), std::string::npos) << msg;
    EXPECT_NE(msg.find("input 0 is on cpu"), std::string::npos) << msg;
  }
  tgc::Options cpu;
  cpu.backend = tgc::Backend::Cpu;
  auto onCpu = tgc::compile(fn, cpu);
  expectClose(onCpu(x), fn(x));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graphs_compiled, 1);
  EXPECT_EQ(s.kernel_launches, 1);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

// --- Stats: declared once (tgc/Counters.def) ------------------------------------

TEST(Stats, ResetZeroesEveryCounterAndStatsReadsEachOne) {
  // Counter k holds k + 1: stats() must map every member to its own field.
  int64_t k = 0;
#define TGC_COUNTER(name, member, doc) tgc::counters().member = ++k;
#include "tgc/Counters.def"
  tgc::Stats s = tgc::stats();
  std::string text = s.str();
  k = 0;
#define TGC_COUNTER(name, member, doc)                                                  \
  EXPECT_EQ(s.name, ++k) << #name;                                                      \
  EXPECT_NE(text.find(std::string(#name) + " " + std::to_string(k) + "  ("), std::string::npos) \
      << text;
#include "tgc/Counters.def"
  tgc::reset();
  s = tgc::stats();
#define TGC_COUNTER(name, member, doc) EXPECT_EQ(s.name, 0) << #name << " survives reset()";
#include "tgc/Counters.def"
}

TEST(Stats, LogStatsPrintsEveryCounterAtExit) {
  // The child re-runs this binary for this test alone (LibTorch has threads).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TGC_LOG", "stats", 1);
        tgc::reset();
        auto f = tgc::compile([](torch::Tensor x) { return x * 2; });
        f(torch::randn({3}));
        std::exit(0);
      },
      testing::ExitedWithCode(0),
      "\\[tgc:stats\\] counters at exit:.*graphs_compiled 1 .*kernel_launches 1 .*recomputed_ops 0");
}

} // namespace
