/* test_jit_engine.c - the host JIT (jit/engine.c, emit.c, lower.c,
 * elementwise.c): graphs parsed from MO text are compiled node by node the
 * way the runtime does it (the node's kernel text, ir_kernel_text, parsed
 * back, jit_compile_object, jit_load_object) and their kernels run directly
 * on buffers (ABI of jit.h), against hand-computed values.
 *
 * Each test gets a fresh engine; G holds the graph under test and C / K
 * each node's loaded code and kernel, freed by the fixture. The full
 * JIT-vs-interpreter matrix lives in tests/test_ops_*.c; this file checks
 * the engine and the elementwise lowering's mechanics: broadcasting,
 * symbolic dims, scalar semantics at the edges, data errors, one name per
 * loaded object, unloading, vector code, bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "jit/jit.h"

#define MAXN 8  /* nodes of a graph under test */
#define MAXS 8  /* symbols of a kernel */

static jit_engine *E;
static ir_graph *G;
static jit_code *C[MAXN];     /* node i's loaded object, NULL without a kernel */
static jit_kernel_fn K[MAXN]; /* node i's kernel */
static int MAP[MAXN][MAXS];   /* kernel symbol j of node i is graph symbol MAP[i][j] */
static int NS[MAXN];          /* symbols of node i's kernel */
static char err[2048];

static void setup(void) {
  err[0] = 0;
  E = jit_engine_new(err, sizeof err);
  cr_assert_not_null(E, "jit_engine_new: %s", err);
}

static void teardown(void) {
  for (int i = 0; i < MAXN; i++) {
    jit_code_free(E, C[i]);
    C[i] = NULL;
    K[i] = NULL;
    NS[i] = 0;
  }
  ir_graph_free(G);
  G = NULL;
  jit_engine_free(E);
  E = NULL;
}

TestSuite(jit_engine, .init = setup, .fini = teardown);

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "ir_parse: %d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

static bool has_kernel(const ir_node *n) {
  return n->op != IR_OP_CONSTANT && n->op != IR_OP_CONSTANT_EXTERNAL;
}

/* Compile kernel graph kg as `name` and load it into E: *fn and the code
 * (the caller frees it with jit_code_free). */
static jit_code *compile_load(const ir_graph *kg, const char *name, jit_kernel_fn *fn) {
  void *obj = NULL;
  size_t len = 0;
  cr_assert_eq(jit_compile_object(E, kg, name, &obj, &len, err, sizeof err), 0,
               "jit_compile_object %s: %s", name, err);
  cr_assert(obj && len > 0);
  jit_code *c = jit_load_object(E, obj, len, name, fn, err, sizeof err);
  free(obj);
  cr_assert_not_null(c, "jit_load_object %s: %s", name, err);
  cr_assert_not_null((void *)*fn);
  return c;
}

/* The kernel graph of node i of G (ir_kernel_text parsed back; the caller
 * frees it), with its symbol map into MAP[i] / NS[i]. */
static ir_graph *kernel_graph(int i) {
  cr_assert_leq(G->nsyms, MAXS);
  char *text = ir_kernel_text(G, G->nodes[i], MAP[i], &NS[i]);
  cr_assert_not_null(text, "no kernel text for node %d", i);
  ir_graph *kg = parse(text);
  free(text);
  return kg;
}

/* Parse into G and compile and load every kernel node into C / K. */
static void compile(const char *text) {
  G = parse(text);
  cr_assert_leq(G->nnodes, MAXN);
  for (int i = 0; i < G->nnodes; i++) {
    if (!has_kernel(G->nodes[i])) continue;
    ir_graph *kg = kernel_graph(i);
    char name[32];
    snprintf(name, sizeof name, "test_k%d", i);
    C[i] = compile_load(kg, name, &K[i]);
    ir_graph_free(kg);
  }
}

/* Run node's kernel on bufs with the graph's symbol values syms (mapped to
 * the kernel's own symbols). */
static int run(int node, void **bufs, const int64_t *syms) {
  cr_assert(node >= 0 && node < MAXN && K[node], "no kernel for node %d", node);
  int64_t ks[MAXS];
  for (int j = 0; j < NS[node]; j++) ks[j] = syms[MAP[node][j]];
  return K[node](bufs, NS[node] ? ks : NULL, 0, 1);
}

static void expect_f32(const float *got, const float *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    if (isnan(want[i])) {
      cr_expect(isnan(got[i]), "%s[%d]: got %g, want nan", what, i, got[i]);
      continue;
    }
    cr_expect(got[i] == want[i], "%s[%d]: got %.9g, want %.9g", what, i, got[i], want[i]);
  }
}

/* ---- unary ---- */

