/* ops_gridsample.c - ONNX GridSample (opset 16: 4-D input, modes bilinear
 * and nearest with padding zeros, border and reflection; bicubic with zeros
 * padding, its 4 x 4 taps weighted by the cubic convolution of A = -0.75).
 * Each output point's source coordinate is denormalized from the
 * grid (align_corners as ONNX defines it), the corner pixels are fetched by
 * one gather_elements each over the flattened image and weighted:
 *   zeros:      a corner outside the image contributes 0;
 *   border:     the coordinate is clamped into the image first (corners too);
 *   reflection: the coordinate is reflected about the image's bounds (0 and
 *               len - 1 with align_corners, else -0.5 and len - 0.5) until it
 *               lies inside, as ONNX's reference does; corners are clamped
 *               (a corner that reflection would move has weight 0 or
 *               reflects onto the clamped pixel).
 * nearest rounds half to even (numpy's rint, as ONNX's reference). The
 * image's H and W must be known at import. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

typedef struct gs {
  ox *x;
  ir_dtype dt;
  const ir_dim *n, *c, *ho, *wo;
  int64_t h, w;
  kiln_value *flat;   /* the image as [N, C, H * W] */
  bool zeros, reflect, align;
} gs;

/* A scalar v of the image's dtype. */
static kiln_value *fk(gs *g, double v) { return ox_scalar(g->x, g->dt, v); }

/* Grid component `comp` (0: x, 1: y) as [N, 1, Ho, Wo]. */
static kiln_value *component(gs *g, kiln_value *grid, int comp) {
  ox *x = g->x;
  kiln_value *s = ox_op(x, "slice_tensor", &grid, 1, NULL, "{start = [0, 0, 0, %d], step = [1, 1, "
                        "1, 1], stop = [%lld, %lld, %lld, %d]}", comp, (long long)INT64_MAX,
                        (long long)INT64_MAX, (long long)INT64_MAX, comp + 1);
  const ir_dim *dims[4] = {g->n, ir_dim_const(x->ir->arena, 1), g->ho, g->wo};
  return s ? ox_reshape(x, s, 4, dims) : NULL;
}

/* v denormalized onto an axis of `len` pixels. */
static kiln_value *denormalize(gs *g, kiln_value *v, int64_t len, bool align) {
  ox *x = g->x;
  kiln_value *one = fk(g, 1), *half = fk(g, 0.5);
  kiln_value *p = one && half ? OP2("add", v, one) : NULL;
  if (align) { /* (v + 1) / 2 * (len - 1) */
    kiln_value *k = fk(g, 0.5 * (double)(len - 1));
    return p && k ? OP2("mul", p, k) : NULL;
  }
  kiln_value *k = fk(g, (double)len); /* ((v + 1) * len - 1) / 2 */
  if (p && k && (p = OP2("mul", p, k)) && (p = OP2("sub", p, one))) return OP2("mul", p, half);
  return NULL;
}

static kiln_value *clamp(gs *g, kiln_value *v, int64_t len) {
  ox *x = g->x;
  kiln_value *lo = fk(g, 0), *hi = fk(g, (double)(len - 1));
  return lo && hi && (v = OP2("max", v, lo)) ? OP2("min", v, hi) : NULL;
}

