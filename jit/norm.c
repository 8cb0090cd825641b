/* norm.c - lowering of mo.softmax, mo.logsoftmax and mo.layer_norm.
 *
 * softmax / logsoftmax (axis attribute, default -1): the input is viewed as
 * [outer, R, inner]; for each (outer, inner) row:
 *   m   = max over r
 *   s   = sum over r of exp(x - m)
 *   out = exp(x - m) / s            (softmax)
 *   out = (x - m) - log(s)          (logsoftmax)
 * f32 rows along the last axis (the common case) call the row template's
 * kiln_softmax_f32_rows (kernels-templates/rows.c) once for each part's
 * rows (they are contiguous): the engine's prebuilt copy when it has one,
 * at both tiers (such a kernel compiles in milliseconds, and FastISel has
 * nothing to vectorize), else the template linked in. Its numerics are
 * those described next, but for its exp (rows.c says how it differs).
 * f32 along another axis (softmax_f32_rows) is computed in f32 vector lanes:
 * exp, the difference and the scaling in f32 (jit_exp_f32), the sum in f32
 * lanes over blocks whose sums are added in double; a few ulps of f32 from
 * the interpreter's all-double result. Other float dtypes (softmax_rows)
 * are computed in double, as the interpreter does, and rounded to the
 * element type at the store (exp is jit_exp_f64, within an ulp or two of
 * libm's; the sums reassociate so they vectorize: a few double ulps).
 * A fused softmax (jit_emit_softmax with a prologue, fused.c) first computes
 * each row of its operand with the prologue's elementwise members into the
 * result buffer and normalizes it there, with the same row code (template
 * rows: a chunk of rows, FUSED_CHUNK_FLOATS, then one call for it).
 * layer_norm (epsilon attribute, default 1e-5) normalizes the last axis:
 *   mean = sum(x) / D, var = sum((x - mean)^2) / D (biased, two passes),
 *   y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta
 *   all-f32 rows through the row template's kiln_layer_norm_f32_row as
 *   softmax (the mean in double lanes, the variance of x - f32(mean) in f32
 *   lanes with double block sums, the last pass in f32); other dtypes in
 *   double, rounded once at the store.
 * Work splitting (kernel ABI part / nparts): each part normalizes whole
 * rows (softmax: a range of outer, or of inner when there are fewer outer
 * rows than parts and than inner positions; layer_norm: a range of rows),
 * so results do not depend on the number of parts.
 * Assumes a verified node: float dtype shared by operands and result; for
 * layer_norm rank >= 1 and gamma, beta of shape [D]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lower.h"
#include "template.h"

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

/* The lanes of v (a vector of w floats, no NaN in them) folded in halves
 * to a vector of `to` lanes (1: a float) with max_skip_nan. */
static LLVMValueRef fold_max(jit_fn *f, LLVMValueRef v, int w, int to) {
  LLVMBuilderRef b = f->b;
  for (; w > to; w /= 2) {
    LLVMValueRef lo[32], hi[32];
    for (int i = 0; i < w / 2; i++) {
      lo[i] = LLVMConstInt(f->t_i32, (unsigned)i, 0);
      hi[i] = LLVMConstInt(f->t_i32, (unsigned)(i + w / 2), 0);
    }
    LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(v));
    v = max_skip_nan(b, LLVMBuildShuffleVector(b, v, u, LLVMConstVector(lo, (unsigned)w / 2), ""),
                     LLVMBuildShuffleVector(b, v, u, LLVMConstVector(hi, (unsigned)w / 2), ""));
  }
  return to == 1 ? LLVMBuildExtractElement(b, v, jit_i64(f, 0), "") : v;
}

/* acc (a vector of w floats) folded with the n chunks of w floats of X
 * from element `from` on; returns the new acc. */
static LLVMValueRef max_chunks(jit_fn *f, LLVMValueRef X, LLVMValueRef from, LLVMValueRef n, int w,
                               LLVMValueRef acc) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef vt = LLVMVectorType(f->t_f32, (unsigned)w);
  LLVMValueRef slot = jit_alloca(f, vt, "vmax32");
  LLVMBuildStore(b, acc, slot);
  jit_loop l;
  LLVMValueRef c = jit_loop_begin(f, &l, jit_i64(f, 0), n, "c");
  LLVMValueRef at = jit_add(f, from, jit_mul(f, c, jit_i64(f, w)));
  LLVMValueRef v = LLVMBuildLoad2(b, vt, LLVMBuildGEP2(b, f->t_f32, X, &at, 1, ""), "");
  LLVMSetAlignment(v, 4);
  LLVMBuildStore(b, max_skip_nan(b, LLVMBuildLoad2(b, vt, slot, ""), v), slot);
  jit_loop_end(f, &l);
  return LLVMBuildLoad2(b, vt, slot, "");
}

