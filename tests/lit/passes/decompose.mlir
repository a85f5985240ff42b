// RUN: tgc-opt %s -split-input-file -tg-decompose | FileCheck %s

// Tests that pow by 3 becomes two multiplications and pow by 0.5 a sqrt,
// while a general exponent stays pow.
// CHECK-LABEL: func.func @pows
// CHECK: %[[S:.*]] = tg.mul %arg0, %arg0 : tensor<4xf32>
// CHECK: %[[C:.*]] = tg.mul %arg0, %[[S]] : tensor<4xf32>
// CHECK: %[[R:.*]] = tg.sqrt %arg0 : tensor<4xf32>
// CHECK: %[[P:.*]] = tg.pow %arg0, %{{.*}} : tensor<4xf32>
// CHECK: return %[[C]], %[[R]], %[[P]]
func.func @pows(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c3 = tg.constant dense<3.0> : tensor<f32>
  %b3 = tg.broadcast %c3 : tensor<f32> -> tensor<4xf32>
  %a = tg.pow %x, %b3 : tensor<4xf32>
  %ch = tg.constant dense<0.5> : tensor<f32>
  %bh = tg.broadcast %ch : tensor<f32> -> tensor<4xf32>
  %r = tg.pow %x, %bh : tensor<4xf32>
  %c7 = tg.constant dense<1.7> : tensor<f32>
  %b7 = tg.broadcast %c7 : tensor<f32> -> tensor<4xf32>
  %p = tg.pow %x, %b7 : tensor<4xf32>
  return %a, %r, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that gelu becomes its erf formula in tg ops.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT: tg.gelu
// CHECK: tg.erf
// CHECK: tg.mul
func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.gelu %x {approximate = "none"} : tensor<4xf32>
  return %y : tensor<4xf32>
}