Test(jit_engine, relu_f32_clamps_negatives) {
  compile("mo.graph @g(%x: !mo.tensor<[6], f32>) -> (!mo.tensor<[6], f32>) {\n"
          "  %y = mo.relu(%x) : !mo.tensor<[6], f32>\n"
          "  mo.output %y : !mo.tensor<[6], f32>\n}\n");
  float x[6] = {-1.0f, -0.0f, 2.5f, -1e30f, NAN, -INFINITY}, y[6];
  void *b[2] = {x, y};
  cr_assert_eq(run(0, b, NULL), 0);
  float want[6] = {0, 0, 2.5f, 0, NAN, 0}; /* the interpreter's max(x, +0) */
  expect_f32(y, want, 6, "relu");
  cr_expect(!signbit(y[1]), "relu(-0) must be +0");
}

Test(jit_engine, relu_si32_clamps_negatives) {
  compile("mo.graph @g(%x: !mo.tensor<[4], si32>) -> (!mo.tensor<[4], si32>) {\n"
          "  %y = mo.relu(%x) : !mo.tensor<[4], si32>\n"
          "  mo.output %y : !mo.tensor<[4], si32>\n}\n");
  int32_t x[4] = {-5, 0, 7, INT32_MIN}, y[4];
  void *b[2] = {x, y};
  cr_assert_eq(run(0, b, NULL), 0);
  int32_t want[4] = {0, 0, 7, 0};
  for (int i = 0; i < 4; i++) cr_expect_eq(y[i], want[i], "relu[%d] = %d", i, y[i]);
}

Test(jit_engine, abs_and_negate_si32_wrap) {
  compile("mo.graph @g(%x: !mo.tensor<[3], si32>) -> (!mo.tensor<[3], si32>, "
          "!mo.tensor<[3], si32>) {\n"
          "  %a = mo.abs(%x) : !mo.tensor<[3], si32>\n"
          "  %n = mo.negate(%x) : !mo.tensor<[3], si32>\n"
          "  mo.output %a, %n : !mo.tensor<[3], si32>, !mo.tensor<[3], si32>\n}\n");
  int32_t x[3] = {-3, 4, INT32_MIN}, a[3], n[3];
  void *b0[2] = {x, a}, *b1[2] = {x, n};
  cr_assert_eq(run(0, b0, NULL), 0);
  cr_assert_eq(run(1, b1, NULL), 0);
  cr_expect(a[0] == 3 && a[1] == 4 && a[2] == INT32_MIN, "abs: %d %d %d", a[0], a[1], a[2]);
  cr_expect(n[0] == 3 && n[1] == -4 && n[2] == INT32_MIN, "negate: %d %d %d", n[0], n[1], n[2]);
}

Test(jit_engine, gelu_modes_match_formulas) {
  compile("mo.graph @g(%x: !mo.tensor<[5], f64>) -> (!mo.tensor<[5], f64>, "
          "!mo.tensor<[5], f64>, !mo.tensor<[5], f64>) {\n"
          "  %a = mo.gelu(%x) : !mo.tensor<[5], f64>\n"
          "  %b = mo.gelu(%x) {approximate = \"tanh\"} : !mo.tensor<[5], f64>\n"
          "  %c = mo.gelu(%x) {approximate = \"quick\"} : !mo.tensor<[5], f64>\n"
          "  mo.output %a, %b, %c : !mo.tensor<[5], f64>, !mo.tensor<[5], f64>, "
          "!mo.tensor<[5], f64>\n}\n");
  double x[5] = {-3.0, -0.5, 0.0, 0.7, 2.0}, y[3][5];
  for (int k = 0; k < 3; k++) {
    void *b[2] = {x, y[k]};
    cr_assert_eq(run(k, b, NULL), 0);
  }
  for (int i = 0; i < 5; i++) {
    double v = x[i];
    double none = 0.5 * v * (1 + erf(v * M_SQRT1_2));
    double th = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    double quick = v * (1 / (1 + exp(-1.702 * v)));
    cr_expect(fabs(y[0][i] - none) <= 1e-15, "gelu none(%g) = %.17g, want %.17g", v, y[0][i], none);
    cr_expect(fabs(y[1][i] - th) <= 1e-15, "gelu tanh(%g) = %.17g, want %.17g", v, y[1][i], th);
    cr_expect(fabs(y[2][i] - quick) <= 1e-15, "gelu quick(%g) = %.17g, want %.17g", v, y[2][i],
              quick);
  }
}

