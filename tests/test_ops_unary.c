/* test_ops_unary.c - every elementwise unary op and cast, JIT vs the
 * reference interpreter, for every dtype the op allows and every shape class.
 *
 * One graph per (op, dtype) applies the op to one input per shape class:
 * a scalar (rank 0), a size-1 dim, a short vector, a rank-3 shape with a
 * size-1 middle dim, a size-0 dim, a 2 x 67 shape (vector loop remainders),
 * and a symbolic [n, 3] run with n = 0, 1, 5. Each output is compared, so a
 * failure names the shape class (the output index and its shape).
 * Input ranges keep each op inside its domain (log of positives...); the
 * special-values tests then feed NaN, +-inf, +-0, subnormals and extremes.
 * Tolerances are the ones of oracle.h: exact where the op is one correctly
 * rounded IEEE operation or no arithmetic, TOL_*_ARITH for short formulas,
 * TOL_*_TRANS for libm functions. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/gtext.h"
#include "support/oracle.h"

static const char *const SHAPES[] = {"", "1", "7", "3, 1, 4", "0, 5", "2, 67", "n, 3"};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define BINDINGS "n=0;n=1;n=5"

static const char *const FLOATS[] = {"f32", "f64"};
static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};

/* op over every shape class; out_dt NULL = same as the input */
static void check_unary(const char *op, const char *attrs, const char *dt, const char *out_dt,
                        oracle_gen g, double rtol, double atol, const char *const *shapes,
                        int nshapes, const char *bindings) {
  gt *t = gt_new("unary", bindings && bindings[0] ? "n" : NULL);
  for (int i = 0; i < nshapes; i++) {
    int x = gt_in(t, dt, shapes[i]);
    gt_out(t, gt_op1(t, op, attrs, x, out_dt ? out_dt : dt, shapes[i]));
  }
  char label[160];
  snprintf(label, sizeof label, "%s%s%s %s", op, attrs ? " " : "", attrs ? attrs : "", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 11,
                   .rtol = rtol, .atol = atol, .gen_default = g};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static void check_all_shapes(const char *op, const char *attrs, const char *dt, oracle_gen g,
                             double rtol, double atol) {
  check_unary(op, attrs, dt, NULL, g, rtol, atol, SHAPES, NSHAPES, BINDINGS);
}

/* f32 / f64 with the matching tolerance class */
static void check_float_op(const char *op, const char *attrs, oracle_gen g, bool trans) {
  check_all_shapes(op, attrs, "f32", g, trans ? TOL_F32_TRANS : TOL_F32_ARITH,
                   trans ? 1e-6 : 1e-7);
  check_all_shapes(op, attrs, "f64", g, trans ? TOL_F64_TRANS : TOL_F64_ARITH,
                   trans ? 1e-14 : 1e-15);
}

static void check_float_exact(const char *op, oracle_gen g) {
  for (int d = 0; d < 2; d++) check_all_shapes(op, NULL, FLOATS[d], g, TOL_EXACT, 0);
}

/* ---- ops on floats and ints ---- */

Test(unary, abs) {
  for (int d = 0; d < 4; d++) check_all_shapes("mo.abs", NULL, NUMERIC[d], (oracle_gen){0}, 0, 0);
}

Test(unary, negate) {
  for (int d = 0; d < 4; d++)
    check_all_shapes("mo.negate", NULL, NUMERIC[d], (oracle_gen){0}, 0, 0);
}

Test(unary, relu) {
  for (int d = 0; d < 4; d++) check_all_shapes("mo.relu", NULL, NUMERIC[d], (oracle_gen){0}, 0, 0);
}

/* Values over the whole integer range (INT_MIN excluded: its abs / negation
 * overflows): a JIT or oracle that goes through double loses low bits of
 * si64 values above 2^53. */
Test(unary, abs_negate_relu_full_int_range) {
  static const char *const ops[] = {"mo.abs", "mo.negate", "mo.relu"};
  static const char *const shapes[] = {"67"};
  for (int o = 0; o < 3; o++) {
    check_unary(ops[o], NULL, "si32", NULL, gen_uniform(-2147483647.0, 2147483647.0), 0, 0, shapes,
                1, "");
    check_unary(ops[o], NULL, "si64", NULL, gen_uniform(-9.2e18, 9.2e18), 0, 0, shapes, 1, "");
  }
}

/* ---- float-only ops ---- */

Test(unary, exp) { check_float_op("mo.exp", NULL, gen_uniform(-10, 10), true); }
Test(unary, log) { check_float_op("mo.log", NULL, gen_uniform(0.001, 100), true); }
Test(unary, log1p) { check_float_op("mo.log1p", NULL, gen_uniform(-0.999, 10), true); }
/* sqrt is correctly rounded in IEEE (and in f32 computed through f64) */
Test(unary, sqrt) { check_float_exact("mo.sqrt", gen_uniform(0, 100)); }
/* rsqrt: 1 / sqrt(x), two roundings; an approximate reciprocal-sqrt
 * instruction (rel. error 2^-14) would fail TOL_*_ARITH, on purpose */
Test(unary, rsqrt) { check_float_op("mo.rsqrt", NULL, gen_uniform(0.001, 100), false); }
Test(unary, tanh) { check_float_op("mo.tanh", NULL, gen_uniform(-6, 6), true); }
Test(unary, sigmoid) { check_float_op("mo.sigmoid", NULL, gen_uniform(-20, 20), true); }
Test(unary, gelu) { check_float_op("mo.gelu", NULL, gen_uniform(-6, 6), true); }
Test(unary, gelu_tanh) {
  check_float_op("mo.gelu", "{approximate = \"tanh\"}", gen_uniform(-6, 6), true);
}
Test(unary, gelu_quick) {
  check_float_op("mo.gelu", "{approximate = \"quick\"}", gen_uniform(-6, 6), true);
}
Test(unary, silu) { check_float_op("mo.silu", NULL, gen_uniform(-20, 20), true); }
Test(unary, erf) { check_float_op("mo.erf", NULL, gen_uniform(-4, 4), true); }
Test(unary, sin) { check_float_op("mo.sin", NULL, gen_uniform(-10, 10), true); }
Test(unary, cos) { check_float_op("mo.cos", NULL, gen_uniform(-10, 10), true); }
Test(unary, floor) { check_float_exact("mo.floor", gen_uniform(-10, 10)); }
Test(unary, ceil) { check_float_exact("mo.ceil", gen_uniform(-10, 10)); }
Test(unary, acos) { check_float_op("mo.acos", NULL, gen_uniform(-1, 1), true); }
Test(unary, asin) { check_float_op("mo.asin", NULL, gen_uniform(-1, 1), true); }
Test(unary, atan) { check_float_op("mo.atan", NULL, gen_uniform(-20, 20), true); }
Test(unary, atanh) { check_float_op("mo.atanh", NULL, gen_uniform(-0.999, 0.999), true); }
Test(unary, trunc) { check_float_exact("mo.trunc", gen_uniform(-10, 10)); }
Test(unary, round) { check_float_exact("mo.round", gen_uniform(-10, 10)); }
/* round is half to even (numpy): 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2 */
Test(unary, round_half_to_even_ties) { check_float_exact("mo.round", gen_halves(-6, 6)); }

/* ---- predicates and logical_not ---- */

Test(unary, is_nan) {
  for (int d = 0; d < 2; d++)
    check_unary("mo.is_nan", NULL, FLOATS[d], "bool", gen_special(-3, 3), 0, 0, SHAPES, NSHAPES,
                BINDINGS);
}

Test(unary, is_inf) {
  for (int d = 0; d < 2; d++)
    check_unary("mo.is_inf", NULL, FLOATS[d], "bool", gen_special(-3, 3), 0, 0, SHAPES, NSHAPES,
                BINDINGS);
}

Test(unary, logical_not) {
  check_unary("mo.logical_not", NULL, "bool", NULL, (oracle_gen){0}, 0, 0, SHAPES, NSHAPES,
              BINDINGS);
}

/* ---- special values: NaN, +-inf, +-0, subnormals, +-max ---- */

static const char *const SPECIAL_SHAPES[] = {"", "64"};

static void check_special(const char *op, const char *attrs, bool trans) {
  for (int d = 0; d < 2; d++) {
    bool f32 = d == 0;
    double rtol = trans ? (f32 ? TOL_F32_TRANS : TOL_F64_TRANS) : (f32 ? TOL_F32_ARITH : TOL_F64_ARITH);
    check_unary(op, attrs, FLOATS[d], NULL, gen_special(-3, 3), rtol, 0, SPECIAL_SHAPES, 2, "");
  }
}

Test(unary_special, abs) { check_special("mo.abs", NULL, false); }
Test(unary_special, negate) { check_special("mo.negate", NULL, false); }
Test(unary_special, relu) { check_special("mo.relu", NULL, false); }
Test(unary_special, exp) { check_special("mo.exp", NULL, true); }
Test(unary_special, log) { check_special("mo.log", NULL, true); }
Test(unary_special, log1p) { check_special("mo.log1p", NULL, true); }
Test(unary_special, sqrt) { check_special("mo.sqrt", NULL, false); }
Test(unary_special, rsqrt) { check_special("mo.rsqrt", NULL, false); }
Test(unary_special, tanh) { check_special("mo.tanh", NULL, true); }
Test(unary_special, sigmoid) { check_special("mo.sigmoid", NULL, true); }
Test(unary_special, gelu) { check_special("mo.gelu", NULL, true); }
Test(unary_special, gelu_tanh) { check_special("mo.gelu", "{approximate = \"tanh\"}", true); }
Test(unary_special, gelu_quick) { check_special("mo.gelu", "{approximate = \"quick\"}", true); }
Test(unary_special, silu) { check_special("mo.silu", NULL, true); }
Test(unary_special, erf) { check_special("mo.erf", NULL, true); }
Test(unary_special, sin) { check_special("mo.sin", NULL, true); }
Test(unary_special, cos) { check_special("mo.cos", NULL, true); }
Test(unary_special, floor) { check_special("mo.floor", NULL, false); }
Test(unary_special, ceil) { check_special("mo.ceil", NULL, false); }
/* outside the domain (|x| > 1): NaN on both sides */
Test(unary_special, acos) { check_special("mo.acos", NULL, true); }
Test(unary_special, asin) { check_special("mo.asin", NULL, true); }
Test(unary_special, atan) { check_special("mo.atan", NULL, true); }
Test(unary_special, atanh) { check_special("mo.atanh", NULL, true); }
Test(unary_special, round) { check_special("mo.round", NULL, false); }
Test(unary_special, trunc) { check_special("mo.trunc", NULL, false); }

/* ---- algebraic dims on inputs: n solved from x, then checked on y, z ---- */

Test(unary, algebraic_input_dims) {
  gt *t = gt_new("alg", "n");
  static const char *const shapes[] = {"n", "n + 1", "2 * n, 3", "n floordiv 2", "n ceildiv 3, 2"};
  for (int i = 0; i < 5; i++) {
    int x = gt_in(t, "f32", shapes[i]);
    gt_out(t, gt_op1(t, "mo.exp", NULL, x, "f32", shapes[i]));
  }
  /* algebraic dims inside the shape, where a wrong value moves elements */
  int y = gt_in(t, "f32", "2, n ceildiv 3, n floordiv 2");
  gt_out(t, gt_op1(t, "mo.transpose", "{axis_1 = 0, axis_2 = 2}", y, "f32",
                   "n floordiv 2, n ceildiv 3, 2"));
  oracle_case c = {.label = "exp over algebraic dims", .mlir = gt_finish(t),
                   .bindings = "n=0;n=1;n=4;n=6;n=7;n=9", .seed = 3, .rtol = TOL_F32_TRANS,
                   .atol = 1e-6};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* ---- cast ---- */

static const char *const CAST_SHAPES[] = {"", "0, 3", "5", "n, 67"};

static void check_cast(const char *from, const char *to, oracle_gen g) {
  char attrs[64];
  snprintf(attrs, sizeof attrs, "{dtype = %s}", to);
  check_unary("mo.cast", attrs, from, to, g, 0, 0, CAST_SHAPES, 4, "n=0;n=2");
}

/* Every pair of compute dtypes. Float -> int truncates toward zero; values
 * stay inside the target's range (out-of-range conversion has no defined
 * value); -100.9 .. 100.9 covers negative fractions. Float -> bool is x != 0:
 * quantized values include exact zeros. f64 -> f32 rounds to nearest even. */
Test(cast, compute_dtypes) {
  static const char *const dts[] = {"bool", "si32", "si64", "f32", "f64"};
  for (int a = 0; a < 5; a++) {
    for (int b = 0; b < 5; b++) {
      oracle_gen g = {0};
      if (a >= 3 && b == 0) g = gen_quant(-1, 1);                     /* float -> bool */
      else if (a >= 3 && (b == 1 || b == 2)) g = gen_uniform(-100.9, 100.9); /* float -> int */
      else if (a >= 3) g = gen_uniform(-1e6, 1e6);                    /* float -> float */
      else if (a > 0) g = gen_uniform(-3, 3);                         /* int -> *: zeros occur */
      check_cast(dts[a], dts[b], g);
    }
  }
}

/* si64 values beyond 2^53 and beyond si32: si64 -> f32 / f64 rounds to
 * nearest even, si64 -> si32 wraps (keeps the low 32 bits, like numpy). */
Test(cast, wide_si64) {
  check_cast("si64", "f32", gen_uniform(-9.2e18, 9.2e18));
  check_cast("si64", "f64", gen_uniform(-9.2e18, 9.2e18));
  check_cast("si64", "si32", gen_uniform(-9.2e18, 9.2e18));
  check_cast("si32", "si64", gen_uniform(-2147483648.0, 2147483647.0));
  check_cast("si32", "f32", gen_uniform(-2147483648.0, 2147483647.0));
}

/* f64 -> f32 of values out of f32's range gives +-inf, of subnormals 0 or a
 * subnormal; NaN stays NaN; f32 -> f64 is exact. */
Test(cast, float_special_values) {
  check_cast("f64", "f32", gen_special(-1e6, 1e6));
  check_cast("f32", "f64", gen_special(-1e6, 1e6));
  check_cast("f32", "bool", gen_special(-1, 1));
  check_cast("f64", "bool", gen_special(-1, 1));
}

/* Storage-only dtypes: cast reads and writes them (dtype.h). f16 / bf16
 * round to nearest even; narrow ints wrap; unsigned from float in range. */
Test(cast, storage_dtypes) {
  check_cast("f32", "f16", gen_uniform(-70000, 70000));
  check_cast("f32", "f16", gen_special(-3, 3));
  check_cast("f16", "f32", gen_uniform(-1000, 1000));
  check_cast("f32", "bf16", gen_uniform(-1e6, 1e6));
  check_cast("bf16", "f32", gen_uniform(-1e6, 1e6));
  check_cast("f64", "f16", gen_uniform(-100, 100));
  check_cast("f16", "f64", gen_uniform(-100, 100));
  check_cast("si32", "si8", gen_uniform(-100000, 100000));
  check_cast("si8", "si32", gen_uniform(-128, 127));
  check_cast("ui8", "f32", gen_uniform(0, 255));
  check_cast("f32", "ui8", gen_uniform(0, 255.9));
  check_cast("si64", "ui32", gen_uniform(0, 4294967295.0));
  check_cast("ui32", "si64", gen_uniform(0, 4294967295.0));
  check_cast("ui64", "f64", gen_uniform(0, 9.2e18));
  check_cast("si16", "bool", gen_uniform(-2, 2));
  check_cast("bool", "f16", (oracle_gen){0});
  check_cast("ui16", "si16", gen_uniform(0, 65535));
}

/* Out-of-range float -> int (NaN, +-inf, +-huge, values past the type's
 * range): kiln saturates and maps NaN to 0 (ir/interp.c, jit/elementwise.c:
 * llvm.fpto[su]i.sat); the JIT and the oracle must agree element for
 * element. */
Test(cast, float_to_int_out_of_range_saturates) {
  static const char *const to[] = {"si32", "si64", "si8", "ui8", "ui32", "bool"};
  for (int i = 0; i < 6; i++) {
    check_cast("f32", to[i], gen_special(-5e9, 5e9));
    check_cast("f64", to[i], gen_special(-5e19, 5e19));
  }
}

/* Values one hair above a halfway point of f16 / bf16: rounding once gives
 * the upper neighbour; rounding through f32 first lands exactly on the
 * halfway point and then rounds to even, the lower neighbour (double
 * rounding). f64 -> f16 / bf16 and si64 / si32 -> bf16 must round once. */
static void check_const_cast(const char *from, const char *shape, const char *values,
                             const char *to) {
  gt *t = gt_new("cast_const", NULL);
  int c = gt_const(t, from, shape, values);
  char attrs[64];
  snprintf(attrs, sizeof attrs, "{dtype = %s}", to);
  gt_out(t, gt_op1(t, "mo.cast", attrs, c, to, shape));
  char label[128];
  snprintf(label, sizeof label, "cast %s -> %s of %s", from, to, values);
  oracle_case oc = {.label = label, .mlir = gt_finish(t), .seed = 12};
  ORACLE_ASSERT(&oc);
  gt_free(t);
}

Test(cast, rounds_once_to_f16_and_bf16) {
  /* 1 + 2^-11 + 2^-40 -> f16 1 + 2^-10; 1 + 2^-8 + 2^-40 -> bf16 1 + 2^-7 */
  check_const_cast("f64", "2",
                   "1.0004882812509094947017729282379150390625, "
                   "-1.0004882812509094947017729282379150390625",
                   "f16");
  check_const_cast("f64", "2",
                   "1.0039062500009094947017729282379150390625, "
                   "-1.0039062500009094947017729282379150390625",
                   "bf16");
  /* 2^24 + 2^16 + 1 -> bf16 2^24 + 2^17 */
  check_const_cast("si64", "2", "16842753, -16842753", "bf16");
  check_const_cast("si32", "2", "16842753, -16842753", "bf16");
  /* 2^24 + 2^13 + 1 -> f16 is inf (past 65504) either way; 2049 -> 2048 (tie to even) */
  check_const_cast("si64", "2", "16785409, 2049", "f16");
}
