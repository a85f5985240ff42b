//===- cuda_emu_atomics.h - CUDA atomics as real CPU atomics --------------===//
//
// Part of the emulation prelude (included by cuda_emu.h). Blocks of a grid may
// run on several OS threads at once, so every atomic is a real (relaxed, as
// in CUDA) read-modify-write; floating-point ones are compare-and-swap loops.
// The _block and _system scopes map to the same operations.
#ifndef TGC_CUDA_EMU_ATOMICS_H
#define TGC_CUDA_EMU_ATOMICS_H

namespace tgc_emu_detail {
/// Applies `op` to *p atomically through the integer of the same size.
template <class T, class Bits, class Op> inline T casLoop(T *p, Op op) {
  Bits *q = reinterpret_cast<Bits *>(p);
  Bits old = __atomic_load_n(q, __ATOMIC_RELAXED), desired;
  do {
    T cur;
    std::memcpy(&cur, &old, sizeof(T));
    T next = op(cur);
    std::memcpy(&desired, &next, sizeof(T));
  } while (
      !__atomic_compare_exchange_n(q, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  T out;
  std::memcpy(&out, &old, sizeof(T));
  return out;
}
} // namespace tgc_emu_detail

#define TGC_EMU_INT_ATOMICS(T)                                                                     \
  inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }             \
  inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }             \
  inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }             \
  inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }               \
  inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }             \
  inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }           \
  inline T atomicCAS(T *p, T expected, T desired) {                                                \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return expected;                                                                               \
  }                                                                                                \
  inline T atomicMin(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, T>(p, [v](T c) { return v < c ? v : c; });                   \
  }                                                                                                \
  inline T atomicMax(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, T>(p, [v](T c) { return v > c ? v : c; });                   \
  }
TGC_EMU_INT_ATOMICS(int)
TGC_EMU_INT_ATOMICS(unsigned)
TGC_EMU_INT_ATOMICS(long long)
TGC_EMU_INT_ATOMICS(unsigned long long)
#undef TGC_EMU_INT_ATOMICS

inline unsigned short atomicCAS(unsigned short *p, unsigned short expected,
                                unsigned short desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline unsigned atomicInc(unsigned *p, unsigned limit) {
  return tgc_emu_detail::casLoop<unsigned, unsigned>(
      p, [limit](unsigned c) { return c >= limit ? 0u : c + 1u; });
}
inline unsigned atomicDec(unsigned *p, unsigned limit) {
  return tgc_emu_detail::casLoop<unsigned, unsigned>(
      p, [limit](unsigned c) { return (c == 0u || c > limit) ? limit : c - 1u; });
}

#define TGC_EMU_FLOAT_ATOMICS(T, BITS)                                                             \
  inline T atomicAdd(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, BITS>(p, [v](T c) { return T(c + v); });                     \
  }                                                                                                \
  inline T atomicSub(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, BITS>(p, [v](T c) { return T(c - v); });                     \
  }                                                                                                \
  inline T atomicExch(T *p, T v) {                                                                 \
    return tgc_emu_detail::casLoop<T, BITS>(p, [v](T) { return v; });                              \
  }                                                                                                \
  inline T atomicMax(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, BITS>(p, [v](T c) { return T(v > c ? v : c); });             \
  }                                                                                                \
  inline T atomicMin(T *p, T v) {                                                                  \
    return tgc_emu_detail::casLoop<T, BITS>(p, [v](T c) { return T(v < c ? v : c); });             \
  }
TGC_EMU_FLOAT_ATOMICS(float, unsigned)
TGC_EMU_FLOAT_ATOMICS(double, unsigned long long)
TGC_EMU_FLOAT_ATOMICS(__half, unsigned short)
TGC_EMU_FLOAT_ATOMICS(__nv_bfloat16, unsigned short)
#undef TGC_EMU_FLOAT_ATOMICS

#define TGC_EMU_SCOPED(NAME)                                                                       \
  template <class... A> inline auto NAME##_block(A... a) { return NAME(a...); }                    \
  template <class... A> inline auto NAME##_system(A... a) { return NAME(a...); }
TGC_EMU_SCOPED(atomicAdd)
TGC_EMU_SCOPED(atomicSub)
TGC_EMU_SCOPED(atomicExch)
TGC_EMU_SCOPED(atomicMin)
TGC_EMU_SCOPED(atomicMax)
TGC_EMU_SCOPED(atomicCAS)
TGC_EMU_SCOPED(atomicAnd)
TGC_EMU_SCOPED(atomicOr)
TGC_EMU_SCOPED(atomicXor)
#undef TGC_EMU_SCOPED

#endif // TGC_CUDA_EMU_ATOMICS_H
