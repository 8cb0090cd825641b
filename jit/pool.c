/* pool.c - lowering of mo.max_pool2d and mo.avg_pool2d (NHWC), for the
 * host and for SIMT targets, and the window geometry conv.c shares.
 *
 * Result element (b, oh, ow, c) reduces the taps (r, s) of its window at
 * ih = oh * sh - top + r * dh, iw = ow * sw - left + s * dw that fall inside
 * the operand: max with mo.max's scalar rule (NaN wins; -inf or the dtype's
 * minimum for a window without a tap), or the sum divided by the taps
 * inside the padded input (count_boundary) or inside the operand (ops.def).
 * Window sizes, strides and paddings are attributes (constants); H, W and C
 * may be symbolic.
 * Host: the result pixels (b, oh, ow) are split between the parts
 * (jit_split_range). A pixel whose window lies wholly inside the operand
 * (and has at most FAST_TAPS taps) runs one channel loop with its taps
 * unrolled and the reduction in a register (it vectorizes over C; 3x3 on
 * [1, 1024, 1024, 16] went from 0.25x to 0.68x of the triad's bandwidth);
 * the others loop over the taps, a pixel's channels one contiguous loop
 * inside each tap accumulating in the result row. Both take the taps in
 * the same order. Sums are
 * in the dtype, in tap order (the oracle sums in double: rounding
 * differences only).
 * A max pool of dilation 1 stepping 1 along W (the common 3x3 / stride 1)
 * is instead split by result rows (b, oh) and taken separably: along a
 * row, each input column's max over the window's rows is computed once and
 * kept in a ring of kw - 1 registers, a vector of channels wide, so an
 * element is loaded kh times instead of kh * kw and a result costs
 * kh + kw - 2 maxes instead of kh * kw - 1 (3x3 on [1, 1024, 1024, 16]:
 * ~0.65x -> ~0.85x of the triad; llvm.maximum is several instructions on
 * x86), when a pixel's channels are one 64-byte walk or the window's rows
 * fit in L1 (sep_rows). max is associative and commutative, NaN wins
 * either way: the results are the per-pixel walk's. SIMT: a grid-stride loop over the result elements,
 * each thread reducing its window in registers.
 * Assumes a verified node (rank 4, the result dims from ops.def's rule). */
#include "lower.h"
#include "simt.h"

/* The most taps the host unrolls for a window wholly inside the operand. */
enum { FAST_TAPS = 64 };

static bool pair_attr(const ir_node *n, const char *name, int64_t out[2]) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n > 2) return false;
  out[0] = out[1] = 1;
  if (a->u.ints.n > 0) {
    out[0] = a->u.ints.v[0];
    out[1] = a->u.ints.v[a->u.ints.n - 1];
  }
  return out[0] >= 1 && out[1] >= 1;
}

int jit_win_read(jit_fn *f, const ir_node *n, jit_win *w) {
  const ir_attr *pa = ir_node_attr_or_default(n, "padding");
  const ir_attr *ka = ir_node_attr(n, "kernel_size");
  w->k[0] = w->k[1] = 1;
  if (ka && ka->kind == IR_ATTR_INTS && ka->u.ints.n == 2) {
    w->k[0] = ka->u.ints.v[0];
    w->k[1] = ka->u.ints.v[1];
  }
  if (!pair_attr(n, "stride", w->st) || !pair_attr(n, "dilation", w->dil) || !pa ||
      pa->kind != IR_ATTR_INTS || n->in[0]->type.rank != 4 || n->out[0]->type.rank != 4)
    return jit_fn_error(f, "mo.%s: malformed window attributes or ranks", ir_op_get(n->op)->name);
  const int64_t *v = pa->u.ints.v;
  int np = pa->u.ints.n;
  if (np == 0) {
    w->pad[0] = w->pad[1] = w->pad[2] = w->pad[3] = 0;
  } else if (np == 1 || np == 2) {
    w->pad[0] = w->pad[1] = v[0];
    w->pad[2] = w->pad[3] = v[np - 1];
  } else if (np == 4) {
    for (int i = 0; i < 4; i++) w->pad[i] = v[i];
  } else {
    return jit_fn_error(f, "mo.%s: padding has %d entries", ir_op_get(n->op)->name, np);
  }
  return 0;
}

