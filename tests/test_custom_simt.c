/* test_custom_simt.c - SIMT custom kernels (KILN_SIMT_KERNEL, the
 * kiln_simt_* helpers of kiln/kernel.h): on simt-emu against C references
 * computed here (a grid-stride elementwise kernel at odd sizes and a
 * symbolic dim at several sizes, a per-row kernel with a shared-memory
 * reduction between barriers, mo.inplace_custom), the PTX of a graph with
 * custom ops assembled by ptxas for sm_80 (skipped with a message when
 * ptxas is not on PATH), the AMDGPU code object checked with llvm-readelf-19
 * (likewise), `kiln run --device simt-emu --kernels` on the example, and the
 * errors: a host kernel on simt-emu, a SIMT kernel on the CPU, signatures
 * that do not fit, no context, a kernel that fails, a bad simt_grid, IR
 * for another target. Elementwise kernels (KILN_ELEMENTWISE_KERNEL) in a
 * chain on simt-emu and on the CPU from one library, their binding errors
 * on simt-emu, their PTX (ptxas) and AMDGPU code object. */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/kernel_lib.h"
#include "src/rt.h"
#include "support/note.h"

#define T(r) "!mo.tensor<[" r "], f32>"

static const char *SIMT_C =
    "#include <math.h>\n"
    "#include <kiln/kernel.h>\n"
    "KILN_SIMT_KERNEL(scaled_add, 2, 1)\n"
    "int32_t scaled_add(const kiln_kernel_args *a) {\n"
    "  const float *x = a->inputs[0].data, *z = a->inputs[1].data;\n"
    "  float *y = a->outputs[0].data, alpha = (float)kiln_param_float(a, \"alpha\", 1);\n"
    "  int64_t n = kiln_kernel_numel(&a->inputs[0]);\n"
    "  for (int64_t i = kiln_simt_global_id(); i < n; i += kiln_simt_global_size())\n"
    "    y[i] = x[i] + alpha * z[i];\n"
    "  return 0;\n"
    "}\n"
    "KILN_SIMT_KERNEL(row_rms, 1, 1)\n"
    "int32_t row_rms(const kiln_kernel_args *a) {\n"
    "  const kiln_kernel_tensor *x = &a->inputs[0];\n"
    "  int64_t n = x->dims[x->rank - 1], rows = kiln_kernel_numel(x) / n;\n"
    "  const float *xp = x->data; float *yp = a->outputs[0].data;\n"
    "  double *part = kiln_simt_shared();\n"
    "  uint32_t t = kiln_simt_thread_id(), nt = kiln_simt_block_dim();\n"
    "  for (int64_t r = kiln_simt_block_id(); r < rows; r += kiln_simt_grid_dim()) {\n"
    "    double ss = 0;\n"
    "    for (int64_t i = t; i < n; i += nt) ss += (double)xp[r * n + i] * xp[r * n + i];\n"
    "    part[t] = ss;\n"
    "    kiln_simt_barrier();\n"
    "    for (uint32_t s = nt / 2; s > 0; s /= 2) {\n"
    "      if (t < s) part[t] += part[t + s];\n"
    "      kiln_simt_barrier();\n"
    "    }\n"
    "    double inv = 1.0 / sqrt(part[0] / (double)n + 1e-5);\n"
    "    kiln_simt_barrier();\n"
    "    for (int64_t i = t; i < n; i += nt) yp[r * n + i] = (float)(xp[r * n + i] * inv);\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "KILN_SIMT_KERNEL(add_one, 1, 1)\n"
    "int32_t add_one(const kiln_kernel_args *a) {\n"
    "  float *y = a->outputs[0].data;\n"
    "  int64_t n = kiln_kernel_numel(&a->outputs[0]);\n"
    "  for (int64_t i = kiln_simt_global_id(); i < n; i += kiln_simt_global_size()) y[i] += 1;\n"
    "  return 0;\n"
    "}\n"
    "KILN_SIMT_KERNEL(refuse, 1, 1)\n"
    "int32_t refuse(const kiln_kernel_args *a) {\n"
    "  return kiln_simt_block_id() == 1 && kiln_simt_thread_id() == 7 ? 5 : 0;\n"
    "}\n"
    "KILN_SIMT_KERNEL(one_in, 1, 1)\n"
    "int32_t one_in(const kiln_kernel_args *a) { (void)a; return 0; }\n"
    "int32_t unmarked(const kiln_kernel_args *a) { (void)a; return 0; }\n";

