//===- Import.cpp - Segment to the `tg` dialect ---------------------------===//
#include "compiler/pipeline/Import.h"
#include "compiler/pipeline/Importer.h"
#include "passes/Passes.h"
#include "compiler/ops/OpRegistry.h"

#include "dialects/TG/IR/TGOps.h"
#include "mlir/IR/Builders.h"
#include "runtime/FaultInjection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

using namespace mlir;

namespace tgc {

using namespace detail;

Type elementType(MLIRContext *ctx, DType dtype) {
  Builder b(ctx);
  switch (dtype) {
  case DType::Bool: return b.getI1Type();
  case DType::Int8: return b.getI8Type();
  case DType::Int16: return b.getI16Type();
  case DType::Int32: return b.getI32Type();
  case DType::Int64: return b.getI64Type();
  case DType::Float16: return b.getF16Type();
  case DType::BFloat16: return b.getBF16Type();
  case DType::Float32: return b.getF32Type();
  case DType::Float64: return b.getF64Type();
  case DType::UInt8: return b.getIntegerType(8, /*isSigned=*/false); // extern calls only
  }
  return {};
}

DType dtypeOf(Type t) {
  if (t.isF16()) return DType::Float16;
  if (t.isBF16()) return DType::BFloat16;
  if (t.isF32()) return DType::Float32;
  if (t.isF64()) return DType::Float64;
  if (t.isUnsignedInteger(8)) return DType::UInt8;
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return DType::Bool;
  case 8: return DType::Int8;
  case 16: return DType::Int16;
  case 32: return DType::Int32;
  default: return DType::Int64;
  }
}



void Importer::setStrides(Operation *op, int id) {
  const TensorSpec &s = seg.values[id];
  op->setAttr("tg.strides", b.getDenseI64ArrayAttr(s.strides));
}

FailureOr<Value> Importer::operand(const ArgValue &a, RankedTensorType type) {
  Type elt = type.getElementType();
  Value v;
  if (a.kind == ArgValue::Tensor) {
    v = values.lookup(a.tensors[0]);
    if (cast<ShapedType>(v.getType()).getElementType() != elt) {
      auto to = RankedTensorType::get(cast<ShapedType>(v.getType()).getShape(), elt);
      v = b.create<tg::CastOp>(loc, to, v);
    }
  } else if (a.kind == ArgValue::ScalarTensor || a.kind == ArgValue::Int ||
             a.kind == ArgValue::Double || a.kind == ArgValue::Bool) {
    bool isFloat = a.kind == ArgValue::Double ||
                   (a.kind == ArgValue::ScalarTensor && a.isFloat);
    double dv = isFloat ? a.d : (a.kind == ArgValue::Bool ? a.b : (double)a.i);
    int64_t iv = isFloat ? (int64_t)a.d : (a.kind == ArgValue::Bool ? a.b : a.i);
    auto scalarType = RankedTensorType::get({}, elt);
    Attribute value;
    if (auto ft = dyn_cast<FloatType>(elt))
      value = b.getFloatAttr(ft, dv);
    else if (elt.isInteger(1))
      value = b.getBoolAttr(isFloat ? dv != 0 : iv != 0);
    else
      value = b.getIntegerAttr(elt, iv);
    v = b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(scalarType, value));
  } else {
    error = "unsupported pointwise operand kind";
    return failure();
  }
  if (cast<ShapedType>(v.getType()).getShape() != type.getShape())
    v = b.create<tg::BroadcastOp>(loc, type, v);
  return v;
}

std::string detail::qualified(const SegmentNode &n) {
  return n.overload.empty() ? n.op : n.op + "." + n.overload;
}

