// Plain C ABI between the CUDA kernel (rmsnorm.cu) and the torch-facing
// wrapper (rmsnorm_torch.cpp).
//
// Why a C ABI: rmsnorm.cu must compile with a bare `nvcc -c` (no torch
// headers), so CI can check every CUDA capability we ship without a CUDA
// build of PyTorch; and the torch wrapper stays free of device code.
#pragma once

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element type of input, weight and output (all three share it).
typedef enum {
  RMSNORM_DTYPE_F32 = 0,
  RMSNORM_DTYPE_F16 = 1,
  RMSNORM_DTYPE_BF16 = 2,
} rmsnorm_dtype_t;

// How a row is read and reduced (rmsnorm.cu describes each). AUTO lets
// rmsnorm_cuda_forward choose; the others exist so that a benchmark can
// measure the choice (benchmarks/rmsnorm_paths.py).
typedef enum {
  RMSNORM_PATH_AUTO = 0,
  RMSNORM_PATH_SCALAR = 1,           // any hidden size and alignment
  RMSNORM_PATH_CACHED = 2,           // row in registers, weight read after the reduction
  RMSNORM_PATH_CACHED_PREFETCH = 3,  // row and weight in registers before the reduction
  RMSNORM_PATH_STREAM = 4,           // two passes, the second from L2
} rmsnorm_path_t;

// out[r, :] = in[r, :] * rsqrt(mean(in[r, :]^2) + eps) * weight, for
// r in [0, rows), rows laid out contiguously with `hidden` elements each.
// Accumulates in fp32. `out` may alias `in` (in-place).
//
// Returns cudaSuccess, cudaErrorInvalidValue for bad arguments (null pointers
// with rows > 0, hidden <= 0, unknown dtype, negative eps), or the launch
// error reported by cudaGetLastError().
cudaError_t rmsnorm_cuda_forward(void* out, const void* in, const void* weight,
                                 int64_t rows, int64_t hidden, float eps,
                                 rmsnorm_dtype_t dtype, cudaStream_t stream);

// The same with the path and block size given (threads: a multiple of 32, at
// most 1024). Returns cudaErrorInvalidValue where that path cannot run the
// shape (a vector path on an odd or misaligned row, a cached path that would
// need more than 8 packs per thread or more than 512 threads at 8 packs).
cudaError_t rmsnorm_cuda_forward_path(void* out, const void* in, const void* weight,
                                      int64_t rows, int64_t hidden, float eps,
                                      rmsnorm_dtype_t dtype, rmsnorm_path_t path, int threads,
                                      cudaStream_t stream);

// The path and block size rmsnorm_cuda_forward picks for `rows` aligned rows
// of `hidden` elements on the current device (AUTO and 0 threads for an
// invalid shape).
rmsnorm_path_t rmsnorm_cuda_default_path(int64_t rows, int64_t hidden, rmsnorm_dtype_t dtype, int* threads);

#ifdef __cplusplus
}
#endif
