//===- Passes.td - tgc's MLIR passes -----------------------*- tablegen -*-===//
#ifndef TGC_PASSES_TD
#define TGC_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def PushRemaps : Pass<"tg-push-remaps", "::mlir::func::FuncOp"> {
  let summary = "Move `tg.remap` ops above the pointwise op they read, onto its operands";
  let description = [{
    A layout op (import's remap that brings a reduction's dims last, or an
    ATen view) applied to a pointwise result is applied to the pointwise
    op's operands instead when it is that result's only use:

    ```
    %m = tg.mul %a, %b : tensor<4x8xf32>
    %t = tg.remap %m {map = (d0, d1) -> (d1, d0)} : tensor<4x8xf32> -> tensor<8x4xf32>
      =>
    %ta = tg.remap %a {map = ...}; %tb = tg.remap %b {map = ...}
    %t = tg.mul %ta, %tb : tensor<8x4xf32>
    ```

    The pointwise op then lives in its consumer's index space, so a
    reduction over non-trailing dims (which reads its input through a
    permuting remap) fuses with its producers into one row kernel, a
    pointwise chain read through a transpose fuses with its reader, and a
    matmul's bias epilogue fuses with the activation after the reshape that
    `linear` on 3-D inputs makes. Nothing is computed twice: the op had no
    other use. An ATen view of values computed from a reduction stays put,
    so those ops stay in the reduction's row kernel.

    Likewise a `tg.broadcast` of a pointwise op computed from constants and
    `tg.iota` only (a causal mask: `triu(ones)`) moves onto that op's
    operands, so the readers compute the mask inline instead of reading it. The new remaps have no ATen
    view to fall back to; fusion absorbs them into kernel index maps.
  }];
}

//===----------------------------------------------------------------------===//
// Decomposition
//===----------------------------------------------------------------------===//

