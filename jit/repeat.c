/* repeat.c - lowering of mo.repeat_interleave (ops.def) for the host and for
 * SIMT targets.
 *
 * One routine per result element, shared by both targets (jit_each_element:
 * the host splits the elements between parts; SIMT runs a grid-stride loop).
 * Result element e at coordinates c reads the input at c with c[axis]
 * replaced by its source s (the input flattened when axis is absent). With
 * the attribute repeats r, s = c[axis] / r. With a repeats tensor, s is the
 * number of i whose prefix sum repeats[0] + ... + repeats[i] is <= c[axis]
 * (the prefix sums rise, so that is the element whose run holds c[axis]): a
 * scan of the axis' repeats per element, O(D) work for each, no workspace and
 * no order between elements. The sum was checked against the result's dim
 * when the data was read (ir/shape.c); the kernel still returns
 * JIT_KERR_REPEAT (a SIMT thread sets the error word) before reading when s
 * is outside the axis, so data changed since cannot read out of bounds.
 * Assumes a verified node whose run-time shape checks have passed. */
#include "jit.h"
#include "lower.h"
#include "simt.h"

typedef struct rep_info {
  int ax;    /* the result's axis (0 when flattened) */
  bool flat; /* no axis: the input read as 1-D */
  int64_t r; /* the attribute repeats (one operand) */
} rep_info;

static int rep_setup(jit_fn *f, rep_info *p) {
  const ir_node *n = f->node;
  int64_t axis = ir_node_attr_int(n, "axis", INT64_MIN);
  p->flat = axis == INT64_MIN;
  p->ax = 0;
  p->r = ir_node_attr_int(n, "repeats", 1);
  if ((!p->flat && !jit_simt_norm_axis(axis, n->in[0]->type.rank, &p->ax)) ||
      (n->nin == 2 && n->in[1]->type.rank != 1))
    return jit_fn_error(f, "mo.repeat_interleave: malformed node");
  return 0;
}

/* The axis' source index of result index j along it, from the repeats
 * tensor: #{i < d : repeats[0] + ... + repeats[i] <= j}. */
static LLVMValueRef scan_source(jit_fn *f, LLVMValueRef j, LLVMValueRef d) {
  const ir_type *rt = &f->node->in[1]->type;
  LLVMValueRef one = LLVMBuildICmp(f->b, LLVMIntEQ, jit_dim(f, rt->dims[0]), jit_i64(f, 1), "");
  LLVMValueRef acc = jit_alloca(f, f->t_i64, "acc"), cnt = jit_alloca(f, f->t_i64, "cnt");
  LLVMBuildStore(f->b, jit_i64(f, 0), acc);
  LLVMBuildStore(f->b, jit_i64(f, 0), cnt);
  jit_loop K;
  LLVMValueRef k = jit_loop_begin(f, &K, jit_i64(f, 0), d, "k");
  LLVMValueRef v = jit_load(f, rt->dtype, jit_in(f, 1), jit_sel(f, one, jit_i64(f, 0), k));
  if (rt->dtype != IR_DT_SI64) v = LLVMBuildSExt(f->b, v, f->t_i64, "");
  LLVMValueRef a = LLVMBuildAdd(f->b, LLVMBuildLoad2(f->b, f->t_i64, acc, ""), v, "");
  LLVMBuildStore(f->b, a, acc);
  LLVMValueRef le = LLVMBuildZExt(f->b, LLVMBuildICmp(f->b, LLVMIntSLE, a, j, ""), f->t_i64, "");
  LLVMBuildStore(f->b, LLVMBuildAdd(f->b, LLVMBuildLoad2(f->b, f->t_i64, cnt, ""), le, ""), cnt);
  jit_loop_end_rolled(f, &K);
  return LLVMBuildLoad2(f->b, f->t_i64, cnt, "");
}

static void rep_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const rep_info *p = ud;
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
  LLVMValueRef dims[IR_MAX_RANK], c[IR_MAX_RANK];
  jit_shape(f, y, dims);
  jit_simt_unravel(f, e, dims, y->rank, c);
  LLVMValueRef d = p->flat ? jit_numel_range(f, x, 0, x->rank) : jit_dim(f, x->dims[p->ax]);
  LLVMValueRef s = n->nin == 1 ? LLVMBuildUDiv(f->b, c[p->ax], jit_i64(f, p->r > 0 ? p->r : 1), "")
                               : scan_source(f, c[p->ax], d);
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntUGE, s, d, ""), JIT_KERR_REPEAT);
  LLVMValueRef src = s;
  if (!p->flat) {
    src = jit_i64(f, 0);
    for (int a = 0; a < x->rank; a++)
      src = jit_add(f, jit_mul(f, src, jit_dim(f, x->dims[a])), a == p->ax ? s : c[a]);
  }
  jit_store(f, y->dtype, jit_out(f, 0), e, jit_load(f, y->dtype, jit_in(f, 0), src));
}

int jit_lower_repeat(jit_fn *f) {
  rep_info p;
  if (rep_setup(f, &p) != 0) return -1;
  return jit_each_element(f, rep_elem, &p);
}

int jit_simt_lower_repeat(jit_simt_fn *sf) {
  rep_info p;
  if (rep_setup(&sf->f, &p) != 0) return -1;
  return jit_simt_each_element(sf, rep_elem, &p);
}
