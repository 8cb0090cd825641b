/* test_ops_known.c - known answers, worked out by hand from seed 002's
 * semantics (and numpy's where seed 002 points there), that both the JIT and
 * the reference interpreter must give. The other test_ops_* files compare
 * the two with each other; these catch a misreading of the semantics that
 * both share (round half to even, Python's mod, keepdims, first index on
 * ties, negative gather indices, slices with negative steps...).
 * Operands are mo.constant, so each graph has no inputs. Tolerance 0 except
 * for libm results, compared with 1e-6 (f32) / 1e-14 (f64) relative. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/gtext.h"
#include "support/oracle.h"

static void known(const char *label, gt *t, const oracle_expect *e, int n, double rtol) {
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  const char *text = gt_finish(t);
  cr_assert(text, "%s: the test's graph builder failed", label);
  int rc = oracle_known(label, text, e, n, rtol, 0, r);
  cr_expect_eq(rc, 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* one op on one constant */
static void known1(const char *label, const char *op, const char *attrs, const char *dt,
                   const char *shape, const char *values, const char *out_dt,
                   const char *out_shape, oracle_expect e, double rtol) {
  gt *t = gt_new("known", NULL);
  int c = gt_const(t, dt, shape, values);
  gt_out(t, gt_op1(t, op, attrs, c, out_dt, out_shape));
  known(label, t, &e, 1, rtol);
}

/* one op on two constants */
static void known2(const char *label, const char *op, const char *attrs, const char *dt,
                   const char *sa, const char *va, const char *sb, const char *vb,
                   const char *out_dt, const char *out_shape, oracle_expect e, double rtol) {
  gt *t = gt_new("known", NULL);
  int a = gt_const(t, dt, sa, va);
  int b = gt_const(t, dt, sb, vb);
  gt_out(t, gt_op2(t, op, attrs, a, b, out_dt, out_shape));
  known(label, t, &e, 1, rtol);
}

#define F64(...) ((const double[]){__VA_ARGS__})
#define I32(...) ((const int32_t[]){__VA_ARGS__})
#define B(...) ((const uint8_t[]){__VA_ARGS__})

/* ---- elementwise ---- */

Test(known, round_is_half_to_even) {
  known1("round", "mo.round", NULL, "f32", "8", "-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999998",
         "f32", "8",
         (oracle_expect){KILN_FLOAT32, 1, {8}, ORACLE_F32(-2, -2, -0.0f, 0, 2, 2, 4, 2)}, 0);
}

Test(known, floor_and_trunc_of_negatives) {
  known1("floor", "mo.floor", NULL, "f64", "3", "-1.5, 1.5, -0.0", "f64", "3",
         (oracle_expect){KILN_FLOAT64, 1, {3}, F64(-2, 1, -0.0)}, 0);
  known1("trunc", "mo.trunc", NULL, "f64", "3", "-1.5, 1.5, -0.25", "f64", "3",
         (oracle_expect){KILN_FLOAT64, 1, {3}, F64(-1, 1, -0.0)}, 0);
}

/* Python's %: the result has the divisor's sign */
Test(known, int_mod_is_floor_mod) {
  known2("mod si32", "mo.mod", NULL, "si32", "6", "7, -7, 7, -7, 0, 6", "6", "3, 3, -3, -3, 5, -3",
         "si32", "6", (oracle_expect){KILN_INT32, 1, {6}, I32(1, 2, -2, -1, 0, 0)}, 0);
  known2("mod si64 extremes", "mo.mod", NULL, "si64", "3",
         "-9223372036854775808, 9223372036854775807, -1", "3",
         "-1, -9223372036854775808, 9223372036854775807", "si64", "3",
         (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(0, -1, INT64_MAX - 1)}, 0);
}

Test(known, float_mod_is_floor_mod) {
  known2("mod f64", "mo.mod", NULL, "f64", "8", "5.5, -5.5, 5.5, -5.5, 6.0, -6.0, 6.0, -0.0", "8",
         "2, 2, -2, -2, 3, 3, -3, 3", "f64", "8",
         (oracle_expect){KILN_FLOAT64, 1, {8}, F64(1.5, 0.5, -0.5, -1.5, 0.0, 0.0, -0.0, 0.0)},
         0);
}

