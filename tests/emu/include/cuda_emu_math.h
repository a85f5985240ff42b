//===- cuda_emu_math.h - CUDA's device math and integer intrinsics on the CPU ===//
//
// Part of the emulation prelude (included by cuda_emu.h). The C99 functions
// (expf, log1pf, erff, ...) come from glibc's <math.h> as they are. CUDA's
// fast-math intrinsics (__expf, __fdividef, ...) are computed exactly here, so
// the emulator checks a kernel's indexing and algebra, not its ulp error.
#ifndef TGC_CUDA_EMU_MATH_H
#define TGC_CUDA_EMU_MATH_H

#include <cmath>
#include <cstring>
#include <type_traits>

using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

// --- min / max, as CUDA's overloads: fmin/fmax for floating point ---------------
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value)
    return std::fmin((C)a, (C)b);
  else
    return (C)a < (C)b ? (C)a : (C)b;
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value)
    return std::fmax((C)a, (C)b);
  else
    return (C)a > (C)b ? (C)a : (C)b;
}

// --- functions CUDA adds to C99 ---------------------------------------------------
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
inline float rhypotf(float x, float y) { return 1.0f / std::hypot(x, y); }
inline float fdividef(float a, float b) { return a / b; }
inline float sinpif(float x) { return (float)std::sin(M_PI * (double)x); }
inline float cospif(float x) { return (float)std::cos(M_PI * (double)x); }
inline double sinpi(double x) { return std::sin(M_PI * x); }
inline double cospi(double x) { return std::cos(M_PI * x); }
inline void sincospif(float x, float *s, float *c) { *s = sinpif(x), *c = cospif(x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * (float)M_SQRT1_2); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * M_SQRT1_2); }
inline double erfinv(double y) {
  if (y <= -1 || y >= 1)
    return y == -1 ? -INFINITY : y == 1 ? INFINITY : NAN;
  // Giles' single-precision start, then Newton steps on erf(x) - y in double.
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3.0;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 3; ++i)
    x -= (std::erf(x) - y) / (M_2_SQRTPI * std::exp(-x * x));
  return x;
}
inline float erfinvf(float y) { return (float)erfinv(y); }
inline double erfcinv(double y) { return erfinv(1.0 - y); }
inline float erfcinvf(float y) { return (float)erfcinv(y); }
inline float normcdfinvf(float p) { return (float)(-M_SQRT2 * erfcinv(2.0 * p)); }
inline double normcdfinv(double p) { return -M_SQRT2 * erfcinv(2.0 * p); }

// --- fast-math and rounding-mode intrinsics (all exact / nearest here) ----------
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __tanhf(float x) { return std::tanh(x); }
inline float __exp2f(float x) { return std::exp2(x); }
inline void __sincosf(float x, float *s, float *c) { *s = std::sin(x), *c = std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; }
#define TGC_EMU_ROUNDED(SUFFIX)                                                                    \
  inline float __fadd_##SUFFIX(float a, float b) { return a + b; }                                 \
  inline float __fsub_##SUFFIX(float a, float b) { return a - b; }                                 \
  inline float __fmul_##SUFFIX(float a, float b) { return a * b; }                                 \
  inline float __fdiv_##SUFFIX(float a, float b) { return a / b; }                                 \
  inline float __frcp_##SUFFIX(float a) { return 1.0f / a; }                                       \
  inline float __fsqrt_##SUFFIX(float a) { return std::sqrt(a); }                                  \
  inline float __fmaf_##SUFFIX(float a, float b, float c) { return std::fma(a, b, c); }            \
  inline double __dadd_##SUFFIX(double a, double b) { return a + b; }                              \
  inline double __dsub_##SUFFIX(double a, double b) { return a - b; }                              \
  inline double __dmul_##SUFFIX(double a, double b) { return a * b; }                              \
  inline double __ddiv_##SUFFIX(double a, double b) { return a / b; }                              \
  inline double __drcp_##SUFFIX(double a) { return 1.0 / a; }                                      \
  inline double __dsqrt_##SUFFIX(double a) { return std::sqrt(a); }                                \
  inline double __fma_##SUFFIX(double a, double b, double c) { return std::fma(a, b, c); }
TGC_EMU_ROUNDED(rn)
TGC_EMU_ROUNDED(rz)
TGC_EMU_ROUNDED(ru)
TGC_EMU_ROUNDED(rd)
#undef TGC_EMU_ROUNDED
inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }

// --- conversions -------------------------------------------------------------------
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)std::floor(x); }
inline int __float2int_ru(float x) { return (int)std::ceil(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)std::nearbyint(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline long long __double2ll_rn(double x) { return (long long)std::nearbyint(x); }
inline long long __double2ll_rz(double x) { return (long long)x; }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline int __double2int_rz(double x) { return (int)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline float __double2float_rn(double x) { return (float)x; }

// --- bit casts -------------------------------------------------------------------
namespace tgc_emu_detail {
template <class To, class From> inline To bitCast(From f) {
  static_assert(sizeof(To) == sizeof(From), "bit casts keep the size");
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}
} // namespace tgc_emu_detail
inline float __int_as_float(int x) { return tgc_emu_detail::bitCast<float>(x); }
inline int __float_as_int(float x) { return tgc_emu_detail::bitCast<int>(x); }
inline float __uint_as_float(unsigned x) { return tgc_emu_detail::bitCast<float>(x); }
inline unsigned __float_as_uint(float x) { return tgc_emu_detail::bitCast<unsigned>(x); }
inline double __longlong_as_double(long long x) { return tgc_emu_detail::bitCast<double>(x); }
inline long long __double_as_longlong(double x) { return tgc_emu_detail::bitCast<long long>(x); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

// --- integer intrinsics ------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
  return (long long)(((__int128)a * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) { return (int)((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (s & 31));
}

#endif // TGC_CUDA_EMU_MATH_H
