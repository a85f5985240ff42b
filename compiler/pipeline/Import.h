//===- Import.h - Segment to the `tg` dialect -----------------------------===//
#ifndef TGC_COMPILER_PIPELINE_IMPORT_H
#define TGC_COMPILER_PIPELINE_IMPORT_H

#include "compiler/capture/Segment.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace tgc {

/// Builds `func.func @segment` in `module` from `segment`. ATen ops tg
/// knows become tg ops with broadcasting and type promotion made explicit;
/// every other op becomes a `tg.extern`. Fails with a message in `error`.
mlir::FailureOr<mlir::func::FuncOp> importSegment(const Segment &segment,
                                                  mlir::ModuleOp module,
                                                  std::string &error);

/// The MLIR element type of a tgc dtype (null for unsupported ones).
mlir::Type elementType(mlir::MLIRContext *ctx, DType dtype);

/// The tgc dtype of an MLIR element type.
DType dtypeOf(mlir::Type elementType);

} // namespace tgc

#endif // TGC_COMPILER_PIPELINE_IMPORT_H
