// Nothing a model does takes the process down (issue 16, point 1): the
// indexing Hugging Face decoders do captures without the tracer re-entering
// itself, and an internal failure at any stage (injected) runs the call
// eagerly, once, with the reason logged, or throws under fullgraph.
#include "tgc/tgc.h"

#include "compiler/capture/Tracer.h"
#include "runtime/FaultInjection.h"
#include "tests/e2e/RandomTensors.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  EXPECT_TRUE(torch::allclose(got, want, tol, tol))
      << "max error " << (got - want).abs().max().item<double>();
}

// --- the indexing of Hugging Face decoders ---------------------------------------

/// What GPT-2's and Llama's traced graphs do around attention: arange
/// position ids, a causal mask from tril/triu, `index` with a list of index
/// tensors (TorchScript builds it as a generic `Tensor?[]` list), `None`
/// entries, a boolean mask, masked_fill and where on masks.
torch::jit::Module decoderIndexing() {
  torch::jit::Module m("DecoderIndexing");
  m.register_parameter("w", torch::randn({8, 8}), false);
  m.define(R"(
    def forward(self, x, ids):
        b = x.size(0)
        t = x.size(1)
        pos = torch.arange(t).unsqueeze(0).expand(b, t)
        batch = torch.arange(b)
        q = pos[batch[:, None], torch.arange(t)][:, :, None]
        kv = pos[batch][:, None, torch.arange(t)]
        causal = kv <= q
        scores = torch.matmul(x, self.w)
        scores = torch.matmul(scores, x.transpose(1, 2))
        upper = torch.triu(torch.ones(t, t), 1) > 0.5
        scores = scores.masked_fill(upper[None, :, :], -1.0e4)
        scores = torch.where(causal, scores, torch.full_like(scores, -1.0e4))
        attn = torch.softmax(scores, -1)
        y = torch.matmul(attn, x)
        keep = torch.tril(torch.ones(t, t)) > 0.5
        lower = attn[:, keep]
        picked = y[ids > 0]
        return y[:, None], lower, picked
  )");
  return m;
}

TEST(CrashProof, DecoderIndexingCapturesWithoutRecursion) {
  torch::NoGradGuard noGrad;
  torch::jit::Module m = decoderIndexing();
  auto sm = tgc::compile(m);
  tgc::reset();
  for (int call = 0; call < 3; ++call) {
    torch::Tensor x = torch::randn({2, 6, 8});
    torch::Tensor ids = torch::randint(-3, 4, {2, 6});
    auto want = m.forward({x, ids}).toTuple()->elements();
    auto got = sm->forward({x, ids}).toTuple()->elements();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      expectClose(got[i].toTensor(), want[i].toTensor());
  }
  // Captured and compiled around the two boolean-mask selections (their
  // output shapes depend on values: graph breaks), nothing run eagerly.
  tgc::Stats s = tgc::stats();
  EXPECT_GE(s.graphs_compiled, 2);
  EXPECT_GE(s.graph_breaks, 2);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

/// The re-entry guard: a tracer tensor that reaches ATen while the tracer
/// itself runs ATen (here on purpose, inside an UntracedScope) fails this
/// capture with an internal error, run eagerly and remembered, where it
/// used to send the tracer back into itself.
TEST(CrashProof, TracerReenteredFailsTheCaptureNotTheProcess) {
  torch::NoGradGuard noGrad;
  auto body = [](torch::Tensor x) {
    torch::Tensor y = x.exp();
    if (tgc::isTracer(y)) {
      tgc::UntracedScope untraced;
      return y * 2;
    }
    return y * 2;
  };
  auto f = tgc::compile(body);
  tgc::reset();
  setenv("TGC_LOG", "fallbacks", 1);
  testing::internal::CaptureStderr();
  torch::Tensor x = torch::randn({3, 5});
  expectClose(f(x), body(x));
  std::string log = testing::internal::GetCapturedStderr();
  unsetenv("TGC_LOG");
  EXPECT_NE(log.find("capture re-entered itself at aten::mul"), std::string::npos) << log;
  x = torch::randn({3, 5});
  expectClose(f(x), body(x));
  EXPECT_EQ(tgc::stats().captures, 1);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 2);
}

// --- an internal failure at each stage -------------------------------------------

using tgc::FaultStage;

struct FaultCase {
  FaultStage stage;
  const char *name;      ///< TGC_FAULT's name of the stage
  const char *inMessage; ///< what the fallback's reason and the exception say
};

std::ostream &operator<<(std::ostream &os, const FaultCase &c) { return os << c.name; }

