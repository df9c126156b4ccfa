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

#ifdef __cplusplus
}
#endif