static const char *HOST_C = "#include <kiln/kernel.h>\n"
                            "KILN_KERNEL(host_only, 1, 1)\n"
                            "int32_t host_only(const kiln_kernel_args *a) { (void)a; return 0; }\n";

/* two operands, result f32 [n], kernel SYM */
#define TWO_GRAPH(sym)                                                                     \
  "mo.graph @s<n>(%x: " T("n") ", %z: " T("n") ") -> (" T("n") ") {\n"                     \
  "  %y = mo.custom(%x, %z) {symbol = \"" sym "\", alpha = 0.5} : (" T("n") ", " T(       \
      "n") ") -> " T("n") "\n"                                                             \
  "  mo.output %y : " T("n") "\n"                                                          \
  "}\n"
#define ADD_GRAPH TWO_GRAPH("scaled_add")

#define RMS_GRAPH                                                                          \
  "mo.graph @r<rows, cols>(%x: " T("rows, cols") ") -> (" T("rows, cols") ") {\n"          \
  "  %y = mo.custom(%x) {symbol = \"row_rms\", simt_grid = \"rows\"} : (" T(               \
      "rows, cols") ") -> " T("rows, cols") "\n"                                           \
  "  mo.output %y : " T("rows, cols") "\n"                                                 \
  "}\n"

/* an op with one operand, result f32 [n], kernel SYM, extra attributes */
#define ONE_GRAPH(sym, attrs)                                                              \
  "mo.graph @o<n>(%x: " T("n") ") -> (" T("n") ") {\n"                                     \
  "  %y = mo.custom(%x) {symbol = \"" sym "\"" attrs "} : (" T("n") ") -> " T("n") "\n"    \
  "  mo.output %y : " T("n") "\n"                                                          \
  "}\n"

/* ---- fixture: a temporary directory, a status, a context, simt-emu ---- */
static char dir[256];
static kiln_status *st;
static kiln_context *ctx;
static kiln_device *emu;

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln-test-csimt-XXXXXX");
  cr_assert(mkdtemp(dir));
  st = kiln_status_new();
  ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  emu = kiln_device_open("simt-emu", st);
  cr_assert(emu, "%s", kiln_status_message(st));
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

static void teardown(void) {
  kiln_device_close(emu);
  kiln_context_free(ctx);
  kiln_status_free(st);
  cr_expect_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

TestSuite(custom_simt, .init = setup, .fini = teardown, .timeout = 300);

static const char *in_dir(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static const char *write_text(const char *name, const char *text) {
  const char *path = in_dir(name);
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
  return path;
}

static void add_lib(const char *name, const char *src) {
  cr_assert_eq(kiln_context_add_kernel_library_memory(ctx, name, src, strlen(src), st), 0, "%s",
               kiln_status_message(st));
}

static kiln_graph *parse(const char *text) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert(g, "%s", kiln_status_message(st));
  return g;
}

static kiln_device_model *emu_model(const char *text) {
  kiln_graph *g = parse(text);
  kiln_device_model *m = kiln_device_model_compile_with(ctx, emu, g, st);
  kiln_graph_free(g);
  return m;
}

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

static kiln_tensor *random_tensor(int rank, const int64_t *shape, uint64_t *seed) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, st);
  cr_assert(t, "%s", kiln_status_message(st));
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) p[i] = frand(seed);
  return t;
}

static void expect_error(const void *got, kiln_code code, const char *part) {
  cr_assert_null(got, "expected an error containing \"%s\"", part);
  cr_expect_eq(kiln_status_code(st), code, "code %d: %s", kiln_status_code(st),
               kiln_status_message(st));
  cr_expect(strstr(kiln_status_message(st), part), "\"%s\" not in: %s", part,
            kiln_status_message(st));
}

/* ---- numbers on simt-emu ---- */

