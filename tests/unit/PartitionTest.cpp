// Training's joint graph and min-cut partition on small captured graphs:
// what the forward saves, what the backward recomputes, and that the two
// halves fit together.
#include "compiler/capture/Tracer.h"
#include "compiler/training/Partition.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>

namespace tgc {
namespace {

/// The forward segment of `f` on inputs shaped like `inputs`.
Segment capture(const std::vector<at::Tensor> &inputs,
                const std::function<at::Tensor(const std::vector<at::Tensor> &)> &f) {
  TraceContext ctx("cpu");
  std::vector<at::Tensor> outs;
  {
    TraceGuard guard(ctx);
    outs = {f(ctx.makeInputs(inputs))};
  }
  ctx.finish(outs);
  return ctx.segment();
}

TrainingPartition partitionOf(const Segment &fwd, const std::vector<bool> &grad) {
  JointGraph joint;
  std::string error;
  EXPECT_TRUE(buildJointGraph(fwd, grad, joint, error)) << error;
  EXPECT_EQ(joint.gradOf.size(), std::count(grad.begin(), grad.end(), true));
  return partitionJoint(joint);
}

TEST(Partition, PointwiseChainsAreRecomputedNotSaved) {
  // tanh and exp derivatives read their outputs; both are cheap to compute
  // again from the inputs, which cost nothing to keep.
  Segment fwd = capture({torch::randn({4, 256}), torch::randn({256})}, [](const auto &in) {
    return (in[0] * in[1]).tanh().exp();
  });
  TrainingPartition p = partitionOf(fwd, {true, true});
  EXPECT_EQ(p.layout.savedBytes, 0);
  EXPECT_GE(p.recomputedNodes, 2);
  EXPECT_EQ(p.forward.outputs.size(), 1u) << "nothing saved beyond the output";
  for (const TrainingLayout::Source &s : p.layout.backwardInputs)
    if (s.kind == TrainingLayout::Source::ForwardOutput)
      EXPECT_LT(s.index, (int)p.layout.numOutputs) << "only the user's output may be saved";
}

TEST(Partition, LibraryCallResultsAreSavedAndTheirEpilogueRecomputed) {
  // relu(mm(x, w)) * 2: relu's derivative needs the mm result (or relu's);
  // mm may not run again, so its 4x64 floats are saved, and the relu mask
  // is recomputed from them.
  Segment fwd = capture({torch::randn({4, 32}), torch::randn({32, 64})}, [](const auto &in) {
    return at::mm(in[0], in[1]).relu() * 2;
  });
  TrainingPartition p = partitionOf(fwd, {true, true});
  EXPECT_EQ(p.layout.savedBytes, 4 * 64 * 4);
  EXPECT_GE(p.recomputedNodes, 1);
  int mmForward = 0, mmBackward = 0;
  for (const SegmentNode &n : p.forward.nodes)
    mmForward += n.op == "aten::mm";
  for (const SegmentNode &n : p.backward.nodes)
    mmBackward += n.op == "aten::mm";
  EXPECT_EQ(mmForward, 1);
  EXPECT_EQ(mmBackward, 2) << "the two gradient products; the forward mm is not run again";
  EXPECT_EQ(p.backward.outputs.size(), 2u) << "gradients of x and w";
}

TEST(Partition, OnlyInputsThatRequireGradGetGradients) {
  Segment fwd = capture({torch::randn({8}), torch::randn({8})},
                        [](const auto &in) { return in[0].sigmoid() * in[1]; });
  TrainingPartition p = partitionOf(fwd, {false, true});
  EXPECT_EQ(p.layout.gradOf, std::vector<int>{1});
  EXPECT_EQ(p.backward.outputs.size(), 1u);
  EXPECT_EQ(p.layout.tangentOf, std::vector<int>{0});
}

TEST(Partition, AnOpWithoutADerivativeIsAClearError) {
  // argmax has no derivative (integer result): no output requires grad.
  Segment fwd = capture({torch::randn({4, 8})}, [](const auto &in) { return in[0].argmax(1); });
  JointGraph joint;
  std::string error;
  EXPECT_FALSE(buildJointGraph(fwd, {true}, joint, error));
  EXPECT_NE(error.find("requires grad"), std::string::npos) << error;
}

} // namespace
} // namespace tgc
