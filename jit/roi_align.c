/* roi_align.c - lowering of mo.roi_align (NHWC; ops.def documents it,
 * ir/interp_patch.c is its meaning) for the host and for SIMT targets.
 *
 * One routine per result element (k, ph, pw, c), shared by both targets:
 * it reads region k, checks its batch index (outside [0, N) after
 * truncation, or NaN: JIT_KERR_INDEX) and its sampling grid (not finite or
 * above IR_ROI_MAX_GRID per axis: JIT_KERR_ROI), then runs the grid's
 * samples in the interpreter's order, in double, with the interpreter's
 * operations one for one (no reassociation), so the host agrees with it
 * bit for bit. A sample outside the image reads nothing (its weighted
 * corners are 0). Host: the result elements are split between the parts;
 * SIMT: a grid-stride loop, one element per thread at a time.
 * Assumes a verified node whose run-time shape checks have passed. */
#include "../ir/patch.h"
#include "jit.h"
#include "lower.h"
#include "simt.h"

typedef struct roi_k {
  ir_roi_params p;
  LLVMValueRef prod[4]; /* slots: a sample's weighted corners (double) */
  LLVMValueRef acc;     /* slot: the element's sum or max (double) */
} roi_k;

/* a < b ? b : a, as the interpreter's mx */
static LLVMValueRef mx(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return jit_sel(f, jit_fcmp(f, LLVMRealOLT, a, b), b, a);
}
static LLVMValueRef to_f64(jit_fn *f, ir_dtype dt, LLVMValueRef v) {
  return dt == IR_DT_F64 ? v : LLVMBuildFPExt(f->b, v, f->t_f64, "");
}
static LLVMValueRef ld64(jit_fn *f, int buf, LLVMValueRef i) {
  ir_dtype dt = f->node->in[buf]->type.dtype;
  return to_f64(f, dt, jit_load(f, dt, jit_in(f, buf), i));
}

/* Region k's start, bin and grid (i64) along one axis from its lo / hi
 * coordinates. */
static void roi_axis(jit_fn *f, const ir_roi_params *p, LLVMValueRef lo, LLVMValueRef hi,
                     int64_t out, LLVMValueRef *start, LLVMValueRef *bin, LLVMValueRef *grid) {
  LLVMValueRef off = jit_dc(f, p->aligned ? 0.5 : 0.0), scale = jit_dc(f, p->scale);
  *start = jit_fsub(f, jit_fmul(f, lo, scale), off);
  LLVMValueRef size = jit_fsub(f, jit_fsub(f, jit_fmul(f, hi, scale), off), *start);
  if (!p->aligned)
    size = jit_sel(f, jit_fcmp(f, LLVMRealOLT, size, jit_dc(f, 1.0)), jit_dc(f, 1.0), size);
  *bin = jit_fdiv(f, size, jit_dc(f, (double)out));
  LLVMValueRef g =
      p->sr > 0 ? jit_dc(f, (double)p->sr) : jit_intrinsic(f, "llvm.ceil", f->t_f64, bin, 1);
  g = jit_sel(f, jit_fcmp(f, LLVMRealOLT, g, jit_dc(f, 0.0)), jit_dc(f, 0.0), g);
  jit_fail_if(f, jit_fcmp(f, LLVMRealUGT, g, jit_dc(f, IR_ROI_MAX_GRID)), JIT_KERR_ROI);
  *grid = LLVMBuildFPToSI(f->b, g, f->t_i64, "");
}

/* A coordinate clamped as the interpreter's corners(): its low and high
 * pixel and the fraction toward the high one. */
static void clamp_axis(jit_fn *f, LLVMValueRef v, LLVMValueRef n, LLVMValueRef *lo,
                       LLVMValueRef *hi, LLVMValueRef *frac) {
  v = jit_sel(f, jit_fcmp(f, LLVMRealOLE, v, jit_dc(f, 0.0)), jit_dc(f, 0.0), v);
  LLVMValueRef l = LLVMBuildFPToSI(f->b, v, f->t_i64, ""),
               last = LLVMBuildSub(f->b, n, jit_i64(f, 1), "");
  LLVMValueRef edge = LLVMBuildICmp(f->b, LLVMIntSGE, l, last, "");
  *lo = LLVMBuildSelect(f->b, edge, last, l, "");
  *hi = LLVMBuildSelect(f->b, edge, last, LLVMBuildAdd(f->b, l, jit_i64(f, 1), ""), "");
  v = jit_sel(f, edge, LLVMBuildSIToFP(f->b, last, f->t_f64, ""), v);
  *frac = jit_fsub(f, v, LLVMBuildSIToFP(f->b, *lo, f->t_f64, ""));
}

