// Freezing (issue 17, point 1): weights of inference graphs as constants,
// batch norm folded into convolutions, oneDNN convolutions with prepacked
// weights and fused activations, guarded by the weights' version counters.
#include "tgc/tgc.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want, double tol = 1e-4) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  double scale = std::max(1.0, want.abs().max().item<double>());
  double err = (got - want).abs().max().item<double>();
  EXPECT_LE(err, tol * scale) << "max error " << err << " (max |x| " << scale << ")";
}

/// Whether oneDNN runs bf16 on this CPU (what freezing asks too).
bool oneDnnHasBFloat16() {
  auto op = c10::Dispatcher::singleton().findSchema({"mkldnn::_is_mkldnn_bf16_supported", ""});
  if (!op)
    return false;
  std::vector<c10::IValue> stack;
  op->callBoxed(&stack);
  return stack.at(0).toBool();
}

/// `net` (f32) run on `x`, then converted to bf16 and run eagerly and through
/// tgc::compile (after a tgc::reset()): tgc's error against the f32 run must
/// be within twice eager bf16's (plus 1% of the output's scale). Returns the
/// compiled module.
template <class Net> auto expectBf16WithinEagerError(Net &net, const torch::Tensor &x) {
  torch::Tensor want = net->forward(x).detach();
  net->to(torch::kBFloat16);
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x16 = x.to(torch::kBFloat16);
  torch::Tensor got = compiled->forward(x16), eager = net->forward(x16);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  double scale = std::max(1.0, want.abs().max().item<double>());
  double err = (got.to(torch::kFloat) - want).abs().max().item<double>() / scale;
  double eagerErr = (eager.to(torch::kFloat) - want).abs().max().item<double>() / scale;
  EXPECT_GT(eagerErr, 0.0) << "bf16 rounds: eager's error cannot be 0";
  EXPECT_LE(err, 2 * eagerErr + 1e-2) << "tgc " << err << ", eager bf16 " << eagerErr;
  return compiled;
}

/// A ResNet-style block and head: conv-bn-relu, conv-bn + residual, relu,
/// a SiLU branch, pooling, flatten and a linear layer.
struct SmallNetImpl : torch::nn::Module {
  SmallNetImpl()
      : c1(register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        b1(register_module("b1", torch::nn::BatchNorm2d(16))),
        c2(register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).padding(1).bias(false)))),
        b2(register_module("b2", torch::nn::BatchNorm2d(16))),
        c3(register_module("c3", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 8, 1).stride(2)))),
        fc(register_module("fc", torch::nn::Linear(8 * 6 * 6, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = torch::relu(b1(c1(x)));
    y = torch::relu(b2(c2(y)) + y);
    y = torch::silu(c3(y));
    y = torch::max_pool2d(y, 2, 1);
    return fc(y.flatten(1));
  }
  torch::nn::Conv2d c1, c2, c3;
  torch::nn::BatchNorm2d b1, b2;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallNet);

/// Random running statistics and affine parameters, so that folding the
/// batch norms changes the weights.
SmallNet randomNet() {
  torch::manual_seed(11);
  SmallNet net;
  torch::NoGradGuard noGrad;
  for (auto *bn : {&net->b1, &net->b2}) {
    (*bn)->running_mean.uniform_(-0.5, 0.5);
    (*bn)->running_var.uniform_(0.5, 2.0);
    (*bn)->weight.uniform_(0.5, 1.5);
    (*bn)->bias.uniform_(-0.3, 0.3);
  }
  net->eval();
  return net;
}

TEST(Freeze, ConvNetMatchesEagerWithFoldedBatchNormsAndOneDnnConvolutions) {
  SmallNet net = randomNet();
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x = torch::randn({2, 3, 13, 13});
  expectClose(compiled->forward(x), net->forward(x));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.frozen_graphs, 1);
  EXPECT_EQ(s.onednn_convolutions, 3) << s.str();
  EXPECT_GE(s.folded_ops, 3) << "two batch norms and the linear weight's transpose\n" << s.str();
  EXPECT_EQ(s.eager_fallbacks, 0);
  // conv+bn+relu, conv+bn+residual+relu and conv+silu are one oneDNN call
  // each: a replay launches no tgc kernel and makes 6 ATen calls (3
  // convolutions, max pool, flatten's view, the linear layer's addmm).
  tgc::reset();
  expectClose(compiled->forward(x), net->forward(x));
  EXPECT_EQ(tgc::stats().kernel_launches, 0) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().extern_calls, 5) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().views_resolved, 1) << "flatten's view is made at load time\n"
                                            << tgc::stats().str();
  // Each is a typed call (the convolutions, the binary one with the
  // residual included, max pooling, addmm), none through boxed IValues.
  EXPECT_EQ(tgc::stats().boxed_calls, 0) << tgc::stats().str();
  // Replays: other random inputs, a channels-last one among them.
  for (int i = 0; i < 3; ++i) {
    torch::Tensor z = torch::randn({2, 3, 13, 13});
    if (i == 1)
      z = z.contiguous(torch::MemoryFormat::ChannelsLast);
    tgc::Stats before = tgc::stats();
    expectClose(compiled->forward(z), net->forward(z));
    tgc::Stats after = tgc::stats();
    // The kept arena serves every kernel: the executor's one allocation is
    // the pooled result, which oneDNN's channels-last layout leaves NHWC and
    // flatten's view needs NCHW.
    EXPECT_EQ(after.executor_allocations - before.executor_allocations, 1) << after.str();
    EXPECT_EQ(after.view_calls - before.view_calls, 0) << after.str();
  }
}

