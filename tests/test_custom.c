/* test_custom.c - custom ops (mo.custom, mo.inplace_custom) with kernel
 * libraries in C, LLVM IR and bitcode: results against C references
 * computed here, symbolic dims at two sizes, specialized vs generic, the
 * kernel inlined into kiln's kernel, editing the source changes the key,
 * parameters of every kind, every bad input (C that does not compile, a
 * missing symbol, a signature that does not fit, no clang, clang of another
 * version, a missing file, bad .ll / .bc), the interpreter's refusal, a
 * SIMT device model without a context, fusion leaving custom ops alone,
 * and the text round trip. Elementwise kernels (KILN_ELEMENTWISE_KERNEL):
 * fused with the ops around them into one kernel (counted on the model's
 * graph) at odd sizes, broadcasting, symbolic dims, specialized; alone;
 * f32 / f64 / si32 / bool; six operands; in a GEMM epilogue; against the
 * interpreter on builtin ops; inlined and vectorized; an edited source
 * changes the fused kernel's key; and every binding error. Files go to a
 * fresh temporary directory per test. */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "jit/jit.h"
#include "kiln/kiln.h"
#include "src/rt.h"

#define T(r) "!mo.tensor<[" r "], f32>"

#define RMS_GRAPH                                                                          \
  "mo.graph @g<rows>(%x: " T("rows, 16") ", %gamma: " T("16") ") -> (" T("rows, 16") ") {\n" \
  "  %n = mo.custom(%x, %gamma) {symbol = \"rms_norm\", epsilon = 1.0e-5} : (" T(          \
      "rows, 16") ", " T("16") ") -> " T("rows, 16") "\n"                                   \
  "  %y = mo.relu(%n) : " T("rows, 16") "\n"                                                \
  "  mo.output %y : " T("rows, 16") "\n"                                                    \
  "}\n"

#define SCALE_GRAPH                                                                        \
  "mo.graph @s<n>(%x: " T("n") ") -> (" T("n") ") {\n"                                     \
  "  %y = mo.custom(%x) {symbol = \"scale\"} : (" T("n") ") -> " T("n") "\n"               \
  "  mo.output %y : " T("n") "\n"                                                          \
  "}\n"

static const char *RMS_C =
    "#include <math.h>\n"
    "#include <kiln/kernel.h>\n"
    "KILN_KERNEL(rms_norm, 2, 1)\n"
    "int32_t rms_norm(const kiln_kernel_args *a) {\n"
    "  const kiln_kernel_tensor *x = &a->inputs[0], *g = &a->inputs[1];\n"
    "  int64_t n = x->dims[x->rank - 1], rows = kiln_kernel_numel(x) / n;\n"
    "  float eps = (float)kiln_param_float(a, \"epsilon\", 1e-6);\n"
    "  const float *xp = x->data, *gp = g->data; float *yp = a->outputs[0].data;\n"
    "  for (int64_t r = 0; r < rows; r++) {\n"
    "    float ss = 0;\n"
    "    for (int64_t i = 0; i < n; i++) ss += xp[r * n + i] * xp[r * n + i];\n"
    "    float s = 1.0f / sqrtf(ss / (float)n + eps);\n"
    "    for (int64_t i = 0; i < n; i++) yp[r * n + i] = xp[r * n + i] * s * gp[i];\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

/* ---- fixture: a temporary directory, a status, a context ---- */
static char dir[256];
static kiln_status *st;
static kiln_context *ctx;

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln-test-custom-XXXXXX");
  cr_assert(mkdtemp(dir));
  st = kiln_status_new();
  ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

static void teardown(void) {
  kiln_context_free(ctx);
  kiln_status_free(st);
  cr_expect_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

TestSuite(custom, .init = setup, .fini = teardown, .timeout = 300);

/* dir/name with text; its path in a static buffer (one at a time). */
static const char *write_file(const char *name, const char *text, size_t len) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(text, 1, len, f), len);
  fclose(f);
  return path;
}
static const char *write_text(const char *name, const char *text) {
  return write_file(name, text, strlen(text));
}

static kiln_model *compile_text(const char *text) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  return m;
}

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* ---- rms_norm against a reference ---- */

static void rms_reference(const float *x, const float *g, int64_t rows, float *y) {
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int i = 0; i < 16; i++) ss += (double)x[r * 16 + i] * x[r * 16 + i];
    double s = 1.0 / sqrt(ss / 16 + 1e-5);
    for (int i = 0; i < 16; i++) {
      double v = x[r * 16 + i] * s * g[i];
      y[r * 16 + i] = (float)(v > 0 ? v : 0);
    }
  }
}

/* Run m on rows x 16 random data and compare with the reference. */
static void check_rms(kiln_model *m, int64_t rows, uint64_t seed) {
  int64_t xs[2] = {rows, 16}, gs[1] = {16};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, xs, st);
  kiln_tensor *g = kiln_tensor_new(KILN_FLOAT32, 1, gs, st);
  float *xp = kiln_tensor_data(x), *gp = kiln_tensor_data(g);
  for (int64_t i = 0; i < rows * 16; i++) xp[i] = frand(&seed);
  for (int i = 0; i < 16; i++) gp[i] = 0.5f + frand(&seed);
  kiln_tensor *in[2] = {x, g}, *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, in, 2, out, 1, st), 0, "%s", kiln_status_message(st));
  float *ref = malloc((size_t)rows * 16 * sizeof *ref);
  rms_reference(xp, gp, rows, ref);
  const float *yp = kiln_tensor_data(out[0]);
  for (int64_t i = 0; i < rows * 16; i++)
    cr_assert_float_eq(yp[i], ref[i], 1e-5, "rows %lld, element %lld: %g vs %g", (long long)rows,
                       (long long)i, yp[i], ref[i]);
  free(ref);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
  kiln_tensor_free(g);
}

Test(custom, c_kernel_matches_reference_at_two_sizes) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st), 0, "%s",
               kiln_status_message(st));
  kiln_model *m = compile_text(RMS_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  check_rms(m, 3, 1);
  check_rms(m, 37, 2);
  kiln_model_free(m);
}

Test(custom, specialized_matches_generic) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st), 0);
  kiln_model *m = compile_text(RMS_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_SYNC, st), 0);
  check_rms(m, 5, 3);
  check_rms(m, 9, 4);
  cr_assert_eq(kiln_model_variants(m), 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_FAILED), 0);
  kiln_model_free(m);
}

/* The generic kernel and a bound one: the library's function is inlined
 * (no call left), and the bound text carries the constants and the hash. */
Test(custom, kernel_is_inlined_and_text_carries_library_hash) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st), 0);
  kiln_model *m = compile_text(RMS_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  const ir_graph *g = m->g;
  const ir_node *n = NULL;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->op == IR_OP_CUSTOM) n = g->nodes[i];
  cr_assert(n);
  int64_t rows = 7;
  char *text = ir_kernel_text_bound(g, n, &rows);
  cr_assert(text);
  cr_assert(strstr(text, "kiln.library = \"c-"), "%s", text);
  cr_assert(strstr(text, "[7, 16]"), "%s", text);
  ir_diag d = {0};
  ir_graph *kg = ir_parse_kernel_text(text, strlen(text), &d);
  cr_assert(kg, "%s", d.msg);
  char err[512] = "";
  char *ll = jit_node_llvm_ir(ctx->jit, kg, 0, err, sizeof err);
  cr_assert(ll, "%s", err);
  cr_assert_null(strstr(ll, "call i32 @rms_norm"), "the kernel was not inlined");
  free(ll);
  ir_graph_free(kg);
  free(text);
  kiln_model_free(m);
}

