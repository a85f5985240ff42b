//===- Decompose.cpp - composite tg ops into primitive ones ---------------===//
//
// One rewrite pattern per composite op (gelu, silu, softmax, layer_norm,
// batch_norm in eval and training form, moments (var/std), logsumexp,
// vector_norm, pow by a small constant exponent), each with its lit case in
// tests/lit/passes/decompose.mlir.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace tgc {
#define GEN_PASS_DEF_DECOMPOSE
#include "passes/Passes.h.inc"
} // namespace tgc

using namespace mlir;
using namespace tgc;

namespace {

/// A splat constant behind broadcasts, as a double.
std::optional<double> splatNumber(Value v) {
  Value root = throughLayout(v);
  auto c = root.getDefiningOp<tg::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(dense.getSplatValue<Attribute>()))
    return f.getValueAsDouble();
  return std::nullopt;
}

/// A 0-d constant `v` broadcast to `t` (float element type).
Value splat(OpBuilder &b, Location loc, RankedTensorType t, double v) {
  auto t0 = RankedTensorType::get({}, t.getElementType());
  Value c = b.create<tg::ConstantOp>(
      loc, DenseElementsAttr::get(t0, b.getFloatAttr(t.getElementType(), v)));
  return b.create<tg::BroadcastOp>(loc, t, c);
}

/// Replaces composite `op` with `results`; the last op of the first
/// result's decomposition inherits the layout import gave that result
/// (`tg.strides`, eager's).
void replaceComposite(PatternRewriter &b, Operation *op, ValueRange results) {
  if (Attribute strides = op->getAttr("tg.strides"))
    if (Operation *def = results.front().getDefiningOp(); def && !def->hasAttr("tg.strides"))
      def->setAttr("tg.strides", strides);
  b.replaceOp(op, results);
}
void replaceComposite(PatternRewriter &b, Operation *op, Value r) {
  replaceComposite(b, op, ValueRange(r));
}

/// gelu(x) = 0.5 x (1 + erf(x / sqrt(2))), or with approximate = "tanh"
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct DecomposeGelu : OpRewritePattern<tg::GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::GeluOp g, PatternRewriter &b) const override {
    Location loc = g.getLoc();
    auto t = cast<RankedTensorType>(g.getType());
    Value x = g.getInput();
    Value inner;
    if (g.getApproximate() == "tanh") {
      Value x3 = b.create<tg::MulOp>(loc, t, x, b.create<tg::MulOp>(loc, t, x, x));
      Value poly = b.create<tg::AddOp>(loc, t, x,
                                       b.create<tg::MulOp>(loc, t, x3, splat(b, loc, t, 0.044715)));
      inner = b.create<tg::TanhOp>(
          loc, t, b.create<tg::MulOp>(loc, t, poly, splat(b, loc, t, std::sqrt(2.0 / M_PI))));
    } else {
      inner = b.create<tg::ErfOp>(loc, t, b.create<tg::MulOp>(loc, t, x, splat(b, loc, t, M_SQRT1_2)));
    }
    Value hx = b.create<tg::MulOp>(loc, t, x, splat(b, loc, t, 0.5));
    replaceComposite(b, g,
                     b.create<tg::MulOp>(loc, t, hx,
                                         b.create<tg::AddOp>(loc, t, inner, splat(b, loc, t, 1.0))));
    return success();
  }
};

/// silu(x) = x * sigmoid(x).
struct DecomposeSilu : OpRewritePattern<tg::SiluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::SiluOp s, PatternRewriter &b) const override {
    Value x = s.getInput();
    Value sig = b.create<tg::SigmoidOp>(s.getLoc(), s.getType(), x);
    replaceComposite(b, s, b.create<tg::MulOp>(s.getLoc(), s.getType(), x, sig));
    return success();
  }
};

