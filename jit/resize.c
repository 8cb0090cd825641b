/* resize.c - lowering of the resizing class (mo.resize, resize_nearest,
 * resize_linear, resize_bicubic), for the host and for SIMT targets.
 *
 * Each result element is computed on its own: per resized axis (those whose
 * dims differ or that a scale names, every axis with a scales operand, whose
 * entries the kernel loads: ir_resize_axes) its coordinate, taps
 * and weights, then the weighted sum of the taps' elements in double,
 * rounded once (nearest copies the one element, any dtype); the taps are
 * unrolled (at most IR_RESIZE_MAX_TAPS). The arithmetic is
 * ir/resize.c's, emitted operation for operation in the same order, so the
 * kernels match the interpreter. Tap indices are clamped into the axis, so
 * no load leaves the operand; the shape rule guarantees a resized axis is
 * not empty when the result has elements.
 * Host: the rows (every axis but the last) are split between the parts
 * (jit_split_range), the last axis is one loop. SIMT: a grid-stride loop
 * over the result elements, one element per thread. Assumes a verified
 * node. */
#include "../ir/resize.h"
#include "lower.h"
#include "simt.h"

typedef struct rsz {
  ir_resize p;
  ir_dtype dt;
  int rank;
  bool rs[IR_MAX_RANK]; /* the resized axes (ir_resize_axes); the others are copied */
  LLVMValueRef xd[IR_MAX_RANK], yd[IR_MAX_RANK], st[IR_MAX_RANK]; /* st: operand strides */
} rsz;

static int rsz_setup(jit_fn *f, rsz *q) {
  const ir_node *n = f->node;
  const char *name = ir_op_get(n->op)->name;
  if (!ir_resize_read(n, &q->p)) return jit_fn_error(f, "mo.%s: malformed resize attributes", name);
  q->dt = n->in[0]->type.dtype;
  q->rank = n->in[0]->type.rank;
  if (q->rank < 1 || q->rank > IR_MAX_RANK || n->out[0]->type.rank != q->rank)
    return jit_fn_error(f, "mo.%s: the operand and result need one rank >= 1", name);
  int64_t taps = 1;
  for (int i = ir_resize_axes(n, &q->p, q->rs); i > 0; i--) taps *= ir_resize_ntaps(&q->p);
  if (taps > IR_RESIZE_MAX_TAPS)
    return jit_fn_error(f, "mo.%s: more than %d taps per element", name, IR_RESIZE_MAX_TAPS);
  jit_shape(f, &n->in[0]->type, q->xd);
  jit_shape(f, &n->out[0]->type, q->yd);
  for (int i = q->rank - 1; i >= 0; i--)
    q->st[i] = i == q->rank - 1 ? jit_i64(f, 1) : jit_mul(f, q->st[i + 1], q->xd[i + 1]);
  return 0;
}

static LLVMValueRef to_f64(jit_fn *f, LLVMValueRef i) {
  return LLVMBuildSIToFP(f->b, i, f->t_f64, "");
}

/* ir_resize_coord_of */
static LLVMValueRef coord_of(jit_fn *f, ir_resize_coord c, LLVMValueRef o, LLVMValueRef n,
                             LLVMValueRef m, LLVMValueRef s, LLVMValueRef len) {
  LLVMValueRef half = jit_fsub(f, jit_fdiv(f, jit_fadd(f, o, jit_dc(f, 0.5)), s), jit_dc(f, 0.5));
  switch (c) {
  case IR_RESIZE_HALF_PIXEL: return half;
  case IR_RESIZE_PYTORCH_HALF_PIXEL:
    return jit_sel(f, jit_fcmp(f, LLVMRealOGT, len, jit_dc(f, 1.0)), half, jit_dc(f, 0.0));
  case IR_RESIZE_ALIGN_CORNERS: {
    LLVMValueRef one = jit_dc(f, 1.0);
    LLVMValueRef q = jit_fdiv(f, jit_fmul(f, o, jit_fsub(f, n, one)), jit_fsub(f, len, one));
    return jit_sel(f, jit_fcmp(f, LLVMRealOEQ, len, one), jit_dc(f, 0.0), q);
  }
  case IR_RESIZE_ASYMMETRIC: return jit_fdiv(f, o, s);
  case IR_RESIZE_TF_HALF_PIXEL_FOR_NN: return jit_fdiv(f, jit_fadd(f, o, jit_dc(f, 0.5)), s);
  case IR_RESIZE_HALF_PIXEL_SYMMETRIC: {
    LLVMValueRef shrink = jit_fsub(f, jit_dc(f, 1.0), jit_fdiv(f, m, len));
    LLVMValueRef off = jit_fmul(f, jit_fdiv(f, n, jit_dc(f, 2.0)), shrink);
    LLVMValueRef mid = jit_fdiv(f, jit_fadd(f, o, jit_dc(f, 0.5)), s);
    return jit_fsub(f, jit_fadd(f, off, mid), jit_dc(f, 0.5));
  }
  }
  return jit_dc(f, 0.0);
}