/* ---- editing the source ---- */

static const char *scale_source(int factor) {
  static char src[600];
  snprintf(src, sizeof src,
           "#include <kiln/kernel.h>\n"
           "KILN_KERNEL(scale, 1, 1)\n"
           "int32_t scale(const kiln_kernel_args *a) {\n"
           "  const float *x = a->inputs[0].data; float *y = a->outputs[0].data;\n"
           "  for (int64_t i = 0; i < a->inputs[0].dims[0]; i++) y[i] = x[i] * %d.0f;\n"
           "  return 0;\n"
           "}\n",
           factor);
  return src;
}

static float run_scale(kiln_model *m, float v) {
  int64_t s[1] = {4};
  float data[4] = {v, v, v, v};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s, data, st), *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  float r = ((float *)kiln_tensor_data(out[0]))[3];
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
  return r;
}

static char *scale_kernel_text(const kiln_model *m) {
  return ir_kernel_text(m->g, m->g->nodes[0], NULL, NULL);
}

Test(custom, editing_the_source_changes_the_key) {
  const char *path = write_text("scale.c", scale_source(2));
  char p[512];
  snprintf(p, sizeof p, "%s", path);
  cr_assert_eq(kiln_context_add_kernel_library(ctx, p, st), 0, "%s", kiln_status_message(st));
  kiln_model *m1 = compile_text(SCALE_GRAPH);
  cr_assert(m1, "%s", kiln_status_message(st));
  cr_assert_float_eq(run_scale(m1, 1.5f), 3.0f, 1e-6);
  write_text("scale.c", scale_source(3));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, p, st), 0, "%s", kiln_status_message(st));
  kiln_model *m2 = compile_text(SCALE_GRAPH);
  cr_assert(m2, "%s", kiln_status_message(st));
  cr_assert_float_eq(run_scale(m2, 1.5f), 4.5f, 1e-6, "stale code: the old kernel ran");
  cr_assert_float_eq(run_scale(m1, 1.5f), 3.0f, 1e-6, "the first model keeps its code");
  char *t1 = scale_kernel_text(m1), *t2 = scale_kernel_text(m2);
  cr_assert_str_neq(t1, t2);
  free(t1);
  free(t2);
  /* the same source again: the same hash (the in-memory C cache) */
  write_text("scale.c", scale_source(2));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, p, st), 0);
  kiln_model *m3 = compile_text(SCALE_GRAPH);
  char *a = scale_kernel_text(m1), *b = scale_kernel_text(m3);
  cr_assert_str_eq(a, b);
  free(a);
  free(b);
  kiln_model_free(m3);
  kiln_model_free(m2);
  kiln_model_free(m1);
}

Test(custom, compiled_c_is_cached_on_disk) {
  char cache[300];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, cache, 0, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st), 0);
  /* a fresh context on the same cache needs no compiler for the same source */
  kiln_context *c2 = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_cache_dir(c2, cache, 0, st), 0);
  setenv("KILN_CLANG", "/nonexistent/clang", 1);
  cr_assert_neq(kiln_context_add_kernel_library(c2, write_text("rms.c", RMS_C), st), 0,
                "the compiler is looked up before the cache (its identity is in the hash)");
  unsetenv("KILN_CLANG");
  cr_assert_eq(kiln_context_add_kernel_library(c2, write_text("rms.c", RMS_C), st), 0, "%s",
               kiln_status_message(st));
  kiln_context_free(c2);
  char libs[400];
  snprintf(libs, sizeof libs, "%s/libs", cache);
  struct stat sb;
  cr_assert_eq(stat(libs, &sb), 0, "no %s", libs);
}

Test(custom, graph_built_through_the_api) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("scale.c", scale_source(4)), st), 0);
  kiln_graph *g = kiln_graph_new("api", st);
  const char *dims[1] = {"n"};
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st);
  kiln_value *y = kiln_graph_add_op(g, "mo.custom", &x, 1, "{symbol = \"scale\"}",
                                    "!mo.tensor<[n], f32>", st);
  cr_assert(y, "%s", kiln_status_message(st));
  cr_assert_null(kiln_graph_add_op(g, "mo.custom", &x, 1, "{symbol = \"scale\"}", NULL, st));
  cr_assert(strstr(kiln_status_message(st), "needs result_type"), "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &y, 1, NULL, st), 0, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_float_eq(run_scale(m, 0.5f), 2.0f, 1e-6);
  kiln_model_free(m);
  kiln_graph_free(g);
}

/* ---- in place, parameters, .ll, .bc ---- */

Test(custom, inplace_updates_a_copy_of_operand_0) {
  const char *src = "#include <kiln/kernel.h>\n"
                    "KILN_KERNEL(add_one, 1, 1)\n"
                    "int32_t add_one(const kiln_kernel_args *a) {\n"
                    "  float *y = a->outputs[0].data;\n"
                    "  for (int64_t i = 0; i < kiln_kernel_numel(&a->outputs[0]); i++) y[i] += 1;\n"
                    "  return 0;\n"
                    "}\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("inc.c", src), st), 0, "%s",
               kiln_status_message(st));
  kiln_model *m = compile_text(
      "mo.graph @i<n>(%x: " T("n, 3") ") -> (" T("n, 3") ", " T("n, 3") ") {\n"
      "  %e = mo.exp(%x) : " T("n, 3") "\n"
      "  %y = mo.inplace_custom(%e) {symbol = \"add_one\"} : (" T("n, 3") ") -> " T("n, 3") "\n"
      "  mo.output %y, %e : " T("n, 3") ", " T("n, 3") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t s[2] = {2, 3};
  float data[6] = {0, 1, 2, -1, -2, 0.5f};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 2, s, data, st), *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 2, st), 0, "%s", kiln_status_message(st));
  const float *y = kiln_tensor_data(out[0]), *e = kiln_tensor_data(out[1]);
  for (int i = 0; i < 6; i++) {
    cr_assert_float_eq(e[i], expf(data[i]), 1e-5, "operand 0 must stay unchanged");
    cr_assert_float_eq(y[i], expf(data[i]) + 1, 1e-5);
  }
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_tensor_free(x);
  kiln_model_free(m);
}

Test(custom, parameters_of_every_kind_reach_the_kernel) {
  const char *src =
      "#include <kiln/kernel.h>\n"
      "KILN_KERNEL(params, 0, 1)\n"
      "int32_t params(const kiln_kernel_args *a) {\n"
      "  float *y = a->outputs[0].data;\n"
      "  const char *s = kiln_param_string(a, \"mode\", \"none\");\n"
      "  y[0] = (float)kiln_param_int(a, \"count\", -1);\n"
      "  y[1] = (float)kiln_param_float(a, \"alpha\", -1);\n"
      "  y[2] = (float)kiln_param_bool(a, \"flag\", 0);\n"
      "  y[3] = (float)(s[0] == 'f' && s[1] == 'a');\n"
      "  y[4] = (float)kiln_param_int(a, \"missing\", 42);\n"
      "  y[5] = (float)(a->nparams * 10 + a->ninputs);\n"
      "  return 0;\n"
      "}\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("p.c", src), st), 0, "%s",
               kiln_status_message(st));
  kiln_model *m = compile_text(
      "mo.graph @p() -> (" T("6") ") {\n"
      "  %y = mo.custom() {symbol = \"params\", count = 7, alpha = 2.5, flag = true, mode = "
      "\"fast\"} : () -> " T("6") "\n"
      "  mo.output %y : " T("6") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_tensor *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, NULL, 0, out, 1, st), 0, "%s", kiln_status_message(st));
  const float *y = kiln_tensor_data(out[0]);
  float want[6] = {7, 2.5f, 1, 1, 42, 40};
  for (int i = 0; i < 6; i++) cr_assert_float_eq(y[i], want[i], 0, "y[%d] = %g", i, y[i]);
  kiln_tensor_free(out[0]);
  kiln_model_free(m);
}

