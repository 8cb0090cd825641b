/* test_cli.c - the `kiln` command line (KILN_CLI) run as a user would: exit
 * codes, what goes to stdout / stderr, .npy in and out, .safetensors
 * weights, random inputs with --dim, timings. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io.h"
#include "tests/support/shell.h"

#define EX(name) KILN_SHARED_DIR "/ir-examples/" name

/* Run `kiln ARGS` through the shell; returns the exit code, output in *out
 * (stdout and stderr together, malloc'd). */
static int kiln(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kiln(char **out, const char *fmt, ...) {
  char args[4096], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", KILN_CLI, args);
  return shell_capture(cmd, out);
}

static char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "/tmp/kiln_test_cli_%d_%s", (int)getpid(), name);
  return p;
}

static void write_f32_npy(const char *path, int rank, const int64_t *shape, const float *v) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  memcpy(kiln_tensor_data(t), v, kiln_tensor_nbytes(t));
  cr_assert_eq(rt_npy_write(path, t, NULL), 0);
  kiln_tensor_free(t);
}

#define HAS(out, s) cr_assert(strstr(out, s), "output lacks '%s':\n%s", s, out)

Test(cli, version) {
  char *out;
  cr_assert_eq(kiln(&out, "--version"), 0);
  cr_assert(strncmp(out, "kiln 0.1.0 (LLVM 19", 19) == 0, "%s", out);
  free(out);
}

Test(cli, help_and_unknown_command) {
  char *out;
  cr_assert_eq(kiln(&out, "help"), 0);
  HAS(out, "usage: kiln COMMAND");
  free(out);
  cr_assert_eq(kiln(&out, "help run"), 0);
  HAS(out, "--random-inputs");
  free(out);
  cr_assert_eq(kiln(&out, "frobnicate"), 2);
  HAS(out, "unknown command 'frobnicate'");
  free(out);
  cr_assert_eq(kiln(&out, "%s", ""), 2); /* no command at all */
  free(out);
}

Test(cli, check_prints_canonical_ir) {
  char *out;
  cr_assert_eq(kiln(&out, "check '%s'", EX("mlp.mlir")), 0, "%s", out);
  HAS(out, "mo.graph @mlp<batch>(");
  HAS(out, "mo.output");
  free(out);
}

Test(cli, check_reads_stdin) {
  char *out;
  cr_assert_eq(kiln(&out, "check - < '%s'", EX("relu.mlir")), 0, "%s", out);
  HAS(out, "mo.relu");
  free(out);
}

Test(cli, check_bad_file_is_file_line_col_and_exit_1) {
  char *out;
  cr_assert_eq(kiln(&out, "check '%s'", EX("bad/undefined_value.mlir")), 1, "%s", out);
  char want[512];
  snprintf(want, sizeof want, "%s:3:", EX("bad/undefined_value.mlir"));
  cr_assert(strncmp(out, want, strlen(want)) == 0, "%s", out);
  HAS(out, "use of undefined value %zz");
  free(out);
  cr_assert_eq(kiln(&out, "check /nonexistent/g.mlir"), 1);
  HAS(out, "/nonexistent/g.mlir: cannot open");
  free(out);
}

Test(cli, run_relu_from_npy_with_out_dir) {
  char *in = tmp_path("x.npy"), *dir = tmp_path("out/sub");
  int64_t shape[] = {5};
  float xv[] = {-1, 2, -3, 4.5f, 0};
  write_f32_npy(in, 1, shape, xv);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --input x='%s' --out '%s'", EX("relu.mlir"), in, dir), 0,
               "%s", out);
  HAS(out, "y: f32 [5] = [0, 2, 0, 4.5, 0]");
  free(out);
  char ypath[600];
  snprintf(ypath, sizeof ypath, "%s/y.npy", dir);
  kiln_status *st = kiln_status_new();
  kiln_tensor *y = rt_npy_read(ypath, st);
  cr_assert(y, "%s", kiln_status_message(st));
  cr_assert_eq(((float *)kiln_tensor_data(y))[3], 4.5f);
  kiln_tensor_free(y);
  kiln_status_free(st);
  unlink(ypath);
  rmdir(dir);
  rmdir(tmp_path("out"));
  unlink(in);
}

