// CUDA codegen choices that need no GPU to check: vector width, index type,
// launch configs, NVRTC's targets, parallel compiles and the kernel log.
#include "compiler/pipeline/Pipeline.h"
#include "runtime/ContiguousStrides.h"
#include "runtime/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tgc {
/// softmax(x, -1) over a [rows, n] float32 tensor (PipelineTest.cpp).
Segment softmaxSegment(int64_t rows, int64_t n, const std::string &device);

namespace {

/// relu(x * x) over one buffer of `sizes` (contiguous unless `strides`).
Segment squareRelu(std::vector<int64_t> sizes, DType t, std::vector<int64_t> strides = {}) {
  Segment s;
  s.device = "cuda";
  if (strides.empty())
    strides = contiguousStrides(sizes);
  TensorSpec in{sizes, strides, t}, out{sizes, contiguousStrides(sizes), t};
  s.values = {in, out, out};
  s.inputs = {0};
  ArgValue x, y;
  x.kind = y.kind = ArgValue::Tensor;
  x.tensors = {0};
  y.tensors = {1};
  s.nodes = {{"aten::mul", "Tensor", {x, x}, {1}}, {"aten::relu", "", {y}, {2}}};
  s.outputs = {2};
  return s;
}

TEST(CudaLaunchCodegen, ContiguousKernelsUse16ByteVectors) {
  for (auto [t, width, type] : {std::tuple{DType::Float32, 4, "float"},
                                std::tuple{DType::BFloat16, 8, "__nv_bfloat16"},
                                std::tuple{DType::Float16, 8, "__half"}}) {
    PipelineResult r = runPipeline(squareRelu({64, 96}, t));
    ASSERT_TRUE(r.ok) << r.error;
    const std::string &src = r.plan.cudaSources[0];
    std::string vec = "tgc_vec<" + std::string(type) + ", " + std::to_string(width) + ">";
    EXPECT_NE(src.find(vec), std::string::npos) << src;
    EXPECT_NE(src.find("tgc_aligned<"), std::string::npos) << "alignment is checked at run time";
    // One block per (block * width) elements.
    EXPECT_EQ(r.plan.kernels[0].grid, (64 * 96 + 256 * width - 1) / (256 * width));
    NvrtcResult c = compileCuda(src, r.plan.kernels[0].name, "sm_90");
    ASSERT_TRUE(c.ok) << c.error;
    EXPECT_NE(c.ptx.find(".v4."), std::string::npos) << "128-bit loads and stores in the PTX";
  }
}

TEST(CudaLaunchCodegen, StridedKernelsStayScalar) {
  PipelineResult r = runPipeline(squareRelu({64, 96}, DType::Float32, {1, 64}));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.plan.cudaSources[0].find("tgc_vec<float"), std::string::npos);
  EXPECT_EQ(r.plan.kernels[0].grid, (64 * 96 + 255) / 256);
}

TEST(CudaLaunchCodegen, IndexTypeWidensAt2To31) {
  // Nothing is allocated: the pipeline only reads shapes.
  PipelineResult small = runPipeline(squareRelu({int64_t(1) << 30}, DType::BFloat16));
  ASSERT_TRUE(small.ok) << small.error;
  EXPECT_NE(small.plan.cudaSources[0].find("const int n = "), std::string::npos);
  // Below 2^31 elements, but the grid-stride loop's step after the last
  // element would pass INT_MAX (KernelDescriptor.IndicesAre64BitWhen...).
  PipelineResult near = runPipeline(squareRelu({(int64_t(1) << 31) - 64}, DType::BFloat16));
  ASSERT_TRUE(near.ok) << near.error;
  EXPECT_NE(near.plan.cudaSources[0].find("const long long n = 2147483584"), std::string::npos);
  PipelineResult big = runPipeline(squareRelu({int64_t(1) << 31}, DType::BFloat16));
  ASSERT_TRUE(big.ok) << big.error;
  EXPECT_NE(big.plan.cudaSources[0].find("const long long n = 2147483648"), std::string::npos);
  // A buffer whose extent passes 2^31 through its strides widens too.
  PipelineResult strided =
      runPipeline(squareRelu({2, 1024}, DType::Float32, {int64_t(1) << 31, 1}));
  ASSERT_TRUE(strided.ok) << strided.error;
  EXPECT_NE(strided.plan.cudaSources[0].find("const long long n = "), std::string::npos);
  for (const PipelineResult *r : {&big, &strided}) {
    NvrtcResult c = compileCuda(r->plan.cudaSources[0], r->plan.kernels[0].name, "sm_80");
    EXPECT_TRUE(c.ok) << c.error;
  }
}

