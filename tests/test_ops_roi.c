/* test_ops_roi.c - mo.roi_align (NHWC, ONNX RoiAlign's sampling): the JIT
 * against the reference interpreter over f32 and f64, both modes, aligned
 * or not, fixed and adaptive sampling grids, spatial scales, regions partly
 * or wholly outside the image, inverted and tiny regions, size-1 and size-0
 * dims, symbolic batch, image and region counts; hand-worked answers; a
 * batch index out of range and an unbounded grid as data errors from both;
 * bad attributes and shapes refused at line:col. The kernels compute in
 * double in the interpreter's order: tight tolerances. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

/* four regions over two images: inside, wide, partly outside, tiny */
#define ROIS4                                                                                      \
  "0.0, 0.5, 1.0, 4.2, 5.5, 1.0, 2.0, 0.0, 6.9, 3.3, 1.0, -2.0, -1.5, 3.0, 8.0, 0.0, 3.0, 2.0, "   \
  "3.2, 2.1"
/* past the image, and inverted (x2 < x1) */
#define ROIS2 "1.0, 9.0, 9.5, 12.0, 11.0, 0.0, 4.0, 3.0, 1.0, 0.5"

typedef struct rcase {
  const char *attrs, *out; /* out: the result's dims after K */
} rcase;

static const rcase MODES[] = {
    {"{output_height = 2, output_width = 3}", "2, 3"},
    {"{aligned = true, mode = \"max\", output_height = 3, output_width = 2, sampling_ratio = 2, "
     "spatial_scale = 0.5}",
     "3, 2"},
    {"{aligned = true, output_height = 1, output_width = 1, spatial_scale = 2.0}", "1, 1"},
    {"{mode = \"max\", output_height = 4, output_width = 4}", "4, 4"},
    {"{output_height = 2, output_width = 2, sampling_ratio = 1, spatial_scale = 0.25}", "2, 2"},
};
#define NMODES (int)(sizeof MODES / sizeof MODES[0])

