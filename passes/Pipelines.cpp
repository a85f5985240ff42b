//===- Pipelines.cpp - the registered tgc pass pipelines ------------------===//
//
// One pipeline per target, built here and nowhere else: the JIT and tgc-aot
// (through runPipeline) and `tgc-opt --tgc-pipeline=cpu|cuda` run the same
// passes in the same order.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tgc {

std::optional<PipelineTarget> parsePipelineTarget(StringRef name) {
  if (name == "cpu")
    return PipelineTarget::Cpu;
  if (name == "cuda")
    return PipelineTarget::Cuda;
  return std::nullopt;
}

void buildTgcPipeline(OpPassManager &pm, PipelineTarget target) {
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createDecompose());
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createCSEPass());
  fpm.addPass(createSplitEpilogues());
  // One block per row on CUDA: long rows over few rows are cut into chunks.
  if (target == PipelineTarget::Cuda)
    fpm.addPass(createSplitReductions());
  fpm.addPass(createPushRemaps());
  fpm.addPass(createFuseRows());
  fpm.addPass(createFusePointwise());
  fpm.addPass(createFuseHorizontal());
  fpm.addPass(createSchedule());
}

void registerTgcPipelines() {
  registerPassPipeline(
      "tgc-pipeline",
      "tgc's whole pipeline for a target (cpu or cuda): decompose, canonicalize, CSE, "
      "split epilogues, (cuda: split reductions), push remaps, fuse rows, fuse pointwise, "
      "fuse horizontally, schedule",
      [](OpPassManager &pm, StringRef options,
         function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        std::optional<PipelineTarget> target = parsePipelineTarget(options.trim());
        if (!target)
          return errorHandler("--tgc-pipeline takes a target, cpu or cuda (got '" + options +
                              "')");
        buildTgcPipeline(pm, *target);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
}

} // namespace tgc
