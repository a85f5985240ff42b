// Compiled training: the joint forward+backward graph from autograd,
// partitioned by the min-cut, run as one autograd Function. Gradients,
// optimizer trajectories and running statistics equal eager's.
#include "tgc/tgc.h"

#include "bench/models/Models.h"
#include "tests/e2e/ExpectCompiled.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol,
                 const std::string &what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, tol, tol))
      << what << ": max error " << (got - want).abs().max().item<double>();
}

/// Every parameter gradient of `a` equals `b`'s.
void expectSameGrads(torch::nn::Module &a, torch::nn::Module &b, double tol) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (auto &p : pa)
    expectClose(p.value().grad(), pb[p.key()].grad(), tol, "grad of " + p.key());
}

torch::nn::Sequential makeMlp() {
  return torch::nn::Sequential(torch::nn::Linear(64, 128), torch::nn::GELU(),
                               torch::nn::Linear(128, 128), torch::nn::ReLU(),
                               torch::nn::Linear(128, 32),
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})));
}

TEST(Training, MlpGradientsOfParametersAndInputsMatchEager) {
  torch::manual_seed(1);
  auto eager = makeMlp(), mine = makeMlp();
  tgc::models::copyState(*mine, *eager);
  tgc::reset();
  auto f = tgc::compile([&](torch::Tensor x) { return mine->forward(x); });
  for (int call = 0; call < 2; ++call) {
    torch::Tensor x = torch::randn({16, 64}).requires_grad_(true);
    torch::Tensor xe = x.detach().clone().requires_grad_(true);
    torch::Tensor w = torch::randn({16, 32});
    torch::Tensor out = f(x), want = eager->forward(xe);
    expectClose(out, want, 1e-5, "output");
    ASSERT_TRUE(out.requires_grad());
    mine->zero_grad();
    eager->zero_grad();
    tgc::Stats before = tgc::stats();
    (out * w).sum().backward();
    tgc::Stats after = tgc::stats();
    (want * w).sum().backward();
    expectClose(x.grad(), xe.grad(), 1e-5, "input grad");
    expectSameGrads(*mine, *eager, 1e-5);
    EXPECT_GT(after.kernel_launches, before.kernel_launches) << "the backward runs tgc kernels";
  }
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.training_graphs, 1);
  EXPECT_EQ(s.eager_fallbacks, 0);
  EXPECT_EQ(s.captures, 1) << "the second call replays";
}

TEST(Training, CompiledModuleTrainsThroughItsForward) {
  // tgc::compile(module): net->forward(x) returns a tensor whose backward
  // fills the module's own parameters' .grad, as eager does.
  torch::manual_seed(10);
  auto eager = makeMlp(), mine = makeMlp();
  tgc::models::copyState(*mine, *eager);
  tgc::reset();
  auto net = tgc::compile(mine);
  torch::Tensor x = torch::randn({8, 64});
  net->forward(x).pow(2).mean().backward();
  eager->forward(x).pow(2).mean().backward();
  expectSameGrads(*mine, *eager, 1e-5);
  EXPECT_EQ(tgc::stats().training_graphs, 1);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

/// Live CPU bytes, counted by an allocator that stands in for the default
/// one (c10::alloc_cpu / free_cpu, as it uses).
struct CountingAllocator final : c10::Allocator {
  static std::atomic<int64_t> live;
  static std::mutex mutex;
  static std::unordered_map<void *, int64_t> &sizes() {
    static std::unordered_map<void *, int64_t> m;
    return m;
  }
  static void release(void *p) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = sizes().find(p);
      live -= it->second;
      sizes().erase(it);
    }
    c10::free_cpu(p);
  }
  c10::DataPtr allocate(size_t n) override {
    void *p = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mutex);
      sizes()[p] = n;
    }
    live += n;
    return {p, p, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void *dst, const void *src, std::size_t n) const override {
    std::memcpy(dst, src, n);
  }
};
std::atomic<int64_t> CountingAllocator::live{0};
std::mutex CountingAllocator::mutex;

/// Bytes a forward leaves alive for its backward: allocated by the call and
/// still held after it, beyond the output itself.
template <class F> int64_t savedBytes(CountingAllocator &a, F forward) {
  int64_t before = a.live;
  torch::Tensor out = forward();
  int64_t held = a.live - before - out.numel() * out.element_size();
  out.sum().backward(); // frees what was saved
  return held;
}