TEST(Freeze, BFloat16ConvNetIsOneDnnCallsWithinBFloat16sPrecision) {
  if (!oneDnnHasBFloat16())
    GTEST_SKIP() << "oneDNN has no bf16 kernels on this CPU (needs AVX-512): bf16 convolutions "
                    "stay ATen calls";
  SmallNet net = randomNet();
  auto compiled = expectBf16WithinEagerError(net, torch::randn({2, 3, 13, 13}));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.frozen_graphs, 1);
  EXPECT_EQ(s.onednn_convolutions, 3) << s.str();
  torch::NoGradGuard noGrad;
  torch::Tensor z = torch::randn({2, 3, 13, 13}).to(torch::kBFloat16);
  torch::Tensor gz = compiled->forward(z), ez = net->forward(z);
  double zscale = std::max(1.0, ez.to(torch::kFloat).abs().max().item<double>());
  EXPECT_LE((gz - ez).to(torch::kFloat).abs().max().item<double>() / zscale, 5e-2);
}

/// A transformer MLP block: linear, GELU, linear, on [batch, tokens, dim].
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t dim, int64_t hidden)
      : fc1(register_module("fc1", torch::nn::Linear(dim, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, dim))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::gelu(fc1(x))) + x; }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

/// A seeded MLP in eval mode, compiled after a tgc::reset().
auto compiledMlp(Mlp &net, uint64_t seed, int64_t dim, int64_t hidden) {
  torch::manual_seed(seed);
  net = Mlp(dim, hidden);
  net->eval();
  tgc::reset();
  return tgc::compile(net);
}

TEST(Freeze, LargeF32LinearLayersArePackedMklGemmsAndFollowWeightUpdates) {
  // 2 x 48 tokens x 256 -> 512: 12.6M multiply-adds per layer, above the
  // 1.5M from which MKL's packed sgemm pays.
  torch::NoGradGuard noGrad;
  Mlp net(nullptr);
  auto compiled = compiledMlp(net, 12, 256, 512);
  torch::Tensor x = torch::randn({2, 48, 256});
  expectClose(compiled->forward(x), net->forward(x));
  EXPECT_EQ(tgc::stats().packed_linears, 2) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
  EXPECT_EQ(tgc::stats().boxed_calls, 0) << "mkl::_mkl_linear is called unboxed\n"
                                         << tgc::stats().str();
  // A non-contiguous input of the same shape, then new weights.
  torch::Tensor xt = torch::randn({2, 256, 48}).transpose(1, 2);
  expectClose(compiled->forward(xt), net->forward(xt));
  net->fc1->weight.mul_(-0.5);
  net->fc2->bias.add_(1.0);
  expectClose(compiled->forward(x), net->forward(x));
}

