//===- tgc-opt.cpp - mlir-opt with the tg/tgk dialects and tgc's passes ---===//
#include "dialects/TG/IR/TGOps.h"
#include "dialects/TGK/IR/TGKDialect.h"
#include "codegen/Backend.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<tgc::tg::TGDialect, tgc::tgk::TGKDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect>();
  tgc::registerTGCPasses();
  tgc::codegen::registerTgcPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tgc optimizer driver\n", registry));
}
