// RUN: tgc-opt %s --tgc-pipeline=cpu | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: tgc-opt %s --tgc-pipeline=cuda | FileCheck %s --check-prefixes=CHECK,CUDA
// RUN: not tgc-opt %s --tgc-pipeline=tpu 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that the registered pipeline is the JIT's: gelu is decomposed and
// fused with its producer into one scheduled kernel on both targets, and a
// sum over two 65536-long rows is one row kernel on the CPU but split into
// per-chunk partials and their ordered sum on CUDA (tg-split-reductions runs
// for cuda only). A target other than cpu or cuda is an error that says so.
// CHECK-LABEL: func.func @gelu_then_long_row_sum
// CHECK-NOT: tg.gelu
// CHECK: tgk.kernel
// CHECK-SAME: schedule = #tgk.schedule<kind = "pointwise"
// CHECK: math.erf
// CPU: tgk.row_kernel
// CPU-SAME: row_shape = array<i64: 65536>
// CPU-NOT: tgk.row_kernel
// CUDA: tgk.row_kernel
// CUDA-SAME: row_shape = array<i64: {{[0-9]+}}>
// CUDA: tgk.row_kernel
// BAD: --tgc-pipeline takes a backend, cpu or cuda (got 'tpu')
func.func @gelu_then_long_row_sum(%a: tensor<2x65536xf32>, %b: tensor<2x65536xf32>)
    -> (tensor<2x65536xf32>, tensor<2x1xf32>) {
  %0 = tg.mul %a, %b : tensor<2x65536xf32>
  %1 = tg.gelu %0 : tensor<2x65536xf32>
  %2 = tg.reduce %b {count = 1 : i64, kind = "sum"} : tensor<2x65536xf32> -> tensor<2x1xf32>
  return %1, %2 : tensor<2x65536xf32>, tensor<2x1xf32>
}