Test(jit_engine, unary_float_ops_match_libm) {
  compile("mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>, "
          "!mo.tensor<[4], f32>, !mo.tensor<[4], f32>, !mo.tensor<[4], f32>) {\n"
          "  %a = mo.exp(%x) : !mo.tensor<[4], f32>\n"
          "  %b = mo.log1p(%x) : !mo.tensor<[4], f32>\n"
          "  %c = mo.round(%x) : !mo.tensor<[4], f32>\n"
          "  %d = mo.sigmoid(%x) : !mo.tensor<[4], f32>\n"
          "  mo.output %a, %b, %c, %d : !mo.tensor<[4], f32>, !mo.tensor<[4], f32>, "
          "!mo.tensor<[4], f32>, !mo.tensor<[4], f32>\n}\n");
  float x[4] = {0.5f, 2.5f, -0.5f, 3.5f}, y[4][4];
  for (int k = 0; k < 4; k++) {
    void *b[2] = {x, y[k]};
    cr_assert_eq(run(k, b, NULL), 0);
  }
  for (int i = 0; i < 4; i++) {
    cr_expect(fabsf(y[0][i] - expf(x[i])) <= 1e-6f * expf(x[i]), "exp(%g) = %g", x[i], y[0][i]);
    cr_expect(y[1][i] == log1pf(x[i]), "log1p(%g) = %g", x[i], y[1][i]);
    cr_expect(fabsf(y[3][i] - 1 / (1 + expf(-x[i]))) <= 1e-6f, "sigmoid(%g) = %g", x[i], y[3][i]);
  }
  float round_want[4] = {0.0f, 2.0f, -0.0f, 4.0f}; /* half to even */
  expect_f32(y[2], round_want, 4, "round");
}

/* ---- binary and broadcasting ---- */

Test(jit_engine, add_broadcasts_row_vector) {
  compile("mo.graph @g(%x: !mo.tensor<[2, 3], f32>, %y: !mo.tensor<[3], f32>) -> "
          "(!mo.tensor<[2, 3], f32>) {\n"
          "  %z = mo.add(%x, %y) : !mo.tensor<[2, 3], f32>\n"
          "  mo.output %z : !mo.tensor<[2, 3], f32>\n}\n");
  float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {10, 20, 30}, z[6];
  void *b[3] = {x, y, z};
  cr_assert_eq(run(0, b, NULL), 0);
  float want[6] = {11, 22, 33, 14, 25, 36};
  expect_f32(z, want, 6, "add");
}

Test(jit_engine, add_broadcasts_column_and_row) {
  compile("mo.graph @g(%x: !mo.tensor<[2, 1], f32>, %y: !mo.tensor<[1, 3], f32>) -> "
          "(!mo.tensor<[2, 3], f32>) {\n"
          "  %z = mo.add(%x, %y) : !mo.tensor<[2, 3], f32>\n"
          "  mo.output %z : !mo.tensor<[2, 3], f32>\n}\n");
  float x[2] = {100, 200}, y[3] = {1, 2, 3}, z[6];
  void *b[3] = {x, y, z};
  cr_assert_eq(run(0, b, NULL), 0);
  float want[6] = {101, 102, 103, 201, 202, 203};
  expect_f32(z, want, 6, "add");
}

Test(jit_engine, symbolic_dims_are_read_at_run_time) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[n, 3], f32>, %y: !mo.tensor<[3], f32>) -> "
          "(!mo.tensor<[n, 3], f32>) {\n"
          "  %z = mo.mul(%x, %y) : !mo.tensor<[n, 3], f32>\n"
          "  mo.output %z : !mo.tensor<[n, 3], f32>\n}\n");
  float x[12], y[3] = {1, -1, 2}, z[13];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  for (int64_t n = 2; n <= 4; n += 2) {
    for (int i = 0; i < 13; i++) z[i] = -7;
    void *b[3] = {x, y, z};
    int64_t syms[1] = {n};
    cr_assert_eq(run(0, b, syms), 0);
    for (int i = 0; i < n * 3; i++)
      cr_expect(z[i] == x[i] * y[i % 3], "n=%lld z[%d] = %g", (long long)n, i, z[i]);
    cr_expect(z[n * 3] == -7, "n=%lld: wrote past the end", (long long)n);
  }
  int64_t zero[1] = {0};
  z[0] = -7;
  void *b[3] = {x, y, z};
  cr_assert_eq(run(0, b, zero), 0);
  cr_expect(z[0] == -7, "n=0 must not write");
}

