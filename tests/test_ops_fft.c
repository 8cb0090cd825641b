/* test_ops_fft.c - mo.irfft (n, axis, normalization, input_is_complex), JIT
 * vs the reference interpreter on f32 and f64: output lengths odd, even and
 * powers of two (the template's FFT and its O(n^2) path), shorter than the
 * input (truncated) and longer (zero-padded), the default n = 2 (m - 1), each
 * axis by positive and negative index, size-1 and size-0 dims, symbolic dims
 * (around the axis and along it), every normalization, complex input; then
 * hand-worked answers (numpy.fft.irfft's) and refusals at line:col.
 * Both sides sum in double and round once; the interpreter sums the real
 * formula term by term, the JIT runs an FFT, so results differ by the
 * order of the additions: near-zero outputs need an absolute tolerance. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct fcase {
  const char *in, *out; /* shapes */
  const char *attrs;    /* without braces, may be "" */
} fcase;

/* real input */
static const fcase REAL[] = {
    {"8", "14", ""},                        /* default n: 14, even, not a power of two */
    {"8", "8", "n = 8"},                    /* power of two, truncated to 5 values */
    {"8", "16", "n = 16"},                  /* power of two, padded (9 > 8) */
    {"8", "7", "n = 7"},                    /* odd */
    {"8", "1", "n = 1"},                    /* one value: X[0] only */
    {"5", "9", "n = 9"},                    /* odd, padded */
    {"3, 5", "4, 5", "axis = 0"},           /* leading axis, default n */
    {"3, 5", "3, 32", "n = 32, axis = 1"},  /* power of two along the last axis */
    {"3, 5", "6, 5", "n = 6, axis = -2"},   /* negative axis */
    {"2, 9, 3", "2, 12, 3", "n = 12, axis = 1"}, /* a middle axis, inner > 1 */
    {"2, 9, 3", "2, 64, 3", "n = 64, axis = 1"}, /* several radix-2 stages, inner > 1 */
    {"1, 4", "4, 4", "n = 4, axis = 0"},    /* m = 1 */
    {"4, 1", "4, 3", "n = 3"},              /* m = 1, odd */
    {"0, 4", "0, 6", "n = 6"},              /* no lines */
    {"3, 0", "3, 4", "n = 4"},              /* m = 0: all zeros */
    {"n, m", "n, 2 * m - 2", ""},           /* symbolic axis, default n */
    {"n, m", "n, 10", "n = 10"},            /* symbolic axis, n given */
    {"m, 6", "m, 8", "n = 8"},              /* symbolic lines */
};
#define NREAL (int)(sizeof REAL / sizeof REAL[0])

/* complex input: the last dim (2) is (re, im), not counted by axis */
static const fcase CPLX[] = {
    {"8, 2", "14", ""},
    {"8, 2", "16", "n = 16"},
    {"8, 2", "7", "n = 7"},
    {"3, 5, 2", "4, 5", "axis = 0"},
    {"3, 5, 2", "3, 9", "n = 9, axis = -1"},
    {"2, 4, 3, 2", "2, 8, 3", "n = 8, axis = 1"},
    {"n, m, 2", "n, 2 * m - 2", ""},
};
#define NCPLX (int)(sizeof CPLX / sizeof CPLX[0])

