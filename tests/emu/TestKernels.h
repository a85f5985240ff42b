//===- TestKernels.h - hand-written CUDA kernels of the kinds tgc emits ---===//
//
// Shared by the emulation tests (run on the CPU, compared with references)
// and the NVRTC tests (the same text compiles for sm_80 and sm_90).
#ifndef TGC_TESTS_EMU_TESTKERNELS_H
#define TGC_TESTS_EMU_TESTKERNELS_H

#include <string>
#include <utility>
#include <vector>

namespace tgc::emu::kernels {

/// Grid-stride pointwise with 16-byte loads/stores and a scalar tail.
inline const char *kPointwiseVec4 = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ __forceinline__ float fused(float a, float b) {
  float g = 0.5f * a * (1.0f + erff(a * 0.70710678f));           // GELU
  return g * b + tanhf(b) - expf(-fabsf(a)) + log1pf(b * b) + rsqrtf(1.0f + a * a) +
         fmaxf(a, b) * __fdividef(1.0f, 2.0f + sqrtf(fabsf(b)));
}
extern "C" __global__ void __launch_bounds__(256)
pointwise_vec4(const float *__restrict__ in0, const float *__restrict__ in1,
               float *__restrict__ out0, long long n) {
  const long long nvec = n / 4;
  const float4 *a4 = reinterpret_cast<const float4 *>(in0);
  const float4 *b4 = reinterpret_cast<const float4 *>(in1);
  float4 *o4 = reinterpret_cast<float4 *>(out0);
  const long long stride = (long long)blockDim.x * gridDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    float4 a = __ldg(&a4[i]), b = __ldg(&b4[i]);
    o4[i] = make_float4(fused(a.x, b.x), fused(a.y, b.y), fused(a.z, b.z), fused(a.w, b.w));
  }
  for (long long i = nvec * 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out0[i] = fused(in0[i], in1[i]);
}
)";

/// One block per row: per-thread partial sums, warp shuffles, then the warp
/// sums through static shared memory.
inline const char *kRowSum = R"(
__device__ __forceinline__ float warpSum(float v) {
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
extern "C" __global__ void __launch_bounds__(1024)
row_sum(const float *__restrict__ in0, float *__restrict__ out0, int cols) {
  const float *row = in0 + (long long)blockIdx.x * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    acc += row[c];
  acc = warpSum(acc);
  __shared__ float warpSums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    warpSums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < (int)((blockDim.x + 31) / 32) ? warpSums[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
      acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
      out0[blockIdx.x] = acc;
  }
}
)";

/// Persistent-row softmax: max, sum of exponentials, normalize; the block
/// reduction is a __device__ helper with its own static shared memory, used
/// twice per row (so it must sync before its buffer is reused).
inline const char *kSoftmax = R"(#include <cuda_fp16.h>
template <bool IsMax> __device__ float blockReduce(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int off = 16; off > 0; off >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = IsMax ? fmaxf(v, o) : v + o;
  }
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    v = lane < warps ? partial[lane] : (IsMax ? __int_as_float(0xff800000) : 0.0f);
    for (int off = 16; off > 0; off >>= 1) {
      float o = __shfl_xor_sync(0xffffffffu, v, off);
      v = IsMax ? fmaxf(v, o) : v + o;
    }
    if (lane == 0)
      total = v;
  }
  __syncthreads();
  const float r = total;
  __syncthreads(); // everyone has read `total` before the next call writes it
  return r;
}
extern "C" __global__ void __launch_bounds__(128)
softmax_rows(const float *__restrict__ in0, float *__restrict__ out0, int rows, int cols) {
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *x = in0 + (long long)r * cols;
    float *y = out0 + (long long)r * cols;
    float m = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      m = fmaxf(m, x[c]);
    m = blockReduce<true>(m);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      s += __expf(x[c] - m);
    s = blockReduce<false>(s);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      y[c] = __expf(x[c] - m) * inv;
  }
}
)";

/// A tiled transpose through dynamic shared memory on a 2D grid of 2D blocks
/// (32 x 8 threads move a 32 x 32 tile; the +1 column avoids bank conflicts).
inline const char *kTranspose = R"(
extern "C" __global__ void transpose_tiles(const float *__restrict__ in0,
                                           float *__restrict__ out0, int rows, int cols) {
  extern __shared__ __align__(16) float tile[];
  const int tx = threadIdx.x, ty = threadIdx.y;
  int c = blockIdx.x * 32 + tx;
  for (int j = ty; j < 32; j += blockDim.y) {
    int r = blockIdx.y * 32 + j;
    if (r < rows && c < cols)
      tile[j * 33 + tx] = in0[(long long)r * cols + c];
  }
  __syncthreads();
  int r = blockIdx.y * 32 + tx;
  for (int j = ty; j < 32; j += blockDim.y) {
    int oc = blockIdx.x * 32 + j;
    if (oc < cols && r < rows)
      out0[(long long)oc * rows + r] = tile[tx * 33 + j];
  }
}
)";

