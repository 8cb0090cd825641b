/* test_control.c - control flow (ir/control.h): mo.if, mo.while and mo.call
 * through the text, the verifier, the reference interpreter and CPU models.
 *
 * Every graph runs twice, in the reference interpreter (the oracle) and as
 * a CPU model, and the two must agree exactly (the ops used are exact in
 * f32 / si64); a few answers are also worked out by hand. Bad graphs are
 * checked for their message and line:col. The disk cache is off, so the
 * context's counters count compiles and memory-cache hits only. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/control.h"
#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/kiln.h"

#define T0I "!mo.tensor<[], si64>"
#define T0B "!mo.tensor<[], bool>"

static void setup(void) { setenv("KILN_CACHE", "off", 1); }
TestSuite(control, .init = setup);

/* ---- helpers ---- */
static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse failed at %d:%d: %s", d.line, d.col, d.msg);
  return g;
}

/* The first error of text: its message contains `want`, at line:col. */
static void parse_fails(const char *text, int line, int col, const char *want) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_null(g, "parsed, expected: %s", want);
  cr_expect(strstr(d.msg, want), "message '%s' lacks '%s'", d.msg, want);
  cr_expect(d.line == line && d.col == col, "'%s' at %d:%d, expected %d:%d", d.msg, d.line,
            d.col, line, col);
}

static kiln_tensor *tensor(kiln_dtype dt, int rank, const int64_t *shape, const void *data) {
  kiln_tensor *t = kiln_tensor_new(dt, rank, shape, NULL);
  cr_assert_not_null(t);
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
  memcpy(kiln_tensor_data(t), data, n * (dt == KILN_FLOAT32 ? 4 : dt == KILN_BOOL ? 1 : 8));
  return t;
}

static ir_tensor as_ir(const kiln_tensor *t) {
  ir_tensor r = {0};
  r.dtype = (ir_dtype)kiln_tensor_dtype(t);
  r.rank = kiln_tensor_rank(t);
  for (int i = 0; i < r.rank; i++) r.shape[i] = kiln_tensor_shape(t)[i];
  r.data = kiln_tensor_data(t);
  return r;
}

/* Run text on the inputs in the interpreter and as a CPU model of ctx (a
 * fresh one when NULL); both must agree. Returns the model's outputs (the
 * caller frees them). */
