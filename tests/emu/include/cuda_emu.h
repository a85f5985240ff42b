//===- cuda_emu.h - the prelude that makes CUDA C++ compile as host C++ ---===//
//
// Force-included (-include cuda_emu.h) in front of the exact CUDA source a
// test hands to the emulator (tests/emu/CudaEmulator.h). Each CUDA thread runs
// on its own fiber; this header only translates the language: qualifiers,
// built-in index variables (read from the running fiber's tgc_emu_thread),
// barriers and warp operations (calls into the scheduler), static __shared__
// (one instance per OS thread; see docs/cuda-emulation.md for why that is one
// per block), atomics, vector types, 16-bit floats and math functions.
#ifndef TGC_CUDA_EMU_H
#define TGC_CUDA_EMU_H

// The ABI's index type is CUDA's uint3.
#define tgc_emu_uint3 uint3
#include "tgc_emu_abi.h"
#undef tgc_emu_uint3

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <math.h>
#include <type_traits>
#include <utility>

#define TGC_CUDA_EMULATION 1
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __NVCC__ 1

// --- execution-space and storage qualifiers ---------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
/// A block-scope thread_local is static: one instance per OS thread. The
/// scheduler runs all fibers of a block on one OS thread and one block at a
/// time per OS thread, so that instance is exactly the block's shared memory.
#define __shared__ thread_local

// --- the running thread ------------------------------------------------------
/// Set by the scheduler before it switches to a fiber (through
/// tgc_emu_current_slot, below); fibers never move between OS threads.
static thread_local tgc_emu_thread *tgc_emu_cur = nullptr;
extern "C" __attribute__((visibility("default"))) tgc_emu_thread **tgc_emu_current_slot() {
  return &tgc_emu_cur;
}

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define threadIdx (tgc_emu_cur->thread_idx)
#define blockIdx (tgc_emu_cur->block_idx)
#define blockDim (tgc_emu_cur->block_dim)
#define gridDim (tgc_emu_cur->grid_dim)
static constexpr int warpSize = 32;

inline void *tgc_emu_dynamic_shared() { return tgc_emu_cur->dynamic_shared; }

// --- barriers and warp operations --------------------------------------------
// Other fibers run while one waits, so each switch point is also a compiler
// memory barrier: no value of shared or global memory stays in a register
// across it (not even of a static the optimizer thinks nobody else sees).
#define TGC_EMU_MEMORY_BARRIER() __asm__ __volatile__("" ::: "memory")
namespace tgc_emu_detail {
inline int blockBarrier(int op, int p) {
  TGC_EMU_MEMORY_BARRIER();
  int r = op < 0 ? (tgc_emu_cur->hooks->syncthreads(), 0)
                 : tgc_emu_cur->hooks->syncthreads_reduce(op, p != 0);
  TGC_EMU_MEMORY_BARRIER();
  return r;
}
} // namespace tgc_emu_detail
inline void __syncthreads() { tgc_emu_detail::blockBarrier(-1, 0); }
inline int __syncthreads_count(int p) {
  return tgc_emu_detail::blockBarrier(TGC_EMU_BLOCK_COUNT, p);
}
inline int __syncthreads_and(int p) { return tgc_emu_detail::blockBarrier(TGC_EMU_BLOCK_AND, p); }
inline int __syncthreads_or(int p) { return tgc_emu_detail::blockBarrier(TGC_EMU_BLOCK_OR, p); }