/// Accumulation across blocks with atomics: a histogram, a float total, an
/// integer maximum and a 64-bit counter.
inline const char *kAtomics = R"(
extern "C" __global__ void histogram_atomics(const float *__restrict__ in0, int n,
                                             int *__restrict__ bins, float *__restrict__ total,
                                             int *__restrict__ maxBin,
                                             unsigned long long *__restrict__ count) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float v = in0[i];
    int b = min(max((int)floorf(v * 16.0f), 0), 15);
    atomicAdd(&bins[b], 1);
    atomicAdd(total, v);
    atomicMax(maxBin, b);
    atomicAdd(count, 1ull);
  }
}
)";

/// 16-bit floats: bfloat16 rows summed in float into a __half output, and a
/// pointwise half -> bfloat16 conversion with arithmetic in float.
inline const char *kHalfTypes = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(64)
bf16_row_sum_to_half(const __nv_bfloat16 *__restrict__ in0, __half *__restrict__ out0, int cols) {
  __shared__ float partial[2];
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    acc += __bfloat162float(in0[(long long)blockIdx.x * cols + c]);
  for (int off = 16; off > 0; off >>= 1)
    acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0)
    partial[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0)
    out0[blockIdx.x] = __float2half_rn(partial[0] + partial[1]);
}
extern "C" __global__ void __launch_bounds__(256)
half_to_bf16(const __half *__restrict__ in0, __nv_bfloat16 *__restrict__ out0, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float v = __half2float(in0[i]);
    out0[i] = __float2bfloat16_rn(v * 3.0f + 0.25f);
  }
}
extern "C" __global__ void half2_fma(const __half2 *__restrict__ a, const __half2 *__restrict__ b,
                                     const __nv_bfloat162 *__restrict__ c,
                                     __nv_bfloat162 *__restrict__ out0, int pairs) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += blockDim.x * gridDim.x) {
    float2 p = __half22float2(__hmul2(a[i], b[i]));
    out0[i] = __hfma2(__floats2bfloat162_rn(p.x, p.y), c[i], c[i]);
  }
}
extern "C" __global__ void convert_floats(const float *__restrict__ in0,
                                          unsigned short *__restrict__ halfBits,
                                          unsigned short *__restrict__ bf16Bits,
                                          float *__restrict__ fromHalf, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    halfBits[i] = __half_as_ushort(__float2half_rn(in0[i]));
    bf16Bits[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in0[i]));
    fromHalf[i] = __half2float(__ushort_as_half((unsigned short)i));
  }
}
)";

/// Warp votes, scans and partial-width shuffles, block-wide counts.
inline const char *kWarpOps = R"(
extern "C" __global__ void warp_ops(const int *__restrict__ in0, int *__restrict__ scan,
                                    unsigned *__restrict__ ballots, int *__restrict__ half16,
                                    int *__restrict__ counts) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  int v = in0[i];
  // Inclusive scan within the warp.
  for (int d = 1; d < 32; d <<= 1) {
    int o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d)
      v += o;
  }
  scan[i] = v;
  unsigned b = __ballot_sync(0xffffffffu, in0[i] > 0);
  int any = __any_sync(0xffffffffu, in0[i] > 4), all = __all_sync(0xffffffffu, in0[i] >= -9);
  ballots[i] = b ^ (unsigned)(any << 1) ^ (unsigned)all;
  // Broadcast lane 3 of each 16-lane half.
  half16[i] = __shfl_sync(0xffffffffu, in0[i], 3, 16) + __reduce_add_sync(0xffffffffu, in0[i]);
  int c = __syncthreads_count(in0[i] > 0);
  if (threadIdx.x == 0)
    counts[blockIdx.x] = c;
}
)";

/// Static shared memory is per block even when blocks run in parallel: each
/// block fills its buffer with its own id and checks it after many barriers.
inline const char *kSharedIsolation = R"(
__device__ int checkShared(int id) {
  __shared__ int buf[128];
  buf[threadIdx.x] = id;
  int bad = 0;
  for (int k = 0; k < 8; ++k) {
    __syncthreads();
    bad += buf[(threadIdx.x + 17 * k) % blockDim.x] != id + k;
    __syncthreads();
    buf[threadIdx.x] = id + k + 1;
    __syncthreads();
    bad += buf[(threadIdx.x * 5 + k) % blockDim.x] != id + k + 1;
  }
  return bad;
}
extern "C" __global__ void shared_isolation(int *__restrict__ mismatches) {
  int id = blockIdx.x + 1000 * blockIdx.y;
  int bad = checkShared(id);
  if (bad)
    atomicAdd(mismatches, bad);
}
)";

