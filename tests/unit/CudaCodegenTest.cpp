// CUDA codegen: the skeleton's kernel as CUDA C++, compiled by NVRTC.
#include "compiler/pipeline/Pipeline.h"
#include "runtime/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

namespace tgc {
Segment skeletonSegment(const std::string &device);

namespace {

class CudaCodegen : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaCodegen, SkeletonKernelCompilesToCubin) {
  std::string why;
  ASSERT_TRUE(nvrtcAvailable(&why)) << why; // the CUDA toolkit is a dependency
  PipelineResult r = runPipeline(skeletonSegment("cuda"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.plan.cudaSources.size(), 1u);
  const std::string &src = r.plan.cudaSources[0];
  EXPECT_NE(src.find("__global__"), std::string::npos);
  EXPECT_NE(src.find("blockIdx.x"), std::string::npos);
  NvrtcResult c = compileCuda(src, "k0", GetParam());
  ASSERT_TRUE(c.ok) << c.error;
  ASSERT_GT(c.cubin.size(), 4u);
  EXPECT_EQ(c.cubin.substr(0, 4), std::string("\x7f" "ELF")) << "cubin is an ELF image";
  EXPECT_NE(c.ptx.find(".entry k0"), std::string::npos);
}

TEST(Nvrtc, CubinsAreCachedPerArch) {
  setenv("TGC_CACHE_DIR", (testing::TempDir() + "/tgc-nvrtc-cache").c_str(), 1);
  PipelineResult r = runPipeline(skeletonSegment("cuda"));
  ASSERT_TRUE(r.ok) << r.error;
  // Unique source per run, so the first compile is a real miss.
  std::string src = r.plan.cudaSources[0] + "\n// " + std::to_string(::getpid()) + "\n";
  NvrtcResult a = compileCuda(src, "k0", "sm_80");
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_FALSE(a.fromCache);
  NvrtcResult b = compileCuda(src, "k0", "sm_80");
  ASSERT_TRUE(b.ok);
  EXPECT_TRUE(b.fromCache);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptx, b.ptx);
  NvrtcResult c = compileCuda(src, "k0", "sm_90"); // another arch misses
  ASSERT_TRUE(c.ok);
  EXPECT_FALSE(c.fromCache);
  EXPECT_NE(c.cubin, a.cubin);
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaCodegen, ::testing::Values("sm_80", "sm_90"));

TEST(Nvrtc, CompileErrorSavesTheSource) {
  NvrtcResult c = compileCuda("extern \"C\" __global__ void k() { undeclared(); }",
                              "broken", "sm_80");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("source saved to"), std::string::npos) << c.error;
  EXPECT_NE(c.log.find("undeclared"), std::string::npos) << c.log;
}

} // namespace
} // namespace tgc
