// RUN: tgc-opt %s -split-input-file -canonicalize | FileCheck %s

// Tests that a broadcast to the same shape and a cast to the same type fold away.
// CHECK-LABEL: func.func @identity
// CHECK-NOT: tg.broadcast
// CHECK-NOT: tg.cast
// CHECK: return %arg0
func.func @identity(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %b = tg.broadcast %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = tg.cast %b : tensor<4x8xf32> -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// Tests that a broadcast of a broadcast becomes one broadcast.
// CHECK-LABEL: func.func @chain
// CHECK: %[[B:.*]] = tg.broadcast %arg0 : tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[B]]
func.func @chain(%a: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %b = tg.broadcast %a : tensor<8xf32> -> tensor<4x8xf32>
  %c = tg.broadcast %b : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return %c : tensor<2x4x8xf32>
}

// -----

// Tests that unused pure ops and constants are removed.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: tg.
// CHECK: return %arg0
func.func @dead(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = tg.constant dense<2.0> : tensor<4xf32>
  %m = tg.mul %a, %c : tensor<4xf32>
  return %a : tensor<4xf32>
}
