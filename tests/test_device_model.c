/* test_device_model.c - graphs on simt-emu (kiln_device_model_*) against
 * the CPU path (kiln_model_execute) on the same random inputs and weights:
 * mlp.mlir at two batch sizes with one compile, attention_block.mlir; then
 * the errors: an unbound weight, a gather index out of range (the kernel's
 * error word names the op; in a replay of a recorded capture, the failure
 * is reported for the sequence), a wrong input rank, and the cpu device,
 * which is not a SIMT device; the code cache: a second compile with the
 * same context's disk cache loads every kernel from it, with the same
 * results; every execute sees its own input bytes, whole. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "src/device.h"
#include "src/rt.h"
#include "support/under_test.h"

#define EX KILN_SHARED_DIR "/ir-examples/"

/* simt-emu, or the GPU KILN_TEST_DEVICE names (tools/gpu_check.sh). */
static const char *device_spec(void) {
  return under_test_device() ? under_test_device() : "simt-emu";
}

static uint64_t rng = 12345;
static float frand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

static kiln_tensor *random_f32(int rank, const int64_t *shape) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  cr_assert_not_null(t);
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) p[i] = frand() * 0.5f;
  return t;
}

/* Compile path on the CPU and on simt-emu; bind the same random weights. */
typedef struct pair {
  kiln_context *ctx;
  kiln_graph *g;
  kiln_model *cpu;
  kiln_device *dev;
  kiln_device_model *emu;
  kiln_tensor *w[16];
  int nw;
  kiln_status *st;
} pair;

static void open_pair(pair *p, const char *path) {
  memset(p, 0, sizeof *p);
  p->st = kiln_status_new();
  p->ctx = kiln_context_new(p->st);
  cr_assert_not_null(p->ctx, "%s", kiln_status_message(p->st));
  p->g = kiln_graph_load(path, p->st);
  cr_assert_not_null(p->g, "%s", kiln_status_message(p->st));
  p->cpu = kiln_model_compile(p->ctx, p->g, p->st);
  cr_assert_not_null(p->cpu, "%s", kiln_status_message(p->st));
  p->dev = kiln_device_open(device_spec(), p->st);
  cr_assert_not_null(p->dev);
  p->emu = kiln_device_model_compile(p->dev, p->g, p->st);
  cr_assert_not_null(p->emu, "%s", kiln_status_message(p->st));
  p->nw = kiln_model_num_weights(p->cpu);
  for (int i = 0; i < p->nw; i++) {
    int64_t shape[8];
    int r = kiln_model_weight_rank(p->cpu, i);
    for (int a = 0; a < r; a++) shape[a] = atoll(kiln_model_weight_dim(p->cpu, i, a));
    p->w[i] = random_f32(r, shape);
    const char *name = kiln_model_weight_name(p->cpu, i);
    cr_assert_eq(kiln_model_bind_weight(p->cpu, name, p->w[i], p->st), 0);
    cr_assert_eq(kiln_device_model_bind_weight(p->emu, name, p->w[i], p->st), 0, "%s",
                 kiln_status_message(p->st));
  }
}

static void close_pair(pair *p) {
  kiln_device_model_free(p->emu);
  kiln_device_close(p->dev);
  kiln_model_free(p->cpu);
  for (int i = 0; i < p->nw; i++) kiln_tensor_free(p->w[i]);
  kiln_graph_free(p->g);
  kiln_context_free(p->ctx);
  kiln_status_free(p->st);
}

/* Every input gets shape `shape` (the examples' inputs share one shape). */
static void compare_run(pair *p, int rank, const int64_t *shape) {
  int ni = kiln_model_num_inputs(p->cpu);
  cr_assert(ni >= 1 && ni <= 4);
  kiln_tensor *x[4];
  for (int i = 0; i < ni; i++) x[i] = random_f32(rank, shape);
  kiln_tensor *a[4] = {0}, *b[4] = {0};
  int no = kiln_model_num_outputs(p->cpu);
  cr_assert(no >= 1 && no <= 4);
  cr_assert_eq(kiln_model_execute(p->cpu, x, ni, a, no, p->st), 0, "%s",
               kiln_status_message(p->st));
  cr_assert_eq(kiln_device_model_execute(p->emu, x, ni, b, no, p->st), 0, "%s",
               kiln_status_message(p->st));
  for (int o = 0; o < no; o++) {
    cr_assert_eq(kiln_tensor_numel(a[o]), kiln_tensor_numel(b[o]));
    const float *pa = kiln_tensor_data(a[o]), *pb = kiln_tensor_data(b[o]);
    int bad = 0;
    for (int64_t i = 0; i < kiln_tensor_numel(a[o]) && bad < 5; i++)
      if (!(fabsf(pa[i] - pb[i]) <= 1e-4f * (1 + fabsf(pa[i])))) {
        bad++;
        cr_expect_fail("output %d element %lld: cpu %.9g, simt-emu %.9g", o, (long long)i, pa[i],
                       pb[i]);
      }
    kiln_tensor_free(a[o]);
    kiln_tensor_free(b[o]);
  }
  for (int i = 0; i < ni; i++) kiln_tensor_free(x[i]);
}