/// softmax(x) = e / sum(e) with e = exp(x - max(x)) over the last dim;
/// log_softmax(x) = (x - max(x)) - log(sum(e)).
struct DecomposeSoftmax : OpRewritePattern<tg::SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::SoftmaxOp s, PatternRewriter &b) const override {
    Location loc = s.getLoc();
    auto t = cast<RankedTensorType>(s.getType());
    SmallVector<int64_t> kept(t.getShape());
    kept.back() = 1;
    auto rowType = RankedTensorType::get(kept, t.getElementType());
    auto reduce = [&](Value v, StringRef kind) -> Value {
      Value r = b.create<tg::ReduceOp>(loc, rowType, v, b.getStringAttr(kind), b.getI64IntegerAttr(1));
      return b.create<tg::BroadcastOp>(loc, t, r);
    };
    Value x = s.getInput();
    Value shifted = b.create<tg::SubOp>(loc, t, x, reduce(x, "max"));
    Value e = b.create<tg::ExpOp>(loc, t, shifted);
    Value sum = reduce(e, "sum");
    Value r = s.getLog() ? Value(b.create<tg::SubOp>(loc, t, shifted, b.create<tg::LogOp>(loc, t, sum)))
                         : Value(b.create<tg::DivOp>(loc, t, e, sum));
    replaceComposite(b, s, r);
    return success();
  }
};

/// `y * weight + bias`, each step only when its operand is given.
Value scaleAndShift(PatternRewriter &b, Location loc, Value y, Value weight, Value bias) {
  Type t = y.getType();
  if (weight)
    y = b.create<tg::MulOp>(loc, t, y, weight);
  if (bias)
    y = b.create<tg::AddOp>(loc, t, y, bias);
  return y;
}

/// The reductions and row broadcasts of one row-statistics op: rows are the
/// last `count` dims of `t`, their statistics typed `rt` (those dims as 1s).
struct Rows {
  PatternRewriter &b;
  Location loc;
  RankedTensorType t, rt;
  int64_t count;

  Rows(PatternRewriter &b, Location loc, Value input, int64_t count)
      : b(b), loc(loc), t(cast<RankedTensorType>(input.getType())), count(count) {
    SmallVector<int64_t> kept(t.getShape());
    std::fill(kept.end() - count, kept.end(), 1);
    rt = RankedTensorType::get(kept, t.getElementType());
  }
  /// Elements per row.
  double size() const {
    double n = 1;
    for (int64_t d = t.getRank() - count; d < t.getRank(); ++d)
      n *= t.getDimSize(d);
    return n;
  }
  Value reduce(Value v, StringRef kind) {
    auto vt = cast<RankedTensorType>(v.getType());
    auto to = RankedTensorType::get(rt.getShape(), vt.getElementType());
    return b.create<tg::ReduceOp>(loc, to, v, b.getStringAttr(kind), b.getI64IntegerAttr(count));
  }
  /// A row value over its row.
  Value overRow(Value row) { return rt == t ? row : b.create<tg::BroadcastOp>(loc, t, row); }
  Value divide(Value row, double n) { return b.create<tg::DivOp>(loc, rt, row, splat(b, loc, rt, n)); }
};

/// mean = sum(x) / n, xc = x - mean and the centered sum of squares
/// sum(xc * xc): what var, std, layer_norm and training batch norm share.
struct Centered {
  Value mean, xc, squares;
};
Centered center(Rows &r, Value x) {
  Value n = splat(r.b, r.loc, r.rt, r.size());
  Value mean = r.b.create<tg::DivOp>(r.loc, r.rt, r.reduce(x, "sum"), n);
  Value xc = r.b.create<tg::SubOp>(r.loc, r.t, x, r.overRow(mean));
  return {mean, xc, r.reduce(r.b.create<tg::MulOp>(r.loc, r.t, xc, xc), "sum")};
}

