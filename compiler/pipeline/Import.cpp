//===- Import.cpp - Segment to the `tg` dialect ---------------------------===//
#include "compiler/pipeline/Import.h"

#include "dialects/TG/IR/TGOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <map>

using namespace mlir;

namespace tgc {

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
  case DType::UInt8: return {}; // unsigned arithmetic is not modelled yet
  }
  return {};
}

DType dtypeOf(Type t) {
  if (t.isF16()) return DType::Float16;
  if (t.isBF16()) return DType::BFloat16;
  if (t.isF32()) return DType::Float32;
  if (t.isF64()) return DType::Float64;
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return DType::Bool;
  case 8: return DType::Int8;
  case 16: return DType::Int16;
  case 32: return DType::Int32;
  default: return DType::Int64;
  }
}

namespace {

/// Builds the body of one segment function.
class Importer {
public:
  Importer(const Segment &seg, OpBuilder &b, std::string &error)
      : seg(seg), b(b), error(error), loc(b.getUnknownLoc()) {}

  LogicalResult importNode(const SegmentNode &node);
  DenseMap<int, Value> values;

private:
  RankedTensorType typeOf(int id) {
    const TensorSpec &s = seg.values[id];
    return RankedTensorType::get(s.sizes, elementType(b.getContext(), s.dtype));
  }
  void setStrides(Operation *op, int id);
  /// Operand `a` as a tensor of `type` (cast, then broadcast).
  FailureOr<Value> operand(const ArgValue &a, RankedTensorType type);
  LogicalResult importPointwise(const SegmentNode &node);
  LogicalResult importExtern(const SegmentNode &node);
  FailureOr<Attribute> externArg(const ArgValue &a, SmallVector<Value> &ins);

  const Segment &seg;
  OpBuilder &b;
  std::string &error;
  Location loc;
};

} // namespace

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

using PointwiseBuilder =
    std::function<Value(OpBuilder &, Location, RankedTensorType, ValueRange,
                        const SegmentNode &)>;

template <class OpT>
static PointwiseBuilder simple() {
  return [](OpBuilder &b, Location loc, RankedTensorType t, ValueRange v,
            const SegmentNode &) -> Value {
    return b.create<OpT>(loc, t, v).getResult();
  };
}

/// ATen ops lowered to tg pointwise ops: name -> (tensor arity, builder).
static const std::map<std::string, std::pair<int, PointwiseBuilder>> &
pointwiseTable() {
  static const std::map<std::string, std::pair<int, PointwiseBuilder>> table = {
      {"aten::mul.Tensor", {2, simple<tg::MulOp>()}},
      {"aten::div.Tensor", {2, simple<tg::DivOp>()}},
      {"aten::maximum", {2, simple<tg::MaximumOp>()}},
      {"aten::minimum", {2, simple<tg::MinimumOp>()}},
      {"aten::add.Tensor", {2, simple<tg::AddOp>()}},
      {"aten::add.Scalar", {2, simple<tg::AddOp>()}},
      {"aten::sub.Scalar", {2, simple<tg::SubOp>()}},
      {"aten::mul.Scalar", {2, simple<tg::MulOp>()}},
      {"aten::div.Scalar", {2, simple<tg::DivOp>()}},
      {"aten::sub.Tensor", {2, simple<tg::SubOp>()}},
      {"aten::relu", {1, simple<tg::ReluOp>()}},
      {"aten::neg", {1, simple<tg::NegOp>()}},
      {"aten::exp", {1, simple<tg::ExpOp>()}},
      {"aten::log", {1, simple<tg::LogOp>()}},
      {"aten::tanh", {1, simple<tg::TanhOp>()}},
      {"aten::sigmoid", {1, simple<tg::SigmoidOp>()}},
      {"aten::sqrt", {1, simple<tg::SqrtOp>()}},
      {"aten::rsqrt", {1, simple<tg::RsqrtOp>()}},
      {"aten::abs", {1, simple<tg::AbsOp>()}},
      {"aten::erf", {1, simple<tg::ErfOp>()}},
      {"aten::gelu",
       {1,
        [](OpBuilder &b, Location loc, RankedTensorType t, ValueRange v,
           const SegmentNode &n) -> Value {
          std::string approx = n.args.size() > 1 ? n.args[1].s : "none";
          return b.create<tg::GeluOp>(loc, t, v[0], b.getStringAttr(approx))
              .getResult();
        }}},
  };
  return table;
}

static std::string qualified(const SegmentNode &n) {
  return n.overload.empty() ? n.op : n.op + "." + n.overload;
}

LogicalResult Importer::importPointwise(const SegmentNode &node) {
  auto &[arity, build] = pointwiseTable().at(qualified(node));
  RankedTensorType outType = typeOf(node.outputs[0]);
  // Division and transcendental ops compute in the (float) result type;
  // arithmetic ops too, since ATen's result dtype is the promoted dtype.
  SmallVector<Value> operands;
  for (int i = 0; i < arity; ++i) {
    auto v = operand(node.args[i], outType);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  // alpha of add/sub scales the second operand.
  std::string q = qualified(node);
  if ((q == "aten::add.Tensor" || q == "aten::sub.Tensor" || q == "aten::add.Scalar" ||
       q == "aten::sub.Scalar") &&
      node.args.size() > 2) {
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
  Value r = build(b, loc, outType, operands, node);
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
  for (int id : node.outputs) {
    types.push_back(typeOf(id));
    strides.push_back(b.getDenseI64ArrayAttr(seg.values[id].strides));
  }
  auto op = b.create<tg::ExternOp>(loc, types, b.getStringAttr(qualified(node)),
                                   ins, b.getArrayAttr(args),
                                   b.getArrayAttr(strides));
  if (node.mutates)
    op->setAttr("mutates", b.getUnitAttr());
  for (auto [id, r] : llvm::zip(node.outputs, op.getResults()))
    values[id] = r;
  return success();
}

LogicalResult Importer::importNode(const SegmentNode &node) {
  for (int id : node.outputs)
    if (!elementType(b.getContext(), seg.values[id].dtype)) {
      error = std::string("unsupported dtype ") +
              dtypeName(seg.values[id].dtype) + " produced by " + qualified(node);
      return failure();
    }
  bool pointwise = pointwiseTable().count(qualified(node)) &&
                   node.outputs.size() == 1 && !node.mutates;
  return pointwise ? importPointwise(node) : importExtern(node);
}

FailureOr<func::FuncOp> importSegment(const Segment &seg, ModuleOp module,
                                      std::string &error) {
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
  for (const SegmentNode &node : seg.nodes)
    if (failed(imp.importNode(node)))
      return failure();
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
