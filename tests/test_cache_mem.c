/* test_cache_mem.c - per-kernel compile units and the context's memory cache:
 * the canonical kernel text (round trip, renamed symbols and values), what
 * changes a key and what does not, sharing of entries across graphs and
 * models, hit / miss / compile counters, entries kept after their models
 * are freed, concurrent compiles of one graph from 4 threads (one compile per
 * kernel, no duplicate definition), and results equal to the reference
 * interpreter, including kernels whose symbols are a permutation of the
 * graph's. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/cache_mem.h"
#include "src/rt.h"

/* The counts below are those of the generic kernels, one per op: no
 * background specialization (the default policy, async) may add compiles
 * meanwhile, and no fusion joins ops into one kernel (test_fusion and
 * test_cache_persist count fused kernels). */
__attribute__((constructor)) static void specialize_off(void) {
  setenv("KILN_SPECIALIZE", "off", 1);
  setenv("KILN_FUSE", "off", 1);
}

/* ---- graphs ---- */
#define RELU_A                                                                              \
  "mo.graph @a<batch>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) {\n" \
  "  %y = mo.relu(%x) : !mo.tensor<[batch, 8], f32>\n"                                       \
  "  mo.output %y : !mo.tensor<[batch, 8], f32>\n"                                           \
  "}\n"
#define RELU_B                                                                                \
  "mo.graph @other<n>(%in: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"         \
  "  %out = mo.relu(%in) : !mo.tensor<[n, 8], f32>\n"                                         \
  "  mo.output %out : !mo.tensor<[n, 8], f32>\n"                                              \
  "}\n"
/* Three kernels, two of them equal up to names: 2 distinct kernels. */
#define CHAIN                                                                                 \
  "mo.graph @chain<n>(%x: !mo.tensor<[n, 16], f32>, %y: !mo.tensor<[n, 16], f32>) -> "       \
  "(!mo.tensor<[n, 16], f32>) {\n"                                                            \
  "  %s = mo.add(%x, %y) : !mo.tensor<[n, 16], f32>\n"                                        \
  "  %t = mo.add(%s, %y) : !mo.tensor<[n, 16], f32>\n"                                        \
  "  %u = mo.tanh(%t) : !mo.tensor<[n, 16], f32>\n"                                           \
  "  mo.output %u : !mo.tensor<[n, 16], f32>\n"                                               \
  "}\n"
/* Kernels whose symbols are not the graph's first ones, in another order:
 * relu(%y) uses only b (graph symbol 1); concat(%y, %x) meets b before a. */
#define PERMUTED                                                                              \
  "mo.graph @perm<a, b>(%x: !mo.tensor<[a, 4], f32>, %y: !mo.tensor<[b, 4], f32>) -> "       \
  "(!mo.tensor<[b, 4], f32>, !mo.tensor<[a + b, 4], f32>) {\n"                                \
  "  %p = mo.relu(%y) : !mo.tensor<[b, 4], f32>\n"                                            \
  "  %c = mo.concat(%p, %x) {axis = 0} : (!mo.tensor<[b, 4], f32>, !mo.tensor<[a, 4], f32>) " \
  "-> !mo.tensor<[a + b, 4], f32>\n"                                                          \
  "  mo.output %p, %c : !mo.tensor<[b, 4], f32>, !mo.tensor<[a + b, 4], f32>\n"              \
  "}\n"

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse: %d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

static kiln_graph *kgraph(const char *text, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  return g;
}

static kiln_model *compile(kiln_context *ctx, kiln_graph *g, kiln_status *st) {
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  return m;
}

static rt_cache_stats stats(kiln_context *ctx) {
  rt_cache_stats s;
  rt_cache_mem_stats(rt_context_cache(ctx), &s);
  return s;
}

