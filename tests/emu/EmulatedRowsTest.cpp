// tgc's CUDA row kernels (reductions, softmax, norms) on the CPU: each
// program is captured, compiled for CUDA, run in the emulator and compared
// with eager; every source also compiles with NVRTC for sm_80 and sm_90.
// Row sizes cover the three launch shapes: a few lanes of a warp per row,
// a warp per row, and a block per row.
#include "tests/emu/EmulatedGraph.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tgc::emu {
namespace {

using Fn = std::function<torch::Tensor(torch::Tensor)>;

struct RowCase {
  std::string name;
  Fn fn;
  bool positive = false; ///< the op needs positive inputs
};

std::vector<RowCase> rowCases() {
  return {
      {"sum", [](auto x) { return x.sum(-1); }},
      {"prod", [](auto x) { return (x * 0.1 + 1).prod(-1); }},
      {"amax", [](auto x) { return x.amax(-1); }},
      {"amin_keepdim", [](auto x) { return x.amin(-1, true); }},
      {"argmax", [](auto x) { return x.argmax(-1); }},
      {"argmin", [](auto x) { return x.argmin(-1); }},
      {"mean_dim0", [](auto x) { return x.mean(0); }},
      {"softmax", [](auto x) { return torch::softmax(x, -1); }},
      {"log_softmax", [](auto x) { return torch::log_softmax(x * 2, -1); }},
      {"layer_norm", [](auto x) {
         auto n = x.size(-1);
         auto w = torch::linspace(0.5, 1.5, n).to(x.scalar_type());
         auto b = torch::linspace(-0.2, 0.3, n).to(x.scalar_type());
         return torch::layer_norm(x, {n}, w, b, 1e-5);
       }},
      {"rms_norm", [](auto x) { return torch::rms_norm(x, {x.size(-1)}, std::nullopt, 1e-6); }},
      {"var_std", [](auto x) { return x.var(-1) + x.std(-1, false); }},
      {"logsumexp", [](auto x) { return torch::logsumexp(x, {-1}); }},
      {"norm", [](auto x) { return torch::linalg_vector_norm(x, 2, {-1}); }},
  };
}

struct Shape {
  std::string name;
  int64_t rows, cols;
  bool transposed;
};

std::vector<Shape> shapes() {
  return {{"short_rows", 37, 5, false},  // 8 lanes per row, 32 rows per block
          {"warp_rows", 19, 300, false}, // a warp per row
          {"block_rows", 3, 3000, false}, // a block per row
          {"transposed", 21, 45, true}};
}

double tolerance(torch::ScalarType dt) { return dt == torch::kFloat ? 2e-4 : 3e-2; }

void expectMatches(const torch::Tensor &got, const torch::Tensor &want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  torch::Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, tol, tol, true))
      << "max error " << (g - w).abs().max().item<double>();
}

class EmulatedRows
    : public ::testing::TestWithParam<std::tuple<int, torch::ScalarType>> {};

TEST_P(EmulatedRows, MatchEagerAndCompileWithNvrtc) {
  auto [index, dt] = GetParam();
  const RowCase c = rowCases()[index];
  torch::NoGradGuard noGrad;
  for (const Shape &s : shapes()) {
    // Every launch shape in float32; two each for the half types (the
    // emulator compiles each source once, so this keeps CI time down).
    if ((dt == torch::kBFloat16 && (s.name == "short_rows" || s.name == "block_rows")) ||
        (dt == torch::kHalf && (s.name == "warp_rows" || s.name == "transposed")))
      continue;
    SCOPED_TRACE(c.name + " / " + s.name);
    torch::manual_seed(index);
    torch::Tensor x = s.transposed ? torch::randn({s.cols, s.rows}).t() : torch::randn({s.rows, s.cols});
    x = (x * 2).to(dt);
    // Half types: tgc computes in float, eager (CPU) too for these ops.
    torch::Tensor want = c.fn(x);
    for (unsigned maxGrid : {2u, 1u << 20}) {
      EmulatedRun r = runEmulated([&](const auto &in) { return std::vector<at::Tensor>{c.fn(in[0])}; },
                                  {x}, maxGrid);
      expectMatches(r.outputs[0], want, tolerance(dt));
      if (maxGrid == 2)
        continue;
      recordGpuCase("EmulatedRows." + c.name + "_" + c10::toString(dt) + "." + s.name, r, {want},
                    tolerance(dt));
      for (const char *arch : {"sm_80", "sm_90"})
        EXPECT_EQ(compileAllWithNvrtc(r.plans, arch), "") << arch;
    }
  }
}

