// Capture: the ATen ops a callable runs are recorded at the dispatcher.
#include "compiler/capture/SegmentText.h"
#include "compiler/capture/Tracer.h"
#include "runtime/Executor.h"

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

/// The node of `s` running `op`; fails the test when there is none.
const SegmentNode &nodeOf(const Segment &s, const std::string &op) {
  for (const SegmentNode &n : s.nodes)
    if (n.op == op)
      return n;
  ADD_FAILURE() << "no " << op << " in\n" << s.str();
  static SegmentNode none;
  return none;
}

// A GPU run found this: a factory without a device (torch::linspace in the
// program) was recorded as None, so the graph moved to CUDA still made a
// CPU tensor and its kernel read a host address.
TEST(Capture, FactoriesWithoutADeviceFollowTheGraphToItsDevice) {
  torch::Tensor x = torch::randn({4, 8});
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({x});
    auto w = torch::linspace(0.5, 1.5, 8);
    outs = {in[0] * w + torch::zeros_like(in[0]) + in[0].to(torch::kDouble).sum()};
  }
  ctx.finish(outs);
  const Segment &s = ctx.segment();
  auto deviceArg = [](const SegmentNode &n) -> const ArgValue * {
    for (const ArgValue &a : n.args)
      if (a.kind == ArgValue::Device)
        return &a;
    return nullptr;
  };
  const ArgValue *made = deviceArg(nodeOf(s, "aten::linspace"));
  ASSERT_TRUE(made) << s.str();
  EXPECT_EQ(made->s, "cpu");
  // Ops with tensor arguments keep their inputs' device: None stays None.
  EXPECT_EQ(deviceArg(nodeOf(s, "aten::zeros_like")), nullptr);
  EXPECT_EQ(deviceArg(nodeOf(s, "aten::_to_copy")), nullptr);
  Segment cuda = s.on("cuda");
  ASSERT_TRUE(deviceArg(nodeOf(cuda, "aten::linspace")));
  EXPECT_EQ(deviceArg(nodeOf(cuda, "aten::linspace"))->s, "cuda");
}

// A GPU run found this too: ATen's CUDA layer norm returns float mean and
// rstd for bfloat16 inputs, its CPU kernel bfloat16 ones, and a backward
// built from a CPU capture handed CUDA's kernel the wrong dtype.
TEST(Capture, StatisticsTakeTheDtypesOfTheTargetDevicesKernels) {
  torch::Tensor x = torch::randn({4, 8}).to(torch::kBFloat16);
  torch::Tensor w = torch::randn({8}).to(torch::kBFloat16);
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({x, w});
    auto r = at::native_layer_norm(in[0], {8}, in[1], in[1], 1e-5);
    outs = {std::get<0>(r), std::get<1>(r), std::get<2>(r)};
  }
  ctx.finish(outs);
  const Segment &s = ctx.segment();
  const SegmentNode &ln = nodeOf(s, "aten::native_layer_norm");
  ASSERT_EQ(ln.outputs.size(), 3u);
  for (int k : {0, 1, 2})
    EXPECT_EQ(s.values[ln.outputs[k]].dtype, DType::BFloat16) << "CPU result " << k;
  Segment cuda = s.on("cuda");
  EXPECT_EQ(cuda.values[ln.outputs[0]].dtype, DType::BFloat16);
  EXPECT_EQ(cuda.values[ln.outputs[1]].dtype, DType::Float32);
  EXPECT_EQ(cuda.values[ln.outputs[2]].dtype, DType::Float32);
  Segment back = cuda.on("cpu");
  EXPECT_EQ(back.values[ln.outputs[1]].dtype, DType::BFloat16);
  EXPECT_EQ(s.on("cuda:1").on("cuda:0").values[ln.outputs[1]].dtype, DType::Float32);
}

// And this: capture on the CPU records SDPA as ATen's CPU-only flash
// kernel, which a graph moved to CUDA cannot call.
TEST(Capture, AttentionMovedToCudaIsTheComposite) {
  torch::manual_seed(3);
  torch::Tensor q = torch::randn({2, 3, 8, 16}), k = torch::randn({2, 3, 8, 16}),
                v = torch::randn({2, 3, 8, 16});
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    auto in = ctx.makeInputs({q, k, v});
    outs = {at::scaled_dot_product_attention(in[0], in[1], in[2], std::nullopt, 0.0,
                                             /*is_causal=*/true, /*scale=*/0.3) * 2};
  }
  ctx.finish(outs);
  const Segment &s = ctx.segment();
  nodeOf(s, "aten::_scaled_dot_product_flash_attention_for_cpu");
  Segment cuda = s.on("cuda");
  const SegmentNode &sdpa = nodeOf(cuda, "aten::scaled_dot_product_attention");
  ASSERT_EQ(sdpa.args.size(), 8u);
  ASSERT_EQ(sdpa.outputs.size(), 1u);
  // The arguments moved to the composite's order: run it (on the CPU) and
  // compare with eager.
  const std::vector<ArgValue> &a = sdpa.args;
  EXPECT_EQ(a[3].kind, ArgValue::None); // attn_mask
  EXPECT_EQ(a[5].kind, ArgValue::Bool);
  EXPECT_TRUE(a[5].b); // is_causal
  EXPECT_DOUBLE_EQ(a[6].d, 0.3); // scale
  EXPECT_FALSE(a[7].b); // enable_gqa
  std::string error;
  auto graph = CompiledGraph::load(cuda.on("cpu").toExternPlan(), error);
  ASSERT_TRUE(graph) << error;
  std::vector<at::Tensor> got = graph->run({q, k, v});
  at::Tensor want = at::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true, 0.3) * 2;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(torch::allclose(got[0], want, 1e-5, 1e-5));
  // Its logsumexp read by a later op: the CPU kernel stays (ATen then says
  // plainly that it has no CUDA kernel).
  Segment kept = s;
  SegmentNode reader = kept.nodes.back();
  for (SegmentNode &n : kept.nodes)
    if (n.op == "aten::_scaled_dot_product_flash_attention_for_cpu")
      reader.args[0].tensors = {n.outputs[1]};
  kept.nodes.push_back(reader);
  nodeOf(kept.on("cuda"), "aten::_scaled_dot_product_flash_attention_for_cpu");
}

} // namespace
} // namespace tgc
