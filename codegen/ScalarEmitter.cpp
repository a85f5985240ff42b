//===- ScalarEmitter.cpp - kernel bodies and indexing, shared by targets --===//
#include "codegen/Emitters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <fmt/format.h>

using namespace mlir;

namespace tgc::codegen::detail {

/// Half types are computed in float; everything else in its own C type.
static std::string computeType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32())
    return "float";
  if (t.isF64())
    return "double";
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return "bool";
  case 8: return "signed char";
  case 16: return "short";
  case 32: return "int";
  default: return "long long";
  }
}

std::string storageType(Type t, Target target) {
  if (t.isF16())
    return target == Target::Cuda ? "__half" : "_Float16";
  if (t.isBF16())
    return target == Target::Cuda ? "__nv_bfloat16" : "tgc_bf16";
  return computeType(t);
}

static std::string load(Type t, Target target, const std::string &ref) {
  if (t.isF16())
    return target == Target::Cuda ? "__half2float(" + ref + ")"
                                  : "(float)" + ref;
  if (t.isBF16())
    return target == Target::Cuda ? "__bfloat162float(" + ref + ")"
                                  : "tgc_bf16_to_f32(" + ref + ")";
  return ref;
}

static std::string store(Type t, Target target, const std::string &v) {
  if (t.isF16())
    return target == Target::Cuda ? "__float2half_rn(" + v + ")"
                                  : "(_Float16)(" + v + ")";
  if (t.isBF16())
    return target == Target::Cuda ? "__float2bfloat16_rn(" + v + ")"
                                  : "tgc_f32_to_bf16(" + v + ")";
  return v;
}

/// A C literal that reproduces `a` exactly (hex floats for floats).
static std::string literal(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a)) {
    double v = f.getValueAsDouble();
    bool isDouble = f.getType().isF64();
    if (std::isnan(v))
      return isDouble ? "tgc_nan()" : "(float)tgc_nan()";
    if (std::isinf(v))
      return std::string(v < 0 ? "-" : "") +
             (isDouble ? "tgc_inf()" : "(float)tgc_inf()");
    return fmt::format("{:a}{}", isDouble ? v : (double)(float)v,
                       isDouble ? "" : "f");
  }
  auto i = cast<IntegerAttr>(a);
  if (i.getType().isInteger(1))
    return i.getValue().isZero() ? "false" : "true";
  return fmt::format("(({}){}LL)", computeType(i.getType()),
                     i.getValue().getSExtValue());
}

namespace {

/// Prints one body op at a time as `const T vN = expr;`.
class BodyPrinter {
public:
  BodyPrinter(Target target, std::string &out) : target(target), out(out) {}

  void bind(Value v, std::string name) { names[v] = std::move(name); }
  const std::string &name(Value v) { return names[v]; }
  LogicalResult print(Operation *op, std::string &error);

private:
  /// C math functions by precision (expf/exp): on the CPU the prelude
  /// declares them `omp declare simd`, so loops vectorize through libmvec.
  std::string math(StringRef fn, Value x) {
    bool isDouble = x.getType().isF64();
    return fmt::format("{}{}({})", fn.str(), isDouble ? "" : "f", name(x));
  }
  std::string binary(Operation *op, StringRef sym) {
    return fmt::format("{} {} {}", name(op->getOperand(0)), sym.str(),
                       name(op->getOperand(1)));
  }
  std::string call(StringRef fn, Operation *op) {
    return fmt::format("{}({}, {})", fn.str(), name(op->getOperand(0)),
                       name(op->getOperand(1)));
  }
  std::string castTo(Operation *op) {
    return fmt::format("({})({})", computeType(op->getResult(0).getType()),
                       name(op->getOperand(0)));
  }
  std::string compare(StringRef pred, Operation *op, bool ordered);

  Target target;
  std::string &out;
  DenseMap<Value, std::string> names;
  unsigned next = 0;
};

} // namespace

