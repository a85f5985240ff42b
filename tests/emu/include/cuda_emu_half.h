//===- cuda_emu_half.h - __half and __nv_bfloat16 for CUDA-on-CPU emulation ===//
//
// Part of the emulation prelude (included by cuda_emu.h). Storage is the IEEE
// binary16 / bfloat16 bit pattern; arithmetic goes through float, the way the
// emitter computes; conversions round to nearest even, bit-exact with CUDA's
// __float2half_rn / __float2bfloat16_rn (NaN becomes the canonical 0x7fff).
#ifndef TGC_CUDA_EMU_HALF_H
#define TGC_CUDA_EMU_HALF_H

#include <cmath>
#include <cstring>

namespace tgc_emu_detail {

inline unsigned short floatToHalfBits(float f) {
  unsigned x;
  std::memcpy(&x, &f, 4);
  unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
  unsigned a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) // infinity or NaN
    return a > 0x7f800000u ? (unsigned short)0x7fff : (unsigned short)(sign | 0x7c00u);
  if (a >= 0x477ff000u) // 65520 and up round to infinity
    return (unsigned short)(sign | 0x7c00u);
  if (a < 0x38800000u) { // below 2^-14: a subnormal half (or zero); scaling is exact
    float v;
    std::memcpy(&v, &a, 4);
    return (unsigned short)(sign | (unsigned short)std::nearbyint(v * 16777216.0f));
  }
  unsigned mant = a & 0x7fffffu;
  unsigned h = ((((a >> 23) - 127u + 15u)) << 10) | (mant >> 13);
  unsigned rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the right answer
  return (unsigned short)(sign | h);
}

inline float halfBitsToFloat(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  unsigned bits;
  if (exp == 0) {
    float v = (float)mant * 5.9604644775390625e-8f; // mant * 2^-24, exact
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15u + 127u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline unsigned short floatToBfloat16Bits(float f) {
  unsigned x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff;
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bfloat16BitsToFloat(unsigned short b) {
  unsigned x = (unsigned)b << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

} // namespace tgc_emu_detail

/// The two 16-bit float types share one shape: bits, implicit float
/// conversions both ways (as CUDA's without __CUDA_NO_HALF_CONVERSIONS__) and
/// arithmetic through float.
#define TGC_EMU_HALF_TYPE(T, TO_BITS, FROM_BITS)                                                   \
  struct __attribute__((aligned(2))) T {                                                           \
    unsigned short __x;                                                                            \
    T() = default;                                                                                 \
    T(float f) : __x(tgc_emu_detail::TO_BITS(f)) {}                                                \
    T(double d) : __x(tgc_emu_detail::TO_BITS((float)d)) {}                                        \
    T(int i) : __x(tgc_emu_detail::TO_BITS((float)i)) {}                                           \
    T(long long i) : __x(tgc_emu_detail::TO_BITS((float)i)) {}                                     \
    T(unsigned i) : __x(tgc_emu_detail::TO_BITS((float)i)) {}                                      \
    operator float() const { return tgc_emu_detail::FROM_BITS(__x); }                              \
    static T fromBits(unsigned short b) {                                                          \
      T t;                                                                                         \
      t.__x = b;                                                                                   \
      return t;                                                                                    \
    }                                                                                              \
  };                                                                                               \
  inline T operator+(T a, T b) { return T((float)a + (float)b); }                                  \
  inline T operator-(T a, T b) { return T((float)a - (float)b); }                                  \
  inline T operator*(T a, T b) { return T((float)a * (float)b); }                                  \
  inline T operator/(T a, T b) { return T((float)a / (float)b); }                                  \
  inline T operator-(T a) { return T::fromBits((unsigned short)(a.__x ^ 0x8000u)); }               \
  inline T &operator+=(T &a, T b) { return a = a + b; }                                            \
  inline T &operator-=(T &a, T b) { return a = a - b; }                                            \
  inline T &operator*=(T &a, T b) { return a = a * b; }                                            \
  inline T &operator/=(T &a, T b) { return a = a / b; }                                            \
  inline bool operator==(T a, T b) { return (float)a == (float)b; }                                \
  inline bool operator!=(T a, T b) { return (float)a != (float)b; }                                \
  inline bool operator<(T a, T b) { return (float)a < (float)b; }                                  \
  inline bool operator<=(T a, T b) { return (float)a <= (float)b; }                                \
  inline bool operator>(T a, T b) { return (float)a > (float)b; }                                  \
  inline bool operator>=(T a, T b) { return (float)a >= (float)b; }

TGC_EMU_HALF_TYPE(__half, floatToHalfBits, halfBitsToFloat)
TGC_EMU_HALF_TYPE(__nv_bfloat16, floatToBfloat16Bits, bfloat16BitsToFloat)
#undef TGC_EMU_HALF_TYPE

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

struct __attribute__((aligned(4))) __half2 {
  __half x, y;
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;

// --- conversions (round to nearest even unless the name says otherwise) ---
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double d) { return __half((float)d); }
inline float __half2float(__half h) { return (float)h; }
inline __half __ushort_as_half(unsigned short b) { return __half::fromBits(b); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __short_as_half(short b) { return __half::fromBits((unsigned short)b); }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16::fromBits(b); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __short_as_bfloat16(short b) {
  return __nv_bfloat16::fromBits((unsigned short)b);
}
inline short __bfloat16_as_short(__nv_bfloat16 b) { return (short)b.__x; }

inline __half __int2half_rn(int i) { return __half((float)i); }
inline __half __uint2half_rn(unsigned i) { return __half((float)i); }
inline int __half2int_rz(__half h) { return (int)(float)h; }
inline int __half2int_rn(__half h) { return (int)std::nearbyint((float)h); }
inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __nv_bfloat16((float)i); }
inline int __bfloat162int_rz(__nv_bfloat16 b) { return (int)(float)b; }
inline int __bfloat162int_rn(__nv_bfloat16 b) { return (int)std::nearbyint((float)b); }

inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return {__half(a), __half(a)}; }
inline float2 __half22float2(__half2 h) { return {(float)h.x, (float)h.y}; }
inline __half2 __float22half2_rn(float2 f) { return {__half(f.x), __half(f.y)}; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return {__nv_bfloat16(a), __nv_bfloat16(b)};
}
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {__nv_bfloat16(a), __nv_bfloat16(a)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 b) { return {(float)b.x, (float)b.y}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) {
  return {__nv_bfloat16(f.x), __nv_bfloat16(f.y)};
}
inline float __low2float(__nv_bfloat162 b) { return (float)b.x; }
inline float __high2float(__nv_bfloat162 b) { return (float)b.y; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 b) { return b.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 b) { return b.y; }

// --- arithmetic intrinsics: computed in float, rounded once to the type ---
#define TGC_EMU_HALF_OPS(T, P)                                                                     \
  inline T __h##P##add(T a, T b) { return T((float)a + (float)b); }                                \
  inline T __h##P##sub(T a, T b) { return T((float)a - (float)b); }                                \
  inline T __h##P##mul(T a, T b) { return T((float)a * (float)b); }                                \
  inline T __h##P##div(T a, T b) { return T((float)a / (float)b); }                                \
  inline T __h##P##fma(T a, T b, T c) { return T(std::fma((float)a, (float)b, (float)c)); }
TGC_EMU_HALF_OPS(__half, )
#undef TGC_EMU_HALF_OPS
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) { return __half::fromBits((unsigned short)(a.__x & 0x7fffu)); }
inline __half __hmax(__half a, __half b) { return std::fmax((float)a, (float)b); }
inline __half __hmin(__half a, __half b) { return std::fmin((float)a, (float)b); }
inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
inline bool __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u; }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hgt(__half a, __half b) { return a > b; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(std::fma((float)a, (float)b, (float)c));
}
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) {
  return __nv_bfloat16::fromBits((unsigned short)(a.__x & 0x7fffu));
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  return std::fmax((float)a, (float)b);
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  return std::fmin((float)a, (float)b);
}
inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
inline bool __hisinf(__nv_bfloat16 a) { return (a.__x & 0x7fffu) == 0x7f80u; }