Test(known, relu_and_abs_of_signed_zero) {
  known1("relu", "mo.relu", NULL, "f32", "4", "-0.0, -1.0, 2.0, nan", "f32", "4",
         (oracle_expect){KILN_FLOAT32, 1, {4}, ORACLE_F32(0.0f, 0.0f, 2.0f, NAN)}, 0);
  known1("abs", "mo.abs", NULL, "f32", "3", "-0.0, -1.0, -inf", "f32", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(0.0f, 1.0f, INFINITY)}, 0);
  known1("relu si32", "mo.relu", NULL, "si32", "3", "-5, 0, 5", "si32", "3",
         (oracle_expect){KILN_INT32, 1, {3}, I32(0, 0, 5)}, 0);
}

Test(known, gelu_variants_at_one) {
  known1("gelu", "mo.gelu", NULL, "f64", "2", "1.0, 0.0", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(0.8413447460685429, 0.0)}, 1e-14);
  known1("gelu tanh", "mo.gelu", "{approximate = \"tanh\"}", "f64", "1", "1.0", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(0.8411919906082768)}, 1e-14);
  known1("gelu quick", "mo.gelu", "{approximate = \"quick\"}", "f64", "1", "1.0", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(0.8457957659328212)}, 1e-14);
}

Test(known, transcendentals) {
  known1("sigmoid", "mo.sigmoid", NULL, "f64", "3", "0.0, 1.0, -1000.0", "f64", "3",
         (oracle_expect){KILN_FLOAT64, 1, {3}, F64(0.5, 0.7310585786300049, 0.0)}, 1e-14);
  known1("silu", "mo.silu", NULL, "f64", "1", "1.0", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(0.7310585786300049)}, 1e-14);
  known1("erf", "mo.erf", NULL, "f64", "1", "0.5", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(0.5204998778130465)}, 1e-14);
  known1("log1p", "mo.log1p", NULL, "f64", "1", "1.0e-10", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(9.9999999995e-11)}, 1e-14);
  known1("rsqrt", "mo.rsqrt", NULL, "f32", "2", "4.0, 0.0", "f32", "2",
         (oracle_expect){KILN_FLOAT32, 1, {2}, ORACLE_F32(0.5f, INFINITY)}, 0);
  known1("exp", "mo.exp", NULL, "f32", "3", "0.0, -inf, 100.0", "f32", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(1.0f, 0.0f, INFINITY)}, 0);
}

Test(known, pow_cases) {
  known2("pow", "mo.pow", NULL, "f64", "4", "-2.0, 2.0, 0.0, 9.0", "4", "3.0, -1.0, 0.0, 0.5",
         "f64", "4", (oracle_expect){KILN_FLOAT64, 1, {4}, F64(-8.0, 0.5, 1.0, 3.0)}, 1e-14);
}

Test(known, nan_compares_and_predicates) {
  known2("equal", "mo.equal", NULL, "f32", "3", "nan, 1.0, -0.0", "3", "nan, 1.0, 0.0", "bool",
         "3", (oracle_expect){KILN_BOOL, 1, {3}, B(0, 1, 1)}, 0);
  known2("not_equal", "mo.not_equal", NULL, "f32", "3", "nan, 1.0, -0.0", "3", "nan, 1.0, 0.0",
         "bool", "3", (oracle_expect){KILN_BOOL, 1, {3}, B(1, 0, 0)}, 0);
  known2("greater", "mo.greater", NULL, "f32", "3", "nan, 2.0, 1.0", "3", "1.0, nan, 1.0", "bool",
         "3", (oracle_expect){KILN_BOOL, 1, {3}, B(0, 0, 0)}, 0);
  known2("greater_equal", "mo.greater_equal", NULL, "f32", "3", "nan, 2.0, 1.0", "3",
         "1.0, 1.0, 1.0", "bool", "3", (oracle_expect){KILN_BOOL, 1, {3}, B(0, 1, 1)}, 0);
  known1("is_inf", "mo.is_inf", NULL, "f64", "4", "inf, -inf, nan, 1.0e308", "bool", "4",
         (oracle_expect){KILN_BOOL, 1, {4}, B(1, 1, 0, 0)}, 0);
  known1("is_nan", "mo.is_nan", NULL, "f32", "3", "nan, inf, 0.0", "bool", "3",
         (oracle_expect){KILN_BOOL, 1, {3}, B(1, 0, 0)}, 0);
}

