/* custom.h - internal to jit/: the lowering of mo.custom / mo.inplace_custom
 * (custom.c). Library inspection (jit_lib_inspect) and the engine's library
 * resolver are in jit.h, since src/ uses them. */
#ifndef KILN_JIT_CUSTOM_H
#define KILN_JIT_CUSTOM_H

#include "lower.h"

/* Link the node's kernel library (f->libs, found by the node's kiln.library
 * attribute) into f->mod and call its `symbol` with kiln/kernel.h arguments
 * built in the body: dims from the node's types (constants in a
 * shape-specialized kernel), dense row-major strides, the parameters as a
 * constant table. mo.inplace_custom copies operand 0 into result 0 first.
 * The kernel runs whole in part 0 (no work split). A non-zero return
 * becomes JIT_KERR_CUSTOM. 0, or -1 with f->err. */
int jit_lower_custom(jit_fn *f);

#endif
