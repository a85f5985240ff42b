// RUN: tgc-opt %s | tgc-opt | FileCheck %s
// RUN: tgc-opt %s -mlir-print-op-generic | tgc-opt | FileCheck %s

// Tests that pointwise, constant, broadcast and cast ops round-trip.
// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi64>) -> tensor<4x8xf32> {
  // CHECK: %[[C:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
  %c = tg.constant dense<1.0> : tensor<f32>
  // CHECK: tg.broadcast %[[C]] : tensor<f32> -> tensor<4x8xf32>
  %cb = tg.broadcast %c : tensor<f32> -> tensor<4x8xf32>
  // CHECK: tg.broadcast %{{.*}} : tensor<8xf32> -> tensor<4x8xf32>
  %bb = tg.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: tg.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %m = tg.mul %a, %bb : tensor<4x8xf32>
  // CHECK: tg.add
  %s = tg.add %m, %cb : tensor<4x8xf32>
  // CHECK: tg.gelu %{{.*}} {approximate = "tanh"} : tensor<4x8xf32>
  %g = tg.gelu %s {approximate = "tanh"} : tensor<4x8xf32>
  // CHECK: tg.cast %{{.*}} : tensor<4x8xi64> -> tensor<4x8xf32>
  %f = tg.cast %i : tensor<4x8xi64> -> tensor<4x8xf32>
  %r = tg.relu %g : tensor<4x8xf32>
  %o = tg.maximum %r, %f : tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Tests that an extern ATen call keeps its arguments and result layouts.
