/* test_verify.c - op rules (ir_infer_node), run-time shape checks and whole
 * graph verification (ir_graph_verify), on graphs built with the builder API.
 * One behaviour per test; error messages are checked exactly. Nodes are built
 * at loc 1:1 so messages carry no "op #k: " prefix, except in the test of
 * that prefix. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static ir_graph *g;
static ir_diag diag;

static void setup(void) {
  g = ir_graph_new("t");
  cr_assert_not_null(g);
  memset(&diag, 0, sizeof diag);
}

static void teardown(void) { ir_graph_free(g); }

TestSuite(verify, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static int resolve(void *ud, const char *name, size_t len, ir_dim_err *err) {
  (void)err;
  return ir_graph_symbol(ud, name, len, true);
}

static const ir_dim *dim(const char *text) {
  size_t used;
  ir_dim_err err;
  const ir_dim *d = ir_dim_parse(g->arena, text, strlen(text), &used, resolve, g, &err);
  cr_assert_not_null(d, "dim '%s': %s", text, err.msg);
  return d;
}

/* A type from "batch, 4" (dims separated by commas; "" is rank 0). */
static ir_type ty(ir_dtype dt, const char *shape) {
  ir_type t = {.dtype = dt};
  const ir_dim **dims = ir_arena_alloc(g->arena, IR_MAX_RANK * sizeof *dims);
  const char *p = shape;
  while (*p) {
    size_t used;
    ir_dim_err err;
    const ir_dim *d = ir_dim_parse(g->arena, p, strlen(p), &used, resolve, g, &err);
    cr_assert_not_null(d, "shape '%s': %s", shape, err.msg);
    dims[t.rank++] = d;
    p += used;
    while (*p == ' ' || *p == ',') p++;
  }
  t.dims = t.rank ? dims : NULL;
  return t;
}

static ir_value *input(ir_dtype dt, const char *shape) {
  ir_type t = ty(dt, shape);
  ir_value *v = ir_graph_add_input(g, NULL, &t);
  cr_assert_not_null(v);
  return v;
}

static ir_attr aint(const char *name, int64_t v) {
  ir_attr a = {.name = name, .kind = IR_ATTR_INT};
  a.u.i = v;
  return a;
}

static ir_attr aints(const char *name, int n, const int64_t *v) {
  ir_attr a = {.name = name, .kind = IR_ATTR_INTS};
  a.u.ints.n = n;
  a.u.ints.v = v;
  return a;
}

static ir_attr afloat(const char *name, double v) {
  ir_attr a = {.name = name, .kind = IR_ATTR_FLOAT};
  a.u.f = v;
  return a;
}

static ir_attr astr(const char *name, const char *s) {
  ir_attr a = {.name = name, .kind = IR_ATTR_STRING};
  a.u.s = s;
  return a;
}

static ir_attr adtype(const char *name, ir_dtype dt) {
  ir_attr a = {.name = name, .kind = IR_ATTR_DTYPE};
  a.u.dtype = dt;
  return a;
}

/* A node at loc 1:1 with results of rank -1, or of the declared types. */
static ir_node *node(ir_op op, ir_value **in, int nin, const ir_attr *attrs, int nattrs, int nout,
                     const ir_type *out_types) {
  ir_node *n = ir_graph_add_node(g, op, in, nin, attrs, nattrs, nout, out_types, NULL,
                                 (ir_loc){1, 1}, &diag);
  cr_assert_not_null(n, "add_node: %s", diag.msg);
  return n;
}

/* Infer a node that must pass; returns its first result. */
static ir_value *ok(ir_op op, ir_value **in, int nin, const ir_attr *attrs, int nattrs) {
  ir_node *n = node(op, in, nin, attrs, nattrs, 1, NULL);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "unexpected error: %s", diag.msg);
  return n->out[0];
}

/* Same with a declared result type (reshape, broadcast_to, constants). */
static ir_value *ok_decl(ir_op op, ir_value **in, int nin, const ir_attr *attrs, int nattrs,
                         ir_type decl) {
  ir_node *n = node(op, in, nin, attrs, nattrs, 1, &decl);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "unexpected error: %s", diag.msg);
  return n->out[0];
}

/* Infer a node that must fail; returns the message. */
static const char *bad(ir_op op, ir_value **in, int nin, const ir_attr *attrs, int nattrs) {
  ir_node *n = node(op, in, nin, attrs, nattrs, 1, NULL);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0, "expected an error");
  return diag.msg;
}

static const char *bad_decl(ir_op op, ir_value **in, int nin, const ir_attr *attrs, int nattrs,
                            ir_type decl) {
  ir_node *n = node(op, in, nin, attrs, nattrs, 1, &decl);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0, "expected an error");
  return diag.msg;
}

static char tbuf[4][256];
static int tnext;
static const char *tstr(const ir_value *v) {
  char *b = tbuf[tnext++ % 4];
  ir_type_print(&v->type, b, sizeof tbuf[0]);
  return b;
}

static char dbuf[256];
static const char *dstr(const ir_dim *d) {
  ir_dim_print(d, dbuf, sizeof dbuf);
  return dbuf;
}

#define IN(...) ((ir_value *[]){__VA_ARGS__})
#define ATTRS(...) ((ir_attr[]){__VA_ARGS__})
#define INTS(...) ((int64_t[]){__VA_ARGS__})
#define NINTS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

#define expect_type(v, text) cr_assert_str_eq(tstr(v), text)
#define expect_msg(m, text) cr_assert_str_eq(m, text)

/* ---- elementwise ---- */

Test(verify, unary_keeps_type) {
  ir_value *x = input(IR_DT_SI32, "batch, 3");
  expect_type(ok(IR_OP_RELU, IN(x), 1, NULL, 0), "!mo.tensor<[batch, 3], si32>");
}

Test(verify, unary_float_rejects_int) {
  ir_value *x = input(IR_DT_SI32, "3");
  expect_msg(bad(IR_OP_EXP, IN(x), 1, NULL, 0),
             "operand 0 of mo.exp has dtype si32 but mo.exp takes f16, bf16, f32 or f64");
}