/* ir_resize_floor_bound, then the integer */
static LLVMValueRef bound_int(jit_fn *f, LLVMValueRef fl, LLVMValueRef n) {
  LLVMValueRef hi = jit_fadd(f, n, jit_dc(f, 8.0));
  LLVMValueRef v = jit_sel(f, jit_fcmp(f, LLVMRealOGT, fl, hi), hi, fl);
  v = jit_sel(f, jit_fcmp(f, LLVMRealULT, fl, jit_dc(f, -8.0)), jit_dc(f, -8.0), v); /* NaN too */
  return LLVMBuildFPToSI(f->b, v, f->t_i64, "");
}

static LLVMValueRef clamp_idx(jit_fn *f, LLVMValueRef i, LLVMValueRef n) {
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef v = jit_sel(f, LLVMBuildICmp(f->b, LLVMIntSGE, i, n, ""),
                       LLVMBuildSub(f->b, n, jit_i64(f, 1), ""), i);
  return jit_sel(f, LLVMBuildICmp(f->b, LLVMIntSLT, i, zero, ""), zero, v);
}

static LLVMValueRef cubic_near(jit_fn *f, double a, LLVMValueRef t) {
  LLVMValueRef v = jit_fsub(f, jit_fmul(f, jit_dc(f, a + 2.0), t), jit_dc(f, a + 3.0));
  return jit_fadd(f, jit_fmul(f, jit_fmul(f, v, t), t), jit_dc(f, 1.0));
}
static LLVMValueRef cubic_far(jit_fn *f, double a, LLVMValueRef t) {
  LLVMValueRef v = jit_fsub(f, jit_fmul(f, jit_dc(f, a), t), jit_dc(f, 5.0 * a));
  v = jit_fadd(f, jit_fmul(f, v, t), jit_dc(f, 8.0 * a));
  return jit_fsub(f, jit_fmul(f, v, t), jit_dc(f, 4.0 * a));
}

/* ir_resize_taps for result coordinate co of resized axis `axis`, scale
 * sa (an f64 value: the attribute or the scales operand's entry; NULL for
 * none); the count. */
static int taps(jit_fn *f, const rsz *q, int axis, LLVMValueRef sa, LLVMValueRef co,
                LLVMValueRef idx[4], LLVMValueRef w[4]) {
  const ir_resize *p = &q->p;
  LLVMValueRef ni = q->xd[axis], n = to_f64(f, ni), m = to_f64(f, q->yd[axis]), s, len;
  if (sa) {
    s = sa;
    len = jit_fmul(f, sa, n);
  } else {
    s = jit_fdiv(f, m, n);
    len = m;
  }
  LLVMValueRef x = coord_of(f, p->coord, to_f64(f, co), n, m, s, len);
  LLVMValueRef fl = jit_intrinsic(f, "llvm.floor", f->t_f64, &x, 1), r = jit_fsub(f, x, fl);
  if (p->interp == IR_RESIZE_NEAREST) {
    LLVMValueRef up;
    switch (p->round) {
    case IR_RESIZE_ROUND_PREFER_FLOOR: up = jit_fcmp(f, LLVMRealOGT, r, jit_dc(f, 0.5)); break;
    case IR_RESIZE_ROUND_PREFER_CEIL: up = jit_fcmp(f, LLVMRealOGE, r, jit_dc(f, 0.5)); break;
    case IR_RESIZE_CEIL: up = jit_fcmp(f, LLVMRealOGT, r, jit_dc(f, 0.0)); break;
    default: up = LLVMConstInt(f->t_i1, 0, 0); break;
    }
    idx[0] = clamp_idx(f, bound_int(f, jit_sel(f, up, jit_fadd(f, fl, jit_dc(f, 1.0)), fl), n), ni);
    w[0] = jit_dc(f, 1.0);
    return 1;
  }
  LLVMValueRef i0 = bound_int(f, fl, n);
  if (p->interp == IR_RESIZE_LINEAR) {
    idx[0] = clamp_idx(f, i0, ni);
    idx[1] = clamp_idx(f, LLVMBuildAdd(f->b, i0, jit_i64(f, 1), ""), ni);
    w[0] = jit_fsub(f, jit_dc(f, 1.0), r);
    w[1] = r;
    return 2;
  }
  w[0] = cubic_far(f, p->a, jit_fadd(f, r, jit_dc(f, 1.0)));
  w[1] = cubic_near(f, p->a, r);
  w[2] = cubic_near(f, p->a, jit_fsub(f, jit_dc(f, 1.0), r));
  w[3] = cubic_far(f, p->a, jit_fsub(f, jit_dc(f, 2.0), r));
  for (int k = 0; k < 4; k++) {
    LLVMValueRef i = LLVMBuildAdd(f->b, i0, jit_i64(f, k - 1), "");
    if (p->exclude) {
      LLVMValueRef out = LLVMBuildOr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, i, jit_i64(f, 0), ""),
                                     LLVMBuildICmp(f->b, LLVMIntSGE, i, ni, ""), "");
      w[k] = jit_sel(f, out, jit_dc(f, 0.0), w[k]);
    }
    idx[k] = clamp_idx(f, i, ni);
  }
  if (p->exclude) {
    LLVMValueRef sum = jit_fadd(f, jit_fadd(f, jit_fadd(f, w[0], w[1]), w[2]), w[3]);
    for (int k = 0; k < 4; k++) w[k] = jit_fdiv(f, w[k], sum);
  }
  return 4;
}

