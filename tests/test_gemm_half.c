/* test_gemm_half.c - f16 / bf16 matmuls through the half GEMM (ir/half_gemm.c
 * rewrites matmul(cast(a), cast(b)) to read a and b as they are;
 * jit/matmul_half.c lowers it to kernels-templates/gemm_half.c), JIT vs the
 * reference interpreter: odd M, N, K (K odd for the bf16 pair layout),
 * M = 1, symbolic M, batches that broadcast, a 1-D operand, a transposed B,
 * B as a weight and as a constant (prepacked once, src/prepack.c), an f32
 * result with a fused epilogue, the generic kernels forced
 * (KILN_HALF_GEMM=generic, so they are checked through the JIT on any
 * host), and the
 * same graphs on simt-emu (which keeps the casts). The entries themselves,
 * generic and AVX-512 side by side, are test_gemm_half_template's.
 *
 * Tolerances: both sides sum the same exact products in f32 (the JIT in
 * blocks, the interpreter in order) and round once to the half dtype, so
 * they differ by at most about one unit in its last place: rtol two ulps
 * (f16 2^-9, bf16 2^-6). An f32 result differs by the f32 sums' rounding:
 * K * 2^-24 relative to sum |a b| (values in [-1, 1]: atol 1e-4). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/prepack.h"
#include "src/rt.h"
#include "jit/jit.h"
#include "support/oracle.h"

static const char *const HALF[] = {"f16", "bf16"};
static const double RTOL[] = {2e-3, 1.6e-2};

/* tmpl with every "DT" replaced by dt (malloc'd) */
static char *with_dtype(const char *tmpl, const char *dt) {
  size_t n = strlen(tmpl), cap = n * 2 + 1, at = 0;
  char *s = malloc(cap);
  cr_assert(s != NULL);
  for (size_t i = 0; i < n;) {
    if (tmpl[i] == 'D' && tmpl[i + 1] == 'T') {
      at += (size_t)snprintf(s + at, cap - at, "%s", dt);
      i += 2;
    } else {
      s[at++] = tmpl[i++];
    }
  }
  s[at] = 0;
  return s;
}