static void check_roi(const char *dt) {
  gt *t = gt_new("roi", "n, h, w, k");
  int x = gt_in(t, dt, "2, 6, 7, 3"), r4 = gt_const(t, dt, "4, 5", ROIS4);
  int r2 = gt_const(t, dt, "2, 5", ROIS2);
  char shape[64];
  for (int i = 0; i < NMODES; i++) {
    snprintf(shape, sizeof shape, "4, %s, 3", MODES[i].out);
    gt_out(t, gt_op2(t, "mo.roi_align", MODES[i].attrs, x, r4, dt, shape));
    snprintf(shape, sizeof shape, "2, %s, 3", MODES[i].out);
    gt_out(t, gt_op2(t, "mo.roi_align", MODES[i].attrs, x, r2, dt, shape));
  }
  /* size 0 and 1, symbolic dims; random regions lie in [0, 1.9): batch 0 or 1 */
  oracle_gen small = gen_uniform(0, 1.9);
  int xs = gt_in(t, dt, "n, h, w, 3"), rk = gt_in_gen(t, dt, "k, 5", small);
  int x0 = gt_in(t, dt, "2, 6, 7, 0"), r0 = gt_in_gen(t, dt, "0, 5", small);
  int x1 = gt_in(t, dt, "1, 1, 1, 1"), r1 = gt_const(t, dt, "1, 5", "0.0, 0.0, 0.0, 1.0, 1.0");
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[0].attrs, xs, r4, dt, "4, 2, 3, 3"));
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[1].attrs, xs, rk, dt, "k, 3, 2, 3"));
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[3].attrs, x, rk, dt, "k, 4, 4, 3"));
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[0].attrs, x0, r4, dt, "4, 2, 3, 0"));
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[0].attrs, x, r0, dt, "0, 2, 3, 3"));
  gt_out(t, gt_op2(t, "mo.roi_align", MODES[2].attrs, x1, r1, dt, "1, 1, 1, 1"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[64];
  snprintf(label, sizeof label, "mo.roi_align %s", dt);
  bool f64 = strcmp(dt, "f64") == 0;
  oracle_case c = {.label = label,
                   .mlir = gt_finish(t),
                   .bindings = "n=2,h=6,w=7,k=3;n=3,h=1,w=2,k=1;n=2,h=0,w=3,k=0;n=4,h=9,w=1,k=5",
                   .seed = 29,
                   .gens = gens,
                   .ngens = ng,
                   .rtol = f64 ? TOL_F64_ARITH : TOL_F32_ARITH,
                   .atol = f64 ? 1e-12 : 1e-6};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(roi_align, every_dtype_mode_and_attribute) {
  check_roi("f32");
  check_roi("f64");
}

/* ---- data errors ---- */

static void expect_fail_on(const char *image_shape, const char *rois, const char *attrs,
                           const char *word) {
  gt *t = gt_new("roi", NULL);
  int x = gt_in(t, "f32", image_shape), r = gt_const(t, "f32", "1, 5", rois);
  gt_out(t, gt_op2(t, "mo.roi_align", attrs, x, r, "f32", "1, 1, 1, 1"));
  oracle_case c = {.label = word, .mlir = gt_finish(t), .seed = 3};
  oracle_expect_both_fail(&c, word);
  gt_free(t);
}

static void expect_both_fail(const char *rois, const char *attrs, const char *word) {
  expect_fail_on("2, 3, 3, 1", rois, attrs, word);
}

Test(roi_align, bad_batch_index_and_unbounded_grid_are_data_errors) {
  const char *a = "{output_height = 1, output_width = 1}";
  expect_both_fail("2.0, 0.0, 0.0, 1.0, 1.0", a, "out of range");
  expect_both_fail("-1.0, 0.0, 0.0, 1.0, 1.0", a, "out of range");
  /* no image at all: -0.5 truncates to 0, which is not an image either */
  expect_fail_on("0, 3, 3, 1", "-0.5, 0.0, 0.0, 1.0, 1.0", a, "out of range");
  expect_both_fail("0.0, 0.0, 0.0, 1.0e9, 1.0", a, "sampling grid is not finite");
  expect_both_fail("0.0, 0.0, 0.0, 1025.0, 1.0", a, "sampling grid is not finite");
  expect_both_fail("0.0, 0.0, 0.0, 1.0, 0x7FC00000", a, "sampling grid is not finite");
}

/* ---- hand-worked answers ---- */

static void known(const char *label, const char *attrs, const char *rois, const char *out,
                  oracle_expect e) {
  char mlir[2048];
  snprintf(mlir, sizeof mlir,
           "mo.graph @k() -> (!mo.tensor<[1, %s, 1], f32>) {\n"
           "  %%x = mo.constant {value = #M.dense_array<1.0, 2.0, 3.0, 4.0> : tensor<1x2x2x1xf32>} "
           ": !mo.tensor<[1, 2, 2, 1], f32>\n"
           "  %%r = mo.constant {value = #M.dense_array<%s> : tensor<1x5xf32>} : "
           "!mo.tensor<[1, 5], f32>\n"
           "  %%y = mo.roi_align(%%x, %%r) %s : (!mo.tensor<[1, 2, 2, 1], f32>, "
           "!mo.tensor<[1, 5], f32>) -> !mo.tensor<[1, %s, 1], f32>\n"
           "  mo.output %%y : !mo.tensor<[1, %s, 1], f32>\n}\n",
           out, rois, attrs, out, out);
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known(label, mlir, &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
}

/* image [[1, 2], [3, 4]]: one sample at the centre averages the four
 * pixels; max mode takes the largest weighted corner (ONNX); a sample at the
 * right edge clamps to the last column */
Test(known_roi, centre_edge_and_max) {
  known("centre", "{output_height = 1, output_width = 1, sampling_ratio = 1}",
        "0.0, 0.0, 0.0, 1.0, 1.0", "1, 1",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 1, 1}, ORACLE_F32(2.5f)});
  known("max", "{mode = \"max\", output_height = 1, output_width = 1, sampling_ratio = 1}",
        "0.0, 0.0, 0.0, 1.0, 1.0", "1, 1",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 1, 1}, ORACLE_F32(1.0f)});
  known("aligned", "{aligned = true, output_height = 1, output_width = 1, sampling_ratio = 1}",
        "0.0, 0.5, 0.5, 1.5, 1.5", "1, 1",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 1, 1}, ORACLE_F32(2.5f)});
  known("edge", "{output_height = 1, output_width = 2, sampling_ratio = 1}",
        "0.0, 0.0, 0.0, 2.0, 1.0", "1, 2",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 2, 1}, ORACLE_F32(2.5f, 3.0f)});
  known("outside", "{output_height = 1, output_width = 1}", "0.0, 5.0, 5.0, 6.0, 6.0", "1, 1",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 1, 1}, ORACLE_F32(0.0f)});
}

