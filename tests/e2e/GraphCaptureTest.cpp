// Graph capture (issue: capture): modules, TorchScript, mutation and views,
// graph breaks with resumption, replay, guards, explain, threads.
#include "tgc/tgc.h"

#include "tests/e2e/ExpectCompiled.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <thread>

namespace {

using tgc::test::expectCompiled;

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  EXPECT_TRUE(torch::allclose(got, want, tol, tol))
      << "max error " << (got - want).abs().max().item<double>();
}

// --- nn::Module ---------------------------------------------------------------

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 8))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))) {}
  torch::Tensor forward(torch::Tensor x) { return torch::relu(bn(fc(x))) + x; }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Net);

TEST(ModuleCapture, ParametersAreInputsAndUpdatesStayVisible) {
  torch::NoGradGuard noGrad;
  Net model;
  model->eval();
  auto net = tgc::compile(model);
  torch::Tensor x = torch::randn({4, 8});
  expectClose(net->forward(x), model->forward(x));
  // An optimizer-like in-place update of a parameter is seen by the replay.
  model->fc->weight.add_(0.5);
  expectClose(net->forward(x), model->forward(x));
  // set_data (what optimizers and load_state_dict do) is seen too.
  model->fc->weight.set_data(torch::randn({8, 8}));
  expectClose(net->forward(x), model->forward(x));
  // Replacing a submodule (new parameter tensors) is a guard miss, not a
  // stale answer.
  model->fc = model->replace_module("fc", torch::nn::Linear(8, 8));
  tgc::reset();
  expectClose(net->forward(x), model->forward(x));
  EXPECT_EQ(tgc::stats().captures, 1);
}

TEST(ModuleCapture, BufferMutationsAreWrittenBack) {
  torch::NoGradGuard noGrad;
  Net model, reference;
  reference->fc->weight.copy_(model->fc->weight);
  reference->fc->bias.copy_(model->fc->bias);
  model->train();
  reference->train();
  tgc::reset();
  auto net = tgc::compile(model);
  for (int step = 0; step < 3; ++step) {
    torch::Tensor x = torch::randn({16, 8});
    expectClose(net->forward(x), reference->forward(x));
    expectClose(model->bn->running_mean, reference->bn->running_mean);
    expectClose(model->bn->running_var, reference->bn->running_var);
  }
  EXPECT_EQ(model->bn->num_batches_tracked.item<int64_t>(), 3);
  expectCompiled(1, 3);
  EXPECT_EQ(tgc::stats().captures, 1) << "steps 2 and 3 replay";
}

// --- TorchScript ----------------------------------------------------------------

torch::jit::Module scriptModule() {
  torch::jit::Module m("Gate");
  m.register_parameter("w", torch::randn({6}), false);
  m.define(R"(
    def forward(self, x):
        y = x * self.w
        if bool(y.sum() > 0):
            return (y + 1).relu()
        return y.tanh() - x
  )");
  return m;
}

TEST(ScriptCapture, IfOnTensorDataMatchesEager) {
  torch::NoGradGuard noGrad;
  torch::jit::Module m = scriptModule();
  auto sm = tgc::compile(m);
  tgc::reset();
  int positive = 0;
  for (int i = 0; i < 8; ++i) {
    torch::Tensor x = torch::randn({3, 6});
    // Not a sum so close to 0 that summation order could pick the other branch.
    while (std::abs((x * m.attr("w").toTensor()).sum().item<float>()) < 1e-2)
      x = torch::randn({3, 6});
    torch::Tensor want = m.forward({x}).toTensor();
    positive += (x * m.attr("w").toTensor()).sum().item<float>() > 0;
    expectClose(sm->forward({x}).toTensor(), want);
  }
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, 8);
  EXPECT_GE(tgc::stats().graph_breaks, 8); // one bool() per call
}

