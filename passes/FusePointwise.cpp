//===- FusePointwise.cpp - pointwise chains into tgk.kernel ---------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace tgc {
#define GEN_PASS_DEF_FUSEPOINTWISE
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// One fusion group: pointwise ops of one iteration shape, in program order.
struct Group {
  SmallVector<Operation *> members;
  llvm::DenseSet<Operation *> memberSet;
  /// Producers of the buffers members read with tgk.load: they must stay
  /// outside the group (a kernel cannot load what it is computing).
  llvm::DenseSet<Operation *> loadedDefs;
};

/// A 0-d or splat constant, which a kernel body can rebuild as a scalar.
static std::optional<Attribute> splatValue(Value v) {
  auto c = v.getDefiningOp<tg::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<Attribute>();
}


class FusePointwisePass
    : public tgc::impl::FusePointwiseBase<FusePointwisePass> {
public:
  void runOnOperation() override;

private:
  bool canJoin(Group &g, Operation *p, DenseMap<Operation *, unsigned> &pos);
  void buildKernel(Group &g, unsigned index);
};

} // namespace

static bool isFusible(Operation *op) {
  return isa<tg::ScalarizableOpInterface, tg::UniformOp, tg::GatherOp, tg::ConcatOp, tg::PadOp>(op);
}

/// Operands a member reads at positions other than its own iteration index
/// (a gather's input, concatenated pieces, a padded input): the kernel takes
/// them whole and reads them with tgk.load.
static bool isLoadedOperand(Operation *m, unsigned operand) {
  if (isa<tg::ConcatOp>(m))
    return true;
  return isa<tg::GatherOp, tg::PadOp>(m) && operand == 0;
}

/// The input key of a loaded operand: its root buffer and a null map (one
/// whole-tensor argument per root, whatever layout each load reads it by).
static std::pair<Value, AffineMap> loadedKey(Value root) { return {root, AffineMap()}; }

static ArrayRef<int64_t> shapeOf(Operation *op) {
  return cast<ShapedType>(op->getResult(0).getType()).getShape();
}

/// Whether `p` may join `g`: every non-member use of a member's result comes
/// after `p`, and no mutating extern sits between the group and `p`.
bool FusePointwisePass::canJoin(Group &g, Operation *p,
                                DenseMap<Operation *, unsigned> &pos) {
  unsigned first = pos[g.members.front()], at = pos[p];
  for (Operation *m : g.members)
    for (Operation *user : m->getUsers())
      if (user != p && !g.memberSet.contains(user) && pos[user] < at)
        return false;
  for (Operation *op = g.members.front(); op != p; op = op->getNextNode())
    if (isa<tg::ExternOp>(op) && op->hasAttr("mutates") && pos[op] > first)
      return false;
  return true;
}