std::string BodyPrinter::compare(StringRef sym, Operation *op, bool ordered) {
  std::string a = name(op->getOperand(0)), b = name(op->getOperand(1));
  std::string cmp = fmt::format("({} {} {})", a, sym.str(), b);
  if (ordered || sym == "!=")
    return cmp;
  // Unordered predicates are also true when either side is NaN.
  return fmt::format("({} || {} != {} || {} != {})", cmp, a, a, b, b);
}

LogicalResult BodyPrinter::print(Operation *op, std::string &error) {
  using namespace mlir::arith;
  std::optional<std::string> expr =
      llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
          .Case([&](arith::ConstantOp c) { return literal(c.getValue()); })
          .Case([&](AddFOp o) { return binary(o, "+"); })
          .Case([&](SubFOp o) { return binary(o, "-"); })
          .Case([&](MulFOp o) { return binary(o, "*"); })
          .Case([&](DivFOp o) { return binary(o, "/"); })
          .Case([&](AddIOp o) { return binary(o, "+"); })
          .Case([&](SubIOp o) { return binary(o, "-"); })
          .Case([&](MulIOp o) { return binary(o, "*"); })
          .Case([&](OrIOp o) { return binary(o, "|"); })
          .Case([&](AndIOp o) { return binary(o, "&"); })
          .Case([&](NegFOp o) { return "-" + name(o.getOperand()); })
          .Case([&](MaximumFOp o) { return call("tgc_maximum", o); })
          .Case([&](MinimumFOp o) { return call("tgc_minimum", o); })
          .Case([&](MaxSIOp o) { return call("tgc_max", o); })
          .Case([&](MinSIOp o) { return call("tgc_min", o); })
          .Case([&](SelectOp o) {
            return fmt::format("({} ? {} : {})", name(o.getCondition()),
                               name(o.getTrueValue()), name(o.getFalseValue()));
          })
          .Case([&](CmpFOp o) -> std::optional<std::string> {
            switch (o.getPredicate()) {
            case CmpFPredicate::OEQ: return compare("==", o, true);
            case CmpFPredicate::UNE: return compare("!=", o, false);
            case CmpFPredicate::OLT: return compare("<", o, true);
            case CmpFPredicate::OLE: return compare("<=", o, true);
            case CmpFPredicate::OGT: return compare(">", o, true);
            case CmpFPredicate::OGE: return compare(">=", o, true);
            default: return std::nullopt;
            }
          })
          .Case([&](CmpIOp o) -> std::optional<std::string> {
            switch (o.getPredicate()) {
            case CmpIPredicate::eq: return compare("==", o, true);
            case CmpIPredicate::ne: return compare("!=", o, true);
            case CmpIPredicate::slt: return compare("<", o, true);
            case CmpIPredicate::sle: return compare("<=", o, true);
            case CmpIPredicate::sgt: return compare(">", o, true);
            case CmpIPredicate::sge: return compare(">=", o, true);
            default: return std::nullopt;
            }
          })
          .Case<SIToFPOp, UIToFPOp, FPToSIOp, ExtSIOp, ExtUIOp, TruncIOp>(
              [&](Operation *o) { return castTo(o); })
          .Case([&](ExtFOp o) { return castTo(o); })
          .Case([&](TruncFOp o) -> std::string {
            Type t = o.getType();
            if (t.isF16() || t.isBF16()) // round through the narrow type
              return load(t, target,
                          store(t, target, name(o.getOperand())));
            return castTo(o);
          })
          .Case([&](math::ExpOp o) { return math("exp", o.getOperand()); })
          .Case([&](math::LogOp o) { return math("log", o.getOperand()); })
          .Case([&](math::TanhOp o) { return math("tanh", o.getOperand()); })
          .Case([&](math::SqrtOp o) { return math("sqrt", o.getOperand()); })
          .Case([&](math::ErfOp o) { return math("erf", o.getOperand()); })
          .Case([&](math::AbsFOp o) { return math("fabs", o.getOperand()); })
          .Case([&](math::AbsIOp o) {
            return fmt::format("({0} < 0 ? -{0} : {0})", name(o.getOperand()));
          })
          .Case([&](math::RsqrtOp o) -> std::string {
            if (target == Target::Cuda)
              return math("rsqrt", o.getOperand());
            return "1 / " + math("sqrt", o.getOperand());
          })
          .Default([](Operation *) { return std::nullopt; });
  if (!expr) {
    error = "codegen cannot print '" + op->getName().getStringRef().str() +
            "' in a kernel body";
    return failure();
  }
  std::string v = "v" + std::to_string(next++);
  out += fmt::format("      const {} {} = {};\n",
                     computeType(op->getResult(0).getType()), v, *expr);
  bind(op->getResult(0), v);
  return success();
}

