// RUN: tgc-opt %s --split-input-file --tg-split-reductions | FileCheck %s

// Tests that a long sum over two rows becomes per-chunk sums (2 x 32 chunks
// of 2048 elements) and an ordered sum of each row's partials.
// CHECK-DAG: #[[CHUNKS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 * 2048 + d2)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @sum_rows
// CHECK: %[[C:.*]] = tg.remap %arg0 {map = #[[CHUNKS]]} : tensor<2x65536xf32> -> tensor<2x32x2048xf32>
// CHECK: %[[P:.*]] = tg.reduce %[[C]] {count = 1 : i64, kind = "sum"} : tensor<2x32x2048xf32> -> tensor<2x32x1xf32>
// CHECK: %[[Q:.*]] = tg.remap %[[P]] {map = #[[ROWS]]} : tensor<2x32x1xf32> -> tensor<2x32xf32>
// CHECK: %[[R:.*]] = tg.reduce %[[Q]] {count = 1 : i64, kind = "sum"} : tensor<2x32xf32> -> tensor<2x1xf32>
// CHECK: return %[[R]]
func.func @sum_rows(%arg0: tensor<2x65536xf32>) -> tensor<2x1xf32> {
  %0 = tg.reduce %arg0 {count = 1 : i64, kind = "sum"} : tensor<2x65536xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Tests that a full reduction over several dims unflattens the chunk index
// and gives back the result's shape.
// CHECK-DAG: #[[CHUNKS:.*]] = affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 1024, (d1 floordiv 32) mod 32, d1 mod 32)>
// CHECK-DAG: #[[BACK:.*]] = affine_map<(d0, d1, d2) -> (0)>
// CHECK-LABEL: func.func @full_max
// CHECK: tg.remap %arg0 {map = #[[CHUNKS]]} : tensor<64x32x32xf32> -> tensor<32x2048xf32>
// CHECK: tg.reduce %{{.*}} {count = 1 : i64, kind = "max"} : tensor<32x2048xf32> -> tensor<32x1xf32>
// CHECK: tg.reduce %{{.*}} {count = 1 : i64, kind = "max"} : tensor<32xf32> -> tensor<1xf32>
// CHECK: tg.remap %{{.*}} {map = #[[BACK]]} : tensor<1xf32> -> tensor<1x1x1xf32>
func.func @full_max(%arg0: tensor<64x32x32xf32>) -> tensor<1x1x1xf32> {
  %0 = tg.reduce %arg0 {count = 3 : i64, kind = "max"} : tensor<64x32x32xf32> -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}

// -----

// Tests what stays: short rows, many rows, argmax, a row length without a
// usable divisor.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: tg.reduce %arg
// CHECK-NOT: tg.remap
func.func @kept(%a: tensor<4x4096xf32>, %b: tensor<256x65536xf32>, %c: tensor<2x65536xf32>, %d: tensor<1x65537xf32>)
    -> (tensor<4x1xf32>, tensor<256x1xf32>, tensor<2x1xi64>, tensor<1x1xf32>) {
  %0 = tg.reduce %a {count = 1 : i64, kind = "sum"} : tensor<4x4096xf32> -> tensor<4x1xf32>
  %1 = tg.reduce %b {count = 1 : i64, kind = "sum"} : tensor<256x65536xf32> -> tensor<256x1xf32>
  %2 = tg.reduce %c {count = 1 : i64, kind = "argmax"} : tensor<2x65536xf32> -> tensor<2x1xi64>
  %3 = tg.reduce %d {count = 1 : i64, kind = "sum"} : tensor<1x65537xf32> -> tensor<1x1xf32>
  return %0, %1, %2, %3 : tensor<4x1xf32>, tensor<256x1xf32>, tensor<2x1xi64>, tensor<1x1xf32>
}

// -----

// Tests that bfloat16 chunks are summed in f32 (partials not rounded) and
// the result rounded once.
// CHECK-LABEL: func.func @bf16_sum
// CHECK: tg.cast %arg0 : tensor<1x32768xbf16> -> tensor<1x32768xf32>
// CHECK: tg.reduce %{{.*}} : tensor<1x16x2048xf32> -> tensor<1x16x1xf32>
// CHECK: %[[S:.*]] = tg.reduce %{{.*}} : tensor<1x16xf32> -> tensor<1x1xf32>
// CHECK: tg.cast %[[S]] : tensor<1x1xf32> -> tensor<1x1xbf16>
func.func @bf16_sum(%arg0: tensor<1x32768xbf16>) -> tensor<1x1xbf16> {
  %0 = tg.reduce %arg0 {count = 1 : i64, kind = "sum"} : tensor<1x32768xbf16> -> tensor<1x1xbf16>
  return %0 : tensor<1x1xbf16>
}