typedef struct poolp {
  jit_win w;
  bool avg, cb;
  ir_dtype dt;
  LLVMValueRef H, W, C, Ho, Wo;
} poolp;

static int pool_setup(jit_fn *f, poolp *q) {
  const ir_node *n = f->node;
  if (jit_win_read(f, n, &q->w) != 0) return -1;
  q->avg = n->op == IR_OP_AVG_POOL2D;
  q->cb = ir_node_attr_bool(n, "count_boundary", true);
  q->dt = n->in[0]->type.dtype;
  const ir_type *xt = &n->in[0]->type, *yt = &n->out[0]->type;
  q->H = jit_dim(f, xt->dims[1]);
  q->W = jit_dim(f, xt->dims[2]);
  q->C = jit_dim(f, xt->dims[3]);
  q->Ho = jit_dim(f, yt->dims[1]);
  q->Wo = jit_dim(f, yt->dims[2]);
  return 0;
}

/* The reduction's start: -inf / the dtype's minimum, or 0. */
static LLVMValueRef pool_init(jit_fn *f, const poolp *q) {
  if (q->avg) return jit_fconst(f, q->dt, 0.0);
  if (ir_dtype_is_float(q->dt)) return jit_fconst(f, q->dt, -__builtin_inf());
  return LLVMConstInt(jit_type(f, q->dt), q->dt == IR_DT_SI32 ? (unsigned long long)INT32_MIN
                                                              : (unsigned long long)INT64_MIN, 1);
}

static LLVMValueRef pool_step(jit_fn *f, const poolp *q, LLVMValueRef acc, LLVMValueRef v) {
  if (q->avg) return LLVMBuildFAdd(f->b, acc, v, "");
  return jit_scalar_binary(f, IR_OP_MAX, q->dt, acc, v);
}

/* Row ih (or column iw) of tap t: o * stride - pad + t * dil; *in: inside
 * [0, n); *bound: inside the padded input (< n + pad after). */
static LLVMValueRef tap(jit_fn *f, LLVMValueRef o, LLVMValueRef t, int64_t st, int64_t pad,
                        int64_t dil, int64_t pad_after, LLVMValueRef n, LLVMValueRef *in,
                        LLVMValueRef *bound) {
  LLVMValueRef i = LLVMBuildAdd(f->b, LLVMBuildSub(f->b, LLVMBuildMul(f->b, o, jit_i64(f, st), ""),
                                                   jit_i64(f, pad), ""),
                                LLVMBuildMul(f->b, t, jit_i64(f, dil), ""), "");
  *in = LLVMBuildICmp(f->b, LLVMIntULT, i, n, "");
  *bound = LLVMBuildICmp(f->b, LLVMIntSLT, i, LLVMBuildAdd(f->b, n, jit_i64(f, pad_after), ""), "");
  return i;
}

/* acc / count for avg (count as i64 -> the dtype); acc for max. */
static LLVMValueRef pool_finish(jit_fn *f, const poolp *q, LLVMValueRef acc, LLVMValueRef cnt) {
  if (!q->avg) return acc;
  return LLVMBuildFDiv(f->b, acc, LLVMBuildSIToFP(f->b, cnt, jit_type(f, q->dt), ""), "");
}

/* Counters for avg: taps inside the operand and inside the padded input. */
static void count_tap(jit_fn *f, LLVMValueRef slot, LLVMValueRef cond) {
  LLVMValueRef c = LLVMBuildLoad2(f->b, f->t_i64, slot, "");
  LLVMBuildStore(f->b, LLVMBuildAdd(f->b, c, LLVMBuildZExt(f->b, cond, f->t_i64, ""), ""), slot);
}

