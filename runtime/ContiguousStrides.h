//===- ContiguousStrides.h - row-major strides of a shape (plain C++) -----===//
//
// The one helper for contiguous strides, shared by passes, codegen and the
// runtime: header-only and free of MLIR and LibTorch.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_CONTIGUOUSSTRIDES_H
#define TGC_RUNTIME_CONTIGUOUSSTRIDES_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tgc {

/// Row-major element strides of `shape` (any range of int64_t: a
/// std::vector, llvm::ArrayRef, c10::IntArrayRef). A size-0 dim counts as
/// 1, so strides stay those of the nearest non-empty layout.
template <class Shape> std::vector<int64_t> contiguousStrides(const Shape &shape) {
  const int64_t rank = (int64_t)shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  return strides;
}

} // namespace tgc

#endif // TGC_RUNTIME_CONTIGUOUSSTRIDES_H