/// Deliberately wrong kernels: the emulator must report them, not hang.
inline const char *kDivergentBarrier = R"(
extern "C" __global__ void divergent_barrier(float *out0) {
  if (threadIdx.x < 16)
    __syncthreads(); // the other threads never arrive
  out0[threadIdx.x] = 1.0f;
}
extern "C" __global__ void return_before_barrier(float *out0, int n) {
  __shared__ float buf[64];
  int i = threadIdx.x;
  if (i >= n)
    return; // the classic bug: threads past n leave before the barrier
  buf[i] = out0[i];
  __syncthreads();
  out0[i] = buf[n - 1 - i];
}
extern "C" __global__ void divergent_shuffle(float *out0) {
  float v = out0[threadIdx.x];
  if (threadIdx.x % 32 < 8)
    v = __shfl_down_sync(0xffffffffu, v, 1); // lanes 8..31 never take part
  out0[threadIdx.x] = v;
}
extern "C" __global__ void device_assert(const float *in0, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    assert(in0[i] >= 0.0f);
}
)";

/// Less common warp and block operations: partial-width shuffles in both
/// directions, 8-byte and 16-bit shuffles, independent half-warp masks,
/// block-wide and/or, signed warp min/max, partial warps.
inline const char *kWarpOpsMore = R"(#include <cuda_fp16.h>
extern "C" __global__ void warp_ops_more(const int *__restrict__ in0, int *__restrict__ out0) {
  const int t = threadIdx.x, lane = t & 31;
  const int v = in0[blockIdx.x * blockDim.x + t];
  int *o = out0 + (blockIdx.x * blockDim.x + t) * 10;
  const unsigned active = __activemask(); // the lanes this (maybe partial) warp has
  o[0] = __shfl_down_sync(active, v, 3, 8);
  o[1] = __shfl_up_sync(active, v, 2, 8);
  o[2] = (int)(__shfl_xor_sync(active, (double)v * 0.5, 4) * 2.0);
  o[3] = (int)__half2float(__shfl_sync(active, __int2half_rn(v), 0));
  // The two halves of a warp synchronize separately.
  if (lane < 16)
    o[4] = __shfl_sync(0x0000ffffu & active, v, 15);
  else
    o[4] = __shfl_sync(0xffff0000u & active, v, 16);
  o[5] = __syncthreads_and(v > -9);
  o[6] = __syncthreads_or(v == 9);
  o[7] = __reduce_min_sync(active, v);
  o[8] = __reduce_max_sync(active, v);
  o[9] = (int)active;
}
)";

/// 3D blocks and grids, and CAS-loop / exchange / increment atomics.
inline const char *kIndexing3D = R"(
__device__ float atomicMaxFloat(float *p, float v) {
  int *q = (int *)p, old = *q, assumed;
  do {
    assumed = old;
    old = atomicCAS(q, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
  } while (assumed != old);
  return __int_as_float(old);
}
extern "C" __global__ void indexing_3d(int *__restrict__ ids, const float *__restrict__ in0,
                                       float *__restrict__ maxv, unsigned *__restrict__ ticket,
                                       int *__restrict__ last) {
  const int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int i = bx * (blockDim.x * blockDim.y * blockDim.z) + tx;
  ids[i] = (blockIdx.z << 24) | (blockIdx.y << 18) | (blockIdx.x << 12) | (threadIdx.z << 8) |
           (threadIdx.y << 4) | threadIdx.x;
  atomicMaxFloat(maxv, in0[i]);
  unsigned k = atomicInc(ticket, 0xffffffffu);
  atomicExch(last, (int)k);
}
)";

/// Vector and 16-bit float types have CUDA's sizes and alignments: NVRTC and
/// the emulator both compile these assertions.
inline const char *kTypeLayout = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define CHECK(T, S, A) static_assert(sizeof(T) == S && alignof(T) == A, #T);
CHECK(char2, 2, 2) CHECK(char4, 4, 4) CHECK(uchar4, 4, 4) CHECK(short2, 4, 4) CHECK(short4, 8, 8)
CHECK(int2, 8, 8) CHECK(int3, 12, 4) CHECK(int4, 16, 16) CHECK(uint2, 8, 8) CHECK(uint4, 16, 16)
CHECK(float1, 4, 4) CHECK(float2, 8, 8) CHECK(float3, 12, 4) CHECK(float4, 16, 16)
CHECK(longlong2, 16, 16) CHECK(ulonglong2, 16, 16) CHECK(double2, 16, 16)
CHECK(__half, 2, 2) CHECK(__nv_bfloat16, 2, 2) CHECK(__half2, 4, 4) CHECK(__nv_bfloat162, 4, 4)
CHECK(uint3, 12, 4) CHECK(dim3, 12, 4)
extern "C" __global__ void type_layout(int *out0) { out0[0] = sizeof(float4); }
)";

