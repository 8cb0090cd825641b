/* test_variants.c - shape-specialized variants (src/variants.c): the bound
 * kernel text, the sync policy (one variant per binding, results bit for bit
 * those of the generic variant and close to the reference interpreter, for
 * an MLP-like and an attention-like graph), the LRU bound of 8, the ahead
 * policy (declared bindings only), off (none), the context's policy and a
 * model's override (contexts here start with policy off: async is tested in
 * test_spec_async.c), concurrent executes under sync, and static graphs
 * (never specialized). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/rt.h"
#include "src/variants.h"

#define MLP                                                                                     \
  "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 24], f32>) -> (!mo.tensor<[batch, 6], f32>) {\n" \
  "  %w1 = mo.constant.external {name = \"w1\"} : !mo.tensor<[24, 16], f32>\n"                  \
  "  %b1 = mo.constant.external {name = \"b1\"} : !mo.tensor<[16], f32>\n"                      \
  "  %w2 = mo.constant.external {name = \"w2\"} : !mo.tensor<[16, 6], f32>\n"                   \
  "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 24], f32>, !mo.tensor<[24, 16], f32>) -> "   \
  "!mo.tensor<[batch, 16], f32>\n"                                                              \
  "  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 16], f32>, !mo.tensor<[16], f32>) -> "          \
  "!mo.tensor<[batch, 16], f32>\n"                                                              \
  "  %2 = mo.relu(%1) : !mo.tensor<[batch, 16], f32>\n"                                         \
  "  %3 = mo.matmul(%2, %w2) : (!mo.tensor<[batch, 16], f32>, !mo.tensor<[16, 6], f32>) -> "    \
  "!mo.tensor<[batch, 6], f32>\n"                                                               \
  "  %4 = mo.softmax(%3) {axis = -1} : !mo.tensor<[batch, 6], f32>\n"                          \
  "  mo.output %4 : !mo.tensor<[batch, 6], f32>\n"                                              \
  "}\n"

#define ATTN                                                                                    \
  "mo.graph @attn<batch, seq>(%q: !mo.tensor<[batch, seq, 8], f32>, %k: !mo.tensor<[batch, "    \
  "seq, 8], f32>) -> (!mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[batch * seq, 8], f32>) {\n" \
  "  %kt = mo.transpose(%k) {axis_1 = 1, axis_2 = 2} : (!mo.tensor<[batch, seq, 8], f32>) -> "  \
  "!mo.tensor<[batch, 8, seq], f32>\n"                                                          \
  "  %s = mo.matmul(%q, %kt) : (!mo.tensor<[batch, seq, 8], f32>, !mo.tensor<[batch, 8, seq], " \
  "f32>) -> !mo.tensor<[batch, seq, seq], f32>\n"                                               \
  "  %c = mo.constant {value = #M.dense_array<0.35> : tensor<f32>} : !mo.tensor<[], f32>\n"     \
  "  %ss = mo.mul(%s, %c) : (!mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[], f32>) -> "      \
  "!mo.tensor<[batch, seq, seq], f32>\n"                                                        \
  "  %p = mo.softmax(%ss) {axis = -1} : !mo.tensor<[batch, seq, seq], f32>\n"                   \
  "  %flat = mo.reshape(%q) : (!mo.tensor<[batch, seq, 8], f32>) -> !mo.tensor<[batch * seq, "  \
  "8], f32>\n"                                                                                  \
  "  %g = mo.constant.external {name = \"gamma\"} : !mo.tensor<[8], f32>\n"                     \
  "  %b = mo.constant.external {name = \"beta\"} : !mo.tensor<[8], f32>\n"                      \
  "  %n = mo.layer_norm(%flat, %g, %b) {epsilon = 1.0e-5} : (!mo.tensor<[batch * seq, 8], "     \
  "f32>, !mo.tensor<[8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[batch * seq, 8], f32>\n"    \
  "  mo.output %p, %n : !mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[batch * seq, 8], f32>\n" \
  "}\n"

#define RELU                                                                                  \
  "mo.graph @a<batch>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) {\n" \
  "  %y = mo.relu(%x) : !mo.tensor<[batch, 8], f32>\n"                                       \
  "  mo.output %y : !mo.tensor<[batch, 8], f32>\n"                                           \
  "}\n"

#define STATIC                                                                          \
  "mo.graph @s(%x: !mo.tensor<[4, 8], f32>) -> (!mo.tensor<[4, 8], f32>) {\n"           \
  "  %y = mo.tanh(%x) : !mo.tensor<[4, 8], f32>\n"                                      \
  "  mo.output %y : !mo.tensor<[4, 8], f32>\n"                                          \
  "}\n"

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* ---- a model with its weights (random, bound) ---- */
#define MAXW 4
typedef struct fixture {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *kg;
  ir_graph *g; /* for the interpreter */
  kiln_tensor *w[MAXW];
  ir_tensor iw[MAXW];
  const char *wname[MAXW];
  int nw;
} fixture;

