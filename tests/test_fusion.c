/* test_fusion.c - the fusion pass (ir/fuse.c), mo.fused in the IR (verify,
 * clone, interpreter, kernel text) and its kernels (jit/fused.c, the
 * elementwise group emitter, the GEMM epilogue), plus split kernels (kernel
 * ABI part / nparts).
 *
 * Numbers: each case is parsed, run by the interpreter (the oracle), fused,
 * run by the interpreter again (must be identical), and compiled both
 * unfused and fused node by node the way the runtime does it (each node's
 * kernel text, ir_kernel_text, parsed back with ir_parse_kernel_text,
 * jit_compile_object, jit_load_object; a kernel reads its own symbols,
 * mapped from the graph's); the fused kernels, called with
 * every nparts in 1..7 (parts one after the other), must equal the unfused
 * kernels bit for bit (fusion keeps every member's rounding, a split never
 * changes how an element is computed) and the oracle within a tolerance
 * (libm vs LLVM's math, GEMM sum order). Inputs are seeded: floats in
 * [-2, 2], ints in [-5, 5], bools 0 / 1, every result buffer starts as
 * garbage. Also: the call-free f32 erf and exp the elementwise lowering
 * uses on the host (so fused chains with gelu / sigmoid vectorize), each
 * within an ulp of libm; mo.custom nodes marked kiln.elementwise joining
 * groups (their attributes kept in the kernel text); groups bounded in
 * nodes and in the values they read from outside. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "jit/jit.h"

static jit_engine *E;
static char err[2048];

static void setup(void) {
  err[0] = 0;
  E = jit_engine_new(err, sizeof err);
  cr_assert_not_null(E, "jit_engine_new: %s", err);
}

static void teardown(void) {
  jit_engine_free(E);
  E = NULL;
}

TestSuite(fusion, .init = setup, .fini = teardown);

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "ir_parse: %d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

/* A graph that carries the runtime's kiln.* facts, as the runtime stamps
 * them (user text cannot): read through the kernel-text entry. */
static ir_graph *parse_stamped(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse_kernel_text(text, strlen(text), &d);
  cr_assert_not_null(g, "ir_parse_kernel_text: %d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

/* A fused clone of g; *nfused receives the pass's count. */
static ir_graph *fused_clone(const ir_graph *g, int *nfused) {
  ir_graph *f = ir_graph_clone(g);
  cr_assert_not_null(f);
  ir_diag d = {0};
  int n = ir_graph_fuse(f, IR_FUSE_SOFTMAX, &d);
  cr_assert(n >= 0, "ir_graph_fuse: %s", d.msg);
  if (nfused) *nfused = n;
  d = (ir_diag){0};
  cr_assert(ir_graph_verify(f, &d) == 0, "the fused graph does not verify: %s", d.msg);
  return f;
}

/* ---- compiling, node by node as the runtime does ---- */

/* The loaded kernels of a graph: node i's code and kernel (NULL for nodes
 * without one), and its kernel's symbols: kernel symbol j is graph symbol
 * map[i][j], nks[i] of them. */
typedef struct compiled {
  int nnodes;
  jit_code **code;
  jit_kernel_fn *fn;
  int **map;
  int *nks;
} compiled;

static bool has_kernel(const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  return info && info->cls != IR_CLS_CONSTANT && info->cls != IR_CLS_CONSTANT_EXTERNAL;
}

/* Every kernel node of g compiled from its kernel text and loaded into E
 * under a name of its own (unique in the engine: one graph may be compiled
 * twice). Free with compiled_free. */
static compiled *compile_graph(const ir_graph *g) {
  static unsigned serial; /* one engine per test: names stay unique within it */
  compiled *c = calloc(1, sizeof *c);
  cr_assert_not_null(c);
  c->nnodes = g->nnodes;
  c->code = calloc((size_t)g->nnodes + 1, sizeof *c->code);
  c->fn = calloc((size_t)g->nnodes + 1, sizeof *c->fn);
  c->map = calloc((size_t)g->nnodes + 1, sizeof *c->map);
  c->nks = calloc((size_t)g->nnodes + 1, sizeof *c->nks);
  cr_assert(c->code && c->fn && c->map && c->nks);
  unsigned id = serial++;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (!has_kernel(n)) continue;
    c->map[i] = calloc((size_t)g->nsyms + 1, sizeof *c->map[i]);
    cr_assert_not_null(c->map[i]);
    char *text = ir_kernel_text(g, n, c->map[i], &c->nks[i]);
    cr_assert_not_null(text, "no kernel text for node %d", i);
    ir_diag d = {0};
    ir_graph *kg = ir_parse_kernel_text(text, strlen(text), &d);
    cr_assert_not_null(kg, "node %d: kernel text: %d:%d: %s\n%s", i, d.line, d.col, d.msg, text);
    free(text);
    char name[64];
    snprintf(name, sizeof name, "fusion_%u_%d", id, i);
    void *obj = NULL;
    size_t len = 0;
    cr_assert_eq(jit_compile_object(E, kg, name, &obj, &len, err, sizeof err), 0,
                 "node %d: jit_compile_object: %s", i, err);
    ir_graph_free(kg);
    c->code[i] = jit_load_object(E, obj, len, name, &c->fn[i], err, sizeof err);
    free(obj);
    cr_assert_not_null(c->code[i], "node %d: jit_load_object: %s", i, err);
  }
  return c;
}

static void compiled_free(compiled *c) {
  if (!c) return;
  for (int i = 0; i < c->nnodes; i++) {
    jit_code_free(E, c->code[i]);
    free(c->map[i]);
  }
  free(c->code);
  free(c->fn);
  free(c->map);
  free(c->nks);
  free(c);
}

/* Node i's kernel symbols from the graph's symbol values syms, into ks
 * (room for the graph's symbol count). */
static const int64_t *kernel_syms(const compiled *c, int i, const int64_t *syms, int64_t *ks) {
  for (int j = 0; j < c->nks[i]; j++) ks[j] = syms[c->map[i][j]];
  return ks;
}

/* ---- data ---- */

static uint32_t rnd(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static size_t tensor_bytes(const ir_tensor *t) {
  return (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
}

static void fill(ir_tensor *t, uint32_t seed) {
  int64_t n = ir_tensor_numel(t);
  uint32_t s = seed * 2654435761u + 7;
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(rnd(&s) % 1000001) / 1000000.0 * 4.0 - 2.0;
    int64_t iv = (int64_t)(rnd(&s) % 11) - 5;
    char *p = (char *)t->data + (size_t)i * ir_dtype_size(t->dtype);
    switch (t->dtype) {
    case IR_DT_F32: *(float *)p = (float)u; break;
    case IR_DT_F64: *(double *)p = u; break;
    case IR_DT_SI32: *(int32_t *)p = (int32_t)iv; break;
    case IR_DT_SI64: *(int64_t *)p = iv; break;
    case IR_DT_BOOL: *(uint8_t *)p = (uint8_t)(iv & 1); break;
    default: memset(p, 0, ir_dtype_size(t->dtype)); break;
    }
  }
}

/* Inputs of g under syms, seeded. */
static ir_tensor *make_inputs(const ir_graph *g, const int64_t *syms, uint32_t seed) {
  ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
  cr_assert_not_null(in);
  char msg[256];
  for (int i = 0; i < g->ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    cr_assert(ir_eval_shape(t, syms, in[i].shape, msg, sizeof msg) == 0, "%s", msg);
    in[i].data = malloc(tensor_bytes(&in[i]) + 1);
    cr_assert_not_null(in[i].data);
    fill(&in[i], seed + 31u * (uint32_t)i);
  }
  return in;
}

static void free_tensors(ir_tensor *t, int n) {
  for (int i = 0; t && i < n; i++) free(t[i].data);
  free(t);
}

static ir_tensor *interp(const ir_graph *g, const ir_tensor *in) {
  ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
  char msg[512] = "";
  cr_assert(ir_interp_run(g, in, NULL, NULL, out, msg, sizeof msg) == 0, "interp: %s", msg);
  return out;
}

typedef struct part_job {
  jit_kernel_fn fn;
  void **args;
  const int64_t *syms;
  int64_t part, nparts;
  int32_t rc;
} part_job;

static void *part_thread(void *p) {
  part_job *j = p;
  j->rc = j->fn(j->args, j->syms, j->part, j->nparts);
  return NULL;
}

/* Run compiled g (kernels c) on in with every kernel split in nparts parts,
 * called one after the other (only part `only` when >= 0), or from nparts
 * threads at once when `threads`. Outputs malloc'd; what no part ran wrote
 * is left at 0xA5 bytes. */
static ir_tensor *jit_run_only(const ir_graph *g, const compiled *c, const ir_tensor *in,
                               const int64_t *syms, int nparts, bool threads, int only) {
  void **buf = calloc((size_t)g->nvalues + 1, sizeof *buf);
  bool *own = calloc((size_t)g->nvalues + 1, sizeof *own);
  int64_t *ks = calloc((size_t)g->nsyms + 1, sizeof *ks);
  cr_assert(buf && own && ks);
  for (int i = 0; i < g->ninputs; i++) buf[g->inputs[i]->id] = in[i].data;
  char msg[256];
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    ir_tensor t = {.dtype = n->out[0]->type.dtype, .rank = n->out[0]->type.rank};
    cr_assert(ir_eval_shape(&n->out[0]->type, syms, t.shape, msg, sizeof msg) == 0, "%s", msg);
    size_t bytes = tensor_bytes(&t), es = ir_dtype_size(t.dtype);
    if (n->op == IR_OP_CONSTANT) {
      const ir_attr *a = ir_node_attr(n, "value");
      char *p = malloc(bytes + 1);
      cr_assert(p && a);
      for (size_t k = 0; k < bytes / es; k++)
        memcpy(p + k * es, (char *)a->u.dense.data + (a->u.dense.numel == 1 ? 0 : k * es), es);
      buf[n->out[0]->id] = p;
      own[n->out[0]->id] = true;
      continue;
    }
    for (int k = 0; k < n->nout; k++) {
      ir_tensor o = {.dtype = n->out[k]->type.dtype, .rank = n->out[k]->type.rank};
      cr_assert(ir_eval_shape(&n->out[k]->type, syms, o.shape, msg, sizeof msg) == 0);
      size_t b = tensor_bytes(&o);
      buf[n->out[k]->id] = malloc(b + 1);
      cr_assert_not_null(buf[n->out[k]->id]);
      memset(buf[n->out[k]->id], 0xA5, b + 1); /* garbage: every element must be written */
      own[n->out[k]->id] = true;
    }
    void *args[n->nin + n->nout + 1]; /* a fused node reads up to IR_FUSE_MAX_INPUTS */
    int na = 0;
    for (int k = 0; k < n->nin; k++) args[na++] = buf[n->in[k]->id];
    for (int k = 0; k < n->nout; k++) args[na++] = buf[n->out[k]->id];
    jit_kernel_fn fn = c->fn[i];
    cr_assert_not_null(fn, "node %d has no kernel", i);
    const int64_t *kv = kernel_syms(c, i, syms, ks);
    if (threads && nparts > 1) {
      pthread_t th[8];
      part_job jobs[8];
      for (int p = 0; p < nparts; p++) {
        jobs[p] = (part_job){fn, args, kv, p, nparts, 0};
        cr_assert(pthread_create(&th[p], NULL, part_thread, &jobs[p]) == 0);
      }
      for (int p = 0; p < nparts; p++) {
        pthread_join(th[p], NULL);
        cr_assert(jobs[p].rc == 0, "node %d part %d: %s", i, p, jit_kernel_error(jobs[p].rc));
      }
    } else {
      for (int p = 0; p < nparts; p++) {
        if (only >= 0 && p != only) continue;
        int32_t rc = fn(args, kv, p, nparts);
        cr_assert(rc == 0, "node %d part %d/%d: %s", i, p, nparts, jit_kernel_error(rc));
      }
    }
  }
  ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
  cr_assert_not_null(out);
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    out[i].dtype = v->type.dtype;
    out[i].rank = v->type.rank;
    cr_assert(ir_eval_shape(&v->type, syms, out[i].shape, msg, sizeof msg) == 0);
    size_t b = tensor_bytes(&out[i]);
    out[i].data = malloc(b + 1);
    cr_assert_not_null(out[i].data);
    if (b) memcpy(out[i].data, buf[v->id], b);
  }
  for (int i = 0; i < g->nvalues; i++)
    if (own[i]) free(buf[i]);
  free(buf);
  free(own);
  free(ks);
  return out;
}