/* v reflected into [lo, hi] (ONNX's _gs_reflect, elementwise). */
static kiln_value *reflect(gs *g, kiln_value *v, int64_t len) {
  ox *x = g->x;
  double lo = g->align ? 0 : -0.5, hi = g->align ? (double)(len - 1) : (double)len - 0.5;
  kiln_value *klo = fk(g, lo), *khi = fk(g, hi), *rng = fk(g, hi - lo), *two = fk(g, 2);
  kiln_value *zero = fk(g, 0);
  if (!klo || !khi || !rng || !two || !zero) return NULL;
  kiln_value *below = OP2("greater", klo, v), *above = below ? OP2("greater", v, khi) : NULL;
  kiln_value *dlo = above ? OP2("sub", klo, v) : NULL, *dhi = dlo ? OP2("sub", v, khi) : NULL;
  kiln_value *dx = dhi ? ox_op(x, "where", (kiln_value *[]){below, dlo, dhi}, 3, NULL, NULL)
                       : NULL;
  kiln_value *q = dx ? OP2("div", dx, rng) : NULL, *nr = q ? OP1("floor", q) : NULL;
  kiln_value *r = nr ? OP2("mul", nr, rng) : NULL, *par = NULL, *even = NULL;
  if (r && (r = OP2("sub", dx, r)) && (par = OP2("mod", nr, two))) even = OP2("equal", par, zero);
  kiln_value *from_lo = even ? OP2("add", klo, r) : NULL;
  kiln_value *from_hi = from_lo ? OP2("sub", khi, r) : NULL;
  if (!from_hi) return NULL;
  kiln_value *rb = ox_op(x, "where", (kiln_value *[]){even, from_lo, from_hi}, 3, NULL, NULL);
  kiln_value *ra = ox_op(x, "where", (kiln_value *[]){even, from_hi, from_lo}, 3, NULL, NULL);
  kiln_value *in = ra ? ox_op(x, "where", (kiln_value *[]){above, ra, v}, 3, NULL, NULL) : NULL;
  return rb && in ? ox_op(x, "where", (kiln_value *[]){below, rb, in}, 3, NULL, NULL) : NULL;
}

/* The pixels at integral coordinates (xi, yi) [N, 1, Ho, Wo] (floats),
 * times weight w (and zero outside the image in zeros mode). */
static kiln_value *corner(gs *g, kiln_value *xi, kiln_value *yi, kiln_value *w) {
  ox *x = g->x;
  if (g->zeros) { /* w * (0 <= xi <= W - 1) * (0 <= yi <= H - 1) */
    kiln_value *lo = fk(g, 0), *wx = fk(g, (double)(g->w - 1)), *hy = fk(g, (double)(g->h - 1));
    kiln_value *in[4] = {lo ? OP2("greater_equal", xi, lo) : NULL,
                         wx ? OP2("greater_equal", wx, xi) : NULL,
                         lo ? OP2("greater_equal", yi, lo) : NULL,
                         hy ? OP2("greater_equal", hy, yi) : NULL};
    kiln_value *m = in[0] && in[1] ? OP2("logical_and", in[0], in[1]) : NULL;
    if (m && in[2]) m = OP2("logical_and", m, in[2]);
    if (m && in[3]) m = OP2("logical_and", m, in[3]);
    kiln_value *z = m ? fk(g, 0) : NULL;
    if (!z || !(w = ox_op(x, "where", (kiln_value *[]){m, w, z}, 3, NULL, NULL))) return NULL;
  }
  kiln_value *cx = clamp(g, xi, g->w), *cy = clamp(g, yi, g->h), *wk = fk(g, (double)g->w);
  kiln_value *f = cx && cy && wk ? OP2("mul", cy, wk) : NULL;
  if (f) f = OP2("add", f, cx);
  if (f) f = ox_op(x, "cast", &f, 1, NULL, "{dtype = si64}");
  const ir_dim *hw = ir_dim_mul(x->ir->arena, g->ho, g->wo);
  const ir_dim *d3[3] = {g->n, ir_dim_const(x->ir->arena, 1), hw}, *full[3] = {g->n, g->c, hw};
  const ir_dim *d4[4] = {g->n, g->c, g->ho, g->wo};
  char ty[512];
  if (f) f = ox_reshape(x, f, 3, d3);
  if (f)
    f = ox_op(x, "broadcast_to", &f, 1, ox_type_text(ty, sizeof ty, IR_DT_SI64, 3, full), NULL);
  kiln_value *p = f ? ox_op(x, "gather_elements", (kiln_value *[]){g->flat, f}, 2, NULL,
                            "{axis = 2}") : NULL;
  if (p) p = ox_reshape(x, p, 4, d4);
  return p ? OP2("mul", p, w) : NULL;
}

