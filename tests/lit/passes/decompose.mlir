// RUN: tgc-opt %s -split-input-file -tg-decompose | FileCheck %s

// Tests that pow by 3 becomes two multiplications and pow by 0.5 a sqrt,
// while a general exponent stays pow.
// CHECK-LABEL: func.func @pows
// CHECK: %[[S:.*]] = tg.mul %arg0, %arg0 : tensor<4xf32>
// CHECK: %[[C:.*]] = tg.mul %arg0, %[[S]] : tensor<4xf32>
// CHECK: %[[R:.*]] = tg.sqrt %arg0 : tensor<4xf32>
// CHECK: %[[P:.*]] = tg.pow %arg0, %{{.*}} : tensor<4xf32>
// CHECK: return %[[C]], %[[R]], %[[P]]
func.func @pows(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c3 = tg.constant dense<3.0> : tensor<f32>
  %b3 = tg.broadcast %c3 : tensor<f32> -> tensor<4xf32>
  %a = tg.pow %x, %b3 : tensor<4xf32>
  %ch = tg.constant dense<0.5> : tensor<f32>
  %bh = tg.broadcast %ch : tensor<f32> -> tensor<4xf32>
  %r = tg.pow %x, %bh : tensor<4xf32>
  %c7 = tg.constant dense<1.7> : tensor<f32>
  %b7 = tg.broadcast %c7 : tensor<f32> -> tensor<4xf32>
  %p = tg.pow %x, %b7 : tensor<4xf32>
  return %a, %r, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that gelu becomes its erf formula in tg ops.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT: tg.gelu
// CHECK: tg.erf
// CHECK: tg.mul
func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.gelu %x {approximate = "none"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that silu becomes x * sigmoid(x) and keeps the layout import gave it.
// CHECK-LABEL: func.func @silu
// CHECK-NOT: tg.silu
// CHECK: %[[S:.*]] = tg.sigmoid %arg0 : tensor<4x8xf32>
// CHECK: %[[M:.*]] = tg.mul %arg0, %[[S]] {tg.strides = array<i64: 1, 4>} : tensor<4x8xf32>
// CHECK: return %[[M]]
func.func @silu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.silu %x {tg.strides = array<i64: 1, 4>} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that softmax over the last dim becomes max, shift, exp, sum and a
// division, the row values broadcast back over the row.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: tg.softmax
// CHECK: %[[MAX:.*]] = tg.reduce %arg0 {count = 1 : i64, kind = "max"} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: %[[BM:.*]] = tg.broadcast %[[MAX]] : tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK: %[[D:.*]] = tg.sub %arg0, %[[BM]]
// CHECK: %[[E:.*]] = tg.exp %[[D]]
// CHECK: %[[SUM:.*]] = tg.reduce %[[E]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[BS:.*]] = tg.broadcast %[[SUM]]
// CHECK: %[[R:.*]] = tg.div %[[E]], %[[BS]]
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.softmax %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that log_softmax is the shifted value minus the log of the row sum.
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[MAX:.*]] = tg.reduce %arg0 {count = 1 : i64, kind = "max"}
// CHECK: %[[D:.*]] = tg.sub %arg0, %{{.*}}
// CHECK: %[[E:.*]] = tg.exp %[[D]]
// CHECK: %[[SUM:.*]] = tg.reduce %[[E]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[BS:.*]] = tg.broadcast %[[SUM]]
// CHECK: %[[L:.*]] = tg.log %[[BS]]
// CHECK: %[[R:.*]] = tg.sub %[[D]], %[[L]]
// CHECK: return %[[R]]
func.func @log_softmax(%x: tensor<2x3x5xf64>) -> tensor<2x3x5xf64> {
  %y = tg.softmax %x {log = true} : tensor<2x3x5xf64>
  return %y : tensor<2x3x5xf64>
}

// -----

// Tests that layer_norm over the last two dims becomes the row mean, the
// centred input, the biased variance, rsqrt(var + eps) and the weighted,
// biased result; mean and rstd replace the op's statistics.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NOT: tg.layer_norm
// CHECK-DAG: %[[EPS:.*]] = tg.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[N:.*]] = tg.constant dense<3.200000e+01> : tensor<f32>
// CHECK: %[[NB:.*]] = tg.broadcast %[[N]] : tensor<f32> -> tensor<2x1x1xf32>
// CHECK: %[[S:.*]] = tg.reduce %arg0 {count = 2 : i64, kind = "sum"} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK: %[[MEAN:.*]] = tg.div %[[S]], %[[NB]] : tensor<2x1x1xf32>
// CHECK: %[[MB:.*]] = tg.broadcast %[[MEAN]] : tensor<2x1x1xf32> -> tensor<2x4x8xf32>
// CHECK: %[[XC:.*]] = tg.sub %arg0, %[[MB]]
// CHECK: %[[SQ:.*]] = tg.mul %[[XC]], %[[XC]]
// CHECK: %[[SS:.*]] = tg.reduce %[[SQ]] {count = 2 : i64, kind = "sum"}
// CHECK: %[[VAR:.*]] = tg.div %[[SS]], %{{.*}} : tensor<2x1x1xf32>
// CHECK: %[[EB:.*]] = tg.broadcast %[[EPS]]
// CHECK: %[[VE:.*]] = tg.add %[[VAR]], %[[EB]] : tensor<2x1x1xf32>
// CHECK: %[[RSTD:.*]] = tg.rsqrt %[[VE]] : tensor<2x1x1xf32>
// CHECK: %[[RB:.*]] = tg.broadcast %[[RSTD]] : tensor<2x1x1xf32> -> tensor<2x4x8xf32>
// CHECK: %[[Y:.*]] = tg.mul %[[XC]], %[[RB]]
// CHECK: %[[YW:.*]] = tg.mul %[[Y]], %arg1
// CHECK: %[[YB:.*]] = tg.add %[[YW]], %arg2
// CHECK: return %[[YB]], %[[MEAN]], %[[RSTD]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
  %y, %m, %r = tg.layer_norm %x weight %w bias %b {count = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y, %m, %r : tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
}

// -----

// Tests that a layer_norm without weight and bias ends at the scaled input,
// which keeps the op's layout (tg.strides).
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK: %[[RSTD:.*]] = tg.rsqrt
// CHECK: %[[RB:.*]] = tg.broadcast %[[RSTD]]
// CHECK: %[[Y:.*]] = tg.mul %{{.*}}, %[[RB]] {tg.strides = array<i64: 8, 1>} : tensor<4x8xf64>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_plain(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %y, %m, %r = tg.layer_norm %x {count = 1 : i64, epsilon = 1.0e-05 : f64, tg.strides = array<i64: 8, 1>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>, tensor<4x1xf64>, tensor<4x1xf64>)
  return %y : tensor<4x8xf64>
}

