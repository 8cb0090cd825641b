/* test_ops_resize.c - mo.resize, mo.resize_nearest, mo.resize_linear and
 * mo.resize_bicubic: the JIT against the reference interpreter over f32 and
 * f64 (and si32 / si64 for nearest), every interpolation, coordinate
 * transformation and rounding mode, upsampling and downsampling, size-1 and
 * size-0 dims, ranks 1 to 5 with any axes resized, symbolic dims and
 * explicit scales; answers
 * worked by hand (ONNX's Resize examples); bad attributes and shapes refused
 * at line:col.
 * Both sides compute coordinates and weights with the same double
 * operations (ir/resize.c) and sum in double: tight tolerances; nearest
 * copies elements: exact. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct rcase {
  const char *in, *out;
} rcase;

static const rcase SHAPES[] = {
    {"2, 3, 4, 5", "2, 3, 8, 10"},      /* upsample by 2 */
    {"1, 2, 7, 9", "1, 2, 3, 4"},       /* downsample */
    {"1, 2, 3, 5", "1, 2, 7, 2"},       /* one axis up, the other down */
    {"1, 1, 1, 1", "1, 1, 3, 2"},       /* from size 1 */
    {"1, 2, 5, 4", "1, 2, 1, 1"},       /* to size 1 */
    {"0, 2, 3, 3", "0, 2, 6, 6"},       /* an empty batch */
    {"2, 3, 0, 4", "2, 3, 0, 2"},       /* an empty axis resized to empty */
    {"6", "11"},                        /* rank 1: the one axis */
    {"3, 5", "7, 2"},                   /* rank 2 */
    {"2, 2, 3, 4, 4", "2, 2, 3, 5, 3"}, /* rank 5: three copied axes */
    {"2, 3, 4, 5", "3, 1, 4, 7"},       /* batch, channels and W; H copied */
    {"3, 2, 4", "5, 4, 2"},             /* three axes */
    {"n, 3, h, 5", "n, 3, h + 3, 7"},   /* symbolic */
};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

