/* infer_impl.h - internal to the shape rules (infer.c, infer_index.c): the
 * rule context and the helpers a rule file outside infer.c uses. Each helper
 * reports through the node's diagnostic (located at its line:col) and
 * returns -1, or 0 on success. Not part of any API. */
#ifndef KILN_IR_INFER_IMPL_H
#define KILN_IR_INFER_IMPL_H

#include "ir.h"

typedef struct ir_infer_ctx {
  ir_graph *g;
  ir_node *n;
  ir_diag *d;
  const char *op; /* op name without "mo." */
} ir_infer_ctx;

int ir_infer_fail(ir_infer_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ir_infer_dim_fail(ir_infer_ctx *c); /* dim arithmetic overflowed */
/* Attributes through the op's schema (kind, requiredness, default). */
int ir_infer_attr_int(ir_infer_ctx *c, const char *name, int64_t *out);
int ir_infer_attr_bool(ir_infer_ctx *c, const char *name, bool *out);
int ir_infer_attr_float(ir_infer_ctx *c, const char *name, double *out);
int ir_infer_attr_string(ir_infer_ctx *c, const char *name, const char **out);
int ir_infer_attr_ints(ir_infer_ctx *c, const char *name, int *nv, const int64_t **v);
int ir_infer_attr_float(ir_infer_ctx *c, const char *name, double *out);
int ir_infer_attr_string(ir_infer_ctx *c, const char *name, const char **out);
int ir_infer_norm_axis(ir_infer_ctx *c, const char *what, int64_t axis, int rank, int *out);
/* r = {dt, rank, dims, dev} (dims copied into the graph's arena). */
int ir_infer_res_set(ir_infer_ctx *c, ir_type *r, ir_dtype dt, int rank,
                     const ir_dim *const *dims, ir_device dev);
/* Operand k's data sets dims, which ir_solve_symbols reads before the graph
 * runs: a graph input, a mo.constant, or a value computed from them by
 * nodes the reference interpreter can run then (no weight, control flow,
 * effects or count set from data among them; else a failure naming `what`
 * and the node). */
int ir_infer_data_operand(ir_infer_ctx *c, int k, const char *what);
/* The declared result type (its dims not negative). */
int ir_infer_declared(ir_infer_ctx *c, const ir_type **out);
/* lhs == rhs (IR_CHECK_EQ) or lhs >= rhs (IR_CHECK_GE): decided now when the
 * difference is a constant, else a run-time check saying `what`. */
int ir_infer_need(ir_infer_ctx *c, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs,
                  const char *what);
const char *ir_infer_dim_str(char *buf, size_t cap, const ir_dim *d);

/* Shape rules of the indexing classes (infer_index.c). */
int ir_infer_gather_index(ir_infer_ctx *c, ir_type *r);
int ir_infer_scatter(ir_infer_ctx *c, ir_type *r);
int ir_infer_tile(ir_infer_ctx *c, ir_type *r);
int ir_infer_range(ir_infer_ctx *c, ir_type *r);
int ir_infer_nonzero(ir_infer_ctx *c, ir_type *r);
int ir_infer_nms(ir_infer_ctx *c, ir_type *r);
int ir_infer_slice_data(ir_infer_ctx *c, ir_type *r);
/* The sorting class (infer_sort.c). */
int ir_infer_sort(ir_infer_ctx *c, ir_type *r);
/* The resizing class (infer_resize.c). */
int ir_infer_resize(ir_infer_ctx *c, ir_type *r);

/* The image-patch classes (infer_patch.c): fold, roi_align. */
int ir_infer_fold(ir_infer_ctx *c, ir_type *r);
int ir_infer_roi_align(ir_infer_ctx *c, ir_type *r);
/* The random-number class (infer_random.c). */
int ir_infer_random(ir_infer_ctx *c, ir_type *r);
/* mo.print (infer_random.c): the operand's type. */
int ir_infer_print(ir_infer_ctx *c, ir_type *r);
/* mo.masked_scatter, mo.shape_to_tensor (infer_masked.c). */
int ir_infer_masked_scatter(ir_infer_ctx *c, ir_type *r);
int ir_infer_shape_to_tensor(ir_infer_ctx *c, ir_type *r);
/* mo.repeat_interleave (infer_repeat.c). */
int ir_infer_repeat(ir_infer_ctx *c, ir_type *r);
/* mo.dequantize, mo.qmatmul (infer_quant.c). */
int ir_infer_quant(ir_infer_ctx *c, ir_type *r);
/* matmul's shape rule (infer.c): batch dims broadcast, 1-D operands, K
 * checked; the result has operand 0's dtype. */
int ir_infer_matmul_shape(ir_infer_ctx *c, ir_type *r);
/* mo.matmul.integer (infer_matmul_integer.c). */
int ir_infer_matmul_integer(ir_infer_ctx *c, ir_type *r);
/* mo.irfft (infer_fft.c). */
int ir_infer_fft(ir_infer_ctx *c, ir_type *r);
/* mo.if, mo.while, mo.call (control.c): regions and declared results. */
int ir_infer_control(ir_infer_ctx *c, ir_type *r);

#endif
