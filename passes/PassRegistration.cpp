//===- PassRegistration.cpp - layout helpers shared by tgc's passes -------===//
#include "passes/Passes.h"

using namespace mlir;

namespace tgc {

void eraseDeadLayoutOps(func::FuncOp fn) {
  bool changed = true;
  while (changed) {
    changed = false;
    fn.walk([&](Operation *op) {
      if (isa<tg::BroadcastOp, tg::ConstantOp>(op) && op->use_empty()) {
        op->erase();
        changed = true;
      }
    });
  }
}

SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

static std::optional<SmallVector<int64_t>> fromAttr(Attribute a) {
  if (auto arr = dyn_cast_or_null<DenseI64ArrayAttr>(a))
    return SmallVector<int64_t>(arr.asArrayRef());
  return std::nullopt;
}

SmallVector<int64_t> bufferStrides(Value v) {
  auto type = cast<ShapedType>(v.getType());
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto s = fromAttr(fn.getArgAttr(arg.getArgNumber(), "tg.strides")))
        return *s;
    return contiguousStrides(type.getShape());
  }
  Operation *def = v.getDefiningOp();
  unsigned idx = cast<OpResult>(v).getResultNumber();
  if (auto k = dyn_cast<tgk::KernelOp>(def))
    return *fromAttr(k.getResultStrides()[idx]);
  if (auto e = dyn_cast<tg::ExternOp>(def))
    return *fromAttr(e.getResultStrides()[idx]);
  if (auto s = fromAttr(def->getAttr("tg.strides")))
    return *s;
  return contiguousStrides(type.getShape());
}

} // namespace tgc
