/* movement.c - lowering of the data movement ops: mo.reshape, mo.squeeze,
 * mo.unsqueeze (flat copies), mo.transpose, mo.permute, mo.slice_tensor
 * (strided copies), mo.concat, mo.split (row block copies), mo.gather.
 *
 * Elements are moved as raw bytes (an integer of the element's size, or
 * llvm.memcpy), so every dtype works, bool included, and no
 * value is ever reinterpreted (NaN payloads, non-0/1 bool bytes survive).
 *
 * Assumes a verified node: result types are the inferred ones (the verifier
 * has computed slice and gather shapes), attributes are well formed, and the
 * runtime has checked the run-time shape facts (reshape element counts,
 * slice bounds). The only data-dependent error is a gather index out of
 * range, returned as JIT_KERR_INDEX before anything past the bad index is
 * written.
 *
 * Work splitting (kernel ABI part / nparts): flat copies split the element
 * range, strided copies their outermost loop whose extent is not the
 * constant 1, concat / split the outer rows (or, with one row, every
 * piece's block); gather does not split (part 0 does it all).
 *
 * Guarantees: every output element is written exactly once, by exactly one
 * part; a tensor with a zero-sized dim moves nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jit.h"
#include "lower.h"

static LLVMValueRef smax(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, a, b, ""), a, b, "");
}

static LLVMValueRef smin(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* Elements per side of a transpose tile: 32 x 32 elements touch at most 32
 * cache lines per side (a few KiB), well inside L1 for every element size. */
enum { TILE = 32 };

/* Normalize an axis attribute against rank (negative counts from the end). */
static int norm_axis(jit_fn *f, int64_t axis, int rank, const char *what, int *out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return jit_fn_error(f, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
  *out = (int)a;
  return 0;
}

/* Element size of a dtype in bytes; 0 for an invalid dtype. */
static int64_t elem_size(ir_dtype dt) {
  return (int64_t)ir_dtype_size(dt);
}

/* An integer type as wide as one element: raw moves. */
static LLVMTypeRef raw_type(jit_fn *f, int64_t esz) {
  return LLVMIntTypeInContext(f->ctx, (unsigned)(esz * 8));
}

static LLVMValueRef raw_ptr(jit_fn *f, LLVMTypeRef rt, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(f->b, rt, base, &idx, 1, "");
}

/* dst[di] = src[si], raw. */
static void raw_move(jit_fn *f, LLVMTypeRef rt, LLVMValueRef dst, LLVMValueRef di, LLVMValueRef src,
                     LLVMValueRef si) {
  LLVMValueRef v = LLVMBuildLoad2(f->b, rt, raw_ptr(f, rt, src, si), "");
  LLVMBuildStore(f->b, v, raw_ptr(f, rt, dst, di));
}

/* dst[di .. di + n) = src[si .. si + n), raw: one llvm.memcpy (a short
 * constant run becomes a few vector moves). */
static void run_move(jit_fn *f, LLVMTypeRef rt, LLVMValueRef dst, LLVMValueRef di, LLVMValueRef src,
                     LLVMValueRef si, LLVMValueRef n) {
  unsigned esz = LLVMGetIntTypeWidth(rt) / 8;
  LLVMValueRef eszv = jit_i64(f, esz);
  LLVMBuildMemCpy(f->b, raw_ptr(f, rt, dst, di), esz, raw_ptr(f, rt, src, si), esz,
                  jit_mul(f, n, eszv));
}

/* Row-major strides (in elements) of type t into out[rank]. */
static void strides_of(jit_fn *f, const ir_type *t, LLVMValueRef *out) {
  LLVMValueRef s = jit_i64(f, 1);
  for (int a = t->rank - 1; a >= 0; a--) {
    out[a] = s;
    s = jit_mul(f, s, jit_dim(f, t->dims[a]));
  }
}

static bool is_const_one(LLVMValueRef v) {
  return LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v) == 1;
}

/* The bounds of each loop of a nest that splits its work (kernel ABI part
 * / nparts), extents n[0 .. nl) outermost first: the first loop whose
 * extent at run time is not 1 runs only this part's range, the others
 * their whole extent. Returns the run-time i1 "no loop split" (every
 * extent is 1: one element or row), after which only part 0 may copy.
 * Decided at run time because a symbolic batch dim is often 1: splitting
 * it would leave every part but one idle. Constant extents fold. */