static ir_tensor *jit_run(const ir_graph *g, const compiled *c, const ir_tensor *in,
                          const int64_t *syms, int nparts, bool threads) {
  return jit_run_only(g, c, in, syms, nparts, threads, -1);
}

static void expect_identical(const ir_tensor *a, const ir_tensor *b, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    size_t bytes = tensor_bytes(&a[i]);
    cr_assert_eq(bytes, tensor_bytes(&b[i]));
    if (bytes == 0) continue;
    cr_assert(memcmp(a[i].data, b[i].data, bytes) == 0, "%s: output %d differs", what, i);
  }
}

static double elem(const ir_tensor *t, int64_t i) {
  const char *p = (const char *)t->data + (size_t)i * ir_dtype_size(t->dtype);
  switch (t->dtype) {
  case IR_DT_F32: return *(const float *)p;
  case IR_DT_F64: return *(const double *)p;
  case IR_DT_SI32: return *(const int32_t *)p;
  case IR_DT_SI64: return (double)*(const int64_t *)p;
  case IR_DT_BOOL: return *(const uint8_t *)p;
  case IR_DT_F16: { /* half to double, enough for comparisons */
    uint16_t h;
    memcpy(&h, p, 2);
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
  }
  default: return 0;
  }
}

static void expect_close(const ir_tensor *got, const ir_tensor *want, int n, double tol,
                         const char *what) {
  for (int i = 0; i < n; i++) {
    int64_t ne = ir_tensor_numel(&want[i]);
    for (int64_t e = 0; e < ne; e++) {
      double x = elem(&got[i], e), y = elem(&want[i], e);
      if (isnan(x) && isnan(y)) continue;
      double d = fabs(x - y), lim = tol * (1.0 + fabs(y));
      cr_assert(d <= lim, "%s: output %d element %lld: %.9g, oracle %.9g", what, i, (long long)e,
                x, y);
    }
  }
}

/* The whole check of one graph (see the file comment) under nb bindings
 * (syms: nb rows of the graph's symbol values, in its order), with one
 * compile. Returns the number of mo.fused nodes made. */
static int check_binds(const char *text, const int64_t *syms, int nb, double tol, uint32_t seed) {
  ir_graph *g = parse(text);
  int nf = 0, ns = g->nsyms;
  ir_graph *f = fused_clone(g, &nf);
  compiled *mu = compile_graph(g);
  compiled *mf = compile_graph(f);
  for (int k = 0; k < nb; k++) {
    const int64_t *sv = syms + (size_t)k * (size_t)ns;
    ir_tensor *in = make_inputs(g, sv, seed + 1000u * (uint32_t)k);
    ir_tensor *ref = interp(g, in);
    ir_tensor *fref = interp(f, in);
    expect_identical(fref, ref, g->noutputs, "interpreter on the fused graph");
    ir_tensor *ju = jit_run(g, mu, in, sv, 1, false);
    expect_close(ju, ref, g->noutputs, tol, "unfused JIT vs oracle");
    for (int p = 1; p <= 7; p++) {
      ir_tensor *jf = jit_run(f, mf, in, sv, p, p == 3);
      char what[96];
      snprintf(what, sizeof what, "binding %d: fused JIT, %d parts, vs unfused JIT", k, p);
      expect_identical(jf, ju, g->noutputs, what);
      free_tensors(jf, g->noutputs);
    }
    free_tensors(ju, g->noutputs);
    free_tensors(ref, g->noutputs);
    free_tensors(fref, g->noutputs);
    free_tensors(in, g->ninputs);
  }
  compiled_free(mu);
  compiled_free(mf);
  ir_graph_free(f);
  ir_graph_free(g);
  return nf;
}

static int check_case(const char *text, const int64_t *syms, double tol, uint32_t seed) {
  return check_binds(text, syms, 1, tol, seed);
}

/* ---- grouping decisions ---- */

static const char *CHAIN =
    "mo.graph @chain(%x: !mo.tensor<[4, 8], f32>, %a: !mo.tensor<[4, 8], f32>, "
    "%b: !mo.tensor<[8], f32>) -> (!mo.tensor<[4, 8], f32>) {\n"
    "  %m = mo.mul(%x, %a) : !mo.tensor<[4, 8], f32>\n"
    "  %s = mo.add(%m, %b) : (!mo.tensor<[4, 8], f32>, !mo.tensor<[8], f32>) -> "
    "!mo.tensor<[4, 8], f32>\n"
    "  %y = mo.gelu(%s) : !mo.tensor<[4, 8], f32>\n"
    "  mo.output %y : !mo.tensor<[4, 8], f32>\n}\n";

