/* scan.c - lowering of the scans along one axis (mo.cumsum), for the host
 * and for SIMT targets.
 *
 * The operand is viewed as [outer, R, inner] around the axis; the result
 * has the same shape. Element k of a line (k in 0..R, or R-1..0 with
 * `reverse`) gets the running sum of the line's elements up to and
 * including it, or, with `exclusive`, up to but excluding it. Floats
 * accumulate in double and each result is rounded once (the reference
 * interpreter's meaning, ir/interp_ops.c); integers in their own type,
 * wrapping (the same low bits as the interpreter's 64-bit sum).
 *
 * Host: each part takes a range of the outer lines (or of inner positions
 * when there are fewer outer lines than parts, jit_split_outer_inner), so
 * the additions of every result, and the results, do not depend on the
 * split. With inner = 1 a line is contiguous: GROUP lines of GROUP_MIN
 * elements or more go together, one per vector lane (scan_groups): GROUP x GROUP blocks are transposed in
 * registers, so one vector add advances every line's chain, and each
 * line's BLOCKS * GROUP elements (a 64-byte line of f32) are consumed
 * at once, which keeps the 8 streams clear of L1's ways; [4096, 4096] went
 * from ~0.6x to ~0.8x+ of the triad's bandwidth. The lines left over walk
 * LINES at a time, their running sums in registers, independent chains of
 * adds (element by element: 1 line ~0.45x, bound by the add's latency,
 * 2 lines ~0.6x, 8 ~0.1x: more streams a power of two apart than L1's
 * ways);
 * otherwise up to COLS consecutive inner positions are scanned together,
 * with one accumulator each in a stack array (32 KiB of doubles), so the
 * walk reads whole rows of up to COLS contiguous elements, one after the
 * other, instead of one element per line at a stride of inner (64 columns
 * at a time made [4096, 4096] along axis 0 0.23x of the triad, rows of
 * 4096 ~0.7x: the hardware prefetcher follows rows, not 64-column strips).
 * Rows go ROWS at a time, each accumulator loaded and stored once per
 * group (the same additions in the same order): on an AVX-512 Xeon, where
 * the array of doubles misses L1, that took [4096, 4096] from 0.45-0.53x of
 * the triad to 0.62-0.75x with pairs and ~0.9x with four rows.
 * SIMT: a grid-stride loop over the outer * inner lines, one thread per
 * line, walking it in order (the same additions as the host).
 * Assumes a verified node (one operand, axis in range, result of the
 * operand's type). */
#include "lower.h"
#include "simt.h"

enum { COLS = 4096, ROWS = 4, LINES = 2, GROUP = 8, BLOCKS = 2, GROUP_MIN = 256 };

typedef struct scan_kind {
  ir_dtype dt;
  LLVMTypeRef acct; /* double for floats, the register type for ints */
  bool excl, rev;
} scan_kind;

static int scan_setup(jit_fn *f, scan_kind *k, int *axis) {
  const ir_node *n = f->node;
  if (n->nin != 1 || n->nout != 1)
    return jit_fn_error(f, "mo.cumsum: expected 1 operand and 1 result, got %d and %d", n->nin,
                        n->nout);
  const ir_type *t = &n->in[0]->type;
  int64_t a = ir_node_attr_int(n, "axis", -1);
  if (a < -t->rank || a >= t->rank)
    return jit_fn_error(f, "mo.cumsum: axis %lld is out of range for rank %d", (long long)a,
                        t->rank);
  *axis = (int)(a < 0 ? a + t->rank : a);
  k->dt = t->dtype;
  bool fl = k->dt == IR_DT_F32 || k->dt == IR_DT_F64;
  if (!fl && k->dt != IR_DT_SI32 && k->dt != IR_DT_SI64)
    return jit_fn_error(f, "mo.cumsum: no lowering for dtype %s", ir_dtype_name(k->dt));
  if (n->out[0]->type.dtype != k->dt)
    return jit_fn_error(f, "mo.cumsum: the result's dtype differs from the operand's");
  k->acct = fl ? f->t_f64 : jit_type(f, k->dt);
  k->excl = ir_node_attr_bool(n, "exclusive", false);
  k->rev = ir_node_attr_bool(n, "reverse", false);
  return 0;
}

static bool is_float(const scan_kind *k) { return k->dt == IR_DT_F32 || k->dt == IR_DT_F64; }

static LLVMValueRef zero_of(jit_fn *f, const scan_kind *k) {
  return is_float(k) ? LLVMConstReal(f->t_f64, 0.0) : LLVMConstInt(k->acct, 0, 0);
}