std::vector<std::tuple<int, torch::ScalarType>> matrix() {
  std::vector<std::tuple<int, torch::ScalarType>> out;
  for (int i = 0; i < (int)rowCases().size(); ++i)
    for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf})
      out.emplace_back(i, dt);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rows, EmulatedRows, ::testing::ValuesIn(matrix()),
                         [](const auto &info) {
                           return rowCases()[std::get<0>(info.param)].name + "_" +
                                  c10::toString(std::get<1>(info.param));
                         });

TEST(EmulatedRowsNaN, MaxPropagatesAndArgmaxTakesTheFirstNaN) {
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({4, 700});
  x.index_put_({1, 13}, NAN);
  x.index_put_({1, 600}, NAN);
  x.index_put_({2, 650}, NAN);
  x.index_put_({3, 5}, 9.0);
  x.index_put_({3, 400}, 9.0); // a tie: the first position wins
  EmulatedRun r = runEmulated(
      [](const auto &in) {
        return std::vector<at::Tensor>{in[0].amax(-1), in[0].argmax(-1), in[0].argmin(-1)};
      },
      {x});
  expectMatches(r.outputs[0], x.amax(-1), 0);
  EXPECT_TRUE(torch::equal(r.outputs[1], x.argmax(-1))) << r.outputs[1];
  EXPECT_TRUE(torch::equal(r.outputs[2], x.argmin(-1))) << r.outputs[2];
}

// Long rows over few rows (a full reduction, a loss's mean) are reduced in
// two stages on CUDA (tg-split-reductions): per chunk over many blocks, then
// the chunks of each row in order. The result does not depend on the grid
// (bitwise), and matches eager.
TEST(EmulatedSplitRows, LongRowsSplitAcrossBlocksDeterministically) {
  torch::NoGradGuard noGrad;
  struct Case {
    std::string name;
    Program fn;
    torch::Tensor x;
    double tol;
  };
  torch::manual_seed(21);
  std::vector<Case> cases = {
      {"sum_rows", [](const auto &in) { return std::vector<at::Tensor>{in[0].sum(-1)}; },
       torch::randn({2, 65536}), 1e-5},
      {"amax_rows", [](const auto &in) { return std::vector<at::Tensor>{in[0].amax(-1)}; },
       torch::randn({2, 65536}), 0},
      {"mean_all", [](const auto &in) { return std::vector<at::Tensor>{in[0].mean()}; },
       torch::randn({64, 32, 32}) + 0.25, 1e-5},
      {"softmax_long_row", [](const auto &in) { return std::vector<at::Tensor>{torch::softmax(in[0], -1)}; },
       torch::randn({1, 32768}) * 3, 1e-5},
      {"sum_bf16", [](const auto &in) { return std::vector<at::Tensor>{in[0].sum(-1)}; },
       torch::randn({3, 32768}).to(torch::kBFloat16), 1e-2},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    torch::Tensor want = c.fn({c.x.to(torch::kDouble)})[0].to(c.x.scalar_type());
    EmulatedRun full = runEmulated(c.fn, {c.x});
    EmulatedRun capped = runEmulated(c.fn, {c.x}, /*maxGrid=*/3);
    expectMatches(full.outputs[0], want, c.tol);
    EXPECT_TRUE(torch::equal(full.outputs[0], capped.outputs[0]))
        << "the result depends on the grid";
    ASSERT_EQ(full.plans.size(), 1u);
    const Plan &plan = full.plans[0];
    ASSERT_GE(plan.kernels.size(), 2u) << "not split";
    EXPECT_GE(plan.kernels[0].grid, 16) << "the chunks of a row run in many blocks";
    for (const char *arch : {"sm_80", "sm_90"})
      EXPECT_EQ(compileAllWithNvrtc(full.plans, arch), "") << arch;
    recordGpuCase("EmulatedSplitRows." + c.name, full, {want}, std::max(c.tol, 1e-6));
  }
}

