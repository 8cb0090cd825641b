/* test_prepack.c - matmuls whose B is a weight or a constant read a copy
 * packed once (src/prepack.c, the template's _pex entry): JIT vs the
 * reference interpreter on MLP-like graphs with bound weights, symbolic
 * batch 1, 3, 17, 64, 100 (the small-M path below 4 rows, the packed path
 * above, one or two wide blocks), with and without fusion (KILN_FUSE=0),
 * one and two threads, odd K / N (37 x 117, 117 x 19: panels not a multiple of the vector
 * width), rebinding (new values seen; edits of the bound memory are not seen
 * until the weight is bound again, as runtime.h says), a weight read by two
 * matmuls, a weight also read by a non-matmul op and as a matmul's A,
 * mo.constant B, f64, a batched A, shape-specialized variants, results equal
 * bit for bit to the same graph with B as an input (not prepacked), and a
 * graph that carries the runtime's kiln.packed_b itself (refused at parse).
 * conv2d: a one-group filter that is a weight or a mo.constant is packed
 * too (the plain 1x1 GEMM, im2col with padding, stride, dilation, odd C and
 * F, F > 256, several pixel blocks; the plain 1x1's blocks of whole tiles
 * with a ragged last one, C = 1024, K not a multiple of its block, two
 * column blocks; f32 and f64; 1 and 2 threads; the bits of the filter
 * given as an input; a rebind seen); two groups are not.
 * Each test checks that prepacking did happen (rt_model_prepack_sources),
 * so a change that silently stops packing fails here. Outputs are written
 * into NaN-filled caller tensors. Tolerance: inputs in [-1, 1], weights in
 * [-0.25, 0.25]: atol 1e-4 + rtol 1e-4 against the interpreter's double
 * sums (about 50x the f32 rounding of a K = 784 dot product). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/prepack.h"
#include "src/rt.h"
#include "support/oracle.h"

#define MAXW 8

typedef struct weights {
  int n;
  char *name[MAXW];
  kiln_tensor *kt[MAXW];
  ir_tensor it[MAXW];
} weights;

static const ir_tensor *weight_cb(void *ud, const char *name) {
  weights *w = ud;
  for (int i = 0; i < w->n; i++)
    if (strcmp(w->name[i], name) == 0) return &w->it[i];
  return NULL;
}

typedef struct fx {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *kg;
  kiln_model *m;
  ir_graph *g; /* the oracle's */
  weights w;
} fx;

static void fx_open(fx *f, const char *text, int threads, kiln_specialize_policy pol) {
  setenv("KILN_CACHE", "off", 1);
  memset(f, 0, sizeof *f);
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert_not_null(f->ctx, "%s", kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_num_threads(f->ctx, threads, f->st), 0);
  cr_assert_eq(kiln_context_set_specialize(f->ctx, pol, f->st), 0);
  f->kg = kiln_graph_parse(text, strlen(text), "prepack", f->st);
  cr_assert_not_null(f->kg, "%s", kiln_status_message(f->st));
  f->m = kiln_model_compile(f->ctx, f->kg, f->st);
  cr_assert_not_null(f->m, "%s", kiln_status_message(f->st));
  ir_diag d = {0};
  f->g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(f->g, "%s", d.msg);
}

/* Bind every weight to seeded values in [-0.25, 0.25] (seed + index). */
static void fx_bind_all(fx *f, unsigned seed) {
  oracle_gen gen = gen_uniform(-0.25, 0.25);
  int nw = kiln_model_num_weights(f->m);
  cr_assert(nw <= MAXW);
  for (int i = 0; i < nw; i++) {
    int rank = kiln_model_weight_rank(f->m, i);
    int64_t shape[IR_MAX_RANK];
    for (int a = 0; a < rank; a++) shape[a] = atoll(kiln_model_weight_dim(f->m, i, a));
    kiln_dtype dt = kiln_model_weight_dtype(f->m, i);
    kiln_tensor *t = kiln_tensor_new(dt, rank, shape, f->st);
    cr_assert_not_null(t);
    oracle_fill(kiln_tensor_data(t), dt, kiln_tensor_numel(t), &gen, seed + (unsigned)i);
    const char *name = kiln_model_weight_name(f->m, i);
    cr_assert_eq(kiln_model_bind_weight(f->m, name, t, f->st), 0, "%s",
                 kiln_status_message(f->st));
    if (i < f->w.n) { /* a rebind: the model no longer borrows the old tensor */
      kiln_tensor_free(f->w.kt[i]);
      free(f->w.name[i]);
    }
    f->w.name[i] = strdup(name);
    f->w.kt[i] = t;
    f->w.it[i] = (ir_tensor){.dtype = (ir_dtype)dt, .rank = rank, .data = kiln_tensor_data(t)};
    memcpy(f->w.it[i].shape, shape, sizeof(int64_t) * (size_t)rank);
  }
  f->w.n = nw;
}