static void check_fft(const char *dt, const char *norm, bool cplx, double rtol, double atol) {
  const fcase *cs = cplx ? CPLX : REAL;
  int nc = cplx ? NCPLX : NREAL;
  gt *t = gt_new("irfft", "n, m");
  for (int i = 0; i < nc; i++) {
    char attrs[160];
    const char *sep = cs[i].attrs[0] ? ", " : "";
    snprintf(attrs, sizeof attrs, "{%s%snormalization = \"%s\"%s}", cs[i].attrs, sep, norm,
             cplx ? ", input_is_complex = true" : "");
    int x = gt_in(t, dt, cs[i].in);
    gt_out(t, gt_op1(t, "mo.irfft", attrs, x, dt, cs[i].out));
  }
  char label[128];
  snprintf(label, sizeof label, "mo.irfft %s %s%s", dt, norm, cplx ? " complex" : "");
  oracle_case c = {.label = label, .mlir = gt_finish(t),
                   .bindings = "n=1,m=2;n=3,m=5;n=0,m=4;n=2,m=9;n=2,m=17", .seed = 47,
                   .rtol = rtol, .atol = atol, .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static void check_all(const char *dt, double rtol, double atol) {
  static const char *const norms[] = {"backward", "ortho", "forward"};
  for (int k = 0; k < 3; k++)
    for (int cplx = 0; cplx < 2; cplx++) check_fft(dt, norms[k], cplx, rtol, atol);
}

Test(irfft, f32_jit_matches_interpreter) { check_all("f32", 2e-6, 1e-6); }
Test(irfft, f64_jit_matches_interpreter) { check_all("f64", 1e-12, 1e-12); }

/* The default attributes (n, axis, backward) written out or left out. */
Test(irfft, defaults_left_out) {
  gt *t = gt_new("irfft_defaults", NULL);
  int x = gt_in(t, "f32", "4, 6");
  gt_out(t, gt_op1(t, "mo.irfft", NULL, x, "f32", "4, 10"));
  oracle_case c = {.label = "mo.irfft defaults", .mlir = gt_finish(t), .seed = 5,
                   .rtol = 2e-6, .atol = 1e-6};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

#define KNOWN(attrs, in, dense, vals, out)                                                    \
  "mo.graph @g() -> (!mo.tensor<[" out "], f32>) {\n" ORACLE_CONST("x", "f32", in, dense,    \
                                                                     vals)                    \
  "  %y = mo.irfft(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> !mo.tensor<[" out           \
  "], f32>\n  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"

/* numpy.fft.irfft([1, 2, 3]) = [2, -0.5, 0, -0.5]: (1 + 4 cos(pi t / 2) +
 * 3 (-1)^t) / 4; ortho divides by 2 instead of 4, forward by 1 */
Test(irfft, hand_worked_real) {
  oracle_expect_known("irfft backward", KNOWN("", "3", "3x", "1.0, 2.0, 3.0", "4"),
                      (oracle_expect){KILN_FLOAT32, 1, {4}, ORACLE_F32(2, -0.5f, 0, -0.5f)});
  oracle_expect_known("irfft ortho",
                      KNOWN("{normalization = \"ortho\"}", "3", "3x", "1.0, 2.0, 3.0", "4"),
                      (oracle_expect){KILN_FLOAT32, 1, {4}, ORACLE_F32(4, -1, 0, -1)});
  oracle_expect_known("irfft forward",
                      KNOWN("{normalization = \"forward\"}", "3", "3x", "1.0, 2.0, 3.0", "4"),
                      (oracle_expect){KILN_FLOAT32, 1, {4}, ORACLE_F32(8, -2, 0, -2)});
}

/* numpy.fft.irfft([1, 1j], 3) = (1 - 2 sin(2 pi t / 3)) / 3 =
 * [1/3, (1 - sqrt 3) / 3, (1 + sqrt 3) / 3]; the imaginary part of X[0] (5)
 * is ignored */
Test(irfft, hand_worked_complex) {
  const char *g = KNOWN("{n = 3, input_is_complex = true}", "2, 2", "2x2x", "1.0, 5.0, 0.0, 1.0",
                        "3");
  oracle_report r;
  oracle_expect e = {KILN_FLOAT32, 1, {3}, ORACLE_F32(1.0f / 3, -0.24401694f, 0.91068360f)};
  cr_expect_eq(oracle_known("irfft complex", g, &e, 1, 1e-6, 1e-7, &r), 0, "%s", r.msg);
}

#define BAD(attrs, in, out)                                                                   \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out "], f32>) {\n"          \
  "  %y = mo.irfft(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> !mo.tensor<[" out           \
  "], f32>\n  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"

/* bad attributes and shapes are refused where they are written (line:col) */
Test(irfft, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(BAD("{normalization = \"sideways\"}", "5", "8"),
                  "2:3: mo.irfft: normalization 'sideways' is not one of backward, ortho, forward");
  EXPECT_REJECTED(BAD("{n = 0}", "5", "0"), "2:3: mo.irfft: n = 0 must be at least 1");
  EXPECT_REJECTED(BAD("{n = -3}", "5", "8"), "mo.irfft: n = -3 must be at least 1");
  EXPECT_REJECTED(BAD("{axis = 1}", "5", "8"), "2:3: mo.irfft: axis 1 is out of range for rank 1");
  EXPECT_REJECTED(BAD("{input_is_complex = true}", "5, 3", "8"),
                  "2:3: mo.irfft: input_is_complex needs a last dim of 2");
  EXPECT_REJECTED(BAD("{input_is_complex = true}", "2", "8"),
                  "input_is_complex needs a last dim of 2 (re, im) after at least one other dim");
  EXPECT_REJECTED(BAD("", "1", "0"), "2:3: mo.irfft: without n, axis 0 needs at least 2 values");
  EXPECT_REJECTED(BAD("{n = 4}", "5", "5"), "declared as");
  EXPECT_REJECTED(BAD("{n = 2.5}", "5", "8"), "attribute 'n' of mo.irfft must be an integer");
  EXPECT_REJECTED(BAD("{input_is_complex = 1}", "5, 2", "8"),
                  "attribute 'input_is_complex' of mo.irfft must be a boolean");
  EXPECT_REJECTED(BAD("{buffer_size_mb = 512}", "5", "8"), "no attribute 'buffer_size_mb'");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[5], si32>) -> (!mo.tensor<[8], si32>) {\n"
                  "  %y = mo.irfft(%x) : (!mo.tensor<[5], si32>) -> !mo.tensor<[8], si32>\n"
                  "  mo.output %y : !mo.tensor<[8], si32>\n}\n",
                  "mo.irfft");
}

/* a symbolic axis too short for the default n is a run-time error naming the op */
Test(irfft, short_symbolic_axis_fails_at_run_time) {
  gt *t = gt_new("irfft_short", "m");
  int x = gt_in(t, "f32", "m");
  gt_out(t, gt_op1(t, "mo.irfft", NULL, x, "f32", "2 * m - 2"));
  oracle_case c = {.label = "mo.irfft m = 1", .mlir = gt_finish(t), .bindings = "m=1",
                   .seed = 3, .expect_error = true};
  oracle_expect_both_fail(&c, "mo.irfft");
  gt_free(t);
}
