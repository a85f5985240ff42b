//===- Decompose.cpp - composite tg ops into primitive ones ---------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace tgc {
#define GEN_PASS_DEF_DECOMPOSE
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// A splat constant behind broadcasts, as a double.
std::optional<double> splatNumber(Value v) {
  Value root = throughLayout(v);
  auto c = root.getDefiningOp<tg::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(dense.getSplatValue<Attribute>()))
    return f.getValueAsDouble();
  return std::nullopt;
}

struct DecomposePass : public tgc::impl::DecomposeBase<DecomposePass> {
  Value splat(OpBuilder &b, Location loc, RankedTensorType t, double v) {
    auto t0 = RankedTensorType::get({}, t.getElementType());
    Value c = b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t0, b.getFloatAttr(t.getElementType(), v)));
    return b.create<tg::BroadcastOp>(loc, t, c);
  }

  void runOnOperation() override {
    SmallVector<Operation *> todo;
    getOperation().walk([&](Operation *op) {
      if (isa<tg::GeluOp, tg::PowOp>(op))
        todo.push_back(op);
    });
    for (Operation *op : todo) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto t = cast<RankedTensorType>(op->getResult(0).getType());
      Value r;
      if (auto g = dyn_cast<tg::GeluOp>(op)) {
        Value x = g.getInput();
        Value inner;
        if (g.getApproximate() == "tanh") {
          // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
          Value x3 = b.create<tg::MulOp>(loc, t, x, b.create<tg::MulOp>(loc, t, x, x));
          Value poly = b.create<tg::AddOp>(loc, t, x, b.create<tg::MulOp>(loc, t, x3, splat(b, loc, t, 0.044715)));
          inner = b.create<tg::TanhOp>(loc, t, b.create<tg::MulOp>(loc, t, poly, splat(b, loc, t, std::sqrt(2.0 / M_PI))));
        } else {
          // 0.5 x (1 + erf(x / sqrt(2)))
          inner = b.create<tg::ErfOp>(loc, t, b.create<tg::MulOp>(loc, t, x, splat(b, loc, t, M_SQRT1_2)));
        }
        Value hx = b.create<tg::MulOp>(loc, t, x, splat(b, loc, t, 0.5));
        r = b.create<tg::MulOp>(loc, t, hx, b.create<tg::AddOp>(loc, t, inner, splat(b, loc, t, 1.0)));
      } else {
        auto p = cast<tg::PowOp>(op);
        auto e = splatNumber(p.getRhs());
        if (!e)
          continue;
        Value x = p.getLhs();
        if (*e == 1.0)
          r = x;
        else if (*e == 2.0)
          r = b.create<tg::MulOp>(loc, t, x, x);
        else if (*e == 3.0)
          r = b.create<tg::MulOp>(loc, t, x, b.create<tg::MulOp>(loc, t, x, x));
        else if (*e == 0.5)
          r = b.create<tg::SqrtOp>(loc, t, x);
        else if (*e == -0.5)
          r = b.create<tg::RsqrtOp>(loc, t, x);
        else if (*e == -1.0)
          r = b.create<tg::DivOp>(loc, t, splat(b, loc, t, 1.0), x);
        else
          continue; // powf keeps the general case exact
      }
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
    eraseDeadLayoutOps(getOperation());
  }
};

} // namespace