TEST(ScriptCapture, ModuleFromJitLoad) {
  torch::NoGradGuard noGrad;
  std::string path = testing::TempDir() + "/tgc_gate.pt";
  scriptModule().save(path);
  torch::jit::Module loaded = torch::jit::load(path);
  auto sm = tgc::compile(torch::jit::load(path));
  tgc::reset();
  for (int i = 0; i < 4; ++i) {
    torch::Tensor x = torch::randn({2, 6});
    expectClose(sm->forward({x}).toTensor(), loaded.forward({x}).toTensor());
  }
  // The loaded module's ops ran as compiled graphs around its bool() break.
  EXPECT_EQ(tgc::stats().graph_breaks, 4);
  expectCompiled(2, 8);
}

TEST(ScriptCapture, StraightLineModuleIsOneGraph) {
  torch::NoGradGuard noGrad;
  torch::jit::Module m("Lin");
  m.register_parameter("w", torch::randn({5, 4}), false);
  m.define(R"(
    def forward(self, x):
        return torch.sigmoid(torch.matmul(x, self.w)) * 2.0
  )");
  tgc::reset();
  auto sm = tgc::compile(m);
  torch::Tensor x = torch::randn({3, 5});
  expectClose(sm->forward({x}).toTensor(), m.forward({x}).toTensor());
  expectClose(sm->forward({x}).toTensor(), m.forward({x}).toTensor());
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graph_breaks, 0);
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(ScriptCapture, AReplacedParameterTheModeOrAnAttributeCapturesAgain) {
  torch::NoGradGuard noGrad;
  torch::jit::Module m("Stateful");
  m.register_parameter("w", torch::randn({5, 4}), false);
  m.register_buffer("b", torch::randn({4}));
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_attribute("k", c10::IntType::get(), 3);
  m.define(R"(
    def forward(self, x):
        y = torch.matmul(x, self.w) + self.b
        if self.training:
            return y * 0.5
        return torch.relu(y) * self.k
  )");
  m.eval();
  tgc::reset();
  auto sm = tgc::compile(m);
  torch::Tensor x = torch::randn({3, 5});
  auto check = [&] { expectClose(sm->forward({x}).toTensor(), m.forward({x}).toTensor()); };
  check();
  check(); // replay
  EXPECT_EQ(tgc::stats().captures, 1);
  // Replaced, not updated in place: the graph's weight is another tensor.
  m.setattr("w", torch::randn({5, 4}));
  check();
  m.register_buffer("b", torch::randn({4}));
  check();
  m.setattr("k", c10::IValue(int64_t(-2)));
  check();
  m.train();
  check();
  m.eval();
  check();
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.captures, 5) << "w, b, k and train() each captured again; eval() replays\n"
                           << s.str();
  EXPECT_EQ(s.eager_fallbacks, 0) << s.str();
}

// --- functionalization: in-place ops and views ----------------------------------

template <class F> void checkMutating(F fn, std::vector<torch::Tensor> inputs) {
  std::vector<torch::Tensor> a, b;
  for (auto &t : inputs) {
    a.push_back(t.clone());
    b.push_back(t.clone());
  }
  tgc::reset();
  auto compiled = tgc::compile(fn);
  for (int call = 0; call < 2; ++call) { // capture, then replay
    torch::Tensor want = std::apply(fn, std::tuple_cat(std::make_tuple(a[0]), std::make_tuple(a[1])));
    torch::Tensor got = compiled(b[0], b[1]);
    expectClose(got, want);
    for (size_t i = 0; i < a.size(); ++i)
      expectClose(b[i], a[i]); // mutated inputs written back identically
  }
  expectCompiled(1, 2);
  EXPECT_EQ(tgc::stats().captures, 1) << "the second call replays";
}