TEST(Freeze, SmallF32LinearLayersStayAddmm) {
  // 4 x 16 -> 32: packing costs more than it saves (bench/Linear.cpp).
  torch::NoGradGuard noGrad;
  Mlp net(nullptr);
  auto compiled = compiledMlp(net, 13, 16, 32);
  torch::Tensor x = torch::randn({4, 16});
  expectClose(compiled->forward(x), net->forward(x));
  EXPECT_EQ(tgc::stats().packed_linears, 0) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().frozen_graphs, 1) << "the weights' transposes are still folded";
}

TEST(Freeze, BFloat16LinearLayersAreOneDnnGemmsWithTheirActivation) {
  if (!oneDnnHasBFloat16())
    GTEST_SKIP() << "oneDNN has no bf16 kernels on this CPU (needs AVX-512)";
  torch::manual_seed(14);
  Mlp net(64, 128);
  net->eval();
  torch::Tensor x = torch::randn({24, 64});
  auto compiled = expectBf16WithinEagerError(net, x);
  EXPECT_EQ(tgc::stats().packed_linears, 2) << tgc::stats().str();
  torch::NoGradGuard noGrad;
  torch::Tensor x16 = x.to(torch::kBFloat16);
  // A replay: fc1's bias and GELU are in its oneDNN call, so the residual
  // add is the one tgc kernel.
  tgc::reset();
  compiled->forward(x16);
  EXPECT_EQ(tgc::stats().kernel_launches, 1) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().extern_calls, 2) << tgc::stats().str();
}

/// A DenseNet-style layer: two convolutions concatenated along channels,
/// batch norm, in-place ReLU, a 1x1 convolution.
struct DenseLayerImpl : torch::nn::Module {
  DenseLayerImpl()
      : a(register_module("a", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        b(register_module("b", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 24, 3).padding(1)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(40))),
        c(register_module("c", torch::nn::Conv2d(torch::nn::Conv2dOptions(40, 8, 1)))) {}
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = bn(torch::cat({a(x), b(x)}, 1));
    return c(y.relu_());
  }
  torch::nn::Conv2d a, b;
  torch::nn::BatchNorm2d bn;
  torch::nn::Conv2d c;
};
TORCH_MODULE(DenseLayer);

TEST(Freeze, AConcatenationOfChannelsLastConvolutionsStaysChannelsLast) {
  // oneDNN's outputs are channels-last; the concatenation, the batch norm
  // and the in-place ReLU over it keep that layout for the next
  // convolution, so tgc's kernel loops over channels inside, one loop per
  // concatenated input (0-16, 16-40), each reading one buffer.
  torch::manual_seed(5);
  DenseLayer net;
  {
    torch::NoGradGuard noGrad;
    net->bn->running_mean.uniform_(-0.5, 0.5);
    net->bn->running_var.uniform_(0.5, 2.0);
  }
  net->eval();
  torch::NoGradGuard noGrad;
  std::string dir = testing::TempDir() + "/freeze_cat_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("TGC_DEBUG_DIR", dir.c_str(), 1);
  tgc::reset();
  tgc::Options opts;
  opts.cache_dir = dir + "/cache";
  auto compiled = tgc::compile(net, opts);
  torch::Tensor x = torch::randn({2, 3, 12, 12});
  expectClose(compiled->forward(x), net->forward(x));
  unsetenv("TGC_DEBUG_DIR");
  // The two 3x3 convolutions are oneDNN's, the small 1x1 one after the
  // ReLU ATen's (which keeps its channels-last input's layout).
  EXPECT_EQ(tgc::stats().onednn_convolutions, 2) << tgc::stats().str();
  EXPECT_EQ(tgc::stats().aten_convolutions, 1) << tgc::stats().str();
  std::string src;
  for (const auto &f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ".cpp") {
      std::ifstream in(f.path());
      std::stringstream ss;
      ss << in.rdbuf();
      src += ss.str();
    }
  EXPECT_NE(src.find("for (long long j = 0LL; j < 16LL; ++j)"), std::string::npos) << src;
  EXPECT_NE(src.find("for (long long j = 16LL; j < 40LL; ++j)"), std::string::npos) << src;
  for (int i = 0; i < 2; ++i) {
    torch::Tensor z = torch::randn({2, 3, 12, 12});
    expectClose(compiled->forward(z), net->forward(z));
  }
}