static LLVMValueRef nest_bounds(jit_fn *f, int nl, const LLVMValueRef *n, LLVMValueRef *lo,
                                LLVMValueRef *hi) {
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1);
  LLVMValueRef pending = LLVMConstInt(LLVMInt1TypeInContext(f->ctx), 1, 0);
  for (int k = 0; k < nl; k++) {
    lo[k] = zero;
    hi[k] = n[k];
    if (is_const_one(n[k]) || (LLVMIsAConstantInt(pending) && !LLVMConstIntGetZExtValue(pending)))
      continue;
    LLVMValueRef slo, shi;
    jit_split_range(f, n[k], &slo, &shi);
    LLVMValueRef take =
        LLVMBuildAnd(f->b, pending, LLVMBuildICmp(f->b, LLVMIntNE, n[k], one, ""), "split.here");
    lo[k] = LLVMBuildSelect(f->b, take, slo, zero, "");
    hi[k] = LLVMBuildSelect(f->b, take, shi, n[k], "");
    pending = LLVMBuildAnd(f->b, pending, LLVMBuildNot(f->b, take, ""), "split.pending");
  }
  return pending;
}

/* The elements [lo[0], hi[0]) x [lo[1], hi[1]) of a tile, one by one. */
static void scalar_tile(jit_fn *f, LLVMTypeRef rt, LLVMValueRef in, LLVMValueRef out,
                        LLVMValueRef ioff, LLVMValueRef ooff, const LLVMValueRef *lo,
                        const LLVMValueRef *hi, const int *ax2, const LLVMValueRef *istr,
                        const LLVMValueRef *ostr) {
  jit_loop l[2];
  for (int t = 0; t < 2; t++) {
    LLVMValueRef iv = jit_loop_begin(f, &l[t], lo[t], hi[t], "ax");
    ioff = jit_add(f, ioff, jit_mul(f, iv, istr[ax2[t]]));
    ooff = jit_add(f, ooff, jit_mul(f, iv, ostr[ax2[t]]));
  }
  raw_move(f, rt, out, ooff, in, ioff);
  jit_loop_end(f, &l[1]);
  jit_loop_end(f, &l[0]);
}

/* A whole TILE x TILE tile of 4- or 8-byte elements as VW x VW blocks in
 * registers: VW loads of VW elements along the input's contiguous axis
 * (the output's tile axis), transposed by log2(VW) rounds of perfect
 * shuffles (pairing vector k with k + VW/2: interleaving their low halves
 * and their high halves), then VW stores along the output's last axis.
 * in_step: the input stride of the output's last axis; out_step: the
 * output stride of the tile axis (the other two strides are 1). */
enum { VW = 8 };
static void vector_tile(jit_fn *f, LLVMTypeRef rt, LLVMValueRef in, LLVMValueRef out,
                        LLVMValueRef ioff, LLVMValueRef ooff, const LLVMValueRef *lo,
                        LLVMValueRef in_step, LLVMValueRef out_step) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef vt = LLVMVectorType(rt, VW);
  unsigned align = LLVMGetIntTypeWidth(rt) / 8;
  LLVMValueRef mlo[VW], mhi[VW];
  for (int i = 0; i < VW / 2; i++) {
    mlo[2 * i] = LLVMConstInt(f->t_i32, (unsigned long long)i, 0);
    mlo[2 * i + 1] = LLVMConstInt(f->t_i32, (unsigned long long)(VW + i), 0);
    mhi[2 * i] = LLVMConstInt(f->t_i32, (unsigned long long)(VW / 2 + i), 0);
    mhi[2 * i + 1] = LLVMConstInt(f->t_i32, (unsigned long long)(VW + VW / 2 + i), 0);
  }
  LLVMValueRef masklo = LLVMConstVector(mlo, VW), maskhi = LLVMConstVector(mhi, VW);
  LLVMValueRef nb = jit_i64(f, TILE / VW), vw = jit_i64(f, VW);
  jit_loop la, lb;
  LLVMValueRef i0 = jit_add(f, lo[0], jit_mul(f, jit_loop_begin(f, &la, jit_i64(f, 0), nb, "va"), vw));
  LLVMValueRef i1 = jit_add(f, lo[1], jit_mul(f, jit_loop_begin(f, &lb, jit_i64(f, 0), nb, "vb"), vw));
  LLVMValueRef src = jit_add(f, jit_add(f, ioff, i0), jit_mul(f, i1, in_step));
  LLVMValueRef dst = jit_add(f, jit_add(f, ooff, jit_mul(f, i0, out_step)), i1);
  LLVMValueRef v[VW], w[VW];
  for (int k = 0; k < VW; k++) {
    LLVMValueRef at = jit_add(f, src, jit_mul(f, jit_i64(f, k), in_step));
    v[k] = LLVMBuildLoad2(b, vt, raw_ptr(f, rt, in, at), "");
    LLVMSetAlignment(v[k], align);
  }
  for (int round = 1; round < VW; round *= 2) {
    for (int k = 0; k < VW / 2; k++) {
      w[2 * k] = LLVMBuildShuffleVector(b, v[k], v[k + VW / 2], masklo, "");
      w[2 * k + 1] = LLVMBuildShuffleVector(b, v[k], v[k + VW / 2], maskhi, "");
    }
    for (int k = 0; k < VW; k++) v[k] = w[k];
  }
  for (int k = 0; k < VW; k++) {
    LLVMValueRef at = jit_add(f, dst, jit_mul(f, jit_i64(f, k), out_step));
    LLVMValueRef st = LLVMBuildStore(b, v[k], raw_ptr(f, rt, out, at));
    LLVMSetAlignment(st, align);
  }
  jit_loop_end(f, &lb);
  jit_loop_end(f, &la);
}