TEST(Training, SavesNoMoreActivationsThanEager) {
  static CountingAllocator counting;
  c10::Allocator *previous = c10::GetCPUAllocator();
  c10::SetCPUAllocator(&counting, /*priority=*/100);
  struct Restore {
    c10::Allocator *a;
    ~Restore() { c10::SetCPUAllocator(a, /*priority=*/101); }
  } restore{previous};
  torch::manual_seed(2);
  auto mlp = makeMlp();
  auto layer = tgc::models::transformerLayer(64, 4);
  torch::Tensor x = torch::randn({32, 64}), seq = torch::randn({8, 4, 64});
  auto mlpFn = [&](torch::Tensor t) { return mlp->forward(t); };
  auto layerFn = [&](torch::Tensor t) { return layer->forward(t); };
  tgc::reset();
  auto cm = tgc::compile(mlpFn);
  auto cl = tgc::compile(layerFn);
  for (auto [name, eager, compiled] :
       {std::tuple<std::string, std::function<torch::Tensor()>, std::function<torch::Tensor()>>{
            "mlp", [&] { return mlpFn(x); }, [&] { return cm(x); }},
        {"transformer_layer", [&] { return layerFn(seq); }, [&] { return cl(seq); }}}) {
    SCOPED_TRACE(name);
    savedBytes(counting, compiled); // compile (and warm up) first
    int64_t mine = savedBytes(counting, compiled);
    int64_t theirs = savedBytes(counting, eager);
    std::printf("[ saved ] %-18s eager %lld bytes, tgc %lld bytes (partitioner reports %lld)\n",
                name.c_str(), (long long)theirs, (long long)mine,
                (long long)tgc::stats().saved_activation_bytes);
    EXPECT_GT(theirs, 0);
    EXPECT_LE(mine, theirs) << "tgc saves more for the backward than eager";
  }
}