Test(device_model, mlp_two_batches_one_compile) {
  pair p;
  open_pair(&p, EX "mlp.mlir");
  cr_expect(kiln_device_model_compile_ms(p.emu) > 0);
  int64_t s1[2] = {3, 784}, s2[2] = {17, 784};
  compare_run(&p, 2, s1);
  compare_run(&p, 2, s2);
  close_pair(&p);
}

Test(device_model, attention_block) {
  pair p;
  open_pair(&p, EX "attention_block.mlir");
  int64_t shape[8];
  int r = kiln_model_input_rank(p.cpu, 0);
  for (int a = 0; a < r; a++) {
    int64_t v = kiln_model_input_dim_static(p.cpu, 0, a);
    shape[a] = v >= 0 ? v : 5; /* symbolic dims: 5 */
  }
  compare_run(&p, r, shape);
  close_pair(&p);
}

Test(device_model, errors_say_what) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_load(EX "mlp.mlir", st);
  cr_assert_not_null(g);
  kiln_device *cpu = kiln_device_open("cpu", st);
  cr_expect_null(kiln_device_model_compile(cpu, g, st));
  cr_expect_eq(kiln_status_code(st), KILN_ERR_UNSUPPORTED);
  kiln_device_close(cpu);
  kiln_device *dev = kiln_device_open(device_spec(), st);
  kiln_device_model *m = kiln_device_model_compile(dev, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t shape[2] = {2, 784};
  kiln_tensor *x = random_f32(2, shape), *y = NULL;
  cr_expect_eq(kiln_device_model_execute(m, &x, 1, &y, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st), "weight 'fc1.weight' is not bound"), "%s",
            kiln_status_message(st));
  cr_expect_null(y);
  int64_t wrong[1] = {784};
  kiln_tensor *w = random_f32(1, wrong);
  cr_expect_eq(kiln_device_model_bind_weight(m, "fc1.weight", w, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_SHAPE);
  cr_expect_eq(kiln_device_model_bind_weight(m, "nope", w, st), -1);
  cr_expect(strstr(kiln_status_message(st), "model has no weight 'nope' (weights: "), "%s",
            kiln_status_message(st));
  cr_expect_eq(kiln_device_model_execute(m, &w, 1, &y, 1, st), -1); /* rank 1 for rank 2 */
  cr_expect_eq(kiln_status_code(st), KILN_ERR_SHAPE);
  kiln_tensor_free(w);
  kiln_tensor_free(x);
  kiln_device_model_free(m);
  kiln_graph_free(g);

  const char *text =
      "mo.graph @g(%x: !mo.tensor<[6], f32>, %i: !mo.tensor<[2], si64>) -> (!mo.tensor<[2], f32>) {\n"
      "  %0 = mo.gather(%x, %i) {axis = 0} : (!mo.tensor<[6], f32>, !mo.tensor<[2], si64>) -> "
      "!mo.tensor<[2], f32>\n"
      "  mo.output %0 : !mo.tensor<[2], f32>\n}\n";
  g = kiln_graph_parse(text, strlen(text), "gather.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  m = kiln_device_model_compile(dev, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t s6[1] = {6}, s2[1] = {2};
  kiln_tensor *xs = random_f32(1, s6);
  kiln_tensor *idx = kiln_tensor_new(KILN_INT64, 1, s2, st);
  int64_t *ip = kiln_tensor_data(idx);
  ip[0] = -6;
  ip[1] = 5;
  kiln_tensor *ins[2] = {xs, idx};
  y = NULL;
  cr_expect_eq(kiln_device_model_execute(m, ins, 2, &y, 1, st), 0, "%s", kiln_status_message(st));
  const float *px = kiln_tensor_data(xs), *py = kiln_tensor_data(y);
  cr_expect(py[0] == px[0] && py[1] == px[5]);
  kiln_tensor_free(y);
  y = NULL;
  ip[1] = 6; /* out of range */
  cr_expect_eq(kiln_device_model_execute(m, ins, 2, &y, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st), "mo.gather at line 2") &&
                strstr(kiln_status_message(st), "index out of range"),
            "%s", kiln_status_message(st));
  /* a capture records its launches (simt-emu: a list, cuda: a CUDA graph):
   * replays run them in one call and read the error words once, which still
   * name the op that failed */
  ip[1] = 3;
  cr_assert_eq(kiln_device_model_capture(m, 1, ins, 2, &y, 1, st), 0, "%s",
               kiln_status_message(st));
  ip[0] = 1;
  ip[1] = 4;
  cr_assert_eq(kiln_device_model_replay(m, 1, ins, 2, &y, 1, st), 0, "%s",
               kiln_status_message(st));
  py = kiln_tensor_data(y);
  cr_expect(py[0] == px[1] && py[1] == px[4], "replay read the new indices");
  ip[1] = 7;
  cr_expect_eq(kiln_device_model_replay(m, 1, ins, 2, &y, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st), "mo.gather at line 2") &&
                strstr(kiln_status_message(st), "index out of range"),
            "%s", kiln_status_message(st));
  kiln_tensor_free(y);
  kiln_tensor_free(xs);
  kiln_tensor_free(idx);
  kiln_device_model_free(m);
  kiln_graph_free(g);
  kiln_device_close(dev);
  kiln_status_free(st);
}