Test(fusion, chain_becomes_one_node) {
  ir_graph *g = parse(CHAIN);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 1);
  cr_assert_eq(f->nodes[0]->op, IR_OP_FUSED);
  cr_assert_not_null(f->nodes[0]->body);
  cr_assert_eq(f->nodes[0]->body->nnodes, 3);
  cr_assert_eq(f->nodes[0]->nin, 3, "x, a, b");
  cr_assert_eq(f->nvalues, 4, "the intermediates left the graph");
  cr_assert_eq(f->outputs[0], f->nodes[0]->out[0]);
  cr_assert_str_eq(f->outputs[0]->name, "y");
  ir_graph_free(f);
  ir_graph_free(g);
}

Test(fusion, multi_consumer_intermediate_is_not_absorbed) {
  const char *text =
      "mo.graph @mc(%x: !mo.tensor<[6], f32>, %a: !mo.tensor<[6], f32>) -> "
      "(!mo.tensor<[6], f32>, !mo.tensor<[6], f32>) {\n"
      "  %t = mo.mul(%x, %a) : !mo.tensor<[6], f32>\n"
      "  %u = mo.add(%t, %a) : !mo.tensor<[6], f32>\n"
      "  %v = mo.sub(%t, %x) : !mo.tensor<[6], f32>\n"
      "  mo.output %u, %v : !mo.tensor<[6], f32>, !mo.tensor<[6], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 0);
  cr_assert_eq(f->nnodes, 3);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-6, 1), 0);
}

Test(fusion, used_twice_by_one_member_is_absorbed) {
  const char *text =
      "mo.graph @sq(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
      "  %t = mo.exp(%x) : !mo.tensor<[5], f32>\n"
      "  %u = mo.mul(%t, %t) : !mo.tensor<[5], f32>\n"
      "  mo.output %u : !mo.tensor<[5], f32>\n}\n";
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-6, 2), 1);
}

/* A chain of n ops over [8] f32: v = v + x, v * x, ... (x the input). */
static char *long_chain(int n) {
  size_t cap = (size_t)n * 64 + 256, k = 0;
  char *t = malloc(cap);
  cr_assert_not_null(t);
  k += (size_t)snprintf(t + k, cap - k,
                        "mo.graph @long(%%x: !mo.tensor<[8], f32>) -> (!mo.tensor<[8], f32>) {\n");
  for (int i = 0; i < n; i++) {
    char prev[16] = "x";
    if (i) snprintf(prev, sizeof prev, "v%d", i);
    k += (size_t)snprintf(t + k, cap - k, "  %%v%d = %s(%%%s, %%x) : !mo.tensor<[8], f32>\n",
                          i + 1, i % 2 ? "mo.mul" : "mo.add", prev);
  }
  snprintf(t + k, cap - k, "  mo.output %%v%d : !mo.tensor<[8], f32>\n}\n", n);
  return t;
}

Test(fusion, long_chain_is_split_into_bounded_groups) {
  enum { N = 2 * IR_FUSE_MAX_NODES + 44 };
  char *text = long_chain(N);
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 3, "%d ops: two full groups and one of 44", N);
  cr_assert_eq(f->nnodes, 3);
  int total = 0;
  for (int i = 0; i < f->nnodes; i++) {
    cr_assert_eq(f->nodes[i]->op, IR_OP_FUSED);
    cr_assert_leq(f->nodes[i]->body->nnodes, IR_FUSE_MAX_NODES);
    total += f->nodes[i]->body->nnodes;
  }
  cr_assert_eq(total, N);
  cr_assert_eq(f->nodes[2]->body->nnodes, IR_FUSE_MAX_NODES, "the last ops form a full group");
  /* the same numbers as the unfused chain, bit for bit (interpreter) */
  ir_tensor *in = make_inputs(g, NULL, 7);
  ir_tensor *want = interp(g, in), *got = interp(f, in);
  expect_identical(got, want, 1, "split chain");
  free_tensors(want, 1);
  free_tensors(got, 1);
  free_tensors(in, 1);
  ir_graph_free(f);
  ir_graph_free(g);
  free(text);
}

/* A sum of n inputs over [8] f32: x0 + x1 + ... + x(n-1). */
static char *wide_sum(int n) {
  size_t cap = (size_t)n * 96 + 256, k = 0;
  char *t = malloc(cap);
  cr_assert_not_null(t);
  k += (size_t)snprintf(t + k, cap - k, "mo.graph @wide(");
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(t + k, cap - k, "%s%%x%d: !mo.tensor<[8], f32>", i ? ", " : "", i);
  k += (size_t)snprintf(t + k, cap - k, ") -> (!mo.tensor<[8], f32>) {\n");
  for (int i = 1; i < n; i++)
    k += (size_t)snprintf(t + k, cap - k,
                          "  %%v%d = mo.add(%%%s%d, %%x%d) : !mo.tensor<[8], f32>\n", i,
                          i == 1 ? "x" : "v", i == 1 ? 0 : i - 1, i);
  snprintf(t + k, cap - k, "  mo.output %%v%d : !mo.tensor<[8], f32>\n}\n", n - 1);
  return t;
}

/* A group never reads more than IR_FUSE_MAX_INPUTS values from outside (the
 * kernels' buffer limit): a sum of 100 inputs becomes groups within it that
 * compile and compute the sum. */
Test(fusion, wide_sum_is_split_by_input_count) {
  char *text = wide_sum(100);
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_geq(nf, 2, "100 inputs cannot be one group's");
  for (int i = 0; i < f->nnodes; i++)
    if (f->nodes[i]->op == IR_OP_FUSED)
      cr_expect_leq(f->nodes[i]->nin, IR_FUSE_MAX_INPUTS, "group %d reads %d values", i,
                    f->nodes[i]->nin);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_geq(check_case(text, none, 1e-5, 3), 2);
  free(text);
}

Test(fusion, output_used_inside_stays_out) {
  const char *text =
      "mo.graph @oi(%x: !mo.tensor<[3, 5], f32>, %a: !mo.tensor<[3, 5], f32>) -> "
      "(!mo.tensor<[3, 5], f32>, !mo.tensor<[3, 5], f32>) {\n"
      "  %t = mo.mul(%x, %a) : !mo.tensor<[3, 5], f32>\n"
      "  %u = mo.add(%t, %a) : !mo.tensor<[3, 5], f32>\n"
      "  %v = mo.relu(%u) : !mo.tensor<[3, 5], f32>\n"
      "  mo.output %t, %v : !mo.tensor<[3, 5], f32>, !mo.tensor<[3, 5], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 2, "mul stays (an output), add + relu fuse");
  cr_assert_eq(f->nodes[0]->op, IR_OP_MUL);
  cr_assert_eq(f->nodes[1]->op, IR_OP_FUSED);
  cr_assert_eq(f->nodes[1]->body->nnodes, 2);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-6, 3), 1);
}

Test(fusion, shape_change_splits_groups) {
  const char *text =
      "mo.graph @sc(%x: !mo.tensor<[4, 8], f32>, %y: !mo.tensor<[4, 8], f32>, "
      "%z: !mo.tensor<[2, 4, 8], f32>) -> (!mo.tensor<[2, 4, 8], f32>) {\n"
      "  %t = mo.add(%x, %y) : !mo.tensor<[4, 8], f32>\n"
      "  %u = mo.mul(%t, %z) : (!mo.tensor<[4, 8], f32>, !mo.tensor<[2, 4, 8], f32>) -> "
      "!mo.tensor<[2, 4, 8], f32>\n"
      "  mo.output %u : !mo.tensor<[2, 4, 8], f32>\n}\n";
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-6, 4), 0);
}

