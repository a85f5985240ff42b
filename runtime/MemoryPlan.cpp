//===- MemoryPlan.cpp - buffer reuse for a Plan's intermediates -----------===//
#include "runtime/MemoryPlan.h"

#include <algorithm>
#include <map>

namespace tgc {

static int64_t elementSize(DType t) {
  switch (t) {
  case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
  case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
  case DType::Int32: case DType::Float32: return 4;
  case DType::Int64: case DType::Float64: return 8;
  }
  return 8;
}

int64_t spanBytes(const TensorSpec &s) {
  int64_t span = 1;
  for (size_t d = 0; d < s.sizes.size(); ++d) {
    if (s.sizes[d] == 0)
      return 0;
    span += (s.sizes[d] - 1) * std::max<int64_t>(s.strides[d], 0);
  }
  return span * elementSize(s.dtype);
}

namespace {

/// Liveness of every value over the steps, computed once for the arena and
/// for the executor's releases.
struct Liveness {
  std::vector<int> first;   ///< step that writes a kernel output, else -1
  std::vector<int> last;    ///< last step that reads or writes the value, else -1
  std::vector<bool> arena;  ///< kernel outputs no ATen call may alias
  std::vector<bool> read;   ///< read by a step or returned
};

Liveness liveness(const Plan &plan, const std::vector<ExternMemory> &externs) {
  const size_t n = plan.values.size();
  Liveness l{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<bool>(n, false),
             std::vector<bool>(n, false)};
  // The buffer each value lives in: its own, or a resolved view's base's.
  std::vector<int> root(n);
  for (size_t v = 0; v < n; ++v)
    root[v] = int(v);
  auto kindOf = [&](int e) {
    return size_t(e) < externs.size() ? externs[e] : ExternMemory{};
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    auto use = [&](int v) {
      l.last[v] = std::max(l.last[v], (int)s);
      l.last[root[v]] = std::max(l.last[root[v]], (int)s);
    };
    auto read = [&](int v) {
      use(v);
      l.read[v] = true;
      l.read[root[v]] = true;
    };
    const Step &st = plan.steps[s];
    if (st.kind == Step::Kernel) {
      const KernelStep &k = plan.kernels[st.index];
      for (int v : k.outputs) {
        l.arena[v] = true;
        l.first[v] = s;
        use(v);
      }
      for (int v : k.inputs)
        read(v);
      continue;
    }
    const ExternStep &e = plan.externs[st.index];
    const ExternMemory m = kindOf(st.index);
    for (const ArgValue &a : e.args)
      for (int v : a.tensors)
        if (v >= 0) {
          read(v);
          if (m.kind == ExternMemory::MayAlias)
            l.arena[root[v]] = false; // an alias could outlive the slot
        }
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      int v = e.outputs[i];
      if (v < 0)
        continue;
      if (m.kind == ExternMemory::ResolvedView && m.base >= 0)
        root[v] = root[m.base];
      if (m.kind == ExternMemory::IntoArena && i == 0) {
        l.arena[v] = true;
        l.first[v] = s;
      }
      use(v);
    }
  }
  for (int v : plan.inputs)
    l.arena[v] = false;
  for (int v : plan.outputs) {
    l.arena[v] = false;
    l.arena[root[v]] = false; // a returned alias keeps its base's bytes
    l.read[v] = true;
    l.read[root[v]] = true;
  }
  return l;
}

/// Per step, the values whose last use it is: all but inputs and outputs.
std::vector<std::vector<int>> releases(const Plan &plan, const Liveness &l) {
  std::vector<bool> keep(plan.values.size(), false);
  for (int v : plan.inputs)
    keep[v] = true;
  for (int v : plan.outputs)
    keep[v] = true;
  std::vector<std::vector<int>> after(plan.steps.size());
  for (size_t v = 0; v < plan.values.size(); ++v)
    if (l.last[v] >= 0 && !keep[v])
      after[l.last[v]].push_back(v);
  return after;
}

} // namespace

MemoryPlan planMemory(const Plan &plan, const std::vector<ExternMemory> &externs) {
  const size_t n = plan.values.size();
  MemoryPlan mp;
  mp.offset.assign(n, -1);
  Liveness l = liveness(plan, externs);
  mp.releaseAfter = releases(plan, l);
  mp.read = l.read;
  const std::vector<int> &first = l.first, &last = l.last;
  const std::vector<bool> &eligible = l.arena;

  // Greedy by first write: place each buffer at the lowest offset that no
  // live buffer overlaps.
  struct Placed { int64_t begin, end; int last; };
  std::vector<Placed> placed;
  std::vector<int> order;
  for (size_t v = 0; v < n; ++v)
    if (eligible[v] && first[v] >= 0 && spanBytes(plan.values[v]) > 0)
      order.push_back(v);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return first[a] < first[b]; });
  for (int v : order) {
    int64_t bytes = (spanBytes(plan.values[v]) + 63) / 64 * 64;
    mp.unsharedBytes += bytes;
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed &p : placed)
      if (p.last >= first[v]) // still alive when v is written
        busy.push_back({p.begin, p.end});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto [b, e] : busy) {
      if (at + bytes <= b)
        break;
      at = std::max(at, e);
    }
    mp.offset[v] = at;
    placed.push_back({at, at + bytes, last[v]});
    mp.arenaBytes = std::max(mp.arenaBytes, at + bytes);
  }
  // Peak of live arena bytes over the steps.
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    int64_t live = 0;
    for (int v : order)
      if (first[v] <= (int)s && last[v] >= (int)s)
        live += (spanBytes(plan.values[v]) + 63) / 64 * 64;
    mp.peakLiveBytes = std::max(mp.peakLiveBytes, live);
  }
  return mp;
}

} // namespace tgc