Test(jit_engine, symbolic_broadcast_is_decided_at_run_time) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[2, 3], f32>, %y: !mo.tensor<[n, 3], f32>) -> "
          "(!mo.tensor<[2, 3], f32>) {\n"
          "  %z = mo.sub(%x, %y) : !mo.tensor<[2, 3], f32>\n"
          "  mo.output %z : !mo.tensor<[2, 3], f32>\n}\n");
  float x[6] = {10, 20, 30, 40, 50, 60}, z[6];
  float y2[6] = {1, 2, 3, 4, 5, 6}, y1[3] = {1, 2, 3};
  void *b2[3] = {x, y2, z};
  int64_t n2[1] = {2};
  cr_assert_eq(run(0, b2, n2), 0);
  float want2[6] = {9, 18, 27, 36, 45, 54};
  expect_f32(z, want2, 6, "n=2");
  void *b1[3] = {x, y1, z};
  int64_t n1[1] = {1};
  cr_assert_eq(run(0, b1, n1), 0);
  float want1[6] = {9, 18, 27, 39, 48, 57};
  expect_f32(z, want1, 6, "n=1");
}

Test(jit_engine, algebraic_dims_evaluate_with_floor_semantics) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[n floordiv 2, n mod 3 + 1], f32>) -> "
          "(!mo.tensor<[n floordiv 2, n mod 3 + 1], f32>) {\n"
          "  %y = mo.negate(%x) : !mo.tensor<[n floordiv 2, n mod 3 + 1], f32>\n"
          "  mo.output %y : !mo.tensor<[n floordiv 2, n mod 3 + 1], f32>\n}\n");
  /* n = 7: [3, 2] = 6 elements. */
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0};
  void *b[2] = {x, y};
  int64_t syms[1] = {7};
  cr_assert_eq(run(0, b, syms), 0);
  for (int i = 0; i < 6; i++) cr_expect(y[i] == -x[i], "y[%d] = %g", i, y[i]);
  cr_expect(y[6] == 0, "wrote element 6");
}

Test(jit_engine, rank0_scalars) {
  compile("mo.graph @g(%x: !mo.tensor<[], f64>, %y: !mo.tensor<[], f64>) -> "
          "(!mo.tensor<[], f64>) {\n"
          "  %z = mo.pow(%x, %y) : !mo.tensor<[], f64>\n"
          "  mo.output %z : !mo.tensor<[], f64>\n}\n");
  double x = 2.0, y = 10.0, z = 0;
  void *b[3] = {&x, &y, &z};
  cr_assert_eq(run(0, b, NULL), 0);
  cr_expect(z == 1024.0, "pow = %g", z);
}

Test(jit_engine, scalar_broadcast_over_matrix) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[n, 5], f32>, %y: !mo.tensor<[], f32>) -> "
          "(!mo.tensor<[n, 5], f32>) {\n"
          "  %z = mo.max(%x, %y) : !mo.tensor<[n, 5], f32>\n"
          "  mo.output %z : !mo.tensor<[n, 5], f32>\n}\n");
  float x[10], y = 4.5f, z[10];
  for (int i = 0; i < 10; i++) x[i] = (float)i;
  x[3] = NAN;
  void *b[3] = {x, &y, z};
  int64_t syms[1] = {2};
  cr_assert_eq(run(0, b, syms), 0);
  for (int i = 0; i < 10; i++) {
    if (i == 3)
      cr_expect(isnan(z[i]), "max(nan, 4.5) must be nan, got %g", z[i]);
    else
      cr_expect(z[i] == fmaxf(x[i], 4.5f), "z[%d] = %g", i, z[i]);
  }
}

Test(jit_engine, large_flat_add_covers_vector_tail) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[n], f32>, %y: !mo.tensor<[n], f32>) -> "
          "(!mo.tensor<[n], f32>) {\n"
          "  %z = mo.add(%x, %y) : !mo.tensor<[n], f32>\n"
          "  mo.output %z : !mo.tensor<[n], f32>\n}\n");
  enum { N = 1037 };
  static float x[N], y[N], z[N + 1];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.5f;
    y[i] = (float)(N - i);
  }
  z[N] = -1;
  void *b[3] = {x, y, z};
  int64_t syms[1] = {N};
  cr_assert_eq(run(0, b, syms), 0);
  for (int i = 0; i < N; i++) cr_expect(z[i] == x[i] + y[i], "z[%d] = %g", i, z[i]);
  cr_expect(z[N] == -1, "wrote past the end");
}

Test(jit_engine, rank3_broadcast_of_two_operands) {
  compile("mo.graph @g<a, c>(%x: !mo.tensor<[a, 1, c], si64>, %y: !mo.tensor<[3, 1], si64>) -> "
          "(!mo.tensor<[a, 3, c], si64>) {\n"
          "  %z = mo.sub(%x, %y) : !mo.tensor<[a, 3, c], si64>\n"
          "  mo.output %z : !mo.tensor<[a, 3, c], si64>\n}\n");
  int64_t x[8] = {1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000}, y[3] = {1, 2, 3}, z[24];
  void *b[3] = {x, y, z};
  int64_t syms[2] = {2, 4}; /* a = 2, c = 4 */
  cr_assert_eq(run(0, b, syms), 0);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        int64_t want = x[i * 4 + k] - y[j];
        cr_expect_eq(z[(i * 3 + j) * 4 + k], want, "z[%d,%d,%d] = %lld", i, j, k,
                     (long long)z[(i * 3 + j) * 4 + k]);
      }
}

