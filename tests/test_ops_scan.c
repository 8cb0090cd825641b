/* test_ops_scan.c - mo.cumsum (axis, exclusive, reverse) and mo.band_part
 * (num_lower, num_upper, exclude; at the end), JIT vs the reference
 * interpreter, on every dtype it takes (f32 f64 si32 si64) and
 * every shape class: each axis of a rank-3 shape by positive and negative
 * index, the default axis, size-1 and size-0 dims, a 67-long axis, a
 * leading axis over more than COLS (4096) inner positions (scan.c's column
 * blocks and their remainder), lines walked eight at a time (whole blocks,
 * a tail shorter than a block, lines left over, lines one short of that
 * path's 256, a symbolic length), and
 * symbolic shapes scanned along a
 * symbolic axis and along a static one; scalars are refused (no axis).
 * Floats accumulate in double and round each result once on both sides,
 * in the same order: f32 / f64 results agree to the last bit but for the
 * roundings of the oracle's own formula, so the tolerance is tight;
 * integers wrap bit for bit (wide si64 values overflow on purpose). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct scase {
  const char *shape;
  const char *axis; /* "axis = 1", or NULL for the default (-1) */
} scase;

static const scase CASES[] = {
    {"2, 3, 5", "axis = 0"}, {"2, 3, 5", "axis = 1"}, {"2, 3, 5", "axis = 2"},
    {"2, 3, 5", "axis = -2"}, {"2, 3, 5", NULL},      {"1", "axis = 0"},
    {"4, 1", "axis = 1"},     {"1, 4", "axis = 0"},    {"0, 4", "axis = 1"},
    {"4, 0", "axis = 0"},     {"3, 67", "axis = 1"},   {"9, 70", "axis = 0"},
    {"3, 4099", "axis = 0"},  {"5, 300", "axis = 1"},    {"19, 293", "axis = 1"},
    {"8, 256", "axis = 1"},   {"9, 255", "axis = 1"},    {"17, m", "axis = 1"},
    {"n, m", "axis = 1"},     {"n, m", "axis = 0"},    {"n, 3, m", "axis = 1"},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])
#define BINDINGS "n=1,m=1;n=3,m=5;n=0,m=4;n=2,m=0;n=4,m=130;n=2,m=4100"

static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};

/* One graph per (dtype, exclusive, reverse), one node per case. */
static void check_scan(const char *dt, bool excl, bool rev, oracle_gen g, double rtol,
                       const scase *cases, int ncases, const char *bindings) {
  gt *t = gt_new("scan", bindings && bindings[0] ? "n, m" : NULL);
  for (int i = 0; i < ncases; i++) {
    char attrs[128];
    snprintf(attrs, sizeof attrs, "{%s%s%s%s}", cases[i].axis ? cases[i].axis : "",
             excl ? (cases[i].axis ? ", exclusive = true" : "exclusive = true") : "",
             rev ? (cases[i].axis || excl ? ", reverse = true" : "reverse = true") : "", "");
    bool none = !cases[i].axis && !excl && !rev;
    int x = gt_in(t, dt, cases[i].shape);
    gt_out(t, gt_op1(t, "mo.cumsum", none ? NULL : attrs, x, dt, cases[i].shape));
  }
  char label[128];
  snprintf(label, sizeof label, "mo.cumsum %s exclusive=%d reverse=%d", dt, excl, rev);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 41,
                   .rtol = rtol, .atol = 0, .gen_default = g};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static void check_modes(const char *dt, oracle_gen g, double rtol) {
  for (int m = 0; m < 4; m++) check_scan(dt, m & 1, m & 2, g, rtol, CASES, NCASES, BINDINGS);
}

Test(scan, cumsum_f32) { check_modes("f32", (oracle_gen){0}, TOL_F32_ARITH); }
Test(scan, cumsum_f64) { check_modes("f64", (oracle_gen){0}, TOL_F64_ARITH); }
Test(scan, cumsum_si32) { check_modes("si32", (oracle_gen){0}, 0); }
Test(scan, cumsum_si64) { check_modes("si64", (oracle_gen){0}, 0); }

/* running sums that overflow wrap the same way on both sides */
Test(scan, cumsum_ints_wrap) {
  static const scase wide[] = {{"67", "axis = 0"}, {"5, 67", "axis = 0"}};
  check_scan("si64", false, false, gen_uniform(-9.2e18, 9.2e18), 0, wide, 2, "");
  check_scan("si32", true, true, gen_uniform(-2147483647.0, 2147483647.0), 0, wide, 2, "");
}

