/* sort.c - lowering of the sorting class (top_k, bottom_k, argsort), for
 * the host and for SIMT targets.
 *
 * The operand is viewed as [outer, R, inner] around the axis, the results
 * as [outer, K, inner] (K = k, or R for argsort); one line is one (outer,
 * inner) pair, worked by one part (host) or one thread (SIMT), walking it
 * in index order.
 *
 * Selection is bounded insertion into the result line itself, which stays
 * sorted: the first K elements are inserted one by one (shifting the
 * entries they beat one place down); after that the line's last kept value
 * is a threshold, and only an element that beats it is inserted (the last
 * entry falls out) and the threshold reloaded. On the host a contiguous
 * line is read in vectors of 64 bytes compared with the threshold at once;
 * a block without a winner costs one vector compare, and only a block with
 * one is walked element by element. With k small against R, as in LLM
 * sampling (about k ln(R / k) insertions on shuffled data), the pass is a
 * streaming scan: no full sort, no workspace. SIMT threads walk their line
 * element by element.
 *
 * argsort on the host is a stable bottom-up merge sort of the line's
 * indices (merge_line: O(R log R), ties take the left run), through two
 * arrays of R indices malloc'ed once per call (JIT_KERR_NOMEM when that
 * fails). SIMT threads have no allocator: argsort there is the insertion
 * above with K = R, keys read through the indices written so far, O(R^2)
 * compares at worst: fine for short lines, slow for long ones.
 *
 * "Beats" is strict (a NaN above every number), so equal keys keep index
 * order: stable, lower index first. The reference interpreter
 * (ir/interp_sort.c) sorts every line whole and cuts it to k; the tests
 * compare the two.
 * Assumes a verified node (1 <= k <= R, enforced by the shape rule or its
 * run-time check). */
#include "jit.h"
#include "lower.h"
#include "simt.h"

typedef struct sort_kind {
  ir_dtype dt;
  bool fl, desc, arg; /* desc: larger first; arg: argsort (keys via indices) */
  int axis;
  int64_t k; /* 0 for argsort (K = R) */
} sort_kind;

static int sort_setup(jit_fn *f, sort_kind *s) {
  const ir_node *n = f->node;
  s->arg = n->op == IR_OP_ARGSORT;
  if (n->nin != 1 || n->nout != (s->arg ? 1 : 2))
    return jit_fn_error(f, "mo.%s: expected 1 operand and %d results, got %d and %d",
                        ir_op_get(n->op)->name, s->arg ? 1 : 2, n->nin, n->nout);
  const ir_type *t = &n->in[0]->type;
  int64_t a = ir_node_attr_int(n, "axis", s->arg ? 0 : -1);
  if (a < -t->rank || a >= t->rank)
    return jit_fn_error(f, "mo.%s: axis %lld is out of range for rank %d", ir_op_get(n->op)->name,
                        (long long)a, t->rank);
  s->axis = (int)(a < 0 ? a + t->rank : a);
  s->dt = t->dtype;
  s->fl = s->dt == IR_DT_F32 || s->dt == IR_DT_F64;
  if (!s->fl && s->dt != IR_DT_SI32 && s->dt != IR_DT_SI64)
    return jit_fn_error(f, "mo.%s: no lowering for dtype %s", ir_op_get(n->op)->name,
                        ir_dtype_name(s->dt));
  s->desc = s->arg ? !ir_node_attr_bool(n, "ascending", true) : n->op == IR_OP_TOP_K;
  s->k = s->arg ? 0 : ir_node_attr_int(n, "k", 1);
  if (!s->arg && s->k < 1)
    return jit_fn_error(f, "mo.%s: k = %lld", ir_op_get(n->op)->name, (long long)s->k);
  return 0;
}

/* a beats b: strictly before it in the order (NaN the largest). */
static LLVMValueRef beats(jit_fn *f, const sort_kind *s, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = f->b;
  if (!s->fl) return LLVMBuildICmp(B, s->desc ? LLVMIntSGT : LLVMIntSLT, a, b, "");
  LLVMValueRef lt = LLVMBuildFCmp(B, s->desc ? LLVMRealOGT : LLVMRealOLT, a, b, "");
  /* desc: a NaN, b not; asc: a not NaN, b NaN */
  LLVMValueRef an = LLVMBuildFCmp(B, s->desc ? LLVMRealUNO : LLVMRealORD, a, a, "");
  LLVMValueRef bn = LLVMBuildFCmp(B, s->desc ? LLVMRealORD : LLVMRealUNO, b, b, "");
  return LLVMBuildOr(B, lt, LLVMBuildAnd(B, an, bn, ""), "");
}

