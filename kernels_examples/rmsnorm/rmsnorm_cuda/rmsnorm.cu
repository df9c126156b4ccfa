// RMSNorm forward for CUDA: out = x * rsqrt(mean(x^2) + eps) * weight.
//
// A memory-bound op: the floor is the time to read x once and write out once
// (the weight stays in L2), so every path serves bandwidth:
//  * one thread block per row; 128-bit loads and stores (uint4 = 8 bf16/fp16
//    or 4 fp32) whenever the row length and pointers allow it, a scalar path
//    otherwise (odd hidden sizes such as 4097);
//  * the row is read from HBM exactly once: each thread keeps its slice in
//    registers between the reduction and the write-back (up to 8 x 16 B);
//  * registers are what limits the bytes in flight per multiprocessor, and
//    bytes in flight are what a fast HBM3 card needs to reach its copy
//    bandwidth: a bf16 row is hidden from the optimiser across the reduction
//    (see opaque()), which halves its registers for 4 packs (64 -> 32) and
//    doubles the blocks resident; on an H100 that took bf16 16384 x 8192 from
//    88 % to 98 % of the measured copy bandwidth;
//  * for short batches, where one block's memory latency is the time, the
//    weight's loads are issued with the row's, before the reduction;
//  * the row's loads carry an L2 eviction priority (sm_80+): evict_last for
//    a row read once into registers and for the first of two passes, and
//    evict_first for the second pass. Measured, not derived: on an H200 the
//    read marked evict_last took bf16 16384 x 8192 from 134.1 to 130.3 us and
//    fp32 16384 x 8192 from 264.4 to 254.6 us, level with torch.compile, whose
//    Triton reduction marks its first read the same way; on an H100 it took
//    bf16 1024 x 4096 (one wave of blocks) from 10.0-10.5 to 9.2 us;
//  * fp32 accumulation for every dtype; the sum of squares is reduced with
//    warp shuffles, then across warps through shared memory.
//
// rmsnorm_cuda_forward picks the path and block size (choose_path);
// rmsnorm_cuda_forward_path runs a given one, so that a benchmark can measure
// the choice (benchmarks/rmsnorm_paths.py). Tuned on H100 and measured on
// H200 (sm_90; figures in kernels_examples/rmsnorm/README.md); the same code
// runs on sm_75+. Tried and dropped: staging the row in shared memory with
// cp.async (fewer registers, but never faster than registers here), and
// streaming or evict_first hints on the row (4-8 % slower on large batches).
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
// A batch of fewer rows than this many per multiprocessor is latency-bound.
constexpr int kShortBatchRowsPerSM = 4;

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

// Hides a pack's value from the optimiser. Without it, nvcc keeps the fp32
// copies of a bf16 row that the sum of squares made alive across the
// reduction (twice the registers of the packed row: 64 instead of 48 for
// 4 packs, half the blocks per multiprocessor), instead of converting again.
__device__ __forceinline__ void opaque(uint4& p) {
  asm volatile("" : "+r"(p.x), "+r"(p.y), "+r"(p.z), "+r"(p.w));
}

// L2 eviction policies for ld.global.L2::cache_hint (sm_80+). On older
// cards the policy is unused and loads are plain.
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

// A 16-byte load with an L2 eviction policy. volatile: the loads stay in
// program order, all of a row's issued before its first use.
__device__ __forceinline__ uint4 load_with_policy(const uint4* p, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint4 v;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
#else
  (void)policy;
  return *p;
#endif
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

// Row slice cached in registers: PACKS 16-byte packs per thread. With
// PREFETCH_W the weight's packs are loaded with the row's, before the
// reduction (more registers, one memory wait instead of two). Requires
// hidden % PackOf<T>::kSize == 0 and 16-byte aligned pointers. `out` may
// alias `in`: all loads of a row precede the barrier in block_sum, all stores
// follow it.
template <typename T, int PACKS, bool PREFETCH_W>
__global__ void __launch_bounds__(CachedBounds<PACKS>::kThreads)
    rmsnorm_vec_cached_kernel(T* out, const T* in, const T* __restrict__ weight, int num_packs,
                              float inv_hidden, float eps) {
  const int64_t row = blockIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * num_packs;
  uint4* y = reinterpret_cast<uint4*>(out) + row * num_packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);

  uint4 cache[PACKS];
  uint4 wcache[PREFETCH_W ? PACKS : 1];
  float sum_sq = 0.f;
  const uint64_t keep = l2_policy_evict_last();
#pragma unroll
  for (int k = 0; k < PACKS; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < num_packs) {
      cache[k] = load_with_policy(x + i, keep);
      if constexpr (PREFETCH_W) wcache[k] = __ldg(w + i);
    }
  }
#pragma unroll
  for (int k = 0; k < PACKS; ++k) {
    if (threadIdx.x + k * blockDim.x < num_packs) sum_sq += pack_sum_squares<T>(cache[k]);
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) * inv_hidden + eps);
#pragma unroll
  for (int k = 0; k < PACKS; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < num_packs) {
      opaque(cache[k]);
      if constexpr (PREFETCH_W) {
        y[i] = pack_scale<T>(cache[k], wcache[k], inv_rms);
      } else {
        y[i] = pack_scale<T>(cache[k], __ldg(w + i), inv_rms);
      }
    }
  }
}

