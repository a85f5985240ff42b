// Host reads of values capture already knows (real-model issue, point 2):
// a size turned into a tensor and read back, as traced programs do
// (prim::NumToTensor then aten::Int), is answered at capture time under a
// guard, with no graph break; a small real tensor read by item() is answered
// too, and a changed value is seen (the guard fails, the call runs eagerly).
#include "tgc/tgc.h"
#include "tests/e2e/ExpectCompiled.h"

#include <ATen/ScalarOps.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/script.h>
#include <torch/torch.h>

namespace {

void expectClose(const torch::Tensor &got, const torch::Tensor &want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_GT(want.abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5))
      << "max error " << (got - want).abs().max().item<double>();
}

/// A channel shuffle the way a traced torchvision ShuffleNet computes it:
/// the channel count becomes a tensor, is divided, and is read back.
torch::Tensor channelShuffle(const torch::Tensor &x) {
  at::Tensor channels = at::scalar_to_tensor(x.size(1)); // prim::NumToTensor
  int64_t perGroup = at::floor_divide(channels, 2).item<int64_t>(); // aten::Int
  torch::Tensor g = x.view({x.size(0), 2, perGroup, x.size(2)}).transpose(1, 2).contiguous();
  return (g.view({x.size(0), -1, x.size(2)}) * 1.5).relu();
}

TEST(KnownValues, SizeArithmeticReadBackIsAnsweredWithoutABreak) {
  torch::NoGradGuard noGrad;
  auto f = tgc::compile([](torch::Tensor x) { return channelShuffle(x); });
  tgc::reset();
  for (int i = 0; i < 4; ++i) {
    torch::Tensor x = torch::randn({2, 6, 5});
    expectClose(f(x), channelShuffle(x));
  }
  tgc::Stats s = tgc::stats();
  EXPECT_EQ(s.graph_breaks, 0) << "the read of a known value broke the graph";
  EXPECT_EQ(s.captures, 1) << "later calls replay the one graph";
  EXPECT_EQ(s.eager_fallbacks, 0);
  tgc::test::expectCompiled(1, 4);
}

TEST(KnownValues, AnIntegerDivisionOfSizesGetsItsShapeFromTheValues) {
  // floor_divide has no Meta kernel: by example on zeros it divides by zero.
  torch::NoGradGuard noGrad;
  auto windows = [](torch::Tensor x) {
    at::Tensor n = at::scalar_to_tensor(x.size(0));
    at::Tensor w = at::floor_divide(n, at::scalar_to_tensor(int64_t(4)));
    return x.view({w.item<int64_t>(), 4, -1}).sum(1) + 1;
  };
  auto f = tgc::compile(windows);
  tgc::reset();
  torch::Tensor x = torch::randn({8, 3});
  expectClose(f(x), windows(x));
  expectClose(f(x), windows(x));
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
}

TEST(KnownValues, TorchTensorOfASizeReadBackInCxxIsAnsweredWithoutABreak) {
  // What a C++ program writes for the same arithmetic: torch::tensor of a
  // size (a factory that copies host data), then item().
  torch::NoGradGuard noGrad;
  auto heads = [](torch::Tensor x) {
    int64_t c = torch::tensor(x.size(1)).item<int64_t>();
    int64_t perHead = (torch::tensor(x.size(2)) / 4).to(torch::kLong).item<int64_t>();
    return x.reshape({x.size(0), c, 4, perHead}).softmax(-1) * double(c);
  };
  auto f = tgc::compile(heads);
  tgc::reset();
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({2, 3, 8});
    expectClose(f(x), heads(x));
  }
  EXPECT_EQ(tgc::stats().graph_breaks, 0) << "the read of a known value broke the graph";
  EXPECT_EQ(tgc::stats().captures, 1);
  EXPECT_EQ(tgc::stats().eager_fallbacks, 0);
  // Another size is another specialization, read again, not the stale one.
  torch::Tensor y = torch::randn({2, 5, 12});
  expectClose(f(y), heads(y));
}

TEST(KnownValues, ASmallRealTensorReadIsGuardedAndItsChangeIsSeen) {
  torch::NoGradGuard noGrad;
  torch::Tensor scale = torch::tensor(3.0);
  auto f = tgc::compile([&](torch::Tensor x) { return (x * scale.item<double>()).sin(); });
  tgc::reset();
  torch::Tensor x = torch::randn({4, 7});
  expectClose(f(x), (x * 3.0).sin());
  expectClose(f(x), (x * 3.0).sin());
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
  scale.fill_(5.0); // the value the graph was specialized on changes
  expectClose(f(x), (x * 5.0).sin());
  expectClose(f(x), (x * 5.0).sin());
}

TEST(KnownValues, ReadsOfComputedValuesStillBreak) {
  // A value that depends on an input's data is not known: the graph breaks.
  torch::NoGradGuard noGrad;
  auto f = tgc::compile([](torch::Tensor x) {
    int64_t n = (x > 0).sum().item<int64_t>();
    return x * double(n);
  });
  tgc::reset();
  torch::Tensor x = torch::randn({16});
  expectClose(f(x), x * double((x > 0).sum().item<int64_t>()));
  EXPECT_GE(tgc::stats().graph_breaks, 1);
}

TEST(KnownValues, TorchScriptNumToTensorThenIntIsOneGraph) {
  // What torch.jit.trace writes for `x.view(b, 2, c // 2, l)`, run by the
  // TorchScript interpreter.
  torch::NoGradGuard noGrad;
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
    graph(%x : Tensor):
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %two : int = prim::Constant[value=2]()
      %b : int = aten::size(%x, %zero)
      %c : int = aten::size(%x, %one)
      %l : int = aten::size(%x, %two)
      %ct : Tensor = prim::NumToTensor(%c)
      %half : Tensor = aten::floor_divide(%ct, %two)
      %h : int = aten::Int(%half)
      %shape : int[] = prim::ListConstruct(%b, %two, %h, %l)
      %v : Tensor = aten::view(%x, %shape)
      %t : Tensor = aten::transpose(%v, %one, %two)
      %y : Tensor = aten::relu(%t)
      return (%y))IR",
                      graph.get());
  torch::jit::GraphFunction fn("shuffle", graph, nullptr);
  auto run = [&](torch::Tensor x) {
    torch::jit::Stack stack{x};
    fn.run(stack);
    return stack.at(0).toTensor();
  };
  auto compiled = tgc::compile(run);
  tgc::reset();
  for (int i = 0; i < 3; ++i) {
    torch::Tensor x = torch::randn({2, 6, 5});
    expectClose(compiled(x), run(x));
  }
  EXPECT_EQ(tgc::stats().graph_breaks, 0);
  EXPECT_EQ(tgc::stats().captures, 1);
}

} // namespace
