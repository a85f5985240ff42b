// The kernel descriptor is computed once per kernel: what the emitters print
// and what the Plan's steps hold are the descriptor's, checked by describing
// the pipeline's final IR again and comparing.
#include "codegen/Backend.h"
#include "compiler/pipeline/Pipeline.h"
#include "dialects/TG/IR/TGOps.h"
#include "runtime/ContiguousStrides.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace tgc {
namespace {

using codegen::DescribedKernel;
using codegen::Target;

ArgValue tensor(int v) {
  ArgValue a;
  a.kind = ArgValue::Tensor;
  a.tensors = {v};
  return a;
}

ArgValue integer(int64_t i) {
  ArgValue a;
  a.kind = ArgValue::Int;
  a.i = i;
  return a;
}

/// w[i] * w[j] for a [10, 6] table and two [4] index vectors: one kernel
/// with two index checks.
Segment twoGathers(const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{10, 6}, {6, 1}, DType::Float32}, {{4}, {1}, DType::Int64},
              {{4}, {1}, DType::Int64},          {{4, 6}, {6, 1}, DType::Float32},
              {{4, 6}, {6, 1}, DType::Float32},  {{4, 6}, {6, 1}, DType::Float32}};
  s.inputs = {0, 1, 2};
  s.nodes = {{"aten::embedding", "", {tensor(0), tensor(1)}, {3}},
             {"aten::embedding", "", {tensor(0), tensor(2)}, {4}},
             {"aten::mul", "Tensor", {tensor(3), tensor(4)}, {5}}};
  s.outputs = {5};
  return s;
}

/// exp(x) over a contiguous [64, 96] float32 tensor: 16-byte vectors.
Segment contiguousExp(const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{64, 96}, {96, 1}, DType::Float32}, {{64, 96}, {96, 1}, DType::Float32}};
  s.inputs = {0};
  s.nodes = {{"aten::exp", "", {tensor(0)}, {1}}};
  s.outputs = {1};
  return s;
}

/// self.scatter_add(0, index, src) with self [5, 3], index and src [8, 3].
Segment scatterAdd(const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{5, 3}, {3, 1}, DType::Float32}, {{8, 3}, {3, 1}, DType::Int64},
              {{8, 3}, {3, 1}, DType::Float32}, {{5, 3}, {3, 1}, DType::Float32}};
  s.inputs = {0, 1, 2};
  s.nodes = {{"aten::scatter_add", "", {tensor(0), integer(0), tensor(1), tensor(2)}, {3}}};
  s.outputs = {3};
  return s;
}

/// x.sum(-1) over a [rows, n] float32 tensor: one row kernel.
Segment rowSums(int64_t rows, int64_t n, const std::string &device) {
  Segment s;
  s.device = device;
  s.values = {{{rows, n}, {n, 1}, DType::Float32}, {{rows}, {1}, DType::Float32}};
  s.inputs = {0};
  ArgValue dims, keep, none;
  dims.kind = ArgValue::IntList;
  dims.ints = {-1};
  keep.kind = ArgValue::Bool;
  s.nodes = {{"aten::sum", "dim_IntList", {tensor(0), dims, keep, none}, {1}}};
  s.outputs = {1};
  return s;
}

/// The pipeline's final IR parsed back, and its kernels in plan order.
struct FinalIR {
  mlir::MLIRContext ctx{mlir::MLIRContext::Threading::DISABLED};
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<mlir::Operation *> kernels;

  explicit FinalIR(const std::string &text) {
    mlir::DialectRegistry registry;
    registry.insert<tg::TGDialect, tgk::TGKDialect, mlir::func::FuncDialect,
                    mlir::arith::ArithDialect, mlir::math::MathDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
    if (!module)
      return;
    module->walk([&](mlir::Operation *op) {
      if (mlir::isa<tgk::KernelOp, tgk::RowKernelOp, tgk::ScatterAddKernelOp>(op))
        kernels.push_back(op);
    });
  }
};