static void run_oracle(const char *label, const char *mlir, const char *bindings, double rtol,
                       double atol) {
  oracle_case c = {.label = label, .mlir = mlir, .bindings = bindings, .seed = 3,
                   .rtol = rtol, .atol = atol, .gen_default = gen_uniform(-1, 1),
                   .wgen = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
}

/* Many matmuls of one half dtype: odd sizes, symbolic n (1 included),
 * batches, broadcast, a 1-D a, a transposed b. */
static const char SHAPES_GRAPH[] =
    "mo.graph @hg<n>(%a: !mo.tensor<[n, 67], DT>, %b: !mo.tensor<[67, 33], DT>, "
    "%c: !mo.tensor<[n, 5], DT>, %d: !mo.tensor<[5, 130], DT>, %e: !mo.tensor<[n, 300], DT>, "
    "%f: !mo.tensor<[300, 70], DT>, %v: !mo.tensor<[67], DT>, %p: !mo.tensor<[2, n, 17], DT>, "
    "%q: !mo.tensor<[2, 17, 65], DT>, %s: !mo.tensor<[3, 17, 5], DT>, "
    "%r: !mo.tensor<[n, 17], DT>, %bt: !mo.tensor<[40, 67], DT>) -> "
    "(!mo.tensor<[n, 33], DT>, !mo.tensor<[n, 130], DT>, !mo.tensor<[n, 70], DT>, "
    "!mo.tensor<[33], DT>, !mo.tensor<[2, n, 65], DT>, !mo.tensor<[3, n, 5], DT>, "
    "!mo.tensor<[n, 40], DT>) {\n"
    "  %0 = mo.matmul(%a, %b) : (!mo.tensor<[n, 67], DT>, !mo.tensor<[67, 33], DT>) -> "
    "!mo.tensor<[n, 33], DT>\n"
    "  %1 = mo.matmul(%c, %d) : (!mo.tensor<[n, 5], DT>, !mo.tensor<[5, 130], DT>) -> "
    "!mo.tensor<[n, 130], DT>\n"
    "  %2 = mo.matmul(%e, %f) : (!mo.tensor<[n, 300], DT>, !mo.tensor<[300, 70], DT>) -> "
    "!mo.tensor<[n, 70], DT>\n"
    "  %3 = mo.matmul(%v, %b) : (!mo.tensor<[67], DT>, !mo.tensor<[67, 33], DT>) -> "
    "!mo.tensor<[33], DT>\n"
    "  %4 = mo.matmul(%p, %q) : (!mo.tensor<[2, n, 17], DT>, !mo.tensor<[2, 17, 65], DT>) -> "
    "!mo.tensor<[2, n, 65], DT>\n"
    "  %5 = mo.matmul(%r, %s) : (!mo.tensor<[n, 17], DT>, !mo.tensor<[3, 17, 5], DT>) -> "
    "!mo.tensor<[3, n, 5], DT>\n"
    "  %t = mo.transpose(%bt) {axis_1 = 0, axis_2 = 1} : (!mo.tensor<[40, 67], DT>) -> "
    "!mo.tensor<[67, 40], DT>\n"
    "  %6 = mo.matmul(%a, %t) : (!mo.tensor<[n, 67], DT>, !mo.tensor<[67, 40], DT>) -> "
    "!mo.tensor<[n, 40], DT>\n"
    "  mo.output %0, %1, %2, %3, %4, %5, %6 : !mo.tensor<[n, 33], DT>, "
    "!mo.tensor<[n, 130], DT>, !mo.tensor<[n, 70], DT>, !mo.tensor<[33], DT>, "
    "!mo.tensor<[2, n, 65], DT>, !mo.tensor<[3, n, 5], DT>, !mo.tensor<[n, 40], DT>\n}\n";

/* x [n, 301] times a weight w [301, 200] (stored [200, 301] and transposed
 * in TRANSPOSED_W) and a constant c [301, 3] (VALUES): K odd and past one
 * 256-row block of the bf16 packed layout, N four panels */
static const char WEIGHTS_GRAPH[] =
    "mo.graph @hw<n>(%x: !mo.tensor<[n, 301], DT>) -> (!mo.tensor<[n, 200], DT>, "
    "!mo.tensor<[n, 3], DT>) {\n"
    "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[301, 200], DT>\n"
    "  %c = mo.constant {value = #M.dense_array<VALUES> : tensor<301x3xDT>} : "
    "!mo.tensor<[301, 3], DT>\n"
    "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[n, 301], DT>, !mo.tensor<[301, 200], DT>) -> "
    "!mo.tensor<[n, 200], DT>\n"
    "  %1 = mo.matmul(%x, %c) : (!mo.tensor<[n, 301], DT>, !mo.tensor<[301, 3], DT>) -> "
    "!mo.tensor<[n, 3], DT>\n"
    "  mo.output %0, %1 : !mo.tensor<[n, 200], DT>, !mo.tensor<[n, 3], DT>\n}\n";
static const char TRANSPOSED_W[] =
    "  %ws = mo.constant.external {name = \"w\"} : !mo.tensor<[200, 301], DT>\n"
    "  %w = mo.transpose(%ws) {axis_1 = 0, axis_2 = 1} : (!mo.tensor<[200, 301], DT>) -> "
    "!mo.tensor<[301, 200], DT>\n";

/* s with its first `what` replaced by `by` (malloc'd; s freed) */
static char *replace(char *s, const char *what, const char *by) {
  char *at = strstr(s, what);
  cr_assert(at != NULL, "%s not in the graph", what);
  size_t pre = (size_t)(at - s), wl = strlen(what), bl = strlen(by), n = strlen(s);
  char *r = malloc(n - wl + bl + 1);
  cr_assert(r != NULL);
  memcpy(r, s, pre);
  memcpy(r + pre, by, bl);
  memcpy(r + pre + bl, at + wl, n - pre - wl + 1);
  free(s);
  return r;
}

static char *weights_text(const char *dt, bool trans) {
  char *s = with_dtype(WEIGHTS_GRAPH, dt);
  char vals[16384];
  size_t at = 0;
  for (int i = 0; i < 301 * 3; i++) /* multiples of 1/8: exact in both halves */
    at += (size_t)snprintf(vals + at, sizeof vals - at, "%s%g", i ? ", " : "", (i % 97) / 8.0 - 6);
  s = replace(s, "VALUES", vals);
  if (trans) {
    char *tw = with_dtype(TRANSPOSED_W, dt), *line = with_dtype(
        "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[301, 200], DT>\n", dt);
    s = replace(s, line, tw);
    free(tw);
    free(line);
  }
  return s;
}

Test(gemm_half, rewrite_reads_half_operands_and_drops_their_casts) {
  static const char tmpl[] =
      "mo.graph @g(%a: !mo.tensor<[3, 5], DT>, %b: !mo.tensor<[5, 4], DT>, "
      "%x: !mo.tensor<[3, 5], f32>) -> (!mo.tensor<[3, 4], DT>, !mo.tensor<[3, 4], DT>) {\n"
      "  %0 = mo.matmul(%a, %b) : (!mo.tensor<[3, 5], DT>, !mo.tensor<[5, 4], DT>) -> "
      "!mo.tensor<[3, 4], DT>\n"
      "  %xb = mo.cast(%x) {dtype = DT} : (!mo.tensor<[3, 5], f32>) -> !mo.tensor<[3, 5], DT>\n"
      "  %1 = mo.matmul(%xb, %b) : (!mo.tensor<[3, 5], DT>, !mo.tensor<[5, 4], DT>) -> "
      "!mo.tensor<[3, 4], DT>\n"
      "  mo.output %0, %1 : !mo.tensor<[3, 4], DT>, !mo.tensor<[3, 4], DT>\n}\n";
  for (int h = 0; h < 2; h++) {
    char *text = with_dtype(tmpl, HALF[h]);
    ir_diag d = {0};
    ir_graph *g = ir_parse(text, strlen(text), &d);
    cr_assert_not_null(g, "%d:%d %s\n%s", d.line, d.col, d.msg, text);
    cr_assert_eq(ir_graph_widen_narrow(g, &d), 2, "%s", d.msg);
    int casts = 0;
    for (int i = 0; i < g->nnodes; i++) casts += g->nodes[i]->op == IR_OP_CAST;
    cr_assert_eq(ir_graph_half_gemm(g, IR_HALF_GEMM_F16 | IR_HALF_GEMM_BF16, &d), 2, "%s", d.msg);
    cr_assert_eq(ir_graph_verify(g, &d), 0, "%d:%d %s", d.line, d.col, d.msg);
    int left = 0, mms = 0;
    for (int i = 0; i < g->nnodes; i++) {
      const ir_node *n = g->nodes[i];
      left += n->op == IR_OP_CAST;
      if (n->op != IR_OP_MATMUL) continue;
      mms++;
      cr_assert_eq(ir_node_attr_int(n, "kiln.wide_result", 0), 1);
      cr_assert_eq((int)n->in[0]->type.dtype, (int)(h ? IR_DT_BF16 : IR_DT_F16));
      cr_assert_eq((int)n->in[1]->type.dtype, (int)(h ? IR_DT_BF16 : IR_DT_F16));
      cr_assert_eq((int)n->out[0]->type.dtype, (int)IR_DT_F32);
    }
    cr_assert_eq(mms, 2);
    /* the operand casts go, the two result casts and the user's cast of x stay */
    cr_assert_eq(left, 3, "%d casts of %d left", left, casts);
    cr_assert_eq(ir_graph_half_gemm(g, IR_HALF_GEMM_F16 | IR_HALF_GEMM_BF16, &d), 0,
                 "a second run finds nothing");
    ir_graph_free(g);
    free(text);
  }
}

Test(gemm_half, a_matmul_with_an_f32_operand_keeps_its_casts) {
  const char *text =
      "mo.graph @g(%a: !mo.tensor<[3, 5], f32>, %b: !mo.tensor<[5, 4], bf16>) -> "
      "(!mo.tensor<[3, 4], f32>) {\n"
      "  %bw = mo.cast(%b) {dtype = f32} : (!mo.tensor<[5, 4], bf16>) -> !mo.tensor<[5, 4], f32>\n"
      "  %0 = mo.matmul(%a, %bw) : (!mo.tensor<[3, 5], f32>, !mo.tensor<[5, 4], f32>) -> "
      "!mo.tensor<[3, 4], f32>\n"
      "  mo.output %0 : !mo.tensor<[3, 4], f32>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_half_gemm(g, IR_HALF_GEMM_BF16, &d), 0,
               "rounding a to bf16 would change the result");
  ir_graph_free(g);
}

