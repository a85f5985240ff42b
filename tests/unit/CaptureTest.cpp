// Capture: the ATen ops a callable runs are recorded at the dispatcher.
#include "compiler/capture/SegmentText.h"
#include "compiler/capture/Tracer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tgc {
namespace {

std::vector<std::string> opNames(const Segment &s) {
  std::vector<std::string> names;
  for (const SegmentNode &n : s.nodes)
    names.push_back(n.op + (n.overload.empty() ? "" : "." + n.overload));
  return names;
}

TEST(Capture, RecordsTheSkeletonsThreeOps) {
  torch::Tensor a = torch::randn({4, 8}), b = torch::randn({8});
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({a, b});
    EXPECT_TRUE(isTracer(in[0]));
    EXPECT_EQ(in[0].sizes(), a.sizes());
    outs = {(in[0] * in[1] + 1).relu()};
  }
  ctx.finish(outs);
  const Segment &s = ctx.segment();
  EXPECT_EQ(opNames(s), (std::vector<std::string>{"aten::mul.Tensor",
                                                  "aten::add.Scalar", "aten::relu"}));
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.values[s.outputs[0]].sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(s.values[s.outputs[0]].dtype, DType::Float32);
  // The `1` is a scalar argument, not a lifted tensor.
  EXPECT_EQ(s.nodes[1].args[1].kind, ArgValue::Int);
  EXPECT_EQ(s.nodes[1].args[1].i, 1);
  EXPECT_TRUE(ctx.lifted().empty());
  // Capture ran no kernel on the real inputs and left them untouched.
  EXPECT_FALSE(isTracer(a));
}

TEST(Capture, CapturedSegmentRoundTripsThroughItsText) {
  torch::Tensor x = torch::randn({8, 4}).t(), w = torch::randn({8}), m = torch::randn({8, 3});
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({x, w, m});
    auto y = torch::layer_norm(in[0], {8}, in[1], torch::Tensor(), 1e-5);
    auto z = torch::cat({y.softmax(1), in[0] * 0.1}, 0).mm(in[2]);
    outs = {z.view({24}), torch::where(z > 0, z, 2.5).var(0), y.sum({1}, false, torch::kDouble)};
  }
  ctx.finish(outs);
  const Segment &s = ctx.segment();
  EXPECT_EQ(s.values[s.inputs[0]].strides, (std::vector<int64_t>{1, 4})); // x is a transpose
  std::string text = printSegment(s), error;
  Segment parsed;
  ASSERT_TRUE(parseSegment(text, parsed, error)) << error << "\n" << text;
  EXPECT_EQ(printSegment(parsed), text);
  // The structural key (the graph cache's key) survives the round trip.
  EXPECT_EQ(parsed.structuralKey(), s.structuralKey());
}

TEST(Capture, LiftsCapturedTensorsAsInputs) {
  torch::Tensor w = torch::randn({3});
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({torch::randn({2, 3})});
    outs = {in[0] * w + w};
  }
  ctx.finish(outs);
  ASSERT_EQ(ctx.lifted().size(), 1u); // w lifted once, used twice
  EXPECT_TRUE(ctx.lifted()[0].is_same(w));
  EXPECT_EQ(ctx.segment().inputs.size(), 2u);
}

TEST(Capture, HostValueIsAGraphBreak) {
  TraceContext ctx("cpu");
  TraceGuard guard(ctx);
  auto in = ctx.makeInputs({torch::randn({3})});
  try {
    (void)in[0].sum().item<float>();
    FAIL() << "item() on a tracer must break the graph";
  } catch (const GraphBreak &b) {
    EXPECT_EQ(b.op, "aten::_local_scalar_dense");
  }
}

TEST(Capture, FactoriesInsideTheCallableAreRecorded) {
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  torch::Tensor x = torch::randn({2, 2});
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({x});
    outs = {in[0] + torch::rand({2, 2})};
  }
  ctx.finish(outs);
  // rand must run on every call, so it is an op of the graph, not a
  // constant.
  EXPECT_TRUE(ctx.lifted().empty());
  bool sawRand = false;
  for (const SegmentNode &n : ctx.segment().nodes)
    sawRand |= n.op == "aten::rand";
  EXPECT_TRUE(sawRand) << ctx.segment().str();
}

} // namespace
} // namespace tgc
