// RUN: tgc-opt %s -split-input-file -tg-fuse-pointwise | FileCheck %s

// Tests that (a * b + 1).relu() with a broadcast b becomes one kernel whose
// body is the scalar chain and whose b input carries the broadcast map.
// CHECK-LABEL: func.func @mul_add_relu
// CHECK-NOT: tg.
// CHECK: %[[K:.*]] = tgk.kernel "k0" ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>)
// CHECK-SAME: indexing_maps = [#{{.*}}, #[[BMAP:.*]]]
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK: %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[S:.*]] = arith.addf %[[M]], %[[ONE]] : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
// CHECK: tgk.yield %[[R]] : f32
// CHECK-NOT: tgk.kernel
// CHECK: return %[[K]]
func.func @mul_add_relu(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %bb = tg.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %m = tg.mul %a, %bb : tensor<4x8xf32>
  %c = tg.constant dense<1.0> : tensor<f32>
  %cb = tg.broadcast %c : tensor<f32> -> tensor<4x8xf32>
  %s = tg.add %m, %cb : tensor<4x8xf32>
  %r = tg.relu %s : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that a value used after the kernel becomes a second kernel result
// instead of being recomputed.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[K:.*]]:2 = tgk.kernel "k0"
// CHECK: tgk.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @two_results(%a: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tg.exp %a : tensor<16xf32>
  %n = tg.neg %e : tensor<16xf32>
  return %e, %n : tensor<16xf32>, tensor<16xf32>
}

// -----

// Tests that an extern between two pointwise ops splits them when the
// second needs the extern's result, and that a mutating extern is a barrier.
// CHECK-LABEL: func.func @extern_between
// CHECK: tgk.kernel "k0"
// CHECK: tg.extern "aten::mm"
// CHECK: tgk.kernel "k1"
func.func @extern_between(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tg.exp %a : tensor<4x4xf32>
  %m = tg.extern "aten::mm"(%e, %e) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 4, 1>]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = tg.add %e, %m : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// Tests that a broadcast returned directly is materialized by a copy kernel.
// CHECK-LABEL: func.func @returned_broadcast
// CHECK: tgk.kernel "k0" ins(%arg0 : tensor<3xf32>)
// CHECK-SAME: indexing_maps = [#{{.*}}]
// CHECK-NOT: tg.broadcast
func.func @returned_broadcast(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %b = tg.broadcast %a : tensor<3xf32> -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// Tests that non-contiguous inputs keep their strides on the kernel.
// CHECK-LABEL: func.func @strided
// CHECK: input_strides = [array<i64: 1, 4>]
func.func @strided(%a: tensor<4x4xf32> {tg.strides = array<i64: 1, 4>}) -> tensor<4x4xf32> {
  %r = tg.relu %a : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// Tests that a transpose and a slice feeding a pointwise op are absorbed into
// the kernel's indexing map (no copy), while a view an extern call reads
// becomes that ATen view again.
// CHECK-DAG: #[[TS:.*]] = affine_map<(d0, d1) -> (d1 * 2 + 1, d0)>
// CHECK-LABEL: func.func @through_remaps
// CHECK: %[[V:.*]] = tg.extern "aten::t"(%arg0) {args = [#tg.operand<0>], result_strides = [array<i64: 1, 4>]}
// CHECK: tg.extern "aten::mm"(%[[V]], %arg0)
// CHECK: tgk.kernel "k0" ins(%arg0 : tensor<8x4xf32>) {indexing_maps = [#[[TS]]]
// CHECK-NOT: tg.remap
func.func @through_remaps(%a: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %t = tg.remap %a {callee = "aten::t", map = affine_map<(d0, d1) -> (d1, d0)>, tg.strides = array<i64: 1, 4>, view_args = [#tg.operand<0>]} : tensor<8x4xf32> -> tensor<4x8xf32>
  %mm = tg.extern "aten::mm"(%t, %a) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 4, 1>]} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %s = tg.remap %t {map = affine_map<(d0, d1) -> (d0, d1 * 2 + 1)>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %r = tg.relu %s : tensor<4x4xf32>
  return %mm, %r : tensor<4x4xf32>, tensor<4x4xf32>
}