/* ---- bad attributes and shapes: refused where they are written ---- */

#define G(attrs, dx, tx, dr, tr, ty)                                                               \
  "mo.graph @g(%x: !mo.tensor<[" tx "], " dx ">, %r: !mo.tensor<[" tr "], " dr ">) -> "            \
  "(!mo.tensor<[" ty "], " dx ">) {\n  %y = mo.roi_align(%x, %r) " attrs " : (!mo.tensor<[" tx     \
  "], " dx ">, !mo.tensor<[" tr "], " dr ">) -> !mo.tensor<[" ty "], " dx ">\n"                    \
  "  mo.output %y : !mo.tensor<[" ty "], " dx ">\n}\n"
#define OK_ATTRS "output_height = 2, output_width = 2"

Test(roi_verify, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(
      G("{" OK_ATTRS ", mode = \"min\"}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
      "2:3: attribute 'mode' of mo.roi_align is \"min\" but must be \"avg\" or \"max\"");
  EXPECT_REJECTED(
      G("{" OK_ATTRS ", spatial_scale = 0.0}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
      "attribute 'spatial_scale' of mo.roi_align is 0 but must be finite and > 0");
  EXPECT_REJECTED(
      G("{" OK_ATTRS ", sampling_ratio = -1}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
      "attribute 'sampling_ratio' of mo.roi_align is -1 but must be in [0, 1024]");
  EXPECT_REJECTED(
      G("{output_height = 0, output_width = 2}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 0, 2, 3"),
      "output_height and output_width must be in [1, 2^31)");
  EXPECT_REJECTED(G("{output_width = 2}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
                  "mo.roi_align requires attribute 'output_height'");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "f32", "1, 4, 4, 3", "f32", "2, 4", "2, 2, 2, 3"),
                  "mo.roi_align: dim 1 of the rois (4) must be 5");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "f32", "4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
                  "operand 0 of mo.roi_align has rank 3 but needs rank 4 (NHWC)");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "f32", "1, 4, 4, 3", "f32", "10", "2, 2, 2, 3"),
                  "operand 1 of mo.roi_align (rois) has rank 1 but needs rank 2");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "f32", "1, 4, 4, 3", "f64", "2, 5", "2, 2, 2, 3"),
                  "mo.roi_align");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "si32", "1, 4, 4, 3", "si32", "2, 5", "2, 2, 2, 3"),
                  "mo.roi_align");
  EXPECT_REJECTED(G("{" OK_ATTRS "}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 3, 3"),
                  "declared as");
  EXPECT_REJECTED(
      G("{" OK_ATTRS ", spatial = 1.0}", "f32", "1, 4, 4, 3", "f32", "2, 5", "2, 2, 2, 3"),
      "mo.roi_align has no attribute 'spatial'");
}