static void fx_close(fx *f) {
  kiln_model_free(f->m);
  for (int i = 0; i < f->w.n; i++) {
    kiln_tensor_free(f->w.kt[i]);
    free(f->w.name[i]);
  }
  ir_graph_free(f->g);
  kiln_graph_free(f->kg);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

/* The model's input i shape with every symbolic dim = batch. */
static int input_shape(const kiln_model *m, int i, int64_t batch, int64_t *shape) {
  int rank = kiln_model_input_rank(m, i);
  for (int a = 0; a < rank; a++) {
    int64_t s = kiln_model_input_dim_static(m, i, a);
    shape[a] = s >= 0 ? s : batch;
  }
  return rank;
}

/* Run the model and the interpreter on seeded inputs for `batch`; outputs
 * into NaN-filled tensors; compare (rtol = atol = tol; 0: bit for bit).
 * When keep is not NULL, output 0's data is copied there (numel floats
 * or doubles, the caller's buffer). */
static void fx_check(fx *f, int64_t batch, unsigned seed, double tol, void *keep) {
  int ni = kiln_model_num_inputs(f->m), no = kiln_model_num_outputs(f->m);
  kiln_tensor *in[4] = {0}, *out[4] = {0};
  ir_tensor iin[4], iout[4];
  cr_assert(ni <= 4 && no <= 4);
  oracle_gen gen = gen_uniform(-1, 1);
  for (int i = 0; i < ni; i++) {
    int64_t shape[IR_MAX_RANK];
    int rank = input_shape(f->m, i, batch, shape);
    kiln_dtype dt = kiln_model_input_dtype(f->m, i);
    in[i] = kiln_tensor_new(dt, rank, shape, f->st);
    cr_assert_not_null(in[i]);
    oracle_fill(kiln_tensor_data(in[i]), dt, kiln_tensor_numel(in[i]), &gen, seed + 100u * (unsigned)i);
    iin[i] = (ir_tensor){.dtype = (ir_dtype)dt, .rank = rank, .data = kiln_tensor_data(in[i])};
    memcpy(iin[i].shape, shape, sizeof(int64_t) * (size_t)rank);
  }
  char msg[512] = "";
  cr_assert_eq(ir_interp_run(f->g, iin, weight_cb, &f->w, iout, msg, sizeof msg), 0, "%s", msg);
  for (int o = 0; o < no; o++) {
    out[o] = kiln_tensor_new((kiln_dtype)iout[o].dtype, iout[o].rank, iout[o].shape, f->st);
    cr_assert_not_null(out[o]);
    memset(kiln_tensor_data(out[o]), 0xff, kiln_tensor_nbytes(out[o]));
  }
  cr_assert_eq(kiln_model_execute(f->m, in, ni, out, no, f->st), 0, "batch %lld: %s",
               (long long)batch, kiln_status_message(f->st));
  for (int o = 0; o < no; o++) {
    oracle_report *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    char what[64];
    snprintf(what, sizeof what, "batch %lld, output %d", (long long)batch, o);
    int rc = oracle_compare(r, what, (kiln_dtype)iout[o].dtype, iout[o].rank, iout[o].shape,
                            kiln_tensor_data(out[o]), iout[o].data, tol, tol);
    cr_expect_eq(rc, 0, "%s", r->msg);
    free(r);
    if (o == 0 && keep) memcpy(keep, kiln_tensor_data(out[o]), kiln_tensor_nbytes(out[o]));
    free(iout[o].data);
    kiln_tensor_free(out[o]);
  }
  for (int i = 0; i < ni; i++) kiln_tensor_free(in[i]);
}

static const int64_t BATCHES[] = {1, 3, 17, 64, 100};
#define NBATCHES (int)(sizeof BATCHES / sizeof BATCHES[0])

/* examples/mlp.mlir's shape: 784 -> 512 (relu) -> 10 */
static const char *MLP =
    "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 784], f32>) -> (!mo.tensor<[batch, 10], f32>) {\n"
    "  %w1 = mo.constant.external {name = \"fc1.weight\"} : !mo.tensor<[784, 512], f32>\n"
    "  %b1 = mo.constant.external {name = \"fc1.bias\"} : !mo.tensor<[512], f32>\n"
    "  %w2 = mo.constant.external {name = \"fc2.weight\"} : !mo.tensor<[512, 10], f32>\n"
    "  %b2 = mo.constant.external {name = \"fc2.bias\"} : !mo.tensor<[10], f32>\n"
    "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 784], f32>, !mo.tensor<[784, 512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
    "  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
    "  %2 = mo.relu(%1) : !mo.tensor<[batch, 512], f32>\n"
    "  %3 = mo.matmul(%2, %w2) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512, 10], f32>) -> !mo.tensor<[batch, 10], f32>\n"
    "  %4 = mo.add(%3, %b2) : (!mo.tensor<[batch, 10], f32>, !mo.tensor<[10], f32>) -> !mo.tensor<[batch, 10], f32>\n"
    "  mo.output %4 : !mo.tensor<[batch, 10], f32>\n"
    "}\n";

/* odd sizes: K = 37, N = 117 and 19 (no multiple of 8, 16 or 32; 117 ends in a
 * partial fourth panel of a group of four, for the small-M path) */
static const char *ODD =
    "mo.graph @odd<batch>(%x: !mo.tensor<[batch, 37], f32>) -> (!mo.tensor<[batch, 19], f32>) {\n"
    "  %w1 = mo.constant.external {name = \"w1\"} : !mo.tensor<[37, 117], f32>\n"
    "  %b1 = mo.constant.external {name = \"b1\"} : !mo.tensor<[117], f32>\n"
    "  %w2 = mo.constant.external {name = \"w2\"} : !mo.tensor<[117, 19], f32>\n"
    "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 37], f32>, !mo.tensor<[37, 117], f32>) -> !mo.tensor<[batch, 117], f32>\n"
    "  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 117], f32>, !mo.tensor<[117], f32>) -> !mo.tensor<[batch, 117], f32>\n"
    "  %2 = mo.relu(%1) : !mo.tensor<[batch, 117], f32>\n"
    "  %3 = mo.matmul(%2, %w2) : (!mo.tensor<[batch, 117], f32>, !mo.tensor<[117, 19], f32>) -> !mo.tensor<[batch, 19], f32>\n"
    "  mo.output %3 : !mo.tensor<[batch, 19], f32>\n"
    "}\n";

static void check_graph(const char *text, int threads, int sources, const int64_t *batches,
                        int nb) {
  fx f;
  fx_open(&f, text, threads, KILN_SPECIALIZE_OFF);
  cr_assert_eq(rt_model_prepack_sources(f.m), sources);
  cr_assert_eq(rt_model_prepack_bytes(f.m), 0); /* weights: nothing packed before binding */
  fx_bind_all(&f, 7);
  cr_assert_gt(rt_model_prepack_bytes(f.m), 0);
  for (int i = 0; i < nb; i++) fx_check(&f, batches[i], 11 + (unsigned)i, 1e-4, NULL);
  fx_close(&f);
}

Test(prepack, mlp_fused_batches) { check_graph(MLP, 1, 2, BATCHES, NBATCHES); }

Test(prepack, mlp_unfused_batches) {
  setenv("KILN_FUSE", "0", 1);
  check_graph(MLP, 1, 2, BATCHES, NBATCHES);
}

Test(prepack, mlp_two_threads) {
  check_graph(MLP, 2, 2, BATCHES, NBATCHES);
  setenv("KILN_FUSE", "0", 1);
  check_graph(MLP, 2, 2, BATCHES, NBATCHES);
}

Test(prepack, odd_k_n) {
  static const int64_t b[] = {1, 2, 3, 4, 5, 7, 17, 64, 100, 257};
  check_graph(ODD, 1, 2, b, 10);
  check_graph(ODD, 2, 2, b, 10);
  setenv("KILN_FUSE", "0", 1);
  check_graph(ODD, 1, 2, b, 10);
}

/* The packed copy is 4 bytes * ceil(N / NR) * NR * K per weight. */
Test(prepack, memory_kept) {
  fx f;
  fx_open(&f, MLP, 1, KILN_SPECIALIZE_OFF);
  fx_bind_all(&f, 3);
  size_t nr = (size_t)jit_gemm_panel_width(strstr(kiln_context_target(f.ctx), "+avx512f") != NULL,
                                           IR_DT_F32);
  size_t want = 4 * (784 * ((512 + nr - 1) / nr * nr) + 512 * ((10 + nr - 1) / nr * nr));
  cr_assert_eq(rt_model_prepack_bytes(f.m), want);
  /* rebinding replaces the copies, it does not add to them */
  fx_bind_all(&f, 4);
  cr_assert_eq(rt_model_prepack_bytes(f.m), want);
  fx_close(&f);
}

/* A new tensor bound to a weight is seen at the next execute; edits to the
 * bound memory are not seen by the prepacked matmul until it is bound again. */
Test(prepack, rebind_changes_results) {
  fx f;
  fx_open(&f, MLP, 1, KILN_SPECIALIZE_OFF);
  fx_bind_all(&f, 5);
  float *r1 = malloc(64 * 10 * sizeof *r1), *r2 = malloc(64 * 10 * sizeof *r2);
  float *r3 = malloc(64 * 10 * sizeof *r3);
  cr_assert(r1 && r2 && r3);
  fx_check(&f, 64, 1, 1e-4, r1);
  /* a new tensor for fc1.weight */
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){784, 512}, f.st);
  oracle_gen gen = gen_uniform(-0.25, 0.25);
  oracle_fill(kiln_tensor_data(t), KILN_FLOAT32, 784 * 512, &gen, 999);
  cr_assert_eq(kiln_model_bind_weight(f.m, "fc1.weight", t, f.st), 0);
  kiln_tensor_free(f.w.kt[0]);
  f.w.kt[0] = t;
  f.w.it[0].data = kiln_tensor_data(t);
  fx_check(&f, 64, 1, 1e-4, r2);
  cr_assert(memcmp(r1, r2, 64 * 10 * sizeof *r1) != 0, "rebinding changed nothing");
  /* edit the bound memory in place: the model keeps its packed copy */
  float *wd = kiln_tensor_data(t);
  for (int i = 0; i < 784 * 512; i++) wd[i] = -wd[i];
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){64, 784}, f.st);
  oracle_gen gx = gen_uniform(-1, 1);
  oracle_fill(kiln_tensor_data(x), KILN_FLOAT32, 64 * 784, &gx, 1); /* fx_check's input */
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), 0, "%s", kiln_status_message(f.st));
  cr_assert(memcmp(kiln_tensor_data(y), r2, 64 * 10 * sizeof *r2) == 0,
            "an edit after binding reached the prepacked matmul");
  kiln_tensor_free(y);
  /* bound again: seen, and the oracle (which reads the memory) agrees */
  cr_assert_eq(kiln_model_bind_weight(f.m, "fc1.weight", t, f.st), 0);
  fx_check(&f, 64, 1, 1e-4, r3);
  cr_assert(memcmp(r2, r3, 64 * 10 * sizeof *r2) != 0);
  kiln_tensor_free(x);
  free(r1);
  free(r2);
  free(r3);
  fx_close(&f);
}

