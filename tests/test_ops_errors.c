/* test_ops_errors.c - errors the JIT and the reference interpreter must
 * agree on: data errors found while running (gather index out of range,
 * integer mod by zero) and run-time shape checks (a symbolic dim that must
 * equal a static one, split sizes, slice bounds, squeeze, matmul K, reshape
 * element counts). Each must be an error from both sides (a status, never a
 * crash), name the op and the value, and leave the model usable.
 * Also: a rule violation found by the verifier carries KILN_ERR_VERIFY
 * (common.h: "well-formed IR that breaks an op's rules"). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "support/gtext.h"
#include "support/oracle.h"

/* Run c expecting an error from both; check the JIT's code and that both
 * messages contain every word of `words` (NULL-terminated). */
static void expect_both_fail(oracle_case *c, kiln_code code, const char *const *words) {
  c->expect_error = true;
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(c, r);
  cr_expect_eq(rc, 0, "%s", r->msg);
  if (rc == 0) {
    cr_expect_eq(r->jit_code, code, "%s: JIT code %s, expected %s (%s)", c->label,
                 kiln_code_name(r->jit_code), kiln_code_name(code), r->jit_msg);
    for (int i = 0; words && words[i]; i++) {
      cr_expect(strstr(r->jit_msg, words[i]) != NULL, "%s: JIT message lacks '%s': %s", c->label,
                words[i], r->jit_msg);
      cr_expect(strstr(r->oracle_msg, words[i]) != NULL, "%s: oracle message lacks '%s': %s",
                c->label, words[i], r->oracle_msg);
    }
  }
  free(r);
}

/* ---- gather: index out of range ---- */

static void gather_oob(const char *idt, const char *in, const char *idx, const char *attrs,
                       const char *out, double bad, const char *bindings) {
  gt *t = gt_new("gather_oob", bindings && bindings[0] ? "n" : NULL);
  int x = gt_in(t, "f32", in);
  int i = gt_in_gen(t, idt, idx, gen_const(bad));
  int y = gt_op2(t, "mo.gather", attrs, x, i, "f32", out);
  gt_out(t, gt_op1(t, "mo.relu", NULL, y, "f32", out)); /* the error must stop the graph */
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[160];
  snprintf(label, sizeof label, "gather %s index %g into %s %s", idt, bad, in,
           attrs ? attrs : "");
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 71,
                   .gens = gens, .ngens = ng};
  static const char *const words[] = {"mo.gather", "%v0", "out of range", NULL};
  expect_both_fail(&c, KILN_ERR_RUNTIME, words);
  gt_free(t);
}

Test(errors, gather_index_equal_to_dim) {
  gather_oob("si64", "5, 4", "3", "{axis = 0}", "3, 4", 5, "");
  gather_oob("si32", "5, 4", "3", "{axis = 0}", "3, 4", 5, "");
  gather_oob("si64", "5, 4", "2", "{axis = 1}", "5, 2", 4, "");
}

Test(errors, gather_index_below_minus_dim) {
  gather_oob("si64", "5, 4", "3", "{axis = 0}", "3, 4", -6, "");
  gather_oob("si32", "5, 4", "2", NULL, "5, 2", -5, "");
}

Test(errors, gather_index_far_out_of_range) {
  gather_oob("si64", "5, 4", "1", "{axis = 0}", "1, 4", 9.0e18, "");
  gather_oob("si64", "5, 4", "1", "{axis = 0}", "1, 4", -9.0e18, "");
  gather_oob("si32", "5, 4", "1", "{axis = 0}", "1, 4", 2147483647.0, "");
  gather_oob("si32", "5, 4", "1", "{axis = 0}", "1, 4", -2147483648.0, "");
}

Test(errors, gather_index_out_of_range_on_symbolic_dim) {
  gather_oob("si64", "n, 4", "2", "{axis = 0}", "2, 4", 3, "n=3");
  gather_oob("si64", "n, 4", "2", "{axis = 0}", "2, 4", -4, "n=3");
  gather_oob("si32", "n, 4", "2", "{axis = 0}", "2, 4", 0, "n=0");
}

Test(errors, gather_from_empty_axis) {
  gather_oob("si64", "0, 4", "1", "{axis = 0}", "1, 4", 0, "");
}

/* Indices out of range where the result has no elements to copy: a [5, 0]
 * input (inner size 0) or a [0, 5] input (outer size 0). numpy raises for
 * the first; kiln may decide either way, but both sides must decide alike. */
