//===- tgc_emu_abi.h - what emulated kernels and the fiber scheduler share ===//
//
// Included by the prelude (inside every emulated kernel's shared object) and
// by the scheduler in the test library. Plain C layout only: the two sides are
// compiled separately and meet through dlsym.
#ifndef TGC_EMU_ABI_H
#define TGC_EMU_ABI_H

struct tgc_emu_uint3 {
  unsigned x, y, z;
};

/// Warp-synchronous operations; every lane named in a mask must make the same
/// one. The scheduler computes all results when the last lane arrives.
enum tgc_emu_warp_op {
  TGC_EMU_WARP_SYNC = 0,    ///< __syncwarp: no value
  TGC_EMU_WARP_SHUFFLE = 1, ///< the value of lane `src` (own value if src did not take part)
  TGC_EMU_WARP_BALLOT = 2,  ///< mask of taking-part lanes whose value is non-zero
  TGC_EMU_WARP_ADD_U32 = 3, ///< __reduce_*_sync over the low 32 bits
  TGC_EMU_WARP_MIN_U32 = 4,
  TGC_EMU_WARP_MAX_U32 = 5,
  TGC_EMU_WARP_MIN_I32 = 6,
  TGC_EMU_WARP_MAX_I32 = 7,
  TGC_EMU_WARP_AND_U32 = 8,
  TGC_EMU_WARP_OR_U32 = 9,
  TGC_EMU_WARP_XOR_U32 = 10,
};

/// __syncthreads_count / _and / _or.
enum tgc_emu_block_op {
  TGC_EMU_BLOCK_COUNT = 0,
  TGC_EMU_BLOCK_AND = 1,
  TGC_EMU_BLOCK_OR = 2,
};

/// Entry points of the scheduler, called from kernel code on its fiber.
struct tgc_emu_hooks {
  /// __syncthreads: switches to the next fiber until the whole block arrived.
  void (*syncthreads)(void);
  /// __syncthreads_count/_and/_or: a barrier that also reduces `predicate`.
  int (*syncthreads_reduce)(int op, int predicate);
  /// A warp-synchronous operation among the lanes of `mask` (see tgc_emu_warp_op).
  unsigned long long (*warp)(unsigned mask, int op, unsigned long long value, int src_lane);
  /// __trap() / a failed device assert: ends the launch with `message`.
  void (*trap)(const char *message);
};

/// One CUDA thread's view of the launch, current while its fiber runs.
struct tgc_emu_thread {
  struct tgc_emu_uint3 thread_idx, block_idx, block_dim, grid_dim;
  void *dynamic_shared; ///< the block's `extern __shared__` buffer
  const struct tgc_emu_hooks *hooks;
};

#endif // TGC_EMU_ABI_H