static const char *const COORDS[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn", "half_pixel_symmetric"};
static const char *const ROUNDS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

static void check(const char *op, const char *dt, const char *attrs, double tol) {
  gt *t = gt_new("resize", "n, h");
  for (int i = 0; i < NSHAPES; i++) {
    int x = gt_in(t, dt, SHAPES[i].in);
    gt_out(t, gt_op1(t, op, attrs, x, dt, SHAPES[i].out));
  }
  char label[400];
  snprintf(label, sizeof label, "%s %s %s", op, dt, attrs ? attrs : "");
  oracle_case c = {.label = label,
                   .mlir = gt_finish(t),
                   .bindings = "n=1,h=2;n=2,h=5;n=0,h=1",
                   .seed = 71,
                   .rtol = tol,
                   .atol = tol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(resize, nearest_every_coordinate_and_rounding_mode) {
  for (int c = 0; c < 6; c++)
    for (int r = 0; r < 4; r++) {
      char attrs[200];
      snprintf(attrs, sizeof attrs,
               "{coordinate_transformation_mode = \"%s\", nearest_mode = \"%s\"}", COORDS[c],
               ROUNDS[r]);
      check("mo.resize_nearest", "f32", attrs, 0);
    }
}

Test(resize, nearest_every_dtype_and_max_names) {
  check("mo.resize_nearest", "f64", NULL, 0);
  check("mo.resize_nearest", "si32", "{nearest_mode = \"half_up\"}", 0);
  check("mo.resize_nearest", "si64",
        "{coordinate_transformation_mode = \"asymmetric\", "
        "nearest_mode = \"down\"}",
        0);
  check("mo.resize", "si32", "{mode = \"nearest\", nearest_mode = \"up\"}", 0);
}

Test(resize, linear_every_coordinate_mode) {
  for (int c = 0; c < 6; c++) {
    char attrs[200];
    snprintf(attrs, sizeof attrs, "{coordinate_transformation_mode = \"%s\"}", COORDS[c]);
    check("mo.resize_linear", "f32", attrs, 2e-6);
    check("mo.resize_linear", "f64", attrs, 1e-13);
  }
  check("mo.resize", "f32", NULL, 2e-6); /* bilinear, MAX's default */
  check("mo.resize", "f64",
        "{mode = \"linear\", coordinate_transformation_mode = \"align_corners\"}", 1e-13);
}

Test(resize, cubic_every_coordinate_mode_and_exclude_outside) {
  for (int c = 0; c < 6; c++) {
    char attrs[200];
    snprintf(attrs, sizeof attrs, "{coordinate_transformation_mode = \"%s\"}", COORDS[c]);
    check("mo.resize_bicubic", "f32", attrs, 2e-6);
    snprintf(
        attrs, sizeof attrs,
        "{coordinate_transformation_mode = \"%s\", cubic_coeff_a = -0.5, exclude_outside = true}",
        COORDS[c]);
    check("mo.resize_bicubic", "f64", attrs, 1e-13);
  }
  check("mo.resize", "f32", "{mode = \"bicubic\"}", 2e-6);
  check("mo.resize", "f64", "{mode = \"cubic\", exclude_outside = true}", 1e-13);
}

/* scales that do not divide the dims (ONNX's scales input): the coordinates
 * use the scale, not the dims' ratio */
Test(resize, explicit_scales) {
  static const char *const ops[][2] = {
      {"mo.resize_nearest", ""},
      {"mo.resize_linear", ""},
      {"mo.resize_bicubic", ""},
      {"mo.resize", "mode = \"cubic\", coordinate_transformation_mode = \"align_corners\", "},
      {"mo.resize_linear", "coordinate_transformation_mode = \"half_pixel_symmetric\", "}};
  for (int i = 0; i < 5; i++) {
    gt *t = gt_new("scales", NULL);
    char a1[300], a2[300];
    snprintf(a1, sizeof a1, "{%sscale_h = 0.6, scale_w = 0.6}", ops[i][1]);
    snprintf(a2, sizeof a2, "{%sscale_h = 1.7, scale_w = 2.25}", ops[i][1]);
    gt_out(t, gt_op1(t, ops[i][0], a1, gt_in(t, "f32", "1, 1, 2, 4"), "f32", "1, 1, 1, 2"));
    gt_out(t, gt_op1(t, ops[i][0], a2, gt_in(t, "f32", "2, 3, 5"), "f32", "2, 5, 11"));
    oracle_case c = {
        .label = ops[i][0], .mlir = gt_finish(t), .seed = 72, .rtol = 2e-6, .atol = 2e-6};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* scales far from the dims' ratio (a denormal, a huge one) put coordinates at
 * infinity or NaN: the taps stay inside the operand and both sides agree */
Test(resize, absurd_scales_stay_in_bounds) {
  static const char *const modes[] = {"half_pixel", "half_pixel_symmetric", "asymmetric"};
  static const char *const ops[] = {"mo.resize_nearest", "mo.resize_linear", "mo.resize_bicubic"};
  for (int m = 0; m < 3; m++)
    for (int o = 0; o < 3; o++) {
      gt *t = gt_new("absurd", NULL);
      char attrs[200];
      snprintf(attrs, sizeof attrs,
               "{coordinate_transformation_mode = \"%s\", scale_h = 1e-310, scale_w = 1e300}",
               modes[m]);
      gt_out(t, gt_op1(t, ops[o], attrs, gt_in(t, "f64", "2, 3, 4"), "f64", "2, 5, 3"));
      oracle_case c = {
          .label = attrs, .mlir = gt_finish(t), .seed = 74, .rtol = 1e-13, .atol = 1e-13};
      ORACLE_ASSERT(&c);
      gt_free(t);
    }
}

/* ---- hand-worked (ONNX's Resize examples) ---- */

static void known(const char *label, const char *op, const char *attrs, const char *in_shape,
                  const char *in, const oracle_expect *e, double tol) {
  gt *t = gt_new("known", NULL);
  char shape[64];
  snprintf(shape, sizeof shape, "%lld, %lld, %lld, %lld", (long long)e->shape[0],
           (long long)e->shape[1], (long long)e->shape[2], (long long)e->shape[3]);
  int x = gt_const(t, "f32", in_shape, in);
  gt_out(t, gt_op1(t, op, attrs, x, "f32", shape));
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known(label, gt_finish(t), e, 1, tol, tol, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

Test(known, resize_nearest_upsample) {
  oracle_expect e = {KILN_FLOAT32,
                     4,
                     {1, 1, 4, 6},
                     ORACLE_F32(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4)};
  known("nearest x2 x3", "mo.resize_nearest", NULL, "1, 1, 2, 2", "1, 2, 3, 4", &e, 0);
}

Test(known, resize_nearest_ceil_and_floor) {
  /* asymmetric, 3 -> 6: x = o / 2 = 0, .5, 1, 1.5, 2, 2.5 */
  oracle_expect c = {KILN_FLOAT32, 4, {1, 1, 1, 6}, ORACLE_F32(1, 2, 2, 3, 3, 3)};
  known("nearest ceil", "mo.resize_nearest",
        "{coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"ceil\"}", "1, 1, 1, 3",
        "1, 2, 3", &c, 0);
  oracle_expect f = {KILN_FLOAT32, 4, {1, 1, 1, 6}, ORACLE_F32(1, 1, 2, 2, 3, 3)};
  known("nearest floor", "mo.resize_nearest",
        "{coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"}", "1, 1, 1, 3",
        "1, 2, 3", &f, 0);
}

Test(known, resize_linear_upsample) {
  oracle_expect e = {KILN_FLOAT32,
                     4,
                     {1, 1, 4, 4},
                     ORACLE_F32(1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3,
                         3.25f, 3.75f, 4)};
  known("linear x2", "mo.resize_linear", NULL, "1, 1, 2, 2", "1, 2, 3, 4", &e, 0);
}

Test(known, resize_linear_align_corners) {
  oracle_expect e = {KILN_FLOAT32,
                     4,
                     {1, 1, 4, 4},
                     ORACLE_F32(1, 4 / 3.f, 5 / 3.f, 2, 5 / 3.f, 2, 7 / 3.f, 8 / 3.f, 7 / 3.f, 8 / 3.f, 3,
                         10 / 3.f, 3, 10 / 3.f, 11 / 3.f, 4)};
  known("linear align_corners", "mo.resize_linear",
        "{coordinate_transformation_mode = \"align_corners\"}", "1, 1, 2, 2", "1, 2, 3, 4", &e,
        1e-6);
}

Test(known, resize_linear_downsample_by_scale) {
  oracle_expect e = {KILN_FLOAT32, 4, {1, 1, 1, 2}, ORACLE_F32(8 / 3.f, 13 / 3.f)};
  known("linear 0.6", "mo.resize_linear", "{scale_h = 0.6, scale_w = 0.6}", "1, 1, 2, 4",
        "1, 2, 3, 4, 5, 6, 7, 8", &e, 1e-6);
}

/* a = -0.75 at r = 0.5: weights -0.09375, 0.59375, 0.59375, -0.09375; half
 * way over the taps 0, 0, 1, 1 (the edge repeated) is 0.5, over 0, 1, 1, 1
 * it is 0.59375 + 0.59375 - 0.09375 = 1.09375 (the overshoot) */
Test(known, resize_bicubic_half_way) {
  oracle_expect e = {KILN_FLOAT32, 4, {1, 1, 1, 3}, ORACLE_F32(0, 0.5f, 1)};
  known("cubic 2 -> 3", "mo.resize_bicubic", "{coordinate_transformation_mode = \"align_corners\"}",
        "1, 1, 1, 2", "0, 1", &e, 1e-7);
  oracle_expect o = {KILN_FLOAT32, 4, {1, 1, 1, 5}, ORACLE_F32(0, 0.5f, 1, 1.09375f, 1)};
  known("cubic overshoot", "mo.resize_bicubic",
        "{coordinate_transformation_mode = \"align_corners\"}", "1, 1, 1, 3", "0, 1, 1", &o, 1e-7);
}

/* the batch axis resized (the others copied): align_corners puts 0.5 between
 * the two images */
Test(known, resize_linear_any_axis) {
  gt *t = gt_new("known", NULL);
  int x = gt_const(t, "f32", "2, 1, 2", "0, 2, 4, 6");
  gt_out(t, gt_op1(t, "mo.resize_linear", "{coordinate_transformation_mode = \"align_corners\"}", x,
                   "f32", "3, 1, 2"));
  oracle_expect e = {KILN_FLOAT32, 3, {3, 1, 2}, ORACLE_F32(0, 2, 2, 4, 4, 6)};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known("any axis", gt_finish(t), &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* ---- refused ---- */

#define G(op, attrs, dt, in, out)                                                                  \
  "mo.graph @g(%x: !mo.tensor<[" in "], " dt ">) -> (!mo.tensor<[" out "], " dt ">) {\n"           \
  "  %y = " op "(%x) " attrs " : (!mo.tensor<[" in "], " dt ">) -> !mo.tensor<[" out "], " dt      \
  ">\n  mo.output %y : !mo.tensor<[" out "], " dt ">\n}\n"
#define G1(op, attrs, in, out) G(op, attrs, "f32", in, out)

Test(resize, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(G1("mo.resize", "{mode = \"area\"}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "2:3: attribute 'mode' of mo.resize is \"area\" but must be \"nearest\"");
  EXPECT_REJECTED(G1("mo.resize_linear",
                     "{coordinate_transformation_mode = \"tf_crop_and_resize\"}", "1, 1, 2, 2",
                     "1, 1, 4, 4"),
                  "2:3: attribute 'coordinate_transformation_mode' of mo.resize_linear is "
                  "\"tf_crop_and_resize\"");
  EXPECT_REJECTED(G1("mo.resize_nearest", "{nearest_mode = \"even\"}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "2:3: attribute 'nearest_mode' of mo.resize_nearest is \"even\"");
  EXPECT_REJECTED(G1("mo.resize_linear", "{nearest_mode = \"floor\"}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "no attribute 'nearest_mode'");
  EXPECT_REJECTED(G1("mo.resize_bicubic", "{mode = \"nearest\"}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "no attribute 'mode'");
  EXPECT_REJECTED(G1("mo.resize", "{mode = 3}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "attribute 'mode' of mo.resize must be");
  EXPECT_REJECTED(G1("mo.resize_linear", "{scale_h = -2.0}", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "2:3: attribute 'scale_h' of mo.resize_linear is -2 but must be > 0");
  EXPECT_REJECTED(G1("mo.resize_bicubic", "", "2, 3, 4, 4, 5", "3, 4, 5, 5, 6"),
                  "2:3: mo.resize_bicubic: cubic interpolation over 5 axes reads more than 256");
  EXPECT_REJECTED(G1("mo.resize_linear", "{scale_h = 2.0}", "5", "10"),
                  "2:3: attribute 'scale_h' of mo.resize_linear names axis -2 but operand 0 has "
                  "rank 1");
  EXPECT_REJECTED(G1("mo.resize_linear", "", "3, 4", "3, 4, 1"),
                  "mo.resize_linear: the result has rank 3 but operand 0 has rank 2");
  EXPECT_REJECTED(G1("mo.resize_bicubic", "", "1, 1, 0, 4", "1, 1, 2, 4"),
                  "axis 2 of operand 0 is empty (0) but the result's is 2");
  EXPECT_REJECTED(G1("mo.resize_nearest", "", "", ""), "operand 0 of mo.resize_nearest has rank 0");
  EXPECT_REJECTED(G("mo.resize", "", "si32", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "2:3: mo.resize: linear interpolation needs f32 or f64");
  EXPECT_REJECTED(G("mo.resize_bicubic", "", "si64", "1, 1, 2, 2", "1, 1, 4, 4"),
                  "mo.resize_bicubic");
  EXPECT_REJECTED(G1("mo.resize_nearest", "", "1, 1, 2, 2", "1, 1, 4, 4, 1"), "has rank 5");
}

/* a symbolic axis that is empty at run time while the result's is not: a
 * data error on both sides, not a read */
Test(resize, symbolic_empty_axis_is_a_run_time_error) {
  gt *t = gt_new("empty", "h");
  gt_out(t, gt_op1(t, "mo.resize_linear", NULL, gt_in(t, "f32", "1, h, 3"), "f32", "1, 4, 6"));
  oracle_case c = {.label = "empty h",
                   .mlir = gt_finish(t),
                   .bindings = "h=0",
                   .seed = 73,
                   .expect_error = true};
  ORACLE_ASSERT(&c);
  gt_free(t);
}
