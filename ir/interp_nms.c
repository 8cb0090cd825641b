/* interp_nms.c - the reference interpreter's mo.non_maximum_suppression
 * (ops.def states the semantics; ONNX NonMaxSuppression's).
 *
 * Per batch and class, the boxes are taken in decreasing score order
 * without sorting: the next one is the best box ranked after the last one
 * taken (a lower score, or the same score and a higher index), found by a
 * scan. A taken box is selected unless it overlaps a box already selected
 * for the class by more than the IoU threshold; the selected rows go
 * straight into the result, which has room for every score. jit/nms.c
 * emits the same steps, so both agree bit for bit. */
#include <math.h>

#include "interp_impl.h"

/* Box i of batch b as (ymin, xmin, ymax, xmax). */
static void box(const ir_tensor *bx, int64_t b, int64_t i, bool center, double c[4]) {
  int64_t e = (b * bx->shape[1] + i) * 4;
  double v0 = ir_ref_ld_f(bx, e), v1 = ir_ref_ld_f(bx, e + 1);
  double v2 = ir_ref_ld_f(bx, e + 2), v3 = ir_ref_ld_f(bx, e + 3);
  if (center) { /* x_center, y_center, width, height */
    c[0] = v1 - v3 / 2;
    c[1] = v0 - v2 / 2;
    c[2] = v1 + v3 / 2;
    c[3] = v0 + v2 / 2;
  } else {
    c[0] = fmin(v0, v2);
    c[1] = fmin(v1, v3);
    c[2] = fmax(v0, v2);
    c[3] = fmax(v1, v3);
  }
}

bool ir_ref_nms_overlaps(const double a[4], const double b[4], double threshold) {
  double ih = fmin(a[2], b[2]) - fmax(a[0], b[0]), iw = fmin(a[3], b[3]) - fmax(a[1], b[1]);
  double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (!(ih > 0 && iw > 0 && area_a > 0 && area_b > 0)) return false;
  double inter = ih * iw, uni = area_a + area_b - inter;
  return uni > 0 && inter / uni > threshold;
}

int64_t ir_ref_nms(const ir_node *n, const ir_tensor *boxes, const ir_tensor *scores,
                   const ir_tensor *limit, const ir_tensor *iou, const ir_tensor *score_min,
                   ir_tensor *y) {
  bool center = ir_node_attr_int(n, "center_point_box", 0) == 1;
  int64_t nb = scores->shape[0], nc = scores->shape[1], nbox = scores->shape[2];
  int64_t max_per_class = ir_ref_ld_i(limit, 0), count = 0;
  double iou_max = ir_ref_ld_f(iou, 0);
  double floor = score_min ? ir_ref_ld_f(score_min, 0) : -INFINITY;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t c = 0; c < nc && max_per_class > 0; c++) {
      const int64_t start = count, row0 = (b * nc + c) * nbox;
      double last_s = 0;
      int64_t last_i = -1;
      for (int64_t k = 0; k < nbox && count - start < max_per_class; k++) {
        int64_t best = -1;
        double best_s = 0;
        for (int64_t i = 0; i < nbox; i++) {
          double s = ir_ref_ld_f(scores, row0 + i);
          bool eligible = score_min ? s > floor : !isnan(s);
          bool after = last_i < 0 || s < last_s || (s == last_s && i > last_i);
          if (eligible && after && (best < 0 || s > best_s)) {
            best = i;
            best_s = s;
          }
        }
        if (best < 0) break;
        last_s = best_s;
        last_i = best;
        double cand[4], sel[4];
        box(boxes, b, best, center, cand);
        bool keep = true;
        for (int64_t r = start; r < count && keep; r++) {
          box(boxes, b, ir_ref_ld_i(y, r * 3 + 2), center, sel);
          keep = !ir_ref_nms_overlaps(cand, sel, iou_max);
        }
        if (!keep) continue;
        ir_ref_st_i(y, count * 3, b);
        ir_ref_st_i(y, count * 3 + 1, c);
        ir_ref_st_i(y, count * 3 + 2, best);
        count++;
      }
    }
  return count;
}