Test(fusion, non_elementwise_in_the_middle_splits_groups) {
  const char *text =
      "mo.graph @sm(%x: !mo.tensor<[4, 8], f32>, %a: !mo.tensor<[4, 8], f32>) -> "
      "(!mo.tensor<[4, 8], f32>) {\n"
      "  %t = mo.mul(%x, %a) : !mo.tensor<[4, 8], f32>\n"
      "  %r = mo.relu(%t) : !mo.tensor<[4, 8], f32>\n"
      "  %s = mo.softmax(%r) {axis = -1} : !mo.tensor<[4, 8], f32>\n"
      "  %u = mo.negate(%s) : !mo.tensor<[4, 8], f32>\n"
      "  %v = mo.add(%u, %a) : !mo.tensor<[4, 8], f32>\n"
      "  mo.output %v : !mo.tensor<[4, 8], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 2, "mul+relu+softmax (a softmax prologue), then negate+add");
  cr_assert_eq(f->nnodes, 2);
  const ir_graph *b0 = f->nodes[0]->body, *b1 = f->nodes[1]->body;
  cr_assert(b0 && b1);
  cr_assert_eq(b0->nnodes, 3);
  cr_assert_eq(b0->nodes[2]->op, IR_OP_SOFTMAX);
  cr_assert_eq(b1->nnodes, 2);
  cr_assert_eq(b1->nodes[0]->op, IR_OP_NEGATE);
  ir_graph_free(f);
  /* without IR_FUSE_SOFTMAX (SIMT targets) the softmax splits the groups */
  f = ir_graph_clone(g);
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fuse(f, 0, &d), 2, "mul+relu, then negate+add");
  cr_assert_eq(f->nnodes, 3);
  cr_assert_eq(f->nodes[1]->op, IR_OP_SOFTMAX);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  check_case(text, none, 1e-5, 5);
}

Test(fusion, mo_fused_in_text_is_rejected) {
  const char *text = "mo.graph @f(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
                     "  %y = mo.fused(%x) : !mo.tensor<[2], f32>\n"
                     "  mo.output %y : !mo.tensor<[2], f32>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_null(g);
  cr_assert(strstr(d.msg, "mo.fused is internal") != NULL, "%s", d.msg);
  cr_assert_eq(d.line, 2);
}

Test(fusion, clone_and_print_keep_the_body) {
  ir_graph *g = parse(CHAIN);
  ir_graph *f = fused_clone(g, NULL);
  ir_graph *c = ir_graph_clone(f);
  cr_assert_not_null(c);
  cr_assert_not_null(c->nodes[0]->body);
  cr_assert_neq(c->nodes[0]->body, f->nodes[0]->body);
  ir_diag d = {0};
  cr_assert(ir_graph_verify(c, &d) == 0, "%s", d.msg);
  char *a = ir_print(f), *b = ir_print(c);
  cr_assert(a && b);
  cr_assert_str_eq(a, b);
  cr_assert(strstr(a, "mo.fused(%x, %a, %b)") != NULL, "%s", a);
  cr_assert(strstr(a, "  //   %y = mo.gelu(%s)") != NULL, "%s", a);
  free(a);
  free(b);
  ir_graph_free(c);
  ir_graph_free(f);
  ir_graph_free(g);
}

/* ---- kernel text ---- */

Test(fusion, kernel_text_round_trips_and_is_canonical) {
  const char *t1 =
      "mo.graph @one<batch>(%p: !mo.tensor<[batch, 8], f32>, %q: !mo.tensor<[batch, 8], f32>) -> "
      "(!mo.tensor<[batch, 8], f32>) {\n"
      "  %u = mo.mul(%p, %q) : !mo.tensor<[batch, 8], f32>\n"
      "  %w = mo.tanh(%u) : !mo.tensor<[batch, 8], f32>\n"
      "  mo.output %w : !mo.tensor<[batch, 8], f32>\n}\n";
  const char *t2 =
      "mo.graph @two<zz, n>(%k: !mo.tensor<[n], f32>, %x: !mo.tensor<[n, 8], f32>, "
      "%y: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>, !mo.tensor<[n], f32>) {\n"
      "  %r = mo.relu(%k) : !mo.tensor<[n], f32>\n"
      "  %a = mo.mul(%x, %y) : !mo.tensor<[n, 8], f32>\n"
      "  %b = mo.tanh(%a) : !mo.tensor<[n, 8], f32>\n"
      "  mo.output %b, %r : !mo.tensor<[n, 8], f32>, !mo.tensor<[n], f32>\n}\n";
  ir_graph *g1 = parse(t1), *g2 = parse(t2);
  ir_graph *f1 = fused_clone(g1, NULL), *f2 = fused_clone(g2, NULL);
  cr_assert_eq(f1->nodes[0]->op, IR_OP_FUSED);
  cr_assert_eq(f2->nodes[1]->op, IR_OP_FUSED);
  int map[4], ns = -1;
  char *k1 = ir_kernel_text(f1, f1->nodes[0], NULL, NULL);
  char *k2 = ir_kernel_text(f2, f2->nodes[1], map, &ns);
  cr_assert(k1 && k2);
  cr_assert_str_eq(k1, k2, "same group, different graphs:\n%s\n%s", k1, k2);
  cr_assert_eq(ns, 1);
  cr_assert_eq(map[0], 1, "d0 is the graph's symbol n");
  cr_assert(strstr(k1, "%t0 = mo.mul(%a0, %a1)") && strstr(k1, "%r0 = mo.tanh(%t0)"), "%s", k1);
  ir_diag d = {0};
  ir_graph *kg = ir_parse(k1, strlen(k1), &d);
  cr_assert_not_null(kg, "%s\n%s", d.msg, k1);
  char *again = ir_print(kg);
  cr_assert_str_eq(again, k1);
  /* bound and partial texts of a fused node */
  int64_t vals[2] = {0, 5};
  bool bind[2] = {false, true};
  char *kb = ir_kernel_text_bound(f2, f2->nodes[1], vals);
  char *kp = ir_kernel_text_partial(f2, f2->nodes[1], vals, bind, NULL, &ns);
  cr_assert(kb && kp);
  cr_assert_str_eq(kb, kp);
  cr_assert(strstr(kb, "@kernel(") != NULL && strstr(kb, "[5, 8]") != NULL, "%s", kb);
  cr_assert_eq(ns, 0);
  free(kb);
  free(kp);
  free(again);
  free(k1);
  free(k2);
  ir_graph_free(kg);
  ir_graph_free(f1);
  ir_graph_free(f2);
  ir_graph_free(g1);
  ir_graph_free(g2);
}

/* The kernel cache's path: fused node -> text -> parse -> compile_object
 * -> load -> call (with parts), against the interpreter. */
Test(fusion, kernel_text_compiles_as_one_kernel) {
  const char *text =
      "mo.graph @kt<m, n, k>(%x: !mo.tensor<[m, k], f32>, %w: !mo.tensor<[k, n], f32>, "
      "%b: !mo.tensor<[n], f32>, %r: !mo.tensor<[m, n], f32>) -> (!mo.tensor<[m, n], f32>) {\n"
      "  %c = mo.matmul(%x, %w) : (!mo.tensor<[m, k], f32>, !mo.tensor<[k, n], f32>) -> "
      "!mo.tensor<[m, n], f32>\n"
      "  %s = mo.add(%c, %b) : (!mo.tensor<[m, n], f32>, !mo.tensor<[n], f32>) -> "
      "!mo.tensor<[m, n], f32>\n"
      "  %g = mo.gelu(%s) : !mo.tensor<[m, n], f32>\n"
      "  %y = mo.add(%g, %r) : !mo.tensor<[m, n], f32>\n"
      "  mo.output %y : !mo.tensor<[m, n], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 1);
  cr_assert_eq(f->nodes[0]->body->nnodes, 4);
  int64_t syms[3] = {37, 45, 29}; /* m, n, k of g */
  ir_tensor *in = make_inputs(g, syms, 9);
  ir_tensor *ref = interp(g, in);
  float *y = malloc(sizeof *y * 37 * 45);
  cr_assert_not_null(y);
  for (int bound = 0; bound < 2; bound++) { /* the generic kernel, then the specialized one */
    int map[3], ns = 0;
    char *kt = bound ? ir_kernel_text_bound(f, f->nodes[0], syms)
                     : ir_kernel_text(f, f->nodes[0], map, &ns);
    cr_assert_not_null(kt);
    ir_diag d = {0};
    ir_graph *kg = ir_parse(kt, strlen(kt), &d);
    cr_assert_not_null(kg, "%s", d.msg);
    void *obj = NULL;
    size_t len = 0;
    const char *name = bound ? "kiln_fusion_test_kb" : "kiln_fusion_test_k";
    cr_assert(jit_compile_object(E, kg, name, &obj, &len, err, sizeof err) == 0, "%s", err);
    jit_kernel_fn fn = NULL;
    jit_code *code = jit_load_object(E, obj, len, name, &fn, err, sizeof err);
    cr_assert_not_null(code, "%s", err);
    int64_t ks[3] = {0, 0, 0};
    for (int j = 0; j < ns; j++) ks[j] = syms[map[j]];
    for (int p = 1; p <= 4; p++) {
      memset(y, 0xA5, sizeof *y * 37 * 45);
      void *args[5] = {in[0].data, in[1].data, in[2].data, in[3].data, y};
      for (int q = 0; q < p; q++) cr_assert_eq(fn(args, ks, q, p), 0);
      ir_tensor got = {.dtype = IR_DT_F32, .rank = 2, .shape = {37, 45}, .data = y};
      expect_close(&got, ref, 1, 1e-5, bound ? "bound kernel text" : "kernel text");
    }
    jit_code_free(E, code);
    free(obj);
    free(kt);
    ir_graph_free(kg);
  }
  free(y);
  free_tensors(ref, 1);
  free_tensors(in, g->ninputs);
  ir_graph_free(f);
  ir_graph_free(g);
}