/// A fresh cache directory: nothing compiled before, so the faulty stage runs.
std::string freshCacheDir(const std::string &name) {
  std::string dir = testing::TempDir() + "/tgc_fault_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

torch::Tensor program(torch::Tensor a, torch::Tensor b) {
  return (a * b + 1).relu() - a.sum(-1, true);
}

class InjectedFault : public testing::TestWithParam<FaultCase> {
protected:
  void SetUp() override { setenv("TGC_LOG", "fallbacks", 1); }
  void TearDown() override {
    tgc::setInjectedFault(FaultStage::None);
    unsetenv("TGC_LOG");
  }
};

TEST_P(InjectedFault, RunsEagerlyOnceWithTheReasonLogged) {
  torch::NoGradGuard noGrad;
  const FaultCase &c = GetParam();
  tgc::Options options;
  options.cache_dir = freshCacheDir(c.name);
  auto f = tgc::compile(program, options);
  tgc::reset();
  tgc::setInjectedFault(c.stage);
  torch::Tensor a = tgc::test::rnd({5, 7}, torch::kFloat), b = tgc::test::rnd({5, 7}, torch::kFloat);
  testing::internal::CaptureStderr();
  torch::Tensor got = f(a, b);
  std::string log = testing::internal::GetCapturedStderr();
  expectClose(got, program(a, b));
  tgc::Stats first = tgc::stats();
  EXPECT_GE(first.eager_fallbacks, 1);
  EXPECT_EQ(first.graphs_compiled, 0);
  EXPECT_NE(log.find("[tgc:fallbacks]"), std::string::npos) << log;
  EXPECT_NE(log.find(c.inMessage), std::string::npos) << log;

  // Remembered: the same input properties neither capture nor compile again.
  for (int call = 0; call < 2; ++call) {
    a = tgc::test::rnd({5, 7}, torch::kFloat);
    b = tgc::test::rnd({5, 7}, torch::kFloat);
    expectClose(f(a, b), program(a, b));
  }
  tgc::Stats later = tgc::stats();
  EXPECT_EQ(later.captures, first.captures);
  EXPECT_EQ(later.pipelines_run, first.pipelines_run);
  EXPECT_EQ(later.graphs_compiled, 0);
}

TEST_P(InjectedFault, FullgraphThrowsNamingTheStage) {
  torch::NoGradGuard noGrad;
  const FaultCase &c = GetParam();
  tgc::Options options;
  options.fullgraph = true;
  options.cache_dir = freshCacheDir(std::string(c.name) + "_fullgraph");
  auto f = tgc::compile(program, options);
  tgc::reset();
  tgc::setInjectedFault(c.stage);
  torch::Tensor a = tgc::test::rnd({3, 4}, torch::kFloat), b = tgc::test::rnd({3, 4}, torch::kFloat);
  for (int call = 0; call < 2; ++call) {
    try {
      f(a, b);
      ADD_FAILURE() << "call " << call << " did not throw";
    } catch (const std::exception &e) {
      std::string what = e.what();
      EXPECT_NE(what.find("fullgraph=true"), std::string::npos) << what;
      EXPECT_NE(what.find(c.inMessage), std::string::npos) << what;
    }
  }
  EXPECT_EQ(tgc::stats().graphs_compiled, 0);
  EXPECT_LE(tgc::stats().pipelines_run, 1); // the second call does not compile again
}

INSTANTIATE_TEST_SUITE_P(
    EveryStage, InjectedFault,
    testing::Values(FaultCase{FaultStage::Capture, "capture", "stage capture"},
                    FaultCase{FaultStage::Import, "import", "stage import"},
                    FaultCase{FaultStage::Pipeline, "pipeline", "stage pipeline"},
                    FaultCase{FaultStage::HostCompiler, "host-compiler", "stage host-compiler"},
                    FaultCase{FaultStage::Load, "load", "loading the compiled graph failed"}),
    [](const testing::TestParamInfo<FaultCase> &info) {
      std::string n = info.param.name;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

/// TorchScript's interpreter rewraps what an op throws; the failure inside
/// the dispatcher still becomes an eager run, remembered.
TEST(CrashProof, CaptureFailureInsideTorchScriptRunsEagerly) {
  torch::NoGradGuard noGrad;
  torch::jit::Module m("Scaled");
  m.register_parameter("w", torch::randn({6}), false);
  m.define(R"(
    def forward(self, x):
        return torch.tanh(x * self.w) + x
  )");
  auto sm = tgc::compile(m);
  tgc::reset();
  tgc::setInjectedFault(FaultStage::Capture);
  for (int call = 0; call < 3; ++call) {
    torch::Tensor x = torch::randn({4, 6});
    expectClose(sm->forward({x}).toTensor(), m.forward({x}).toTensor());
  }
  tgc::setInjectedFault(FaultStage::None);
  EXPECT_EQ(tgc::stats().captures, 1);
  EXPECT_GE(tgc::stats().eager_fallbacks, 1);
  EXPECT_EQ(tgc::stats().graphs_compiled, 0);
}

} // namespace