Test(verify, unary_rejects_storage_only_dtype) {
  ir_value *x = input(IR_DT_UI64, "3");
  expect_msg(bad(IR_OP_ABS, IN(x), 1, NULL, 0),
             "operand 0 of mo.abs has dtype ui64 but mo.abs takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
  ir_value *f8 = input(IR_DT_F8E4M3FN, "3");
  expect_msg(bad(IR_OP_EXP, IN(f8), 1, NULL, 0),
             "operand 0 of mo.exp has dtype f8e4m3fn but mo.exp takes f16, bf16, f32 or f64");
}

/* f16 and bf16 are float operands of float ops (computed in f32: widen_narrow.c) */
Test(verify, half_floats_are_float_operands) {
  ir_value *x = input(IR_DT_F16, "batch, 3"), *y = input(IR_DT_BF16, "3");
  expect_type(ok(IR_OP_EXP, IN(x), 1, NULL, 0), "!mo.tensor<[batch, 3], f16>");
  expect_type(ok(IR_OP_ABS, IN(y), 1, NULL, 0), "!mo.tensor<[3], bf16>");
}

Test(verify, unary_pred_gives_bool) {
  ir_value *x = input(IR_DT_F64, "2, n");
  expect_type(ok(IR_OP_IS_NAN, IN(x), 1, NULL, 0), "!mo.tensor<[2, n], bool>");
}

Test(verify, logical_not_rejects_float) {
  ir_value *x = input(IR_DT_F32, "2");
  expect_msg(bad(IR_OP_LOGICAL_NOT, IN(x), 1, NULL, 0),
             "operand 0 of mo.logical_not has dtype f32 but mo.logical_not takes bool");
}

Test(verify, gelu_rejects_unknown_approximation) {
  ir_value *x = input(IR_DT_F32, "2");
  expect_msg(bad(IR_OP_GELU, IN(x), 1, ATTRS(astr("approximate", "fast")), 1),
             "attribute 'approximate' of mo.gelu must be \"none\", \"tanh\" or \"quick\", not "
             "\"fast\"");
}

Test(verify, gelu_accepts_tanh) {
  ir_value *x = input(IR_DT_F32, "2");
  expect_type(ok(IR_OP_GELU, IN(x), 1, ATTRS(astr("approximate", "tanh")), 1),
              "!mo.tensor<[2], f32>");
}

Test(verify, binary_broadcasts_trailing_axes) {
  ir_value *a = input(IR_DT_F32, "batch, 4"), *b = input(IR_DT_F32, "4");
  expect_type(ok(IR_OP_ADD, IN(a, b), 2, NULL, 0), "!mo.tensor<[batch, 4], f32>");
}

Test(verify, binary_broadcasts_static_one) {
  ir_value *a = input(IR_DT_SI64, "3, 1"), *b = input(IR_DT_SI64, "1, 5");
  expect_type(ok(IR_OP_MUL, IN(a, b), 2, NULL, 0), "!mo.tensor<[3, 5], si64>");
}

Test(verify, binary_scalar_broadcasts) {
  ir_value *a = input(IR_DT_F32, "batch, seq"), *b = input(IR_DT_F32, "");
  expect_type(ok(IR_OP_MUL, IN(a, b), 2, NULL, 0), "!mo.tensor<[batch, seq], f32>");
}

Test(verify, binary_static_mismatch_message) {
  ir_value *a = input(IR_DT_F32, "5"), *b = input(IR_DT_F32, "4");
  expect_msg(bad(IR_OP_ADD, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.add has shape [4] which does not broadcast with [5]");
}

Test(verify, binary_mismatch_prints_symbolic_shapes) {
  ir_value *a = input(IR_DT_F32, "batch, 4"), *b = input(IR_DT_F32, "3");
  expect_msg(bad(IR_OP_SUB, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.sub has shape [3] which does not broadcast with [batch, 4]");
}

Test(verify, binary_two_symbols_do_not_broadcast) {
  ir_value *a = input(IR_DT_F32, "batch"), *b = input(IR_DT_F32, "seq");
  expect_msg(bad(IR_OP_ADD, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.add has shape [seq] which does not broadcast with [batch]");
}

Test(verify, binary_symbol_against_static_records_check) {
  ir_value *a = input(IR_DT_F32, "2, batch"), *b = input(IR_DT_F32, "5");
  ir_value *r = ok(IR_OP_ADD, IN(a, b), 2, NULL, 0);
  expect_type(r, "!mo.tensor<[2, 5], f32>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert_eq(g->checks[0].kind, IR_CHECK_EQ);
  cr_assert_str_eq(dstr(g->checks[0].lhs), "batch");
  cr_assert_str_eq(dstr(g->checks[0].rhs), "5");
  cr_assert_eq(g->checks[0].node, r->def);
  cr_assert_str_eq(g->checks[0].what,
                   "operand 0 axis 1 of mo.add (batch) must equal 5 to broadcast");
}

Test(verify, binary_check_names_the_symbolic_operand) {
  ir_value *a = input(IR_DT_F32, "7"), *b = input(IR_DT_F32, "n, m");
  ok(IR_OP_ADD, IN(a, b), 2, NULL, 0);
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(g->checks[0].what, "operand 1 axis 1 of mo.add (m) must equal 7 to broadcast");
}

Test(verify, binary_equal_symbols_need_no_check) {
  ir_value *a = input(IR_DT_F32, "batch * seq"), *b = input(IR_DT_F32, "seq * batch");
  expect_type(ok(IR_OP_ADD, IN(a, b), 2, NULL, 0), "!mo.tensor<[batch * seq], f32>");
  cr_assert_eq(g->nchecks, 0);
}

Test(verify, binary_dtype_mismatch_message) {
  ir_value *a = input(IR_DT_F32, "5"), *b = input(IR_DT_SI32, "5");
  expect_msg(bad(IR_OP_ADD, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.add has dtype si32 but operand 0 has f32");
}

Test(verify, binary_rejects_bool) {
  ir_value *a = input(IR_DT_BOOL, "5"), *b = input(IR_DT_BOOL, "5");
  expect_msg(bad(IR_OP_ADD, IN(a, b), 2, NULL, 0),
             "operand 0 of mo.add has dtype bool but mo.add takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
}

/* seed 002: div is Python's /, integer operands give floats (f64 here) */
Test(verify, div_of_ints_gives_f64) {
  ir_value *a = input(IR_DT_SI32, "5"), *b = input(IR_DT_SI32, "1");
  expect_type(ok(IR_OP_DIV, IN(a, b), 2, NULL, 0), "!mo.tensor<[5], f64>");
  ir_value *c = input(IR_DT_SI64, "2, 1"), *d = input(IR_DT_SI64, "3");
  expect_type(ok(IR_OP_DIV, IN(c, d), 2, NULL, 0), "!mo.tensor<[2, 3], f64>");
}

Test(verify, floor_div_and_pow_keep_the_int_dtype) {
  ir_value *a = input(IR_DT_SI32, "5"), *b = input(IR_DT_SI32, "5");
  expect_type(ok(IR_OP_FLOOR_DIV, IN(a, b), 2, NULL, 0), "!mo.tensor<[5], si32>");
  expect_type(ok(IR_OP_POW, IN(a, b), 2, NULL, 0), "!mo.tensor<[5], si32>");
}

Test(verify, div_rejects_bool) {
  ir_value *a = input(IR_DT_BOOL, "5"), *b = input(IR_DT_BOOL, "5");
  expect_msg(bad(IR_OP_DIV, IN(a, b), 2, NULL, 0),
             "operand 0 of mo.div has dtype bool but mo.div takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
}

Test(verify, new_float_ops_reject_int) {
  static const ir_op ops[] = {IR_OP_ACOS, IR_OP_ASIN, IR_OP_ATAN, IR_OP_ATANH, IR_OP_CEIL};
  for (int i = 0; i < 5; i++) {
    ir_value *a = input(IR_DT_SI64, "5");
    char want[160];
    snprintf(want, sizeof want,
             "operand 0 of mo.%s has dtype si64 but mo.%s takes f16, bf16, f32 or f64",
             ir_op_get(ops[i])->name, ir_op_get(ops[i])->name);
    expect_msg(bad(ops[i], IN(a), 1, NULL, 0), want);
  }
}

Test(verify, compare_gives_bool) {
  ir_value *a = input(IR_DT_SI64, "3, 1"), *b = input(IR_DT_SI64, "4");
  expect_type(ok(IR_OP_GREATER, IN(a, b), 2, NULL, 0), "!mo.tensor<[3, 4], bool>");
}

Test(verify, equal_accepts_bool) {
  ir_value *a = input(IR_DT_BOOL, "3"), *b = input(IR_DT_BOOL, "3");
  expect_type(ok(IR_OP_EQUAL, IN(a, b), 2, NULL, 0), "!mo.tensor<[3], bool>");
}

Test(verify, greater_rejects_bool) {
  ir_value *a = input(IR_DT_BOOL, "3"), *b = input(IR_DT_BOOL, "3");
  expect_msg(bad(IR_OP_GREATER_EQUAL, IN(a, b), 2, NULL, 0),
             "operand 0 of mo.greater_equal has dtype bool but mo.greater_equal takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
}

Test(verify, logical_and_rejects_int) {
  ir_value *a = input(IR_DT_SI32, "3"), *b = input(IR_DT_SI32, "3");
  expect_msg(bad(IR_OP_LOGICAL_AND, IN(a, b), 2, NULL, 0),
             "operand 0 of mo.logical_and has dtype si32 but mo.logical_and takes bool");
}

Test(verify, where_broadcasts_three_operands) {
  ir_value *c = input(IR_DT_BOOL, "n, 1"), *x = input(IR_DT_SI32, "1, 4"),
           *y = input(IR_DT_SI32, "4");
  expect_type(ok(IR_OP_WHERE, IN(c, x, y), 3, NULL, 0), "!mo.tensor<[n, 4], si32>");
}

Test(verify, where_message_names_broadcast_of_earlier_operands) {
  ir_value *c = input(IR_DT_BOOL, "3, 1"), *x = input(IR_DT_F32, "1, 4"),
           *y = input(IR_DT_F32, "5");
  expect_msg(bad(IR_OP_WHERE, IN(c, x, y), 3, NULL, 0),
             "operand 2 of mo.where has shape [5] which does not broadcast with [3, 4]");
}

Test(verify, where_needs_bool_condition) {
  ir_value *c = input(IR_DT_F32, "3"), *x = input(IR_DT_F32, "3"), *y = input(IR_DT_F32, "3");
  expect_msg(bad(IR_OP_WHERE, IN(c, x, y), 3, NULL, 0),
             "operand 0 of mo.where has dtype f32 but mo.where takes bool");
}

Test(verify, cast_changes_dtype) {
  ir_value *x = input(IR_DT_F32, "n, 4");
  expect_type(ok(IR_OP_CAST, IN(x), 1, ATTRS(adtype("dtype", IR_DT_SI64)), 1),
              "!mo.tensor<[n, 4], si64>");
}

Test(verify, cast_requires_dtype) {
  ir_value *x = input(IR_DT_F32, "4");
  expect_msg(bad(IR_OP_CAST, IN(x), 1, NULL, 0), "mo.cast requires attribute 'dtype'");
}

Test(verify, cast_takes_float8_both_ways) {
  ir_value *x = input(IR_DT_F32, "4");
  ir_value *y = ok(IR_OP_CAST, IN(x), 1, ATTRS(adtype("dtype", IR_DT_F8E5M2)), 1);
  expect_type(y, "!mo.tensor<[4], f8e5m2>");
  expect_type(ok(IR_OP_CAST, IN(y), 1, ATTRS(adtype("dtype", IR_DT_F16)), 1),
              "!mo.tensor<[4], f16>");
}

Test(verify, device_mismatch_is_an_error) {
  ir_value *a = input(IR_DT_F32, "4");
  ir_type t = ty(IR_DT_F32, "4");
  t.device = (ir_device){IR_DEV_GPU, 0};
  ir_value *b = ir_graph_add_input(g, NULL, &t);
  expect_msg(bad(IR_OP_ADD, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.add is on gpu:0 but operand 0 is on cpu:0");
}

Test(verify, result_takes_operand_device) {
  ir_type t = ty(IR_DT_F32, "4");
  t.device = (ir_device){IR_DEV_GPU, 1};
  ir_value *a = ir_graph_add_input(g, NULL, &t);
  expect_type(ok(IR_OP_RELU, IN(a), 1, NULL, 0), "!mo.tensor<[4], f32, gpu:1>");
}

/* ---- sources ---- */

Test(verify, constant_takes_declared_type) {
  float data[2] = {1, 2};
  ir_attr v = {.name = "value", .kind = IR_ATTR_DENSE};
  v.u.dense = (ir_dense){.dtype = IR_DT_F32, .rank = 1, .shape = {2}, .numel = 2, .data = data};
  expect_type(ok_decl(IR_OP_CONSTANT, NULL, 0, &v, 1, ty(IR_DT_F32, "2")), "!mo.tensor<[2], f32>");
}

Test(verify, constant_value_must_match_declared_type) {
  float data[2] = {1, 2};
  ir_attr v = {.name = "value", .kind = IR_ATTR_DENSE};
  v.u.dense = (ir_dense){.dtype = IR_DT_F32, .rank = 1, .shape = {2}, .numel = 2, .data = data};
  expect_msg(bad_decl(IR_OP_CONSTANT, NULL, 0, &v, 1, ty(IR_DT_F32, "5")),
             "mo.constant: value is tensor<2xf32> but the result is declared as "
             "!mo.tensor<[5], f32>");
}

Test(verify, constant_must_be_static) {
  float data[2] = {1, 2};
  ir_attr v = {.name = "value", .kind = IR_ATTR_DENSE};
  v.u.dense = (ir_dense){.dtype = IR_DT_F32, .rank = 1, .shape = {2}, .numel = 2, .data = data};
  expect_msg(bad_decl(IR_OP_CONSTANT, NULL, 0, &v, 1, ty(IR_DT_F32, "n")),
             "mo.constant: result type !mo.tensor<[n], f32> must be static");
}

Test(verify, constant_needs_declared_type) {
  float data[1] = {1};
  ir_attr v = {.name = "value", .kind = IR_ATTR_DENSE};
  v.u.dense = (ir_dense){.dtype = IR_DT_F32, .rank = 0, .numel = 1, .data = data};
  expect_msg(bad(IR_OP_CONSTANT, NULL, 0, &v, 1),
             "mo.constant needs a declared result type (it is the target)");
}

Test(verify, constant_external_accepts_symbolic_storage_type) {
  expect_type(ok_decl(IR_OP_CONSTANT_EXTERNAL, NULL, 0, ATTRS(astr("name", "w")), 1,
                      ty(IR_DT_BF16, "n, 8")),
              "!mo.tensor<[n, 8], bf16>");
}

Test(verify, constant_external_requires_name) {
  expect_msg(bad_decl(IR_OP_CONSTANT_EXTERNAL, NULL, 0, NULL, 0, ty(IR_DT_F32, "8")),
             "mo.constant.external requires attribute 'name'");
}

/* ---- matmul ---- */

Test(verify, matmul_broadcasts_batch_dims) {
  ir_value *a = input(IR_DT_F32, "2, 1, m, 4"), *b = input(IR_DT_F32, "5, 4, 6");
  expect_type(ok(IR_OP_MATMUL, IN(a, b), 2, NULL, 0), "!mo.tensor<[2, 5, m, 6], f32>");
}

Test(verify, matmul_batch_mismatch_message) {
  ir_value *a = input(IR_DT_F32, "2, 3, 4"), *b = input(IR_DT_F32, "3, 4, 6");
  expect_msg(bad(IR_OP_MATMUL, IN(a, b), 2, NULL, 0),
             "operand 1 of mo.matmul has batch shape [3] which does not broadcast with [2]");
}

Test(verify, matmul_static_k_mismatch_message) {
  ir_value *a = input(IR_DT_F32, "batch, 784"), *b = input(IR_DT_F32, "512, 10");
  expect_msg(bad(IR_OP_MATMUL, IN(a, b), 2, NULL, 0),
             "mo.matmul: operand 0 has K = 784 but operand 1 has K = 512");
}

Test(verify, matmul_symbolic_k_records_check) {
  ir_value *a = input(IR_DT_F64, "3, k"), *b = input(IR_DT_F64, "64, 2");
  expect_type(ok(IR_OP_MATMUL, IN(a, b), 2, NULL, 0), "!mo.tensor<[3, 2], f64>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(g->checks[0].what,
                   "mo.matmul: K of operand 0 (k) must equal K of operand 1 (64)");
}

Test(verify, matmul_needs_rank_one) {
  ir_value *a = input(IR_DT_F32, ""), *b = input(IR_DT_F32, "4, 2");
  expect_msg(bad(IR_OP_MATMUL, IN(a, b), 2, NULL, 0),
             "operand 0 of mo.matmul has rank 0 but mo.matmul needs rank >= 1");
}

/* seed 002: a 1-D lhs is 1xD, a 1-D rhs Dx1, the added dims dropped */
Test(verify, matmul_of_vectors_drops_the_added_dims) {
  ir_value *v = input(IR_DT_F32, "k"), *m = input(IR_DT_F32, "k, 5"), *l = input(IR_DT_F32, "2, 3, k");
  expect_type(ok(IR_OP_MATMUL, IN(v, m), 2, NULL, 0), "!mo.tensor<[5], f32>");
  expect_type(ok(IR_OP_MATMUL, IN(l, v), 2, NULL, 0), "!mo.tensor<[2, 3], f32>");
  expect_type(ok(IR_OP_MATMUL, IN(v, v), 2, NULL, 0), "!mo.tensor<[], f32>");
}

/* the interpreter and both lowerings multiply integers (wrapping) */
Test(verify, matmul_takes_int_and_rejects_bool) {
  ir_value *a = input(IR_DT_SI32, "2, 4"), *b = input(IR_DT_SI32, "4, 2");
  expect_type(ok(IR_OP_MATMUL, IN(a, b), 2, NULL, 0), "!mo.tensor<[2, 2], si32>");
  ir_value *c = input(IR_DT_BOOL, "2, 4"), *d = input(IR_DT_BOOL, "4, 2");
  expect_msg(bad(IR_OP_MATMUL, IN(c, d), 2, NULL, 0),
             "operand 0 of mo.matmul has dtype bool but mo.matmul takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
}

/* ---- reductions and normalizations ---- */

Test(verify, reduce_keeps_axis_as_one) {
  ir_value *x = input(IR_DT_SI32, "batch, 7");
  expect_type(ok(IR_OP_REDUCE_SUM, IN(x), 1, NULL, 0), "!mo.tensor<[batch, 1], si32>");
}

Test(verify, reduce_normalizes_negative_axis) {
  ir_value *x = input(IR_DT_F32, "batch, 7");
  expect_type(ok(IR_OP_REDUCE_MAX, IN(x), 1, ATTRS(aint("axis", -2)), 1),
              "!mo.tensor<[1, 7], f32>");
}

Test(verify, reduce_axis_out_of_range_message) {
  ir_value *x = input(IR_DT_F32, "3, 7");
  expect_msg(bad(IR_OP_REDUCE_SUM, IN(x), 1, ATTRS(aint("axis", 3)), 1),
             "mo.sum: axis 3 is out of range for rank 2");
}

/* integer mean: the wrapped sum divided by the length, truncating (ops.def) */
Test(verify, mean_takes_int_and_rejects_bool) {
  ir_value *x = input(IR_DT_SI64, "3");
  expect_type(ok(IR_OP_REDUCE_MEAN, IN(x), 1, NULL, 0), "!mo.tensor<[1], si64>");
  ir_value *y = input(IR_DT_BOOL, "3");
  expect_msg(bad(IR_OP_REDUCE_MEAN, IN(y), 1, NULL, 0),
             "operand 0 of mo.mean has dtype bool but mo.mean takes f16, bf16, f32, f64 "
             "or an integer (si8 to si64, ui8 to ui32)");
}

Test(verify, argmax_gives_si64) {
  ir_value *x = input(IR_DT_F32, "3, n");
  expect_type(ok(IR_OP_ARGMAX, IN(x), 1, ATTRS(aint("axis", 0)), 1), "!mo.tensor<[1, n], si64>");
}

Test(verify, softmax_keeps_type) {
  ir_value *x = input(IR_DT_F32, "b, s, s");
  expect_type(ok(IR_OP_SOFTMAX, IN(x), 1, NULL, 0), "!mo.tensor<[b, s, s], f32>");
}

Test(verify, softmax_axis_must_be_integer) {
  ir_value *x = input(IR_DT_F32, "3");
  expect_msg(bad(IR_OP_SOFTMAX, IN(x), 1, ATTRS(afloat("axis", 1.0)), 1),
             "attribute 'axis' of mo.softmax must be an integer");
}

Test(verify, layer_norm_keeps_type) {
  ir_value *x = input(IR_DT_F32, "batch * seq, 64"), *ga = input(IR_DT_F32, "64"),
           *be = input(IR_DT_F32, "64");
  expect_type(ok(IR_OP_LAYER_NORM, IN(x, ga, be), 3, ATTRS(afloat("epsilon", 1e-5)), 1),
              "!mo.tensor<[batch * seq, 64], f32>");
}

Test(verify, layer_norm_gamma_mismatch_message) {
  ir_value *x = input(IR_DT_F32, "2, 64"), *ga = input(IR_DT_F32, "32"),
           *be = input(IR_DT_F32, "64");
  expect_msg(bad(IR_OP_LAYER_NORM, IN(x, ga, be), 3, NULL, 0),
             "operand 1 of mo.layer_norm has shape [32] but the last dim of operand 0 is 64");
}

Test(verify, layer_norm_symbolic_gamma_records_check) {
  ir_value *x = input(IR_DT_F32, "2, d"), *ga = input(IR_DT_F32, "64"), *be = input(IR_DT_F32, "d");
  ok(IR_OP_LAYER_NORM, IN(x, ga, be), 3, NULL, 0);
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(
      g->checks[0].what,
      "operand 1 axis 0 of mo.layer_norm (64) must equal the last dim of operand 0 (d)");
}

Test(verify, layer_norm_epsilon_must_be_positive) {
  ir_value *x = input(IR_DT_F32, "2, 4"), *ga = input(IR_DT_F32, "4"), *be = input(IR_DT_F32, "4");
  expect_msg(bad(IR_OP_LAYER_NORM, IN(x, ga, be), 3, ATTRS(afloat("epsilon", 0.0)), 1),
             "mo.layer_norm: epsilon must be > 0, not 0");
}

/* ---- data movement ---- */

Test(verify, reshape_algebraic_target_needs_no_check) {
  ir_value *x = input(IR_DT_F32, "batch, seq, 64");
  expect_type(ok_decl(IR_OP_RESHAPE, IN(x), 1, NULL, 0, ty(IR_DT_F32, "batch * seq, 64")),
              "!mo.tensor<[batch * seq, 64], f32>");
  cr_assert_eq(g->nchecks, 0);
}

Test(verify, reshape_static_count_mismatch_message) {
  ir_value *x = input(IR_DT_F32, "5, 6");
  expect_msg(bad_decl(IR_OP_RESHAPE, IN(x), 1, NULL, 0, ty(IR_DT_F32, "4, 8")),
             "mo.reshape: cannot reshape 30 elements into 32");
}

Test(verify, reshape_undecidable_count_records_check) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  ok_decl(IR_OP_RESHAPE, IN(x), 1, NULL, 0, ty(IR_DT_F32, "m, 3"));
  cr_assert_eq(g->nchecks, 1);
  cr_assert_eq(g->checks[0].kind, IR_CHECK_EQ);
  cr_assert_str_eq(dstr(g->checks[0].lhs), "6 * n");
  cr_assert_str_eq(dstr(g->checks[0].rhs), "3 * m");
}

Test(verify, reshape_provably_wrong_count_is_an_error) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  expect_msg(bad_decl(IR_OP_RESHAPE, IN(x), 1, NULL, 0, ty(IR_DT_F32, "n + 1, 6")),
             "mo.reshape: the operand's 6 * n elements must equal the result's 6 * n + 6");
}

Test(verify, reshape_keeps_operand_dtype) {
  ir_value *x = input(IR_DT_F32, "4");
  expect_msg(bad_decl(IR_OP_RESHAPE, IN(x), 1, NULL, 0, ty(IR_DT_SI32, "2, 2")),
             "result 0 of mo.reshape is declared as !mo.tensor<[2, 2], si32> but is "
             "!mo.tensor<[2, 2], f32>");
}

Test(verify, reshape_needs_declared_type) {
  ir_value *x = input(IR_DT_F32, "4");
  expect_msg(bad(IR_OP_RESHAPE, IN(x), 1, NULL, 0),
             "mo.reshape needs a declared result type (it is the target)");
}

Test(verify, broadcast_to_expands_ones) {
  ir_value *x = input(IR_DT_UI8, "1, 4");
  expect_type(ok_decl(IR_OP_BROADCAST_TO, IN(x), 1, NULL, 0, ty(IR_DT_UI8, "n, 3, 4")),
              "!mo.tensor<[n, 3, 4], ui8>");
}

Test(verify, broadcast_to_static_mismatch_message) {
  ir_value *x = input(IR_DT_F32, "3");
  expect_msg(bad_decl(IR_OP_BROADCAST_TO, IN(x), 1, NULL, 0, ty(IR_DT_F32, "2, 4")),
             "operand 0 of mo.broadcast_to has shape [3] which does not broadcast to [2, 4]");
}

Test(verify, transpose_swaps_axes) {
  ir_value *x = input(IR_DT_F32, "2, n, 4");
  expect_type(ok(IR_OP_TRANSPOSE, IN(x), 1, ATTRS(aint("axis_1", 0), aint("axis_2", -1)), 2),
              "!mo.tensor<[4, n, 2], f32>");
}

Test(verify, transpose_requires_both_axes) {
  ir_value *x = input(IR_DT_F32, "2, 3");
  expect_msg(bad(IR_OP_TRANSPOSE, IN(x), 1, ATTRS(aint("axis_1", 0)), 1),
             "mo.transpose requires attribute 'axis_2'");
}

Test(verify, permute_reorders_dims) {
  ir_value *x = input(IR_DT_SI8, "2, 3, n");
  expect_type(ok(IR_OP_PERMUTE, IN(x), 1, ATTRS(aints("dims", 3, INTS(2, 0, -2))), 1),
              "!mo.tensor<[n, 2, 3], si8>");
}

Test(verify, permute_rejects_repeated_axis) {
  ir_value *x = input(IR_DT_F32, "2, 3");
  expect_msg(bad(IR_OP_PERMUTE, IN(x), 1, ATTRS(aints("dims", 2, INTS(1, -1))), 1),
             "mo.permute: axis 1 appears twice in dims");
}

Test(verify, concat_sums_axis) {
  ir_value *a = input(IR_DT_F32, "n, 2"), *b = input(IR_DT_F32, "3, 2");
  expect_type(ok(IR_OP_CONCAT, IN(a, b), 2, ATTRS(aint("axis", 0)), 1),
              "!mo.tensor<[n + 3, 2], f32>");
}

Test(verify, concat_requires_axis) {
  ir_value *a = input(IR_DT_F32, "2"), *b = input(IR_DT_F32, "3");
  expect_msg(bad(IR_OP_CONCAT, IN(a, b), 2, NULL, 0), "mo.concat requires attribute 'axis'");
}

Test(verify, concat_other_dims_must_match) {
  ir_value *a = input(IR_DT_F32, "2, 4"), *b = input(IR_DT_F32, "2, 5");
  expect_msg(bad(IR_OP_CONCAT, IN(a, b), 2, ATTRS(aint("axis", 0)), 1),
             "operand 1 of mo.concat has 5 on axis 1 but operand 0 has 4");
}

Test(verify, split_gives_one_result_per_size) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  ir_node *n = node(IR_OP_SPLIT, IN(x), 1,
                    ATTRS(aints("split_sizes", 2, INTS(2, 4)), aint("axis", 1)), 2, 2, NULL);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "%s", diag.msg);
  expect_type(n->out[0], "!mo.tensor<[n, 2], f32>");
  expect_type(n->out[1], "!mo.tensor<[n, 4], f32>");
}

Test(verify, split_sizes_must_sum_to_static_dim) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  ir_node *n = node(IR_OP_SPLIT, IN(x), 1,
                    ATTRS(aints("split_sizes", 2, INTS(2, 3)), aint("axis", 1)), 2, 2, NULL);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg, "mo.split: split_sizes sum to 5 but axis 1 has size 6");
}

Test(verify, split_symbolic_axis_records_check) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  ir_node *n = node(IR_OP_SPLIT, IN(x), 1, ATTRS(aints("split_sizes", 2, INTS(1, 3))), 1, 2, NULL);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "%s", diag.msg);
  expect_type(n->out[1], "!mo.tensor<[3, 6], f32>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(g->checks[0].what, "mo.split: axis 0 (n) must equal the sum of split_sizes, 4");
}

Test(verify, split_result_count_must_match_sizes) {
  ir_value *x = input(IR_DT_F32, "6");
  ir_node *n =
      node(IR_OP_SPLIT, IN(x), 1, ATTRS(aints("split_sizes", 3, INTS(1, 2, 3))), 1, 2, NULL);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg, "mo.split has 2 results but split_sizes has 3 entries");
}

/* Without split_sizes every size is the declared result's dim; the sum is a
 * run-time check when it is symbolic, and decided now when it cancels. */
Test(verify, split_sizes_from_declared_result_types) {
  ir_value *x = input(IR_DT_F32, "n, 6");
  ir_type decl[2] = {ty(IR_DT_F32, "k, 6"), ty(IR_DT_F32, "2, 6")};
  ir_node *n = node(IR_OP_SPLIT, IN(x), 1, NULL, 0, 2, decl);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "%s", diag.msg);
  expect_type(n->out[0], "!mo.tensor<[k, 6], f32>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert(strstr(g->checks[0].what, "mo.split: axis 0 (n) must equal the sum of the sizes, "),
            "%s", g->checks[0].what);
  ir_type cancel[2] = {ty(IR_DT_F32, "n - 4, 6"), ty(IR_DT_F32, "4, 6")};
  n = node(IR_OP_SPLIT, IN(x), 1, ATTRS(aints("split_sizes", 2, INTS(-1, 4))), 1, 2, cancel);
  cr_assert_eq(ir_infer_node(g, n, &diag), 0, "%s", diag.msg);
  cr_assert_eq(g->nchecks, 1);
}

Test(verify, split_size_needs_a_value_or_a_declared_type) {
  ir_value *x = input(IR_DT_F32, "6");
  ir_node *n = node(IR_OP_SPLIT, IN(x), 1, ATTRS(aints("split_sizes", 2, INTS(2, -1))), 1, 2, NULL);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg, "mo.split: result 1 has no declared type to take its size from (give "
                       "split_sizes[1])");
  n = node(IR_OP_SPLIT, IN(x), 1, ATTRS(aints("split_sizes", 2, INTS(2, -2))), 1, 2, NULL);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg, "mo.split: split_sizes[1] = -2 is negative (-1: the declared size)");
  ir_type decl[2] = {ty(IR_DT_F32, "2"), ty(IR_DT_F32, "3")};
  n = node(IR_OP_SPLIT, IN(x), 1, NULL, 0, 2, decl);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg, "mo.split: split_sizes sum to 5 but axis 0 has size 6");
}

static ir_value *slice(ir_value *x, int n, const int64_t *start, const int64_t *stop,
                       const int64_t *step) {
  return ok(IR_OP_SLICE_TENSOR, IN(x), 1,
            ATTRS(aints("start", n, start), aints("stop", n, stop), aints("step", n, step)), 3);
}

Test(verify, slice_static_step_two) {
  ir_value *x = input(IR_DT_F32, "10, 3");
  expect_type(slice(x, 1, INTS(1), INTS(INT64_MAX), INTS(2)), "!mo.tensor<[5, 3], f32>");
}

Test(verify, slice_static_negative_start_and_clamped_stop) {
  ir_value *x = input(IR_DT_F32, "10");
  expect_type(slice(x, 1, INTS(-3), INTS(100), INTS(1)), "!mo.tensor<[3], f32>");
}

Test(verify, slice_static_reverse) {
  ir_value *x = input(IR_DT_F32, "10");
  expect_type(slice(x, 1, INTS(INT64_MIN), INTS(INT64_MAX), INTS(-1)), "!mo.tensor<[10], f32>");
}

Test(verify, slice_static_negative_step_from_index) {
  ir_value *x = input(IR_DT_F32, "10");
  /* x[8:1:-3] -> 8, 5, 2 */
  expect_type(slice(x, 1, INTS(8), INTS(1), INTS(-3)), "!mo.tensor<[3], f32>");
}

Test(verify, slice_static_empty_when_stop_before_start) {
  ir_value *x = input(IR_DT_F32, "10");
  expect_type(slice(x, 1, INTS(7), INTS(2), INTS(1)), "!mo.tensor<[0], f32>");
}

Test(verify, slice_symbolic_length_and_checks) {
  ir_value *x = input(IR_DT_F32, "n, 4");
  /* x[1:-1:2] on a symbolic axis */
  expect_type(slice(x, 1, INTS(1), INTS(-1), INTS(2)), "!mo.tensor<[(n - 2) ceildiv 2, 4], f32>");
  cr_assert_eq(g->nchecks, 2);
  cr_assert_eq(g->checks[0].kind, IR_CHECK_GE);
  cr_assert_str_eq(g->checks[0].what, "mo.slice_tensor: axis 0 (n) must be >= 1 for stop -1");
  cr_assert_str_eq(g->checks[1].what, "mo.slice_tensor: axis 0 stop (n - 1) must be >= start (1)");
}

Test(verify, slice_symbolic_to_end_needs_only_order_check) {
  ir_value *x = input(IR_DT_F32, "n");
  expect_type(slice(x, 1, INTS(2), INTS(INT64_MAX), INTS(1)), "!mo.tensor<[n - 2], f32>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(dstr(g->checks[0].lhs), "n");
  cr_assert_str_eq(dstr(g->checks[0].rhs), "2");
}

Test(verify, slice_symbolic_negative_step_unsupported) {
  ir_value *x = input(IR_DT_F32, "n");
  expect_msg(bad(IR_OP_SLICE_TENSOR, IN(x), 1,
                 ATTRS(aints("start", 1, INTS(INT64_MIN)), aints("stop", 1, INTS(INT64_MAX)),
                       aints("step", 1, INTS(-1))),
                 3),
             "mo.slice_tensor: negative step on symbolic dim is not supported (axis 0, n)");
}

Test(verify, slice_rejects_zero_step) {
  ir_value *x = input(IR_DT_F32, "4");
  expect_msg(
      bad(IR_OP_SLICE_TENSOR, IN(x), 1,
          ATTRS(aints("start", 1, INTS(0)), aints("stop", 1, INTS(4)), aints("step", 1, INTS(0))),
          3),
      "mo.slice_tensor: step of axis 0 is 0");
}

Test(verify, squeeze_removes_one) {
  ir_value *x = input(IR_DT_F32, "3, 1");
  expect_type(ok(IR_OP_SQUEEZE, IN(x), 1, ATTRS(aint("axis", -1)), 1), "!mo.tensor<[3], f32>");
}

Test(verify, squeeze_rejects_static_non_one) {
  ir_value *x = input(IR_DT_F32, "3, 4");
  expect_msg(bad(IR_OP_SQUEEZE, IN(x), 1, ATTRS(aint("axis", 1)), 1),
             "mo.squeeze: axis 1 has size 4, not 1");
}

Test(verify, squeeze_symbolic_records_check) {
  ir_value *x = input(IR_DT_F32, "n, 4");
  expect_type(ok(IR_OP_SQUEEZE, IN(x), 1, ATTRS(aint("axis", 0)), 1), "!mo.tensor<[4], f32>");
  cr_assert_eq(g->nchecks, 1);
  cr_assert_str_eq(g->checks[0].what, "mo.squeeze: axis 0 (n) must be 1");
}

Test(verify, unsqueeze_negative_axis_appends) {
  ir_value *x = input(IR_DT_F32, "3");
  expect_type(ok(IR_OP_UNSQUEEZE, IN(x), 1, ATTRS(aint("axis", -1)), 1), "!mo.tensor<[3, 1], f32>");
}

Test(verify, unsqueeze_axis_out_of_range) {
  ir_value *x = input(IR_DT_F32, "3");
  expect_msg(bad(IR_OP_UNSQUEEZE, IN(x), 1, ATTRS(aint("axis", 2)), 1),
             "mo.unsqueeze: axis 2 is out of range for rank 2");
}

Test(verify, gather_inserts_index_shape) {
  ir_value *x = input(IR_DT_F32, "5, 6, 7"), *i = input(IR_DT_SI64, "2, n");
  expect_type(ok(IR_OP_GATHER, IN(x, i), 2, ATTRS(aint("axis", 1)), 1),
              "!mo.tensor<[5, 2, n, 7], f32>");
}

Test(verify, gather_rejects_float_indices) {
  ir_value *x = input(IR_DT_F32, "5"), *i = input(IR_DT_F32, "2");
  expect_msg(bad(IR_OP_GATHER, IN(x, i), 2, NULL, 0),
             "operand 1 of mo.gather has dtype f32 but indices must be si32 or si64");
}

/* ---- declared types, locations ---- */

Test(verify, declared_result_type_must_match) {
  ir_value *x = input(IR_DT_F32, "4");
  ir_type t = ty(IR_DT_F32, "5");
  expect_msg(bad_decl(IR_OP_RELU, IN(x), 1, NULL, 0, t),
             "result 0 of mo.relu is declared as !mo.tensor<[5], f32> but is !mo.tensor<[4], f32>");
}

Test(verify, declared_result_type_is_kept_when_equal) {
  ir_value *x = input(IR_DT_F32, "n + 1");
  ir_type t = ty(IR_DT_F32, "1 + n");
  ir_value *r = ok_decl(IR_OP_RELU, IN(x), 1, NULL, 0, t);
  expect_type(r, "!mo.tensor<[n + 1], f32>");
}

Test(verify, api_built_node_message_has_position) {
  ir_value *a = input(IR_DT_F32, "5"), *b = input(IR_DT_F32, "4");
  ok(IR_OP_RELU, IN(a), 1, NULL, 0);
  ir_node *n =
      ir_graph_add_node(g, IR_OP_ADD, IN(a, b), 2, NULL, 0, 1, NULL, NULL, (ir_loc){0, 0}, &diag);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  expect_msg(diag.msg,
             "op #1: operand 1 of mo.add has shape [4] which does not broadcast with [5]");
  cr_assert_eq(diag.line, 0);
}

Test(verify, text_node_error_is_located) {
  ir_value *a = input(IR_DT_F32, "5"), *b = input(IR_DT_F32, "4");
  ir_node *n =
      ir_graph_add_node(g, IR_OP_ADD, IN(a, b), 2, NULL, 0, 1, NULL, NULL, (ir_loc){3, 8}, &diag);
  cr_assert_neq(ir_infer_node(g, n, &diag), 0);
  cr_assert_eq(diag.line, 3);
  cr_assert_eq(diag.col, 8);
}

Test(verify, add_check_appends_in_order) {
  const ir_dim *n = dim("n"), *five = dim("5");
  for (int i = 0; i < 20; i++)
    cr_assert_eq(ir_graph_add_check(g, IR_CHECK_GE, n, five, NULL, "check %d", i), 0);
  cr_assert_eq(g->nchecks, 20);
  cr_assert_str_eq(g->checks[0].what, "check 0");
  cr_assert_str_eq(g->checks[19].what, "check 19");
  cr_assert_eq(g->checks[19].kind, IR_CHECK_GE);
}

/* ---- whole graphs ---- */

static void set_outputs(ir_value *v) {
  cr_assert_eq(ir_graph_set_outputs(g, &v, 1, (ir_loc){0, 0}), 0);
}

/* The mlp of ir-examples, built through the API: verify infers every type. */
Test(verify, graph_verify_infers_api_graph) {
  ir_value *x = input(IR_DT_F32, "batch, 784");
  ir_value *w1 = ok_decl(IR_OP_CONSTANT_EXTERNAL, NULL, 0, ATTRS(astr("name", "w1")), 1,
                         ty(IR_DT_F32, "784, 512"));
  ir_value *b1 =
      ok_decl(IR_OP_CONSTANT_EXTERNAL, NULL, 0, ATTRS(astr("name", "b1")), 1, ty(IR_DT_F32, "512"));
  ir_node *mm = node(IR_OP_MATMUL, IN(x, w1), 2, NULL, 0, 1, NULL);
  ir_node *add = node(IR_OP_ADD, IN(mm->out[0], b1), 2, NULL, 0, 1, NULL);
  ir_node *relu = node(IR_OP_RELU, IN(add->out[0]), 1, NULL, 0, 1, NULL);
  set_outputs(relu->out[0]);
  cr_assert_eq(ir_graph_verify(g, &diag), 0, "%s", diag.msg);
  expect_type(relu->out[0], "!mo.tensor<[batch, 512], f32>");
  cr_assert_eq(g->nchecks, 0);
}

Test(verify, graph_verify_rebuilds_checks) {
  ir_value *a = input(IR_DT_F32, "n"), *b = input(IR_DT_F32, "5");
  set_outputs(node(IR_OP_ADD, IN(a, b), 2, NULL, 0, 1, NULL)->out[0]);
  cr_assert_eq(ir_graph_verify(g, &diag), 0, "%s", diag.msg);
  cr_assert_eq(ir_graph_verify(g, &diag), 0, "%s", diag.msg);
  cr_assert_eq(g->nchecks, 1);
}

Test(verify, graph_verify_rejects_unknown_attribute) {
  ir_value *x = input(IR_DT_F32, "3");
  set_outputs(node(IR_OP_RELU, IN(x), 1, ATTRS(aint("axis", 0)), 1, 1, NULL)->out[0]);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "mo.relu has no attribute 'axis'");
}

Test(verify, graph_verify_reports_op_rule) {
  ir_value *a = input(IR_DT_F32, "5"), *b = input(IR_DT_F32, "4");
  set_outputs(node(IR_OP_ADD, IN(a, b), 2, NULL, 0, 1, NULL)->out[0]);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "operand 1 of mo.add has shape [4] which does not broadcast with [5]");
}

Test(verify, graph_verify_rejects_use_before_definition) {
  ir_value *x = input(IR_DT_F32, "3");
  ir_node *n0 = node(IR_OP_RELU, IN(x), 1, NULL, 0, 1, NULL);
  ir_node *n1 = node(IR_OP_RELU, IN(x), 1, NULL, 0, 1, NULL);
  n0->in[0] = n1->out[0]; /* not something the builder does: a broken graph */
  set_outputs(n0->out[0]);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "operand 0 of mo.relu (%2) is used before it is defined");
}

Test(verify, graph_verify_needs_outputs) {
  ir_value *x = input(IR_DT_F32, "3");
  node(IR_OP_RELU, IN(x), 1, NULL, 0, 1, NULL);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "the graph has no outputs");
}

Test(verify, graph_verify_rejects_unknown_symbol) {
  ir_graph_symbol(g, "batch", 5, true);
  g->syms_declared = true;
  ir_type t = ty(IR_DT_F32, "batch");
  const ir_dim *seq = ir_dim_sym(g->arena, 1, "seq"); /* not in g->syms */
  ir_type t2 = {.dtype = IR_DT_F32, .rank = 1, .dims = &seq};
  ir_value *a = ir_graph_add_input(g, NULL, &t);
  ir_graph_add_input(g, NULL, &t2);
  set_outputs(a);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg,
             "input 1 (%1): symbolic dim 'seq' is not declared in the graph's parameter list "
             "<batch>");
}

