//===- Regions.h - cutting a frozen TorchScript graph into regions --------===//
//
// The AOT compiler keeps the frozen TorchScript program as the driver and
// compiles its straight-line regions: maximal runs of ATen nodes of one
// block that have no side effects, write no tensor in place, read no value
// the host computed outside the run, and hand only tensors to the nodes
// after them. Control flow (prim::If, prim::Loop), host reads and every
// other node stay TorchScript; the blocks of control flow are cut the same
// way, so both branches of an `if` get their own regions.
//
// Each region R becomes
//
//   %ok = tgc::segment_guard(R.id, [inputs])
//   %outs = prim::If(%ok)
//     block0(): tgc::run_segment(R.id, [inputs]) unpacked
//     block1(): the region's original nodes
//
// so a guard miss, or a region never compiled, runs the original nodes.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_AOT_REGIONS_H
#define TGC_COMPILER_AOT_REGIONS_H

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// One region: its nodes (in the fallback block once rewritten), the tensor
/// values it reads from outside and the values used after it.
struct Region {
  int64_t id = 0;
  std::vector<torch::jit::Node *> nodes;
  std::vector<int64_t> numbers; ///< the nodes' numbers (numberNodes)
  std::vector<torch::jit::Value *> inputs;
  std::vector<torch::jit::Value *> outputs;
};

/// A node that stays TorchScript, and why (docs/aot.md: eager segments).
struct KeptNode {
  std::string op;     ///< "aten::nonzero", "prim::If"
  std::string reason;
  bool plumbing = false; ///< tuple/list packing: no work, never a break
};

struct Partition {
  std::vector<Region> regions;
  std::vector<KeptNode> kept;
  /// Writes (and their views) that landed in a region without the tensor
  /// they write: exclude them (node number -> reason) and partition again.
  /// partitionGraph's caller must not use a partition where this is not
  /// empty.
  std::map<int64_t, std::string> recut;
};

/// An in-place op that may join a region: it writes its first argument,
/// which is a chain of single-use views (`views`, nearest first) of a fresh
/// tensor made by `root` in the same block, and its own results are unused.
struct WriteChain {
  torch::jit::Node *root = nullptr;
  std::vector<torch::jit::Node *> views;
};
std::optional<WriteChain> writeChain(torch::jit::Node *n);

/// Hoists every constant to the top of the graph and turns in-place ops
/// into functional ones where no alias can observe the difference.
void prepareGraph(const std::shared_ptr<torch::jit::Graph> &graph);

/// Numbers every node in pre-order; equal for a graph and its copy().
std::map<torch::jit::Node *, int64_t> numberNodes(torch::jit::Graph &graph);

/// Cuts `graph` into regions and rewrites each as above. Nodes whose number
/// is in `excluded` stay TorchScript with the given reason.
Partition partitionGraph(torch::jit::Graph &graph,
                         const std::map<int64_t, std::string> &excluded);

} // namespace tgc

#endif // TGC_COMPILER_AOT_REGIONS_H
