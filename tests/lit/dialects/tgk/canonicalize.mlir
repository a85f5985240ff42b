// RUN: tgc-opt %s -split-input-file -canonicalize | FileCheck %s

// Tests that a kernel result nobody reads is no longer produced.
// CHECK-LABEL: func.func @unused_result
// CHECK: %[[K:.*]] = tgk.kernel "k0" {{.*}} result_strides = [array<i64: 1>]{{.*}} -> tensor<4xf32>
// CHECK: %[[E:.*]] = math.exp
// CHECK-NOT: arith.negf
// CHECK: tgk.yield %[[E]] : f32
// CHECK: return %[[K]]
func.func @unused_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = tgk.kernel "k0" ins(%a : tensor<4xf32>) {iteration_shape = array<i64: 4>,
      indexing_maps = [affine_map<(d0) -> (d0)>], input_strides = [array<i64: 1>],
      result_strides = [array<i64: 1>, array<i64: 1>]} -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%x: f32):
    %e = math.exp %x : f32
    %n = arith.negf %x : f32
    tgk.yield %e, %n : f32, f32
  }
  return %r#0 : tensor<4xf32>
}

// -----

// Tests that a kernel without users is erased (it is Pure).
// CHECK-LABEL: func.func @dead_kernel
// CHECK-NOT: tgk.kernel
func.func @dead_kernel(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = tgk.kernel "k0" ins(%a : tensor<4xf32>) {iteration_shape = array<i64: 4>,
      indexing_maps = [affine_map<(d0) -> (d0)>], input_strides = [array<i64: 1>],
      result_strides = [array<i64: 1>]} -> tensor<4xf32> {
  ^bb0(%x: f32):
    tgk.yield %x : f32
  }
  return %a : tensor<4xf32>
}
