/* test_ops_binary.c - elementwise binary ops, compares, logical ops and
 * where, JIT vs the reference interpreter, every allowed dtype, every shape
 * class.
 *
 * One graph per (op, dtype) holds one node per shape pair: scalar with
 * scalar, equal shapes, scalar with a matrix (both sides), [3,1] x [1,4],
 * a trailing-dim broadcast over 67-wide rows (vector remainders), size-1
 * with size-0, a size-0 dim broadcast against 1, rank promotion of a [1],
 * a middle-dim broadcast, and symbolic pairs ([n,1] x [1,m], [n,5] x [n,5],
 * [5] x [n,5], [] x [n]) run with (n, m) = (0, 3), (1, 1), (6, 9).
 * Dtype rules (ir/infer.c): add sub mul mod floor_div pow max min on f32 f64
 * si32 si64; div too, integers giving f64; equal / not_equal also on bool, greater /
 * greater_equal not; logical ops on bool; where(bool, T, T) for every
 * compute dtype.
 * Tolerances: add sub mul div max min are one correctly rounded IEEE
 * operation: exact. pow is libm: TOL_*_TRANS. Float mod is fmod (exact) plus
 * at most one addition of the divisor: TOL_*_ARITH. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct bshape {
  const char *a, *b, *o;
} bshape;

static const bshape SHAPES[] = {
    {"", "", ""},
    {"5", "5", "5"},
    {"", "3, 4", "3, 4"},
    {"3, 4", "", "3, 4"},
    {"3, 1", "1, 4", "3, 4"},
    {"2, 3, 67", "67", "2, 3, 67"},
    {"1", "0", "0"},
    {"0, 3", "1, 3", "0, 3"},
    {"4, 1, 1", "1", "4, 1, 1"},
    {"2, 1, 67", "3, 1", "2, 3, 67"},
    {"n, 1", "1, m", "n, m"},
    {"n, 5", "n, 5", "n, 5"},
    {"5", "n, 5", "n, 5"},
    {"", "n", "n"},
};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define BINDINGS "n=0,m=3;n=1,m=1;n=6,m=9"

static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};
static const char *const FLOATS[] = {"f32", "f64"};

static bool is_float(const char *dt) { return dt[0] == 'f'; }

static void check_binary_shapes(const char *op, const char *dt, const char *out_dt, oracle_gen ga,
                                oracle_gen gb, double rtol, double atol, const bshape *shapes,
                                int nshapes, const char *bindings) {
  gt *t = gt_new("binary", bindings && bindings[0] ? "n, m" : NULL);
  for (int i = 0; i < nshapes; i++) {
    int a = gt_in_gen(t, dt, shapes[i].a, ga);
    int b = gt_in_gen(t, dt, shapes[i].b, gb);
    gt_out(t, gt_op2(t, op, NULL, a, b, out_dt ? out_dt : dt, shapes[i].o));
  }
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[128];
  snprintf(label, sizeof label, "%s %s", op, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 21,
                   .rtol = rtol, .atol = atol, .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static void check_binary(const char *op, const char *dt, const char *out_dt, oracle_gen ga,
                         oracle_gen gb, double rtol, double atol) {
  check_binary_shapes(op, dt, out_dt, ga, gb, rtol, atol, SHAPES, NSHAPES, BINDINGS);
}

static const oracle_gen DFLT = {0};

/* ---- arithmetic ---- */