/* The max of an f32 row (exact in f32: max rounds nothing), skipping NaNs
 * (max_skip_nan): a NaN it skips still reaches exp(x - m) and so the sum,
 * which makes the whole row NaN, as the NaN-propagating maximum would. A
 * contiguous row (inner == 1) is read 32 floats at a time (four
 * independent 8-lane maxima on AVX2: one dependent chain is latency-bound),
 * then 8 at a time; the rest (and a strided row) goes element by element. */
static LLVMValueRef row_max_f32(jit_fn *f, LLVMValueRef X, LLVMValueRef base, LLVMValueRef R,
                                LLVMValueRef inner) {
  enum { W = 32, W2 = 8 };
  LLVMBuilderRef b = f->b;
  LLVMValueRef ninf = jit_fconst(f, IR_DT_F32, -INFINITY), lanes[W];
  for (int i = 0; i < W; i++) lanes[i] = ninf;
  LLVMValueRef unit = LLVMBuildICmp(b, LLVMIntEQ, inner, jit_i64(f, 1), "");
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef n1 = LLVMBuildSelect(b, unit, LLVMBuildUDiv(b, R, jit_i64(f, W), ""), zero, "");
  LLVMValueRef done = jit_mul(f, n1, jit_i64(f, W));
  LLVMValueRef n2 = LLVMBuildSelect(
      b, unit, LLVMBuildUDiv(b, LLVMBuildNSWSub(b, R, done, ""), jit_i64(f, W2), ""), zero, "");
  LLVMValueRef acc = max_chunks(f, X, base, n1, W, LLVMConstVector(lanes, W));
  acc = max_chunks(f, X, jit_add(f, base, done), n2, W2, fold_max(f, acc, W, W2));
  LLVMValueRef macc = jit_alloca(f, f->t_f32, "max32");
  LLVMBuildStore(b, fold_max(f, acc, W2, 1), macc);
  jit_loop l;
  LLVMValueRef k = jit_loop_begin(f, &l, jit_add(f, done, jit_mul(f, n2, jit_i64(f, W2))), R, "r");
  LLVMBuildStore(b, max_skip_nan(b, LLVMBuildLoad2(b, f->t_f32, macc, ""),
                                 jit_load(f, IR_DT_F32, X, jit_add(f, base, jit_mul(f, k, inner)))),
                 macc);
  jit_loop_end(f, &l);
  return LLVMBuildLoad2(b, f->t_f32, macc, "m32");
}

/* Elements of an f32 row summed in f32 lanes before the partial sum is
 * added to the row's double sum: within a block each lane adds at most a
 * few dozen terms (a few ulps of f32), and long rows lose no more. */
enum { SUM_BLOCK = 1024 };

/* An f32 (log)softmax row at base (R elements, stride inner), three passes
 * whose loops are all f32 (so they vectorize with every lane f32):
 *   1  m = max of x                     (row_max_f32)
 *   2  e = exp(x - m) (jit_exp_f32_nonpos; x - m in f32), s = sum of e: f32 lanes
 *      within blocks of SUM_BLOCK, the block sums in double; softmax also
 *      stores e into Y
 *   3  softmax: Y = e * f32(1 / s); logsoftmax: Y = (x - m) - f32(log s)
 * One exp per element: two passes with a running maximum (the sum rescaled
 * whenever the maximum grows) need two, and measured slower on rows of 16
 * to 32768 floats, which stay in cache between the passes. A few ulps of f32
 * from the interpreter's all-double result. X may be Y (a fused prologue
 * wrote the operand there): each element is read before it is written. */
