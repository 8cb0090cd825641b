/* conv_t.c - lowering of mo.conv2d_transpose (x [N, H, W, C] NHWC, filter
 * [R, S, F, C], optional bias [F]) for the host and for SIMT targets.
 *
 * Direct, in gather form: result element (b, oh, ow, f) sums, over the taps
 * (r, s) whose input pixel lands on it (oh + top - r * dh = ih * sh with
 * 0 <= ih < H, likewise w), the dot product of x's channels at (b, ih, iw)
 * with the filter's channels at (r, s, f): both runs are contiguous in C.
 * Each element is written once, so nothing is scattered or shared.
 * Host: the result elements are split between the parts (jit_split_range).
 * SIMT: a grid-stride loop over them. Both accumulate with fmuladd in the
 * dtype, in (r, s, c) order (the oracle sums in double: rounding only).
 * Correct first: no im2col / GEMM form yet.
 * Assumes a verified node (f32 / f64, R, S, F static, C equal on both
 * sides, the result dims from ops.def's rule). */
#include "lower.h"
#include "simt.h"

typedef struct convtp {
  jit_win w;
  int64_t R, S, F;
  ir_dtype dt;
  bool bias;
  LLVMValueRef H, W, C, Ho, Wo;
} convtp;

static int convt_setup(jit_fn *f, convtp *q) {
  const ir_node *n = f->node;
  if (n->nin < 2 || jit_win_read(f, n, &q->w) != 0) return -1;
  const ir_type *xt = &n->in[0]->type, *ft = &n->in[1]->type, *yt = &n->out[0]->type;
  if (ft->rank != 4 || !ir_dim_is_const(ft->dims[0], &q->R) || !ir_dim_is_const(ft->dims[1], &q->S) ||
      !ir_dim_is_const(ft->dims[2], &q->F))
    return jit_fn_error(f, "mo.conv2d_transpose: the filter needs static R, S and F");
  q->dt = xt->dtype;
  if (q->dt != IR_DT_F32 && q->dt != IR_DT_F64)
    return jit_fn_error(f, "mo.conv2d_transpose: dtype %s is not supported", ir_dtype_name(q->dt));
  q->bias = n->nin > 2;
  q->H = jit_dim(f, xt->dims[1]);
  q->W = jit_dim(f, xt->dims[2]);
  q->C = jit_dim(f, xt->dims[3]);
  q->Ho = jit_dim(f, yt->dims[1]);
  q->Wo = jit_dim(f, yt->dims[2]);
  return 0;
}

/* The input row (or column) tap t reads for output o, and whether it exists. */
static LLVMValueRef src_of(jit_fn *f, LLVMValueRef o, LLVMValueRef t, int64_t pad, int64_t dil,
                           int64_t st, LLVMValueRef n, LLVMValueRef *ok) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef th = LLVMBuildSub(b, LLVMBuildAdd(b, o, jit_i64(f, pad), ""),
                                 LLVMBuildMul(b, t, jit_i64(f, dil), ""), "");
  LLVMValueRef nonneg = LLVMBuildICmp(b, LLVMIntSGE, th, jit_i64(f, 0), "");
  LLVMValueRef i = LLVMBuildSDiv(b, th, jit_i64(f, st), "");
  LLVMValueRef exact = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildSRem(b, th, jit_i64(f, st), ""), jit_i64(f, 0), "");
  *ok = LLVMBuildAnd(b, LLVMBuildAnd(b, nonneg, exact, ""), LLVMBuildICmp(b, LLVMIntSLT, i, n, ""), "");
  return i;
}

/* Result element e (a linear index). */
static void convt_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const convtp *q = ud;
  LLVMValueRef acc_slot = jit_alloca(f, jit_type(f, q->dt), "acc");
  const jit_win *w = &q->w;
  LLVMTypeRef et = jit_type(f, q->dt);
  LLVMValueRef zero = jit_i64(f, 0), Fv = jit_i64(f, q->F);
  LLVMValueRef dims[4] = {NULL, q->Ho, q->Wo, Fv}, co[4];
  jit_simt_unravel(f, e, dims, 4, co);
  LLVMBuildStore(f->b, q->bias ? jit_load(f, q->dt, jit_in(f, 2), co[3]) : jit_fconst(f, q->dt, 0), acc_slot);
  jit_loop Rr, Ss, Cc;
  LLVMValueRef r = jit_loop_begin(f, &Rr, zero, jit_i64(f, q->R), "r");
  LLVMValueRef okh, ih = src_of(f, co[1], r, w->pad[0], w->dil[0], w->st[0], q->H, &okh);
  LLVMValueRef s = jit_loop_begin(f, &Ss, zero, jit_i64(f, q->S), "s");
  LLVMValueRef okw, iw = src_of(f, co[2], s, w->pad[2], w->dil[1], w->st[1], q->W, &okw);
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, LLVMBuildAnd(f->b, okh, okw, ""));
  LLVMValueRef xb = jit_mul(f, jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, co[0], q->H), ih), q->W), iw), q->C);
  LLVMValueRef wb = jit_mul(f, jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, r, jit_i64(f, q->S)), s), Fv), co[3]), q->C);
  LLVMValueRef c = jit_loop_begin(f, &Cc, zero, q->C, "c");
  LLVMValueRef args[3] = {jit_load(f, q->dt, jit_in(f, 0), jit_add(f, xb, c)),
                          jit_load(f, q->dt, jit_in(f, 1), jit_add(f, wb, c)),
                          LLVMBuildLoad2(f->b, et, acc_slot, "")};
  LLVMBuildStore(f->b, jit_intrinsic(f, "llvm.fmuladd", et, args, 3), acc_slot);
  jit_loop_end(f, &Cc);
  jit_simt_if_end(f, &ib);
  jit_loop_end(f, &Ss);
  jit_loop_end(f, &Rr);
  jit_store(f, q->dt, jit_out(f, 0), e, LLVMBuildLoad2(f->b, et, acc_slot, ""));
}

int jit_lower_conv_t(jit_fn *f) {
  convtp q;
  return convt_setup(f, &q) != 0 ? -1 : jit_each_element(f, convt_elem, &q);
}

int jit_simt_lower_conv_t(jit_simt_fn *sf) {
  convtp q;
  return convt_setup(&sf->f, &q) != 0 ? -1 : jit_simt_each_element(sf, convt_elem, &q);
}