namespace tgc_emu_detail {
inline unsigned linearThread() {
  const tgc_emu_thread *t = tgc_emu_cur;
  return t->thread_idx.x + t->block_dim.x * (t->thread_idx.y + t->block_dim.y * t->thread_idx.z);
}
inline int laneId() { return (int)(linearThread() % 32u); }
inline unsigned long long warpOp(unsigned mask, int op, unsigned long long v, int src) {
  TGC_EMU_MEMORY_BARRIER();
  unsigned long long r = tgc_emu_cur->hooks->warp(mask, op, v, src);
  TGC_EMU_MEMORY_BARRIER();
  return r;
}
template <class T> T shuffle(unsigned mask, T var, int src) {
  static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warpOp(mask, TGC_EMU_WARP_SHUFFLE, bits, src);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
} // namespace tgc_emu_detail

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  tgc_emu_detail::warpOp(mask, TGC_EMU_WARP_SYNC, 0, 0);
}
template <class T> T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  int lane = tgc_emu_detail::laneId();
  return tgc_emu_detail::shuffle(mask, var, (lane & ~(width - 1)) + (srcLane & (width - 1)));
}
template <class T> T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  int lane = tgc_emu_detail::laneId();
  int src = (lane & (width - 1)) < (int)delta ? lane : lane - (int)delta;
  return tgc_emu_detail::shuffle(mask, var, src);
}
template <class T> T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  int lane = tgc_emu_detail::laneId();
  int src = (lane & (width - 1)) + (int)delta >= width ? lane : lane + (int)delta;
  return tgc_emu_detail::shuffle(mask, var, src);
}
template <class T> T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  int lane = tgc_emu_detail::laneId();
  int src = lane ^ laneMask;
  if ((src & ~(width - 1)) != (lane & ~(width - 1)))
    src = lane;
  return tgc_emu_detail::shuffle(mask, var, src);
}
inline unsigned __ballot_sync(unsigned mask, int p) {
  return (unsigned)tgc_emu_detail::warpOp(mask, TGC_EMU_WARP_BALLOT, p != 0, 0);
}
inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
inline int __all_sync(unsigned mask, int p) {
  // Only lanes that take part vote, so compare against the lanes that did.
  unsigned voted = (unsigned)tgc_emu_detail::warpOp(mask, TGC_EMU_WARP_BALLOT, 1, 0);
  return __ballot_sync(mask, p) == voted;
}
inline unsigned __activemask() {
  unsigned n = blockDim.x * blockDim.y * blockDim.z, first = tgc_emu_detail::linearThread() & ~31u;
  return n - first >= 32 ? 0xffffffffu : (1u << (n - first)) - 1u;
}
#define TGC_EMU_REDUCE(NAME, T, OP)                                                                \
  inline T NAME(unsigned mask, T v) { return (T)tgc_emu_detail::warpOp(mask, OP, (unsigned)v, 0); }
TGC_EMU_REDUCE(__reduce_add_sync, unsigned, TGC_EMU_WARP_ADD_U32)
TGC_EMU_REDUCE(__reduce_add_sync, int, TGC_EMU_WARP_ADD_U32)
TGC_EMU_REDUCE(__reduce_min_sync, unsigned, TGC_EMU_WARP_MIN_U32)
TGC_EMU_REDUCE(__reduce_max_sync, unsigned, TGC_EMU_WARP_MAX_U32)
TGC_EMU_REDUCE(__reduce_min_sync, int, TGC_EMU_WARP_MIN_I32)
TGC_EMU_REDUCE(__reduce_max_sync, int, TGC_EMU_WARP_MAX_I32)
TGC_EMU_REDUCE(__reduce_and_sync, unsigned, TGC_EMU_WARP_AND_U32)
TGC_EMU_REDUCE(__reduce_or_sync, unsigned, TGC_EMU_WARP_OR_U32)
TGC_EMU_REDUCE(__reduce_xor_sync, unsigned, TGC_EMU_WARP_XOR_U32)
#undef TGC_EMU_REDUCE

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __nanosleep(unsigned) {}
inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }
[[noreturn]] inline void __trap() {
  tgc_emu_cur->hooks->trap("__trap() called");
  __builtin_unreachable();
}
#undef assert
#define TGC_EMU_STR2(x) #x
#define TGC_EMU_STR(x) TGC_EMU_STR2(x)
#define assert(e)                                                                                  \
  ((e) ? (void)0                                                                                   \
       : tgc_emu_cur->hooks->trap("device assertion `" #e "` failed at " __FILE__                  \
                                  ":" TGC_EMU_STR(__LINE__)))

// --- vector types (CUDA's sizes and alignments) --------------------------------
#define TGC_EMU_VEC1(T, NAME, A)                                                                   \
  struct __attribute__((aligned(A))) NAME##1 {                                                     \
    T x;                                                                                           \
  };                                                                                               \
  inline NAME##1 make_##NAME##1(T x) { return {x}; }
