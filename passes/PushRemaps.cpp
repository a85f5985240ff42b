//===- PushRemaps.cpp - layout ops onto the operands of pointwise ops -----===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace tgc {
#define GEN_PASS_DEF_PUSHREMAPS
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// Whether `v` is computed from constants and indices only (a mask such as
/// triu(ones)): cheap to recompute wherever it is read.
bool indexOnly(Value v, int depth = 0) {
  v = throughLayout(v);
  Operation *d = v.getDefiningOp();
  if (!d || depth > 16)
    return false;
  if (isa<tg::ConstantOp, tg::IotaOp>(d))
    return true;
  return isa<tg::ScalarizableOpInterface>(d) &&
         llvm::all_of(d->getOperands(), [&](Value o) { return indexOnly(o, depth + 1); });
}

/// Whether `v` is computed by pointwise ops from a reduction's result: such
/// ops belong in the reduction's row kernel.
bool fromReduction(Value v, int depth = 0) {
  v = throughLayout(v);
  Operation *d = v.getDefiningOp();
  if (!d || depth > 16)
    return false;
  if (isa<tg::ReduceOp>(d))
    return true;
  return isa<tg::ScalarizableOpInterface>(d) &&
         llvm::any_of(d->getOperands(), [&](Value o) { return fromReduction(o, depth + 1); });
}

struct PushRemapsPass : public tgc::impl::PushRemapsBase<PushRemapsPass> {
  void runOnOperation() override {
    pushBroadcasts();
    // Until nothing moves: a remap pushed through one op may meet another.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<tg::RemapOp> remaps;
      getOperation().walk([&](tg::RemapOp r) { remaps.push_back(r); });
      for (tg::RemapOp r : remaps) {
        Operation *p = r.getInput().getDefiningOp();
        if (!p || !isa<tg::ScalarizableOpInterface>(p) || p->getNumResults() != 1 ||
            !p->getResult(0).hasOneUse())
          continue;
        // An ATen view of ops computed from a reduction (the reshape of a
        // mean, say) stays where it is, so those ops stay in the
        // reduction's row kernel. Other views move up like import's remaps
        // (a matmul epilogue then fuses with what follows a reshape).
        if (r.getCallee() && fromReduction(r.getInput()))
          continue;
        auto outShape = cast<RankedTensorType>(r.getType()).getShape();
        OpBuilder b(r);
        IRMapping mapping;
        for (Value o : p->getOperands()) {
          auto t = RankedTensorType::get(outShape, cast<ShapedType>(o.getType()).getElementType());
          Value moved = b.create<tg::RemapOp>(r.getLoc(), t, o, r.getMapAttr(), StringAttr(),
                                              ArrayAttr());
          mapping.map(o, moved);
        }
        Operation *q = b.clone(*p, mapping);
        q->getResult(0).setType(r.getType());
        q->removeAttr("tg.strides"); // the layout was the old result's
        if (auto s = r->getAttr("tg.strides"))
          q->setAttr("tg.strides", s);
        r.getResult().replaceAllUsesWith(q->getResult(0));
        r.erase();
        p->erase();
        changed = true;
      }
    }
  }

  /// broadcast(p(a, b)) -> p(broadcast(a), broadcast(b)) for index-only p
  /// (cloned when it has other uses): the broadcast's readers then compute the values in
  /// their own kernels instead of reading a materialized mask.
  void pushBroadcasts() {
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<tg::BroadcastOp> casts;
      getOperation().walk([&](tg::BroadcastOp c) { casts.push_back(c); });
      for (tg::BroadcastOp c : casts) {
        Operation *p = c.getInput().getDefiningOp();
        // Index-only values are recomputed for each reader that broadcasts
        // them (their other readers keep the original).
        if (!p || !isa<tg::ScalarizableOpInterface>(p) || p->getNumResults() != 1 ||
            !indexOnly(p->getResult(0)))
          continue;
        auto shape = cast<RankedTensorType>(c.getType()).getShape();
        OpBuilder b(c);
        IRMapping mapping;
        for (Value o : p->getOperands()) {
          auto t = RankedTensorType::get(shape, cast<ShapedType>(o.getType()).getElementType());
          mapping.map(o, b.create<tg::BroadcastOp>(c.getLoc(), t, o).getResult());
        }
        Operation *q = b.clone(*p, mapping);
        q->getResult(0).setType(c.getType());
        q->removeAttr("tg.strides");
        c.getResult().replaceAllUsesWith(q->getResult(0));
        c.erase();
        if (p->use_empty())
          p->erase();
        changed = true;
      }
    }
  }
};

} // namespace
