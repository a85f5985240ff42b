// CPU codegen: generated loops vectorize, transcendental calls included.
#include "codegen/Emitters.h"
#include "compiler/pipeline/Pipeline.h"
#include "runtime/HostCompiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <sstream>
#include <vector>
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

/// The source of x * w, x of `shape` and `strides`, w of `wShape` and
/// `wStrides`, the result laid out like x.
std::string mulSource(std::vector<int64_t> shape, std::vector<int64_t> strides,
                      std::vector<int64_t> wShape, std::vector<int64_t> wStrides) {
  Segment s;
  s.values = {{shape, strides, DType::Float32}, {wShape, wStrides, DType::Float32},
              {shape, strides, DType::Float32}};
  s.inputs = {0, 1};
  ArgValue x, w;
  x.kind = w.kind = ArgValue::Tensor;
  x.tensors = {0};
  w.tensors = {1};
  s.nodes = {{"aten::mul", "Tensor", {x, w}, {2}}};
  s.outputs = {2};
  PipelineResult r = runPipeline(s);
  EXPECT_TRUE(r.ok) << r.error;
  return r.plan.cpuSource;
}

/// x * w for a per-channel w [1, C, 1, 1].
std::string perChannelMul(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  return mulSource(shape, strides, {1, shape[1], 1, 1}, {shape[1], 1, 1, 1});
}

/// Whether GCC's report `out` says a loop of `file` within lines
/// [first, last] was vectorized.
bool reportsVectorized(const std::string &out, const std::string &file, int first, int last) {
  std::istringstream report(out);
  for (std::string l; std::getline(report, l);)
    for (int n = first; n <= last; ++n)
      if (l.find(file + ":" + std::to_string(n) + ":") != std::string::npos &&
          l.find("loop vectorized") != std::string::npos)
        return true;
  return false;
}

/// The kernel's text from `#pragma omp simd` on.
std::string simdLoop(const std::string &src) {
  size_t at = src.find("#pragma omp simd");
  return at == std::string::npos ? "" : src.substr(at);
}

TEST(CpuCodegen, LoopsFollowTheOutputLayoutWithContiguousDimsMerged) {
  // NCHW [2, 64, 4, 4]: H and W merge into one 16-element SIMD loop (not
  // 4), the per-channel weight is read once per row, before it.
  std::string nchw = perChannelMul({2, 64, 4, 4}, {1024, 16, 4, 1});
  EXPECT_NE(nchw.find("for (long long j = 0LL; j < 16LL; ++j)"), std::string::npos) << nchw;
  EXPECT_EQ(simdLoop(nchw).find("in1["), std::string::npos) << nchw; // hoisted
  EXPECT_NE(simdLoop(nchw).find("in0[l0 * 1024LL + l1 * 16LL + j]"), std::string::npos) << nchw;
  // Channels-last [1, 144, 16, 16]: C (stride 1) is the SIMD loop, H and W
  // one outer loop of 256 rows; both tensors are read with stride 1.
  std::string nhwc = perChannelMul({1, 144, 16, 16}, {36864, 1, 2304, 144});
  EXPECT_NE(nhwc.find("for (long long o = 0; o < 256LL; ++o)"), std::string::npos) << nhwc;
  EXPECT_NE(nhwc.find("for (long long j = 0LL; j < 144LL; ++j)"), std::string::npos) << nhwc;
  EXPECT_NE(simdLoop(nhwc).find("in1[j]"), std::string::npos) << nhwc;
  EXPECT_NE(simdLoop(nhwc).find("out0[l0 * 144LL + j]"), std::string::npos) << nhwc;
  // Same layout everywhere and no broadcast: one flat loop, no index split.
  std::string flat = mulSource({2, 64, 4, 4}, {1024, 1, 256, 64}, {2, 64, 4, 4}, {1024, 1, 256, 64});
  EXPECT_NE(flat.find("for (long long i = c; i < e; ++i)"), std::string::npos) << flat;
  EXPECT_NE(flat.find("out0[i] = "), std::string::npos) << flat;
  EXPECT_EQ(flat.find("rem %"), std::string::npos) << flat;
  // Each loop vectorizes (GCC's report names the simd loop's lines).
  for (const std::string &src : {nchw, nhwc, flat}) {
    std::string dir = testing::TempDir();
    std::string file = dir + "/nest.cpp", so = dir + "/nest.so";
    std::ofstream(file) << src;
    std::string out = run(hostCompilerCommand() + " -fopt-info-vec-optimized " +
                          hostCompilerFlags() + " " + file + " -o " + so + " " + hostLinkFlags());
    EXPECT_NE(out.find("loop vectorized"), std::string::npos) << out << src;
  }
}

