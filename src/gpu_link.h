/* gpu_link.h - internal to src/: turn an AMDGPU relocatable object (from
 * jit_simt_emit) into a loadable code object (.hsaco) with LLVM's linker. */
#ifndef KILN_SRC_GPU_LINK_H
#define KILN_SRC_GPU_LINK_H

#include "rt.h"

/* Link obj[0..len) with ld.lld (KILN_LLD, else ld.lld-19, else ld.lld on
 * PATH) as a shared object. *out is malloc'd (caller frees). 0, or -1 with
 * st saying what failed (no linker: names KILN_LLD; linker errors: its own
 * messages). Temporary files are removed in every case. */
int rt_link_amdgpu(const void *obj, size_t len, void **out, size_t *out_len, kiln_status *st);

#endif
