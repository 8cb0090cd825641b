/* test_custom.c - custom ops (mo.custom, mo.inplace_custom) with kernel
 * libraries in C, LLVM IR and bitcode: results against C references
 * computed here, symbolic dims at two sizes, specialized vs generic, the
 * kernel inlined into kiln's kernel, editing the source changes the key,
 * parameters of every kind, every bad input (C that does not compile, a
 * missing symbol, a signature that does not fit, no clang, clang of another
 * version, a missing file, bad .ll / .bc), the interpreter's refusal, a
 * SIMT device model without a context, fusion leaving custom ops alone,
 * and the text round trip. Files go to a fresh temporary directory per
 * test. */
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
  ir_graph *kg = ir_parse(text, strlen(text), &d);
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
  cr_assert_eq(ir_graph_fuse(g2, &d), 0);
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
  cr_assert_eq(ir_graph_fuse(g, &d), 1);
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