typedef struct line {
  LLVMValueRef X, V, I;   /* operand, values result (NULL: argsort), indices result */
  LLVMValueRef xb, ob, st; /* line bases in X and in the results, stride (inner) */
  LLVMValueRef pos;        /* i64 slot */
} line;

static LLVMValueRef at(jit_fn *f, LLVMValueRef base, LLVMValueRef j, LLVMValueRef st) {
  return jit_add(f, base, jit_mul(f, j, st));
}

/* The key of result entry p. */
static LLVMValueRef key_at(jit_fn *f, const sort_kind *s, const line *L, LLVMValueRef p) {
  LLVMValueRef e = at(f, L->ob, p, L->st);
  if (L->V) return jit_load(f, s->dt, L->V, e);
  LLVMValueRef i = jit_load(f, IR_DT_SI64, L->I, e);
  return jit_load(f, s->dt, L->X, at(f, L->xb, i, L->st));
}

/* Insert (v, i) at entry `start` or above: entries it beats move down one. */
static void insert(jit_fn *f, const sort_kind *s, const line *L, LLVMValueRef v, LLVMValueRef i,
                   LLVMValueRef start) {
  LLVMBuilderRef B = f->b;
  LLVMValueRef one = jit_i64(f, 1);
  LLVMBasicBlockRef cond = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "ins.cond");
  LLVMBasicBlockRef check = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "ins.check");
  LLVMBasicBlockRef move = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "ins.move");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "ins.done");
  LLVMBuildStore(B, start, L->pos);
  LLVMBuildBr(B, cond);
  LLVMPositionBuilderAtEnd(B, cond);
  LLVMValueRef p = LLVMBuildLoad2(B, f->t_i64, L->pos, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, p, jit_i64(f, 0), ""), check, done);
  LLVMPositionBuilderAtEnd(B, check);
  LLVMValueRef q = LLVMBuildSub(B, p, one, "");
  LLVMValueRef prev = key_at(f, s, L, q);
  LLVMBuildCondBr(B, beats(f, s, v, prev), move, done);
  LLVMPositionBuilderAtEnd(B, move);
  LLVMValueRef eq = at(f, L->ob, q, L->st), ep = at(f, L->ob, p, L->st);
  if (L->V) jit_store(f, s->dt, L->V, ep, prev);
  jit_store(f, IR_DT_SI64, L->I, ep, jit_load(f, IR_DT_SI64, L->I, eq));
  LLVMBuildStore(B, q, L->pos);
  LLVMBuildBr(B, cond);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMValueRef e = at(f, L->ob, LLVMBuildLoad2(B, f->t_i64, L->pos, ""), L->st);
  if (L->V) jit_store(f, s->dt, L->V, e, v);
  jit_store(f, IR_DT_SI64, L->I, e, i);
}

/* Element i after the first K: inserted when it beats the threshold (the
 * last kept value), which is then reloaded. */
static void consider(jit_fn *f, const sort_kind *s, const line *L, LLVMValueRef i,
                     LLVMValueRef thr) {
  LLVMBuilderRef B = f->b;
  LLVMValueRef last = jit_i64(f, s->k - 1);
  LLVMValueRef v = jit_load(f, s->dt, L->X, at(f, L->xb, i, L->st));
  LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "sel.in");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "sel.next");
  LLVMValueRef t = LLVMBuildLoad2(B, jit_type(f, s->dt), thr, "");
  LLVMBuildCondBr(B, beats(f, s, v, t), in, next);
  LLVMPositionBuilderAtEnd(B, in);
  insert(f, s, L, v, i, last);
  LLVMBuildStore(B, key_at(f, s, L, last), thr);
  LLVMBuildBr(B, next);
  LLVMPositionBuilderAtEnd(B, next);
}

/* Host, contiguous line (stride 1): the elements from `from` on in blocks
 * of W, each compared with the threshold as one vector; only a block with
 * an element that beats it is walked element by element. Returns where the
 * blocks end (the rest, fewer than W, is the caller's). A strided line
 * (stride != 1) has no blocks. */
