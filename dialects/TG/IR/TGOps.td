//===- TGOps.td - the `tg` tensor graph dialect -----------*- tablegen -*-===//
//
// `tg` holds value-semantic tensor ops at roughly Core-ATen level. Import
// makes broadcasting and type promotion explicit, so every op here sees
// operands of one shape and one element type and the verifiers stay strict.
//
//===----------------------------------------------------------------------===//

#ifndef TG_OPS_TD
#define TG_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::tgc::tg";
  let summary = "Value-semantic tensor graph captured from ATen.";
  let description = [{
    The `tg` dialect is what capture imports into: one `func.func` per
    captured segment, over statically shaped ranked tensors. Pointwise ops
    implement `ScalarizableOpInterface` so fusion can rebuild them as scalar
    `arith`/`math` code inside a `tgk.kernel`; ops tgc does not lower itself
    stay `tg.extern` calls into ATen.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def TG_OperandRefAttr : AttrDef<TG_Dialect, "OperandRef"> {
  let mnemonic = "operand";
  let summary = "Marks an argument of a `tg.extern` call as its N-th tensor operand.";
  let parameters = (ins "int64_t":$index);
  let assemblyFormat = "`<` $index `>`";
}

def TG_DeviceAttr : AttrDef<TG_Dialect, "Device"> {
  let mnemonic = "device";
  let summary = "A torch device (`cpu`, `cuda:0`) passed to a `tg.extern` call.";
  let parameters = (ins StringRefParameter<"device string">:$name);
  let assemblyFormat = "`<` $name `>`";
}

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

def TG_ScalarizableOpInterface : OpInterface<"ScalarizableOpInterface"> {
  let cppNamespace = "::tgc::tg";
  let description = [{
    A pointwise op that can rebuild itself on scalars: given one scalar per
    operand (already of the operand's element type), build the `arith`/`math`
    ops computing one result element. Fusion uses this to form kernel bodies.
  }];
  let methods = [
    InterfaceMethod<"Builds the scalar computation of one result element.",
      "::mlir::Value", "buildScalar",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands)>
  ];
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic, traits>;

def TG_StaticTensor : StaticShapeTensorOf<[AnyType]>;

// Pointwise ops: same shape and element type for all operands and the result.
class TG_PointwiseOp<string mnemonic, int arity, list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
        SameOperandsAndResultType,
        DeclareOpInterfaceMethods<TG_ScalarizableOpInterface>])> {
  let hasVerifier = 1;
}

class TG_UnaryOp<string mnemonic, string desc> : TG_PointwiseOp<mnemonic, 1> {
  let summary = "elementwise " # desc;
  let description = "Computes " # desc # [{ of each element.

    ```mlir
    %y = tg.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

class TG_BinaryOp<string mnemonic, string desc> : TG_PointwiseOp<mnemonic, 2> {
  let summary = "elementwise " # desc;
  let description = "Computes " # desc # [{ elementwise. Operands were
    broadcast and promoted at import, so both have the result's type.

    ```mlir
    %z = tg.}] # mnemonic # [{ %x, %y : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$lhs, TG_StaticTensor:$rhs);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Pointwise ops
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_BinaryOp<"add", "addition">;
def TG_SubOp : TG_BinaryOp<"sub", "subtraction">;
def TG_MulOp : TG_BinaryOp<"mul", "multiplication">;
def TG_DivOp : TG_BinaryOp<"div", "true division">;
def TG_MaximumOp : TG_BinaryOp<"maximum", "the maximum (NaN-propagating)">;
def TG_MinimumOp : TG_BinaryOp<"minimum", "the minimum (NaN-propagating)">;

def TG_AndOp : TG_BinaryOp<"and", "bitwise and (logical and on i1); integers only">;
def TG_OrOp : TG_BinaryOp<"or", "bitwise or (logical or on i1); integers only">;
def TG_XorOp : TG_BinaryOp<"xor", "bitwise exclusive or (logical xor on i1); integers only">;
def TG_ShlOp : TG_BinaryOp<"shl",
    "lhs shifted left by rhs bits, 0 when rhs is negative or at least the bit width (ATen's rule); integers only">;