LogicalResult Importer::importPointwise(const SegmentNode &node, const ops::OpInfo &info) {
  RankedTensorType outType = typeOf(node.outputs[0]);
  int arity = info.lowering == ops::Lowering::Pointwise ? info.arity : info.lowering == ops::Lowering::Gelu ? 1 : 2;
  // Division and transcendental ops compute in the (float) result type;
  // arithmetic ops too, since ATen's result dtype is the promoted dtype.
  SmallVector<Value> operands;
  for (int i = 0; i < arity; ++i) {
    auto v = operand(node.args[i], outType);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  Value r;
  if (info.lowering == ops::Lowering::Gelu) {
    std::string approx = node.args.size() > 1 ? node.args[1].s : "none";
    r = b.create<tg::GeluOp>(loc, outType, operands[0], b.getStringAttr(approx));
  } else {
    // alpha of add/sub scales the second operand.
    if (info.lowering == ops::Lowering::PointwiseAlpha && node.args.size() > 2) {
      const ArgValue &alpha = node.args[2];
      bool one = (alpha.kind == ArgValue::Int && alpha.i == 1) ||
                 (alpha.kind == ArgValue::Double && alpha.d == 1.0);
      if (!one) {
        auto a = operand(alpha, outType);
        if (failed(a))
          return failure();
        operands[1] = b.create<tg::MulOp>(loc, outType, operands[1], *a);
      }
    }
    // The registry names the tg op; an unknown name is a registry bug.
    OperationState state(loc, info.variant);
    if (!state.name.isRegistered()) {
      error = std::string("op registry: '") + info.variant + "' (for " + qualified(node) +
              ") is not a registered tg op";
      return failure();
    }
    state.addOperands(operands);
    state.addTypes(outType);
    r = b.create(state)->getResult(0);
  }
  setStrides(r.getDefiningOp(), node.outputs[0]);
  values[node.outputs[0]] = r;
  return success();
}

FailureOr<Attribute> Importer::externArg(const ArgValue &a,
                                         SmallVector<Value> &ins) {
  auto ref = [&](int id) -> Attribute {
    if (id < 0)
      return b.getUnitAttr();
    ins.push_back(values.lookup(id));
    return tg::OperandRefAttr::get(b.getContext(), ins.size() - 1);
  };
  switch (a.kind) {
  case ArgValue::None: return Attribute(b.getUnitAttr());
  case ArgValue::Bool: return Attribute(b.getBoolAttr(a.b));
  case ArgValue::Int: return Attribute(b.getI64IntegerAttr(a.i));
  case ArgValue::Double: return Attribute(b.getF64FloatAttr(a.d));
  case ArgValue::String: return Attribute(b.getStringAttr(a.s));
  case ArgValue::IntList: return Attribute(b.getDenseI64ArrayAttr(a.ints));
  case ArgValue::BoolList: {
    SmallVector<bool> bools(a.ints.begin(), a.ints.end());
    return Attribute(b.getDenseBoolArrayAttr(bools));
  }
  case ArgValue::DoubleList: return Attribute(b.getDenseF64ArrayAttr(a.doubles));
  case ArgValue::Device: return Attribute(tg::DeviceAttr::get(b.getContext(), a.s));
  case ArgValue::Tensor: return ref(a.tensors[0]);
  case ArgValue::TensorList: {
    SmallVector<Attribute> refs;
    for (int id : a.tensors)
      refs.push_back(ref(id));
    return Attribute(b.getArrayAttr(refs));
  }
  case ArgValue::ScalarTensor: {
    Type t = elementType(b.getContext(), a.dtype);
    if (!t) {
      error = "unsupported wrapped-number dtype";
      return failure();
    }
    Attribute v = isa<FloatType>(t) ? Attribute(b.getFloatAttr(t, a.d))
                                    : Attribute(b.getIntegerAttr(t, a.i));
    return Attribute(b.getDictionaryAttr(b.getNamedAttr("wrapped_number", v)));
  }
  }
  error = "unsupported argument kind";
  return failure();
}

LogicalResult Importer::importExtern(const SegmentNode &node) {
  SmallVector<Value> ins;
  SmallVector<Attribute> args;
  for (const ArgValue &a : node.args) {
    auto attr = externArg(a, ins);
    if (failed(attr))
      return failure();
    args.push_back(*attr);
  }
  SmallVector<Type> types;
  SmallVector<Attribute> strides;
  SmallVector<int64_t> undefined; // results the op leaves undefined
  for (auto [pos, id] : llvm::enumerate(node.outputs)) {
    if (id < 0) {
      undefined.push_back(pos);
      continue;
    }
    types.push_back(typeOf(id));
    strides.push_back(b.getDenseI64ArrayAttr(seg.values[id].strides));
  }
  auto op = b.create<tg::ExternOp>(loc, types, b.getStringAttr(qualified(node)),
                                   ins, b.getArrayAttr(args),
                                   b.getArrayAttr(strides));
  if (node.mutates)
    op->setAttr("mutates", b.getUnitAttr());
  if (!undefined.empty())
    op->setAttr("undefined_results", b.getDenseI64ArrayAttr(undefined));
  auto result = op.getResults().begin();
  for (int id : node.outputs)
    if (id >= 0)
      values[id] = *result++;
  return success();
}

static bool computable(const Segment &seg, const SegmentNode &node) {
  auto ok = [&](int id) {
    if (id < 0)
      return true;
    DType t = seg.values[id].dtype;
    return t != DType::UInt8;
  };
  for (int id : node.outputs)
    if (!ok(id))
      return false;
  for (const ArgValue &a : node.args)
    for (int id : a.tensors)
      if (id >= 0 && !ok(id))
        return false;
  return !node.mutates;
}

/// In-place ATen ops whose out-of-place form is the name without `_` with
/// the same overload and arguments (the registry's InPlace rows; pow_ is not
/// one: pow_.Scalar's functional twin is pow.Tensor_Scalar).
static bool functionalizable(const SegmentNode &n) {
  ops::Lowering kind = ops::opClassOf(n.op, n.overload);
  if (kind == ops::Lowering::Bernoulli &&
      (n.overload != ops::find(n.op, n.overload)->variant || n.args.size() < 2 || n.args[1].kind != ArgValue::Double ||
       (n.args.size() > 2 && n.args[2].kind != ArgValue::None)))
    return false; // only a float probability with the default generator
  bool inPlace = kind == ops::Lowering::InPlace || kind == ops::Lowering::Bernoulli;
  return inPlace && n.outputs.size() == 1 && !n.args.empty() && n.args[0].kind == ArgValue::Tensor;
}

/// Ops whose result aliases their first argument.
static bool isAliasing(const SegmentNode &n) {
  return ops::aliasOf(n.op, n.overload) != ops::Alias::None || (n.mutates && !n.outputs.empty());
}

void Importer::planFunctionalization() {
  // Alias classes over value ids (union-find).
  std::vector<int> parent(seg.values.size());
  for (size_t i = 0; i < parent.size(); ++i)
    parent[i] = i;
  std::function<int(int)> find = [&](int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); };
  // The parts of a split are disjoint: each overlaps its base, not its
  // siblings. They get their own classes, linked to the base's.
  std::vector<std::pair<int, int>> partOf; // (part, base)
  for (const SegmentNode &n : seg.nodes)
    if (isAliasing(n) && !n.args.empty() && n.args[0].kind == ArgValue::Tensor)
      for (int out : n.outputs) {
        if (out < 0)
          continue;
        if (ops::aliasOf(n.op, n.overload) == ops::Alias::Part)
          partOf.push_back({out, n.args[0].tensors[0]});
        else
          parent[find(out)] = find(n.args[0].tensors[0]);
      }
  // Classes a write to `x` is visible through: its own and its bases'.
  auto watchedBy = [&](int x) {
    std::set<int> watched{find(x)};
    for (bool grew = true; grew;) {
      grew = false;
      for (auto [part, base] : partOf)
        if (watched.count(find(part)) && watched.insert(find(base)).second)
          grew = true;
    }
    return watched;
  };
  // Where each value is defined: -1 for inputs, else its node's index.
  std::vector<int64_t> defined(seg.values.size(), -1);
  for (size_t i = 0; i < seg.nodes.size(); ++i)
    for (int out : seg.nodes[i].outputs)
      if (out >= 0)
        defined[out] = i;
  for (size_t i = 0; i < seg.nodes.size(); ++i) {
    const SegmentNode &n = seg.nodes[i];
    if (!n.mutates || !functionalizable(n))
      continue;
    int x = n.args[0].tensors[0];
    // An alias made before the write (other than the written value itself)
    // would see the write in eager: none may be an input, an output or read
    // afterwards. Aliases made later derive from the new value. An input
    // written itself (not through a view) is functionalized too: its final
    // value is copied back into the caller's tensor at the end.
    std::set<int> watched = watchedBy(x);
    auto stale = [&](int id) {
      return id >= 0 && id != x && id != n.outputs[0] && watched.count(find(id)) &&
             defined[id] <= (int64_t)i;
    };
    const bool input = defined[x] < 0;
    bool ok = !input || std::count(seg.inputs.begin(), seg.inputs.end(), x) == 1;
    // An input whose elements share memory (expanded: stride 0) takes ATen's
    // own in-place semantics (masked_fill_ allows it; copy_ back would not).
    for (size_t d = 0; input && d < seg.values[x].sizes.size(); ++d)
      ok &= seg.values[x].strides[d] != 0 || seg.values[x].sizes[d] <= 1;
    for (int id : seg.inputs)
      ok &= (input && id == x) || !watched.count(find(id));
    // A write to an input through the functional form, then one to it
    // through an extern, would need both: keep such inputs in place.
    for (size_t j = 0; j < seg.nodes.size() && input && ok; ++j)
      if (j != i && seg.nodes[j].mutates && !seg.nodes[j].args.empty() &&
          seg.nodes[j].args[0].kind == ArgValue::Tensor)
        ok &= find(seg.nodes[j].args[0].tensors[0]) != find(x) || functionalizable(seg.nodes[j]);
    for (int id : seg.outputs)
      ok &= !stale(id);
    for (size_t j = i + 1; j < seg.nodes.size() && ok; ++j)
      for (const ArgValue &a : seg.nodes[j].args)
        for (int id : a.tensors)
          ok &= !stale(id);
    if (ok) {
      functional.insert(i);
      if (input)
        writtenInputs.insert(x);
    }
  }
}