/// Describes every kernel of `r`'s final IR again and checks that the plan
/// step holds the descriptor's facts and the plan's source is what the
/// emitter prints from it. Returns the descriptors.
std::vector<DescribedKernel> expectPlanCopiesDescriptors(const PipelineResult &r, Target target) {
  FinalIR ir(r.finalIR);
  EXPECT_TRUE(ir.module) << r.finalIR;
  EXPECT_EQ(ir.kernels.size(), r.plan.kernels.size());
  std::vector<DescribedKernel> out;
  for (size_t k = 0; k < ir.kernels.size() && k < r.plan.kernels.size(); ++k) {
    DescribedKernel d = codegen::describeKernel(ir.kernels[k], target);
    const KernelStep &step = r.plan.kernels[k];
    EXPECT_EQ(step.checks, d.desc.checks);
    EXPECT_EQ(step.block, d.desc.launch.block);
    EXPECT_EQ(step.vector, d.desc.vector);
    EXPECT_EQ(step.grid, d.desc.launch.grid);
    EXPECT_FALSE(d.desc.tile) << "no tile configuration until the autotuner sets one";
    std::string error;
    const codegen::CodegenBackend &backend =
        *codegen::codegenBackendFor(target == Target::Cuda ? "cuda" : "cpu");
    std::string src = backend.emit(ir.kernels[k], d, error);
    EXPECT_FALSE(src.empty()) << error;
    if (target == Target::Cuda)
      EXPECT_EQ(r.plan.cudaSources[k], backend.prelude() + src);
    else
      EXPECT_NE(r.plan.cpuSource.find(src), std::string::npos) << src;
    out.push_back(std::move(d));
  }
  return out;
}

/// Runs `s` through the pipeline and checks its plan against the
/// descriptors of its final IR; the descriptor of its one kernel.
KernelDescriptor onlyKernel(const Segment &s, Target target, PipelineResult &r) {
  r = runPipeline(s);
  EXPECT_TRUE(r.ok) << r.error;
  std::vector<DescribedKernel> d = expectPlanCopiesDescriptors(r, target);
  EXPECT_EQ(d.size(), 1u) << r.finalIR;
  return d.empty() ? KernelDescriptor() : d[0].desc;
}

const std::pair<const char *, Target> kTargets[] = {{"cpu", Target::Cpu}, {"cuda", Target::Cuda}};

TEST(KernelDescriptor, TwoIndexChecksAreNumberedOnceAndTheStepCopiesThem) {
  for (auto [device, target] : kTargets) {
    SCOPED_TRACE(device);
    PipelineResult r;
    const std::vector<IndexCheck> checks = onlyKernel(twoGathers(device), target, r).checks;
    ASSERT_EQ(checks.size(), 2u);
    for (int id : {0, 1})
      EXPECT_EQ(checks[id], (IndexCheck{0, 10, false, "aten::embedding", id}));
    const std::string &src = target == Target::Cuda ? r.plan.cudaSources[0] : r.plan.cpuSource;
    if (target == Target::Cuda) {
      EXPECT_NE(src.find("10LL, false, tgc_err, 0)"), std::string::npos) << src;
      EXPECT_NE(src.find("10LL, false, tgc_err, 1)"), std::string::npos) << src;
      EXPECT_EQ(src.find("tgc_err, 2)"), std::string::npos) << src;
    } else { // in the SIMD loop: branch-free, reported after it by id
      EXPECT_NE(src.find("< 10LL;"), std::string::npos) << src;
      EXPECT_NE(src.find("tgc_index_error(tgc_err, 0, tgc_raw0)"), std::string::npos) << src;
      EXPECT_NE(src.find("tgc_index_error(tgc_err, 1, tgc_raw1)"), std::string::npos) << src;
      EXPECT_NE(src.find("reduction(|:tgc_bad1) reduction(max:tgc_raw1)"), std::string::npos)
          << src;
      EXPECT_EQ(src.find("tgc_err, 2"), std::string::npos) << src;
    }
  }
}

TEST(KernelDescriptor, CudaEmitterVectorizesByTheDescriptorsWidth) {
  PipelineResult r;
  KernelDescriptor cuda = onlyKernel(contiguousExp("cuda"), Target::Cuda, r);
  EXPECT_EQ(cuda.vector, 4);
  EXPECT_EQ(cuda.index, IndexType::I32);
  EXPECT_EQ(cuda.launch, (LaunchConfig{6, 256, 0, 0})) << "64 * 96 / (256 * 4) blocks";
  EXPECT_NE(r.plan.cudaSources[0].find("tgc_vec<float, 4>"), std::string::npos);
  EXPECT_NE(r.plan.cudaSources[0].find("const int n = 6144;"), std::string::npos);
  // The CPU's descriptor keeps the width for its chunking and 64-bit indices.
  KernelDescriptor cpu = onlyKernel(contiguousExp("cpu"), Target::Cpu, r);
  EXPECT_EQ(cpu.vector, 4);
  EXPECT_EQ(cpu.index, IndexType::I64);
  EXPECT_EQ(cpu.launch, (LaunchConfig{1, 256, 0, 0}));
}