static void gather_oob_empty(const char *in, const char *attrs, const char *out) {
  gt *t = gt_new("gather_oob_empty", NULL);
  int x = gt_in(t, "f32", in);
  int i = gt_in_gen(t, "si64", "2", gen_const(9));
  gt_out(t, gt_op2(t, "mo.gather", attrs, x, i, "f32", out));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[128];
  snprintf(label, sizeof label, "gather index 9 into %s %s", in, attrs);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .seed = 72, .gens = gens, .ngens = ng};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  bool both_failed = rc != 0 && r->compiles && r->jit_failed && r->oracle_failed;
  cr_expect(rc == 0 || both_failed, "%s", r->msg);
  free(r);
  gt_free(t);
}

Test(errors, gather_out_of_range_with_empty_result) {
  gather_oob_empty("5, 0", "{axis = 0}", "2, 0");
  gather_oob_empty("0, 5", "{axis = 1}", "0, 2");
}

/* ---- integer mod by zero ---- */

/* op (mo.mod, mo.floor_div, mo.pow) of x by z, z with zeros; x: gx (pow
 * fails only for a zero base under a negative exponent). */
static void op_zero(const char *op, const char *dt, const char *a, const char *b, const char *out,
                    oracle_gen gx, oracle_gen gz) {
  gt *t = gt_new("div_zero", NULL);
  int x = gt_in_gen(t, dt, a, gx);
  int z = gt_in_gen(t, dt, b, gz);
  int y = gt_op2(t, op, NULL, x, z, dt, out);
  gt_out(t, gt_op1(t, "mo.abs", NULL, y, dt, out));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[128];
  snprintf(label, sizeof label, "%s %s [%s] by [%s] with zeros", op, dt, a, b);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .seed = 73, .gens = gens, .ngens = ng};
  const char *const words[] = {op, "%v0", "zero", NULL};
  expect_both_fail(&c, KILN_ERR_RUNTIME, words);
  gt_free(t);
}

static void mod_zero(const char *dt, const char *a, const char *b, const char *out) {
  op_zero("mo.mod", dt, a, b, out, (oracle_gen){0}, gen_uniform(-1, 1)); /* zeros among -1, 0, 1 */
}

/* integer floor_div by zero, and 0 to a negative power, are data errors
 * (ops.def) like integer mod by zero, never a trap or a made-up value */
Test(errors, int_floor_div_by_zero) {
  op_zero("mo.floor_div", "si32", "64", "64", "64", (oracle_gen){0}, gen_uniform(-1, 1));
  op_zero("mo.floor_div", "si64", "3, 5", "", "3, 5", (oracle_gen){0}, gen_const(0));
}

Test(errors, int_pow_zero_to_negative_power) {
  op_zero("mo.pow", "si32", "64", "64", "64", gen_uniform(-1, 1), gen_uniform(-2, -1));
  op_zero("mo.pow", "si64", "", "7", "7", gen_const(0), gen_uniform(-3, -1));
}

Test(errors, int_mod_by_zero) {
  mod_zero("si32", "64", "64", "64");
  mod_zero("si64", "64", "64", "64");
}