TEST(Functionalization, InPlaceOps) {
  torch::NoGradGuard noGrad;
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    x.add_(y).mul_(2).relu_();
    return x * 3;
  }, {torch::randn({4, 5}), torch::randn({5})});
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    x.copy_(y.exp());
    return x + 1;
  }, {torch::randn({4, 5}), torch::randn({4, 5})});
  checkMutating([](torch::Tensor x, torch::Tensor m) {
    x.masked_fill_(m > 0, -1.0);
    return x.sum(1);
  }, {torch::randn({4, 5}), torch::randn({4, 5})});
  checkMutating([](torch::Tensor x, torch::Tensor v) {
    x.index_put_({torch::tensor({0, 2})}, v);
    return x.neg();
  }, {torch::randn({4, 5}), torch::randn({2, 5})});
}

TEST(Functionalization, ViewsAndMutationThroughAView) {
  torch::NoGradGuard noGrad;
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    auto v = x.view({20}).reshape({5, 4}).transpose(0, 1).permute({1, 0});
    auto s = v.slice(0, 1, 4).select(1, 2).unsqueeze(0).expand({3, 3});
    return s * y.as_strided({3, 3}, {1, 3}) + v.sum();
  }, {torch::randn({4, 5}), torch::randn({4, 5})});
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    auto row = x.select(0, 1);
    row.mul_(10);         // writes into x through a view
    x.slice(1, 0, 2).add_(y.slice(1, 0, 2));
    return x.relu() + row.sum();
  }, {torch::randn({4, 5}), torch::randn({4, 5})});
}

TEST(Functionalization, AnInputReadBeforeItsWriteIsReadAsItWas) {
  // Found by the fuzz test: the write ran before a fused reduction that
  // read the input's old value.
  torch::NoGradGuard noGrad;
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    torch::Tensor product = y * x;
    y.add_(-0.5);
    return std::get<0>(product.max(0));
  }, {torch::randn({7, 1}), torch::randn({16})});
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    torch::Tensor e = x.exp();
    x.mul_(y);
    return e + x;
  }, {torch::randn({4, 5}), torch::randn({5})});
  checkMutating([](torch::Tensor x, torch::Tensor y) {
    torch::Tensor before = (x * y).sum(1);
    x.select(0, 1).add_(1); // through a view: the write stays in place
    return before + x.sum(1);
  }, {torch::randn({4, 5}), torch::randn({4, 5})});
  checkMutating([](torch::Tensor x, torch::Tensor) {
    torch::Tensor s = x.sin(); // read before the write through a view,
    x.select(2, 0).clamp_(1, 1);
    return at::stack({s, x}, 0); // fused after it
  }, {torch::randn({4, 5, 3}), torch::randn({1})});
}

TEST(Functionalization, WritesThroughViewsOfStridedResultsAndExpandedInputs) {
  // Found by the fuzz test: a computed result laid out like a transposed
  // input, written through an ATen view, lost the write (the view saw
  // another layout and was copied); masked_fill_ on an expanded input is
  // allowed by eager.
  torch::NoGradGuard noGrad;
  torch::Tensor t = torch::randn({3, 7, 2, 8}).permute({3, 2, 1, 0});
  checkMutating([](torch::Tensor x, torch::Tensor k) {
    torch::Tensor v = at::where(k > -0.5, k, x);
    v.select(3, 1).add_(k);
    v.unfold(2, 3, 2).mul_(2);
    return v;
  }, {t, torch::tensor(16)});
  torch::Tensor mask = torch::randn({4, 3}) > 0;
  auto f = [&](torch::Tensor x) {
    x.masked_fill_(mask, 2.0);
    return x * 3;
  };
  auto compiled = tgc::compile(f);
  torch::Tensor base = torch::randn({1, 3});
  torch::Tensor a = base.clone().expand({4, 3}), b = base.clone().expand({4, 3});
  torch::Tensor want = f(a), got = compiled(b);
  expectClose(got, want);
  expectClose(b, a);
}

