//===- Partition.cpp - min-cut split of a joint graph ---------------------===//
#include "compiler/training/Partition.h"

#include "compiler/ops/OpRegistry.h"

#include "runtime/MemoryPlan.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace tgc {

namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

/// Edmonds-Karp max flow on a small graph; `reachable` then gives the
/// source side of a minimum cut.
class MinCut {
public:
  explicit MinCut(int n) : adj_(n) {}
  void edge(int from, int to, int64_t cap) {
    adj_[from].push_back(edges_.size());
    edges_.push_back({to, cap});
    adj_[to].push_back(edges_.size());
    edges_.push_back({from, 0});
  }
  void run(int s, int t) {
    while (true) {
      std::vector<int> via(adj_.size(), -1);
      std::deque<int> queue{s};
      via[s] = -2;
      while (!queue.empty() && via[t] == -1) {
        int u = queue.front();
        queue.pop_front();
        for (int e : adj_[u])
          if (edges_[e].cap > 0 && via[edges_[e].to] == -1) {
            via[edges_[e].to] = e;
            queue.push_back(edges_[e].to);
          }
      }
      if (via[t] == -1)
        return;
      int64_t push = kInf;
      for (int v = t; v != s; v = edges_[via[v] ^ 1].to)
        push = std::min(push, edges_[via[v]].cap);
      for (int v = t; v != s; v = edges_[via[v] ^ 1].to) {
        edges_[via[v]].cap -= push;
        edges_[via[v] ^ 1].cap += push;
      }
    }
  }
  std::vector<bool> reachable(int s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::deque<int> queue{s};
    seen[s] = true;
    while (!queue.empty()) {
      int u = queue.front();
      queue.pop_front();
      for (int e : adj_[u])
        if (edges_[e].cap > 0 && !seen[edges_[e].to]) {
          seen[edges_[e].to] = true;
          queue.push_back(edges_[e].to);
        }
    }
    return seen;
  }

private:
  struct Edge {
    int to;
    int64_t cap;
  };
  std::vector<std::vector<int>> adj_;
  std::vector<Edge> edges_;
};

std::vector<int> tensorArgs(const SegmentNode &n) {
  std::vector<int> ids;
  for (const ArgValue &a : n.args)
    for (int id : a.tensors)
      if (id >= 0)
        ids.push_back(id);
  return ids;
}

/// A segment of `src`'s nodes `nodes` (in order) with fresh, dense value
/// ids: inputs first, then each node's outputs.
Segment extract(const Segment &src, const std::vector<size_t> &nodes,
                const std::vector<int> &inputs, const std::vector<int> &outputs) {
  Segment out;
  out.device = src.device;
  std::map<int, int> id;
  auto define = [&](int old) {
    id[old] = out.values.size();
    out.values.push_back(src.values[old]);
    return id[old];
  };
  auto use = [&](int old) {
    auto it = id.find(old);
    if (it == id.end())
      throw std::logic_error("tgc: partition left value %" + std::to_string(old) + " undefined");
    return it->second;
  };
  for (int v : inputs)
    out.inputs.push_back(id.count(v) ? id[v] : define(v));
  for (size_t i : nodes) {
    SegmentNode n = src.nodes[i];
    for (ArgValue &a : n.args)
      for (int &t : a.tensors)
        if (t >= 0)
          t = use(t);
    for (int &o : n.outputs)
      if (o >= 0)
        o = id.count(o) ? id[o] : define(o); // in-place ops return their argument
    out.nodes.push_back(std::move(n));
  }
  for (int v : outputs)
    out.outputs.push_back(use(v));
  return out;
}

/// The nodes among `candidates` that `roots` need, in program order.
std::vector<size_t> ancestors(const Segment &s, const std::vector<int> &producer,
                              std::vector<int> roots, const std::set<size_t> &candidates,
                              std::set<size_t> always = {}) {
  std::set<size_t> keep = always;
  for (size_t n : always)
    for (int a : tensorArgs(s.nodes[n]))
      roots.push_back(a);
  while (!roots.empty()) {
    int v = roots.back();
    roots.pop_back();
    int p = producer[v];
    if (p < 0 || !candidates.count(p) || !keep.insert(p).second)
      continue;
    for (int a : tensorArgs(s.nodes[p]))
      roots.push_back(a);
  }
  return std::vector<size_t>(keep.begin(), keep.end());
}

} // namespace

bool isRecomputable(const SegmentNode &n) {
  return !n.mutates && ops::recomputeOf(n.op, n.overload) == ops::Recompute::Cheap;
}

namespace {

/// The state of one partition: the joint graph's parts by role.
class Partitioner {
public:
  explicit Partitioner(const JointGraph &g)
      : g(g), j(g.joint), nf(g.forwardNodes), producer(j.values.size(), -1),
        primals(j.inputs.begin(), j.inputs.begin() + g.numPrimals),
        tangents(j.inputs.begin() + g.numPrimals, j.inputs.end()),
        numOutputs(j.outputs.size() - g.gradOf.size()),
        userOutputs(j.outputs.begin(), j.outputs.begin() + numOutputs),
        grads(j.outputs.begin() + numOutputs, j.outputs.end()) {
    for (size_t i = 0; i < j.nodes.size(); ++i)
      for (int o : j.nodes[i].outputs)
        if (o >= 0 && producer[o] < 0)
          producer[o] = i;
    free.insert(primals.begin(), primals.end());
    free.insert(userOutputs.begin(), userOutputs.end());
  }
  TrainingPartition run();

private:
  bool isForwardValue(int v) const {
    return producer[v] >= 0 ? producer[v] < (int)nf
                            : std::count(primals.begin(), primals.end(), v) > 0;
  }
  std::set<int> neededByBackward() const;
  std::vector<bool> sourceSideOfMinCut(const std::set<int> &needed) const;
  /// Builds p.forward; returns each of its outputs' position by value.
  std::map<int, int> buildForward(TrainingPartition &p, const std::vector<int> &saved) const;
  void buildBackward(TrainingPartition &p, const std::vector<int> &saved,
                     const std::map<int, int> &forwardPosition,
                     const std::set<size_t> &recompute) const;