/// Normalization over rows with biased statistics: var = squares / n,
/// rstd = rsqrt(var + epsilon), result = xc * rstd (* weight) (+ bias).
/// Returns {result, mean, rstd, var}.
std::array<Value, 4> normalize(Rows &r, Value x, Value weight, Value bias, double epsilon) {
  Centered c = center(r, x);
  Value var = r.divide(c.squares, r.size());
  Value rstd = r.b.create<tg::RsqrtOp>(
      r.loc, r.rt, r.b.create<tg::AddOp>(r.loc, r.rt, var, splat(r.b, r.loc, r.rt, epsilon)));
  Value y = scaleAndShift(r.b, r.loc, r.b.create<tg::MulOp>(r.loc, r.t, c.xc, r.overRow(rstd)),
                          weight, bias);
  return {y, c.mean, rstd, var};
}

/// layer_norm over the last `count` dims: normalize(), its rstd named so.
struct DecomposeLayerNorm : OpRewritePattern<tg::LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::LayerNormOp ln, PatternRewriter &b) const override {
    Rows r(b, ln.getLoc(), ln.getInput(), ln.getCount());
    auto [y, mean, rstd, var] = normalize(r, ln.getInput(), ln.getWeight(), ln.getBias(),
                                          ln.getEpsilon().convertToDouble());
    SmallVector<Value> results{y, mean, rstd};
    replaceComposite(b, ln, results);
    return success();
  }
};

/// Training batch norm in row space (a channel per row): normalize(), with
/// the biased variance as a fourth result.
struct DecomposeBatchNormTraining : OpRewritePattern<tg::BatchNormTrainingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::BatchNormTrainingOp bn, PatternRewriter &b) const override {
    Rows r(b, bn.getLoc(), bn.getInput(), bn.getCount());
    auto [y, mean, invstd, var] = normalize(r, bn.getInput(), bn.getWeight(), bn.getBias(),
                                            bn.getEpsilon().convertToDouble());
    SmallVector<Value> results{y, mean, invstd, var};
    replaceComposite(b, bn, results);
    return success();
  }
};

/// var = squares / max(0, n - correction), its sqrt for std; and the mean.
struct DecomposeMoments : OpRewritePattern<tg::MomentsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::MomentsOp m, PatternRewriter &b) const override {
    Rows r(b, m.getLoc(), m.getInput(), m.getCount());
    Centered c = center(r, m.getInput());
    Value var = r.divide(c.squares, std::max(0.0, r.size() - m.getCorrection().convertToDouble()));
    if (m.getStd())
      var = b.create<tg::SqrtOp>(m.getLoc(), r.rt, var);
    SmallVector<Value> results{var, c.mean};
    replaceComposite(b, m, results);
    return success();
  }
};

/// logsumexp = log(sum(exp(x - m))) + m, m the row maximum or 0 where that
/// is infinite (inf - inf would be NaN; ATen shifts by 0 there).
struct DecomposeLogSumExp : OpRewritePattern<tg::LogSumExpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::LogSumExpOp l, PatternRewriter &b) const override {
    Location loc = l.getLoc();
    Rows r(b, loc, l.getInput(), l.getCount());
    Value x = l.getInput();
    Value m = r.reduce(x, "max");
    auto i1 = RankedTensorType::get(r.rt.getShape(), b.getI1Type());
    Value isInf = b.create<tg::CompareOp>(loc, i1, b.create<tg::AbsOp>(loc, r.rt, m),
                                          splat(b, loc, r.rt, INFINITY), b.getStringAttr("eq"));
    m = b.create<tg::SelectOp>(loc, r.rt, isInf, splat(b, loc, r.rt, 0), m);
    Value e = b.create<tg::ExpOp>(loc, r.t, b.create<tg::SubOp>(loc, r.t, x, r.overRow(m)));
    replaceComposite(b, l,
                     b.create<tg::AddOp>(loc, r.rt, b.create<tg::LogOp>(loc, r.rt, r.reduce(e, "sum")), m));
    return success();
  }
};