/* One loop nest of strided_copy; see there. run: NULL, or the elements
 * each innermost step moves as one contiguous run (the nest then covers
 * only the axes before the run). The nest's first loop whose extent is
 * not 1 at run time is split across the parts (nest_bounds); when every
 * loop has extent 1 (or there is none), a guard loop of one iteration for
 * part 0 and none for the others makes part 0 do the whole copy. */
static void copy_nest(jit_fn *f, LLVMTypeRef rt, LLVMValueRef in, LLVMValueRef out, int rank,
                      LLVMValueRef *odims, LLVMValueRef *ostr, LLVMValueRef *istr,
                      LLVMValueRef ibase, int tile_axis, LLVMValueRef run) {
  bool tiled = tile_axis >= 0 && tile_axis < rank - 1;
  LLVMValueRef zero = jit_i64(f, 0);
  jit_loop loops[IR_MAX_RANK + 3];
  int nl = 0;
  LLVMValueRef tv = jit_i64(f, TILE), nblk[2] = {NULL, NULL};
  int ax2[2] = {tile_axis, rank - 1};
  /* the extents in nest order: the plain axes, then the two block axes */
  LLVMValueRef ext[IR_MAX_RANK + 2], elo[IR_MAX_RANK + 2], ehi[IR_MAX_RANK + 2];
  int ne = 0;
  for (int a = 0; a < rank; a++)
    if (!(tiled && (a == tile_axis || a == rank - 1))) ext[ne++] = odims[a];
  for (int t = 0; tiled && t < 2; t++) {
    nblk[t] = LLVMBuildSDiv(f->b, jit_add(f, odims[ax2[t]], jit_i64(f, TILE - 1)), tv, "");
    ext[ne++] = nblk[t];
  }
  LLVMValueRef whole = nest_bounds(f, ne, ext, elo, ehi);
  if (!LLVMIsAConstantInt(whole) || LLVMConstIntGetZExtValue(whole)) { /* part 0 alone? */
    LLVMValueRef others = LLVMBuildAnd(
        f->b, whole, LLVMBuildICmp(f->b, LLVMIntNE, f->part, zero, ""), "part0.only");
    f->split = true; /* the guard decides per part */
    jit_loop_begin(f, &loops[nl++], zero,
                   LLVMBuildSelect(f->b, others, zero, jit_i64(f, 1), ""), "part0");
  }
  int e = 0;
  LLVMValueRef ioff = ibase, ooff = zero;
  for (int a = 0; a < rank; a++) {
    if (tiled && (a == tile_axis || a == rank - 1)) continue;
    LLVMValueRef iv = jit_loop_begin(f, &loops[nl++], elo[e], ehi[e], "ax");
    e++;
    ioff = jit_add(f, ioff, jit_mul(f, iv, istr[a]));
    ooff = jit_add(f, ooff, jit_mul(f, iv, ostr[a]));
  }
  if (tiled) {
    LLVMValueRef lo[2], hi[2];
    for (int t = 0; t < 2; t++) {
      LLVMValueRef d = odims[ax2[t]];
      LLVMValueRef blk = jit_loop_begin(f, &loops[nl++], elo[e], ehi[e], "blk");
      e++;
      lo[t] = jit_mul(f, blk, tv);
      LLVMValueRef end = jit_add(f, lo[t], tv);
      hi[t] = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, end, d, ""), end, d, "");
    }
    unsigned bits = LLVMGetIntTypeWidth(rt);
    if (bits == 32 || bits == 64) { /* whole tiles in registers, edges element by element */
      LLVMValueRef full = LLVMBuildAnd(
          f->b, LLVMBuildICmp(f->b, LLVMIntEQ, LLVMBuildSub(f->b, hi[0], lo[0], ""), tv, ""),
          LLVMBuildICmp(f->b, LLVMIntEQ, LLVMBuildSub(f->b, hi[1], lo[1], ""), tv, ""), "full");
      LLVMBasicBlockRef bv = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tile.vec");
      LLVMBasicBlockRef bs = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tile.edge");
      LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tile.done");
      LLVMBuildCondBr(f->b, full, bv, bs);
      LLVMPositionBuilderAtEnd(f->b, bv);
      vector_tile(f, rt, in, out, ioff, ooff, lo, istr[rank - 1], ostr[tile_axis]);
      LLVMBuildBr(f->b, join);
      LLVMPositionBuilderAtEnd(f->b, bs);
      scalar_tile(f, rt, in, out, ioff, ooff, lo, hi, ax2, istr, ostr);
      LLVMBuildBr(f->b, join);
      LLVMPositionBuilderAtEnd(f->b, join);
    } else {
      scalar_tile(f, rt, in, out, ioff, ooff, lo, hi, ax2, istr, ostr);
    }
  } else if (run) {
    run_move(f, rt, out, ooff, in, ioff, run);
    while (nl > 0) jit_loop_end_rolled(f, &loops[--nl]);
    return;
  } else {
    raw_move(f, rt, out, ooff, in, ioff);
  }
  while (nl > 0) jit_loop_end(f, &loops[--nl]);
}

