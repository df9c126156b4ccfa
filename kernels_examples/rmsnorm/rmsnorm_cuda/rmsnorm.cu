// RMSNorm forward for CUDA: out = x * rsqrt(mean(x^2) + eps) * weight.
//
// Design (memory-bound op, so everything serves bandwidth):
//  * one thread block per row; the row is read from HBM exactly once: each
//    thread keeps its slice in registers between the reduction and the
//    write-back (up to 8 x 16 B per thread), so the ideal traffic
//    (read x + write out, weight stays in L2) is what the kernel moves;
//  * 128-bit loads and stores (uint4 = 8 bf16/fp16 or 4 fp32) whenever the
//    row length and pointers allow it, a scalar path otherwise (odd hidden
//    sizes such as 4097);
//  * fp32 accumulation for every dtype; sum of squares reduced with warp
//    shuffles, then across warps through shared memory;
//  * <= 256 threads per block for common hidden sizes (4096/8192), so that
//    several rows share an SM and one block's reduction latency hides behind
//    another's loads (tuned for H100, sm_90; the same code runs on sm_75+).
//
// No torch headers here on purpose: this file builds with a bare `nvcc -c`.
// The torch-facing checks and stream handling live in rmsnorm_torch.cpp.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "rmsnorm_launch.h"

namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxThreads = 1024;
constexpr int kPreferredThreads = 256;
constexpr int kMaxPacksPerThread = 8;
// With 8 packs (32 registers of cache) per thread, 1024-thread blocks would cap
// a thread at 64 registers and spill; 512 threads leave room for 128.
constexpr int kMaxThreadsAt8Packs = 512;

template <int PACKS>
struct CachedBounds {
  static constexpr int kThreads = PACKS >= 8 ? kMaxThreadsAt8Packs : kMaxThreads;
};

template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Number of T in one 16-byte pack.
template <typename T>
struct PackOf {
  static constexpr int kSize = 16 / sizeof(T);
};

template <typename T>
__device__ __forceinline__ float pack_sum_squares(const uint4& p) {
  const T* e = reinterpret_cast<const T*>(&p);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < PackOf<T>::kSize; ++j) {
    const float v = to_float<T>(e[j]);
    s = fmaf(v, v, s);
  }
  return s;
}

template <typename T>
__device__ __forceinline__ uint4 pack_scale(const uint4& xp, const uint4& wp, float inv_rms) {
  const T* x = reinterpret_cast<const T*>(&xp);
  const T* w = reinterpret_cast<const T*>(&wp);
  uint4 out;
  T* o = reinterpret_cast<T*>(&out);
#pragma unroll
  for (int j = 0; j < PackOf<T>::kSize; ++j) {
    o[j] = from_float<T>(to_float<T>(x[j]) * inv_rms * to_float<T>(w[j]));
  }
  return out;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Sum over the block; every thread gets the result. blockDim.x must be a
// multiple of 32 (the launcher guarantees it).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[kMaxThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int num_warps = blockDim.x / kWarpSize;
  if (warp == 0) {
    float w = lane < num_warps ? partial[lane] : 0.f;
    w = warp_sum(w);
    if (lane == 0) partial[0] = w;
  }
  __syncthreads();
  return partial[0];
}

// Vectorised kernel, row slice cached in registers: PACKS 16-byte packs per
// thread. Requires hidden % PackOf<T>::kSize == 0 and 16-byte aligned
// pointers. `out` may alias `in`: all loads of a row precede the barrier in
// block_sum, all stores follow it.
template <typename T, int PACKS>
__global__ void __launch_bounds__(CachedBounds<PACKS>::kThreads)
    rmsnorm_vec_cached_kernel(T* out, const T* in, const T* __restrict__ weight, int num_packs,
                              float inv_hidden, float eps) {
  const int64_t row = blockIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * num_packs;
  uint4* y = reinterpret_cast<uint4*>(out) + row * num_packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);

  uint4 cache[PACKS];
  float sum_sq = 0.f;
#pragma unroll
  for (int k = 0; k < PACKS; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < num_packs) {
      cache[k] = x[i];
      sum_sq += pack_sum_squares<T>(cache[k]);
    }
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) * inv_hidden + eps);
#pragma unroll
  for (int k = 0; k < PACKS; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < num_packs) {
      y[i] = pack_scale<T>(cache[k], __ldg(w + i), inv_rms);
    }
  }
}