/* Result pixels [lo, hi) (flat over b, oh, ow), one at a time: a window
 * wholly inside the operand runs FAST_TAPS's unrolled channel loop, the
 * others loop over their taps (see the top). */
static void pool_pixels(jit_fn *f, const poolp *q, LLVMValueRef lo, LLVMValueRef hi) {
  const jit_win *w = &q->w;
  LLVMValueRef X = jit_in(f, 0), Y = jit_out(f, 0), zero = jit_i64(f, 0);
  LLVMValueRef cnt_slot = jit_alloca(f, f->t_i64, "cnt"), bnd_slot = jit_alloca(f, f->t_i64, "bnd");
  jit_loop P, Ci, Rr, Ss, Cc, Cf;
  LLVMValueRef p = jit_loop_begin(f, &P, lo, hi, "pix");
  LLVMValueRef ow = LLVMBuildURem(f->b, p, q->Wo, ""), t = LLVMBuildUDiv(f->b, p, q->Wo, "");
  LLVMValueRef oh = LLVMBuildURem(f->b, t, q->Ho, ""), b = LLVMBuildUDiv(f->b, t, q->Ho, "");
  LLVMValueRef ybase = jit_mul(f, p, q->C);
  /* a window wholly inside the operand (most pixels): its taps unrolled
   * inside one channel loop, the reduction in a register */
  LLVMBasicBlockRef join = NULL;
  if (w->k[0] * w->k[1] <= FAST_TAPS) {
    LLVMValueRef ih0 = LLVMBuildSub(f->b, LLVMBuildMul(f->b, oh, jit_i64(f, w->st[0]), ""),
                                    jit_i64(f, w->pad[0]), "");
    LLVMValueRef iw0 = LLVMBuildSub(f->b, LLVMBuildMul(f->b, ow, jit_i64(f, w->st[1]), ""),
                                    jit_i64(f, w->pad[2]), "");
    LLVMValueRef last_h = LLVMBuildAdd(f->b, ih0, jit_i64(f, (w->k[0] - 1) * w->dil[0]), "");
    LLVMValueRef last_w = LLVMBuildAdd(f->b, iw0, jit_i64(f, (w->k[1] - 1) * w->dil[1]), "");
    LLVMValueRef inside = LLVMBuildAnd(
        f->b,
        LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntSGE, ih0, zero, ""),
                     LLVMBuildICmp(f->b, LLVMIntSLT, last_h, q->H, ""), ""),
        LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntSGE, iw0, zero, ""),
                     LLVMBuildICmp(f->b, LLVMIntSLT, last_w, q->W, ""), ""),
        "inside");
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "fast");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "slow");
    join = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "pix.done");
    LLVMBuildCondBr(f->b, inside, fast, slow);
    LLVMPositionBuilderAtEnd(f->b, fast);
    LLVMValueRef xb0 = jit_mul(f, jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, b, q->H), ih0), q->W),
                                          iw0), q->C);
    jit_loop Cw;
    LLVMValueRef cw = jit_loop_begin(f, &Cw, zero, q->C, "c");
    LLVMValueRef acc = pool_init(f, q);
    for (int64_t r = 0; r < w->k[0]; r++)
      for (int64_t sx = 0; sx < w->k[1]; sx++) {
        LLVMValueRef off = jit_mul(f, jit_add(f, jit_mul(f, jit_i64(f, r * w->dil[0]), q->W),
                                              jit_i64(f, sx * w->dil[1])), q->C);
        acc = pool_step(f, q, acc, jit_load(f, q->dt, X, jit_add(f, jit_add(f, xb0, off), cw)));
      }
    jit_store(f, q->dt, Y, jit_add(f, ybase, cw),
              pool_finish(f, q, acc, jit_i64(f, w->k[0] * w->k[1])));
    jit_loop_end(f, &Cw);
    LLVMBuildBr(f->b, join);
    LLVMPositionBuilderAtEnd(f->b, slow);
  }
  LLVMValueRef c = jit_loop_begin(f, &Ci, zero, q->C, "c");
  jit_store(f, q->dt, Y, jit_add(f, ybase, c), pool_init(f, q));
  jit_loop_end(f, &Ci);
  LLVMBuildStore(f->b, zero, cnt_slot);
  LLVMBuildStore(f->b, zero, bnd_slot);
  LLVMValueRef r = jit_loop_begin(f, &Rr, zero, jit_i64(f, w->k[0]), "r");
  LLVMValueRef inh, bh;
  LLVMValueRef ih = tap(f, oh, r, w->st[0], w->pad[0], w->dil[0], w->pad[1], q->H, &inh, &bh);
  LLVMValueRef s = jit_loop_begin(f, &Ss, zero, jit_i64(f, w->k[1]), "s");
  LLVMValueRef inw, bw;
  LLVMValueRef iw = tap(f, ow, s, w->st[1], w->pad[2], w->dil[1], w->pad[3], q->W, &inw, &bw);
  LLVMValueRef in = LLVMBuildAnd(f->b, inh, inw, "");
  count_tap(f, cnt_slot, in);
  count_tap(f, bnd_slot, LLVMBuildAnd(f->b, bh, bw, ""));
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, in);
  LLVMValueRef xbase =
      jit_mul(f, jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, b, q->H), ih), q->W), iw), q->C);
  c = jit_loop_begin(f, &Cc, zero, q->C, "c");
  LLVMValueRef yi = jit_add(f, ybase, c);
  jit_store(f, q->dt, Y, yi,
            pool_step(f, q, jit_load(f, q->dt, Y, yi),
                      jit_load(f, q->dt, X, jit_add(f, xbase, c))));
  jit_loop_end(f, &Cc);
  jit_simt_if_end(f, &ib);
  jit_loop_end(f, &Ss);
  jit_loop_end(f, &Rr);
  if (q->avg) {
    LLVMValueRef n = LLVMBuildLoad2(f->b, f->t_i64, q->cb ? bnd_slot : cnt_slot, "");
    c = jit_loop_begin(f, &Cf, zero, q->C, "c");
    LLVMValueRef yi2 = jit_add(f, ybase, c);
    jit_store(f, q->dt, Y, yi2, pool_finish(f, q, jit_load(f, q->dt, Y, yi2), n));
    jit_loop_end(f, &Cf);
  }
  if (join) {
    LLVMBuildBr(f->b, join);
    LLVMPositionBuilderAtEnd(f->b, join);
  }
  jit_loop_end(f, &P);
}