/// A race: threads read a neighbour's shared slot with (fixed) and without
/// (racy) a barrier in between. Only the schedule decides what `racy` reads.
inline const char *kNeighbourRead = R"(
extern "C" __global__ void neighbour_read(const float *__restrict__ in0, float *__restrict__ out0,
                                          int racy) {
  __shared__ float buf[128];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = in0[i];
  if (!racy)
    __syncthreads();
  out0[i] = buf[(threadIdx.x + 1) % blockDim.x];
}
)";

/// Two block sums that share one array of per-warp parts, with (fixed) and
/// without (racy) the barrier between reading the first sum's parts and
/// writing the second's: a warp that falls behind reads the second's parts.
/// Warps advance in step from pass to pass under the forward, reverse and
/// shuffled orders, so only a schedule that holds warps back sees the race
/// (tgc_row_reduce's first barrier guards the same reuse).
inline const char *kTwoSums = R"(
__device__ float warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
extern "C" __global__ void two_sums(const float *__restrict__ in0, float *__restrict__ out0,
                                    int racy) {
  __shared__ float part[8]; // 256 threads
  const int i = blockIdx.x * 256 + threadIdx.x, w = threadIdx.x / 32;
  const float v = in0[i];
  float a = warp_sum(v);
  if (threadIdx.x % 32 == 0)
    part[w] = a;
  __syncthreads();
  float s1 = 0;
  for (int k = 0; k < 8; ++k)
    s1 += part[k];
  if (!racy)
    __syncthreads();
  float b = warp_sum(v * v);
  if (threadIdx.x % 32 == 0)
    part[w] = b;
  __syncthreads();
  float s2 = 0;
  for (int k = 0; k < 8; ++k)
    s2 += part[k];
  out0[2 * i] = s1;
  out0[2 * i + 1] = s2;
}
)";

/// Reads static shared memory before any thread of the block writes it,
/// then writes zeros (which the next block on the same OS thread would see
/// if shared memory were not poisoned at block start).
inline const char *kSharedBeforeWrite = R"(
extern "C" __global__ void shared_before_write(unsigned *__restrict__ out0) {
  __shared__ unsigned words[256];
  __shared__ float values[256];
  out0[2 * (blockIdx.x * blockDim.x + threadIdx.x)] = words[threadIdx.x];
  out0[2 * (blockIdx.x * blockDim.x + threadIdx.x) + 1] = isnan(values[threadIdx.x]) ? 1u : 0u;
  __syncthreads();
  words[threadIdx.x] = 0;
  values[threadIdx.x] = 0.0f;
}
)";

/// A divergent barrier in one block of many, with blocks in parallel.
inline const char *kOneBadBlock = R"(
extern "C" __global__ void one_bad_block(float *out0) {
  if (blockIdx.x == 57 && threadIdx.x < 3)
    __syncthreads();
  out0[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
extern "C" __global__ void trapping(float *out0) {
  if (blockIdx.x == 2 && threadIdx.x == 5)
    __trap();
}
)";

/// Every kernel source above with one of its entry points, for NVRTC.
inline std::vector<std::pair<std::string, std::string>> all() {
  return {{"pointwise_vec4", kPointwiseVec4},
          {"row_sum", kRowSum},
          {"softmax_rows", kSoftmax},
          {"transpose_tiles", kTranspose},
          {"histogram_atomics", kAtomics},
          {"half_to_bf16", kHalfTypes},
          {"warp_ops", kWarpOps},
          {"shared_isolation", kSharedIsolation},
          {"divergent_barrier", kDivergentBarrier},
          {"warp_ops_more", kWarpOpsMore},
          {"indexing_3d", kIndexing3D},
          {"type_layout", kTypeLayout},
          {"one_bad_block", kOneBadBlock},
          {"neighbour_read", kNeighbourRead},
          {"two_sums", kTwoSums},
          {"shared_before_write", kSharedBeforeWrite}};
}

} // namespace tgc::emu::kernels

#endif // TGC_TESTS_EMU_TESTKERNELS_H
