//===- Segment.h - one captured static subgraph, as plain data ------------===//
//
// Capture (LibTorch side) produces a Segment; import (MLIR side) consumes
// it. Plain C++ only, so neither side's headers leak into the other.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_CAPTURE_SEGMENT_H
#define TGC_COMPILER_CAPTURE_SEGMENT_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace tgc {

/// One ATen call recorded at the dispatcher.
struct SegmentNode {
  std::string op;       ///< "aten::mul"
  std::string overload; ///< "Tensor"
  std::vector<ArgValue> args;
  std::vector<int> outputs; ///< value ids; -1 for a result left undefined
  bool mutates = false;     ///< the schema writes to an argument

  /// Value ids of the tensors this node reads (None entries of optional
  /// lists left out), in argument order.
  std::vector<int> tensorArgs() const {
    std::vector<int> ids;
    for (const ArgValue &a : args)
      if (a.kind == ArgValue::Tensor || a.kind == ArgValue::TensorList)
        for (int t : a.tensors)
          if (t >= 0)
            ids.push_back(t);
    return ids;
  }
};

struct Segment {
  std::string device = "cpu";
  std::vector<TensorSpec> values; ///< indexed by value id
  std::vector<int> inputs;        ///< value ids of graph inputs, in order
  std::vector<SegmentNode> nodes; ///< in program order
  std::vector<int> outputs;       ///< value ids returned, in order

  /// One line per node: `%3 = aten::mul.Tensor(%1, %2)`.
  std::string str() const;

  /// A key that is equal for structurally equal segments: ops, arguments,
  /// and every value's sizes, strides and dtype.
  std::string structuralKey() const;

  /// This segment for another device ("cuda", "cuda:0", "cpu"): the same
  /// graph with its factories' device arguments moved there.
  Segment on(const std::string &device) const;

  /// A Plan that calls every node through the dispatcher, as eager would:
  /// what runs when the pipeline cannot compile a segment.
  Plan toExternPlan() const;
};

} // namespace tgc

#endif // TGC_COMPILER_CAPTURE_SEGMENT_H