Test(gemm_half, only_the_dtypes_asked_for_are_rewritten) {
  const char *text =
      "mo.graph @g(%a: !mo.tensor<[3, 5], f16>, %b: !mo.tensor<[5, 4], f16>) -> "
      "(!mo.tensor<[3, 4], f16>) {\n"
      "  %0 = mo.matmul(%a, %b) : (!mo.tensor<[3, 5], f16>, !mo.tensor<[5, 4], f16>) -> "
      "!mo.tensor<[3, 4], f16>\n"
      "  mo.output %0 : !mo.tensor<[3, 4], f16>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_widen_narrow(g, &d), 1, "%s", d.msg);
  cr_assert_eq(ir_graph_half_gemm(g, IR_HALF_GEMM_BF16, &d), 0, "f16 was not asked for");
  cr_assert_eq(ir_graph_half_gemm(g, IR_HALF_GEMM_F16, &d), 1, "%s", d.msg);
  ir_graph_free(g);
}

Test(gemm_half, kiln_wide_result_is_refused_in_graph_text) {
  const char *text =
      "mo.graph @g(%a: !mo.tensor<[3, 5], bf16>, %b: !mo.tensor<[5, 4], bf16>) -> "
      "(!mo.tensor<[3, 4], f32>) {\n"
      "  %0 = mo.matmul(%a, %b) {kiln.wide_result = 1} : (!mo.tensor<[3, 5], bf16>, "
      "!mo.tensor<[5, 4], bf16>) -> !mo.tensor<[3, 4], f32>\n"
      "  mo.output %0 : !mo.tensor<[3, 4], f32>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_null(g);
  cr_assert(strstr(d.msg, "kiln.wide_result") != NULL, "%s", d.msg);
  cr_assert_eq(d.line, 2, "%d:%d %s", d.line, d.col, d.msg);
}