/* n consecutive steps of one line: element e[t] of X added to the sum in
 * slot and the sum (or, exclusive, the sum before it) stored at e[t] of Y;
 * the sum stays in a register between them, so slot is loaded and stored
 * once for the n elements. */
static void scan_steps(jit_fn *f, const scan_kind *k, LLVMValueRef slot, LLVMValueRef X,
                       LLVMValueRef Y, const LLVMValueRef *e, int n) {
  LLVMValueRef cur = LLVMBuildLoad2(f->b, k->acct, slot, "");
  for (int t = 0; t < n; t++) {
    LLVMValueRef v = jit_load(f, k->dt, X, e[t]);
    if (is_float(k) && k->dt != IR_DT_F64) v = LLVMBuildFPExt(f->b, v, f->t_f64, "");
    LLVMValueRef next =
        is_float(k) ? LLVMBuildFAdd(f->b, cur, v, "") : LLVMBuildAdd(f->b, cur, v, "");
    LLVMValueRef out = k->excl ? cur : next;
    if (is_float(k) && k->dt != IR_DT_F64)
      out = LLVMBuildFPTrunc(f->b, out, jit_type(f, k->dt), "");
    jit_store(f, k->dt, Y, e[t], out);
    cur = next;
  }
  LLVMBuildStore(f->b, cur, slot);
}

/* One step (scan_steps of one element). */
static void scan_step(jit_fn *f, const scan_kind *k, LLVMValueRef slot, LLVMValueRef X,
                      LLVMValueRef Y, LLVMValueRef e) {
  scan_steps(f, k, slot, X, Y, &e, 1);
}

/* Element number k of a line in walking order: k, or R - 1 - k reversed. */
static LLVMValueRef walk(jit_fn *f, const scan_kind *k, LLVMValueRef i, LLVMValueRef R) {
  if (!k->rev) return i;
  return LLVMBuildSub(f->b, LLVMBuildSub(f->b, R, i, ""), jit_i64(f, 1), "");
}

/* The line base, base + stride, ..., R elements, with the sum in slot. */
static void scan_line(jit_fn *f, const scan_kind *k, LLVMValueRef slot, LLVMValueRef base,
                      LLVMValueRef R, LLVMValueRef stride) {
  LLVMBuildStore(f->b, zero_of(f, k), slot);
  jit_loop L;
  LLVMValueRef i = jit_loop_begin(f, &L, jit_i64(f, 0), R, "k");
  LLVMValueRef e = jit_add(f, base, jit_mul(f, walk(f, k, i, R), stride));
  scan_step(f, k, slot, jit_in(f, 0), jit_out(f, 0), e);
  jit_loop_end(f, &L);
}

/* ---- inner = 1, GROUP lines at once: one line per vector lane ---- */

/* The transpose of the GROUP x GROUP block v[row][col] (rows as vectors):
 * three rounds, each swapping off-diagonal s x s sub-blocks, so bit s of an
 * element's row and column trade places. */
static void transpose(jit_fn *f, LLVMValueRef *v) {
  for (int s = GROUP / 2; s >= 1; s /= 2)
    for (int j = 0; j < GROUP; j++) {
      if (j & s) continue;
      LLVMValueRef lo[GROUP], hi[GROUP];
      for (int p = 0; p < GROUP; p++) {
        lo[p] = LLVMConstInt(f->t_i32, (p & s) ? GROUP + p - s : p, 0);
        hi[p] = LLVMConstInt(f->t_i32, (p & s) ? GROUP + p : p + s, 0);
      }
      LLVMValueRef a = v[j], b = v[j + s];
      v[j] = LLVMBuildShuffleVector(f->b, a, b, LLVMConstVector(lo, GROUP), "");
      v[j + s] = LLVMBuildShuffleVector(f->b, a, b, LLVMConstVector(hi, GROUP), "");
    }
}

/* The GROUP lines' step at one walk position: col holds their elements
 * (lane j: line j); returns the results, acc (a slot of GROUP sums)
 * advanced. The additions are scan_step's, lane by lane. */
static LLVMValueRef group_step(jit_fn *f, const scan_kind *k, LLVMValueRef acc, LLVMValueRef col) {
  LLVMTypeRef at = LLVMVectorType(k->acct, GROUP), vt = LLVMVectorType(jit_type(f, k->dt), GROUP);
  if (is_float(k) && k->dt != IR_DT_F64) col = LLVMBuildFPExt(f->b, col, at, "");
  LLVMValueRef cur = LLVMBuildLoad2(f->b, at, acc, "");
  LLVMValueRef next =
      is_float(k) ? LLVMBuildFAdd(f->b, cur, col, "") : LLVMBuildAdd(f->b, cur, col, "");
  LLVMValueRef out = k->excl ? cur : next;
  if (is_float(k) && k->dt != IR_DT_F64) out = LLVMBuildFPTrunc(f->b, out, vt, "");
  LLVMBuildStore(f->b, next, acc);
  return out;
}

