// RUN: tgc-opt %s -split-input-file -tg-fuse-pointwise -tgk-fuse-horizontal | FileCheck %s

// Tests that two independent small kernels of one shape become one kernel
// with both results.
// CHECK-LABEL: func.func @two_independent
// CHECK: %[[K:.*]]:2 = tgk.kernel "k0" ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: tgk.kernel
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @two_independent(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %x = tg.exp %a : tensor<4x8xf32>
  %y = tg.neg %b : tensor<4x8xf32>
  return %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that a kernel reading another's result through a library call stays
// a separate launch.
// CHECK-LABEL: func.func @dependent
// CHECK: tgk.kernel "k0"
// CHECK: tg.extern "aten::mm"
// CHECK: tgk.kernel "k1"
func.func @dependent(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %x = tg.exp %a : tensor<4x4xf32>
  %m = tg.extern "aten::mm"(%x, %x) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 4, 1>]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = tg.neg %m : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