Test(binary, add) {
  for (int d = 0; d < 4; d++) check_binary("mo.add", NUMERIC[d], NULL, DFLT, DFLT, 0, 0);
}
Test(binary, sub) {
  for (int d = 0; d < 4; d++) check_binary("mo.sub", NUMERIC[d], NULL, DFLT, DFLT, 0, 0);
}
Test(binary, mul) {
  for (int d = 0; d < 4; d++) check_binary("mo.mul", NUMERIC[d], NULL, DFLT, DFLT, 0, 0);
}
Test(binary, max) {
  for (int d = 0; d < 4; d++) check_binary("mo.max", NUMERIC[d], NULL, DFLT, DFLT, 0, 0);
}
Test(binary, min) {
  for (int d = 0; d < 4; d++) check_binary("mo.min", NUMERIC[d], NULL, DFLT, DFLT, 0, 0);
}
Test(binary, div) {
  for (int d = 0; d < 2; d++)
    check_binary("mo.div", FLOATS[d], NULL, DFLT, gen_nonzero(-3, 3, 0.25), 0, 0);
}
/* positive bases, real exponents */
Test(binary, pow) {
  check_binary("mo.pow", "f32", NULL, gen_uniform(0.1, 4), gen_uniform(-3, 3), TOL_F32_TRANS, 1e-6);
  check_binary("mo.pow", "f64", NULL, gen_uniform(0.1, 4), gen_uniform(-3, 3), TOL_F64_TRANS, 1e-14);
}
/* negative and zero bases with integer exponents: (-2)^3 = -8, 0^-1 = inf */
Test(binary, pow_integer_exponents) {
  check_binary("mo.pow", "f32", NULL, gen_quant(-3, 3), gen_integers(-3, 3), TOL_F32_TRANS, 1e-6);
  check_binary("mo.pow", "f64", NULL, gen_quant(-3, 3), gen_integers(-3, 3), TOL_F64_TRANS, 1e-14);
}
/* div of ints is true division into f64 (seed 002: Python's /): exact,
 * since both sides convert to double and divide once */
Test(binary, div_int_is_true_division_into_f64) {
  check_binary("mo.div", "si32", "f64", DFLT, gen_nonzero(-7, 7, 1), 0, 0);
  check_binary("mo.div", "si64", "f64", DFLT, DFLT, 0, 0); /* x / 0: +-inf, 0 / 0: NaN */
}
/* floor division (Python //): ints round toward -inf, divisors nonzero */
Test(binary, floor_div_int) {
  check_binary("mo.floor_div", "si32", NULL, DFLT, gen_nonzero(-7, 7, 1), 0, 0);
  check_binary("mo.floor_div", "si64", NULL, DFLT, gen_nonzero(-7, 7, 1), 0, 0);
}
/* floats: floor of the rounded quotient, exact (one division, one floor) */
Test(binary, floor_div_float) {
  for (int d = 0; d < 2; d++) {
    check_binary("mo.floor_div", FLOATS[d], NULL, gen_uniform(-10, 10), gen_nonzero(-4, 4, 0.1),
                 0, 0);
    check_binary("mo.floor_div", FLOATS[d], NULL, gen_quant(-4, 4), gen_nonzero(-2, 2, 0.125),
                 0, 0);
  }
}
/* integer pow: small bases and exponents (negative ones truncate: 2^-1 =
 * 0, (-1)^-3 = -1), bases nonzero (0 to a negative power is an error,
 * test_ops_errors.c) */
Test(binary, pow_int) {
  check_binary("mo.pow", "si32", NULL, gen_nonzero(-5, 5, 1), gen_uniform(-3, 9), 0, 0);
  check_binary("mo.pow", "si64", NULL, gen_nonzero(-5, 5, 1), gen_uniform(-3, 20), 0, 0);
}
/* wide bases and exponents: the product wraps in the dtype, bit for bit */
Test(binary, pow_int_wraps) {
  static const bshape sh[] = {{"67", "67", "67"}};
  check_binary_shapes("mo.pow", "si32", NULL, gen_uniform(-2147483647.0, 2147483647.0),
                      gen_uniform(0, 2147483647.0), 0, 0, sh, 1, "");
  check_binary_shapes("mo.pow", "si64", NULL, gen_uniform(-9.2e18, 9.2e18), gen_uniform(0, 9.2e18),
                      0, 0, sh, 1, "");
  check_binary_shapes("mo.pow", "si64", NULL, gen_uniform(-3, 3), gen_uniform(0, 70), 0, 0, sh, 1,
                      "");
}
/* floor mod, the result has the divisor's sign (Python %) */
Test(binary, mod_int) {
  check_binary("mo.mod", "si32", NULL, DFLT, gen_nonzero(-7, 7, 1), 0, 0);
  check_binary("mo.mod", "si64", NULL, DFLT, gen_nonzero(-7, 7, 1), 0, 0);
}
Test(binary, mod_float) {
  check_binary("mo.mod", "f32", NULL, gen_uniform(-10, 10), gen_nonzero(-4, 4, 0.1), TOL_F32_ARITH,
               1e-6);
  check_binary("mo.mod", "f64", NULL, gen_uniform(-10, 10), gen_nonzero(-4, 4, 0.1), TOL_F64_ARITH,
               1e-14);
}
/* multiples of 1/8: fmod is exact and many results are exactly 0 (where
 * the sign fix-up must not add the divisor) */
