// The op implemented by every backend of this kernel (one per build variant).
#pragma once

#include <ATen/core/Tensor.h>

// out = input * rsqrt(mean(input^2, -1) + eps) * weight, fp32 accumulation.
// input: [..., hidden] contiguous fp32/fp16/bf16; weight: [hidden], same dtype;
// out: same shape/dtype as input, contiguous; may be `input` itself (in-place).
void rms_norm(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps);