/* One weight read by two matmuls (one packed copy), then by a non-matmul op
 * and as a matmul's A operand (those read the bound memory). */
Test(prepack, weight_shared_and_other_uses) {
  const char *text =
      "mo.graph @shared<batch>(%x: !mo.tensor<[batch, 64], f32>) -> (!mo.tensor<[batch, 64], f32>, !mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[64, 64], f32>\n"
      "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[batch, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[batch, 64], f32>\n"
      "  %1 = mo.relu(%0) : !mo.tensor<[batch, 64], f32>\n"
      "  %2 = mo.matmul(%1, %w) : (!mo.tensor<[batch, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[batch, 64], f32>\n"
      "  %3 = mo.mul(%w, %w) : (!mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[64, 64], f32>\n"
      "  %4 = mo.matmul(%w, %w) : (!mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[64, 64], f32>\n"
      "  mo.output %2, %3, %4 : !mo.tensor<[batch, 64], f32>, !mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>\n"
      "}\n";
  for (int fuse = 0; fuse < 2; fuse++) {
    setenv("KILN_FUSE", fuse ? "1" : "0", 1);
    fx f;
    fx_open(&f, text, 1, KILN_SPECIALIZE_OFF);
    cr_assert_eq(rt_model_prepack_sources(f.m), 1);
    fx_bind_all(&f, 21);
    for (int i = 0; i < NBATCHES; i++) fx_check(&f, BATCHES[i], 5, 1e-4, NULL);
    fx_close(&f);
  }
}

