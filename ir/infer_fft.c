/* infer_fft.c - the shape and dtype rule of the Fourier class: mo.irfft
 * (ops.def documents its attributes and meaning).
 *
 * Assumes ir_infer_node has checked the operand count and that operand 0 is
 * f32 / f64. Guarantees: a result of the operand's dtype and rank (less the
 * (re, im) dim with input_is_complex), dim `axis` replaced by n; n >= 1
 * decided now when m is static, else checked at run time (m >= 2 without
 * n), so a kernel never sees n < 1. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "infer_impl.h"

typedef ir_infer_ctx ctx;

int ir_infer_fft(ctx *c, ir_type *r) {
  const ir_type *t = &c->n->in[0]->type;
  int64_t n, axis, two;
  const char *norm;
  bool cplx;
  int ax;
  if (ir_infer_attr_int(c, "n", &n) != 0 || ir_infer_attr_int(c, "axis", &axis) != 0 ||
      ir_infer_attr_string(c, "normalization", &norm) != 0 ||
      ir_infer_attr_bool(c, "input_is_complex", &cplx) != 0)
    return -1;
  if (strcmp(norm, "backward") != 0 && strcmp(norm, "ortho") != 0 && strcmp(norm, "forward") != 0)
    return ir_infer_fail(c, "mo.irfft: normalization '%s' is not one of backward, ortho, forward",
                         norm);
  if (n < 1 && n != -1)
    return ir_infer_fail(c, "mo.irfft: n = %" PRId64 " must be at least 1 (or -1: 2 (m - 1))", n);
  int rank = t->rank - (cplx ? 1 : 0);
  if (cplx && (t->rank < 2 || !ir_dim_is_const(t->dims[t->rank - 1], &two) || two != 2))
    return ir_infer_fail(c, "mo.irfft: input_is_complex needs a last dim of 2 (re, im) after at "
                            "least one other dim");
  if (rank < 1) return ir_infer_fail(c, "operand 0 of mo.irfft has rank 0 but needs rank >= 1");
  if (ir_infer_norm_axis(c, "axis", axis, rank, &ax) != 0) return -1;
  if (ir_infer_res_set(c, r, t->dtype, rank, t->dims, t->device) != 0) return -1;
  const ir_dim *nd;
  if (n >= 1) {
    nd = ir_dim_const(c->g->arena, n);
  } else { /* 2 (m - 1), at least 1: m >= 2 */
    const ir_dim *two_d = ir_dim_const(c->g->arena, 2);
    if (!two_d) return ir_infer_dim_fail(c);
    char s1[96], what[300];
    snprintf(what, sizeof what, "mo.irfft: without n, axis %d needs at least 2 values (has %s)",
             ax, ir_infer_dim_str(s1, sizeof s1, t->dims[ax]));
    if (ir_infer_need(c, IR_CHECK_GE, t->dims[ax], two_d, what) != 0) return -1;
    const ir_dim *m1 = ir_dim_sub(c->g->arena, t->dims[ax], ir_dim_const(c->g->arena, 1));
    nd = m1 ? ir_dim_mul(c->g->arena, two_d, m1) : NULL;
  }
  if (!nd) return ir_infer_dim_fail(c);
  r->dims[ax] = nd;
  return 0;
}