/* ---- fused elementwise kernels ---- */

Test(fusion, broadcasting_chain_symbolic) {
  const char *text =
      "mo.graph @bc<b, s>(%x: !mo.tensor<[b, s, 7], f32>, %g: !mo.tensor<[7], f32>, "
      "%h: !mo.tensor<[b, 1, 7], f32>, %c: !mo.tensor<[1], f32>) -> (!mo.tensor<[b, s, 7], f32>) {\n"
      "  %m = mo.mul(%x, %g) : (!mo.tensor<[b, s, 7], f32>, !mo.tensor<[7], f32>) -> "
      "!mo.tensor<[b, s, 7], f32>\n"
      "  %a = mo.add(%m, %h) : (!mo.tensor<[b, s, 7], f32>, !mo.tensor<[b, 1, 7], f32>) -> "
      "!mo.tensor<[b, s, 7], f32>\n"
      "  %e = mo.sigmoid(%a) : !mo.tensor<[b, s, 7], f32>\n"
      "  %q = mo.sub(%e, %c) : (!mo.tensor<[b, s, 7], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[b, s, 7], f32>\n"
      "  %y = mo.max(%q, %x) : !mo.tensor<[b, s, 7], f32>\n"
      "  mo.output %y : !mo.tensor<[b, s, 7], f32>\n}\n";
  int64_t s[4][2] = {{3, 5}, {1, 1}, {2, 0}, {5, 13}};
  cr_assert_eq(check_binds(text, &s[0][0], 4, 1e-5, 10), 1);
}

/* Strided copies split the first loop whose extent is not 1 at run time:
 * a symbolic batch of 1 must not leave every part but one idle, and every
 * element is still written once by exactly one part (the plain nest, the
 * tiled one for long axes, contiguous runs, and every extent 1). */
Test(fusion, permute_splits_the_first_axis_not_1_at_run_time) {
  const char *text =
      "mo.graph @perm<b, s>(%x: !mo.tensor<[b, 12, s, 8], f32>, %t: !mo.tensor<[b, s, 40], f32>)"
      " -> (!mo.tensor<[b, s, 12, 8], f32>, !mo.tensor<[b, 40, s], f32>, "
      "!mo.tensor<[12, b, s, 8], f32>) {\n"
      "  %p = mo.permute(%x) {dims = [0, 2, 1, 3]} : !mo.tensor<[b, s, 12, 8], f32>\n"
      "  %q = mo.permute(%t) {dims = [0, 2, 1]} : !mo.tensor<[b, 40, s], f32>\n"
      "  %r = mo.permute(%x) {dims = [1, 0, 2, 3]} : !mo.tensor<[12, b, s, 8], f32>\n"
      "  mo.output %p, %q, %r : !mo.tensor<[b, s, 12, 8], f32>, !mo.tensor<[b, 40, s], f32>, "
      "!mo.tensor<[12, b, s, 8], f32>\n}\n";
  int64_t s[6][2] = {{1, 5}, {1, 1}, {3, 0}, {1, 37}, {2, 3}, {1, 70}};
  cr_assert_eq(check_binds(text, &s[0][0], 6, 0, 11), 0);
  /* batch 1: the second of two parts copies its share of each result */
  ir_graph *g = parse(text);
  compiled *c = compile_graph(g);
  for (int k = 0; k < 6; k += 3) { /* s = 5, 37 */
    ir_tensor *in = make_inputs(g, s[k], 7);
    ir_tensor *half = jit_run_only(g, c, in, s[k], 2, false, 1);
    for (int o = 0; o < 3; o++) {
      int64_t n = ir_tensor_numel(&half[o]), written = 0;
      const unsigned char *d = half[o].data;
      for (int64_t e = 0; e < n; e++) written += d[4 * e] != 0xA5;
      cr_assert(written > 0 && written < n, /* tiles make shares uneven */
                "result %d at s = %lld: part 1 of 2 wrote %lld of %lld elements", o,
                (long long)s[k][1], (long long)written, (long long)n);
    }
    free_tensors(half, 3);
    free_tensors(in, g->ninputs);
  }
  compiled_free(c);
  ir_graph_free(g);
}

Test(fusion, f64_row_and_column_broadcasts) {
  const char *text =
      "mo.graph @rb<n, m>(%x: !mo.tensor<[n, m], f64>, %v: !mo.tensor<[m], f64>, "
      "%c: !mo.tensor<[n, 1], f64>) -> (!mo.tensor<[n, m], f64>) {\n"
      "  %a = mo.add(%x, %v) : (!mo.tensor<[n, m], f64>, !mo.tensor<[m], f64>) -> "
      "!mo.tensor<[n, m], f64>\n"
      "  %e = mo.exp(%a) : !mo.tensor<[n, m], f64>\n"
      "  %y = mo.div(%e, %c) : (!mo.tensor<[n, m], f64>, !mo.tensor<[n, 1], f64>) -> "
      "!mo.tensor<[n, m], f64>\n"
      "  mo.output %y : !mo.tensor<[n, m], f64>\n}\n";
  int64_t s[4][2] = {{9, 9}, {9, 1}, {1, 1}, {33, 70}};
  cr_assert_eq(check_binds(text, &s[0][0], 4, 1e-12, 20), 1);
}

/* ---- softmax prologues (IR_FUSE_SOFTMAX) ---- */

/* softmax(x * c + mask) over [b, h, s, s] with the mask [1, 1, s, s]: one
 * kernel, equal to the unfused pair bit for bit; rows of 1, 7 and 384. */
Test(fusion, softmax_scale_mask_attention) {
  const char *text =
      "mo.graph @att<b, s>(%x: !mo.tensor<[b, 3, s, s], f32>, %c: !mo.tensor<[1], f32>, "
      "%mask: !mo.tensor<[1, 1, s, s], f32>) -> (!mo.tensor<[b, 3, s, s], f32>) {\n"
      "  %t = mo.mul(%x, %c) : (!mo.tensor<[b, 3, s, s], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[b, 3, s, s], f32>\n"
      "  %u = mo.add(%t, %mask) : (!mo.tensor<[b, 3, s, s], f32>, "
      "!mo.tensor<[1, 1, s, s], f32>) -> !mo.tensor<[b, 3, s, s], f32>\n"
      "  %y = mo.softmax(%u) {axis = -1} : !mo.tensor<[b, 3, s, s], f32>\n"
      "  mo.output %y : !mo.tensor<[b, 3, s, s], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 1);
  cr_assert_eq(f->nodes[0]->body->nnodes, 3);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t s[4][2] = {{2, 7}, {1, 1}, {1, 384}, {0, 5}};
  cr_assert_eq(check_binds(text, &s[0][0], 4, 1e-5, 60), 1);
}

/* x / c with a [b, 1, 1, s] mask (per batch and key), logsoftmax, f64 too. */
Test(fusion, logsoftmax_div_batch_mask) {
  static const char *const dts[] = {"f32", "f64"};
  for (int k = 0; k < 2; k++) {
    char text[2048];
    const char *dt = dts[k];
    snprintf(text, sizeof text,
             "mo.graph @lsm<b, s>(%%x: !mo.tensor<[b, 2, 5, s], %s>, %%c: !mo.tensor<[1], %s>, "
             "%%mask: !mo.tensor<[b, 1, 1, s], %s>) -> (!mo.tensor<[b, 2, 5, s], %s>) {\n"
             "  %%t = mo.div(%%x, %%c) : (!mo.tensor<[b, 2, 5, s], %s>, !mo.tensor<[1], %s>) -> "
             "!mo.tensor<[b, 2, 5, s], %s>\n"
             "  %%u = mo.add(%%t, %%mask) : (!mo.tensor<[b, 2, 5, s], %s>, "
             "!mo.tensor<[b, 1, 1, s], %s>) -> !mo.tensor<[b, 2, 5, s], %s>\n"
             "  %%y = mo.logsoftmax(%%u) : !mo.tensor<[b, 2, 5, s], %s>\n"
             "  mo.output %%y : !mo.tensor<[b, 2, 5, s], %s>\n}\n",
             dt, dt, dt, dt, dt, dt, dt, dt, dt, dt, dt, dt);
    int64_t s[3][2] = {{3, 1000}, {2, 7}, {1, 1}};
    cr_assert_eq(check_binds(text, &s[0][0], 3, k ? 1e-12 : 2e-5, 61), 1);
  }
}