TEST(Numerics, HalfPrecisionIntermediatesAreAtLeastAsAccurateAsEager) {
  // Fused kernels keep a bf16/f16 intermediate in float where eager rounds
  // it (as Inductor does by default): results may differ from eager by that
  // rounding, never by more than eager's own error from a float64 run.
  torch::NoGradGuard noGrad;
  auto f = [](torch::Tensor h, torch::Tensor x) { return h.exp() * x + h.log1p().abs(); };
  auto compiled = tgc::compile(f);
  tgc::reset();
  for (auto half : {torch::kBFloat16, torch::kHalf}) {
    torch::Tensor h = (torch::rand({}) + 0.3).to(half), x = torch::randn({5, 2});
    torch::Tensor want = f(h, x), got = compiled(h, x);
    torch::Tensor exact = f(h.to(torch::kDouble), x.to(torch::kDouble));
    ASSERT_EQ(got.scalar_type(), torch::kFloat);
    double tgcError = (got.to(torch::kDouble) - exact).abs().max().item<double>();
    double eagerError = (want.to(torch::kDouble) - exact).abs().max().item<double>();
    EXPECT_LE(tgcError, eagerError + 1e-6);
    EXPECT_TRUE(torch::allclose(got, want, 2e-2, 2e-2));
  }
  expectCompiled(2, 2);
}

TEST(EmptyTensors, LayerNormOfAnEmptyTensorMatchesEager) {
  // ATen's CPU layer norm and its Meta kernel disagree on the statistics'
  // shape for empty inputs; nothing reads them (found by the fuzz test).
  torch::NoGradGuard noGrad;
  auto f = [](torch::Tensor x, torch::Tensor w) {
    return at::layer_norm(x, {x.size(-1)}, w, w) + 1;
  };
  auto compiled = tgc::compile(f);
  tgc::reset();
  for (auto shape : {std::vector<int64_t>{8, 0}, std::vector<int64_t>{0, 3}}) {
    torch::Tensor x = torch::randn(shape), w = torch::randn({shape.back()});
    torch::Tensor got = compiled(x, w), want = f(x, w);
    EXPECT_EQ(got.sizes(), want.sizes());
  }
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

// --- graph breaks ----------------------------------------------------------------

TEST(GraphBreaks, WhileLoopOnATensorNorm) {
  auto fn = [](torch::Tensor x) {
    while (x.norm().item<float>() > 1.0f)
      x = x * 0.5 + 0.01;
    return x.exp();
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({16}) * (i + 2);
    expectClose(f(x), fn(x));
  }
  EXPECT_GT(tgc::stats().graph_breaks, 3);
  // The loop body's graph is compiled once and found by hash afterwards.
  int64_t compiled = tgc::stats().graphs_compiled;
  f(torch::randn({16}) * 4);
  EXPECT_EQ(tgc::stats().graphs_compiled, compiled);
}

struct GatedImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x, torch::Tensor y) {
    if ((x.mean() > y.mean()).item<bool>())
      return (x - y).sigmoid();
    return (y * 2).tanh() + x;
  }
};
TORCH_MODULE(Gated);

TEST(GraphBreaks, IfOnATensorComparisonInAModule) {
  Gated model;
  tgc::reset();
  auto net = tgc::compile(model);
  for (int i = 0; i < 6; ++i) {
    torch::Tensor x = torch::randn({3, 4}), y = torch::randn({3, 4});
    expectClose(net->forward(x, y), model->forward(x, y));
  }
  // Each call: the comparison's graph, the break, then one branch's graph.
  EXPECT_EQ(tgc::stats().graph_breaks, 6);
  expectCompiled(2, 12);
}

TEST(GraphBreaks, EarlyExitFromALoop) {
  auto fn = [](torch::Tensor x) {
    torch::Tensor acc = torch::zeros_like(x);
    for (int i = 0; i < 10; ++i) {
      acc = acc + x.sin() * i;
      if (acc.abs().max().item<float>() > 5.0f)
        break;
    }
    return acc;
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({8});
    expectClose(f(x), fn(x));
  }
  EXPECT_GE(tgc::stats().graph_breaks, 3);
  expectCompiled(1, 3);
}