def Decompose : Pass<"tg-decompose", "::mlir::func::FuncOp"> {
  let summary = "Rewrite composite `tg` ops into primitive ones";
  let description = [{
    One rewrite pattern per composite op, so each decomposition is tested
    on its own (tests/lit/passes/decompose.mlir) and import only says which
    composite an ATen op is (the op registry's row):

    - `tg.gelu` becomes its formula (erf form, or the tanh approximation),
      so CSE can share `x * x` and the scaled input with neighbouring ops;
    - `tg.silu` becomes `x * sigmoid(x)`;
    - `tg.softmax` becomes `tg.reduce` max, a shift, `tg.exp`, `tg.reduce`
      sum and a division (or, with `log = true`, the shifted value minus
      the log of the sum), which `tg-fuse-rows` makes one row kernel;
    - `tg.layer_norm` becomes the row mean (`tg.reduce` sum over n), the
      centred input, the biased variance, `rsqrt(var + epsilon)` and the
      scaled (and weighted, biased) result: two reductions over the same
      rows, one row kernel after `tg-fuse-rows`;
    - `tg.batch_norm` (given statistics) becomes
      `(x - mean) * rsqrt(var + epsilon)`, weighted and biased: pointwise;
    - `tg.pow` by a splat constant exponent of 1, 2, 3, 0.5, -0.5 or -1
      becomes multiplications, `tg.sqrt`, `tg.rsqrt` or a division (exact,
      and far cheaper than `powf`). Other exponents stay `tg.pow`.

    ```
    %y = tg.pow %x, (broadcast 3.0)
      =>
    %s = tg.mul %x, %x; %y = tg.mul %x, %s

    %y = tg.softmax %x : tensor<4x8xf32>
      =>
    %m = tg.reduce %x {kind = "max", count = 1}; %d = tg.sub %x, (broadcast %m)
    %e = tg.exp %d; %s = tg.reduce %e {kind = "sum", count = 1}; %y = tg.div %e, (broadcast %s)
    ```

    Import still builds layer_norm, batch norm, var/std, logsumexp and
    norms from `tg.reduce` and pointwise ops itself (see the op registry's
    lowerings); they move here as they get `tg` ops of their own.
  }];
}

def SplitReductions : Pass<"tg-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split long reductions over few rows into two ordered stages (CUDA)";
  let description = [{
    A CUDA row kernel gives each row at most one block, so a reduction of
    a few very long rows (a loss's `mean()`, a norm of a whole tensor)
    would keep most of the GPU idle. A `tg.reduce` (`sum`, `prod`, `max`,
    `min`) with fewer than `max-rows` rows of at least `min-row` elements
    becomes two reductions: the row, seen through a `tg.remap` as `S`
    chunks of `C = N / S` elements (`S` a divisor of N, about 256 chunks in
    all, chunks of at least 2048 elements), is reduced per chunk (R x S
    rows: many blocks), and the S partial results of each row are reduced
    again in chunk order:

    ```
    %r = tg.reduce %x {kind = "sum", count = 1} : tensor<2x65536xf32> -> tensor<2x1xf32>
      =>
    %c = tg.remap %x {map = (d0, d1, d2) -> (d0, d1 * 512 + d2)} : ... -> tensor<2x128x512xf32>
    %p = tg.reduce %c {kind = "sum", count = 1} : ... -> tensor<2x128x1xf32>
    %q = tg.remap %p ... -> tensor<2x128xf32>
    %r = tg.reduce %q {kind = "sum", count = 1} : ... -> tensor<2x1xf32>
    ```

    Both stages combine in a fixed order, so the result is the same on
    every run (deterministic), and more accurate than one long sequential
    sum. For f16/bf16 inputs the chunks are read through a `tg.cast` to
    f32 and the result is cast back: partials are not rounded. argmax/argmin (which would need the positions too) and rows with
    no usable divisor keep one block per row.
  }];
  let options = [
    Option<"minRow", "min-row", "int64_t", "16384", "split rows of at least this many elements">,
    Option<"maxRows", "max-rows", "int64_t", "128", "only when there are fewer rows than this">,
  ];
}

def SplitEpilogues : Pass<"tg-split-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Take the bias add out of extern matmuls and convolutions that feed pointwise ops";
  let description = [{
    `aten::addmm(bias, a, b, beta, alpha)` becomes `aten::mm(a, b)` followed
    by `beta * broadcast(bias) + alpha * product` in `tg`, and
    `aten::convolution(x, w, bias, ...)` becomes a convolution without bias
    plus a per-channel `tg.add`, so pointwise fusion puts the bias add and
    the activation after it (relu, gelu, a residual add) in one kernel: the
    epilogue reads the library's output once and writes the result once.

    ```
    %y = tg.extern "aten::addmm"(%bias, %x, %w) ...; %r = tg.relu %y
      =>
    %p = tg.extern "aten::mm"(%x, %w); %y = tg.add %p, (tg.broadcast %bias); %r = tg.relu %y
    ```

    Only calls with a pointwise user are split: a bias add whose result goes
    straight to another library call is cheaper inside the library call.
    Results keep the layout ATen's kernel would have produced.
  }];
}