LogicalResult emitBody(tgk::KernelOp kernel, Target target,
                       ArrayRef<std::string> inputOffsets,
                       ArrayRef<std::string> resultOffsets, std::string &out,
                       std::string &error) {
  BodyPrinter p(target, out);
  Block &body = kernel.getBody().front();
  for (auto [j, arg] : llvm::enumerate(body.getArguments())) {
    std::string v = "a" + std::to_string(j);
    std::string ref = fmt::format("in{}[{}]", j, inputOffsets[j]);
    out += fmt::format("      const {} {} = {};\n", computeType(arg.getType()),
                       v, load(arg.getType(), target, ref));
    p.bind(arg, v);
  }
  for (Operation &op : body.without_terminator())
    if (failed(p.print(&op, error)))
      return failure();
  auto yield = cast<tgk::YieldOp>(body.getTerminator());
  for (auto [j, v] : llvm::enumerate(yield.getValues()))
    out += fmt::format("      out{}[{}] = {};\n", j, resultOffsets[j],
                       store(v.getType(), target, p.name(v)));
  return success();
}

Indexing computeIndexing(tgk::KernelOp kernel, StringRef indexType) {
  ArrayRef<int64_t> shape = kernel.getIterationShape();
  SmallVector<int64_t> contiguous(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    contiguous[d] = contiguous[d + 1] * std::max<int64_t>(shape[d + 1], 1);

  Indexing ix;
  bool needIdx = false;
  auto offset = [&](AffineMap map, ArrayRef<int64_t> strides) -> std::string {
    if (map.isIdentity() && strides == ArrayRef<int64_t>(contiguous))
      return "i";
    needIdx = true;
    std::string e;
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || strides[r] == 0)
        continue; // broadcast dimension: always index 0
      e += fmt::format("{}idx{} * ({}){}", e.empty() ? "" : " + ",
                       dim.getPosition(), indexType.str(), strides[r]);
    }
    return e.empty() ? "0" : e;
  };
  for (auto [map, s] :
       llvm::zip(kernel.getIndexingMaps().getAsValueRange<AffineMapAttr>(),
                 kernel.getInputStrides()))
    ix.inputs.push_back(offset(map, cast<DenseI64ArrayAttr>(s).asArrayRef()));
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(shape.size(), kernel.getContext());
  for (Attribute s : kernel.getResultStrides())
    ix.results.push_back(
        offset(identity, cast<DenseI64ArrayAttr>(s).asArrayRef()));
  if (needIdx) {
    ix.decompose = fmt::format("      {} rem = i;\n", indexType.str());
    for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
      if (d == 0) {
        ix.decompose += fmt::format("      const {} idx0 = rem;\n", indexType.str());
        break;
      }
      ix.decompose += fmt::format(
          "      const {0} idx{1} = rem % {2}; rem /= {2};\n", indexType.str(), d,
          std::max<int64_t>(shape[d], 1));
    }
  }
  return ix;
}

} // namespace tgc::codegen::detail