/* NaN and inf propagate from where they occur onwards (forward or reversed) */
Test(scan, cumsum_special_values) {
  static const scase sp[] = {{"8, 16", "axis = 1"}, {"16, 8", "axis = 0"}, {"8, 260", "axis = 1"}};
  for (int d = 0; d < 2; d++)
    for (int m = 0; m < 4; m++)
      check_scan(NUMERIC[d], m & 1, m & 2, gen_naninf(-3, 3), d ? TOL_F64_ARITH : TOL_F32_ARITH, sp,
                 3, "");
}

#define SCAN_GRAPH(attrs, in, out)                                                         \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out "], f32>) {\n"         \
  "  %y = mo.cumsum(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> !mo.tensor<[" out       \
  "], f32>\n  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"

/* bad attributes and shapes are refused where they are written (line:col) */
Test(scan, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(SCAN_GRAPH("{axis = 2}", "3, 4", "3, 4"), "2:3: mo.cumsum: axis 2 is out of range for rank 2");
  EXPECT_REJECTED(SCAN_GRAPH("", "", ""), "out of range for rank 0");
  EXPECT_REJECTED(SCAN_GRAPH("{exclusive = 1}", "3", "3"), "attribute 'exclusive' of mo.cumsum must be a boolean");
  EXPECT_REJECTED(SCAN_GRAPH("{reverse = \"yes\"}", "3", "3"), "attribute 'reverse' of mo.cumsum must be a boolean");
  EXPECT_REJECTED(SCAN_GRAPH("{axis = 0}", "3", "4"), "declared as");
  EXPECT_REJECTED(SCAN_GRAPH("{keepdims = true}", "3", "3"), "no attribute 'keepdims'");
}

/* ---- band_part: every bound setting (negative: none), both exclude
 * modes, every dtype (bool included), batched, size-0 / size-1 and
 * symbolic matrices ---- */

static const char *const BAND_SHAPES[] = {"4, 6", "6, 4", "2, 3, 5, 5", "1, 1", "0, 3", "3, 0",
                                          "n, m", "2, n, 7"};

static void check_band(const char *dt, const char *attrs) {
  gt *t = gt_new("band", "n, m");
  for (int i = 0; i < (int)(sizeof BAND_SHAPES / sizeof BAND_SHAPES[0]); i++) {
    int x = gt_in(t, dt, BAND_SHAPES[i]);
    gt_out(t, gt_op1(t, "mo.band_part", attrs, x, dt, BAND_SHAPES[i]));
  }
  char label[160];
  snprintf(label, sizeof label, "mo.band_part %s %s", dt, attrs ? attrs : "");
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=0,m=2;n=1,m=1;n=5,m=3",
                   .seed = 43};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(band_part, every_setting_and_dtype) {
  static const char *const attrs[] = {NULL,
                                      "{num_lower = 0, num_upper = 0}",
                                      "{num_lower = 1}",
                                      "{num_upper = 2}",
                                      "{num_lower = 0, num_upper = -1}",
                                      "{num_lower = 2, num_upper = 1, exclude = true}",
                                      "{exclude = true}"};
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool"};
  for (int d = 0; d < 5; d++)
    for (int a = 0; a < 7; a++) check_band(dts[d], attrs[a]);
}

#define BAND_GRAPH(attrs, shape)                                                           \
  "mo.graph @g(%x: !mo.tensor<[" shape "], f32>) -> (!mo.tensor<[" shape "], f32>) {\n"    \
  "  %y = mo.band_part(%x) " attrs " : !mo.tensor<[" shape "], f32>\n"                     \
  "  mo.output %y : !mo.tensor<[" shape "], f32>\n}\n"

Test(band_part, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(BAND_GRAPH("", "5"), "2:3: operand 0 of mo.band_part has rank 1 but needs rank >= 2");
  EXPECT_REJECTED(BAND_GRAPH("{num_lower = 1.5}", "2, 2"), "attribute 'num_lower' of mo.band_part must be an integer");
  EXPECT_REJECTED(BAND_GRAPH("{exclude = 1}", "2, 2"), "attribute 'exclude' of mo.band_part must be a boolean");
}
