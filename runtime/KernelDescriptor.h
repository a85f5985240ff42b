//===- KernelDescriptor.h - the facts of one generated kernel (plain C++) -===//
//
// What codegen decides about a kernel once, right after scheduling
// (codegen::describeKernel): its index checks, numbered; its vector width;
// its index type; how it is launched. The emitters print from it and the
// Plan's KernelStep copies it, so no later stage derives these facts again.
// No MLIR and no LibTorch: the runtime holds copies.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_KERNELDESCRIPTOR_H
#define TGC_RUNTIME_KERNELDESCRIPTOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// A bounds check inside a kernel (tgk.check_index, or scatter_add's):
/// what the runtime says when the kernel reports a bad index. The kernel
/// reports `id + 1`; ids are the checks' positions in their kernel.
struct IndexCheck {
  int64_t dim = 0, size = 0;
  bool wrap = false;  ///< negative indices count from the end
  std::string origin; ///< the ATen op, "aten::embedding"
  int id = 0;         ///< the number the generated code reports
  bool operator==(const IndexCheck &o) const {
    return dim == o.dim && size == o.size && wrap == o.wrap && origin == o.origin && id == o.id;
  }
};

/// The integer type a kernel computes element offsets in.
enum class IndexType : int8_t {
  I32, ///< `int`: faster; every offset and the iteration count stay below 2^31
  I64, ///< `long long`: the CPU's always, CUDA's once an offset can reach 2^31
};

/// How a kernel is launched. CUDA: `block` threads per block and the
/// `grid` that gives every thread one trip through its grid-stride loop
/// (any grid from 1 to `grid` is correct; the runtime caps it by the
/// device's size). CPU: `block` is the schedule's chunk hint, `grid` 1.
struct LaunchConfig {
  int64_t grid = 1, block = 256;
  /// Row kernels: threads that share one row (a power of two; 1 on the
  /// CPU) and rows one block runs per trip (block / lanes); 0 elsewhere.
  int64_t lanes = 0, rowsPerBlock = 0;
  bool operator==(const LaunchConfig &o) const {
    return grid == o.grid && block == o.block && lanes == o.lanes && rowsPerBlock == o.rowsPerBlock;
  }
};

/// A tile configuration of a tiled kernel (matmul templates, tiled
/// reductions). Nothing sets it yet: the autotuner of a later issue picks
/// one per kernel and stores it here.
struct TileConfig {
  std::vector<int64_t> tile; ///< elements per block along each tiled dim
  int64_t warps = 0, stages = 0;
};

struct KernelDescriptor {
  std::vector<IndexCheck> checks; ///< in id order: checks[i].id == i
  /// Elements a thread loads and stores at once (CUDA: 16-byte vectors);
  /// the schedule's width where the kernel can honour it, else 1.
  int64_t vector = 1;
  IndexType index = IndexType::I64;
  LaunchConfig launch;
  std::optional<TileConfig> tile; ///< empty until the autotuner sets it

  /// The C type of `index`.
  const char *indexTypeName() const { return index == IndexType::I32 ? "int" : "long long"; }
};

} // namespace tgc

#endif // TGC_RUNTIME_KERNELDESCRIPTOR_H