/* ---- mod ---- */

Test(jit_engine, int_mod_is_floor_mod) {
  compile("mo.graph @g(%x: !mo.tensor<[6], si32>, %y: !mo.tensor<[6], si32>) -> "
          "(!mo.tensor<[6], si32>) {\n"
          "  %z = mo.mod(%x, %y) : !mo.tensor<[6], si32>\n"
          "  mo.output %z : !mo.tensor<[6], si32>\n}\n");
  int32_t x[6] = {7, -7, 7, -7, INT32_MIN, 6}, y[6] = {3, 3, -3, -3, -1, 3}, z[6];
  void *b[3] = {x, y, z};
  cr_assert_eq(run(0, b, NULL), 0);
  int32_t want[6] = {1, 2, -2, -1, 0, 0};
  for (int i = 0; i < 6; i++)
    cr_expect_eq(z[i], want[i], "%d mod %d = %d, want %d", x[i], y[i], z[i], want[i]);
}

Test(jit_engine, int_mod_by_zero_fails_the_kernel) {
  compile("mo.graph @g(%x: !mo.tensor<[3], si64>, %y: !mo.tensor<[3], si64>) -> "
          "(!mo.tensor<[3], si64>) {\n"
          "  %z = mo.mod(%x, %y) : !mo.tensor<[3], si64>\n"
          "  mo.output %z : !mo.tensor<[3], si64>\n}\n");
  int64_t x[3] = {5, 6, 7}, y[3] = {2, 0, 2}, z[3];
  void *b[3] = {x, y, z};
  int rc = run(0, b, NULL);
  cr_expect_eq(rc, JIT_KERR_DIVZERO, "rc = %d", rc);
  cr_expect_str_eq(jit_kernel_error(rc), "integer mod by zero");
}

Test(jit_engine, float_mod_takes_divisor_sign) {
  compile("mo.graph @g(%x: !mo.tensor<[5], f64>, %y: !mo.tensor<[5], f64>) -> "
          "(!mo.tensor<[5], f64>) {\n"
          "  %z = mo.mod(%x, %y) : !mo.tensor<[5], f64>\n"
          "  mo.output %z : !mo.tensor<[5], f64>\n}\n");
  double x[5] = {7.5, -7.5, 7.5, 1.0, -6.0}, y[5] = {2.0, 2.0, -2.0, 0.0, 3.0}, z[5];
  void *b[3] = {x, y, z};
  cr_assert_eq(run(0, b, NULL), 0);
  cr_expect(z[0] == 1.5 && z[1] == 0.5 && z[2] == -0.5, "mod: %g %g %g", z[0], z[1], z[2]);
  cr_expect(isnan(z[3]), "x mod 0.0 = %g, want nan", z[3]);
  cr_expect(z[4] == 0.0 && !signbit(z[4]), "-6 mod 3 = %g, want +0", z[4]);
}

/* ---- compare, where, cast ---- */

Test(jit_engine, compare_and_where_with_broadcast) {
  compile("mo.graph @g(%x: !mo.tensor<[2, 3], f32>, %y: !mo.tensor<[3], f32>) -> "
          "(!mo.tensor<[2, 3], f32>, !mo.tensor<[2, 3], bool>) {\n"
          "  %c = mo.greater(%x, %y) : !mo.tensor<[2, 3], bool>\n"
          "  %z = mo.where(%c, %x, %y) : !mo.tensor<[2, 3], f32>\n"
          "  mo.output %z, %c : !mo.tensor<[2, 3], f32>, !mo.tensor<[2, 3], bool>\n}\n");
  float x[6] = {1, 5, NAN, 4, 0, 9}, y[3] = {2, 2, 2}, z[6];
  uint8_t c[6];
  void *b0[3] = {x, y, c}, *b1[4] = {c, x, y, z};
  cr_assert_eq(run(0, b0, NULL), 0);
  cr_assert_eq(run(1, b1, NULL), 0);
  uint8_t cw[6] = {0, 1, 0, 1, 0, 1};
  for (int i = 0; i < 6; i++) cr_expect_eq(c[i], cw[i], "c[%d] = %d", i, c[i]);
  float want[6] = {2, 5, 2, 4, 2, 9};
  expect_f32(z, want, 6, "where");
}