/// Sets TGC_EMU_SCHEDULE for the emulator's launches while it lives.
class ScheduleForLaunches {
public:
  explicit ScheduleForLaunches(const char *schedule) {
    if (const char *e = std::getenv("TGC_EMU_SCHEDULE"))
      previous_ = e, had_ = true;
    setenv("TGC_EMU_SCHEDULE", schedule, 1);
  }
  ~ScheduleForLaunches() {
    if (had_)
      setenv("TGC_EMU_SCHEDULE", previous_.c_str(), 1);
    else
      unsetenv("TGC_EMU_SCHEDULE");
  }

private:
  std::string previous_;
  bool had_ = false;
};

// Issue 21: a barrier that the emitted row kernel needs, deleted from its
// source, is caught. tgc_row_reduce's first __syncthreads keeps a block's
// warps from overwriting the per-warp parts of one reduction (layer norm's
// mean) with the next's (its variance: the same instantiation, the same
// shared array) while a slower warp still reads them. Warps
// advance in step under the forward, reverse and shuffled orders; the
// straggler schedule holds warps back, and the result goes wrong.
TEST(EmulatedRowsRaces, ABarrierDeletedFromAnEmittedRowKernelIsCaught) {
  torch::NoGradGuard noGrad;
  torch::manual_seed(31);
  torch::Tensor x = torch::randn({6, 3000}) * 2; // a block of 8 warps per row
  Program fn = [](const auto &in) {
    return std::vector<at::Tensor>{torch::layer_norm(in[0], {in[0].size(-1)}, {}, {}, 1e-5)};
  };
  torch::Tensor want = fn({x})[0];
  ScheduleForLaunches straggler("straggler");
  EmulatedRun r = runEmulated(fn, {x});
  expectMatches(r.outputs[0], want, 2e-5);
  ASSERT_EQ(r.plans.size(), 1u);
  Plan broken = r.plans[0];
  const std::string barrier =
      "__syncthreads(); // every thread has read the previous reduction's parts";
  int removed = 0;
  for (std::string &src : broken.cudaSources)
    for (size_t at; (at = src.find(barrier)) != std::string::npos; ++removed)
      src.replace(at, std::string("__syncthreads();").size(), "");
  ASSERT_GT(removed, 0) << "tgc_row_reduce no longer has this barrier:\n"
                        << r.plans[0].cudaSources[0];
  std::vector<at::Tensor> got = loadEmulatedPlan(broken)->run(r.segmentInputs[0]);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(torch::allclose(got[0], want, 1e-3, 1e-3))
      << "a layer norm without the barrier still matched eager";
}

// Issue 21: a kernel that indexes past its buffers faults, and the fault
// names the kernel and thread. The emulated launcher copies each buffer into
// a mapping that ends at a PROT_NONE page (GuardedBuffers); without it, the
// same kernel reads and writes 64 elements of whatever follows in the arena.
TEST(EmulatedFaults, AnIndexPastTheEndInAnEmittedKernelFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  torch::NoGradGuard noGrad;
  torch::Tensor x = torch::randn({1000});
  Program fn = [](const auto &in) { return std::vector<at::Tensor>{in[0].exp() * 2}; };
  EmulatedRun r = runEmulated(fn, {x});
  expectMatches(r.outputs[0], x.exp() * 2, 1e-5);
  ASSERT_EQ(r.plans.size(), 1u);
  ASSERT_EQ(r.plans[0].kernels.size(), 1u);
  Plan broken = r.plans[0];
  std::string &src = broken.cudaSources[0];
  size_t at = src.find(" n = 1000;");
  ASSERT_NE(at, std::string::npos) << src;
  src.replace(at, 10, " n = 1064;");
  std::vector<at::Tensor> inputs = r.segmentInputs[0];
  EXPECT_DEATH(loadEmulatedPlan(broken, /*maxGrid=*/1)->run(inputs),
               "invalid memory access in kernel " + broken.kernels[0].name +
                   ", block \\(0,0,0\\), thread \\([0-9]+,0,0\\)");
}

} // namespace
} // namespace tgc::emu