/// MNASNet-style inverted residuals at a small spatial size: a 3x3 stem,
/// 1x1 expansions and projections (batch norms, ReLUs, a residual add), a
/// depthwise 3x3, and one large 1x1 layer.
struct InvertedResidualImpl : torch::nn::Module {
  InvertedResidualImpl()
      : stem(register_module("stem",
                             torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3).padding(1)))),
        expand(register_module("expand",
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 96, 1).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(96))),
        dw(register_module(
            "dw", torch::nn::Conv2d(torch::nn::Conv2dOptions(96, 96, 3).padding(1).groups(96)))),
        project(register_module(
            "project", torch::nn::Conv2d(torch::nn::Conv2dOptions(96, 32, 1).bias(false)))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(32))),
        big(register_module("big", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 1024, 1)))) {}
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor s = torch::relu(stem(x));
    torch::Tensor y = torch::relu(bn1(expand(s)));
    y = torch::relu(dw(y));
    y = bn2(project(y)) + s;
    return torch::relu(big(y)).mean({2, 3});
  }
  torch::nn::Conv2d stem, expand;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d dw, project;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Conv2d big;
};
TORCH_MODULE(InvertedResidual);

TEST(Freeze, SmallPointwiseConvolutionsAreAtenCallsWithTheirBatchNormFolded) {
  // Below 2M multiply-adds a 1x1 convolution is ATen's (its call measured
  // 1.35x-3.4x faster than oneDNN's fused one, tgc-bench-conv): the batch
  // norm still folds into its weight, the ReLU and the residual add are
  // tgc kernels, and the layouts stay channels-last, so no result is
  // copied to another layout. 3x3 layers and the large 1x1 one stay oneDNN's.
  torch::manual_seed(9);
  InvertedResidual net;
  {
    torch::NoGradGuard noGrad;
    for (auto *bn : {&net->bn1, &net->bn2}) {
      (*bn)->running_mean.uniform_(-0.5, 0.5);
      (*bn)->running_var.uniform_(0.5, 2.0);
      (*bn)->weight.uniform_(0.5, 1.5);
      (*bn)->bias.uniform_(-0.3, 0.3);
    }
  }
  net->eval();
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x = torch::randn({1, 3, 8, 8});
  expectClose(compiled->forward(x), net->forward(x));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.frozen_graphs, 1) << s.str();
  // expand (32x96 at 8x8: 197K), project (96x32: 197K); big is 2.1M.
  EXPECT_EQ(s.aten_convolutions, 2) << s.str();
  EXPECT_EQ(s.onednn_convolutions, 3) << "stem, depthwise, big\n" << s.str();
  EXPECT_GE(s.folded_ops, 2) << "both batch norms\n" << s.str();
  EXPECT_EQ(s.eager_fallbacks, 0) << s.str();
  // Replays: other random inputs, channels-last and strided ones among them.
  for (int i = 0; i < 4; ++i) {
    torch::Tensor z = torch::randn({1, 3, 8, 8});
    if (i == 1)
      z = z.contiguous(torch::MemoryFormat::ChannelsLast);
    if (i == 2)
      z = torch::randn({1, 3, 8, 16}).slice(3, 0, 16, 2);
    expectClose(compiled->forward(z), net->forward(z)); // a layout of its own compiles once
    tgc::Stats before = tgc::stats();
    expectClose(compiled->forward(z), net->forward(z));
    tgc::Stats after = tgc::stats();
    // 5 convolutions and no boxed call; the executor's one allocation is
    // the returned mean (a fresh tensor per call): no ATen result is
    // copied to another layout.
    EXPECT_EQ(after.extern_calls - before.extern_calls, 5) << after.str();
    EXPECT_EQ(after.boxed_calls - before.boxed_calls, 0) << after.str();
    EXPECT_EQ(after.executor_allocations - before.executor_allocations, 1) << after.str();
  }
}