Test(jit_engine, not_equal_is_true_for_nan) {
  compile("mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], bool>, "
          "!mo.tensor<[2], bool>) {\n"
          "  %a = mo.not_equal(%x, %x) : !mo.tensor<[2], bool>\n"
          "  %b = mo.equal(%x, %x) : !mo.tensor<[2], bool>\n"
          "  mo.output %a, %b : !mo.tensor<[2], bool>, !mo.tensor<[2], bool>\n}\n");
  float x[2] = {NAN, 1.0f};
  uint8_t a[2], e[2];
  void *b0[3] = {x, x, a}, *b1[3] = {x, x, e};
  cr_assert_eq(run(0, b0, NULL), 0);
  cr_assert_eq(run(1, b1, NULL), 0);
  cr_expect(a[0] == 1 && a[1] == 0, "not_equal: %d %d", a[0], a[1]);
  cr_expect(e[0] == 0 && e[1] == 1, "equal: %d %d", e[0], e[1]);
}

Test(jit_engine, cast_f32_to_si32_saturates) {
  compile("mo.graph @g(%x: !mo.tensor<[6], f32>) -> (!mo.tensor<[6], si32>) {\n"
          "  %y = mo.cast(%x) {dtype = si32} : (!mo.tensor<[6], f32>) -> !mo.tensor<[6], si32>\n"
          "  mo.output %y : !mo.tensor<[6], si32>\n}\n");
  float x[6] = {NAN, 1e10f, -1e10f, 3.7f, -3.7f, INFINITY};
  int32_t y[6];
  void *b[2] = {x, y};
  cr_assert_eq(run(0, b, NULL), 0);
  int32_t want[6] = {0, INT32_MAX, INT32_MIN, 3, -3, INT32_MAX};
  for (int i = 0; i < 6; i++) cr_expect_eq(y[i], want[i], "cast(%g) = %d", x[i], y[i]);
}

Test(jit_engine, cast_to_and_from_bool) {
  compile("mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], bool>, "
          "!mo.tensor<[4], si64>) {\n"
          "  %b = mo.cast(%x) {dtype = bool} : (!mo.tensor<[4], f32>) -> !mo.tensor<[4], bool>\n"
          "  %i = mo.cast(%b) {dtype = si64} : (!mo.tensor<[4], bool>) -> !mo.tensor<[4], si64>\n"
          "  mo.output %b, %i : !mo.tensor<[4], bool>, !mo.tensor<[4], si64>\n}\n");
  float x[4] = {0.0f, -0.0f, NAN, -2.5f};
  uint8_t bb[4];
  int64_t ii[4];
  void *b0[2] = {x, bb}, *b1[2] = {bb, ii};
  cr_assert_eq(run(0, b0, NULL), 0);
  cr_assert_eq(run(1, b1, NULL), 0);
  int want[4] = {0, 0, 1, 1};
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(bb[i], want[i], "bool(%g) = %d", x[i], bb[i]);
    cr_expect_eq(ii[i], want[i], "si64(bool) = %lld", (long long)ii[i]);
  }
}

Test(jit_engine, broadcast_to_copies_with_strides) {
  compile("mo.graph @g<n>(%x: !mo.tensor<[3, 1], si32>) -> (!mo.tensor<[n, 3, 2], si32>) {\n"
          "  %y = mo.broadcast_to(%x) : (!mo.tensor<[3, 1], si32>) -> !mo.tensor<[n, 3, 2], si32>\n"
          "  mo.output %y : !mo.tensor<[n, 3, 2], si32>\n}\n");
  int32_t x[3] = {7, 8, 9}, y[12];
  void *b[2] = {x, y};
  int64_t syms[1] = {2};
  cr_assert_eq(run(0, b, syms), 0);
  for (int i = 0; i < 12; i++) cr_expect_eq(y[i], x[(i / 2) % 3], "y[%d] = %d", i, y[i]);
}

Test(jit_engine, cast_to_bf16_rounds_once) {
  compile("mo.graph @g(%x: !mo.tensor<[3], f64>, %i: !mo.tensor<[2], si32>) -> "
          "(!mo.tensor<[3], bf16>, !mo.tensor<[2], bf16>) {\n"
          "  %a = mo.cast(%x) {dtype = bf16} : (!mo.tensor<[3], f64>) -> !mo.tensor<[3], bf16>\n"
          "  %b = mo.cast(%i) {dtype = bf16} : (!mo.tensor<[2], si32>) -> !mo.tensor<[2], bf16>\n"
          "  mo.output %a, %b : !mo.tensor<[3], bf16>, !mo.tensor<[2], bf16>\n}\n");
  /* 1 + 2^-8 + 2^-30 lies just above a bf16 tie: through f32 it would land
   * on the tie and round down. 1e-40 is a bf16 subnormal (not flushed). */
  double x[3] = {1.0 + 1.0 / 256 + 1.0 / (1 << 30), 1e-40, -INFINITY};
  int32_t iv[2] = {(1 << 24) + 65537, -3};
  uint16_t a[3], bb[2];
  void *b0[2] = {x, a}, *b1[2] = {iv, bb};
  cr_assert_eq(run(0, b0, NULL), 0);
  cr_assert_eq(run(1, b1, NULL), 0);
  cr_expect(a[0] == 0x3f81 && a[1] == 0x0001 && a[2] == 0xff80, "f64->bf16: %04x %04x %04x", a[0],
            a[1], a[2]);
  cr_expect(bb[0] == 0x4b81 && bb[1] == 0xc040, "si32->bf16: %04x %04x", bb[0], bb[1]);
}