static void softmax_f32_rows(jit_fn *f, bool is_log, LLVMValueRef X, LLVMValueRef Y,
                             LLVMValueRef base, LLVMValueRef R, LLVMValueRef inner) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef sacc = jit_alloca(f, f->t_f64, "sum"), bacc = jit_alloca(f, f->t_f32, "bsum");
  LLVMValueRef m32 = row_max_f32(f, X, base, R, inner);
  LLVMBuildStore(b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
  LLVMValueRef nblk = LLVMBuildUDiv(b, jit_add(f, R, jit_i64(f, SUM_BLOCK - 1)),
                                    jit_i64(f, SUM_BLOCK), "nblk");
  jit_loop lb, l;
  LLVMValueRef lo = jit_mul(f, jit_loop_begin(f, &lb, jit_i64(f, 0), nblk, "blk"),
                            jit_i64(f, SUM_BLOCK));
  LLVMValueRef hi = jit_add(f, lo, jit_i64(f, SUM_BLOCK));
  hi = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, hi, R, ""), hi, R, "");
  LLVMBuildStore(b, jit_fconst(f, IR_DT_F32, 0.0), bacc);
  LLVMValueRef k = jit_loop_begin(f, &l, lo, hi, "r");
  LLVMValueRef idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef e = jit_exp_f32_nonpos(f, LLVMBuildFSub(b, jit_load(f, IR_DT_F32, X, idx), m32, ""));
  if (!is_log) jit_store(f, IR_DT_F32, Y, idx, e);
  LLVMBuildStore(b, reassoc(LLVMBuildFAdd(b, LLVMBuildLoad2(b, f->t_f32, bacc, ""), e, "")), bacc);
  jit_loop_end(f, &l);
  LLVMValueRef bs = LLVMBuildFPExt(b, LLVMBuildLoad2(b, f->t_f32, bacc, ""), f->t_f64, "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, f->t_f64, sacc, ""), bs, ""), sacc);
  jit_loop_end(f, &lb);
  LLVMValueRef s = LLVMBuildLoad2(b, f->t_f64, sacc, "s");
  LLVMValueRef scale =
      is_log ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1)
             : LLVMBuildFDiv(b, jit_fconst(f, IR_DT_F64, 1.0), s, "inv.s");
  scale = LLVMBuildFPTrunc(b, scale, f->t_f32, "");
  k = jit_loop_begin(f, &l, jit_i64(f, 0), R, "r");
  idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef y =
      is_log ? LLVMBuildFSub(b, LLVMBuildFSub(b, jit_load(f, IR_DT_F32, X, idx), m32, ""), scale, "")
             : LLVMBuildFMul(b, jit_load(f, IR_DT_F32, Y, idx), scale, "");
  jit_store(f, IR_DT_F32, Y, idx, y);
  jit_loop_end(f, &l);
}

/* A (log)softmax row of another float dtype, computed in double:
 *   1  m = max of x (llvm.maximum: a NaN propagates)
 *   2  s = sum of exp(x - m); f64 softmax keeps exp(x - m) in Y (exactly),
 *      f16 / bf16 recompute it in pass 3, to round once
 *   3  the result, rounded once to dt.
 * X may be Y, as for softmax_f32_rows. */
static void softmax_rows(jit_fn *f, bool is_log, ir_dtype dt, LLVMValueRef X, LLVMValueRef Y,
                         LLVMValueRef base, LLVMValueRef R, LLVMValueRef inner) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef macc = jit_alloca(f, f->t_f64, "max"), sacc = jit_alloca(f, f->t_f64, "sum");
  jit_loop l;
  LLVMBuildStore(b, jit_fconst(f, IR_DT_F64, -INFINITY), macc);
  LLVMValueRef k = jit_loop_begin(f, &l, zero, R, "r");
  LLVMValueRef x = load_f64(f, dt, X, jit_add(f, base, jit_mul(f, k, inner)));
  LLVMValueRef margs[2] = {LLVMBuildLoad2(b, f->t_f64, macc, ""), x};
  LLVMBuildStore(b, jit_intrinsic(f, "llvm.maximum", f->t_f64, margs, 2), macc);
  jit_loop_end(f, &l);
  LLVMValueRef m = LLVMBuildLoad2(b, f->t_f64, macc, "m");

  bool keep_exp = !is_log && dt == IR_DT_F64;
  LLVMBuildStore(b, jit_fconst(f, IR_DT_F64, 0.0), sacc);
  k = jit_loop_begin(f, &l, zero, R, "r");
  LLVMValueRef idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef e = jit_exp_f64(f, LLVMBuildFSub(b, load_f64(f, dt, X, idx), m, ""));
  if (keep_exp) jit_store(f, dt, Y, idx, e);
  LLVMValueRef s = LLVMBuildLoad2(b, f->t_f64, sacc, "");
  LLVMBuildStore(b, reassoc(LLVMBuildFAdd(b, s, e, "")), sacc);
  jit_loop_end(f, &l);
  s = LLVMBuildLoad2(b, f->t_f64, sacc, "s");
  LLVMValueRef logs = is_log ? jit_intrinsic(f, "llvm.log", f->t_f64, &s, 1) : NULL;

  k = jit_loop_begin(f, &l, zero, R, "r");
  idx = jit_add(f, base, jit_mul(f, k, inner));
  LLVMValueRef y;
  if (keep_exp) {
    y = LLVMBuildFDiv(b, jit_load(f, dt, Y, idx), s, "");
  } else {
    LLVMValueRef d = LLVMBuildFSub(b, load_f64(f, dt, X, idx), m, "");
    y = is_log ? LLVMBuildFSub(b, d, logs, "") : LLVMBuildFDiv(b, jit_exp_f64(f, d), s, "");
  }
  store_f64(f, dt, Y, idx, y);
  jit_loop_end(f, &l);
}

