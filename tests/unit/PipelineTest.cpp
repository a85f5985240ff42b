// Pipeline: a Segment becomes tg, is fused, scheduled and emitted as a Plan.
#include "compiler/pipeline/Pipeline.h"

#include <gtest/gtest.h>

namespace tgc {

/// The skeleton's segment, (a * b + 1).relu() with b broadcast over rows.
Segment skeletonSegment(const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{4, 8}, {8, 1}, DType::Float32},
              {{8}, {1}, DType::Float32},
              {{4, 8}, {8, 1}, DType::Float32},
              {{4, 8}, {8, 1}, DType::Float32},
              {{4, 8}, {8, 1}, DType::Float32}};
  s.inputs = {0, 1};
  ArgValue a, b, one, alpha, x, y;
  a.kind = b.kind = x.kind = y.kind = ArgValue::Tensor;
  a.tensors = {0};
  b.tensors = {1};
  x.tensors = {2};
  y.tensors = {3};
  one.kind = ArgValue::ScalarTensor;
  one.i = 1;
  one.dtype = DType::Int64;
  alpha.kind = ArgValue::Int;
  alpha.i = 1;
  s.nodes = {{"aten::mul", "Tensor", {a, b}, {2}},
             {"aten::add", "Tensor", {x, one, alpha}, {3}},
             {"aten::relu", "", {y}, {4}}};
  s.outputs = {4};
  return s;
}

Segment softmaxSegment(int64_t rows, int64_t n, const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{rows, n}, {n, 1}, DType::Float32}, {{rows, n}, {n, 1}, DType::Float32}};
  s.inputs = {0};
  ArgValue x, dim, halfToFloat;
  x.kind = ArgValue::Tensor;
  x.tensors = {0};
  dim.kind = ArgValue::Int;
  dim.i = -1;
  halfToFloat.kind = ArgValue::Bool;
  s.nodes = {{"aten::_softmax", "", {x, dim, halfToFloat}, {1}}};
  s.outputs = {1};
  return s;
}

namespace {

TEST(Pipeline, SkeletonIsOneFusedKernel) {
  PipelineResult r = runPipeline(skeletonSegment("cpu"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.importedIR.find("tg.mul"), std::string::npos);
  EXPECT_NE(r.importedIR.find("tg.broadcast"), std::string::npos);
  EXPECT_NE(r.finalIR.find("tgk.kernel"), std::string::npos);
  EXPECT_EQ(r.finalIR.find("tg.mul"), std::string::npos);
  ASSERT_EQ(r.plan.kernels.size(), 1u);
  EXPECT_TRUE(r.plan.externs.empty());
  EXPECT_EQ(r.plan.kernels[0].inputs.size(), 2u);
  EXPECT_EQ(r.plan.kernels[0].numel, 32);
  EXPECT_NE(r.plan.cpuSource.find("extern \"C\" void k0"), std::string::npos);
  EXPECT_NE(r.plan.cpuSource.find("#pragma omp"), std::string::npos);
}

TEST(Pipeline, UnknownOpsBecomeExternCalls) {
  Segment s;
  s.values = {{{4, 3}, {3, 1}, DType::Float32},
              {{3, 5}, {5, 1}, DType::Float32},
              {{4, 5}, {5, 1}, DType::Float32},
              {{4, 5}, {5, 1}, DType::Float32}};
  s.inputs = {0, 1};
  ArgValue a, b, c;
  a.kind = b.kind = c.kind = ArgValue::Tensor;
  a.tensors = {0};
  b.tensors = {1};
  c.tensors = {2};
  s.nodes = {{"aten::mm", "", {a, b}, {2}}, {"aten::tanh", "", {c}, {3}}};
  s.outputs = {3};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.plan.steps.size(), 2u);
  EXPECT_EQ(r.plan.steps[0].kind, Step::Extern);
  EXPECT_EQ(r.plan.externs[0].op, "aten::mm");
  EXPECT_EQ(r.plan.steps[1].kind, Step::Kernel);
}

TEST(Pipeline, UnsignedBytesGoThroughAten) {
  // tg does not model unsigned arithmetic: u8 ops stay ATen calls.
  Segment s;
  s.values = {{{4}, {1}, DType::UInt8}, {{4}, {1}, DType::UInt8}};
  s.inputs = {0};
  ArgValue a, alpha;
  a.kind = ArgValue::Tensor;
  a.tensors = {0};
  alpha.kind = ArgValue::Int;
  alpha.i = 1;
  s.nodes = {{"aten::add", "Tensor", {a, a, alpha}, {1}}};
  s.outputs = {1};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.plan.kernels.empty());
  ASSERT_EQ(r.plan.externs.size(), 1u);
  EXPECT_EQ(r.plan.externs[0].op, "aten::add");
}

TEST(Pipeline, SoftmaxIsOneRowKernel) {
  PipelineResult r = runPipeline(softmaxSegment(4, 16, "cpu"));
  ASSERT_TRUE(r.ok) << r.error;
  // Import says "softmax"; tg-decompose spells it out in reductions.
  EXPECT_NE(r.importedIR.find("tg.softmax"), std::string::npos);
  EXPECT_EQ(r.importedIR.find("tg.reduce"), std::string::npos);
  EXPECT_NE(r.finalIR.find("tgk.row_kernel"), std::string::npos);
  ASSERT_EQ(r.plan.kernels.size(), 1u);
  EXPECT_TRUE(r.plan.externs.empty());
  // The CPU kernel keeps exp(x - max) of the sum loop in a row buffer and
  // the output loop reads it back: one exp per element, not two.
  const std::string &src = r.plan.cpuSource;
  size_t body = src.find("extern \"C\" void");
  ASSERT_NE(body, std::string::npos);
  int exps = 0;
  for (size_t at = src.find("expf(", body); at != std::string::npos; at = src.find("expf(", at + 1))
    ++exps;
  EXPECT_EQ(exps, 1) << src.substr(body);
  EXPECT_NE(src.find("rcache", body), std::string::npos);
  // ... and multiplies by the row sum's reciprocal, computed once per row.
  EXPECT_NE(src.find("rinv", body), std::string::npos);
}

} // namespace
} // namespace tgc