/* An epilogue that reads the weight too: the fused body's B input then has
 * two readers, so it is not packed (the epilogue needs the plain layout);
 * the unfused graph packs it. */
Test(prepack, fused_epilogue_reads_the_weight) {
  const char *text =
      "mo.graph @epi(%x: !mo.tensor<[64, 64], f32>) -> (!mo.tensor<[64, 64], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[64, 64], f32>\n"
      "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[64, 64], f32>\n"
      "  %1 = mo.add(%0, %w) : (!mo.tensor<[64, 64], f32>, !mo.tensor<[64, 64], f32>) -> !mo.tensor<[64, 64], f32>\n"
      "  mo.output %1 : !mo.tensor<[64, 64], f32>\n"
      "}\n";
  for (int fuse = 0; fuse < 2; fuse++) {
    setenv("KILN_FUSE", fuse ? "1" : "0", 1);
    fx f;
    fx_open(&f, text, 1, KILN_SPECIALIZE_OFF);
    fx_bind_all(&f, 2);
    /* fused: the epilogue's add reads %w through the same operand (not
     * packed) or through its own (packed): either way the result is right */
    cr_assert_leq(rt_model_prepack_sources(f.m), 1);
    if (!fuse) cr_assert_eq(rt_model_prepack_sources(f.m), 1);
    fx_check(&f, 64, 3, 1e-4, NULL);
    fx_close(&f);
  }
}

/* mo.constant B: packed at compile. */
Test(prepack, constant_b) {
  const char *text =
      "mo.graph @c<batch>(%x: !mo.tensor<[batch, 3], f32>) -> (!mo.tensor<[batch, 5], f32>) {\n"
      "  %w = mo.constant {value = #M.dense_array<1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 4.0, 2.0, "
      "-0.5, 1.5, 0.0, 1.0, -3.0, 2.5, -0.75> : tensor<3x5xf32>} : !mo.tensor<[3, 5], f32>\n"
      "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[batch, 3], f32>, !mo.tensor<[3, 5], f32>) -> !mo.tensor<[batch, 5], f32>\n"
      "  mo.output %0 : !mo.tensor<[batch, 5], f32>\n"
      "}\n";
  fx f;
  fx_open(&f, text, 1, KILN_SPECIALIZE_OFF);
  cr_assert_eq(rt_model_prepack_sources(f.m), 1);
  cr_assert_gt(rt_model_prepack_bytes(f.m), 0); /* at compile, no bind */
  for (int i = 0; i < NBATCHES; i++) fx_check(&f, BATCHES[i], 9, 1e-5, NULL);
  fx_close(&f);
}

Test(prepack, f64_and_batched_a) {
  const char *text =
      "mo.graph @d<batch>(%x: !mo.tensor<[2, batch, 300], f64>) -> (!mo.tensor<[2, batch, 270], f64>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[300, 270], f64>\n"
      "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[2, batch, 300], f64>, !mo.tensor<[300, 270], f64>) -> !mo.tensor<[2, batch, 270], f64>\n"
      "  mo.output %0 : !mo.tensor<[2, batch, 270], f64>\n"
      "}\n";
  for (int threads = 1; threads <= 2; threads++) {
    fx f;
    fx_open(&f, text, threads, KILN_SPECIALIZE_OFF);
    cr_assert_eq(rt_model_prepack_sources(f.m), 1);
    fx_bind_all(&f, 13);
    for (int i = 0; i < NBATCHES; i++) fx_check(&f, BATCHES[i], 17, 1e-12, NULL);
    fx_close(&f);
  }
}

/* Under sync the GEMMs keep their generic kernels (a specialized GEMM runs
 * the same prebuilt code: pipeline.h), which read the packed copy: an
 * MLP gets no variant and the answers stay right. */
Test(prepack, sync_keeps_the_gemms_generic) {
  fx f;
  fx_open(&f, MLP, 1, KILN_SPECIALIZE_SYNC);
  fx_bind_all(&f, 8);
  for (int i = 0; i < NBATCHES; i++) fx_check(&f, BATCHES[i], 2, 1e-4, NULL);
  cr_assert_eq(kiln_model_variants(f.m), 0);
  fx_close(&f);
}

/* Bit for bit what the same kernel computes with B as a plain input: the
 * packed path sums exactly like the unpacked one. */
