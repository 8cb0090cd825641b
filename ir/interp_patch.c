/* interp_patch.c - the reference interpreter's routines for the image-patch
 * classes: mo.fold (col2im) and mo.roi_align (ops.def documents them).
 *
 * Written as a gather over the result: element (n, c, h, w) sums, in the
 * order (i, j) ascending, the taps x[n, (c * kh + i) * kw + j, lh * Lw + lw]
 * whose block (lh, lw) covers it (h + ph - i * dh = lh * sh with lh in
 * [0, Lh), likewise w). f32 sums in float, f64 in double, ints wrap: the
 * kernels add in the same order and agree bit for bit.
 * roi_align follows ONNX RoiAlign's sampling in double (ops.def), one
 * result element at a time, in the order the kernels use: samples row by
 * row, each sample's corners in the order (low, low), (low, high), (high,
 * low), (high, high).
 * Assumes a verified node; re-checks the run-time shapes it indexes with. */
#include "interp_impl.h"
#include "patch.h"

#include <inttypes.h>
#include <math.h>

/* The block along one axis that tap t covers at position o, or -1. */
static int64_t block_of(const ir_fold_geom *g, int ax, int64_t o, int64_t t) {
  int64_t v = o + g->pad[ax] - t * g->dil[ax];
  if (v < 0 || v % g->st[ax] != 0)
    return -1;
  v /= g->st[ax];
  return v < g->blocks[ax] ? v : -1;
}

int ir_ref_fold(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  ir_fold_geom g;
  if (!ir_fold_geom_read(n, &g))
    return ir_ref_fail(msg, msglen, "malformed attributes");
  int64_t kk = g.k[0] * g.k[1];
  if (x->rank != 3 || y->rank != 4 || y->dtype != x->dtype || y->shape[0] != x->shape[0] ||
      !ir_fold_geom_size(&g, y->shape[2], y->shape[3]) || x->shape[1] != y->shape[1] * kk ||
      x->shape[2] != g.blocks[0] * g.blocks[1])
    return ir_ref_fail(msg, msglen, "the run-time shapes of the operand and result do not fit");
  int64_t C = y->shape[1], H = g.out[0], W = g.out[1], L = x->shape[2];
  int64_t total = ir_tensor_numel(y);
  bool f32 = x->dtype == IR_DT_F32, f64 = x->dtype == IR_DT_F64;
  if (!f32 && !f64 && !ir_ref_is_ic(x->dtype))
    return ir_ref_fail(msg, msglen, "dtype %s is not supported", ir_dtype_name(x->dtype));
  for (int64_t e = 0; e < total; e++) {
    int64_t w = e % W, h = e / W % H, c = e / (W * H) % C, b = e / (W * H * C);
    float sf = 0;
    double sd = 0;
    uint64_t si = 0;
    for (int64_t i = 0; i < g.k[0]; i++) {
      int64_t lh = block_of(&g, 0, h, i);
      if (lh < 0)
        continue;
      for (int64_t j = 0; j < g.k[1]; j++) {
        int64_t lw = block_of(&g, 1, w, j);
        if (lw < 0)
          continue;
        int64_t xi = (b * C * kk + (c * g.k[0] + i) * g.k[1] + j) * L + lh * g.blocks[1] + lw;
        if (f32)
          sf += ((const float *)x->data)[xi];
        else if (f64)
          sd += ((const double *)x->data)[xi];
        else
          si += (uint64_t)ir_ref_ld_i(x, xi);
      }
    }
    if (f32)
      ((float *)y->data)[e] = sf;
    else if (f64)
      ((double *)y->data)[e] = sd;
    else
      ir_ref_st_i(y, e, ir_ref_wrap_i(y->dtype, si));
  }
  return 0;
}

/* ---- roi_align ---- */

/* a < b ? b : a (std::max's rule: a NaN first operand stays) */
static double mx(double a, double b) { return a < b ? b : a; }

/* The region's start, bin size and grid along one axis. */
typedef struct roi_axis {
  double start, bin;
  int64_t grid;
} roi_axis;

static int roi_axis_of(const ir_roi_params *p, double lo, double hi, int64_t out, roi_axis *a) {
  double off = p->aligned ? 0.5 : 0.0;
  a->start = lo * p->scale - off;
  double size = hi * p->scale - off - a->start;
  if (!p->aligned)
    size = size < 1.0 ? 1.0 : size;
  a->bin = size / (double)out;
  double g = p->sr > 0 ? (double)p->sr : ceil(a->bin);
  g = g < 0 ? 0 : g;
  if (!(g <= IR_ROI_MAX_GRID))
    return -1; /* NaN too */
  a->grid = (int64_t)g;
  return 0;
}