void FusePointwisePass::runOnOperation() {
  func::FuncOp fn = getOperation();
  DenseMap<Operation *, unsigned> pos;
  unsigned n = 0;
  fn.walk([&](Operation *op) { pos[op] = n++; });

  std::vector<std::unique_ptr<Group>> groups;
  DenseMap<Operation *, Group *> groupOf;
  for (Operation &opRef : fn.getBody().front()) {
    Operation *p = &opRef;
    if (!isFusible(p))
      continue;
    // Producer groups of the same shape that p can join, merged into one.
    llvm::DenseSet<Operation *> pLoads;
    for (auto [i, operand] : llvm::enumerate(p->getOperands()))
      if (isLoadedOperand(p, i))
        if (Operation *d = throughLayout(operand).getDefiningOp())
          pLoads.insert(d);
    // Whether group g may sit in one kernel with p and the groups taken so far.
    SmallVector<Group *> joinable;
    auto compatible = [&](Group *g) {
      auto loadsFrom = [](const llvm::DenseSet<Operation *> &loads, Group *h) {
        return llvm::any_of(h->members, [&](Operation *m) { return loads.contains(m); });
      };
      if (loadsFrom(pLoads, g) || g->loadedDefs.contains(p))
        return false;
      for (Group *h : joinable)
        if (loadsFrom(h->loadedDefs, g) || loadsFrom(g->loadedDefs, h))
          return false;
      return true;
    };
    for (auto [i, operand] : llvm::enumerate(p->getOperands())) {
      if (isLoadedOperand(p, i))
        continue; // read at other positions: its producer stays a buffer
      Operation *def = operand.getDefiningOp();
      Group *g = def ? groupOf.lookup(def) : nullptr;
      if (g && shapeOf(def) == shapeOf(p) && !llvm::is_contained(joinable, g) &&
          canJoin(*g, p, pos) && compatible(g))
        joinable.push_back(g);
    }
    Group *target;
    if (joinable.empty()) {
      groups.push_back(std::make_unique<Group>());
      target = groups.back().get();
    } else {
      target = joinable.front();
      for (Group *other : llvm::drop_begin(joinable)) {
        for (Operation *m : other->members) {
          target->members.push_back(m);
          target->memberSet.insert(m);
          groupOf[m] = target;
        }
        target->loadedDefs.insert(other->loadedDefs.begin(), other->loadedDefs.end());
        other->members.clear();
      }
      llvm::sort(target->members,
                 [&](Operation *a, Operation *b) { return pos[a] < pos[b]; });
    }
    target->members.push_back(p);
    target->memberSet.insert(p);
    target->loadedDefs.insert(pLoads.begin(), pLoads.end());
    groupOf[p] = target;
  }

  unsigned index = 0;
  for (auto &g : groups)
    if (!g->members.empty())
      buildKernel(*g, index++);
  // scatter_add is a kernel of its own (its updates along `dim` are ordered).
  SmallVector<tg::ScatterAddOp> scatters;
  fn.walk([&](tg::ScatterAddOp op) { scatters.push_back(op); });
  for (tg::ScatterAddOp op : scatters) {
    OpBuilder b(op);
    SmallVector<Attribute> strides;
    for (Value v : op->getOperands())
      strides.push_back(b.getDenseI64ArrayAttr(bufferStrides(v)));
    auto k = b.create<tgk::ScatterAddKernelOp>(
        op.getLoc(), op.getType(), b.getStringAttr("k" + Twine(index++)), op.getSelf(), op.getIndex(),
        op.getSrc(), op.getDimAttr(), b.getArrayAttr(strides),
        b.getArrayAttr({b.getDenseI64ArrayAttr(bufferStrides(op.getResult()))}));
    op.getResult().replaceAllUsesWith(k.getResult());
    op.erase();
  }
  materializeLayoutOps(fn, index); // layout ops the kernels did not absorb
}