Test(cli, run_wrong_npy_shape_and_unknown_input) {
  char *in = tmp_path("x4.npy");
  int64_t shape[] = {4};
  float xv[] = {1, 2, 3, 4};
  write_f32_npy(in, 1, shape, xv);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --input x='%s'", EX("relu.mlir"), in), 1, "%s", out);
  HAS(out, "input 0 (x): axis 0 expected 5, got 4");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --input nope='%s'", EX("relu.mlir"), in), 1, "%s", out);
  HAS(out, "the model has no input 'nope' (inputs: x)");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s'", EX("relu.mlir")), 1, "%s", out);
  HAS(out, "input 0 (x) is missing: pass --input x=FILE.npy or --random-inputs");
  free(out);
  unlink(in);
}

Test(cli, run_mlp_random_inputs_with_dim) {
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=3 --stats --repeat 3",
                    EX("mlp.mlir")),
               0, "%s", out);
  HAS(out, "logits: f32 [3, 10] = [");
  HAS(out, "compile: ");
  HAS(out, "execute x3: median ");
  free(out);
}

Test(cli, run_same_seed_same_output) {
  char *a, *b, *c;
  cr_assert_eq(kiln(&a, "run '%s' --random-inputs --dim n=2 --seed 7", EX("split_concat.mlir")), 0);
  cr_assert_eq(kiln(&b, "run '%s' --random-inputs --dim n=2 --seed 7", EX("split_concat.mlir")), 0);
  cr_assert_eq(kiln(&c, "run '%s' --random-inputs --dim n=2 --seed 8", EX("split_concat.mlir")), 0);
  cr_assert_str_eq(a, b);
  cr_assert_str_neq(a, c);
  free(a);
  free(b);
  free(c);
}

Test(cli, run_unbound_symbol_suggests_dim) {
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs", EX("mlp.mlir")), 1, "%s", out);
  HAS(out, "symbolic dim 'batch' has no value");
  HAS(out, "pass --dim batch=VALUE");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim seq=3", EX("mlp.mlir")), 1, "%s", out);
  HAS(out, "no symbolic dim 'seq' (symbols: batch)");
  free(out);
}

Test(cli, run_with_safetensors_weights) {
  int64_t s1[] = {784, 512}, s2[] = {512}, s3[] = {512, 10}, s4[] = {10};
  kiln_tensor *w[4] = {kiln_tensor_new(KILN_FLOAT32, 2, s1, NULL),
                       kiln_tensor_new(KILN_FLOAT32, 1, s2, NULL),
                       kiln_tensor_new(KILN_FLOAT32, 2, s3, NULL),
                       kiln_tensor_new(KILN_FLOAT32, 1, s4, NULL)};
  for (int i = 0; i < 10; i++) ((float *)kiln_tensor_data(w[3]))[i] = (float)i; /* fc2.bias */
  const char *names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  char *path = tmp_path("mlp.safetensors");
  cr_assert_eq(rt_safetensors_write(path, names, (const kiln_tensor *const *)w, 4, NULL), 0);
  char *out;
  /* zero weights: the logits are exactly fc2.bias */
  cr_assert_eq(kiln(&out, "run '%s' --weights '%s' --random-inputs --dim batch=1",
                    EX("mlp.mlir"), path),
               0, "%s", out);
  HAS(out, "logits: f32 [1, 10] = [0, 1, 2, 3, 4, 5, 6, 7, ...");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --weights '%s' --random-inputs", EX("relu.mlir"), path),
               1, "%s", out);
  HAS(out, "tensor 'fc1.weight' is not a weight of the model (weights: none)");
  free(out);
  const char *two[] = {"fc1.weight", "fc1.bias"};
  cr_assert_eq(rt_safetensors_write(path, two, (const kiln_tensor *const *)w, 2, NULL), 0);
  cr_assert_eq(kiln(&out, "run '%s' --weights '%s' --dim batch=1", EX("mlp.mlir"), path), 1,
               "%s", out);
  HAS(out, "is missing: pass --input pixels=FILE.npy");
  free(out);
  unlink(path);
  for (int i = 0; i < 4; i++) kiln_tensor_free(w[i]);
}

Test(cli, run_missing_weights_and_bad_options) {
  char *in = tmp_path("px.npy");
  int64_t shape[] = {1, 784};
  float *v = calloc(784, sizeof *v);
  write_f32_npy(in, 2, shape, v);
  free(v);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --input pixels='%s'", EX("mlp.mlir"), in), 1, "%s", out);
  HAS(out, "weight 'fc1.weight' is not bound: pass --weights FILE.safetensors or --random-inputs");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --bogus", EX("mlp.mlir")), 2, "%s", out);
  HAS(out, "unknown option '--bogus'");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --repeat 0", EX("mlp.mlir")), 2, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --input x", EX("relu.mlir")), 2, "%s", out);
  HAS(out, "--input expects NAME=VALUE");
  free(out);
  unlink(in);
}