Test(verify, graph_verify_rejects_negative_static_dim) {
  const ir_dim *neg = ir_dim_const(g->arena, -2);
  ir_type t = {.dtype = IR_DT_F32, .rank = 1, .dims = &neg};
  ir_value *a = ir_graph_add_input(g, NULL, &t);
  set_outputs(a);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "input 0 (%0): dim 0 is -2, dims must be >= 0");
}

/* ---- the op table (ops.def) ---- */

/* A fresh graph per op for the table-wide tests: operands of type dts[k]
 * and shape [2], one result per declared count (1 when the count is open). */
static ir_node *table_node(ir_graph *h, ir_op op, const ir_dtype *dts, const ir_attr *attrs,
                           int nattrs) {
  const ir_op_info *o = ir_op_get(op);
  const ir_dim **dims = ir_arena_alloc(h->arena, sizeof *dims);
  dims[0] = ir_dim_const(h->arena, 2);
  ir_value *in[4];
  for (int k = 0; k < o->nin_min; k++) {
    ir_type t = {.dtype = dts[k], .rank = 1, .dims = dims};
    in[k] = ir_graph_add_input(h, NULL, &t);
    cr_assert_not_null(in[k]);
  }
  ir_node *n = ir_graph_add_node(h, op, in, o->nin_min, attrs, nattrs, o->nout < 0 ? 1 : o->nout,
                                 NULL, NULL, (ir_loc){1, 1}, &diag);
  cr_assert_not_null(n, "mo.%s: %s", o->name, diag.msg);
  cr_assert_eq(ir_graph_set_outputs(h, n->out, 1, (ir_loc){1, 1}), 0);
  return n;
}

