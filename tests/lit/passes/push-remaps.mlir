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

// Tests that an ATen view of values computed from a reduction, and a remap
// of a value with other uses, stay put.
// CHECK-LABEL: func.func @stays
// CHECK: %[[R:.*]] = tg.reduce %arg0
// CHECK: %[[M:.*]] = tg.mul %[[R]], %[[R]] : tensor<4x1xf32>
// CHECK: tg.remap %[[M]] {callee = "aten::view"
// CHECK: %[[N:.*]] = tg.neg %arg0 : tensor<4x8xf32>
// CHECK: tg.remap %[[N]] {map
func.func @stays(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %r = tg.reduce %a {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4x1xf32>
  %m = tg.mul %r, %r : tensor<4x1xf32>
  %t = tg.remap %m {callee = "aten::view", map = affine_map<(d0) -> (d0, 0)>, view_args = [#tg.operand<0>, array<i64: 4>]} : tensor<4x1xf32> -> tensor<4xf32>
  %n = tg.neg %a : tensor<4x8xf32>
  %u = tg.remap %n {map = affine_map<(d0, d1) -> (d1, d0)>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %t, %u, %n : tensor<4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// Tests that an ATen view of a matmul epilogue (linear on 3-D inputs
// reshapes addmm's result) moves onto the epilogue's operands, so the
// epilogue and what follows the view share one index space.
// CHECK-LABEL: func.func @epilogue_view
// CHECK: %[[MM:.*]] = tg.extern "aten::mm"
// CHECK: %[[V:.*]] = tg.remap %[[MM]] {map = #{{.*}}} : tensor<14x12xf32> -> tensor<2x7x12xf32>
// CHECK: tg.add %[[V]], %{{.*}} : tensor<2x7x12xf32>
func.func @epilogue_view(%a: tensor<14x16xf32>, %w: tensor<16x12xf32>, %bias: tensor<12xf32>) -> tensor<2x7x12xf32> {
  %mm = tg.extern "aten::mm"(%a, %w) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 12, 1>]} : (tensor<14x16xf32>, tensor<16x12xf32>) -> tensor<14x12xf32>
  %bb = tg.broadcast %bias : tensor<12xf32> -> tensor<14x12xf32>
  %s = tg.add %mm, %bb : tensor<14x12xf32>
  %v = tg.remap %s {callee = "aten::view", map = affine_map<(d0, d1, d2) -> (d0 * 7 + d1, d2)>, view_args = [#tg.operand<0>, array<i64: 2, 7, 12>]} : tensor<14x12xf32> -> tensor<2x7x12xf32>
  return %v : tensor<2x7x12xf32>
}