TEST(GraphBreaks, OpTgLacksStillMatchesEager) {
  auto fn = [](torch::Tensor x) {
    auto [values, indices] = x.exp().topk(3, 1);
    return values.cumsum(1) * 2 + indices.to(torch::kFloat);
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor x = torch::randn({4, 9});
  expectClose(f(x), fn(x));
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

TEST(GraphBreaks, DataDependentShapesBreakAndResume) {
  auto fn = [](torch::Tensor x) {
    torch::Tensor pos = torch::masked_select(x, x > 0);   // shape from data
    torch::Tensor idx = (x < -0.5).nonzero().squeeze(1);   // shape from data
    torch::Tensor u = std::get<0>(torch::_unique(x.round()));
    return std::make_tuple(pos.exp().sum() + x.relu(), x.index_select(0, idx) * 2, u.neg());
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({12});
    auto [a, b, c] = f(x);
    auto [ea, eb, ec] = fn(x);
    expectClose(a, ea);
    expectClose(b, eb);
    expectClose(c, ec);
  }
  EXPECT_GE(tgc::stats().graph_breaks, 9);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

TEST(GraphBreaks, ReadingDataOnTheHostRunsEagerly) {
  // data_ptr/accessor cannot be intercepted at the dispatcher: the call runs
  // eagerly (logged) and the answer is still eager's.
  auto fn = [](torch::Tensor x) {
    auto acc = x.accessor<float, 1>();
    return acc[0] > 0 ? x * 2 : x * 3;
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor x = torch::randn({4});
  expectClose(f(x), fn(x));
  EXPECT_EQ(tgc::stats().eager_fallbacks, 1);
}

TEST(GraphBreaks, LogTopicsReportAsItHappens) {
  setenv("TGC_LOG", "graph_breaks,recompiles", 1);
  auto f = tgc::compile([](torch::Tensor x) {
    return x.sum().item<float>() > 0 ? x.exp() : x;
  });
  testing::internal::CaptureStderr();
  f(torch::randn({3}));
  f(torch::randn({5})); // guard miss
  std::string err = testing::internal::GetCapturedStderr();
  unsetenv("TGC_LOG");
  EXPECT_NE(err.find("[tgc:graph_breaks] segment 0 ends at aten::_local_scalar_dense"),
            std::string::npos) << err;
  EXPECT_NE(err.find("[tgc:recompiles] guard miss"), std::string::npos) << err;
}

TEST(GraphBreaks, ExplainListsGraphsAndBreaks) {
  auto fn = [](torch::Tensor x) {
    torch::Tensor y = x * 2;
    if (y.sum().item<float>() > 0)
      y = y.relu();
    return y + 1;
  };
  torch::Tensor x = torch::randn({5});
  tgc::Explanation e = tgc::explain(fn, x);
  EXPECT_EQ(e.graph_count, 2);
  EXPECT_EQ(e.graph_break_count, 1);
  ASSERT_EQ(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].op, "aten::_local_scalar_dense");
  EXPECT_EQ(e.breaks[0].segment, 0);
  EXPECT_NE(e.breaks[0].reason.find("host"), std::string::npos);
  ASSERT_EQ(e.graph_ops.size(), 2u);
  EXPECT_EQ(e.graph_ops[0], (std::vector<std::string>{"aten::mul.Scalar", "aten::sum"}));
  EXPECT_NE(e.str().find("break after graph 0 at aten::_local_scalar_dense"), std::string::npos)
      << e.str();
}

// --- predicted host reads ---------------------------------------------------------

TEST(PredictedReads, EqualOfATensorWithItselfIsOneGraphGuardedByNaN) {
  int ran = 0;
  auto fn = [&ran](torch::Tensor x) {
    ++ran;
    // torch::nn's attention asks this (query == key) on every call.
    return torch::equal(x, x) ? (x * 2).relu() : x - 1;
  };
  tgc::reset();
  auto f = tgc::compile(fn);
  torch::Tensor x = torch::randn({6, 5});
  expectClose(f(x), (x * 2).relu());
  expectClose(f(x), (x * 2).relu());
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
  EXPECT_EQ(ran, 1) << "replayed without running user code";
  // A NaN: eager's equal(x, x) is false. The guard fails and the call runs
  // eagerly, taking the other branch.
  torch::Tensor withNaN = x.clone();
  withNaN.index_put_({2, 3}, NAN);
  torch::Tensor got = f(withNaN), want = withNaN - 1;
  EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6, /*equal_nan=*/true));
  EXPECT_EQ(tgc::stats().eager_fallbacks, 1);
  // Later calls without NaN replay the graph again.
  ran = 0;
  expectClose(f(x), (x * 2).relu());
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
}

TEST(PredictedReads, IntegerEqualNeedsNoGuardAndOtherComparisonsStillBreak) {
  tgc::reset();
  auto ints = tgc::compile([](torch::Tensor i) { return torch::equal(i, i) ? i * 3 : i; });
  torch::Tensor i = torch::randint(-5, 5, {4, 4});
  EXPECT_TRUE(torch::equal(ints(i), i * 3));
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  // Two different values (or two layouts of one) are compared on the host.
  auto two = [](torch::Tensor x, torch::Tensor y) { return torch::equal(x, y) ? x + y : x - y; };
  auto g = tgc::compile(two);
  torch::Tensor x = torch::randn({3, 3}), y = torch::randn({3, 3});
  expectClose(g(x, y), x - y);
  expectClose(g(x, x.clone()), x + x);
  EXPECT_GE(tgc::stats().graph_breaks, 1);
  auto layouts = tgc::compile([](torch::Tensor x) { return torch::equal(x, x.t()) ? x * 5 : x; });
  torch::Tensor sym = x + x.t();
  expectClose(layouts(sym), sym * 5);
}

TEST(PredictedReads, ABreakOrAWriteAfterAPredictionCapturesAgainWithout) {
  tgc::reset();
  // A host read after the prediction: capture restarts without predicting.
  auto breaks = [](torch::Tensor x) {
    torch::Tensor y = torch::equal(x, x) ? x * 2 : x;
    return y.sum().item<float>() > 0 ? y.exp() : y.neg();
  };
  auto f = tgc::compile(breaks);
  for (int k = 0; k < 3; ++k) {
    torch::Tensor x = torch::randn({8}) + (k - 1);
    expectClose(f(x), breaks(x));
  }
  EXPECT_GE(tgc::stats().graph_breaks, 1);
  // A write after the prediction: a guard failure could not be undone, so
  // the graph breaks at the comparison instead.
  auto writes = [](torch::Tensor x, torch::Tensor acc) {
    torch::Tensor y = torch::equal(x, x) ? x * 2 : x;
    acc.add_(y);
    return y;
  };
  auto w = tgc::compile(writes);
  torch::Tensor x = torch::randn({5}), acc = torch::zeros({5}), accEager = torch::zeros({5});
  w(x, acc);
  w(x, acc);
  writes(x, accEager);
  writes(x, accEager);
  expectClose(acc, accEager);
  torch::Tensor withNaN = x.clone();
  withNaN.index_put_({1}, NAN);
  w(withNaN, acc);
  writes(withNaN, accEager);
  EXPECT_TRUE(torch::allclose(acc, accEager, 1e-6, 1e-6, /*equal_nan=*/true));
}

TEST(PredictedReads, AnAbortCaughtByTheProgramOrTorchScriptStillCapturesAgain) {
  // The program swallows every exception around a host read after a
  // prediction: capture still starts over, and the answer is eager's.
  auto swallowing = [](torch::Tensor x) {
    bool same = torch::equal(x, x);
    float v;
    try {
      v = x.sum().item<float>();
    } catch (const std::exception &) {
      v = -1000;
    }
    return same && v > 0 ? x * 2 : x * 3;
  };
  tgc::reset();
  auto f = tgc::compile(swallowing);
  for (int k = 0; k < 3; ++k) {
    torch::Tensor x = torch::randn({6}) + (k - 1);
    expectClose(f(x), swallowing(x));
  }
  // TorchScript's interpreter rewraps exceptions from the ops it calls.
  torch::NoGradGuard noGrad;
  torch::jit::Module m("EqualThenItem");
  m.define(R"(
    def forward(self, x):
        y = x * 2
        if torch.equal(y, y):
            y = y + 1
        if bool(y.sum() > 0):
            return y.relu()
        return y.tanh()
  )");
  auto sm = tgc::compile(m);
  for (int k = 0; k < 3; ++k) {
    torch::Tensor x = torch::randn({3, 4}) + (k - 1);
    expectClose(sm->forward({x}).toTensor(), m.forward({x}).toTensor());
  }
  EXPECT_GE(tgc::stats().graph_breaks, 6);
  expectCompiled(2, 6);
}

TEST(PredictedReads, BatchNormTrainingAfterAPredictionUpdatesStatisticsOnce) {
  // Batch norm's running statistics are written without a schema mark:
  // the prediction is dropped, so a NaN input cannot update them twice.
  torch::Tensor rm = torch::zeros({4}), rv = torch::ones({4});
  torch::Tensor rmEager = rm.clone(), rvEager = rv.clone();
  auto make = [](torch::Tensor &mean, torch::Tensor &var) {
    return [&mean, &var](torch::Tensor x) {
      torch::Tensor y = torch::batch_norm(x, {}, {}, mean, var, true, 0.1, 1e-5, false);
      return torch::equal(x, x) ? y * 2 : y;
    };
  };
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto f = tgc::compile(make(rm, rv));
  auto eager = make(rmEager, rvEager);
  for (int k = 0; k < 3; ++k) {
    torch::Tensor x = torch::randn({8, 4}) + 1;
    if (k == 2)
      x.index_put_({3, 1}, NAN); // channel 1 only
    torch::Tensor got = f(x), want = eager(x);
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5, /*equal_nan=*/true)) << "call " << k;
  }
  EXPECT_TRUE(torch::allclose(rm, rmEager, 1e-6, 1e-6, /*equal_nan=*/true)) << rm << rmEager;
  EXPECT_TRUE(torch::allclose(rv, rvEager, 1e-6, 1e-6, /*equal_nan=*/true)) << rv << rvEager;
  expectCompiled(1, 3);
}