/* The row template's entry `name` (kernels-templates/rows.c): the engine's
 * prebuilt copy when it has one, else the template linked into the kernel
 * (the same code: the same bits). NULL with f->err set. */
static LLVMValueRef row_entry(jit_fn *f, const char *name) {
  return f->prebuilt_rows ? jit_template_extern(f, JIT_TMPL_ROWS, name, f->prebuilt_rows)
                          : jit_template_function(f, JIT_TMPL_ROWS, name);
}

/* &P[idx] of a float buffer. */
static LLVMValueRef f32_at(jit_fn *f, LLVMValueRef P, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(f->b, f->t_f32, P, &idx, 1, "");
}

bool jit_node_calls_rows(const ir_node *n) {
  if (!n || n->nout != 1 || n->nin < 1 || !n->in[0] || !n->out[0]) return false;
  const ir_type *t = &n->in[0]->type;
  if (t->dtype != IR_DT_F32 || n->out[0]->type.dtype != IR_DT_F32 || t->rank < 1) return false;
  if (n->op == IR_OP_LAYER_NORM)
    return n->nin == 3 && n->in[1] && n->in[2] && n->in[1]->type.dtype == IR_DT_F32 &&
           n->in[2]->type.dtype == IR_DT_F32;
  if (n->op != IR_OP_SOFTMAX && n->op != IR_OP_LOGSOFTMAX) return false;
  int64_t axis = ir_node_attr_int(n, "axis", -1);
  return axis == -1 || axis == t->rank - 1;
}

/* ---- a fused prologue ---- */

/* The operand's rows as the prologue reads them: st[b] the element strides
 * of input b broadcast to the softmax's shape, D that shape's dims. */
typedef struct prologue {
  const jit_ew_group *g;
  LLVMValueRef (*st)[IR_MAX_RANK];
  LLVMValueRef D[IR_MAX_RANK];
  int rank, axis;
} prologue;

/* Add to rb[b] the offsets, in each input b, of the coordinates that the
 * flat position `lin` over the axes [from, to) stands for. */
static void add_coords(jit_fn *f, const prologue *p, int from, int to, LLVMValueRef lin,
                       LLVMValueRef *rb) {
  LLVMValueRef rem = lin;
  for (int k = to - 1; k >= from; k--) {
    LLVMValueRef ik = rem;
    if (k > from) {
      ik = LLVMBuildURem(f->b, rem, p->D[k], "");
      rem = LLVMBuildUDiv(f->b, rem, p->D[k], "");
    }
    for (int b = 0; b < p->g->nin; b++) rb[b] = jit_add(f, rb[b], jit_mul(f, ik, p->st[b][k]));
  }
}

/* Row (o, i) of the softmax's operand computed by the prologue's members
 * into Y (at base + r * inner, r < R). */