void FusePointwisePass::buildKernel(Group &g, unsigned index) {
  Operation *last = g.members.back();
  MLIRContext *ctx = last->getContext();
  ArrayRef<int64_t> shape = shapeOf(last);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(shape.size(), ctx);

  // Inputs: (buffer, map) pairs read by members from outside the group.
  llvm::MapVector<std::pair<Value, AffineMap>, unsigned> inputs;
  AffineMap toScalar = AffineMap::get(shape.size(), 0, ArrayRef<AffineExpr>{}, ctx);
  for (Operation *m : g.members)
    for (auto [operand, v] : llvm::enumerate(m->getOperands())) {
      Operation *def = v.getDefiningOp();
      if (isLoadedOperand(m, operand)) {
        Value root = throughLayout(v);
        if (!splatValue(root) && !root.getDefiningOp<tg::IotaOp>())
          inputs.insert({loadedKey(root), inputs.size()});
        continue;
      }
      if ((def && g.memberSet.contains(def)) || splatValue(v))
        continue;
      if (isa<tg::UniformOp>(m)) { // the 0-d seed, the same for every element
        inputs.insert({traceLayout(v, toScalar), inputs.size()});
        continue;
      }
      auto key = traceLayout(v, identity);
      if (splatValue(key.first) || key.first.getDefiningOp<tg::IotaOp>())
        continue; // an immediate, or indices the body computes
      inputs.insert({key, inputs.size()});
    }

  // Results: member values used outside the group.
  SmallVector<Value> results;
  for (Operation *m : g.members)
    for (Value r : m->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) {
            return !g.memberSet.contains(u);
          }))
        results.push_back(r);

  OpBuilder b(last);
  b.setInsertionPointAfter(last);
  SmallVector<Value> inputValues;
  SmallVector<AffineMap> maps;
  SmallVector<Attribute> inStrides, outStrides;
  for (auto &[key, i] : inputs) {
    inputValues.push_back(key.first);
    // A loaded input's map is never used to read it: all zeros.
    auto rank = cast<ShapedType>(key.first.getType()).getRank();
    maps.push_back(key.second ? key.second
                              : AffineMap::get(shape.size(), 0,
                                               SmallVector<AffineExpr>(rank, getAffineConstantExpr(0, ctx)),
                                               ctx));
    inStrides.push_back(b.getDenseI64ArrayAttr(bufferStrides(key.first)));
  }
  for (Value r : results)
    outStrides.push_back(b.getDenseI64ArrayAttr(bufferStrides(r)));

  auto kernel = b.create<tgk::KernelOp>(
      last->getLoc(), TypeRange(ValueRange(results)),
      ("k" + Twine(index)).str(), inputValues, shape, maps,
      b.getArrayAttr(inStrides), b.getArrayAttr(outStrides));
  Block *body = new Block();
  kernel.getBody().push_back(body);
  for (auto &[key, i] : inputs)
    body->addArgument(key.second ? cast<ShapedType>(key.first.getType()).getElementType()
                                 : key.first.getType(),
                      key.first.getLoc());

  // Scalar body: members rebuilt in order on scalars.
  OpBuilder bb = OpBuilder::atBlockBegin(body);
  DenseMap<Value, Value> scalar;
  auto scalarOf = [&](Value v) -> Value {
    if (Value s = scalar.lookup(v))
      return s;
    auto key = traceLayout(v, identity);
    Value root = key.first;
    if (auto splat = splatValue(root)) {
      auto typed = cast<TypedAttr>(*splat);
      return bb.create<arith::ConstantOp>(root.getLoc(), typed.getType(), typed);
    }
    if (Value index = buildIndexOf(bb, root, key.second))
      return index;
    return body->getArgument(inputs.lookup(key));
  };
  for (Operation *m : g.members) {
    if (auto u = dyn_cast<tg::UniformOp>(m)) {
      // Counter: the element's row-major index in the kernel's space.
      std::vector<int64_t> strides = contiguousStrides(shape);
      AffineExpr linear = getAffineConstantExpr(0, ctx);
      for (size_t d = 0; d < shape.size(); ++d)
        linear = linear + getAffineDimExpr(d, ctx) * strides[d];
      Value counter = bb.create<tgk::IndexOp>(
          m->getLoc(), bb.getI64Type(),
          AffineMapAttr::get(AffineMap::get(shape.size(), 0, linear, ctx)));
      Value seed = scalar.lookup(u.getSeed());
      if (!seed)
        seed = body->getArgument(inputs.lookup(traceLayout(u.getSeed(), toScalar)));
      scalar[u.getResult()] =
          bb.create<tgk::UniformOp>(m->getLoc(), bb.getF32Type(), seed, counter);
      continue;
    }
    if (isa<tg::GatherOp, tg::ConcatOp, tg::PadOp>(m)) {
      auto load = [&](Value v, AffineMap map, ValueRange syms) -> Value {
        return loadScalar(bb, v, map, syms, [&](Value root) {
          return body->getArgument(inputs.lookup(loadedKey(root)));
        });
      };
      Value s = buildIndexedScalar(bb, m, scalarOf, load);
      if (!s) {
        m->emitOpError("reads a computed index of an iota, which fusion cannot load");
        return signalPassFailure();
      }
      scalar[m->getResult(0)] = s;
      continue;
    }
    SmallVector<Value> operands;
    for (Value v : m->getOperands())
      operands.push_back(scalarOf(v));
    Value s = cast<tg::ScalarizableOpInterface>(m).buildScalar(bb, m->getLoc(),
                                                               operands);
    scalar[m->getResult(0)] = s;
  }
  SmallVector<Value> yielded;
  for (Value r : results)
    yielded.push_back(scalar.lookup(r));
  bb.create<tgk::YieldOp>(last->getLoc(), yielded);

  for (auto [r, k] : llvm::zip(results, kernel.getResults()))
    r.replaceUsesWithIf(k, [&](OpOperand &use) {
      return !g.memberSet.contains(use.getOwner());
    });
  for (Operation *m : llvm::reverse(g.members))
    m->erase();
}