// -----

// Tests that batch_norm with given statistics becomes
// (x - mean) * rsqrt(var + eps) * weight + bias, elementwise.
// CHECK-LABEL: func.func @batch_norm
// CHECK-NOT: tg.batch_norm
// CHECK: %[[EPS:.*]] = tg.constant dense<1.000000e-03> : tensor<f64>
// CHECK: %[[EB:.*]] = tg.broadcast %[[EPS]] : tensor<f64> -> tensor<2x3x4xf64>
// CHECK: %[[VE:.*]] = tg.add %arg2, %[[EB]]
// CHECK: %[[INV:.*]] = tg.rsqrt %[[VE]]
// CHECK: %[[XC:.*]] = tg.sub %arg0, %arg1
// CHECK: %[[Y:.*]] = tg.mul %[[XC]], %[[INV]]
// CHECK: %[[YW:.*]] = tg.mul %[[Y]], %arg3
// CHECK: %[[YB:.*]] = tg.add %[[YW]], %arg4 {tg.strides = array<i64: 12, 4, 1>}
// CHECK: return %[[YB]]
func.func @batch_norm(%x: tensor<2x3x4xf64>, %m: tensor<2x3x4xf64>, %v: tensor<2x3x4xf64>, %w: tensor<2x3x4xf64>, %b: tensor<2x3x4xf64>) -> tensor<2x3x4xf64> {
  %y = tg.batch_norm %x, %m, %v weight %w bias %b {epsilon = 1.0e-03 : f64, tg.strides = array<i64: 12, 4, 1>} : tensor<2x3x4xf64>
  return %y : tensor<2x3x4xf64>
}