/* The softmax along an axis that is not the last (strided rows), the
 * prologue's operands broadcast along it and across it. */
Test(fusion, softmax_prologue_axis_not_last) {
  const char *text =
      "mo.graph @ax(%x: !mo.tensor<[3, 37, 5], f32>, %a: !mo.tensor<[37, 1], f32>, "
      "%b: !mo.tensor<[3, 1, 5], f32>) -> (!mo.tensor<[3, 37, 5], f32>) {\n"
      "  %t = mo.mul(%x, %a) : (!mo.tensor<[3, 37, 5], f32>, !mo.tensor<[37, 1], f32>) -> "
      "!mo.tensor<[3, 37, 5], f32>\n"
      "  %u = mo.sub(%t, %b) : (!mo.tensor<[3, 37, 5], f32>, !mo.tensor<[3, 1, 5], f32>) -> "
      "!mo.tensor<[3, 37, 5], f32>\n"
      "  %e = mo.tanh(%u) : !mo.tensor<[3, 37, 5], f32>\n"
      "  %y = mo.softmax(%e) {axis = 1} : !mo.tensor<[3, 37, 5], f32>\n"
      "  mo.output %y : !mo.tensor<[3, 37, 5], f32>\n}\n";
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-5, 62), 1);
}

/* A matmul feeding the prologue stays a kernel of its own (the softmax
 * takes the scale); an operand that is also a graph output is not
 * absorbed. */
Test(fusion, softmax_prologue_after_matmul_and_shared_operand) {
  const char *mm =
      "mo.graph @qk(%q: !mo.tensor<[2, 9, 4], f32>, %k: !mo.tensor<[2, 4, 9], f32>, "
      "%c: !mo.tensor<[1], f32>) -> (!mo.tensor<[2, 9, 9], f32>) {\n"
      "  %s = mo.matmul(%q, %k) : (!mo.tensor<[2, 9, 4], f32>, !mo.tensor<[2, 4, 9], f32>) -> "
      "!mo.tensor<[2, 9, 9], f32>\n"
      "  %t = mo.mul(%s, %c) : (!mo.tensor<[2, 9, 9], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[2, 9, 9], f32>\n"
      "  %y = mo.softmax(%t) : !mo.tensor<[2, 9, 9], f32>\n"
      "  mo.output %y : !mo.tensor<[2, 9, 9], f32>\n}\n";
  ir_graph *g = parse(mm);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 2);
  cr_assert_eq(f->nodes[0]->op, IR_OP_MATMUL);
  cr_assert_eq(f->nodes[1]->body->nodes[1]->op, IR_OP_SOFTMAX);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_eq(check_case(mm, none, 1e-5, 63), 1);

  const char *shared =
      "mo.graph @sh(%x: !mo.tensor<[4, 8], f32>, %c: !mo.tensor<[1], f32>) -> "
      "(!mo.tensor<[4, 8], f32>, !mo.tensor<[4, 8], f32>) {\n"
      "  %t = mo.mul(%x, %c) : (!mo.tensor<[4, 8], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[4, 8], f32>\n"
      "  %y = mo.softmax(%t) : !mo.tensor<[4, 8], f32>\n"
      "  mo.output %y, %t : !mo.tensor<[4, 8], f32>, !mo.tensor<[4, 8], f32>\n}\n";
  cr_assert_eq(check_case(shared, none, 1e-5, 64), 0);
}

/* relu(x) feeds the matmul and the epilogue both: it would join through the
 * epilogue, but a matmul's operands stay outside its group (the body lists
 * the matmul first; the differential fuzzer found this one crashing). */
Test(fusion, matmul_operand_shared_with_its_epilogue_stays_out) {
  const char *text =
      "mo.graph @shared(%x: !mo.tensor<[3, 3], f32>, %w: !mo.tensor<[3, 3], f32>) -> "
      "(!mo.tensor<[3, 3], f32>) {\n"
      "  %r = mo.relu(%x) : !mo.tensor<[3, 3], f32>\n"
      "  %m = mo.matmul(%r, %w) : (!mo.tensor<[3, 3], f32>, !mo.tensor<[3, 3], f32>) -> "
      "!mo.tensor<[3, 3], f32>\n"
      "  %y = mo.sub(%m, %r) : !mo.tensor<[3, 3], f32>\n"
      "  mo.output %y : !mo.tensor<[3, 3], f32>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1);
  cr_assert_eq(f->nnodes, 2, "relu alone, then matmul + sub");
  cr_assert_eq(f->nodes[0]->op, IR_OP_RELU);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-5, 65), 1);
}

Test(fusion, bool_int_and_cast_members) {
  const char *text =
      "mo.graph @bi<n>(%x: !mo.tensor<[n, 3], si32>, %y: !mo.tensor<[n, 3], si32>, "
      "%f: !mo.tensor<[n, 3], f32>) -> (!mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], bool>) {\n"
      "  %s = mo.add(%x, %y) : !mo.tensor<[n, 3], si32>\n"
      "  %p = mo.greater(%s, %y) : (!mo.tensor<[n, 3], si32>, !mo.tensor<[n, 3], si32>) -> "
      "!mo.tensor<[n, 3], bool>\n"
      "  %q = mo.is_nan(%f) : (!mo.tensor<[n, 3], f32>) -> !mo.tensor<[n, 3], bool>\n"
      "  %o = mo.logical_or(%p, %q) : !mo.tensor<[n, 3], bool>\n"
      "  %c = mo.cast(%s) {dtype = f32} : (!mo.tensor<[n, 3], si32>) -> !mo.tensor<[n, 3], f32>\n"
      "  %z = mo.where(%o, %c, %f) : (!mo.tensor<[n, 3], bool>, !mo.tensor<[n, 3], f32>, "
      "!mo.tensor<[n, 3], f32>) -> !mo.tensor<[n, 3], f32>\n"
      "  %m = mo.mul(%x, %y) : !mo.tensor<[n, 3], si32>\n"
      "  %w = mo.greater_equal(%m, %x) : (!mo.tensor<[n, 3], si32>, !mo.tensor<[n, 3], si32>) -> "
      "!mo.tensor<[n, 3], bool>\n"
      "  %nw = mo.logical_not(%w) : !mo.tensor<[n, 3], bool>\n"
      "  mo.output %z, %nw : !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], bool>\n}\n";
  int64_t s[1] = {17};
  cr_assert_eq(check_case(text, s, 1e-6, 30), 2, "where's group (with the add: both uses inside) and not's");
}

Test(fusion, f16_casts_fuse_and_int_mod_stays_alone) {
  const char *text =
      "mo.graph @h(%x: !mo.tensor<[11, 5], f32>, %i: !mo.tensor<[11, 5], si64>, "
      "%j: !mo.tensor<[5], si64>) -> (!mo.tensor<[11, 5], f32>, !mo.tensor<[11, 5], si64>) {\n"
      "  %h = mo.cast(%x) {dtype = f16} : (!mo.tensor<[11, 5], f32>) -> !mo.tensor<[11, 5], f16>\n"
      "  %b = mo.cast(%h) {dtype = f32} : (!mo.tensor<[11, 5], f16>) -> !mo.tensor<[11, 5], f32>\n"
      "  %y = mo.sub(%x, %b) : !mo.tensor<[11, 5], f32>\n"
      "  %a = mo.abs(%j) : !mo.tensor<[5], si64>\n"
      "  %one = mo.constant {value = #M.dense_array<1, 1, 1, 1, 1> : tensor<5xsi64>} : "
      "!mo.tensor<[5], si64>\n"
      "  %d = mo.add(%a, %one) : !mo.tensor<[5], si64>\n"
      "  %m = mo.mod(%i, %d) : (!mo.tensor<[11, 5], si64>, !mo.tensor<[5], si64>) -> "
      "!mo.tensor<[11, 5], si64>\n"
      "  %n = mo.negate(%m) : !mo.tensor<[11, 5], si64>\n"
      "  mo.output %y, %n : !mo.tensor<[11, 5], f32>, !mo.tensor<[11, 5], si64>\n}\n";
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-6, 40), 2, "the casts + sub, abs + add; not the mod");
  ir_graph *g = parse(text);
  ir_graph *f = fused_clone(g, NULL);
  bool mod_alone = false;
  for (int i = 0; i < f->nnodes; i++) mod_alone = mod_alone || f->nodes[i]->op == IR_OP_MOD;
  cr_assert(mod_alone, "integer mod keeps its own kernel (its error names it)");
  ir_graph_free(f);
  ir_graph_free(g);
}

