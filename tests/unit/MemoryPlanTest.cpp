// The memory planner: intermediates share arena bytes when their lifetimes
// do not overlap; outputs, inputs and buffers an aliasing ATen call reads
// stay on their own.
#include "runtime/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>

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

ArgValue tensorArg(int v) {
  ArgValue a;
  a.kind = ArgValue::Tensor;
  a.tensors = {v};
  return a;
}

/// Appends value %out ([1024] f32) and extern `op`(%in) -> %out; the caller
/// places its step.
void addExtern(Plan &p, const char *op, int in, int out) {
  p.values.push_back({{1024}, {1}, DType::Float32});
  p.externs.push_back({op, "", {tensorArg(in)}, {out}});
}

TEST(MemoryPlan, ChainPingPongs) {
  Plan p = chain(5);
  MemoryPlan mp = planMemory(p, std::vector<ExternMemory>{});
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
  addExtern(p, "aten::neg", 2, 6); // step 5 reads %2 again and writes %6, which nothing reads
  p.steps.push_back({Step::Extern, 0});
  MemoryPlan mp = planMemory(p, {{ExternMemory::Fresh}});
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
  MemoryPlan mp = planMemory(p, std::vector<ExternMemory>{});
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
  addExtern(p, "aten::view", 1, 4);
  p.steps.insert(p.steps.begin() + 1, {Step::Extern, 0});
  MemoryPlan mp = planMemory(p, {{ExternMemory::MayAlias}});
  EXPECT_EQ(mp.offset[1], -1);
  EXPECT_GE(mp.offset[2], 0);
}

/// chain(3) with a view of k0's output (%1) as %4, read by a kernel k3
/// (writing %5) after k2, or returned.
Plan chainWithView(bool returned) {
  Plan p = chain(3);
  addExtern(p, "aten::view", 1, 4);
  p.steps.insert(p.steps.begin() + 1, {Step::Extern, 0}); // k0, view, k1, k2
  if (returned) {
    p.outputs.push_back(4);
  } else {
    p.values.push_back({{1024}, {1}, DType::Float32}); // %5
    p.kernels.push_back({"k3", {4}, {5}, 1024});
    p.steps.push_back({Step::Kernel, 3}); // reads the view after k2
    p.outputs.push_back(5);
  }
  return p;
}

TEST(MemoryPlan, AResolvedViewKeepsItsBaseInTheArenaUntilItsLastUse) {
  Plan p = chainWithView(false);
  MemoryPlan mp = planMemory(p, {{ExternMemory::ResolvedView, 1}});
  ASSERT_GE(mp.offset[1], 0) << "the view is the executor's: its base may sit in the arena";
  EXPECT_EQ(mp.offset[4], -1) << "the view has no bytes of its own";
  ASSERT_GE(mp.offset[2], 0);
  // %1 is read through the view by k3 (step 4): it outlives %2 (k1 -> k2),
  // so they must not share bytes, and %1 is released after step 4.
  EXPECT_NE(mp.offset[1], mp.offset[2]);
  EXPECT_TRUE(std::find(mp.releaseAfter[4].begin(), mp.releaseAfter[4].end(), 1) !=
              mp.releaseAfter[4].end());
  EXPECT_TRUE(mp.read[1]);
}

TEST(MemoryPlan, AReturnedViewKeepsItsBaseOutOfTheArena) {
  Plan p = chainWithView(true);
  MemoryPlan mp = planMemory(p, {{ExternMemory::ResolvedView, 1}});
  EXPECT_EQ(mp.offset[1], -1) << "the caller holds an alias of %1 after the run";
}

TEST(MemoryPlan, AViewOfAViewFollowsTheFirstBase) {
  Plan p = chainWithView(false);
  // %6 = view(%4), read by k3 instead of %4.
  addExtern(p, "aten::view", 4, 6);
  p.steps.insert(p.steps.begin() + 2, {Step::Extern, 1});
  p.kernels[3].inputs = {6};
  MemoryPlan mp = planMemory(p, {{ExternMemory::ResolvedView, 1}, {ExternMemory::ResolvedView, 4}});
  ASSERT_GE(mp.offset[1], 0);
  EXPECT_NE(mp.offset[1], mp.offset[2]) << "%1 lives through %6 until k3";
  EXPECT_NE(mp.offset[1], mp.offset[3]);
}

TEST(MemoryPlan, AnOutFormWritesItsResultIntoTheArena) {
  // in -> mm(out=) -> %1 -> k -> %2 (returned).
  Plan p;
  p.values = {{{4, 4}, {4, 1}, DType::Float32}, {{4, 4}, {4, 1}, DType::Float32},
              {{4, 4}, {4, 1}, DType::Float32}};
  p.inputs = {0};
  p.externs.push_back({"aten::mm", "", {tensorArg(0), tensorArg(0)}, {1}});
  p.kernels.push_back({"k", {1}, {2}, 16});
  p.steps = {{Step::Extern, 0}, {Step::Kernel, 0}};
  p.outputs = {2};
  EXPECT_GE(planMemory(p, {{ExternMemory::IntoArena}}).offset[1], 0);
  EXPECT_EQ(planMemory(p, {{ExternMemory::Fresh}}).offset[1], -1) << "the op allocates it";
}

} // namespace
