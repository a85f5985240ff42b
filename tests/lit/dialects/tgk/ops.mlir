// RUN: tgc-opt %s | tgc-opt | FileCheck %s

// Tests that a kernel with a broadcast input and a schedule round-trips.
// CHECK-LABEL: func.func @kernel
func.func @kernel(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: tgk.kernel "k0" ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>)
  // CHECK-SAME: indexing_maps = [#map, #map1]
  // CHECK-SAME: schedule = #tgk.schedule<kind = "pointwise", block = 256, vector = 4, warps = 8>
  // CHECK: arith.mulf
  // CHECK: tgk.yield %{{.*}} : f32
  %r = tgk.kernel "k0" ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) {
      iteration_shape = array<i64: 4, 8>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
      input_strides = [array<i64: 8, 1>, array<i64: 1>],
      result_strides = [array<i64: 8, 1>],
      schedule = #tgk.schedule<kind = "pointwise", block = 256, vector = 4, warps = 8>} -> tensor<4x8xf32> {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %y : f32
    tgk.yield %s : f32
  }
  return %r : tensor<4x8xf32>
}
