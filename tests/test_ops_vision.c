/* test_ops_vision.c - mo.pad (constant, reflect, edge), mo.max_pool2d,
 * mo.avg_pool2d, mo.conv2d, mo.conv2d_transpose and mo.conv3d: the JIT against the reference interpreter
 * over the dtypes each takes, size-1 and size-0 dims, symbolic batch and
 * spatial dims, every window attribute (stride, dilation, symmetric and
 * asymmetric padding, ceil_mode, count_boundary, groups, bias); hand-worked
 * answers; bad attributes and shapes refused at line:col.
 * conv2d's host kernel is im2col + the GEMM template, so its sums are
 * reordered and fused against the oracle's double sums: small absolute
 * tolerances. Pad and max pooling copy elements: exact. Few distinct conv
 * shapes, since each is a GEMM kernel to compile (the ASan suite's time). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

/* ---- pad ---- */

typedef struct pcase {
  const char *in, *paddings, *out;
} pcase;

static const pcase PADS[] = {
    {"3, 4", "1, 2, 2, 1", "6, 7"},
    {"2, 3, 5", "0, 1, 2, 3, 1, 0", "3, 8, 6"},
    {"1", "2, 2", "5"},
    {"3, 2", "4, 5, 3, 3", "12, 8"},       /* padding longer than the axis */
    {"4, 5", "-1, 1, 0, -2", "4, 3"},      /* negative: crop */
    {"0, 3", "1, 1, 0, 0", "2, 3"},        /* an empty axis pads with the value */
    {"1, 1", "0, 0, 0, 0", "1, 1"},
    {"n, m", "1, 0, 3, 2", "n + 1, m + 5"},
};
#define NPADS (int)(sizeof PADS / sizeof PADS[0])

