/* test_norm_rows.c - the f32 softmax / logsoftmax / layer_norm rows of
 * kernels-templates/rows.c (jit/norm.c): kernels of both tiers call the
 * engine's prebuilt routine, or link the template when the engine has none
 * (jit_engine_force_template_rows). For row lengths 1, 15, 17, 1000 and
 * 2100 (three sum blocks), with NaN, -inf, +inf and all--inf rows:
 * - every build (FULL / QUICK, prebuilt / template) and every split of the
 *   rows into parts (1, 2, 3, 7) gives the same bits, and so does the
 *   template compiled at x86-64-v3 (what an AVX2-only host loads);
 * - the result matches the reference interpreter within the tolerances of
 *   test_ops_norm.c (NaN exactly where it has NaN);
 * - the kernel calls the prebuilt entry (or not, forced) at both tiers.
 * And through the public API: a fused softmax (x * c + mask) run by quick
 * kernels (tier-up on, the rebuild held back) has the bits of full ones,
 * and both match a softmax computed here in double. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "jit/jit.h"
#include "kiln/kiln.h"
#include "src/variants.h"

#define ROWS 7

static const int LENGTHS[] = {1, 15, 17, 1000, 2100};
#define NLEN (int)(sizeof LENGTHS / sizeof LENGTHS[0])

typedef enum op_kind { SOFTMAX, LOGSOFTMAX, LAYER_NORM } op_kind;

static char *graph_text(op_kind op, int n) {
  char *s = malloc(2048);
  cr_assert_not_null(s);
  if (op == LAYER_NORM)
    snprintf(s, 2048,
             "mo.graph @ln(%%x: !mo.tensor<[%d, %d], f32>, %%g: !mo.tensor<[%d], f32>, "
             "%%b: !mo.tensor<[%d], f32>) -> (!mo.tensor<[%d, %d], f32>) {\n"
             "  %%y = mo.layer_norm(%%x, %%g, %%b) {epsilon = 1.0e-5} : (!mo.tensor<[%d, %d], "
             "f32>, !mo.tensor<[%d], f32>, !mo.tensor<[%d], f32>) -> !mo.tensor<[%d, %d], f32>\n"
             "  mo.output %%y : !mo.tensor<[%d, %d], f32>\n}\n",
             ROWS, n, n, n, ROWS, n, ROWS, n, n, n, ROWS, n, ROWS, n);
  else
    snprintf(s, 2048,
             "mo.graph @sm(%%x: !mo.tensor<[%d, %d], f32>) -> (!mo.tensor<[%d, %d], f32>) {\n"
             "  %%y = mo.%s(%%x) {axis = -1} : !mo.tensor<[%d, %d], f32>\n"
             "  mo.output %%y : !mo.tensor<[%d, %d], f32>\n}\n",
             ROWS, n, ROWS, n, op == SOFTMAX ? "softmax" : "logsoftmax", ROWS, n, ROWS, n);
  return s;
}

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

/* The index of g's one kernel node. */
static int op_node(const ir_graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i] && (g->nodes[i]->op == IR_OP_SOFTMAX || g->nodes[i]->op == IR_OP_LOGSOFTMAX ||
                        g->nodes[i]->op == IR_OP_LAYER_NORM))
      return i;
  cr_assert_fail("no norm node");
  return -1;
}

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

/* x: uniform [-3, 3] (layer_norm: around 50, so the mean matters), then
 * special rows: row 1 one NaN, row 2 some -inf, row 3 all -inf, row 4 one
 * +inf, rows 5 and 6 one large value (softmax only: layer_norm rows stay
 * finite but for row 1's NaN). */
static void fill(op_kind op, int n, float *x, float *g, float *b) {
  uint64_t s = 12345u + (uint64_t)n;
  for (int i = 0; i < ROWS * n; i++) {
    float u = (float)((double)rng_next(&s) / 9007199254740992.0 * 6.0 - 3.0);
    x[i] = op == LAYER_NORM ? 50.0f + u : u;
  }
  for (int j = 0; j < n; j++) {
    g[j] = (float)((double)rng_next(&s) / 9007199254740992.0 + 0.5);
    b[j] = (float)((double)rng_next(&s) / 9007199254740992.0 - 0.5);
  }
  x[1 * n + n / 2] = NAN;
  if (op == LAYER_NORM) return;
  for (int j = 0; j < n; j += 3) x[2 * n + j] = -INFINITY;
  for (int j = 0; j < n; j++) x[3 * n + j] = -INFINITY;
  x[4 * n + n - 1] = INFINITY;
  /* one large value (last, then inside, in rows 5, 6 and 0): a routine that misses it in the
   * max overflows exp(x - max) */
  x[5 * n + n - 1] = 200.0f;
  x[6 * n + (n * 5) / 7] = 150.0f;
  x[0 * n + (n * 3) / 7] = 120.0f;
}

