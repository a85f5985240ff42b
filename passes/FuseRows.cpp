//===- FuseRows.cpp - reductions with producers/consumers into row kernels -===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace tgc {
#define GEN_PASS_DEF_FUSEROWS
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }

/// The row space of a reduction: full shape and number of row dims.
struct RowSpace {
  SmallVector<int64_t> full;
  int64_t count;
  bool isElement(Value v) const { return shapeOf(v) == ArrayRef(full); }
  bool isRow(Value v) const {
    auto s = shapeOf(v);
    if (s.size() != full.size())
      return false;
    for (size_t d = 0; d < full.size(); ++d)
      if (s[d] != (d + count >= full.size() ? 1 : full[d]))
        return false;
    return true;
  }
};


/// Skips broadcasts: a row value read through a broadcast is the same value
/// for every element of the row.
Value throughBroadcasts(Value v) {
  while (auto b = v.getDefiningOp<tg::BroadcastOp>())
    v = b.getInput();
  return v;
}

std::optional<Attribute> splatOf(Value v) {
  auto c = throughLayout(v).getDefiningOp<tg::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<Attribute>();
}

struct FuseRowsPass : public tgc::impl::FuseRowsBase<FuseRowsPass> {
  void runOnOperation() override;
  void buildKernel(ArrayRef<Operation *> members, const RowSpace &space, unsigned index);
};

/// Users of `v`, looking through broadcasts. A remap is a user like any
/// other: a member read through a remap is a different element of it, so it
/// must reach memory first.
void usersOf(Value v, SmallVectorImpl<Operation *> &out) {
  for (Operation *u : v.getUsers()) {
    if (isa<tg::BroadcastOp>(u))
      usersOf(u->getResult(0), out);
    else
      out.push_back(u);
  }
}

} // namespace

void FuseRowsPass::runOnOperation() {
  func::FuncOp fn = getOperation();
  DenseMap<Operation *, unsigned> pos;
  unsigned n = 0;
  fn.walk([&](Operation *op) { pos[op] = n++; });
  llvm::DenseSet<Operation *> taken;
  SmallVector<std::pair<SmallVector<Operation *>, RowSpace>> groups;

  for (Operation &opRef : fn.getBody().front()) {
    auto seed = dyn_cast<tg::ReduceOp>(&opRef);
    if (!seed || taken.contains(seed))
      continue;
    RowSpace space{SmallVector<int64_t>(shapeOf(seed.getInput())), seed.getCount()};
    llvm::SetVector<Operation *> members;
    members.insert(seed);
    // Producers of the seed's input used by nothing else, and computed
    // after the last in-place extern before the seed: one computed before
    // it reads what the extern may overwrite, so it stays where it is.
    unsigned lastWrite = 0;
    for (Operation *q = seed->getPrevNode(); q && !lastWrite; q = q->getPrevNode())
      if (isa<tg::ExternOp>(q) && q->hasAttr("mutates"))
        lastWrite = pos[q];
    SmallVector<Value> work{seed.getInput()};
    while (!work.empty()) {
      Operation *p = work.pop_back_val().getDefiningOp();
      if (!p || taken.contains(p) || members.contains(p) ||
          !isa<tg::ScalarizableOpInterface>(p) || !space.isElement(p->getResult(0)) ||
          pos[p] < lastWrite)
        continue;
      SmallVector<Operation *> users;
      usersOf(p->getResult(0), users);
      if (!llvm::all_of(users, [&](Operation *u) { return members.contains(u); }))
        continue;
      members.insert(p);
      for (Value v : p->getOperands())
        work.push_back(v);
    }
    // Consumers in program order.
    for (Operation *q = seed->getNextNode(); q; q = q->getNextNode()) {
      if (isa<tg::ExternOp>(q) && q->hasAttr("mutates"))
        break;
      bool candidate = false;
      if (auto r = dyn_cast<tg::ReduceOp>(q))
        candidate = space.isElement(r.getInput()) && r.getCount() == space.count;
      else if (isa<tg::ScalarizableOpInterface>(q))
        candidate = space.isElement(q->getResult(0)) || space.isRow(q->getResult(0));
      if (!candidate || taken.contains(q))
        continue;
      bool connected = llvm::any_of(q->getOperands(), [&](Value v) {
        Operation *d = throughBroadcasts(v).getDefiningOp();
        return d && members.contains(d);
      });
      if (!connected)
        continue;
      // Row-level ops may only read row-level values.
      if (!isa<tg::ReduceOp>(q) && space.isRow(q->getResult(0)) &&
          !llvm::all_of(q->getOperands(), [&](Value v) { return space.isRow(v) || splatOf(v); }))
        continue;
      // A non-member use of a member before q would see the value too early.
      bool early = false;
      for (Operation *m : members) {
        SmallVector<Operation *> users;
        usersOf(m->getResult(0), users);
        for (Operation *u : users)
          early |= u != q && !members.contains(u) && pos[u] < pos[q];
      }
      if (early)
        break;
      members.insert(q);
    }
    // Producers whose every use is now inside the group join it too (an
    // input shared by two reductions, like softmax's shifted logits).
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t i = 0; i < members.size(); ++i)
        for (Value v : members[i]->getOperands()) {
          Operation *p = throughBroadcasts(v).getDefiningOp();
          if (!p || taken.contains(p) || members.contains(p) ||
              !isa<tg::ScalarizableOpInterface>(p) || !space.isElement(p->getResult(0)))
            continue;
          SmallVector<Operation *> users;
          usersOf(p->getResult(0), users);
          if (llvm::all_of(users, [&](Operation *u) { return members.contains(u); })) {
            members.insert(p);
            grew = true;
          }
        }
    }
    SmallVector<Operation *> ordered(members.begin(), members.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) { return pos[a] < pos[b]; });
    for (Operation *m : ordered)
      taken.insert(m);
    groups.push_back({ordered, space});
  }
  unsigned index = 0;
  for (auto &[members, space] : groups)
    buildKernel(members, space, index++);
  eraseDeadLayoutOps(fn); // broadcasts and constants the kernels absorbed
}

