//===- Decompose.cpp - composite tg ops into primitive ones ---------------===//
//
// One rewrite pattern per composite op (gelu, silu, softmax, layer_norm,
// batch_norm, pow by a small constant exponent), each with its lit case in
// tests/lit/passes/decompose.mlir.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// layer_norm over the last `count` dims, n elements per row:
/// mean = sum(x) / n, xc = x - mean, var = sum(xc * xc) / n,
/// rstd = rsqrt(var + epsilon), result = xc * rstd (* weight) (+ bias).
struct DecomposeLayerNorm : OpRewritePattern<tg::LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tg::LayerNormOp ln, PatternRewriter &b) const override {
    Location loc = ln.getLoc();
    auto t = cast<RankedTensorType>(ln.getInput().getType());
    auto rt = cast<RankedTensorType>(ln.getMean().getType());
    int64_t count = ln.getCount();
    double n = 1;
    for (int64_t d = t.getRank() - count; d < t.getRank(); ++d)
      n *= t.getDimSize(d);
    auto sum = [&](Value v) -> Value {
      return b.create<tg::ReduceOp>(loc, rt, v, b.getStringAttr("sum"), b.getI64IntegerAttr(count));
    };
    auto overRow = [&](Value row) -> Value {
      return rt == t ? row : b.create<tg::BroadcastOp>(loc, t, row);
    };
    Value x = ln.getInput();
    Value mean = b.create<tg::DivOp>(loc, rt, sum(x), splat(b, loc, rt, n));
    Value xc = b.create<tg::SubOp>(loc, t, x, overRow(mean));
    Value var =
        b.create<tg::DivOp>(loc, rt, sum(b.create<tg::MulOp>(loc, t, xc, xc)), splat(b, loc, rt, n));
    Value rstd = b.create<tg::RsqrtOp>(
        loc, rt, b.create<tg::AddOp>(loc, rt, var, splat(b, loc, rt, ln.getEpsilon().convertToDouble())));
    Value y = scaleAndShift(b, loc, b.create<tg::MulOp>(loc, t, xc, overRow(rstd)),
                            ln.getWeight(), ln.getBias());
    SmallVector<Value> results{y, mean, rstd};
    replaceComposite(b, ln, results);
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
                 DecomposeBatchNorm, DecomposePow>(&getContext());
    GreedyRewriteConfig config;
    config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    eraseDeadLayoutOps(getOperation());
  }
};

} // namespace