/* Copy over the output (rank `rank`, dims odims, dense row-major) reading
 * in[ibase + sum_a iv_a * istr[a]].
 * tile_axis: an output axis other than the last whose input stride is 1
 * (it reads the input's last axis), or -1. When that axis and the output's
 * last axis both have >= TILE elements, they are walked in TILE x TILE
 * blocks so reads and writes both stay within a few cache lines (a plain
 * nest reads with a large stride on every element; measured 3-4x faster on
 * 1024 x 1024 f32). With a short axis the plain nest is already cache
 * friendly and faster (the tile loops only add overhead), so the choice is
 * made at compile time for static dims and by a run-time branch between
 * both nests otherwise. run_axes > 0: the last run_axes axes are laid out
 * alike in the input (row-major there too), so each step of the nest over
 * the other axes moves them as one contiguous run (tile_axis unused). */
static void strided_copy(jit_fn *f, int64_t esz, LLVMValueRef in, LLVMValueRef out, int rank,
                         LLVMValueRef *odims, LLVMValueRef *istr, LLVMValueRef ibase,
                         int tile_axis, int run_axes) {
  LLVMTypeRef rt = raw_type(f, esz);
  LLVMValueRef ostr[IR_MAX_RANK];
  LLVMValueRef s = jit_i64(f, 1);
  for (int a = rank - 1; a >= 0; a--) {
    ostr[a] = s;
    s = jit_mul(f, s, odims[a]);
  }
  if (run_axes > 0) {
    LLVMValueRef run = jit_i64(f, 1);
    for (int a = rank - run_axes; a < rank; a++) run = jit_mul(f, run, odims[a]);
    copy_nest(f, rt, in, out, rank - run_axes, odims, ostr, istr, ibase, -1, run);
    return;
  }
  if (tile_axis < 0 || tile_axis >= rank - 1) {
    copy_nest(f, rt, in, out, rank, odims, ostr, istr, ibase, -1, NULL);
    return;
  }
  LLVMValueRef tv = jit_i64(f, TILE);
  LLVMValueRef big = LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntSGE, odims[tile_axis], tv, ""),
                                  LLVMBuildICmp(f->b, LLVMIntSGE, odims[rank - 1], tv, ""), "");
  if (LLVMIsAConstantInt(big)) {
    bool yes = LLVMConstIntGetZExtValue(big) != 0;
    copy_nest(f, rt, in, out, rank, odims, ostr, istr, ibase, yes ? tile_axis : -1, NULL);
    return;
  }
  LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tiled");
  LLVMBasicBlockRef bp = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "plain");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "copied");
  LLVMBuildCondBr(f->b, big, bt, bp);
  LLVMPositionBuilderAtEnd(f->b, bt);
  copy_nest(f, rt, in, out, rank, odims, ostr, istr, ibase, tile_axis, NULL);
  LLVMBuildBr(f->b, join);
  LLVMPositionBuilderAtEnd(f->b, bp);
  copy_nest(f, rt, in, out, rank, odims, ostr, istr, ibase, -1, NULL);
  LLVMBuildBr(f->b, join);
  LLVMPositionBuilderAtEnd(f->b, join);
}

