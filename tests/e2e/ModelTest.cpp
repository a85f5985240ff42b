// Whole models built with torch::nn, random weights: compiled output equals
// eager, and a forward launches at most half as many kernels and ATen calls
// as eager runs ATen kernels (views excluded on both sides: they move no data).
#include "tgc/tgc.h"

#include "bench/models/Models.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

/// Whether the ATen op `name` ("aten::view" or "aten::mul.Tensor") returns a
/// view of an input.
bool isViewOp(const std::string &qualified) {
  auto dot = qualified.find('.', qualified.find("::"));
  std::string name = qualified.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op)
    return false;
  const auto &returns = op->schema().returns();
  return !returns.empty() && returns[0].alias_info() && !returns[0].alias_info()->isWrite();
}

struct Counts {
  int64_t eagerKernels = 0; ///< ATen ops eager runs, views excluded
  int64_t tgcLaunches = 0;  ///< tgc kernels + computing ATen calls per forward
};

/// Compiles `fn`, checks it against eager on `inputs` and counts kernels.
template <class F, class... T>
Counts check(const std::string &name, F fn, double tol, T... inputs) {
  SCOPED_TRACE(name);
  Counts counts;
  tgc::Explanation e = tgc::explain(fn, inputs...);
  EXPECT_EQ(e.graph_break_count, 0) << e.str();
  for (const auto &ops : e.graph_ops)
    for (const std::string &op : ops)
      counts.eagerKernels += !isViewOp(op);
  tgc::reset();
  auto compiled = tgc::compile(fn);
  torch::Tensor want = fn(inputs...);
  compiled(inputs...); // compile
  tgc::Stats before = tgc::stats();
  torch::Tensor got = compiled(inputs...);
  tgc::Stats after = tgc::stats();
  EXPECT_EQ(after.eager_fallbacks, 0);
  EXPECT_EQ(after.captures - before.captures, 0) << "the second call replays";
  counts.tgcLaunches = (after.kernel_launches - before.kernel_launches) +
                       (after.extern_calls - before.extern_calls);
  EXPECT_TRUE(torch::allclose(got, want, tol, tol))
      << "max error " << (got - want).abs().max().item<double>();
  std::printf("[ model ] %-18s eager ATen kernels %3lld, tgc launches %3lld (%lld kernels + %lld ATen calls)\n",
              name.c_str(), (long long)counts.eagerKernels, (long long)counts.tgcLaunches,
              (long long)(after.kernel_launches - before.kernel_launches),
              (long long)(after.extern_calls - before.extern_calls));
  EXPECT_LE(counts.tgcLaunches * 2, counts.eagerKernels)
      << "tgc must launch at most half of what eager runs";
  return counts;
}

TEST(Models, Mlp) {
  torch::manual_seed(1);
  torch::NoGradGuard noGrad;
  torch::nn::Sequential mlp(torch::nn::Linear(256, 512), torch::nn::GELU(),
                            torch::nn::Linear(512, 512), torch::nn::ReLU(),
                            torch::nn::Linear(512, 128),
                            torch::nn::LayerNorm(torch::nn::LayerNormOptions({128})));
  auto fn = [&](torch::Tensor x) { return mlp->forward(x); };
  check("mlp", fn, 1e-4, torch::randn({32, 256}));
}

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t c)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, c, 3).padding(1).bias(false)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, c, 3).padding(1).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(c))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(c))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1(conv1(x)));
    return torch::relu(bn2(conv2(y)) + x);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::BatchNorm2d bn1, bn2;
};
TORCH_MODULE(BasicBlock);

TEST(Models, ResNetBasicBlockEval) {
  torch::manual_seed(2);
  torch::NoGradGuard noGrad;
  BasicBlock block(32);
  // Non-trivial running statistics, as a trained network has.
  for (auto &buf : block->named_buffers()) {
    if (buf.key().find("running_mean") != std::string::npos)
      buf.value().uniform_(-0.5, 0.5);
    if (buf.key().find("running_var") != std::string::npos)
      buf.value().uniform_(0.5, 2.0);
  }
  for (auto &p : block->named_parameters())
    if (p.key().find("bn") != std::string::npos)
      p.value().uniform_(0.5, 1.5);
  block->eval();
  auto fn = [&](torch::Tensor x) { return block->forward(x); };
  check("resnet_block", fn, 1e-4, torch::randn({2, 32, 16, 16}));
}

TEST(Models, TransformerEncoderLayer) {
  torch::manual_seed(3);
  torch::NoGradGuard noGrad;
  auto layer = tgc::models::transformerLayer(128, 4);
  layer->eval();
  auto fn = [&](torch::Tensor x) { return layer->forward(x); };
  check("transformer_layer", fn, 1e-4, torch::randn({16, 4, 128}));
}

TEST(Models, LstmCellStep) {
  torch::manual_seed(4);
  torch::NoGradGuard noGrad;
  torch::nn::LSTMCell cell(128, 256);
  auto fn = [&](torch::Tensor x, torch::Tensor h, torch::Tensor c) {
    auto [h2, c2] = cell->forward(x, std::make_tuple(h, c));
    return torch::cat({h2, c2}, 1);
  };
  check("lstm_cell", fn, 1e-5, torch::randn({16, 128}), torch::randn({16, 256}),
        torch::randn({16, 256}));
}

TEST(Models, Gpt2Block) {
  torch::manual_seed(5);
  torch::NoGradGuard noGrad;
  tgc::models::Gpt2Block block(128, 4);
  auto fn = [&](torch::Tensor x) { return block->forward(x); };
  check("gpt2_block", fn, 1e-4, torch::randn({2, 32, 128}));
}

} // namespace