static LLVMValueRef gep(jit_fn *f, const scan_kind *k, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(f->b, jit_type(f, k->dt), base, &i, 1, "");
}

/* Lines olo, olo + GROUP, ... (whole groups below ohi, when lines have
 * GROUP_MIN elements or more; returns where the groups end). A group walks
 * its lines BLOCKS x GROUP elements at a time: it loads
 * a GROUP x GROUP block of each line, transposes it so that a vector holds
 * one element of every line, adds the vectors in walk order, transposes
 * the results back and stores them; the last R mod (BLOCKS x GROUP)
 * elements go one walk position at a time, lane by lane. Every line's
 * sums are the one-line walk's, in the same order. Shorter lines (one
 * stream of adjacent lines) did as well or better two at a time:
 * [65536, 64] f32 ~10 GB/s either way, noisy, [2048, 2048] 9.5 -> 13.5. */
static LLVMValueRef scan_groups(jit_fn *f, const scan_kind *k, LLVMValueRef R, LLVMValueRef olo,
                                LLVMValueRef ohi) {
  enum { W = BLOCKS * GROUP };
  LLVMTypeRef et = jit_type(f, k->dt), vt = LLVMVectorType(et, GROUP);
  LLVMTypeRef at = LLVMVectorType(k->acct, GROUP);
  unsigned al = (unsigned)ir_dtype_size(k->dt);
  LLVMValueRef zero = jit_i64(f, 0), X = jit_in(f, 0), Y = jit_out(f, 0);
  LLVMValueRef acc = jit_alloca(f, at, "group");
  LLVMValueRef ngroups =
      LLVMBuildUDiv(f->b, LLVMBuildSub(f->b, ohi, olo, ""), jit_i64(f, GROUP), "");
  LLVMValueRef longer = LLVMBuildICmp(f->b, LLVMIntUGE, R, jit_i64(f, GROUP_MIN), "");
  ngroups = LLVMBuildSelect(f->b, longer, ngroups, zero, "");
  LLVMValueRef nblk = LLVMBuildUDiv(f->b, R, jit_i64(f, W), "");
  jit_loop lg, lb, lt;
  LLVMValueRef g = jit_loop_begin(f, &lg, zero, ngroups, "grp");
  LLVMValueRef base = jit_mul(f, jit_add(f, olo, jit_mul(f, g, jit_i64(f, GROUP))), R);
  LLVMBuildStore(f->b, LLVMConstNull(at), acc);
  LLVMValueRef line[GROUP];
  for (int j = 0; j < GROUP; j++) line[j] = jit_add(f, base, jit_mul(f, jit_i64(f, j), R));
  LLVMValueRef blk = jit_loop_begin(f, &lb, zero, nblk, "blk");
  /* the block's first element in memory: walk positions blk * W .. */
  LLVMValueRef m0 = jit_mul(f, blk, jit_i64(f, W));
  if (k->rev) m0 = LLVMBuildSub(f->b, LLVMBuildSub(f->b, R, m0, ""), jit_i64(f, W), "");
  LLVMValueRef v[BLOCKS][GROUP], o[BLOCKS][GROUP];
  for (int q = 0; q < BLOCKS; q++) {
    for (int j = 0; j < GROUP; j++) {
      LLVMValueRef at_ = jit_add(f, line[j], jit_add(f, m0, jit_i64(f, q * GROUP)));
      v[q][j] = LLVMBuildLoad2(f->b, vt, gep(f, k, X, at_), "");
      LLVMSetAlignment(v[q][j], al);
    }
    transpose(f, v[q]);
  }
  for (int c = 0; c < W; c++) { /* walk order: memory order, or reversed */
    int mc = k->rev ? W - 1 - c : c;
    o[mc / GROUP][mc % GROUP] = group_step(f, k, acc, v[mc / GROUP][mc % GROUP]);
  }
  for (int q = 0; q < BLOCKS; q++) {
    transpose(f, o[q]);
    for (int j = 0; j < GROUP; j++) {
      LLVMValueRef at_ = jit_add(f, line[j], jit_add(f, m0, jit_i64(f, q * GROUP)));
      LLVMSetAlignment(LLVMBuildStore(f->b, o[q][j], gep(f, k, Y, at_)), al);
    }
  }
  jit_loop_end(f, &lb);
  LLVMValueRef t = jit_loop_begin(f, &lt, jit_mul(f, nblk, jit_i64(f, W)), R, "tail");
  LLVMValueRef at_ = walk(f, k, t, R), col = LLVMGetUndef(vt);
  for (int j = 0; j < GROUP; j++)
    col = LLVMBuildInsertElement(f->b, col, jit_load(f, k->dt, X, jit_add(f, line[j], at_)),
                                 jit_i64(f, j), "");
  LLVMValueRef out = group_step(f, k, acc, col);
  for (int j = 0; j < GROUP; j++)
    jit_store(f, k->dt, Y, jit_add(f, line[j], at_),
              LLVMBuildExtractElement(f->b, out, jit_i64(f, j), ""));
  jit_loop_end(f, &lt);
  jit_loop_end(f, &lg);
  return jit_add(f, olo, jit_mul(f, ngroups, jit_i64(f, GROUP)));
}