#define TGC_EMU_VEC2(T, NAME, A)                                                                   \
  struct __attribute__((aligned(A))) NAME##2 {                                                     \
    T x, y;                                                                                        \
  };                                                                                               \
  inline NAME##2 make_##NAME##2(T x, T y) { return {x, y}; }
#define TGC_EMU_VEC3(T, NAME, A)                                                                   \
  struct __attribute__((aligned(A))) NAME##3 {                                                     \
    T x, y, z;                                                                                     \
  };                                                                                               \
  inline NAME##3 make_##NAME##3(T x, T y, T z) { return {x, y, z}; }
#define TGC_EMU_VEC4(T, NAME, A)                                                                   \
  struct __attribute__((aligned(A))) NAME##4 {                                                     \
    T x, y, z, w;                                                                                  \
  };                                                                                               \
  inline NAME##4 make_##NAME##4(T x, T y, T z, T w) { return {x, y, z, w}; }
#define TGC_EMU_VEC(T, NAME, A1, A2, A3, A4)                                                       \
  TGC_EMU_VEC1(T, NAME, A1)                                                                        \
  TGC_EMU_VEC2(T, NAME, A2) TGC_EMU_VEC3(T, NAME, A3) TGC_EMU_VEC4(T, NAME, A4)
TGC_EMU_VEC(signed char, char, 1, 2, 1, 4)
TGC_EMU_VEC(unsigned char, uchar, 1, 2, 1, 4)
TGC_EMU_VEC(short, short, 2, 4, 2, 8)
TGC_EMU_VEC(unsigned short, ushort, 2, 4, 2, 8)
TGC_EMU_VEC(int, int, 4, 8, 4, 16)
// uint3 is the built-in index type, declared with the ABI (tgc_emu_abi.h).
TGC_EMU_VEC1(unsigned, uint, 4)
TGC_EMU_VEC2(unsigned, uint, 8) TGC_EMU_VEC4(unsigned, uint, 16) inline uint3
    make_uint3(unsigned x, unsigned y, unsigned z) {
  return {x, y, z};
}
TGC_EMU_VEC(long, long, 8, 16, 8, 16)
TGC_EMU_VEC(unsigned long, ulong, 8, 16, 8, 16)
TGC_EMU_VEC(long long, longlong, 8, 16, 8, 16)
TGC_EMU_VEC(unsigned long long, ulonglong, 8, 16, 8, 16)
TGC_EMU_VEC(float, float, 4, 8, 4, 16)
TGC_EMU_VEC(double, double, 8, 16, 8, 16)
#undef TGC_EMU_VEC
#undef TGC_EMU_VEC1
#undef TGC_EMU_VEC2
#undef TGC_EMU_VEC3
#undef TGC_EMU_VEC4
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 as in CUDA");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 as in CUDA");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 as in CUDA");

#include "cuda_emu_half.h"

// --- read-only and cache-hinted loads/stores: plain memory on the CPU --------
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwt(T *p, T v) { *p = v; }

#include "cuda_emu_atomics.h"
#include "cuda_emu_math.h"

// --- the host side of a launch ---------------------------------------------------
namespace tgc_emu_detail {
/// Calls `f` with its parameters read from `args` (cuLaunchKernel's void**):
/// the parameter types come from the function's own type.
template <class... A, std::size_t... I>
void invokeWith(void (*f)(A...), void **args, std::index_sequence<I...>) {
  f(*static_cast<std::remove_cv_t<std::remove_reference_t<A>> *>(args[I])...);
}
template <class... A> void invoke(void (*f)(A...), void **args) {
  invokeWith(f, args, std::index_sequence_for<A...>{});
}
template <class... A> int parameterSizes(void (*)(A...), const unsigned **sizes) {
  static const unsigned s[] = {(unsigned)sizeof(A)..., 0u};
  *sizes = s;
  return (int)sizeof...(A);
}
} // namespace tgc_emu_detail

#ifdef TGC_EMU_GPU_NUMERICS
#include "cuda_emu_gpu_numerics.h"
#endif

#endif // TGC_CUDA_EMU_H
