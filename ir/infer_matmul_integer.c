/* infer_matmul_integer.c - the shape and dtype rule of mo.matmul.integer
 * (ONNX MatMulInteger; ops.def documents it).
 *
 * Assumes ir_infer_node has checked the operand count (2 to 4) and the
 * result count. Guarantees for the interpreter and the lowering: a and b are
 * ui8 or si8; a zero point has its matrix's dtype and is a scalar (rank 0 or
 * [1]) or a vector of M (a's) or N (b's) entries, static or equal to the dim
 * (a symbolic one leaves a run-time check); the result is si32 with
 * mo.matmul's shape. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"

typedef ir_infer_ctx ctx;

static bool is_8bit(ir_dtype dt) { return dt == IR_DT_UI8 || dt == IR_DT_SI8; }

/* Operand k (2: a's zero point, 3: b's) against its matrix's dtype and the
 * dim `along` (M or N) it may have one entry per. */
static int zero_point(ctx *c, int k, const ir_dim *along) {
  const ir_type *z = &c->n->in[k]->type, *m = &c->n->in[k - 2]->type;
  const char *side = k == 2 ? "a" : "b", *per = k == 2 ? "row" : "column";
  if (z->dtype != m->dtype)
    return ir_infer_fail(c,
                         "mo.matmul.integer: operand %d (%s's zero point) must be %s like "
                         "operand %d, not %s",
                         k, side, ir_dtype_name(m->dtype), k - 2, ir_dtype_name(z->dtype));
  if (z->rank == 0) return 0;
  if (z->rank != 1)
    return ir_infer_fail(c,
                         "mo.matmul.integer: operand %d (%s's zero point) must be a scalar or "
                         "one per %s (rank 0 or 1), not rank %d",
                         k, side, per, z->rank);
  int64_t zn, an;
  if (ir_dim_is_const(z->dims[0], &zn) && zn == 1) return 0;
  if (ir_dim_is_const(z->dims[0], &zn) && ir_dim_is_const(along, &an)) {
    if (zn != an)
      return ir_infer_fail(c,
                           "mo.matmul.integer: operand %d (%s's zero point) has %" PRId64
                           " entries, not 1 or one per %s (%" PRId64 ")",
                           k, side, zn, per, an);
    return 0;
  }
  if (ir_dim_equal(z->dims[0], along)) return 0;
  char s1[160], s2[160], what[480];
  snprintf(what, sizeof what,
           "mo.matmul.integer: operand %d (%s's zero point) has %s entries, not one per %s (%s)",
           k, side, ir_infer_dim_str(s1, sizeof s1, z->dims[0]), per,
           ir_infer_dim_str(s2, sizeof s2, along));
  return ir_infer_need(c, IR_CHECK_EQ, z->dims[0], along, what);
}

int ir_infer_matmul_integer(ctx *c, ir_type *r) {
  for (int k = 0; k < 2; k++) {
    ir_dtype dt = c->n->in[k]->type.dtype;
    if (!is_8bit(dt))
      return ir_infer_fail(c, "mo.matmul.integer: operand %d must be ui8 or si8, not %s", k,
                           ir_dtype_name(dt));
  }
  if (ir_infer_matmul_shape(c, r) != 0) return -1;
  r->dtype = IR_DT_SI32;
  const ir_type *a = &c->n->in[0]->type, *b = &c->n->in[1]->type;
  /* M is a's second-to-last dim (1 for a 1-D a), N b's last (1 for a 1-D b) */
  const ir_dim *one = ir_dim_const(c->g->arena, 1);
  if (!one) return ir_infer_dim_fail(c);
  const ir_dim *m = a->rank >= 2 ? a->dims[a->rank - 2] : one;
  const ir_dim *nn = b->rank >= 2 ? b->dims[b->rank - 1] : one;
  for (int k = 2; k < c->n->nin; k++)
    if (zero_point(c, k, k == 2 ? m : nn) != 0) return -1;
  return 0;
}
