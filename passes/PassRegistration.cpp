//===- PassRegistration.cpp - layout helpers shared by tgc's passes -------===//
#include "passes/Passes.h"

using namespace mlir;

namespace tgc {

void eraseDeadLayoutOps(func::FuncOp fn) {
  bool changed = true;
  while (changed) {
    changed = false;
    fn.walk([&](Operation *op) {
      if (isa<tg::BroadcastOp, tg::RemapOp, tg::ConstantOp, tg::IotaOp>(op) && op->use_empty()) {
        op->erase();
        changed = true;
      }
    });
  }
}

std::pair<Value, AffineMap> traceLayout(Value v, AffineMap map) {
  while (true) {
    if (auto b = v.getDefiningOp<tg::BroadcastOp>()) {
      map = b.getInputMap().compose(map);
      v = b.getInput();
    } else if (auto r = v.getDefiningOp<tg::RemapOp>()) {
      map = simplifyAffineMap(r.getInputMap().compose(map));
      v = r.getInput();
    } else {
      return {v, map};
    }
  }
}

Value buildIndexOf(OpBuilder &b, Value root, AffineMap map) {
  auto iota = root.getDefiningOp<tg::IotaOp>();
  if (!iota)
    return {};
  AffineMap one = AffineMap::get(map.getNumDims(), 0, map.getResult(iota.getDim()), map.getContext());
  return b.create<tgk::IndexOp>(root.getLoc(), b.getI64Type(), AffineMapAttr::get(one));
}

Value throughLayout(Value v) {
  while (true) {
    if (auto b = v.getDefiningOp<tg::BroadcastOp>())
      v = b.getInput();
    else if (auto r = v.getDefiningOp<tg::RemapOp>())
      v = r.getInput();
    else
      return v;
  }
}

void materializeLayoutOps(func::FuncOp fn, unsigned &counter) {
  SmallVector<Operation *> todo;
  fn.walk([&](Operation *op) {
    if (isa<tg::BroadcastOp, tg::RemapOp, tg::IotaOp>(op))
      todo.push_back(op);
  });
  // Outermost first, deciding at each op: a view an outer view turned into
  // an ATen call now needs becomes an ATen view too.
  for (Operation *op : llvm::reverse(todo)) {
    if (llvm::all_of(op->getUsers(),
                     [](Operation *u) { return isa<tg::BroadcastOp, tg::RemapOp>(u); }))
      continue;
    Value result = op->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    OpBuilder b(op);
    auto remap = dyn_cast<tg::RemapOp>(op);
    if (remap && remap.getCallee()) {
      // Back to the zero-copy ATen view; its own input chain is handled
      // when the walk reaches it (it is an earlier op).
      SmallVector<int64_t> strides(bufferStrides(result));
      auto ext = b.create<tg::ExternOp>(
          op->getLoc(), TypeRange{type}, *remap.getCallee(), ValueRange{remap.getInput()},
          *remap.getViewArgs(), b.getArrayAttr({b.getDenseI64ArrayAttr(strides)}));
      result.replaceAllUsesWith(ext.getResult(0));
      op->erase();
      continue;
    }
    auto identity = AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext());
    auto [root, map] = traceLayout(result, identity);
    // One kernel writes the value: `fill` builds its body from the kernel's
    // block arguments (the inputs given).
    auto emit = [&](ValueRange inputs, ArrayRef<AffineMap> maps, ArrayAttr inStrides,
                    function_ref<Value(OpBuilder &, Block *)> fill) {
      auto kernel = b.create<tgk::KernelOp>(
          op->getLoc(), TypeRange{type}, ("k" + Twine(counter++)).str(), inputs, type.getShape(),
          maps, inStrides, b.getArrayAttr({b.getDenseI64ArrayAttr(bufferStrides(result))}));
      Block *body = new Block();
      kernel.getBody().push_back(body);
      for (Value v : inputs)
        body->addArgument(cast<ShapedType>(v.getType()).getElementType(), op->getLoc());
      OpBuilder bb = OpBuilder::atBlockBegin(body);
      bb.create<tgk::YieldOp>(op->getLoc(), ValueRange{fill(bb, body)});
      result.replaceUsesWithIf(kernel.getResult(0), [](OpOperand &use) {
        return !isa<tg::BroadcastOp, tg::RemapOp>(use.getOwner());
      });
    };
    if (root.getDefiningOp<tg::IotaOp>()) {
      // Indices read through layout ops: a kernel with no input computes them.
      emit({}, {}, b.getArrayAttr({}),
           [&](OpBuilder &bb, Block *) { return buildIndexOf(bb, root, map); });
      continue;
    }
    if (auto c = root.getDefiningOp<tg::ConstantOp>()) {
      // A filled tensor (ones, full): a kernel with no input writes it.
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (dense && dense.isSplat()) {
        auto splat = cast<TypedAttr>(dense.getSplatValue<Attribute>());
        emit({}, {}, b.getArrayAttr({}), [&](OpBuilder &bb, Block *) -> Value {
          return bb.create<arith::ConstantOp>(op->getLoc(), splat.getType(), splat);
        });
        continue;
      }
    }
    // A copy kernel reading the root through the composed map.
    emit(ValueRange{root}, ArrayRef<AffineMap>{map},
         b.getArrayAttr({b.getDenseI64ArrayAttr(bufferStrides(root))}),
         [](OpBuilder &, Block *body) -> Value { return body->getArgument(0); });
  }
  eraseDeadLayoutOps(fn);
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
    return SmallVector<int64_t>(ArrayRef(contiguousStrides(type.getShape())));
  }
  Operation *def = v.getDefiningOp();
  unsigned idx = cast<OpResult>(v).getResultNumber();
  // tgk kernels and tg.extern name their results' layout.
  if (auto s = dyn_cast_or_null<ArrayAttr>(def->getAttr("result_strides")))
    return *fromAttr(s[idx]);
  if (auto s = fromAttr(def->getAttr("tg.strides")))
    return *s;
  return SmallVector<int64_t>(ArrayRef(contiguousStrides(type.getShape())));
}

} // namespace tgc