/* Each part copies its range of the elements. */
static int lower_flat_copy(jit_fn *f, int64_t esz) {
  const ir_type *to = &f->node->out[0]->type;
  LLVMValueRef lo, hi, eszv = jit_i64(f, esz);
  jit_split_range(f, jit_numel_range(f, to, 0, to->rank), &lo, &hi);
  LLVMValueRef off = jit_mul(f, lo, eszv);
  LLVMValueRef bytes = jit_mul(f, LLVMBuildSub(f->b, hi, lo, ""), eszv);
  LLVMValueRef dst = LLVMBuildInBoundsGEP2(f->b, f->t_i8, jit_out(f, 0), &off, 1, "");
  LLVMValueRef src = LLVMBuildInBoundsGEP2(f->b, f->t_i8, jit_in(f, 0), &off, 1, "");
  LLVMBuildMemCpy(f->b, dst, (unsigned)esz, src, (unsigned)esz, bytes);
  return f->failed ? -1 : 0;
}

/* transpose (perm from axis_1 / axis_2) and permute (perm = dims). */
static int lower_permute(jit_fn *f, int64_t esz) {
  const ir_node *n = f->node;
  const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
  int r = ti->rank;
  if (to->rank != r) return jit_fn_error(f, "result rank %d differs from operand rank %d", to->rank, r);
  int perm[IR_MAX_RANK];
  for (int a = 0; a < r; a++) perm[a] = a;
  if (n->op == IR_OP_TRANSPOSE) {
    const ir_attr *a1 = ir_node_attr(n, "axis_1"), *a2 = ir_node_attr(n, "axis_2");
    if (!a1 || !a2 || a1->kind != IR_ATTR_INT || a2->kind != IR_ATTR_INT)
      return jit_fn_error(f, "needs integer attributes axis_1 and axis_2");
    int x = 0, y = 0;
    if (norm_axis(f, a1->u.i, r, "axis_1", &x) || norm_axis(f, a2->u.i, r, "axis_2", &y)) return -1;
    perm[x] = y;
    perm[y] = x;
  } else {
    const ir_attr *d = ir_node_attr(n, "dims");
    if (!d || d->kind != IR_ATTR_INTS || d->u.ints.n != r)
      return jit_fn_error(f, "needs a dims attribute with %d entries", r);
    bool seen[IR_MAX_RANK] = {false};
    for (int a = 0; a < r; a++) {
      int p = 0;
      if (norm_axis(f, d->u.ints.v[a], r, "dims entry", &p)) return -1;
      if (seen[p]) return jit_fn_error(f, "dims is not a permutation (axis %d twice)", p);
      seen[p] = true;
      perm[a] = p;
    }
  }
  LLVMValueRef istr[IR_MAX_RANK], pstr[IR_MAX_RANK], odims[IR_MAX_RANK];
  strides_of(f, ti, istr);
  for (int a = 0; a < r; a++) {
    pstr[a] = istr[perm[a]];
    odims[a] = jit_dim(f, to->dims[a]);
  }
  /* Trailing axes the permutation leaves in place are contiguous on both
   * sides: they move as one run per step (attention's [b, s, h, d] ->
   * [b, h, s, d] copies rows of d), which is also far less code than an
   * unrolled element loop. The identity is one flat copy. */
  int keep = 0;
  while (keep < r && perm[r - 1 - keep] == r - 1 - keep) keep++;
  if (keep == r) return lower_flat_copy(f, esz);
  /* the output axis that reads the input's last (contiguous) axis */
  int tile_axis = -1;
  for (int a = 0; a < r; a++)
    if (perm[a] == r - 1) tile_axis = a;
  strided_copy(f, esz, jit_in(f, 0), jit_out(f, 0), r, odims, pstr, jit_i64(f, 0), tile_axis,
               keep);
  return f->failed ? -1 : 0;
}