static void fx_init(fixture *f, const char *text) {
  memset(f, 0, sizeof *f);
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert_not_null(f->ctx, "%s", kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_specialize(f->ctx, KILN_SPECIALIZE_OFF, f->st), 0);
  f->kg = kiln_graph_parse(text, strlen(text), "test", f->st);
  cr_assert_not_null(f->kg, "%s", kiln_status_message(f->st));
  ir_diag d = {0};
  f->g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(f->g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(f->g, &d), 0, "%s", d.msg);
  uint64_t seed = 7;
  for (int i = 0; i < f->g->nnodes; i++) {
    const ir_node *n = f->g->nodes[i];
    if (n->op != IR_OP_CONSTANT_EXTERNAL) continue;
    cr_assert_lt(f->nw, MAXW);
    const ir_type *t = &n->out[0]->type;
    int64_t shape[IR_MAX_RANK];
    for (int a = 0; a < t->rank; a++) cr_assert(ir_dim_is_const(t->dims[a], &shape[a]));
    int k = f->nw++;
    f->wname[k] = ir_node_attr_string(n, "name", NULL);
    f->w[k] = kiln_tensor_new(KILN_FLOAT32, t->rank, shape, f->st);
    float *v = kiln_tensor_data(f->w[k]);
    for (int64_t e = 0; e < kiln_tensor_numel(f->w[k]); e++) v[e] = frand(&seed);
    f->iw[k] = (ir_tensor){.dtype = IR_DT_F32, .rank = t->rank, .data = v};
    memcpy(f->iw[k].shape, shape, sizeof(int64_t) * (size_t)t->rank);
  }
}

static kiln_model *fx_model(fixture *f, int policy) {
  kiln_model *m = kiln_model_compile(f->ctx, f->kg, f->st);
  cr_assert_not_null(m, "%s", kiln_status_message(f->st));
  for (int k = 0; k < f->nw; k++)
    cr_assert_eq(kiln_model_bind_weight(m, f->wname[k], f->w[k], f->st), 0, "%s",
                 kiln_status_message(f->st));
  if (policy >= 0)
    cr_assert_eq(kiln_model_set_specialize(m, (kiln_specialize_policy)policy, f->st), 0);
  return m;
}

