/* norm.c - lowering of mo.softmax, mo.logsoftmax and mo.layer_norm.
 *
 * softmax / logsoftmax (axis attribute, default -1): the input is viewed as
 * [outer, R, inner]; for each (outer, inner) row:
 *   m   = max over r (llvm.maximum from -inf: a NaN propagates)
 *   s   = sum over r of exp(x - m), in index order
 *   out = exp(x - m) / s            (softmax)
 *   out = (x - m) - log(s)          (logsoftmax)
 * layer_norm (epsilon attribute, default 1e-5) normalizes the last axis:
 *   mean = sum(x) / D, var = sum((x - mean)^2) / D (biased, two passes),
 *   y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta
 *   (for f32 this last pass runs in f32, 16 lanes wide).
 * Everything is computed in double, as the reference interpreter does, and
 * rounded to the element type at the store. exp is jit_exp_f64 (no call, so
 * the loops vectorize; within an ulp or two of libm's exp) and the sums may
 * be reassociated (they vectorize): a few double ulps from the interpreter.
 * f64 softmax keeps exp(x - m) in the output between passes 2 and 3 (one
 * exp per element); f16 / bf16 recompute it, to round once. f32 (the common
 * case) has loops of its own (softmax_f32_rows): exp, scaling and the
 * difference in f32, the sum in double, a few ulps of f32 from the
 * interpreter's all-double result, and every loop 16 lanes wide.
 * Work splitting (kernel ABI part / nparts): each part normalizes whole
 * rows (softmax: a range of outer, or of inner when there are fewer outer
 * rows than parts and than inner positions; layer_norm: a range of rows),
 * so results do not depend on the number of parts.
 * Assumes a verified node: float dtype shared by operands and result; for
 * layer_norm rank >= 1 and gamma, beta of shape [D]. */
#include <math.h>
#include <stdio.h>

#include "lower.h"

/* v with reassociation allowed (so a sum over a row vectorizes: a few ulps
 * of double, far below the rounding to f32 at the store); returns v. */
static LLVMValueRef reassoc(LLVMValueRef v) {
  LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

/* Load element idx of base as a double. */
static LLVMValueRef load_f64(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef idx) {
  LLVMValueRef x = jit_load(f, dt, base, idx);
  return dt == IR_DT_F64 ? x : LLVMBuildFPExt(f->b, x, f->t_f64, "");
}

/* Store a double into element idx of base, rounding once to dt. */
static void store_f64(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v) {
  if (dt != IR_DT_F64) v = LLVMBuildFPTrunc(f->b, v, jit_type(f, dt), "");
  jit_store(f, dt, base, idx, v);
}

/* acc < v ? v : acc, lane by lane: a NaN in v is skipped (the compare is
 * false), and acc, which starts at -inf, never holds one; one vmaxps on
 * x86, where llvm.maxnum needs NaN fix-ups around every step (and LLVM
 * reduces a maxnum vector one lane at a time: ~15 dependent steps per
 * row). */
static LLVMValueRef max_skip_nan(LLVMBuilderRef b, LLVMValueRef acc, LLVMValueRef v) {
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, v, acc, ""), v, acc, "");
}

/* The max of an f32 row (exact in f32: max rounds nothing), skipping NaNs
 * (max_skip_nan): a NaN it skips still reaches exp(x - m) and so the
 * sum, which makes the whole row NaN, as the NaN-propagating maximum would. A contiguous row
 * (inner == 1) is read 16 floats at a time into a vector of maxima; the
 * rest (and a strided row) goes element by element. */