/* numpy's maximum / minimum propagate NaN */
Test(known, max_min_propagate_nan) {
  known2("max", "mo.max", NULL, "f32", "3", "nan, 1.0, -0.0", "3", "1.0, nan, 0.0", "f32", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(NAN, NAN, 0.0f)}, 0);
  known2("min", "mo.min", NULL, "f32", "3", "nan, 1.0, -0.0", "3", "1.0, nan, 0.0", "f32", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(NAN, NAN, -0.0f)}, 0);
}

Test(known, broadcasting_add) {
  known2("add", "mo.add", NULL, "si32", "2, 1", "10, 20", "3", "1, 2, 3", "si32", "2, 3",
         (oracle_expect){KILN_INT32, 2, {2, 3}, I32(11, 12, 13, 21, 22, 23)}, 0);
}

Test(known, where_selects) {
  gt *t = gt_new("known", NULL);
  int ins[3] = {gt_const(t, "bool", "3", "true, false, true"), gt_const(t, "si64", "3", "1, 2, 3"),
                gt_const(t, "si64", "", "-9")};
  gt_out(t, gt_op(t, "mo.where", NULL, ins, 3, "si64", "3"));
  oracle_expect e = {KILN_INT64, 1, {3}, ORACLE_I64(1, -9, 3)};
  known("where", t, &e, 1, 0);
}

Test(known, logical_ops) {
  known2("xor", "mo.logical_xor", NULL, "bool", "4", "false, false, true, true", "4",
         "false, true, false, true", "bool", "4", (oracle_expect){KILN_BOOL, 1, {4}, B(0, 1, 1, 0)},
         0);
  known1("not", "mo.logical_not", NULL, "bool", "2", "false, true", "bool", "2",
         (oracle_expect){KILN_BOOL, 1, {2}, B(1, 0)}, 0);
}

/* truncation toward zero; NaN -> 0 and saturation (kiln's documented choice) */
Test(known, cast_cases) {
  known1("f32 -> si32", "mo.cast", "{dtype = si32}", "f32", "6", "-2.7, 2.7, -0.5, nan, 1.0e20, -inf",
         "si32", "6",
         (oracle_expect){KILN_INT32, 1, {6}, I32(-2, 2, 0, 0, INT32_MAX, INT32_MIN)}, 0);
  known1("f32 -> bool", "mo.cast", "{dtype = bool}", "f32", "4", "0.0, -0.0, 0.1, nan", "bool", "4",
         (oracle_expect){KILN_BOOL, 1, {4}, B(0, 0, 1, 1)}, 0);
  known1("si32 -> bool", "mo.cast", "{dtype = bool}", "si32", "3", "0, -3, 256", "bool", "3",
         (oracle_expect){KILN_BOOL, 1, {3}, B(0, 1, 1)}, 0);
  known1("bool -> f64", "mo.cast", "{dtype = f64}", "bool", "2", "true, false", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(1.0, 0.0)}, 0);
  known1("si64 -> si32 wraps", "mo.cast", "{dtype = si32}", "si64", "2", "4294967297, -4294967297",
         "si32", "2", (oracle_expect){KILN_INT32, 1, {2}, I32(1, -1)}, 0);
}

/* ---- reductions keep the axis as 1; first index on ties ---- */

Test(known, reductions) {
  known1("argmax ties", "mo.argmax", NULL, "f32", "2, 4", "1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 5.0",
         "si64", "2, 1", (oracle_expect){KILN_INT64, 2, {2, 1}, ORACLE_I64(1, 0)}, 0);
  known1("argmin axis 0", "mo.argmin", "{axis = 0}", "si32", "3, 2", "2, 1, 1, 1, 0, 5", "si64",
         "1, 2", (oracle_expect){KILN_INT64, 2, {1, 2}, ORACLE_I64(2, 0)}, 0);
  known1("sum axis 0", "mo.sum", "{axis = 0}", "si32", "2, 2", "1, 2, 3, 4", "si32", "1, 2",
         (oracle_expect){KILN_INT32, 2, {1, 2}, I32(4, 6)}, 0);
  known1("mean", "mo.mean", NULL, "f64", "4", "1.0, 2.0, 3.0, 4.0", "f64", "1",
         (oracle_expect){KILN_FLOAT64, 1, {1}, F64(2.5)}, 0);
  known1("max axis 1", "mo.max", "{axis = 1}", "si64", "2, 2", "-5, -7, 3, 9", "si64", "2, 1",
         (oracle_expect){KILN_INT64, 2, {2, 1}, ORACLE_I64(-5, 9)}, 0);
  known1("min", "mo.min", "{axis = -1}", "f32", "3", "2.0, -1.0, 0.5", "f32", "1",
         (oracle_expect){KILN_FLOAT32, 1, {1}, ORACLE_F32(-1.0f)}, 0);
}