static void fx_free(fixture *f) {
  for (int k = 0; k < f->nw; k++) kiln_tensor_free(f->w[k]);
  ir_graph_free(f->g);
  kiln_graph_free(f->kg);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

static const ir_tensor *weight_fn(void *ud, const char *name) {
  fixture *f = ud;
  for (int k = 0; k < f->nw; k++)
    if (strcmp(f->wname[k], name) == 0) return &f->iw[k];
  return NULL;
}

/* Inputs of the fixture's graph with symbol values syms, random data. */
static void make_inputs(fixture *f, const int64_t *syms, uint64_t seed, kiln_tensor **ins) {
  for (int i = 0; i < f->g->ninputs; i++) {
    int64_t shape[IR_MAX_RANK];
    char msg[256];
    cr_assert_eq(ir_eval_shape(&f->g->inputs[i]->type, syms, shape, msg, sizeof msg), 0);
    ins[i] = kiln_tensor_new(KILN_FLOAT32, f->g->inputs[i]->type.rank, shape, f->st);
    float *v = kiln_tensor_data(ins[i]);
    for (int64_t e = 0; e < kiln_tensor_numel(ins[i]); e++) v[e] = frand(&seed);
  }
}

static void run(fixture *f, kiln_model *m, kiln_tensor **ins, kiln_tensor **outs) {
  cr_assert_eq(kiln_model_execute(m, ins, f->g->ninputs, outs, f->g->noutputs, f->st), 0, "%s",
               kiln_status_message(f->st));
}

/* sync model vs off model (bit for bit) vs the interpreter (close). */
static void check_binding(fixture *f, kiln_model *spec, kiln_model *gen, const int64_t *syms,
                          int want_variants) {
  kiln_tensor *ins[4] = {0}, *a[4] = {0}, *b[4] = {0};
  make_inputs(f, syms, 99 + (uint64_t)syms[0], ins);
  run(f, spec, ins, a);
  cr_assert_eq(kiln_model_variants(spec), want_variants);
  run(f, gen, ins, b);
  cr_assert_eq(kiln_model_variants(gen), 0);
  ir_tensor its[4], ref[4];
  for (int i = 0; i < f->g->ninputs; i++) {
    its[i] = (ir_tensor){.dtype = IR_DT_F32, .rank = kiln_tensor_rank(ins[i]),
                         .data = kiln_tensor_data(ins[i])};
    memcpy(its[i].shape, kiln_tensor_shape(ins[i]), sizeof(int64_t) * (size_t)its[i].rank);
  }
  char msg[512];
  cr_assert_eq(ir_interp_run(f->g, its, weight_fn, f, ref, msg, sizeof msg), 0, "%s", msg);
  for (int o = 0; o < f->g->noutputs; o++) {
    int64_t n = kiln_tensor_numel(a[o]);
    cr_assert_eq(n, ir_tensor_numel(&ref[o]));
    cr_assert_eq(memcmp(kiln_tensor_data(a[o]), kiln_tensor_data(b[o]), (size_t)n * 4), 0,
                 "output %d: specialized and generic differ", o);
    const float *x = kiln_tensor_data(a[o]), *r = ref[o].data;
    for (int64_t e = 0; e < n; e++)
      cr_assert(fabsf(x[e] - r[e]) <= 1e-4f * (1 + fabsf(r[e])), "output %d [%lld]: %g vs %g", o,
                (long long)e, x[e], r[e]);
    free(ref[o].data);
    kiln_tensor_free(a[o]);
    kiln_tensor_free(b[o]);
  }
  for (int i = 0; i < f->g->ninputs; i++) kiln_tensor_free(ins[i]);
}

static void execute_binding(fixture *f, kiln_model *m, const int64_t *syms) {
  kiln_tensor *ins[4] = {0}, *outs[4] = {0};
  make_inputs(f, syms, 1, ins);
  run(f, m, ins, outs);
  for (int o = 0; o < f->g->noutputs; o++) kiln_tensor_free(outs[o]);
  for (int i = 0; i < f->g->ninputs; i++) kiln_tensor_free(ins[i]);
}

/* ---- kernel text ---- */
Test(variants, bound_kernel_text_is_static) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(RELU, strlen(RELU), &d);
  cr_assert_not_null(g);
  cr_assert_eq(ir_graph_verify(g, &d), 0);
  int64_t syms[1] = {5};
  char *t = ir_kernel_text_bound(g, g->nodes[0], syms);
  cr_assert_not_null(t);
  cr_assert_not_null(strstr(t, "[5, 8]"), "%s", t);
  cr_assert_null(strstr(t, "d0"), "%s", t);
  ir_graph *k = ir_parse(t, strlen(t), &d); /* parses, round trips */
  cr_assert_not_null(k, "%s: %s", t, d.msg);
  cr_assert_eq(k->nsyms, 0);
  char *t2 = ir_print(k);
  cr_assert_str_eq(t, t2);
  free(t2);
  ir_graph_free(k);
  char *generic = ir_kernel_text(g, g->nodes[0], NULL, NULL);
  cr_assert_str_neq(t, generic);
  free(generic);
  free(t);
  ir_graph_free(g);
}