def TG_ShrOp : TG_BinaryOp<"shr",
    "lhs shifted right arithmetically by rhs bits, saturating to the sign when rhs is out of range (ATen's rule); integers only">;

def TG_NegOp : TG_UnaryOp<"neg", "the negation">;
def TG_FloorOp : TG_UnaryOp<"floor", "the largest integral value not above x">;
def TG_CeilOp : TG_UnaryOp<"ceil", "the smallest integral value not below x">;
def TG_RoundOp : TG_UnaryOp<"round", "the nearest integral value, ties to even (ATen's round)">;
def TG_TruncOp : TG_UnaryOp<"trunc", "the integral part, rounding toward zero">;
def TG_RemOp : TG_BinaryOp<"rem", "the C fmod remainder (sign of lhs); floats only">;
def TG_ReluOp : TG_UnaryOp<"relu", "max(x, 0) (NaN-propagating)">;
def TG_ExpOp : TG_UnaryOp<"exp", "the exponential">;
def TG_LogOp : TG_UnaryOp<"log", "the natural logarithm">;
def TG_TanhOp : TG_UnaryOp<"tanh", "the hyperbolic tangent">;
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", "the logistic sigmoid">;
def TG_SqrtOp : TG_UnaryOp<"sqrt", "the square root">;
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", "the reciprocal square root">;
def TG_AbsOp : TG_UnaryOp<"abs", "the absolute value">;
def TG_Log1pOp : TG_UnaryOp<"log1p", "log(1 + x), accurate near 0">;
def TG_Expm1Op : TG_UnaryOp<"expm1", "exp(x) - 1, accurate near 0">;
def TG_SinOp : TG_UnaryOp<"sin", "the sine">;
def TG_CosOp : TG_UnaryOp<"cos", "the cosine">;
def TG_PowOp : TG_BinaryOp<"pow", "lhs raised to the power rhs">;