/// The p-norm of each row from |x|: max / min for p = +-inf, the count of
/// nonzeros for 0, the sum for 1, sqrt of the sum of squares for 2, and
/// sum(|x|^p)^(1/p) otherwise.
struct DecomposeVectorNorm : OpRewritePattern<tg::VectorNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::VectorNormOp n, PatternRewriter &b) const override {
    Location loc = n.getLoc();
    Rows r(b, loc, n.getInput(), n.getCount());
    double p = n.getOrd().convertToDouble();
    Value a = b.create<tg::AbsOp>(loc, r.t, n.getInput());
    Value v;
    if (std::isinf(p)) {
      v = r.reduce(a, p > 0 ? "max" : "min");
    } else if (p == 0) {
      auto i1 = RankedTensorType::get(r.t.getShape(), b.getI1Type());
      Value nz = b.create<tg::CompareOp>(loc, i1, a, splat(b, loc, r.t, 0), b.getStringAttr("ne"));
      v = r.reduce(b.create<tg::CastOp>(loc, r.t, nz), "sum");
    } else if (p == 1) {
      v = r.reduce(a, "sum");
    } else if (p == 2) {
      v = b.create<tg::SqrtOp>(loc, r.rt, r.reduce(b.create<tg::MulOp>(loc, r.t, a, a), "sum"));
    } else {
      Value s = r.reduce(b.create<tg::PowOp>(loc, r.t, a, splat(b, loc, r.t, p)), "sum");
      v = b.create<tg::PowOp>(loc, r.rt, s, splat(b, loc, r.rt, 1.0 / p));
    }
    replaceComposite(b, n, v);
    return success();
  }
};

/// batch_norm with given statistics, its operands broadcast to the input:
/// (x - mean) * rsqrt(var + epsilon) (* weight) (+ bias). The rsqrt is per
/// element rather than per channel: one more vector op per element, one
/// kernel launch and buffer fewer.
struct DecomposeBatchNorm : OpRewritePattern<tg::BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::BatchNormOp bn, PatternRewriter &b) const override {
    Location loc = bn.getLoc();
    auto t = cast<RankedTensorType>(bn.getType());
    Value invstd = b.create<tg::RsqrtOp>(
        loc, t,
        b.create<tg::AddOp>(loc, t, bn.getVar(),
                            splat(b, loc, t, bn.getEpsilon().convertToDouble())));
    Value y = b.create<tg::MulOp>(loc, t, b.create<tg::SubOp>(loc, t, bn.getInput(), bn.getMean()),
                                  invstd);
    replaceComposite(b, bn, scaleAndShift(b, loc, y, bn.getWeight(), bn.getBias()));
    return success();
  }
};

/// pow by a splat constant exponent of 1, 2, 3, 0.5, -0.5 or -1 becomes
/// multiplications, sqrt, rsqrt or a division; other exponents stay pow.
struct DecomposePow : OpRewritePattern<tg::PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::PowOp p, PatternRewriter &b) const override {
    std::optional<double> e = splatNumber(p.getRhs());
    if (!e)
      return failure();
    Location loc = p.getLoc();
    auto t = cast<RankedTensorType>(p.getType());
    Value x = p.getLhs();
    Value r;
    if (*e == 1.0)
      r = x;
    else if (*e == 2.0)
      r = b.create<tg::MulOp>(loc, t, x, x);
    else if (*e == 3.0)
      r = b.create<tg::MulOp>(loc, t, x, b.create<tg::MulOp>(loc, t, x, x));
    else if (*e == 0.5)
      r = b.create<tg::SqrtOp>(loc, t, x);
    else if (*e == -0.5)
      r = b.create<tg::RsqrtOp>(loc, t, x);
    else if (*e == -1.0)
      r = b.create<tg::DivOp>(loc, t, splat(b, loc, t, 1.0), x);
    else
      return failure(); // powf keeps the general case exact
    replaceComposite(b, p, r);
    return success();
  }
};

struct DecomposePass : public tgc::impl::DecomposeBase<DecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeGelu, DecomposeSilu, DecomposeSoftmax, DecomposeLayerNorm,
                 DecomposeBatchNorm, DecomposeBatchNormTraining, DecomposeMoments,
                 DecomposeLogSumExp, DecomposeVectorNorm, DecomposePow>(&getContext());
    GreedyRewriteConfig config;
    config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    eraseDeadLayoutOps(getOperation());
  }
};

} // namespace
