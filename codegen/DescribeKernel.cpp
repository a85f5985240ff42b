//===- DescribeKernel.cpp - a kernel's descriptor, computed once ----------===//
//
// describeKernel decides, for one scheduled kernel, everything the emitters
// and the Plan must agree on: the index checks and their ids, the vector
// width, the index type and the launch config. emitKernel hands the
// descriptor to the kernel kind's emitter.
//
//===----------------------------------------------------------------------===//
#include "codegen/Emitters.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tgc::codegen {

namespace {

/// Blocks of `perBlock` work items that cover `work`, at least one.
int64_t blocksFor(int64_t work, int64_t perBlock) {
  return std::max<int64_t>(1, (work + perBlock - 1) / perBlock);
}

/// 32-bit index arithmetic is faster; 64-bit once the iteration space or
/// any buffer offset can reach 2^31, or the grid-stride loop's index can:
/// after the last element a thread adds the stride (`threads`, every
/// thread of the grid) once more before the loop test, so n + threads must
/// stay below 2^31 too.
IndexType indexType(tgk::KernelOp kernel, int64_t threads) {
  const int64_t n = kernel.getNumIterations();
  int64_t maxOffset = n + threads;
  for (Attribute s : llvm::concat<const Attribute>(
           kernel.getInputStrides().getValue(), kernel.getResultStrides().getValue()))
    for (int64_t st : cast<DenseI64ArrayAttr>(s).asArrayRef())
      maxOffset = std::max(maxOffset, st * std::max<int64_t>(n, 1));
  // Inputs read by tgk.load may be larger than the iteration space.
  for (auto [t, s] : llvm::zip(kernel.getInputs().getTypes(), kernel.getInputStrides())) {
    int64_t extent = 0;
    for (auto [size, st] : llvm::zip(cast<ShapedType>(t).getShape(),
                                     cast<DenseI64ArrayAttr>(s).asArrayRef()))
      extent += std::max<int64_t>(size - 1, 0) * st;
    maxOffset = std::max(maxOffset, extent + 1);
  }
  return maxOffset >= (int64_t(1) << 31) ? IndexType::I64 : IndexType::I32;
}

/// The schedule's vector width (tgk-schedule chose it), when the kernel
/// can honour it: a hand-written schedule on a kernel that is not linear,
/// or whose size the width does not divide, gets 1.
int64_t vectorWidth(tgk::KernelOp kernel) {
  auto s = kernel.getScheduleAttr();
  int64_t v = s ? s.getVector() : 1;
  if (v <= 1 || kernel.getNumIterations() % v != 0 || !kernel.isLinear())
    return 1;
  return v;
}

void describe(tgk::KernelOp k, Target target, KernelDescriptor &d) {
  auto s = k.getScheduleAttr();
  d.vector = vectorWidth(k);
  d.launch.block = s ? s.getBlock() : 256;
  if (target == Target::Cuda) {
    d.launch.grid = blocksFor(k.getNumIterations(), d.launch.block * d.vector);
    d.index = indexType(k, d.launch.grid * d.launch.block);
  }
}

/// Threads that share one row of a CUDA row kernel: a power of two up to
/// 32 for rows up to 1024 elements (several rows per block), else the
/// whole block (one block per row, never split across blocks, so sums are
/// deterministic).
int64_t rowLanes(tgk::RowKernelOp kernel) {
  const int64_t n = kernel.getRowSize();
  if (n > 1024)
    return n <= 4096 ? 256 : n <= 16384 ? 512 : 1024;
  int64_t lanes = 1;
  while (lanes < n && lanes < 32)
    lanes *= 2;
  return lanes;
}

void describe(tgk::RowKernelOp k, Target target, KernelDescriptor &d) {
  d.launch.lanes = 1; // the CPU walks a row with one thread
  if (target != Target::Cuda)
    return;
  // 256 threads a block, or the row's lanes when a row takes the whole block.
  d.launch.lanes = rowLanes(k);
  d.launch.block = std::max<int64_t>(256, d.launch.lanes);
  d.launch.rowsPerBlock = d.launch.block / d.launch.lanes;
  d.launch.grid = blocksFor(k.getNumRows(), d.launch.rowsPerBlock);
}

void describe(tgk::ScatterAddKernelOp k, Target target, KernelDescriptor &d) {
  auto self = cast<ShapedType>(k.getSelf().getType());
  int64_t dim = k.getDim();
  d.checks.push_back({dim, self.getDimSize(dim), false, "aten::scatter_add", 0});
  if (target != Target::Cuda)
    return;
  int64_t columns = self.getNumElements() / std::max<int64_t>(self.getDimSize(dim), 1);
  d.launch.grid = blocksFor(columns, d.launch.block);
}

} // namespace

DescribedKernel describeKernel(Operation *kernel, Target target) {
  DescribedKernel d;
  kernel->walk([&](tgk::CheckIndexOp c) {
    int id = d.desc.checks.size();
    d.checkIds[c] = id;
    d.desc.checks.push_back(
        {c.getDim(), (int64_t)c.getSize(), c.getWrap(), c.getOrigin().str(), id});
  });
  llvm::TypeSwitch<Operation *>(kernel)
      .Case([&](tgk::KernelOp k) { describe(k, target, d.desc); })
      .Case([&](tgk::RowKernelOp k) { describe(k, target, d.desc); })
      .Case([&](tgk::ScatterAddKernelOp k) { describe(k, target, d.desc); });
  return d;
}

} // namespace tgc::codegen