static LLVMValueRef row_max_f32(jit_fn *f, LLVMValueRef X, LLVMValueRef base, LLVMValueRef R,
                                LLVMValueRef inner) {
  enum { W = 16 };
  LLVMBuilderRef b = f->b;
  LLVMTypeRef vt = LLVMVectorType(f->t_f32, W);
  LLVMValueRef vacc = jit_alloca(f, vt, "vmax32"), macc = jit_alloca(f, f->t_f32, "max32");
  LLVMValueRef ninf = jit_fconst(f, IR_DT_F32, -INFINITY), lanes[W];
  for (int i = 0; i < W; i++) lanes[i] = ninf;
  LLVMBuildStore(b, LLVMConstVector(lanes, W), vacc);
  LLVMValueRef unit = LLVMBuildICmp(b, LLVMIntEQ, inner, jit_i64(f, 1), "");
  LLVMValueRef nvec =
      LLVMBuildSelect(b, unit, LLVMBuildUDiv(b, R, jit_i64(f, W), ""), jit_i64(f, 0), "nvec");
  jit_loop l;
  LLVMValueRef c = jit_loop_begin(f, &l, jit_i64(f, 0), nvec, "c");
  LLVMValueRef at = jit_add(f, base, jit_mul(f, c, jit_i64(f, W)));
  LLVMValueRef v = LLVMBuildLoad2(b, vt, LLVMBuildGEP2(b, f->t_f32, X, &at, 1, ""), "");
  LLVMSetAlignment(v, 4);
  LLVMBuildStore(b, max_skip_nan(b, LLVMBuildLoad2(b, vt, vacc, ""), v), vacc);
  jit_loop_end(f, &l);
  /* lanes folded in halves (16 -> 8 -> 4 -> 2 -> 1): no NaN is left in the
   * lanes, so the order does not matter */
  LLVMValueRef vm = LLVMBuildLoad2(b, vt, vacc, "");
  for (int h = W / 2; h >= 1; h /= 2) {
    LLVMValueRef mask[W];
    for (int i = 0; i < W; i++) mask[i] = LLVMConstInt(f->t_i32, (unsigned)((i + h) % W), 0);
    LLVMValueRef hi = LLVMBuildShuffleVector(b, vm, LLVMGetUndef(vt), LLVMConstVector(mask, W), "");
    vm = max_skip_nan(b, vm, hi);
  }
  LLVMBuildStore(b, LLVMBuildExtractElement(b, vm, jit_i64(f, 0), ""), macc);
  LLVMValueRef k = jit_loop_begin(f, &l, jit_mul(f, nvec, jit_i64(f, W)), R, "r");
  LLVMBuildStore(b, max_skip_nan(b, LLVMBuildLoad2(b, f->t_f32, macc, ""),
                                 jit_load(f, IR_DT_F32, X, jit_add(f, base, jit_mul(f, k, inner)))),
                 macc);
  jit_loop_end(f, &l);
  return LLVMBuildLoad2(b, f->t_f32, macc, "m32");
}

/* An f32 (log)softmax row at base (R elements, stride inner): every loop
 * is f32 only, so it vectorizes 16 wide (a loop that mixes f32 and f64 gets
 * 8 lanes):
 *   2a  Y = exp(x - m)               (jit_exp_f32; x - m in f32)
 *   2b  s = sum of Y, in double      (reassociable)
 *   3   softmax: Y = Y * f32(1 / s); logsoftmax: Y = (x - m) - f32(log s)
 * A few ulps of f32 from the interpreter's all-double result. */