/* Text of the first kernel node of `graph` (freed by the caller). */
static char *first_kernel_text(const char *graph, int *map, int *nsyms) {
  ir_graph *g = parse(graph);
  char *t = NULL;
  for (int i = 0; i < g->nnodes && !t; i++)
    if (g->nodes[i]->op != IR_OP_CONSTANT && g->nodes[i]->op != IR_OP_CONSTANT_EXTERNAL)
      t = ir_kernel_text(g, g->nodes[i], map, nsyms);
  cr_assert_not_null(t);
  ir_graph_free(g);
  return t;
}

static void key_of(const char *graph, kc_key *k) {
  char *t = first_kernel_text(graph, NULL, NULL);
  rt_key_parts p = {t, "x86_64-pc-linux-gnu", "cpu", "+f", "opt=O3", "0.1.0", "19.1.7"};
  rt_key_compute(&p, k);
  free(t);
}

static bool key_eq(const kc_key *a, const kc_key *b) {
  return a->lo == b->lo && a->hi == b->hi;
}

/* ---- execute and compare with the interpreter ---- */
static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* Run m (compiled from `text`) on random f32 inputs with the given shapes
 * (rank 2 each) and compare every output with ir_interp_run. */
static void check_against_interp(kiln_model *m, const char *text, int nin,
                                 const int64_t (*shapes)[2], uint64_t seed) {
  kiln_status *st = kiln_status_new();
  ir_graph *g = parse(text);
  cr_assert_eq(g->ninputs, nin);
  kiln_tensor *ins[4] = {0};
  ir_tensor its[4];
  for (int i = 0; i < nin; i++) {
    ins[i] = kiln_tensor_new(KILN_FLOAT32, 2, shapes[i], st);
    cr_assert_not_null(ins[i]);
    float *v = kiln_tensor_data(ins[i]);
    for (int64_t k = 0; k < kiln_tensor_numel(ins[i]); k++) v[k] = frand(&seed);
    its[i] = (ir_tensor){.dtype = IR_DT_F32, .rank = 2, .data = v};
    its[i].shape[0] = shapes[i][0];
    its[i].shape[1] = shapes[i][1];
  }
  kiln_tensor *outs[4] = {0};
  cr_assert_eq(kiln_model_execute(m, ins, nin, outs, g->noutputs, st), 0, "%s",
               kiln_status_message(st));
  ir_tensor ref[4];
  char msg[512];
  cr_assert_eq(ir_interp_run(g, its, NULL, NULL, ref, msg, sizeof msg), 0, "%s", msg);
  for (int o = 0; o < g->noutputs; o++) {
    int64_t n = ir_tensor_numel(&ref[o]);
    cr_assert_eq(kiln_tensor_numel(outs[o]), n, "output %d size", o);
    const float *a = kiln_tensor_data(outs[o]), *b = ref[o].data;
    for (int64_t k = 0; k < n; k++)
      cr_assert(fabsf(a[k] - b[k]) <= 1e-5f * (1 + fabsf(b[k])), "output %d [%lld]: jit %g, interp %g",
                o, (long long)k, a[k], b[k]);
    free(ref[o].data);
    kiln_tensor_free(outs[o]);
  }
  for (int i = 0; i < nin; i++) kiln_tensor_free(ins[i]);
  ir_graph_free(g);
  kiln_status_free(st);
}

/* ---- kernel text ---- */

Test(kernel_text, canonical_names_and_exact_text) {
  int map[4] = {-1, -1, -1, -1}, ns = -1;
  char *t = first_kernel_text(RELU_B, map, &ns);
  cr_assert_str_eq(t, "mo.graph @kernel<d0>(%a0: !mo.tensor<[d0, 8], f32>) -> "
                      "(!mo.tensor<[d0, 8], f32>) {\n"
                      "  %r0 = mo.relu(%a0) : !mo.tensor<[d0, 8], f32>\n"
                      "  mo.output %r0 : !mo.tensor<[d0, 8], f32>\n"
                      "}\n");
  cr_assert_eq(ns, 1);
  cr_assert_eq(map[0], 0);
  free(t);
}