/* inner = 1: lines olo..ohi, LINES at a time (see the top), then the rest
 * one by one; each line's additions are the one-line walk's. */
static void scan_lines(jit_fn *f, const scan_kind *k, LLVMValueRef R, LLVMValueRef olo,
                       LLVMValueRef ohi) {
  olo = scan_groups(f, k, R, olo, ohi);
  LLVMValueRef zero = jit_i64(f, 0), nl = jit_i64(f, LINES);
  LLVMTypeRef arr = LLVMArrayType2(k->acct, LINES);
  LLVMValueRef accs = jit_alloca(f, arr, "lines"), slot = jit_alloca(f, k->acct, "acc");
  LLVMValueRef ngroups = LLVMBuildUDiv(f->b, LLVMBuildSub(f->b, ohi, olo, ""), nl, "");
  LLVMValueRef slots[LINES];
  for (int j = 0; j < LINES; j++) {
    LLVMValueRef gi[2] = {zero, jit_i64(f, j)};
    slots[j] = LLVMBuildInBoundsGEP2(f->b, arr, accs, gi, 2, "");
  }
  jit_loop lg, li, lo;
  LLVMValueRef g = jit_loop_begin(f, &lg, zero, ngroups, "grp");
  LLVMValueRef base = jit_mul(f, jit_add(f, olo, jit_mul(f, g, nl)), R);
  for (int j = 0; j < LINES; j++) LLVMBuildStore(f->b, zero_of(f, k), slots[j]);
  LLVMValueRef i = jit_loop_begin(f, &li, zero, R, "k");
  LLVMValueRef at = walk(f, k, i, R);
  for (int j = 0; j < LINES; j++)
    scan_step(f, k, slots[j], jit_in(f, 0), jit_out(f, 0),
              jit_add(f, jit_add(f, base, jit_mul(f, jit_i64(f, j), R)), at));
  jit_loop_end(f, &li);
  jit_loop_end(f, &lg);
  LLVMValueRef o = jit_loop_begin(f, &lo, jit_add(f, olo, jit_mul(f, ngroups, nl)), ohi, "o");
  scan_line(f, k, slot, jit_mul(f, o, R), R, jit_i64(f, 1));
  jit_loop_end(f, &lo);
}

