// Mode::MaxAutotune (issue 18, points 1, 2 and 5 on the CPU): candidates are
// checked against the reference before they may win, timed, and the choice
// persists in the autotune layer of the cache, so a later compilation
// benchmarks nothing.
#include "compiler/autotune/Autotune.h"
#include "runtime/ArtifactCache.h"
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace {

namespace fs = std::filesystem;
using tgc::autotune::Candidate;

std::string freshDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("tgc-autotune-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

size_t entriesIn(const std::string &dir, const std::string &layer) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(fs::path(dir) / layer, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    n++;
  return n;
}

/// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  const char *name_;
  std::optional<std::string> old_;
};

void spin(std::chrono::microseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST(AutotuneMatch, ToleranceIsDtypeAwareAndShapesDtypesAndNaNsCount) {
  torch::Tensor ref = torch::randn({8, 9});
  std::string why;
  EXPECT_TRUE(tgc::autotune::matches(ref + 1e-6, ref, why)) << why;
  EXPECT_FALSE(tgc::autotune::matches(ref + 1e-2 * ref.abs().max(), ref, why));
  EXPECT_NE(why.find("differs from the reference"), std::string::npos) << why;
  EXPECT_FALSE(tgc::autotune::matches(ref.t(), ref, why));
  EXPECT_NE(why.find("shape"), std::string::npos) << why;
  EXPECT_FALSE(tgc::autotune::matches(ref.to(torch::kDouble), ref, why));
  EXPECT_NE(why.find("dtype"), std::string::npos) << why;
  torch::Tensor nan = ref.clone();
  nan[3][4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(tgc::autotune::matches(nan, ref, why));
  EXPECT_NE(why.find("non-finite"), std::string::npos) << why;
  // bf16: a rounding step of the largest value passes, 10% does not.
  torch::Tensor r16 = ref.to(torch::kBFloat16);
  EXPECT_TRUE(tgc::autotune::matches((ref * 1.004).to(torch::kBFloat16), r16, why)) << why;
  EXPECT_FALSE(tgc::autotune::matches((ref * 1.1).to(torch::kBFloat16), r16, why));
}

TEST(AutotuneSession, WrongAndFailingCandidatesNeverWinAndTheChoicePersists) {
  std::string dir = freshDir("session");
  tgc::ArtifactCache &cache = tgc::ArtifactCache::forDirectory(dir);
  torch::Tensor x = torch::randn({64, 64});
  torch::Tensor want = x.mm(x);
  int made = 0;
  auto make = [&] {
    made++;
    std::vector<Candidate> cs;
    cs.push_back({"reference", [&] {
                    spin(std::chrono::microseconds(2000));
                    return x.mm(x);
                  }});
    cs.push_back({"wrong-but-fast", [&] { return want + 1; }});
    cs.push_back({"throws", [&]() -> torch::Tensor { throw std::runtime_error("no kernel for this"); }});
    cs.push_back({"good", [&] {
                    spin(std::chrono::microseconds(300));
                    return x.mm(x);
                  }});
    return cs;
  };
  ScopedEnv log("TGC_LOG", "autotune");
  testing::internal::CaptureStderr();
  int64_t before = tgc::stats().autotune_benchmarks;
  std::string choice;
  {
    tgc::autotune::Session s(cache);
    choice = s.choose("test problem mm 64", "mm 64", make, "reference");
    // Met again in the same graph: answered from the session.
    EXPECT_EQ(s.choose("test problem mm 64", "mm 64", make, "reference"), "good");
    EXPECT_EQ(s.benchmarked(), 1);
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(choice, "good") << err;
  EXPECT_EQ(made, 1);
  EXPECT_EQ(tgc::stats().autotune_benchmarks - before, 4) << "each candidate ran and was checked";
  EXPECT_NE(err.find("wrong-but-fast disqualified: differs from the reference"), std::string::npos)
      << err;
  EXPECT_NE(err.find("throws disqualified: failed: no kernel for this"), std::string::npos) << err;
  EXPECT_NE(err.find("good "), std::string::npos) << err;
  EXPECT_NE(err.find("(chosen)"), std::string::npos) << err;
  EXPECT_NE(err.find("reference "), std::string::npos) << err;
  EXPECT_EQ(entriesIn(dir, "autotune"), 1u);
  // A new session (a later graph or process) reads the choice and runs nothing.
  before = tgc::stats().autotune_benchmarks;
  tgc::autotune::Session again(cache);
  EXPECT_EQ(again.choose("test problem mm 64", "mm 64", make, "reference"), "good");
  EXPECT_EQ(made, 1);
  EXPECT_EQ(again.cached(), 1);
  EXPECT_EQ(tgc::stats().autotune_benchmarks - before, 0);
  // Another problem is another key.
  EXPECT_NE(tgc::autotune::problemKey("test problem mm 64"),
            tgc::autotune::problemKey("test problem mm 65"));
}

TEST(AutotuneSession, NothingQualifiesOrBudgetSpentGivesTheDefaultUnstored) {
  std::string dir = freshDir("budget");
  tgc::ArtifactCache &cache = tgc::ArtifactCache::forDirectory(dir);
  int made = 0;
  {
    ScopedEnv budget("TGC_AUTOTUNE_BUDGET_S", "0");
    tgc::autotune::Session s(cache);
    spin(std::chrono::microseconds(100));
    auto make = [&] {
      made++;
      return std::vector<Candidate>{};
    };
    EXPECT_EQ(s.choose("budget problem", "budget", make, "fallback"), "fallback");
    EXPECT_EQ(made, 0) << "nothing is benchmarked once the budget is spent";
  }
  {
    tgc::autotune::Session s(cache);
    auto make = [&] {
      made++;
      std::vector<Candidate> cs;
      cs.push_back({"reference", []() -> torch::Tensor { throw std::runtime_error("broken"); }});
      cs.push_back({"other", [] { return torch::ones({2}); }});
      return cs;
    };
    EXPECT_EQ(s.choose("broken problem", "broken", make, "fallback"), "fallback");
    EXPECT_EQ(made, 1);
  }
  EXPECT_EQ(entriesIn(dir, "autotune"), 0u) << "untuned choices are not stored";
}

/// Conv-BN-ReLU, a residual block, a 1x1 SiLU convolution and two linear
/// layers with GELU between them: every kind of problem freezing tunes.
struct TunedNetImpl : torch::nn::Module {
  TunedNetImpl()
      : c1(register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        b1(register_module("b1", torch::nn::BatchNorm2d(16))),
        c2(register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).padding(1).bias(false)))),
        b2(register_module("b2", torch::nn::BatchNorm2d(16))),
        c3(register_module("c3", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 24, 1)))),
        f1(register_module("f1", torch::nn::Linear(24, 96))),
        f2(register_module("f2", torch::nn::Linear(96, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = torch::relu(b1(c1(x)));
    y = torch::relu(b2(c2(y)) + y);
    y = torch::silu(c3(y));
    y = torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1);
    return f2(torch::gelu(f1(y)));
  }
  torch::nn::Conv2d c1, c2, c3;
  torch::nn::BatchNorm2d b1, b2;
  torch::nn::Linear f1, f2;
};
TORCH_MODULE(TunedNet);

TunedNet randomNet() {
  torch::manual_seed(7);
  TunedNet net;
  torch::NoGradGuard g;
  for (auto *bn : {net->b1.get(), net->b2.get()}) {
    bn->running_mean.uniform_(-0.5, 0.5);
    bn->running_var.uniform_(0.5, 2.0);
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.uniform_(-0.2, 0.2);
  }
  net->eval();
  return net;
}

TEST(MaxAutotune, ConvNetMatchesEagerAndASecondCompilationBenchmarksNothing) {
  std::string dir = freshDir("net");
  TunedNet net = randomNet();
  torch::NoGradGuard noGrad;
  // Non-contiguous input: a slice of a wider batch.
  torch::Tensor x = torch::randn({2, 3, 12, 20}).narrow(3, 2, 14);
  torch::Tensor want = net->forward(x);
  tgc::Options o;
  o.mode = tgc::Mode::MaxAutotune;
  o.cache_dir = dir;
  tgc::reset();
  ScopedEnv log("TGC_LOG", "autotune");
  testing::internal::CaptureStderr();
  auto tuned = tgc::compile(net, o);
  torch::Tensor got = tuned->forward(x);
  std::string err = testing::internal::GetCapturedStderr();
  double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-4 * scale);
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.frozen_graphs, 1);
  // c1, c2 (with the residual), c3 and both linear layers: at least ATen
  // and one library candidate each.
  EXPECT_GE(s.autotune_benchmarks, 10) << err;
  EXPECT_EQ(s.autotune_cached, 0);
  EXPECT_NE(err.find("conv [16,3,3,3] on [2,3,12,14] f32 +relu:"), std::string::npos) << err;
  EXPECT_NE(err.find("conv [16,16,3,3] on [2,16,12,14] f32 +add+relu:"), std::string::npos) << err;
  EXPECT_NE(err.find("linear 2x24x96 f32 +gelu(none):"), std::string::npos) << err;
  EXPECT_NE(err.find("onednn "), std::string::npos) << err;
  EXPECT_NE(err.find("(chosen)"), std::string::npos) << err;
  EXPECT_EQ(entriesIn(dir, "autotune"), 5u) << err;
  // Everything in memory dropped: the graph comes from the disk cache and
  // every choice from the autotune layer.
  tgc::reset();
  auto again = tgc::compile(net, o);
  torch::Tensor second = again->forward(x);
  EXPECT_LE((second - want).abs().max().item<double>(), 1e-4 * scale);
  s = tgc::stats();
  EXPECT_EQ(s.autotune_benchmarks, 0);
  EXPECT_EQ(s.autotune_cached, 5);
  EXPECT_EQ(s.pipelines_run, 0) << "same choices, same graph: served from disk";
  // The default mode never benchmarks.
  tgc::reset();
  tgc::Options d;
  d.cache_dir = dir;
  auto plain = tgc::compile(net, d);
  EXPECT_LE((plain->forward(x) - want).abs().max().item<double>(), 1e-4 * scale);
  EXPECT_EQ(tgc::stats().autotune_benchmarks, 0);
  EXPECT_EQ(tgc::stats().autotune_cached, 0);
}

