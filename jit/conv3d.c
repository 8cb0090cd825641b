/* conv3d.c - lowering of mo.conv3d (x [N, D, H, W, C] NDHWC, filter
 * [Q, R, S, C/g, F] QRSCF, optional bias [F]) for the host and for SIMT
 * targets.
 *
 * Direct: result element (b, od, oh, ow, f) is the bias plus, over the taps
 * (q, r, s) inside the operand, the dot product of x's group channels at
 * (b, id, ih, iw) with the filter's column f (id = od * sd - front + q * dd,
 * likewise h and w), accumulated with fmuladd in the dtype (the oracle sums
 * in double: rounding only). Host: the result elements are split between
 * the parts (jit_split_range); SIMT: a grid-stride loop over them.
 * Correct first: no im2col / GEMM form yet (conv.c has it for 2-D).
 * Assumes a verified node (f32 / f64, Q, R, S, F static, C = groups * C/g,
 * the result dims from ops.def's rule). */
#include "lower.h"
#include "simt.h"

typedef struct conv3p {
  int64_t k[3], st[3], dil[3], pad[6], F, Fg;
  ir_dtype dt;
  bool bias;
  LLVMValueRef in[3], C, Cg, out[3];
} conv3p;

static bool triple(const ir_node *n, const char *name, int64_t out[3]) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_INTS || (a->u.ints.n != 0 && a->u.ints.n != 1 && a->u.ints.n != 3))
    return false;
  for (int i = 0; i < 3; i++) out[i] = a->u.ints.n ? a->u.ints.v[a->u.ints.n == 1 ? 0 : i] : 1;
  return true;
}

static int conv3_setup(jit_fn *f, conv3p *q) {
  const ir_node *n = f->node;
  const ir_attr *pa = ir_node_attr_or_default(n, "padding");
  int64_t groups = ir_node_attr_int(n, "groups", 1);
  if (n->nin < 2 || !triple(n, "stride", q->st) || !triple(n, "dilation", q->dil) || !pa ||
      pa->kind != IR_ATTR_INTS || (pa->u.ints.n != 0 && pa->u.ints.n != 6) || groups < 1)
    return jit_fn_error(f, "mo.conv3d: malformed window attributes");
  for (int i = 0; i < 6; i++) q->pad[i] = pa->u.ints.n ? pa->u.ints.v[i] : 0;
  const ir_type *xt = &n->in[0]->type, *ft = &n->in[1]->type, *yt = &n->out[0]->type;
  if (xt->rank != 5 || ft->rank != 5 || yt->rank != 5 || !ir_dim_is_const(ft->dims[0], &q->k[0]) ||
      !ir_dim_is_const(ft->dims[1], &q->k[1]) || !ir_dim_is_const(ft->dims[2], &q->k[2]) ||
      !ir_dim_is_const(ft->dims[4], &q->F) || q->F % groups != 0)
    return jit_fn_error(f, "mo.conv3d: the filter needs static Q, R, S and F divisible by groups");
  q->Fg = q->F / groups;
  q->dt = xt->dtype;
  if (q->dt != IR_DT_F32 && q->dt != IR_DT_F64)
    return jit_fn_error(f, "mo.conv3d: dtype %s is not supported", ir_dtype_name(q->dt));
  q->bias = n->nin > 2;
  for (int i = 0; i < 3; i++) {
    q->in[i] = jit_dim(f, xt->dims[1 + i]);
    q->out[i] = jit_dim(f, yt->dims[1 + i]);
  }
  q->C = jit_dim(f, xt->dims[4]);
  q->Cg = jit_dim(f, ft->dims[3]);
  return 0;
}

static void conv3_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const conv3p *q = ud;
  LLVMValueRef acc_slot = jit_alloca(f, jit_type(f, q->dt), "acc");
  LLVMBuilderRef b = f->b;
  LLVMTypeRef et = jit_type(f, q->dt);
  LLVMValueRef zero = jit_i64(f, 0), Fv = jit_i64(f, q->F);
  LLVMValueRef dims[5] = {NULL, q->out[0], q->out[1], q->out[2], Fv}, co[5];
  jit_simt_unravel(f, e, dims, 5, co);
  LLVMValueRef cbase = jit_mul(f, LLVMBuildUDiv(b, co[4], jit_i64(f, q->Fg), ""), q->Cg);
  LLVMBuildStore(b, q->bias ? jit_load(f, q->dt, jit_in(f, 2), co[4]) : jit_fconst(f, q->dt, 0), acc_slot);
  jit_loop L[3], Cc;
  LLVMValueRef t[3], pos = jit_i64(f, 0), fpos = jit_i64(f, 0), ok = LLVMConstInt(f->t_i1, 1, 0);
  for (int i = 0; i < 3; i++) {
    t[i] = jit_loop_begin(f, &L[i], zero, jit_i64(f, q->k[i]), "tap");
    LLVMValueRef ii = LLVMBuildAdd(b, LLVMBuildSub(b, LLVMBuildMul(b, co[1 + i], jit_i64(f, q->st[i]), ""),
                                                   jit_i64(f, q->pad[2 * i]), ""),
                                   LLVMBuildMul(b, t[i], jit_i64(f, q->dil[i]), ""), "");
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, ii, q->in[i], ""), "");
    pos = LLVMBuildAdd(b, LLVMBuildMul(b, pos, q->in[i], ""), ii, "");
    fpos = jit_add(f, jit_mul(f, fpos, jit_i64(f, q->k[i])), t[i]);
  }
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, ok);
  LLVMValueRef xb = jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, co[0], jit_mul(f, q->in[0], jit_mul(f, q->in[1], q->in[2]))), pos), q->C), cbase);
  LLVMValueRef fb = jit_mul(f, fpos, q->Cg);
  LLVMValueRef c = jit_loop_begin(f, &Cc, zero, q->Cg, "c");
  LLVMValueRef args[3] = {jit_load(f, q->dt, jit_in(f, 0), jit_add(f, xb, c)),
                          jit_load(f, q->dt, jit_in(f, 1), jit_add(f, jit_mul(f, jit_add(f, fb, c), Fv), co[4])),
                          LLVMBuildLoad2(b, et, acc_slot, "")};
  LLVMBuildStore(b, jit_intrinsic(f, "llvm.fmuladd", et, args, 3), acc_slot);
  jit_loop_end(f, &Cc);
  jit_simt_if_end(f, &ib);
  for (int i = 2; i >= 0; i--) jit_loop_end(f, &L[i]);
  jit_store(f, q->dt, jit_out(f, 0), e, LLVMBuildLoad2(b, et, acc_slot, ""));
}

int jit_lower_conv3d(jit_fn *f) {
  conv3p q;
  return conv3_setup(f, &q) != 0 ? -1 : jit_each_element(f, conv3_elem, &q);
}

int jit_simt_lower_conv3d(jit_simt_fn *sf) {
  conv3p q;
  return conv3_setup(&sf->f, &q) != 0 ? -1 : jit_simt_each_element(sf, conv3_elem, &q);
}