def FusePointwise : Pass<"tg-fuse-pointwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse chains of pointwise `tg` ops and their broadcasts into `tgk.kernel`s";
  let description = [{
    Groups pointwise ops (those implementing `ScalarizableOpInterface`) that
    share an iteration shape and are connected by def-use edges, and rebuilds
    each group as one `tgk.kernel` whose body is the scalar computation:

    ```
    %m = tg.mul %a, %bb : tensor<4x8xf32>      // %bb = tg.broadcast %b
    %s = tg.add %m, %one : tensor<4x8xf32>     // %one = broadcast of a 0-d constant
    %r = tg.relu %s : tensor<4x8xf32>
      =>
    %r = tgk.kernel "k0" ins(%a, %b : ...) {indexing_maps = [(d0,d1)->(d0,d1), (d0,d1)->(d1)]} {
      %m = arith.mulf %x, %y; %s = arith.addf %m, %c1; %r = arith.maximumf %s, %c0
      tgk.yield %r
    }
    ```

    Broadcasts are never materialized when a kernel consumes them: they
    become the input's indexing map. 0-d and splat constants become
    `arith.constant`s in the body. A value is a kernel result only when
    something outside the group uses it, so intermediates never reach
    memory.

    Rules that keep the program's meaning: the kernel is placed at its last
    member, so a group may only grow by an op `p` when no non-member uses a
    member's result before `p`, and when no `tg.extern` marked `mutates`
    lies between the group's first member and `p` (a mutation of a buffer
    the kernel reads must stay on the same side of the kernel). Fusion never
    duplicates work: an intermediate that is also broadcast to another shape
    is materialized once.
  }];
  let dependentDialects = ["::tgc::tgk::TGKDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FuseRows : Pass<"tg-fuse-rows", "::mlir::func::FuncOp"> {
  let summary = "Fuse reductions over rows with their producers and consumers into `tgk.row_kernel`s";
  let description = [{
    Starting at each `tg.reduce`, gathers the pointwise ops that feed it
    (when nothing else uses them), the ops that consume its result through a
    broadcast back over the row, and further reductions of the same rows, so
    that softmax, log_softmax and layer_norm each become one kernel per row:

    ```
    %m = tg.reduce %x {kind = "max", count = 1}; %e = tg.exp(%x - bcast %m)
    %s = tg.reduce %e {kind = "sum", count = 1}; %y = tg.div %e, bcast %s
      =>
    %y = tgk.row_kernel "r0" ins(%x) { %m = tgk.reduce %v {kind = "max"} ...
                                       %s = tgk.reduce %e {kind = "sum"} ... }
    ```

    Rows are the trailing `count` dims. The same ordering rules as
    `tg-fuse-pointwise` keep the program's meaning: the kernel sits at its
    last member, no non-member may use a member's result before it, and no
    mutating extern may lie between its members. Element values that several
    reductions need are recomputed per pass over the row rather than stored.
  }];
  let dependentDialects = ["::tgc::tgk::TGKDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FuseHorizontal : Pass<"tgk-fuse-horizontal", "::mlir::func::FuncOp"> {
  let summary = "Run independent small pointwise kernels of one iteration shape as one kernel";
  let description = [{
    Two `tgk.kernel`s with the same iteration shape and at most 65536
    iterations, where the later one does not depend on the earlier one, run
    as one kernel with both bodies and both sets of results, placed at the
    earlier one when every input of the later one exists there, else at the
    later one (then only if nothing between them reads the earlier one's
    results and the later one does not depend on it). Typical case: the copies that lay out q, k and v of an
    attention block for batched matmuls.

    ```
    %q = tgk.kernel "k1" ins(%a) {...}; %k = tgk.kernel "k2" ins(%b) {...}
      =>
    %q, %k = tgk.kernel "k1" ins(%a, %b) {...}
    ```

    No extern call between the two may write a buffer in place. Larger kernels keep their own launch, so each keeps its own
    vectorization decision.
  }];
}

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

def Schedule : Pass<"tgk-schedule", "::mlir::func::FuncOp"> {
  let summary = "Attach a heuristic `#tgk.schedule` to every `tgk.kernel`";
  let description = [{
    Picks the kernel kind and tile configuration of each kernel from its
    iteration space and element types:

    ```
    tgk.kernel "k0" ... {iteration_shape = array<i64: 1024>}
      =>
    tgk.kernel "k0" ... {schedule = #tgk.schedule<kind = "pointwise", block = 256, vector = 4, warps = 8>}
    ```

    Pointwise kernels get 256 threads per block (8 warps) and a vector
    width of 16 bytes divided by the widest element size (4 for f32, 8 for
    f16/bf16), reduced to 1 when a buffer is not contiguous or the element
    count is not a multiple of it (`tgk.kernel`'s `isLinear()`, the same
    test codegen applies to a hand-written schedule). Kernels that already
    carry a schedule are left alone, so an autotuner can pin one. This is the
    one place the vector width is chosen: codegen's kernel descriptor
    (`codegen::describeKernel`) copies it, and the emitters and the Plan
    read the descriptor.
  }];
}

#endif // TGC_PASSES_TD