Test(verify, op_table_has_a_consistent_row_for_every_op) {
  int per_class[IR_CLS_COUNT] = {0};
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = ir_op_get((ir_op)i);
    cr_assert(o && o->name && o->name[0], "op %d has no row", i);
    cr_assert_lt((unsigned)o->cls, (unsigned)IR_CLS_COUNT, "mo.%s: class", o->name);
    per_class[o->cls]++;
    cr_assert(o->nin_min >= 0 && (o->nin_max == -1 || o->nin_max >= o->nin_min), "mo.%s", o->name);
    cr_assert(o->nout == -1 || o->nout >= 1, "mo.%s: results", o->name);
    cr_assert(o->same >= -1 && o->same < (o->nin_min > 1 ? o->nin_min : 1), "mo.%s: same",
              o->name);
    for (int k = 0; k < 2; k++) cr_assert_lt(o->dts[k], 16u, "mo.%s: dtype set", o->name);
    bool named = false;
    cr_assert_eq(ir_op_lookup(o->name, strlen(o->name), o->nin_min, &named), i,
                 "mo.%s with %d operands is another op", o->name, o->nin_min);
    cr_assert(named);
    if (o->flags & IR_OPF_EW)
      cr_assert(o->nout == 1 && o->nin_min >= 1 && o->nin_max <= IR_EW_MAX_IN, "mo.%s", o->name);
    if (o->flags & IR_OPF_SRC) cr_assert(o->nin_max == 0 && o->nout == 1, "mo.%s", o->name);
    if (o->flags & IR_OPF_ALIAS) /* operand 0 is the data (1 more: a shape read before running) */
      cr_assert(o->nin_min == 1 && o->nin_max <= 2 && o->nout == 1, "mo.%s", o->name);
    if (o->flags & IR_OPF_RED) cr_assert(ir_op_attr_spec((ir_op)i, "axis"), "mo.%s", o->name);
    cr_assert(o->nattrs == 0 || o->attrs, "mo.%s: attributes", o->name);
    for (int a = 0; a < o->nattrs; a++) {
      const ir_attr_spec *s = &o->attrs[a];
      cr_assert(s->a.name && s->a.name[0], "mo.%s: attribute %d has no name", o->name, a);
      cr_assert_eq(ir_op_attr_spec((ir_op)i, s->a.name), s, "mo.%s: '%s' twice", o->name,
                   s->a.name);
      cr_assert_eq(s->runtime, strncmp(s->a.name, "kiln.", 5) == 0, "mo.%s: '%s'", o->name,
                   s->a.name);
      cr_assert(!(s->runtime && s->required), "mo.%s: '%s'", o->name, s->a.name);
    }
  }
  for (int c = 0; c < IR_CLS_COUNT; c++) {
    const ir_class_info *ci = ir_class_get((ir_op_class)c);
    cr_assert(ci && ci->name, "class %d has no row", c);
    cr_assert_gt(per_class[c], 0, "class %s has no op", ci->name);
    cr_assert(ci->work_mul > 0 && ci->work_div > 0, "class %s: work scale", ci->name);
  }
  cr_assert_null(ir_op_get(IR_OP_COUNT));
  cr_assert_null(ir_class_get(IR_CLS_COUNT));
}