Test(device_model, capture_replay_verify) {
  pair p;
  open_pair(&p, EX "mlp.mlir");
  int64_t shape[2] = {4, 784}, other[2] = {5, 784};
  kiln_tensor *x = random_f32(2, shape), *y = NULL, *z = NULL, *want = NULL;
  cr_assert_eq(kiln_device_model_capture(p.emu, 7, &x, 1, &y, 1, p.st), 0, "%s",
               kiln_status_message(p.st));
  cr_expect_eq(kiln_device_model_capture(p.emu, 7, &x, 1, &y, 1, p.st), -1);
  cr_expect(strstr(kiln_status_message(p.st), "already captured"));
  /* new data, same shape: replay equals an eager run */
  float *px = kiln_tensor_data(x);
  for (int64_t i = 0; i < kiln_tensor_numel(x); i++) px[i] = frand();
  cr_assert_eq(kiln_device_model_replay(p.emu, 7, &x, 1, &z, 1, p.st), 0, "%s",
               kiln_status_message(p.st));
  cr_assert_eq(kiln_model_execute(p.cpu, &x, 1, &want, 1, p.st), 0);
  const float *pz = kiln_tensor_data(z), *pw = kiln_tensor_data(want);
  for (int64_t i = 0; i < kiln_tensor_numel(want); i++)
    cr_expect(fabsf(pz[i] - pw[i]) <= 1e-4f * (1 + fabsf(pw[i])), "element %lld", (long long)i);
  cr_expect_eq(kiln_device_model_verify_replay(p.emu, 7, &x, 1, p.st), 0, "%s",
               kiln_status_message(p.st));
  /* another shape: replay refuses, verify refuses */
  kiln_tensor *x5 = random_f32(2, other), *y5 = NULL;
  cr_expect_eq(kiln_device_model_replay(p.emu, 7, &x5, 1, &y5, 1, p.st), -1);
  cr_expect(strstr(kiln_status_message(p.st), "captured dtype and shape"), "%s",
            kiln_status_message(p.st));
  cr_expect_eq(kiln_device_model_verify_replay(p.emu, 7, &x5, 1, p.st), -1);
  cr_expect_eq(kiln_device_model_replay(p.emu, 8, &x, 1, &y5, 1, p.st), -1);
  cr_expect(strstr(kiln_status_message(p.st), "no capture under key 8"));
  cr_expect_eq(kiln_device_model_release(p.emu, 7, p.st), 0);
  cr_expect_eq(kiln_device_model_release(p.emu, 7, p.st), -1);
  /* a capture left for kiln_device_model_free to release */
  cr_expect_eq(kiln_device_model_capture(p.emu, 9, &x5, 1, &y5, 1, p.st), 0);
  kiln_tensor_free(x);
  kiln_tensor_free(x5);
  kiln_tensor_free(y);
  kiln_tensor_free(y5);
  kiln_tensor_free(z);
  kiln_tensor_free(want);
  close_pair(&p);
}

/* ---- the device code cache ---- */

/* g compiled on dev with a fresh context whose disk cache is dir; the
 * kernels it loaded from the cache and compiled. */
