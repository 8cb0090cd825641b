/* simt_mathlib.h - internal to src/: the device math library of a GPU
 * SIMT target (nvptx: CUDA's libdevice; amdgpu: ROCm's ocml), found on
 * disk and read here, for jit/ (which reads no files) and for code keys. */
#ifndef KILN_SRC_SIMT_MATHLIB_H
#define KILN_SRC_SIMT_MATHLIB_H

#include <stddef.h>

#include "../jit/simt.h"

/* The library t's kernels link when they call math functions, found as
 * rt_simt_math finds it: its path (buf holds it when built here, else it
 * is the variable's value), NULL for simt-emu. When nothing is found, the
 * first place looked at (whose read then fails). For code keys: the
 * library is part of what a kernel compiles to. */
const char *rt_simt_mathlib_path(const jit_simt_target *t, char *buf, size_t cap);

/* The resolver to put in jit_simt_target.math: finds t's library as above
 * and reads it (malloc'd, handed to jit/). Stateless and thread-safe; it
 * reads KILN_LIBDEVICE, CUDA_HOME and KILN_OCML each time it is asked. */
extern const jit_simt_math rt_simt_math;

#endif
