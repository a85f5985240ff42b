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

// -----

// Tests that a gather (embedding) and its consumer are one kernel: the table
// is a whole-buffer argument read by tgk.load at a checked index, and the
// index remap is composed into the index input's map.
// CHECK-LABEL: func.func @embedding
// CHECK: tgk.kernel "k0" ins(%arg0, %arg1 : tensor<10x6xf32>, tensor<4xi64>)
// CHECK: ^bb0(%[[W:.*]]: tensor<10x6xf32>, %[[I:.*]]: i64):
// CHECK: %[[C:.*]] = tgk.check_index %[[I]] {dim = 0 : i64, origin = "aten::embedding", size = 10 : i64, wrap = false}
// CHECK: %[[L:.*]] = tgk.load %[[W]][%[[C]]]
// CHECK: arith.mulf %[[L]]
// CHECK-NOT: tgk.kernel
func.func @embedding(%w: tensor<10x6xf32>, %ids: tensor<4xi64>) -> tensor<4x6xf32> {
  %i = tg.remap %ids {map = affine_map<(d0, d1) -> (d0)>} : tensor<4xi64> -> tensor<4x6xi64>
  %g = tg.gather %w, %i {dims = array<i64: 0>, map = affine_map<(d0, d1) -> (0, d1)>, origin = "aten::embedding"} : (tensor<10x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  %c = tg.constant dense<2.0> : tensor<f32>
  %cb = tg.broadcast %c : tensor<f32> -> tensor<4x6xf32>
  %r = tg.mul %g, %cb : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Tests that a concat fuses with its consumer: each piece is loaded at its
// shifted position and a select on the dim index picks the piece.
// CHECK-LABEL: func.func @concat
// CHECK: tgk.kernel "k0" ins(%arg0, %arg1 : tensor<4x3xf32>, tensor<4x5xf32>)
// CHECK-DAG: %[[B:.*]] = tgk.load %{{.*}}[] {map = #{{.*}}} : tensor<4x5xf32> -> f32
// CHECK-DAG: %[[A:.*]] = tgk.load %{{.*}}[] {map = #{{.*}}} : tensor<4x3xf32> -> f32
// CHECK: %[[D:.*]] = tgk.index
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[D]], %{{.*}} : i64
// CHECK: %[[S:.*]] = arith.select %[[IN]], %[[A]], %[[B]] : f32
// CHECK: arith.maximumf %[[S]]
// CHECK-NOT: tgk.kernel
func.func @concat(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %c = tg.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  %r = tg.relu %c : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that a pad reads its input only inside the unpadded box and yields
// the padding value elsewhere.
// CHECK-LABEL: func.func @pad
// CHECK: tgk.kernel "k0" ins(%arg0 : tensor<4x8xf32>) {{.*}} iteration_shape = array<i64: 4, 11>
// CHECK: %[[GE:.*]] = arith.cmpi sge
// CHECK: %[[LT:.*]] = arith.cmpi slt
// CHECK: %[[IN:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK: %[[L:.*]] = tgk.load
// CHECK: %[[V:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: arith.select %[[IN]], %[[L]], %[[V]] : f32
func.func @pad(%a: tensor<4x8xf32>) -> tensor<4x11xf32> {
  %p = tg.pad %a {low = array<i64: 0, 1>, high = array<i64: 0, 2>, value = 0.5 : f32} : tensor<4x8xf32> -> tensor<4x11xf32>
  return %p : tensor<4x11xf32>
}

// -----

// Tests that scatter_add becomes its own kernel over self, index and src.
// CHECK-LABEL: func.func @scatter
// CHECK: tgk.scatter_add_kernel "k0"(%arg0, %arg1, %arg2) {dim = 0 : i64
// CHECK-SAME: -> tensor<5x3xf32>
func.func @scatter(%s: tensor<5x3xf32>, %i: tensor<8x3xi64>, %src: tensor<8x3xf32>) -> tensor<5x3xf32> {
  %r = tg.scatter_add %s, %i, %src {dim = 0 : i64} : (tensor<5x3xf32>, tensor<8x3xi64>, tensor<8x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
