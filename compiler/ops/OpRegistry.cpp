//===- OpRegistry.cpp - the table of ATen ops tgc knows -------------------===//
#include "compiler/ops/OpRegistry.h"

#include <unordered_map>

namespace tgc::ops {

namespace {

using L = Lowering;

constexpr OpInfo row(const char *name, Lowering l, const char *variant = "") {
  OpInfo r{name};
  r.lowering = l;
  r.variant = variant;
  return r;
}
/// A tg pointwise op with `arity` tensor operands; cheap to recompute.
constexpr OpInfo pointwise(const char *name, const char *tgOp, int arity) {
  OpInfo r = row(name, L::Pointwise, tgOp).cheap();
  r.arity = arity;
  return r;
}
/// Facts only: the op runs through ATen.
constexpr OpInfo fact(const char *name) { return row(name, L::Extern); }
constexpr OpInfo hostRead(const char *name) {
  OpInfo r = fact(name);
  r.host = HostUse::ReadsValue;
  return r;
}
constexpr OpInfo dataDependent(const char *name) {
  OpInfo r = fact(name);
  r.host = HostUse::DataDependentShape;
  return r;
}

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> rows = {
      // --- Pointwise arithmetic ------------------------------------------
      row("aten::add.Tensor", L::PointwiseAlpha, "tg.add").cheap(),
      row("aten::add.Scalar", L::PointwiseAlpha, "tg.add").cheap(),
      row("aten::sub.Tensor", L::PointwiseAlpha, "tg.sub").cheap(),
      row("aten::sub.Scalar", L::PointwiseAlpha, "tg.sub").cheap(),
      fact("aten::add").cheap(),
      fact("aten::sub").cheap(),
      pointwise("aten::mul.Tensor", "tg.mul", 2),
      pointwise("aten::mul.Scalar", "tg.mul", 2),
      fact("aten::mul").cheap(),
      pointwise("aten::div.Tensor", "tg.div", 2).note("true division"),
      pointwise("aten::div.Scalar", "tg.div", 2),
      fact("aten::div").cheap(),
      pointwise("aten::maximum", "tg.maximum", 2),
      pointwise("aten::minimum", "tg.minimum", 2),
      pointwise("aten::pow.Tensor_Tensor", "tg.pow", 2),
      row("aten::pow.Tensor_Scalar", L::PowScalar).cheap().floats(),
      fact("aten::pow").cheap(),
      // --- Pointwise unary -------------------------------------------------
      pointwise("aten::relu", "tg.relu", 1),
      pointwise("aten::neg", "tg.neg", 1),
      pointwise("aten::exp", "tg.exp", 1),
      pointwise("aten::log", "tg.log", 1),
      pointwise("aten::tanh", "tg.tanh", 1),
      pointwise("aten::sigmoid", "tg.sigmoid", 1),
      pointwise("aten::sqrt", "tg.sqrt", 1),
      pointwise("aten::rsqrt", "tg.rsqrt", 1),
      pointwise("aten::abs", "tg.abs", 1),
      pointwise("aten::erf", "tg.erf", 1),
      pointwise("aten::log1p", "tg.log1p", 1),
      pointwise("aten::expm1", "tg.expm1", 1),
      pointwise("aten::sin", "tg.sin", 1),
      pointwise("aten::cos", "tg.cos", 1),
      pointwise("aten::floor", "tg.floor", 1).floats().note("on integers an ATen call (identity)"),
      pointwise("aten::ceil", "tg.ceil", 1).floats().note("on integers an ATen call (identity)"),
      pointwise("aten::round", "tg.round", 1).floats().note("ties to even"),
      pointwise("aten::trunc", "tg.trunc", 1).floats(),
      pointwise("aten::fmod.Tensor", "tg.rem", 2).floats()
          .note("integer fmod is an ATen call (it raises on a zero divisor)"),
      pointwise("aten::fmod.Scalar", "tg.rem", 2).floats(),
      fact("aten::sign").cheap(),
      // --- Bitwise and logical ---------------------------------------------
      pointwise("aten::bitwise_and.Tensor", "tg.and", 2),
      pointwise("aten::bitwise_and.Scalar", "tg.and", 2),
      pointwise("aten::bitwise_or.Tensor", "tg.or", 2),
      pointwise("aten::bitwise_or.Scalar", "tg.or", 2),
      pointwise("aten::bitwise_xor.Tensor", "tg.xor", 2),
      pointwise("aten::bitwise_xor.Scalar", "tg.xor", 2),
      pointwise("aten::bitwise_left_shift.Tensor", "tg.shl", 2)
          .note("shifts past the bit width follow ATen (0, or the sign)"),
      pointwise("aten::bitwise_left_shift.Tensor_Scalar", "tg.shl", 2),
      pointwise("aten::bitwise_right_shift.Tensor", "tg.shr", 2),
      pointwise("aten::bitwise_right_shift.Tensor_Scalar", "tg.shr", 2),
      pointwise("aten::__lshift__.Tensor", "tg.shl", 2),
      pointwise("aten::__lshift__.Scalar", "tg.shl", 2),
      pointwise("aten::__rshift__.Tensor", "tg.shr", 2),
      pointwise("aten::__rshift__.Scalar", "tg.shr", 2),
      pointwise("aten::logical_and", "tg.and", 2).note("operands cast to bool (x != 0) first"),
      pointwise("aten::logical_or", "tg.or", 2),
      pointwise("aten::logical_xor", "tg.xor", 2),
      row("aten::logical_not", L::LogicalNot).cheap(),
      row("aten::bitwise_not", L::BitwiseNot),
      // --- Activations -----------------------------------------------------
      row("aten::gelu", L::Gelu).cheap().floats().note("approximate = none or tanh"),
      pointwise("aten::silu", "tg.silu", 1).floats().note("decomposed by `tg-decompose`"),
      row("aten::clamp", L::Clamp, "both").cheap().floats(),
      row("aten::clamp_min", L::Clamp, "lo").cheap().floats(),
      row("aten::clamp_max", L::Clamp, "hi").cheap().floats(),
      row("aten::hardtanh", L::Clamp, "both").cheap().floats(),
      row("aten::reciprocal", L::Reciprocal).cheap().floats(),
      row("aten::leaky_relu", L::LeakyRelu).cheap().floats(),
      row("aten::softplus", L::Softplus).cheap().floats().note("beta, threshold"),
      row("aten::mish", L::Mish).cheap().floats(),
      row("aten::hardsigmoid", L::HardSigmoid).cheap().floats(),
      row("aten::hardswish", L::HardSwish).cheap().floats(),
      row("aten::remainder.Tensor", L::Remainder).floats().note("integer remainder: ATen call"),
      row("aten::remainder.Scalar", L::Remainder).floats(),
      // --- Comparisons and selection ---------------------------------------
      row("aten::eq.Tensor", L::Compare, "eq").cheap(), row("aten::eq.Scalar", L::Compare, "eq").cheap(),
      row("aten::ne.Tensor", L::Compare, "ne").cheap(), row("aten::ne.Scalar", L::Compare, "ne").cheap(),
      row("aten::lt.Tensor", L::Compare, "lt").cheap(), row("aten::lt.Scalar", L::Compare, "lt").cheap(),
      row("aten::le.Tensor", L::Compare, "le").cheap(), row("aten::le.Scalar", L::Compare, "le").cheap(),
      row("aten::gt.Tensor", L::Compare, "gt").cheap(), row("aten::gt.Scalar", L::Compare, "gt").cheap(),
      row("aten::ge.Tensor", L::Compare, "ge").cheap(), row("aten::ge.Scalar", L::Compare, "ge").cheap(),
      fact("aten::eq").cheap(), fact("aten::ne").cheap(), fact("aten::lt").cheap(),
      fact("aten::le").cheap(), fact("aten::gt").cheap(), fact("aten::ge").cheap(),
      row("aten::where.self", L::Where).cheap(),
      fact("aten::where").cheap(),
      row("aten::masked_fill.Scalar", L::MaskedFill).cheap(),
      row("aten::masked_fill.Tensor", L::MaskedFill).cheap(),
      fact("aten::masked_fill").cheap(),
      // --- Casts, copies and factories -------------------------------------
      row("aten::_to_copy", L::Cast).cheap(),
      row("aten::clone", L::Clone).cheap().note("contiguous clone"),
      fact("aten::fill").cheap(),
      fact("aten::zeros_like").cheap(),
      fact("aten::ones_like").cheap(),
      fact("aten::full_like").cheap(),
      fact("aten::scalar_tensor").cheap(),
      row("aten::ones", L::Fill, "1").cheap(),
      row("aten::zeros", L::Fill, "0").cheap(),
      row("aten::full", L::Fill).cheap(),
      row("aten::arange", L::Arange).cheap(),
      row("aten::arange.start", L::Arange, "start").cheap(),
      row("aten::arange.start_step", L::Arange, "start_step").cheap(),
      row("aten::triu", L::Triangle, "ge").cheap(),
      row("aten::tril", L::Triangle, "le").cheap(),
      row("aten::empty", L::Allocation),
      row("aten::empty_like", L::Allocation),
      row("aten::empty_strided", L::Allocation),
      row("aten::new_empty", L::Allocation),
      // --- Views and layout ------------------------------------------------
      row("aten::view", L::Reshape).cheap().view(),
      row("aten::_unsafe_view", L::Reshape).cheap().view(),
      row("aten::reshape", L::Reshape).cheap().view(),
      row("aten::_reshape_alias", L::Reshape).cheap().view(),
      row("aten::alias", L::Reshape).cheap().view(),
      row("aten::unsqueeze", L::Reshape).cheap().view(),
      row("aten::squeeze", L::Reshape).cheap().view(),
      row("aten::squeeze.dim", L::Reshape).cheap().view(),
      row("aten::squeeze.dims", L::Reshape).cheap().view(),
      row("aten::permute", L::Permute).cheap().view(),
      row("aten::transpose.int", L::Permute).cheap().view(),
      fact("aten::transpose").cheap().view(),
      row("aten::t", L::Permute).cheap().view(),
      row("aten::expand", L::Expand).cheap().view(),
      row("aten::slice.Tensor", L::Slice).cheap().view(),
      fact("aten::slice").cheap().view(),
      row("aten::select.int", L::Select).cheap().view(),
      fact("aten::select").cheap().view(),
      row("aten::flip", L::Flip),
      row("aten::split.Tensor", L::Split).cheap().part(),
      fact("aten::split").cheap().part(),
      row("aten::split_with_sizes", L::Split).cheap().part(),
      row("aten::unbind.int", L::Split, "unbind").cheap().part(),
      fact("aten::unbind").cheap().part(),
      row("aten::unsafe_split.Tensor", L::Split).part(),
      fact("aten::unsafe_split").part(),
      row("aten::unsafe_split_with_sizes", L::Split).part(),
      fact("aten::chunk").part(),
      fact("aten::unsafe_chunk").part(),
      fact("aten::detach").cheap().view(),
      fact("aten::lift_fresh").cheap().view(),
      fact("aten::as_strided").view(),
      fact("aten::diagonal").view(),
      fact("aten::unfold").view(),
      fact("aten::narrow").view(),
      fact("aten::view_as_real").view(),
      fact("aten::view_as_complex").view(),
      fact("aten::unflatten").view(),
      fact("aten::movedim").view(),
      fact("aten::swapaxes").view(),
      // --- Reductions and row ops -------------------------------------------
      row("aten::sum", L::ReduceAll, "sum"),
      row("aten::sum.dim_IntList", L::Reduce, "sum"),
      row("aten::mean", L::ReduceAll, "mean").floats(),
      row("aten::mean.dim", L::Reduce, "mean").floats(),
      row("aten::prod", L::ReduceAll, "prod"),
      row("aten::prod.dim_int", L::Reduce, "prod"),
      row("aten::amax", L::Reduce, "max"),
      row("aten::amin", L::Reduce, "min"),
      row("aten::argmax", L::ArgReduce, "argmax"),
      row("aten::argmin", L::ArgReduce, "argmin"),
      row("aten::max.dim", L::ReduceWithIndices, "max"),
      row("aten::min.dim", L::ReduceWithIndices, "min"),
      row("aten::var.correction", L::Moments, "var"),
      row("aten::std.correction", L::Moments, "std"),
      row("aten::var_mean.correction", L::Moments, "var"),
      row("aten::std_mean.correction", L::Moments, "std"),
      row("aten::logsumexp", L::LogSumExp).floats(),
      row("aten::linalg_vector_norm", L::VectorNorm).floats(),
      row("aten::norm.ScalarOpt_dim", L::VectorNorm).floats(),
      row("aten::norm.ScalarOpt_dim_dtype", L::VectorNorm).floats(),
      row("aten::norm.Scalar", L::VectorNorm, "all").floats(),
      row("aten::_softmax", L::Softmax, "softmax"),
      row("aten::_log_softmax", L::Softmax, "log_softmax"),
      fact("aten::native_layer_norm_backward").takesStats(0b11000),
      fact("aten::native_batch_norm_backward").takesStats(0b1100000),
      row("aten::native_layer_norm", L::LayerNorm).statsFloatOnCuda(0b110)
          .note("weight and bias optional"),
      row("aten::native_batch_norm", L::BatchNorm, "eval").statsFloatOnCuda(0b110),
      row("aten::_native_batch_norm_legit", L::BatchNorm).statsFloatOnCuda(0b110)
          .note("eval form: ATen call"),
      row("aten::_native_batch_norm_legit_no_training", L::BatchNormInference),
      row("aten::native_dropout", L::Dropout).note("training; the seed is drawn per call"),
      // --- Indexing ----------------------------------------------------------
      row("aten::embedding", L::Embedding),
      row("aten::index_select", L::IndexSelect),
      row("aten::gather", L::Gather),
      row("aten::index.Tensor", L::AdvancedIndex),
      row("aten::scatter_add", L::ScatterAdd),
      row("aten::cat", L::Concat).note("1-D empty pieces skipped (ATen's legacy rule)"),
      row("aten::stack", L::Concat, "stack"),
      row("aten::constant_pad_nd", L::ConstantPad),
      // --- In-place ops (functionalized where no other alias is live) --------
      row("aten::add_", L::InPlace), row("aten::sub_", L::InPlace), row("aten::mul_", L::InPlace),
      row("aten::div_", L::InPlace), row("aten::relu_", L::InPlace), row("aten::clamp_", L::InPlace),
      row("aten::clamp_min_", L::InPlace), row("aten::clamp_max_", L::InPlace),
      row("aten::masked_fill_", L::InPlace), row("aten::exp_", L::InPlace),
      row("aten::tanh_", L::InPlace), row("aten::sigmoid_", L::InPlace), row("aten::neg_", L::InPlace),
      row("aten::gelu_", L::InPlace), row("aten::silu_", L::InPlace), row("aten::hardtanh_", L::InPlace),
      row("aten::leaky_relu_", L::InPlace), row("aten::sqrt_", L::InPlace),
      row("aten::hardsigmoid_", L::InPlace), row("aten::hardswish_", L::InPlace),
      row("aten::rsqrt_", L::InPlace), row("aten::abs_", L::InPlace),
      row("aten::scatter_add_", L::InPlace),
      row("aten::bernoulli_", L::Bernoulli, "float").note("a float p and the default generator"),
      // --- Capture breaks ----------------------------------------------------
      hostRead("aten::_local_scalar_dense"),
      hostRead("aten::item"),
      hostRead("aten::is_nonzero"),
      hostRead("aten::equal").note("equal(x, x) on one traced value is predicted instead"),
      hostRead("aten::allclose"),
      dataDependent("aten::nonzero"),
      dataDependent("aten::nonzero_numpy"),
      dataDependent("aten::argwhere"),
      dataDependent("aten::unique"),
      dataDependent("aten::_unique"),
      dataDependent("aten::_unique2"),
      dataDependent("aten::unique_dim"),
      dataDependent("aten::unique_consecutive"),
      dataDependent("aten::unique_dim_consecutive"),
      dataDependent("aten::masked_select"),
      dataDependent("aten::repeat_interleave"),
      dataDependent("aten::bincount"),
  };
  return rows;
}

/// Rows by name, built once.
const std::unordered_map<std::string, const OpInfo *> &index() {
  static const std::unordered_map<std::string, const OpInfo *> byName = [] {
    std::unordered_map<std::string, const OpInfo *> m;
    for (const OpInfo &r : table())
      m.emplace(r.name, &r);
    return m;
  }();
  return byName;
}

const OpInfo *exactRow(const std::string &op, const std::string &overload) {
  auto it = index().find(overload.empty() ? op : op + "." + overload);
  return it == index().end() ? nullptr : it->second;
}

} // namespace

