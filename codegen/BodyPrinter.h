//===- BodyPrinter.h - scalar body printing shared by the emitters -------===//
//
// Internal to codegen: the printer of kernel-body ops and the index helpers
// that ScalarEmitter.cpp (tgk.kernel) and RowEmitter.cpp (tgk.row_kernel)
// both use.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CODEGEN_BODYPRINTER_H
#define TGC_CODEGEN_BODYPRINTER_H

#include "codegen/Emitters.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <fmt/format.h>
#include <functional>

namespace tgc::codegen::detail {

/// The C type a value of `t` is computed in: half types widen to float.
std::string computeType(mlir::Type t);

using NameFn = std::function<std::string(unsigned)>;
/// The element offset `map` reaches in a buffer of `strides`, with dims
/// named by `dim` and symbols (tgk.load indices) by `sym`.
/// `opaque` (CPU SIMD loops): large power-of-two strides print as
/// cpuStride's names.
std::string linearOffset(mlir::AffineMap map, llvm::ArrayRef<int64_t> strides,
                         llvm::StringRef type, const NameFn &dim, const NameFn &sym = nullptr,
                         bool opaque = false);

/// A constant element stride as a CPU SIMD loop should read it: GCC 12
/// leaves loops scalar that read with a constant power-of-two stride of 16
/// or more ("complicated access pattern") but vectorizes the same loop
/// when the stride is not known at compile time (element-wise vector
/// construction; 1.6x faster measured for a 16-wide stride-256 read). Such
/// strides print as `tgc_s<stride>`, defined once per kernel by
/// declareOpaqueStrides; others as `<stride>LL`.
std::string cpuStride(int64_t stride);
/// `src` (one kernel function) with a `tgc_s<N>` definition, through an
/// empty asm the compiler cannot see through, at the top of its body for
/// each name it uses.
std::string declareOpaqueStrides(const std::string &src);

using mlir::Value;
using mlir::Operation;
using mlir::LogicalResult;
using llvm::StringRef;
using llvm::DenseMap;
using llvm::DenseSet;

/// Prints one body op at a time as `const T vN = expr;`.
class BodyPrinter {
public:
  /// `checkIds`: the kernel descriptor's number of each tgk.check_index.
  BodyPrinter(Target target, const DenseMap<Operation *, int> &checkIds, std::string &out)
      : target(target), checkIds(checkIds), out(&out) {}

  /// Where the following statements go (the loop body, or code hoisted
  /// before the loop).
  void setOutput(std::string &o) { out = &o; }
  /// Comparisons with a known value: printed as the value, and a select
  /// over one is its taken operand.
  const DenseMap<Value, bool> *fixed = nullptr;
  void bind(Value v, std::string name) { names[v] = std::move(name); }
  /// How iteration index `d` is spelled (tgk.index); idx<d> by default.
  std::function<std::string(unsigned)> dimName = [](unsigned d) {
    return "idx" + std::to_string(d);
  };
  const std::string &name(Value v) { return names[v]; }
  LogicalResult print(Operation *op, std::string &error);
  /// CPU SIMD loops: index checks printed while `inLoop` is set are
  /// branch-free (a bad index reads position 0 and is folded into the
  /// loop's reductions tgc_bad<id> / tgc_raw<id>) and their ids are added
  /// here, for the emitter to declare the reductions on the loop and
  /// record a bad index after it. Null: every check calls tgc_check_index.
  std::vector<int> *loopChecks = nullptr;
  bool inLoop = false;

private:
  /// C math functions by precision (expf/exp): on the CPU the prelude
  /// declares them `omp declare simd`, so loops vectorize through libmvec.
  std::string math(StringRef fn, Value x) {
    bool isDouble = x.getType().isF64();
    return fmt::format("{}{}({})", fn.str(), isDouble ? "" : "f", name(x));
  }
  std::string binary(Operation *op, StringRef sym) {
    return fmt::format("{} {} {}", name(op->getOperand(0)), sym.str(),
                       name(op->getOperand(1)));
  }
  std::string call(StringRef fn, Operation *op) {
    return fmt::format("{}({}, {})", fn.str(), name(op->getOperand(0)),
                       name(op->getOperand(1)));
  }
  std::string castTo(Operation *op) {
    return fmt::format("({})({})", computeType(op->getResult(0).getType()),
                       name(op->getOperand(0)));
  }
  std::string compare(StringRef pred, Operation *op, bool ordered);
  std::string loadExpr(tgk::LoadOp o);

  Target target;
  const DenseMap<Operation *, int> &checkIds;
  /// Values printed as expressions at their uses rather than as statements:
  /// loads and the selects over them, so a load runs only where its select
  /// arm is taken (concatenation and padding read positions that exist only
  /// there).
  DenseSet<Value> lazy;
  std::string *out;
  DenseMap<Value, std::string> names;
  unsigned next = 0;
};


} // namespace tgc::codegen::detail

#endif // TGC_CODEGEN_BODYPRINTER_H