Test(gemm_half, odd_shapes_batches_and_transposes_match_the_interpreter) {
  for (int h = 0; h < 2; h++) {
    char *g = with_dtype(SHAPES_GRAPH, HALF[h]);
    run_oracle(HALF[h], g, "n=1;n=6;n=13", RTOL[h], 1e-3);
    free(g);
  }
}

Test(gemm_half, weights_and_constants_are_prepacked_once_and_match) {
  setenv("KILN_CACHE", "off", 1);
  for (int h = 0; h < 2; h++)
    for (int trans = 0; trans < 2; trans++) {
      char *g = weights_text(HALF[h], trans);
      run_oracle(HALF[h], g, "n=1;n=8;n=70", RTOL[h], 1e-3);
      /* both B operands read packed copies, the weight and the constant,
       * where the host runs the native half GEMM (elsewhere the casts stay:
       * no half B to pack) */
      kiln_status *st = kiln_status_new();
      kiln_context *ctx = kiln_context_new(st);
      cr_assert_not_null(ctx, "%s", kiln_status_message(st));
      kiln_graph *kg = kiln_graph_parse(g, strlen(g), "hw", st);
      cr_assert_not_null(kg, "%s", kiln_status_message(st));
      kiln_model *m = kiln_model_compile(ctx, kg, st);
      cr_assert_not_null(m, "%s", kiln_status_message(st));
      bool native = jit_engine_half_gemm(ctx->jit, h ? IR_DT_BF16 : IR_DT_F16);
      cr_assert_eq(rt_model_prepack_sources(m), native ? 2 : 0, "%s trans %d", HALF[h], trans);
      kiln_model_free(m);
      kiln_graph_free(kg);
      kiln_context_free(ctx);
      kiln_status_free(st);
      free(g);
    }
}