Test(verify, elementwise_and_source_predicates_come_from_the_flags) {
  cr_assert(ir_op_is_elementwise(IR_OP_ADD) && ir_op_is_elementwise(IR_OP_CAST));
  cr_assert(ir_op_is_elementwise(IR_OP_WHERE) && !ir_op_is_elementwise(IR_OP_REDUCE_MAX));
  cr_assert(!ir_op_is_elementwise(IR_OP_BROADCAST_TO) && !ir_op_is_elementwise(IR_OP_COUNT));
  cr_assert(ir_op_has_flag(IR_OP_TRANSFER_TO, IR_OPF_ALIAS));
  cr_assert(!ir_op_has_flag(IR_OP_TRANSPOSE, IR_OPF_ALIAS));
  for (int i = 0; i < IR_OP_COUNT; i++) {
    ir_node n = {.op = (ir_op)i};
    cr_assert_eq(ir_node_is_source(&n), i == IR_OP_CONSTANT || i == IR_OP_CONSTANT_EXTERNAL);
  }
}

/* Every op refuses an attribute outside its schema, by name (mo.custom takes
 * any other name as a kernel parameter). */
Test(verify, op_table_unknown_attribute_is_refused_with_its_name) {
  ir_dtype f32[4] = {IR_DT_F32, IR_DT_F32, IR_DT_F32, IR_DT_F32};
  ir_attr bogus = aint("no_such_attr", 1);
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = ir_op_get((ir_op)i);
    if (o->flags & IR_OPF_PARAMS) continue;
    ir_graph *h = ir_graph_new("t");
    table_node(h, (ir_op)i, f32, &bogus, 1);
    cr_assert_neq(ir_graph_verify(h, &diag), 0, "mo.%s", o->name);
    char want[128];
    snprintf(want, sizeof want, "mo.%s has no attribute 'no_such_attr'", o->name);
    expect_msg(diag.msg, want);
    ir_graph_free(h);
  }
}