/* The cubic convolution weights (A = -0.75) of the 4 taps floor(v) - 1 ..
 * floor(v) + 2 for fraction t = v - floor(v), as ONNX's reference. */
static bool cubic_weights(gs *g, kiln_value *t, kiln_value **w) {
  ox *x = g->x;
  const double a = -0.75;
  kiln_value *one = fk(g, 1), *two = fk(g, 2);
  kiln_value *d[4] = {one ? OP2("add", t, one) : NULL, t, one ? OP2("sub", one, t) : NULL,
                      two ? OP2("sub", two, t) : NULL};
  for (int k = 0; k < 4; k++) {
    if (!d[k]) return false;
    bool outer = k == 0 || k == 3; /* distance in [1, 2]: a d^3 - 5a d^2 + 8a d - 4a */
    double c3 = outer ? a : a + 2, c2 = outer ? -5 * a : -(a + 3), c1 = outer ? 8 * a : 0;
    double c0 = outer ? -4 * a : 1;
    kiln_value *k3 = fk(g, c3), *k2 = fk(g, c2), *k1 = fk(g, c1), *k0 = fk(g, c0), *p;
    if (!k3 || !k2 || !k1 || !k0 || !(p = OP2("mul", d[k], k3)) || !(p = OP2("add", p, k2)) ||
        !(p = OP2("mul", p, d[k])) || !(p = OP2("add", p, k1)) || !(p = OP2("mul", p, d[k])) ||
        !(w[k] = OP2("add", p, k0)))
      return false;
  }
  return true;
}

/* Bicubic: the 16 taps around (px, py), zero outside the image. */
static kiln_value *bicubic(gs *g, kiln_value *px, kiln_value *py) {
  ox *x = g->x;
  kiln_value *fx = OP1("floor", px), *fy = fx ? OP1("floor", py) : NULL, *one = fk(g, 1);
  kiln_value *tx = fy ? OP2("sub", px, fx) : NULL, *ty = tx ? OP2("sub", py, fy) : NULL;
  kiln_value *wx[4], *wy[4], *y = NULL;
  if (!ty || !one || !cubic_weights(g, tx, wx) || !cubic_weights(g, ty, wy)) return NULL;
  kiln_value *xs[4], *ys[4];
  if (!(xs[0] = OP2("sub", fx, one)) || !(ys[0] = OP2("sub", fy, one))) return NULL;
  for (int k = 1; k < 4; k++)
    if (!(xs[k] = OP2("add", xs[k - 1], one)) || !(ys[k] = OP2("add", ys[k - 1], one)))
      return NULL;
  for (int k = 0; k < 16; k++) {
    kiln_value *w = OP2("mul", wx[k & 3], wy[k >> 2]);
    kiln_value *c = w ? corner(g, xs[k & 3], ys[k >> 2], w) : NULL;
    if (!(y = !c ? NULL : y ? OP2("add", y, c) : c)) return NULL;
  }
  return y;
}

