// RUN: tgc-opt %s -split-input-file -tg-fuse-pointwise -tgk-schedule | FileCheck %s

// Tests that a contiguous f32 kernel gets 16-byte vectors (4 lanes).
// CHECK-LABEL: func.func @f32
// CHECK: schedule = #tgk.schedule<kind = "pointwise", block = 256, vector = 4, warps = 8>
func.func @f32(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = tg.exp %a : tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// -----

// Tests that f16 kernels get 8 lanes.
// CHECK-LABEL: func.func @f16
// CHECK: vector = 8
func.func @f16(%a: tensor<1024xf16>) -> tensor<1024xf16> {
  %r = tg.exp %a : tensor<1024xf16>
  return %r : tensor<1024xf16>
}

// -----

// Tests that a broadcast input or a ragged size falls back to scalar access.
// CHECK-LABEL: func.func @ragged
// CHECK: vector = 1
// CHECK: vector = 1
func.func @ragged(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<7xf32>) -> (tensor<4x8xf32>, tensor<7xf32>) {
  %bb = tg.broadcast %b : tensor<8xf32> -> tensor<4x8xf32>
  %r = tg.add %a, %bb : tensor<4x8xf32>
  %s = tg.exp %c : tensor<7xf32>
  return %r, %s : tensor<4x8xf32>, tensor<7xf32>
}