/* Every dtype rule of the table refuses a dtype outside its set, naming the
 * op and the operand. */
Test(verify, op_table_wrong_dtype_is_refused_naming_the_op) {
  static const ir_dtype tries[] = {IR_DT_UI64, IR_DT_BOOL, IR_DT_SI32, IR_DT_F32};
  int checked = 0;
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = ir_op_get((ir_op)i);
    for (int k = 0; k < 2 && k < o->nin_min; k++) {
      if (o->dts[k] == IR_DTS_ANY) continue;
      ir_dtype bad_dt = IR_DT_UI64, good[2] = {IR_DT_F32, IR_DT_F32};
      for (int t = 3; t >= 0; t--)
        if (!ir_dtype_in_set(tries[t], o->dts[k])) bad_dt = tries[t];
      for (int j = 0; j < 2; j++)
        for (int t = 3; t >= 0; t--)
          if (ir_dtype_in_set(tries[t], o->dts[j])) good[j] = tries[t];
      ir_dtype dts[4];
      for (int j = 0; j < 4; j++) {
        bool grouped = o->same >= 0 && j >= o->same && k >= o->same;
        dts[j] = j != k && j < 2 && o->dts[j] && !grouped ? good[j] : bad_dt;
      }
      ir_graph *h = ir_graph_new("t");
      ir_node *n = table_node(h, (ir_op)i, dts, NULL, 0);
      cr_assert_neq(ir_infer_node(h, n, &diag), 0, "mo.%s operand %d: no error", o->name, k);
      char want[200];
      if (o->dts[k] & IR_DTS_NAMED_INDICES)
        snprintf(want, sizeof want, "operand %d of mo.%s has dtype %s but indices must be %s", k,
                 o->name, ir_dtype_name(bad_dt), ir_dtype_set_name(o->dts[k]));
      else
        snprintf(want, sizeof want, "operand %d of mo.%s has dtype %s but mo.%s takes %s", k,
                 o->name, ir_dtype_name(bad_dt), o->name, ir_dtype_set_name(o->dts[k]));
      expect_msg(diag.msg, want);
      ir_graph_free(h);
      checked++;
    }
  }
  cr_assert_gt(checked, 40);
}