/* Result element oidx at coordinates coord[0 .. rank): the taps in the
 * interpreter's order (row-major over the resized axes), each weight the
 * product of the axes' weights from the first. */
static void rsz_element(jit_fn *f, const rsz *q, const LLVMValueRef *coord, LLVMValueRef oidx) {
  LLVMValueRef idx[IR_MAX_RANK][4], w[IR_MAX_RANK][4];
  int nt[IR_MAX_RANK];
  for (int i = 0; i < q->rank; i++) {
    nt[i] = 0;
    idx[i][0] = coord[i];
    if (!q->rs[i]) continue;
    double sa = ir_resize_scale_of(&q->p, i, q->rank);
    LLVMValueRef s = sa > 0 ? jit_dc(f, sa) : NULL;
    if (f->node->nin == 3) { /* run-time scales */
      ir_dtype sd = f->node->in[2]->type.dtype;
      s = jit_scalar_cast(f, sd, IR_DT_F64, jit_load(f, sd, jit_in(f, 2), jit_i64(f, i)));
    }
    nt[i] = taps(f, q, i, s, coord[i], idx[i], w[i]);
  }
  LLVMValueRef in = jit_in(f, 0);
  if (q->p.interp == IR_RESIZE_NEAREST) {
    LLVMValueRef src = jit_i64(f, 0);
    for (int i = 0; i < q->rank; i++) src = jit_add(f, src, jit_mul(f, idx[i][0], q->st[i]));
    jit_store(f, q->dt, jit_out(f, 0), oidx, jit_load(f, q->dt, in, src));
    return;
  }
  int k[IR_MAX_RANK] = {0};
  LLVMValueRef acc = jit_dc(f, 0.0);
  for (;;) {
    LLVMValueRef src = jit_i64(f, 0), wt = NULL;
    for (int i = 0; i < q->rank; i++) {
      src = jit_add(f, src, jit_mul(f, idx[i][nt[i] ? k[i] : 0], q->st[i]));
      if (nt[i]) wt = wt ? jit_fmul(f, wt, w[i][k[i]]) : w[i][k[i]];
    }
    LLVMValueRef v = jit_scalar_cast(f, q->dt, IR_DT_F64, jit_load(f, q->dt, in, src));
    acc = jit_fadd(f, acc, jit_fmul(f, wt ? wt : jit_dc(f, 1.0), v));
    int i = q->rank - 1;
    for (; i >= 0; i--) {
      if (!nt[i]) continue;
      if (++k[i] < nt[i]) break;
      k[i] = 0;
    }
    if (i < 0) break;
  }
  jit_store(f, q->dt, jit_out(f, 0), oidx, jit_scalar_cast(f, IR_DT_F64, q->dt, acc));
}

int jit_lower_resize(jit_fn *f) {
  rsz q;
  if (rsz_setup(f, &q) != 0) return -1;
  const ir_type *yt = &f->node->out[0]->type;
  LLVMValueRef coord[IR_MAX_RANK], lo, hi;
  LLVMValueRef rows = jit_numel_range(f, yt, 0, q.rank - 1);
  jit_split_range(f, rows, &lo, &hi);
  jit_loop R, C;
  LLVMValueRef row = jit_loop_begin(f, &R, lo, hi, "row");
  jit_simt_unravel(f, row, q.yd, q.rank - 1, coord);
  LLVMValueRef base = jit_mul(f, row, q.yd[q.rank - 1]);
  coord[q.rank - 1] = jit_loop_begin(f, &C, jit_i64(f, 0), q.yd[q.rank - 1], "c");
  rsz_element(f, &q, coord, jit_add(f, base, coord[q.rank - 1]));
  jit_loop_end(f, &C);
  jit_loop_end(f, &R);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_resize(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  rsz q;
  if (rsz_setup(f, &q) != 0) return -1;
  const ir_type *yt = &f->node->out[0]->type;
  LLVMValueRef coord[IR_MAX_RANK];
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, yt, 0, q.rank));
  jit_simt_unravel(f, e, q.yd, q.rank, coord);
  rsz_element(f, &q, coord, e);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
