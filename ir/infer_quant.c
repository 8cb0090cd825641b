/* infer_quant.c - the shape and dtype rules of the block-quantized ops,
 * mo.dequantize and mo.qmatmul (ops.def documents them; ir/qblock.h the
 * encodings).
 *
 * Assumes ir_infer_node has checked the operand and result counts and
 * operand 0's dtype set. Guarantees for the lowerings and the interpreter:
 * the encoding is known, the block operand is ui8 with a static last dim
 * that is a whole number of blocks, qmatmul's lhs is f32 with its K equal
 * to that many blocks' elements (a symbolic K leaves a run-time check) and
 * rhs is rank 2. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"
#include "qblock.h"

typedef ir_infer_ctx ctx;

static int encoding(ctx *c, int *enc) {
  const char *s;
  if (ir_infer_attr_string(c, "encoding", &s) != 0) return -1;
  if ((*enc = qb_from_name(s)) < 0)
    return ir_infer_fail(c,
                         "mo.%s: unknown encoding '%s' (kiln has q4_0, q8_0, q4_k, q5_k, q6_k)",
                         c->op, s);
  return 0;
}

/* Operand k holds blocks: ui8, rank >= 1, a static last dim of whole blocks.
 * *blocks = blocks per row. */
static int block_operand(ctx *c, int k, int enc, int64_t *blocks) {
  const ir_type *t = &c->n->in[k]->type;
  if (t->dtype != IR_DT_UI8)
    return ir_infer_fail(c, "mo.%s: operand %d (the %s blocks) must be ui8, not %s", c->op, k,
                         qb_name((qb_encoding)enc), ir_dtype_name(t->dtype));
  if (t->rank < 1)
    return ir_infer_fail(c, "mo.%s: operand %d must have rank >= 1", c->op, k);
  int64_t b;
  if (!ir_dim_is_const(t->dims[t->rank - 1], &b))
    return ir_infer_fail(c, "mo.%s: the last dim of operand %d (bytes of blocks) must be static",
                         c->op, k);
  if (b % QB_BYTES(enc))
    return ir_infer_fail(c,
                         "mo.%s: the last dim of operand %d is %" PRId64
                         " bytes, not a whole number of %s blocks of %d bytes",
                         c->op, k, b, qb_name((qb_encoding)enc), QB_BYTES(enc));
  *blocks = b / QB_BYTES(enc);
  return 0;
}

static int infer_dequantize(ctx *c, ir_type *r) {
  int enc;
  int64_t blocks;
  if (encoding(c, &enc) != 0 || block_operand(c, 0, enc, &blocks) != 0) return -1;
  const ir_type *t = &c->n->in[0]->type;
  if (ir_infer_res_set(c, r, IR_DT_F32, t->rank, t->dims, t->device) != 0) return -1;
  if (!(r->dims[t->rank - 1] = ir_dim_const(c->g->arena, blocks * QB_ELEMS(enc))))
    return ir_infer_dim_fail(c);
  return 0;
}

static int infer_qmatmul(ctx *c, ir_type *r) {
  int enc;
  int64_t blocks;
  if (encoding(c, &enc) != 0 || block_operand(c, 1, enc, &blocks) != 0) return -1;
  const ir_type *a = &c->n->in[0]->type, *b = &c->n->in[1]->type;
  if (a->dtype != IR_DT_F32)
    return ir_infer_fail(c, "mo.qmatmul: operand 0 must be f32, not %s",
                         ir_dtype_name(a->dtype));
  if (a->rank < 1) return ir_infer_fail(c, "mo.qmatmul: operand 0 must have rank >= 1");
  if (b->rank != 2)
    return ir_infer_fail(c, "mo.qmatmul: operand 1 must have rank 2 ([N, bytes]), not %d",
                         b->rank);
  const ir_dim *kd = a->dims[a->rank - 1];
  int64_t k, want = blocks * QB_ELEMS(enc);
  if (ir_dim_is_const(kd, &k)) {
    if (k % QB_ELEMS(enc))
      return ir_infer_fail(c, "mo.qmatmul: K = %" PRId64 " is not a multiple of %s's block of %d",
                           k, qb_name((qb_encoding)enc), QB_ELEMS(enc));
    if (k != want)
      return ir_infer_fail(c,
                           "mo.qmatmul: operand 0 has K = %" PRId64 " but operand 1's %" PRId64
                           " blocks per row hold K = %" PRId64,
                           k, blocks, want);
  } else {
    const ir_dim *wd = ir_dim_const(c->g->arena, want);
    char s1[96], what[300];
    if (!wd) return ir_infer_dim_fail(c);
    snprintf(what, sizeof what, "mo.qmatmul: K of operand 0 (%s) must be %" PRId64
             " (operand 1's blocks)", ir_infer_dim_str(s1, sizeof s1, kd), want);
    if (ir_infer_need(c, IR_CHECK_EQ, kd, wd, what) != 0) return -1;
  }
  if (ir_infer_res_set(c, r, IR_DT_F32, a->rank, a->dims, a->device) != 0) return -1;
  r->dims[a->rank - 1] = b->dims[0];
  return 0;
}

int ir_infer_quant(ctx *c, ir_type *r) {
  return c->n->op == IR_OP_QMATMUL ? infer_qmatmul(c, r) : infer_dequantize(c, r);
}
