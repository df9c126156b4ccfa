// Registers the rms_norm op under the build's unique namespace
// (TORCH_EXTENSION_NAME, e.g. _rmsnorm_3f2a1c0), for the backend this variant
// is built for. Python reaches it as torch.ops.<namespace>.rms_norm through
// the generated _ops.py.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

#ifndef TORCH_EXTENSION_NAME
#error "TORCH_EXTENSION_NAME must name the op namespace (e.g. -DTORCH_EXTENSION_NAME=_rmsnorm_abc123)"
#endif

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor! out, Tensor input, Tensor weight, float eps) -> ()");
#if defined(CUDA_KERNEL)
  ops.impl("rms_norm", c10::kCUDA, &rms_norm);
#elif defined(CPU_KERNEL)
  ops.impl("rms_norm", c10::kCPU, &rms_norm);
#else
#error "build with -DCPU_KERNEL or -DCUDA_KERNEL to pick the backend of this variant"
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