/* cast(a), cast(b) to f32 by the user and an f32 result: the GEMM sums in
 * f32 and its bias + relu epilogue runs in place (fused) */
Test(gemm_half, an_f32_result_keeps_f32_precision_with_its_epilogue) {
  static const char tmpl[] =
      "mo.graph @g<n>(%a: !mo.tensor<[n, 131], DT>, %b: !mo.tensor<[131, 77], DT>, "
      "%bias: !mo.tensor<[77], f32>) -> (!mo.tensor<[n, 77], f32>) {\n"
      "  %a32 = mo.cast(%a) {dtype = f32} : (!mo.tensor<[n, 131], DT>) -> "
      "!mo.tensor<[n, 131], f32>\n"
      "  %b32 = mo.cast(%b) {dtype = f32} : (!mo.tensor<[131, 77], DT>) -> "
      "!mo.tensor<[131, 77], f32>\n"
      "  %0 = mo.matmul(%a32, %b32) : (!mo.tensor<[n, 131], f32>, !mo.tensor<[131, 77], f32>) "
      "-> !mo.tensor<[n, 77], f32>\n"
      "  %1 = mo.add(%0, %bias) : (!mo.tensor<[n, 77], f32>, !mo.tensor<[77], f32>) -> "
      "!mo.tensor<[n, 77], f32>\n"
      "  %2 = mo.relu(%1) : !mo.tensor<[n, 77], f32>\n"
      "  mo.output %2 : !mo.tensor<[n, 77], f32>\n}\n";
  for (int h = 0; h < 2; h++) {
    char *g = with_dtype(tmpl, HALF[h]);
    run_oracle(HALF[h], g, "n=1;n=9;n=40", 1e-5, 1e-4);
    free(g);
  }
}

/* The generic entries through the JIT, forced on any host (an AVX2 CI
 * machine keeps the casts otherwise); their code keys differ */
/* Which entry a target gets: the generic loops without the features, bf16's
 * vdpbf16ps-for-every-M entries on AMD Zen 4 and later (twice the
 * converting kernel's GFLOP/s there), the M-choosing _avx512 ones on other
 * CPUs with AVX512-BF16 and for f16. */
Test(gemm_half, each_target_gets_its_fastest_entry) {
  const char *bf = "+avx512f,+avx512bw,+avx512bf16,+f16c,+fma";
  const char *no_bf = "+avx512f,+avx512bw,-avx512bf16,+f16c,+fma";
  cr_assert_str_eq(jit_hgemm_entry_suffix("znver4", bf, IR_DT_BF16), "_avx512dp");
  cr_assert_str_eq(jit_hgemm_entry_suffix("znver5", bf, IR_DT_BF16), "_avx512dp");
  cr_assert_str_eq(jit_hgemm_entry_suffix("znver4", bf, IR_DT_F16), "_avx512");
  cr_assert_str_eq(jit_hgemm_entry_suffix("sapphirerapids", bf, IR_DT_BF16), "_avx512");
  cr_assert_str_eq(jit_hgemm_entry_suffix("cooperlake", bf, IR_DT_BF16), "_avx512");
  cr_assert_str_eq(jit_hgemm_entry_suffix("skylake-avx512", no_bf, IR_DT_BF16), "");
  cr_assert_str_eq(jit_hgemm_entry_suffix("skylake-avx512", no_bf, IR_DT_F16), "_avx512");
  cr_assert_str_eq(jit_hgemm_entry_suffix("znver3", "+avx2,+fma,+f16c", IR_DT_BF16), "");
  cr_assert_str_eq(jit_hgemm_entry_suffix(NULL, NULL, IR_DT_BF16), "");
}

Test(gemm_half, forced_generic_kernels_match_the_interpreter) {
  setenv("KILN_HALF_GEMM", "generic", 1);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert(strstr(jit_engine_options(ctx->jit), "half-gemm=generic") != NULL, "%s",
            jit_engine_options(ctx->jit));
  kiln_context_free(ctx);
  kiln_status_free(st);
  for (int h = 0; h < 2; h++) {
    char *g = with_dtype(SHAPES_GRAPH, HALF[h]);
    run_oracle(HALF[h], g, "n=1;n=17", RTOL[h], 1e-3);
    free(g);
    g = weights_text(HALF[h], h == 1);
    run_oracle(HALF[h], g, "n=2;n=20", RTOL[h], 1e-3);
    free(g);
  }
  unsetenv("KILN_HALF_GEMM");
}

