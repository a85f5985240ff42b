//===- Backend.cpp - the CPU and CUDA compiler halves ---------------------===//
#include "codegen/Backend.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tgc::codegen {

void CodegenBackend::buildPipeline(OpPassManager &pm) const {
  buildTgcPipeline(pm, [this](OpPassManager &fpm) { addPasses(fpm); });
}

namespace {

std::string noEmitter(Operation *op, std::string &error) {
  error = "codegen has no emitter for '" + op->getName().getStringRef().str() + "'";
  return "";
}

class CpuCodegen final : public CodegenBackend {
public:
  StringRef name() const override { return "cpu"; }
  Target target() const override { return Target::Cpu; }
  void addPasses(OpPassManager &) const override {}
  std::string prelude() const override { return cpuPrelude(); }
  std::string emit(Operation *op, const DescribedKernel &d, std::string &error) const override {
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](tgk::KernelOp k) { return emitCpuKernel(k, d, error); })
        .Case([&](tgk::RowKernelOp k) { return emitCpuRowKernel(k, d, error); })
        .Case([&](tgk::ScatterAddKernelOp k) { return emitCpuScatterAddKernel(k, d); })
        .Default([&](Operation *o) { return noEmitter(o, error); });
  }
  // One translation unit, one shared object: the prelude once, at the top.
  void addSource(Plan &plan, std::string source) const override { plan.cpuSource += source; }
  void finish(Plan &plan) const override {
    if (!plan.cpuSource.empty())
      plan.cpuSource = prelude() + plan.cpuSource;
  }
};

class CudaCodegen final : public CodegenBackend {
public:
  StringRef name() const override { return "cuda"; }
  Target target() const override { return Target::Cuda; }
  // One block per row: long rows over few rows are cut into chunks.
  void addPasses(OpPassManager &fpm) const override { fpm.addPass(createSplitReductions()); }
  std::string prelude() const override { return cudaPrelude(); }
  std::string emit(Operation *op, const DescribedKernel &d, std::string &error) const override {
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](tgk::KernelOp k) { return emitCudaKernel(k, d, error); })
        .Case([&](tgk::RowKernelOp k) { return emitCudaRowKernel(k, d, error); })
        .Case([&](tgk::ScatterAddKernelOp k) { return emitCudaScatterAddKernel(k, d); })
        .Default([&](Operation *o) { return noEmitter(o, error); });
  }
  // One translation unit per kernel (NVRTC compiles them in parallel).
  void addSource(Plan &plan, std::string source) const override {
    plan.cudaSources.push_back(prelude() + source);
  }
  void finish(Plan &) const override {}
};

} // namespace

const CodegenBackend *codegenBackendFor(StringRef device) {
  static const CpuCodegen cpu;
  static const CudaCodegen cuda;
  StringRef type = device.split(':').first;
  if (type == cpu.name())
    return &cpu;
  if (type == cuda.name())
    return &cuda;
  return nullptr;
}

void registerTgcPipelines() {
  registerPassPipeline(
      "tgc-pipeline",
      "tgc's whole pipeline for a backend (cpu or cuda): decompose, canonicalize, CSE, "
      "split epilogues, the backend's passes (cuda: split reductions), push remaps, fuse "
      "rows, fuse pointwise, fuse horizontally, schedule",
      [](OpPassManager &pm, StringRef options,
         function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        StringRef name = options.trim();
        const CodegenBackend *backend = name.contains(':') ? nullptr : codegenBackendFor(name);
        if (!backend)
          return errorHandler("--tgc-pipeline takes a backend, cpu or cuda (got '" + options +
                              "')");
        backend->buildPipeline(pm);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)>) {});
}

} // namespace tgc::codegen