/* Every dtype of every operand's documented set passes the table's dtype
 * rule (the other operands of a dtype their own sets take; a node may still
 * fail on its shapes or attributes, but never on that operand's dtype). */
Test(verify, op_table_every_documented_dtype_is_accepted) {
  int checked = 0;
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = ir_op_get((ir_op)i);
    for (int k = 0; k < 2 && k < o->nin_min; k++) {
      if (o->dts[k] == IR_DTS_ANY) continue;
      for (int d = 0; d < IR_DT_COUNT; d++) {
        if (!ir_dtype_in_set((ir_dtype)d, o->dts[k])) continue;
        ir_dtype dts[4];
        for (int j = 0; j < 4; j++) {
          bool grouped = o->same >= 0 && j >= o->same && k >= o->same;
          dts[j] = (ir_dtype)d;
          if (j == k || grouped || j >= 2 || !o->dts[j] || ir_dtype_in_set((ir_dtype)d, o->dts[j]))
            continue;
          for (int t = 0; t < IR_DT_COUNT; t++) /* the first dtype operand j takes */
            if (ir_dtype_in_set((ir_dtype)t, o->dts[j])) {
              dts[j] = (ir_dtype)t;
              break;
            }
        }
        ir_graph *h = ir_graph_new("t");
        ir_node *n = table_node(h, (ir_op)i, dts, NULL, 0);
        char refused[160];
        snprintf(refused, sizeof refused, "operand %d of mo.%s has dtype %s", k, o->name,
                 ir_dtype_name((ir_dtype)d));
        if (ir_infer_node(h, n, &diag) != 0) { /* operands 2 and 3 may take other dtypes */
          const char *m = diag.msg;
          bool names_it = strstr(m, refused) || (strstr(m, "takes") && !strstr(m, "operand 2") &&
                                                 !strstr(m, "operand 3") &&
                                                 strstr(m, ir_dtype_name((ir_dtype)d)));
          cr_assert(!names_it, "mo.%s documents %s for operand %d: %s", o->name,
                    ir_dtype_name((ir_dtype)d), k, m);
        }
        ir_graph_free(h);
        checked++;
      }
    }
  }
  cr_assert_gt(checked, 400);
}

/* An example node for each op with an optional attribute: operands and the
 * required attributes. */
typedef struct attr_example {
  ir_op op;
  int nin;
  ir_dtype dt[4];
  const char *shape[4];
  int nreq;
  ir_attr req[2];
  int nout;
} attr_example;

static const int64_t pad_sizes[] = {1, 0, 2, 1}, pool_kernel[] = {2, 2};
static const int64_t fold_out[] = {4, 5};