int ox_op_GridSample(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     int nout) {
  BEGIN;
  kiln_value *a = IN(0), *grid = a ? IN(1) : NULL;
  if (!grid) return rc;
  char mbuf[32], pbuf[32];
  const char *mode = ox_attr_string(n, "mode", "bilinear", mbuf, sizeof mbuf);
  const char *pad = ox_attr_string(n, "padding_mode", "zeros", pbuf, sizeof pbuf);
  bool align = ox_attr_int(n, "align_corners", 0) != 0;
  bool nearest = strcmp(mode, "nearest") == 0;
  bool cubic = strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0;
  if (!nearest && !cubic && strcmp(mode, "bilinear") != 0 && strcmp(mode, "linear") != 0)
    return ox_unsupported(x, n, "mode \"%s\" (bilinear, nearest and bicubic are supported)",
                          mode);
  if (cubic && strcmp(pad, "zeros") != 0)
    return ox_unsupported(x, n, "bicubic with padding_mode \"%s\" (zeros is supported)", pad);
  if (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 && strcmp(pad, "reflection") != 0)
    return ox_unsupported(x, n, "padding_mode \"%s\" (zeros, border and reflection are "
                          "supported)", pad);
  const ir_type *t = ox_type(a), *gt = ox_type(grid);
  int64_t two;
  if (t->rank != 4 || gt->rank != 4 || !ir_dim_is_const(gt->dims[3], &two) || two != 2)
    return ox_unsupported(x, n, "X of rank %d and grid of rank %d: 4-D X and an [N, Ho, Wo, 2] "
                          "grid are supported", t->rank, gt->rank);
  if (!ir_dtype_is_float(t->dtype) || gt->dtype != t->dtype)
    return ox_unsupported(x, n, "X %s and grid %s (one float dtype)", ir_dtype_name(t->dtype),
                          ir_dtype_name(gt->dtype));
  gs g = {.x = x, .dt = t->dtype, .n = t->dims[0], .c = t->dims[1], .ho = gt->dims[1],
          .wo = gt->dims[2], .zeros = strcmp(pad, "zeros") == 0,
          .reflect = strcmp(pad, "reflection") == 0, .align = align};
  if (!ir_dim_is_const(t->dims[2], &g.h) || !ir_dim_is_const(t->dims[3], &g.w))
    return ox_unsupported(x, n, "an image whose H and W are not known at import");
  const ir_dim *hw = ir_dim_mul(x->ir->arena, t->dims[2], t->dims[3]);
  const ir_dim *f3[3] = {g.n, g.c, hw};
  if (!(g.flat = ox_reshape(x, a, 3, f3))) return FAILED();
  kiln_value *px = component(&g, grid, 0), *py = px ? component(&g, grid, 1) : NULL;
  if (py) px = denormalize(&g, px, g.w, align);
  if (px) py = denormalize(&g, py, g.h, align);
  if (py && g.reflect && (px = reflect(&g, px, g.w))) py = reflect(&g, py, g.h);
  if (py && !g.zeros && (px = clamp(&g, px, g.w))) py = clamp(&g, py, g.h);
  if (!py) return FAILED();
  kiln_value *y = NULL;
  if (cubic) {
    y = bicubic(&g, px, py);
  } else if (nearest) {
    kiln_value *one = fk(&g, 1), *rx = OP1("round", px), *ry = rx ? OP1("round", py) : NULL;
    y = one && ry ? corner(&g, rx, ry, one) : NULL;
  } else {
    kiln_value *x0 = OP1("floor", px), *y0 = x0 ? OP1("floor", py) : NULL, *one = fk(&g, 1);
    kiln_value *x1 = y0 && one ? OP2("add", x0, one) : NULL, *y1 = x1 ? OP2("add", y0, one) : NULL;
    kiln_value *wx1 = y1 ? OP2("sub", px, x0) : NULL, *wy1 = wx1 ? OP2("sub", py, y0) : NULL;
    kiln_value *wx0 = wy1 ? OP2("sub", one, wx1) : NULL, *wy0 = wx0 ? OP2("sub", one, wy1) : NULL;
    kiln_value *xs[2] = {x0, x1}, *ys[2] = {y0, y1}, *wxs[2] = {wx0, wx1}, *wys[2] = {wy0, wy1};
    for (int k = 0; wy0 && k < 4; k++) {
      kiln_value *w = OP2("mul", wxs[k & 1], wys[k >> 1]);
      kiln_value *c = w ? corner(&g, xs[k & 1], ys[k >> 1], w) : NULL;
      y = !c ? NULL : y ? OP2("add", y, c) : c;
      if (!y) break;
    }
  }
  if (!y) return FAILED();
  out[0]->v = y;
  return 0;
}