/* ---- the engine ---- */

static const char *ADD_TEXT =
    "mo.graph @g(%x: !mo.tensor<[4], f32>, %y: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>) {\n"
    "  %z = mo.add(%x, %y) : !mo.tensor<[4], f32>\n"
    "  mo.output %z : !mo.tensor<[4], f32>\n}\n";

static void check_add(jit_kernel_fn k) {
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, z[4] = {0};
  void *b[3] = {x, y, z};
  cr_assert_not_null((void *)k);
  cr_assert_eq(k(b, NULL, 0, 1), 0);
  for (int i = 0; i < 4; i++) cr_expect(z[i] == x[i] + y[i], "z[%d] = %g", i, z[i]);
}

/* ADD_TEXT's kernel as an object named `name` (malloc'd, *len bytes). */
static void *add_object(const char *name, size_t *len) {
  G = parse(ADD_TEXT);
  ir_graph *kg = kernel_graph(0);
  void *obj = NULL;
  cr_assert_eq(jit_compile_object(E, kg, name, &obj, len, err, sizeof err), 0, "%s", err);
  ir_graph_free(kg);
  return obj;
}

Test(jit_engine, same_kernel_loads_twice_under_two_names) {
  G = parse(ADD_TEXT);
  ir_graph *kg = kernel_graph(0);
  jit_kernel_fn ka = NULL, kb = NULL;
  jit_code *a = compile_load(kg, "add_a", &ka);
  jit_code *b = compile_load(kg, "add_b", &kb);
  ir_graph_free(kg);
  cr_expect_neq((void *)ka, (void *)kb);
  check_add(ka);
  check_add(kb);
  jit_code_free(E, a); /* b's code is left alone */
  check_add(kb);
  jit_code_free(E, b);
}

Test(jit_engine, one_name_loads_once_until_unloaded) {
  size_t len = 0;
  void *obj = add_object("add_once", &len);
  jit_kernel_fn k1 = NULL, k2 = NULL;
  jit_code *first = jit_load_object(E, obj, len, "add_once", &k1, err, sizeof err);
  cr_assert_not_null(first, "%s", err);
  err[0] = 0;
  jit_code *dup = jit_load_object(E, obj, len, "add_once", &k2, err, sizeof err);
  cr_expect_null(dup, "a second definition of add_once was accepted");
  cr_expect_null((void *)k2);
  cr_expect(strstr(err, "add_once") != NULL || strstr(err, "Duplicate") != NULL, "err: %s", err);
  jit_code_free(E, dup);
  check_add(k1); /* the failed load left the first one working */
  jit_code_free(E, first);
  jit_code *again = jit_load_object(E, obj, len, "add_once", &k2, err, sizeof err);
  cr_assert_not_null(again, "after the unload: %s", err);
  check_add(k2);
  jit_code_free(E, again);
  free(obj);
}

Test(jit_engine, free_then_recompile) {
  G = parse(ADD_TEXT);
  ir_graph *kg = kernel_graph(0);
  for (int round = 0; round < 3; round++) {
    jit_kernel_fn k = NULL;
    jit_code *c = compile_load(kg, "add_round", &k);
    check_add(k);
    jit_code_free(E, c);
  }
  ir_graph_free(kg);
}

