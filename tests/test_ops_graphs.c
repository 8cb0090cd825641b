/* test_ops_graphs.c - whole graphs, JIT vs the reference interpreter: every
 * example of ../shared/ir-examples with random inputs and weights and
 * several dim bindings, and chains of ops that stress intermediate buffers
 * (an embedding -> layer_norm, attention heads reshaped and permuted with
 * algebraic dims, an integer pipeline, dense constants of every compute
 * dtype, an input or one value returned several times).
 * Tolerances are derived per graph from its longest dot products (reasons
 * next to each). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "support/gtext.h"
#include "support/oracle.h"

static char *read_example(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/ir-examples/%s", KILN_SHARED_DIR, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

static void check_example(const char *file, const char *bindings, oracle_gen gx, oracle_gen gw,
                          double rtol, double atol) {
  char *text = read_example(file);
  cr_assert(text, "cannot read %s/ir-examples/%s", KILN_SHARED_DIR, file);
  oracle_case c = {.label = file, .mlir = text, .bindings = bindings, .seed = 81, .rtol = rtol,
                   .atol = atol, .gen_default = gx, .wgen = gw};
  ORACLE_ASSERT(&c);
  free(text);
}

Test(examples, relu) { check_example("relu.mlir", "", gen_uniform(-3, 3), gen_uniform(-1, 1), 0, 0); }

Test(examples, add_const) {
  check_example("add_const.mlir", "", gen_uniform(-3, 3), gen_uniform(-1, 1), 0, 0);
}

/* x in [-1, 1], weights in [-0.1, 0.1]: layer 1 sums 784 terms <= 0.1
 * (atol 1e-6 * 784 * 0.1, as in test_ops_matmul.c), layer 2 512 terms of
 * |h| <= ~3 times 0.1, plus layer 1's error carried through: 5e-4 in all. */
Test(examples, mlp) {
  check_example("mlp.mlir", "batch=1;batch=3;batch=64;batch=0", gen_uniform(-1, 1),
                gen_uniform(-0.1, 0.1), 0, 5e-4);
}

/* scores: 64-term dot products of values in [-1, 1] (error ~6e-5) scaled by
 * 0.125, then softmax (relative error ~ the scores' absolute error); the
 * layer_norm branch is ~1e-5: rtol 1e-4, atol 1e-5. */
Test(examples, attention_block) {
  check_example("attention_block.mlir", "batch=2,seq=5;batch=1,seq=1;batch=3,seq=0;batch=1,seq=33",
                gen_uniform(-1, 1), gen_uniform(-1, 1), 1e-4, 1e-5);
}

Test(examples, split_concat) {
  check_example("split_concat.mlir", "n=0;n=1;n=4", gen_uniform(-3, 3), gen_uniform(-1, 1), 0, 0);
}

/* ---- chains ---- */

/* ids -> embedding gather -> layer_norm -> mean over the last axis, plus
 * a softmax over the sequence of a projection: exercises gather indices
 * from an input, weights of two dtypes of shapes, and algebraic reshapes. */