/* ---- sync ---- */
Test(variants, sync_mlp_matches_generic_and_interp) {
  fixture f;
  fx_init(&f, MLP);
  kiln_model *spec = fx_model(&f, KILN_SPECIALIZE_SYNC), *gen = fx_model(&f, KILN_SPECIALIZE_OFF);
  int64_t b1[1] = {5}, b2[1] = {17};
  check_binding(&f, spec, gen, b1, 1);
  check_binding(&f, spec, gen, b1, 1); /* same binding: no new variant */
  check_binding(&f, spec, gen, b2, 2);
  cr_assert_eq(rt_model_num_specialized(spec), 2);
  cr_assert_eq(rt_model_num_specialized(gen), 0);
  kiln_model_free(spec);
  kiln_model_free(gen);
  fx_free(&f);
}

Test(variants, sync_attention_matches_generic_and_interp) {
  fixture f;
  fx_init(&f, ATTN);
  kiln_model *spec = fx_model(&f, KILN_SPECIALIZE_SYNC), *gen = fx_model(&f, KILN_SPECIALIZE_OFF);
  int64_t b1[2] = {2, 6}, b2[2] = {3, 5};
  check_binding(&f, spec, gen, b1, 1);
  check_binding(&f, spec, gen, b2, 2);
  kiln_model_free(spec);
  kiln_model_free(gen);
  fx_free(&f);
}

/* ---- the bound ---- */
Test(variants, lru_keeps_eight) {
  fixture f;
  fx_init(&f, RELU);
  kiln_model *m = fx_model(&f, KILN_SPECIALIZE_SYNC);
  for (int64_t b = 1; b <= 9; b++) {
    int64_t s[1] = {b};
    execute_binding(&f, m, s);
    cr_assert_eq(kiln_model_variants(m), b < 8 ? (int)b : 8);
  }
  cr_assert_eq(rt_model_num_specialized(m), 9);
  int64_t s9[1] = {9}, s1[1] = {1}, s2[1] = {2};
  execute_binding(&f, m, s9); /* live: no compile */
  cr_assert_eq(rt_model_num_specialized(m), 9);
  execute_binding(&f, m, s1); /* the least recently used was evicted: compiled again */
  cr_assert_eq(rt_model_num_specialized(m), 10);
  cr_assert_eq(kiln_model_variants(m), 8);
  execute_binding(&f, m, s2); /* 2 was the LRU when 1 came back */
  cr_assert_eq(rt_model_num_specialized(m), 11);
  kiln_model_free(m);
  fx_free(&f);
}

/* ---- ahead, off, context policy ---- */
Test(variants, ahead_only_declared) {
  fixture f;
  fx_init(&f, MLP);
  kiln_model *m = fx_model(&f, KILN_SPECIALIZE_AHEAD);
  const char *names[1] = {"batch"};
  int64_t v[1] = {3};
  cr_assert_eq(kiln_model_specialize(m, names, v, 1, f.st), 0, "%s", kiln_status_message(f.st));
  cr_assert_eq(kiln_model_variants(m), 1);
  cr_assert_eq(kiln_model_specialize(m, names, v, 1, f.st), 0); /* again: same variant */
  cr_assert_eq(rt_model_num_specialized(m), 1);
  int64_t s3[1] = {3}, s4[1] = {4};
  execute_binding(&f, m, s4);
  execute_binding(&f, m, s3);
  cr_assert_eq(kiln_model_variants(m), 1);
  cr_assert_eq(rt_model_num_specialized(m), 1);
  const char *bad[1] = {"seq"};
  cr_assert_eq(kiln_model_specialize(m, bad, v, 1, f.st), -1);
  cr_assert_not_null(strstr(kiln_status_message(f.st), "seq"));
  cr_assert_eq(kiln_model_specialize(m, NULL, NULL, 0, f.st), -1); /* batch has no value */
  cr_assert_not_null(strstr(kiln_status_message(f.st), "batch"));
  kiln_model_free(m);
  fx_free(&f);
}