/* Entry a of an int-list attribute, or dflt when the list is absent or short. */
static int64_t list_at(const ir_attr *l, int a, int64_t dflt) {
  return (l && a < l->u.ints.n) ? l->u.ints.v[a] : dflt;
}

int jit_slice_layout(jit_fn *f, const ir_node *n, LLVMValueRef *base, LLVMValueRef *strides) {
  const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
  int r = ti->rank;
  if (to->rank != r) return jit_fn_error(f, "result rank %d differs from operand rank %d", to->rank, r);
  const ir_attr *ls = ir_node_attr(n, "start"), *lp = ir_node_attr(n, "stop"),
                *lt = ir_node_attr(n, "step");
  const ir_attr *lists[3] = {ls, lp, lt};
  int nax = 0;
  for (int i = 0; i < 3; i++) {
    if (!lists[i]) continue;
    if (lists[i]->kind != IR_ATTR_INTS) return jit_fn_error(f, "start, stop and step must be int lists");
    if (lists[i]->u.ints.n > nax) nax = lists[i]->u.ints.n;
  }
  if (nax > r) return jit_fn_error(f, "%d slice entries for rank %d", nax, r);

  LLVMValueRef istr[IR_MAX_RANK];
  strides_of(f, ti, istr);
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1), ibase = zero;
  for (int a = 0; a < r; a++) {
    strides[a] = istr[a];
    if (a >= nax) continue;
    int64_t step = list_at(lt, a, 1);
    int64_t st = list_at(ls, a, INT64_MIN);
    if (step == 0) return jit_fn_error(f, "step of axis %d is 0", a);
    LLVMValueRef d = jit_dim(f, ti->dims[a]);
    LLVMValueRef start;
    if (step > 0) { /* numpy: start in [0, d] */
      if (st == INT64_MIN)
        start = zero;
      else if (st < 0)
        start = smax(f, LLVMBuildAdd(f->b, d, jit_i64(f, st), ""), zero);
      else
        start = smin(f, jit_i64(f, st), d);
    } else { /* numpy: start in [-1, d - 1] */
      LLVMValueRef dm1 = LLVMBuildSub(f->b, d, one, "");
      if (st == INT64_MIN)
        start = dm1;
      else if (st < 0)
        start = smax(f, LLVMBuildAdd(f->b, d, jit_i64(f, st), ""), jit_i64(f, -1));
      else
        start = smin(f, jit_i64(f, st), dm1);
    }
    /* start is only read when the output axis is non-empty, where it is in
     * [0, d - 1]; plain (non-nsw) arithmetic keeps empty cases defined. */
    ibase = LLVMBuildAdd(f->b, ibase, LLVMBuildMul(f->b, start, istr[a], ""), "");
    strides[a] = LLVMBuildMul(f->b, istr[a], jit_i64(f, step), "");
  }
  *base = ibase;
  return f->failed ? -1 : 0;
}

static int lower_slice(jit_fn *f, int64_t esz) {
  const ir_type *to = &f->node->out[0]->type;
  LLVMValueRef ibase, sstr[IR_MAX_RANK], odims[IR_MAX_RANK];
  if (jit_slice_layout(f, f->node, &ibase, sstr) < 0) return -1;
  for (int a = 0; a < to->rank; a++) odims[a] = jit_dim(f, to->dims[a]);
  strided_copy(f, esz, jit_in(f, 0), jit_out(f, 0), to->rank, odims, sstr, ibase, -1, 0);
  return f->failed ? -1 : 0;
}

/* concat (into one result) and split (out of one operand): for each outer
 * row, one block copy per piece at the running offset along the axis.
 * Parts split the outer rows when there are at least as many rows as parts;
 * otherwise (concat along a leading axis: one row) each part copies its
 * range of every piece's block. */
