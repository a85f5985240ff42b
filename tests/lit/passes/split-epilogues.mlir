// RUN: tgc-opt %s -split-input-file -tg-split-epilogues | FileCheck %s

// Tests that addmm feeding a relu becomes mm + a broadcast bias add in tg.
// CHECK-LABEL: func.func @addmm_relu
// CHECK: %[[P:.*]] = tg.extern "aten::mm"(%arg1, %arg2) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 8, 1>]}
// CHECK: %[[B:.*]] = tg.broadcast %arg0 : tensor<8xf32> -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = tg.add %[[P]], %[[B]]
// CHECK: tg.relu %[[S]]
func.func @addmm_relu(%bias: tensor<8xf32>, %a: tensor<4x3xf32>, %w: tensor<3x8xf32>) -> tensor<4x8xf32> {
  %y = tg.extern "aten::addmm"(%bias, %a, %w) {args = [#tg.operand<0>, #tg.operand<1>, #tg.operand<2>, 1, 1], result_strides = [array<i64: 8, 1>]} : (tensor<8xf32>, tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  %r = tg.relu %y : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that an addmm whose result only feeds another library call stays whole.
// CHECK-LABEL: func.func @addmm_into_mm
// CHECK: tg.extern "aten::addmm"
// CHECK-NOT: tg.add
func.func @addmm_into_mm(%bias: tensor<8xf32>, %a: tensor<4x3xf32>, %w: tensor<3x8xf32>, %v: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %y = tg.extern "aten::addmm"(%bias, %a, %w) {args = [#tg.operand<0>, #tg.operand<1>, #tg.operand<2>, 1, 1], result_strides = [array<i64: 8, 1>]} : (tensor<8xf32>, tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  %z = tg.extern "aten::mm"(%y, %v) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 2, 1>]} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}

// -----

// Tests that a convolution's bias becomes a per-channel add (a [C] -> [C,1,1]
// remap, broadcast) and the convolution gets None for its bias.
// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[C:.*]] = tg.extern "aten::convolution"(%arg0, %arg1) {args = [#tg.operand<0>, #tg.operand<1>, unit,
// CHECK: %[[R:.*]] = tg.remap %arg2 {map = #{{.*}}} : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: %[[B:.*]] = tg.broadcast %[[R]]
// CHECK: tg.add %[[C]], %[[B]]
func.func @conv_relu(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %y = tg.extern "aten::convolution"(%x, %w, %b) {args = [#tg.operand<0>, #tg.operand<1>, #tg.operand<2>, array<i64: 1, 1>, array<i64: 0, 0>, array<i64: 1, 1>, false, array<i64: 0, 0>, 1], result_strides = [array<i64: 36, 9, 3, 1>]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %r = tg.relu %y : tensor<1x4x3x3xf32>
  return %r : tensor<1x4x3x3xf32>
}