Test(prepack, same_bits_as_unpacked) {
  const char *as_input =
      "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 784], f32>, %w1: !mo.tensor<[784, 512], f32>) -> (!mo.tensor<[batch, 512], f32>) {\n"
      "  %b1 = mo.constant.external {name = \"fc1.bias\"} : !mo.tensor<[512], f32>\n"
      "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 784], f32>, !mo.tensor<[784, 512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
      "  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
      "  %2 = mo.relu(%1) : !mo.tensor<[batch, 512], f32>\n"
      "  mo.output %2 : !mo.tensor<[batch, 512], f32>\n"
      "}\n";
  const char *as_weight =
      "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 784], f32>) -> (!mo.tensor<[batch, 512], f32>) {\n"
      "  %w1 = mo.constant.external {name = \"fc1.weight\"} : !mo.tensor<[784, 512], f32>\n"
      "  %b1 = mo.constant.external {name = \"fc1.bias\"} : !mo.tensor<[512], f32>\n"
      "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 784], f32>, !mo.tensor<[784, 512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
      "  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512], f32>) -> !mo.tensor<[batch, 512], f32>\n"
      "  %2 = mo.relu(%1) : !mo.tensor<[batch, 512], f32>\n"
      "  mo.output %2 : !mo.tensor<[batch, 512], f32>\n"
      "}\n";
  for (int threads = 1; threads <= 2; threads++) {
    fx a, b;
    fx_open(&a, as_input, threads, KILN_SPECIALIZE_OFF);
    fx_open(&b, as_weight, threads, KILN_SPECIALIZE_OFF);
    cr_assert_eq(rt_model_prepack_sources(a.m), 0);
    cr_assert_eq(rt_model_prepack_sources(b.m), 1);
    fx_bind_all(&a, 40); /* fc1.bias */
    oracle_gen gen = gen_uniform(-0.25, 0.25);
    kiln_tensor *w = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){784, 512}, a.st);
    kiln_tensor *bias = kiln_tensor_new(KILN_FLOAT32, 1, (int64_t[]){512}, a.st);
    oracle_fill(kiln_tensor_data(w), KILN_FLOAT32, 784 * 512, &gen, 41);
    memcpy(kiln_tensor_data(bias), kiln_tensor_data(a.w.kt[0]), 512 * sizeof(float));
    cr_assert_eq(kiln_model_bind_weight(b.m, "fc1.weight", w, b.st), 0);
    cr_assert_eq(kiln_model_bind_weight(b.m, "fc1.bias", bias, b.st), 0);
    for (int i = 0; i < NBATCHES; i++) {
      int64_t M = BATCHES[i];
      kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){M, 784}, a.st);
      oracle_gen gx = gen_uniform(-1, 1);
      oracle_fill(kiln_tensor_data(x), KILN_FLOAT32, M * 784, &gx, 50 + (unsigned)i);
      kiln_tensor *ya = NULL, *yb = NULL, *ins[2] = {x, w};
      cr_assert_eq(kiln_model_execute(a.m, ins, 2, &ya, 1, a.st), 0, "%s",
                   kiln_status_message(a.st));
      cr_assert_eq(kiln_model_execute(b.m, ins, 1, &yb, 1, b.st), 0, "%s",
                   kiln_status_message(b.st));
      cr_assert(memcmp(kiln_tensor_data(ya), kiln_tensor_data(yb), kiln_tensor_nbytes(ya)) == 0,
                "batch %lld, %d thread(s): packed and unpacked results differ", (long long)M,
                threads);
      kiln_tensor_free(x);
      kiln_tensor_free(ya);
      kiln_tensor_free(yb);
    }
    kiln_tensor_free(w);
    kiln_tensor_free(bias);
    fx_close(&a);
    fx_close(&b);
  }
}

/* kiln.packed_b is the runtime's: a graph that sets it is refused when it
 * is parsed (a kernel trusting it would read the plain weight as panels). */
Test(prepack, user_attribute_rejected) {
  const char *text =
      "mo.graph @u(%x: !mo.tensor<[4, 8], f32>, %y: !mo.tensor<[8, 8], f32>) -> (!mo.tensor<[4, 8], f32>) {\n"
      "  %0 = mo.matmul(%x, %y) {kiln.packed_b = 32} : (!mo.tensor<[4, 8], f32>, !mo.tensor<[8, 8], f32>) -> !mo.tensor<[4, 8], f32>\n"
      "  mo.output %0 : !mo.tensor<[4, 8], f32>\n"
      "}\n";
  kiln_code code;
  char msg[512];
  cr_assert_eq(oracle_compile_only(text, &code, msg, sizeof msg), -1);
  cr_assert_eq(code, KILN_ERR_PARSE);
  cr_assert(strstr(msg, "case.mlir:2:27: attribute 'kiln.packed_b' is set by the runtime") != NULL,
            "%s", msg);
}

/* kiln_model_take_weight: where every read of a weight is a packed GEMM
 * operand the model keeps only the packed copy (the tensor's data freed at
 * once: ASan would see a later read), with the answers of a borrowed
 * binding; where another op reads it too, the model keeps the tensor. */
Test(prepack, take_weight_keeps_one_copy) {
  fx f;
  fx_open(&f, MLP, 1, KILN_SPECIALIZE_OFF);
  fx_bind_all(&f, 31); /* borrowed: the oracle's weights */
  float *want = malloc(100 * 10 * sizeof *want), *got = malloc(100 * 10 * sizeof *got);
  fx_check(&f, 100, 3, 1e-4, want);
  for (int i = 0; i < f.w.n; i++) { /* the same values, given to the model */
    kiln_tensor *copy = kiln_tensor_copy_to(f.w.kt[i], NULL, f.st);
    cr_assert_eq(kiln_model_take_weight(f.m, f.w.name[i], copy, f.st), 0, "%s",
                 kiln_status_message(f.st));
    cr_expect(f.m->weights[i].owned && f.m->weights[i].bound == f.m->weights[i].owned);
    bool packed_only = rt_prepack_covers(f.m, i);
    cr_expect_eq(kiln_tensor_data(f.m->weights[i].owned) == NULL, packed_only, "weight %s",
                 f.w.name[i]);
  }
  fx_check(&f, 100, 3, 1e-4, got);
  cr_expect_eq(memcmp(want, got, 100 * 10 * sizeof *got), 0);
  /* a failed take leaves the tensor the caller's */
  int64_t bad_shape[2] = {3, 3};
  kiln_tensor *bad = kiln_tensor_new(KILN_FLOAT32, 2, bad_shape, f.st);
  cr_expect_neq(kiln_model_take_weight(f.m, f.w.name[0], bad, f.st), 0);
  kiln_tensor_free(bad);
  free(want);
  free(got);
  fx_close(&f);
}