/* Sample (y, x) of image b, channel c: the bilinear weights and corners;
 * false when outside (all weights 0). */
static bool corners(double y, double x, int64_t H, int64_t W, double w[4], int64_t pos[4]) {
  if (H < 1 || W < 1 || !(y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W))
    return false;
  if (y <= 0)
    y = 0;
  if (x <= 0)
    x = 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= H - 1) {
    yh = yl = H - 1;
    y = (double)yl;
  } else {
    yh = yl + 1;
  }
  if (xl >= W - 1) {
    xh = xl = W - 1;
    x = (double)xl;
  } else {
    xh = xl + 1;
  }
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
  w[0] = hy * hx;
  w[1] = hy * lx;
  w[2] = ly * hx;
  w[3] = ly * lx;
  pos[0] = yl * W + xl;
  pos[1] = yl * W + xh;
  pos[2] = yh * W + xl;
  pos[3] = yh * W + xh;
  return true;
}

int ir_ref_roi_align(const ir_node *n, const ir_tensor *x, const ir_tensor *rois, ir_tensor *y,
                     char *msg, size_t msglen) {
  ir_roi_params p;
  if (!ir_roi_params_read(n, &p))
    return ir_ref_fail(msg, msglen, "malformed attributes");
  if (x->rank != 4 || rois->rank != 2 || y->rank != 4 || rois->shape[1] != 5 ||
      y->shape[0] != rois->shape[0] || y->shape[1] != p.oh || y->shape[2] != p.ow ||
      y->shape[3] != x->shape[3] || !ir_ref_is_fc(x->dtype) || rois->dtype != x->dtype ||
      y->dtype != x->dtype)
    return ir_ref_fail(msg, msglen, "the run-time shapes of the operands and result do not fit");
  int64_t N = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
  int64_t total = ir_tensor_numel(y);
  for (int64_t e = 0; e < total; e++) {
    int64_t c = e % C, pw = e / C % p.ow, ph = e / (C * p.ow) % p.oh, k = e / (C * p.ow * p.oh);
    double bf = ir_ref_ld_f(rois, k * 5);
    /* truncated toward zero, it must name an image: [0, N) (none when N is 0) */
    int64_t b = bf > -1.0 && bf < (double)N ? (int64_t)bf : -1;
    if (b < 0 || b >= N)
      return ir_ref_fail(msg, msglen,
                         "the batch index %g of region %" PRId64 " is out of range for "
                         "%" PRId64 " images",
                         bf, k, N);
    roi_axis ay, ax;
    if (roi_axis_of(&p, ir_ref_ld_f(rois, k * 5 + 2), ir_ref_ld_f(rois, k * 5 + 4), p.oh, &ay) ||
        roi_axis_of(&p, ir_ref_ld_f(rois, k * 5 + 1), ir_ref_ld_f(rois, k * 5 + 3), p.ow, &ax))
      return ir_ref_fail(msg, msglen,
                         "region %" PRId64 "'s sampling grid is not finite or above "
                         "%d per axis",
                         k, IR_ROI_MAX_GRID);
    double acc = 0;
    bool first = true;
    for (int64_t iy = 0; iy < ay.grid; iy++) {
      double yy = ay.start + (double)ph * ay.bin + ((double)iy + 0.5) * ay.bin / (double)ay.grid;
      for (int64_t ix = 0; ix < ax.grid; ix++) {
        double xx = ax.start + (double)pw * ax.bin + ((double)ix + 0.5) * ax.bin / (double)ax.grid;
        double w[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
        int64_t pos[4];
        if (corners(yy, xx, H, W, w, pos))
          for (int q = 0; q < 4; q++)
            v[q] = ir_ref_ld_f(x, (b * H * W + pos[q]) * C + c);
        if (p.max) {
          double s = mx(mx(mx(w[0] * v[0], w[1] * v[1]), w[2] * v[2]), w[3] * v[3]);
          acc = first ? s : mx(acc, s);
          first = false;
        } else {
          acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
        }
      }
    }
    int64_t cnt = ay.grid * ax.grid;
    ir_ref_st_f(y, e, p.max ? acc : acc / (double)(cnt > 1 ? cnt : 1));
  }
  return 0;
}
