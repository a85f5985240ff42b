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

// -----

// Tests that a kernel with a whole-buffer argument, a checked index and a
// load at it round-trips, and that scatter_add_kernel does too.
// CHECK-LABEL: func.func @gather_kernel
// CHECK: ^bb0(%[[W:.*]]: tensor<10x6xf32>, %[[I:.*]]: i64):
// CHECK: %[[C:.*]] = tgk.check_index %[[I]] {dim = 0 : i64, origin = "aten::index", size = 10 : i64, wrap = true}
// CHECK: tgk.load %[[W]][%[[C]]] {map = #{{.*}}} : tensor<10x6xf32> -> f32
// CHECK: tgk.scatter_add_kernel "k1"
func.func @gather_kernel(%w: tensor<10x6xf32>, %i: tensor<4xi64>, %s: tensor<5x3xf32>, %j: tensor<8x3xi64>, %src: tensor<8x3xf32>) -> (tensor<4x6xf32>, tensor<5x3xf32>) {
  %r = tgk.kernel "k0" ins(%w, %i : tensor<10x6xf32>, tensor<4xi64>) {
      iteration_shape = array<i64: 4, 6>,
      indexing_maps = [affine_map<(d0, d1) -> (0, 0)>, affine_map<(d0, d1) -> (d0)>],
      input_strides = [array<i64: 6, 1>, array<i64: 1>],
      result_strides = [array<i64: 6, 1>]} -> tensor<4x6xf32> {
  ^bb0(%t: tensor<10x6xf32>, %x: i64):
    %c = tgk.check_index %x {dim = 0 : i64, origin = "aten::index", size = 10 : i64, wrap = true}
    %v = tgk.load %t[%c] {map = affine_map<(d0, d1)[s0] -> (s0, d1)>} : tensor<10x6xf32> -> f32
    tgk.yield %v : f32
  }
  %q = tgk.scatter_add_kernel "k1"(%s, %j, %src) {dim = 0 : i64, input_strides = [array<i64: 3, 1>, array<i64: 3, 1>, array<i64: 3, 1>], result_strides = [array<i64: 3, 1>]} : (tensor<5x3xf32>, tensor<8x3xi64>, tensor<8x3xf32>) -> tensor<5x3xf32>
  return %r, %q : tensor<4x6xf32>, tensor<5x3xf32>
}
