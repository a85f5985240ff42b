//===- Emitters.h - tgk.kernel to C++ and CUDA C++ source -----------------===//
#ifndef TGC_CODEGEN_EMITTERS_H
#define TGC_CODEGEN_EMITTERS_H

#include "dialects/TGK/IR/TGKDialect.h"
#include "runtime/KernelDescriptor.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <string>
#include <vector>

namespace tgc::codegen {

/// Which language a kernel body is printed in.
enum class Target { Cpu, Cuda };

/// A kernel's descriptor as the emitters read it: the plain descriptor the
/// Plan copies, and which tgk.check_index op is which of its checks.
struct DescribedKernel {
  KernelDescriptor desc;
  llvm::DenseMap<mlir::Operation *, int> checkIds;
};

/// The descriptor of a scheduled tgk.kernel, tgk.row_kernel or
/// tgk.scatter_add_kernel for `target`: the one place its index checks are
/// numbered (walk order), its vector width taken from the schedule, its
/// index type and its launch config chosen. Computed once per kernel right
/// after scheduling; the emitters print from it and the Plan copies it.
DescribedKernel describeKernel(mlir::Operation *kernel, Target target);

/// Header text every generated C++ translation unit starts with (includes,
/// half/bfloat16 conversions, NaN-propagating min/max).
std::string cpuPrelude();

/// `extern "C" void <name>(void *const *buffers)`: buffers are the kernel's
/// inputs then its results, in order; shapes and strides are compiled in.
/// Fails (returns an empty string and sets `error`) on an op it cannot print.
std::string emitCpuKernel(tgk::KernelOp kernel, const DescribedKernel &d, std::string &error);

/// `extern "C" void <name>(void *const *buffers)` for a row kernel: rows in
/// parallel, one pass over the row per reduction.
std::string emitCpuRowKernel(tgk::RowKernelOp kernel, const DescribedKernel &d,
                             std::string &error);

/// `extern "C" void <name>(void *const *buffers)` for a scatter_add kernel
/// (buffers: self, index, src, result, then the index-error record).
std::string emitCpuScatterAddKernel(tgk::ScatterAddKernelOp kernel, const DescribedKernel &d);

/// `extern "C" __global__ void <name>(self, index, src, out, err)`: one
/// thread per position of self outside `dim`.
std::string emitCudaScatterAddKernel(tgk::ScatterAddKernelOp kernel, const DescribedKernel &d);

/// Header text of every generated CUDA translation unit.
std::string cudaPrelude();

/// `extern "C" __global__ void <name>(T0 *in0, ..., Tn *outN)`, a grid-stride
/// loop over the iteration space with the descriptor's block and index
/// type; 16-byte vector loads and stores when its vector width is above 1
/// and every buffer is 16-byte aligned at run time.
std::string emitCudaKernel(tgk::KernelOp kernel, const DescribedKernel &d, std::string &error);

/// `extern "C" __global__ void <name>(in..., out...)` for a row kernel:
/// rows in a grid-stride loop, each row spread over the descriptor's lanes.
std::string emitCudaRowKernel(tgk::RowKernelOp kernel, const DescribedKernel &d,
                              std::string &error);

namespace detail {

/// Prints the scalar body of `kernel` for one iteration `i`: loads of every
/// input at `inputOffsets[j]`, the body ops, stores of every result at
/// `resultOffsets[j]`. Buffers are named in<j>/out<j>; a kernel with index
/// checks (see `d`) takes an index-error record `tgc_err`
/// (`long long[2]`: check id + 1, bad value) after its buffers, and the
/// runtime raises when the first word is set. With `loopChecks` (CPU SIMD
/// loops), checks printed in the loop are branch-free and their ids are
/// collected there: the caller wraps the loop with loopCheckPrologue /
/// loopCheckClauses / loopCheckEpilogue.
///
/// How emitBody splits a body around an inner loop: which inputs (by
/// index) and which index maps the loop leaves unchanged. Values that
/// depend on those alone are printed into `hoisted`, to go before the loop.
/// `fixed` (optional) gives comparisons a known value (the loop's part in
/// which they are constant): they and the selects over them fold.
struct BodySplit {
  std::function<bool(unsigned)> inputInvariant;
  std::function<bool(mlir::AffineMap)> mapInvariant;
  std::string *hoisted;
  const llvm::DenseMap<mlir::Value, bool> *fixed;
};

mlir::LogicalResult emitBody(tgk::KernelOp kernel, const DescribedKernel &d, Target target,
                             llvm::ArrayRef<std::string> inputOffsets,
                             llvm::ArrayRef<std::string> resultOffsets,
                             std::string &out, std::string &error,
                             const BodySplit *split = nullptr,
                             std::vector<int> *loopChecks = nullptr);

/// Around a CPU SIMD loop whose body has branch-free index checks `ids`:
/// the reductions' declarations (before the loop, `indent`), the `omp simd`
/// clauses that make them reductions, and the code after the loop that
/// records a bad index in `tgc_err`.
std::string loopCheckPrologue(const std::vector<int> &ids, const std::string &indent);
std::string loopCheckClauses(const std::vector<int> &ids);
std::string loopCheckEpilogue(const std::vector<int> &ids, const std::string &indent);

/// Prints a tgk.row_kernel's code for the current row (outer indices
/// `oidx<d>` are in scope). On CUDA the descriptor's lanes share the row
/// (`tgc_lane`, `tgc_active` in scope); on the CPU one thread walks it.
mlir::LogicalResult emitRowBody(tgk::RowKernelOp kernel, const DescribedKernel &d,
                                Target target, std::string &out, std::string &error);

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

/// How decomposeIndex spells its statements.
struct IndexSplit {
  std::string indent;              ///< before each statement
  std::string type = "long long";  ///< of the remainder and the indices
  std::string suffix = "LL";       ///< after each size literal
  std::string rem = "rem";         ///< the running remainder
  std::function<std::string(size_t)> name; ///< the index of dim d
  bool outermostIsRest = false;    ///< dim 0 takes the remainder as is
  int64_t skip = -1;               ///< a dim left out (scatter's `dim`)
};
/// The one printer of a row-major index decomposition, shared by every
/// emitter: `<type> <rem> = <from>;`, then from the last dim to the first
/// `const <type> <name(d)> = <rem> % <size>; <rem> /= <size>;` (sizes of 0
/// count as 1), or `const <type> <name(0)> = <rem>;` for dim 0 when
/// `outermostIsRest`.
std::string decomposeIndex(llvm::StringRef from, llvm::ArrayRef<int64_t> shape,
                           const IndexSplit &how);

/// `tgc_uniform` (Philox4x32-10), the same text in both preludes so a seed
/// gives the same numbers on every backend; each prelude defines
/// TGC_RNG_FN (static inline / __device__ __forceinline__) first.
std::string rngPrelude();

} // namespace detail
} // namespace tgc::codegen

#endif // TGC_CODEGEN_EMITTERS_H
