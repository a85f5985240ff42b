// The memory planner: intermediates share arena bytes when their lifetimes
// do not overlap; outputs, inputs and buffers an aliasing ATen call reads
// stay on their own.
#include "runtime/MemoryPlan.h"

#include <gtest/gtest.h>

namespace {

using namespace tgc;

/// A chain in -> k0 -> k1 -> ... -> k(n-1) -> out of [1024] f32 buffers.
Plan chain(int n) {
  Plan p;
  p.values.push_back({{1024}, {1}, DType::Float32});
  p.inputs = {0};
  for (int i = 0; i < n; ++i) {
    p.values.push_back({{1024}, {1}, DType::Float32});
    p.kernels.push_back({"k" + std::to_string(i), {i}, {i + 1}, 1024});
    p.steps.push_back({Step::Kernel, i});
  }
  p.outputs = {n};
  return p;
}

TEST(MemoryPlan, ChainPingPongs) {
  Plan p = chain(5);
  MemoryPlan mp = planMemory(p, {});
  // Four intermediates of 4 KiB; at most two alive at once.
  EXPECT_EQ(mp.unsharedBytes, 4 * 4096);
  EXPECT_EQ(mp.arenaBytes, 2 * 4096);
  EXPECT_EQ(mp.peakLiveBytes, 2 * 4096);
  EXPECT_EQ(mp.offset[0], -1) << "inputs are not in the arena";
  EXPECT_EQ(mp.offset[5], -1) << "outputs are not in the arena";
  for (int v = 1; v < 4; ++v)
    EXPECT_NE(mp.offset[v], mp.offset[v + 1]) << "a kernel's input and output never share bytes";
}

TEST(MemoryPlan, EachIntermediateIsReleasedAfterItsLastUse) {
  // The executor releases from this list: the same liveness as the arena's.
  Plan p = chain(5);
  ExternStep e; // step 5 reads %2 again and writes %6, which nothing reads
  ArgValue a;
  a.kind = ArgValue::Tensor;
  a.tensors = {2};
  e.op = "aten::neg";
  e.args = {a};
  e.outputs = {6};
  p.values.push_back({{1024}, {1}, DType::Float32});
  p.externs.push_back(e);
  p.steps.push_back({Step::Extern, 0});
  MemoryPlan mp = planMemory(p, {false});
  std::vector<std::vector<int>> want = {{}, {1}, {}, {3}, {4}, {2, 6}};
  EXPECT_EQ(mp.releaseAfter, want) << "inputs and outputs are never released";
  EXPECT_NE(mp.offset[2], mp.offset[3]) << "%2 lives until step 5";
  EXPECT_NE(mp.offset[2], mp.offset[4]);
}

TEST(MemoryPlan, LiveBuffersNeverOverlap) {
  // k0 and k1 both read the input; k2 reads both results: all three alive.
  Plan p;
  for (int i = 0; i < 5; ++i)
    p.values.push_back({{256, 3}, {3, 1}, DType::Float64});
  p.inputs = {0};
  p.kernels = {{"k0", {0}, {1}, 768}, {"k1", {0}, {2}, 768}, {"k2", {1, 2}, {3}, 768},
               {"k3", {3}, {4}, 768}};
  for (int i = 0; i < 4; ++i)
    p.steps.push_back({Step::Kernel, i});
  p.outputs = {4};
  MemoryPlan mp = planMemory(p, {});
  ASSERT_GE(mp.offset[1], 0);
  ASSERT_GE(mp.offset[2], 0);
  ASSERT_GE(mp.offset[3], 0);
  const int64_t bytes = 256 * 3 * 8;
  auto overlap = [&](int a, int b) {
    return mp.offset[a] < mp.offset[b] + bytes && mp.offset[b] < mp.offset[a] + bytes;
  };
  EXPECT_FALSE(overlap(1, 2));
  EXPECT_FALSE(overlap(1, 3));
  EXPECT_FALSE(overlap(2, 3));
  EXPECT_EQ(mp.arenaBytes, 3 * bytes);
}

TEST(MemoryPlan, BuffersAnAliasingCallReadsStayApart) {
  Plan p = chain(3);
  // An ATen view of value 1 (the output of k0), say.
  ExternStep e{"aten::view", "", {}, {4}};
  ArgValue a;
  a.kind = ArgValue::Tensor;
  a.tensors = {1};
  e.args.push_back(a);
  p.values.push_back({{1024}, {1}, DType::Float32});
  p.externs.push_back(e);
  p.steps.insert(p.steps.begin() + 1, {Step::Extern, 0});
  MemoryPlan mp = planMemory(p, {true});
  EXPECT_EQ(mp.offset[1], -1);
  EXPECT_GE(mp.offset[2], 0);
}

} // namespace
