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

// -----

// Tests that training batch norm (row space: a channel per row) computes
// the biased statistics as layer_norm does and returns the variance too.
// CHECK-LABEL: func.func @batch_norm_training
// CHECK-NOT: tg.batch_norm_training
// CHECK: %[[S:.*]] = tg.reduce %arg0 {count = 2 : i64, kind = "sum"} : tensor<3x2x4xf32> -> tensor<3x1x1xf32>
// CHECK: %[[MEAN:.*]] = tg.div %[[S]]
// CHECK: %[[XC:.*]] = tg.sub %arg0
// CHECK: %[[SQ:.*]] = tg.mul %[[XC]], %[[XC]]
// CHECK: %[[SS:.*]] = tg.reduce %[[SQ]] {count = 2 : i64, kind = "sum"}
// CHECK: %[[VAR:.*]] = tg.div %[[SS]]
// CHECK: %[[INV:.*]] = tg.rsqrt
// CHECK: %[[Y:.*]] = tg.mul %[[XC]]
// CHECK: %[[YW:.*]] = tg.mul %[[Y]], %arg1
// CHECK: return %[[YW]], %[[MEAN]], %[[INV]], %[[VAR]]
func.func @batch_norm_training(%x: tensor<3x2x4xf32>, %w: tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>) {
  %y, %m, %i, %v = tg.batch_norm_training %x weight %w {count = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>)
  return %y, %m, %i, %v : tensor<3x2x4xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>
}

// -----

// Tests that moments divide the centered sum of squares by n - correction
// (8 - 1 = 7 here) and that std takes its square root.
// CHECK-LABEL: func.func @moments
// CHECK-NOT: tg.moments
// CHECK: %[[N:.*]] = tg.constant dense<7.000000e+00> : tensor<f32>
// CHECK: %[[S:.*]] = tg.reduce %arg0 {count = 1 : i64, kind = "sum"}
// CHECK: %[[MEAN:.*]] = tg.div %[[S]]
// CHECK: %[[SS:.*]] = tg.reduce %{{.*}} {count = 1 : i64, kind = "sum"}
// CHECK: %[[NB:.*]] = tg.broadcast %[[N]]
// CHECK: %[[VAR:.*]] = tg.div %[[SS]], %[[NB]]
// CHECK: %[[STD:.*]] = tg.sqrt %[[VAR]]
// CHECK: return %[[STD]], %[[MEAN]]
func.func @moments(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %v, %m = tg.moments %x {count = 1 : i64, correction = 1.0 : f64, std = true} : tensor<4x8xf32> -> (tensor<4x1xf32>, tensor<4x1xf32>)
  return %v, %m : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Tests that logsumexp shifts by the row max, replaced by 0 where it is
// infinite, and adds it back after the log.
// CHECK-LABEL: func.func @logsumexp
// CHECK-NOT: tg.logsumexp
// CHECK: %[[M:.*]] = tg.reduce %arg0 {count = 2 : i64, kind = "max"} : tensor<2x3x5xf32> -> tensor<2x1x1xf32>
// CHECK: %[[A:.*]] = tg.abs %[[M]]
// CHECK: %[[INF:.*]] = tg.compare %[[A]], %{{.*}} {predicate = "eq"}
// CHECK: %[[SH:.*]] = tg.select %[[INF]], %{{.*}}, %[[M]]
// CHECK: %[[SB:.*]] = tg.broadcast %[[SH]]
// CHECK: %[[D:.*]] = tg.sub %arg0, %[[SB]]
// CHECK: %[[E:.*]] = tg.exp %[[D]]
// CHECK: %[[S:.*]] = tg.reduce %[[E]] {count = 2 : i64, kind = "sum"}
// CHECK: %[[L:.*]] = tg.log %[[S]]
// CHECK: %[[R:.*]] = tg.add %[[L]], %[[SH]]
// CHECK: return %[[R]]
func.func @logsumexp(%x: tensor<2x3x5xf32>) -> tensor<2x1x1xf32> {
  %r = tg.logsumexp %x {count = 2 : i64} : tensor<2x3x5xf32> -> tensor<2x1x1xf32>
  return %r : tensor<2x1x1xf32>
}

// -----

// Tests each vector_norm order: 2 is sqrt of the sum of squares, 1 the sum
// of |x|, inf the max, 0 the count of nonzeros and 3 sum(|x|^3)^(1/3)
// (|x|^3 itself two multiplications, by the pow pattern).
// CHECK-LABEL: func.func @vector_norms
// CHECK-NOT: tg.vector_norm
// CHECK: %[[A2:.*]] = tg.abs %arg0
// CHECK: %[[SQ:.*]] = tg.mul %[[A2]], %[[A2]]
// CHECK: %[[S2:.*]] = tg.reduce %[[SQ]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[N2:.*]] = tg.sqrt %[[S2]]
// CHECK: %[[A1:.*]] = tg.abs %arg0
// CHECK: %[[N1:.*]] = tg.reduce %[[A1]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[AI:.*]] = tg.abs %arg0
// CHECK: %[[NI:.*]] = tg.reduce %[[AI]] {count = 1 : i64, kind = "max"}
// CHECK: %[[A0:.*]] = tg.abs %arg0
// CHECK: %[[NZ:.*]] = tg.compare %[[A0]], %{{.*}} {predicate = "ne"}
// CHECK: %[[C:.*]] = tg.cast %[[NZ]] : tensor<4x8xi1> -> tensor<4x8xf32>
// CHECK: %[[N0:.*]] = tg.reduce %[[C]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[A3:.*]] = tg.abs %arg0
// CHECK: %[[P2:.*]] = tg.mul %[[A3]], %[[A3]]
// CHECK: %[[P3:.*]] = tg.mul %[[A3]], %[[P2]]
// CHECK: %[[S3:.*]] = tg.reduce %[[P3]] {count = 1 : i64, kind = "sum"}
// CHECK: %[[N3:.*]] = tg.pow %[[S3]]
// CHECK: return %[[N2]], %[[N1]], %[[NI]], %[[N0]], %[[N3]]
func.func @vector_norms(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %n2 = tg.vector_norm %x {count = 1 : i64, ord = 2.0 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
  %n1 = tg.vector_norm %x {count = 1 : i64, ord = 1.0 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ni = tg.vector_norm %x {count = 1 : i64, ord = 0x7FF0000000000000 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
  %n0 = tg.vector_norm %x {count = 1 : i64, ord = 0.0 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
  %n3 = tg.vector_norm %x {count = 1 : i64, ord = 3.0 : f64} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %n2, %n1, %ni, %n0, %n3 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}