/* A kernel in hand-written LLVM IR: y = x + 1 over n elements. */
static const char *NEG_LL =
    "@kiln_abi_incr = constant [3 x i32] [i32 1, i32 1, i32 1]\n"
    "define i32 @incr(ptr %a) {\n"
    "entry:\n"
    "  %in = load ptr, ptr %a\n"
    "  %outp = getelementptr inbounds i8, ptr %a, i64 8\n"
    "  %out = load ptr, ptr %outp\n"
    "  %x = load ptr, ptr %in\n"
    "  %y = load ptr, ptr %out\n"
    "  %dimsp = getelementptr inbounds i8, ptr %in, i64 8\n"
    "  %dims = load ptr, ptr %dimsp\n"
    "  %n = load i64, ptr %dims\n"
    "  br label %loop\n"
    "loop:\n"
    "  %i = phi i64 [0, %entry], [%i1, %body]\n"
    "  %c = icmp slt i64 %i, %n\n"
    "  br i1 %c, label %body, label %done\n"
    "body:\n"
    "  %px = getelementptr inbounds float, ptr %x, i64 %i\n"
    "  %v = load float, ptr %px\n"
    "  %w = fadd float %v, 1.0\n"
    "  %py = getelementptr inbounds float, ptr %y, i64 %i\n"
    "  store float %w, ptr %py\n"
    "  %i1 = add i64 %i, 1\n"
    "  br label %loop\n"
    "done:\n"
    "  ret i32 0\n"
    "}\n";

#define INCR_GRAPH                                                                        \
  "mo.graph @s<n>(%x: " T("n") ") -> (" T("n") ") {\n"                                    \
  "  %y = mo.custom(%x) {symbol = \"incr\"} : (" T("n") ") -> " T("n") "\n"               \
  "  mo.output %y : " T("n") "\n"                                                         \
  "}\n"

static void check_incr(kiln_model *m) {
  int64_t s[1] = {5};
  float data[5] = {1, 2, 3, 4, 5};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s, data, st), *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  const float *y = kiln_tensor_data(out[0]);
  for (int i = 0; i < 5; i++) cr_assert_float_eq(y[i], data[i] + 1, 0);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
}

Test(custom, llvm_ir_library) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("incr.ll", NEG_LL), st), 0, "%s",
               kiln_status_message(st));
  kiln_model *m = compile_text(INCR_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  check_incr(m);
  kiln_model_free(m);
}

Test(custom, bitcode_library_from_memory) {
  jit_lib_info info;
  char err[512];
  cr_assert_eq(jit_lib_inspect(NEG_LL, strlen(NEG_LL), "incr.ll", false, &info, err, sizeof err), 0,
               "%s", err);
  cr_assert_eq(kiln_context_add_kernel_library_memory(ctx, "incr.bc", info.bitcode, info.len, st),
               0, "%s", kiln_status_message(st));
  jit_lib_info_free(&info);
  kiln_model *m = compile_text(INCR_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  check_incr(m);
  kiln_model_free(m);
}

Test(custom, kernel_error_is_reported) {
  const char *src = "#include <kiln/kernel.h>\n"
                    "KILN_KERNEL(scale, 1, 1)\n"
                    "int32_t scale(const kiln_kernel_args *a) { return a->ninputs == 1 ? 5 : 0; }\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("e.c", src), st), 0);
  kiln_model *m = compile_text(SCALE_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t s[1] = {2};
  float data[2] = {1, 2};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s, data, st), *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 1, st), -1);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_RUNTIME);
  cr_assert(strstr(kiln_status_message(st), "custom kernel"), "%s", kiln_status_message(st));
  kiln_tensor_free(x);
  kiln_model_free(m);
}

/* ---- bad input ---- */

static void expect_error(int rc, kiln_code code, const char *needle) {
  cr_assert_eq(rc, -1);
  cr_assert_eq(kiln_status_code(st), code, "code %d: %s", (int)kiln_status_code(st),
               kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), needle), "'%s' not in: %s", needle,
            kiln_status_message(st));
}

Test(custom, c_that_does_not_compile_gives_clangs_messages) {
  const char *path = write_text("broken.c", "#include <kiln/kernel.h>\n"
                                            "KILN_KERNEL(k, 1, 1)\n"
                                            "int32_t k(const kiln_kernel_args *a) {\n"
                                            "  return undeclared_thing;\n"
                                            "}\n");
  char where[600];
  snprintf(where, sizeof where, "%s:4:", path);
  expect_error(kiln_context_add_kernel_library(ctx, path, st), KILN_ERR_COMPILE, where);
  cr_assert(strstr(kiln_status_message(st), "undeclared_thing"));
  cr_assert_eq(kiln_context_num_kernel_libraries(ctx), 0);
}

Test(custom, missing_symbol) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st), 0);
  kiln_model *m = compile_text(SCALE_GRAPH);
  cr_assert_null(m);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
  cr_assert(strstr(kiln_status_message(st), "\"scale\" is not defined"), "%s",
            kiln_status_message(st));
}

Test(custom, no_library_at_all) {
  cr_assert_null(compile_text(SCALE_GRAPH));
  cr_assert(strstr(kiln_status_message(st), "no kernel library"), "%s", kiln_status_message(st));
}

Test(custom, signature_that_does_not_fit) {
  const char *src = "#include <kiln/kernel.h>\n"
                    "const int32_t kiln_abi_scale[3] = {1, 1, 1};\n"
                    "int32_t scale(float *x, long n) { x[0] = (float)n; return 0; }\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("sig.c", src), st), 0, "%s",
               kiln_status_message(st));
  cr_assert_null(compile_text(SCALE_GRAPH));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_VERIFY);
  cr_assert(strstr(kiln_status_message(st), "does not fit int32_t (const kiln_kernel_args *)"),
            "%s", kiln_status_message(st));
}

Test(custom, kernel_without_marker_is_refused) {
  const char *src = "#include <kiln/kernel.h>\n"
                    "int32_t scale(const kiln_kernel_args *a) { return 0; }\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("nomark.c", src), st), 0);
  cr_assert_null(compile_text(SCALE_GRAPH));
  cr_assert(strstr(kiln_status_message(st), "KILN_KERNEL(scale"), "%s", kiln_status_message(st));
}