void Importer::writeBackInputs(ArrayRef<Value> args) {
  for (auto [i, id] : llvm::enumerate(seg.inputs)) {
    if (!writtenInputs.count(id))
      continue;
    Value arg = args[i], final = values.lookup(id);
    if (!final || final == arg)
      continue;
    copyInto(arg, final, id);
  }
}

void Importer::keepEagerLayouts() {
  for (const SegmentNode &node : seg.nodes)
    for (int id : node.outputs) {
      Value v = id >= 0 ? values.lookup(id) : Value();
      Operation *def = v ? v.getDefiningOp() : nullptr;
      // A computed result without a layout of its own that an ATen call
      // reads (a view, an in-place write through one) gets eager's layout:
      // the call sees the buffer as eager would.
      if (!def || def->getNumResults() != 1 || def->hasAttr("tg.strides") ||
          def->hasAttr("result_strides") || def->getDialect()->getNamespace() != "tg" ||
          isa<tg::ConstantOp, tg::BroadcastOp, tg::RemapOp, tg::ExternOp>(def) ||
          cast<RankedTensorType>(v.getType()).getShape() != ArrayRef<int64_t>(seg.values[id].sizes) ||
          llvm::none_of(v.getUsers(), [](Operation *u) { return isa<tg::ExternOp>(u); }))
        continue;
      setStrides(def, id);
    }
}