Test(chains, embedding_layer_norm) {
  gt *t = gt_new("embed", "b, s");
  int ids = gt_in_gen(t, "si64", "b, s", gen_uniform(-50, 49));
  int emb = gt_weight(t, "emb", "f32", "50, 16");
  int gamma = gt_weight(t, "ln.g", "f32", "16");
  int beta = gt_weight(t, "ln.b", "f32", "16");
  int e = gt_op2(t, "mo.gather", "{axis = 0}", emb, ids, "f32", "b, s, 16");
  int ln_in[3] = {e, gamma, beta};
  int n = gt_op(t, "mo.layer_norm", NULL, ln_in, 3, "f32", "b, s, 16");
  int flat = gt_op1(t, "mo.reshape", NULL, n, "f32", "b * s, 16");
  gt_out(t, gt_op1(t, "mo.mean", "{axis = -1}", flat, "f32", "b * s, 1"));
  gt_out(t, gt_op1(t, "mo.softmax", "{axis = 1}", n, "f32", "b, s, 16"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "embedding -> layer_norm", .mlir = gt_finish(t),
                   .bindings = "b=1,s=1;b=2,s=7;b=0,s=3;b=3,s=0", .seed = 82, .rtol = 1e-5,
                   .atol = 1e-5, .gens = gens, .ngens = ng, .wgen = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* x [b, s, 32] -> 4 heads of 8: reshape [b, s, 4, 8], permute to [b, 4, s, 8],
 * reshape [b * 4, s, 8], scores q k^T [b * 4, s, s], softmax, back to
 * [b, 4, s, s], sum over heads, argmax over keys. Dot products of 8 terms
 * in [-1, 1]: atol 1e-5; softmax rtol 1e-5. */
Test(chains, attention_heads_with_algebraic_dims) {
  gt *t = gt_new("heads", "b, s");
  int x = gt_in_gen(t, "f32", "b, s, 32", gen_uniform(-1, 1));
  int h = gt_op1(t, "mo.reshape", NULL, x, "f32", "b, s, 4, 8");
  int p = gt_op1(t, "mo.permute", "{dims = [0, 2, 1, 3]}", h, "f32", "b, 4, s, 8");
  int q = gt_op1(t, "mo.reshape", NULL, p, "f32", "4 * b, s, 8");
  int kt = gt_op1(t, "mo.transpose", "{axis_1 = -1, axis_2 = -2}", q, "f32", "4 * b, 8, s");
  int sc = gt_op2(t, "mo.matmul", NULL, q, kt, "f32", "4 * b, s, s");
  int sm = gt_op1(t, "mo.softmax", NULL, sc, "f32", "4 * b, s, s");
  int back = gt_op1(t, "mo.reshape", NULL, sm, "f32", "b, 4, s, s");
  int tot = gt_op1(t, "mo.sum", "{axis = 1}", back, "f32", "b, 1, s, s");
  gt_out(t, tot);
  gt_out(t, gt_op1(t, "mo.argmax", "{axis = -1}", tot, "si64", "b, 1, s, 1"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "attention heads", .mlir = gt_finish(t),
                   .bindings = "b=1,s=1;b=2,s=5;b=0,s=4;b=1,s=17", .seed = 83, .rtol = 1e-5,
                   .atol = 1e-5, .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* si32 -> mod 7 (a dense constant) -> compare -> where -> cast f64 -> sqrt
 * -> cast si64 -> used as gather indices into a weight. All exact. */
Test(chains, integer_pipeline) {
  gt *t = gt_new("ints", "n");
  int x = gt_in_gen(t, "si32", "n", gen_uniform(-1000, 1000));
  int seven = gt_const(t, "si32", "", "7");
  int m = gt_op2(t, "mo.mod", NULL, x, seven, "si32", "n");
  int three = gt_const(t, "si32", "1", "3");
  int big = gt_op2(t, "mo.greater", NULL, m, three, "bool", "n");
  int neg = gt_op1(t, "mo.negate", NULL, m, "si32", "n");
  int ins[3] = {big, m, neg};
  int w = gt_op(t, "mo.where", NULL, ins, 3, "si32", "n");
  int f = gt_op1(t, "mo.cast", "{dtype = f64}", w, "f64", "n");
  int a = gt_op1(t, "mo.abs", NULL, f, "f64", "n");
  int r = gt_op1(t, "mo.sqrt", NULL, a, "f64", "n");
  int idx = gt_op1(t, "mo.cast", "{dtype = si64}", r, "si64", "n");
  int table = gt_weight(t, "table", "si64", "3, 5");
  gt_out(t, gt_op2(t, "mo.gather", "{axis = 1}", table, idx, "si64", "3, n"));
  gt_out(t, w);
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "integer pipeline", .mlir = gt_finish(t), .bindings = "n=0;n=1;n=50",
                   .seed = 84, .gens = gens, .ngens = ng, .wgen = gen_uniform(-1e12, 1e12)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* dense constants of every compute dtype, scalar and shaped, combined with
 * inputs by broadcasting */
Test(chains, dense_constants_of_every_dtype) {
  gt *t = gt_new("consts", "n");
  int cf = gt_const(t, "f32", "3", "1.5, -0.25, 3.0e10");
  int cd = gt_const(t, "f64", "", "0.1");
  int ci = gt_const(t, "si32", "2, 1", "-7, 2147483647");
  int cl = gt_const(t, "si64", "2", "9007199254740993, -9223372036854775807");
  int cb = gt_const(t, "bool", "3", "true, false, 1");
  gt_out(t, gt_op2(t, "mo.mul", NULL, gt_in(t, "f32", "n, 3"), cf, "f32", "n, 3"));
  gt_out(t, gt_op2(t, "mo.add", NULL, gt_in(t, "f64", "n"), cd, "f64", "n"));
  gt_out(t, gt_op2(t, "mo.max", NULL, gt_in(t, "si32", "n"), ci, "si32", "2, n"));
  gt_out(t, gt_op2(t, "mo.sub", NULL, cl, gt_in(t, "si64", "2"), "si64", "2"));
  gt_out(t, gt_op2(t, "mo.logical_xor", NULL, gt_in(t, "bool", "n, 3"), cb, "bool", "n, 3"));
  gt_out(t, cb); /* a constant returned as an output */
  oracle_case c = {.label = "dense constants", .mlir = gt_finish(t), .bindings = "n=0;n=1;n=4",
                   .seed = 85};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* an input returned as it is, one value returned twice, and a weight
 * returned: the runtime must hand out separate, correct tensors */
Test(chains, inputs_and_values_returned_directly) {
  gt *t = gt_new("passthrough", "n");
  int x = gt_in(t, "f32", "n, 2");
  int w = gt_weight(t, "w", "si64", "3");
  int y = gt_op1(t, "mo.relu", NULL, x, "f32", "n, 2");
  gt_out(t, x);
  gt_out(t, y);
  gt_out(t, y);
  gt_out(t, w);
  oracle_case c = {.label = "passthrough", .mlir = gt_finish(t), .bindings = "n=0;n=3",
                   .seed = 86};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* one value feeding many consumers of different classes, in a diamond */
Test(chains, diamond_of_op_classes) {
  gt *t = gt_new("diamond", "n");
  int x = gt_in(t, "f64", "n, 6");
  int e = gt_op1(t, "mo.exp", NULL, x, "f64", "n, 6");
  int s = gt_op1(t, "mo.sum", "{axis = 1}", e, "f64", "n, 1");
  int d = gt_op2(t, "mo.div", NULL, e, s, "f64", "n, 6");
  int sm = gt_op1(t, "mo.softmax", NULL, x, "f64", "n, 6");
  gt_out(t, gt_op2(t, "mo.sub", NULL, d, sm, "f64", "n, 6")); /* ~0: softmax two ways */
  const char *dts[2] = {"f64", "f64"}, *shapes[2] = {"n, 2", "n, 4"};
  int sp = gt_opn(t, "mo.split", "{split_sizes = [2, 4], axis = 1}", &e, 1, 2, dts, shapes);
  int cat_in[2] = {sp + 1, sp};
  gt_out(t, gt_op(t, "mo.concat", "{axis = 1}", cat_in, 2, "f64", "n, 6"));
  oracle_case c = {.label = "diamond", .mlir = gt_finish(t), .bindings = "n=0;n=1;n=9",
                   .seed = 87, .rtol = 1e-12, .atol = 1e-15};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static const ir_tensor *oracle_weight_fn_single(void *ud, const char *name) {
  (void)name;
  return ud;
}

/* ---- concurrent executes (runtime.h: "kiln_model_execute may be called
 * from several threads at once on the same model") ----
 * Four threads run one model 25 times each, every thread with its own batch
 * size (so intermediate buffers differ in size), and compare every result
 * with the oracle's, computed beforehand. */

#define NTHREADS 4
#define NITERS 25

typedef struct worker {
  kiln_model *m;
  kiln_tensor *in;
  ir_tensor expect[2];
  int failures;
  char msg[2048];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  kiln_status *st = kiln_status_new();
  oracle_report *r = calloc(1, sizeof *r);
  if (!st || !r) {
    w->failures++;
    snprintf(w->msg, sizeof w->msg, "out of memory");
    goto out;
  }
  for (int it = 0; it < NITERS; it++) {
    kiln_tensor *outs[2] = {NULL, NULL};
    if (kiln_model_execute(w->m, &w->in, 1, outs, 2, st) != 0) {
      w->failures++;
      snprintf(w->msg, sizeof w->msg, "iteration %d: %s", it, kiln_status_message(st));
      continue;
    }
    for (int k = 0; k < 2; k++) {
      const ir_tensor *e = &w->expect[k];
      if (kiln_tensor_rank(outs[k]) != e->rank ||
          (e->rank > 0 && memcmp(kiln_tensor_shape(outs[k]), e->shape,
                                 sizeof(int64_t) * (size_t)e->rank) != 0) ||
          oracle_compare(r, "concurrent", (kiln_dtype)e->dtype, e->rank, e->shape,
                         kiln_tensor_data(outs[k]), e->data, 1e-5, 1e-5) != 0) {
        w->failures++;
        snprintf(w->msg, sizeof w->msg, "iteration %d output %d: %.1500s", it, k, r->msg);
        r->msg[0] = 0;
      }
      kiln_tensor_free(outs[k]);
    }
  }
out:
  free(r);
  kiln_status_free(st);
  return NULL;
}

Test(chains, concurrent_executes_match_the_oracle) {
  gt *t = gt_new("conc", "b");
  int x = gt_in(t, "f32", "b, 16");
  int w1 = gt_weight(t, "w1", "f32", "16, 8");
  int h = gt_op2(t, "mo.matmul", NULL, x, w1, "f32", "b, 8");
  int g = gt_op1(t, "mo.gelu", NULL, h, "f32", "b, 8");
  gt_out(t, gt_op1(t, "mo.softmax", NULL, g, "f32", "b, 8"));
  gt_out(t, gt_op1(t, "mo.argmax", "{axis = 0}", h, "si64", "1, 8"));
  const char *text = gt_finish(t);
  cr_assert(text);
  ir_diag d = {0};
  ir_graph *ig = ir_parse(text, strlen(text), &d);
  cr_assert(ig, "%d:%d: %s", d.line, d.col, d.msg);
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = kiln_graph_parse(text, strlen(text), NULL, st);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kg && ctx ? kiln_model_compile(ctx, kg, st) : NULL;
  cr_assert(m, "%s", kiln_status_message(st));
  float wdata[16 * 8];
  oracle_gen gw = gen_uniform(-1, 1);
  oracle_fill(wdata, KILN_FLOAT32, 16 * 8, &gw, 5);
  int64_t wshape[2] = {16, 8};
  kiln_tensor *wt = kiln_tensor_borrow(KILN_FLOAT32, 2, wshape, wdata, st);
  cr_assert(wt && kiln_model_bind_weight(m, "w1", wt, st) == 0, "%s", kiln_status_message(st));
  ir_tensor wir = {IR_DT_F32, 2, {16, 8}, wdata};

  static const int64_t batch[NTHREADS] = {1, 3, 5, 8};
  worker ws[NTHREADS];
  float *xs[NTHREADS];
  memset(ws, 0, sizeof ws);
  for (int i = 0; i < NTHREADS; i++) {
    xs[i] = malloc(sizeof(float) * (size_t)(batch[i] * 16));
    cr_assert(xs[i]);
    oracle_gen gx = gen_uniform(-2, 2);
    oracle_fill(xs[i], KILN_FLOAT32, batch[i] * 16, &gx, 100 + (uint64_t)i);
    int64_t shape[2] = {batch[i], 16};
    ws[i].m = m;
    ws[i].in = kiln_tensor_borrow(KILN_FLOAT32, 2, shape, xs[i], st);
    cr_assert(ws[i].in);
    ir_tensor in = {IR_DT_F32, 2, {batch[i], 16}, xs[i]};
    char msg[512];
    /* one weight: the callback ignores the name */
    cr_assert(ir_interp_run(ig, &in, oracle_weight_fn_single, &wir, ws[i].expect, msg,
                            sizeof msg) == 0,
              "oracle: %s", msg);
  }
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) cr_assert(pthread_create(&th[i], NULL, work, &ws[i]) == 0);
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    cr_expect_eq(ws[i].failures, 0, "thread %d (batch %lld): %d failures; last: %s", i,
                 (long long)batch[i], ws[i].failures, ws[i].msg);
    kiln_tensor_free(ws[i].in);
    free(ws[i].expect[0].data);
    free(ws[i].expect[1].data);
    free(xs[i]);
  }
  kiln_model_free(m);
  kiln_tensor_free(wt);
  kiln_context_free(ctx);
  kiln_graph_free(kg);
  kiln_status_free(st);
  ir_graph_free(ig);
  gt_free(t);
}