Test(custom, operand_count_that_does_not_fit) {
  const char *src = "#include <kiln/kernel.h>\n"
                    "KILN_KERNEL(scale, 2, 1)\n"
                    "int32_t scale(const kiln_kernel_args *a) { return 0; }\n";
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("cnt.c", src), st), 0);
  cr_assert_null(compile_text(SCALE_GRAPH));
  cr_assert(strstr(kiln_status_message(st), "takes 2 operands, the op gives 1"), "%s",
            kiln_status_message(st));
}

Test(custom, symbol_in_two_libraries_is_ambiguous) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("a.c", scale_source(2)), st), 0);
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("b.c", scale_source(3)), st), 0);
  cr_assert_null(compile_text(SCALE_GRAPH));
  cr_assert(strstr(kiln_status_message(st), "defined by two kernel libraries"), "%s",
            kiln_status_message(st));
}

Test(custom, no_clang_names_kiln_clang) {
  setenv("KILN_CLANG", "/nonexistent/clang-19", 1);
  expect_error(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st),
               KILN_ERR_NOT_FOUND, "KILN_CLANG");
  setenv("KILN_CLANG", "", 1);
  setenv("PATH", "/nonexistent", 1);
  expect_error(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st),
               KILN_ERR_NOT_FOUND, "set KILN_CLANG");
}

Test(custom, clang_of_another_version_is_refused) {
  const char *path = write_text("fake-clang", "#!/bin/sh\necho 'clang version 14.0.6'\nexit 0\n");
  chmod(path, 0755);
  setenv("KILN_CLANG", path, 1);
  expect_error(kiln_context_add_kernel_library(ctx, write_text("rms.c", RMS_C), st),
               KILN_ERR_UNSUPPORTED, "is not clang 19");
}

Test(custom, missing_file_and_unknown_kind) {
  char p[400];
  snprintf(p, sizeof p, "%s/none.c", dir);
  expect_error(kiln_context_add_kernel_library(ctx, p, st), KILN_ERR_NOT_FOUND, "none.c");
  expect_error(kiln_context_add_kernel_library(ctx, write_text("k.txt", "x"), st),
               KILN_ERR_INVALID_ARGUMENT, "must end in .c, .ll or .bc");
}

Test(custom, bad_ll_and_bc) {
  expect_error(kiln_context_add_kernel_library(ctx, write_text("bad.ll", "define i32 @f( {\n"), st),
               KILN_ERR_PARSE, "bad.ll");
  cr_assert(strstr(kiln_status_message(st), "not valid LLVM IR"), "%s", kiln_status_message(st));
  const char junk[] = {'B', 'C', (char)0xC0, (char)0xDE, 1, 2, 3, 4, 5, 6, 7, 8};
  expect_error(kiln_context_add_kernel_library(ctx, write_file("bad.bc", junk, sizeof junk), st),
               KILN_ERR_PARSE, "not valid LLVM bitcode");
  expect_error(kiln_context_add_kernel_library(ctx, write_text("empty.bc", ""), st),
               KILN_ERR_PARSE, "empty");
  cr_assert_eq(kiln_context_num_kernel_libraries(ctx), 0);
}

/* SIMT custom kernels are tested in test_custom_simt.c; without a context
 * a device model has no kernel libraries and says how to give them. */
Test(custom, simt_device_needs_the_context) {
  kiln_device *d = kiln_device_open("simt-emu", st);
  cr_assert(d, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(SCALE_GRAPH, strlen(SCALE_GRAPH), NULL, st);
  cr_assert(g);
  kiln_device_model *m = kiln_device_model_compile(d, g, st);
  cr_assert_null(m);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
  cr_assert(strstr(kiln_status_message(st), "mo.custom (kernel \"scale\") on simt-emu needs the "
                                            "context's kernel libraries"), "%s",
            kiln_status_message(st));
  kiln_graph_free(g);
  kiln_device_close(d);
}

/* ---- the IR ---- */

Test(custom, interpreter_says_it_needs_the_library) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(SCALE_GRAPH, strlen(SCALE_GRAPH), &d);
  cr_assert(g, "%s", d.msg);
  float data[2] = {1, 2}, o[2];
  ir_tensor in = {IR_DT_F32, 1, {2}, data}, out;
  char msg[400] = "";
  cr_assert_neq(ir_interp_run(g, &in, NULL, NULL, &out, msg, sizeof msg), 0);
  (void)o;
  cr_assert(strstr(msg, "needs its kernel library"), "%s", msg);
  ir_graph_free(g);
}

Test(custom, text_round_trip) {
  const char *text =
      "mo.graph @r<n>(%x: " T("n, 4") ", %b: " T("4") ") -> (" T("n, 4") ", " T("n") ", " T(
          "n, 4") ") {\n"
      "  %a, %c = mo.custom(%x, %b) {alpha = 0.5, flag = false, k = 3, mode = \"x\", symbol = "
      "\"two\"} : (" T("n, 4") ", " T("4") ") -> (" T("n, 4") ", " T("n") ")\n"
      "  %d = mo.inplace_custom(%a) {symbol = \"upd\"} : (" T("n, 4") ") -> " T("n, 4") "\n"
      "  mo.output %a, %c, %d : " T("n, 4") ", " T("n") ", " T("n, 4") "\n"
      "}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert(g, "%d:%d: %s", d.line, d.col, d.msg);
  char *p1 = ir_print(g);
  ir_graph *g2 = ir_parse(p1, strlen(p1), &d);
  cr_assert(g2, "%s\n%s", d.msg, p1);
  char *p2 = ir_print(g2);
  cr_assert_str_eq(p1, p2);
  cr_assert(strstr(p1, "mo.custom(%x, %b) {alpha = 0.5"), "%s", p1);
  cr_assert(strstr(p1, "mo.inplace_custom(%a) {symbol = \"upd\"}"), "%s", p1);
  /* fusion leaves custom ops alone */
  cr_assert_eq(ir_graph_fuse(g2, IR_FUSE_SOFTMAX, &d), 0);
  int custom = 0;
  for (int i = 0; i < g2->nnodes; i++) custom += ir_op_get(g2->nodes[i]->op)->cls == IR_CLS_CUSTOM;
  cr_assert_eq(custom, 2);
  free(p1);
  free(p2);
  ir_graph_free(g);
  ir_graph_free(g2);
}

Test(custom, fusion_does_not_absorb_custom_ops) {
  const char *text = "mo.graph @f(%x: " T("8") ") -> (" T("8") ") {\n"
                     "  %a = mo.exp(%x) : " T("8") "\n"
                     "  %b = mo.custom(%a) {symbol = \"k\"} : (" T("8") ") -> " T("8") "\n"
                     "  %c = mo.relu(%b) : " T("8") "\n"
                     "  %e = mo.negate(%c) : " T("8") "\n"
                     "  mo.output %e : " T("8") "\n"
                     "}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert(g, "%s", d.msg);
  cr_assert_eq(ir_graph_fuse(g, IR_FUSE_SOFTMAX, &d), 1);
  bool found = false;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i]->op == IR_OP_CUSTOM) found = true;
    if (g->nodes[i]->body)
      for (int k = 0; k < g->nodes[i]->body->nnodes; k++)
        cr_assert_neq(g->nodes[i]->body->nodes[k]->op, IR_OP_CUSTOM);
  }
  cr_assert(found);
  ir_graph_free(g);
}

static void expect_verify_error(const char *text, const char *needle) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_null(g, "parsed: %s", text);
  cr_assert(strstr(d.msg, needle), "'%s' not in: %s", needle, d.msg);
}