Test(custom_simt, scaled_add_odd_sizes_one_compile) {
  add_lib("k.c", SIMT_C);
  kiln_device_model *m = emu_model(ADD_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  /* 1, under a block, a block and one, several blocks and a ragged end */
  const int64_t sizes[] = {1, 37, 257, 1000, 0};
  uint64_t seed = 7;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int64_t n = sizes[k];
    kiln_tensor *x = random_tensor(1, &n, &seed), *z = random_tensor(1, &n, &seed);
    kiln_tensor *in[2] = {x, z}, *out[1] = {NULL};
    cr_assert_eq(kiln_device_model_execute(m, in, 2, out, 1, st), 0, "n=%lld: %s",
                 (long long)n, kiln_status_message(st));
    const float *xp = kiln_tensor_data(x), *zp = kiln_tensor_data(z);
    const float *yp = kiln_tensor_data(out[0]);
    for (int64_t i = 0; i < n; i++) {
      float ref = xp[i] + 0.5f * zp[i];
      cr_assert(fabsf(yp[i] - ref) <= 1e-6f * (1 + fabsf(ref)), "n=%lld [%lld]: %g vs %g",
                (long long)n, (long long)i, yp[i], ref);
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(x);
    kiln_tensor_free(z);
  }
  kiln_device_model_free(m);
}

Test(custom_simt, row_reduction_with_barriers) {
  add_lib("k.c", SIMT_C);
  kiln_device_model *m = emu_model(RMS_GRAPH);
  cr_assert(m, "%s", kiln_status_message(st));
  /* rows x cols: a row longer than a block (the threads stride), shorter
   * than a block (idle threads still reach every barrier), one row */
  const int64_t shapes[][2] = {{3, 300}, {5, 37}, {1, 256}};
  uint64_t seed = 11;
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    kiln_tensor *x = random_tensor(2, shapes[k], &seed);
    kiln_tensor *in[1] = {x}, *out[1] = {NULL};
    cr_assert_eq(kiln_device_model_execute(m, in, 1, out, 1, st), 0, "%s",
                 kiln_status_message(st));
    const float *xp = kiln_tensor_data(x), *yp = kiln_tensor_data(out[0]);
    int64_t rows = shapes[k][0], n = shapes[k][1];
    for (int64_t r = 0; r < rows; r++) {
      double ss = 0;
      for (int64_t i = 0; i < n; i++) ss += (double)xp[r * n + i] * xp[r * n + i];
      double inv = 1.0 / sqrt(ss / (double)n + 1e-5);
      for (int64_t i = 0; i < n; i++) {
        float ref = (float)(xp[r * n + i] * inv);
        cr_assert(fabsf(yp[r * n + i] - ref) <= 1e-5f * (1 + fabsf(ref)),
                  "%lldx%lld [%lld, %lld]: %g vs %g", (long long)rows, (long long)n, (long long)r,
                  (long long)i, yp[r * n + i], ref);
      }
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(x);
  }
  kiln_device_model_free(m);
}

Test(custom_simt, inplace_custom_starts_from_the_operand) {
  add_lib("k.c", SIMT_C);
  kiln_device_model *m = emu_model(
      "mo.graph @i<n>(%x: " T("n") ") -> (" T("n") ") {\n"
      "  %y = mo.inplace_custom(%x) {symbol = \"add_one\"} : (" T("n") ") -> " T("n") "\n"
      "  mo.output %y : " T("n") "\n"
      "}\n");
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t n = 301;
  uint64_t seed = 3;
  kiln_tensor *x = random_tensor(1, &n, &seed);
  kiln_tensor *in[1] = {x}, *out[1] = {NULL};
  cr_assert_eq(kiln_device_model_execute(m, in, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  const float *xp = kiln_tensor_data(x), *yp = kiln_tensor_data(out[0]);
  for (int64_t i = 0; i < n; i++) cr_assert_eq(yp[i], xp[i] + 1, "[%lld]", (long long)i);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
  kiln_device_model_free(m);
}

Test(custom_simt, a_failing_thread_fails_the_execute) {
  add_lib("k.c", SIMT_C);
  kiln_device_model *m = emu_model(ONE_GRAPH("refuse", ""));
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t n = 600; /* three blocks: block 1, thread 7 returns 5 */
  uint64_t seed = 1;
  kiln_tensor *x = random_tensor(1, &n, &seed);
  kiln_tensor *in[1] = {x}, *out[1] = {NULL};
  cr_assert_neq(kiln_device_model_execute(m, in, 1, out, 1, st), 0);
  cr_expect(strstr(kiln_status_message(st), "mo.custom at line 2"), "%s",
            kiln_status_message(st));
  kiln_tensor_free(x);
  kiln_device_model_free(m);
}

/* ---- errors ---- */

Test(custom_simt, host_kernel_on_simt_emu) {
  add_lib("h.c", HOST_C);
  expect_error(emu_model(ONE_GRAPH("host_only", "")), KILN_ERR_UNSUPPORTED,
               "is a host kernel (KILN_KERNEL): it runs on the CPU only");
}

Test(custom_simt, simt_kernel_on_the_cpu) {
  add_lib("k.c", SIMT_C);
  kiln_graph *g = parse(ONE_GRAPH("add_one", ""));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  expect_error(m, KILN_ERR_UNSUPPORTED, "is a SIMT kernel (KILN_SIMT_KERNEL)");
}

Test(custom_simt, signatures_that_do_not_fit) {
  add_lib("k.c", SIMT_C);
  expect_error(emu_model(TWO_GRAPH("one_in")), KILN_ERR_VERIFY, "takes 1 operand, the op gives 2");
  expect_error(emu_model(ONE_GRAPH("unmarked", "")), KILN_ERR_VERIFY,
               "no kiln_abi_unmarked marker");
  expect_error(emu_model(ONE_GRAPH("nowhere", "")), KILN_ERR_NOT_FOUND, "nowhere");
}

Test(custom_simt, device_model_without_a_context) {
  add_lib("k.c", SIMT_C);
  kiln_graph *g = parse(ONE_GRAPH("add_one", ""));
  kiln_device_model *m = kiln_device_model_compile(emu, g, st);
  kiln_graph_free(g);
  expect_error(m, KILN_ERR_NOT_FOUND, "needs the context's kernel libraries");
}

Test(custom_simt, bad_simt_grid) {
  add_lib("k.c", SIMT_C);
  kiln_device_model *m = emu_model(ONE_GRAPH("add_one", ", simt_grid = \"tiles\""));
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t n = 4;
  uint64_t seed = 1;
  kiln_tensor *x = random_tensor(1, &n, &seed);
  kiln_tensor *in[1] = {x}, *out[1] = {NULL};
  cr_assert_neq(kiln_device_model_execute(m, in, 1, out, 1, st), 0);
  cr_expect(strstr(kiln_status_message(st), "simt_grid = \"tiles\""), "%s",
            kiln_status_message(st));
  kiln_tensor_free(x);
  kiln_device_model_free(m);
}

Test(custom_simt, ir_for_another_target) {
  static const char *ll = "target triple = \"nvptx64-nvidia-cuda\"\n"
                          "@kiln_abi_k = constant [3 x i32] [i32 257, i32 1, i32 1]\n"
                          "define i32 @k(ptr %a) {\n  ret i32 0\n}\n";
  add_lib("k.ll", ll);
  expect_error(emu_model(ONE_GRAPH("k", "")), KILN_ERR_COMPILE,
               "LLVM code for nvptx64-nvidia-cuda, which cannot run on simt-emu");
}

/* ---- the command line: PTX, AMDGPU, kiln run ---- */

static bool on_path(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* Run cmd; its exit status, what it printed in out (NUL-terminated). */
static int run_capture(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Run the CLI; its exit status, its output in out (NUL-terminated). */
static int cli(const char *args, char *out, size_t cap) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", KILN_CLI, args);
  return run_capture(cmd, out, cap);
}

#define EXAMPLE KILN_SHARED_DIR "/../../examples/custom_ops/"

Test(custom_simt, ptx_for_sm_80_assembles) {
  const char *ptx = in_dir("g.ptx");
  char args[2048], out[8192];
  snprintf(args, sizeof args,
           "compile %srms_norm_simt.mlir --target sm_80 --emit ptx --kernels %srms_norm_simt.c "
           "-o %s", EXAMPLE, EXAMPLE, ptx);
  cr_assert_eq(cli(args, out, sizeof out), 0, "%s", out);
  if (!on_path("ptxas")) {
    test_note("ptxas not on PATH: assembling the custom kernels' PTX skipped");
    return;
  }
  snprintf(args, sizeof args, "ptxas -arch=sm_80 %s -o /dev/null 2>&1", ptx);
  cr_expect_eq(system(args), 0, "ptxas rejected %s", ptx);
}

Test(custom_simt, amdgpu_code_object) {
  const char *co = in_dir("g.hsaco");
  char args[2048], out[16384];
  snprintf(args, sizeof args,
           "compile %srms_norm_simt.mlir --target gfx90a --emit hsaco --kernels "
           "%srms_norm_simt.c -o %s", EXAMPLE, EXAMPLE, co);
  cr_assert_eq(cli(args, out, sizeof out), 0, "%s", out);
  if (!on_path("llvm-readelf-19")) {
    test_note("llvm-readelf-19 not on PATH: checking the code object skipped");
    return;
  }
  snprintf(args, sizeof args, "llvm-readelf-19 -h -s %s", co);
  run_capture(args, out, sizeof out);
  cr_expect(strstr(out, "AMDGPU"), "%s", out);
  cr_expect(strstr(out, "kiln_0_custom.kd") && strstr(out, "kiln_2_custom.kd"), "%s", out);
  /* the only undefined symbol is the null one (index 0) */
  int und = 0;
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
    if (strstr(l, " UND") && !strstr(l, "   0: ")) und++;
  cr_expect_eq(und, 0, "undefined symbols in the code object");
}

Test(custom_simt, kiln_run_on_simt_emu) {
  char args[2048], out[8192];
  snprintf(args, sizeof args,
           "run %srms_norm_simt.mlir --device simt-emu --kernels %srms_norm_simt.c "
           "--random-inputs --dim rows=3", EXAMPLE, EXAMPLE);
  cr_assert_eq(cli(args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "y: f32 [3, 300]"), "%s", out);
  /* a host kernel on the device: refused, and said so */
  const char *g = write_text("h.mlir", ONE_GRAPH("host_only", ""));
  char gpath[512];
  snprintf(gpath, sizeof gpath, "%s", g);
  const char *h = write_text("h.c", HOST_C);
  snprintf(args, sizeof args, "run %s --device simt-emu --kernels %s --random-inputs --dim n=4",
           gpath, h);
  cr_assert_eq(cli(args, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "is a host kernel (KILN_KERNEL)"), "%s", out);
}

/* ---- elementwise kernels (KILN_ELEMENTWISE_KERNEL): every target ----
 * The same scalar function runs on the CPU and on simt-emu (as the element
 * loop of a SIMT kernel); references are computed here with the same float
 * operations and libm's expf (the emulator runs host code that calls it),
 * so 1e-6 relative covers an fma contraction or a rounding of the exp. */

static const char *EW_C = "#include <math.h>\n"
                          "#include <kiln/kernel.h>\n"
                          "KILN_ELEMENTWISE_KERNEL(swish_beta, 2)\n"
                          "float swish_beta(float x, float beta) {\n"
                          "  return x / (1.0f + expf(-beta * x));\n"
                          "}\n"
                          "KILN_ELEMENTWISE_KERNEL(axpb, 2)\n"
                          "float axpb(float x, float a) { return x * a + 1.0f; }\n";

#define EW_CHAIN                                                                           \
  "mo.graph @e<n>(%x: " T("n, 7") ", %a: " T("n, 7") ", %beta: " T("7") ") -> (" T(       \
      "n, 7") ") {\n"                                                                      \
  "  %m = mo.mul(%x, %a) : " T("n, 7") "\n"                                                \
  "  %s = mo.custom(%m, %beta) {symbol = \"swish_beta\"} : (" T("n, 7") ", " T("7")      \
  ") -> " T("n, 7") "\n"                                                                   \
  "  %y = mo.add(%s, %x) : " T("n, 7") "\n"                                                \
  "  mo.output %y : " T("n, 7") "\n"                                                       \
  "}\n"

static void check_ew_chain(kiln_device_model *dm, kiln_model *cm, int64_t n, uint64_t seed) {
  int64_t s2[2] = {n, 7}, s1[1] = {7};
  kiln_tensor *x = random_tensor(2, s2, &seed), *a = random_tensor(2, s2, &seed);
  kiln_tensor *beta = random_tensor(1, s1, &seed);
  kiln_tensor *in[3] = {x, a, beta}, *out[1] = {NULL};
  if (dm)
    cr_assert_eq(kiln_device_model_execute(dm, in, 3, out, 1, st), 0, "n=%lld: %s",
                 (long long)n, kiln_status_message(st));
  else
    cr_assert_eq(kiln_model_execute(cm, in, 3, out, 1, st), 0, "n=%lld: %s", (long long)n,
                 kiln_status_message(st));
  const float *xp = kiln_tensor_data(x), *ap = kiln_tensor_data(a), *bp = kiln_tensor_data(beta);
  const float *yp = kiln_tensor_data(out[0]);
  for (int64_t i = 0; i < n * 7; i++) {
    float m = xp[i] * ap[i], b = bp[i % 7];
    float ref = m / (1.0f + expf(-b * m)) + xp[i];
    cr_assert(fabsf(yp[i] - ref) <= 1e-6f * (1 + fabsf(ref)), "%s n=%lld [%lld]: %.9g vs %.9g",
              dm ? "simt-emu" : "cpu", (long long)n, (long long)i, yp[i], ref);
  }
  kiln_tensor_free(out[0]);
  for (int k = 0; k < 3; k++) kiln_tensor_free(in[k]);
}

Test(custom_simt, elementwise_kernel_on_simt_emu_and_cpu) {
  add_lib("ew.c", EW_C);
  kiln_device_model *dm = emu_model(EW_CHAIN);
  cr_assert(dm, "%s", kiln_status_message(st));
  kiln_graph *g = parse(EW_CHAIN);
  kiln_model *cm = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert(cm, "the same library on the CPU: %s", kiln_status_message(st));
  /* under a block, blocks and a ragged end, empty */
  const int64_t sizes[] = {1, 37, 300, 0};
  for (int k = 0; k < 4; k++) {
    check_ew_chain(dm, NULL, sizes[k], 100 + (uint64_t)k);
    check_ew_chain(NULL, cm, sizes[k], 200 + (uint64_t)k);
  }
  kiln_model_free(cm);
  kiln_device_model_free(dm);
}

Test(custom_simt, elementwise_kernel_errors_on_simt_emu) {
  add_lib("ew.c", EW_C);
  expect_error(emu_model(ONE_GRAPH("swish_beta", "")), KILN_ERR_VERIFY,
               "takes 2 operands, the op gives 1");
  expect_error(emu_model(TWO_GRAPH("axpb")), KILN_ERR_VERIFY,
               "is an elementwise kernel, which takes no parameters, but the op has 'alpha'");
}

/* PTX (assembled by ptxas) and an AMDGPU code object of the elementwise
 * kernel alone and beside builtin ops. */
Test(custom_simt, elementwise_kernel_ptx_and_amdgpu) {
  char gpath[512], lpath[512], args[4096], out[16384];
  snprintf(gpath, sizeof gpath, "%s", write_text("ew.mlir", EW_CHAIN));
  snprintf(lpath, sizeof lpath, "%s", write_text("ew.c", EW_C));
  const char *ptx = in_dir("ew.ptx");
  snprintf(args, sizeof args, "compile %s --target sm_80 --emit ptx --kernels %s -o %s", gpath,
           lpath, ptx);
  cr_assert_eq(cli(args, out, sizeof out), 0, "%s", out);
  if (on_path("ptxas")) {
    snprintf(args, sizeof args, "ptxas -arch=sm_80 %s -o /dev/null 2>&1", ptx);
    cr_expect_eq(system(args), 0, "ptxas rejected %s", ptx);
  } else {
    test_note("ptxas not on PATH: assembling the elementwise kernel's PTX skipped");
  }
  const char *co = in_dir("ew.hsaco");
  snprintf(args, sizeof args, "compile %s --target gfx90a --emit hsaco --kernels %s -o %s", gpath,
           lpath, co);
  cr_assert_eq(cli(args, out, sizeof out), 0, "%s", out);
  if (!on_path("llvm-readelf-19")) {
    test_note("llvm-readelf-19 not on PATH: checking the code object skipped");
    return;
  }
  snprintf(args, sizeof args, "llvm-readelf-19 -h -s %s", co);
  run_capture(args, out, sizeof out);
  cr_expect(strstr(out, "AMDGPU"), "%s", out);
  /* the chain with the elementwise kernel is one fused kernel, as on the CPU */
  cr_expect(strstr(out, "_fused.kd"), "%s", out);
}