Test(known, softmax_and_logsoftmax) {
  known1("softmax", "mo.softmax", NULL, "f64", "2", "0.0, 0.6931471805599453", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(1.0 / 3.0, 2.0 / 3.0)}, 1e-14);
  known1("logsoftmax", "mo.logsoftmax", NULL, "f64", "2", "0.0, 0.6931471805599453", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(-1.0986122886681098, -0.40546510810816444)},
         1e-14);
  known1("softmax axis 0", "mo.softmax", "{axis = 0}", "f64", "2, 1", "5.0, 5.0", "f64", "2, 1",
         (oracle_expect){KILN_FLOAT64, 2, {2, 1}, F64(0.5, 0.5)}, 1e-14);
}

/* population variance (divide by D), epsilon inside the square root */
Test(known, layer_norm) {
  gt *t = gt_new("known", NULL);
  int ins[3] = {gt_const(t, "f64", "4", "1.0, 2.0, 3.0, 4.0"),
                gt_const(t, "f64", "4", "1.0, 1.0, 2.0, 1.0"),
                gt_const(t, "f64", "4", "0.0, 0.0, 0.0, 10.0")};
  gt_out(t, gt_op(t, "mo.layer_norm", NULL, ins, 3, "f64", "4"));
  oracle_expect e = {KILN_FLOAT64, 1, {4},
                     F64(-1.3416354199689269, -0.447211806656309, 2 * 0.447211806656309,
                         10 + 1.3416354199689269)};
  known("layer_norm", t, &e, 1, 1e-14);
}

/* ---- matmul ---- */

Test(known, matmul_and_batch_broadcast) {
  known2("matmul", "mo.matmul", NULL, "f32", "2, 2", "1, 2, 3, 4", "2, 2", "5, 6, 7, 8", "f32",
         "2, 2", (oracle_expect){KILN_FLOAT32, 2, {2, 2}, ORACLE_F32(19, 22, 43, 50)}, 0);
  /* [2, 1, 2] x [2, 1]: each batch row times the same column */
  known2("matmul batch", "mo.matmul", NULL, "f64", "2, 1, 2", "1, 2, 3, 4", "2, 1", "10, 1", "f64",
         "2, 1, 1", (oracle_expect){KILN_FLOAT64, 3, {2, 1, 1}, F64(12, 34)}, 0);
}

/* ---- movement ---- */

Test(known, transpose_permute_reshape) {
  known1("transpose", "mo.transpose", "{axis_1 = 0, axis_2 = 1}", "si32", "2, 3", "1, 2, 3, 4, 5, 6",
         "si32", "3, 2", (oracle_expect){KILN_INT32, 2, {3, 2}, I32(1, 4, 2, 5, 3, 6)}, 0);
  /* x[i, j, k] = 4i + 2j + k; permute [2, 0, 1]: y[k, i, j] */
  known1("permute", "mo.permute", "{dims = [2, 0, 1]}", "si32", "2, 2, 2", "0, 1, 2, 3, 4, 5, 6, 7",
         "si32", "2, 2, 2", (oracle_expect){KILN_INT32, 3, {2, 2, 2}, I32(0, 2, 4, 6, 1, 3, 5, 7)},
         0);
  known1("reshape", "mo.reshape", NULL, "si32", "2, 3", "1, 2, 3, 4, 5, 6", "si32", "3, 2",
         (oracle_expect){KILN_INT32, 2, {3, 2}, I32(1, 2, 3, 4, 5, 6)}, 0);
  known1("broadcast_to", "mo.broadcast_to", NULL, "si32", "2, 1", "1, 2", "si32", "2, 3",
         (oracle_expect){KILN_INT32, 2, {2, 3}, I32(1, 1, 1, 2, 2, 2)}, 0);
}

