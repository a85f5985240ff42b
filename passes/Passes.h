//===- Passes.h - declarations and registration of tgc's passes -----------===//
#ifndef TGC_PASSES_PASSES_H
#define TGC_PASSES_PASSES_H

#include "dialects/TG/IR/TGOps.h"
#include "dialects/TGK/IR/TGKDialect.h"
#include "runtime/ContiguousStrides.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace tgc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Appends tgc's pipeline to `pm` (anchored on the module): decompose,
/// canonicalize, CSE, split epilogues, then `backendPasses` (a backend's
/// own, see codegen/Backend.h), push remaps, fuse rows, pointwise and
/// horizontally, schedule.
void buildTgcPipeline(mlir::OpPassManager &pm,
                      llvm::function_ref<void(mlir::OpPassManager &)> backendPasses);

/// The strides of the buffer holding `v` once materialized: a function
/// argument's `tg.strides`, a producer's `tg.strides`/`result_strides`, or
/// the contiguous strides of its shape.
llvm::SmallVector<int64_t> bufferStrides(mlir::Value v);

/// Erases broadcasts, remaps and constants nobody uses any more (chains die
/// from the outside in, so it sweeps until nothing changes).
void eraseDeadLayoutOps(mlir::func::FuncOp fn);

/// Follows `tg.broadcast` and `tg.remap` ops back to the value a kernel
/// really reads, composing their maps into `map` (iteration -> index of `v`).
std::pair<mlir::Value, mlir::AffineMap> traceLayout(mlir::Value v, mlir::AffineMap map);
/// The value under any chain of broadcasts and remaps.
mlir::Value throughLayout(mlir::Value v);

/// For a kernel input traced to a `tg.iota` (root, map from the kernel's
/// iteration dims): the `tgk.index` computing it, built with `b`; null when
/// `root` is not an iota.
mlir::Value buildIndexOf(mlir::OpBuilder &b, mlir::Value root, mlir::AffineMap map);

/// Layout ops still used by something other than a layout op or a kernel
/// (an extern call, the return) after fusion: a remap that came from an ATen
/// view becomes that view again (zero-copy); others are materialized by a
/// copy kernel named `k<counter>`.
void materializeLayoutOps(mlir::func::FuncOp fn, unsigned &counter);

/// The scalar of `v` (a kernel input, its layout traced) read at `map`
/// (iteration dims and `indices` as symbols -> `v`'s dims): a constant for
/// a splat, a tgk.index for an iota (none when the map has symbols), else
/// a tgk.load of the whole-buffer argument `bufferOf(root)`.
mlir::Value loadScalar(mlir::OpBuilder &b, mlir::Value v, mlir::AffineMap map,
                       mlir::ValueRange indices,
                       llvm::function_ref<mlir::Value(mlir::Value)> bufferOf);

/// The scalar body of a tg.gather, tg.concat or tg.pad member at the
/// kernel's current iteration: element operands come from `scalarOf`,
/// loaded ones from `load(operand, map, indices)`. Null when a load fails.
mlir::Value buildIndexedScalar(
    mlir::OpBuilder &b, mlir::Operation *member,
    llvm::function_ref<mlir::Value(mlir::Value)> scalarOf,
    llvm::function_ref<mlir::Value(mlir::Value, mlir::AffineMap, mlir::ValueRange)> load);


} // namespace tgc

#endif // TGC_PASSES_PASSES_H