Test(prepack, take_weight_with_other_readers_keeps_the_data) {
  const char *text =
      "mo.graph @o<batch>(%x: !mo.tensor<[batch, 16], f32>) -> (!mo.tensor<[batch, 16], f32>, "
      "!mo.tensor<[16, 16], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[16, 16], f32>\n"
      "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[batch, 16], f32>, !mo.tensor<[16, 16], f32>) -> "
      "!mo.tensor<[batch, 16], f32>\n"
      "  %1 = mo.negate(%w) : !mo.tensor<[16, 16], f32>\n"
      "  mo.output %0, %1 : !mo.tensor<[batch, 16], f32>, !mo.tensor<[16, 16], f32>\n}\n";
  fx f;
  fx_open(&f, text, 1, KILN_SPECIALIZE_OFF);
  fx_bind_all(&f, 5);
  cr_expect_not(rt_prepack_covers(f.m, 0));
  kiln_tensor *copy = kiln_tensor_copy_to(f.w.kt[0], NULL, f.st);
  cr_assert_eq(kiln_model_take_weight(f.m, "w", copy, f.st), 0);
  cr_expect_eq(f.m->weights[0].bound, copy); /* kept whole: negate reads it */
  for (int i = 0; i < NBATCHES; i++) fx_check(&f, BATCHES[i], 7, 1e-4, NULL);
  fx_close(&f);
}

/* kiln_model_weight_needs_data: 0 where every read is the packed copy
 * (the caller may give the memory back), 1 where an op reads the tensor. */
Test(prepack, weight_needs_data) {
  fx f;
  fx_open(&f, MLP, 1, KILN_SPECIALIZE_OFF);
  cr_expect_eq(kiln_model_weight_needs_data(f.m, "fc1.weight"), 0);
  cr_expect_eq(kiln_model_weight_needs_data(f.m, "fc2.weight"), 0);
  cr_expect_eq(kiln_model_weight_needs_data(f.m, "fc1.bias"), 1); /* the epilogue reads it */
  cr_expect_eq(kiln_model_weight_needs_data(f.m, "nope"), -1);
  cr_expect_eq(kiln_model_weight_needs_data(NULL, "fc1.weight"), -1);
  cr_expect_eq(kiln_model_weight_needs_data(f.m, NULL), -1);
  /* freeing a weight it does not need, after binding, changes nothing */
  fx_bind_all(&f, 41);
  fx_check(&f, 17, 9, 1e-4, NULL);
  int w1 = kiln_model_weight_needs_data(f.m, f.w.name[0]) == 0 ? 0 : 2;
  memset(kiln_tensor_data(f.w.kt[w1]), 0xff, kiln_tensor_nbytes(f.w.kt[w1])); /* NaN: unread */
  kiln_tensor *in[1];
  int64_t shape[2] = {17, 784};
  in[0] = kiln_tensor_new(KILN_FLOAT32, 2, shape, f.st);
  float *x = kiln_tensor_data(in[0]);
  for (int i = 0; i < 17 * 784; i++) x[i] = (float)(i % 7) * 0.1f;
  kiln_tensor *o1 = NULL;
  cr_assert_eq(kiln_model_execute(f.m, in, 1, &o1, 1, f.st), 0);
  const float *y = kiln_tensor_data(o1);
  for (int i = 0; i < 17 * 10; i++) cr_assert(y[i] == y[i], "output %d is NaN", i);
  kiln_tensor_free(o1);
  kiln_tensor_free(in[0]);
  fx_close(&f);
}

/* ---- conv2d: a one-group filter that is a weight or a constant is packed
 * once as the (R * S * C) x F matrix of jit/conv.c's GEMMs ---- */

typedef struct cshape {
  int h, w, c, r, s, f;
  int st[2], pad[4], dil[2], groups;
  bool bias;
} cshape;

/* A conv2d graph with symbolic batch; the filter a weight "w" (filt 0), a
 * graph input (1) or a mo.constant of fixed values (2); the bias a weight
 * "b". Returned malloc'd. */
static char *conv_text(const cshape *k, const char *dt, int filt) {
  int ho = (k->h + k->pad[0] + k->pad[1] - k->dil[0] * (k->r - 1) - 1) / k->st[0] + 1;
  int wo = (k->w + k->pad[2] + k->pad[3] - k->dil[1] * (k->s - 1) - 1) / k->st[1] + 1;
  int cg = k->c / k->groups;
  size_t cap = 1 << 18;
  char *t = malloc(cap), xty[96], yty[96], fty[96], bty[96] = "", *p = t;
  cr_assert_not_null(t);
  snprintf(xty, sizeof xty, "!mo.tensor<[batch, %d, %d, %d], %s>", k->h, k->w, k->c, dt);
  snprintf(yty, sizeof yty, "!mo.tensor<[batch, %d, %d, %d], %s>", ho, wo, k->f, dt);
  snprintf(fty, sizeof fty, "!mo.tensor<[%d, %d, %d, %d], %s>", k->r, k->s, cg, k->f, dt);
  if (k->bias) snprintf(bty, sizeof bty, ", !mo.tensor<[%d], %s>", k->f, dt);
  p += sprintf(p, "mo.graph @conv<batch>(%%x: %s%s%s) -> (%s) {\n", xty,
               filt == 1 ? ", %wt: " : "", filt == 1 ? fty : "", yty);
  if (filt == 0) p += sprintf(p, "  %%wt = mo.constant.external {name = \"w\"} : %s\n", fty);
  if (filt == 2) {
    int n = k->r * k->s * cg * k->f;
    p += sprintf(p, "  %%wt = mo.constant {value = #M.dense_array<");
    for (int i = 0; i < n; i++)
      p += sprintf(p, "%s%.3f", i ? ", " : "", (double)(i * 37 % 101 - 50) / 200.0);
    p += sprintf(p, "> : tensor<%dx%dx%dx%dx%s>} : %s\n", k->r, k->s, cg, k->f, dt, fty);
  }
  if (k->bias) p += sprintf(p, "  %%b = mo.constant.external {name = \"b\"} : %s\n", bty + 2);
  p += sprintf(p,
               "  %%y = mo.conv2d(%%x, %%wt%s) {stride = [%d, %d], padding = [%d, %d, %d, %d], "
               "dilation = [%d, %d], groups = %d} : (%s, %s%s) -> %s\n"
               "  mo.output %%y : %s\n}\n",
               k->bias ? ", %b" : "", k->st[0], k->st[1], k->pad[0], k->pad[1], k->pad[2],
               k->pad[3], k->dil[0], k->dil[1], k->groups, xty, fty, bty, yty, yty);
  cr_assert_lt((size_t)(p - t), cap);
  return t;
}