void Importer::pinAcrossWrites(Block *body) {
  // A value computed before an in-place ATen call and read after it may
  // read the buffer the call writes: it must be computed before the call,
  // wherever fusion would place it. An `aten::alias` call before the write
  // (a view: no work) makes it a buffer there, and later readers read that.
  // tgc's own write-backs (copyInto) come after every read of what they
  // write.
  SmallVector<Operation *> writes;
  for (Operation &op : *body)
    if (isa<tg::ExternOp>(op) && op.hasAttr("mutates") && !op.hasAttr("tg.write_back"))
      writes.push_back(&op);
  for (Operation *write : writes) {
    SmallVector<Value> pinned;
    for (Operation *op = &body->front(); op != write; op = op->getNextNode()) {
      // A constant is an immediate to kernels, but one an ATen call took
      // before the write is a buffer that call may have aliased (a view
      // the write then fills): readers after the write read that buffer.
      bool handedToAten =
          isa<tg::ConstantOp, tg::BroadcastOp>(op) &&
          llvm::any_of(op->getResult(0).getUsers(), [&](Operation *u) {
            return isa<tg::ExternOp>(u) && u->getBlock() == body && u != write &&
                   u->isBeforeInBlock(write);
          });
      if ((isa<tg::ExternOp, tg::ConstantOp, tg::BroadcastOp>(op) && !handedToAten) ||
          op->getDialect()->getNamespace() != "tg")
        continue;
      for (Value v : op->getResults())
        if (llvm::any_of(v.getUsers(), [&](Operation *u) {
              return u->getBlock() == body && write->isBeforeInBlock(u) &&
                     !isa<func::ReturnOp>(u);
            }))
          pinned.push_back(v);
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write);
    for (Value v : pinned) {
      auto alias = b.create<tg::ExternOp>(
          loc, TypeRange{v.getType()}, b.getStringAttr("aten::alias"), ValueRange{v},
          b.getArrayAttr({tg::OperandRefAttr::get(b.getContext(), 0)}),
          b.getArrayAttr({b.getDenseI64ArrayAttr(bufferStrides(v))}));
      v.replaceUsesWithIf(alias.getResult(0), [&](OpOperand &use) {
        return use.getOwner()->getBlock() == body && write->isBeforeInBlock(use.getOwner()) &&
               !isa<func::ReturnOp>(use.getOwner());
      });
    }
  }
}

