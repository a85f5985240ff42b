//===- ScalarEmitter.cpp - kernel bodies and indexing, shared by targets --===//
#include "codegen/BodyPrinter.h"
#include "runtime/ContiguousStrides.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include <fmt/format.h>
#include <cctype>
#include <functional>
#include <set>

using namespace mlir;

namespace tgc::codegen::detail {

/// Half types are computed in float; everything else in its own C type.
std::string computeType(Type t) {
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
    return target == Target::Cuda ? "__half" : "tgc_f16";
  if (t.isBF16())
    return target == Target::Cuda ? "__nv_bfloat16" : "tgc_bf16";
  // Bytes, not C++ bool, on the CPU: GCC leaves loops scalar that mix bool
  // loads with strided or float ones ("no vectype"); ATen's bools are 0/1.
  if (t.isInteger(1) && target == Target::Cpu)
    return "unsigned char";
  return computeType(t);
}

std::string load(Type t, Target target, const std::string &ref) {
  if (t.isF16())
    return target == Target::Cuda ? "__half2float(" + ref + ")"
                                  : "tgc_f16_to_f32(" + ref + ")";
  if (t.isBF16())
    return target == Target::Cuda ? "__bfloat162float(" + ref + ")"
                                  : "tgc_bf16_to_f32(" + ref + ")";
  if (t.isInteger(1) && target == Target::Cpu)
    return "(" + ref + " != 0)";
  return ref;
}

std::string store(Type t, Target target, const std::string &v) {
  if (t.isF16())
    return target == Target::Cuda ? "__float2half_rn(" + v + ")"
                                  : "tgc_f32_to_f16(" + v + ")";
  if (t.isBF16())
    return target == Target::Cuda ? "__float2bfloat16_rn(" + v + ")"
                                  : "tgc_f32_to_bf16(" + v + ")";
  if (t.isInteger(1) && target == Target::Cpu)
    return "(unsigned char)(" + v + ")";
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


static std::string indexExpr(AffineExpr e, StringRef type, const NameFn &dim,
                             const NameFn &sym = nullptr);

std::string BodyPrinter::compare(StringRef sym, Operation *op, bool ordered) {
  std::string a = name(op->getOperand(0)), b = name(op->getOperand(1));
  std::string cmp = fmt::format("({} {} {})", a, sym.str(), b);
  if (ordered || sym == "!=")
    return cmp;
  // Unordered predicates are also true when either side is NaN.
  return fmt::format("({} || {} != {} || {} != {})", cmp, a, a, b, b);
}

std::string BodyPrinter::loadExpr(tgk::LoadOp o) {
  auto arg = cast<BlockArgument>(o.getBuffer());
  Operation *kernel = o->getParentOp();
  auto strides = cast<DenseI64ArrayAttr>(
      kernel->getAttrOfType<ArrayAttr>("input_strides")[arg.getArgNumber()]);
  std::string offset = linearOffset(o.getMap(), strides.asArrayRef(), "long long", dimName,
                                    [&](unsigned k) { return name(o.getIndices()[k]); });
  return load(o.getType(), target, fmt::format("in{}[{}]", arg.getArgNumber(), offset));
}

LogicalResult BodyPrinter::print(Operation *op, std::string &error) {
  using namespace mlir::arith;
  if (fixed && op->getNumResults() == 1) {
    auto known = fixed->find(op->getResult(0));
    if (known != fixed->end()) {
      bind(op->getResult(0), known->second ? "true" : "false");
      return success();
    }
    if (auto s = dyn_cast<SelectOp>(op)) {
      auto cond = fixed->find(s.getCondition());
      if (cond != fixed->end()) {
        Value taken = cond->second ? s.getTrueValue() : s.getFalseValue();
        bind(s.getResult(), name(taken));
        if (lazy.contains(taken))
          lazy.insert(s.getResult());
        return success();
      }
    }
  }
  if (auto l = dyn_cast<tgk::LoadOp>(op)) {
    bind(l.getResult(), "(" + loadExpr(l) + ")");
    lazy.insert(l.getResult());
    return success();
  }
  if (auto s = dyn_cast<SelectOp>(op); s && (lazy.contains(s.getTrueValue()) ||
                                            lazy.contains(s.getFalseValue()))) {
    bind(s.getResult(), fmt::format("({} ? {} : {})", name(s.getCondition()),
                                    name(s.getTrueValue()), name(s.getFalseValue())));
    lazy.insert(s.getResult());
    return success();
  }
  if (auto c = dyn_cast<tgk::CheckIndexOp>(op); c && loopChecks && inLoop) {
    // No branch and no store in the loop (either keeps it scalar): the
    // loop ORs a bad-index flag and keeps the largest bad raw value.
    const int id = checkIds.lookup(c);
    if (!llvm::is_contained(*loopChecks, id))
      loopChecks->push_back(id);
    std::string v = "v" + std::to_string(next++);
    *out += fmt::format("      const long long {0}r = (long long)({1});\n", v,
                        name(c.getIndex()));
    if (c.getWrap())
      *out += fmt::format("      const long long {0}w = {0}r < 0 ? {0}r + {1}LL : {0}r;\n", v,
                          c.getSize());
    else
      *out += fmt::format("      const long long {0}w = {0}r;\n", v);
    *out += fmt::format("      const bool {0}ok = {0}w >= 0 && {0}w < {1}LL;\n", v, c.getSize());
    *out += fmt::format("      tgc_bad{0} |= {1}ok ? 0LL : 1LL;\n", id, v);
    *out += fmt::format("      tgc_raw{0} = tgc_max(tgc_raw{0}, {1}ok ? TGC_NO_INDEX : {1}r);\n",
                        id, v);
    *out += fmt::format("      const long long {0} = {0}ok ? {0}w : 0LL;\n", v);
    bind(c.getResult(), v);
    return success();
  }
  std::optional<std::string> expr =
      llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
          .Case([&](arith::ConstantOp c) { return literal(c.getValue()); })
          .Case([&](tgk::UniformOp o) {
            return fmt::format("tgc_uniform({}, {})", name(o.getSeed()), name(o.getCounter()));
          })
          .Case([&](tgk::CheckIndexOp o) {
            return fmt::format("tgc_check_index({}, {}LL, {}, tgc_err, {})", name(o.getIndex()),
                               o.getSize(), o.getWrap() ? "true" : "false",
                               checkIds.lookup(o));
          })
          .Case([&](tgk::IndexOp o) {
            return indexExpr(o.getMap().getResult(0), "long long", dimName);
          })
          .Case([&](AddFOp o) { return binary(o, "+"); })
          .Case([&](SubFOp o) { return binary(o, "-"); })
          .Case([&](MulFOp o) { return binary(o, "*"); })
          .Case([&](DivFOp o) { return binary(o, "/"); })
          .Case([&](AddIOp o) { return binary(o, "+"); })
          .Case([&](SubIOp o) { return binary(o, "-"); })
          .Case([&](MulIOp o) { return binary(o, "*"); })
          .Case([&](OrIOp o) { return binary(o, "|"); })
          .Case([&](AndIOp o) { return binary(o, "&"); })
          .Case([&](XOrIOp o) { return binary(o, "^"); })
          .Case([&](ShLIOp o) { return binary(o, "<<"); })
          .Case([&](ShRSIOp o) { return binary(o, ">>"); })
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
          .Case([&](math::Log1pOp o) { return math("log1p", o.getOperand()); })
          .Case([&](math::ExpM1Op o) { return math("expm1", o.getOperand()); })
          .Case([&](math::SinOp o) { return math("sin", o.getOperand()); })
          .Case([&](math::CosOp o) { return math("cos", o.getOperand()); })
          .Case([&](math::PowFOp o) {
            bool isDouble = o.getType().isF64();
            return fmt::format("pow{}({}, {})", isDouble ? "" : "f", name(o.getLhs()),
                               name(o.getRhs()));
          })
          .Case([&](math::AbsFOp o) { return math("fabs", o.getOperand()); })
          .Case([&](math::FloorOp o) { return math("floor", o.getOperand()); })
          .Case([&](math::CeilOp o) { return math("ceil", o.getOperand()); })
          .Case([&](math::TruncOp o) { return math("trunc", o.getOperand()); })
          .Case([&](math::RoundEvenOp o) { return math("rint", o.getOperand()); })
          .Case([&](arith::RemFOp o) {
            return fmt::format("fmod{}({}, {})", o.getType().isF64() ? "" : "f",
                               name(o.getLhs()), name(o.getRhs()));
          })
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
  *out += fmt::format("      const {} {} = {};\n",
                     computeType(op->getResult(0).getType()), v, *expr);
  bind(op->getResult(0), v);
  return success();
}

LogicalResult emitBody(tgk::KernelOp kernel, const DescribedKernel &d, Target target,
                       ArrayRef<std::string> inputOffsets,
                       ArrayRef<std::string> resultOffsets, std::string &out,
                       std::string &error, const BodySplit *split,
                       std::vector<int> *loopChecks) {
  BodyPrinter p(target, d.checkIds, out);
  p.loopChecks = loopChecks;
  if (split)
    p.fixed = split->fixed;
  Block &body = kernel.getBody().front();
  // Values the inner loop does not change: inputs it reads at one place,
  // and ops of those alone (index ops and gathers whose maps do not name
  // the loop's dims). Printed into split->hoisted, before the loop.
  DenseSet<Value> invariant;
  auto place = [&](bool inv) {
    p.setOutput(inv && split ? *split->hoisted : out);
    p.inLoop = !(inv && split);
  };
  for (auto [j, arg] : llvm::enumerate(body.getArguments())) {
    if (isa<ShapedType>(arg.getType())) {
      invariant.insert(arg); // a whole buffer, read by tgk.load
      continue;
    }
    const bool inv = split && split->inputInvariant(j);
    if (inv)
      invariant.insert(arg);
    std::string v = "a" + std::to_string(j);
    std::string ref = fmt::format("in{}[{}]", j, inputOffsets[j]);
    (inv ? *split->hoisted : out) += fmt::format(
        "      const {} {} = {};\n", computeType(arg.getType()), v, load(arg.getType(), target, ref));
    p.bind(arg, v);
  }
  for (Operation &op : body.without_terminator()) {
    bool inv = split != nullptr;
    if (inv) {
      if (auto i = dyn_cast<tgk::IndexOp>(op))
        inv = split->mapInvariant(i.getMap());
      else if (auto l = dyn_cast<tgk::LoadOp>(op))
        inv = split->mapInvariant(l.getMap());
      for (Value v : op.getOperands())
        inv = inv && invariant.contains(v);
      if (inv)
        for (Value r : op.getResults())
          invariant.insert(r);
    }
    place(inv);
    if (failed(p.print(&op, error)))
      return failure();
  }
  p.setOutput(out);
  auto yield = cast<tgk::YieldOp>(body.getTerminator());
  for (auto [j, v] : llvm::enumerate(yield.getValues()))
    out += fmt::format("      out{}[{}] = {};\n", j, resultOffsets[j],
                       store(v.getType(), target, p.name(v)));
  return success();
}

std::string loopCheckPrologue(const std::vector<int> &ids, const std::string &indent) {
  std::string s;
  for (int id : ids)
    s += fmt::format("{0}long long tgc_bad{1} = 0, tgc_raw{1} = TGC_NO_INDEX;\n", indent, id);
  return s;
}

std::string loopCheckClauses(const std::vector<int> &ids) {
  std::string s;
  for (int id : ids)
    s += fmt::format(" reduction(|:tgc_bad{0}) reduction(max:tgc_raw{0})", id);
  return s;
}

std::string loopCheckEpilogue(const std::vector<int> &ids, const std::string &indent) {
  std::string s;
  for (int id : ids)
    s += fmt::format("{0}if (tgc_bad{1}) tgc_index_error(tgc_err, {1}, tgc_raw{1});\n", indent,
                     id);
  return s;
}

/// C code for one index expression of an indexing map. Maps keep every
/// index non-negative (see tg.remap), so C's `/` and `%` are floordiv and mod.
static std::string indexExpr(AffineExpr e, StringRef type, const NameFn &dim,
                             const NameFn &sym) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dim(d.getPosition());
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return sym(s.getPosition());
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return fmt::format("({}){}", type.str(), c.getValue());
  auto bin = cast<AffineBinaryOpExpr>(e);
  std::string l = indexExpr(bin.getLHS(), type, dim, sym),
              r = indexExpr(bin.getRHS(), type, dim, sym);
  switch (e.getKind()) {
  case AffineExprKind::Add: return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul: return "(" + l + " * " + r + ")";
  case AffineExprKind::FloorDiv: return "(" + l + " / " + r + ")";
  case AffineExprKind::CeilDiv: return "((" + l + " + " + r + " - 1) / " + r + ")";
  default: return "(" + l + " % " + r + ")";
  }
}

std::string cpuStride(int64_t stride) {
  if (stride >= 16 && (stride & (stride - 1)) == 0)
    return "tgc_s" + std::to_string(stride);
  return std::to_string(stride) + "LL";
}

std::string declareOpaqueStrides(const std::string &src) {
  // The names cpuStride printed: `tgc_s` and digits, starting a word.
  auto wordChar = [](char c) { return std::isalnum((unsigned char)c) || c == '_'; };
  std::set<int64_t> used;
  for (size_t at = src.find("tgc_s"); at != std::string::npos; at = src.find("tgc_s", at + 5)) {
    size_t end = at + 5;
    while (end < src.size() && std::isdigit((unsigned char)src[end]))
      ++end;
    if (end > at + 5 && (at == 0 || !wordChar(src[at - 1])))
      used.insert(std::stoll(src.substr(at + 5, end - at - 5)));
  }
  const size_t body = src.find("{\n");
  if (used.empty() || body == std::string::npos)
    return src;
  std::string decls;
  for (int64_t s : used)
    decls += fmt::format("  const long long tgc_s{0} = tgc_opaque({0}LL);\n", s);
  return src.substr(0, body + 2) + decls + src.substr(body + 2);
}

std::string linearOffset(AffineMap map, ArrayRef<int64_t> strides, StringRef type,
                         const NameFn &dim, const NameFn &sym, bool opaque) {
  std::string e;
  for (auto [r, expr] : llvm::enumerate(map.getResults())) {
    if (strides[r] == 0)
      continue; // broadcast dimension of the buffer
    if (auto c = dyn_cast<AffineConstantExpr>(expr)) {
      if (c.getValue() == 0)
        continue; // a broadcast or selected-at-0 dimension
      e += fmt::format("{}({}){}", e.empty() ? "" : " + ", type.str(),
                       c.getValue() * strides[r]);
      continue;
    }
    std::string stride = opaque ? cpuStride(strides[r])
                                : fmt::format("({}){}", type.str(), strides[r]);
    e += fmt::format("{}{} * {}", e.empty() ? "" : " + ", indexExpr(expr, type, dim, sym),
                     stride);
  }
  return e.empty() ? "0" : e;
}

Indexing computeIndexing(tgk::KernelOp kernel, StringRef indexType) {
  ArrayRef<int64_t> shape = kernel.getIterationShape();
  std::vector<int64_t> contiguous = contiguousStrides(shape);

  Indexing ix;
  bool needIdx = false;
  kernel.getBody().walk([&](Operation *op) {
    if (isa<tgk::IndexOp, tgk::LoadOp>(op))
      needIdx = true;
  });
  auto offset = [&](AffineMap map, ArrayRef<int64_t> strides) -> std::string {
    if (map.isIdentity() && strides == ArrayRef<int64_t>(contiguous))
      return "i";
    needIdx = true;
    return linearOffset(map, strides, indexType,
                        [](unsigned d) { return "idx" + std::to_string(d); });
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
    IndexSplit how;
    how.indent = "      ";
    how.type = indexType.str();
    how.suffix = "";
    how.name = [](size_t d) { return "idx" + std::to_string(d); };
    how.outermostIsRest = true;
    ix.decompose = decomposeIndex("i", shape, how);
  }
  return ix;
}

std::string decomposeIndex(StringRef from, ArrayRef<int64_t> shape, const IndexSplit &how) {
  std::string s = fmt::format("{}{} {} = {};\n", how.indent, how.type, how.rem, from.str());
  for (size_t d = shape.size(); d-- > 0;) {
    if ((int64_t)d == how.skip)
      continue;
    if (d == 0 && how.outermostIsRest) {
      s += fmt::format("{}const {} {} = {};\n", how.indent, how.type, how.name(0), how.rem);
      break;
    }
    s += fmt::format("{0}const {1} {2} = {3} % {4}{5}; {3} /= {4}{5};\n", how.indent, how.type,
                     how.name(d), how.rem, std::max<int64_t>(shape[d], 1), how.suffix);
  }
  return s;
}

std::string rngPrelude() {
  return R"(// Philox4x32-10 (Salmon et al., SC'11): counter-based, so element i of a
// random tensor depends only on (seed, i). Output: word 0, top 24 bits.
TGC_RNG_FN float tgc_uniform(long long seed, long long counter) {
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)((unsigned long long)counter >> 32);
  unsigned int c2 = 0, c3 = 0;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)((unsigned long long)seed >> 32);
  for (int r = 0; r < 10; ++r) {
    unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
    unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
    unsigned int h0 = (unsigned int)(p0 >> 32), l0 = (unsigned int)p0;
    unsigned int h1 = (unsigned int)(p1 >> 32), l1 = (unsigned int)p1;
    c0 = h1 ^ c1 ^ k0; c1 = l1; c2 = h0 ^ c3 ^ k1; c3 = l0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * (1.0f / 16777216.0f);
}
)";
}

} // namespace tgc::codegen::detail
