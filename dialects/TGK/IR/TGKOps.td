//===- TGKOps.td - the `tgk` kernel dialect ---------------*- tablegen -*-===//
//
// `tgk` is what codegen reads: one `tgk.kernel` per fused group, its body a
// scalar computation in upstream `arith`/`math`, its iteration space, operand
// indexing and memory layouts explicit, and its schedule attached.
//
//===----------------------------------------------------------------------===//

#ifndef TGK_OPS_TD
#define TGK_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def TGK_Dialect : Dialect {
  let name = "tgk";
  let cppNamespace = "::tgc::tgk";
  let summary = "Fused kernels with schedules, ready for code generation.";
  let description = [{
    A `tgk.kernel` is one launch: a loop nest over `iteration_shape` whose
    body computes one element of every result from one element of every
    input. Codegen emits CUDA C++ and C++ from it and reads nothing else.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def TGK_ScheduleAttr : AttrDef<TGK_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "How a kernel is launched and tiled.";
  let description = [{
    `kind` is one of `pointwise`, `reduction`, `persistent-row` or
    `matmul-template`; `block` is threads per block on CUDA (and the chunk
    per OpenMP task on the CPU); `vector` the elements each thread loads at
    once; `warps` the warps per block.

    ```mlir
    #tgk.schedule<kind = "pointwise", block = 256, vector = 4, warps = 8>
    ```
  }];
  let parameters = (ins StringRefParameter<"kernel kind">:$kind,
                        "int64_t":$block, "int64_t":$vector, "int64_t":$warps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

class TGK_Op<string mnemonic, list<Trait> traits = []>
    : Op<TGK_Dialect, mnemonic, traits>;

def TGK_KernelOp : TGK_Op<"kernel", [Pure, IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "one fused kernel over a static iteration space";
  let description = [{
    Computes every result over `iteration_shape`. The body block takes one
    scalar per input, read at `indexing_maps[i]` (a map from iteration
    indices to the input's indices; a constant 0 is a broadcast dimension),
    and yields one scalar per result, written at the iteration index.
    `input_strides`/`result_strides` are the element strides of each buffer
    in memory, so non-contiguous inputs are read in place. `schedule` is set
    by `tgk-schedule`.

    ```mlir
    %r = tgk.kernel "k0" ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) {
        iteration_shape = array<i64: 4, 8>,
        indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                         affine_map<(d0, d1) -> (d1)>],
        input_strides = [array<i64: 8, 1>, array<i64: 1>],
        result_strides = [array<i64: 8, 1>]} -> tensor<4x8xf32> {
    ^bb0(%x: f32, %y: f32):
      %s = arith.mulf %x, %y : f32
      tgk.yield %s : f32
    }
    ```
  }];
  let arguments = (ins StrAttr:$sym_name, Variadic<AnyRankedTensor>:$inputs,
                       DenseI64ArrayAttr:$iteration_shape,
                       AffineMapArrayAttr:$indexing_maps,
                       ArrayAttr:$input_strides, ArrayAttr:$result_strides,
                       OptionalAttr<TGK_ScheduleAttr>:$schedule);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `ins` `(` $inputs `:` type($inputs) `)` attr-dict
    `->` type($results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$results, "::llvm::StringRef":$name,
                   "::mlir::ValueRange":$inputs,
                   "::llvm::ArrayRef<int64_t>":$iterationShape,
                   "::llvm::ArrayRef<::mlir::AffineMap>":$maps,
                   "::mlir::ArrayAttr":$inputStrides,
                   "::mlir::ArrayAttr":$resultStrides)>
  ];
  let extraClassDeclaration = [{
    /// Number of elements in the iteration space.
    int64_t getNumIterations();
    /// Whether every buffer is read and written at the linear iteration
    /// index (identity maps, contiguous strides): the condition for vector
    /// loads and stores, shared by tgk-schedule and codegen's descriptor.
    bool isLinear();
  }];
}

def TGK_RowKernelOp : TGK_Op<"row_kernel", [Pure, IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a persistent-row kernel: reductions over rows and their consumers";
  let description = [{
    Iterates over `outer_shape` rows of `row_shape` elements each. The body
    takes one scalar per input (read at `indexing_maps[i]`, maps from
    (outer dims, row dims) to the input's dims) and may contain `tgk.reduce`
    ops, which reduce an element value over the whole row into a per-row
    value usable by later ops. Results are element results (shape
    outer + row) or row results (shape outer + 1s, values that depend only
    on per-row values). Softmax and layer_norm are one such kernel:

    ```mlir
    %y = tgk.row_kernel "k0" ins(%x : tensor<4x8xf32>) {outer_shape = array<i64: 4>,
        row_shape = array<i64: 8>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
        input_strides = [array<i64: 8, 1>], result_strides = [array<i64: 8, 1>]}
        -> tensor<4x8xf32> {
    ^bb0(%v: f32):
      %m = tgk.reduce %v {kind = "max"} : f32
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      %s = tgk.reduce %e {kind = "sum"} : f32
      %r = arith.divf %e, %s : f32
      tgk.yield %r : f32
    }
    ```
  }];
  let arguments = (ins StrAttr:$sym_name, Variadic<AnyRankedTensor>:$inputs,
                       DenseI64ArrayAttr:$outer_shape, DenseI64ArrayAttr:$row_shape,
                       AffineMapArrayAttr:$indexing_maps,
                       ArrayAttr:$input_strides, ArrayAttr:$result_strides,
                       OptionalAttr<TGK_ScheduleAttr>:$schedule);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `ins` `(` $inputs `:` type($inputs) `)` attr-dict
    `->` type($results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumRows();
    int64_t getRowSize();
  }];
}

def TGK_ReduceOp : TGK_Op<"reduce", [Pure, HasParent<"RowKernelOp">]> {
  let summary = "reduces an element value over the current row";
  let description = [{
    `kind` is `sum`, `prod`, `max` or `min` (result of the value's type), or
    `argmax` / `argmin` (i64: the row-major position in the row of the first
    extreme value, NaN counting as the extreme, as ATen's). One value per
    row.

    ```mlir
    %s = tgk.reduce %e {kind = "sum"} : f32
    ```
  }];
  let arguments = (ins AnyType:$value, StrAttr:$kind);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
  let hasVerifier = 1;
}

def TGK_IndexOp : TGK_Op<"index", [Pure,
    ParentOneOf<["KernelOp", "RowKernelOp"]>]> {
  let summary = "an affine function of the current iteration's indices";
  let description = [{
    The value of `map` (one result, one dim per iteration dim of the
    enclosing kernel) at the current iteration, as an i64. Fusion makes it
    from a `tg.iota` read through broadcasts and remaps; triangular masks
    and `arange` are built on it.

    ```mlir
    %c = tgk.index {map = affine_map<(d0, d1) -> (d1)>} : i64
    ```
  }];
  let arguments = (ins AffineMapAttr:$map);
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TGK_UniformOp : TGK_Op<"uniform", [Pure,
    ParentOneOf<["KernelOp", "RowKernelOp"]>]> {
  let summary = "Philox4x32-10 uniform float of (seed, counter)";
  let description = [{
    `tgc_uniform(seed, counter)` of the codegen preludes: the first output
    word of Philox4x32-10 with key `seed` and counter `counter`, top 24 bits
    scaled to [0, 1).

    ```mlir
    %u = tgk.uniform %seed, %i : f32
    ```
  }];
  let arguments = (ins I64:$seed, I64:$counter);
  let results = (outs F32:$result);
  let assemblyFormat = "$seed `,` $counter attr-dict `:` type($result)";
}

def TGK_LoadOp : TGK_Op<"load", [Pure,
    ParentOneOf<["KernelOp", "RowKernelOp"]>]> {
  let summary = "reads a kernel input at a computed position";
  let description = [{
    Reads `buffer` (a block argument of the enclosing kernel that stands for
    a whole input tensor, not one element of it) at `map` of the current
    iteration indices (dims) and `indices` (symbols, i64). Gathers read
    data-dependent positions; concatenation and padding read positions that
    exist only under a condition, so codegen evaluates a load only where its
    value is used (inside the arm of an `arith.select` that picks it).

    ```mlir
    %v = tgk.load %w[%i] {map = affine_map<(d0, d1)[s0] -> (s0, d1)>}
           : tensor<100x16xf32> -> f32
    ```
  }];
  let arguments = (ins AnyRankedTensor:$buffer, Variadic<I64>:$indices, AffineMapAttr:$map);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$buffer `[` $indices `]` attr-dict `:` type($buffer) `->` type($result)";
  let hasVerifier = 1;
}

def TGK_CheckIndexOp : TGK_Op<"check_index", [
    ParentOneOf<["KernelOp", "RowKernelOp"]>]> {
  let summary = "bounds-checks a data-dependent index";
  let description = [{
    Returns `index` (plus `size` when it is negative and `wrap` is set) if
    it lies in `[0, size)`. Otherwise the kernel records the value, and the
    runtime raises an IndexError naming it, `dim`, `size` and `origin` (the
    ATen op) once the launch ends; the op returns 0 so no load leaves the
    buffer. Not pure: it reports.

    ```mlir
    %c = tgk.check_index %i {size = 100 : i64, dim = 0 : i64, wrap = false, origin = "aten::embedding"}
    ```
  }];
  let arguments = (ins I64:$index, I64Attr:$size, I64Attr:$dim, BoolAttr:$wrap, StrAttr:$origin);
  let results = (outs I64:$result);
  let assemblyFormat = "$index attr-dict";
}

def TGK_ScatterAddKernelOp : TGK_Op<"scatter_add_kernel", [Pure]> {
  let summary = "scatter_add as one kernel: a copy of self, then ordered updates";
  let description = [{
    `result = self; result[i with dim := index[i]] += src[i]` for every
    position `i` of `index`. Positions that differ outside `dim` run in
    parallel (they write different elements); along `dim` they run in order,
    so sums are deterministic. Indices are bounds-checked as by
    `tgk.check_index` (origin `aten::scatter_add`). Strides are the element
    strides of self, index, src and the result.

    ```mlir
    %r = tgk.scatter_add_kernel "k0" (%self, %index, %src) {dim = 0 : i64,
           input_strides = [array<i64: 3, 1>, array<i64: 3, 1>, array<i64: 3, 1>],
           result_strides = [array<i64: 3, 1>]}
           : (tensor<5x3xf32>, tensor<8x3xi64>, tensor<8x3xf32>) -> tensor<5x3xf32>
    ```
  }];
  let arguments = (ins StrAttr:$sym_name, AnyRankedTensor:$self, AnyRankedTensor:$index,
                       AnyRankedTensor:$src, I64Attr:$dim,
                       ArrayAttr:$input_strides, ArrayAttr:$result_strides);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $sym_name `(` $self `,` $index `,` $src `)` attr-dict `:` functional-type(operands, results)
  }];
}

def TGK_YieldOp : TGK_Op<"yield", [Pure, Terminator,
    ParentOneOf<["KernelOp", "RowKernelOp"]>]> {
  let summary = "yields one element of each kernel result";
  let description = [{
    Terminates a `tgk.kernel` body with one scalar per result.

    ```mlir
    tgk.yield %s : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TGK_OPS_TD