static LLVMValueRef blocks(jit_fn *f, const sort_kind *s, const line *L, LLVMValueRef from,
                           LLVMValueRef R, LLVMValueRef thr) {
  LLVMBuilderRef B = f->b;
  int w = ir_dtype_size(s->dt) == 4 ? 16 : 8;
  LLVMValueRef W = jit_i64(f, w), zero = jit_i64(f, 0);
  LLVMValueRef unit = LLVMBuildICmp(B, LLVMIntEQ, L->st, jit_i64(f, 1), "");
  LLVMValueRef nb =
      LLVMBuildSelect(B, unit, LLVMBuildUDiv(B, LLVMBuildSub(B, R, from, ""), W, ""), zero, "");
  LLVMTypeRef et = jit_type(f, s->dt), vt = LLVMVectorType(et, (unsigned)w);
  LLVMValueRef zmask[16];
  for (int j = 0; j < w; j++) zmask[j] = LLVMConstInt(f->t_i32, 0, 0);
  jit_loop lb;
  LLVMValueRef b = jit_loop_begin(f, &lb, zero, nb, "blk");
  LLVMValueRef i0 = jit_add(f, from, jit_mul(f, b, W));
  LLVMValueRef e0 = jit_add(f, L->xb, i0);
  LLVMValueRef vec = LLVMBuildLoad2(B, vt, LLVMBuildInBoundsGEP2(B, et, L->X, &e0, 1, ""), "");
  LLVMSetAlignment(vec, (unsigned)ir_dtype_size(s->dt));
  LLVMValueRef t = LLVMBuildLoad2(B, et, thr, "");
  LLVMValueRef t1 = LLVMBuildInsertElement(B, LLVMGetPoison(vt), t, jit_i64(f, 0), "");
  LLVMValueRef ts = LLVMBuildShuffleVector(B, t1, LLVMGetPoison(vt), LLVMConstVector(zmask, (unsigned)w), "");
  LLVMValueRef m = beats(f, s, vec, ts);
  LLVMValueRef bits = LLVMBuildBitCast(B, m, LLVMIntTypeInContext(f->ctx, (unsigned)w), "");
  LLVMBasicBlockRef hit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "blk.hit");
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "blk.next");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, bits, LLVMConstInt(LLVMTypeOf(bits), 0, 0), ""),
                  hit, cont);
  LLVMPositionBuilderAtEnd(B, hit);
  jit_loop lj;
  LLVMValueRef j = jit_loop_begin(f, &lj, zero, W, "j");
  consider(f, s, L, jit_add(f, i0, j), thr);
  jit_loop_end_rolled(f, &lj);
  LLVMBuildBr(B, cont);
  LLVMPositionBuilderAtEnd(B, cont);
  jit_loop_end_rolled(f, &lb);
  return jit_add(f, from, jit_mul(f, nb, W));
}

/* One line: fill K entries, then (top_k / bottom_k) the threshold pass;
 * vec: the host's vector blocks. */
static void sort_line(jit_fn *f, const sort_kind *s, line *L, LLVMValueRef R, LLVMValueRef thr,
                      bool vec) {
  LLVMValueRef K = s->arg ? R : jit_i64(f, s->k);
  jit_loop l1;
  LLVMValueRef i = jit_loop_begin(f, &l1, jit_i64(f, 0), K, "fill");
  insert(f, s, L, jit_load(f, s->dt, L->X, at(f, L->xb, i, L->st)), i, i);
  jit_loop_end(f, &l1);
  if (s->arg) return;
  LLVMBuildStore(f->b, key_at(f, s, L, jit_i64(f, s->k - 1)), thr);
  LLVMValueRef from = vec ? blocks(f, s, L, K, R, thr) : K;
  jit_loop l2;
  i = jit_loop_begin(f, &l2, from, R, "scan");
  consider(f, s, L, i, thr);
  jit_loop_end(f, &l2);
}