/* Run kernel k over the buffers in nparts parts. */
static void run_parts(jit_kernel_fn k, void **bufs, int nparts) {
  for (int p = 0; p < nparts; p++) cr_assert_eq(k(bufs, NULL, p, nparts), 0, "part %d", p);
}

/* The interpreter's result for g on x (and gm, b for layer_norm), malloc'd. */
static float *oracle(const ir_graph *g, int n, float *x, float *gm, float *b) {
  ir_tensor in[3] = {{IR_DT_F32, 2, {ROWS, n}, x},
                     {IR_DT_F32, 1, {n}, gm},
                     {IR_DT_F32, 1, {n}, b}};
  ir_tensor out[1];
  char msg[512] = "";
  cr_assert_eq(ir_interp_run(g, in, NULL, NULL, out, msg, sizeof msg), 0, "%s", msg);
  return out[0].data;
}

/* Compile node i of g on e at tier t and load it: the code (caller frees). */
static jit_code *build(jit_engine *e, const ir_graph *g, int i, jit_tier t, const char *name,
                       jit_kernel_fn *fn) {
  int map[16], ns = 0;
  char *text = ir_kernel_text(g, g->nodes[i], map, &ns);
  cr_assert_not_null(text);
  ir_graph *kg = parse(text);
  free(text);
  char err[1024] = "";
  void *obj = NULL;
  size_t len = 0;
  cr_assert_eq(jit_compile_object_tier(e, kg, name, t, &obj, &len, err, sizeof err), 0, "%s",
               err);
  jit_code *c = jit_load_object(e, obj, len, name, fn, err, sizeof err);
  cr_assert_not_null(c, "%s", err);
  free(obj);
  ir_graph_free(kg);
  return c;
}

/* Whether y and want agree: NaN where want is NaN, the same infinity,
 * else within atol + rtol |want|. */
static void expect_close(const float *y, const float *want, int count, double rtol, double atol,
                         const char *label) {
  int bad = 0;
  for (int i = 0; i < count && bad < 5; i++) {
    double w = want[i], v = y[i];
    bool ok = isnan(w)   ? isnan(v)
              : isinf(w) ? v == w
                         : !isnan(v) && fabs(v - w) <= atol + rtol * fabs(w);
    if (!ok) {
      bad++;
      cr_expect(ok, "%s: element %d is %.9g, the interpreter %.9g", label, i, v, w);
    }
  }
}

#ifdef KILN_ROWS_V3_TEST
/* The row template compiled at x86-64-v3 into this test (CMakeLists.txt). */
void kiln_v3_test_kiln_softmax_f32_row(float *y, const float *x, int64_t n, int64_t log);
void kiln_v3_test_kiln_softmax_f32_rows(float *y, const float *x, int64_t n, int64_t rows,
                                        int64_t log);
void kiln_v3_test_kiln_layer_norm_f32_row(float *y, const float *x, const float *g,
                                          const float *b, int64_t d, double eps);

/* The v3 routines on each row give `want`'s bits (skipped on hosts without
 * AVX2 and FMA). */
static void expect_v3_bits(op_kind op, int n, const float *x, const float *gm, const float *b,
                           const float *want) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  size_t count = (size_t)ROWS * (size_t)n;
  float *y = malloc(count * sizeof *y);
  cr_assert_not_null(y);
  for (int r = 0; r < ROWS; r++) {
    const float *xr = x + (size_t)r * (size_t)n;
    float *yr = y + (size_t)r * (size_t)n;
    if (op == LAYER_NORM) kiln_v3_test_kiln_layer_norm_f32_row(yr, xr, gm, b, n, 1e-5);
    else kiln_v3_test_kiln_softmax_f32_row(yr, xr, n, op == LOGSOFTMAX);
  }
  cr_expect(memcmp(y, want, count * sizeof *y) == 0, "op %d n=%d: the v3 rows differ", op, n);
  free(y);
}
#endif

