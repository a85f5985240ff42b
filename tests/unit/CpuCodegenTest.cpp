// CPU codegen: generated loops vectorize, transcendental calls included.
#include "compiler/pipeline/Pipeline.h"
#include "runtime/HostCompiler.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>

namespace tgc {
namespace {

std::string run(const std::string &cmd) {
  std::string out;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while (p && (n = fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  if (p)
    pclose(p);
  return out;
}

TEST(CpuCodegen, TranscendentalLoopsUseVectorMath) {
  Segment s;
  s.values = {{{4096}, {1}, DType::Float32}, {{4096}, {1}, DType::Float32},
              {{4096}, {1}, DType::Float32}};
  s.inputs = {0};
  ArgValue x, y, approx;
  x.kind = y.kind = ArgValue::Tensor;
  x.tensors = {0};
  y.tensors = {1};
  approx.kind = ArgValue::String;
  approx.s = "none";
  s.nodes = {{"aten::tanh", "", {x}, {1}}, {"aten::gelu", "", {y, approx}, {2}}};
  s.outputs = {2};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.plan.kernels.size(), 1u);
  EXPECT_NE(r.plan.cpuSource.find("#pragma omp simd"), std::string::npos);
  std::string dir = testing::TempDir();
  std::string src = dir + "/vec.cpp", so = dir + "/vec.so";
  std::ofstream(src) << r.plan.cpuSource;
  std::string out = run(hostCompilerCommand() + " " + hostCompilerFlags() + " " + src + " -o " +
                        so + " " + hostLinkFlags());
  ASSERT_TRUE(out.empty()) << out;
  std::string symbols = run("nm -D " + so);
  // libmvec's vector variants (_ZGV<isa>N<lanes>v_...) are called: the loop
  // was vectorized, tanh and erf included.
  EXPECT_NE(symbols.find("_ZGV"), std::string::npos) << symbols;
  EXPECT_NE(symbols.find("v_tanhf"), std::string::npos) << symbols;
  EXPECT_NE(symbols.find("v_erff"), std::string::npos) << symbols;
}

TEST(CpuCodegen, RowsRunInParallelWithVectorReductions) {
  // x.sum(-1) over [64, 1 << 17] and [64, 1000]: rows are spread over
  // OpenMP threads; each row reduces in SIMD lanes (partial sums per lane),
  // in float for short rows and in double for long ones.
  for (int64_t n : {int64_t(1000), int64_t(1) << 17}) {
    Segment s;
    s.values = {{{64, n}, {n, 1}, DType::Float32}, {{64}, {1}, DType::Float32}};
    s.inputs = {0};
    ArgValue x, dims, keep, none;
    x.kind = ArgValue::Tensor;
    x.tensors = {0};
    dims.kind = ArgValue::IntList;
    dims.ints = {-1};
    keep.kind = ArgValue::Bool;
    s.nodes = {{"aten::sum", "dim_IntList", {x, dims, keep, none}, {1}}};
    s.outputs = {1};
    PipelineResult r = runPipeline(s);
    ASSERT_TRUE(r.ok) << r.error;
    const std::string &src = r.plan.cpuSource;
    EXPECT_NE(src.find("#pragma omp parallel for"), std::string::npos) << src;
    EXPECT_NE(src.find("#pragma omp simd reduction(+ : acc)"), std::string::npos) << src;
    EXPECT_NE(src.find(n > 65536 ? "double acc = 0" : "float acc = 0"), std::string::npos) << src;
  }
}

} // namespace
} // namespace tgc
