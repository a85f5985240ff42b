// RUN: tgc-opt %s -split-input-file -verify-diagnostics

// Tests that a kernel's body takes one scalar per input.
func.func @kernel_args(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body takes 2 scalars for 1 inputs}}
  %r = tgk.kernel "k0" ins(%a : tensor<4xf32>) {iteration_shape = array<i64: 4>,
      indexing_maps = [affine_map<(d0) -> (d0)>], input_strides = [array<i64: 1>],
      result_strides = [array<i64: 1>]} -> tensor<4xf32> {
  ^bb0(%x: f32, %y: f32):
    tgk.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Tests that indexing maps match the iteration space and input ranks.
func.func @kernel_map(%a: tensor<4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{indexing map 0 must map 2 iteration dims to the 1 dims of input 0}}
  %r = tgk.kernel "k0" ins(%a : tensor<4xf32>) {iteration_shape = array<i64: 4, 4>,
      indexing_maps = [affine_map<(d0) -> (d0)>], input_strides = [array<i64: 1>],
      result_strides = [array<i64: 4, 1>]} -> tensor<4x4xf32> {
  ^bb0(%x: f32):
    tgk.yield %x : f32
  }
  return %r : tensor<4x4xf32>
}

// -----

// Tests that schedules name a known kernel kind.
// expected-error @+1 {{unknown kernel kind "magic"}}
func.func private @bad_schedule() attributes {s = #tgk.schedule<kind = "magic", block = 256, vector = 4, warps = 8>}

// -----

// Tests that tgk.load yields the element type of the buffer it reads.
func.func @load_type(%w: tensor<10x6xf32>) -> tensor<4x6xf32> {
  %r = tgk.kernel "k0" ins(%w : tensor<10x6xf32>) {
      iteration_shape = array<i64: 4, 6>, indexing_maps = [affine_map<(d0, d1) -> (0, 0)>],
      input_strides = [array<i64: 6, 1>], result_strides = [array<i64: 6, 1>]} -> tensor<4x6xf32> {
  ^bb0(%t: tensor<10x6xf32>):
    // expected-error @+1 {{result must be the buffer's element type}}
    %v = tgk.load %t[] {map = affine_map<(d0, d1) -> (d0, d1)>} : tensor<10x6xf32> -> f16
    tgk.yield %v : f16
  }
  return %r : tensor<4x6xf32>
}
