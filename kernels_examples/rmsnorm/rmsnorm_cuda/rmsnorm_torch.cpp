// Torch-facing side of the CUDA backend: validates tensors, picks the device
// and the current stream, and hands raw pointers to the C-ABI launcher in
// rmsnorm.cu (which knows nothing about torch).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

#include <cmath>

#include "rmsnorm_launch.h"

namespace {

rmsnorm_dtype_t to_launch_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return RMSNORM_DTYPE_F32;
    case at::kHalf:
      return RMSNORM_DTYPE_F16;
    case at::kBFloat16:
      return RMSNORM_DTYPE_BF16;
    default:
      TORCH_CHECK(false, "rms_norm: input dtype must be float32, float16 or bfloat16, got ", t);
  }
}

void check_args(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps) {
  TORCH_CHECK(input.is_cuda(), "rms_norm (cuda): input must be a CUDA tensor");
  TORCH_CHECK(weight.device() == input.device() && out.device() == input.device(),
              "rms_norm: input, weight and out must be on the same device");
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input must have at least one dimension");
  const auto dtype = input.scalar_type();
  TORCH_CHECK(weight.scalar_type() == dtype && out.scalar_type() == dtype,
              "rms_norm: weight and out must have the input's dtype ", dtype);
  const int64_t hidden = input.size(-1);
  TORCH_CHECK(hidden > 0, "rms_norm: the last dimension must not be empty");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, "rms_norm: weight must have shape [",
              hidden, "], got ", weight.sizes());
  TORCH_CHECK(out.sizes() == input.sizes(), "rms_norm: out must have the input's shape ", input.sizes(),
              ", got ", out.sizes());
  TORCH_CHECK(input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(),
              "rms_norm: input, weight and out must be contiguous");
  TORCH_CHECK(std::isfinite(eps) && eps >= 0.0, "rms_norm: eps must be a finite number >= 0, got ", eps);
}

}  // namespace

void rms_norm(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps) {
  check_args(out, input, weight, eps);
  const rmsnorm_dtype_t dtype = to_launch_dtype(input.scalar_type());
  const int64_t hidden = input.size(-1);
  const int64_t rows = input.numel() / hidden;
  if (rows == 0) return;

  const c10::cuda::OptionalCUDAGuard device_guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const cudaError_t err = rmsnorm_cuda_forward(out.data_ptr(), input.const_data_ptr(), weight.const_data_ptr(),
                                               rows, hidden, static_cast<float>(eps), dtype, stream);
  TORCH_CHECK(err == cudaSuccess, "rms_norm: CUDA kernel launch failed: ", cudaGetErrorString(err));
}