static void check_pad(const char *dt, const char *mode) {
  gt *t = gt_new("pad", "n, m");
  for (int i = 0; i < NPADS; i++) {
    char attrs[160];
    snprintf(attrs, sizeof attrs, "{mode = \"%s\", paddings = [%s], value = 2.5}", mode, PADS[i].paddings);
    int x = gt_in(t, dt, PADS[i].in);
    gt_out(t, gt_op1(t, "mo.pad", attrs, x, dt, PADS[i].out));
  }
  char label[96];
  snprintf(label, sizeof label, "mo.pad %s %s", dt, mode);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1,m=1;n=3,m=4;n=0,m=2",
                   .seed = 51};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* every mode on f32, and each other dtype under a mode (the index logic is
 * the same for every dtype; the value's conversion is not) */
Test(pad, every_mode_and_dtype) {
  static const char *const runs[][2] = {{"f32", "constant"}, {"f32", "reflect"}, {"f32", "edge"},
                                        {"f64", "reflect"},  {"si32", "edge"},   {"si64", "constant"},
                                        {"bool", "constant"}, {"bool", "edge"}};
  for (int i = 0; i < 8; i++) check_pad(runs[i][0], runs[i][1]);
}

/* ---- pooling ---- */

typedef struct wcase {
  const char *in, *attrs, *out;
} wcase;

static const wcase POOLS[] = {
    {"2, 7, 6, 3", "kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]", "2, 4, 3, 3"},
    {"1, 7, 6, 2", "kernel_size = [3, 2], stride = [2, 2], ceil_mode = true", "1, 3, 3, 2"},
    {"1, 5, 8, 2", "kernel_size = [2, 3], dilation = [2, 1], padding = [0, 1, 2, 0]", "1, 4, 8, 2"},
    {"1, 6, 6, 1", "kernel_size = [3, 3], stride = [2], padding = [1], ceil_mode = true", "1, 4, 4, 1"},
    {"1, 1, 1, 1", "kernel_size = [1, 1]", "1, 1, 1, 1"},
    {"n, h, 5, 3", "kernel_size = [2, 2], stride = [2, 1]", "n, (h - 2) floordiv 2 + 1, 4, 3"},
};
#define NPOOLS (int)(sizeof POOLS / sizeof POOLS[0])

static void check_pool(const char *op, const char *dt, const char *extra, double tol) {
  gt *t = gt_new("pool", "n, h");
  for (int i = 0; i < NPOOLS; i++) {
    char attrs[200];
    snprintf(attrs, sizeof attrs, "{%s%s}", POOLS[i].attrs, extra);
    int x = gt_in(t, dt, POOLS[i].in);
    gt_out(t, gt_op1(t, op, attrs, x, dt, POOLS[i].out));
  }
  char label[128];
  snprintf(label, sizeof label, "%s %s%s", op, dt, extra);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1,h=2;n=2,h=9;n=0,h=2",
                   .seed = 52, .rtol = tol, .atol = tol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(pool, max_floats_and_ints) {
  check_pool("mo.max_pool2d", "f32", "", 0);
  check_pool("mo.max_pool2d", "si64", "", 0);
}

/* Max pools that step 1 along W (pool.c's separable row walk): channels in
 * whole vectors and a remainder, strides along H, asymmetric padding, rows
 * whose windows miss the operand (the per-pixel path), ceil_mode, a
 * one-column kernel, symbolic H and W down to 1 and 2 columns, a symbolic
 * C, rows too wide for the walk (the per-pixel path). */
static const wcase SEP_POOLS[] = {
    {"1, 5, 19, 16", "kernel_size = [3, 3], padding = [1]", "1, 5, 19, 16"},
    {"2, 4, 9, 21", "kernel_size = [3, 3], padding = [1]", "2, 4, 9, 21"},
    {"1, 7, 6, 3", "kernel_size = [3, 3], stride = [2, 1], padding = [1]", "1, 4, 6, 3"},
    {"1, 5, 8, 18", "kernel_size = [2, 4], padding = [0, 1, 2, 1]", "1, 5, 8, 18"},
    {"1, 4, 5, 2", "kernel_size = [3, 3], padding = [2, 2, 1, 1]", "1, 6, 5, 2"},
    {"1, 6, 7, 17", "kernel_size = [3, 3], stride = [2, 1], padding = [1], ceil_mode = true",
     "1, 4, 7, 17"},
    {"1, 6, 5, 9", "kernel_size = [3, 1], padding = [1, 1, 0, 0]", "1, 6, 5, 9"},
    {"n, h, w, 16", "kernel_size = [3, 3], padding = [1]", "n, h, w, 16"},
    {"1, h, w, 5", "kernel_size = [2, 3], padding = [0, 1, 2, 0]", "1, h, w, 5"},
    {"1, 4, 7, c", "kernel_size = [3, 3], padding = [1]", "1, 4, 7, c"},
    {"1, 3, 40, 40", "kernel_size = [3, 3], padding = [1]", "1, 3, 40, 40"}, /* rows > L1 */
};

static void check_sep_pool(const char *dt) {
  gt *t = gt_new("pool", "n, h, w, c");
  for (int i = 0; i < (int)(sizeof SEP_POOLS / sizeof SEP_POOLS[0]); i++) {
    char attrs[200];
    snprintf(attrs, sizeof attrs, "{%s}", SEP_POOLS[i].attrs);
    int x = gt_in(t, dt, SEP_POOLS[i].in);
    gt_out(t, gt_op1(t, "mo.max_pool2d", attrs, x, dt, SEP_POOLS[i].out));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.max_pool2d stride 1 along W %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t),
                   .bindings = "n=1,h=3,w=1,c=1;n=2,h=1,w=2,c=19;n=1,h=4,w=13,c=35",
                   .seed = 53};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(pool, max_stride_one_along_w_every_dtype) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64"};
  for (int i = 0; i < 4; i++) check_sep_pool(dts[i]);
}

Test(pool, avg_with_and_without_the_boundary) {
  check_pool("mo.avg_pool2d", "f32", "", 1e-6);
  check_pool("mo.avg_pool2d", "f64", ", count_boundary = false", 1e-13);
}

/* ---- conv2d ---- */

typedef struct ccase {
  const char *in, *filter, *attrs, *out;
  bool bias;
} ccase;

static const ccase CONVS[] = {
    {"1, 20, 15, 3", "3, 3, 3, 8", "padding = [1, 1, 1, 1]", "1, 20, 15, 8", true}, /* 300 pixels: 2 blocks */
    {"2, 5, 4, 6", "1, 1, 6, 5", "", "2, 5, 4, 5", true},                            /* a plain GEMM */
    {"1, 9, 8, 4", "3, 2, 4, 6", "stride = [2, 3], dilation = [2, 1], padding = [0, 1, 2, 1]", "1, 3, 4, 6", false},
    {"1, 6, 6, 4", "3, 3, 2, 6", "groups = 2, padding = [1, 1, 1, 1]", "1, 6, 6, 6", true},
    {"1, 5, 5, 3", "3, 3, 1, 3", "groups = 3, stride = [2, 2]", "1, 2, 2, 3", false}, /* depthwise */
    {"1, 1, 1, 1", "1, 1, 1, 1", "stride = [2, 2]", "1, 1, 1, 1", false},
    {"n, h, 7, 4", "3, 3, 4, 5", "padding = [1, 0, 0, 1]", "n, h - 1, 6, 5", true},
};
#define NCONVS (int)(sizeof CONVS / sizeof CONVS[0])

static void check_conv(const char *dt, double tol) {
  gt *t = gt_new("conv", "n, h");
  for (int i = 0; i < NCONVS; i++) {
    const ccase *k = &CONVS[i];
    int fshape_f = 0; /* F: the filter's last dim, the bias's length */
    sscanf(strrchr(k->filter, ',') + 1, "%d", &fshape_f);
    char attrs[200], bshape[16];
    snprintf(attrs, sizeof attrs, "{%s}", k->attrs);
    snprintf(bshape, sizeof bshape, "%d", fshape_f);
    int ins[3] = {gt_in(t, dt, k->in), gt_in(t, dt, k->filter), k->bias ? gt_in(t, dt, bshape) : -1};
    gt_out(t, gt_op(t, "mo.conv2d", k->attrs[0] ? attrs : NULL, ins, k->bias ? 3 : 2, dt, k->out));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.conv2d %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1,h=3;n=3,h=8;n=0,h=3",
                   .seed = 53, .rtol = tol, .atol = tol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(conv2d, f32) { check_conv("f32", 2e-5); }
Test(conv2d, f64) { check_conv("f64", 1e-12); }

/* conv2d_transpose: filter [R, S, F, C]; Ho = (H - 1) * sh + dh * (R - 1)
 * + 1 - top - bottom + output_paddings[0] */
static const ccase CONVTS[] = {
    {"1, 4, 3, 3", "3, 3, 5, 3", "stride = [2, 2], padding = [1, 1, 1, 1], output_paddings = [1, 0]", "1, 8, 5, 5", true},
    {"2, 3, 3, 2", "2, 3, 4, 2", "stride = [3, 1], dilation = [1, 2], padding = [0, 1, 2, 0]", "2, 7, 5, 4", false},
    {"1, 1, 1, 1", "1, 1, 1, 1", "", "1, 1, 1, 1", true},
    {"n, h, 3, 4", "3, 3, 2, 4", "stride = [2, 2]", "n, 2 * h + 1, 7, 2", true},
};

static void check_conv_t(const char *dt, double tol) {
  gt *t = gt_new("convt", "n, h");
  for (int i = 0; i < (int)(sizeof CONVTS / sizeof CONVTS[0]); i++) {
    const ccase *k = &CONVTS[i];
    int nf = 0, r, s2;
    sscanf(k->filter, "%d, %d, %d", &r, &s2, &nf);
    char attrs[200], bshape[16];
    snprintf(attrs, sizeof attrs, "{%s}", k->attrs);
    snprintf(bshape, sizeof bshape, "%d", nf);
    int ins[3] = {gt_in(t, dt, k->in), gt_in(t, dt, k->filter), k->bias ? gt_in(t, dt, bshape) : -1};
    gt_out(t, gt_op(t, "mo.conv2d_transpose", k->attrs[0] ? attrs : NULL, ins, k->bias ? 3 : 2, dt, k->out));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.conv2d_transpose %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1,h=1;n=2,h=4",
                   .seed = 54, .rtol = tol, .atol = tol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(conv2d_transpose, f32_and_f64) {
  check_conv_t("f32", 2e-5);
  check_conv_t("f64", 1e-12);
}

/* conv3d: NDHWC x QRSCF */
static const ccase CONV3S[] = {
    {"1, 4, 5, 3, 2", "2, 3, 1, 2, 3", "padding = [1, 0, 1, 1, 0, 0]", "1, 4, 5, 3, 3", true},
    {"2, 5, 4, 4, 4", "3, 2, 2, 2, 4", "stride = [2, 1, 2], dilation = [1, 2, 1], groups = 2", "2, 2, 2, 2, 4", false},
    {"n, h, 3, 3, 1", "1, 1, 1, 1, 2", "stride = [2]", "n, (h - 1) floordiv 2 + 1, 2, 2, 2", true},
};

static void check_conv3d(const char *dt, double tol) {
  gt *t = gt_new("conv3", "n, h");
  for (int i = 0; i < (int)(sizeof CONV3S / sizeof CONV3S[0]); i++) {
    const ccase *k = &CONV3S[i];
    int nf = 0;
    sscanf(strrchr(k->filter, ',') + 1, "%d", &nf);
    char attrs[200], bshape[16];
    snprintf(attrs, sizeof attrs, "{%s}", k->attrs);
    snprintf(bshape, sizeof bshape, "%d", nf);
    int ins[3] = {gt_in(t, dt, k->in), gt_in(t, dt, k->filter), k->bias ? gt_in(t, dt, bshape) : -1};
    gt_out(t, gt_op(t, "mo.conv3d", attrs, ins, k->bias ? 3 : 2, dt, k->out));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.conv3d %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1,h=1;n=2,h=4",
                   .seed = 55, .rtol = tol, .atol = tol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(conv3d, f32_and_f64) {
  check_conv3d("f32", 2e-5);
  check_conv3d("f64", 1e-12);
}

/* ---- hand-worked answers ---- */

static void known1(const char *label, const char *op, const char *attrs, const char *shape,
                   const char *values, const char *out_shape, oracle_expect e) {
  gt *t = gt_new("known", NULL);
  int c = gt_const(t, "f32", shape, values);
  gt_out(t, gt_op1(t, op, attrs, c, "f32", out_shape));
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known(label, gt_finish(t), &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

Test(known, pad_modes) {
  known1("pad reflect", "mo.pad", "{mode = \"reflect\", paddings = [2, 2]}", "3", "1, 2, 3", "7",
         (oracle_expect){KILN_FLOAT32, 1, {7}, ORACLE_F32(3, 2, 1, 2, 3, 2, 1)});
  known1("pad edge", "mo.pad", "{mode = \"edge\", paddings = [2, 1]}", "3", "1, 2, 3", "6",
         (oracle_expect){KILN_FLOAT32, 1, {6}, ORACLE_F32(1, 1, 1, 2, 3, 3)});
  known1("pad constant", "mo.pad", "{paddings = [1, 0], value = -4.0}", "2", "1, 2", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(-4, 1, 2)});
}

/* x = [[1, 2], [3, 4]], 2x2 windows, stride 1, padding 1: the corner
 * windows hold one element of four */
Test(known, pools_count_the_boundary_or_not) {
  known1("max_pool2d", "mo.max_pool2d", "{kernel_size = [2, 2], padding = [1]}", "1, 2, 2, 1",
         "1, 2, 3, 4", "1, 3, 3, 1",
         (oracle_expect){KILN_FLOAT32, 4, {1, 3, 3, 1}, ORACLE_F32(1, 2, 2, 3, 4, 4, 3, 4, 4)});
  known1("avg_pool2d boundary", "mo.avg_pool2d", "{kernel_size = [2, 2], padding = [1]}",
         "1, 2, 2, 1", "1, 2, 3, 4", "1, 3, 3, 1",
         (oracle_expect){KILN_FLOAT32, 4, {1, 3, 3, 1},
                         ORACLE_F32(0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1)});
  known1("avg_pool2d inside", "mo.avg_pool2d",
         "{kernel_size = [2, 2], padding = [1], count_boundary = false}", "1, 2, 2, 1", "1, 2, 3, 4",
         "1, 3, 3, 1",
         (oracle_expect){KILN_FLOAT32, 4, {1, 3, 3, 1}, ORACLE_F32(1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4)});
}

/* 3x3 image 1..9, a 2x2 filter of ones plus bias 0.5: sums of 2x2 blocks;
 * seed 002's padding [0, 1, 2, 1] example as a 1x1 identity filter */
Test(known, conv2d_sums_windows) {
  gt *t = gt_new("known", NULL);
  int x = gt_const(t, "f32", "1, 3, 3, 1", "1, 2, 3, 4, 5, 6, 7, 8, 9");
  int w = gt_const(t, "f32", "2, 2, 1, 1", "1, 1, 1, 1");
  int b = gt_const(t, "f32", "1", "0.5");
  int ins[3] = {x, w, b};
  gt_out(t, gt_op(t, "mo.conv2d", NULL, ins, 3, "f32", "1, 2, 2, 1"));
  int x2 = gt_const(t, "f32", "1, 2, 3, 1", "1, 2, 3, 4, 5, 6");
  int one = gt_const(t, "f32", "1, 1, 1, 1", "1");
  gt_out(t, gt_op2(t, "mo.conv2d", "{padding = [0, 1, 2, 1]}", x2, one, "f32", "1, 3, 6, 1"));
  oracle_expect e[2] = {
      {KILN_FLOAT32, 4, {1, 2, 2, 1}, ORACLE_F32(12.5f, 16.5f, 24.5f, 28.5f)},
      {KILN_FLOAT32, 4, {1, 3, 6, 1}, ORACLE_F32(0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0)}};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known("conv2d", gt_finish(t), e, 2, 0, 0, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* stride 2 with a 2x2 filter of ones spreads each pixel over a 2x2 block */
Test(known, conv2d_transpose_spreads_pixels) {
  gt *t = gt_new("known", NULL);
  int x = gt_const(t, "f32", "1, 2, 2, 1", "1, 2, 3, 4");
  int w = gt_const(t, "f32", "2, 2, 1, 1", "1, 1, 1, 1");
  gt_out(t, gt_op2(t, "mo.conv2d_transpose", "{stride = [2, 2]}", x, w, "f32", "1, 4, 4, 1"));
  oracle_expect e = {KILN_FLOAT32, 4, {1, 4, 4, 1}, ORACLE_F32(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4)};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known("conv2d_transpose", gt_finish(t), &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* a 2x2x2 cube 1..8 and a 2x2x2 filter of ones: the sum, 36 */
Test(known, conv3d_sums_the_cube) {
  gt *t = gt_new("known", NULL);
  int x = gt_const(t, "f32", "1, 2, 2, 2, 1", "1, 2, 3, 4, 5, 6, 7, 8");
  int w = gt_const(t, "f32", "2, 2, 2, 1, 1", "1, 1, 1, 1, 1, 1, 1, 1");
  gt_out(t, gt_op2(t, "mo.conv3d", NULL, x, w, "f32", "1, 1, 1, 1, 1"));
  oracle_expect e = {KILN_FLOAT32, 5, {1, 1, 1, 1, 1}, ORACLE_F32(36)};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known("conv3d", gt_finish(t), &e, 1, 0, 0, r), 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* ---- refused ---- */

#define G1(op, attrs, in, out)                                                              \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out "], f32>) {\n"          \
  "  %y = " op "(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> !mo.tensor<[" out          \
  "], f32>\n  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"
#define CONV(attrs, in, filt, out)                                                          \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>, %w: !mo.tensor<[" filt "], f32>) -> "         \
  "(!mo.tensor<[" out "], f32>) {\n"                                                        \
  "  %y = mo.conv2d(%x, %w) " attrs " : (!mo.tensor<[" in "], f32>, !mo.tensor<[" filt      \
  "], f32>) -> !mo.tensor<[" out "], f32>\n  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"

Test(vision, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(G1("mo.pad", "{paddings = [1, 1]}", "3, 4", "5, 6"),
                  "2:3: attribute 'paddings' of mo.pad has 2 entries but operand 0 has rank 2");
  EXPECT_REJECTED(G1("mo.pad", "{paddings = [1, 1], mode = \"wrap\"}", "3", "5"),
                  "2:3: attribute 'mode' of mo.pad is \"wrap\"");
  EXPECT_REJECTED(G1("mo.pad", "{paddings = [-2, -2]}", "3", "0"), "cropped by 4 it would be negative");
  EXPECT_REJECTED(G1("mo.max_pool2d", "{kernel_size = [2]}", "1, 4, 4, 1", "1, 3, 3, 1"),
                  "2:3: attribute 'kernel_size' of mo.max_pool2d must be two values >= 1");
  EXPECT_REJECTED(G1("mo.max_pool2d", "{kernel_size = [2, 2], count_boundary = true}", "1, 4, 4, 1",
                     "1, 3, 3, 1"),
                  "no attribute 'count_boundary'");
  EXPECT_REJECTED(G1("mo.avg_pool2d", "{kernel_size = [2, 2], stride = [0]}", "1, 4, 4, 1", "1, 3, 3, 1"),
                  "attribute 'stride' of mo.avg_pool2d has 0 but needs values >= 1");
  EXPECT_REJECTED(G1("mo.avg_pool2d", "{kernel_size = [5, 2]}", "1, 4, 4, 1", "1, 1, 3, 1"),
                  "shorter than the window (5)");
  EXPECT_REJECTED(G1("mo.max_pool2d", "{kernel_size = [2, 2]}", "4, 4, 1", "3, 3, 1"),
                  "needs rank 4 (NHWC)");
  EXPECT_REJECTED(G1("mo.max_pool2d", "{kernel_size = [2, 2], ceil_mode = true, stride = [3]}",
                     "1, n, 4, 1", "1, n, 1, 1"),
                  "ceil_mode on the symbolic axis 1 (H)");
  EXPECT_REJECTED(CONV("{groups = 2}", "1, 4, 4, 3", "3, 3, 3, 4", "1, 2, 2, 4"),
                  "2:3: mo.conv2d: C = 3 (axis 3 of operand 0) is not divisible by groups = 2");
  EXPECT_REJECTED(CONV("", "1, 4, 4, 3", "3, 3, 2, 4", "1, 2, 2, 4"),
                  "must be groups (1) times axis 2 of operand 1");
  EXPECT_REJECTED(CONV("{padding = [1, 1]}", "1, 4, 4, 3", "3, 3, 3, 4", "1, 2, 2, 4"),
                  "attribute 'padding' of mo.conv2d has 2 entries but takes 4");
  EXPECT_REJECTED(CONV("", "1, 4, 4, 3", "3, 3, 3, 4", "1, 4, 4, 4"), "declared as");
  EXPECT_REJECTED(G1("mo.conv2d_transpose", "", "1, 4, 4, 3", "1, 4, 4, 3"), "2:8: mo.conv2d_transpose takes 2 to 3 operands, got 1");
}