void FuseRowsPass::buildKernel(ArrayRef<Operation *> members, const RowSpace &space,
                               unsigned index) {
  llvm::DenseSet<Operation *> set(members.begin(), members.end());
  Operation *last = members.back();
  MLIRContext *ctx = last->getContext();
  size_t rank = space.full.size(), outer = rank - space.count;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  // Row-level values are indexed by the outer dims only.
  SmallVector<AffineExpr> rowExprs;
  for (size_t d = 0; d < rank; ++d)
    rowExprs.push_back(d < outer ? getAffineDimExpr(d, ctx) : getAffineConstantExpr(0, ctx));
  AffineMap rowMap = AffineMap::get(rank, 0, rowExprs, ctx);

  // External buffers read by members, with their maps.
  auto keyOf = [&](Value v) -> std::pair<Value, AffineMap> {
    return traceLayout(v, space.isRow(v) ? rowMap : identity);
  };
  llvm::MapVector<std::pair<Value, AffineMap>, unsigned> inputs;
  for (Operation *m : members)
    for (Value v : m->getOperands()) {
      Operation *d = throughBroadcasts(v).getDefiningOp();
      if ((d && set.contains(d)) || splatOf(v) || throughLayout(v).getDefiningOp<tg::IotaOp>())
        continue;
      inputs.insert({keyOf(v), inputs.size()});
    }
  SmallVector<Value> results;
  for (Operation *m : members)
    for (Value r : m->getResults()) {
      SmallVector<Operation *> users;
      usersOf(r, users);
      if (llvm::any_of(users, [&](Operation *u) { return !set.contains(u); }))
        results.push_back(r);
    }

  OpBuilder b(ctx);
  b.setInsertionPointAfter(last);
  SmallVector<Value> inputValues;
  SmallVector<Attribute> maps, inStrides, outStrides;
  for (auto &[key, i] : inputs) {
    inputValues.push_back(key.first);
    maps.push_back(AffineMapAttr::get(key.second));
    inStrides.push_back(b.getDenseI64ArrayAttr(bufferStrides(key.first)));
  }
  for (Value r : results)
    outStrides.push_back(b.getDenseI64ArrayAttr(bufferStrides(r)));
  OperationState state(last->getLoc(), tgk::RowKernelOp::getOperationName());
  state.addOperands(inputValues);
  state.addTypes(TypeRange(ValueRange(results)));
  ArrayRef<int64_t> full(space.full);
  state.addAttribute("sym_name", b.getStringAttr(("r" + Twine(index)).str()));
  state.addAttribute("outer_shape", b.getDenseI64ArrayAttr(full.take_front(outer)));
  state.addAttribute("row_shape", b.getDenseI64ArrayAttr(full.drop_front(outer)));
  state.addAttribute("indexing_maps", b.getArrayAttr(maps));
  state.addAttribute("input_strides", b.getArrayAttr(inStrides));
  state.addAttribute("result_strides", b.getArrayAttr(outStrides));
  Region *region = state.addRegion();
  Block *body = new Block();
  region->push_back(body);
  for (Value v : inputValues)
    body->addArgument(cast<ShapedType>(v.getType()).getElementType(), v.getLoc());
  auto kernel = cast<tgk::RowKernelOp>(b.create(state));

  OpBuilder bb = OpBuilder::atBlockBegin(body);
  DenseMap<Value, Value> scalar;
  auto scalarOf = [&](Value v) -> Value {
    Value root = throughBroadcasts(v);
    if (Value s = scalar.lookup(root))
      return s;
    if (auto splat = splatOf(v)) {
      auto typed = cast<TypedAttr>(*splat);
      return bb.create<arith::ConstantOp>(v.getLoc(), typed.getType(), typed);
    }
    auto key = keyOf(v);
    if (Value index = buildIndexOf(bb, key.first, key.second))
      return index;
    return body->getArgument(inputs.lookup(key));
  };
  for (Operation *m : members) {
    Value s;
    if (auto r = dyn_cast<tg::ReduceOp>(m))
      s = bb.create<tgk::ReduceOp>(m->getLoc(),
                                   cast<ShapedType>(r.getType()).getElementType(),
                                   scalarOf(r.getInput()), r.getKindAttr());
    else {
      SmallVector<Value> ops;
      for (Value v : m->getOperands())
        ops.push_back(scalarOf(v));
      s = cast<tg::ScalarizableOpInterface>(m).buildScalar(bb, m->getLoc(), ops);
    }
    scalar[m->getResult(0)] = s;
  }
  SmallVector<Value> yielded;
  for (Value r : results)
    yielded.push_back(scalar.lookup(r));
  bb.create<tgk::YieldOp>(last->getLoc(), yielded);
  for (auto [r, k] : llvm::zip(results, kernel.getResults()))
    r.replaceUsesWithIf(k, [&](OpOperand &use) { return !set.contains(use.getOwner()); });
  for (Operation *m : llvm::reverse(members)) {
    for (Value r : m->getResults())
      for (OpOperand &use : llvm::make_early_inc_range(r.getUses()))
        if (isa<tg::BroadcastOp, tg::RemapOp>(use.getOwner()) && use.getOwner()->use_empty())
          use.getOwner()->erase();
    m->dropAllUses();
    m->erase();
  }
}