Test(kernel_text, round_trips_through_parse_and_print) {
  const char *graphs[] = {RELU_A, CHAIN, PERMUTED};
  int kernels = 0;
  for (size_t gi = 0; gi < sizeof graphs / sizeof *graphs; gi++) {
    ir_graph *g = parse(graphs[gi]);
    for (int i = 0; i < g->nnodes; i++) {
      char *t = ir_kernel_text(g, g->nodes[i], NULL, NULL);
      cr_assert_not_null(t);
      ir_graph *k = parse(t);
      cr_expect_eq(k->nnodes, 1);
      char *again = ir_print(k);
      cr_assert_str_eq(again, t);
      free(again);
      ir_graph_free(k);
      free(t);
      kernels++;
    }
    ir_graph_free(g);
  }
  cr_expect_eq(kernels, 6);
}

Test(kernel_text, symbols_renamed_in_order_of_first_use) {
  ir_graph *g = parse(PERMUTED);
  int map[2] = {-1, -1}, ns = 0;
  char *t = ir_kernel_text(g, g->nodes[0], map, &ns); /* relu(%y): only b */
  cr_assert_eq(ns, 1);
  cr_expect_eq(map[0], 1);
  cr_expect(strstr(t, "@kernel<d0>("), "%s", t);
  free(t);
  t = ir_kernel_text(g, g->nodes[1], map, &ns); /* concat(%p, %x): b then a */
  cr_assert_eq(ns, 2);
  cr_expect_eq(map[0], 1);
  cr_expect_eq(map[1], 0);
  cr_expect(strstr(t, "[d0 + d1, 4]"), "%s", t);
  cr_expect(!strstr(t, "perm") && !strstr(t, "%p") && !strstr(t, "%x"), "%s", t);
  free(t);
  ir_graph_free(g);
}

/* ---- keys ---- */

Test(keys, symbol_and_value_names_do_not_change_the_key) {
  kc_key a, b;
  key_of(RELU_A, &a);
  key_of(RELU_B, &b);
  cr_assert(key_eq(&a, &b));
}

Test(keys, attribute_dtype_and_static_dim_change_the_key) {
  const char *base = "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
                     "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
                     "  mo.output %y : !mo.tensor<[n, 8], f32>\n}\n";
  const char *attr = "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
                     "  %y = mo.softmax(%x) {axis = 0} : !mo.tensor<[n, 8], f32>\n"
                     "  mo.output %y : !mo.tensor<[n, 8], f32>\n}\n";
  const char *dtype = "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f64>) -> (!mo.tensor<[n, 8], f64>) {\n"
                      "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 8], f64>\n"
                      "  mo.output %y : !mo.tensor<[n, 8], f64>\n}\n";
  const char *dim = "mo.graph @g<n>(%x: !mo.tensor<[n, 9], f32>) -> (!mo.tensor<[n, 9], f32>) {\n"
                    "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 9], f32>\n"
                    "  mo.output %y : !mo.tensor<[n, 9], f32>\n}\n";
  const char *stat = "mo.graph @g(%x: !mo.tensor<[4, 8], f32>) -> (!mo.tensor<[4, 8], f32>) {\n"
                     "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[4, 8], f32>\n"
                     "  mo.output %y : !mo.tensor<[4, 8], f32>\n}\n";
  const char *renamed = "mo.graph @h<m>(%q: !mo.tensor<[m, 8], f32>) -> (!mo.tensor<[m, 8], f32>) {\n"
                        "  %z = mo.softmax(%q) {axis = -1} : !mo.tensor<[m, 8], f32>\n"
                        "  mo.output %z : !mo.tensor<[m, 8], f32>\n}\n";
  kc_key k0, k;
  key_of(base, &k0);
  key_of(attr, &k);
  cr_expect(!key_eq(&k0, &k), "attribute");
  key_of(dtype, &k);
  cr_expect(!key_eq(&k0, &k), "dtype");
  key_of(dim, &k);
  cr_expect(!key_eq(&k0, &k), "static dim");
  key_of(stat, &k);
  cr_expect(!key_eq(&k0, &k), "symbolic vs static dim");
  key_of(renamed, &k);
  cr_expect(key_eq(&k0, &k), "symbol name");
}