TEST(Freeze, AnInPlaceWeightUpdateFreezesAgainInsteadOfAStaleAnswer) {
  SmallNet net = randomNet();
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x = torch::randn({1, 3, 13, 13});
  expectClose(compiled->forward(x), net->forward(x));
  // An optimizer step on a convolution's weight and a batch norm's
  // statistics (folded into it), and load_state_dict's copy_ of the linear
  // layer's weight.
  net->c1->weight.add_(0.25);
  net->b2->running_var.mul_(3.0);
  expectClose(compiled->forward(x), net->forward(x));
  net->fc->weight.copy_(torch::randn_like(net->fc->weight));
  expectClose(compiled->forward(x), net->forward(x));
  // set_data swaps a weight's storage without touching its version.
  net->c3->weight.set_data(torch::randn_like(net->c3->weight));
  expectClose(compiled->forward(x), net->forward(x));
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.frozen_graphs, 4) << s.str();
  EXPECT_EQ(s.recompiles, 0) << "freezing again is not a recompile";
  EXPECT_EQ(s.graphs_compiled, 1) << "the graph compiled once\n" << s.str();
  EXPECT_LE(s.pipelines_run, 1) << s.str();
  // Unchanged weights: replays, no capture.
  int64_t captures = s.captures;
  expectClose(compiled->forward(x), net->forward(x));
  EXPECT_EQ(tgc::stats().captures, captures);
}

TEST(Freeze, OptionsFreezeFalseKeepsWeightsAsInputs) {
  SmallNet net = randomNet();
  torch::NoGradGuard noGrad;
  tgc::reset();
  tgc::Options options;
  options.freeze = false;
  auto compiled = tgc::compile(net, options);
  torch::Tensor x = torch::randn({2, 3, 13, 13});
  expectClose(compiled->forward(x), net->forward(x));
  EXPECT_EQ(tgc::stats().frozen_graphs, 0);
  EXPECT_EQ(tgc::stats().onednn_convolutions, 0);
  net->c1->weight.add_(0.25);
  expectClose(compiled->forward(x), net->forward(x));
}

TEST(Freeze, NothingIsFrozenWhenGradientsAreNeeded) {
  SmallNet net = randomNet();
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x = torch::randn({2, 3, 13, 13});
  torch::Tensor got = compiled->forward(x), want = net->forward(x);
  expectClose(got.detach(), want.detach());
  EXPECT_EQ(tgc::stats().frozen_graphs, 0) << "weights require grad in grad mode";
  EXPECT_TRUE(got.requires_grad());
}

TEST(Freeze, TrainModeBatchNormWritesItsStatisticsSoNothingIsFrozen) {
  SmallNet net = randomNet(), reference = randomNet();
  net->train();
  reference->train();
  torch::NoGradGuard noGrad;
  tgc::reset();
  auto compiled = tgc::compile(net);
  torch::Tensor x = torch::randn({2, 3, 13, 13});
  expectClose(compiled->forward(x), reference->forward(x));
  expectClose(net->b1->running_mean, reference->b1->running_mean, 1e-5);
  EXPECT_EQ(tgc::stats().frozen_graphs, 0);
}

// A mask the callable builds and fills with a captured value: the fill
// writes the mask, not the weight it reads, so the graph still freezes.
TEST(Freeze, AWriteThatOnlyReadsAWeightStillFreezes) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(5);
  torch::Tensor w = torch::randn({8, 8}), c = torch::tensor(2.5);
  auto program = [&](torch::Tensor x) {
    torch::Tensor mask = torch::zeros({4, 8});
    mask.slice(0, 0, 2).fill_(c);
    return x.mm(w.t()) + mask;
  };
  tgc::reset();
  auto f = tgc::compile(program);
  torch::Tensor x = torch::randn({4, 8});
  expectClose(f(x), program(x));
  EXPECT_EQ(tgc::stats().frozen_graphs, 1);
  expectClose(f(x), program(x));
  tgc::Options off;
  off.freeze = false;
  auto g = tgc::compile(program, off);
  expectClose(g(x), program(x));
}

} // namespace
