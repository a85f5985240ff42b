//===- Pipelines.cpp - the registered tgc pass pipelines ------------------===//
//
// The pipeline, built here and nowhere else: the JIT and tgc-aot (through
// runPipeline) and `tgc-opt --tgc-pipeline=cpu|cuda` run the same passes in
// the same order, with the backend's own passes (codegen/Backend.h) at its
// target step.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tgc {

void buildTgcPipeline(OpPassManager &pm, function_ref<void(OpPassManager &)> backendPasses) {
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createDecompose());
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createCSEPass());
  fpm.addPass(createSplitEpilogues());
  backendPasses(fpm);
  fpm.addPass(createPushRemaps());
  fpm.addPass(createFuseRows());
  fpm.addPass(createFusePointwise());
  fpm.addPass(createFuseHorizontal());
  fpm.addPass(createSchedule());
}

} // namespace tgc