Test(keys, every_component_counts) {
  rt_key_parts p = {"text", "triple", "cpu", "+f", "opt=O3", "0.1.0", "19.1.7"};
  kc_key k0, k;
  rt_key_compute(&p, &k0);
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    rt_key_parts q = p;
    const char **f[] = {&q.kernel, &q.triple, &q.cpu, &q.features, &q.options, &q.kiln_version,
                        &q.llvm_version};
    *f[i] = "changed";
    rt_key_compute(&q, &k);
    cr_expect(!key_eq(&k0, &k), "part %s", rt_key_part_name(i));
  }
  /* Length-prefixed parts: moving bytes between two parts changes the key. */
  rt_key_parts q = p;
  q.cpu = "cpu+";
  q.features = "f";
  rt_key_compute(&q, &k);
  cr_expect(!key_eq(&k0, &k));
  char hex[33];
  rt_key_hex(&k0, hex);
  cr_expect_eq(strlen(hex), 32);
}

/* ---- the memory cache ---- */

Test(cache_mem, same_op_in_two_graphs_shares_one_entry) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *ga = kgraph(RELU_A, st), *gb = kgraph(RELU_B, st);
  kiln_model *ma = compile(ctx, ga, st);
  rt_cache_stats s = stats(ctx);
  cr_expect_eq(s.misses, 1);
  cr_expect_eq(s.compiles, 1);
  cr_expect_eq(s.hits, 0);
  kiln_model *mb = compile(ctx, gb, st);
  s = stats(ctx);
  cr_expect_eq(s.hits, 1);
  cr_expect_eq(s.misses, 1);
  cr_expect_eq(s.compiles, 1);
  cr_expect_eq(s.entries, 1);
  cr_expect_eq(ma->kentries[0], mb->kentries[0]);
  cr_expect_eq((void *)ma->kernels[0], (void *)mb->kernels[0]);
  cr_expect_eq(rt_kentry_refs(rt_context_cache(ctx), ma->kentries[0]), 2);
  const int64_t sh[1][2] = {{3, 8}};
  check_against_interp(ma, RELU_A, 1, sh, 1);
  check_against_interp(mb, RELU_B, 1, sh, 2);
  kiln_model_free(ma);
  kiln_model_free(mb);
  kiln_graph_free(ga);
  kiln_graph_free(gb);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(cache_mem, same_graph_twice_is_all_hits) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kgraph(CHAIN, st);
  kiln_model *m1 = compile(ctx, g, st);
  rt_cache_stats s = stats(ctx);
  /* the two adds are one kernel: the second is a hit already */
  cr_expect_eq(s.misses, 2);
  cr_expect_eq(s.compiles, 2);
  cr_expect_eq(s.hits, 1);
  kiln_model *m2 = compile(ctx, g, st);
  s = stats(ctx);
  cr_expect_eq(s.misses, 2);
  cr_expect_eq(s.compiles, 2);
  cr_expect_eq(s.hits, 4);
  cr_expect_eq(s.entries, 2);
  const int64_t sh[2][2] = {{5, 16}, {5, 16}};
  check_against_interp(m2, CHAIN, 2, sh, 3);
  kiln_model_free(m1);
  check_against_interp(m2, CHAIN, 2, sh, 4); /* m1's release left m2's code alone */
  kiln_model_free(m2);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