static void prologue_row(jit_fn *f, const prologue *p, LLVMValueRef Y, LLVMValueRef o,
                         LLVMValueRef i, LLVMValueRef base, LLVMValueRef R, LLVMValueRef inner) {
  const jit_ew_group *g = p->g;
  LLVMValueRef rb[64], idx[64];
  for (int b = 0; b < g->nin; b++) rb[b] = jit_i64(f, 0);
  add_coords(f, p, 0, p->axis, o, rb);
  add_coords(f, p, p->axis + 1, p->rank, i, rb);
  jit_ew_group row = *g;
  row.out_ptrs = &Y;
  jit_loop l;
  LLVMValueRef r = jit_loop_begin(f, &l, jit_i64(f, 0), R, "r");
  for (int b = 0; b < g->nin; b++) idx[b] = jit_add(f, rb[b], jit_mul(f, r, p->st[b][p->axis]));
  jit_emit_ew_element(f, &row, idx, jit_add(f, base, jit_mul(f, r, inner)));
  jit_loop_end(f, &l);
}

/* p for group g over the softmax operand's type t and axis ax. */
static int prologue_init(jit_fn *f, prologue *p, const jit_ew_group *g, const ir_type *t, int ax) {
  p->g = g;
  p->rank = t->rank;
  p->axis = ax;
  if (g->nin > 64) return jit_fn_error(f, "softmax prologue: %d input buffers, at most 64", g->nin);
  if (g->nout != 1) return jit_fn_error(f, "softmax prologue: %d results, expected 1", g->nout);
  for (int b = 0; b < g->nin; b++)
    if (g->in_types[b]->rank > t->rank)
      return jit_fn_error(f, "softmax prologue: input %d has rank %d, the softmax %d", b,
                          g->in_types[b]->rank, t->rank);
  if (!(p->st = calloc((size_t)g->nin + 1, sizeof *p->st))) return jit_fn_error(f, "out of memory");
  jit_shape(f, t, p->D);
  for (int b = 0; b < g->nin; b++) jit_group_in_strides(f, g, b, t, p->st[b]);
  return 0;
}

/* ---- contiguous f32 rows through the template ---- */

/* Floats of Y a fused softmax computes ahead of one call of the rows
 * routine: those rows, with the operand and mask rows the prologue reads
 * for them (12 KB in all), stay in L1 until the row passes. 4096 measured
 * 1.25x slower on [1, 12, 256, 256] with a mask; 1024 as fast as a call
 * per row there, and the rows of short sequences share a call. */
enum { FUSED_CHUNK_FLOATS = 1024 };

/* One call of kiln_softmax_f32_rows over the `count` rows of R floats from
 * row `first` of X into Y. */
static void softmax_rows_call(jit_fn *f, LLVMValueRef rows_fn, bool is_log, LLVMValueRef Y,
                              LLVMValueRef X, LLVMValueRef first, LLVMValueRef count,
                              LLVMValueRef R) {
  LLVMValueRef base = jit_mul(f, first, R);
  LLVMValueRef args[5] = {f32_at(f, Y, base), f32_at(f, X, base), R, count, jit_i64(f, is_log)};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(rows_fn), rows_fn, args, 5, "");
}

/* Rows [lo, hi) of a fused softmax: chunks of rows computed by the
 * prologue into Y, then normalized there by one call each. */
static void softmax_rows_fused(jit_fn *f, const prologue *p, LLVMValueRef rows_fn, bool is_log,
                               LLVMValueRef Y, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef R) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef one = jit_i64(f, 1), count = jit_sub(f, hi, lo);
  LLVMValueRef r1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, R, one, ""), R, one, "");
  LLVMValueRef per = LLVMBuildUDiv(b, jit_i64(f, FUSED_CHUNK_FLOATS), r1, "");
  per = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, per, one, ""), per, one, "chunk");
  LLVMValueRef nch = LLVMBuildUDiv(b, jit_add(f, count, jit_sub(f, per, one)), per, "nchunks");
  jit_loop lc, lr;
  LLVMValueRef c = jit_add(f, lo, jit_mul(f, jit_loop_begin(f, &lc, jit_i64(f, 0), nch, "c"), per));
  LLVMValueRef ce = jit_add(f, c, per);
  ce = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ce, hi, ""), ce, hi, "");
  LLVMValueRef o = jit_loop_begin(f, &lr, c, ce, "o");
  prologue_row(f, p, Y, o, jit_i64(f, 0), jit_mul(f, o, R), R, one);
  jit_loop_end(f, &lr);
  softmax_rows_call(f, rows_fn, is_log, Y, Y, c, jit_sub(f, ce, c), R);
  jit_loop_end(f, &lc);
}

/* ---- the kernel ---- */