// --- paired arithmetic: each half computed in float, rounded once ---------------
#define TGC_EMU_PAIR_OPS(P, E)                                                                     \
  inline P __hadd2(P a, P b) { return {E((float)a.x + (float)b.x), E((float)a.y + (float)b.y)}; }  \
  inline P __hsub2(P a, P b) { return {E((float)a.x - (float)b.x), E((float)a.y - (float)b.y)}; }  \
  inline P __hmul2(P a, P b) { return {E((float)a.x * (float)b.x), E((float)a.y * (float)b.y)}; }  \
  inline P __h2div(P a, P b) { return {E((float)a.x / (float)b.x), E((float)a.y / (float)b.y)}; }  \
  inline P __hfma2(P a, P b, P c) {                                                                \
    return {E(std::fma((float)a.x, (float)b.x, (float)c.x)),                                       \
            E(std::fma((float)a.y, (float)b.y, (float)c.y))};                                      \
  }                                                                                                \
  inline P __hneg2(P a) { return {-a.x, -a.y}; }                                                   \
  inline P __habs2(P a) { return {__habs(a.x), __habs(a.y)}; }                                     \
  inline P __hmax2(P a, P b) { return {__hmax(a.x, b.x), __hmax(a.y, b.y)}; }                      \
  inline P __hmin2(P a, P b) { return {__hmin(a.x, b.x), __hmin(a.y, b.y)}; }                      \
  inline P operator+(P a, P b) { return __hadd2(a, b); }                                           \
  inline P operator-(P a, P b) { return __hsub2(a, b); }                                           \
  inline P operator*(P a, P b) { return __hmul2(a, b); }                                           \
  inline P operator/(P a, P b) { return __h2div(a, b); }
TGC_EMU_PAIR_OPS(__half2, __half)
TGC_EMU_PAIR_OPS(__nv_bfloat162, __nv_bfloat16)
#undef TGC_EMU_PAIR_OPS

#endif // TGC_CUDA_EMU_HALF_H