TEST(CpuCodegen, AConcatenationAlongTheInnerLoopIsALoopPerInput) {
  // relu(cat([a, b], 1)) over channels-last [1, 64 | 32, 16, 16]: C is the
  // SIMD loop, split at 64 so each part reads one input with vector loads.
  Segment s;
  s.values = {{{1, 64, 16, 16}, {16384, 1, 1024, 64}, DType::Float32},
              {{1, 32, 16, 16}, {8192, 1, 512, 32}, DType::Float32},
              {{1, 96, 16, 16}, {24576, 1, 1536, 96}, DType::Float32},
              {{1, 96, 16, 16}, {24576, 1, 1536, 96}, DType::Float32}};
  s.inputs = {0, 1};
  ArgValue list, dim, x;
  list.kind = ArgValue::TensorList;
  list.tensors = {0, 1};
  dim.kind = ArgValue::Int;
  dim.i = 1;
  x.kind = ArgValue::Tensor;
  x.tensors = {2};
  s.nodes = {{"aten::cat", "", {list, dim}, {2}}, {"aten::relu", "", {x}, {3}}};
  s.outputs = {3};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  const std::string &src = r.plan.cpuSource;
  EXPECT_NE(src.find("for (long long j = 0LL; j < 64LL; ++j)"), std::string::npos) << src;
  EXPECT_NE(src.find("for (long long j = 64LL; j < 96LL; ++j)"), std::string::npos) << src;
  // The comparisons and selects fold: each part reads its own input only.
  size_t second = src.find("for (long long j = 64LL");
  std::string first = simdLoop(src).substr(0, simdLoop(src).find("for (long long j = 64LL"));
  EXPECT_NE(first.find("in0["), std::string::npos) << src;
  EXPECT_EQ(first.find("in1["), std::string::npos) << src;
  EXPECT_NE(src.find("in1[", second), std::string::npos) << src;
  EXPECT_EQ(src.find("in0[", second), std::string::npos) << src;
  EXPECT_EQ(simdLoop(src).find(" ? "), std::string::npos) << src;
  std::string dir = testing::TempDir();
  std::string file = dir + "/cat.cpp", so = dir + "/cat.so";
  std::ofstream(file) << src;
  std::string out = run(hostCompilerCommand() + " -fopt-info-vec-all " + hostCompilerFlags() +
                        " " + file + " -o " + so + " " + hostLinkFlags());
  // Both loops vectorize: a report line within each loop says so.
  std::istringstream lines(src);
  std::vector<int> loopLines;
  int n = 0;
  for (std::string l; std::getline(lines, l);)
    if (++n && l.find("#pragma omp simd") != std::string::npos)
      loopLines.push_back(n);
  ASSERT_EQ(loopLines.size(), 2u) << src;
  for (int first : loopLines) {
    EXPECT_TRUE(reportsVectorized(out, "cat.cpp", first, first + 8))
        << "loop at line " << first << "\n" << out << src;
  }
}

TEST(CpuCodegen, BoolBuffersAreBytes) {
  // where(mask, x, y) with a bool mask: bool loads would keep GCC from
  // vectorizing next to float ones, so the CPU reads bytes and compares.
  Segment s;
  s.values = {{{64, 64}, {64, 1}, DType::Bool}, {{64, 64}, {1, 64}, DType::Float32},
              {{64, 64}, {64, 1}, DType::Float32}, {{64, 64}, {64, 1}, DType::Float32}};
  s.inputs = {0, 1, 2};
  ArgValue m, x, y;
  m.kind = x.kind = y.kind = ArgValue::Tensor;
  m.tensors = {0};
  x.tensors = {1};
  y.tensors = {2};
  s.nodes = {{"aten::where", "self", {m, x, y}, {3}}};
  s.outputs = {3};
  PipelineResult r = runPipeline(s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.plan.cpuSource.find("const unsigned char *__restrict__ in0"), std::string::npos)
      << r.plan.cpuSource;
  EXPECT_NE(r.plan.cpuSource.find(" != 0)"), std::string::npos) << r.plan.cpuSource;
}