static int lower_concat_split(jit_fn *f, int64_t esz) {
  const ir_node *n = f->node;
  bool is_concat = n->op == IR_OP_CONCAT;
  const ir_type *whole = is_concat ? &n->out[0]->type : &n->in[0]->type;
  int npieces = is_concat ? n->nin : n->nout;
  if (is_concat ? n->nout != 1 : n->nin != 1)
    return jit_fn_error(f, "expected one %s", is_concat ? "result" : "operand");
  int r = whole->rank;
  int ax = 0;
  const ir_attr *axattr = ir_node_attr(n, "axis");
  if (is_concat && !axattr) return jit_fn_error(f, "needs an axis attribute");
  if (norm_axis(f, ir_node_attr_int(n, "axis", 0), r, "axis", &ax)) return -1;
  for (int p = 0; p < npieces; p++) {
    const ir_type *t = is_concat ? &n->in[p]->type : &n->out[p]->type;
    if (t->rank != r) return jit_fn_error(f, "piece %d has rank %d, expected %d", p, t->rank, r);
  }
  /* per piece: its row length (elements) and its buffer; compile-time scratch */
  LLVMValueRef *rows = malloc(sizeof *rows * 2 * (size_t)(npieces > 0 ? npieces : 1));
  if (!rows) return jit_fn_error(f, "out of memory");
  LLVMValueRef *pieces = rows + npieces;
  LLVMValueRef zero = jit_i64(f, 0), eszv = jit_i64(f, esz);
  LLVMValueRef outer = jit_numel_range(f, whole, 0, ax);
  LLVMValueRef inner = jit_numel_range(f, whole, ax + 1, r);
  LLVMValueRef wrow = jit_mul(f, jit_dim(f, whole->dims[ax]), inner);
  for (int p = 0; p < npieces; p++) {
    const ir_type *t = is_concat ? &n->in[p]->type : &n->out[p]->type;
    rows[p] = jit_mul(f, jit_dim(f, t->dims[ax]), inner);
    pieces[p] = is_concat ? jit_in(f, p) : jit_out(f, p);
  }
  LLVMValueRef W = is_concat ? jit_out(f, 0) : jit_in(f, 0);

  /* by_outer: this part's rows [olo, ohi), whole blocks; else all rows
   * (there is at most one per part) and its range [blo, bhi) of each block */
  LLVMValueRef by_outer, olo = zero, ohi = outer;
  if (is_const_one(outer)) {
    by_outer = LLVMConstInt(f->t_i1, 0, 0);
  } else {
    jit_split_range(f, outer, &olo, &ohi);
    by_outer = LLVMBuildICmp(f->b, LLVMIntUGE, outer, f->nparts, "split.outer");
    olo = LLVMBuildSelect(f->b, by_outer, olo, zero, "");
    ohi = LLVMBuildSelect(f->b, by_outer, ohi, outer, "");
  }
  LLVMValueRef *blo = malloc(sizeof *blo * 2 * (size_t)(npieces > 0 ? npieces : 1));
  if (!blo) {
    free(rows);
    return jit_fn_error(f, "out of memory");
  }
  LLVMValueRef *bhi = blo + npieces;
  for (int p = 0; p < npieces; p++) {
    jit_split_range(f, rows[p], &blo[p], &bhi[p]);
    blo[p] = LLVMBuildSelect(f->b, by_outer, zero, blo[p], "");
    bhi[p] = LLVMBuildSelect(f->b, by_outer, rows[p], bhi[p], "");
  }
  jit_loop lo;
  LLVMValueRef o = jit_loop_begin(f, &lo, olo, ohi, "o");
  LLVMValueRef woff = jit_mul(f, o, wrow);
  for (int p = 0; p < npieces; p++) {
    LLVMValueRef poff = jit_add(f, jit_mul(f, o, rows[p]), blo[p]);
    LLVMValueRef wb = jit_mul(f, jit_add(f, woff, blo[p]), eszv), pb = jit_mul(f, poff, eszv);
    LLVMValueRef wptr = LLVMBuildInBoundsGEP2(f->b, f->t_i8, W, &wb, 1, "");
    LLVMValueRef pptr = LLVMBuildInBoundsGEP2(f->b, f->t_i8, pieces[p], &pb, 1, "");
    LLVMValueRef bytes = jit_mul(f, LLVMBuildSub(f->b, bhi[p], blo[p], ""), eszv);
    if (is_concat)
      LLVMBuildMemCpy(f->b, wptr, (unsigned)esz, pptr, (unsigned)esz, bytes);
    else
      LLVMBuildMemCpy(f->b, pptr, (unsigned)esz, wptr, (unsigned)esz, bytes);
    woff = jit_add(f, woff, rows[p]);
  }
  jit_loop_end(f, &lo);
  free(blo);
  free(rows);
  return f->failed ? -1 : 0;
}