Test(fusion, big_flat_chain_split) {
  const char *text =
      "mo.graph @big<n>(%x: !mo.tensor<[n], f32>, %a: !mo.tensor<[n], f32>, "
      "%b: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
      "  %m = mo.mul(%x, %a) : !mo.tensor<[n], f32>\n"
      "  %s = mo.add(%m, %b) : !mo.tensor<[n], f32>\n"
      "  %y = mo.gelu(%s) : !mo.tensor<[n], f32>\n"
      "  mo.output %y : !mo.tensor<[n], f32>\n}\n";
  int64_t s[1] = {100003};
  cr_assert_eq(check_case(text, s, 1e-5, 50), 1);
}

/* ---- GEMM epilogues ---- */

static const char *GEMM_TMPL =
    "mo.graph @ge<m, n, k>(%%x: !mo.tensor<[m, k], %s>, %%w: !mo.tensor<[k, n], %s>, "
    "%%b: !mo.tensor<[n], %s>, %%r: !mo.tensor<[m, n], %s>) -> (!mo.tensor<[m, n], %s>) {\n"
    "  %%c = mo.matmul(%%x, %%w) : (!mo.tensor<[m, k], %s>, !mo.tensor<[k, n], %s>) -> "
    "!mo.tensor<[m, n], %s>\n"
    "  %%s = mo.add(%%c, %%b) : (!mo.tensor<[m, n], %s>, !mo.tensor<[n], %s>) -> "
    "!mo.tensor<[m, n], %s>\n"
    "  %%g = mo.%s(%%s) : !mo.tensor<[m, n], %s>\n"
    "  %%y = mo.add(%%g, %%r) : !mo.tensor<[m, n], %s>\n"
    "  mo.output %%y : !mo.tensor<[m, n], %s>\n}\n";

/* One compile of the symbolic GEMM + bias + act + residual graph, run over
 * the shapes; atol grows with the largest K. */
static void gemm_case(const char *dt, const char *act, const int64_t (*mnk)[3], int n,
                      uint32_t seed) {
  char text[2048];
  snprintf(text, sizeof text, GEMM_TMPL, dt, dt, dt, dt, dt, dt, dt, dt, dt, dt, dt, act, dt, dt,
           dt);
  int64_t kmax = 1;
  for (int i = 0; i < n; i++) kmax = mnk[i][2] > kmax ? mnk[i][2] : kmax;
  double tol = strcmp(dt, "f32") == 0 ? 2e-6 * (double)(kmax + 1) : 1e-13 * (double)(kmax + 1);
  cr_assert_eq(check_binds(text, &mnk[0][0], n, tol, seed), 1);
}

Test(fusion, gemm_bias_relu_residual_odd_shapes) {
  static const int64_t shapes[][3] = {{1, 1, 1},    {1, 33, 17},  {3, 40, 9},  {7, 5, 3},
                                      {13, 47, 70}, {37, 300, 29}, {65, 17, 0}, {0, 5, 4},
                                      {6, 32, 16},  {100, 129, 257}};
  gemm_case("f32", "relu", shapes, (int)(sizeof shapes / sizeof shapes[0]), 60);
}

Test(fusion, gemm_gelu_and_f64) {
  static const int64_t shapes[][3] = {{2, 50, 31}, {19, 70, 45}, {64, 520, 33}};
  gemm_case("f32", "gelu", shapes, 3, 80);
  gemm_case("f64", "sigmoid", shapes, 3, 90);
}

Test(fusion, gemm_batched_transposed_with_broadcast_epilogue) {
  const char *text =
      "mo.graph @bt<b, m>(%x: !mo.tensor<[b, m, 24], f32>, %wt: !mo.tensor<[40, 24], f32>, "
      "%s: !mo.tensor<[b, 1, 40], f32>, %r: !mo.tensor<[m, 1], f32>) -> "
      "(!mo.tensor<[b, m, 40], f32>) {\n"
      "  %w = mo.transpose(%wt) {axis_1 = 0, axis_2 = 1} : (!mo.tensor<[40, 24], f32>) -> "
      "!mo.tensor<[24, 40], f32>\n"
      "  %c = mo.matmul(%x, %w) : (!mo.tensor<[b, m, 24], f32>, !mo.tensor<[24, 40], f32>) -> "
      "!mo.tensor<[b, m, 40], f32>\n"
      "  %t = mo.mul(%c, %s) : (!mo.tensor<[b, m, 40], f32>, !mo.tensor<[b, 1, 40], f32>) -> "
      "!mo.tensor<[b, m, 40], f32>\n"
      "  %y = mo.sub(%t, %r) : (!mo.tensor<[b, m, 40], f32>, !mo.tensor<[m, 1], f32>) -> "
      "!mo.tensor<[b, m, 40], f32>\n"
      "  mo.output %y : !mo.tensor<[b, m, 40], f32>\n}\n";
  int64_t s[3][2] = {{3, 11}, {1, 50}, {4, 1}};
  cr_assert_eq(check_binds(text, &s[0][0], 3, 1e-4, 70), 1);
}

Test(fusion, gemm_not_fused_when_its_result_is_an_output) {
  const char *text =
      "mo.graph @no(%x: !mo.tensor<[4, 6], f32>, %w: !mo.tensor<[6, 5], f32>, "
      "%b: !mo.tensor<[4, 5], f64>) -> "
      "(!mo.tensor<[4, 5], f32>, !mo.tensor<[4, 5], f32>, !mo.tensor<[4, 5], f64>) {\n"
      "  %c = mo.matmul(%x, %w) : (!mo.tensor<[4, 6], f32>, !mo.tensor<[6, 5], f32>) -> "
      "!mo.tensor<[4, 5], f32>\n"
      "  %y = mo.relu(%c) : !mo.tensor<[4, 5], f32>\n"
      "  %d = mo.matmul(%x, %w) : (!mo.tensor<[4, 6], f32>, !mo.tensor<[6, 5], f32>) -> "
      "!mo.tensor<[4, 5], f32>\n"
      "  %e = mo.cast(%d) {dtype = f64} : (!mo.tensor<[4, 5], f32>) -> !mo.tensor<[4, 5], f64>\n"
      "  %z = mo.add(%e, %b) : !mo.tensor<[4, 5], f64>\n"
      "  mo.output %c, %y, %z : !mo.tensor<[4, 5], f32>, !mo.tensor<[4, 5], f32>, "
      "!mo.tensor<[4, 5], f64>\n}\n";
  ir_graph *g = parse(text);
  int nf;
  ir_graph *f = fused_clone(g, &nf);
  cr_assert_eq(nf, 1, "cast + add only: %%d's group would end in f64");
  cr_assert_eq(f->nnodes, 4);
  cr_assert_eq(f->nodes[3]->op, IR_OP_FUSED);
  cr_assert_eq(f->nodes[3]->body->nnodes, 2);
  ir_graph_free(f);
  ir_graph_free(g);
  int64_t none[1] = {0};
  cr_assert_eq(check_case(text, none, 1e-5, 75), 1);
}

Test(fusion, split_unfused_matmuls) {
  /* no fusion at all: the plain GEMM kernels split too (rows or columns) */
  const char *text =
      "mo.graph @pl<m>(%x: !mo.tensor<[m, 70], f32>, %w: !mo.tensor<[70, 90], f32>, "
      "%i: !mo.tensor<[2, m, 3], f64>, %j: !mo.tensor<[3, 600], f64>) -> "
      "(!mo.tensor<[m, 90], f32>, !mo.tensor<[2, m, 600], f64>) {\n"
      "  %c = mo.matmul(%x, %w) : (!mo.tensor<[m, 70], f32>, !mo.tensor<[70, 90], f32>) -> "
      "!mo.tensor<[m, 90], f32>\n"
      "  %d = mo.matmul(%i, %j) : (!mo.tensor<[2, m, 3], f64>, !mo.tensor<[3, 600], f64>) -> "
      "!mo.tensor<[2, m, 600], f64>\n"
      "  mo.output %c, %d : !mo.tensor<[m, 90], f32>, !mo.tensor<[2, m, 600], f64>\n}\n";
  int64_t s[4] = {1, 50, 3, 200};
  check_binds(text, s, 4, 1e-4, 76);
}

