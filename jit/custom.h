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

/* ---- elementwise kernels (KILN_ELEMENTWISE_KERNEL, kiln/kernel.h) ----
 * A mo.custom marked kiln.elementwise (src/kernel_lib.c stamps it on a
 * bound elementwise kernel) is a scalar function T NAME(T0, ...).
 * jit_lower_custom lowers such a node alone as an elementwise loop
 * (jit_lower_elementwise); in a fused group, elementwise.c computes it
 * through jit_custom_ew_call. */

/* The value of elementwise custom node n on its loaded operands v (register
 * types): a call of the library's function, linked into f->mod once per
 * library (host targets) and made alwaysinline; the function's type and
 * marker are checked against n. Poison with f->err on failure. */
LLVMValueRef jit_custom_ew_call(jit_fn *f, const ir_node *n, LLVMValueRef *v);

/* SIMT: the elementwise kernel of sf's node (a lone mo.custom marked
 * kiln.elementwise), linked for sf's target as simt_link links SIMT
 * kernels, checked; NULL with sf->f.err. jit_simt_custom_ew_call calls it
 * on loaded operands. (simt_lower.c's element loop uses both.) */
struct jit_simt_fn;
LLVMValueRef jit_simt_custom_ew_fn(struct jit_simt_fn *sf);
LLVMValueRef jit_simt_custom_ew_call(jit_fn *f, LLVMValueRef fn, int nin, LLVMValueRef *v);

#endif