/// exp(x) over a contiguous 1-d float32 tensor of n elements.
Segment exp1d(int64_t n) {
  Segment s;
  s.device = "cuda";
  s.values = {{{n}, {1}, DType::Float32}, {{n}, {1}, DType::Float32}};
  s.inputs = {0};
  s.nodes = {{"aten::exp", "", {tensor(0)}, {1}}};
  s.outputs = {1};
  return s;
}

// Issue 21: below 2^31 elements, but the grid-stride loop's last step
// (i += blockDim.x * gridDim.x after the last element) passes INT_MAX with
// 32-bit indices: the descriptor must pick 64-bit ones.
TEST(KernelDescriptor, IndicesAre64BitWhenTheGridStrideStepCanPassIntMax) {
  PipelineResult r;
  const int64_t n = (int64_t(1) << 31) - 63; // odd: no vectors, one thread per element
  KernelDescriptor near = onlyKernel(exp1d(n), Target::Cuda, r);
  ASSERT_EQ(near.vector, 1);
  EXPECT_LT(n, int64_t(1) << 31);
  EXPECT_GE(n + near.launch.grid * near.launch.block, int64_t(1) << 31);
  EXPECT_EQ(near.index, IndexType::I64);
  EXPECT_NE(r.plan.cudaSources[0].find("const long long n = 2147483585;"), std::string::npos);
  // Far from it, 32-bit indices stay.
  KernelDescriptor small = onlyKernel(exp1d(999999), Target::Cuda, r);
  EXPECT_EQ(small.index, IndexType::I32);
}

TEST(KernelDescriptor, RowKernelLaunchIsTheDescriptorsLanesAndRowsPerBlock) {
  PipelineResult r;
  KernelDescriptor d = onlyKernel(rowSums(1000, 300, "cuda"), Target::Cuda, r);
  ASSERT_TRUE(mlir::isa<tgk::RowKernelOp>(FinalIR(r.finalIR).kernels.at(0)));
  EXPECT_EQ(d.launch, (LaunchConfig{125, 256, 32, 8})) << "1000 rows, 8 a block";
  EXPECT_NE(r.plan.cudaSources[0].find("threadIdx.x % 32;"), std::string::npos);
  EXPECT_NE(r.plan.cudaSources[0].find("blockIdx.x * 8;"), std::string::npos);
}

TEST(KernelDescriptor, ScatterAddHasOneCheckNumberedZero) {
  for (auto [device, target] : kTargets) {
    SCOPED_TRACE(device);
    PipelineResult r;
    KernelDescriptor d = onlyKernel(scatterAdd(device), target, r);
    EXPECT_EQ(d.checks, (std::vector<IndexCheck>{{0, 5, false, "aten::scatter_add", 0}}));
    EXPECT_EQ(d.launch.grid, 1) << "3 columns, or the CPU";
  }
}

TEST(KernelDescriptor, OneIndexDecompositionPrinter) {
  codegen::detail::IndexSplit how;
  how.indent = "  ";
  how.name = [](size_t d) { return "x" + std::to_string(d); };
  EXPECT_EQ(codegen::detail::decomposeIndex("o", {2, 0, 5}, how),
            "  long long rem = o;\n"
            "  const long long x2 = rem % 5LL; rem /= 5LL;\n"
            "  const long long x1 = rem % 1LL; rem /= 1LL;\n"
            "  const long long x0 = rem % 2LL; rem /= 2LL;\n");
  how.outermostIsRest = true;
  how.skip = 1;
  how.type = "int";
  how.suffix = "";
  EXPECT_EQ(codegen::detail::decomposeIndex("i", {2, 7, 5}, how),
            "  int rem = i;\n"
            "  const int x2 = rem % 5; rem /= 5;\n"
            "  const int x0 = rem;\n");
}

TEST(KernelDescriptor, ContiguousStridesCountEmptyDimsAsOne) {
  EXPECT_EQ(contiguousStrides(std::vector<int64_t>{2, 0, 3}), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(contiguousStrides(std::vector<int64_t>{4, 5, 6}), (std::vector<int64_t>{30, 6, 1}));
  EXPECT_TRUE(contiguousStrides(std::vector<int64_t>{}).empty());
}

} // namespace
} // namespace tgc