/* ---- max pooling with stride 1 along W: separable ---- */

/* Taps per axis the separable walk unrolls at most. */
enum { SEP_TAPS = 16, SEP_ROWS_BYTES = 16 << 10 };

/* Whether the row walk below applies: a max over a dense window (dilation
 * 1) stepping 1 along W whose first window reaches the operand (left
 * padding < kw), in a dtype whose max is one vector instruction family. */
static bool sep_applies(const poolp *q) {
  const jit_win *w = &q->w;
  bool f16ish = q->dt == IR_DT_F16 || q->dt == IR_DT_BF16;
  return !q->avg && !f16ish && q->dt != IR_DT_BOOL && w->dil[0] == 1 && w->dil[1] == 1 &&
         w->st[1] == 1 && w->pad[2] < w->k[1] && w->k[0] <= SEP_TAPS && w->k[1] <= SEP_TAPS;
}

/* min(max(i, 0), n - 1) */
static LLVMValueRef clamp(jit_fn *f, LLVMValueRef i, LLVMValueRef n) {
  LLVMValueRef zero = jit_i64(f, 0), top = LLVMBuildSub(f->b, n, jit_i64(f, 1), "");
  i = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, i, zero, ""), zero, i, "");
  return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, i, top, ""), top, i, "");
}