TEST(PredictedReads, TransformerEncoderLayerIsOneGraphForInferenceAndTraining) {
  torch::manual_seed(3);
  auto layer = torch::nn::TransformerEncoderLayer(
      torch::nn::TransformerEncoderLayerOptions(64, 4).dim_feedforward(128).dropout(0.0));
  auto fn = [&](torch::Tensor x) { return layer->forward(x); };
  EXPECT_EQ(tgc::explain(fn, torch::randn({8, 2, 64})).graph_count, 1);
  tgc::reset();
  auto f = tgc::compile(fn);
  {
    torch::NoGradGuard g;
    for (int k = 0; k < 3; ++k) {
      torch::Tensor x = torch::randn({8, 2, 64});
      expectClose(f(x), fn(x), 1e-4);
    }
  }
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
  // Training: one training graph, gradients as eager's.
  torch::Tensor x = torch::randn({8, 2, 64});
  f(x).square().mean().backward();
  std::vector<torch::Tensor> mine;
  for (auto &p : layer->parameters()) {
    mine.push_back(p.grad().clone());
    p.mutable_grad().reset();
  }
  fn(x).square().mean().backward();
  auto params = layer->parameters();
  for (size_t k = 0; k < params.size(); ++k)
    expectClose(mine[k], params[k].grad(), 1e-4);
  EXPECT_EQ(tgc::stats().training_graphs, 1);
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
}