static void check_op(op_kind op) {
  static const char *NAMES[] = {"softmax", "logsoftmax", "layer_norm"};
  char err[1024] = "";
  jit_engine *eng[2];
  eng[0] = jit_engine_new(err, sizeof err);
  eng[1] = jit_engine_new(err, sizeof err);
  cr_assert(eng[0] && eng[1], "%s", err);
  cr_assert_eq(jit_engine_force_template_rows(eng[1]), 0);
  bool have_pre = strstr(jit_engine_options(eng[0]), "prebuilt-rows=") != NULL;
  cr_expect_eq(jit_engine_has_prebuilt_rows(eng[0]), have_pre);
  cr_expect(!jit_engine_has_prebuilt_rows(eng[1]), "forced to the template, still prebuilt");
  cr_expect(strstr(jit_engine_options(eng[1]), "rows=template") != NULL || !have_pre);
  for (int li = 0; li < NLEN; li++) {
    int n = LENGTHS[li];
    char *text = graph_text(op, n);
    ir_graph *g = parse(text);
    int node = op_node(g);
    cr_expect(jit_node_calls_rows(g->nodes[node]), "%s n=%d: not a rows kernel", NAMES[op], n);
    size_t count = (size_t)ROWS * (size_t)n;
    float *x = malloc(count * sizeof *x), *gm = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    float *first = malloc(count * sizeof *first), *y = malloc(count * sizeof *y);
    cr_assert(x && gm && b && first && y);
    fill(op, n, x, gm, b);
    float *want = oracle(g, n, x, gm, b);
    /* the kernel's IR calls the prebuilt entry, unless forced off */
    for (int ei = 0; ei < 2; ei++) {
      char *ir = jit_node_llvm_ir(eng[ei], g, node, err, sizeof err);
      cr_assert_not_null(ir, "%s", err);
      bool calls_pre = strstr(ir, "@kiln_pre_v") != NULL;
      cr_expect(calls_pre == (ei == 0 && have_pre), "%s n=%d engine %d: prebuilt call %d",
                NAMES[op], n, ei, calls_pre);
      free(ir);
    }
    static const int PARTS[] = {1, 2, 3, 7};
    bool have_first = false;
    for (int ei = 0; ei < 2; ei++)
      for (int t = 0; t < 2; t++) {
        char name[64];
        snprintf(name, sizeof name, "rows_%d_%d_%d_%d", op, n, ei, t);
        jit_kernel_fn k = NULL;
        jit_code *c = build(eng[ei], g, node, t ? JIT_TIER_QUICK : JIT_TIER_FULL, name, &k);
        for (int pi = 0; pi < 4; pi++) {
          memset(y, 0x7f, count * sizeof *y);
          void *bufs[4] = {x, op == LAYER_NORM ? (void *)gm : y, b, y};
          if (op != LAYER_NORM) bufs[2] = NULL;
          run_parts(k, bufs, PARTS[pi]);
          char label[128];
          snprintf(label, sizeof label, "%s n=%d %s %s parts=%d", NAMES[op], n,
                   ei ? "template" : "prebuilt", t ? "quick" : "full", PARTS[pi]);
          if (!have_first) {
            memcpy(first, y, count * sizeof *y);
            have_first = true;
            if (op == LAYER_NORM) expect_close(y, want, (int)count, 1e-5, 1e-5, label);
            else expect_close(y, want, (int)count, 1e-5, 1e-9, label);
          } else {
            cr_expect(memcmp(first, y, count * sizeof *y) == 0,
                      "%s: bits differ from prebuilt full parts=1", label);
          }
        }
        jit_code_free(eng[ei], c);
      }
#ifdef KILN_ROWS_V3_TEST
    expect_v3_bits(op, n, x, gm, b, first);
#endif
    free(want);
    free(x);
    free(gm);
    free(b);
    free(first);
    free(y);
    ir_graph_free(g);
    free(text);
  }
  jit_engine_free(eng[0]);
  jit_engine_free(eng[1]);
}

/* Which kernels call the rows: f32 along the last axis only. */
Test(norm_rows, which_nodes_call_the_rows) {
  static const struct {
    const char *text;
    bool rows;
  } CASES[] = {
      {"mo.graph @a(%x: !mo.tensor<[4, 5], f32>) -> (!mo.tensor<[4, 5], f32>) {\n"
       "  %y = mo.softmax(%x) {axis = 1} : !mo.tensor<[4, 5], f32>\n"
       "  mo.output %y : !mo.tensor<[4, 5], f32>\n}\n",
       true},
      {"mo.graph @a(%x: !mo.tensor<[4, 5], f32>) -> (!mo.tensor<[4, 5], f32>) {\n"
       "  %y = mo.logsoftmax(%x) {axis = 0} : !mo.tensor<[4, 5], f32>\n"
       "  mo.output %y : !mo.tensor<[4, 5], f32>\n}\n",
       false},
      {"mo.graph @a(%x: !mo.tensor<[4, 5], f64>) -> (!mo.tensor<[4, 5], f64>) {\n"
       "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[4, 5], f64>\n"
       "  mo.output %y : !mo.tensor<[4, 5], f64>\n}\n",
       false},
      {"mo.graph @a(%x: !mo.tensor<[4, 5], f64>, %g: !mo.tensor<[5], f64>, "
       "%b: !mo.tensor<[5], f64>) -> (!mo.tensor<[4, 5], f64>) {\n"
       "  %y = mo.layer_norm(%x, %g, %b) {epsilon = 1.0e-5} : (!mo.tensor<[4, 5], f64>, "
       "!mo.tensor<[5], f64>, !mo.tensor<[5], f64>) -> !mo.tensor<[4, 5], f64>\n"
       "  mo.output %y : !mo.tensor<[4, 5], f64>\n}\n",
       false},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    ir_graph *g = parse(CASES[i].text);
    cr_expect_eq(jit_node_calls_rows(g->nodes[op_node(g)]), CASES[i].rows, "case %zu", i);
    ir_graph_free(g);
  }
}