static LLVMValueRef min64(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* Host argsort of one line: a stable bottom-up merge sort of the indices
 * 0..R between the i64 arrays buf[0..R) and buf[R..2R) (ties take the left
 * run), then the sorted indices copied out. */
static void merge_line(jit_fn *f, const sort_kind *s, const line *L, LLVMValueRef R,
                       LLVMValueRef buf) {
  LLVMBuilderRef B = f->b;
  LLVMTypeRef i64 = f->t_i64;
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1);
  LLVMValueRef src = jit_alloca(f, f->t_ptr, "msrc"), dst = jit_alloca(f, f->t_ptr, "mdst");
  LLVMValueRef ia = jit_alloca(f, i64, "mi"), ja = jit_alloca(f, i64, "mj");
  LLVMBuildStore(B, buf, src);
  LLVMBuildStore(B, LLVMBuildInBoundsGEP2(B, i64, buf, &R, 1, ""), dst);
  jit_loop l0;
  LLVMValueRef i = jit_loop_begin(f, &l0, zero, R, "iota");
  jit_store(f, IR_DT_SI64, buf, i, i);
  jit_loop_end(f, &l0);
  /* passes = ceil(log2(R)) (0 for R <= 1) */
  LLVMValueRef rm1 = LLVMBuildSub(B, R, one, "");
  LLVMValueRef ctlz_args[2] = {rm1, LLVMConstInt(f->t_i1, 0, 0)};
  LLVMValueRef lz = jit_intrinsic(f, "llvm.ctlz", i64, ctlz_args, 2);
  LLVMValueRef passes = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLE, R, one, ""), zero,
                                        LLVMBuildSub(B, jit_i64(f, 64), lz, ""), "");
  jit_loop lp;
  LLVMValueRef p = jit_loop_begin(f, &lp, zero, passes, "pass");
  LLVMValueRef w = LLVMBuildShl(B, one, p, "");
  LLVMValueRef w2 = LLVMBuildShl(B, w, one, "");
  LLVMValueRef S = LLVMBuildLoad2(B, f->t_ptr, src, ""), D = LLVMBuildLoad2(B, f->t_ptr, dst, "");
  LLVMValueRef nm = LLVMBuildUDiv(B, LLVMBuildAdd(B, R, LLVMBuildSub(B, w2, one, ""), ""), w2, "");
  jit_loop lm;
  LLVMValueRef m = jit_loop_begin(f, &lm, zero, nm, "run");
  LLVMValueRef lo = LLVMBuildMul(B, m, w2, "");
  LLVMValueRef mid = min64(f, LLVMBuildAdd(B, lo, w, ""), R);
  LLVMValueRef hi = min64(f, LLVMBuildAdd(B, lo, w2, ""), R);
  LLVMBuildStore(B, lo, ia);
  LLVMBuildStore(B, mid, ja);
  jit_loop lo_;
  LLVMValueRef o = jit_loop_begin(f, &lo_, lo, hi, "o");
  LLVMValueRef iv = LLVMBuildLoad2(B, i64, ia, ""), jv = LLVMBuildLoad2(B, i64, ja, "");
  LLVMValueRef left_done = LLVMBuildICmp(B, LLVMIntSGE, iv, mid, "");
  LLVMValueRef right_left = LLVMBuildICmp(B, LLVMIntSLT, jv, hi, "");
  /* indices clamped into their runs so both loads stay in bounds */
  LLVMValueRef ic = min64(f, iv, LLVMBuildSub(B, mid, one, ""));
  LLVMValueRef jc = min64(f, jv, LLVMBuildSub(B, hi, one, ""));
  LLVMValueRef xi = jit_load(f, IR_DT_SI64, S, ic), xj = jit_load(f, IR_DT_SI64, S, jc);
  LLVMValueRef ki = jit_load(f, s->dt, L->X, at(f, L->xb, xi, L->st));
  LLVMValueRef kj = jit_load(f, s->dt, L->X, at(f, L->xb, xj, L->st));
  LLVMValueRef right = LLVMBuildAnd(
      B, right_left, LLVMBuildOr(B, left_done, beats(f, s, kj, ki), ""), "");
  jit_store(f, IR_DT_SI64, D, o, LLVMBuildSelect(B, right, xj, xi, ""));
  LLVMBuildStore(B, LLVMBuildAdd(B, iv, LLVMBuildZExt(B, LLVMBuildNot(B, right, ""), i64, ""), ""), ia);
  LLVMBuildStore(B, LLVMBuildAdd(B, jv, LLVMBuildZExt(B, right, i64, ""), ""), ja);
  jit_loop_end_rolled(f, &lo_);
  jit_loop_end_rolled(f, &lm);
  LLVMBuildStore(B, D, src);
  LLVMBuildStore(B, S, dst);
  jit_loop_end_rolled(f, &lp);
  LLVMValueRef fin = LLVMBuildLoad2(B, f->t_ptr, src, "");
  jit_loop lc;
  LLVMValueRef c = jit_loop_begin(f, &lc, zero, R, "out");
  jit_store(f, IR_DT_SI64, L->I, at(f, L->ob, c, L->st), jit_load(f, IR_DT_SI64, fin, c));
  jit_loop_end(f, &lc);
}