const std::vector<OpInfo> &allOps() { return table(); }

const OpInfo *find(const std::string &op, const std::string &overload) {
  if (const OpInfo *r = exactRow(op, overload))
    return r;
  return exactRow(op, "");
}

Lowering loweringOf(const std::string &op, const std::string &overload) {
  const OpInfo *r = exactRow(op, overload);
  return r ? r->lowering : Lowering::Extern;
}

namespace {
/// Field `field` of the op's row, or `none` when it has no row.
template <class T> T factOf(const std::string &op, const std::string &overload, T OpInfo::*field, T none) {
  const OpInfo *r = find(op, overload);
  return r ? r->*field : none;
}
} // namespace

Lowering opClassOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::lowering, Lowering::Extern);
}

Recompute recomputeOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::recompute, Recompute::Never);
}
HostUse hostUseOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::host, HostUse::None);
}
Alias aliasOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::alias, Alias::None);
}

uint8_t floatOnCudaOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::floatOnCuda, uint8_t(0));
}
uint16_t statsArgsOf(const std::string &op, const std::string &overload) {
  return factOf(op, overload, &OpInfo::statsArgs, uint16_t(0));
}

namespace {
struct LoweringText {
  const char *name, *column, *doc;
};
const LoweringText &textOf(Lowering l) {
  static const LoweringText texts[] = {
#define TGC_LOWERING_TEXT(name, column, doc) {#name, column, doc},
      TGC_LOWERINGS(TGC_LOWERING_TEXT)
#undef TGC_LOWERING_TEXT
  };
  return texts[static_cast<int>(l)];
}
} // namespace

const char *loweringName(Lowering l) { return textOf(l).name; }
const char *loweringColumn(Lowering l) { return textOf(l).column; }
const char *loweringDoc(Lowering l) { return textOf(l).doc; }

} // namespace tgc::ops