Test(binary, mod_float_exact_multiples) {
  for (int d = 0; d < 2; d++)
    check_binary("mo.mod", FLOATS[d], NULL, gen_quant(-4, 4), gen_nonzero(-2, 2, 0.125), 0, 0);
}

/* ---- integers over their whole range: a path through double would lose
 * the low bits of si64 above 2^53; sums and products stay in range ---- */

Test(binary, int_full_range) {
  static const bshape sh[] = {{"67", "67", "67"}, {"", "3, 5", "3, 5"}};
  oracle_gen w64 = gen_uniform(-9.2e18, 9.2e18), w32 = gen_uniform(-2147483647.0, 2147483647.0);
  oracle_gen h64 = gen_uniform(-2305843009213693952.0, 2305843009213693952.0); /* 2^61 */
  oracle_gen h32 = gen_uniform(-1073741824.0, 1073741824.0);                  /* 2^30 */
  oracle_gen m64 = gen_uniform(-2147483648.0, 2147483648.0), m32 = gen_uniform(-32768, 32768);
  check_binary_shapes("mo.add", "si64", NULL, h64, h64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.sub", "si64", NULL, h64, h64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.mul", "si64", NULL, m64, m64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.max", "si64", NULL, w64, w64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.min", "si64", NULL, w64, w64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.mod", "si64", NULL, w64, gen_nonzero(-9.2e18, 9.2e18, 1), 0, 0, sh, 2, "");
  check_binary_shapes("mo.mod", "si64", NULL, w64, gen_nonzero(-1000, 1000, 1), 0, 0, sh, 2, "");
  check_binary_shapes("mo.greater", "si64", "bool", w64, w64, 0, 0, sh, 2, "");
  check_binary_shapes("mo.add", "si32", NULL, h32, h32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.sub", "si32", NULL, h32, h32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.mul", "si32", NULL, m32, m32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.max", "si32", NULL, w32, w32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.min", "si32", NULL, w32, w32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.mod", "si32", NULL, w32, gen_nonzero(-2147483647.0, 2147483647.0, 1), 0,
                      0, sh, 2, "");
  check_binary_shapes("mo.greater_equal", "si32", "bool", w32, w32, 0, 0, sh, 2, "");
  check_binary_shapes("mo.floor_div", "si64", NULL, w64, gen_nonzero(-9.2e18, 9.2e18, 1), 0, 0,
                      sh, 2, "");
  check_binary_shapes("mo.floor_div", "si64", NULL, w64, gen_nonzero(-1000, 1000, 1), 0, 0, sh, 2,
                      "");
  check_binary_shapes("mo.floor_div", "si32", NULL, w32, gen_nonzero(-1000, 1000, 1), 0, 0, sh, 2,
                      "");
  check_binary_shapes("mo.div", "si64", "f64", w64, gen_nonzero(-9.2e18, 9.2e18, 1), 0, 0, sh, 2,
                      "");
}

/* INT_MIN // -1 wraps to INT_MIN, INT_MIN // 1 is INT_MIN, and -1 divisors
 * of every sign of dividend (the JIT avoids the sdiv overflow) */
Test(binary, floor_div_int_min_by_minus_one) {
  static const bshape sh[] = {{"67", "67", "67"}};
  check_binary_shapes("mo.floor_div", "si32", NULL, gen_const(-2147483648.0), gen_nonzero(-1, 1, 1),
                      0, 0, sh, 1, "");
  check_binary_shapes("mo.floor_div", "si64", NULL, gen_uniform(-9.2e18, 9.2e18), gen_const(-1), 0,
                      0, sh, 1, "");
}

/* ---- compares: quantized floats and narrow ints so that ties occur ---- */

static void check_compare(const char *op, bool with_bool) {
  for (int d = 0; d < 4; d++) {
    oracle_gen g = is_float(NUMERIC[d]) ? gen_quant(-1, 1) : gen_uniform(-3, 3);
    check_binary(op, NUMERIC[d], "bool", g, g, 0, 0);
  }
  if (with_bool) check_binary(op, "bool", "bool", DFLT, DFLT, 0, 0);
}

Test(compare, equal) { check_compare("mo.equal", true); }
Test(compare, not_equal) { check_compare("mo.not_equal", true); }
Test(compare, greater) { check_compare("mo.greater", false); }
Test(compare, greater_equal) { check_compare("mo.greater_equal", false); }

/* ---- logical ---- */

Test(logical, logical_and) { check_binary("mo.logical_and", "bool", NULL, DFLT, DFLT, 0, 0); }
Test(logical, logical_or) { check_binary("mo.logical_or", "bool", NULL, DFLT, DFLT, 0, 0); }
Test(logical, logical_xor) { check_binary("mo.logical_xor", "bool", NULL, DFLT, DFLT, 0, 0); }

/* ---- special values (NaN, +-inf, +-0, subnormals, +-max) on both sides ---- */

static const bshape SPECIAL_SHAPES[] = {{"64", "64", "64"}, {"8, 1", "1, 8", "8, 8"}};

static void check_special(const char *op, const char *out_dt, double rtol32, double rtol64) {
  check_binary_shapes(op, "f32", out_dt, gen_special(-3, 3), gen_special(-3, 3), rtol32, 0,
                      SPECIAL_SHAPES, 2, "");
  check_binary_shapes(op, "f64", out_dt, gen_special(-3, 3), gen_special(-3, 3), rtol64, 0,
                      SPECIAL_SHAPES, 2, "");
}

Test(binary_special, add) { check_special("mo.add", NULL, 0, 0); }
Test(binary_special, sub) { check_special("mo.sub", NULL, 0, 0); }
Test(binary_special, mul) { check_special("mo.mul", NULL, 0, 0); }
Test(binary_special, div) { check_special("mo.div", NULL, 0, 0); }
Test(binary_special, pow) { check_special("mo.pow", NULL, TOL_F32_TRANS, TOL_F64_TRANS); }
Test(binary_special, mod) { check_special("mo.mod", NULL, TOL_F32_ARITH, TOL_F64_ARITH); }
Test(binary_special, floor_div) { check_special("mo.floor_div", NULL, 0, 0); }
/* NaN in max / min: JIT and oracle must agree (numpy's maximum propagates NaN) */
Test(binary_special, max) { check_special("mo.max", NULL, 0, 0); }
Test(binary_special, min) { check_special("mo.min", NULL, 0, 0); }
/* IEEE compares: NaN is unequal to everything, itself included */
Test(binary_special, equal) { check_special("mo.equal", "bool", 0, 0); }
Test(binary_special, not_equal) { check_special("mo.not_equal", "bool", 0, 0); }
Test(binary_special, greater) { check_special("mo.greater", "bool", 0, 0); }
Test(binary_special, greater_equal) { check_special("mo.greater_equal", "bool", 0, 0); }

/* ---- where: three-way broadcasting ---- */

typedef struct wshape {
  const char *c, *x, *y, *o;
} wshape;

static const wshape WSHAPES[] = {
    {"", "", "", ""},
    {"2, 3", "2, 3", "2, 3", "2, 3"},
    {"", "3", "3", "3"},
    {"3", "", "", "3"},
    {"0, 3", "1", "3", "0, 3"},
    {"4, 1, 67", "67", "1, 5, 1", "4, 5, 67"},
    {"n, 1", "1, m", "", "n, m"},
    {"n", "n", "n", "n"},
};

Test(where, every_dtype_and_shape) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool"};
  for (int d = 0; d < 5; d++) {
    gt *t = gt_new("where", "n, m");
    for (int i = 0; i < (int)(sizeof WSHAPES / sizeof WSHAPES[0]); i++) {
      int ins[3] = {gt_in(t, "bool", WSHAPES[i].c), gt_in(t, dts[d], WSHAPES[i].x),
                    gt_in(t, dts[d], WSHAPES[i].y)};
      gt_out(t, gt_op(t, "mo.where", NULL, ins, 3, dts[d], WSHAPES[i].o));
    }
    char label[64];
    snprintf(label, sizeof label, "mo.where %s", dts[d]);
    oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = BINDINGS, .seed = 5};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* where passes NaN and inf through untouched */
Test(where, special_values) {
  for (int d = 0; d < 2; d++) {
    gt *t = gt_new("where", NULL);
    int ins[3] = {gt_in(t, "bool", "64"), gt_in(t, FLOATS[d], "64"), gt_in(t, FLOATS[d], "64")};
    gt_out(t, gt_op(t, "mo.where", NULL, ins, 3, FLOATS[d], "64"));
    oracle_case c = {.label = FLOATS[d], .mlir = gt_finish(t), .seed = 6,
                     .gen_default = gen_special(-3, 3)};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}
