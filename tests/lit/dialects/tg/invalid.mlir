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