static void sample(jit_fn *f, const roi_k *r, LLVMValueRef yy, LLVMValueRef xx, LLVMValueRef img,
                   LLVMValueRef H, LLVMValueRef W, LLVMValueRef C, LLVMValueRef c) {
  for (int q = 0; q < 4; q++)
    LLVMBuildStore(f->b, jit_dc(f, 0.0), r->prod[q]);
  LLVMValueRef one = jit_i64(f, 1);
  LLVMValueRef in = LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntSGE, H, one, ""),
                                 LLVMBuildICmp(f->b, LLVMIntSGE, W, one, ""), "");
  LLVMValueRef Hf = LLVMBuildSIToFP(f->b, H, f->t_f64, ""),
               Wf = LLVMBuildSIToFP(f->b, W, f->t_f64, "");
  in = LLVMBuildAnd(f->b, in, jit_fcmp(f, LLVMRealOGE, yy, jit_dc(f, -1.0)), "");
  in = LLVMBuildAnd(f->b, in, jit_fcmp(f, LLVMRealOLE, yy, Hf), "");
  in = LLVMBuildAnd(f->b, in, jit_fcmp(f, LLVMRealOGE, xx, jit_dc(f, -1.0)), "");
  in = LLVMBuildAnd(f->b, in, jit_fcmp(f, LLVMRealOLE, xx, Wf), "");
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, in);
  LLVMValueRef yl, yh, ly, xl, xh, lx;
  clamp_axis(f, yy, H, &yl, &yh, &ly);
  clamp_axis(f, xx, W, &xl, &xh, &lx);
  LLVMValueRef hy = jit_fsub(f, jit_dc(f, 1.0), ly), hx = jit_fsub(f, jit_dc(f, 1.0), lx);
  LLVMValueRef w[4] = {jit_fmul(f, hy, hx), jit_fmul(f, hy, lx), jit_fmul(f, ly, hx),
                       jit_fmul(f, ly, lx)};
  LLVMValueRef ys[4] = {yl, yl, yh, yh}, xs[4] = {xl, xh, xl, xh};
  for (int q = 0; q < 4; q++) {
    LLVMValueRef pix = jit_add(f, jit_mul(f, jit_add(f, img, ys[q]), W), xs[q]);
    LLVMValueRef v = ld64(f, 0, jit_add(f, jit_mul(f, pix, C), c));
    LLVMBuildStore(f->b, jit_fmul(f, w[q], v), r->prod[q]);
  }
  jit_simt_if_end(f, &ib);
}

