// RMSNorm forward for CPU: out = x * rsqrt(mean(x^2) + eps) * weight.
//
// Rows are split across threads with at::parallel_for. Each row is two plain
// loops written so the compiler vectorises them: the sum of squares keeps
// kLanes independent fp32 partial sums (a vector register's worth, no
// reassociation needed, so no -ffast-math), the scaling loop is elementwise.
// On x86-64 Linux the row functions are compiled three times
// (target_clones: AVX-512, AVX2+FMA, baseline SSE2) and the loader picks the
// best for the running CPU, so one Hub variant is fast everywhere and still
// runs on any x86-64.
//
// bf16/fp16 are converted to fp32 on load and rounded once on store.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int64_t kLanes = 16;
// Rows per parallel task: at least ~32K elements per task so that threads
// are not woken for tiny slices of work.
constexpr int64_t kElementsPerTask = 32768;

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define RMSNORM_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RMSNORM_MULTIVERSION
#endif

template <typename T>
inline __attribute__((always_inline)) float to_float(T v) {
  return static_cast<float>(v);
}

template <typename T>
inline __attribute__((always_inline)) void rmsnorm_rows(T* out, const T* in, const T* weight,
                                                        int64_t row_begin, int64_t row_end,
                                                        int64_t hidden, float eps) {
  const float inv_hidden = 1.0f / static_cast<float>(hidden);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* x = in + r * hidden;
    T* y = out + r * hidden;

    float partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= hidden; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) {
        const float v = to_float(x[i + j]);
        partial[j] += v * v;
      }
    }
    float sum_sq = 0.f;
    for (int64_t j = 0; j < kLanes; ++j) sum_sq += partial[j];
    for (; i < hidden; ++i) {
      const float v = to_float(x[i]);
      sum_sq += v * v;
    }

    const float inv_rms = 1.0f / std::sqrt(sum_sq * inv_hidden + eps);
    // Reads x[i] before writing y[i]: safe when out == in.
    for (int64_t k = 0; k < hidden; ++k) {
      y[k] = static_cast<T>(to_float(x[k]) * inv_rms * to_float(weight[k]));
    }
  }
}

RMSNORM_MULTIVERSION
void rows_f32(float* out, const float* in, const float* w, int64_t b, int64_t e, int64_t h, float eps) {
  rmsnorm_rows<float>(out, in, w, b, e, h, eps);
}

RMSNORM_MULTIVERSION
void rows_bf16(c10::BFloat16* out, const c10::BFloat16* in, const c10::BFloat16* w, int64_t b, int64_t e,
               int64_t h, float eps) {
  rmsnorm_rows<c10::BFloat16>(out, in, w, b, e, h, eps);
}

RMSNORM_MULTIVERSION
void rows_f16(c10::Half* out, const c10::Half* in, const c10::Half* w, int64_t b, int64_t e, int64_t h,
              float eps) {
  rmsnorm_rows<c10::Half>(out, in, w, b, e, h, eps);
}

void check_args(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps) {
  TORCH_CHECK(input.device().is_cpu() && weight.device().is_cpu() && out.device().is_cpu(),
              "rms_norm (cpu): input, weight and out must be CPU tensors");
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input must have at least one dimension");
  const auto dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
              "rms_norm: input dtype must be float32, float16 or bfloat16, got ", dtype);
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
  const int64_t hidden = input.size(-1);
  const int64_t rows = input.numel() / hidden;
  if (rows == 0) return;
  const float feps = static_cast<float>(eps);
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / hidden);

  switch (input.scalar_type()) {
    case at::kFloat: {
      float* o = out.data_ptr<float>();
      const float* x = input.const_data_ptr<float>();
      const float* w = weight.const_data_ptr<float>();
      at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { rows_f32(o, x, w, b, e, hidden, feps); });
      break;
    }
    case at::kBFloat16: {
      auto* o = out.data_ptr<c10::BFloat16>();
      const auto* x = input.const_data_ptr<c10::BFloat16>();
      const auto* w = weight.const_data_ptr<c10::BFloat16>();
      at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { rows_bf16(o, x, w, b, e, hidden, feps); });
      break;
    }
    case at::kHalf: {
      auto* o = out.data_ptr<c10::Half>();
      const auto* x = input.const_data_ptr<c10::Half>();
      const auto* w = weight.const_data_ptr<c10::Half>();
      at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { rows_f16(o, x, w, b, e, hidden, feps); });
      break;
    }
    default:
      TORCH_CHECK(false, "rms_norm: unsupported dtype ", input.scalar_type());
  }
}
