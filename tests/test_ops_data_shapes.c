/* test_ops_data_shapes.c - dims read from data computed inside the graph
 * (ir/shape.c): a range whose limit, a slice whose bounds, a reshape,
 * broadcast_to or repeat_interleave whose shape operand, a resize whose
 * sizes operand other nodes compute from the inputs (and a resize by
 * run-time scales, its third operand). The JIT against the reference interpreter over
 * bindings and data (empty results, negative and out-of-range bounds as
 * numpy), a chain of two such reads, reads inside a loop body, bad values
 * as run-time errors naming the op, refusals at line:col (a weight, a count set from data), and a
 * device model (simt-emu) taking the same dims. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>

#include "ir/interp.h"
#include "support/oracle.h"

#define T(shape, dt) "!mo.tensor<[" shape "], " dt ">"

/* range(0, len(x) + k, 1): the limit is computed from an input's shape and
 * a scalar input; k < -len(x) gives an empty result. */
static const char *RANGE =
    "mo.graph @r<n, m>(%x: " T("n", "f32") ", %k: " T("", "si64") ") -> (" T("m", "si64") ", "
    T("m", "f32") ") {\n"
    "  %s = mo.shape_to_tensor(%x) : (" T("n", "f32") ") -> " T("1", "si64") "\n"
    "  %s0 = mo.reshape(%s) : " T("", "si64") "\n"
    "  %l = mo.add(%s0, %k) : " T("", "si64") "\n"
    ORACLE_CONST("z", "si64", "", "", "0")
    ORACLE_CONST("one", "si64", "", "", "1")
    "  %r = mo.range(%z, %l, %one) : " T("m", "si64") "\n"
    "  %f = mo.cast(%r) : " T("m", "f32") "\n"
    "  %e = mo.exp(%f) : " T("m", "f32") "\n"
    "  mo.output %r, %e : " T("m", "si64") ", " T("m", "f32") "\n}\n";

Test(range_computed, limit_from_a_shape_and_an_input) {
  static const double K[] = {-9, -3, 0, 2, 7};
  for (size_t i = 0; i < sizeof K / sizeof *K; i++) {
    oracle_gen gens[2] = {gen_uniform(-1, 1), gen_const(K[i])};
    char label[64];
    snprintf(label, sizeof label, "range limit len(x) + %g", K[i]);
    oracle_case c = {.label = label, .mlir = RANGE, .bindings = "n=0;n=3;n=40", .gens = gens,
                     .ngens = 2, .rtol = TOL_F32_TRANS, .atol = 1e-6};
    ORACLE_ASSERT(&c);
  }
}

/* The same graph through the API: the result's length follows the data of
 * each execute (one model, several lengths, one of them 0). */