// Rows too long to cache: the second pass re-reads the row, which
// the block touched microseconds earlier, from L2 (kept there by the first
// pass's evict_last, released by the second's evict_first).
template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    rmsnorm_vec_stream_kernel(T* out, const T* in, const T* __restrict__ weight, int num_packs,
                              float inv_hidden, float eps) {
  const int64_t row = blockIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * num_packs;
  uint4* y = reinterpret_cast<uint4*>(out) + row * num_packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);

  float sum_sq = 0.f;
  const uint64_t keep = l2_policy_evict_last();
  for (int i = threadIdx.x; i < num_packs; i += blockDim.x) {
    sum_sq += pack_sum_squares<T>(load_with_policy(x + i, keep));
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) * inv_hidden + eps);
  const uint64_t done = l2_policy_evict_first();
  for (int i = threadIdx.x; i < num_packs; i += blockDim.x) {
    y[i] = pack_scale<T>(load_with_policy(x + i, done), __ldg(w + i), inv_rms);
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

// Fewest packs per thread (1, 2, 4 or 8) that a block of `threads` needs for
// the row, or 0 when 8 are not enough.
inline int packs_for(int64_t num_packs, int threads) {
  for (int p = 1; p <= kMaxPacksPerThread; p *= 2) {
    if (static_cast<int64_t>(threads) * p >= num_packs) return p;
  }
  return 0;
}

struct PathChoice {
  rmsnorm_path_t path;
  int threads;
};

// Multiprocessors of the current device, read once per device.
int multiprocessors() {
  constexpr int kMaxDevices = 64;
  static int cached[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    return 132;  // an H100's count: only the block-size heuristics depend on it
  }
  if (cached[device] == 0) {
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0) {
      cudaGetLastError();
      count = 132;
    }
    cached[device] = count;  // benign race: every thread writes the same value
  }
  return cached[device];
}

// The default path and block size for `rows` rows of `hidden` elements of T,
// from a sweep of every path and block size on an H100 (benchmarks/
// rmsnorm_paths.py; figures in kernels_examples/rmsnorm/README.md):
//  * short batches (fewer than 4 rows per multiprocessor) wait on memory
//    latency, not bandwidth: the weight is loaded with the row (one wait, not
//    two) and the row is spread over up to 512 threads (1-2 packs each);
//  * long batches are bandwidth-bound: what counts is bytes in flight per
//    multiprocessor, so the row goes in registers with the weight read after
//    the reduction (fewest registers, most blocks resident), 4 packs per
//    thread (up to 8 in 512 threads), and twice the threads when the batch
//    would fill less than half the device's thread slots.
template <typename T>
PathChoice choose_path(int64_t rows, int64_t hidden, bool vectorisable, int sms) {
  constexpr int kPack = PackOf<T>::kSize;
  if (!vectorisable) {
    return {RMSNORM_PATH_SCALAR,
            round_up_to_warp(hidden < kPreferredThreads * 2 ? hidden : kMaxThreads / 2)};
  }
  const int64_t num_packs = hidden / kPack;
  if (num_packs > static_cast<int64_t>(kMaxThreadsAt8Packs) * kMaxPacksPerThread) {
    return {RMSNORM_PATH_STREAM, kMaxThreads};
  }
  if (rows < static_cast<int64_t>(sms) * kShortBatchRowsPerSM) {
    const int64_t t = num_packs < kMaxThreadsAt8Packs ? num_packs : kMaxThreadsAt8Packs;
    return {RMSNORM_PATH_CACHED_PREFETCH, round_up_to_warp(t)};
  }
  int64_t t = (num_packs + 3) / 4;
  if (t > kMaxThreadsAt8Packs) t = kMaxThreadsAt8Packs;
  int threads = round_up_to_warp(t);
  const int64_t half_the_slots = static_cast<int64_t>(sms) * 1024;
  if (rows * threads < half_the_slots && threads * 2 <= kMaxThreadsAt8Packs && threads * 2 <= round_up_to_warp(num_packs)) {
    threads *= 2;
  }
  return {RMSNORM_PATH_CACHED, threads};
}

template <typename T, int PACKS, bool PREFETCH_W>
void launch_cached(T* out, const T* in, const T* weight, int64_t rows, int num_packs, int threads,
                   float inv_hidden, float eps, cudaStream_t stream) {
  rmsnorm_vec_cached_kernel<T, PACKS, PREFETCH_W><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
      out, in, weight, num_packs, inv_hidden, eps);
}