Value Importer::copyInto(Value buffer, Value value, int id) {
  auto copy = b.create<tg::ExternOp>(
      loc, TypeRange{buffer.getType()}, b.getStringAttr("aten::copy_"), ValueRange{buffer, value},
      b.getArrayAttr({tg::OperandRefAttr::get(b.getContext(), 0),
                      tg::OperandRefAttr::get(b.getContext(), 1), b.getBoolAttr(false)}),
      b.getArrayAttr({b.getDenseI64ArrayAttr(seg.values[id].strides)}));
  copy->setAttr("mutates", b.getUnitAttr());
  copy->setAttr("tg.write_back", b.getUnitAttr()); // tgc's own: pinAcrossWrites skips it
  return copy.getResult(0);
}

/// Whether value `id` is read by a node or returned. `overwrites` are nodes
/// that only replace the value's contents (functionalized bernoulli_): they
/// do not read it.
static bool isUsed(const Segment &seg, int id, const std::set<size_t> &overwrites) {
  if (std::count(seg.outputs.begin(), seg.outputs.end(), id))
    return true;
  for (size_t i = 0; i < seg.nodes.size(); ++i) {
    if (overwrites.count(i))
      continue;
    for (const ArgValue &a : seg.nodes[i].args)
      if (std::count(a.tensors.begin(), a.tensors.end(), id))
        return true;
  }
  return false;
}