static kiln_device_model *compile_cached(kiln_device *dev, const kiln_graph *g, const char *dir,
                                         kiln_context **ctx, int *hits, int *misses,
                                         kiln_status *st) {
  *ctx = kiln_context_new(st);
  cr_assert_not_null(*ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_cache_dir(*ctx, dir, 0, st), 0, "%s", kiln_status_message(st));
  kiln_device_model *m = kiln_device_model_compile_with(*ctx, dev, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  rt_device_model_cache_counts(m, hits, misses);
  return m;
}

static void remove_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* compile_with twice on one cache directory: every kernel compiled and
 * stored, then every kernel from the store (a fresh context: nothing in
 * memory), the outputs bit for bit the same. */
Test(device_model, code_cache_second_compile_loads_every_kernel) {
  char dir[] = "/tmp/kiln-dm-cache-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_load(EX "attention_block.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *dev = kiln_device_open(device_spec(), st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  int64_t shape[3] = {2, 16, 64};
  kiln_tensor *q = random_f32(3, shape), *k = random_f32(3, shape);
  int64_t wshape[1] = {64};
  kiln_tensor *gamma = random_f32(1, wshape), *beta = random_f32(1, wshape);
  float *first[2] = {NULL, NULL};
  size_t bytes[2] = {0, 0};
  for (int round = 0; round < 2; round++) {
    kiln_context *ctx = NULL;
    int hits = -1, misses = -1;
    kiln_device_model *m = compile_cached(dev, g, dir, &ctx, &hits, &misses, st);
    if (round == 0) cr_expect(hits == 0 && misses > 0, "first: %d hits, %d misses", hits, misses);
    else cr_expect(hits > 0 && misses == 0, "second: %d hits, %d misses", hits, misses);
    cr_assert_eq(kiln_device_model_bind_weight(m, "ln.gamma", gamma, st), 0, "%s",
                 kiln_status_message(st));
    cr_assert_eq(kiln_device_model_bind_weight(m, "ln.beta", beta, st), 0, "%s",
                 kiln_status_message(st));
    kiln_tensor *ins[2] = {q, k}, *outs[2] = {NULL, NULL};
    cr_assert_eq(kiln_device_model_execute(m, ins, 2, outs, 2, st), 0, "%s",
                 kiln_status_message(st));
    for (int o = 0; o < 2; o++) {
      size_t n = kiln_tensor_nbytes(outs[o]);
      if (round == 0) {
        first[o] = malloc(n);
        memcpy(first[o], kiln_tensor_data(outs[o]), n);
        bytes[o] = n;
      } else {
        cr_expect(n == bytes[o] && memcmp(first[o], kiln_tensor_data(outs[o]), n) == 0,
                  "output %d differs after loading the cached code", o);
      }
      kiln_tensor_free(outs[o]);
    }
    kiln_device_model_free(m);
    kiln_context_free(ctx);
  }
  for (int o = 0; o < 2; o++) free(first[o]);
  kiln_tensor_free(q);
  kiln_tensor_free(k);
  kiln_tensor_free(gamma);
  kiln_tensor_free(beta);
  kiln_device_close(dev);
  kiln_graph_free(g);
  kiln_status_free(st);
  remove_dir(dir);
}

/* Two nodes with the same kernel text (relu of relu, both outputs so they
 * do not fuse): each keeps its own code in the cache (the code defines a
 * name holding the node's index), so the first compile stores two entries
 * and the second loads both. */
Test(device_model, code_cache_same_kernel_twice_in_a_graph) {
  char dir[] = "/tmp/kiln-dm-cache2-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  static const char text[] =
      "mo.graph @rr(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>, !mo.tensor<[5], f32>) {\n"
      "  %a = mo.relu(%x) : !mo.tensor<[5], f32>\n"
      "  %b = mo.relu(%a) : !mo.tensor<[5], f32>\n"
      "  mo.output %b, %a : !mo.tensor<[5], f32>, !mo.tensor<[5], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "rr", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *dev = kiln_device_open(device_spec(), st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  int64_t shape[1] = {5};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, shape, st);
  float *xp = kiln_tensor_data(x);
  for (int i = 0; i < 5; i++) xp[i] = (float)i - 2.0f;
  for (int round = 0; round < 2; round++) {
    kiln_context *ctx = NULL;
    int hits = -1, misses = -1;
    kiln_device_model *m = compile_cached(dev, g, dir, &ctx, &hits, &misses, st);
    cr_expect_eq(hits, round == 0 ? 0 : 2, "round %d: %d hits", round, hits);
    cr_expect_eq(misses, round == 0 ? 2 : 0, "round %d: %d misses", round, misses);
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(kiln_device_model_execute(m, &x, 1, out, 2, st), 0, "%s",
                 kiln_status_message(st));
    const float *op = kiln_tensor_data(out[0]);
    for (int i = 0; i < 5; i++) cr_expect_eq(op[i], xp[i] > 0 ? xp[i] : 0.0f, "y[%d]", i);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
    kiln_device_model_free(m);
    kiln_context_free(ctx);
  }
  kiln_tensor_free(x);
  kiln_device_close(dev);
  kiln_graph_free(g);
  kiln_status_free(st);
  remove_dir(dir);
}

/* A reshape of a constant (and of a weight) aliases the source's device
 * buffer: the plan gives the sources their buffers before it places the
 * aliases (found by tests/test_graph_fuzz.c: the alias read address 0). */
Test(device_model, reshaped_constant_and_weight) {
  static const char text[] =
      "mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
      "  %c = mo.constant {value = #M.dense_array<1.5> : tensor<f32>} : !mo.tensor<[], f32>\n"
      "  %r = mo.reshape(%c) : (!mo.tensor<[], f32>) -> !mo.tensor<[1], f32>\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[1, 2], f32>\n"
      "  %f = mo.reshape(%w) : (!mo.tensor<[1, 2], f32>) -> !mo.tensor<[2], f32>\n"
      "  %a = mo.min(%x, %r) : (!mo.tensor<[2], f32>, !mo.tensor<[1], f32>)"
      " -> !mo.tensor<[2], f32>\n"
      "  %y = mo.add(%a, %f) : !mo.tensor<[2], f32>\n"
      "  mo.output %y : !mo.tensor<[2], f32>\n"
      "}\n";
  under_test_simt u;
  cr_assert_eq(under_test_simt_open(&u, text), 0, "%s", kiln_status_message(u.st));
  kiln_device_model *m = u.m;
  kiln_status *st = u.st;
  int64_t ws[2] = {1, 2}, xs[1] = {2};
  kiln_tensor *w = kiln_tensor_new(KILN_FLOAT32, 2, ws, st);
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, xs, st);
  ((float *)kiln_tensor_data(w))[0] = 10, ((float *)kiln_tensor_data(w))[1] = 20;
  ((float *)kiln_tensor_data(x))[0] = 1, ((float *)kiln_tensor_data(x))[1] = 2;
  cr_assert_eq(kiln_device_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_device_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  const float *p = kiln_tensor_data(y);
  cr_expect(p[0] == 11.0f && p[1] == 21.5f, "got %g %g, want 11 21.5", p[0], p[1]);
  kiln_tensor_free(y);
  kiln_tensor_free(x);
  kiln_tensor_free(w);
  under_test_simt_close(&u);
}

/* Each execute's kernels see that execute's input bytes, whole: a large
 * pageable input whose values change from run to run (on CUDA a copy not
 * ordered on kiln's stream let a kernel read part of the last run's). */
Test(device_model, every_execute_sees_its_own_inputs) {
  static const char text[] =
      "mo.graph @g<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
      "  %y = mo.add(%x, %x) : !mo.tensor<[n], f32>\n"
      "  mo.output %y : !mo.tensor<[n], f32>\n"
      "}\n";
  under_test_simt u;
  cr_assert_eq(under_test_simt_open(&u, text), 0, "%s", kiln_status_message(u.st));
  kiln_device_model *m = u.m;
  kiln_status *st = u.st;
  for (int run = 0; run < 8; run++) {
    int64_t n = (1 << 22) - (run >= 4); /* a new plan halfway */
    kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, &n, st);
    cr_assert_not_null(x);
    float *px = kiln_tensor_data(x);
    for (int64_t i = 0; i < n; i++) px[i] = (float)(run * 1000 + i % 1000);
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_device_model_execute(m, &x, 1, &y, 1, st), 0, "%s",
                 kiln_status_message(st));
    const float *py = kiln_tensor_data(y);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
      if (py[i] != 2 * px[i]) bad++, first = first < 0 ? i : first;
    cr_expect_eq(bad, 0, "run %d: %lld of %lld elements wrong, the first at %lld (%g, want %g)",
                 run, (long long)bad, (long long)n, (long long)first,
                 first >= 0 ? py[first] : 0.0, first >= 0 ? 2 * px[first] : 0.0);
    kiln_tensor_free(y);
    kiln_tensor_free(x);
  }
  under_test_simt_close(&u);
}