// CHECK-LABEL: func.func @extern
func.func @extern(%a: tensor<4x3xf32>, %b: tensor<3x8xf32>) -> tensor<4x8xf32> {
  // CHECK: tg.extern "aten::mm"(%{{.*}}, %{{.*}}) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 8, 1>]}
  %r = tg.extern "aten::mm"(%a, %b) {args = [#tg.operand<0>, #tg.operand<1>], result_strides = [array<i64: 8, 1>]} : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that comparisons, selects, reductions and the transcendental ops round-trip.
// CHECK-LABEL: func.func @more
func.func @more(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  // CHECK: tg.compare %{{.*}}, %{{.*}} {predicate = "lt"} : tensor<4x8xf32> -> tensor<4x8xi1>
  %m = tg.compare %a, %b {predicate = "lt"} : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: tg.select
  %s = tg.select %m, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = tg.log1p %s : tensor<4x8xf32>
  %e = tg.expm1 %l : tensor<4x8xf32>
  %p = tg.pow %e, %b : tensor<4x8xf32>
  // CHECK: tg.reduce %{{.*}} {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4x1xf32>
  %r = tg.reduce %p {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %p, %r : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Tests that remaps round-trip with and without their ATen view.
// CHECK-LABEL: func.func @remaps
func.func @remaps(%a: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  // CHECK: tg.remap %{{.*}} {callee = "aten::t", map = #{{.*}}, view_args = [#tg.operand<0>]} : tensor<4x8xf32> -> tensor<8x4xf32>
  %t = tg.remap %a {callee = "aten::t", map = affine_map<(d0, d1) -> (d1, d0)>, view_args = [#tg.operand<0>]} : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: tg.remap %{{.*}} {map = #{{.*}}} : tensor<4x8xf32> -> tensor<4x8xf32>
  %f = tg.remap %a {map = affine_map<(d0, d1) -> (-d0 + 3, d1)>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %t, %f : tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// Tests that gather, concat, pad and scatter_add round-trip.
// CHECK-LABEL: func.func @indexing
func.func @indexing(%w: tensor<10x6xf32>, %i: tensor<4x6xi64>, %a: tensor<4x6xf32>, %s: tensor<10x6xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x9xf32>, tensor<10x6xf32>) {
  // CHECK: tg.gather %{{.*}}, %{{.*}} {dims = array<i64: 0>, map = #{{.*}}, origin = "aten::embedding", wrap = true} : (tensor<10x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  %g = tg.gather %w, %i {dims = array<i64: 0>, map = affine_map<(d0, d1) -> (0, d1)>, origin = "aten::embedding", wrap = true} : (tensor<10x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  // CHECK: tg.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %c = tg.concat %g, %a {dim = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  // CHECK: tg.pad %{{.*}} {high = array<i64: 0, 2>, low = array<i64: 0, 1>, value = 1.500000e+00 : f32} : tensor<4x6xf32> -> tensor<4x9xf32>
  %p = tg.pad %a {low = array<i64: 0, 1>, high = array<i64: 0, 2>, value = 1.5 : f32} : tensor<4x6xf32> -> tensor<4x9xf32>
  // CHECK: tg.scatter_add %{{.*}}, %{{.*}}, %{{.*}} {dim = 0 : i64}
  %r = tg.scatter_add %s, %i, %a {dim = 0 : i64} : (tensor<10x6xf32>, tensor<4x6xi64>, tensor<4x6xf32>) -> tensor<10x6xf32>
  return %g, %c, %p, %r : tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x9xf32>, tensor<10x6xf32>
}

// -----

// Tests that the composite silu and softmax ops round-trip.
// CHECK-LABEL: func.func @composites
func.func @composites(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: tg.silu %{{.*}} : tensor<4x8xf32>
  %s = tg.silu %a : tensor<4x8xf32>
  // CHECK: tg.softmax %{{.*}} : tensor<4x8xf32>
  %p = tg.softmax %a : tensor<4x8xf32>
  // CHECK: tg.softmax %{{.*}} {log = true} : tensor<4x8xf32>
  %l = tg.softmax %a {log = true} : tensor<4x8xf32>
  return %s, %p, %l : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that layer_norm round-trips with and without weight and bias.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x4x8xf32>) {
  // CHECK: tg.layer_norm %{{.*}} weight %{{.*}} {count = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %y, %m, %r = tg.layer_norm %x weight %w {count = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  // CHECK: tg.layer_norm %{{.*}} {count = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %z, %m2, %r2 = tg.layer_norm %x {count = 1 : i64, epsilon = 1.0e-03 : f64} : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return %y, %m, %z : tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x4x8xf32>
}

// -----

// Tests that batch_norm round-trips with and without weight and bias.
// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x3x4xf32>, %m: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  // CHECK: tg.batch_norm %{{.*}}, %{{.*}}, %{{.*}} weight %{{.*}} bias %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<2x3x4xf32>
  %y = tg.batch_norm %x, %m, %v weight %m bias %v {epsilon = 1.0e-05 : f64} : tensor<2x3x4xf32>
  // CHECK: tg.batch_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : tensor<2x3x4xf32>
  %z = tg.batch_norm %x, %m, %v {epsilon = 1.0e-03 : f64} : tensor<2x3x4xf32>
  return %y, %z : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Tests that the row-statistics ops round-trip: training batch norm with
// its four results, moments, logsumexp and vector_norm.
// CHECK-LABEL: func.func @row_stats
func.func @row_stats(%x: tensor<3x2x4xf32>, %w: tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x2x1xf32>, tensor<3x1x1xf32>, tensor<3x2x1xf32>) {
  // CHECK: tg.batch_norm_training %{{.*}} weight %{{.*}} bias %{{.*}} {count = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>)
  %y, %m, %i, %v = tg.batch_norm_training %x weight %w bias %w {count = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>)
  // CHECK: tg.moments %{{.*}} {correction = 0.000000e+00 : f64, count = 1 : i64, std = true} : tensor<3x2x4xf32> -> (tensor<3x2x1xf32>, tensor<3x2x1xf32>)
  %s, %sm = tg.moments %x {count = 1 : i64, correction = 0.0 : f64, std = true} : tensor<3x2x4xf32> -> (tensor<3x2x1xf32>, tensor<3x2x1xf32>)
  // CHECK: tg.logsumexp %{{.*}} {count = 2 : i64} : tensor<3x2x4xf32> -> tensor<3x1x1xf32>
  %l = tg.logsumexp %x {count = 2 : i64} : tensor<3x2x4xf32> -> tensor<3x1x1xf32>
  // CHECK: tg.vector_norm %{{.*}} {count = 1 : i64, ord = 2.000000e+00 : f64} : tensor<3x2x4xf32> -> tensor<3x2x1xf32>
  %n = tg.vector_norm %x {count = 1 : i64, ord = 2.0 : f64} : tensor<3x2x4xf32> -> tensor<3x2x1xf32>
  return %y, %m, %s, %l, %n : tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x2x1xf32>, tensor<3x1x1xf32>, tensor<3x2x1xf32>
}