/* Shared by both targets: the line number `ln` of [outer, inner]. */
static void emit_line(jit_fn *f, const sort_kind *s, LLVMValueRef ln, LLVMValueRef R,
                      LLVMValueRef inner, LLVMValueRef pos, LLVMValueRef thr, LLVMValueRef buf) {
  LLVMBuilderRef B = f->b;
  LLVMValueRef K = s->arg ? R : jit_i64(f, s->k);
  LLVMValueRef o = LLVMBuildUDiv(B, ln, inner, ""), in = LLVMBuildURem(B, ln, inner, "");
  line L = {.X = jit_in(f, 0),
            .V = s->arg ? NULL : jit_out(f, 0),
            .I = jit_out(f, s->arg ? 0 : 1),
            .xb = jit_add(f, jit_mul(f, jit_mul(f, o, R), inner), in),
            .ob = jit_add(f, jit_mul(f, jit_mul(f, o, K), inner), in),
            .st = inner,
            .pos = pos};
  if (buf && s->arg) merge_line(f, s, &L, R, buf);
  else sort_line(f, s, &L, R, thr, buf != NULL);
}

int jit_lower_sort(jit_fn *f) {
  sort_kind s;
  if (sort_setup(f, &s) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef R = jit_dim(f, t->dims[s.axis]);
  LLVMValueRef inner = jit_numel_range(f, t, s.axis + 1, t->rank);
  LLVMValueRef lines = jit_mul(f, jit_numel_range(f, t, 0, s.axis), inner);
  LLVMValueRef pos = jit_alloca(f, f->t_i64, "pos");
  LLVMValueRef thr = jit_alloca(f, jit_type(f, s.dt), "thr");
  LLVMValueRef lo, hi;
  jit_split_range(f, lines, &lo, &hi);
  /* argsort's merge buffers: 2 R indices, one malloc per call (64 spare
   * bytes: never a malloc(0)); top_k needs none (a non-null marker) */
  LLVMValueRef buf = LLVMConstPointerNull(f->t_ptr);
  if (s.arg) {
    LLVMTypeRef mty = LLVMFunctionType(f->t_ptr, &f->t_i64, 1, 0);
    LLVMValueRef bytes = jit_add(f, jit_mul(f, R, jit_i64(f, 16)), jit_i64(f, 64));
    buf = LLVMBuildCall2(f->b, mty, jit_libc_fn(f, "malloc", mty), &bytes, 1, "sort.buf");
    jit_fail_if(f, LLVMBuildIsNull(f->b, buf, ""), JIT_KERR_NOMEM);
  }
  jit_loop l;
  LLVMValueRef ln = jit_loop_begin(f, &l, lo, hi, "line");
  emit_line(f, &s, ln, R, inner, pos, thr, buf);
  jit_loop_end_rolled(f, &l);
  if (s.arg) {
    LLVMTypeRef fty = LLVMFunctionType(f->t_void, &f->t_ptr, 1, 0);
    LLVMBuildCall2(f->b, fty, jit_libc_fn(f, "free", fty), &buf, 1, "");
  }
  return f->failed ? -1 : 0;
}

int jit_simt_lower_sort(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  sort_kind s;
  if (sort_setup(f, &s) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef R = jit_dim(f, t->dims[s.axis]);
  LLVMValueRef inner = jit_numel_range(f, t, s.axis + 1, t->rank);
  LLVMValueRef lines = LLVMBuildMul(f->b, jit_numel_range(f, t, 0, s.axis), inner, "");
  LLVMValueRef pos = jit_alloca(f, f->t_i64, "pos");
  LLVMValueRef thr = jit_alloca(f, jit_type(f, s.dt), "thr");
  jit_simt_loop l;
  LLVMValueRef ln = jit_simt_grid_loop_begin(sf, &l, lines);
  emit_line(f, &s, ln, R, inner, pos, thr, NULL); /* inner > 0 inside the loop */
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
