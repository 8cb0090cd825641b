/* interp_print.c - the reference interpreter's routine for mo.print: copy
 * the operand into the result and write its line to stderr (ops.def; the
 * element formats and the elision are in print_op.h, which the host kernel
 * shares, so both write the same text). ir_print_line, the line alone, is
 * also the device runtime's (src/device_model.c).
 * Assumes a verified node; checks the result's type against the operand's. */
#include <stdio.h>
#include <string.h>

#include "interp_impl.h"
#include "print_op.h"

void ir_print_line(const ir_node *n, const ir_tensor *x) {
  int64_t total = ir_tensor_numel(x);
  const char *label = ir_node_attr_string(n, "label", "debug_tensor");
  const char *fmt = ir_print_elem_format(x->dtype);
  fprintf(stderr, "%s: tensor<[", label);
  for (int a = 0; a < x->rank; a++)
    fprintf(stderr, a ? ", %lld" : "%lld", (long long)x->shape[a]);
  fprintf(stderr, "], %s> [", ir_dtype_name(x->dtype));
  int64_t shown = total < IR_PRINT_MAX_ELEMS ? total : IR_PRINT_MAX_ELEMS;
  for (int64_t i = 0; fmt && i < shown; i++) {
    fputs(i ? ", " : "", stderr);
    if (x->dtype == IR_DT_BOOL)
      fprintf(stderr, fmt, ir_ref_ld_i(x, i) ? "true" : "false");
    else if (ir_dtype_is_float(x->dtype))
      fprintf(stderr, fmt, ir_ref_ld_f(x, i));
    else if (ir_dtype_is_signed(x->dtype))
      fprintf(stderr, fmt, (long long)ir_ref_ld_i(x, i));
    else
      fprintf(stderr, fmt, (unsigned long long)ir_ref_ld_i(x, i));
  }
  if (!fmt && total > 0)
    fputs("...", stderr);
  if (fmt && total > shown)
    fputs(", ...", stderr);
  fputs("]\n", stderr);
  fflush(stderr);
}

int ir_ref_print(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  if (x->dtype != y->dtype || x->rank != y->rank ||
      memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->rank) != 0)
    return ir_ref_fail(msg, msglen, "the result's type is not the operand's");
  int64_t total = ir_tensor_numel(x);
  if (total > 0)
    memcpy(y->data, x->data, (size_t)total * ir_dtype_size(x->dtype));
  ir_print_line(n, x);
  return 0;
}
