//===- Emitters.h - tgk.kernel to C++ and CUDA C++ source -----------------===//
#ifndef TGC_CODEGEN_EMITTERS_H
#define TGC_CODEGEN_EMITTERS_H

#include "dialects/TGK/IR/TGKDialect.h"

#include <string>

namespace tgc::codegen {

/// Which language a kernel body is printed in.
enum class Target { Cpu, Cuda };

/// Header text every generated C++ translation unit starts with (includes,
/// half/bfloat16 conversions, NaN-propagating min/max).
std::string cpuPrelude();

/// `extern "C" void <name>(void *const *buffers)`: buffers are the kernel's
/// inputs then its results, in order; shapes and strides are compiled in.
/// Fails (returns an empty string and sets `error`) on an op it cannot print.
std::string emitCpuKernel(tgk::KernelOp kernel, std::string &error);

/// `extern "C" void <name>(void *const *buffers)` for a row kernel: rows in
/// parallel, one pass over the row per reduction.
std::string emitCpuRowKernel(tgk::RowKernelOp kernel, std::string &error);

/// `extern "C" void <name>(void *const *buffers)` for a scatter_add kernel
/// (buffers: self, index, src, result, then the index-error record).
std::string emitCpuScatterAddKernel(tgk::ScatterAddKernelOp kernel);

/// `extern "C" __global__ void <name>(self, index, src, out, err)`: one
/// thread per position of self outside `dim`.
std::string emitCudaScatterAddKernel(tgk::ScatterAddKernelOp kernel);

/// Header text of every generated CUDA translation unit.
std::string cudaPrelude();

/// `extern "C" __global__ void <name>(T0 *in0, ..., Tn *outN)`, a grid-stride
/// loop over the iteration space with `schedule.block` threads per block;
/// 16-byte vector loads and stores when the schedule's vector width is
/// above 1 and every buffer is 16-byte aligned at run time.
std::string emitCudaKernel(tgk::KernelOp kernel, std::string &error);

/// `extern "C" __global__ void <name>(in..., out...)` for a row kernel:
/// rows in a grid-stride loop, each row spread over cudaRowLanes() threads.
std::string emitCudaRowKernel(tgk::RowKernelOp kernel, std::string &error);

/// Threads that share one row of a row kernel: a power of two up to 32 for
/// rows up to 1024 elements (several rows per block), else the whole block
/// (one block per row, never split across blocks, so sums are
/// deterministic).
int64_t cudaRowLanes(tgk::RowKernelOp kernel);

/// How a CUDA kernel of tgc is launched: `block` threads per block, and the
/// blocks that give every thread one trip through its grid-stride loop.
/// Every kernel is a grid-stride loop, so any grid from 1 to `grid` is
/// correct; the runtime caps it by the device's size.
struct CudaLaunch {
  int64_t grid = 1, block = 256;
};
/// The launch of a tgk.kernel, tgk.row_kernel or tgk.scatter_add_kernel.
CudaLaunch cudaLaunch(mlir::Operation *kernel);

namespace detail {

/// Whether the kernel's body has tgk.check_index ops: then it takes an
/// index-error record (`long long[2]`: check number + 1, bad value) after
/// its buffers, and the runtime raises when the first word is set.
bool hasIndexChecks(mlir::Operation *kernel);

/// Prints the scalar body of `kernel` for one iteration `i`: loads of every
/// input at `inputOffsets[j]`, the body ops, stores of every result at
/// `resultOffsets[j]`. Buffers are named in<j>/out<j>.
mlir::LogicalResult emitBody(tgk::KernelOp kernel, Target target,
                             llvm::ArrayRef<std::string> inputOffsets,
                             llvm::ArrayRef<std::string> resultOffsets,
                             std::string &out, std::string &error);

/// Prints a tgk.row_kernel's code for the current row (outer indices
/// `oidx<d>` are in scope). On CUDA `lanes` threads share the row
/// (`tgc_lane`, `tgc_active` in scope); on the CPU `lanes` is 1.
mlir::LogicalResult emitRowBody(tgk::RowKernelOp kernel, Target target, int64_t lanes,
                                std::string &out, std::string &error);

/// Statements defining the outer indices `oidx<d>` of row `o`.
std::string rowIndices(tgk::RowKernelOp kernel);

/// `ref` (a stored element) as its compute type: half types widen to float.
std::string load(mlir::Type elementType, Target target, const std::string &ref);
/// Compute-type value `v` as the stored type (half types round to nearest even).
std::string store(mlir::Type elementType, Target target, const std::string &v);

/// The C type a buffer of `elementType` is stored as.
std::string storageType(mlir::Type elementType, Target target);

/// Index expressions: for each input/result, the element offset of the
/// iteration `i` (given `idx<d>` per iteration dim when not linear), plus
/// the statements computing `idx<d>` from `i`.
struct Indexing {
  std::string decompose;                  // statements defining idx<d>
  llvm::SmallVector<std::string> inputs;  // offset expression per input
  llvm::SmallVector<std::string> results; // offset expression per result
};
Indexing computeIndexing(tgk::KernelOp kernel, llvm::StringRef indexType);

/// `tgc_uniform` (Philox4x32-10), the same text in both preludes so a seed
/// gives the same numbers on every backend; each prelude defines
/// TGC_RNG_FN (static inline / __device__ __forceinline__) first.
std::string rngPrelude();

} // namespace detail
} // namespace tgc::codegen

#endif // TGC_CODEGEN_EMITTERS_H