Test(cli, run_bad_npy_file_is_exit_1) {
  char *in = tmp_path("bad.npy");
  FILE *f = fopen(in, "wb");
  fputs("not numpy at all", f);
  fclose(f);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --input x='%s'", EX("relu.mlir"), in), 1, "%s", out);
  HAS(out, "not a .npy file");
  free(out);
  unlink(in);
}

/* Read DIR/logits.npy (f32) into a new tensor. */
static kiln_tensor *read_logits(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/logits.npy", dir);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_read(path, st);
  cr_assert(t, "%s", kiln_status_message(st));
  kiln_status_free(st);
  unlink(path);
  rmdir(dir);
  return t;
}

Test(cli, run_on_simt_emu_matches_the_cpu) {
  char *cpu = tmp_path("cpu"), *emu = tmp_path("emu"), *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=3 --seed 5 --threads 2 --stats "
                          "--out '%s'", EX("mlp.mlir"), cpu),
               0, "%s", out);
  HAS(out, "threads: 2\n");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=3 --seed 5 --device simt-emu "
                          "--stats --out '%s'", EX("mlp.mlir"), emu),
               0, "%s", out);
  HAS(out, "device: simt-emu (");
  HAS(out, "the executes ran there");
  free(out);
  kiln_tensor *a = read_logits(cpu), *b = read_logits(emu);
  cr_assert_eq(kiln_tensor_numel(a), 30);
  cr_assert_eq(kiln_tensor_numel(b), 30);
  const float *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
  for (int i = 0; i < 30; i++) /* sums of 784 and 512 products in another order */
    cr_assert(fabsf(x[i] - y[i]) <= 1e-3f * (1.0f + fabsf(x[i])), "logit %d: cpu %g, simt-emu %g",
              i, x[i], y[i]);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
}

/* examples/mlp_on_gpu.mlir: mlp.mlir with its values on gpu:0 and the
 * transfers in the graph; the same seeded weights give the same logits,
 * which come back to the host (they are typed cpu) to be written. */
Test(cli, run_placed_graph_on_simt_emu) {
  char *cpu = tmp_path("cpu2"), *emu = tmp_path("emu2"), *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=2 --seed 9 --out '%s'",
                    EX("mlp.mlir"), cpu),
               0, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=2 --seed 9 --device simt-emu "
                          "--out '%s'", KILN_SOURCE_DIR "/examples/mlp_on_gpu.mlir", emu),
               0, "%s", out);
  HAS(out, "logits: f32 [2, 10] = [");
  free(out);
  kiln_tensor *a = read_logits(cpu), *b = read_logits(emu);
  cr_assert_eq(kiln_tensor_numel(b), 20);
  const float *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
  for (int i = 0; i < 20; i++)
    cr_assert(fabsf(x[i] - y[i]) <= 1e-3f * (1.0f + fabsf(x[i])), "logit %d: cpu %g, simt-emu %g",
              i, x[i], y[i]);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  /* the CPU model refuses it */
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=2",
                    KILN_SOURCE_DIR "/examples/mlp_on_gpu.mlir"),
               1, "%s", out);
  HAS(out, "is on gpu:0: a CPU model (kiln_model_compile) runs graphs whose values are on the host");
  free(out);
  /* buckets and policies steer a device model's variants as a CPU model's:
   * batch 3 runs in the pow2 bucket 4's variant, compiled before the run */
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=3 --device simt-emu --bucket "
                          "batch=pow2 --specialize sync --stats",
                    KILN_SOURCE_DIR "/examples/mlp_on_gpu.mlir"),
               0, "%s", out);
  HAS(out, "1 specialized variant");
  HAS(out, "specialize: sync; 1 variant live");
  free(out);
}

Test(cli, run_device_and_threads_errors) {
  char *out;
  /* where there is a GPU this runs; where there is none the error says which part is missing */
  int rc = kiln(&out, "run '%s' --random-inputs --dim batch=2 --device cuda:0", EX("mlp.mlir"));
  if (rc != 0) {
    cr_assert_eq(rc, 1, "%s", out);
    HAS(out, "cuda:0: ");
  } else {
    HAS(out, "logits: f32 [2, 10] = [");
  }
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=2 --device tpu:0", EX("mlp.mlir")),
               1, "%s", out);
  HAS(out, "unknown device 'tpu:0'");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --threads -3", EX("mlp.mlir")), 2, "%s", out);
  HAS(out, "--threads expects 1 to 1024");
  free(out);
  cr_assert_eq(kiln(&out, "help"), 0, "%s", out);
  HAS(out, "compile GRAPH.mlir");
  HAS(out, "devices ");
  free(out);
}