LogicalResult Importer::importAt(size_t index) {
  const SegmentNode &node = seg.nodes[index];
  // Allocations nobody reads (ATen's batch_norm makes some) cost a call.
  bool allocation = ops::opClassOf(node.op, node.overload) == ops::Lowering::Allocation;
  std::set<size_t> overwrites;
  auto isBernoulli = [](const SegmentNode &n) {
    return ops::opClassOf(n.op, n.overload) == ops::Lowering::Bernoulli;
  };
  for (size_t i : functional)
    if (isBernoulli(seg.nodes[i]))
      overwrites.insert(i);
  if (allocation &&
      std::none_of(node.outputs.begin(), node.outputs.end(),
                   [&](int id) { return isUsed(seg, id, overwrites); }))
    return success();
  if (allocation && node.outputs.size() == 1 && computable(seg, node) &&
      typeOf(node.outputs[0]).getNumElements() == 0) {
    // An empty tensor holds nothing to compute (cat's legacy 1-D pieces).
    RankedTensorType t = typeOf(node.outputs[0]);
    values[node.outputs[0]] =
        b.create<tg::ConstantOp>(loc, DenseElementsAttr::get(t, ArrayRef<Attribute>{}));
    return success();
  }
  if (isBernoulli(node) && functional.count(index)) {
    if (!importBernoulli(node))
      return importExtern(node); // (unreachable for the float overload)
    values[node.args[0].tensors[0]] = values.lookup(node.outputs[0]);
    return success();
  }
  if (!functional.count(index))
    return importNode(node);
  SegmentNode f = node;
  f.op.pop_back(); // aten::add_ -> aten::add
  f.mutates = false;
  if (failed(importNode(f)))
    return failure();
  // The written buffer now holds the result.
  values[node.args[0].tensors[0]] = values.lookup(node.outputs[0]);
  return success();
}

/// Whether `n` is a training batch norm, which writes its running stats.
static bool isBatchNormTraining(const SegmentNode &n) {
  return ops::loweringOf(n.op, n.overload) == ops::Lowering::BatchNorm && n.args.size() == 8 &&
         n.args[5].kind == ArgValue::Bool && n.args[5].b;
}

/// The tensors a mutating node writes, when known: in-place ops write their
/// first argument, training batch norm its running statistics.
static std::optional<std::vector<int>> writtenBy(const SegmentNode &n) {
  if (isBatchNormTraining(n)) {
    std::vector<int> out;
    for (size_t i : {3, 4})
      if (n.args[i].kind == ArgValue::Tensor)
        out.push_back(n.args[i].tensors[0]);
    return out;
  }
  if (!n.op.empty() && n.op.back() == '_' && !n.args.empty() && n.args[0].kind == ArgValue::Tensor)
    return std::vector<int>{n.args[0].tensors[0]};
  return std::nullopt;
}

bool Importer::writesSeenThroughViews() const {
  // Value ids that share storage through a view op of this segment.
  std::set<int> viewed;
  for (const SegmentNode &n : seg.nodes)
    if (isAliasing(n) && !n.mutates && !n.args.empty() && n.args[0].kind == ArgValue::Tensor) {
      viewed.insert(n.args[0].tensors[0]);
      viewed.insert(n.outputs.begin(), n.outputs.end());
    }
  for (size_t i = 0; i < seg.nodes.size(); ++i) {
    const SegmentNode &n = seg.nodes[i];
    if (!n.mutates || functional.count(i))
      continue;
    auto written = writtenBy(n);
    if (!written)
      return true; // an op that writes we do not know where
    for (int id : *written)
      if (viewed.count(id))
        return true;
  }
  return false;
}

LogicalResult Importer::importNode(const SegmentNode &node) {
  if (llvm::is_contained(node.outputs, -1))
    return importExtern(node); // a backward op with a masked-out result
  if (isBatchNormTraining(node) && importBatchNormTraining(node))
    return success();
  ops::Lowering lowering = ops::loweringOf(node.op, node.overload);
  if (lowering == ops::Lowering::Extern || !computable(seg, node))
    return importExtern(node);
  const ops::OpInfo &info = *ops::find(node.op, node.overload);
  if (info.dtypes == ops::Dtypes::FloatOnly &&
      (node.outputs.empty() || !isa<FloatType>(typeOf(node.outputs[0]).getElementType())))
    return importExtern(node);
  if (lower(node, info))
    return success();
  return error.empty() ? importExtern(node) : failure();
}