/* vt (a vector of the dtype, or the scalar) at base[idx] */
static LLVMValueRef vload(jit_fn *f, const poolp *q, LLVMTypeRef vt, LLVMValueRef base,
                          LLVMValueRef idx) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(f->b, jit_type(f, q->dt), base, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(f->b, vt, p, "");
  LLVMSetAlignment(v, (unsigned)ir_dtype_size(q->dt));
  return v;
}

/* The max over the row's kh taps (rows[r]: their element offsets) at
 * column j (clamped into the operand), channels c0.. of vt. */
static LLVMValueRef sep_column(jit_fn *f, const poolp *q, LLVMTypeRef vt, const LLVMValueRef *rows,
                               LLVMValueRef j, LLVMValueRef c0) {
  LLVMValueRef off = jit_add(f, jit_mul(f, clamp(f, j, q->W), q->C), c0), m = NULL;
  for (int64_t r = 0; r < q->w.k[0]; r++) {
    LLVMValueRef v = vload(f, q, vt, jit_in(f, 0), jit_add(f, rows[r], off));
    m = m ? pool_step(f, q, m, v) : v;
  }
  return m;
}

/* One result row's channels c0.. (vt wide) along W: each column's max over
 * the kh rows is taken once and kept in a ring of kw - 1 registers, so an
 * input element is loaded kh times in all instead of kh * kw. */
static void sep_walk(jit_fn *f, const poolp *q, LLVMTypeRef vt, const LLVMValueRef *rows,
                     LLVMValueRef ybase, LLVMValueRef c0) {
  const jit_win *w = &q->w;
  LLVMValueRef ring[SEP_TAPS];
  int nr = (int)w->k[1] - 1;
  for (int s = 0; s < nr; s++) {
    ring[s] = jit_alloca(f, vt, "ring");
    LLVMBuildStore(f->b, sep_column(f, q, vt, rows, jit_i64(f, s - w->pad[2]), c0), ring[s]);
  }
  jit_loop L;
  LLVMValueRef ow = jit_loop_begin(f, &L, jit_i64(f, 0), q->Wo, "ow");
  LLVMValueRef nv = sep_column(f, q, vt, rows, jit_add(f, ow, jit_i64(f, nr - w->pad[2])), c0);
  LLVMValueRef m = NULL, held[SEP_TAPS];
  for (int s = 0; s < nr; s++) {
    held[s] = LLVMBuildLoad2(f->b, vt, ring[s], "");
    m = m ? pool_step(f, q, m, held[s]) : held[s];
  }
  m = m ? pool_step(f, q, m, nv) : nv;
  LLVMValueRef yi = jit_add(f, ybase, jit_add(f, jit_mul(f, ow, q->C), c0));
  LLVMValueRef y = LLVMBuildInBoundsGEP2(f->b, jit_type(f, q->dt), jit_out(f, 0), &yi, 1, "");
  LLVMSetAlignment(LLVMBuildStore(f->b, m, y), (unsigned)ir_dtype_size(q->dt));
  for (int s = 0; s + 1 < nr; s++) LLVMBuildStore(f->b, held[s + 1], ring[s]);
  if (nr > 0) LLVMBuildStore(f->b, nv, ring[nr - 1]);
  jit_loop_end(f, &L);
}

/* Result rows [lo, hi) (flat over b, oh). A row whose windows all reach
 * the operand walks its channels 64 bytes at a time, then (C a constant)
 * in vectors of the remainder's powers of two, else one at a time, with
 * the row and column indices clamped into the operand: a clamped tap is
 * another tap of the same window, and max does not count repeats. Each
 * walk reads the kh rows again, so it is taken only when a pixel's
 * channels are one walk (at most 64 bytes) or the kh rows fit in
 * SEP_ROWS_BYTES (L1): [1, 256, 256, 64] f32 walked 4 times went from 7.5
 * to 5.2 GB/s, [1, 32, 2048, 256] from 6.4 to 2.4. Other rows go through
 * pool_pixels. */