/* out[pre, j..., post] = in[pre, indices[j...], post] */
static int lower_gather(jit_fn *f, int64_t esz) {
  const ir_node *n = f->node;
  if (n->nin != 2) return jit_fn_error(f, "expected 2 operands, got %d", n->nin);
  const ir_type *ti = &n->in[0]->type, *tx = &n->in[1]->type, *to = &n->out[0]->type;
  int r = ti->rank;
  if (!ir_dtype_is_int(tx->dtype))
    return jit_fn_error(f, "indices must be an integer tensor, got %s", ir_dtype_name(tx->dtype));
  int ax = 0;
  if (norm_axis(f, ir_node_attr_int(n, "axis", -1), r, "axis", &ax)) return -1;
  if (to->rank != r - 1 + tx->rank)
    return jit_fn_error(f, "result rank %d, expected %d", to->rank, r - 1 + tx->rank);

  LLVMTypeRef rt = raw_type(f, esz);
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef pre = jit_numel_range(f, ti, 0, ax);
  LLVMValueRef D = jit_dim(f, ti->dims[ax]);
  LLVMValueRef post = jit_numel_range(f, ti, ax + 1, r);
  LLVMValueRef nidx = jit_numel_range(f, tx, 0, tx->rank);
  LLVMValueRef X = jit_in(f, 0), I = jit_in(f, 1), Y = jit_out(f, 0);
  bool isgn = ir_dtype_is_signed(tx->dtype);

  jit_loop lp, lj, lq;
  LLVMValueRef p = jit_loop_begin(f, &lp, zero, pre, "p");
  LLVMValueRef pin = jit_mul(f, p, D), pout = jit_mul(f, p, nidx);
  LLVMValueRef j = jit_loop_begin(f, &lj, zero, nidx, "j");
  LLVMValueRef idx = jit_load(f, tx->dtype, I, j);
  idx = LLVMBuildIntCast2(f->b, idx, f->t_i64, isgn, "");
  if (isgn) {
    LLVMValueRef neg = LLVMBuildICmp(f->b, LLVMIntSLT, idx, zero, "");
    idx = LLVMBuildSelect(f->b, neg, LLVMBuildAdd(f->b, idx, D, ""), idx, "");
  }
  /* unsigned compare: also catches indices still negative */
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntUGE, idx, D, ""), JIT_KERR_INDEX);
  LLVMValueRef src = jit_mul(f, jit_add(f, pin, idx), post);
  LLVMValueRef dst = jit_mul(f, jit_add(f, pout, j), post);
  LLVMValueRef q = jit_loop_begin(f, &lq, zero, post, "q");
  raw_move(f, rt, Y, jit_add(f, dst, q), X, jit_add(f, src, q));
  jit_loop_end(f, &lq);
  jit_loop_end(f, &lj);
  jit_loop_end(f, &lp);
  return f->failed ? -1 : 0;
}

int jit_lower_movement(jit_fn *f) {
  const ir_node *n = f->node;
  if (n->nin < 1 || n->nout < 1) return jit_fn_error(f, "needs an operand and a result");
  ir_dtype dt = n->in[0]->type.dtype;
  int64_t esz = elem_size(dt);
  if (esz != 1 && esz != 2 && esz != 4 && esz != 8)
    return jit_fn_error(f, "dtype %s cannot be moved", ir_dtype_name(dt));
  for (int i = 0; i < n->nout; i++)
    if (n->out[i]->type.dtype != dt)
      return jit_fn_error(f, "result %d has dtype %s, operand has %s", i,
                    ir_dtype_name(n->out[i]->type.dtype), ir_dtype_name(dt));
  switch (n->op) {
  case IR_OP_RESHAPE:
  case IR_OP_TRANSFER_TO: /* one memory on the CPU: a copy */
  case IR_OP_SQUEEZE:
  case IR_OP_UNSQUEEZE: return lower_flat_copy(f, esz);
  case IR_OP_TRANSPOSE:
  case IR_OP_PERMUTE: return lower_permute(f, esz);
  case IR_OP_SLICE_TENSOR: return lower_slice(f, esz);
  case IR_OP_CONCAT:
    for (int i = 1; i < n->nin; i++)
      if (n->in[i]->type.dtype != dt)
        return jit_fn_error(f, "operand %d has dtype %s, operand 0 has %s", i,
                      ir_dtype_name(n->in[i]->type.dtype), ir_dtype_name(dt));
    return lower_concat_split(f, esz);
  case IR_OP_SPLIT: return lower_concat_split(f, esz);
  case IR_OP_GATHER: return lower_gather(f, esz);
  default: return jit_fn_error(f, "not a movement op");
  }
}