/* A softmax kernel over contiguous rows makes one call of the rows entry
 * for its part's rows, not one call of the single-row entry per row. */
Test(norm_rows, softmax_kernel_calls_the_rows_entry_once) {
  char err[1024] = "";
  jit_engine *e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(e, "%s", err);
  for (int op = SOFTMAX; op <= LOGSOFTMAX && jit_engine_has_prebuilt_rows(e); op++) {
    char *text = graph_text((op_kind)op, 128);
    ir_graph *g = parse(text);
    char *ir = jit_node_llvm_ir(e, g, op_node(g), err, sizeof err);
    cr_assert_not_null(ir, "%s", err);
    int rows_calls = 0, row_calls = 0;
    for (const char *c = ir; (c = strstr(c, "call void @kiln_pre_v")) != NULL; c++) {
      const char *paren = strchr(c, '(');
      cr_assert_not_null(paren);
      size_t len = (size_t)(paren - c);
      rows_calls += len >= 8 && strncmp(paren - 8, "f32_rows", 8) == 0;
      row_calls += len >= 7 && strncmp(paren - 7, "f32_row", 7) == 0;
    }
    cr_expect_eq(rows_calls, 1, "op %d: %d calls of the rows entry\n%s", op, rows_calls, ir);
    cr_expect_eq(row_calls, 0, "op %d: %d calls of the single-row entry", op, row_calls);
    free(ir);
    ir_graph_free(g);
    free(text);
  }
  jit_engine_free(e);
}

#ifdef KILN_ROWS_V3_TEST
/* kiln_softmax_f32_rows over k rows gives the bits of k calls of the
 * single-row entry, also in place (y == x, as a fused prologue leaves
 * them), and writes nothing for no rows or rows of no floats. */
Test(norm_rows, rows_entry_same_bits_as_row_by_row) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  static const int NS[] = {1, 15, 16, 17, 64, 100, 128, 384, 1025};
  for (size_t li = 0; li < sizeof NS / sizeof NS[0]; li++)
    for (int log = 0; log < 2; log++) {
      int n = NS[li];
      size_t count = (size_t)ROWS * (size_t)n;
      float *x = malloc(count * sizeof *x), *want = malloc(count * sizeof *x);
      float *y = malloc(count * sizeof *x), *gm = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
      cr_assert(x && want && y && gm && b);
      fill(SOFTMAX, n, x, gm, b);
      for (int r = 0; r < ROWS; r++)
        kiln_v3_test_kiln_softmax_f32_row(want + (size_t)r * n, x + (size_t)r * n, n, log);
      memset(y, 0x7f, count * sizeof *y);
      kiln_v3_test_kiln_softmax_f32_rows(y, x, n, ROWS, log);
      cr_expect(memcmp(y, want, count * sizeof *y) == 0, "n=%d log=%d: rows differ", n, log);
      memcpy(y, x, count * sizeof *y);
      kiln_v3_test_kiln_softmax_f32_rows(y, y, n, ROWS, log);
      cr_expect(memcmp(y, want, count * sizeof *y) == 0, "n=%d log=%d: in place differs", n, log);
      memcpy(y, x, count * sizeof *y);
      kiln_v3_test_kiln_softmax_f32_rows(y, x, n, 0, log);
      kiln_v3_test_kiln_softmax_f32_rows(y, x, 0, ROWS, log);
      kiln_v3_test_kiln_softmax_f32_rows(y, x, n, -1, log);
      cr_expect(memcmp(y, x, count * sizeof *y) == 0, "n=%d log=%d: an empty call wrote", n, log);
      free(x);
      free(want);
      free(y);
      free(gm);
      free(b);
    }
}
#endif