Test(errors, int_mod_by_broadcast_scalar_zero) {
  gt *t = gt_new("mod_zero", NULL);
  int x = gt_in(t, "si32", "3, 5");
  int z = gt_in_gen(t, "si32", "", gen_const(0));
  gt_out(t, gt_op2(t, "mo.mod", NULL, x, z, "si32", "3, 5"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "mod si32 [3, 5] by scalar 0", .mlir = gt_finish(t), .seed = 74,
                   .gens = gens, .ngens = ng};
  static const char *const words[] = {"mo.mod", "zero", NULL};
  expect_both_fail(&c, KILN_ERR_RUNTIME, words);
  gt_free(t);
}

/* float mod by zero is not an error: NaN (fmod), on both sides */
Test(errors, float_mod_by_zero_is_nan_not_error) {
  for (int d = 0; d < 2; d++) {
    const char *dt = d ? "f64" : "f32";
    gt *t = gt_new("fmod_zero", NULL);
    int x = gt_in(t, dt, "16");
    int z = gt_in_gen(t, dt, "16", gen_const(0));
    gt_out(t, gt_op2(t, "mo.mod", NULL, x, z, dt, "16"));
    int ng;
    const oracle_gen *gens = gt_gens(t, &ng);
    oracle_case c = {.label = dt, .mlir = gt_finish(t), .seed = 75, .gens = gens, .ngens = ng};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* ---- the model stays usable after a data error ---- */

Test(errors, model_runs_again_after_a_data_error) {
  const char *text =
      "mo.graph @g(%x: !mo.tensor<[5], f32>, %i: !mo.tensor<[2], si64>) -> "
      "(!mo.tensor<[2], f32>) {\n"
      "  %y = mo.gather(%x, %i) {axis = 0} : (!mo.tensor<[5], f32>, !mo.tensor<[2], si64>) -> "
      "!mo.tensor<[2], f32>\n"
      "  mo.output %y : !mo.tensor<[2], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "g.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  float x[5] = {1, 2, 3, 4, 5};
  int64_t bad[2] = {1, 7}, good[2] = {-1, 0};
  int64_t s5 = 5, s2 = 2;
  kiln_tensor *tx = kiln_tensor_borrow(KILN_FLOAT32, 1, &s5, x, st);
  kiln_tensor *tb = kiln_tensor_borrow(KILN_INT64, 1, &s2, bad, st);
  kiln_tensor *tg = kiln_tensor_borrow(KILN_INT64, 1, &s2, good, st);
  cr_assert(tx && tb && tg);
  kiln_tensor *out = NULL;
  kiln_tensor *ins[2] = {tx, tb};
  cr_expect_neq(kiln_model_execute(m, ins, 2, &out, 1, st), 0, "index 7 of 5 was accepted");
  cr_expect_eq(kiln_status_code(st), KILN_ERR_RUNTIME, "%s", kiln_status_message(st));
  cr_expect_null(out, "a failed execute filled the output slot");
  kiln_status_clear(st);
  ins[1] = tg;
  cr_expect_eq(kiln_model_execute(m, ins, 2, &out, 1, st), 0, "%s", kiln_status_message(st));
  if (out) {
    const float *y = kiln_tensor_data(out);
    cr_expect(y[0] == 5.0f && y[1] == 1.0f, "gather [-1, 0] of [1..5] gave [%g, %g]", y[0], y[1]);
  }
  kiln_tensor_free(out);
  kiln_tensor_free(tx);
  kiln_tensor_free(tb);
  kiln_tensor_free(tg);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* ---- run-time shape checks: same failure, same message on both sides ---- */

static void shape_check_fails(const char *label, gt *t, const char *bindings, const char *word) {
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 76};
  c.expect_error = true;
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  cr_expect_eq(rc, 0, "%s", r->msg);
  if (rc == 0) {
    cr_expect_eq(r->jit_code, KILN_ERR_SHAPE, "%s: JIT code %s (%s)", label,
                 kiln_code_name(r->jit_code), r->jit_msg);
    /* ir_solve_symbols is shared (interp.h), so the texts match */
    cr_expect(strstr(r->jit_msg, r->oracle_msg) != NULL,
              "%s: messages differ:\n  jit:    %s\n  oracle: %s", label, r->jit_msg,
              r->oracle_msg);
    cr_expect(strstr(r->oracle_msg, word) != NULL, "%s: message lacks '%s': %s", label, word,
              r->oracle_msg);
  }
  free(r);
  gt_free(t);
}

/* [n] + [5]: kiln requires n == 5 (ir/infer.c); n = 1 does not broadcast
 * either, since the result's dim was fixed to 5 at verify time */
Test(errors, symbolic_dim_broadcast_against_static_mismatch) {
  gt *t = gt_new("b", "n");
  gt_out(t, gt_op2(t, "mo.add", NULL, gt_in(t, "f32", "n"), gt_in(t, "f32", "5"), "f32", "5"));
  shape_check_fails("[n] + [5] with n = 3", t, "n=3", "mo.add");
  t = gt_new("b", "n");
  gt_out(t, gt_op2(t, "mo.add", NULL, gt_in(t, "f32", "n"), gt_in(t, "f32", "5"), "f32", "5"));
  shape_check_fails("[n] + [5] with n = 1", t, "n=1", "mo.add");
}

Test(errors, symbolic_dim_broadcast_against_static_match_runs) {
  gt *t = gt_new("b", "n");
  gt_out(t, gt_op2(t, "mo.add", NULL, gt_in(t, "f32", "n"), gt_in(t, "f32", "5"), "f32", "5"));
  oracle_case c = {.label = "[n] + [5] with n = 5", .mlir = gt_finish(t), .bindings = "n=5",
                   .seed = 77};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(errors, split_sizes_do_not_sum_to_symbolic_dim) {
  gt *t = gt_new("s", "n");
  const char *dts[2] = {"f32", "f32"}, *shapes[2] = {"2", "3"};
  int x = gt_in(t, "f32", "n");
  int first = gt_opn(t, "mo.split", "{split_sizes = [2, 3]}", &x, 1, 2, dts, shapes);
  gt_out(t, first);
  gt_out(t, first + 1);
  shape_check_fails("split [n] into [2, 3] with n = 4", t, "n=4", "mo.split");
}

/* a size from a declared type (k) beside a static one: n = k + 2 at run time */
Test(errors, declared_split_sizes_do_not_sum_to_symbolic_dim) {
  gt *t = gt_new("s", "n, k");
  const char *dts[2] = {"f32", "f32"}, *shapes[2] = {"k", "2"};
  int x = gt_in(t, "f32", "n");
  gt_out(t, gt_in(t, "f32", "k"));
  int first = gt_opn(t, "mo.split", "{split_sizes = [-1, 2]}", &x, 1, 2, dts, shapes);
  gt_out(t, first);
  gt_out(t, first + 1);
  shape_check_fails("split [n] into [k, 2] with n = 5, k = 2", t, "n=5,k=2", "mo.split");
}

Test(errors, slice_stop_beyond_symbolic_dim) {
  gt *t = gt_new("s", "n");
  gt_out(t, gt_op1(t, "mo.slice_tensor", "{start = [0], stop = [4], step = [1]}",
                   gt_in(t, "f32", "n"), "f32", "4"));
  shape_check_fails("slice [0:4] of [n] with n = 3", t, "n=3", "mo.slice_tensor");
}

Test(errors, squeeze_of_symbolic_dim_not_one) {
  gt *t = gt_new("s", "n");
  gt_out(t, gt_op1(t, "mo.squeeze", "{axis = 0}", gt_in(t, "f32", "n, 3"), "f32", "3"));
  shape_check_fails("squeeze axis 0 of [n, 3] with n = 2", t, "n=2", "mo.squeeze");
}

Test(errors, matmul_symbolic_k_mismatch) {
  gt *t = gt_new("m", "k, j");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, gt_in(t, "f32", "2, k"), gt_in(t, "f32", "j, 3"), "f32",
                   "2, 3"));
  shape_check_fails("matmul [2, k] x [j, 3] with k = 4, j = 5", t, "k=4,j=5", "mo.matmul");
}

Test(errors, reshape_element_count_mismatch) {
  gt *t = gt_new("r", "n, m");
  int x = gt_in(t, "f32", "n, 4");
  gt_out(t, gt_op1(t, "mo.reshape", NULL, x, "f32", "m, 2"));
  gt_out(t, gt_op1(t, "mo.relu", NULL, gt_in(t, "f32", "m"), "f32", "m"));
  shape_check_fails("reshape [n, 4] to [m, 2] with n = 3, m = 5", t, "n=3,m=5", "mo.reshape");
}

/* Inputs [n] and [n, 2] fed with n = 3 and n = 4: kiln_model_execute and
 * ir_interp_run (both through ir_solve_symbols) give the same message. */
Test(errors, two_inputs_disagree_on_a_symbol) {
  const char *text =
      "mo.graph @g<n>(%a: !mo.tensor<[n], f32>, %b: !mo.tensor<[n, 2], f32>) -> "
      "(!mo.tensor<[n], f32>) {\n"
      "  mo.output %a : !mo.tensor<[n], f32>\n}\n";
  float buf[16] = {0};
  int64_t sa[1] = {3}, sb[2] = {4, 2};
  /* oracle */
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert(g, "%d:%d: %s", d.line, d.col, d.msg);
  ir_tensor ins[2] = {{IR_DT_F32, 1, {3}, buf}, {IR_DT_F32, 2, {4, 2}, buf}};
  ir_tensor outs[1];
  char omsg[512] = "";
  cr_expect_neq(ir_interp_run(g, ins, NULL, NULL, outs, omsg, sizeof omsg), 0,
                "the interpreter accepted n = 3 and n = 4");
  ir_graph_free(g);
  /* JIT */
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = kiln_graph_parse(text, strlen(text), NULL, st);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kg && ctx ? kiln_model_compile(ctx, kg, st) : NULL;
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_tensor *ta = kiln_tensor_borrow(KILN_FLOAT32, 1, sa, buf, st);
  kiln_tensor *tb = kiln_tensor_borrow(KILN_FLOAT32, 2, sb, buf, st);
  kiln_tensor *kins[2] = {ta, tb}, *out = NULL;
  cr_expect_neq(kiln_model_execute(m, kins, 2, &out, 1, st), 0, "kiln accepted n = 3 and n = 4");
  cr_expect_eq(kiln_status_code(st), KILN_ERR_SHAPE, "%s", kiln_status_message(st));
  cr_expect(strstr(kiln_status_message(st), omsg) != NULL,
            "messages differ:\n  jit:    %s\n  oracle: %s", kiln_status_message(st), omsg);
  cr_expect(strstr(omsg, "input 1") != NULL && strstr(omsg, "axis 0") != NULL,
            "the message does not name input 1 axis 0: %s", omsg);
  kiln_tensor_free(out);
  kiln_tensor_free(ta);
  kiln_tensor_free(tb);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(kg);
  kiln_status_free(st);
}

/* an input with an algebraic dim ([2 * n]) is checked against n from another */
Test(errors, algebraic_input_dim_runs_when_consistent) {
  gt *t = gt_new("d", "n");
  int a = gt_in(t, "f32", "n, 2");
  int b = gt_in(t, "f32", "2 * n");
  gt_out(t, gt_op1(t, "mo.relu", NULL, a, "f32", "n, 2"));
  gt_out(t, gt_op1(t, "mo.relu", NULL, b, "f32", "2 * n"));
  oracle_case c = {.label = "inputs [n, 2] and [2 * n]", .mlir = gt_finish(t),
                   .bindings = "n=0;n=3", .seed = 78};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* ---- the verifier's errors carry KILN_ERR_VERIFY ---- */

Test(errors, rule_violation_has_verify_code) {
  const char *text = "mo.graph @g(%x: !mo.tensor<[4], si32>) -> (!mo.tensor<[4], si32>) {\n"
                     "  %y = mo.exp(%x) : (!mo.tensor<[4], si32>) -> !mo.tensor<[4], si32>\n"
                     "  mo.output %y : !mo.tensor<[4], si32>\n}\n";
  kiln_code code = KILN_OK;
  char msg[512];
  cr_expect_neq(oracle_compile_only(text, &code, msg, sizeof msg), 0, "exp of si32 was accepted");
  cr_expect(strstr(msg, "f32 or f64") != NULL, "message: %s", msg);
  cr_expect_eq(code, KILN_ERR_VERIFY, "exp of si32 gives %s, not %s: %s", kiln_code_name(code),
               kiln_code_name(KILN_ERR_VERIFY), msg);
}

/* by design: two different symbolic dims never broadcast (ir/infer.c: the
 * result's dim could not be named), even though n = 1 or m = 1 at run time
 * would broadcast in numpy; rejected when the graph is built */
Test(errors, two_different_symbolic_dims_do_not_broadcast) {
  const char *text =
      "mo.graph @g<n, m>(%a: !mo.tensor<[n], f32>, %b: !mo.tensor<[m], f32>) -> "
      "(!mo.tensor<[n], f32>) {\n"
      "  %y = mo.add(%a, %b) : (!mo.tensor<[n], f32>, !mo.tensor<[m], f32>) -> "
      "!mo.tensor<[n], f32>\n"
      "  mo.output %y : !mo.tensor<[n], f32>\n}\n";
  char msg[512];
  kiln_code code = KILN_OK;
  cr_expect_neq(oracle_ir_parse_only(text, msg, sizeof msg), 0, "ir_parse accepted [n] + [m]");
  cr_expect(strstr(msg, "does not broadcast") != NULL, "message: %s", msg);
  cr_expect_neq(oracle_compile_only(text, &code, msg, sizeof msg), 0, "kiln accepted [n] + [m]");
  cr_expect_eq(code, KILN_ERR_VERIFY, "code %s: %s", kiln_code_name(code), msg);
  cr_expect(strstr(msg, "does not broadcast") != NULL, "message: %s", msg);
}