// --- replay and guards -----------------------------------------------------------

TEST(Replay, SingleSegmentReplaysWithoutRunningUserCode) {
  tgc::reset();
  int ran = 0;
  auto f = tgc::compile([&ran](torch::Tensor x) {
    ++ran;
    return (x * 2).sigmoid();
  });
  torch::Tensor x = torch::randn({7});
  for (int i = 0; i < 5; ++i)
    expectClose(f(x), (x * 2).sigmoid());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(tgc::stats().captures, 1);
}

TEST(Guards, EachPropertyRecompiles) {
  tgc::reset();
  auto fn = [](torch::Tensor x) { return x * 2 + 1; };
  auto f = tgc::compile(fn);
  torch::Tensor base = torch::randn({4, 6});
  std::vector<torch::Tensor> variants = {
      base,                             // first capture
      torch::randn({5, 6}),             // sizes
      torch::randn({6, 4}).t(),         // strides (same sizes as base)
      base.to(torch::kDouble),          // dtype
  };
  for (auto &v : variants)
    expectClose(f(v), fn(v));
  EXPECT_EQ(tgc::stats().recompiles, 3);
  {
    torch::NoGradGuard noGrad; // grad mode
    expectClose(f(base), fn(base));
  }
  EXPECT_EQ(tgc::stats().recompiles, 4);
  // requires_grad: a different specialization, and gradients still flow.
  torch::Tensor leaf = base.clone().requires_grad_(true);
  torch::Tensor y = f(leaf);
  y.sum().backward();
  expectClose(leaf.grad(), torch::full_like(base, 2));
  EXPECT_EQ(tgc::stats().recompiles, 5);
  // Nothing new: all hits.
  int64_t hits = tgc::stats().cache_hits_memory;
  expectClose(f(base), fn(base));
  EXPECT_EQ(tgc::stats().cache_hits_memory, hits + 1);
}

