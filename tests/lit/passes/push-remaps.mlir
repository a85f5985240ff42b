// RUN: tgc-opt %s -split-input-file -tg-push-remaps | FileCheck %s

// Tests that a row remap (no ATen callee) moves onto the operands of the
// pointwise op it reads, so the op lives in the reduction's row space.
// CHECK-LABEL: func.func @push_through_mul
// CHECK: %[[A:.*]] = tg.remap %arg0 {map = #[[M:.*]]} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: %[[B:.*]] = tg.remap %arg1 {map = #[[M]]} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: %[[P:.*]] = tg.mul %[[A]], %[[B]] : tensor<8x4xf32>
// CHECK: tg.reduce %[[P]]
func.func @push_through_mul(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x1xf32> {
  %m = tg.mul %a, %b : tensor<4x8xf32>
  %t = tg.remap %m {map = affine_map<(d0, d1) -> (d1, d0)>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %r = tg.reduce %t {count = 1 : i64, kind = "sum"} : tensor<8x4xf32> -> tensor<8x1xf32>
  return %r : tensor<8x1xf32>
}

// -----

// Tests that an ATen view, and a remap of a value with other uses, stay put.
// CHECK-LABEL: func.func @stays
// CHECK: %[[M:.*]] = tg.mul %arg0, %arg0 : tensor<4x8xf32>
// CHECK: tg.remap %[[M]] {callee = "aten::t"
// CHECK: %[[N:.*]] = tg.neg %arg0 : tensor<4x8xf32>
// CHECK: tg.remap %[[N]] {map
func.func @stays(%a: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %m = tg.mul %a, %a : tensor<4x8xf32>
  %t = tg.remap %m {callee = "aten::t", map = affine_map<(d0, d1) -> (d1, d0)>, view_args = [#tg.operand<0>]} : tensor<4x8xf32> -> tensor<8x4xf32>
  %n = tg.neg %a : tensor<4x8xf32>
  %u = tg.remap %n {map = affine_map<(d0, d1) -> (d1, d0)>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %t, %u, %n : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}
