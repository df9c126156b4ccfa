// Registration helpers for a kernel-builder style torch extension.
//
// Why: the op namespace is only known at build time (the builder passes
// -DTORCH_EXTENSION_NAME=_rmsnorm_<hash>, unique per build so that several
// versions of this kernel can be loaded in one process), so the TORCH_LIBRARY
// macros must expand their NAME argument before pasting it. kernel-builder
// generates an equivalent header; shipping ours keeps the project buildable
// by any builder (and by torch.utils.cpp_extension in the tests).
#pragma once

#include <Python.h>

#define UPSKILL_CONCAT_IMPL(A, B) A##B
#define UPSKILL_CONCAT(A, B) UPSKILL_CONCAT_IMPL(A, B)
#define UPSKILL_STRINGIFY_IMPL(A) #A
#define UPSKILL_STRINGIFY(A) UPSKILL_STRINGIFY_IMPL(A)

// TORCH_LIBRARY with NAME macro-expanded first.
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)

// TORCH_LIBRARY_IMPL with NAME macro-expanded first.
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)

// An empty Python module named NAME, so `import NAME` loads the shared
// library (and with it the op registrations above).
#define REGISTER_EXTENSION(NAME)                                                  \
  PyMODINIT_FUNC UPSKILL_CONCAT(PyInit_, NAME)() {                                \
    static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,                \
                                            UPSKILL_STRINGIFY(NAME), nullptr, 0, \
                                            nullptr};                             \
    return PyModule_Create(&module_def);                                          \
  }
