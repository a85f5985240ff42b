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

struct PushRemapsPass : public tgc::impl::PushRemapsBase<PushRemapsPass> {
  void runOnOperation() override {
    // Until nothing moves: a remap pushed through one op may meet another.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<tg::RemapOp> remaps;
      getOperation().walk([&](tg::RemapOp r) { remaps.push_back(r); });
      for (tg::RemapOp r : remaps) {
        Operation *p = r.getInput().getDefiningOp();
        // Only remaps import made for a reduction's rows: an ATen view (the
        // reshape of a reduction's result, say) stays where it is, so the
        // ops before it stay in the reduction's row space.
        if (r.getCallee() || !p || !isa<tg::ScalarizableOpInterface>(p) || p->getNumResults() != 1 ||
            !p->getResult(0).hasOneUse())
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
};

} // namespace