Test(custom, verifier_rules) {
  expect_verify_error("mo.graph @v(%x: " T("4") ") -> (" T("4") ") {\n"
                      "  %y = mo.custom(%x) {k = 1} : (" T("4") ") -> " T("4") "\n"
                      "  mo.output %y : " T("4") "\n}\n",
                      "needs symbol = ");
  expect_verify_error("mo.graph @v(%x: " T("4") ") -> (" T("4") ") {\n"
                      "  %y = mo.custom(%x) {symbol = \"k\", w = [1, 2]} : (" T("4") ") -> " T(
                          "4") "\n"
                      "  mo.output %y : " T("4") "\n}\n",
                      "parameter 'w' of mo.custom must be");
  expect_verify_error("mo.graph @v<n, m>(%x: " T("n") ") -> (" T("m") ") {\n"
                      "  %y = mo.custom(%x) {symbol = \"k\"} : (" T("n") ") -> " T("m") "\n"
                      "  mo.output %y : " T("m") "\n}\n",
                      "uses symbol 'm', which no operand's type has");
  expect_verify_error("mo.graph @v(%x: " T("4") ") -> (" T("5") ") {\n"
                      "  %y = mo.inplace_custom(%x) {symbol = \"k\"} : (" T("4") ") -> " T(
                          "5") "\n"
                      "  mo.output %y : " T("5") "\n}\n",
                      "but it is operand 0");
}

/* ---- elementwise kernels (KILN_ELEMENTWISE_KERNEL) ----
 * References are computed here in C with the same float / double
 * operations the kernels do (the JIT calls the same libm expf). The
 * tolerance allows what may differ: clang may contract a * b + c into an
 * fma in the library (-ffp-contract=on) where the reference rounds twice,
 * and a GEMM sums in another order than the reference (a few ulps times
 * the K terms). */

static const char *EW_C =
    "#include <math.h>\n"
    "#include <kiln/kernel.h>\n"
    "KILN_ELEMENTWISE_KERNEL(swish_beta, 2)\n"
    "float swish_beta(float x, float beta) { return x / (1.0f + expf(-beta * x)); }\n"
    "KILN_ELEMENTWISE_KERNEL(softplus, 1)\n"
    "float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }\n"
    "KILN_ELEMENTWISE_KERNEL(fma3, 3)\n"
    "double fma3(double a, double b, double c) { return a * b + c; }\n"
    "KILN_ELEMENTWISE_KERNEL(clampi, 3)\n"
    "int32_t clampi(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : x > hi ? hi : x; }\n"
    "KILN_ELEMENTWISE_KERNEL(is_big, 1)\n"
    "bool is_big(float x) { return x > 0.25f; }\n"
    "KILN_ELEMENTWISE_KERNEL(pick, 2)\n"
    "float pick(bool c, float x) { return c ? x * 2.0f : -1.0f; }\n"
    "KILN_ELEMENTWISE_KERNEL(sum6, 6)\n"
    "float sum6(float a, float b, float c, float d, float e, float f) {\n"
    "  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;\n"
    "}\n"
    "KILN_ELEMENTWISE_KERNEL(wrong_type, 1)\n"
    "float wrong_type(double x) { return (float)x; }\n"
    "float unmarked_ew(float x) { return x; }\n";

static void add_ew_lib(void) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("ew.c", EW_C), st), 0, "%s",
               kiln_status_message(st));
}

/* The model's kernel nodes: how many, how many are mo.fused, and whether a
 * fused body holds a custom node (and then whether its kernel text names
 * the library). */
static void count_kernels(const kiln_model *m, int *nkernels, int *nfused, int *custom_in_body) {
  *nkernels = *nfused = *custom_in_body = 0;
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    if (n->op == IR_OP_CONSTANT || n->op == IR_OP_CONSTANT_EXTERNAL) continue;
    (*nkernels)++;
    if (n->op != IR_OP_FUSED) continue;
    (*nfused)++;
    for (int k = 0; k < n->body->nnodes; k++)
      if (n->body->nodes[k]->op == IR_OP_CUSTOM) {
        (*custom_in_body)++;
        char *text = ir_kernel_text(m->g, n, NULL, NULL);
        cr_assert(text && strstr(text, "kiln.library = \"c-") && strstr(text, "kiln.elementwise"),
                  "the fused kernel's text must carry the library hash: %s", text);
        free(text);
      }
  }
}

static kiln_tensor *rand_f32(int rank, const int64_t *shape, uint64_t *seed) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, st);
  cr_assert(t, "%s", kiln_status_message(st));
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) p[i] = 2 * frand(seed);
  return t;
}

static bool close_f(double got, double want, double tol) {
  return fabs(got - want) <= tol * (1 + fabs(want));
}

#define SWISH_CHAIN                                                                          \
  "mo.graph @sw<rows>(%x: " T("rows, 33") ", %a: " T("rows, 33") ", %beta: " T("33")         \
  ", %b: " T("1, 33") ") -> (" T("rows, 33") ") {\n"                                         \
  "  %m = mo.mul(%x, %a) : " T("rows, 33") "\n"                                              \
  "  %s = mo.custom(%m, %beta) {symbol = \"swish_beta\"} : (" T("rows, 33") ", " T(          \
      "33") ") -> " T("rows, 33") "\n"                                                        \
  "  %y = mo.add(%s, %b) : (" T("rows, 33") ", " T("1, 33") ") -> " T("rows, 33") "\n"       \
  "  mo.output %y : " T("rows, 33") "\n"                                                     \
  "}\n"

static float swish_ref(float x, float beta) { return x / (1.0f + expf(-beta * x)); }

/* mul -> swish_beta -> add on rows x 33 against the reference. */
static void check_swish_chain(kiln_model *m, int64_t rows, uint64_t seed) {
  int64_t s2[2] = {rows, 33}, s1[1] = {33}, sb[2] = {1, 33};
  kiln_tensor *x = rand_f32(2, s2, &seed), *a = rand_f32(2, s2, &seed);
  kiln_tensor *beta = rand_f32(1, s1, &seed), *b = rand_f32(2, sb, &seed);
  kiln_tensor *in[4] = {x, a, beta, b}, *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, in, 4, out, 1, st), 0, "%s", kiln_status_message(st));
  const float *xp = kiln_tensor_data(x), *ap = kiln_tensor_data(a);
  const float *bp = kiln_tensor_data(beta), *cp = kiln_tensor_data(b);
  const float *yp = kiln_tensor_data(out[0]);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < 33; j++) {
      int64_t i = r * 33 + j;
      float want = swish_ref(xp[i] * ap[i], bp[j]) + cp[j];
      cr_assert(close_f(yp[i], want, 1e-6), "rows %lld [%lld, %lld]: %.9g vs %.9g",
                (long long)rows, (long long)r, (long long)j, yp[i], want);
    }
  kiln_tensor_free(out[0]);
  for (int k = 0; k < 4; k++) kiln_tensor_free(in[k]);
}