Test(jit_engine, constant_nodes_have_no_kernel) {
  compile("mo.graph @g(%a: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
          "  %c = mo.constant {value = #M.dense_array<3.0, -1.0> : tensor<2xf32>} : "
          "!mo.tensor<[2], f32>\n"
          "  %y = mo.add(%a, %c) : !mo.tensor<[2], f32>\n"
          "  mo.output %y : !mo.tensor<[2], f32>\n}\n");
  float a[2] = {1, 2}, c[2] = {3, -1}, y[2];
  void *b[3] = {a, c, y}; /* the constant is an operand of the add's kernel */
  cr_assert_eq(run(1, b, NULL), 0);
  cr_expect(y[0] == 4 && y[1] == 1, "y = %g %g", y[0], y[1]);
  char *ir = jit_node_llvm_ir(E, G, 0, err, sizeof err);
  cr_expect_null(ir);
  cr_expect(strstr(err, "no kernel") != NULL, "err: %s", err);
  free(ir);
  /* a graph of the constant alone has no kernel to compile */
  ir_graph *only = parse("mo.graph @g() -> (!mo.tensor<[2], f32>) {\n"
                         "  %c = mo.constant {value = #M.dense_array<3.0, -1.0> : "
                         "tensor<2xf32>} : !mo.tensor<[2], f32>\n"
                         "  mo.output %c : !mo.tensor<[2], f32>\n}\n");
  void *obj = NULL;
  size_t len = 0;
  cr_expect_eq(jit_compile_object(E, only, "const_only", &obj, &len, err, sizeof err), -1);
  cr_expect_null(obj);
  cr_expect(strstr(err, "kernel node") != NULL, "err: %s", err);
  ir_graph_free(only);
}

Test(jit_engine, large_static_add_is_vectorized) {
  G = parse("mo.graph @g(%x: !mo.tensor<[64, 1024], f32>, %y: !mo.tensor<[64, 1024], f32>) -> "
            "(!mo.tensor<[64, 1024], f32>) {\n"
            "  %z = mo.add(%x, %y) : !mo.tensor<[64, 1024], f32>\n"
            "  mo.output %z : !mo.tensor<[64, 1024], f32>\n}\n");
  char *ir = jit_node_llvm_ir(E, G, 0, err, sizeof err);
  cr_assert_not_null(ir, "%s", err);
  bool avx512 = strstr(jit_engine_target(E), "+avx512f") != NULL;
  const char *want = avx512 ? "fadd <16 x float>" : "fadd <8 x float>";
  cr_expect(strstr(ir, want) != NULL, "no '%s' in:\n%s", want, ir);
  free(ir);
}

Test(jit_engine, engine_reports_target) {
  const char *t = jit_engine_target(E);
  cr_expect(strncmp(t, "x86_64", 6) == 0 || strncmp(t, "aarch64", 7) == 0, "target: %s", t);
  cr_expect(strchr(t, ' ') != NULL);
}

Test(jit_engine, bad_input_is_an_error_not_a_crash) {
  void *obj = (void *)1;
  size_t len = 1;
  cr_expect_eq(jit_compile_object(E, NULL, "f", &obj, &len, err, sizeof err), -1);
  cr_expect(err[0] != 0);
  cr_expect_null(obj);
  cr_expect_eq(len, 0);
  cr_expect_eq(jit_compile_object(NULL, NULL, NULL, &obj, &len, err, sizeof err), -1);
  jit_kernel_fn k = NULL;
  cr_expect_null(jit_load_object(E, NULL, 0, "f", &k, err, sizeof err));
  cr_expect_null(jit_load_object(NULL, "x", 1, "f", &k, err, sizeof err));
  static const char junk[] = "not an object file";
  err[0] = 0;
  cr_expect_null(jit_load_object(E, junk, sizeof junk, "f", &k, err, sizeof err));
  cr_expect(err[0] != 0);
  cr_expect_null((void *)k);
  G = parse(ADD_TEXT);
  cr_expect_null(jit_node_llvm_ir(E, G, 5, err, sizeof err));
  cr_expect_null(jit_node_llvm_ir(E, G, -1, err, sizeof err));
  jit_code_free(E, NULL);
  jit_engine_free(NULL);
  cr_expect_str_eq(jit_kernel_error(99), "unknown kernel error");
}

Test(jit_engine, unverified_op_dtype_is_reported) {
  /* exp on si32 is rejected by the verifier; built unverified (a one-node
   * kernel graph), the JIT must report it rather than crash. */
  G = ir_graph_new("bad");
  cr_assert_not_null(G);
  const ir_dim *d4 = ir_dim_const(G->arena, 4);
  const ir_dim *dims[1] = {d4};
  ir_type t = {.dtype = IR_DT_SI32, .rank = 1, .dims = dims};
  ir_value *x = ir_graph_add_input(G, "x", &t);
  cr_assert_not_null(x);
  ir_node *n = ir_graph_add_node(G, IR_OP_EXP, &x, 1, NULL, 0, 1, &t, NULL, (ir_loc){0, 0}, NULL);
  cr_assert_not_null(n);
  ir_graph_set_outputs(G, n->out, 1, (ir_loc){0, 0});
  void *obj = NULL;
  size_t len = 0;
  cr_expect_eq(jit_compile_object(E, G, "bad_exp", &obj, &len, err, sizeof err), -1);
  cr_expect_null(obj);
  cr_expect(strstr(err, "mo.exp") != NULL && strstr(err, "si32") != NULL, "err: %s", err);
}