/* x [n, 515] times a weight [515, 260] (n = 1..16, a decode step): work
 * enough for two parts, so on 2 threads the half GEMM splits C by panels
 * (few rows) or rows. Each n on 1 and 2 threads of one context: the same
 * bits (how an element is summed does not depend on the parts). */
static const char THREADS_GRAPH[] =
    "mo.graph @ht<n>(%x: !mo.tensor<[n, 515], DT>) -> (!mo.tensor<[n, 260], DT>) {\n"
    "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[515, 260], DT>\n"
    "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[n, 515], DT>, !mo.tensor<[515, 260], DT>) -> "
    "!mo.tensor<[n, 260], DT>\n"
    "  mo.output %0 : !mo.tensor<[n, 260], DT>\n}\n";

static void fill_half(kiln_tensor *t, int64_t n, unsigned seed) {
  uint16_t *d = kiln_tensor_data(t);
  for (int64_t i = 0; i < n; i++) { /* multiples of 1/64 in [-1, 1): exact in both */
    seed = seed * 1103515245u + 12345u;
    double v = (double)((seed >> 16) % 128) / 64.0 - 1.0;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    d[i] = (uint16_t)(u >> 16); /* bf16: exact for these values */
  }
}

Test(gemm_half, two_threads_give_one_threads_bits_and_match_the_interpreter) {
  setenv("KILN_CACHE", "off", 1);
  setenv("KILN_NUM_THREADS", "2", 1);
  char *bf = with_dtype(THREADS_GRAPH, "bf16");
  run_oracle("bf16 on 2 threads", bf, "n=1;n=2;n=5;n=16;n=40", RTOL[1], 1e-3);
  char *f16 = with_dtype(THREADS_GRAPH, "f16");
  run_oracle("f16 on 2 threads", f16, "n=1;n=3;n=16", RTOL[0], 1e-3);
  free(f16);
  unsetenv("KILN_NUM_THREADS");
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *kg = kiln_graph_parse(bf, strlen(bf), "ht", st);
  cr_assert_not_null(kg, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, kg, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t wshape[2] = {515, 260};
  kiln_tensor *w = kiln_tensor_new(KILN_BFLOAT16, 2, wshape, st);
  cr_assert_not_null(w);
  fill_half(w, 515 * 260, 7);
  cr_assert_eq(kiln_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  for (int64_t n = 1; n <= 16; n += 5) {
    int64_t xshape[2] = {n, 515};
    kiln_tensor *x = kiln_tensor_new(KILN_BFLOAT16, 2, xshape, st);
    cr_assert_not_null(x);
    fill_half(x, n * 515, (unsigned)n);
    kiln_tensor *out[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
      cr_assert_eq(kiln_context_set_num_threads(ctx, t + 1, st), 0);
      cr_assert_eq(kiln_model_execute(m, &x, 1, &out[t], 1, st), 0, "%s",
                   kiln_status_message(st));
    }
    cr_assert(memcmp(kiln_tensor_data(out[0]), kiln_tensor_data(out[1]),
                     sizeof(uint16_t) * (size_t)(n * 260)) == 0,
              "n=%lld: 2 threads differ from 1", (long long)n);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
    kiln_tensor_free(x);
  }
  kiln_tensor_free(w);
  kiln_model_free(m);
  kiln_graph_free(kg);
  kiln_context_free(ctx);
  kiln_status_free(st);
  free(bf);
}

/* Device models keep the casts (the pass is the host's): same answers */
Test(gemm_half, simt_emu_still_matches) {
  setenv("KILN_TEST_DEVICE", "simt-emu", 1);
  for (int h = 0; h < 2; h++) {
    char *g = with_dtype(SHAPES_GRAPH, HALF[h]);
    run_oracle(HALF[h], g, "n=1;n=6", RTOL[h], 1e-3);
    free(g);
  }
  unsetenv("KILN_TEST_DEVICE");
}