Test(custom, elementwise_kernel_fuses_into_one_kernel) {
  add_ew_lib();
  kiln_model *m = compile_text(SWISH_CHAIN);
  cr_assert(m, "%s", kiln_status_message(st));
  int nk, nf, nc;
  count_kernels(m, &nk, &nf, &nc);
  cr_assert_eq(nk, 1, "mul -> custom -> add must be one kernel, got %d", nk);
  cr_assert_eq(nf, 1);
  cr_assert_eq(nc, 1);
  /* odd sizes; 4001 x 33 elements split between the pool's threads */
  check_swish_chain(m, 1, 1);
  check_swish_chain(m, 7, 2);
  check_swish_chain(m, 4001, 3);
  check_swish_chain(m, 0, 4);
  kiln_model_free(m);
}

Test(custom, elementwise_fused_specialized_matches_generic) {
  add_ew_lib();
  kiln_model *m = compile_text(SWISH_CHAIN);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_SYNC, st), 0);
  check_swish_chain(m, 5, 5);
  check_swish_chain(m, 130, 6);
  cr_assert_eq(kiln_model_variants(m), 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_FAILED), 0);
  kiln_model_free(m);
}

/* Alone (a group of one), f64 with three broadcasting operands. */
Test(custom, lone_elementwise_kernel_f64_broadcasting) {
  add_ew_lib();
  kiln_model *m = compile_text(
      "mo.graph @l<n>(%a: !mo.tensor<[n, 5], f64>, %b: !mo.tensor<[5], f64>, %c: "
      "!mo.tensor<[n, 1], f64>) -> (!mo.tensor<[n, 5], f64>) {\n"
      "  %y = mo.custom(%a, %b, %c) {symbol = \"fma3\"} : (!mo.tensor<[n, 5], f64>, "
      "!mo.tensor<[5], f64>, !mo.tensor<[n, 1], f64>) -> !mo.tensor<[n, 5], f64>\n"
      "  mo.output %y : !mo.tensor<[n, 5], f64>\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(m->g->nnodes, 1);
  cr_assert_eq(m->g->nodes[0]->op, IR_OP_CUSTOM);
  const int64_t sizes[] = {1, 3, 20001}; /* the last split between the pool's threads */
  uint64_t seed = 9;
  for (size_t k = 0; k < 3; k++) {
    int64_t n = sizes[k], sa[2] = {n, 5}, sb[1] = {5}, sc[2] = {n, 1};
    kiln_tensor *a = kiln_tensor_new(KILN_FLOAT64, 2, sa, st);
    kiln_tensor *b = kiln_tensor_new(KILN_FLOAT64, 1, sb, st);
    kiln_tensor *c = kiln_tensor_new(KILN_FLOAT64, 2, sc, st);
    double *ap = kiln_tensor_data(a), *bp = kiln_tensor_data(b), *cp = kiln_tensor_data(c);
    for (int64_t i = 0; i < n * 5; i++) ap[i] = frand(&seed);
    for (int i = 0; i < 5; i++) bp[i] = frand(&seed);
    for (int64_t i = 0; i < n; i++) cp[i] = frand(&seed);
    kiln_tensor *in[3] = {a, b, c}, *out[1] = {NULL};
    cr_assert_eq(kiln_model_execute(m, in, 3, out, 1, st), 0, "%s", kiln_status_message(st));
    const double *y = kiln_tensor_data(out[0]);
    for (int64_t r = 0; r < n; r++)
      for (int j = 0; j < 5; j++) {
        double want = ap[r * 5 + j] * bp[j] + cp[r];
        cr_assert(close_f(y[r * 5 + j], want, 1e-15), "n %lld [%lld, %d]: %.17g vs %.17g",
                  (long long)n, (long long)r, j, y[r * 5 + j], want);
      }
    kiln_tensor_free(out[0]);
    for (int q = 0; q < 3; q++) kiln_tensor_free(in[q]);
  }
  kiln_model_free(m);
}

/* Integers and bools: clamp (si32, one-element bounds) squared, and a
 * bool-producing kernel feeding a bool-taking one, fused together. */
Test(custom, elementwise_int_and_bool_kernels) {
  add_ew_lib();
  kiln_model *m = compile_text(
      "mo.graph @ib<n>(%x: !mo.tensor<[n], si32>, %lo: !mo.tensor<[1], si32>, %hi: "
      "!mo.tensor<[1], si32>, %f: " T("n") ") -> (!mo.tensor<[n], si32>, " T("n") ") {\n"
      "  %c = mo.custom(%x, %lo, %hi) {symbol = \"clampi\"} : (!mo.tensor<[n], si32>, "
      "!mo.tensor<[1], si32>, !mo.tensor<[1], si32>) -> !mo.tensor<[n], si32>\n"
      "  %d = mo.mul(%c, %c) : !mo.tensor<[n], si32>\n"
      "  %p = mo.custom(%f) {symbol = \"is_big\"} : (" T("n") ") -> !mo.tensor<[n], bool>\n"
      "  %q = mo.custom(%p, %f) {symbol = \"pick\"} : (!mo.tensor<[n], bool>, " T("n") ") -> " T(
          "n") "\n"
      "  %r = mo.negate(%q) : " T("n") "\n"
      "  mo.output %d, %r : !mo.tensor<[n], si32>, " T("n") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  int nk, nf, nc;
  count_kernels(m, &nk, &nf, &nc);
  cr_assert_eq(nk, 2, "two chains, two kernels: got %d", nk);
  cr_assert_eq(nf, 2);
  cr_assert_eq(nc, 3);
  int64_t n = 101, one = 1;
  kiln_tensor *x = kiln_tensor_new(KILN_INT32, 1, &n, st);
  kiln_tensor *lo = kiln_tensor_new(KILN_INT32, 1, &one, st);
  kiln_tensor *hi = kiln_tensor_new(KILN_INT32, 1, &one, st);
  uint64_t seed = 12;
  kiln_tensor *f = rand_f32(1, &n, &seed);
  int32_t *xp = kiln_tensor_data(x);
  for (int64_t i = 0; i < n; i++) xp[i] = (int32_t)(i * 7 % 61) - 30;
  *(int32_t *)kiln_tensor_data(lo) = -11;
  *(int32_t *)kiln_tensor_data(hi) = 17;
  kiln_tensor *in[4] = {x, lo, hi, f}, *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(m, in, 4, out, 2, st), 0, "%s", kiln_status_message(st));
  const int32_t *d = kiln_tensor_data(out[0]);
  const float *r = kiln_tensor_data(out[1]), *fp = kiln_tensor_data(f);
  for (int64_t i = 0; i < n; i++) {
    int32_t c = xp[i] < -11 ? -11 : xp[i] > 17 ? 17 : xp[i];
    cr_assert_eq(d[i], c * c, "[%lld]: %d vs %d", (long long)i, d[i], c * c);
    float q = fp[i] > 0.25f ? fp[i] * 2.0f : -1.0f;
    cr_assert_eq(r[i], -q, "[%lld]: %g vs %g", (long long)i, r[i], -q);
  }
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  for (int k = 0; k < 4; k++) kiln_tensor_free(in[k]);
  kiln_model_free(m);
}

/* More operands than any builtin op (6) in a chain. */
Test(custom, elementwise_kernel_with_six_operands) {
  add_ew_lib();
  kiln_model *m = compile_text(
      "mo.graph @six<n>(%a: " T("n") ", %b: " T("1") ", %c: " T("n") ", %d: " T("n") ", %e: " T(
          "n") ", %f: " T("n") ") -> (" T("n") ") {\n"
      "  %s = mo.custom(%a, %b, %c, %d, %e, %f) {symbol = \"sum6\"} : (" T("n") ", " T(
          "1") ", " T("n") ", " T("n") ", " T("n") ", " T("n") ") -> " T("n") "\n"
      "  %y = mo.relu(%s) : " T("n") "\n"
      "  mo.output %y : " T("n") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  int nk, nf, nc;
  count_kernels(m, &nk, &nf, &nc);
  cr_assert_eq(nk, 1);
  cr_assert_eq(nc, 1);
  int64_t n = 77, one = 1;
  uint64_t seed = 21;
  kiln_tensor *in[6];
  for (int k = 0; k < 6; k++) in[k] = rand_f32(1, k == 1 ? &one : &n, &seed);
  kiln_tensor *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, in, 6, out, 1, st), 0, "%s", kiln_status_message(st));
  const float *y = kiln_tensor_data(out[0]);
  const float *p[6];
  for (int k = 0; k < 6; k++) p[k] = kiln_tensor_data(in[k]);
  for (int64_t i = 0; i < n; i++) {
    float s = p[0][i] + 2 * p[1][0] + 3 * p[2][i] + 4 * p[3][i] + 5 * p[4][i] + 6 * p[5][i];
    float want = s > 0 ? s : 0;
    cr_assert(close_f(y[i], want, 1e-6), "[%lld]: %g vs %g", (long long)i, y[i], want);
  }
  kiln_tensor_free(out[0]);
  for (int k = 0; k < 6; k++) kiln_tensor_free(in[k]);
  kiln_model_free(m);
}