/* Shapes that reach each path of jit/conv.c with a packed filter: the
 * plain GEMM (1x1, stride 1, no padding), im2col with padding, stride 2,
 * dilation, a 1x1 with stride 2, odd C and F (F not a multiple of the
 * panel width), F > 256 (the template's wide-B blocking), and more than one
 * 256-pixel block; a two-group conv (not packed); then the edges of the
 * plain 1x1's pixel blocks and of the template's packed path. */
static const cshape CONVS[] = {
    {5, 6, 37, 1, 1, 19, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false},
    {7, 9, 5, 3, 3, 40, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {11, 10, 8, 3, 3, 33, {2, 2}, {1, 0, 1, 2}, {1, 2}, 1, false},
    {9, 8, 12, 1, 1, 17, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, true},
    {9, 9, 64, 1, 1, 300, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true},
    {6, 7, 24, 3, 3, 270, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {20, 20, 16, 3, 3, 70, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false},
    {6, 6, 8, 3, 3, 12, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, false},
    /* the plain 1x1's blocks of whole register tiles, the last one ragged
     * (batch 3: 147 pixels = 78 + 69 rows with 6-row tiles, 80 + 67 with
     * 8), C = 1024: rows 4 KiB apart, A packed, not read in place */
    {7, 7, 1024, 1, 1, 19, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false},
    /* K = 333: two K blocks of 167 and 166; 156 and 468 pixels: 2 and 4
     * blocks, the first ones a tile longer where the tiles do not divide */
    {12, 13, 333, 1, 1, 37, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false},
    /* F = 2100: two column blocks of the packed B (198 KiB in f32, so the
     * next column block's first panel is prefetched) */
    {5, 30, 24, 1, 1, 2100, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true},
};
#define NCONVS (int)(sizeof CONVS / sizeof CONVS[0])
static const int64_t CONV_BATCHES[] = {1, 3};

/* Shapes for the direct kernel (kernels-templates/conv.c: AVX-512 hosts,
 * f32, every packed conv but the plain 1x1; elsewhere they take im2col +
 * the GEMM): C = 300 in three channel blocks with a bias (49 pixels: 7
 * tiles of 7), odd C = 3 with stride 2 x 1, dilation 2 x 1, a 3 x 1 filter
 * and uneven padding, H = 1 with a 1 x 3 filter, a 1x1 with padding, a
 * filter over 1 MiB (the next panel block prefetched) with F = 160 (five
 * panels, the last partial), 480 / 3840 pixels (pixel blocks of 240 /
 * 384, tiles of 8), a 1 x 1 image (one pixel: on two threads a part gets
 * none), and C = 0 (the bias alone). */
static const cshape DIRECT_CONVS[] = {
    {7, 7, 300, 3, 3, 45, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {9, 11, 3, 3, 1, 64, {2, 1}, {0, 2, 1, 0}, {2, 1}, 1, true},
    {1, 9, 5, 1, 3, 33, {1, 1}, {0, 0, 1, 1}, {1, 1}, 1, false},
    {5, 5, 7, 1, 1, 9, {1, 1}, {1, 0, 0, 1}, {1, 1}, 1, true},
    {6, 6, 256, 3, 3, 160, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {24, 20, 8, 3, 3, 16, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false},
    {1, 1, 4, 3, 3, 5, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {4, 4, 0, 3, 3, 6, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
};
#define NDIRECT (int)(sizeof DIRECT_CONVS / sizeof DIRECT_CONVS[0])
static const int64_t DIRECT_BATCHES[] = {1, 8};

/* batch 0 (no pixels) and batch 1 of a direct conv, on two threads */
Test(prepack, conv2d_direct_empty_batch) {
  char *text = conv_text(&DIRECT_CONVS[0], "f32", 0);
  fx f;
  fx_open(&f, text, 2, KILN_SPECIALIZE_OFF);
  fx_bind_all(&f, 9);
  fx_check(&f, 0, 3, 1e-4, NULL);
  fx_check(&f, 1, 4, 1e-4, NULL);
  fx_close(&f);
  free(text);
}

static void check_convs(const cshape *convs, int n, const int64_t batches[2], const char *dt,
                        int threads, double tol) {
  for (int i = 0; i < n; i++) {
    char *text = conv_text(&convs[i], dt, 0);
    fx f;
    fx_open(&f, text, threads, KILN_SPECIALIZE_OFF);
    cr_assert_eq(rt_model_prepack_sources(f.m), convs[i].groups == 1 ? 1 : 0, "conv %d", i);
    fx_bind_all(&f, 7 + (unsigned)i);
    if (convs[i].groups == 1 && convs[i].c > 0) cr_assert_gt(rt_model_prepack_bytes(f.m), 0);
    for (int b = 0; b < 2; b++) fx_check(&f, batches[b], 3 + (unsigned)b, tol, NULL);
    fx_close(&f);
    free(text);
  }
}

static void check_conv(const char *dt, int threads, double tol) {
  check_convs(CONVS, NCONVS, CONV_BATCHES, dt, threads, tol);
}

Test(prepack, conv2d_filter_weight) {
  check_conv("f32", 1, 1e-4);
  check_conv("f64", 1, 1e-10);
}

Test(prepack, conv2d_two_threads) { check_conv("f32", 2, 1e-4); }

Test(prepack, conv2d_direct_shapes) {
  check_convs(DIRECT_CONVS, NDIRECT, DIRECT_BATCHES, "f32", 1, 1e-4);
  check_convs(DIRECT_CONVS, NDIRECT, DIRECT_BATCHES, "f32", 2, 1e-4);
}

/* A mo.constant filter: packed at compile, before any bind. */
Test(prepack, conv2d_constant_filter) {
  cshape k = CONVS[2];
  char *text = conv_text(&k, "f32", 2);
  fx f;
  fx_open(&f, text, 1, KILN_SPECIALIZE_OFF);
  cr_assert_eq(rt_model_prepack_sources(f.m), 1);
  cr_assert_gt(rt_model_prepack_bytes(f.m), 0);
  for (int b = 0; b < 2; b++) fx_check(&f, CONV_BATCHES[b], 5, 1e-4, NULL);
  fx_close(&f);
  free(text);
}

/* The packed filter gives the bits of the same conv with the filter as an
 * input, and a rebound filter is seen at the next execute. The bits agree
 * for these shapes (no bias; K = R * S * C at most 256 where not a plain
 * 1x1): the template's _pex sums as _ex does, and the direct kernel of
 * AVX-512 hosts then sums each element in the GEMM's order (one K block, k
 * ascending, from 0); with a bias or more channels its order differs
 * (rounding only, checked against the interpreter above). */
Test(prepack, conv2d_same_bits_as_unpacked_and_rebind) {
  for (int i = 0; i < NCONVS; i++) {
    const cshape *k = &CONVS[i];
    if (k->bias || k->groups != 1) continue;
    char *ta = conv_text(k, "f32", 1), *tb = conv_text(k, "f32", 0);
    fx a, b;
    fx_open(&a, ta, 1, KILN_SPECIALIZE_OFF);
    fx_open(&b, tb, 1, KILN_SPECIALIZE_OFF);
    cr_assert_eq(rt_model_prepack_sources(a.m), 0);
    cr_assert_eq(rt_model_prepack_sources(b.m), 1);
    int64_t fs[4] = {k->r, k->s, k->c, k->f}, n = k->r * k->s * k->c * k->f;
    int64_t xs[4] = {3, k->h, k->w, k->c};
    kiln_tensor *w = kiln_tensor_new(KILN_FLOAT32, 4, fs, a.st);
    kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 4, xs, a.st);
    oracle_gen gw = gen_uniform(-0.25, 0.25), gx = gen_uniform(-1, 1);
    oracle_fill(kiln_tensor_data(x), KILN_FLOAT32, kiln_tensor_numel(x), &gx, 60);
    for (int round = 0; round < 2; round++) {
      oracle_fill(kiln_tensor_data(w), KILN_FLOAT32, n, &gw, 61 + (unsigned)round);
      cr_assert_eq(kiln_model_bind_weight(b.m, "w", w, b.st), 0, "%s", kiln_status_message(b.st));
      kiln_tensor *ya = NULL, *yb = NULL, *ins[2] = {x, w};
      cr_assert_eq(kiln_model_execute(a.m, ins, 2, &ya, 1, a.st), 0, "%s",
                   kiln_status_message(a.st));
      cr_assert_eq(kiln_model_execute(b.m, ins, 1, &yb, 1, b.st), 0, "%s",
                   kiln_status_message(b.st));
      cr_assert(memcmp(kiln_tensor_data(ya), kiln_tensor_data(yb), kiln_tensor_nbytes(ya)) == 0,
                "conv %d, round %d: packed and unpacked results differ", i, round);
      kiln_tensor_free(ya);
      kiln_tensor_free(yb);
    }
    kiln_tensor_free(w);
    kiln_tensor_free(x);
    fx_close(&a);
    fx_close(&b);
    free(ta);
    free(tb);
  }
}

/* The runtime's attribute on a conv2d in graph text is refused too. */
Test(prepack, conv2d_user_attribute_rejected) {
  const char *text =
      "mo.graph @u(%x: !mo.tensor<[1, 4, 4, 8], f32>, %w: !mo.tensor<[1, 1, 8, 8], f32>) -> "
      "(!mo.tensor<[1, 4, 4, 8], f32>) {\n"
      "  %0 = mo.conv2d(%x, %w) {kiln.packed_b = 16} : (!mo.tensor<[1, 4, 4, 8], f32>, "
      "!mo.tensor<[1, 1, 8, 8], f32>) -> !mo.tensor<[1, 4, 4, 8], f32>\n"
      "  mo.output %0 : !mo.tensor<[1, 4, 4, 8], f32>\n"
      "}\n";
  kiln_code code;
  char msg[512];
  cr_assert_eq(oracle_compile_only(text, &code, msg, sizeof msg), -1);
  cr_assert_eq(code, KILN_ERR_PARSE);
  cr_assert(strstr(msg, "attribute 'kiln.packed_b' is set by the runtime") != NULL, "%s", msg);
}