int jit_emit_softmax(jit_fn *f, const ir_node *n, LLVMValueRef X, LLVMValueRef Y,
                     const jit_ew_group *pro) {
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
  prologue p = {0};
  if (pro && prologue_init(f, &p, pro, ti, (int)ax) < 0) return -1;
  LLVMValueRef rows_fn = NULL; /* contiguous f32 rows: the template's routine */
  if (jit_node_calls_rows(n) && !(rows_fn = row_entry(f, "kiln_softmax_f32_rows"))) {
    free(p.st);
    return -1;
  }

  LLVMValueRef outer = jit_numel_range(f, ti, 0, (int)ax);
  LLVMValueRef R = jit_dim(f, ti->dims[ax]);
  LLVMValueRef inner = jit_numel_range(f, ti, (int)ax + 1, r);
  LLVMValueRef Rinner = jit_mul(f, R, inner);
  LLVMValueRef olo, ohi, ilo, ihi;
  jit_split_outer_inner(f, outer, inner, &olo, &ohi, &ilo, &ihi);
  if (rows_fn) { /* the last axis: inner is 1 and the part's rows [olo, ohi) are contiguous */
    if (pro) softmax_rows_fused(f, &p, rows_fn, is_log, Y, olo, ohi, R);
    else softmax_rows_call(f, rows_fn, is_log, Y, X, olo, jit_sub(f, ohi, olo), R);
    free(p.st);
    return f->failed ? -1 : 0;
  }
  jit_loop lo, li;
  LLVMValueRef o = jit_loop_begin(f, &lo, olo, ohi, "o");
  LLVMValueRef obase = jit_mul(f, o, Rinner);
  LLVMValueRef i = jit_loop_begin(f, &li, ilo, ihi, "i");
  LLVMValueRef base = jit_add(f, obase, i);
  if (pro) { /* the operand's row into Y, normalized there */
    prologue_row(f, &p, Y, o, i, base, R, inner);
    X = Y;
  }
  if (dt == IR_DT_F32) softmax_f32_rows(f, is_log, X, Y, base, R, inner);
  else softmax_rows(f, is_log, dt, X, Y, base, R, inner);
  jit_loop_end(f, &li);
  jit_loop_end(f, &lo);
  free(p.st);
  return f->failed ? -1 : 0;
}

int jit_lower_softmax(jit_fn *f) {
  return jit_emit_softmax(f, f->node, jit_in(f, 0), jit_out(f, 0), NULL);
}

/* An all-f32 layer_norm over ti (rank >= 1): each part's rows through the
 * row template's kiln_layer_norm_f32_row. */
static int layer_norm_f32(jit_fn *f, const ir_type *ti, double eps) {
  LLVMValueRef fn = row_entry(f, "kiln_layer_norm_f32_row");
  if (!fn) return -1;
  LLVMValueRef rows = jit_numel_range(f, ti, 0, ti->rank - 1);
  LLVMValueRef D = jit_dim(f, ti->dims[ti->rank - 1]);
  LLVMValueRef X = jit_in(f, 0), G = jit_in(f, 1), B = jit_in(f, 2), Y = jit_out(f, 0);
  LLVMValueRef rlo, rhi;
  jit_split_range(f, rows, &rlo, &rhi);
  jit_loop lr;
  LLVMValueRef base = jit_mul(f, jit_loop_begin(f, &lr, rlo, rhi, "row"), D);
  LLVMValueRef args[6] = {f32_at(f, Y, base), f32_at(f, X, base), G, B, D,
                          jit_fconst(f, IR_DT_F64, eps)};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 6, "");
  jit_loop_end(f, &lr);
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
  if (jit_node_calls_rows(n)) return layer_norm_f32(f, ti, eps);

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

  /* pass 3: normalize, scale, shift in double, rounded once */
  j = jit_loop_begin(f, &l3, zero, D, "j");
  LLVMValueRef idx = jit_add(f, base, j);
  x = load_f64(f, dt, X, idx);
  LLVMValueRef g = load_f64(f, tg->dtype, G, j);
  LLVMValueRef bb = load_f64(f, tb->dtype, B, j);
  LLVMValueRef y = LLVMBuildFMul(f->b, LLVMBuildFSub(f->b, x, mean, ""), rstd, "");
  y = LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, y, g, ""), bb, "");
  store_f64(f, dt, Y, idx, y);
  jit_loop_end(f, &l3);

  jit_loop_end(f, &lr);
  return f->failed ? -1 : 0;
}
