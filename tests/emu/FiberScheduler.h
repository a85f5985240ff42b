//===- FiberScheduler.h - a grid's CUDA threads as fibers on a few OS threads ===//
#ifndef TGC_TESTS_EMU_FIBERSCHEDULER_H
#define TGC_TESTS_EMU_FIBERSCHEDULER_H

#include "tests/emu/include/tgc_emu_abi.h"

#include <cstddef>
#include <functional>
#include <string>

namespace tgc::emu::detail {

/// Everything one launch needs, resolved from an emulated module.
struct GridLaunch {
  std::string kernel;                          ///< for messages
  void (*entry)(void **args) = nullptr;        ///< tgc_emu_entry_<kernel> in the module
  tgc_emu_thread **(*currentSlot)() = nullptr; ///< tgc_emu_current_slot in the module
  void **args = nullptr;
  tgc_emu_uint3 grid{1, 1, 1}, block{1, 1, 1};
  size_t dynamicSharedBytes = 0;
  unsigned workers = 1;  ///< OS threads running blocks
  size_t stackBytes = 0; ///< per CUDA thread (fiber)
  /// Thread order within a block: 0 forward, 1 reverse, 2 shuffled (a fixed
  /// permutation per block, so runs repeat), 3 straggler (shuffled, and
  /// random warps held back until nothing else can run; seeded per block).
  int order = 0;
  /// This OS thread's block of the module's thread-local storage (where
  /// static __shared__ lives), and the part of it to poison at block start.
  std::function<void *()> staticShared;
  size_t staticSharedOffset = 0, staticSharedBytes = 0;
};

/// Runs every block of the grid: each block's threads as fibers on one OS
/// thread, switching at barriers and warp operations; blocks are spread over
/// `workers` OS threads. Throws EmuError (CudaEmulator.h) on a deadlock (a
/// divergent barrier), a trap or a failed device assert.
void runGrid(const GridLaunch &launch);

} // namespace tgc::emu::detail

#endif // TGC_TESTS_EMU_FIBERSCHEDULER_H
