// RUN: tgc-opt %s -split-input-file -tg-fuse-rows | FileCheck %s

// Tests that softmax (max, exp, sum, div over the last dim) is one row kernel
// with two in-row reductions.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[K:.*]] = tgk.row_kernel "r0" ins(%arg0 : tensor<6x37xf32>)
// CHECK-SAME: outer_shape = array<i64: 6>
// CHECK-SAME: row_shape = array<i64: 37>
// CHECK: tgk.reduce %{{.*}} {kind = "max"}
// CHECK: math.exp
// CHECK: tgk.reduce %{{.*}} {kind = "sum"}
// CHECK: arith.divf
// CHECK-NOT: tgk.row_kernel
// CHECK: return %[[K]]
func.func @softmax(%arg0: tensor<6x37xf32>) -> tensor<6x37xf32> {
  %0 = tg.reduce %arg0 {count = 1 : i64, kind = "max"} : tensor<6x37xf32> -> tensor<6x1xf32>
  %1 = tg.broadcast %0 : tensor<6x1xf32> -> tensor<6x37xf32>
  %2 = tg.sub %arg0, %1 : tensor<6x37xf32>
  %3 = tg.exp %2 : tensor<6x37xf32>
  %4 = tg.reduce %3 {count = 1 : i64, kind = "sum"} : tensor<6x37xf32> -> tensor<6x1xf32>
  %5 = tg.broadcast %4 : tensor<6x1xf32> -> tensor<6x37xf32>
  %6 = tg.div %3, %5 : tensor<6x37xf32>
  return %6 : tensor<6x37xf32>
}

// -----

// Tests that a producer shared by two members joins the group, and that a
// row value used after the kernel becomes a row result.
// CHECK-LABEL: func.func @shared_producer
// CHECK: %[[K:.*]]:2 = tgk.row_kernel "r0" ins(%arg0 : tensor<4x8xf32>)
// CHECK-SAME: -> tensor<4x1xf32>, tensor<4x8xf32>
// CHECK: arith.mulf
// CHECK: tgk.reduce
// CHECK: return %[[K]]#1, %[[K]]#0
func.func @shared_producer(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %c = tg.constant dense<2.0> : tensor<f32>
  %cb = tg.broadcast %c : tensor<f32> -> tensor<4x8xf32>
  %x = tg.mul %arg0, %cb : tensor<4x8xf32>
  %m = tg.reduce %x {count = 1 : i64, kind = "max"} : tensor<4x8xf32> -> tensor<4x1xf32>
  %mb = tg.broadcast %m : tensor<4x1xf32> -> tensor<4x8xf32>
  %y = tg.sub %x, %mb : tensor<4x8xf32>
  return %y, %m : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Tests that a mutating extern between two reductions keeps them apart.
// CHECK-LABEL: func.func @barrier
// CHECK: tgk.row_kernel "r0"
// CHECK: tg.extern "aten::add_"
// CHECK: tgk.row_kernel "r1"
func.func @barrier(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %a = tg.reduce %arg0 {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4x1xf32>
  %w = tg.extern "aten::add_"(%arg1, %arg0) {args = [#tg.operand<0>, #tg.operand<1>, 1], mutates, result_strides = [array<i64: 8, 1>]} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ab = tg.broadcast %a : tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tg.mul %w, %ab : tensor<4x8xf32>
  %b = tg.reduce %e {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %a, %b : tensor<4x1xf32>, tensor<4x1xf32>
}