static const attr_example *attr_example_of(ir_op op) {
  static attr_example ex[] = {
      {IR_OP_GELU, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REDUCE_SUM, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REDUCE_MEAN, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REDUCE_MAX, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REDUCE_MIN, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_ARGMAX, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_ARGMIN, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REDUCE_PROD, 1, {IR_DT_SI32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_CUMSUM, 1, {IR_DT_F64}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_BAND_PART, 1, {IR_DT_SI64}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_SOFTMAX, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_LOGSOFTMAX, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_LAYER_NORM, 3, {IR_DT_F32, IR_DT_F32, IR_DT_F32}, {"4, 3", "3", "3"}, 0, {{0}}, 1},
      {IR_OP_SPLIT, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1}, /* one size, its declared dim */
      {IR_OP_CONSTANT_EXTERNAL, 0, {IR_DT_F32}, {"4, 3"}, 1,
       {{.name = "name", .kind = IR_ATTR_STRING, .u.s = "w"}}, 1},
      {IR_OP_MASKED_SCATTER, 3, {IR_DT_F32, IR_DT_BOOL, IR_DT_F32}, {"4, 3", "3", "12"}, 0, {{0}},
       1},
      {IR_OP_GATHER, 2, {IR_DT_F32, IR_DT_SI64}, {"4, 3", "2"}, 0, {{0}}, 1},
      {IR_OP_GATHER_ND, 2, {IR_DT_F32, IR_DT_SI64}, {"4, 3", "2, 1"}, 0, {{0}}, 1},
      {IR_OP_GATHER_ELEMENTS, 2, {IR_DT_F32, IR_DT_SI64}, {"4, 3", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_SCATTER, 3, {IR_DT_F32, IR_DT_F32, IR_DT_SI64}, {"4, 3", "4, 2", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_SCATTER_ADD, 3, {IR_DT_F32, IR_DT_F32, IR_DT_SI64}, {"4, 3", "4, 2", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_SCATTER_MUL, 3, {IR_DT_SI32, IR_DT_SI32, IR_DT_SI64}, {"4, 3", "4, 2", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_SCATTER_MAX, 3, {IR_DT_F64, IR_DT_F64, IR_DT_SI32}, {"4, 3", "4, 2", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_SCATTER_MIN, 3, {IR_DT_SI64, IR_DT_SI64, IR_DT_SI64}, {"4, 3", "4, 2", "4, 2"}, 0, {{0}}, 1},
      {IR_OP_PAD, 1, {IR_DT_F32}, {"4, 3"}, 1,
       {{.name = "paddings", .kind = IR_ATTR_INTS, .u.ints = {4, pad_sizes}}}, 1},
      {IR_OP_MAX_POOL2D, 1, {IR_DT_F32}, {"1, 4, 3, 2"}, 1,
       {{.name = "kernel_size", .kind = IR_ATTR_INTS, .u.ints = {2, pool_kernel}}}, 1},
      {IR_OP_AVG_POOL2D, 1, {IR_DT_F32}, {"1, 4, 3, 2"}, 1,
       {{.name = "kernel_size", .kind = IR_ATTR_INTS, .u.ints = {2, pool_kernel}}}, 1},
      {IR_OP_CONV2D, 2, {IR_DT_F32, IR_DT_F32}, {"1, 4, 3, 2", "2, 2, 2, 3"}, 0, {{0}}, 1},
      {IR_OP_CONV2D_TRANSPOSE, 2, {IR_DT_F32, IR_DT_F32}, {"1, 4, 3, 2", "2, 2, 3, 2"}, 0, {{0}}, 1},
      {IR_OP_CONV3D, 2, {IR_DT_F32, IR_DT_F32}, {"1, 3, 4, 3, 2", "2, 2, 2, 2, 3"}, 0, {{0}}, 1},
      {IR_OP_TOP_K, 1, {IR_DT_F32}, {"4, 3"}, 1, {{.name = "k", .kind = IR_ATTR_INT, .u.i = 2}}, 2},
      {IR_OP_BOTTOM_K, 1, {IR_DT_SI32}, {"4, 3"}, 1, {{.name = "k", .kind = IR_ATTR_INT, .u.i = 3}},
       2},
      {IR_OP_ARGSORT, 1, {IR_DT_F64}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_RESIZE, 1, {IR_DT_F32}, {"1, 2, 4, 3"}, 0, {{0}}, 1},
      {IR_OP_RESIZE_NEAREST, 1, {IR_DT_SI32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_RESIZE_LINEAR, 1, {IR_DT_F64}, {"2, 4, 3"}, 0, {{0}}, 1},
      {IR_OP_RESIZE_BICUBIC, 1, {IR_DT_F32}, {"5"}, 0, {{0}}, 1},
      {IR_OP_FOLD, 1, {IR_DT_F32}, {"2, 12, 12"}, 2,
       {{.name = "output_size", .kind = IR_ATTR_INTS, .u.ints = {2, fold_out}},
        {.name = "kernel_size", .kind = IR_ATTR_INTS, .u.ints = {2, pool_kernel}}},
       1},
      {IR_OP_PRINT, 1, {IR_DT_SI8}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_RANDOM_UNIFORM, 0, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_RANDOM_NORMAL, 0, {IR_DT_F64}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_ROI_ALIGN, 2, {IR_DT_F32, IR_DT_F32}, {"1, 4, 4, 3", "2, 5"}, 2,
       {{.name = "output_height", .kind = IR_ATTR_INT, .u.i = 2},
        {.name = "output_width", .kind = IR_ATTR_INT, .u.i = 3}},
       1},
      {IR_OP_NON_MAXIMUM_SUPPRESSION, 4, {IR_DT_F32, IR_DT_F32, IR_DT_SI64, IR_DT_F32},
       {"1, 6, 4", "1, 2, 6", "", ""}, 0, {{0}}, 1},
      {IR_OP_RESHAPE, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_BROADCAST_TO, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_REPEAT_INTERLEAVE, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
      {IR_OP_CALL, 1, {IR_DT_F32}, {"4, 3"}, 1,
       {{.name = "callee", .kind = IR_ATTR_STRING, .u.s = "layer"}}, 1},
      {IR_OP_IRFFT, 1, {IR_DT_F32}, {"4, 3"}, 0, {{0}}, 1},
  };
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
    if (ex[i].op == op) return &ex[i];
  return NULL;
}

/* The declared result shape of an example whose op takes its result type
 * as given (the resize ops), or NULL. */
static const char *example_decl(ir_op op, ir_dtype *dt) {
  static char count[32];
  static int fresh;
  switch (op) {
  case IR_OP_NON_MAXIMUM_SUPPRESSION: /* its count: a new symbol per node */
    *dt = IR_DT_SI64;
    snprintf(count, sizeof count, "nms%d, 3", fresh++);
    return count;
  case IR_OP_RESIZE: return "1, 2, 7, 2";
  case IR_OP_RESIZE_NEAREST: return "8, 6";
  case IR_OP_RESIZE_LINEAR: return "2, 1, 5";
  case IR_OP_RESIZE_BICUBIC: return "9";
  case IR_OP_RESHAPE: return "2, 6";
  case IR_OP_BROADCAST_TO: return "2, 4, 3";
  case IR_OP_SPLIT: return "4, 3";
  case IR_OP_CALL: return "4, 3"; /* typed by its callee's signature */
  default: return NULL;
  }
}

static ir_node *example_node(const attr_example *e, const ir_attr *extra, int nextra) {
  ir_value *in[4];
  for (int k = 0; k < e->nin; k++) in[k] = input(e->dt[k], e->shape[k]);
  ir_attr attrs[4];
  for (int a = 0; a < e->nreq; a++) attrs[a] = e->req[a];
  for (int a = 0; a < nextra; a++) attrs[e->nreq + a] = extra[a];
  ir_dtype dt = e->dt[0];
  const char *ds = example_decl(e->op, &dt);
  ir_type decl;
  if (ds) decl = ty(dt, ds);
  /* an op without operands (random.*) declares its result: dt[0], shape[0] */
  const ir_type *d = ds ? &decl : e->nin == 0 ? &input(e->dt[0], e->shape[0])->type : NULL;
  return node(e->op, in, e->nin, attrs, e->nreq + nextra, e->nout, d);
}

/* Each optional attribute's default, written out, is a value the op's rule
 * accepts, and gives what leaving it out gives. */
Test(verify, op_table_attribute_defaults_are_valid_values) {
  int checked = 0;
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = ir_op_get((ir_op)i);
    for (int a = 0; a < o->nattrs; a++) {
      const ir_attr_spec *s = &o->attrs[a];
      if (s->required || s->runtime) continue;
      const attr_example *e = attr_example_of((ir_op)i);
      cr_assert_not_null(e, "mo.%s has a default for '%s' but no example in this test", o->name,
                         s->a.name);
      ir_node *plain = example_node(e, NULL, 0);
      cr_assert_eq(ir_infer_node(g, plain, &diag), 0, "mo.%s: %s", o->name, diag.msg);
      ir_node *given = example_node(e, &s->a, 1);
      cr_assert_eq(ir_infer_node(g, given, &diag), 0, "mo.%s with its default '%s': %s", o->name,
                   s->a.name, diag.msg);
      for (int r = 0; r < plain->nout; r++) /* (a count set from data: two symbols) */
        cr_assert(ir_node_data_sym(plain) >= 0
                      ? plain->out[r]->type.rank == given->out[r]->type.rank
                      : ir_type_equal(&plain->out[r]->type, &given->out[r]->type),
                  "mo.%s '%s'", o->name, s->a.name);
      cr_assert_eq(ir_node_attr_or_default(plain, s->a.name), &s->a);
      checked++;
    }
  }
  cr_assert_eq(checked, 101); /* 19, the indexing ops' 7 (batch_dims, 6 axes), vision's 23,
                              the sorting ops' 4 (3 axes, ascending), resizing's 19 (7 + 4 +
                              3 + 5), fold's 3, roi_align's 4, random's 6, print's label,
                              non_maximum_suppression's center_point_box, reshape's
                              allowzero, broadcast_to's bidirectional, split's
                              split_sizes, constant.external's align and
                              is_placeholder, masked_scatter's out_dim,
                              repeat_interleave's repeats, axis and out_dim, call's prefix,
                              irfft's n, axis, normalization and input_is_complex */
}

Test(verify, attribute_kind_and_requiredness_come_from_the_schema) {
  ir_value *x = input(IR_DT_F32, "4, 3");
  const ir_attr_spec *s = ir_op_attr_spec(IR_OP_SQUEEZE, "axis");
  cr_assert(s && s->required && s->a.kind == IR_ATTR_INT);
  expect_msg(bad(IR_OP_SQUEEZE, IN(x), 1, NULL, 0), "mo.squeeze requires attribute 'axis'");
  expect_msg(bad(IR_OP_GATHER, IN(x, input(IR_DT_SI32, "2")), 2, ATTRS(astr("axis", "0")), 1),
             "attribute 'axis' of mo.gather must be an integer");
  /* a float attribute also takes an integer */
  ok(IR_OP_LAYER_NORM, IN(x, input(IR_DT_F32, "3"), input(IR_DT_F32, "3")), 3,
     ATTRS(aint("epsilon", 1)), 1);
  cr_assert_null(ir_op_attr_spec(IR_OP_RELU, "axis"));
}

/* The facts the runtime stamps stay accepted where the runtime puts them,
 * and only there. */
Test(verify, runtime_stamped_attributes_are_accepted_where_stamped) {
  ir_value *a = input(IR_DT_F32, "4, 8"), *b = input(IR_DT_F32, "5, 8");
  ir_node *mm = node(IR_OP_MATMUL, IN(a, b), 2,
                     ATTRS(aint("kiln.packed_b", 8), aint("kiln.transpose_b", 1)), 2, 1, NULL);
  ir_type ct = ty(IR_DT_F32, "4");
  ir_node *cu = node(IR_OP_CUSTOM, IN(a), 1,
                     ATTRS(aint("kiln.elementwise", 0), astr("kiln.library", "0123"),
                           astr("kiln.simt_stub", "never called"), astr("symbol", "k")),
                     4, 1, &ct);
  ir_node *ip = node(IR_OP_INPLACE_CUSTOM, IN(a), 1,
                     ATTRS(astr("kiln.library", "0123"), astr("symbol", "k")), 2, 1, NULL);
  ir_value *outs[] = {mm->out[0], cu->out[0], ip->out[0]};
  cr_assert_eq(ir_graph_set_outputs(g, outs, 3, (ir_loc){0, 0}), 0);
  cr_assert_eq(ir_graph_verify(g, &diag), 0, "%s", diag.msg);
  expect_type(mm->out[0], "!mo.tensor<[4, 5], f32>");
  set_outputs(node(IR_OP_ADD, IN(a, a), 2, ATTRS(aint("kiln.transpose_b", 1)), 1, 1, NULL)->out[0]);
  cr_assert_neq(ir_graph_verify(g, &diag), 0);
  expect_msg(diag.msg, "mo.add has no attribute 'kiln.transpose_b'");
}

Test(verify, dtype_sets_have_names) {
  cr_assert_str_eq(ir_dtype_set_name(IR_DTS_F), "f16, bf16, f32 or f64");
  cr_assert_str_eq(ir_dtype_set_name(IR_DTS_IDX), "si32 or si64");
  cr_assert(ir_dtype_in_set(IR_DT_F16, IR_DTS_ANY) && ir_dtype_in_set(IR_DT_F16, IR_DTS_FIB));
  cr_assert(ir_dtype_in_set(IR_DT_BF16, IR_DTS_F) && !ir_dtype_in_set(IR_DT_BF16, IR_DTS_I));
  cr_assert(!ir_dtype_in_set(IR_DT_F8E5M2, IR_DTS_F) && !ir_dtype_in_set(IR_DT_UI64, IR_DTS_I));
  cr_assert(ir_dtype_in_set(IR_DT_SI16, IR_DTS_I) && ir_dtype_in_set(IR_DT_UI32, IR_DTS_I));
  cr_assert(ir_dtype_in_set(IR_DT_SI64, IR_DTS_IDX) && !ir_dtype_in_set(IR_DT_SI8, IR_DTS_IDX));
  cr_assert_str_eq(ir_dtype_set_name(IR_DTS_I), "an integer (si8 to si64, ui8 to ui32)");
}