/* A graph as MAX prints it (tests/max_text) runs as it is, with its weights. */
Test(cli, run_max_printed_graph_matches_max) {
  const char *mt = KILN_SOURCE_DIR "/tests/max_text";
  char *dir = tmp_path("maxout"), *out;
  cr_assert_eq(kiln(&out, "run '%s/mlp.mlir' --weights '%s/mlp/weights.safetensors' --input "
                          "input0='%s/mlp/input0.npy' --out '%s'",
                    mt, mt, mt, dir),
               0, "%s", out);
  HAS(out, "output0: f32 [5, 4] = ");
  free(out);
  char got_path[600], want_path[600];
  snprintf(got_path, sizeof got_path, "%s/output0.npy", dir);
  snprintf(want_path, sizeof want_path, "%s/mlp/output0.npy", mt);
  kiln_tensor *got = rt_npy_read(got_path, NULL), *want = rt_npy_read(want_path, NULL);
  cr_assert(got && want);
  cr_assert_eq(kiln_tensor_numel(got), kiln_tensor_numel(want));
  const float *g = kiln_tensor_data(got), *w = kiln_tensor_data(want);
  for (int64_t i = 0; i < kiln_tensor_numel(got); i++)
    cr_expect(fabsf(g[i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]), "[%lld] %g vs MAX's %g",
              (long long)i, g[i], w[i]);
  kiln_tensor_free(got);
  kiln_tensor_free(want);
  unlink(got_path);
  snprintf(got_path, sizeof got_path, "%s/output1.npy", dir);
  unlink(got_path);
  rmdir(dir);
}

Test(cli, check_unsupported_max_op_is_file_line_col_and_exit_1) {
  char *path = tmp_path("max_bad.mlir"), *out;
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("mo.graph @g(%arg0: !mo.tensor<[4], f32>) -> !mo.tensor<[4], f32> {\n"
        "  %0 = mo.chain.create()\n"
        "  %1 = rmo.mo.frob(%arg0) : (!mo.tensor<[4], f32>) -> !mo.tensor<[4], f32>\n"
        "  mo.output %1 : !mo.tensor<[4], f32>\n}\n",
        f);
  fclose(f);
  cr_assert_eq(kiln(&out, "check '%s'", path), 1, "%s", out);
  HAS(out, "max_bad.mlir:3:8: unsupported MAX op 'rmo.mo.frob'");
  free(out);
  unlink(path);
}

/* --weights takes a GGUF file (told by its magic): its block tensors bind
 * to ui8 weights read by mo.qmatmul; tensors the graph does not name are
 * skipped (a GGUF holds a whole model); a corrupt file is named. */
Test(cli, run_with_gguf_weights) {
  char *g = tmp_path("q.mlir");
  FILE *fp = fopen(g, "w");
  cr_assert(fp);
  fputs("mo.graph @q(%x: !mo.tensor<[1, 64], f32>) -> (!mo.tensor<[1, 6], f32>) {\n"
        "  %w = mo.constant.external {name = \"blk.q4_0\"} : !mo.tensor<[6, 36], ui8>\n"
        "  %y = mo.qmatmul(%x, %w) {encoding = \"q4_0\"} : (!mo.tensor<[1, 64], f32>, "
        "!mo.tensor<[6, 36], ui8>) -> !mo.tensor<[1, 6], f32>\n"
        "  mo.output %y : !mo.tensor<[1, 6], f32>\n}\n",
        fp);
  cr_assert_eq(fclose(fp), 0);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --weights '%s' --random-inputs", g,
                    KILN_SOURCE_DIR "/tests/gguf/small.gguf"),
               0, "%s", out);
  HAS(out, "y: f32 [1, 6] = [");
  free(out);
  char *bad = tmp_path("bad.gguf");
  fp = fopen(bad, "w");
  cr_assert(fp);
  fputs("GGUF\x01", fp); /* version 1, truncated */
  cr_assert_eq(fclose(fp), 0);
  cr_assert_eq(kiln(&out, "run '%s' --weights '%s' --random-inputs", g, bad), 1, "%s", out);
  HAS(out, "bad.gguf: malformed GGUF file: truncated header");
  free(out);
  unlink(bad);
  unlink(g);
}