static void run_both(kiln_context *ctx, const char *text, kiln_tensor **in, int nin,
                     kiln_tensor **out, int nout) {
  ir_graph *ig = parse(text);
  ir_tensor iin[8], iout[8];
  for (int i = 0; i < nin; i++) iin[i] = as_ir(in[i]);
  char msg[1024] = "";
  cr_assert_eq(ir_interp_run(ig, iin, NULL, NULL, iout, msg, sizeof msg), 0, "interp: %s", msg);
  kiln_status *st = kiln_status_new();
  bool own = !ctx;
  if (own) cr_assert_not_null(ctx = kiln_context_new(st));
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "t.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  for (int i = 0; i < nout; i++) out[i] = NULL;
  cr_assert_eq(kiln_model_execute(m, in, nin, out, nout, st), 0, "%s", kiln_status_message(st));
  for (int i = 0; i < nout; i++) {
    ir_tensor a = as_ir(out[i]);
    cr_assert_eq(a.rank, iout[i].rank, "output %d rank", i);
    for (int k = 0; k < a.rank; k++) cr_assert_eq(a.shape[k], iout[i].shape[k], "output %d", i);
    size_t bytes = kiln_tensor_nbytes(out[i]);
    cr_assert_eq(memcmp(a.data, iout[i].data, bytes), 0, "output %d differs from the oracle", i);
    free(iout[i].data);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  if (own) kiln_context_free(ctx);
  kiln_status_free(st);
  ir_graph_free(ig);
}

static int64_t i64_of(const kiln_tensor *t) { return *(const int64_t *)kiln_tensor_data(t); }

/* ---- mo.if ---- */
static const char *if_text =
    "mo.graph @main(%p: " T0B ", %x: !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {\n"
    "  %y = mo.if(%p, %x) : (" T0B ", !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {\n"
    "    mo.graph @then(%a: !mo.tensor<[k], f32>) -> !mo.tensor<[k], f32> {\n"
    "      %b = mo.add(%a, %a) : !mo.tensor<[k], f32>\n"
    "      mo.output %b : !mo.tensor<[k], f32>\n"
    "    }\n"
    "    mo.graph @else(%a: !mo.tensor<[k], f32>) -> !mo.tensor<[k], f32> {\n"
    "      %b = mo.negate(%a) : !mo.tensor<[k], f32>\n"
    "      mo.output %b : !mo.tensor<[k], f32>\n"
    "    }\n"
    "  }\n"
    "  %z = mo.mul(%y, %x) : !mo.tensor<[n], f32>\n"
    "  mo.output %z : !mo.tensor<[n], f32>\n"
    "}\n";

Test(control, if_picks_the_branch_its_predicate_names) {
  float xs[3] = {1, -2, 3};
  for (int p = 0; p < 2; p++) {
    bool pv = p;
    kiln_tensor *in[2] = {tensor(KILN_BOOL, 0, NULL, &pv),
                          tensor(KILN_FLOAT32, 1, (int64_t[]){3}, xs)};
    kiln_tensor *out[1];
    run_both(NULL, if_text, in, 2, out, 1);
    const float *z = kiln_tensor_data(out[0]);
    for (int i = 0; i < 3; i++) /* then: 2x * x; else: -x * x */
      cr_expect_eq(z[i], pv ? 2 * xs[i] * xs[i] : -xs[i] * xs[i]);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
  }
}

/* A cond whose branches read values of the enclosing graph, in the form
 * Python's ops.cond gives it (kiln.graph's Graph._capture): every value
 * either branch reads is an operand of the mo.if and an input of both
 * branches, in one order, so each branch has an input it does not use, and
 * the captured values have dims of their own (n, m). */
static const char *if_captures_text =
    "mo.graph @main(%p: " T0B ", %x: !mo.tensor<[n], f32>, %y: !mo.tensor<[m], f32>) -> "
    "!mo.tensor<[n], f32> {\n"
    "  %t = mo.add(%x, %x) : !mo.tensor<[n], f32>\n"
    "  %r = mo.if(%p, %t, %x, %y) : (" T0B ", !mo.tensor<[n], f32>, !mo.tensor<[n], f32>, "
    "!mo.tensor<[m], f32>) -> !mo.tensor<[n], f32> {\n"
    "    mo.graph @then(%c0: !mo.tensor<[a], f32>, %c1: !mo.tensor<[a], f32>, "
    "%c2: !mo.tensor<[b], f32>) -> !mo.tensor<[a], f32> {\n"
    "      %o = mo.mul(%c0, %c1) : !mo.tensor<[a], f32>\n"
    "      mo.output %o : !mo.tensor<[a], f32>\n"
    "    }\n"
    "    mo.graph @else(%c0: !mo.tensor<[a], f32>, %c1: !mo.tensor<[a], f32>, "
    "%c2: !mo.tensor<[b], f32>) -> !mo.tensor<[a], f32> {\n"
    "      %s = mo.sum(%c2) {axis = 0} : (!mo.tensor<[b], f32>) -> !mo.tensor<[1], f32>\n"
    "      %o = mo.sub(%c1, %s) : (!mo.tensor<[a], f32>, !mo.tensor<[1], f32>) -> "
    "!mo.tensor<[a], f32>\n"
    "      mo.output %o : !mo.tensor<[a], f32>\n"
    "    }\n"
    "  }\n"
    "  mo.output %r : !mo.tensor<[n], f32>\n"
    "}\n";

/* The same cond as MAX writes it: branches without inputs that name the
 * enclosing graph's values (the else branch meets %y before %x). The parser
 * lifts them into the form above (parse.c lift_captures). */
static const char *if_closure_text =
    "mo.graph @main(%p: " T0B ", %x: !mo.tensor<[n], f32>, %y: !mo.tensor<[m], f32>) -> "
    "!mo.tensor<[n], f32> {\n"
    "  %t = mo.add(%x, %x) : !mo.tensor<[n], f32>\n"
    "  %r = mo.if(%p) : (" T0B ") -> !mo.tensor<[n], f32> {\n"
    "    mo.graph @then() -> !mo.tensor<[n], f32> {\n"
    "      %o = mo.mul(%t, %x) : !mo.tensor<[n], f32>\n"
    "      mo.output %o : !mo.tensor<[n], f32>\n"
    "    }\n"
    "    mo.graph @else() -> !mo.tensor<[n], f32> {\n"
    "      %s = mo.sum(%y) {axis = 0} : (!mo.tensor<[m], f32>) -> !mo.tensor<[1], f32>\n"
    "      %o = mo.sub(%x, %s) : (!mo.tensor<[n], f32>, !mo.tensor<[1], f32>) -> "
    "!mo.tensor<[n], f32>\n"
    "      mo.output %o : !mo.tensor<[n], f32>\n"
    "    }\n"
    "  }\n"
    "  mo.output %r : !mo.tensor<[n], f32>\n"
    "}\n";

static void expect_captured_cond(const char *text) {
  float xs[3] = {1, -2, 3}, ys[4] = {1, 2, 3, 4};
  for (int p = 0; p < 2; p++) {
    bool pv = p;
    kiln_tensor *in[3] = {tensor(KILN_BOOL, 0, NULL, &pv),
                          tensor(KILN_FLOAT32, 1, (int64_t[]){3}, xs),
                          tensor(KILN_FLOAT32, 1, (int64_t[]){4}, ys)};
    kiln_tensor *out[1];
    run_both(NULL, text, in, 3, out, 1);
    const float *r = kiln_tensor_data(out[0]);
    for (int i = 0; i < 3; i++) /* then: (x + x) * x; else: x - sum(y) */
      cr_expect_eq(r[i], pv ? 2 * xs[i] * xs[i] : xs[i] - 10);
    kiln_tensor_free(out[0]);
    for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  }
}

Test(control, if_branches_read_captured_values_of_the_enclosing_graph) {
  expect_captured_cond(if_captures_text);
}

Test(control, if_branches_read_the_enclosing_graph_by_name_as_max_writes_them) {
  expect_captured_cond(if_closure_text);
  /* lifted: operands (%p, %t, %x, %y), each branch's inputs in that order;
   * the printed form reads back to itself */
  ir_graph *g = parse(if_closure_text);
  char *a = ir_print(g);
  cr_assert(strstr(a, "mo.if(%p, %t, %x, %y)"), "%s", a);
  cr_assert(strstr(a, "@else<n, m>(%t: !mo.tensor<[n], f32>, %x: !mo.tensor<[n], f32>, "
                      "%y: !mo.tensor<[m], f32>)"), "%s", a);
  ir_graph *h = parse(a);
  char *b = ir_print(h);
  cr_expect_str_eq(a, b);
  free(a);
  free(b);
  ir_graph_free(g);
  ir_graph_free(h);
  /* the enclosing graph's values keep their own symbols when the branches
   * number theirs differently (here m is the main graph's first) */
  char text[4096];
  const char *paren = strchr(if_closure_text, '(');
  snprintf(text, sizeof text, "mo.graph @main<m, n>%s", paren);
  ir_graph *k = parse(text);
  int m = ir_graph_symbol(k, "m", 1, false), n = ir_graph_symbol(k, "n", 1, false);
  cr_assert(m == 0 && n == 1);
  cr_expect(ir_dim_uses_sym(k->inputs[2]->type.dims[0], m), "%%y is [m]");
  cr_expect(ir_dim_uses_sym(k->inputs[1]->type.dims[0], n), "%%x is [n]");
  ir_graph_free(k);
}

/* A branch of a branch reads the outermost graph and its own enclosing
 * branch: the outer branch captures what the inner one needs from above. */
Test(control, a_nested_branch_reads_values_two_graphs_up) {
  static const char *text =
      "mo.graph @main(%p: " T0B ", %q: " T0B ", %x: " T0I ") -> " T0I " {\n"
      "  %r = mo.if(%p) : (" T0B ") -> " T0I " {\n"
      "    mo.graph @then() -> " T0I " {\n"
      "      %h = mo.add(%x, %x) : " T0I "\n"
      "      %s = mo.if(%q) : (" T0B ") -> " T0I " {\n"
      "        mo.graph @then() -> " T0I " {\n"
      "          %o = mo.mul(%h, %x) : " T0I "\n"
      "          mo.output %o : " T0I "\n"
      "        }\n"
      "        mo.graph @else() -> " T0I " {\n"
      "          mo.output %h : " T0I "\n"
      "        }\n"
      "      }\n"
      "      mo.output %s : " T0I "\n"
      "    }\n"
      "    mo.graph @else() -> " T0I " {\n"
      "      %o = mo.negate(%x) : " T0I "\n"
      "      mo.output %o : " T0I "\n"
      "    }\n"
      "  }\n"
      "  mo.output %r : " T0I "\n"
      "}\n";
  for (int k = 0; k < 4; k++) {
    bool pv = k & 1, qv = k & 2;
    int64_t x = 5;
    kiln_tensor *in[3] = {tensor(KILN_BOOL, 0, NULL, &pv), tensor(KILN_BOOL, 0, NULL, &qv),
                          tensor(KILN_INT64, 0, NULL, &x)};
    kiln_tensor *out[1];
    run_both(NULL, text, in, 3, out, 1);
    cr_expect_eq(i64_of(out[0]), pv ? (qv ? 2 * x * x : 2 * x) : -x, "p=%d q=%d", pv, qv);
    kiln_tensor_free(out[0]);
    for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  }
}

/* A branch naming a buffer of the enclosing graph: refused at the use. */
Test(control, a_branch_reading_a_buffer_of_the_enclosing_graph_is_an_error_at_its_use) {
  parse_fails("mo.graph @main(%p: " T0B ", %b: !mo.buffer<[4], f32>) -> " T0I " {\n"
              "  %r = mo.if(%p) : (" T0B ") -> " T0I " {\n"
              "    mo.graph @then() -> " T0I " {\n"
              "      %c0 = mo.chain.create : !mo.chain\n"
              "      %v, %c1 = mo.mutable.load(%b, %c0) : (!mo.buffer<[4], f32>, !mo.chain) -> "
              "(!mo.tensor<[4], f32>, !mo.chain)\n"
              "      %i = mo.constant {value = #M.dense_array<1> : tensor<si64>} : " T0I "\n"
              "      mo.output %i : " T0I "\n"
              "    }\n"
              "    mo.graph @else() -> " T0I " {\n"
              "      %i = mo.constant {value = #M.dense_array<0> : tensor<si64>} : " T0I "\n"
              "      mo.output %i : " T0I "\n"
              "    }\n"
              "  }\n"
              "  mo.output %r : " T0I "\n"
              "}\n",
              5, 33, "a mo.if branch reads %b, a !mo.buffer of the enclosing graph");
}

/* Loop regions still see only their carried values. */
Test(control, a_loop_region_reading_the_enclosing_graph_is_an_error_at_its_use) {
  parse_fails("mo.graph @main(%i: " T0I ", %n: " T0I ") -> " T0I " {\n"
              "  %r = mo.while(%i) : (" T0I ") -> " T0I " {\n"
              "    mo.graph @cond(%a: " T0I ") -> " T0B " {\n"
              "      %c = mo.greater(%n, %a) : (" T0I ", " T0I ") -> " T0B "\n"
              "      mo.output %c : " T0B "\n"
              "    }\n"
              "    mo.graph @body(%a: " T0I ") -> " T0I " {\n"
              "      mo.output %a : " T0I "\n"
              "    }\n"
              "  }\n"
              "  mo.output %r : " T0I "\n"
              "}\n",
              4, 23, "use of undefined value %n");
}

/* ---- mo.while: a trip count from data, a carried value that grows ---- */
static const char *grow_text =
    "mo.graph @main(%n: " T0I ", %x: !mo.tensor<[1], f32>) -> (" T0I ", !mo.tensor<[m], f32>) {\n"
    "  %i0 = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : " T0I "\n"
    "  %i, %nn, %y = mo.while(%i0, %n, %x) : (" T0I ", " T0I ", !mo.tensor<[1], f32>) -> (" T0I
    ", " T0I ", !mo.tensor<[m], f32>) {\n"
    "    mo.graph @cond(%i: " T0I ", %n: " T0I ", %x: !mo.tensor<[k], f32>) -> " T0B " {\n"
    "      %p = mo.greater(%n, %i) : (" T0I ", " T0I ") -> " T0B "\n"
    "      mo.output %p : " T0B "\n"
    "    }\n"
    "    mo.graph @body(%i: " T0I ", %n: " T0I ", %x: !mo.tensor<[k], f32>) -> (" T0I ", " T0I
    ", !mo.tensor<[k + 1], f32>) {\n"
    "      %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " T0I "\n"
    "      %j = mo.add(%i, %one) : " T0I "\n"
    "      %c = mo.call @grow(%x) : (!mo.tensor<[k], f32>) -> !mo.tensor<[k + 1], f32>\n"
    "      mo.output %j, %n, %c : " T0I ", " T0I ", !mo.tensor<[k + 1], f32>\n"
    "    }\n"
    "  }\n"
    "  mo.output %i, %y : " T0I ", !mo.tensor<[m], f32>\n"
    "}\n"
    "\n"
    "mo.graph @grow(%x: !mo.tensor<[k], f32>) -> !mo.tensor<[k + 1], f32> {\n"
    "  %s = mo.slice_tensor(%x) {start = [-1], stop = [9223372036854775807], step = [1]} : "
    "(!mo.tensor<[k], f32>) -> !mo.tensor<[1], f32>\n"
    "  %t = mo.add(%s, %s) : !mo.tensor<[1], f32>\n"
    "  %c = mo.concat(%x, %t) {axis = 0} : (!mo.tensor<[k], f32>, !mo.tensor<[1], f32>) -> "
    "!mo.tensor<[k + 1], f32>\n"
    "  mo.output %c : !mo.tensor<[k + 1], f32>\n"
    "}\n";

Test(control, while_runs_a_data_dependent_trip_count_and_grows_its_carried_value) {
  for (int64_t n = 0; n <= 5; n += 5) {
    float x0 = 1.5f;
    kiln_tensor *in[2] = {tensor(KILN_INT64, 0, NULL, &n),
                          tensor(KILN_FLOAT32, 1, (int64_t[]){1}, &x0)};
    kiln_tensor *out[2];
    run_both(NULL, grow_text, in, 2, out, 2);
    cr_expect_eq(i64_of(out[0]), n, "the loop ran %lld times", (long long)i64_of(out[0]));
    cr_assert_eq(kiln_tensor_shape(out[1])[0], n + 1);
    const float *y = kiln_tensor_data(out[1]);
    for (int64_t i = 0; i <= n; i++) /* each step appends twice the last: 1.5, 3, 6, ... */
      cr_expect_eq(y[i], 1.5f * (float)(1 << i), "y[%lld] = %g", (long long)i, y[i]);
    for (int i = 0; i < 2; i++) {
      kiln_tensor_free(out[i]);
      kiln_tensor_free(in[i]);
    }
  }
}

/* ---- nesting: a mo.if in a mo.while body (Collatz steps) ---- */
static const char *collatz_text =
    "mo.graph @main(%x: " T0I ") -> " T0I " {\n"
    "  %s0 = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : " T0I "\n"
    "  %x1, %s = mo.while(%x, %s0) : (" T0I ", " T0I ") -> (" T0I ", " T0I ") {\n"
    "    mo.graph @cond(%x: " T0I ", %s: " T0I ") -> " T0B " {\n"
    "      %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " T0I "\n"
    "      %p = mo.not_equal(%x, %one) : (" T0I ", " T0I ") -> " T0B "\n"
    "      mo.output %p : " T0B "\n"
    "    }\n"
    "    mo.graph @body(%x: " T0I ", %s: " T0I ") -> (" T0I ", " T0I ") {\n"
    "      %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " T0I "\n"
    "      %two = mo.constant {value = #M.dense_array<2> : tensor<1xsi64>} : " T0I "\n"
    "      %r = mo.mod(%x, %two) : " T0I "\n"
    "      %even = mo.not_equal(%r, %one) : (" T0I ", " T0I ") -> " T0B "\n"
    "      %y = mo.if(%even, %x) : (" T0B ", " T0I ") -> " T0I " {\n"
    "        mo.graph @then(%a: " T0I ") -> " T0I " {\n"
    "          %two = mo.constant {value = #M.dense_array<2> : tensor<1xsi64>} : " T0I "\n"
    "          %h = mo.floor_div(%a, %two) : " T0I "\n"
    "          mo.output %h : " T0I "\n"
    "        }\n"
    "        mo.graph @else(%a: " T0I ") -> " T0I " {\n"
    "          %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " T0I "\n"
    "          %three = mo.constant {value = #M.dense_array<3> : tensor<1xsi64>} : " T0I "\n"
    "          %t = mo.mul(%a, %three) : " T0I "\n"
    "          %u = mo.add(%t, %one) : " T0I "\n"
    "          mo.output %u : " T0I "\n"
    "        }\n"
    "      }\n"
    "      %s1 = mo.add(%s, %one) : " T0I "\n"
    "      mo.output %y, %s1 : " T0I ", " T0I "\n"
    "    }\n"
    "  }\n"
    "  mo.output %s : " T0I "\n"
    "}\n";

Test(control, an_if_nested_in_a_while_body_counts_collatz_steps) {
  int64_t cases[][2] = {{1, 0}, {6, 8}, {27, 111}}; /* x, steps to reach 1 */
  for (int c = 0; c < 3; c++) {
    kiln_tensor *in = tensor(KILN_INT64, 0, NULL, &cases[c][0]);
    kiln_tensor *out;
    run_both(NULL, collatz_text, &in, 1, &out, 1);
    cr_expect_eq(i64_of(out), cases[c][1], "collatz(%lld) = %lld", (long long)cases[c][0],
                 (long long)i64_of(out));
    kiln_tensor_free(out);
    kiln_tensor_free(in);
  }
}

/* ---- mo.call: one layer called three times with different weights ---- */
#define TX "!mo.tensor<[b, 8], f32>"
#define TW "!mo.tensor<[8, 8], f32>"
#define LAYER                                                                                \
  "mo.graph @layer(%x: !mo.tensor<[r, 8], f32>, %w: " TW ") -> !mo.tensor<[r, 8], f32> {\n"  \
  "  %h = mo.matmul(%x, %w) : (!mo.tensor<[r, 8], f32>, " TW ") -> !mo.tensor<[r, 8], f32>\n" \
  "  %a = mo.relu(%h) : !mo.tensor<[r, 8], f32>\n"                                          \
  "  %y = mo.add(%a, %x) : !mo.tensor<[r, 8], f32>\n"                                       \
  "  mo.output %y : !mo.tensor<[r, 8], f32>\n"                                              \
  "}\n"

static const char *call1_text =
    "mo.graph @main(%x: " TX ", %w0: " TW ") -> " TX " {\n"
    "  %y0 = mo.call @layer(%x, %w0) : (" TX ", " TW ") -> " TX "\n"
    "  mo.output %y0 : " TX "\n"
    "}\n\n" LAYER;

static const char *call3_text =
    "mo.graph @main(%x: " TX ", %w0: " TW ", %w1: " TW ", %w2: " TW ") -> " TX " {\n"
    "  %y0 = mo.call @layer(%x, %w0) : (" TX ", " TW ") -> " TX "\n"
    "  %y1 = mo.call @layer(%y0, %w1) : (" TX ", " TW ") -> " TX "\n"
    "  %y2 = mo.call @layer(%y1, %w2) : (" TX ", " TW ") -> " TX "\n"
    "  mo.output %y2 : " TX "\n"
    "}\n\n" LAYER;

static double kernels_made(const kiln_context *ctx) {
  return kiln_context_counter(ctx, KILN_COUNTER_COMPILES) +
         kiln_context_counter(ctx, KILN_COUNTER_DISK_HITS);
}

Test(control, a_subgraph_called_three_times_compiles_its_kernels_once) {
  float x[2 * 8], w[3][64];
  for (int i = 0; i < 16; i++) x[i] = (float)((i * 7) % 5) - 2.0f;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 64; i++) w[k][i] = (float)(((i + k) * 3) % 7) * 0.25f - 0.75f;
  kiln_tensor *in[4] = {tensor(KILN_FLOAT32, 2, (int64_t[]){2, 8}, x)};
  for (int k = 0; k < 3; k++) in[k + 1] = tensor(KILN_FLOAT32, 2, (int64_t[]){8, 8}, w[k]);
  kiln_status *st = kiln_status_new();
  kiln_context *one = kiln_context_new(st), *three = kiln_context_new(st);
  cr_assert(one && three);
  kiln_tensor *out;
  run_both(one, call1_text, in, 2, &out, 1);
  kiln_tensor_free(out);
  run_both(three, call3_text, in, 4, &out, 1);
  kiln_tensor_free(out);
  double k1 = kernels_made(one), k3 = kernels_made(three);
  cr_expect(k1 >= 1, "one call made %g kernels", k1);
  cr_expect_eq(k3, k1, "three calls made %g kernels, one call %g", k3, k1);
  double h1 = kiln_context_counter(one, KILN_COUNTER_KERNEL_HITS);
  double h3 = kiln_context_counter(three, KILN_COUNTER_KERNEL_HITS);
  cr_expect_eq(h3 - h1, 2 * k1, "the two later calls hit the memory cache: %g hits vs %g", h3,
               h1);
  for (int i = 0; i < 4; i++) kiln_tensor_free(in[i]);
  kiln_context_free(one);
  kiln_context_free(three);
  kiln_status_free(st);
}

