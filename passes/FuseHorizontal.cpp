//===- FuseHorizontal.cpp - independent small kernels into one launch -----===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace tgc {
#define GEN_PASS_DEF_FUSEHORIZONTAL
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// Kernels up to this many iterations are "small": one launch for several
/// of them saves more than it costs; larger ones keep their own loop (and
/// their own vectorization decision).
constexpr int64_t kSmall = 1 << 16;

struct FuseHorizontalPass : public tgc::impl::FuseHorizontalBase<FuseHorizontalPass> {
  void runOnOperation() override;
};

/// Whether `to` depends on `from` through def-use chains (ops between them).
bool dependsOn(Operation *to, Operation *from) {
  SmallVector<Operation *> work{to};
  llvm::DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands()) {
      Operation *d = v.getDefiningOp();
      if (!d || d->getBlock() != from->getBlock() || d->isBeforeInBlock(from))
        continue;
      if (d == from)
        return true;
      if (seen.insert(d).second)
        work.push_back(d);
    }
  }
  return false;
}

enum class Place { None, AtFirst, AtSecond };

/// Where `a` (earlier) and `b` may run together: at `b` when nothing
/// between them uses `a`'s results and `b` does not depend on `a`; at `a`
/// when every input of `b` already exists there. Either way no extern call
/// between them may write a buffer in place.
Place placement(tgk::KernelOp a, tgk::KernelOp b) {
  if (a.getIterationShape() != b.getIterationShape() || a.getNumIterations() > kSmall)
    return Place::None;
  bool usedBetween = false;
  for (Operation *op = a->getNextNode(); op && op != b; op = op->getNextNode()) {
    if (isa<tg::ExternOp>(op) && op->hasAttr("mutates"))
      return Place::None;
    for (Value v : op->getOperands())
      usedBetween |= v.getDefiningOp() == a;
  }
  bool inputsReady = llvm::all_of(b.getInputs(), [&](Value v) {
    Operation *d = v.getDefiningOp();
    return !d || d->isBeforeInBlock(a);
  });
  if (inputsReady)
    return Place::AtFirst;
  if (!usedBetween && !dependsOn(b, a))
    return Place::AtSecond;
  return Place::None;
}

tgk::KernelOp merge(tgk::KernelOp a, tgk::KernelOp b, Place place) {
  OpBuilder builder(place == Place::AtFirst ? a : b);
  SmallVector<Value> inputs(a.getInputs());
  inputs.append(b.getInputs().begin(), b.getInputs().end());
  SmallVector<AffineMap> maps;
  for (tgk::KernelOp k : {a, b})
    for (AffineMap m : k.getIndexingMaps().getAsValueRange<AffineMapAttr>())
      maps.push_back(m);
  SmallVector<Attribute> inStrides(a.getInputStrides().getValue());
  inStrides.append(b.getInputStrides().begin(), b.getInputStrides().end());
  SmallVector<Attribute> outStrides(a.getResultStrides().getValue());
  outStrides.append(b.getResultStrides().begin(), b.getResultStrides().end());
  SmallVector<Type> types(a.getResultTypes());
  types.append(b.getResultTypes().begin(), b.getResultTypes().end());
  auto k = builder.create<tgk::KernelOp>(a.getLoc(), types, a.getSymName(), inputs,
                                         a.getIterationShape(), maps,
                                         builder.getArrayAttr(inStrides),
                                         builder.getArrayAttr(outStrides));
  Block *body = new Block();
  k.getBody().push_back(body);
  for (tgk::KernelOp src : {a, b})
    for (BlockArgument arg : src.getBody().front().getArguments())
      body->addArgument(arg.getType(), arg.getLoc()); // an element, or a whole tensor
  OpBuilder bb = OpBuilder::atBlockBegin(body);
  SmallVector<Value> yields;
  unsigned offset = 0;
  for (tgk::KernelOp src : {a, b}) {
    IRMapping mapping;
    Block &old = src.getBody().front();
    for (BlockArgument arg : old.getArguments())
      mapping.map(arg, body->getArgument(offset + arg.getArgNumber()));
    offset += old.getNumArguments();
    for (Operation &op : old.without_terminator())
      bb.clone(op, mapping);
    for (Value v : cast<tgk::YieldOp>(old.getTerminator()).getValues())
      yields.push_back(mapping.lookupOrDefault(v));
  }
  bb.create<tgk::YieldOp>(b.getLoc(), yields);
  unsigned na = a.getNumResults();
  for (unsigned i = 0; i < na; ++i)
    a.getResult(i).replaceAllUsesWith(k.getResult(i));
  for (unsigned i = 0; i < b.getNumResults(); ++i)
    b.getResult(i).replaceAllUsesWith(k.getResult(na + i));
  a.erase();
  b.erase();
  return k;
}

void FuseHorizontalPass::runOnOperation() {
  // Greedy in program order: each kernel joins the earliest earlier kernel
  // it can run with.
  SmallVector<tgk::KernelOp> open;
  SmallVector<tgk::KernelOp> all;
  getOperation().walk([&](tgk::KernelOp k) { all.push_back(k); });
  for (tgk::KernelOp k : all) {
    bool merged = false;
    for (tgk::KernelOp &a : open) {
      Place place = placement(a, k);
      if (place == Place::None)
        continue;
      a = merge(a, k, place);
      merged = true;
      break;
    }
    if (!merged)
      open.push_back(k);
  }
}

} // namespace