TEST(CudaLaunchCodegen, RowKernelsPickLanesPerRowAndRowsPerBlock) {
  struct Want {
    int64_t n, lanes, block, rowsPerBlock;
    bool registers; ///< the row is kept in registers
  };
  const int64_t rows = 1000;
  for (Want w : {Want{5, 8, 256, 32, true}, Want{300, 32, 256, 8, true},
                 Want{3000, 256, 256, 1, true}, Want{10000, 512, 512, 1, true},
                 Want{16000, 512, 512, 1, false},
                 Want{20000, 1024, 1024, 1, false}, Want{40000, 1024, 1024, 1, false}}) {
    SCOPED_TRACE("row of " + std::to_string(w.n));
    PipelineResult r = runPipeline(softmaxSegment(rows, w.n, "cuda"));
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.plan.kernels.size(), 1u);
    const std::string &src = r.plan.cudaSources[0];
    EXPECT_NE(src.find("tgc_row_reduce<" + std::to_string(w.lanes) + ">"), std::string::npos);
    EXPECT_EQ(r.plan.kernels[0].block, w.block);
    EXPECT_EQ(r.plan.kernels[0].grid, (rows + w.rowsPerBlock - 1) / w.rowsPerBlock);
    EXPECT_EQ(src.find("c0[t]") != std::string::npos, w.registers);
    // Uncached: ptxas's report (-Xptxas=-v) is in the log of a real compile.
    NvrtcResult c = compileCudaUncached(src, r.plan.kernels[0].name, "sm_90");
    EXPECT_TRUE(c.ok) << c.error;
    EXPECT_NE(c.log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
        << "no register spills: " << c.log;
  }
}

TEST(Nvrtc, TargetIsTheDevicesArchOrPtxForANewerOne) {
  EXPECT_EQ(nvrtcTargetFor("sm_80"), "sm_80");
  EXPECT_EQ(nvrtcTargetFor("sm_90"), "sm_90");
  std::string future = nvrtcTargetFor("sm_990");
  ASSERT_EQ(future.rfind("compute_", 0), 0u) << future;
  PipelineResult r = runPipeline(squareRelu({8, 8}, DType::Float32));
  ASSERT_TRUE(r.ok) << r.error;
  NvrtcResult c = compileCuda(r.plan.cudaSources[0], r.plan.kernels[0].name, future);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(c.cubin.empty()) << "PTX only: the driver compiles it for the device";
  EXPECT_NE(c.ptx.find(".entry " + r.plan.kernels[0].name), std::string::npos);
}

TEST(Nvrtc, ParallelCompilesMatchSerialOnes) {
  std::vector<std::string> sources, names;
  for (int i = 0; i < 6; ++i) {
    PipelineResult r = runPipeline(squareRelu({16, 8 + i}, DType::Float32));
    ASSERT_TRUE(r.ok) << r.error;
    // A unique comment, so every compile is a cache miss.
    sources.push_back(r.plan.cudaSources[0] + "\n// parallel " + std::to_string(::getpid()) + "\n");
    names.push_back(r.plan.kernels[0].name);
  }
  std::vector<NvrtcResult> parallel = compileCudaAll(sources, names, "sm_90", 4);
  ASSERT_EQ(parallel.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_TRUE(parallel[i].ok) << parallel[i].error;
    EXPECT_FALSE(parallel[i].fromCache);
    NvrtcResult serial = compileCudaUncached(sources[i], names[i], "sm_90");
    ASSERT_TRUE(serial.ok);
    EXPECT_EQ(parallel[i].ptx, serial.ptx) << i;
    EXPECT_EQ(parallel[i].cubin, serial.cubin) << i;
  }
}

TEST(Nvrtc, KernelLogReportsRegistersAndSpills) {
  setenv("TGC_LOG", "kernels", 1);
  // Dynamic indexing into a large local array: a stack frame ptxas reports.
  std::string src = "extern \"C\" __global__ void k(float *a) { float x[300];\n"
                    "for (int i = 0; i < 300; ++i) x[i] = a[i * threadIdx.x];\n"
                    "a[threadIdx.x] = x[(threadIdx.x * 7) % 300]; }\n";
  testing::internal::CaptureStderr();
  NvrtcResult c = compileCudaUncached(src, "k", "sm_90");
  std::string err = testing::internal::GetCapturedStderr();
  unsetenv("TGC_LOG");
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_NE(c.log.find("spill stores"), std::string::npos) << "-Xptxas=-v report: " << c.log;
  EXPECT_NE(err.find("[tgc:kernels] compiled k for sm_90: "), std::string::npos) << err;
}

} // namespace
} // namespace tgc
