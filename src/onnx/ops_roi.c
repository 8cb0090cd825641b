/* ops_roi.c - ONNX RoiAlign onto mo.roi_align, NonMaxSuppression onto
 * mo.non_maximum_suppression.
 *
 * ONNX's X is NCHW with the regions' corners [K, 4] and their batch indices
 * [K] (si64) apart; kiln's op is MAX's: NHWC with rois [K, 5] (batch index
 * first, in the image's dtype). The mapper permutes X to NHWC, casts the
 * indices to X's dtype and concatenates them in front of the corners, and
 * permutes the result [K, oh, ow, C] back to [K, C, oh, ow].
 * coordinate_transformation_mode "half_pixel" (opset 16's default) is
 * aligned = true, "output_half_pixel" (opset 10's only behaviour) false;
 * mode, output_height / _width, sampling_ratio and spatial_scale pass on
 * (ONNX's defaults: avg, 1, 1, 0, 1.0). The indices are exact in f32 up to
 * 2^24 images.
 * NonMaxSuppression's optional inputs (often [1] tensors) become rank-0
 * operands; an absent box limit is 0 (no output, as ONNX says), an absent
 * IoU threshold 0, an absent score threshold no operand. */
#include <string.h>

#include "ox.h"

int ox_op_RoiAlign(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   int nout) {
  BEGIN;
  (void)nout;
  kiln_value *img = IN(0), *rois = img ? IN(1) : NULL, *bi = rois ? IN(2) : NULL;
  if (!bi) return rc;
  ir_dtype dt = ox_type(img)->dtype;
  if (ox_type(img)->rank != 4)
    return ox_unsupported(x, n, "RoiAlign on a rank-%d X (needs NCHW)", ox_type(img)->rank);
  char cbuf[32], mbuf[16];
  const char *ctm = ox_attr_string(n, "coordinate_transformation_mode",
                                   x->opset >= 16 ? "half_pixel" : "output_half_pixel", cbuf,
                                   sizeof cbuf);
  if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
    return ox_unsupported(x, n, "RoiAlign coordinate_transformation_mode '%s'", ctm);
  const char *mode = ox_attr_string(n, "mode", "avg", mbuf, sizeof mbuf);
  kiln_value *b = ox_op(x, "cast", &bi, 1, NULL, "{dtype = %s}", ir_dtype_name(dt));
  kiln_value *b2 = b ? ox_op(x, "unsqueeze", &b, 1, NULL, "{axis = 1}") : NULL;
  kiln_value *r5 = b2 ? ox_op(x, "concat", (kiln_value *[]){b2, rois}, 2, NULL, "{axis = 1}") : NULL;
  kiln_value *xn = r5 ? ox_op(x, "permute", &img, 1, NULL, "{dims = [0, 2, 3, 1]}") : NULL;
  kiln_value *y =
      xn ? ox_op(x, "roi_align", (kiln_value *[]){xn, r5}, 2, NULL,
                 "{aligned = %s, mode = \"%s\", output_height = %lld, output_width = %lld, "
                 "sampling_ratio = %lld, spatial_scale = %.17g}",
                 strcmp(ctm, "half_pixel") == 0 ? "true" : "false", mode,
                 (long long)ox_attr_int(n, "output_height", 1),
                 (long long)ox_attr_int(n, "output_width", 1),
                 (long long)ox_attr_int(n, "sampling_ratio", 0),
                 ox_attr_float(n, "spatial_scale", 1.0))
         : NULL;
  if (!y || !(out[0]->v = ox_op(x, "permute", &y, 1, NULL, "{dims = [0, 3, 1, 2]}")))
    return FAILED();
  return 0;
}

/* Optional input i as a rank-0 value, or dflt (a constant of dt) when absent. */
static kiln_value *scalar_in(ox *x, ox_val **in, int nin, int i, ir_dtype dt, double dflt,
                             int *rc) {
  if (i >= nin || !in[i]) return ox_scalar(x, dt, dflt);
  kiln_value *v = ox_in(x, in, nin, i, rc);
  if (!v || ox_type(v)->rank == 0) return v;
  return ox_reshape(x, v, 0, NULL);
}

int ox_op_NonMaxSuppression(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                            ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *boxes = IN(0), *scores = boxes ? IN(1) : NULL;
  if (!scores) return rc;
  ir_dtype dt = ox_type(boxes)->dtype;
  kiln_value *ops[5] = {boxes, scores, scalar_in(x, in, nin, 2, IR_DT_SI64, 0, &rc), NULL, NULL};
  if (!ops[2] || !(ops[3] = scalar_in(x, in, nin, 3, dt, 0, &rc))) return rc ? rc : FAILED();
  int nops = 4;
  if (nin > 4 && in[4] && !(ops[nops++] = scalar_in(x, in, nin, 4, dt, 0, &rc)))
    return rc ? rc : FAILED();
  char ty[256];
  if (!ox_count_rows_type(x, 3, ty, sizeof ty)) return -1;
  if (!(out[0]->v = ox_op(x, "non_maximum_suppression", ops, nops, ty,
                          "{center_point_box = %lld}",
                          (long long)ox_attr_int(n, "center_point_box", 0))))
    return FAILED();
  return 0;
}