/* ---- text ---- */
Test(control, print_parse_round_trips_regions_calls_and_subgraphs) {
  const char *texts[] = {if_text, grow_text, collatz_text, call3_text};
  for (int i = 0; i < 4; i++) {
    ir_graph *g = parse(texts[i]);
    char *a = ir_print(g);
    ir_graph *h = parse(a);
    char *b = ir_print(h);
    cr_expect_str_eq(a, b);
    ir_graph *c = ir_graph_clone(h); /* clones carry regions and subgraphs */
    char *cc = ir_print(c);
    cr_expect_str_eq(a, cc);
    free(a);
    free(b);
    free(cc);
    ir_graph_free(g);
    ir_graph_free(h);
    ir_graph_free(c);
  }
}

/* ---- bad graphs: line:col errors ---- */
#define HEAD1 "mo.graph @main(%p: " T0B ", %x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"

Test(control, if_branches_must_return_the_results_types) {
  parse_fails(HEAD1
              "  %y = mo.if(%p, %x) : (" T0B ", !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "    mo.graph @then(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "      mo.output %a : !mo.tensor<[4], f32>\n"
              "    }\n"
              "    mo.graph @else(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], si64> {\n"
              "      %b = mo.cast(%a) {dtype = si64} : (!mo.tensor<[4], f32>) -> "
              "!mo.tensor<[4], si64>\n"
              "      mo.output %b : !mo.tensor<[4], si64>\n"
              "    }\n"
              "  }\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              2, 3, "result 0 of mo.if is !mo.tensor<[4], f32> but region @else returns "
                    "!mo.tensor<[4], si64>");
}

Test(control, if_predicate_must_be_a_bool_scalar) {
  parse_fails("mo.graph @main(%p: !mo.tensor<[2], bool>, %x: !mo.tensor<[4], f32>) -> "
              "!mo.tensor<[4], f32> {\n"
              "  %y = mo.if(%p, %x) : (!mo.tensor<[2], bool>, !mo.tensor<[4], f32>) -> "
              "!mo.tensor<[4], f32> {\n"
              "    mo.graph @then(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "      mo.output %a : !mo.tensor<[4], f32>\n    }\n"
              "    mo.graph @else(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "      mo.output %a : !mo.tensor<[4], f32>\n    }\n"
              "  }\n  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              2, 3, "the predicate) must be a bool scalar");
}