Test(known, concat_and_split_order) {
  known2("concat", "mo.concat", "{axis = 1}", "si32", "2, 1", "1, 2", "2, 2", "3, 4, 5, 6", "si32",
         "2, 3", (oracle_expect){KILN_INT32, 2, {2, 3}, I32(1, 3, 4, 2, 5, 6)}, 0);
  gt *t = gt_new("known", NULL);
  int c = gt_const(t, "si32", "5", "1, 2, 3, 4, 5");
  const char *dts[2] = {"si32", "si32"}, *shapes[2] = {"2", "3"};
  int s = gt_opn(t, "mo.split", "{split_sizes = [2, 3]}", &c, 1, 2, dts, shapes);
  gt_out(t, s);
  gt_out(t, s + 1);
  oracle_expect e[2] = {{KILN_INT32, 1, {2}, I32(1, 2)}, {KILN_INT32, 1, {3}, I32(3, 4, 5)}};
  known("split", t, e, 2, 0);
}

#define MAXI "9223372036854775807"
#define MINI "-9223372036854775808"

Test(known, slices_with_negative_steps) {
  const char *x = "0, 1, 2, 3, 4, 5, 6, 7, 8, 9";
  known1("x[8:2:-2]", "mo.slice_tensor", "{start = [8], stop = [2], step = [-2]}", "si64", "10", x,
         "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(8, 6, 4)}, 0);
  known1("x[::-1]", "mo.slice_tensor", "{start = [" MINI "], stop = [" MAXI "], step = [-1]}",
         "si64", "10", x, "si64", "10",
         (oracle_expect){KILN_INT64, 1, {10}, ORACLE_I64(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)}, 0);
  known1("x[-3:]", "mo.slice_tensor", "{start = [-3], stop = [" MAXI "], step = [1]}", "si64", "10",
         x, "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(7, 8, 9)}, 0);
  known1("x[1:9:3]", "mo.slice_tensor", "{start = [1], stop = [9], step = [3]}", "si64", "10", x,
         "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(1, 4, 7)}, 0);
  known1("x[-1:-11:-4]", "mo.slice_tensor", "{start = [-1], stop = [-11], step = [-4]}", "si64",
         "10", x, "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(9, 5, 1)}, 0);
}

Test(known, gather_negative_indices) {
  known2("gather axis 0", "mo.gather", "{axis = 0}", "si64", "5", "10, 20, 30, 40, 50", "3",
         "-1, 0, 2", "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(50, 10, 30)}, 0);
  gt *t = gt_new("known", NULL);
  int a = gt_const(t, "f32", "2, 3", "1, 2, 3, 4, 5, 6");
  int i = gt_const(t, "si32", "2, 2", "-1, 0, 1, 1");
  gt_out(t, gt_op2(t, "mo.gather", NULL, a, i, "f32", "2, 2, 2"));
  oracle_expect e = {KILN_FLOAT32, 3, {2, 2, 2}, ORACLE_F32(3, 1, 2, 2, 6, 4, 5, 5)};
  known("gather axis -1 with 2-d indices", t, &e, 1, 0);
}

Test(known, squeeze_unsqueeze_shapes) {
  known1("unsqueeze", "mo.unsqueeze", "{axis = -1}", "f32", "2", "1, 2", "f32", "2, 1",
         (oracle_expect){KILN_FLOAT32, 2, {2, 1}, ORACLE_F32(1, 2)}, 0);
  known1("squeeze", "mo.squeeze", "{axis = 0}", "f32", "1, 2", "1, 2", "f32", "2",
         (oracle_expect){KILN_FLOAT32, 1, {2}, ORACLE_F32(1, 2)}, 0);
}

/* steps and bounds at the ends of int64 (no overflow in the length
 * computation): x[::INT64_MAX] = [x0], x[::INT64_MIN] = [x9] */
Test(known, slices_with_extreme_steps_and_bounds) {
  const char *x = "0, 1, 2, 3, 4, 5, 6, 7, 8, 9";
  known1("step max", "mo.slice_tensor", "{start = [0], stop = [" MAXI "], step = [" MAXI "]}",
         "si64", "10", x, "si64", "1", (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(0)}, 0);
  known1("step min", "mo.slice_tensor", "{start = [" MINI "], stop = [" MAXI "], step = [" MINI "]}",
         "si64", "10", x, "si64", "1", (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(9)}, 0);
  known1("start min + 1", "mo.slice_tensor",
         "{start = [-9223372036854775807], stop = [" MAXI "], step = [3]}", "si64", "10", x, "si64",
         "4", (oracle_expect){KILN_INT64, 1, {4}, ORACLE_I64(0, 3, 6, 9)}, 0);
  known1("negative step from max", "mo.slice_tensor",
         "{start = [" MAXI "], stop = [-9223372036854775807], step = [-4]}", "si64", "10", x,
         "si64", "3", (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(9, 5, 1)}, 0);
}

Test(known, int_mod_si32_extremes) {
  known2("mod si32 extremes", "mo.mod", NULL, "si32", "3", "-2147483648, 2147483647, -2147483648",
         "3", "-1, -2147483648, 2147483647", "si32", "3",
         (oracle_expect){KILN_INT32, 1, {3}, I32(0, -1, 2147483646)}, 0);
}

/* ---- issue 17's first ops ---- */

Test(known, ceil_of_negatives) {
  known1("ceil", "mo.ceil", NULL, "f64", "4", "-1.5, 1.5, -0.25, 2.0", "f64", "4",
         (oracle_expect){KILN_FLOAT64, 1, {4}, F64(-1, 2, -0.0, 2)}, 0);
}

Test(known, inverse_trigonometric) {
  known1("acos", "mo.acos", NULL, "f64", "3", "1.0, 0.5, 2.0", "f64", "3",
         (oracle_expect){KILN_FLOAT64, 1, {3}, F64(0.0, 1.0471975511965979, NAN)}, 1e-14);
  known1("asin", "mo.asin", NULL, "f64", "2", "1.0, -0.0", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(1.5707963267948966, -0.0)}, 1e-14);
  known1("atan", "mo.atan", NULL, "f64", "2", "1.0, inf", "f64", "2",
         (oracle_expect){KILN_FLOAT64, 1, {2}, F64(0.7853981633974483, 1.5707963267948966)}, 1e-14);
  known1("atanh", "mo.atanh", NULL, "f64", "3", "0.5, 1.0, 0.0", "f64", "3",
         (oracle_expect){KILN_FLOAT64, 1, {3}, F64(0.5493061443340548, INFINITY, 0.0)}, 1e-14);
}

/* Python's //: toward -inf; INT_MIN // -1 wraps */
Test(known, floor_div_is_python_floor_division) {
  known2("floor_div si32", "mo.floor_div", NULL, "si32", "6", "7, -7, 7, -7, 0, -2147483648", "6",
         "2, 2, -2, -2, 5, -1", "si32", "6",
         (oracle_expect){KILN_INT32, 1, {6}, I32(3, -4, -4, 3, 0, INT32_MIN)}, 0);
  known2("floor_div f64", "mo.floor_div", NULL, "f64", "5", "7.5, -7.5, 7.5, 1.0, -0.0", "5",
         "2, 2, -2, 0, 3", "f64", "5",
         (oracle_expect){KILN_FLOAT64, 1, {5}, F64(3, -4, -4, INFINITY, -0.0)}, 0);
}

/* seed 002: div is true division (Python's /), ints give floats */
Test(known, div_of_ints_is_true_division) {
  known2("div si32", "mo.div", NULL, "si32", "4", "7, -7, 1, 0", "4", "2, 2, 0, 0", "f64", "4",
         (oracle_expect){KILN_FLOAT64, 1, {4}, F64(3.5, -3.5, INFINITY, NAN)}, 0);
}

Test(known, int_pow) {
  known2("pow si64", "mo.pow", NULL, "si64", "8", "2, -3, 5, 2, -1, 1, 2, 3", "8",
         "10, 3, 0, -1, -3, -5, 63, 40", "si64", "8",
         (oracle_expect){KILN_INT64, 1, {8},
                         ORACLE_I64(1024, -27, 1, 0, -1, 1, INT64_MIN, -6289078614652622815LL)}, 0);
  known2("pow si32 wraps", "mo.pow", NULL, "si32", "2", "7, -2", "2", "20, 31", "si32", "2",
         (oracle_expect){KILN_INT32, 1, {2}, I32(-1199696159, INT32_MIN)}, 0);
}

/* seed 002's cumsum: [1, 2, 3] -> [1, 3, 6]; exclusive starts at 0 and
 * drops the last; reverse sums from the back */
Test(known, cumsum_modes) {
  known1("cumsum", "mo.cumsum", NULL, "si32", "3", "1, 2, 3", "si32", "3",
         (oracle_expect){KILN_INT32, 1, {3}, I32(1, 3, 6)}, 0);
  known1("cumsum exclusive", "mo.cumsum", "{exclusive = true}", "si32", "3", "1, 2, 3", "si32",
         "3", (oracle_expect){KILN_INT32, 1, {3}, I32(0, 1, 3)}, 0);
  known1("cumsum reverse", "mo.cumsum", "{reverse = true}", "f32", "3", "1, 2, 3", "f32", "3",
         (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(6, 5, 3)}, 0);
  known1("cumsum exclusive reverse", "mo.cumsum", "{exclusive = true, reverse = true}", "f64",
         "3", "1, 2, 3", "f64", "3", (oracle_expect){KILN_FLOAT64, 1, {3}, F64(5, 3, 0)}, 0);
  known1("cumsum axis 0", "mo.cumsum", "{axis = 0}", "si64", "2, 3", "1, 2, 3, 4, 5, 6", "si64",
         "2, 3", (oracle_expect){KILN_INT64, 2, {2, 3}, ORACLE_I64(1, 2, 3, 5, 7, 9)}, 0);
}

/* prod keeps the axis as 1, like the other reductions */
Test(known, prod_keeps_the_axis) {
  known1("prod axis 1", "mo.prod", "{axis = 1}", "si32", "2, 3", "1, 2, 3, 4, 5, 6", "si32",
         "2, 1", (oracle_expect){KILN_INT32, 2, {2, 1}, I32(6, 120)}, 0);
  known1("prod axis 0", "mo.prod", "{axis = 0}", "f32", "2, 3", "1, 2, 3, 4, 5, -6", "f32",
         "1, 3", (oracle_expect){KILN_FLOAT32, 2, {1, 3}, ORACLE_F32(4, 10, -18)}, 0);
  known1("prod of nothing", "mo.prod", "{axis = 1}", "f64", "2, 0", "", "f64", "2, 1",
         (oracle_expect){KILN_FLOAT64, 2, {2, 1}, F64(1, 1)}, 0);
}

/* numpy: the first NaN wins for argmax and argmin alike; ties (and -0 vs
 * +0, which compare equal) go to the first index */
Test(known, argmax_argmin_as_numpy) {
  known1("argmax nan", "mo.argmax", NULL, "f32", "4", "1.0, nan, 3.0, nan", "si64", "1",
         (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(1)}, 0);
  known1("argmin nan", "mo.argmin", NULL, "f64", "4", "1.0, -inf, nan, nan", "si64", "1",
         (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(2)}, 0);
  known1("argmax ties", "mo.argmax", NULL, "si32", "4", "2, 5, 5, 1", "si64", "1",
         (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(1)}, 0);
  known1("argmin ties", "mo.argmin", "{axis = 0}", "f32", "3, 2", "3.0, -0.0, 1.0, 0.0, 1.0, -1.0",
         "si64", "1, 2", (oracle_expect){KILN_INT64, 2, {1, 2}, ORACLE_I64(1, 2)}, 0);
  known1("argmax signed zeros", "mo.argmax", NULL, "f32", "3", "-0.0, 0.0, -1.0", "si64", "1",
         (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(0)}, 0);
}

/* seed 002's in_band(m, n): (m - n) <= num_lower and (n - m) <= num_upper */
Test(known, band_part_keeps_the_band) {
  known1("band_part tridiagonal", "mo.band_part", "{num_lower = 1, num_upper = 0}", "si32", "3, 3",
         "1, 2, 3, 4, 5, 6, 7, 8, 9", "si32", "3, 3",
         (oracle_expect){KILN_INT32, 2, {3, 3}, I32(1, 0, 0, 4, 5, 0, 0, 8, 9)}, 0);
  known1("band_part exclude", "mo.band_part", "{num_lower = 0, num_upper = 0, exclude = true}",
         "f32", "2, 3", "1, 2, 3, 4, 5, 6", "f32", "2, 3",
         (oracle_expect){KILN_FLOAT32, 2, {2, 3}, ORACLE_F32(0, 2, 3, 4, 0, 6)}, 0);
}