/* As a GEMM epilogue: matmul -> swish_beta -> add residual, one kernel. */
Test(custom, elementwise_kernel_in_a_gemm_epilogue) {
  add_ew_lib();
  kiln_model *m = compile_text(
      "mo.graph @ge<m>(%x: " T("m, 37") ", %w: " T("37, 45") ", %beta: " T("45") ", %r: " T(
          "m, 45") ") -> (" T("m, 45") ") {\n"
      "  %c = mo.matmul(%x, %w) : (" T("m, 37") ", " T("37, 45") ") -> " T("m, 45") "\n"
      "  %s = mo.custom(%c, %beta) {symbol = \"swish_beta\"} : (" T("m, 45") ", " T(
          "45") ") -> " T("m, 45") "\n"
      "  %y = mo.add(%s, %r) : " T("m, 45") "\n"
      "  mo.output %y : " T("m, 45") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  int nk, nf, nc;
  count_kernels(m, &nk, &nf, &nc);
  cr_assert_eq(nk, 1, "GEMM + epilogue must be one kernel, got %d", nk);
  bool has_mm = false;
  for (int k = 0; k < m->g->nodes[0]->body->nnodes; k++)
    has_mm = has_mm || m->g->nodes[0]->body->nodes[k]->op == IR_OP_MATMUL;
  cr_assert(has_mm);
  const int64_t rows[] = {1, 13, 130};
  uint64_t seed = 33;
  for (int q = 0; q < 3; q++) {
    int64_t M = rows[q], sx[2] = {M, 37}, sw[2] = {37, 45}, sb[1] = {45}, sr[2] = {M, 45};
    kiln_tensor *x = rand_f32(2, sx, &seed), *w = rand_f32(2, sw, &seed);
    kiln_tensor *beta = rand_f32(1, sb, &seed), *r = rand_f32(2, sr, &seed);
    kiln_tensor *in[4] = {x, w, beta, r}, *out[1] = {NULL};
    cr_assert_eq(kiln_model_execute(m, in, 4, out, 1, st), 0, "%s", kiln_status_message(st));
    const float *xp = kiln_tensor_data(x), *wp = kiln_tensor_data(w);
    const float *bp = kiln_tensor_data(beta), *rp = kiln_tensor_data(r);
    const float *y = kiln_tensor_data(out[0]);
    for (int64_t i = 0; i < M; i++)
      for (int j = 0; j < 45; j++) {
        double c = 0;
        for (int k = 0; k < 37; k++) c += (double)xp[i * 37 + k] * wp[k * 45 + j];
        float want = swish_ref((float)c, bp[j]) + rp[i * 45 + j];
        /* |x|, |w| <= 2, K = 37: the f32 GEMM's sum is within ~1e-4 */
        cr_assert(fabs(y[i * 45 + j] - want) <= 2e-4, "M %lld [%lld, %d]: %g vs %g",
                  (long long)M, (long long)i, j, y[i * 45 + j], want);
      }
    kiln_tensor_free(out[0]);
    for (int k = 0; k < 4; k++) kiln_tensor_free(in[k]);
  }
  kiln_model_free(m);
}

/* The custom softplus against the interpreter on the same chain written
 * with builtin ops (log1p(exp(x)), where x <= 20): same libm functions, so
 * within a few ulps (the JIT's f32 exp is call-free, within 1 ulp). */
Test(custom, elementwise_softplus_matches_builtin_ops) {
  add_ew_lib();
  const char *custom = "mo.graph @sp<n>(%x: " T("n") ") -> (" T("n") ") {\n"
                       "  %s = mo.custom(%x) {symbol = \"softplus\"} : (" T("n") ") -> " T("n") "\n"
                       "  %y = mo.sqrt(%s) : " T("n") "\n"
                       "  mo.output %y : " T("n") "\n"
                       "}\n";
  const char *builtin = "mo.graph @sp<n>(%x: " T("n") ") -> (" T("n") ") {\n"
                        "  %e = mo.exp(%x) : " T("n") "\n"
                        "  %s = mo.log1p(%e) : " T("n") "\n"
                        "  %y = mo.sqrt(%s) : " T("n") "\n"
                        "  mo.output %y : " T("n") "\n"
                        "}\n";
  kiln_model *m = compile_text(custom);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t n = 1003;
  uint64_t seed = 44;
  kiln_tensor *x = rand_f32(1, &n, &seed), *out[1] = {NULL};
  float *xp = kiln_tensor_data(x);
  for (int64_t i = 0; i < n; i++) xp[i] *= 8; /* [-16, 16] */
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  ir_diag d = {0};
  ir_graph *g = ir_parse(builtin, strlen(builtin), &d);
  cr_assert(g, "%s", d.msg);
  ir_tensor in = {IR_DT_F32, 1, {n}, xp}, ref;
  char msg[400] = "";
  cr_assert_eq(ir_interp_run(g, &in, NULL, NULL, &ref, msg, sizeof msg), 0, "%s", msg);
  const float *y = kiln_tensor_data(out[0]), *rp = ref.data;
  for (int64_t i = 0; i < n; i++)
    cr_assert(close_f(y[i], rp[i], 1e-6), "[%lld] x=%g: %.9g vs %.9g", (long long)i, xp[i], y[i],
              rp[i]);
  free(ref.data);
  ir_graph_free(g);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
  kiln_model_free(m);
}

static const char *ew_scale_source(int factor) {
  static char src[400];
  snprintf(src, sizeof src,
           "#include <kiln/kernel.h>\n"
           "KILN_ELEMENTWISE_KERNEL(ew_scale, 1)\n"
           "float ew_scale(float x) { return x * %d.0f; }\n",
           factor);
  return src;
}

Test(custom, editing_an_elementwise_kernel_changes_the_fused_key) {
  const char *text = "mo.graph @e<n>(%x: " T("n") ") -> (" T("n") ") {\n"
                     "  %a = mo.add(%x, %x) : " T("n") "\n"
                     "  %s = mo.custom(%a) {symbol = \"ew_scale\"} : (" T("n") ") -> " T("n") "\n"
                     "  %y = mo.negate(%s) : " T("n") "\n"
                     "  mo.output %y : " T("n") "\n"
                     "}\n";
  char p[512];
  snprintf(p, sizeof p, "%s", write_text("ews.c", ew_scale_source(2)));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, p, st), 0, "%s", kiln_status_message(st));
  kiln_model *m1 = compile_text(text);
  cr_assert(m1, "%s", kiln_status_message(st));
  write_text("ews.c", ew_scale_source(3));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, p, st), 0, "%s", kiln_status_message(st));
  kiln_model *m2 = compile_text(text);
  cr_assert(m2, "%s", kiln_status_message(st));
  cr_assert_eq(m1->g->nnodes, 1);
  cr_assert_eq(m2->g->nnodes, 1);
  cr_assert_eq(m2->g->nodes[0]->op, IR_OP_FUSED);
  char *t1 = ir_kernel_text(m1->g, m1->g->nodes[0], NULL, NULL);
  char *t2 = ir_kernel_text(m2->g, m2->g->nodes[0], NULL, NULL);
  cr_assert_str_neq(t1, t2, "the fused kernel's text (its key) must change with the source");
  free(t1);
  free(t2);
  int64_t s[1] = {4};
  float data[4] = {1, 1, 1, 1.5f};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s, data, st), *o1[1] = {NULL},
              *o2[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m1, &x, 1, o1, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m2, &x, 1, o2, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_float_eq(((float *)kiln_tensor_data(o1[0]))[3], -6.0f, 0);
  cr_assert_float_eq(((float *)kiln_tensor_data(o2[0]))[3], -9.0f, 0, "stale code ran");
  kiln_tensor_free(o1[0]);
  kiln_tensor_free(o2[0]);
  kiln_tensor_free(x);
  kiln_model_free(m2);
  kiln_model_free(m1);
}