def TG_CompareOp : TG_Op<"compare", [Pure, Elementwise, SameTypeOperands,
    SameOperandsAndResultShape, DeclareOpInterfaceMethods<TG_ScalarizableOpInterface>]> {
  let summary = "elementwise comparison, producing i1";
  let description = [{
    Compares `lhs` and `rhs` (of one type, promoted at import) with
    `predicate`: `eq`, `ne`, `lt`, `le`, `gt` or `ge`. Float comparisons are
    ordered except `ne`, which is true for NaN, as in ATen.

    ```mlir
    %m = tg.compare %a, %b {predicate = "lt"} : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$lhs, TG_StaticTensor:$rhs, StrAttr:$predicate);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SelectOp : TG_Op<"select", [Pure, Elementwise, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<TG_ScalarizableOpInterface>]> {
  let summary = "elementwise choice: where(condition, a, b)";
  let description = [{
    `condition` is i1; `a`, `b` and the result share a type.

    ```mlir
    %r = tg.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$condition, TG_StaticTensor:$a, TG_StaticTensor:$b);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$condition `,` $a `,` $b attr-dict `:` type($condition) `,` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}
def TG_ErfOp : TG_UnaryOp<"erf", "the error function">;
def TG_SiluOp : TG_UnaryOp<"silu",
    "x * sigmoid(x) (SiLU, swish); `tg-decompose` rewrites it into `tg.mul` and `tg.sigmoid`">;

def TG_GeluOp : TG_PointwiseOp<"gelu", 1> {
  let summary = "elementwise GELU";
  let description = [{
    Gaussian error linear unit, `x * Phi(x)`. `approximate` is `"none"` (exact,
    through erf) or `"tanh"`, as in `torch.nn.functional.gelu`.

    ```mlir
    %y = tg.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_CastOp : TG_Op<"cast", [Pure, Elementwise, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<TG_ScalarizableOpInterface>]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts each element to the result's element type with ATen's rules
    (float to integer truncates toward zero; anything to i1 tests `!= 0`).

    ```mlir
    %y = tg.cast %x : tensor<4xi64> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Constants and layout
//===----------------------------------------------------------------------===//

def TG_ConstantOp : TG_Op<"constant", [Pure, ConstantLike,
    TypesMatchWith<"result type matches value", "value", "result",
                   "$_self">]> {
  let summary = "a constant tensor";
  let description = [{
    A constant tensor; scalars captured from the program (the `1` in
    `x + 1`) are 0-d constants that fusion folds into kernel bodies.

    ```mlir
    %c = tg.constant dense<1.0> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_BroadcastOp : TG_Op<"broadcast", [Pure]> {
  let summary = "numpy-style broadcast to a larger shape";
  let description = [{
    Broadcasts `input` to the result shape with ATen's rules: dimensions are
    aligned from the right, and each input dimension is 1 or equal to the
    result's. Element types must match.

    ```mlir
    %y = tg.broadcast %x : tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The affine map from result indices to input indices (broadcast
    /// dimensions read index 0).
    ::mlir::AffineMap getInputMap();
  }];
}

def TG_IotaOp : TG_Op<"iota", [Pure]> {
  let summary = "each element is its own index along one dimension";
  let description = [{
    `result[i] = i[dim]`, an integer tensor. Kernels never read it from
    memory: fusion turns it (through any broadcasts and remaps) into a
    `tgk.index` of the iteration indices. Import builds `arange`, `triu` and
    `tril` on it.

    ```mlir
    %cols = tg.iota {dim = 1 : i64} : tensor<4x8xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_UniformOp : TG_Op<"uniform", [Pure]> {
  let summary = "counter-based uniform random numbers in [0, 1)";
  let description = [{
    Element `i` (row-major linear index) is Philox4x32-10 of counter `i`
    under the 64-bit key `seed` (a 0-d i64 tensor), as a float in [0, 1)
    with 24 random bits. The same seed gives the same tensor on every
    backend; import draws a fresh seed per call from ATen's default
    generator, so `torch::manual_seed` makes compiled dropout reproducible
    (its bits differ from eager's, which uses another generator). Fusion
    computes it inside the kernels that read it.

    ```mlir
    %u = tg.uniform %seed : tensor<i64> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$seed);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($seed) `->` type($result)";
  let hasVerifier = 1;
}

def TG_RemapOp : TG_Op<"remap", [Pure]> {
  let summary = "a layout op: each result element is an input element picked by an affine map";
  let description = [{
    `result[i] = input[map(i)]`: `map` takes a result index (one dim per
    result dimension) to an input index (one expression per input
    dimension). It expresses permute/transpose, slice (`d * step + start`),
    select (a constant), flip (`n - 1 - d`), squeeze/unsqueeze and reshape
    (`floordiv`/`mod` where dimensions merge) without moving data: fusion
    composes the map into the indexing of the kernels that read the result.
    Every expression is non-negative and in bounds for every result index,
    so generated code may use C division for `floordiv`.

    When the op came from an ATen view op, `callee` and `view_args` (in
    `tg.extern`'s argument encoding, the input being `#tg.operand<0>`) keep
    it: a remap that no kernel absorbs becomes that zero-copy ATen view again.

    ```mlir
    %t = tg.remap %x {map = affine_map<(d0, d1) -> (d1, d0)>}
           : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, AffineMapAttr:$map,
                       OptionalAttr<StrAttr>:$callee, OptionalAttr<ArrayAttr>:$view_args);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The affine map from result indices to input indices.
    ::mlir::AffineMap getInputMap() { return getMap(); }
  }];
}

//===----------------------------------------------------------------------===//
// Indexing, concatenation and padding
//===----------------------------------------------------------------------===//

def TG_GatherOp : TG_Op<"gather", [Pure]> {
  let summary = "reads input elements at data-dependent positions";
  let description = [{
    `result[i] = input[p]` where `p = map(i)` except in the dims `dims[k]`,
    whose coordinate is `indices[k][i]` (the expression of `map` there is
    ignored; import writes 0). Every index tensor has the result's shape
    (import broadcasts them) and an integer type. When `wrap` is set, a
    negative index counts from the end (advanced indexing); an index still
    outside `[0, size)` raises an IndexError at run time naming the value,
    dim and size, and no element is read out of bounds. `gather`,
    `index_select`, `embedding` and `index.Tensor` import to it; fusion
    reads `input` inside the kernel that computes the result
    (`tgk.load`), so the index arithmetic and the consumers are one kernel.

    ```mlir
    // embedding: result[n, j] = weight[ids[n], j]
    %e = tg.gather %w, %ids {dims = array<i64: 0>,
           map = affine_map<(d0, d1) -> (0, d1)>}
           : (tensor<100x16xf32>, tensor<8x16xi64>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, Variadic<TG_StaticTensor>:$indices,
                       DenseI64ArrayAttr:$dims, AffineMapAttr:$map,
                       DefaultValuedAttr<BoolAttr, "false">:$wrap,
                       DefaultValuedStrAttr<StrAttr, "">:$origin);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def TG_ConcatOp : TG_Op<"concat", [Pure]> {
  let summary = "concatenation along one dimension";
  let description = [{
    Joins `inputs` (same rank and element type, equal sizes except in
    `dim`) along `dim`. Fusion reads each piece inside the consumers'
    kernel, choosing the piece by the coordinate in `dim`; `cat` and
    `stack` (over unsqueezed pieces) import to it.

    ```mlir
    %c = tg.concat %a, %b {dim = 1 : i64}
           : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_StaticTensor>:$inputs, I64Attr:$dim);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def TG_PadOp : TG_Op<"pad", [Pure]> {
  let summary = "constant padding";
  let description = [{
    `result[i] = input[i - low]` where that is inside `input`, else `value`.
    `low` and `high` (one entry per dim) are non-negative: import turns
    negative padding (cropping) into a slice first. `constant_pad_nd` (and
    `pad` in constant mode) imports to it.

    ```mlir
    %p = tg.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 2>, value = 0.0 : f32}
           : tensor<4x8xf32> -> tensor<4x11xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, TypedAttrInterface:$value);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_ScatterAddOp : TG_Op<"scatter_add", [Pure]> {
  let summary = "adds src elements into a copy of self at indexed positions";
  let description = [{
    `result = self`, then for every position `i` of `index`:
    `result[i with dim := index[i]] += src[i]`, as `aten::scatter_add`.
    `index` is i64 with the rank of `self`; `src` is at least as large as
    `index` in every dim. An index outside `[0, self.size(dim))` raises an
    IndexError at run time. Lowered to its own kernel: positions that differ
    outside `dim` are updated in parallel, those along `dim` in order, so
    the result is deterministic.

    ```mlir
    %r = tg.scatter_add %self, %index, %src {dim = 0 : i64}
           : (tensor<5x3xf32>, tensor<8x3xi64>, tensor<8x3xf32>) -> tensor<5x3xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$self, TG_StaticTensor:$index,
                       TG_StaticTensor:$src, I64Attr:$dim);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$self `,` $index `,` $src attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def TG_ReduceOp : TG_Op<"reduce", [Pure]> {
  let summary = "reduction over trailing dimensions, keeping them as size 1";
  let description = [{
    Reduces `input` over its last `count` dimensions with `kind` (`sum`,
    `prod`, `max`, `min`; max/min propagate NaN as ATen does; `argmax` and
    `argmin` give the i64 row-major position within the reduced dims of the
    first extreme value, NaN counting as extreme). Reductions
    over other dimensions read their input through a `tg.remap` that moves
    the reduced dimensions last. The result keeps the
    reduced dimensions with size 1, so a `tg.broadcast` takes it back to the
    input's shape (softmax, layer_norm). Sums of floats accumulate in f64 on
    the CPU. Element types of input and result match.

    ```mlir
    %m = tg.reduce %x {kind = "max", count = 1} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, StrAttr:$kind, I64Attr:$count);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SoftmaxOp : TG_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax or log_softmax over the last dimension";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` over the last dimension, or with
    `log = true` its logarithm `(x - max) - log(sum(exp(x - max)))`, as
    ATen's `_softmax` / `_log_softmax` compute them. Import moves the
    softmax dimension last (a `tg.remap`) and back; `tg-decompose` rewrites
    the op into `tg.reduce` and pointwise ops, which `tg-fuse-rows` makes
    one row kernel.

    ```mlir
    %y = tg.softmax %x : tensor<4x8xf32>
    %l = tg.softmax %x {log = true} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_LayerNormOp : TG_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    ATen's `native_layer_norm` over the last `count` dimensions: per row,
    `mean` and `rstd = rsqrt(var + epsilon)` (biased variance), and
    `result = (x - mean) * rstd`, times `weight` and plus `bias` when given.
    Import broadcasts `weight` and `bias` to the input's type; `mean` and
    `rstd` keep the normalized dims as 1s. `tg-decompose` rewrites the op
    into `tg.reduce` and pointwise ops, which `tg-fuse-rows` makes one row
    kernel.

    ```mlir
    %y, %mean, %rstd = tg.layer_norm %x weight %w bias %b
        {count = 1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
        -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, Optional<TG_StaticTensor>:$weight,
                       Optional<TG_StaticTensor>:$bias, I64Attr:$count, F64Attr:$epsilon);
  let results = (outs TG_StaticTensor:$result, TG_StaticTensor:$mean, TG_StaticTensor:$rstd);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_BatchNormOp : TG_Op<"batch_norm", [Pure, AttrSizedOperandSegments,
    SameOperandsAndResultType]> {
  let summary = "batch normalization with given statistics (inference)";
  let description = [{
    `(x - mean) * rsqrt(var + epsilon)`, times `weight` and plus `bias` when
    given: ATen's batch norm in eval mode, where `mean` and `var` are the
    running statistics. Import broadcasts the per-channel operands to the
    input (and computes half types in f32, as ATen does), so the op is
    pointwise; `tg-decompose` rewrites it into pointwise ops.

    ```mlir
    %y = tg.batch_norm %x, %mean, %var weight %w bias %b {epsilon = 1.0e-05 : f64}
        : tensor<2x3x4x4xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, TG_StaticTensor:$mean, TG_StaticTensor:$var,
                       Optional<TG_StaticTensor>:$weight, Optional<TG_StaticTensor>:$bias,
                       F64Attr:$epsilon);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = [{
    $input `,` $mean `,` $var (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def TG_BatchNormTrainingOp : TG_Op<"batch_norm_training", [Pure, AttrSizedOperandSegments]> {
  let summary = "batch normalization with batch statistics (training), in row space";
  let description = [{
    ATen's `native_batch_norm` in training mode, on the row space import
    builds: channels first, the `count` trailing dims are one channel's
    elements. Per row, `mean`, the biased variance `var` and
    `invstd = rsqrt(var + epsilon)`; `result = (x - mean) * invstd`, times
    `weight` and plus `bias` when given (broadcast to the input's type).
    `var` is what the running-variance update reads (import scales it to the
    unbiased one). `tg-decompose` rewrites the op into `tg.reduce` and
    pointwise ops, the same ones as `tg.layer_norm`'s.

    ```mlir
    %y, %mean, %invstd, %var = tg.batch_norm_training %x weight %w bias %b
        {count = 2 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<3x2x16xf32>, tensor<3x2x16xf32>, tensor<3x2x16xf32>)
        -> (tensor<3x2x16xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>)
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, Optional<TG_StaticTensor>:$weight,
                       Optional<TG_StaticTensor>:$bias, I64Attr:$count, F64Attr:$epsilon);
  let results = (outs TG_StaticTensor:$result, TG_StaticTensor:$mean, TG_StaticTensor:$invstd,
                      TG_StaticTensor:$var);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MomentsOp : TG_Op<"moments", [Pure]> {
  let summary = "variance (or standard deviation) and mean over the trailing dimensions";
  let description = [{
    Per row of the last `count` dimensions (n elements): `mean = sum(x) / n`
    and `var = sum((x - mean)^2) / max(0, n - correction)`, its square root
    when `std` is set: ATen's `var`, `std`, `var_mean` and `std_mean` with a
    correction. Both results keep the reduced dims as 1s. `tg-decompose`
    rewrites the op into `tg.reduce` and pointwise ops.

    ```mlir
    %v, %m = tg.moments %x {count = 1 : i64, correction = 1.0 : f64, std = false}
        : tensor<4x8xf32> -> (tensor<4x1xf32>, tensor<4x1xf32>)
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, I64Attr:$count, F64Attr:$correction,
                       DefaultValuedAttr<BoolAttr, "false">:$std);
  let results = (outs TG_StaticTensor:$result, TG_StaticTensor:$mean);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` `(` type($result) `,` type($mean) `)`";
  let hasVerifier = 1;
}

def TG_LogSumExpOp : TG_Op<"logsumexp", [Pure]> {
  let summary = "log of the sum of exponentials over the trailing dimensions";
  let description = [{
    Per row of the last `count` dimensions: `m + log(sum(exp(x - m)))` with
    `m` the row's maximum, replaced by 0 where it is infinite (as ATen does,
    so a row of -inf gives -inf, not NaN). The result keeps the reduced dims
    as 1s. `tg-decompose` rewrites the op into `tg.reduce` and pointwise ops.

    ```mlir
    %r = tg.logsumexp %x {count = 1 : i64} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, I64Attr:$count);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_VectorNormOp : TG_Op<"vector_norm", [Pure]> {
  let summary = "p-norm over the trailing dimensions";
  let description = [{
    ATen's `linalg_vector_norm` per row of the last `count` dimensions:
    `ord` = inf / -inf is the largest / smallest `|x|`, 0 the count of
    nonzeros, 1 the sum of `|x|`, 2 the square root of the sum of squares and
    any other `p` `sum(|x|^p)^(1/p)`. The result keeps the reduced dims as
    1s. `tg-decompose` rewrites the op into `tg.reduce` and pointwise ops.

    ```mlir
    %n = tg.vector_norm %x {count = 1 : i64, ord = 2.0 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins TG_StaticTensor:$input, I64Attr:$count, F64Attr:$ord);
  let results = (outs TG_StaticTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Extern calls
//===----------------------------------------------------------------------===//

def TG_ExternOp : TG_Op<"extern", []> {
  let summary = "a call of an ATen operator that tgc does not lower itself";
  let description = [{
    Calls the ATen operator `callee` (`aten::name.overload`) through the
    dispatcher at run time. `args` lists every schema argument in order:
    `#tg.operand<N>` is the N-th tensor operand, an array of them a tensor
    list, `unit` is None, and integers, floats, booleans, strings, i64, f64 and i1 arrays
    and `#tg.device<...>` are the other values; `{wrapped_number = 1.0 : f32}`
    is a 0-d wrapped-number tensor built at the call. `result_strides` is the
    layout each result must have (the one ATen's Meta kernel predicted);
    the runtime enforces it.

    ```mlir
    %y = tg.extern "aten::mm"(%a, %b) {args = [#tg.operand<0>, #tg.operand<1>],
           result_strides = [array<i64: 8, 1>]}
           : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<TG_StaticTensor>:$inputs,
                       ArrayAttr:$args, ArrayAttr:$result_strides);
  let results = (outs Variadic<TG_StaticTensor>:$results);
  let assemblyFormat = [{
    $callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

#endif // TG_OPS_TD