/* inner > 1: blocks of COLS inner positions per outer line (see the top). */
static void scan_columns(jit_fn *f, const scan_kind *k, LLVMValueRef R, LLVMValueRef inner,
                         LLVMValueRef olo, LLVMValueRef ohi, LLVMValueRef ilo, LLVMValueRef ihi) {
  LLVMValueRef zero = jit_i64(f, 0), cols = jit_i64(f, COLS);
  LLVMTypeRef arr = LLVMArrayType2(k->acct, COLS);
  LLVMValueRef accs = jit_alloca(f, arr, "cols");
  LLVMValueRef Rinner = jit_mul(f, R, inner);
  LLVMValueRef count = LLVMBuildSub(f->b, ihi, ilo, "");
  LLVMValueRef nblk =
      LLVMBuildUDiv(f->b, LLVMBuildAdd(f->b, count, jit_i64(f, COLS - 1), ""), cols, "");
  jit_loop lo, lb, lj, lr, lj2;
  LLVMValueRef o = jit_loop_begin(f, &lo, olo, ohi, "o");
  LLVMValueRef obase = jit_mul(f, o, Rinner);
  LLVMValueRef blk = jit_loop_begin(f, &lb, zero, nblk, "blk");
  LLVMValueRef c0 = jit_add(f, ilo, jit_mul(f, blk, cols));
  LLVMValueRef left = LLVMBuildSub(f->b, ihi, c0, "");
  LLVMValueRef w =
      LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntULT, left, cols, ""), left, cols, "w");
  LLVMValueRef j = jit_loop_begin(f, &lj, zero, w, "j");
  LLVMValueRef gi[2] = {zero, j};
  LLVMBuildStore(f->b, zero_of(f, k), LLVMBuildInBoundsGEP2(f->b, arr, accs, gi, 2, ""));
  jit_loop_end(f, &lj);
  /* rows ROWS at a time (each accumulator loaded and stored once per group),
   * then the last R % ROWS rows one by one */
  LLVMValueRef rows_c = jit_i64(f, ROWS);
  LLVMValueRef groups = LLVMBuildUDiv(f->b, R, rows_c, "groups");
  LLVMValueRef p = jit_loop_begin(f, &lr, zero, groups, "p");
  LLVMValueRef rows[ROWS];
  for (int t = 0; t < ROWS; t++) {
    LLVMValueRef rt = jit_add(f, jit_mul(f, p, rows_c), jit_i64(f, t));
    rows[t] = jit_add(f, jit_add(f, obase, jit_mul(f, walk(f, k, rt, R), inner)), c0);
  }
  j = jit_loop_begin(f, &lj2, zero, w, "j");
  LLVMValueRef gj[2] = {zero, j};
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(f->b, arr, accs, gj, 2, "");
  LLVMValueRef es[ROWS];
  for (int t = 0; t < ROWS; t++) es[t] = jit_add(f, rows[t], j);
  scan_steps(f, k, slot, jit_in(f, 0), jit_out(f, 0), es, ROWS);
  jit_loop_end(f, &lj2);
  jit_loop_end(f, &lr);
  jit_loop lt, lj3;
  LLVMValueRef last = jit_loop_begin(f, &lt, jit_mul(f, groups, rows_c), R, "last");
  LLVMValueRef rowl = jit_add(f, jit_add(f, obase, jit_mul(f, walk(f, k, last, R), inner)), c0);
  j = jit_loop_begin(f, &lj3, zero, w, "j");
  LLVMValueRef gl[2] = {zero, j};
  slot = LLVMBuildInBoundsGEP2(f->b, arr, accs, gl, 2, "");
  scan_step(f, k, slot, jit_in(f, 0), jit_out(f, 0), jit_add(f, rowl, j));
  jit_loop_end(f, &lj3);
  jit_loop_end(f, &lt);
  jit_loop_end(f, &lb);
  jit_loop_end(f, &lo);
}

int jit_lower_scan(jit_fn *f) {
  scan_kind k;
  int axis;
  if (scan_setup(f, &k, &axis) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef outer = jit_numel_range(f, t, 0, axis);
  LLVMValueRef R = jit_dim(f, t->dims[axis]);
  LLVMValueRef inner = jit_numel_range(f, t, axis + 1, t->rank);
  LLVMValueRef olo, ohi, ilo, ihi;
  jit_split_outer_inner(f, outer, inner, &olo, &ohi, &ilo, &ihi);
  if (LLVMIsAConstantInt(inner) && LLVMConstIntGetZExtValue(inner) == 1) {
    scan_lines(f, &k, R, olo, ohi);
  } else {
    scan_columns(f, &k, R, inner, olo, ohi, ilo, ihi);
  }
  return f->failed ? -1 : 0;
}

int jit_simt_lower_scan(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  scan_kind k;
  int axis;
  if (scan_setup(f, &k, &axis) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef R = jit_dim(f, t->dims[axis]);
  LLVMValueRef inner = jit_numel_range(f, t, axis + 1, t->rank);
  LLVMValueRef lines = LLVMBuildMul(f->b, jit_numel_range(f, t, 0, axis), inner, "");
  LLVMValueRef slot = jit_alloca(f, k.acct, "acc");
  jit_simt_loop l;
  LLVMValueRef line = jit_simt_grid_loop_begin(sf, &l, lines);
  /* inner > 0 inside the loop (there is a line) */
  LLVMValueRef o = LLVMBuildUDiv(f->b, line, inner, "");
  LLVMValueRef in = LLVMBuildURem(f->b, line, inner, "");
  LLVMValueRef base = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, LLVMBuildMul(f->b, o, R, ""), inner, ""),
                                   in, "");
  scan_line(f, &k, slot, base, R, inner);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