Test(norm_rows, softmax_every_build_and_split_same_bits) { check_op(SOFTMAX); }
Test(norm_rows, logsoftmax_every_build_and_split_same_bits) { check_op(LOGSOFTMAX); }
Test(norm_rows, layer_norm_every_build_and_split_same_bits) { check_op(LAYER_NORM); }

/* ---- a fused softmax through the public API, quick and full kernels ---- */

#define FH 3  /* heads */
#define FS 37 /* sequence */

static const char FUSED[] =
    "mo.graph @att(%x: !mo.tensor<[1, 3, 37, 37], f32>, %c: !mo.tensor<[1], f32>, "
    "%m: !mo.tensor<[1, 1, 1, 37], f32>) -> (!mo.tensor<[1, 3, 37, 37], f32>) {\n"
    "  %t = mo.mul(%x, %c) : (!mo.tensor<[1, 3, 37, 37], f32>, !mo.tensor<[1], f32>) -> "
    "!mo.tensor<[1, 3, 37, 37], f32>\n"
    "  %u = mo.add(%t, %m) : (!mo.tensor<[1, 3, 37, 37], f32>, !mo.tensor<[1, 1, 1, 37], f32>) "
    "-> !mo.tensor<[1, 3, 37, 37], f32>\n"
    "  %y = mo.softmax(%u) {axis = -1} : !mo.tensor<[1, 3, 37, 37], f32>\n"
    "  mo.output %y : !mo.tensor<[1, 3, 37, 37], f32>\n}\n";

/* FUSED run by a context with tier-up on (quick kernels kept: the rebuild
 * delayed an hour) or off; the output, malloc'd. */
static float *run_fused(bool quick, kiln_tensor **ins) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_tier_up(ctx, quick ? 1 : 0, st), 0, "%s",
               kiln_status_message(st));
  if (quick) rt_spec_set_test_delay(ctx, 3600000);
  kiln_graph *g = kiln_graph_parse(FUSED, strlen(FUSED), "att", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE) > 0, quick,
               "quick kernels live: %g", kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE));
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, ins, 3, &out, 1, st), 0, "%s", kiln_status_message(st));
  size_t count = (size_t)FH * FS * FS;
  float *y = malloc(count * sizeof *y);
  cr_assert_not_null(y);
  memcpy(y, kiln_tensor_data(out), count * sizeof *y);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return y;
}

Test(norm_rows, fused_prologue_quick_and_full_same_bits) {
  kiln_status *st = kiln_status_new();
  int64_t xs[4] = {1, FH, FS, FS}, cs[1] = {1}, ms[4] = {1, 1, 1, FS};
  kiln_tensor *ins[3] = {kiln_tensor_new(KILN_FLOAT32, 4, xs, st),
                         kiln_tensor_new(KILN_FLOAT32, 1, cs, st),
                         kiln_tensor_new(KILN_FLOAT32, 4, ms, st)};
  cr_assert(ins[0] && ins[1] && ins[2], "%s", kiln_status_message(st));
  float *x = kiln_tensor_data(ins[0]), *c = kiln_tensor_data(ins[1]), *m = kiln_tensor_data(ins[2]);
  uint64_t s = 99;
  for (int i = 0; i < FH * FS * FS; i++)
    x[i] = (float)((double)rng_next(&s) / 9007199254740992.0 * 40.0 - 20.0);
  c[0] = 0.125f;
  for (int j = 0; j < FS; j++) m[j] = j % 5 == 4 ? -INFINITY : 0.0f;
  float *yq = run_fused(true, ins), *yf = run_fused(false, ins);
  size_t count = (size_t)FH * FS * FS;
  cr_expect(memcmp(yq, yf, count * sizeof *yq) == 0, "quick and full kernels differ");
  for (int r = 0; r < FH * FS; r++) { /* softmax(x c + m) in double */
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < FS; j++) {
      double v = (double)(x[r * FS + j] * c[0]) + m[j];
      mx = v > mx ? v : mx;
    }
    for (int j = 0; j < FS; j++) sum += exp((double)(x[r * FS + j] * c[0]) + m[j] - mx);
    for (int j = 0; j < FS; j++) {
      double w = exp((double)(x[r * FS + j] * c[0]) + m[j] - mx) / sum;
      cr_expect(fabs(yq[r * FS + j] - w) <= 1e-9 + 1e-5 * w, "row %d col %d: %.9g vs %.9g", r,
                j, yq[r * FS + j], w);
    }
  }
  free(yq);
  free(yf);
  for (int i = 0; i < 3; i++) kiln_tensor_free(ins[i]);
  kiln_status_free(st);
}
