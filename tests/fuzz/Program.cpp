// The fuzz test's programs: generation, the eager interpreter, the C++
// printer and the shrinker (Program.h).
#include "tests/fuzz/Program.h"


#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

namespace tgc::fuzz {
namespace {

using at::Tensor;
using Ints = std::vector<int64_t>;
using Fn1 = Tensor (*)(const Tensor &);
using Fn2 = Tensor (*)(const Tensor &, const Tensor &);

constexpr int64_t kMaxNumel = 4096;
constexpr int64_t kMaxRank = 5;
constexpr int kInputs = 3;
/// Set while `reference` runs a program in float64.
bool gFp64 = false;
Tensor widened(const Tensor &t) {
  return gFp64 && at::isFloatingType(t.scalar_type()) ? t.to(at::kDouble) : t;
}

// ---- The op tables: name (as printed) and what it computes. ----

struct Unary {
  const char *code; ///< "$0" is the argument
  Fn1 fn;
};
const Unary kUnary[] = {
    {"at::neg($0)", [](const Tensor &a) { return at::neg(a); }},
    {"at::abs($0)", [](const Tensor &a) { return at::abs(a); }},
    {"at::relu($0)", [](const Tensor &a) { return at::relu(a); }},
    {"at::exp($0)", [](const Tensor &a) { return at::exp(a); }},
    {"at::sigmoid($0)", [](const Tensor &a) { return at::sigmoid(a); }},
    {"at::tanh($0)", [](const Tensor &a) { return at::tanh(a); }},
    {"at::sin($0)", [](const Tensor &a) { return at::sin(a); }},
    {"at::cos($0)", [](const Tensor &a) { return at::cos(a); }},
    {"at::sqrt(at::abs($0))", [](const Tensor &a) { return at::sqrt(at::abs(a)); }},
    {"at::log1p(at::abs($0))", [](const Tensor &a) { return at::log1p(at::abs(a)); }},
    {"at::gelu($0)", [](const Tensor &a) { return at::gelu(a); }},
    {"at::silu($0)", [](const Tensor &a) { return at::silu(a); }},
    {"at::erf($0)", [](const Tensor &a) { return at::erf(a); }},
    {"at::floor($0)", [](const Tensor &a) { return at::floor(a); }},
    {"at::reciprocal($0)", [](const Tensor &a) { return at::reciprocal(a); }},
    {"at::sign($0)", [](const Tensor &a) { return at::sign(a); }},
    {"at::square($0)", [](const Tensor &a) { return at::square(a); }},
    {"at::logical_not($0)", [](const Tensor &a) { return at::logical_not(a); }},
    {"at::bitwise_not($0)", [](const Tensor &a) { return at::bitwise_not(a); }},
    {"$0.clone()", [](const Tensor &a) { return a.clone(); }},
    {"$0.contiguous()", [](const Tensor &a) { return a.contiguous(); }},
};

struct Binary {
  const char *code; ///< "$0", "$1" are the arguments
  Fn2 fn;
};
const Binary kBinary[] = {
    {"at::add($0, $1)", [](const Tensor &a, const Tensor &b) { return at::add(a, b); }},
    {"at::sub($0, $1)", [](const Tensor &a, const Tensor &b) { return at::sub(a, b); }},
    {"at::mul($0, $1)", [](const Tensor &a, const Tensor &b) { return at::mul(a, b); }},
    {"at::div($0, $1)", [](const Tensor &a, const Tensor &b) { return at::div(a, b); }},
    {"at::maximum($0, $1)", [](const Tensor &a, const Tensor &b) { return at::maximum(a, b); }},
    {"at::minimum($0, $1)", [](const Tensor &a, const Tensor &b) { return at::minimum(a, b); }},
    {"at::atan2($0, $1)", [](const Tensor &a, const Tensor &b) { return at::atan2(a, b); }},
    {"at::eq($0, $1)", [](const Tensor &a, const Tensor &b) { return at::eq(a, b); }},
    {"at::ne($0, $1)", [](const Tensor &a, const Tensor &b) { return at::ne(a, b); }},
    {"at::gt($0, $1)", [](const Tensor &a, const Tensor &b) { return at::gt(a, b); }},
    {"at::lt($0, $1)", [](const Tensor &a, const Tensor &b) { return at::lt(a, b); }},
    {"at::ge($0, $1)", [](const Tensor &a, const Tensor &b) { return at::ge(a, b); }},
    {"at::logical_and($0, $1)", [](const Tensor &a, const Tensor &b) { return at::logical_and(a, b); }},
    {"at::logical_or($0, $1)", [](const Tensor &a, const Tensor &b) { return at::logical_or(a, b); }},
    {"at::bitwise_xor($0, $1)", [](const Tensor &a, const Tensor &b) { return at::bitwise_xor(a, b); }},
    {"at::pow(at::abs($0) + 0.5, $1)",
     [](const Tensor &a, const Tensor &b) { return at::pow(at::abs(a) + 0.5, b); }},
};

enum ScalarOp { AddS, MulS, RsubS, DivS, Clamp, Pow2, LeakyRelu, MaskedFillGt, Threshold, kScalarOps };
enum ReduceOp {
  Sum, Mean, Amax, Amin, Prod, Argmax, Argmin, Var, Std, Logsumexp, VecNorm, Any, All, Cumsum,
  MaxValues, MaxIndices, SumAll, MeanAll, kReduceOps
};
enum RowOp { Softmax, LogSoftmax, LayerNorm, LayerNormAffine, RmsNorm, kRowOps };
enum ViewOp {
  Transpose, Permute, Slice, Select, Unsqueeze, Squeeze, Reshape, View, Expand, Flatten, Narrow,
  Diagonal, Movedim, Unfold, T, Unflatten, kViewOps
};
enum IndexOp { IndexSelect, Gather, IndexDim0, IndexDim1, MaskedFill, Embedding, IndexPair, IndexBool, kIndexOps };
enum MatmulOp { MatmulW, Linear, MatmulT, Bmm, Addmm, kMatmulOps };
enum CatOp { CatOp2, StackOp, kCatOps };
enum InPlaceOp {
  AddS_, MulS_, AddT_, Copy_, Relu_, Clamp_, Fill_, Zero_, MaskedFill_, IndexPut_, MulT_, Sigmoid_,
  kInPlaceOps
};

const at::ScalarType kDtypes[] = {at::kFloat, at::kDouble, at::kLong, at::kBFloat16, at::kBool, at::kInt};

// ---- Applying a step. ----

Tensor applyView(int op, const Ints &v, const Tensor &x) {
  switch (op) {
  case Transpose: return x.transpose(v.at(0), v.at(1));
  case Permute: return x.permute(v);
  case Slice: return x.slice(v.at(0), v.at(1), v.at(2), v.at(3));
  case Select: return x.select(v.at(0), v.at(1));
  case Unsqueeze: return x.unsqueeze(v.at(0));
  case Squeeze: return x.squeeze(v.at(0));
  case Reshape: return x.reshape(v);
  case View: return x.view(v);
  case Expand: return x.expand(v);
  case Flatten: return x.flatten(v.at(0), v.at(1));
  case Narrow: return x.narrow(v.at(0), v.at(1), v.at(2));
  case Diagonal: return x.diagonal(v.at(0), v.at(1), v.at(2));
  case Movedim: return x.movedim(v.at(0), v.at(1));
  case Unfold: return x.unfold(v.at(0), v.at(1), v.at(2));
  case T: return x.t();
  case Unflatten: return x.unflatten(v.at(0), Ints(v.begin() + 1, v.end()));
  }
  throw std::logic_error("fuzz: bad view op");
}

std::string ints(const Ints &v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "}";
}

std::string viewCode(int op, const Ints &v, const std::string &x) {
  switch (op) {
  case Transpose: return format("{}.transpose({}, {})", x, v[0], v[1]);
  case Permute: return format("{}.permute({})", x, ints(v));
  case Slice: return format("{}.slice({}, {}, {}, {})", x, v[0], v[1], v[2], v[3]);
  case Select: return format("{}.select({}, {})", x, v[0], v[1]);
  case Unsqueeze: return format("{}.unsqueeze({})", x, v[0]);
  case Squeeze: return format("{}.squeeze({})", x, v[0]);
  case Reshape: return format("{}.reshape({})", x, ints(v));
  case View: return format("{}.view({})", x, ints(v));
  case Expand: return format("{}.expand({})", x, ints(v));
  case Flatten: return format("{}.flatten({}, {})", x, v[0], v[1]);
  case Narrow: return format("{}.narrow({}, {}, {})", x, v[0], v[1], v[2]);
  case Diagonal: return format("{}.diagonal({}, {}, {})", x, v[0], v[1], v[2]);
  case Movedim: return format("{}.movedim({}, {})", x, v[0], v[1]);
  case Unfold: return format("{}.unfold({}, {}, {})", x, v[0], v[1], v[2]);
  case T: return x + ".t()";
  case Unflatten: return format("{}.unflatten({}, {})", x, v[0], ints(Ints(v.begin() + 1, v.end())));
  }
  return "?";
}

/// A scalar as ATen sees it: integral values stay integers, so an integer
/// tensor plus 2 stays an integer tensor.
c10::Scalar scalarOf(double s) {
  if (s == std::floor(s))
    return c10::Scalar(int64_t(s));
  return c10::Scalar(s);
}
std::string scalarCode(double s) {
  return s == std::floor(s) ? format("{}", int64_t(s)) : format("{}", s);
}

Tensor applyStep(const Program &p, const Step &s, const std::vector<Tensor> &vals) {
  auto arg = [&](size_t i) -> const Tensor & { return vals.at(s.args.at(i)); };
  auto constant = [&](size_t i) { return widened(p.constants.at(s.constants.at(i))); };
  const Ints &v = s.ints;
  switch (s.kind) {
  case Kind::Unary: return kUnary[s.op].fn(arg(0));
  case Kind::Binary: return kBinary[s.op].fn(arg(0), arg(1));
  case Kind::Where: {
    Tensor cond = arg(0).scalar_type() == at::kBool ? arg(0) : at::gt(arg(0), scalarOf(s.scalar));
    return at::where(cond, arg(1), arg(2));
  }
  case Kind::Scalar: {
    const Tensor &x = arg(0);
    switch (s.op) {
    case AddS: return at::add(x, scalarOf(s.scalar));
    case MulS: return at::mul(x, scalarOf(s.scalar));
    case RsubS: return at::rsub(x, scalarOf(s.scalar));
    case DivS: return at::div(x, scalarOf(s.scalar));
    case Clamp: return at::clamp(x, scalarOf(s.scalar), scalarOf(s.scalar2));
    case Pow2: return at::pow(x, 2);
    case LeakyRelu: return at::leaky_relu(x, 0.1);
    case MaskedFillGt: return x.masked_fill(at::gt(x, scalarOf(s.scalar)), scalarOf(s.scalar2));
    case Threshold: return at::threshold(x, scalarOf(s.scalar), scalarOf(s.scalar2));
    }
    break;
  }
  case Kind::Cast:
    return arg(0).to(gFp64 && at::isFloatingType(s.dtype) ? at::kDouble : s.dtype);
  case Kind::Reduce: {
    const Tensor &x = arg(0);
    switch (s.op) {
    case Sum: return at::sum(x, v, s.flag);
    case Mean: return at::mean(x, v, s.flag);
    case Amax: return at::amax(x, v, s.flag);
    case Amin: return at::amin(x, v, s.flag);
    case Prod: return at::prod(x, v.at(0), s.flag);
    case Argmax: return at::argmax(x, v.at(0), s.flag);
    case Argmin: return at::argmin(x, v.at(0), s.flag);
    case Var: return at::var(x, at::IntArrayRef(v), c10::Scalar(int64_t(s.scalar)), s.flag);
    case Std: return at::std(x, at::IntArrayRef(v), c10::Scalar(int64_t(s.scalar)), s.flag);
    case Logsumexp: return at::logsumexp(x, v, s.flag);
    case VecNorm: return at::linalg_vector_norm(x, s.scalar, at::IntArrayRef(v), s.flag);
    case Any: return at::any(x, v.at(0), s.flag);
    case All: return at::all(x, v.at(0), s.flag);
    case Cumsum: return at::cumsum(x, v.at(0));
    case MaxValues: return std::get<0>(at::max(x, v.at(0), s.flag));
    case MaxIndices: return std::get<1>(at::max(x, v.at(0), s.flag));
    case SumAll: return at::sum(x);
    case MeanAll: return at::mean(x);
    }
    break;
  }
  case Kind::Row: {
    const Tensor &x = arg(0);
    switch (s.op) {
    case Softmax: return at::softmax(x, v.at(0));
    case LogSoftmax: return at::log_softmax(x, v.at(0));
    case LayerNorm: return at::layer_norm(x, v);
    case LayerNormAffine: return at::layer_norm(x, v, constant(0), constant(1));
    case RmsNorm: return at::rms_norm(x, v, constant(0), 1e-5);
    }
    break;
  }
  case Kind::View: return applyView(s.op, v, arg(0));
  case Kind::Index: {
    const Tensor &x = arg(0);
    switch (s.op) {
    case IndexSelect: return at::index_select(x, v.at(0), constant(0));
    case Gather: return at::gather(x, v.at(0), constant(0));
    case IndexDim0: return x.index({constant(0)});
    case IndexDim1: return x.index({at::indexing::Slice(), constant(0)});
    case MaskedFill: return x.masked_fill(constant(0), scalarOf(s.scalar));
    case Embedding: return at::embedding(x, constant(0));
    case IndexPair: return x.index({constant(0), constant(1)});
    case IndexBool: return x.index({constant(0)});
    }
    break;
  }
  case Kind::Matmul: {
    const Tensor &x = arg(0);
    switch (s.op) {
    case MatmulW: return at::matmul(x, constant(0));
    case Linear: return at::linear(x, constant(0), constant(1));
    case MatmulT: return at::matmul(x, arg(1).transpose(-1, -2));
    case Bmm: return at::bmm(x, arg(1).transpose(1, 2));
    case Addmm: return at::addmm(constant(1), x, constant(0));
    }
    break;
  }
  case Kind::Cat:
    if (s.op == CatOp2)
      return at::cat({arg(0), arg(1)}, v.at(0));
    return at::stack({arg(0), arg(1)}, v.at(0));
  case Kind::InPlace: {
    Tensor base = arg(0);
    Tensor t = base;
    for (const auto &[op, vi] : s.views)
      t = applyView(op, vi, t);
    switch (s.op) {
    case AddS_: t.add_(scalarOf(s.scalar)); break;
    case MulS_: t.mul_(scalarOf(s.scalar)); break;
    case AddT_: t.add_(arg(1)); break;
    case Copy_: t.copy_(arg(1)); break;
    case Relu_: t.relu_(); break;
    case Clamp_: t.clamp_(scalarOf(s.scalar), scalarOf(s.scalar2)); break;
    case Fill_: t.fill_(scalarOf(s.scalar)); break;
    case Zero_: t.zero_(); break;
    case MaskedFill_: t.masked_fill_(constant(0), scalarOf(s.scalar)); break;
    case IndexPut_: t.index_put_({constant(0)}, arg(1), s.flag); break;
    case MulT_: t.mul_(arg(1)); break;
    case Sigmoid_: t.sigmoid_(); break;
    }
    return base;
  }
  }
  throw std::logic_error("fuzz: bad step");
}

// ---- Printing. ----

std::string constantCode(const Tensor &c) {
  std::string shape = ints(c.sizes().vec());
  if (c.scalar_type() == at::kLong || c.scalar_type() == at::kBool) {
    Tensor flat = c.flatten().to(at::kLong);
    Ints values(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
    std::string dt = c.scalar_type() == at::kBool ? "at::kBool" : "at::kLong";
    return format("torch::tensor(std::vector<int64_t>{}).to({}).view({})", ints(values), dt,
                       shape);
  }
  return format("torch::randn({}, at::{})", shape, c10::toString(c.scalar_type()));
}

std::string stepCode(const Program &p, const Step &s) {
  auto a = [&](size_t i) { return format("v{}", s.args.at(i)); };
  auto c = [&](size_t i) { return format("c{}", s.constants.at(i)); };
  auto subst = [&](std::string code) {
    for (size_t i = 0; i < s.args.size(); ++i) {
      std::string key = "$" + std::to_string(i);
      for (size_t at = code.find(key); at != std::string::npos; at = code.find(key))
        code.replace(at, key.size(), a(i));
    }
    return code;
  };
  const Ints &v = s.ints;
  const std::string sc = scalarCode(s.scalar), sc2 = scalarCode(s.scalar2);
  const char *keep = s.flag ? "true" : "false";
  switch (s.kind) {
  case Kind::Unary: return subst(kUnary[s.op].code);
  case Kind::Binary: return subst(kBinary[s.op].code);
  case Kind::Where:
    return format("at::where({0}.scalar_type() == at::kBool ? {0} : at::gt({0}, {1}), {2}, {3})",
                       a(0), sc, a(1), a(2));
  case Kind::Scalar:
    switch (s.op) {
    case AddS: return format("at::add({}, {})", a(0), sc);
    case MulS: return format("at::mul({}, {})", a(0), sc);
    case RsubS: return format("at::rsub({}, {})", a(0), sc);
    case DivS: return format("at::div({}, {})", a(0), sc);
    case Clamp: return format("at::clamp({}, {}, {})", a(0), sc, sc2);
    case Pow2: return format("at::pow({}, 2)", a(0));
    case LeakyRelu: return format("at::leaky_relu({}, 0.1)", a(0));
    case MaskedFillGt: return format("{0}.masked_fill(at::gt({0}, {1}), {2})", a(0), sc, sc2);
    case Threshold: return format("at::threshold({}, {}, {})", a(0), sc, sc2);
    }
    break;
  case Kind::Cast: return format("{}.to(at::{})", a(0), c10::toString(s.dtype));
  case Kind::Reduce:
    switch (s.op) {
    case Sum: return format("at::sum({}, {}, {})", a(0), ints(v), keep);
    case Mean: return format("at::mean({}, {}, {})", a(0), ints(v), keep);
    case Amax: return format("at::amax({}, {}, {})", a(0), ints(v), keep);
    case Amin: return format("at::amin({}, {}, {})", a(0), ints(v), keep);
    case Prod: return format("at::prod({}, {}, {})", a(0), v[0], keep);
    case Argmax: return format("at::argmax({}, {}, {})", a(0), v[0], keep);
    case Argmin: return format("at::argmin({}, {}, {})", a(0), v[0], keep);
    case Var: return format("at::var({}, {}, /*correction=*/{}, {})", a(0), ints(v), sc, keep);
    case Std: return format("at::std({}, {}, /*correction=*/{}, {})", a(0), ints(v), sc, keep);
    case Logsumexp: return format("at::logsumexp({}, {}, {})", a(0), ints(v), keep);
    case VecNorm: return format("at::linalg_vector_norm({}, {}, {}, {})", a(0), s.scalar, ints(v), keep);
    case Any: return format("at::any({}, {}, {})", a(0), v[0], keep);
    case All: return format("at::all({}, {}, {})", a(0), v[0], keep);
    case Cumsum: return format("at::cumsum({}, {})", a(0), v[0]);
    case MaxValues: return format("std::get<0>(at::max({}, {}, {}))", a(0), v[0], keep);
    case MaxIndices: return format("std::get<1>(at::max({}, {}, {}))", a(0), v[0], keep);
    case SumAll: return format("at::sum({})", a(0));
    case MeanAll: return format("at::mean({})", a(0));
    }
    break;
  case Kind::Row:
    switch (s.op) {
    case Softmax: return format("at::softmax({}, {})", a(0), v[0]);
    case LogSoftmax: return format("at::log_softmax({}, {})", a(0), v[0]);
    case LayerNorm: return format("at::layer_norm({}, {})", a(0), ints(v));
    case LayerNormAffine: return format("at::layer_norm({}, {}, {}, {})", a(0), ints(v), c(0), c(1));
    case RmsNorm: return format("at::rms_norm({}, {}, {}, 1e-5)", a(0), ints(v), c(0));
    }
    break;
  case Kind::View: return viewCode(s.op, v, a(0));
  case Kind::Index:
    switch (s.op) {
    case IndexSelect: return format("at::index_select({}, {}, {})", a(0), v[0], c(0));
    case Gather: return format("at::gather({}, {}, {})", a(0), v[0], c(0));
    case IndexDim0: case IndexBool: return format("{}.index({{{}}})", a(0), c(0));
    case IndexDim1: return format("{}.index({{at::indexing::Slice(), {}}})", a(0), c(0));
    case MaskedFill: return format("{}.masked_fill({}, {})", a(0), c(0), sc);
    case Embedding: return format("at::embedding({}, {})", a(0), c(0));
    case IndexPair: return format("{}.index({{{}, {}}})", a(0), c(0), c(1));
    }
    break;
  case Kind::Matmul:
    switch (s.op) {
    case MatmulW: return format("at::matmul({}, {})", a(0), c(0));
    case Linear: return format("at::linear({}, {}, {})", a(0), c(0), c(1));
    case MatmulT: return format("at::matmul({}, {}.transpose(-1, -2))", a(0), a(1));
    case Bmm: return format("at::bmm({}, {}.transpose(1, 2))", a(0), a(1));
    case Addmm: return format("at::addmm({}, {}, {})", c(1), a(0), c(0));
    }
    break;
  case Kind::Cat:
    return format("at::{}({{{}, {}}}, {})", s.op == CatOp2 ? "cat" : "stack", a(0), a(1), v[0]);
  case Kind::InPlace: {
    std::string t = a(0);
    for (const auto &[op, vi] : s.views)
      t = viewCode(op, vi, t);
    std::string what;
    switch (s.op) {
    case AddS_: what = format("add_({})", sc); break;
    case MulS_: what = format("mul_({})", sc); break;
    case AddT_: what = format("add_({})", a(1)); break;
    case Copy_: what = format("copy_({})", a(1)); break;
    case Relu_: what = "relu_()"; break;
    case Clamp_: what = format("clamp_({}, {})", sc, sc2); break;
    case Fill_: what = format("fill_({})", sc); break;
    case Zero_: what = "zero_()"; break;
    case MaskedFill_: what = format("masked_fill_({}, {})", c(0), sc); break;
    case IndexPut_: what = format("index_put_({{{}}}, {}, {})", c(0), a(1), keep); break;
    case MulT_: what = format("mul_({})", a(1)); break;
    case Sigmoid_: what = "sigmoid_()"; break;
    }
    return format("({}.{}, {})", t, what, a(0));
  }
  }
  return "?";
}

// ---- Generation. ----

/// Whether a small change of an operand can change the result by a whole
/// step (floor, sign, comparisons, arg-reductions, conversion to integers).
bool discontinuous(const Step &s) {
  switch (s.kind) {
  case Kind::Unary: return std::string(kUnary[s.op].code).find("floor") != std::string::npos ||
                           std::string(kUnary[s.op].code).find("sign") != std::string::npos;
  case Kind::Binary: {
    std::string code = kBinary[s.op].code;
    for (const char *cmp : {"eq(", "ne(", "gt(", "lt(", "ge("})
      if (code.find(cmp) != std::string::npos)
        return true;
    return false;
  }
  case Kind::Where: return true;
  case Kind::Scalar: return s.op == MaskedFillGt || s.op == Threshold;
  case Kind::Reduce: return s.op == Argmax || s.op == Argmin || s.op == MaxIndices;
  case Kind::Cast: return !at::isFloatingType(s.dtype);
  default: return false;
  }
}

class Generator {
public:
  explicit Generator(uint64_t seed) : rng_(seed) { p_.seed = seed; }
  Program run();

private:
  int64_t uniform(int64_t lo, int64_t hi) { // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T> const T &pick(const std::vector<T> &v) { return v[uniform(0, v.size() - 1)]; }
  double scalar() {
    static const std::vector<double> values = {-3, -2, -1, 1, 2, 3, -2.5, -0.5, 0.5, 1.5, 0.25};
    return pick(values);
  }
  int64_t size() {
    static const std::vector<int64_t> sizes = {1, 2, 3, 4, 5, 7, 8, 16};
    return chance(0.02) ? 0 : pick(sizes);
  }
  Ints shape(int64_t rank) {
    Ints s;
    for (int64_t i = 0; i < rank; ++i)
      s.push_back(size());
    return s;
  }
  at::ScalarType dtype() {
    double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    return r < 0.6 ? at::kFloat : r < 0.72 ? at::kDouble : r < 0.86 ? at::kLong
         : r < 0.92 ? at::kBFloat16 : r < 0.96 ? at::kBool : at::kInt;
  }
  Tensor random(const Ints &shape, at::ScalarType dt) {
    if (at::isFloatingType(dt))
      return (torch::randn(shape) * 2).to(dt);
    if (dt == at::kBool)
      return torch::randint(0, 2, shape).to(dt);
    return torch::randint(-20, 20, shape).to(dt);
  }
  /// An integer index tensor of `shape` with values in [0, bound).
  int indexConstant(const Ints &shape, int64_t bound) {
    p_.constants.push_back(torch::randint(0, std::max<int64_t>(bound, 1), shape));
    return p_.constants.size() - 1;
  }
  int constant(Tensor t) {
    p_.constants.push_back(std::move(t));
    return p_.constants.size() - 1;
  }
  /// A value id, the latest more often than the others.
  int value() {
    int n = vals_.size();
    return chance(0.45) ? n - 1 : uniform(0, n - 1);
  }
  /// A value of the same rank and shape as `id` except maybe in dimension
  /// `except` (-1: none), or `id` itself.
  int partner(int id, int64_t except) {
    std::vector<int> ok;
    const Tensor &x = vals_[id];
    for (int j = 0; j < int(vals_.size()); ++j) {
      const Tensor &y = vals_[j];
      if (y.dim() != x.dim())
        continue;
      bool same = true;
      for (int64_t d = 0; d < x.dim(); ++d)
        same &= d == except || x.size(d) == y.size(d);
      if (same)
        ok.push_back(j);
    }
    return ok.empty() ? id : pick(ok);
  }
  /// A value `id`'s shape broadcasts to (maybe with size-1 dims), or id.
  int broadcastPartner(int id) {
    std::vector<int> ok;
    for (int j = 0; j < int(vals_.size()); ++j)
      if (j != id) {
        try {
          (void)at::infer_size(vals_[id].sizes(), vals_[j].sizes());
          ok.push_back(j);
        } catch (const std::exception &) {
        }
      }
    return ok.empty() || chance(0.15) ? id : pick(ok);
  }
  int64_t dim(const Tensor &x) { return x.dim() == 0 ? 0 : uniform(0, x.dim() - 1); }
  Ints dims(const Tensor &x) {
    Ints d;
    for (int64_t i = 0; i < x.dim(); ++i)
      if (chance(0.5))
        d.push_back(i);
    if (d.empty() && x.dim() > 0)
      d.push_back(dim(x));
    return d;
  }
  /// Fills a view op and its ints for `x`; false when it has none to offer.
  bool view(const Tensor &x, int &op, Ints &v);
  Step step();
  Input input();

  std::mt19937_64 rng_;
  Program p_;
  std::vector<Tensor> vals_;
};

bool Generator::view(const Tensor &x, int &op, Ints &v) {
  const int64_t r = x.dim();
  op = uniform(0, kViewOps - 1);
  v.clear();
  switch (op) {
  case Transpose: case Movedim:
    if (r < 2) return false;
    v = {dim(x), dim(x)};
    return true;
  case Permute: {
    if (r < 2) return false;
    v.resize(r);
    std::iota(v.begin(), v.end(), 0);
    std::shuffle(v.begin(), v.end(), rng_);
    return true;
  }
  case Slice: {
    if (r < 1) return false;
    int64_t d = dim(x), n = x.size(d);
    int64_t start = uniform(0, std::max<int64_t>(n - 1, 0));
    v = {d, start, uniform(start, n), uniform(1, 3)};
    return true;
  }
  case Select: case Narrow: {
    if (r < 1) return false;
    int64_t d = dim(x), n = x.size(d);
    if (n == 0) return false;
    int64_t start = uniform(0, n - 1);
    v = op == Select ? Ints{d, start} : Ints{d, start, uniform(0, n - start)};
    return true;
  }
  case Unsqueeze: v = {uniform(0, r)}; return r < kMaxRank;
  case Squeeze: {
    if (r < 1) return false;
    v = {dim(x)};
    for (int64_t d = 0; d < r; ++d)
      if (x.size(d) == 1 && chance(0.7))
        v = {d};
    return true;
  }
  case Reshape: case View: {
    // Regroup the sizes: split or merge neighbours, or flatten.
    Ints s = x.sizes().vec();
    if (chance(0.3) || s.size() < 2) {
      v = {-1};
      if (x.numel() % 2 == 0 && x.numel() > 0 && chance(0.5))
        v = {2, -1};
      return true;
    }
    size_t i = uniform(0, s.size() - 2);
    s[i] *= s[i + 1];
    s.erase(s.begin() + i + 1);
    v = s;
    return true;
  }
  case Expand: {
    if (r < 1) return false;
    v = x.sizes().vec();
    bool any = false;
    for (int64_t &n : v)
      if (n == 1 && chance(0.7)) {
        n = uniform(2, 5);
        any = true;
      }
    if (chance(0.3) && r < kMaxRank) {
      v.insert(v.begin(), uniform(2, 3));
      any = true;
    }
    return any;
  }
  case Flatten: {
    if (r < 2) return false;
    int64_t a = uniform(0, r - 2);
    v = {a, uniform(a + 1, r - 1)};
    return true;
  }
  case Diagonal:
    if (r < 2) return false;
    v = {uniform(-1, 1), 0, 0};
    v[1] = dim(x);
    do v[2] = dim(x); while (v[2] == v[1]);
    return true;
  case Unfold: {
    if (r < 1 || r >= kMaxRank) return false;
    int64_t d = dim(x), n = x.size(d);
    if (n < 1) return false;
    v = {d, uniform(1, n), uniform(1, 2)};
    return true;
  }
  case T: return r <= 2;
  case Unflatten: {
    if (r < 1 || r >= kMaxRank) return false;
    int64_t d = dim(x), n = x.size(d);
    for (int64_t f : {2, 3, 4})
      if (n % f == 0 && n > f) {
        v = {d, f, n / f};
        return true;
      }
    return false;
  }
  }
  return false;
}

Step Generator::step() {
  Step s;
  const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
  const int a = value();
  const Tensor &x = vals_[a];
  s.args = {a};
  auto floating = [&](const Tensor &t) { return at::isFloatingType(t.scalar_type()); };
  if (r < 0.14) {
    s.kind = Kind::Unary;
    s.op = uniform(0, std::size(kUnary) - 1);
  } else if (r < 0.28) {
    s.kind = Kind::Binary;
    s.op = uniform(0, std::size(kBinary) - 1);
    s.args.push_back(broadcastPartner(a));
    if (chance(0.5))
      std::swap(s.args[0], s.args[1]);
  } else if (r < 0.32) {
    s.kind = Kind::Where;
    s.scalar = scalar();
    s.args.push_back(broadcastPartner(a));
    s.args.push_back(broadcastPartner(a));
  } else if (r < 0.40) {
    s.kind = Kind::Scalar;
    s.op = uniform(0, kScalarOps - 1);
    s.scalar = scalar();
    s.scalar2 = scalar();
    if (s.op == Clamp && s.scalar2 < s.scalar)
      std::swap(s.scalar, s.scalar2);
  } else if (r < 0.43) {
    s.kind = Kind::Cast;
    s.dtype = pick(std::vector<at::ScalarType>(std::begin(kDtypes), std::end(kDtypes)));
  } else if (r < 0.54) {
    s.kind = Kind::Reduce;
    s.op = uniform(0, kReduceOps - 1);
    s.flag = chance(0.4);
    s.ints = s.op == Sum || s.op == Mean || s.op == Amax || s.op == Amin || s.op == Var ||
                     s.op == Std || s.op == Logsumexp || s.op == VecNorm
                 ? dims(x)
                 : Ints{dim(x)};
    s.scalar = s.op == VecNorm ? pick(std::vector<double>{1, 2, 3, INFINITY}) : uniform(0, 1);
  } else if (r < 0.60) {
    s.kind = Kind::Row;
    s.op = uniform(0, kRowOps - 1);
    if (s.op == Softmax || s.op == LogSoftmax) {
      s.ints = {dim(x)};
    } else {
      if (x.dim() < 1)
        throw std::invalid_argument("rank 0");
      int64_t k = uniform(1, std::min<int64_t>(2, x.dim()));
      s.ints = Ints(x.sizes().end() - k, x.sizes().end());
      if (s.op != LayerNorm)
        s.constants.push_back(constant(random(s.ints, x.scalar_type())));
      if (s.op == LayerNormAffine)
        s.constants.push_back(constant(random(s.ints, x.scalar_type())));
    }
  } else if (r < 0.73) {
    s.kind = Kind::View;
    if (!view(x, s.op, s.ints))
      throw std::invalid_argument("no view");
  } else if (r < 0.81) {
    s.kind = Kind::Index;
    s.op = uniform(0, kIndexOps - 1);
    if (x.dim() < 1)
      throw std::invalid_argument("rank 0");
    int64_t d = dim(x);
    switch (s.op) {
    case IndexSelect:
      s.ints = {d};
      s.constants = {indexConstant({uniform(1, 6)}, x.size(d))};
      break;
    case Gather: {
      s.ints = {d};
      Ints shape = x.sizes().vec();
      shape[d] = uniform(1, 6);
      s.constants = {indexConstant(shape, x.size(d))};
      break;
    }
    case IndexDim0:
      s.constants = {indexConstant(shape(uniform(1, 2)), x.size(0))};
      break;
    case IndexDim1:
      if (x.dim() < 2) throw std::invalid_argument("rank < 2");
      s.constants = {indexConstant({uniform(1, 5)}, x.size(1))};
      break;
    case MaskedFill: {
      Ints shape = x.sizes().vec();
      for (int64_t &n : shape)
        if (chance(0.3)) n = 1;
      s.constants = {constant(torch::randint(0, 2, shape).to(at::kBool))};
      s.scalar = scalar();
      break;
    }
    case Embedding:
      s.constants = {indexConstant(shape(uniform(1, 2)), x.size(0))};
      break;
    case IndexPair:
      if (x.dim() < 2) throw std::invalid_argument("rank < 2");
      s.constants = {indexConstant({uniform(1, 4)}, x.size(0)), indexConstant({1}, x.size(1))};
      break;
    case IndexBool:
      s.constants = {constant(torch::randint(0, 2, {x.size(0)}).to(at::kBool))};
      break;
    }
  } else if (r < 0.87) {
    s.kind = Kind::Matmul;
    s.op = uniform(0, kMatmulOps - 1);
    if (x.dim() < 1 || !floating(x))
      throw std::invalid_argument("matmul of a non-float");
    const int64_t k = x.size(-1), n = pick(std::vector<int64_t>{1, 3, 8, 16});
    switch (s.op) {
    case MatmulW:
      s.constants = {constant(random(chance(0.2) ? Ints{k} : Ints{k, n}, x.scalar_type()))};
      break;
    case Linear: case Addmm:
      s.constants = {constant(random(s.op == Linear ? Ints{n, k} : Ints{k, n}, x.scalar_type())),
                     constant(random({n}, x.scalar_type()))};
      break;
    case MatmulT:
      s.args.push_back(partner(a, x.dim() - 2));
      break;
    case Bmm:
      s.args.push_back(partner(a, 1));
      break;
    }
  } else if (r < 0.91) {
    s.kind = Kind::Cat;
    s.op = uniform(0, kCatOps - 1);
    s.ints = {s.op == StackOp ? uniform(0, x.dim()) : dim(x)};
    s.args.push_back(partner(a, s.op == StackOp ? -1 : s.ints[0]));
  } else {
    s.kind = Kind::InPlace;
    s.op = uniform(0, kInPlaceOps - 1);
    // Mostly intermediates; sometimes an input (the caller sees the write).
    if (a < kInputs && chance(0.5))
      s.args[0] = vals_.size() - 1;
    Tensor t = vals_[s.args[0]];
    for (int64_t depth = uniform(0, 2); depth > 0; --depth) {
      int op;
      Ints v;
      if (!view(t, op, v) || op == Reshape || op == Expand)
        continue;
      try {
        t = applyView(op, v, t);
      } catch (const std::exception &) {
        continue;
      }
      s.views.emplace_back(op, v);
    }
    s.scalar = scalar();
    s.scalar2 = scalar();
    if (s.op == Clamp_ && s.scalar2 < s.scalar)
      std::swap(s.scalar, s.scalar2);
    s.flag = chance(0.5);
    if (s.op == AddT_ || s.op == Copy_ || s.op == MulT_) {
      // Something that broadcasts to the written view.
      std::vector<int> ok;
      for (int j = 0; j < int(vals_.size()); ++j)
        try {
          if (at::infer_size(t.sizes(), vals_[j].sizes()) == t.sizes())
            ok.push_back(j);
        } catch (const std::exception &) {
        }
      if (ok.empty())
        throw std::invalid_argument("no operand");
      s.args.push_back(pick(ok));
    } else if (s.op == MaskedFill_) {
      s.constants = {constant(torch::randint(0, 2, t.sizes()).to(at::kBool))};
    } else if (s.op == IndexPut_) {
      if (t.dim() < 1)
        throw std::invalid_argument("rank 0");
      s.constants = {indexConstant({uniform(1, 4)}, t.size(0))};
      Ints shape = t.sizes().vec();
      shape[0] = p_.constants.back().size(0);
      std::vector<int> ok;
      for (int j = 0; j < int(vals_.size()); ++j)
        try {
          if (at::infer_size(shape, vals_[j].sizes()) == shape)
            ok.push_back(j);
        } catch (const std::exception &) {
        }
      if (ok.empty())
        throw std::invalid_argument("no operand");
      s.args.push_back(pick(ok));
    }
  }
  return s;
}

Input Generator::input() {
  Input in;
  const int64_t rank = uniform(0, 4);
  Ints s = shape(rank);
  const at::ScalarType dt = dtype();
  double r = std::uniform_real_distribution<double>(0, 1)(rng_);
  if (rank >= 2 && r < 0.2) {
    in.layout = Layout::Transposed; // stored with dims `dim` and last swapped
    in.dim = uniform(0, rank - 2);
    std::swap(s[in.dim], s[rank - 1]);
  } else if (rank >= 1 && r < 0.35) {
    in.layout = Layout::Strided; // every other element of the last dim
    in.dim = rank - 1;
    s[rank - 1] *= 2;
  } else if (rank >= 1 && r < 0.45) {
    in.layout = Layout::Expanded; // dim `dim` has stride 0
    in.dim = uniform(0, rank - 1);
    s[in.dim] = 1;
  } else if (rank == 4 && r < 0.55) {
    in.layout = Layout::ChannelsLast;
  }
  in.base = random(s, dt);
  if (in.layout == Layout::Expanded)
    in.expandTo = uniform(2, 5);
  return in;
}

Program Generator::run() {
  torch::manual_seed(p_.seed);
  for (int i = 0; i < kInputs; ++i) {
    p_.inputs.push_back(input());
    vals_.push_back(p_.inputs.back().make());
  }
  const int64_t want = uniform(1, 10);
  for (int attempt = 0; attempt < 300 && int64_t(p_.steps.size()) < want; ++attempt) {
    const size_t constants = p_.constants.size();
    try {
      Step s = step();
      Tensor t = applyStep(p_, s, vals_);
      if (t.numel() > kMaxNumel || t.dim() > kMaxRank)
        throw std::invalid_argument("too big");
      // A step whose result jumps (floor, a comparison, an argmax) on a
      // computed half-precision value turns a rounding difference of one
      // unit into a different answer: keep those to exact operands.
      if (discontinuous(s) && std::any_of(s.args.begin(), s.args.end(), [&](int id) {
            at::ScalarType t = vals_[id].scalar_type();
            return id >= kInputs && (t == at::kBFloat16 || t == at::kHalf);
          }))
        throw std::invalid_argument("jump on a rounded value");
      // A float outside an integer type's range converts to an undefined
      // value (C++ and ATen alike): no program depends on one.
      const Tensor &from = vals_[s.args[0]];
      if (s.kind == Kind::Cast && at::isFloatingType(from.scalar_type()) &&
          at::isIntegralType(s.dtype, /*includeBool=*/false) && from.numel() > 0 &&
          !(at::isfinite(from).all().item<bool>() &&
            from.abs().max().item<double>() < 2147483647.0))
        throw std::invalid_argument("out of the integer range");
      p_.steps.push_back(std::move(s));
      vals_.push_back(t);
    } catch (const std::exception &) {
      p_.constants.resize(constants);
    }
  }
  // The last value, and sometimes one or two others.
  const int n = vals_.size();
  p_.outputs = {n - 1};
  for (int extra = uniform(0, 2); extra > 0; --extra) {
    int id = uniform(kInputs, n - 1);
    if (std::find(p_.outputs.begin(), p_.outputs.end(), id) == p_.outputs.end())
      p_.outputs.push_back(id);
  }
  return p_;
}

} // namespace

at::Tensor Input::make() const {
  Tensor t = widened(base).clone();
  switch (layout) {
  case Layout::Contiguous: return t;
  case Layout::Transposed: return t.transpose(dim, t.dim() - 1);
  case Layout::Strided: return t.slice(t.dim() - 1, 0, std::nullopt, 2);
  case Layout::Expanded: {
    Ints sizes = t.sizes().vec();
    sizes[dim] = expandTo;
    return t.expand(sizes);
  }
  case Layout::ChannelsLast: return t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return t;
}

Program generate(uint64_t seed) { return Generator(seed).run(); }

std::vector<at::Tensor> makeInputs(const Program &p) {
  std::vector<at::Tensor> out;
  for (const Input &in : p.inputs)
    out.push_back(in.make());
  return out;
}

std::vector<at::Tensor> run(const Program &p, const std::vector<at::Tensor> &inputs) {
  std::vector<Tensor> vals = inputs;
  for (const Step &s : p.steps)
    vals.push_back(applyStep(p, s, vals));
  std::vector<Tensor> out;
  for (int id : p.outputs)
    out.push_back(vals.at(id));
  return out;
}

Reference reference(const Program &p) {
  struct Fp64 {
    caffe2::TypeMeta before = c10::get_default_dtype();
    Fp64() {
      gFp64 = true;
      c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
    }
    ~Fp64() {
      gFp64 = false;
      c10::set_default_dtype(before);
    }
  } fp64;
  Reference r;
  r.inputs = makeInputs(p);
  r.outputs = run(p, r.inputs);
  return r;
}

bool valid(const Program &p) {
  try {
    for (const Tensor &t : run(p, makeInputs(p)))
      if (t.numel() > kMaxNumel)
        return false;
    return true;
  } catch (const std::exception &) {
    return false;
  }
}

std::string describe(const Program &p) {
  std::ostringstream os;
  os << "// TGC_FUZZ_SEED=" << p.seed << " reruns the program this came from; random(shape, "
        "dtype): floats 2 * N(0, 1), integers in [-20, 20), bools 0/1\n";
  static const char *layouts[] = {"contiguous", "transposed", "every other element",
                                  "expanded", "channels-last"};
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Input &in = p.inputs[i];
    Tensor t = in.make();
    os << format("at::Tensor v{} = /* input, {} */ random({}, at::{}); // strides {}\n", i,
                      layouts[int(in.layout)], ints(t.sizes().vec()),
                      c10::toString(t.scalar_type()), ints(t.strides().vec()));
  }
  std::set<int> used;
  for (const Step &s : p.steps)
    used.insert(s.constants.begin(), s.constants.end());
  for (int c : used)
    os << format("at::Tensor c{} = {};\n", c, constantCode(p.constants[c]));
  for (size_t k = 0; k < p.steps.size(); ++k)
    os << format("at::Tensor v{} = {};\n", p.inputs.size() + k, stepCode(p, p.steps[k]));
  std::vector<std::string> outs;
  for (int id : p.outputs)
    outs.push_back(format("v{}", id));
  std::string list;
  for (size_t i = 0; i < outs.size(); ++i)
    list += (i ? ", " : "") + outs[i];
  os << "return {" << list << "};\n";
  return os.str();
}

namespace {

/// `p` without step `k`: uses of its value read its first argument instead
/// (later ids shift down by one). Invalid programs are caught by the caller.
Program withoutStep(const Program &p, size_t k) {
  Program q = p;
  const int id = p.inputs.size() + k;
  const int replacement = p.steps[k].args.at(0);
  q.steps.erase(q.steps.begin() + k);
  auto remap = [&](int v) { return v == id ? replacement : v > id ? v - 1 : v; };
  for (Step &s : q.steps)
    for (int &a : s.args)
      a = remap(a);
  for (int &o : q.outputs)
    o = remap(o);
  std::vector<int> outs;
  for (int o : q.outputs)
    if (std::find(outs.begin(), outs.end(), o) == outs.end())
      outs.push_back(o);
  q.outputs = outs;
  return q;
}

} // namespace

Program shrink(const Program &p, const std::function<bool(const Program &)> &fails) {
  Program best = p;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = 0; i < best.outputs.size() && best.outputs.size() > 1; ++i) {
      Program q = best;
      q.outputs.erase(q.outputs.begin() + i);
      if (valid(q) && fails(q)) {
        best = q;
        progress = true;
        --i;
      }
    }
    for (size_t k = best.steps.size(); k-- > 0;) {
      Program q = withoutStep(best, k);
      if (valid(q) && fails(q)) {
        best = q;
        progress = true;
      }
    }
  }
  return best;
}

Tolerance toleranceFor(at::ScalarType dt) {
  switch (dt) {
  case at::kDouble: return {1e-9, 1e-9};
  case at::kFloat: return {1e-4, 1e-4};
  case at::kBFloat16: case at::kHalf: return {4e-2, 4e-2};
  default: return {0, 0};
  }
}

std::string compare(const at::Tensor &got, const at::Tensor &want, const at::Tensor &exact) {
  if (got.scalar_type() != want.scalar_type())
    return format("dtype {} instead of {}", c10::toString(got.scalar_type()),
                       c10::toString(want.scalar_type()));
  if (got.sizes() != want.sizes())
    return format("sizes {} instead of {}", ints(got.sizes().vec()), ints(want.sizes().vec()));
  if (want.numel() == 0)
    return "";
  if (!at::isFloatingType(want.scalar_type())) {
    Tensor diff = at::ne(got, want);
    if (!diff.any().item<bool>())
      return "";
    return format("{} of {} elements differ (exact dtype {})", diff.sum().item<int64_t>(),
                       want.numel(), c10::toString(want.scalar_type()));
  }
  // Errors scale with the magnitudes involved: atol grows with the largest
  // finite value eager produced.
  Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  Tensor finite = at::isfinite(w);
  const double scale = finite.any().item<bool>() ? w.masked_select(finite).abs().max().item<double>() : 0;
  const Tolerance tol = toleranceFor(want.scalar_type());
  Tensor close = at::isclose(g, w, tol.rtol, tol.atol * (1 + scale), /*equal_nan=*/true);
  if (close.all().item<bool>())
    return "";
  // Where eager itself is far from the float64 result (rounding amplified
  // by an ill-conditioned op, a half-precision intermediate), tgc may be as
  // far: it passes when its error from float64 is within three times
  // eager's (as PyTorch's own compiler accuracy checks do).
  if (exact.defined() && exact.sizes() == want.sizes()) {
    Tensor x = exact.to(at::kDouble);
    Tensor within = (g - x).abs() <= 3 * (w - x).abs() + tol.atol * (1 + scale);
    close = at::logical_or(close, at::logical_and(within, at::isfinite(g) == at::isfinite(w)));
    if (close.all().item<bool>())
      return "";
  }
  Tensor bad = at::logical_not(close);
  const int64_t first = bad.flatten().nonzero().min().item<int64_t>();
  return format("{} of {} elements differ beyond rtol {} atol {}; first at flat index {}: "
                     "{} instead of {}",
                     bad.sum().item<int64_t>(), want.numel(), tol.rtol, tol.atol * (1 + scale), first,
                     g.flatten()[first].item<double>(), w.flatten()[first].item<double>());
}

} // namespace tgc::fuzz