/// Runs `steps` AdamW steps on eager and compiled copies of one model and
/// compares every loss (and, through `extra`, anything else per step).
template <class M, class Loss>
void expectSameTrajectory(M eager, M mine, Loss loss, int steps, double tol,
                          std::function<void()> extra = nullptr) {
  tgc::models::copyState(*mine, *eager);
  torch::optim::AdamW oe(eager->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW om(mine->parameters(), torch::optim::AdamWOptions(1e-2));
  auto f = tgc::compile([&](torch::Tensor x) { return mine->forward(x); });
  for (int step = 0; step < steps; ++step) {
    torch::Tensor x = torch::randn(loss.inputShape);
    oe.zero_grad();
    om.zero_grad();
    torch::Tensor le = loss(eager->forward(x)), lm = loss(f(x));
    le.backward();
    lm.backward();
    oe.step();
    om.step();
    EXPECT_NEAR(lm.item<double>(), le.item<double>(), tol * (1 + std::abs(le.item<double>())))
        << "step " << step;
    if (extra)
      extra();
  }
}

struct SquaredLoss {
  std::vector<int64_t> inputShape;
  torch::Tensor operator()(const torch::Tensor &y) const { return (y * y).mean(); }
};

TEST(Training, AdamWTrajectoriesMatchEager) {
  tgc::reset();
  {
    SCOPED_TRACE("mlp");
    torch::manual_seed(3);
    expectSameTrajectory(makeMlp(), makeMlp(), SquaredLoss{{16, 64}}, 20, 1e-4);
  }
  {
    SCOPED_TRACE("transformer_layer");
    torch::manual_seed(4);
    expectSameTrajectory(tgc::models::transformerLayer(64, 4), tgc::models::transformerLayer(64, 4),
                         SquaredLoss{{8, 2, 64}}, 20, 1e-4);
  }
  {
    SCOPED_TRACE("resnet_block_train");
    torch::manual_seed(5);
    tgc::models::BasicBlock eager(8), mine(8);
    eager->train();
    mine->train();
    expectSameTrajectory(eager, mine, SquaredLoss{{4, 8, 6, 6}}, 20, 1e-4, [&] {
      for (auto &b : eager->named_buffers())
        if (b.value().is_floating_point())
          expectClose(mine->named_buffers()[b.key()], b.value(), 1e-4, b.key());
    });
  }
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

TEST(Training, GraphBreakInForwardGivesEachSegmentItsBackward) {
  torch::manual_seed(6);
  torch::nn::Linear l1e(16, 32), l2e(32, 8), l1(16, 32), l2(32, 8);
  tgc::models::copyState(*l1, *l1e);
  tgc::models::copyState(*l2, *l2e);
  auto body = [](torch::nn::Linear &a, torch::nn::Linear &b, torch::Tensor x) {
    torch::Tensor h = a(x);
    h = h.sum().item<double>() > 0 ? torch::relu(h) * 2 : torch::tanh(h);
    return b(h).sigmoid();
  };
  tgc::reset();
  auto f = tgc::compile([&](torch::Tensor x) { return body(l1, l2, x); });
  for (int call = 0; call < 4; ++call) {
    torch::Tensor x = torch::randn({4, 16}) + (call % 2 ? 1.0 : -1.0);
    torch::Tensor xe = x.clone().requires_grad_(true);
    x.requires_grad_(true);
    for (auto *m : {&l1, &l2, &l1e, &l2e})
      (*m)->zero_grad();
    torch::Tensor got = f(x), want = body(l1e, l2e, xe);
    expectClose(got, want, 1e-5, "output");
    got.pow(2).sum().backward();
    want.pow(2).sum().backward();
    expectClose(x.grad(), xe.grad(), 1e-5, "input grad");
    expectSameGrads(*l1, *l1e, 1e-5);
    expectSameGrads(*l2, *l2e, 1e-5);
  }
  tgc::Stats s = tgc::stats();
  EXPECT_GT(s.graph_breaks, 0);
  EXPECT_GE(s.training_graphs, 2) << "one per segment";
  EXPECT_EQ(s.eager_fallbacks, 0);
}

TEST(Training, GradientAccumulationOverMicroBatches) {
  torch::manual_seed(7);
  auto eager = makeMlp(), mine = makeMlp();
  tgc::models::copyState(*mine, *eager);
  tgc::reset();
  auto f = tgc::compile([&](torch::Tensor x) { return mine->forward(x); });
  for (int micro = 0; micro < 3; ++micro) {
    torch::Tensor x = torch::randn({8, 64});
    (f(x).pow(2).mean() / 3).backward();
    (eager->forward(x).pow(2).mean() / 3).backward();
  }
  expectSameGrads(*mine, *eager, 1e-5);
  EXPECT_EQ(tgc::stats().training_graphs, 1) << "every micro-batch ran the compiled pair";
  tgc::test::expectCompiled(2, 6);
}

TEST(Training, RetainGraphWorksAndDoubleBackwardRaises) {
  torch::manual_seed(8);
  torch::nn::Linear lin(8, 4);
  tgc::reset();
  auto f = tgc::compile([&](torch::Tensor x) { return torch::tanh(lin(x)); });
  torch::Tensor x = torch::randn({3, 8}, torch::requires_grad());
  torch::Tensor y = f(x).sum();
  y.backward({}, /*retain_graph=*/true);
  torch::Tensor once = x.grad().clone();
  y.backward();
  expectClose(x.grad(), once * 2, 1e-6, "grad after two backward passes");
  EXPECT_EQ(tgc::stats().training_graphs, 1);
  tgc::test::expectCompiled(2, 3); // forward once, backward twice
  // Without retain_graph the saved tensors are gone: autograd's own error.
  EXPECT_THROW(y.backward(), c10::Error);
  // Higher derivatives through a compiled graph: a clear error, not zeros.
  torch::Tensor z = f(x).sum();
  try {
    torch::autograd::grad({z}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    ADD_FAILURE() << "double backward did not raise";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("double backward"), std::string::npos) << e.what();
  }
}

TEST(Training, NoGradAndInferenceModeUseTheForwardOnlyGraph) {
  torch::manual_seed(9);
  auto mlp = makeMlp();
  tgc::reset();
  auto f = tgc::compile([&](torch::Tensor x) { return mlp->forward(x); });
  torch::Tensor x = torch::randn({4, 64});
  torch::Tensor trained = f(x);
  EXPECT_TRUE(trained.requires_grad());
  EXPECT_EQ(tgc::stats().training_graphs, 1);
  {
    torch::NoGradGuard g;
    torch::Tensor y = f(x);
    EXPECT_FALSE(y.requires_grad());
    expectClose(y, trained.detach(), 1e-6, "no_grad output");
  }
  {
    c10::InferenceMode mode;
    torch::Tensor y = f(x);
    EXPECT_FALSE(y.requires_grad());
    expectClose(y, trained.detach(), 1e-6, "inference_mode output");
  }
  EXPECT_EQ(tgc::stats().training_graphs, 1) << "no training graph without grad";
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
}

} // namespace