/* ---- elementwise kernels: bad input (each message locates the op) ---- */

static void expect_ew_error(const char *text, kiln_code code, const char *needle) {
  kiln_model *m = compile_text(text);
  cr_assert_null(m, "compiled, expected: %s", needle);
  cr_assert_eq(kiln_status_code(st), code, "code %d: %s", (int)kiln_status_code(st),
               kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), needle), "'%s' not in: %s", needle,
            kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), "2:3: mo."), "no location: %s",
            kiln_status_message(st));
}

#define EW_ONE(sym, attrs, in_t, out_t)                                                     \
  "mo.graph @b<n>(%x: " in_t ") -> (" out_t ") {\n"                                        \
  "  %y = mo.custom(%x) {symbol = \"" sym "\"" attrs "} : (" in_t ") -> " out_t "\n"       \
  "  mo.output %y : " out_t "\n"                                                            \
  "}\n"

Test(custom, elementwise_kernel_errors) {
  add_ew_lib();
  /* the function's type does not spell the op's dtypes */
  expect_ew_error(EW_ONE("wrong_type", "", T("n"), T("n")), KILN_ERR_VERIFY,
                  "has type float (double), the op needs float (float) (in C: float "
                  "wrong_type(float))");
  expect_ew_error(EW_ONE("softplus", "", "!mo.tensor<[n], f64>", "!mo.tensor<[n], f64>"),
                  KILN_ERR_VERIFY, "the op needs double (double)");
  /* a dtype elementwise kernels do not take */
  expect_ew_error(EW_ONE("softplus", "", "!mo.tensor<[n], f16>", "!mo.tensor<[n], f16>"),
                  KILN_ERR_UNSUPPORTED, "operand 0 is f16; elementwise kernels take f32, f64");
  /* the result is not the operands' broadcast */
  expect_ew_error(EW_ONE("softplus", "", T("n, 4"), T("n, 5")), KILN_ERR_VERIFY,
                  "is not the broadcast of the operands' shapes: axis 1 is 5, operand 0 (%x) "
                  "has 4 there");
  expect_ew_error(EW_ONE("softplus", "", T("n, 4"), T("4")), KILN_ERR_VERIFY,
                  "has rank 1, the broadcast of the operands' shapes has rank 2");
  expect_ew_error(EW_ONE("softplus", "", T("n, 1"), T("n, 4")), KILN_ERR_VERIFY,
                  "no operand has axis 1's dim 4");
  /* parameters */
  expect_ew_error(EW_ONE("softplus", ", alpha = 1.0", T("n"), T("n")), KILN_ERR_VERIFY,
                  "is an elementwise kernel, which takes no parameters, but the op has 'alpha'");
  /* operand count, in place, no marker */
  expect_ew_error(EW_ONE("swish_beta", "", T("n"), T("n")), KILN_ERR_VERIFY,
                  "takes 2 operands, the op gives 1");
  expect_ew_error("mo.graph @b<n>(%x: " T("n") ") -> (" T("n") ") {\n"
                  "  %y = mo.inplace_custom(%x) {symbol = \"softplus\"} : (" T("n") ") -> " T(
                      "n") "\n"
                  "  mo.output %y : " T("n") "\n}\n",
                  KILN_ERR_VERIFY, "use it with mo.custom");
  expect_ew_error(EW_ONE("unmarked_ew", "", T("n"), T("n")), KILN_ERR_VERIFY,
                  "a scalar elementwise kernel is declared with "
                  "KILN_ELEMENTWISE_KERNEL(unmarked_ew, NIN)");
  /* kiln.elementwise is kiln's own: graph text cannot set it */
  const char *stamped = EW_ONE("scale", ", kiln.elementwise = 1", T("n"), T("n"));
  cr_assert_null(kiln_graph_parse(stamped, strlen(stamped), NULL, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_PARSE, "%s", kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st),
                   "2:41: attribute 'kiln.elementwise' is set by the runtime, not by graph text"),
            "%s", kiln_status_message(st));
}

/* The scalar function is inlined into the fused loop, which LLVM then
 * vectorizes (no libm call in this one to stop it). */
Test(custom, elementwise_kernel_is_inlined_and_vectorized) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, write_text("ews.c", ew_scale_source(5)), st),
               0, "%s", kiln_status_message(st));
  kiln_model *m = compile_text("mo.graph @v<n>(%x: " T("n") ", %a: " T("n") ") -> (" T("n") ") {\n"
                               "  %m = mo.mul(%x, %a) : " T("n") "\n"
                               "  %s = mo.custom(%m) {symbol = \"ew_scale\"} : (" T("n") ") -> " T(
                                   "n") "\n"
                               "  %y = mo.add(%s, %x) : " T("n") "\n"
                               "  mo.output %y : " T("n") "\n"
                               "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(m->g->nnodes, 1);
  cr_assert_eq(m->g->nodes[0]->op, IR_OP_FUSED);
  char err[512] = "";
  char *ll = jit_node_llvm_ir(ctx->jit, m->g, 0, err, sizeof err);
  cr_assert(ll, "%s", err);
  cr_assert_null(strstr(ll, "call float @ew_scale("), "the kernel was not inlined");
  cr_assert(strstr(ll, "fmul <") && strstr(ll, " x float>"),
            "the fused loop was not vectorized");
  free(ll);
  kiln_model_free(m);
}