  const JointGraph &g;
  const Segment &j;
  const size_t nf;
  std::vector<int> producer;
  std::vector<int> primals, tangents;
  size_t numOutputs;
  std::vector<int> userOutputs, grads;
  std::set<int> free; ///< values that cost nothing to keep: inputs, outputs
};

/// The forward values (and primals) the backward reads.
std::set<int> Partitioner::neededByBackward() const {
  std::set<int> needed;
  for (size_t i = nf; i < j.nodes.size(); ++i)
    for (int a : tensorArgs(j.nodes[i]))
      if (isForwardValue(a))
        needed.insert(a);
  for (int v : grads)
    if (isForwardValue(v))
      needed.insert(v);
  return needed;
}

/// Flow network: value v is in(v) = 2v -> out(v) = 2v + 1, its capacity the
/// cost of saving v; ops connect their arguments' out to their results' in;
/// ops that must not run again hang from the source, reads of the backward
/// from the sink. Returns which nodes the minimum cut leaves on the source side.
std::vector<bool> Partitioner::sourceSideOfMinCut(const std::set<int> &needed) const {
  const int nv = j.values.size(), S = 2 * nv, T = 2 * nv + 1;
  MinCut cut(2 * nv + 2);
  for (int v : primals)
    cut.edge(S, 2 * v, kInf);
  for (size_t i = 0; i < nf; ++i) {
    const SegmentNode &n = j.nodes[i];
    bool cheap = isRecomputable(n);
    for (int o : n.outputs) {
      if (o < 0 || producer[o] != (int)i)
        continue;
      if (!cheap)
        cut.edge(S, 2 * o, kInf);
      for (int a : tensorArgs(n))
        cut.edge(2 * a + 1, 2 * o, kInf);
    }
  }
  for (int v = 0; v < nv; ++v)
    if (isForwardValue(v))
      cut.edge(2 * v, 2 * v + 1, free.count(v) ? 0 : spanBytes(j.values[v]));
  for (int v : needed)
    cut.edge(2 * v + 1, T, kInf);
  cut.run(S, T);
  return cut.reachable(S);
}

/// Forward: what the outputs and the saved values need, and every write.
std::map<int, int> Partitioner::buildForward(TrainingPartition &p,
                                             const std::vector<int> &saved) const {
  std::set<size_t> forwardNodes, mutating;
  for (size_t i = 0; i < nf; ++i) {
    forwardNodes.insert(i);
    if (j.nodes[i].mutates)
      mutating.insert(i);
  }
  std::vector<int> outs = userOutputs;
  for (int v : saved)
    if (!free.count(v)) {
      outs.push_back(v);
      p.layout.savedBytes += spanBytes(j.values[v]);
    }
  p.forward = extract(j, ancestors(j, producer, outs, forwardNodes, mutating), primals, outs);
  p.layout.numPrimals = primals.size();
  p.layout.numOutputs = numOutputs;
  std::map<int, int> position;
  for (size_t k = 0; k < outs.size(); ++k)
    position.emplace(outs[k], k);
  return position;
}

/// Backward: saved values and tangents in, the recomputed ops, then the
/// derivative ops the gradients need.
void Partitioner::buildBackward(TrainingPartition &p, const std::vector<int> &saved,
                                const std::map<int, int> &forwardPosition,
                                const std::set<size_t> &recompute) const {
  std::vector<int> ins;
  for (int v : saved) {
    auto prim = std::find(primals.begin(), primals.end(), v);
    if (prim != primals.end())
      p.layout.backwardInputs.push_back({TrainingLayout::Source::Primal, int(prim - primals.begin())});
    else
      p.layout.backwardInputs.push_back({TrainingLayout::Source::ForwardOutput, forwardPosition.at(v)});
    ins.push_back(v);
  }
  for (size_t k = 0; k < tangents.size(); ++k) {
    p.layout.backwardInputs.push_back({TrainingLayout::Source::Tangent, int(k)});
    ins.push_back(tangents[k]);
  }
  std::set<size_t> nodes(recompute.begin(), recompute.end());
  for (size_t i = nf; i < j.nodes.size(); ++i)
    nodes.insert(i);
  p.backward = extract(j, ancestors(j, producer, grads, nodes), ins, grads);
}

TrainingPartition Partitioner::run() {
  std::set<int> needed = neededByBackward();
  std::vector<bool> sourceSide = sourceSideOfMinCut(needed);
  // Walk back from what the backward reads: source-side values are saved,
  // sink-side ones are recomputed from theirs.
  std::set<size_t> recompute;
  std::vector<int> saved, work(needed.begin(), needed.end());
  std::set<int> seen;
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    if (!seen.insert(v).second)
      continue;
    if (producer[v] < 0 || sourceSide[2 * v]) {
      saved.push_back(v);
      continue;
    }
    recompute.insert(producer[v]);
    for (int a : tensorArgs(j.nodes[producer[v]]))
      work.push_back(a);
  }
  std::sort(saved.begin(), saved.end());
  TrainingPartition p;
  buildBackward(p, saved, buildForward(p, saved), recompute);
  p.recomputedNodes = recompute.size();
  p.layout.tangentOf = g.tangentOf;
  p.layout.gradOf = g.gradOf;
  return p;
}

} // namespace

TrainingPartition partitionJoint(const JointGraph &g) { return Partitioner(g).run(); }

} // namespace tgc