bool Importer::lower(const SegmentNode &node, const ops::OpInfo &info) {
  using ops::Lowering;
  switch (info.lowering) {
  case Lowering::Pointwise:
  case Lowering::PointwiseAlpha:
  case Lowering::Gelu:
    return node.outputs.size() == 1 && succeeded(importPointwise(node, info));
  case Lowering::Compare: case Lowering::Cast: case Lowering::Triangle: case Lowering::Arange:
  case Lowering::Fill: case Lowering::Where: case Lowering::MaskedFill:
  case Lowering::BitwiseNot: case Lowering::Remainder: case Lowering::LogicalNot:
  case Lowering::Clamp: case Lowering::Reciprocal:
  case Lowering::LeakyRelu: case Lowering::Softplus: case Lowering::Mish:
  case Lowering::HardSigmoid: case Lowering::HardSwish: case Lowering::PowScalar:
    return importComposite(node, info);
  case Lowering::Reshape: case Lowering::Permute: case Lowering::Expand: case Lowering::Slice:
  case Lowering::Select: case Lowering::Flip: case Lowering::Clone: case Lowering::Split:
    return importLayout(node, info);
  case Lowering::ReduceAll: case Lowering::Reduce: case Lowering::ArgReduce:
  case Lowering::ReduceWithIndices: case Lowering::Moments: case Lowering::LogSumExp:
  case Lowering::VectorNorm: case Lowering::Softmax: case Lowering::LayerNorm:
  case Lowering::BatchNorm: case Lowering::BatchNormInference: case Lowering::Dropout:
    return importRowOp(node, info);
  case Lowering::Embedding: case Lowering::IndexSelect: case Lowering::Gather:
  case Lowering::AdvancedIndex: case Lowering::ScatterAdd: case Lowering::Concat:
  case Lowering::ConstantPad:
    return importIndexing(node, info);
  case Lowering::Extern: case Lowering::InPlace: case Lowering::Bernoulli:
  case Lowering::Allocation:
    return false; // ATen calls here; importAt handles the functional forms
  }
  return false;
}

FailureOr<func::FuncOp> importSegment(const Segment &seg, ModuleOp module,
                                      std::string &error) {
  if (faultInjected(FaultStage::Import)) {
    error = injectedFaultMessage(FaultStage::Import);
    return failure();
  }
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  SmallVector<Type> argTypes, resultTypes;
  for (int id : seg.inputs) {
    Type elt = elementType(ctx, seg.values[id].dtype);
    if (!elt) {
      error = std::string("unsupported input dtype ") +
              dtypeName(seg.values[id].dtype);
      return failure();
    }
    argTypes.push_back(RankedTensorType::get(seg.values[id].sizes, elt));
  }
  for (int id : seg.outputs)
    resultTypes.push_back(RankedTensorType::get(
        seg.values[id].sizes, elementType(ctx, seg.values[id].dtype)));
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(b.getUnknownLoc(), "segment",
                                   b.getFunctionType(argTypes, resultTypes));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Importer imp(seg, b, error);
  for (auto [i, id] : llvm::enumerate(seg.inputs)) {
    imp.values[id] = entry->getArgument(i);
    fn.setArgAttr(i, "tg.strides", b.getDenseI64ArrayAttr(seg.values[id].strides));
  }
  for (size_t i = 0; i < seg.nodes.size(); ++i)
    if (failed(imp.importAt(i)))
      return failure();
  imp.keepEagerLayouts();
  imp.writeBackInputs(SmallVector<Value>(entry->getArguments()));
  imp.pinAcrossWrites(entry);
  SmallVector<Value> results;
  for (int id : seg.outputs) {
    Value v = imp.values.lookup(id);
    if (!v) {
      error = "output %" + std::to_string(id) + " is not produced by the segment";
      return failure();
    }
    results.push_back(v);
  }
  b.create<func::ReturnOp>(b.getUnknownLoc(), results);
  return fn;
}

} // namespace tgc