static void softmax_f32_rows(jit_fn *f, bool is_log, LLVMValueRef X, LLVMValueRef Y,
                             LLVMValueRef base, LLVMValueRef R, LLVMValueRef inner,
                             LLVMValueRef sacc) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef zero = jit_i64(f, 0);
  jit_loop l;
  LLVMValueRef m32 = row_max_f32(f, X, base, R, inner);
  LLVMValueRef k = jit_loop_begin(f, &l, zero, R, "r");
  LLVMValueRef idx = jit_add(f, base, jit_mul(f, k, inner));
  jit_store(f, IR_DT_F32, Y, idx,
            jit_exp_f32(f, LLVMBuildFSub(b, jit_load(f, IR_DT_F32, X, idx), m32, "")));
  jit_loop_end(f, &l);
  LLVMBuildStore(b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
  k = jit_loop_begin(f, &l, zero, R, "r");
  idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef s = LLVMBuildLoad2(b, f->t_f64, sacc, "");
  LLVMBuildStore(b, reassoc(LLVMBuildFAdd(b, s, load_f64(f, IR_DT_F32, Y, idx), "")), sacc);
  jit_loop_end(f, &l);
  s = LLVMBuildLoad2(b, f->t_f64, sacc, "s");
  LLVMValueRef scale =
      is_log ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1)
             : LLVMBuildFDiv(b, jit_fconst(f, IR_DT_F64, 1.0), s, "inv.s");
  scale = LLVMBuildFPTrunc(b, scale, f->t_f32, "");
  k = jit_loop_begin(f, &l, zero, R, "r");
  idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef y =
      is_log ? LLVMBuildFSub(b, LLVMBuildFSub(b, jit_load(f, IR_DT_F32, X, idx), m32, ""), scale, "")
             : LLVMBuildFMul(b, jit_load(f, IR_DT_F32, Y, idx), scale, "");
  jit_store(f, IR_DT_F32, Y, idx, y);
  jit_loop_end(f, &l);
}

int jit_lower_softmax(jit_fn *f) {
  const ir_node *n = f->node;
  bool is_log = n->op == IR_OP_LOGSOFTMAX;
  if (n->op != IR_OP_SOFTMAX && !is_log) return jit_fn_error(f, "not a softmax");
  if (n->nin != 1 || n->nout != 1)
    return jit_fn_error(f, "expected 1 operand and 1 result, got %d and %d", n->nin, n->nout);
  const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
  ir_dtype dt = ti->dtype;
  if (!ir_dtype_is_float(dt) || to->dtype != dt)
    return jit_fn_error(f, "dtype %s is not supported (float only)", ir_dtype_name(dt));
  int r = ti->rank;
  int64_t axis = ir_node_attr_int(n, "axis", -1);
  int64_t ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r)
    return jit_fn_error(f, "axis %lld is out of range for rank %d", (long long)axis, r);

  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef outer = jit_numel_range(f, ti, 0, (int)ax);
  LLVMValueRef R = jit_dim(f, ti->dims[ax]);
  LLVMValueRef inner = jit_numel_range(f, ti, (int)ax + 1, r);
  LLVMValueRef Rinner = jit_mul(f, R, inner);
  LLVMValueRef macc = jit_alloca(f, f->t_f64, "max");
  LLVMValueRef sacc = jit_alloca(f, f->t_f64, "sum");
  LLVMValueRef X = jit_in(f, 0), Y = jit_out(f, 0);

  LLVMValueRef olo, ohi, ilo, ihi;
  jit_split_outer_inner(f, outer, inner, &olo, &ohi, &ilo, &ihi);
  jit_loop lo, li, l1, l2, l3;
  LLVMValueRef o = jit_loop_begin(f, &lo, olo, ohi, "o");
  LLVMValueRef obase = jit_mul(f, o, Rinner);
  LLVMValueRef i = jit_loop_begin(f, &li, ilo, ihi, "i");
  LLVMValueRef base = jit_add(f, obase, i);

  if (dt == IR_DT_F32) { /* passes of its own, all f32 wide */
    softmax_f32_rows(f, is_log, X, Y, base, R, inner, sacc);
    jit_loop_end(f, &li);
    jit_loop_end(f, &lo);
    return f->failed ? -1 : 0;
  }
  /* pass 1: max */
  LLVMBuildStore(f->b, jit_fconst(f, IR_DT_F64, -INFINITY), macc);
  LLVMValueRef k = jit_loop_begin(f, &l1, zero, R, "r");
  LLVMValueRef x = load_f64(f, dt, X, jit_add(f, base, jit_mul(f, k, inner)));
  LLVMValueRef m = LLVMBuildLoad2(f->b, f->t_f64, macc, "");
  LLVMValueRef margs[2] = {m, x};
  LLVMBuildStore(f->b, jit_intrinsic(f, "llvm.maximum", f->t_f64, margs, 2), macc);
  jit_loop_end(f, &l1);
  m = LLVMBuildLoad2(f->b, f->t_f64, macc, "m");

  {
    /* pass 2: sum of exp(x - m) */
    LLVMBuildStore(f->b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
    k = jit_loop_begin(f, &l2, zero, R, "r");
    x = load_f64(f, dt, X, jit_add(f, base, jit_mul(f, k, inner)));
    LLVMValueRef e = jit_exp_f64(f, LLVMBuildFSub(f->b, x, m, ""));
    /* f64 softmax keeps exp(x - m) in the output for pass 3 (exactly);
     * f16 / bf16 recompute it, to round once. */
    bool keep_exp = !is_log && dt == IR_DT_F64;
    if (keep_exp) jit_store(f, dt, Y, jit_add(f, base, jit_mul(f, k, inner)), e);
    LLVMValueRef s = LLVMBuildLoad2(f->b, f->t_f64, sacc, "");
    /* reassociable, so the sum vectorizes (a few ulps of double, far below
     * the rounding at the store) */
    LLVMBuildStore(f->b, reassoc(LLVMBuildFAdd(f->b, s, e, "")), sacc);
    jit_loop_end(f, &l2);
    s = LLVMBuildLoad2(f->b, f->t_f64, sacc, "s");
    LLVMValueRef logs = is_log ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1) : NULL;

    /* pass 3: write */
    k = jit_loop_begin(f, &l3, zero, R, "r");
    LLVMValueRef idx = jit_add(f, base, jit_mul(f, k, inner));
    LLVMValueRef y;
    if (keep_exp) {
      y = LLVMBuildFDiv(f->b, jit_load(f, dt, Y, idx), s, "");
    } else {
      x = load_f64(f, dt, X, idx);
      LLVMValueRef d = LLVMBuildFSub(f->b, x, m, "");
      y = is_log ? LLVMBuildFSub(f->b, d, logs, "") : LLVMBuildFDiv(f->b, jit_exp_f64(f, d), s, "");
    }
    store_f64(f, dt, Y, idx, y);
    jit_loop_end(f, &l3);
  }

  jit_loop_end(f, &li);
  jit_loop_end(f, &lo);
  return f->failed ? -1 : 0;
}