/* Run-time checks of absorbed nodes survive fusion (and cloning) with the
 * message naming the op that needs them. */
Test(fusion, runtime_checks_keep_naming_their_op) {
  const char *text =
      "mo.graph @rc<n>(%x: !mo.tensor<[n], f32>, %y: !mo.tensor<[4], f32>) -> "
      "(!mo.tensor<[4], f32>) {\n"
      "  %a = mo.add(%x, %y) : (!mo.tensor<[n], f32>, !mo.tensor<[4], f32>) -> "
      "!mo.tensor<[4], f32>\n"
      "  %b = mo.exp(%a) : !mo.tensor<[4], f32>\n"
      "  mo.output %b : !mo.tensor<[4], f32>\n}\n";
  ir_graph *g = parse(text);
  cr_assert(g->nchecks >= 1);
  ir_graph *f0 = fused_clone(g, NULL);
  ir_graph *f = ir_graph_clone(f0);
  cr_assert_not_null(f);
  cr_assert_eq(f->nnodes, 1);
  cr_assert_eq(f->nchecks, g->nchecks);
  ir_tensor in[2] = {{.dtype = IR_DT_F32, .rank = 1, .shape = {5}},
                     {.dtype = IR_DT_F32, .rank = 1, .shape = {4}}};
  int64_t syms[1];
  char m1[512] = "", m2[512] = "";
  cr_assert_neq(ir_solve_symbols(g, in, 2, syms, m1, sizeof m1), 0);
  cr_assert_neq(ir_solve_symbols(f, in, 2, syms, m2, sizeof m2), 0);
  cr_assert_str_eq(m2, m1);
  cr_assert(strstr(m2, "mo.add") != NULL, "%s", m2);
  ir_graph_free(f);
  ir_graph_free(f0);
  ir_graph_free(g);
}

/* The call-free f32 erf (mo.erf, mo.gelu) against libm's erff: within one
 * ulp over a sweep of [-5, 5], exact on the special values. */
Test(fusion, erf_f32_within_an_ulp_of_libm) {
  const char *text = "mo.graph @e<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
                     "  %y = mo.erf(%x) : !mo.tensor<[n], f32>\n"
                     "  mo.output %y : !mo.tensor<[n], f32>\n}\n";
  ir_graph *g = parse(text);
  compiled *m = compile_graph(g);
  enum { N = 200000 + 8 };
  float *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
  cr_assert(x && y);
  for (int i = 0; i < N - 8; i++) x[i] = -5.0f + 10.0f * (float)i / (float)(N - 8);
  float sp[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 0.49999997f};
  memcpy(x + N - 8, sp, sizeof sp);
  void *args[2] = {x, y};
  int64_t syms[1] = {N}, ks[1];
  cr_assert_eq(m->fn[0](args, kernel_syms(m, 0, syms, ks), 0, 1), 0);
  for (int i = 0; i < N; i++) {
    float want = erff(x[i]);
    if (isnan(want)) {
      cr_assert(isnan(y[i]));
      continue;
    }
    int32_t a, b;
    memcpy(&a, &y[i], 4);
    memcpy(&b, &want, 4);
    cr_assert(signbit(y[i]) == signbit(want) && abs(a - b) <= 1,
              "erf(%.9g) = %.9g, libm %.9g", (double)x[i], (double)y[i], (double)want);
  }
  free(x);
  free(y);
  compiled_free(m);
  ir_graph_free(g);
}

/* The call-free f32 exp (mo.exp, sigmoid, silu): within one ulp of libm's
 * expf from underflow to overflow, exact on the special values. */
Test(fusion, exp_f32_within_an_ulp_of_libm) {
  const char *text = "mo.graph @e<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
                     "  %y = mo.exp(%x) : !mo.tensor<[n], f32>\n"
                     "  mo.output %y : !mo.tensor<[n], f32>\n}\n";
  ir_graph *g = parse(text);
  compiled *m = compile_graph(g);
  enum { N = 200000 + 6 };
  float *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
  cr_assert(x && y);
  for (int i = 0; i < N - 6; i++) x[i] = -105.0f + 195.0f * (float)i / (float)(N - 6);
  float sp[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72283f};
  memcpy(x + N - 6, sp, sizeof sp);
  void *args[2] = {x, y};
  int64_t syms[1] = {N}, ks[1];
  cr_assert_eq(m->fn[0](args, kernel_syms(m, 0, syms, ks), 0, 1), 0);
  for (int i = 0; i < N; i++) {
    float want = expf(x[i]);
    if (isnan(want)) {
      cr_assert(isnan(y[i]));
      continue;
    }
    int32_t a, b;
    memcpy(&a, &y[i], 4);
    memcpy(&b, &want, 4);
    cr_assert(abs(a - b) <= 1, "exp(%.9g) = %.9g, libm %.9g", (double)x[i], (double)y[i],
              (double)want);
  }
  free(x);
  free(y);
  compiled_free(m);
  ir_graph_free(g);
}

/* ---- elementwise custom kernels ----
 * A mo.custom the runtime marked kiln.elementwise (src/kernel_lib.c, for a
 * KILN_ELEMENTWISE_KERNEL) joins elementwise groups, with up to 8
 * operands; its attributes (kiln.library: the library's hash) stay on the
 * body's copy, so the fused kernel's text and key carry them. Numbers are
 * in test_custom.c (they need a kernel library). */
Test(fusion, elementwise_custom_joins_a_chain) {
  const char *text =
      "mo.graph @c<n>(%x: !mo.tensor<[n, 4], f32>, %b: !mo.tensor<[4], f32>) -> "
      "(!mo.tensor<[n, 4], f32>) {\n"
      "  %a = mo.exp(%x) : !mo.tensor<[n, 4], f32>\n"
      "  %k = mo.custom(%a, %b, %a, %b, %x) {kiln.elementwise = 1, kiln.library = \"c-0123\", "
      "symbol = \"k\"} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], f32>, !mo.tensor<[n, 4], "
      "f32>, !mo.tensor<[4], f32>, !mo.tensor<[n, 4], f32>) -> !mo.tensor<[n, 4], f32>\n"
      "  %y = mo.relu(%k) : !mo.tensor<[n, 4], f32>\n"
      "  mo.output %y : !mo.tensor<[n, 4], f32>\n}\n";
  ir_graph *g = parse_stamped(text);
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fuse(g, IR_FUSE_SOFTMAX, &d), 1, "%s", d.msg);
  cr_assert_eq(g->nnodes, 1);
  const ir_node *f = g->nodes[0];
  cr_assert_eq(f->op, IR_OP_FUSED);
  cr_assert_eq(f->body->nnodes, 3);
  cr_assert_eq(f->body->nodes[1]->op, IR_OP_CUSTOM);
  cr_assert_str_eq(ir_node_attr_string(f->body->nodes[1], "kiln.library", ""), "c-0123");
  char *kt = ir_kernel_text(g, f, NULL, NULL);
  cr_assert_not_null(kt);
  cr_assert(strstr(kt, "kiln.library = \"c-0123\""), "%s", kt);
  ir_graph *kg = parse_stamped(kt); /* and the kernel text parses back (8 operands at most) */
  cr_assert_eq(kg->nnodes, 3);
  ir_graph_free(kg);
  free(kt);
  ir_graph_free(g);
}

Test(fusion, custom_without_the_mark_or_shape_stays_out) {
  const char *text =
      "mo.graph @c(%x: !mo.tensor<[8], f32>) -> (!mo.tensor<[8], f32>, !mo.tensor<[2, 8], f32>) {\n"
      "  %a = mo.exp(%x) : !mo.tensor<[8], f32>\n"
      "  %k = mo.custom(%a) {kiln.elementwise = 0, symbol = \"k\"} : (!mo.tensor<[8], f32>) -> "
      "!mo.tensor<[8], f32>\n"
      "  %y = mo.relu(%k) : !mo.tensor<[8], f32>\n"
      "  %w = mo.custom(%y) {kiln.elementwise = 1, symbol = \"w\"} : (!mo.tensor<[8], f32>) -> "
      "!mo.tensor<[2, 8], f32>\n"
      "  mo.output %y, %w : !mo.tensor<[8], f32>, !mo.tensor<[2, 8], f32>\n}\n";
  ir_graph *g = parse_stamped(text);
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fuse(g, IR_FUSE_SOFTMAX, &d), 0, "%s", d.msg);
  cr_assert_eq(g->nnodes, 4);
  ir_graph_free(g);
}