namespace tgc::emu {
namespace {

/// ptxas's report and PTX as NVRTC gives them, for one entry `k`.
NvrtcResult reported(int registers, int64_t smem, int64_t spills, int maxntid, int params) {
  NvrtcResult r;
  r.ok = true;
  r.log = "ptxas info    : 0 bytes gmem\n"
          "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
          "ptxas info    : Function properties for k\n"
          "    0 bytes stack frame, " + std::to_string(spills) + " bytes spill stores, " +
          std::to_string(spills) + " bytes spill loads\n"
          "ptxas info    : Used " + std::to_string(registers) + " registers, used 1 barriers, " +
          std::to_string(smem) + " bytes smem, 384 bytes cmem[0]\n";
  r.ptx = ".visible .entry k(\n";
  for (int i = 0; i < params; ++i)
    r.ptx += "\t.param .u64 k_param_" + std::to_string(i) + (i + 1 < params ? ",\n" : "\n");
  r.ptx += ")\n.maxntid " + std::to_string(maxntid) + ", 1, 1\n{\n}\n";
  return r;
}

TEST(KernelResourceChecks, CatchWhatAGpuWouldRefuseOrRunBadly) {
  KernelStep k;
  k.name = "k";
  k.block = 256;
  k.inputs = {0, 1};
  k.outputs = {2};
  EXPECT_EQ(checkKernelResources(k, reported(40, 1024, 0, 256, 3), "sm_90"), "");
  EXPECT_EQ(checkKernelResources(k, reported(40, 1024, 8, 256, 3), "sm_90"),
            "k (sm_90): spills 8 bytes stored, 8 loaded");
  EXPECT_EQ(checkKernelResources(k, reported(40, 1024, 0, 128, 3), "sm_90"),
            "k (sm_90): .maxntid 128 but the launch block is 256");
  EXPECT_EQ(checkKernelResources(k, reported(40, 1024, 0, 256, 4), "sm_90"),
            "k (sm_90): 4 parameters for 2 inputs, 1 outputs");
  EXPECT_EQ(checkKernelResources(k, reported(40, 64 * 1024, 0, 256, 3), "sm_90"),
            "k (sm_90): 65536 bytes of static shared memory");
  k.block = 1024; // 64 registers fit 1024 threads, 65 do not (allocated in units of 8 per thread)
  EXPECT_EQ(checkKernelResources(k, reported(64, 0, 0, 1024, 3), "sm_90"), "");
  EXPECT_EQ(checkKernelResources(k, reported(65, 0, 0, 1024, 3), "sm_90"),
            "k (sm_90): 65 registers x 1024 threads exceed the SM's register file");
  k.checks.resize(1); // an index check adds the error record's parameter
  EXPECT_EQ(checkKernelResources(k, reported(64, 0, 0, 1024, 3), "sm_90"),
            "k (sm_90): 3 parameters for 2 inputs, 1 outputs and the error record");
  EXPECT_EQ(checkKernelResources(k, NvrtcResult(), "sm_90"), "k (sm_90): no ptxas report in NVRTC's log");
}

TEST(KernelResourceChecks, ReadPtxassRealReportFromTheCacheToo) {
  // A real kernel: 3 parameters, __launch_bounds__(128), static shared memory.
  const std::string src = R"(extern "C" __global__ void __launch_bounds__(128)
k(const float *__restrict__ a, float *__restrict__ b, long long n) {
  __shared__ float t[128];
  t[threadIdx.x] = a[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  b[blockIdx.x * 128 + threadIdx.x] = t[127 - threadIdx.x] * (float)n;
})";
  for (bool second : {false, true}) { // the second comes from the kernel cache
    NvrtcResult r = compileCuda(src, "k", "sm_90");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.fromCache, second || r.fromCache);
    KernelResources res = kernelResources(r, "k");
    EXPECT_TRUE(res.reported) << r.log;
    EXPECT_GT(res.registers, 0);
    EXPECT_EQ(res.sharedBytes, 512);
    EXPECT_EQ(res.spillStoreBytes + res.spillLoadBytes, 0);
    EXPECT_EQ(res.params, 3);
    EXPECT_EQ(res.maxThreads, 128);
  }
}

} // namespace
} // namespace tgc::emu