static void free_order_then_hit(bool first_first) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kgraph(CHAIN, st);
  kiln_model *m1 = compile(ctx, g, st), *m2 = compile(ctx, g, st);
  kiln_model_free(first_first ? m1 : m2);
  kiln_model_free(first_first ? m2 : m1);
  rt_cache_stats before = stats(ctx);
  cr_expect_eq(before.entries, 2, "entries are kept after their last model");
  kiln_model *m3 = compile(ctx, g, st);
  rt_cache_stats after = stats(ctx);
  cr_expect_eq(after.compiles, before.compiles);
  cr_expect_eq(after.misses, before.misses);
  cr_expect_eq(after.hits, before.hits + 3);
  const int64_t sh[2][2] = {{2, 16}, {2, 16}};
  check_against_interp(m3, CHAIN, 2, sh, 5);
  kiln_model_free(m3);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(cache_mem, models_freed_in_order_then_new_model_hits) { free_order_then_hit(true); }
Test(cache_mem, models_freed_in_reverse_then_new_model_hits) { free_order_then_hit(false); }

Test(cache_mem, permuted_kernel_symbols_match_the_interpreter) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kgraph(PERMUTED, st);
  kiln_model *m = compile(ctx, g, st);
  cr_expect_not_null(m->ksym_map[0], "relu(%%y) reads graph symbol 1 as its symbol 0");
  cr_expect_not_null(m->ksym_map[1]);
  const int64_t sh[2][2] = {{3, 4}, {5, 4}}; /* a = 3, b = 5 */
  check_against_interp(m, PERMUTED, 2, sh, 6);
  const int64_t sh2[2][2] = {{7, 4}, {1, 4}};
  check_against_interp(m, PERMUTED, 2, sh2, 7);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(cache_mem, mlp_matches_interpreter_and_second_compile_hits) {
  const char *mlp =
      "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 12], f32>, %w1: !mo.tensor<[12, 6], f32>, "
      "%w2: !mo.tensor<[6, 3], f32>) -> (!mo.tensor<[batch, 3], f32>) {\n"
      "  %h = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 12], f32>, !mo.tensor<[12, 6], f32>) -> "
      "!mo.tensor<[batch, 6], f32>\n"
      "  %r = mo.relu(%h) : !mo.tensor<[batch, 6], f32>\n"
      "  %y = mo.matmul(%r, %w2) : (!mo.tensor<[batch, 6], f32>, !mo.tensor<[6, 3], f32>) -> "
      "!mo.tensor<[batch, 3], f32>\n"
      "  mo.output %y : !mo.tensor<[batch, 3], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kgraph(mlp, st);
  kiln_model *m = compile(ctx, g, st);
  const int64_t sh[3][2] = {{4, 12}, {12, 6}, {6, 3}};
  check_against_interp(m, mlp, 3, sh, 8);
  kiln_model *m2 = compile(ctx, g, st);
  rt_cache_stats s = stats(ctx);
  cr_expect_eq(s.compiles, 3);
  cr_expect_eq(s.hits, 3);
  check_against_interp(m2, mlp, 3, sh, 9);
  kiln_model_free(m);
  kiln_model_free(m2);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- threads ---- */
typedef struct race {
  kiln_context *ctx;
  kiln_graph *g;
  pthread_barrier_t *go;
  kiln_model *m;
  char err[512];
} race;

static void *race_compile(void *p) {
  race *r = p;
  kiln_status *st = kiln_status_new();
  pthread_barrier_wait(r->go);
  r->m = kiln_model_compile(r->ctx, r->g, st);
  if (!r->m) snprintf(r->err, sizeof r->err, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return NULL;
}

Test(cache_mem, four_threads_compile_one_graph_once) {
  enum { N = 4 };
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kgraph(CHAIN, st);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, N);
  race r[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    r[i] = (race){.ctx = ctx, .g = g, .go = &go};
    cr_assert_eq(pthread_create(&th[i], NULL, race_compile, &r[i]), 0);
  }
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&go);
  for (int i = 0; i < N; i++) cr_assert_not_null(r[i].m, "thread %d: %s", i, r[i].err);
  rt_cache_stats s = stats(ctx);
  cr_expect_eq(s.compiles, 2, "one compile per distinct kernel, got %llu",
               (unsigned long long)s.compiles);
  cr_expect_eq(s.misses, 2);
  cr_expect_eq(s.hits, 3 * N - 2);
  cr_expect_eq(s.entries, 2);
  const int64_t sh[2][2] = {{6, 16}, {6, 16}};
  for (int i = 0; i < N; i++) {
    cr_expect_eq((void *)r[i].m->kernels[0], (void *)r[0].m->kernels[0]);
    check_against_interp(r[i].m, CHAIN, 2, sh, 10 + (uint64_t)i);
  }
  for (int i = 0; i < N; i++) kiln_model_free(r[i].m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(cache_mem, compile_error_leaves_no_entry) {
  /* A failed compile leaves no entry behind (and a later get tries again).
   * Every op a verified graph can hold lowers, so drive the cache directly
   * with texts that fail: no kernel node, and text that does not parse. */
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  rt_kentry *e = NULL;
  jit_kernel_fn fn = NULL;
  char err[512] = "";
  const char *text = "mo.graph @kernel(%a0: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
                     "  mo.output %a0 : !mo.tensor<[2], f32>\n}\n";
  cr_expect_eq(rt_cache_mem_get(rt_context_cache(ctx), text, &e, &fn, err, sizeof err), -1);
  cr_expect_null(e);
  cr_expect(strstr(err, "kernel node"), "%s", err); /* the JIT names what is missing */
  cr_expect_eq(rt_cache_mem_get(rt_context_cache(ctx), "not mo text", &e, &fn, err, sizeof err),
               -1);
  rt_cache_stats s = stats(ctx);
  cr_expect_eq(s.entries, 0);
  cr_expect_eq(s.misses, 2);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- the disk cache's hook ---- */
typedef struct store {
  kc_key key;
  void *obj;
  size_t len;
  int gets, puts;
} store;

static int store_get(void *ud, const kc_key *key, const rt_key_parts *parts, void **obj,
                     size_t *len) {
  store *s = ud;
  s->gets++;
  if (!s->obj || key->lo != s->key.lo || key->hi != s->key.hi) return -1;
  *obj = malloc(s->len);
  memcpy(*obj, s->obj, s->len);
  *len = s->len;
  return 0;
}

static void store_put(void *ud, const kc_key *key, const rt_key_parts *parts,
                      const void *obj, size_t len) {
  store *s = ud;
  s->puts++;
  free(s->obj);
  s->key = *key;
  s->obj = malloc(len);
  memcpy(s->obj, obj, len);
  s->len = len;
}

Test(cache_mem, object_bytes_load_in_another_context) {
  store s = {0};
  rt_cache_backing bk = {&s, store_get, store_put};
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kgraph(RELU_A, st);
  kiln_context *c1 = kiln_context_new(st), *c2 = kiln_context_new(st);
  rt_cache_mem_set_backing(rt_context_cache(c1), &bk);
  rt_cache_mem_set_backing(rt_context_cache(c2), &bk);
  kiln_model *m1 = compile(c1, g, st);
  cr_expect_eq(s.puts, 1);
  kiln_model *m2 = compile(c2, g, st); /* loads c1's object: no compile */
  rt_cache_stats s2 = stats(c2);
  cr_expect_eq(s2.compiles, 0);
  cr_expect_eq(s2.backing_hits, 1);
  const int64_t sh[1][2] = {{4, 8}};
  check_against_interp(m2, RELU_A, 1, sh, 11);
  kiln_model_free(m1);
  kiln_model_free(m2);
  kiln_context_free(c1);
  kiln_context_free(c2);
  kiln_graph_free(g);
  kiln_status_free(st);
  free(s.obj);
}