static void sep_rows(jit_fn *f, const poolp *q, LLVMValueRef lo, LLVMValueRef hi) {
  const jit_win *w = &q->w;
  unsigned vl = 64 / (unsigned)ir_dtype_size(q->dt);
  LLVMTypeRef et = jit_type(f, q->dt), vt = LLVMVectorType(et, vl);
  LLVMValueRef zero = jit_i64(f, 0);
  /* the last window along W starts inside the operand */
  LLVMValueRef wfit = LLVMBuildICmp(
      f->b, LLVMIntSLT, LLVMBuildSub(f->b, q->Wo, jit_i64(f, 1 + w->pad[2]), ""), q->W, "");
  LLVMValueRef pix_bytes = jit_mul(f, q->C, jit_i64(f, (int64_t)ir_dtype_size(q->dt)));
  LLVMValueRef rows_bytes = jit_mul(f, jit_mul(f, pix_bytes, q->W), jit_i64(f, w->k[0]));
  LLVMValueRef cheap = LLVMBuildOr(
      f->b, LLVMBuildICmp(f->b, LLVMIntULE, pix_bytes, jit_i64(f, 64), ""),
      LLVMBuildICmp(f->b, LLVMIntULE, rows_bytes, jit_i64(f, SEP_ROWS_BYTES), ""), "");
  wfit = LLVMBuildAnd(f->b, wfit, cheap, "");
  jit_loop R, V, S;
  LLVMValueRef row = jit_loop_begin(f, &R, lo, hi, "row");
  LLVMValueRef oh = LLVMBuildURem(f->b, row, q->Ho, ""), b = LLVMBuildUDiv(f->b, row, q->Ho, "");
  LLVMValueRef ih0 = LLVMBuildSub(f->b, LLVMBuildMul(f->b, oh, jit_i64(f, w->st[0]), ""),
                                  jit_i64(f, w->pad[0]), "");
  LLVMValueRef reach = LLVMBuildAnd(
      f->b, LLVMBuildICmp(f->b, LLVMIntSLT, ih0, q->H, ""),
      LLVMBuildICmp(f->b, LLVMIntSGE, jit_add(f, ih0, jit_i64(f, w->k[0] - 1)), zero, ""), "");
  LLVMBasicBlockRef sep = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "sep");
  LLVMBasicBlockRef each = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "each");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "row.done");
  LLVMBuildCondBr(f->b, LLVMBuildAnd(f->b, reach, wfit, ""), sep, each);
  LLVMPositionBuilderAtEnd(f->b, sep);
  LLVMValueRef rows[SEP_TAPS];
  for (int64_t r = 0; r < w->k[0]; r++)
    rows[r] = jit_mul(f, jit_mul(f, jit_add(f, jit_mul(f, b, q->H),
                                            clamp(f, jit_add(f, ih0, jit_i64(f, r)), q->H)),
                                 q->W), q->C);
  LLVMValueRef ybase = jit_mul(f, jit_mul(f, row, q->Wo), q->C);
  LLVMValueRef nvec = LLVMBuildUDiv(f->b, q->C, jit_i64(f, vl), "");
  LLVMValueRef v = jit_loop_begin(f, &V, zero, nvec, "vec");
  sep_walk(f, q, vt, rows, ybase, jit_mul(f, v, jit_i64(f, vl)));
  jit_loop_end_rolled(f, &V);
  LLVMValueRef c0 = jit_mul(f, nvec, jit_i64(f, vl));
  if (LLVMIsAConstantInt(q->C)) {
    uint64_t rem = LLVMConstIntGetZExtValue(q->C) % vl;
    for (unsigned part = vl / 2; part >= 1; part /= 2) {
      if (!(rem & part)) continue;
      sep_walk(f, q, part > 1 ? LLVMVectorType(et, part) : et, rows, ybase, c0);
      c0 = jit_add(f, c0, jit_i64(f, part));
    }
  } else {
    LLVMValueRef c = jit_loop_begin(f, &S, c0, q->C, "c");
    sep_walk(f, q, et, rows, ybase, c);
    jit_loop_end_rolled(f, &S);
  }
  LLVMBuildBr(f->b, done);
  LLVMPositionBuilderAtEnd(f->b, each);
  LLVMValueRef p0 = jit_mul(f, row, q->Wo);
  pool_pixels(f, q, p0, jit_add(f, p0, q->Wo));
  LLVMBuildBr(f->b, done);
  LLVMPositionBuilderAtEnd(f->b, done);
  jit_loop_end(f, &R);
}

