// tgc's own CUDA emitter, end to end on the CPU: a Segment goes through the
// pipeline for device "cuda" and every kernel of the Plan runs, as emitted,
// in the emulator; results are compared with plain C++ references.
#include "compiler/pipeline/Pipeline.h"
#include "tests/emu/EmulatedGraph.h"
#include "tests/emu/EmulatedPlan.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace tgc::emu {
namespace {

size_t elementBytes(DType t) {
  switch (t) {
  case DType::Float16:
  case DType::BFloat16:
  case DType::Int16:
    return 2;
  case DType::Float32:
  case DType::Int32:
    return 4;
  case DType::Float64:
  case DType::Int64:
    return 8;
  default:
    return 1;
  }
}

/// Elements a buffer spans: 1 + sum((size - 1) * stride).
int64_t span(const TensorSpec &t) {
  int64_t s = 1;
  for (size_t d = 0; d < t.sizes.size(); ++d)
    s += (t.sizes[d] - 1) * t.strides[d];
  return t.numel() == 0 ? 0 : s;
}

float loadAsFloat(const std::vector<unsigned char> &buf, DType t, int64_t i) {
  switch (t) {
  case DType::Float16:
    return (float)reinterpret_cast<const c10::Half *>(buf.data())[i];
  case DType::BFloat16:
    return (float)reinterpret_cast<const c10::BFloat16 *>(buf.data())[i];
  default:
    return reinterpret_cast<const float *>(buf.data())[i];
  }
}

void storeFloat(std::vector<unsigned char> &buf, DType t, int64_t i, float v) {
  switch (t) {
  case DType::Float16:
    reinterpret_cast<c10::Half *>(buf.data())[i] = c10::Half(v);
    break;
  case DType::BFloat16:
    reinterpret_cast<c10::BFloat16 *>(buf.data())[i] = c10::BFloat16(v);
    break;
  default:
    reinterpret_cast<float *>(buf.data())[i] = v;
  }
}

/// Runs the plan's steps in the emulator over `buffers` (indexed by value id;
/// inputs filled, the rest allocated here as NaN bytes). `maxGrid` caps the
/// grid so that grid-stride loops take more than one trip.
void runPlanEmulated(const Plan &plan, std::vector<std::vector<unsigned char>> &buffers,
                     unsigned maxGrid) {
  buffers.resize(plan.values.size());
  std::vector<void *> pointers;
  for (size_t v = 0; v < plan.values.size(); ++v) {
    if (buffers[v].empty())
      buffers[v].assign(span(plan.values[v]) * elementBytes(plan.values[v].dtype) + 16, 0xff);
    pointers.push_back(buffers[v].data());
  }
  runPlanSteps(plan, pointers, [&](const KernelStep &k) { return gridStrideLaunch(k, maxGrid); });
}

std::vector<unsigned char> randomBuffer(const TensorSpec &t, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<unsigned char> buf(span(t) * elementBytes(t.dtype) + 16);
  for (int64_t i = 0; i < span(t); ++i)
    storeFloat(buf, t.dtype, i, d(gen));
  return buf;
}

ArgValue tensorArg(int id) {
  ArgValue a;
  a.kind = ArgValue::Tensor;
  a.tensors = {id};
  return a;
}

/// (a * b + 1).relu() with b broadcast over rows: the walking skeleton.
Segment skeleton(DType t, int64_t rows, int64_t cols) {
  Segment s;
  s.device = "cuda";
  TensorSpec m{{rows, cols}, {cols, 1}, t}, row{{cols}, {1}, t};
  s.values = {m, row, m, m, m};
  s.inputs = {0, 1};
  ArgValue one, alpha;
  one.kind = ArgValue::ScalarTensor;
  one.i = 1;
  one.dtype = DType::Int64;
  alpha.kind = ArgValue::Int;
  alpha.i = 1;
  s.nodes = {{"aten::mul", "Tensor", {tensorArg(0), tensorArg(1)}, {2}},
             {"aten::add", "Tensor", {tensorArg(2), one, alpha}, {3}},
             {"aten::relu", "", {tensorArg(3)}, {4}}};
  s.outputs = {4};
  return s;
}

class EmittedSkeleton : public ::testing::TestWithParam<DType> {};

TEST_P(EmittedSkeleton, MatchesReference) {
  const DType t = GetParam();
  const int64_t rows = 300, cols = 77;
  PipelineResult r = runPipeline(skeleton(t, rows, cols));
  ASSERT_TRUE(r.ok) << r.error;
  for (const char *arch : {"sm_80", "sm_90"}) // NVRTC builds it within a GPU\'s resources
    EXPECT_EQ(compileAllWithNvrtc({r.plan}, arch), "") << arch;
  ASSERT_FALSE(r.plan.cudaSources.empty());
  for (unsigned maxGrid : {4u, 1u << 20}) {
    std::vector<std::vector<unsigned char>> bufs(r.plan.values.size());
    bufs[r.plan.inputs[0]] = randomBuffer(r.plan.values[r.plan.inputs[0]], 1);
    bufs[r.plan.inputs[1]] = randomBuffer(r.plan.values[r.plan.inputs[1]], 2);
    runPlanEmulated(r.plan, bufs, maxGrid);
    const auto &a = bufs[r.plan.inputs[0]], &b = bufs[r.plan.inputs[1]];
    const auto &out = bufs[r.plan.outputs[0]];
    for (int64_t i = 0; i < rows * cols; ++i) {
      // Computed in float and rounded once on store; a * b + 1 either as two
      // roundings or as one fused multiply-add, which NVRTC contracts it to
      // (and the emulator under TGC_EMU_NUMERICS=gpu).
      volatile float product = loadAsFloat(a, t, i) * loadAsFloat(b, t, i % cols);
      float want = std::fmax(product + 1.0f, 0.0f);
      float fused = std::fmax(std::fma(loadAsFloat(a, t, i), loadAsFloat(b, t, i % cols), 1.0f), 0.0f);
      std::vector<unsigned char> rounded(8), roundedFused(8);
      storeFloat(rounded, t, 0, want);
      storeFloat(roundedFused, t, 0, fused);
      float got = loadAsFloat(out, t, i);
      ASSERT_TRUE(got == loadAsFloat(rounded, t, 0) || got == loadAsFloat(roundedFused, t, 0))
          << "element " << i << " (" << dtypeName(t) << ", grid cap " << maxGrid << "): " << got
          << ", want " << loadAsFloat(rounded, t, 0) << " or, fused, "
          << loadAsFloat(roundedFused, t, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, EmittedSkeleton,
                         ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

TEST(EmittedKernels, NonContiguousInputAndMathFunctions) {
  // exp(aT) * tanh(b) with aT a transposed view: strided indexing.
  const int64_t rows = 40, cols = 50;
  Segment s;
  s.device = "cuda";
  TensorSpec c{{rows, cols}, {cols, 1}, DType::Float32};
  TensorSpec transposed{{rows, cols}, {1, rows}, DType::Float32};
  s.values = {transposed, c, c, c, c};
  s.inputs = {0, 1};
  s.nodes = {{"aten::exp", "", {tensorArg(0)}, {2}},
             {"aten::tanh", "", {tensorArg(1)}, {3}},
             {"aten::mul", "Tensor", {tensorArg(2), tensorArg(3)}, {4}}};
  s.outputs = {4};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  for (const char *arch : {"sm_80", "sm_90"}) // NVRTC builds it within a GPU\'s resources
    EXPECT_EQ(compileAllWithNvrtc({r.plan}, arch), "") << arch;
  std::vector<std::vector<unsigned char>> bufs(r.plan.values.size());
  bufs[r.plan.inputs[0]] = randomBuffer(r.plan.values[r.plan.inputs[0]], 3);
  bufs[r.plan.inputs[1]] = randomBuffer(r.plan.values[r.plan.inputs[1]], 4);
  runPlanEmulated(r.plan, bufs, 3);
  const float *a = reinterpret_cast<const float *>(bufs[r.plan.inputs[0]].data());
  const float *b = reinterpret_cast<const float *>(bufs[r.plan.inputs[1]].data());
  const float *out = reinterpret_cast<const float *>(bufs[r.plan.outputs[0]].data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float want = std::exp(a[i + j * rows]) * std::tanh(b[i * cols + j]);
      ASSERT_NEAR(out[i * cols + j], want, 1e-6f * std::fabs(want) + 1e-7f) << i << "," << j;
    }
}

class EmittedVectorKernel : public ::testing::TestWithParam<DType> {};

TEST_P(EmittedVectorKernel, AlignedAndMisalignedBuffersMatch) {
  // relu(a * b) over contiguous buffers: 16-byte vectors when aligned, the
  // scalar loop when a buffer is not (an input shifted by one element).
  const DType t = GetParam();
  const int64_t rows = 24, cols = 40;
  Segment s;
  s.device = "cuda";
  TensorSpec m{{rows, cols}, {cols, 1}, t};
  s.values = {m, m, m, m};
  s.inputs = {0, 1};
  s.nodes = {{"aten::mul", "Tensor", {tensorArg(0), tensorArg(1)}, {2}},
             {"aten::relu", "", {tensorArg(2)}, {3}}};
  s.outputs = {3};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  for (const char *arch : {"sm_80", "sm_90"}) // NVRTC builds it within a GPU\'s resources
    EXPECT_EQ(compileAllWithNvrtc({r.plan}, arch), "") << arch;
  ASSERT_NE(r.plan.cudaSources[0].find("tgc_vec<"), std::string::npos);
  const Plan &p = r.plan;
  for (size_t shift : {0, 1}) {
    SCOPED_TRACE("input shifted by " + std::to_string(shift) + " elements");
    const size_t bytes = elementBytes(t);
    std::vector<unsigned char> a = randomBuffer(p.values[p.inputs[0]], 5);
    std::vector<unsigned char> b = randomBuffer(p.values[p.inputs[1]], 6);
    std::vector<unsigned char> shifted(a.size() + 16, 0), out(a.size() + 16, 0xff);
    std::copy(a.begin(), a.end(), shifted.begin() + 16 + shift * bytes);
    std::vector<void *> ptrs(p.values.size());
    // Vectors of 16 bytes: base pointers from std::vector are 16-aligned.
    ptrs[p.inputs[0]] = shifted.data() + 16 + shift * bytes;
    ptrs[p.inputs[1]] = b.data();
    ptrs[p.outputs[0]] = out.data();
    runPlanSteps(p, ptrs, [](const KernelStep &k) { return gridStrideLaunch(k, 3); });
    const unsigned char *outp = out.data();
    std::vector<unsigned char> o(outp, outp + a.size());
    for (int64_t i = 0; i < rows * cols; ++i) {
      std::vector<unsigned char> rounded(8);
      storeFloat(rounded, t, 0, std::fmax(loadAsFloat(a, t, i) * loadAsFloat(b, t, i), 0.0f));
      ASSERT_EQ(loadAsFloat(o, t, i), loadAsFloat(rounded, t, 0)) << "element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, EmittedVectorKernel,
                         ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

} // namespace
} // namespace tgc::emu