// Vectorised kernel for rows too long to cache in registers: the second pass
// re-reads the row, which a block touched microseconds earlier, from L2.
template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    rmsnorm_vec_stream_kernel(T* out, const T* in, const T* __restrict__ weight, int num_packs,
                              float inv_hidden, float eps) {
  const int64_t row = blockIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * num_packs;
  uint4* y = reinterpret_cast<uint4*>(out) + row * num_packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);

  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < num_packs; i += blockDim.x) {
    sum_sq += pack_sum_squares<T>(x[i]);
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) * inv_hidden + eps);
  for (int i = threadIdx.x; i < num_packs; i += blockDim.x) {
    y[i] = pack_scale<T>(x[i], __ldg(w + i), inv_rms);
  }
}

// Scalar kernel: any hidden size and alignment.
template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    rmsnorm_scalar_kernel(T* out, const T* in, const T* __restrict__ weight, int hidden,
                          float inv_hidden, float eps) {
  const int64_t row = blockIdx.x;
  const T* x = in + row * hidden;
  T* y = out + row * hidden;

  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = to_float<T>(x[i]);
    sum_sq = fmaf(v, v, sum_sq);
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) * inv_hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    y[i] = from_float<T>(to_float<T>(x[i]) * inv_rms * to_float<T>(weight[i]));
  }
}

inline int round_up_to_warp(int64_t n) {
  const int64_t r = (n + kWarpSize - 1) / kWarpSize * kWarpSize;
  return static_cast<int>(r < kWarpSize ? kWarpSize : r);
}

inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

template <typename T, int PACKS>
void launch_cached(T* out, const T* in, const T* weight, int64_t rows, int num_packs, int threads,
                   float inv_hidden, float eps, cudaStream_t stream) {
  rmsnorm_vec_cached_kernel<T, PACKS><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
      out, in, weight, num_packs, inv_hidden, eps);
}

template <typename T>
cudaError_t launch(void* out_v, const void* in_v, const void* weight_v, int64_t rows, int64_t hidden,
                   float eps, cudaStream_t stream) {
  T* out = static_cast<T*>(out_v);
  const T* in = static_cast<const T*>(in_v);
  const T* weight = static_cast<const T*>(weight_v);
  const float inv_hidden = 1.0f / static_cast<float>(hidden);
  constexpr int kPack = PackOf<T>::kSize;

  const bool vectorisable =
      hidden % kPack == 0 && aligned16(out) && aligned16(in) && aligned16(weight);
  if (!vectorisable) {
    const int threads = round_up_to_warp(hidden < kPreferredThreads * 2 ? hidden : kMaxThreads / 2);
    rmsnorm_scalar_kernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        out, in, weight, static_cast<int>(hidden), inv_hidden, eps);
    return cudaGetLastError();
  }

  const int num_packs = static_cast<int>(hidden / kPack);
  // Fewest packs per thread that keeps the block at <= 256 threads; longer
  // rows grow the block up to 512 threads (8 packs each) before falling back
  // to re-reading the row from L2.
  int packs = 0;
  int threads = 0;
  for (int p = 1; p <= kMaxPacksPerThread; p *= 2) {
    const int64_t t = (static_cast<int64_t>(num_packs) + p - 1) / p;
    if (t <= kPreferredThreads) {
      packs = p;
      threads = round_up_to_warp(t);
      break;
    }
  }
  if (packs == 0) {
    const int64_t t = (static_cast<int64_t>(num_packs) + kMaxPacksPerThread - 1) / kMaxPacksPerThread;
    if (t <= kMaxThreadsAt8Packs) {
      packs = kMaxPacksPerThread;
      threads = round_up_to_warp(t);
    }
  }
  switch (packs) {
    case 1:
      launch_cached<T, 1>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 2:
      launch_cached<T, 2>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 4:
      launch_cached<T, 4>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 8:
      launch_cached<T, 8>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    default:
      rmsnorm_vec_stream_kernel<T><<<static_cast<unsigned>(rows), kMaxThreads, 0, stream>>>(
          out, in, weight, num_packs, inv_hidden, eps);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t rmsnorm_cuda_forward(void* out, const void* in, const void* weight,
                                            int64_t rows, int64_t hidden, float eps,
                                            rmsnorm_dtype_t dtype, cudaStream_t stream) {
  if (rows < 0 || hidden <= 0 || hidden > INT_MAX || rows > INT_MAX || !(eps >= 0.f)) {
    return cudaErrorInvalidValue;
  }
  if (rows == 0) return cudaSuccess;
  if (out == nullptr || in == nullptr || weight == nullptr) return cudaErrorInvalidValue;
  switch (dtype) {
    case RMSNORM_DTYPE_F32:
      return launch<float>(out, in, weight, rows, hidden, eps, stream);
    case RMSNORM_DTYPE_F16:
      return launch<__half>(out, in, weight, rows, hidden, eps, stream);
    case RMSNORM_DTYPE_BF16:
      return launch<__nv_bfloat16>(out, in, weight, rows, hidden, eps, stream);
  }
  return cudaErrorInvalidValue;
}