TEST(Guards, RecompileLimitLogsOnce) {
  tgc::reset();
  tgc::Options opts;
  opts.recompile_limit = 2;
  auto f = tgc::compile([](torch::Tensor x) { return x.exp(); }, opts);
  testing::internal::CaptureStderr();
  for (int n = 1; n <= 6; ++n) {
    torch::Tensor x = torch::randn({n});
    expectClose(f(x), x.exp());
  }
  std::string err = testing::internal::GetCapturedStderr();
  size_t first = err.find("recompile_limit");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(err.find("recompile_limit", first + 1), std::string::npos) << err;
  EXPECT_NE(err.find("Float"), std::string::npos) << "names the guard: " << err;
  // Two shapes compiled, the four after the limit ran eagerly.
  EXPECT_EQ(tgc::stats().graphs_compiled, 2);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 4);
}

// --- threads ----------------------------------------------------------------------

TEST(Threads, TwoThreadsShareOneCompiledCallable) {
  auto fn = [](torch::Tensor a, torch::Tensor b) { return (a * b).tanh() + a; };
  tgc::reset();
  auto f = tgc::compile(fn);
  std::atomic<int> failures{0};
  auto worker = [&](int seed) {
    torch::manual_seed(seed);
    for (int i = 0; i < 50; ++i) {
      torch::Tensor a = torch::randn({32, 8}), b = torch::randn({8});
      if (!torch::allclose(f(a, b), fn(a, b), 1e-5, 1e-5))
        ++failures;
    }
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
  // Every one of the 100 calls ran the compiled kernel.
  EXPECT_EQ(tgc::stats().kernel_launches, 100);
  expectCompiled(1, 100);
}

} // namespace