template <typename T, bool PREFETCH_W>
cudaError_t launch_cached_packs(T* out, const T* in, const T* weight, int64_t rows, int num_packs,
                                int threads, float inv_hidden, float eps, cudaStream_t stream) {
  switch (packs_for(num_packs, threads)) {
    case 1:
      launch_cached<T, 1, PREFETCH_W>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 2:
      launch_cached<T, 2, PREFETCH_W>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 4:
      launch_cached<T, 4, PREFETCH_W>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    case 8:
      if (threads > kMaxThreadsAt8Packs) return cudaErrorInvalidValue;
      launch_cached<T, 8, PREFETCH_W>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch(void* out_v, const void* in_v, const void* weight_v, int64_t rows, int64_t hidden,
                   float eps, rmsnorm_path_t path, int threads, cudaStream_t stream) {
  T* out = static_cast<T*>(out_v);
  const T* in = static_cast<const T*>(in_v);
  const T* weight = static_cast<const T*>(weight_v);
  const float inv_hidden = 1.0f / static_cast<float>(hidden);
  constexpr int kPack = PackOf<T>::kSize;
  const bool vectorisable =
      hidden % kPack == 0 && aligned16(out) && aligned16(in) && aligned16(weight);

  if (path == RMSNORM_PATH_AUTO) {
    const PathChoice choice = choose_path<T>(rows, hidden, vectorisable, multiprocessors());
    path = choice.path;
    threads = choice.threads;
  }
  if (threads <= 0 || threads > kMaxThreads || threads % kWarpSize != 0) return cudaErrorInvalidValue;
  if (path != RMSNORM_PATH_SCALAR && !vectorisable) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(rows);
  const int num_packs = static_cast<int>(hidden / kPack);
  switch (path) {
    case RMSNORM_PATH_SCALAR:
      rmsnorm_scalar_kernel<T><<<blocks, threads, 0, stream>>>(out, in, weight, static_cast<int>(hidden),
                                                               inv_hidden, eps);
      return cudaGetLastError();
    case RMSNORM_PATH_CACHED:
      return launch_cached_packs<T, false>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
    case RMSNORM_PATH_CACHED_PREFETCH:
      return launch_cached_packs<T, true>(out, in, weight, rows, num_packs, threads, inv_hidden, eps, stream);
    case RMSNORM_PATH_STREAM:
      rmsnorm_vec_stream_kernel<T><<<blocks, threads, 0, stream>>>(out, in, weight, num_packs, inv_hidden, eps);
      return cudaGetLastError();
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t forward(void* out, const void* in, const void* weight, int64_t rows, int64_t hidden, float eps,
                    rmsnorm_dtype_t dtype, rmsnorm_path_t path, int threads, cudaStream_t stream) {
  if (rows < 0 || hidden <= 0 || hidden > INT_MAX || rows > INT_MAX || !(eps >= 0.f)) {
    return cudaErrorInvalidValue;
  }
  if (rows == 0) return cudaSuccess;
  if (out == nullptr || in == nullptr || weight == nullptr) return cudaErrorInvalidValue;
  switch (dtype) {
    case RMSNORM_DTYPE_F32:
      return launch<float>(out, in, weight, rows, hidden, eps, path, threads, stream);
    case RMSNORM_DTYPE_F16:
      return launch<__half>(out, in, weight, rows, hidden, eps, path, threads, stream);
    case RMSNORM_DTYPE_BF16:
      return launch<__nv_bfloat16>(out, in, weight, rows, hidden, eps, path, threads, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

extern "C" cudaError_t rmsnorm_cuda_forward(void* out, const void* in, const void* weight,
                                            int64_t rows, int64_t hidden, float eps,
                                            rmsnorm_dtype_t dtype, cudaStream_t stream) {
  return forward(out, in, weight, rows, hidden, eps, dtype, RMSNORM_PATH_AUTO, 0, stream);
}

extern "C" cudaError_t rmsnorm_cuda_forward_path(void* out, const void* in, const void* weight,
                                                 int64_t rows, int64_t hidden, float eps,
                                                 rmsnorm_dtype_t dtype, rmsnorm_path_t path, int threads,
                                                 cudaStream_t stream) {
  return forward(out, in, weight, rows, hidden, eps, dtype, path, threads, stream);
}

extern "C" rmsnorm_path_t rmsnorm_cuda_default_path(int64_t rows, int64_t hidden, rmsnorm_dtype_t dtype,
                                                    int* threads) {
  PathChoice choice{RMSNORM_PATH_AUTO, 0};
  if (rows > 0 && hidden > 0 && hidden <= INT_MAX) {
    const int sms = multiprocessors();
    switch (dtype) {
      case RMSNORM_DTYPE_F32:
        choice = choose_path<float>(rows, hidden, hidden % PackOf<float>::kSize == 0, sms);
        break;
      case RMSNORM_DTYPE_F16:
        choice = choose_path<__half>(rows, hidden, hidden % PackOf<__half>::kSize == 0, sms);
        break;
      case RMSNORM_DTYPE_BF16:
        choice = choose_path<__nv_bfloat16>(rows, hidden, hidden % PackOf<__nv_bfloat16>::kSize == 0, sms);
        break;
    }
  }
  if (threads != nullptr) *threads = choice.threads;
  return choice.path;
}
