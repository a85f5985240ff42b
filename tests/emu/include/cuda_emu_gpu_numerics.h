//===- cuda_emu_gpu_numerics.h - GPU-like rounding for the emulator -------===//
//
// Included last by cuda_emu.h when TGC_EMU_NUMERICS=gpu compiles with
// -DTGC_EMU_GPU_NUMERICS (and -mfma -ffp-contract=fast, so a * b + c
// contracts to one fused multiply-add, as nvcc and NVRTC do by default).
// Every single-precision math function a kernel calls is moved off glibc's
// result by a deterministic pseudo-random number of ulps, within CUDA's
// documented maximum error for it (CUDA C++ Programming Guide, "Mathematical
// Functions"). The fast intrinsics get their own, larger errors. A kernel
// whose checks pass here and in the exact configuration does not depend on
// libm's last bit. Double precision and sqrtf, which is correctly rounded on
// the GPU too, stay exact.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CUDA_EMU_GPU_NUMERICS_H
#define TGC_CUDA_EMU_GPU_NUMERICS_H

namespace tgc_emu_gpu {

/// A well-mixed 32-bit hash of the argument's bits and the function's salt.
inline unsigned mix(float x, unsigned salt) {
  unsigned h;
  std::memcpy(&h, &x, 4);
  h ^= salt * 0x9e3779b9u;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

/// `r` moved by k ulps, k in [-n, n] chosen by the hash of `x`.
inline float ulps(float r, float x, int n, unsigned salt) {
  if (!std::isfinite(r) || n <= 0)
    return r;
  int k = int(mix(x, salt) % unsigned(2 * n + 1)) - n;
  for (; k > 0; --k)
    r = std::nextafter(r, INFINITY);
  for (; k < 0; ++k)
    r = std::nextafter(r, -INFINITY);
  return r;
}

/// `r` plus an absolute error of at most `bound`.
inline float absolute(float r, float x, float bound, unsigned salt) {
  if (!std::isfinite(r))
    return r;
  float u = float(mix(x, salt) % 2001u) / 1000.0f - 1.0f; // [-1, 1]
  return r + u * bound;
}

inline float expf_(float x) { return ulps(::expf(x), x, 2, 1); }
inline float exp2f_(float x) { return ulps(::exp2f(x), x, 2, 2); }
inline float exp10f_(float x) { return ulps(::exp10f(x), x, 2, 3); }
inline float expm1f_(float x) { return ulps(::expm1f(x), x, 1, 4); }
inline float logf_(float x) { return ulps(::logf(x), x, 1, 5); }
inline float log2f_(float x) { return ulps(::log2f(x), x, 1, 6); }
inline float log10f_(float x) { return ulps(::log10f(x), x, 2, 7); }
inline float log1pf_(float x) { return ulps(::log1pf(x), x, 1, 8); }
inline float sinf_(float x) { return ulps(::sinf(x), x, 2, 9); }
inline float cosf_(float x) { return ulps(::cosf(x), x, 2, 10); }
inline float tanf_(float x) { return ulps(::tanf(x), x, 4, 11); }
inline float tanhf_(float x) { return ulps(::tanhf(x), x, 2, 12); }
inline float erff_(float x) { return ulps(::erff(x), x, 2, 13); }
inline float erfcf_(float x) { return ulps(::erfcf(x), x, 4, 14); }
inline float powf_(float a, float b) { return ulps(::powf(a, b), a * 3.0f + b, 4, 15); }
inline float rsqrtf_(float x) { return ulps(1.0f / std::sqrt(x), x, 2, 16); }
inline float cbrtf_(float x) { return ulps(::cbrtf(x), x, 1, 17); }
inline float atanf_(float x) { return ulps(::atanf(x), x, 2, 18); }
inline float sigmoidf_(float x) { return 1.0f / (1.0f + expf_(-x)); }

// The intrinsics: __expf 2 + floor(|1.173 x|) ulps; __logf and __log2f 2^-21
// absolute on [0.5, 2], else 3 ulps; __sinf/__cosf 2^-21.41 absolute on
// [-pi, pi]; __fdividef 2 ulps; __tanhf 2^-11 relative; __powf through
// exp2(b * log2(a)).
inline float fexpf(float x) { return ulps(::expf(x), x, 2 + int(std::fabs(1.173f * x)), 21); }
inline float fexp10f(float x) { return ulps(::exp10f(x), x, 2 + int(std::fabs(2.97f * x)), 22); }
inline float flogf(float x) {
  return x >= 0.5f && x <= 2.0f ? absolute(::logf(x), x, 3.6e-7f, 23) : ulps(::logf(x), x, 3, 23);
}
inline float flog2f(float x) {
  return x >= 0.5f && x <= 2.0f ? absolute(::log2f(x), x, 2.4e-7f, 24) : ulps(::log2f(x), x, 2, 24);
}
inline float flog10f(float x) { return flog2f(x) * 0.30103f; }
inline float fsinf(float x) { return absolute(::sinf(x), x, 3.6e-7f, 25); }
inline float fcosf(float x) { return absolute(::cosf(x), x, 3.6e-7f, 26); }
inline float fdividef(float a, float b) { return ulps(a / b, a * 7.0f + b, 2, 27); }
inline float ftanhf(float x) {
  float r = ::tanhf(x);
  return r + r * (float(mix(x, 28) % 2001u) / 1000.0f - 1.0f) * 4.9e-4f;
}
inline float fpowf(float a, float b) { return ulps(::exp2f(b * ::log2f(a)), a * 5.0f + b, 8, 29); }

} // namespace tgc_emu_gpu

// The kernel's calls from here on (the prelude above keeps glibc's).
#define expf(x) tgc_emu_gpu::expf_(x)
#define exp2f(x) tgc_emu_gpu::exp2f_(x)
#define exp10f(x) tgc_emu_gpu::exp10f_(x)
#define expm1f(x) tgc_emu_gpu::expm1f_(x)
#define logf(x) tgc_emu_gpu::logf_(x)
#define log2f(x) tgc_emu_gpu::log2f_(x)
#define log10f(x) tgc_emu_gpu::log10f_(x)
#define log1pf(x) tgc_emu_gpu::log1pf_(x)
#define sinf(x) tgc_emu_gpu::sinf_(x)
#define cosf(x) tgc_emu_gpu::cosf_(x)
#define tanf(x) tgc_emu_gpu::tanf_(x)
#define tanhf(x) tgc_emu_gpu::tanhf_(x)
#define erff(x) tgc_emu_gpu::erff_(x)
#define erfcf(x) tgc_emu_gpu::erfcf_(x)
#define powf(a, b) tgc_emu_gpu::powf_(a, b)
#define rsqrtf(x) tgc_emu_gpu::rsqrtf_(x)
#define cbrtf(x) tgc_emu_gpu::cbrtf_(x)
#define atanf(x) tgc_emu_gpu::atanf_(x)
#define __expf(x) tgc_emu_gpu::fexpf(x)
#define __exp10f(x) tgc_emu_gpu::fexp10f(x)
#define __logf(x) tgc_emu_gpu::flogf(x)
#define __log2f(x) tgc_emu_gpu::flog2f(x)
#define __log10f(x) tgc_emu_gpu::flog10f(x)
#define __sinf(x) tgc_emu_gpu::fsinf(x)
#define __cosf(x) tgc_emu_gpu::fcosf(x)
#define __fdividef(a, b) tgc_emu_gpu::fdividef(a, b)
#define __tanhf(x) tgc_emu_gpu::ftanhf(x)
#define __powf(a, b) tgc_emu_gpu::fpowf(a, b)

#endif // TGC_CUDA_EMU_GPU_NUMERICS_H
