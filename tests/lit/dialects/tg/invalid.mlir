// RUN: tgc-opt %s -split-input-file -verify-diagnostics

// Tests that binary ops reject operands of different types.
func.func @mismatch(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %r = "tg.add"(%a, %b) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that float-only ops reject integer tensors.
func.func @exp_int(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %r = tg.exp %a : tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

// Tests that tg works on static shapes only.
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %r = tg.relu %a : tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Tests that broadcasts follow ATen's right-aligned rules.
func.func @bad_broadcast(%a: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{input dimension 0 has size 3, which cannot broadcast to 8}}
  %r = tg.broadcast %a : tensor<3xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that gelu's approximation is one of ATen's two.
func.func @bad_gelu(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{approximate must be "none" or "tanh"}}
  %r = tg.gelu %a {approximate = "fast"} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that an extern call passes every operand to its callee.
func.func @extern_unused(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand 1 is not passed to the callee}}
  %r = tg.extern "aten::relu"(%a, %b) {args = [#tg.operand<0>], result_strides = [array<i64: 1>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that an extern callee is a qualified ATen name.
func.func @extern_name(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{callee must be a qualified ATen name}}
  %r = tg.extern "relu"(%a) {args = [#tg.operand<0>], result_strides = [array<i64: 1>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that a reduction keeps the reduced dims with size 1.
func.func @bad_reduce(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduces 1 trailing dims of a rank-2 tensor into rank 1}}
  %r = tg.reduce %a {count = 1 : i64, kind = "sum"} : tensor<4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that comparisons name a known predicate.
func.func @bad_compare(%a: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{unknown predicate "approx"}}
  %r = tg.compare %a, %a {predicate = "approx"} : tensor<4xf32> -> tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

// Tests that a remap's map takes every result dim to every input dim.
func.func @remap_arity(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{must take 2 result dims to 2 input dims}}
  %r = tg.remap %a {map = affine_map<(d0, d1) -> (d0)>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Tests that a remap never reads outside its input.
func.func @remap_bounds(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{map result 1 leaves [0, 8) at a corner of the result}}
  %r = tg.remap %a {map = affine_map<(d0, d1) -> (d0, d1 + 1)>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Tests that a gather needs one integer index tensor of the result's shape per gathered dim.
func.func @gather_index_shape(%w: tensor<10x6xf32>, %i: tensor<4xi64>) -> tensor<4x6xf32> {
  // expected-error @+1 {{index 0 must be an integer tensor of the result's shape}}
  %g = tg.gather %w, %i {dims = array<i64: 0>, map = affine_map<(d0, d1) -> (0, d1)>} : (tensor<10x6xf32>, tensor<4xi64>) -> tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// Tests that a gathered dim must be a dim of the input.
func.func @gather_dim(%w: tensor<10x6xf32>, %i: tensor<4x6xi64>) -> tensor<4x6xf32> {
  // expected-error @+1 {{gathered dim 2 is not a dim of the rank-2 input}}
  %g = tg.gather %w, %i {dims = array<i64: 2>, map = affine_map<(d0, d1) -> (0, d1)>} : (tensor<10x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// Tests that concat pieces must add up to the result along dim.
func.func @concat_sizes(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{inputs add up to 8 along dim 1, the result has 9}}
  %c = tg.concat %a, %b {dim = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x9xf32>
  return %c : tensor<4x9xf32>
}

// -----

// Tests that pad rejects negative padding (import crops with a remap first).
func.func @pad_negative(%a: tensor<4x8xf32>) -> tensor<4x7xf32> {
  // expected-error @+1 {{padding must be non-negative}}
  %p = tg.pad %a {low = array<i64: 0, -1>, high = array<i64: 0, 0>, value = 0.0 : f32} : tensor<4x8xf32> -> tensor<4x7xf32>
  return %p : tensor<4x7xf32>
}

// -----

// Tests that scatter_add's index may not be larger than self outside dim.
func.func @scatter_shape(%s: tensor<5x3xf32>, %i: tensor<8x4xi64>, %src: tensor<8x4xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{index is larger than self in dim 1}}
  %r = tg.scatter_add %s, %i, %src {dim = 0 : i64} : (tensor<5x3xf32>, tensor<8x4xi64>, tensor<8x4xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// Tests that softmax rejects integer tensors.
func.func @softmax_int(%a: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{requires a floating-point element type}}
  %r = tg.softmax %a : tensor<4x8xi32>
  return %r : tensor<4x8xi32>
}

// -----

// Tests that softmax needs a row: a 0-d tensor has none.
func.func @softmax_scalar(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{requires a tensor of rank 1 or more}}
  %r = tg.softmax %a : tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that layer_norm normalizes at least one and at most all dims.
func.func @layer_norm_count(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{normalizes 3 trailing dims of a rank-2 tensor; expected 1 to 2}}
  %y, %m, %r = tg.layer_norm %a {count = 3 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<1x1xf32>, tensor<1x1xf32>)
  return %y : tensor<4x8xf32>
}

// -----

// Tests that layer_norm's statistics keep the normalized dims as 1s.
func.func @layer_norm_stats(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{mean and rstd must be 'tensor<4x1xf32>' (the normalized dims kept as 1s)}}
  %y, %m, %r = tg.layer_norm %a {count = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4x8xf32>
}

// -----

// Tests that layer_norm takes its weight already broadcast to the input.
func.func @layer_norm_weight(%a: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{weight and bias must be broadcast to the input type 'tensor<4x8xf32>'}}
  %y, %m, %r = tg.layer_norm %a weight %w {count = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x8xf32>
}

// -----

// Tests that layer_norm rejects integer tensors.
func.func @layer_norm_int(%a: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{requires a floating-point element type}}
  %y, %m, %r = tg.layer_norm %a {count = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xi32>) -> (tensor<4x8xi32>, tensor<4x1xi32>, tensor<4x1xi32>)
  return %y : tensor<4x8xi32>
}

// -----

// Tests that batch_norm rejects integer tensors.
func.func @batch_norm_int(%a: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{requires a floating-point element type}}
  %y = tg.batch_norm %a, %a, %a {epsilon = 1.0e-05 : f64} : tensor<2x3xi32>
  return %y : tensor<2x3xi32>
}

// -----

// Tests that batch_norm takes its statistics broadcast to the input.
func.func @batch_norm_stats(%a: tensor<2x3xf32>, %m: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "tg.batch_norm"(%a, %m, %m) {epsilon = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Tests that silu, like the other transcendental ops, rejects integers.
func.func @silu_int(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %r = tg.silu %a : tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

// Tests that training batch norm's statistics keep the reduced dims as 1s.
func.func @batch_norm_training_stats(%a: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{mean, invstd and var must be 'tensor<3x1xf32>' (the reduced dims kept as 1s)}}
  %y, %m, %i, %v = tg.batch_norm_training %a {count = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>, tensor<3xf32>)
  return %y : tensor<3x8xf32>
}

// -----

// Tests that training batch norm takes its weight broadcast to the input.
func.func @batch_norm_training_weight(%a: tensor<3x8xf32>, %w: tensor<3x1xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{weight and bias must be broadcast to the input type 'tensor<3x8xf32>'}}
  %y, %m, %i, %v = tg.batch_norm_training %a weight %w {count = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x8xf32>, tensor<3x1xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>)
  return %y : tensor<3x8xf32>
}

// -----

// Tests that moments reduce at least one and at most all dims.
func.func @moments_count(%a: tensor<4x8xf32>) -> tensor<1x1xf32> {
  // expected-error @+1 {{reduces 3 trailing dims of a rank-2 tensor; expected 1 to 2}}
  %v, %m = tg.moments %a {count = 3 : i64, correction = 1.0 : f64} : tensor<4x8xf32> -> (tensor<1x1xf32>, tensor<1x1xf32>)
  return %v : tensor<1x1xf32>
}

// -----

// Tests that logsumexp rejects integer tensors.
func.func @logsumexp_int(%a: tensor<4x8xi32>) -> tensor<4x1xi32> {
  // expected-error @+1 {{requires a floating-point element type}}
  %r = tg.logsumexp %a {count = 1 : i64} : tensor<4x8xi32> -> tensor<4x1xi32>
  return %r : tensor<4x1xi32>
}

// -----

// Tests that vector_norm's result keeps the reduced dims as 1s.
func.func @vector_norm_shape(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result must be 'tensor<4x1xf32>' (the reduced dims kept as 1s)}}
  %r = tg.vector_norm %a {count = 1 : i64, ord = 2.0 : f64} : tensor<4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