TEST(CpuCodegen, HalfConversionsAreExactAndVectorize) {
  // The prelude's f16 <-> f32 conversions against the compiler's own
  // _Float16 (IEEE, round to nearest even): every half, and floats around
  // every half, at the midpoints, in the subnormal and overflow ranges, and
  // random bit patterns. Their loops must vectorize.
  std::string src = codegen::cpuPrelude() + R"(
extern "C" void widen(const unsigned short *__restrict__ h, float *__restrict__ f, long long n) {
#pragma omp simd
  for (long long i = 0; i < n; ++i) f[i] = tgc_f16_to_f32(tgc_f16{h[i]});
}
extern "C" void narrow(const float *__restrict__ f, unsigned short *__restrict__ h, long long n) {
#pragma omp simd
  for (long long i = 0; i < n; ++i) h[i] = tgc_f32_to_f16(f[i]).bits;
}
extern "C" void ref_widen(const unsigned short *h, float *f, long long n) {
  for (long long i = 0; i < n; ++i) { _Float16 x; std::memcpy(&x, &h[i], 2); f[i] = (float)x; }
}
extern "C" void ref_narrow(const float *f, unsigned short *h, long long n) {
  for (long long i = 0; i < n; ++i) { _Float16 x = (_Float16)f[i]; std::memcpy(&h[i], &x, 2); }
}
)";
  std::string dir = testing::TempDir();
  std::string file = dir + "/half.cpp", so = dir + "/half.so";
  std::ofstream(file) << src;
  std::string out = run(hostCompilerCommand() + " -fopt-info-vec-optimized " +
                        hostCompilerFlags() + " " + file + " -o " + so + " " + hostLinkFlags());
  // Lines of the two simd loops: the report names each vectorized one.
  int vectorized = 0;
  for (const char *fn : {"widen(", "narrow("}) {
    size_t at = src.find(std::string("void ") + fn);
    int line = 1 + std::count(src.begin(), src.begin() + at, '\n');
    vectorized += reportsVectorized(out, "half.cpp", line, line + 3);
  }
  EXPECT_EQ(vectorized, 2) << out;
  void *lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror() << out;
  using Widen = void (*)(const unsigned short *, float *, long long);
  using Narrow = void (*)(const float *, unsigned short *, long long);
  auto widen = (Widen)dlsym(lib, "widen"), refWiden = (Widen)dlsym(lib, "ref_widen");
  auto narrow = (Narrow)dlsym(lib, "narrow"), refNarrow = (Narrow)dlsym(lib, "ref_narrow");
  ASSERT_TRUE(widen && refWiden && narrow && refNarrow);

  std::vector<unsigned short> halves(65536);
  for (int i = 0; i < 65536; ++i)
    halves[i] = (unsigned short)i;
  std::vector<float> got(65536), want(65536);
  widen(halves.data(), got.data(), 65536);
  refWiden(halves.data(), want.data(), 65536);
  int bad = 0;
  for (int i = 0; i < 65536; ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : g == w;
    if (!same && bad++ < 5)
      ADD_FAILURE() << "f16 0x" << std::hex << i << " widens to 0x" << g << ", want 0x" << w;
  }
  // Floats: every half's value, its neighbours, the midpoints to the next
  // half (ties), and random bit patterns.
  std::vector<float> floats;
  for (int i = 0; i < 65536; ++i) {
    if (std::isnan(want[i]))
      continue;
    float f = want[i];
    floats.push_back(f);
    floats.push_back(std::nextafter(f, INFINITY));
    floats.push_back(std::nextafter(f, -INFINITY));
    if (i + 1 < 65536 && !std::isnan(want[i + 1]) && !std::isinf(want[i + 1]) &&
        ((i + 1) & 0x7fff) != 0) {
      float mid = (float)(((double)want[i] + (double)want[i + 1]) / 2);
      floats.push_back(mid);
      floats.push_back(std::nextafter(mid, INFINITY));
      floats.push_back(std::nextafter(mid, -INFINITY));
    }
  }
  for (float f : {65504.f, 65519.f, 65520.f, 1e10f, INFINITY, -INFINITY, NAN, 1e-30f, 0.f, -0.f})
    floats.push_back(f);
  std::mt19937 rng(17);
  for (int i = 0; i < 1 << 20; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    floats.push_back(f);
  }
  std::vector<unsigned short> gotH(floats.size()), wantH(floats.size());
  narrow(floats.data(), gotH.data(), floats.size());
  refNarrow(floats.data(), wantH.data(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) {
    const bool nan = (wantH[i] & 0x7fff) > 0x7c00;
    const bool same = nan ? (gotH[i] & 0x7fff) > 0x7c00 : gotH[i] == wantH[i];
    if (!same && bad++ < 10)
      ADD_FAILURE() << "f32 " << floats[i] << " narrows to 0x" << std::hex << gotH[i]
                    << ", want 0x" << wantH[i];
  }
  EXPECT_EQ(bad, 0) << "of " << floats.size() << " floats and 65536 halves";
  dlclose(lib);
}

} // namespace
} // namespace tgc