int jit_lower_layer_norm(jit_fn *f) {
  const ir_node *n = f->node;
  if (n->nin != 3 || n->nout != 1)
    return jit_fn_error(f, "expected 3 operands and 1 result, got %d and %d", n->nin, n->nout);
  const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
  const ir_type *tg = &n->in[1]->type, *tb = &n->in[2]->type;
  ir_dtype dt = ti->dtype;
  if (!ir_dtype_is_float(dt) || to->dtype != dt)
    return jit_fn_error(f, "dtype %s is not supported (float only)", ir_dtype_name(dt));
  if (!ir_dtype_is_float(tg->dtype) || !ir_dtype_is_float(tb->dtype))
    return jit_fn_error(f, "gamma and beta must be float, got %s and %s", ir_dtype_name(tg->dtype),
                    ir_dtype_name(tb->dtype));
  int r = ti->rank;
  if (r < 1) return jit_fn_error(f, "operand must have rank >= 1");
  if (tg->rank != 1 || tb->rank != 1)
    return jit_fn_error(f, "gamma and beta must have rank 1, got %d and %d", tg->rank, tb->rank);
  double eps = ir_node_attr_float(n, "epsilon", 1e-5);

  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef rows = jit_numel_range(f, ti, 0, r - 1);
  LLVMValueRef D = jit_dim(f, ti->dims[r - 1]);
  LLVMValueRef Df = LLVMBuildSIToFP(f->b, D, f->t_f64, "");
  LLVMValueRef epsv = jit_fconst(f, IR_DT_F64, eps);
  LLVMValueRef sacc = jit_alloca(f, f->t_f64, "sum");
  LLVMValueRef X = jit_in(f, 0), G = jit_in(f, 1), B = jit_in(f, 2), Y = jit_out(f, 0);

  LLVMValueRef rlo, rhi;
  jit_split_range(f, rows, &rlo, &rhi);
  jit_loop lr, l1, l2, l3;
  LLVMValueRef row = jit_loop_begin(f, &lr, rlo, rhi, "row");
  LLVMValueRef base = jit_mul(f, row, D);

  /* pass 1: mean */
  LLVMBuildStore(f->b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
  LLVMValueRef j = jit_loop_begin(f, &l1, zero, D, "j");
  LLVMValueRef x = load_f64(f, dt, X, jit_add(f, base, j));
  LLVMValueRef s = LLVMBuildLoad2(f->b, f->t_f64, sacc, "");
  LLVMBuildStore(f->b, reassoc(LLVMBuildFAdd(f->b, s, x, "")), sacc);
  jit_loop_end(f, &l1);
  LLVMValueRef mean = LLVMBuildFDiv(f->b, LLVMBuildLoad2(f->b, f->t_f64, sacc, ""), Df, "mean");

  /* pass 2: biased variance */
  LLVMBuildStore(f->b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
  j = jit_loop_begin(f, &l2, zero, D, "j");
  x = load_f64(f, dt, X, jit_add(f, base, j));
  LLVMValueRef dlt = LLVMBuildFSub(f->b, x, mean, "");
  s = LLVMBuildLoad2(f->b, f->t_f64, sacc, "");
  LLVMBuildStore(f->b, reassoc(LLVMBuildFAdd(f->b, s, LLVMBuildFMul(f->b, dlt, dlt, ""), "")),
                 sacc);
  jit_loop_end(f, &l2);
  LLVMValueRef var = LLVMBuildFDiv(f->b, LLVMBuildLoad2(f->b, f->t_f64, sacc, ""), Df, "var");
  LLVMValueRef ve = LLVMBuildFAdd(f->b, var, epsv, "");
  LLVMValueRef den = jit_intrinsic(f, "llvm.sqrt", f->t_f64, &ve, 1);
  LLVMValueRef rstd = LLVMBuildFDiv(f->b, jit_fconst(f, IR_DT_F64, 1.0), den, "rstd");

  /* pass 3: normalize, scale, shift; all f32 in f32 (16 lanes; the mean
   * and 1 / std rounded to f32 once: a few ulps), else in double */
  bool all_f32 = dt == IR_DT_F32 && tg->dtype == IR_DT_F32 && tb->dtype == IR_DT_F32;
  LLVMValueRef mean_t = all_f32 ? LLVMBuildFPTrunc(f->b, mean, f->t_f32, "") : mean;
  LLVMValueRef rstd_t = all_f32 ? LLVMBuildFPTrunc(f->b, rstd, f->t_f32, "") : rstd;
  j = jit_loop_begin(f, &l3, zero, D, "j");
  LLVMValueRef idx = jit_add(f, base, j);
  LLVMValueRef y;
  if (all_f32) {
    x = jit_load(f, dt, X, idx);
    y = LLVMBuildFMul(f->b, LLVMBuildFSub(f->b, x, mean_t, ""), rstd_t, "");
    y = LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, y, jit_load(f, dt, G, j), ""),
                      jit_load(f, dt, B, j), "");
    jit_store(f, dt, Y, idx, y);
  } else {
    x = load_f64(f, dt, X, idx);
    LLVMValueRef g = load_f64(f, tg->dtype, G, j);
    LLVMValueRef bb = load_f64(f, tb->dtype, B, j);
    y = LLVMBuildFMul(f->b, LLVMBuildFSub(f->b, x, mean_t, ""), rstd_t, "");
    y = LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, y, g, ""), bb, "");
    store_f64(f, dt, Y, idx, y);
  }
  jit_loop_end(f, &l3);

  jit_loop_end(f, &lr);
  return f->failed ? -1 : 0;
}