static void roi_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const roi_k *r = ud;
  const ir_node *n = f->node;
  const ir_type *xt = &n->in[0]->type, *yt = &n->out[0]->type;
  LLVMValueRef yd[4], co[4];
  jit_shape(f, yt, yd);
  jit_simt_unravel(f, e, yd, 4, co);
  LLVMValueRef k = co[0], ph = co[1], pw = co[2], c = co[3];
  LLVMValueRef N = jit_dim(f, xt->dims[0]), H = jit_dim(f, xt->dims[1]);
  LLVMValueRef W = jit_dim(f, xt->dims[2]), C = jit_dim(f, xt->dims[3]);
  LLVMValueRef row = jit_mul(f, k, jit_i64(f, 5));
  LLVMValueRef bf = ld64(f, 1, row);
  /* truncated toward zero it must name an image: bf in (-1, N) with N >= 1
   * (with no image, -0.5 would truncate to image 0, which is not there) */
  LLVMValueRef okb =
      LLVMBuildAnd(f->b, jit_fcmp(f, LLVMRealOGT, bf, jit_dc(f, -1.0)),
                   jit_fcmp(f, LLVMRealOLT, bf, LLVMBuildSIToFP(f->b, N, f->t_f64, "")), "");
  okb = LLVMBuildAnd(f->b, okb, LLVMBuildICmp(f->b, LLVMIntSGT, N, jit_i64(f, 0), ""), "");
  jit_fail_if(f, LLVMBuildNot(f->b, okb, ""), JIT_KERR_INDEX);
  LLVMValueRef b = LLVMBuildFPToSI(f->b, bf, f->t_i64, "");
  LLVMValueRef sy, by, gy, sx, bx, gx;
  roi_axis(f, &r->p, ld64(f, 1, jit_add(f, row, jit_i64(f, 2))),
           ld64(f, 1, jit_add(f, row, jit_i64(f, 4))), r->p.oh, &sy, &by, &gy);
  roi_axis(f, &r->p, ld64(f, 1, jit_add(f, row, jit_i64(f, 1))),
           ld64(f, 1, jit_add(f, row, jit_i64(f, 3))), r->p.ow, &sx, &bx, &gx);
  LLVMValueRef img = jit_mul(f, b, H), zero = jit_i64(f, 0);
  LLVMBuildStore(f->b, jit_dc(f, 0.0), r->acc);
  LLVMValueRef gyf = LLVMBuildSIToFP(f->b, gy, f->t_f64, ""),
               gxf = LLVMBuildSIToFP(f->b, gx, f->t_f64, "");
  LLVMValueRef y0 = jit_fadd(f, sy, jit_fmul(f, LLVMBuildSIToFP(f->b, ph, f->t_f64, ""), by));
  LLVMValueRef x0 = jit_fadd(f, sx, jit_fmul(f, LLVMBuildSIToFP(f->b, pw, f->t_f64, ""), bx));
  jit_loop IY, IX;
  LLVMValueRef iy = jit_loop_begin(f, &IY, zero, gy, "iy");
  LLVMValueRef t = jit_fadd(f, LLVMBuildSIToFP(f->b, iy, f->t_f64, ""), jit_dc(f, 0.5));
  LLVMValueRef yy = jit_fadd(f, y0, jit_fdiv(f, jit_fmul(f, t, by), gyf));
  LLVMValueRef ix = jit_loop_begin(f, &IX, zero, gx, "ix");
  t = jit_fadd(f, LLVMBuildSIToFP(f->b, ix, f->t_f64, ""), jit_dc(f, 0.5));
  LLVMValueRef xx = jit_fadd(f, x0, jit_fdiv(f, jit_fmul(f, t, bx), gxf));
  sample(f, r, yy, xx, img, H, W, C, c);
  LLVMValueRef p[4];
  for (int q = 0; q < 4; q++)
    p[q] = LLVMBuildLoad2(f->b, f->t_f64, r->prod[q], "");
  LLVMValueRef acc = LLVMBuildLoad2(f->b, f->t_f64, r->acc, "");
  if (r->p.max) {
    LLVMValueRef s = mx(f, mx(f, mx(f, p[0], p[1]), p[2]), p[3]);
    LLVMValueRef first = LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, iy, zero, ""),
                                      LLVMBuildICmp(f->b, LLVMIntEQ, ix, zero, ""), "");
    acc = jit_sel(f, first, s, mx(f, acc, s));
  } else {
    acc = jit_fadd(f, acc, jit_fadd(f, jit_fadd(f, jit_fadd(f, p[0], p[1]), p[2]), p[3]));
  }
  LLVMBuildStore(f->b, acc, r->acc);
  jit_loop_end(f, &IX);
  jit_loop_end(f, &IY);
  LLVMValueRef res = LLVMBuildLoad2(f->b, f->t_f64, r->acc, "");
  if (!r->p.max) {
    LLVMValueRef cnt = LLVMBuildMul(f->b, gy, gx, "");
    cnt = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, cnt, jit_i64(f, 1), ""), cnt,
                          jit_i64(f, 1), "");
    res = jit_fdiv(f, res, LLVMBuildSIToFP(f->b, cnt, f->t_f64, ""));
  }
  if (yt->dtype != IR_DT_F64)
    res = LLVMBuildFPTrunc(f->b, res, jit_type(f, yt->dtype), "");
  jit_store(f, yt->dtype, jit_out(f, 0), e, res);
}

static int roi_setup(jit_fn *f, roi_k *r) {
  const ir_node *n = f->node;
  if (!ir_roi_params_read(n, &r->p) || n->in[0]->type.rank != 4 || n->in[1]->type.rank != 2 ||
      n->out[0]->type.rank != 4)
    return jit_fn_error(f, "mo.roi_align: malformed attributes or ranks");
  for (int q = 0; q < 4; q++)
    r->prod[q] = jit_alloca(f, f->t_f64, "prod");
  r->acc = jit_alloca(f, f->t_f64, "acc");
  return 0;
}

int jit_lower_roi_align(jit_fn *f) {
  roi_k r;
  return roi_setup(f, &r) != 0 ? -1 : jit_each_element(f, roi_elem, &r);
}

int jit_simt_lower_roi_align(jit_simt_fn *sf) {
  roi_k r;
  return roi_setup(&sf->f, &r) != 0 ? -1 : jit_simt_each_element(sf, roi_elem, &r);
}
