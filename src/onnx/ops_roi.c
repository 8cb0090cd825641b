/* ops_roi.c - ONNX RoiAlign onto mo.roi_align.
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
 * 2^24 images. */
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