TEST(MaxAutotune, BFloat16LinearLayersAreTunedWithinBFloat16Tolerance) {
  std::string dir = freshDir("bf16");
  torch::manual_seed(3);
  torch::nn::Sequential mlp(torch::nn::Linear(64, 256), torch::nn::GELU(), torch::nn::Linear(256, 64));
  mlp->eval();
  torch::Tensor x = torch::randn({16, 64});
  torch::Tensor want = mlp->forward(x).detach();
  mlp->to(torch::kBFloat16);
  torch::NoGradGuard noGrad;
  tgc::Options o;
  o.mode = tgc::Mode::MaxAutotune;
  o.cache_dir = dir;
  tgc::reset();
  auto tuned = tgc::compile(mlp, o);
  torch::Tensor got = tuned->forward(x.to(torch::kBFloat16));
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  torch::Tensor eager = mlp->forward(x.to(torch::kBFloat16));
  double scale = std::max(1.0, want.abs().max().item<double>());
  double e = (got.to(torch::kFloat) - want).abs().max().item<double>() / scale;
  double ee = (eager.to(torch::kFloat) - want).abs().max().item<double>() / scale;
  EXPECT_LE(e, 2 * ee + 1e-2) << "tgc " << e << ", eager bf16 " << ee;
  EXPECT_GE(tgc::stats().autotune_benchmarks, 4);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

} // namespace