Test(variants, off_none_and_context_policy) {
  fixture f;
  fx_init(&f, RELU);
  int64_t s[1] = {4};
  cr_assert_eq(kiln_context_set_specialize(f.ctx, KILN_SPECIALIZE_OFF, f.st), 0);
  kiln_model *off = fx_model(&f, -1); /* the context's: off (set above; async by default) */
  execute_binding(&f, off, s);
  cr_assert_eq(kiln_model_variants(off), 0);
  cr_assert_eq(kiln_context_set_specialize(f.ctx, KILN_SPECIALIZE_SYNC, f.st), 0);
  execute_binding(&f, off, s); /* now inherits sync */
  cr_assert_eq(kiln_model_variants(off), 1);
  kiln_model *own = fx_model(&f, KILN_SPECIALIZE_OFF); /* overrides the context */
  execute_binding(&f, own, s);
  cr_assert_eq(kiln_model_variants(own), 0);
  cr_assert_eq(kiln_model_set_specialize(own, (kiln_specialize_policy)42, f.st), -1);
  cr_assert_eq(kiln_context_set_specialize(f.ctx, (kiln_specialize_policy)-3, f.st), -1);
  cr_assert_eq(kiln_model_variants(NULL), -1);
  kiln_model_free(off);
  kiln_model_free(own);
  fx_free(&f);
}

/* ---- static graphs ---- */
Test(variants, static_graph_never_specialized) {
  fixture f;
  fx_init(&f, STATIC);
  kiln_model *m = fx_model(&f, KILN_SPECIALIZE_SYNC);
  int64_t none[1] = {0};
  execute_binding(&f, m, none);
  cr_assert_eq(kiln_model_variants(m), 0);
  cr_assert_eq(kiln_model_specialize(m, NULL, NULL, 0, f.st), 0);
  cr_assert_eq(kiln_model_variants(m), 0);
  cr_assert_eq(rt_model_num_specialized(m), 0);
  kiln_model_free(m);
  fx_free(&f);
}

/* ---- concurrency ---- */
#define NB 5
typedef struct conc {
  fixture *f;
  kiln_model *m;
  kiln_tensor *ins[NB][1];
  kiln_tensor *want[NB];
  int bad;
} conc;

static void *worker(void *arg) {
  conc *c = arg;
  kiln_status *st = kiln_status_new();
  for (int it = 0; it < 6; it++)
    for (int b = 0; b < NB; b++) {
      kiln_tensor *out[1] = {0};
      if (kiln_model_execute(c->m, c->ins[b], 1, out, 1, st) != 0 ||
          memcmp(kiln_tensor_data(out[0]), kiln_tensor_data(c->want[b]),
                 kiln_tensor_nbytes(c->want[b])) != 0)
        __atomic_add_fetch(&c->bad, 1, __ATOMIC_RELAXED);
      kiln_tensor_free(out[0]);
    }
  kiln_status_free(st);
  return NULL;
}

Test(variants, concurrent_sync_executes) {
  fixture f;
  fx_init(&f, MLP);
  conc c = {.f = &f};
  kiln_model *gen = fx_model(&f, KILN_SPECIALIZE_OFF);
  c.m = fx_model(&f, KILN_SPECIALIZE_SYNC);
  for (int b = 0; b < NB; b++) {
    int64_t s[1] = {1 + 3 * b};
    make_inputs(&f, s, 5 + (uint64_t)b, c.ins[b]);
    kiln_tensor *o[1] = {0};
    run(&f, gen, c.ins[b], o);
    c.want[b] = o[0];
  }
  pthread_t th[4];
  for (int i = 0; i < 4; i++) cr_assert_eq(pthread_create(&th[i], NULL, worker, &c), 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  cr_assert_eq(c.bad, 0, "%d executes failed or differed", c.bad);
  cr_assert_eq(kiln_model_variants(c.m), NB);
  for (int b = 0; b < NB; b++) {
    kiln_tensor_free(c.ins[b][0]);
    kiln_tensor_free(c.want[b]);
  }
  kiln_model_free(c.m);
  kiln_model_free(gen);
  fx_free(&f);
}
