/* print_op.h - what mo.print writes (ops.def documents the line), shared by
 * the reference interpreter (interp_print.c), the host lowering
 * (jit/print.c) and the device runtime (src/device_model.c), which must
 * write the same text. */
#ifndef KILN_IR_PRINT_OP_H
#define KILN_IR_PRINT_OP_H

#include "ir.h"
#include "shape.h"

/* Elements printed at most; more are elided as ", ...". */
#define IR_PRINT_MAX_ELEMS 1000

/* The printf format of one element of dtype dt ("%.9g", "%lld", "%llu",
 * "%s" for bool's true / false), or NULL when its values are not printed
 * (float8 kinds). */
static inline const char *ir_print_elem_format(ir_dtype dt) {
  if (dt == IR_DT_F64)
    return "%.17g";
  if (dt == IR_DT_F32 || dt == IR_DT_F16 || dt == IR_DT_BF16)
    return "%.9g";
  if (dt == IR_DT_BOOL)
    return "%s";
  if (ir_dtype_is_signed(dt))
    return "%lld";
  if (ir_dtype_is_int(dt))
    return "%llu";
  return NULL;
}

/* Write n's line for the operand x to stderr: label, shape, then x's first
 * min(numel, IR_PRINT_MAX_ELEMS) elements, which are all x->data must hold
 * (interp_print.c). */
void ir_print_line(const ir_node *n, const ir_tensor *x);

#endif