int jit_lower_pool(jit_fn *f) {
  poolp q;
  if (pool_setup(f, &q) != 0) return -1;
  const ir_type *yt = &f->node->out[0]->type;
  LLVMValueRef lo, hi;
  if (sep_applies(&q)) {
    jit_split_range(f, jit_numel_range(f, yt, 0, 2), &lo, &hi);
    sep_rows(f, &q, lo, hi);
  } else {
    jit_split_range(f, jit_numel_range(f, yt, 0, 3), &lo, &hi);
    pool_pixels(f, &q, lo, hi);
  }
  return f->failed ? -1 : 0;
}

int jit_simt_lower_pool(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  poolp q;
  if (pool_setup(f, &q) != 0) return -1;
  const jit_win *w = &q.w;
  const ir_type *yt = &f->node->out[0]->type;
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef acc_slot = jit_alloca(f, jit_type(f, q.dt), "acc");
  LLVMValueRef cnt_slot = jit_alloca(f, f->t_i64, "cnt"), bnd_slot = jit_alloca(f, f->t_i64, "bnd");
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, yt, 0, 4));
  LLVMValueRef dims[4] = {NULL, q.Ho, q.Wo, q.C}, co[4];
  jit_simt_unravel(f, e, dims, 4, co);
  LLVMBuildStore(f->b, pool_init(f, &q), acc_slot);
  LLVMBuildStore(f->b, zero, cnt_slot);
  LLVMBuildStore(f->b, zero, bnd_slot);
  jit_loop Rr, Ss;
  LLVMValueRef r = jit_loop_begin(f, &Rr, zero, jit_i64(f, w->k[0]), "r");
  LLVMValueRef inh, bh, ih = tap(f, co[1], r, w->st[0], w->pad[0], w->dil[0], w->pad[1], q.H, &inh, &bh);
  LLVMValueRef s = jit_loop_begin(f, &Ss, zero, jit_i64(f, w->k[1]), "s");
  LLVMValueRef inw, bw, iw = tap(f, co[2], s, w->st[1], w->pad[2], w->dil[1], w->pad[3], q.W, &inw, &bw);
  LLVMValueRef in = LLVMBuildAnd(f->b, inh, inw, "");
  count_tap(f, cnt_slot, in);
  count_tap(f, bnd_slot, LLVMBuildAnd(f->b, bh, bw, ""));
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, in);
  LLVMValueRef xi = jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, co[0], q.H), ih), q.W), iw), q.C), co[3]);
  LLVMValueRef acc = LLVMBuildLoad2(f->b, jit_type(f, q.dt), acc_slot, "");
  LLVMBuildStore(f->b, pool_step(f, &q, acc, jit_load(f, q.dt, jit_in(f, 0), xi)), acc_slot);
  jit_simt_if_end(f, &ib);
  jit_loop_end(f, &Ss);
  jit_loop_end(f, &Rr);
  LLVMValueRef n = LLVMBuildLoad2(f->b, f->t_i64, q.cb ? bnd_slot : cnt_slot, "");
  jit_store(f, q.dt, jit_out(f, 0), e,
            pool_finish(f, &q, LLVMBuildLoad2(f->b, jit_type(f, q.dt), acc_slot, ""), n));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