Test(control, while_body_must_return_the_carried_types) {
  parse_fails("mo.graph @main(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.while(%x) : (!mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "    mo.graph @cond(%a: !mo.tensor<[4], f32>) -> " T0B " {\n"
              "      %c = mo.constant {value = #M.dense_array<false> : tensor<1xi1>} : " T0B "\n"
              "      mo.output %c : " T0B "\n    }\n"
              "    mo.graph @body(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[5], f32> {\n"
              "      %b = mo.concat(%a, %a) {axis = 0} : (!mo.tensor<[4], f32>, "
              "!mo.tensor<[4], f32>) -> !mo.tensor<[8], f32>\n"
              "      %s = mo.slice_tensor(%b) {start = [0], stop = [5], step = [1]} : "
              "(!mo.tensor<[8], f32>) -> !mo.tensor<[5], f32>\n"
              "      mo.output %s : !mo.tensor<[5], f32>\n    }\n"
              "  }\n  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              2, 3, "region @body of mo.while returns !mo.tensor<[5], f32> as value 0 but "
                    "carries !mo.tensor<[4], f32>");
}

Test(control, while_cond_must_take_the_carried_types) {
  parse_fails("mo.graph @main(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.while(%x) : (!mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "    mo.graph @cond(%a: !mo.tensor<[4], si64>) -> " T0B " {\n"
              "      %c = mo.constant {value = #M.dense_array<false> : tensor<1xi1>} : " T0B "\n"
              "      mo.output %c : " T0B "\n    }\n"
              "    mo.graph @body(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "      mo.output %a : !mo.tensor<[4], f32>\n    }\n"
              "  }\n  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              2, 3, "region @cond of mo.while takes !mo.tensor<[4], si64> as value 0");
}

Test(control, a_region_error_points_into_the_region) {
  parse_fails(HEAD1
              "  %y = mo.if(%p, %x) : (" T0B ", !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "    mo.graph @then(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "      %b = mo.add(%a, %q) : !mo.tensor<[4], f32>\n"
              "      mo.output %b : !mo.tensor<[4], f32>\n    }\n  }\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              4, 23, "use of undefined value %q");
}

#define CALLER(call)                                                                         \
  "mo.graph @main(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n" call             \
  "  mo.output %y : !mo.tensor<[4], f32>\n}\n\n"                                          \
  "mo.graph @twice(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"                 \
  "  %b = mo.add(%a, %a) : !mo.tensor<[4], f32>\n"                                        \
  "  mo.output %b : !mo.tensor<[4], f32>\n}\n"

Test(control, a_call_names_a_subgraph_of_the_module) {
  parse_fails(CALLER("  %y = mo.call @thrice(%x) : !mo.tensor<[4], f32>\n"), 2, 3,
              "mo.call: unknown subgraph @thrice");
}

Test(control, a_call_passes_the_subgraphs_arity_and_types) {
  parse_fails(CALLER("  %y = mo.call @twice(%x, %x) : (!mo.tensor<[4], f32>, "
                     "!mo.tensor<[4], f32>) -> !mo.tensor<[4], f32>\n"),
              2, 3, "mo.call @twice passes 2 operands but @twice takes 1");
  parse_fails("mo.graph @main(%x: !mo.tensor<[4], si64>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.call @twice(%x) : (!mo.tensor<[4], si64>) -> !mo.tensor<[4], f32>\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n\n"
              "mo.graph @twice(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  mo.output %a : !mo.tensor<[4], f32>\n}\n",
              2, 3, "operand 0 of mo.call @twice is !mo.tensor<[4], si64> but @twice takes");
}

Test(control, subgraphs_cannot_call_themselves) {
  parse_fails("mo.graph @main(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.call @a(%x) : !mo.tensor<[4], f32>\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n\n"
              "mo.graph @a(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.call @b(%x) : !mo.tensor<[4], f32>\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n\n"
              "mo.graph @b(%x: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  %y = mo.call @a(%x) : !mo.tensor<[4], f32>\n"
              "  mo.output %y : !mo.tensor<[4], f32>\n}\n",
              12, 3, "mo.call @a is recursive (@main -> @a -> @b -> @a)");
}

Test(control, module_graph_names_are_unique) {
  parse_fails(CALLER("  %y = mo.call @twice(%x) : !mo.tensor<[4], f32>\n")
              "\nmo.graph @twice(%a: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
              "  mo.output %a : !mo.tensor<[4], f32>\n}\n",
              11, 1, "the module already has a graph named @twice");
}

/* ---- run-time errors ---- */
Test(control, a_result_dim_the_region_breaks_is_an_error_not_a_wrong_answer) {
  const char *text =
      "mo.graph @main(%p: " T0B ", %x: !mo.tensor<[n], f32>) -> !mo.tensor<[3], f32> {\n"
      "  %y = mo.if(%p, %x) : (" T0B ", !mo.tensor<[n], f32>) -> !mo.tensor<[3], f32> {\n"
      "    mo.graph @then(%a: !mo.tensor<[k], f32>) -> !mo.tensor<[k], f32> {\n"
      "      mo.output %a : !mo.tensor<[k], f32>\n    }\n"
      "    mo.graph @else(%a: !mo.tensor<[k], f32>) -> !mo.tensor<[k], f32> {\n"
      "      mo.output %a : !mo.tensor<[k], f32>\n    }\n"
      "  }\n  mo.output %y : !mo.tensor<[3], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "t.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  bool p = true;
  float x[4] = {1, 2, 3, 4};
  kiln_tensor *in[2] = {tensor(KILN_BOOL, 0, NULL, &p),
                        tensor(KILN_FLOAT32, 1, (int64_t[]){4}, x)};
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, in, 2, &out, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st),
                   "mo.if at line 2 (%y): result 0 axis 0: expected 3, the region gave 4"),
            "%s", kiln_status_message(st));
  ir_graph *ig = parse(text);
  ir_tensor iin[2] = {as_ir(in[0]), as_ir(in[1])}, iout[1];
  char msg[512];
  cr_assert_eq(ir_interp_run(ig, iin, NULL, NULL, iout, msg, sizeof msg), -1);
  cr_expect(strstr(msg, "result 0 axis 0: expected 3, the region gave 4"), "%s", msg);
  ir_graph_free(ig);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- weights in a called subgraph, named through the call's prefix ---- */
static const char *wcall_text =
    "mo.graph @main(%x: " TX ") -> " TX " {\n"
    "  %y0 = mo.call @wlayer(%x) {prefix = \"l0.\"} : " TX "\n"
    "  %y1 = mo.call @wlayer(%y0) {prefix = \"l1.\"} : " TX "\n"
    "  %y2 = mo.call @wlayer(%y1) {prefix = \"l2.\"} : " TX "\n"
    "  mo.output %y2 : " TX "\n"
    "}\n\n"
    "mo.graph @wlayer(%x: !mo.tensor<[r, 8], f32>) -> !mo.tensor<[r, 8], f32> {\n"
    "  %w = mo.constant.external {is_placeholder = true, name = \"w\"} : " TW "\n"
    "  %h = mo.matmul(%x, %w) : (!mo.tensor<[r, 8], f32>, " TW ") -> !mo.tensor<[r, 8], f32>\n"
    "  %y = mo.add(%h, %x) : !mo.tensor<[r, 8], f32>\n"
    "  mo.output %y : !mo.tensor<[r, 8], f32>\n"
    "}\n";

static ir_tensor wts[3];
static const ir_tensor *weight_by_name(void *ud, const char *name) {
  (void)ud;
  for (int k = 0; k < 3; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, "l%d.w", k);
    if (strcmp(nm, name) == 0) return &wts[k];
  }
  return NULL;
}

Test(control, each_call_of_a_subgraph_reads_the_weights_its_prefix_names) {
  float x[16], w[3][64];
  for (int i = 0; i < 16; i++) x[i] = (float)(i % 4) - 1.5f;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 64; i++) w[k][i] = (float)((i * (k + 2)) % 5) * 0.5f - 1.0f;
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(wcall_text, strlen(wcall_text), "t.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  kiln_tensor *in = tensor(KILN_FLOAT32, 2, (int64_t[]){2, 8}, x), *wt[3], *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), -1, "unbound weights must fail");
  cr_expect(strstr(kiln_status_message(st), "weight 'l0.w' is not bound"), "%s",
            kiln_status_message(st));
  for (int k = 0; k < 3; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, "l%d.w", k);
    wt[k] = tensor(KILN_FLOAT32, 2, (int64_t[]){8, 8}, w[k]);
    wts[k] = as_ir(wt[k]);
    cr_assert_eq(kiln_model_bind_weight(m, nm, wt[k], st), 0, "%s", kiln_status_message(st));
  }
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  ir_graph *ig = parse(wcall_text);
  ir_tensor iin = as_ir(in), iout;
  char msg[512];
  cr_assert_eq(ir_interp_run(ig, &iin, weight_by_name, NULL, &iout, msg, sizeof msg), 0, "%s",
               msg);
  const float *a = kiln_tensor_data(out), *b = iout.data;
  for (int i = 0; i < 16; i++)
    cr_expect(a[i] == b[i] || (a[i] - b[i]) * (a[i] - b[i]) < 1e-8f * (1 + b[i] * b[i]),
              "y[%d] = %g, oracle %g", i, a[i], b[i]);
  free(iout.data);
  ir_graph_free(ig);
  for (int k = 0; k < 3; k++) kiln_tensor_free(wt[k]);
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- on a SIMT device: the host drives the regions, kernels run on simt-emu ---- */
static void run_on_emu(const char *text, kiln_tensor **in, int nin, int nout) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_device *dev = kiln_device_open("simt-emu", st);
  cr_assert(ctx && dev, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "t.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile_on(ctx, dev, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  kiln_tensor *out[4] = {NULL, NULL, NULL, NULL}, *cpu[4];
  cr_assert_eq(kiln_model_execute(m, in, nin, out, nout, st), 0, "%s", kiln_status_message(st));
  run_both(NULL, text, in, nin, cpu, nout); /* the CPU model and the oracle */
  for (int i = 0; i < nout; i++) {
    cr_assert_eq(kiln_tensor_nbytes(out[i]), kiln_tensor_nbytes(cpu[i]));
    cr_expect_eq(memcmp(kiln_tensor_data(out[i]), kiln_tensor_data(cpu[i]),
                        kiln_tensor_nbytes(cpu[i])), 0, "output %d differs on simt-emu", i);
    kiln_tensor_free(out[i]);
    kiln_tensor_free(cpu[i]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_device_close(dev);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(control, loops_and_conditionals_run_on_simt_emu) {
  int64_t x = 27;
  kiln_tensor *in = tensor(KILN_INT64, 0, NULL, &x);
  run_on_emu(collatz_text, &in, 1, 1);
  kiln_tensor_free(in);
  int64_t n = 4;
  float x0 = 1.5f;
  kiln_tensor *gin[2] = {tensor(KILN_INT64, 0, NULL, &n),
                         tensor(KILN_FLOAT32, 1, (int64_t[]){1}, &x0)};
  run_on_emu(grow_text, gin, 2, 2);
  kiln_tensor_free(gin[0]);
  kiln_tensor_free(gin[1]);
}

Test(control, a_model_with_control_flow_refuses_capture_with_a_reason) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(collatz_text, strlen(collatz_text), "t.mlir", st);
  kiln_model *m = g ? kiln_model_compile(ctx, g, st) : NULL;
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t x = 6;
  kiln_tensor *in = tensor(KILN_INT64, 0, NULL, &x), *out = NULL;
  cr_assert_eq(kiln_model_capture(m, 1, &in, 1, &out, 1, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_UNSUPPORTED);
  cr_expect(strstr(kiln_status_message(st), "capture is not supported"), "%s",
            kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  cr_expect_eq(i64_of(out), 8);
  kiln_tensor_free(out);
  kiln_tensor_free(in);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