Test(range_computed, one_model_serves_every_length) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(RANGE, strlen(RANGE), "r.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float xs[8] = {0};
  static const struct {
    int64_t n, k, want;
  } C[] = {{5, 2, 7}, {5, -5, 0}, {8, -10, 0}, {0, 3, 3}, {5, 2, 7}};
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
    int64_t k = C[i].k;
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 1, &C[i].n, xs, st),
                          kiln_tensor_borrow(KILN_INT64, 0, NULL, &k, st)};
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(kiln_model_execute(m, in, 2, out, 2, st), 0, "%s", kiln_status_message(st));
    cr_expect_eq(kiln_tensor_shape(out[0])[0], C[i].want, "case %zu: %lld", i,
                 (long long)kiln_tensor_shape(out[0])[0]);
    const int64_t *r = kiln_tensor_data(out[0]);
    for (int64_t e = 0; e < C[i].want; e++) cr_expect_eq(r[e], e);
    for (int j = 0; j < 2; j++) {
      kiln_tensor_free(in[j]);
      kiln_tensor_free(out[j]);
    }
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* slice_tensor along axis 1 from a - 3 to 2 * a with step s - 2: starts
 * below zero, stops past the end, negative steps (numpy's rules). */
static const char *SLICE =
    "mo.graph @s<b, p, q>(%x: " T("b, 5", "f32") ", %a: " T("1", "si64") ", %s: " T("1", "si64")
    ") -> (" T("p, q", "f32") ") {\n"
    ORACLE_CONST("c3", "si64", "1", "1x", "3")
    ORACLE_CONST("c2", "si64", "1", "1x", "2")
    ORACLE_CONST("ax", "si64", "1", "1x", "1")
    "  %st = mo.sub(%a, %c3) : " T("1", "si64") "\n"
    "  %sp = mo.mul(%a, %c2) : " T("1", "si64") "\n"
    "  %se = mo.sub(%s, %c2) : " T("1", "si64") "\n"
    "  %y = mo.slice_tensor(%x, %st, %sp, %se, %ax) : " T("p, q", "f32") "\n"
    "  mo.output %y : " T("p, q", "f32") "\n}\n";

Test(slice_computed, bounds_computed_by_kernels) {
  static const double A[] = {-4, 0, 1, 3, 4, 9};
  static const double S[] = {3, 4, 1, 0}; /* steps 1, 2, -1, -2 */
  for (size_t i = 0; i < sizeof A / sizeof *A; i++)
    for (size_t j = 0; j < sizeof S / sizeof *S; j++) {
      oracle_gen gens[3] = {gen_uniform(-2, 2), gen_const(A[i]), gen_const(S[j])};
      char label[80];
      snprintf(label, sizeof label, "slice a = %g, step %g", A[i], S[j] - 2);
      oracle_case c = {.label = label, .mlir = SLICE, .bindings = "b=0;b=2;b=6", .gens = gens,
                       .ngens = 3};
      ORACLE_ASSERT(&c);
    }
  /* a computed step of 0: both sides refuse, naming the op */
  oracle_gen zero[3] = {gen_uniform(-2, 2), gen_const(1), gen_const(2)};
  oracle_case z = {.label = "slice computed step 0", .mlir = SLICE, .bindings = "b=2",
                   .gens = zero, .ngens = 3, .expect_error = true};
  oracle_expect_both_fail(&z, "mo.slice_tensor");
}

/* A chain of two reads: range(0, k) [m], its sum as the limit of a second
 * range [p] (which needs m bound first), and a reshape whose shape is
 * computed from the second range's length. */
static const char *CHAIN =
    "mo.graph @c<m, p, u, v>(%k: " T("", "si32") ") -> (" T("p", "si32") ", " T("u, v", "si32")
    ") {\n"
    ORACLE_CONST("z", "si32", "", "", "0")
    ORACLE_CONST("one", "si32", "", "", "1")
    "  %r = mo.range(%z, %k, %one) : " T("m", "si32") "\n"
    "  %s = mo.sum(%r) {axis = 0} : " T("1", "si32") "\n"
    "  %l = mo.reshape(%s) : " T("", "si32") "\n"
    "  %r2 = mo.range(%z, %l, %one) : " T("p", "si32") "\n"
    "  %n = mo.shape_to_tensor(%r2) : (" T("p", "si32") ") -> " T("1", "si64") "\n"
    ORACLE_CONST("e", "si64", "1", "1x", "1")
    "  %sh2 = mo.concat(%e, %n) {axis = 0} : " T("2", "si64") "\n"
    "  %w = mo.reshape(%r2, %sh2) : " T("u, v", "si32") "\n"
    "  mo.output %r2, %w : " T("p", "si32") ", " T("u, v", "si32") "\n}\n";

Test(chain, a_read_of_data_computed_from_an_earlier_read) {
  static const double K[] = {0, 1, 2, 5, 12, -3};
  for (size_t i = 0; i < sizeof K / sizeof *K; i++) {
    oracle_gen gens[1] = {gen_const(K[i])};
    char label[64];
    snprintf(label, sizeof label, "chain k = %g", K[i]);
    oracle_case c = {.label = label, .mlir = CHAIN, .gens = gens, .ngens = 1};
    ORACLE_ASSERT(&c);
  }
  /* k = 4 as a constant: m = 4, p = 0 + 1 + 2 + 3 = 6, w is [1, 6] */
  char known[4096];
  snprintf(known, sizeof known, "mo.graph @c<m, p, u, v>() -> (%s, %s) {\n%s%s",
           T("p", "si32"), T("u, v", "si32"), ORACLE_CONST("k", "si32", "", "", "4"),
           strchr(CHAIN, '\n') + 1);
  static const int32_t want[6] = {0, 1, 2, 3, 4, 5};
  oracle_expect exp[2] = {{KILN_INT32, 1, {6}, want}, {KILN_INT32, 2, {1, 6}, want}};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert_not_null(r);
  cr_expect_eq(oracle_known("chain k = 4", known, exp, 2, 0, 0, r), 0, "%s", r->msg);
  free(r);
}

/* reshape / broadcast_to / repeat_interleave with computed shape operands
 * (the graphs earlier versions refused), and bad values as run-time errors
 * naming the op. */
Test(shape_operands, computed_reshape_broadcast_and_repeats) {
  const char *reshape =
      "mo.graph @rs<p, q>(%x: " T("6", "f32") ", %s: " T("2", "si64") ") -> (" T("p, q", "f32")
      ") {\n"
      "  %t = mo.abs(%s) : " T("2", "si64") "\n"
      "  %y = mo.reshape(%x, %t) : " T("p, q", "f32") "\n"
      "  mo.output %y : " T("p, q", "f32") "\n}\n";
  oracle_gen ok[2] = {gen_uniform(-1, 1), gen_iota(-3)}; /* |-3|, |-2| */
  oracle_case r = {.label = "reshape computed", .mlir = reshape, .gens = ok, .ngens = 2};
  ORACLE_ASSERT(&r);
  oracle_gen bad[2] = {gen_uniform(-1, 1), gen_iota(4)}; /* 4 x 5 elements from 6 */
  oracle_case rb = {.label = "reshape computed bad", .mlir = reshape, .gens = bad, .ngens = 2,
                    .expect_error = true};
  oracle_expect_both_fail(&rb, "mo.reshape");
  const char *bcast =
      "mo.graph @bc<p>(%x: " T("1", "f32") ", %s: " T("1", "si64") ") -> (" T("p", "f32") ") {\n"
      "  %t = mo.negate(%s) : " T("1", "si64") "\n"
      "  %y = mo.broadcast_to(%x, %t) : " T("p", "f32") "\n"
      "  mo.output %y : " T("p", "f32") "\n}\n";
  static const double N[] = {-5, 0, -1};
  for (size_t i = 0; i < sizeof N / sizeof *N; i++) {
    oracle_gen g[2] = {gen_uniform(-1, 1), gen_const(N[i])};
    oracle_case b = {.label = "broadcast_to computed", .mlir = bcast, .gens = g, .ngens = 2};
    ORACLE_ASSERT(&b);
  }
  oracle_gen gneg[2] = {gen_uniform(-1, 1), gen_const(3)};
  oracle_case bn = {.label = "broadcast_to negative", .mlir = bcast, .gens = gneg, .ngens = 2,
                    .expect_error = true};
  oracle_expect_both_fail(&bn, "mo.broadcast_to");
  const char *repeat =
      "mo.graph @g<n, k>(%x: " T("n", "f32") ", %r: " T("n", "si64") ") -> (" T("k", "f32")
      ") {\n"
      "  %t = mo.abs(%r) : " T("n", "si64") "\n"
      "  %y = mo.repeat_interleave(%x, %t) {axis = 0} : " T("k", "f32") "\n"
      "  mo.output %y : " T("k", "f32") "\n}\n";
  oracle_gen gr[2] = {gen_uniform(-1, 1), gen_integers(-3, 3)};
  oracle_case rp = {.label = "repeat_interleave computed", .mlir = repeat,
                    .bindings = "n=0;n=1;n=9", .gens = gr, .ngens = 2};
  ORACLE_ASSERT(&rp);
}

/* Inside a loop body: each iteration reads range(0, i + 1)'s length from
 * the carried counter (the region's own solve); 0 + 1 + 3 + 6 = 10. */
Test(control, a_while_body_reads_a_computed_length) {
  const char *mlir =
      "mo.graph @w(%i: " T("", "si64") ", %acc: " T("", "si64") ") -> (" T("", "si64") ") {\n"
      "  %i2, %a2 = mo.while(%i, %acc) : (" T("", "si64") ", " T("", "si64") ") -> ("
      T("", "si64") ", " T("", "si64") ") {\n"
      "    mo.graph @cond(%ci: " T("", "si64") ", %ca: " T("", "si64") ") -> " T("", "bool")
      " {\n"
      "      %lim = mo.constant {value = #M.dense_array<4> : tensor<si64>} : " T("", "si64") "\n"
      "      %go = mo.greater(%lim, %ci) : " T("", "bool") "\n"
      "      mo.output %go : " T("", "bool") "\n    }\n"
      "    mo.graph @body<m>(%bi: " T("", "si64") ", %ba: " T("", "si64") ") -> ("
      T("", "si64") ", " T("", "si64") ") {\n"
      "      %one = mo.constant {value = #M.dense_array<1> : tensor<si64>} : " T("", "si64") "\n"
      "      %z = mo.constant {value = #M.dense_array<0> : tensor<si64>} : " T("", "si64") "\n"
      "      %n = mo.add(%bi, %one) : " T("", "si64") "\n"
      "      %r = mo.range(%z, %n, %one) : " T("m", "si64") "\n"
      "      %s = mo.sum(%r) {axis = 0} : " T("1", "si64") "\n"
      "      %s0 = mo.reshape(%s) : " T("", "si64") "\n"
      "      %na = mo.add(%ba, %s0) : " T("", "si64") "\n"
      "      mo.output %n, %na : " T("", "si64") ", " T("", "si64") "\n    }\n  }\n"
      "  mo.output %a2 : " T("", "si64") "\n}\n";
  oracle_gen gens[2] = {gen_const(0), gen_const(0)};
  oracle_case c = {.label = "while body range", .mlir = mlir, .gens = gens, .ngens = 2};
  ORACLE_ASSERT(&c);
  oracle_gen from2[2] = {gen_const(2), gen_const(5)}; /* 5 + 3 + 6 = 14 */
  oracle_case d = {.label = "while body range from 2", .mlir = mlir, .gens = from2, .ngens = 2};
  ORACLE_ASSERT(&d);
  /* the same loop on constants, against the hand-worked sum */
  char known[4096];
  snprintf(known, sizeof known, "mo.graph @w() -> (" T("", "si64") ") {\n%s%s%s",
           ORACLE_CONST("i", "si64", "", "", "0"), ORACLE_CONST("acc", "si64", "", "", "0"),
           strchr(mlir, '\n') + 1);
  static const int64_t ten[1] = {10};
  oracle_expect_known("while body range known", known, (oracle_expect){KILN_INT64, 0, {0}, ten});
}

/* Data whose producers cannot run before the graph: refused at line:col. */
Test(refusals, weights_and_counts_set_from_data) {
  const char *weight =
      "mo.graph @w<p>(%x: " T("4", "f32") ") -> (" T("p", "f32") ") {\n"
      "  %s = mo.constant.external {name = \"shape\"} : " T("1", "si64") "\n"
      "  %t = mo.abs(%s) : " T("1", "si64") "\n"
      "  %y = mo.broadcast_to(%x, %t) : " T("p", "f32") "\n"
      "  mo.output %y : " T("p", "f32") "\n}\n";
  EXPECT_REJECTED(weight, "depends on mo.constant.external (%s), a weight");
  char msg[1024];
  oracle_ir_parse_only(weight, msg, sizeof msg);
  cr_expect(strncmp(msg, "4:", 2) == 0, "no line:col in '%s'", msg);
  const char *count =
      "mo.graph @c<m, n, p>(%x: " T("m", "f32") ") -> (" T("p", "si64") ") {\n"
      "  %i = mo.nonzero(%x) : " T("n, 1", "si64") "\n"
      "  %s = mo.sum(%i) {axis = 0} : " T("1, 1", "si64") "\n"
      "  %l = mo.reshape(%s) : " T("", "si64") "\n"
      ORACLE_CONST("z", "si64", "", "", "0")
      ORACLE_CONST("one", "si64", "", "", "1")
      "  %r = mo.range(%z, %l, %one) : " T("p", "si64") "\n"
      "  mo.output %r : " T("p", "si64") "\n}\n";
  EXPECT_REJECTED(count, "depends on mo.nonzero (%i)");
}

/* An input the computation reads whose data is not on the host (a device
 * tensor): the solve says which, instead of reading it. */
Test(refusals, computed_from_an_input_not_on_the_host) {
  ir_diag d;
  ir_graph *g = ir_parse(RANGE, strlen(RANGE), &d);
  cr_assert_not_null(g, "%s", d.msg);
  int64_t k = 2, syms[8];
  ir_tensor in[2] = {{.dtype = IR_DT_F32, .rank = 1, .shape = {4}, .data = NULL},
                     {.dtype = IR_DT_SI64, .rank = 0, .data = &k}};
  char msg[512];
  cr_expect_neq(ir_solve_symbols(g, in, 2, syms, msg, sizeof msg), 0);
  cr_expect(strstr(msg, "mo.range (%r): operand 1 (%l) sets its dims, but it is computed from "
                        "mo.shape_to_tensor (%s), which reads input 0 (x), whose data is not on "
                        "the host") != NULL, "%s", msg);
  ir_graph_free(g);
}

/* A device model (simt-emu): the dims computed on the host from the same
 * data, the kernels launched with them. */
Test(device, simt_emu_takes_the_computed_dims) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_device *d = kiln_device_open("simt-emu", st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(SLICE, strlen(SLICE), "s.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile_on(ctx, d, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float xs[10];
  for (int i = 0; i < 10; i++) xs[i] = (float)i;
  static const struct {
    int64_t a, s, q;
    float first;
  } C[] = {{3, 3, 5, 0}, {1, 0, 1, 3}, {4, 4, 2, 1}}; /* [0:6:1], [-2:2:-2], [1:8:2] */
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
    int64_t xsh[2] = {2, 5}, one = 1, a = C[i].a, s = C[i].s;
    kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 2, xsh, xs, st),
                          kiln_tensor_borrow(KILN_INT64, 1, &one, &a, st),
                          kiln_tensor_borrow(KILN_INT64, 1, &one, &s, st)};
    kiln_tensor *out = NULL;
    cr_assert_eq(kiln_model_execute(m, in, 3, &out, 1, st), 0, "%s", kiln_status_message(st));
    cr_expect_eq(kiln_tensor_shape(out)[0], 2);
    cr_expect_eq(kiln_tensor_shape(out)[1], C[i].q, "case %zu: %lld", i,
                 (long long)kiln_tensor_shape(out)[1]);
    const float *y = kiln_tensor_data(out);
    cr_expect_float_eq(y[0], C[i].first, 0, "case %zu: %g", i, y[0]);
    kiln_tensor_free(out);
    for (int j = 0; j < 3; j++) kiln_tensor_free(in[j]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_device_close(d);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* mo.resize_* with a sizes operand (ONNX Resize's run-time sizes): the
 * result's dims from sizes computed as x's shape times a factor input
 * (x2, x1, x0: an empty result) in three modes; a negative size names the op; a sizes operand of
 * the wrong length is refused at line:col. */
static const char *resize_graph(char *buf, size_t cap, const char *op, const char *attrs) {
  snprintf(buf, cap,
           "mo.graph @rz<n, h, w, a, b, c, d>(%%x: !mo.tensor<[n, 2, h, w], f32>, "
           "%%f: !mo.tensor<[4], si64>) -> (!mo.tensor<[a, b, c, d], f32>) {\n"
           "  %%s = mo.shape_to_tensor(%%x) : (!mo.tensor<[n, 2, h, w], f32>) -> "
           "!mo.tensor<[4], si64>\n"
           "  %%t = mo.mul(%%s, %%f) : !mo.tensor<[4], si64>\n"
           "  %%y = mo.%s(%%x, %%t) %s : !mo.tensor<[a, b, c, d], f32>\n"
           "  mo.output %%y : !mo.tensor<[a, b, c, d], f32>\n}\n",
           op, attrs);
  return buf;
}

Test(resize_sizes, computed_sizes_against_the_oracle) {
  static const struct {
    const char *op, *attrs;
  } OPS[] = {
      {"resize_nearest", "{coordinate_transformation_mode = \"asymmetric\"}"},
      {"resize_linear", "{coordinate_transformation_mode = \"half_pixel\"}"},
      {"resize_bicubic", "{coordinate_transformation_mode = \"align_corners\"}"},
  };
  static const double F[] = {2, 1, 0}; /* every axis times F (0: an empty result) */
  char buf[2048], label[96];
  for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
    for (size_t j = 0; j < sizeof F / sizeof *F; j++) {
      oracle_gen gens[2] = {gen_uniform(-1, 1), gen_const(F[j])};
      snprintf(label, sizeof label, "%s sizes x %g", OPS[i].op, F[j]);
      oracle_case c = {.label = label, .mlir = resize_graph(buf, sizeof buf, OPS[i].op,
                                                            OPS[i].attrs),
                       .bindings = "n=1,h=3,w=4;n=2,h=1,w=5", .gens = gens, .ngens = 2,
                       .rtol = 1e-5, .atol = 1e-6};
      ORACLE_ASSERT(&c);
    }
  oracle_gen neg[2] = {gen_uniform(-1, 1), gen_const(-1)};
  oracle_case bad = {.label = "resize negative sizes",
                     .mlir = resize_graph(buf, sizeof buf, "resize_nearest", ""),
                     .bindings = "n=1,h=2,w=2", .gens = neg, .ngens = 2, .expect_error = true};
  oracle_expect_both_fail(&bad, "mo.resize_nearest");
  EXPECT_REJECTED("mo.graph @rz<a, b>(%x: !mo.tensor<[3, 4], f32>, %s: !mo.tensor<[3], si64>) "
                  "-> (!mo.tensor<[a, b], f32>) {\n"
                  "  %y = mo.resize_linear(%x, %s) : !mo.tensor<[a, b], f32>\n"
                  "  mo.output %y : !mo.tensor<[a, b], f32>\n}\n",
                  "2:3: mo.resize_linear: the sizes operand must be 1-D with 2 elements");
}

/* Hand-worked: [1, 1, 2, 2] nearest (asymmetric, floor) to sizes [1, 1, 4,
 * 3] given as a constant computed by a mul: rows 0 0 1 1, columns 0 0 1. */
Test(resize_sizes, known_answer) {
  const char *mlir =
      "mo.graph @rz<a, b, c, d>() -> (!mo.tensor<[a, b, c, d], f32>) {\n"
      ORACLE_CONST("x", "f32", "1, 1, 2, 2", "1x1x2x2x", "1, 2, 3, 4")
      ORACLE_CONST("s", "si64", "4", "4x", "1, 1, 2, 3")
      ORACLE_CONST("m", "si64", "4", "4x", "1, 1, 2, 1")
      "  %t = mo.mul(%s, %m) : !mo.tensor<[4], si64>\n"
      "  %y = mo.resize_nearest(%x, %t) {coordinate_transformation_mode = \"asymmetric\", "
      "nearest_mode = \"floor\"} : !mo.tensor<[a, b, c, d], f32>\n"
      "  mo.output %y : !mo.tensor<[a, b, c, d], f32>\n}\n";
  oracle_expect_known("resize sizes known", mlir,
                      (oracle_expect){KILN_FLOAT32, 4, {1, 1, 4, 3},
                                      ORACLE_F32(1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4)});
}

/* mo.resize_* with run-time scales (a third operand, ONNX Resize's scales
 * given as data): the sizes floor(dim * scale) computed in the graph, the
 * kernel reading the scales for the coordinates, against the oracle in
 * three modes for scales that divide the dims and ones that do not; a
 * negative scale names the op; a scales operand of the wrong dtype is
 * refused at line:col. */
static const char *resize_scales_graph(char *buf, size_t cap, const char *op, const char *attrs) {
  snprintf(buf, cap,
           "mo.graph @rz<n, h, w, a, b, c, d>(%%x: !mo.tensor<[n, 2, h, w], f32>, "
           "%%f: !mo.tensor<[4], f32>) -> (!mo.tensor<[a, b, c, d], f32>) {\n"
           "  %%s = mo.shape_to_tensor(%%x) : (!mo.tensor<[n, 2, h, w], f32>) -> "
           "!mo.tensor<[4], si64>\n"
           "  %%sd = mo.cast(%%s) {dtype = f64} : !mo.tensor<[4], f64>\n"
           "  %%fd = mo.cast(%%f) {dtype = f64} : !mo.tensor<[4], f64>\n"
           "  %%p = mo.mul(%%sd, %%fd) : !mo.tensor<[4], f64>\n"
           "  %%q = mo.floor(%%p) : !mo.tensor<[4], f64>\n"
           "  %%t = mo.cast(%%q) {dtype = si64} : !mo.tensor<[4], si64>\n"
           "  %%y = mo.%s(%%x, %%t, %%f) %s : !mo.tensor<[a, b, c, d], f32>\n"
           "  mo.output %%y : !mo.tensor<[a, b, c, d], f32>\n}\n",
           op, attrs);
  return buf;
}

Test(resize_scales, run_time_scales_against_the_oracle) {
  static const struct {
    const char *op, *attrs;
  } OPS[] = {
      {"resize_nearest", "{coordinate_transformation_mode = \"half_pixel\"}"},
      {"resize_linear", "{coordinate_transformation_mode = \"pytorch_half_pixel\"}"},
      {"resize_bicubic", "{coordinate_transformation_mode = \"align_corners\"}"},
  };
  static const double F[] = {2, 1, 0.6, 1.7, 0.25};
  char buf[2048], label[96];
  for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
    for (size_t j = 0; j < sizeof F / sizeof *F; j++) {
      oracle_gen gens[2] = {gen_uniform(-1, 1), gen_const(F[j])};
      snprintf(label, sizeof label, "%s scales %g", OPS[i].op, F[j]);
      oracle_case c = {.label = label,
                       .mlir = resize_scales_graph(buf, sizeof buf, OPS[i].op, OPS[i].attrs),
                       .bindings = "n=1,h=3,w=4;n=2,h=1,w=5", .gens = gens, .ngens = 2,
                       .rtol = 1e-5, .atol = 1e-6};
      ORACLE_ASSERT(&c);
    }
  oracle_gen neg[2] = {gen_uniform(-1, 1), gen_const(-0.5)};
  oracle_case bad = {.label = "resize negative scales",
                     .mlir = resize_scales_graph(buf, sizeof buf, "resize_linear", ""),
                     .bindings = "n=1,h=2,w=2", .gens = neg, .ngens = 2, .expect_error = true};
  oracle_expect_both_fail(&bad, "mo.resize_linear");
  EXPECT_REJECTED("mo.graph @rz<a, b>(%x: !mo.tensor<[3, 4], f32>, %s: !mo.tensor<[2], si64>, "
                  "%f: !mo.tensor<[2], si64>) -> (!mo.tensor<[a, b], f32>) {\n"
                  "  %y = mo.resize_linear(%x, %s, %f) : !mo.tensor<[a, b], f32>\n"
                  "  mo.output %y : !mo.tensor<[a, b], f32>\n}\n",
                  "2:3: mo.resize_linear: the scales operand must be 1-D f32 or f64");
}

/* Hand-worked: [1, 1, 1, 4] = 1, 2, 3, 4 by scales [1, 1, 1, 0.6] (linear,
 * half_pixel) to 2 columns: the coordinates (o + 0.5) / 0.6 - 0.5 = 1/3 and 2
 * read 1 * 2/3 + 2 * 1/3 and 3; the ratio of the dims (0.5) would give 1.5
 * and 3.5. On the CPU and on simt-emu. */
static const char *RESIZE_SCALES_KNOWN =
    "mo.graph @rz<a, b, c, d>(%f: !mo.tensor<[4], f32>) -> (!mo.tensor<[a, b, c, d], f32>) {\n"
    ORACLE_CONST("x", "f32", "1, 1, 1, 4", "1x1x1x4x", "1.0, 2.0, 3.0, 4.0")
    ORACLE_CONST("t", "si64", "4", "4x", "1, 1, 1, 2")
    "  %y = mo.resize_linear(%x, %t, %f) {coordinate_transformation_mode = \"half_pixel\"} : "
    "!mo.tensor<[a, b, c, d], f32>\n"
    "  mo.output %y : !mo.tensor<[a, b, c, d], f32>\n}\n";

Test(resize_scales, known_answer_on_cpu_and_simt_emu) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_device *dev = kiln_device_open("simt-emu", st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  for (int on_dev = 0; on_dev < 2; on_dev++) {
    kiln_graph *g = kiln_graph_parse(RESIZE_SCALES_KNOWN, strlen(RESIZE_SCALES_KNOWN), "k.mlir",
                                     st);
    cr_assert_not_null(g, "%s", kiln_status_message(st));
    kiln_model *m =
        on_dev ? kiln_model_compile_on(ctx, dev, g, st) : kiln_model_compile(ctx, g, st);
    cr_assert_not_null(m, "%s", kiln_status_message(st));
    float sc[4] = {1, 1, 1, 0.6f};
    int64_t four = 4;
    kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 1, &four, sc, st), *out = NULL;
    cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
    cr_assert_eq(kiln_tensor_shape(out)[3], 2);
    const float *y = kiln_tensor_data(out);
    cr_expect_float_eq(y[0], 1.33333325f, 0, "%s: %.9g", on_dev ? "simt-emu" : "cpu", y[0]);
    cr_expect_float_eq(y[1], 3.0f, 0, "%s: %.9g", on_dev ? "simt-emu" : "cpu", y[1]);
    kiln_tensor_free(in);
    kiln_tensor_free(out);
    kiln_model_free(m);
    kiln_graph_free(g);
  }
  kiln_device_close(dev);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
