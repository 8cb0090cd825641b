/* test_pool.c - work splitting and the context's thread pool.
 *
 * - Split lowerings (reduce, softmax, logsoftmax, layer_norm, movement):
 *   running a kernel's parts (0..n-1 of n, n = 2, 3, 7, in reverse order)
 *   writes exactly what the whole call (0, 1) writes, bit for bit, on
 *   shapes with fewer rows than parts, a reduced leading axis, tiles...
 * - Through the pool: graphs big enough to split, run with 1, 2, 3 and 7
 *   threads (KILN_NUM_THREADS; each test runs in its own process), agree
 *   with the reference interpreter (oracle.h).
 * - rt_kernel_call with a fake kernel: the number of parts, every part run
 *   exactly once, the first nonzero status, several threads calling at
 *   once on one pool, small kernels never split.
 * - Concurrent executes of one model on one context, set_num_threads, no
 *   thread for a context that never splits, a context freed right after a
 *   split execute (ASan in CI checks the leaks and the joins).
 * - rt_pool_run (work that is not a kernel): every part once, the first
 *   error, one whole call on one thread; kiln_model_compile compiling a
 *   model's kernels on the pool (every kernel there, results as the
 *   interpreter's).
 * - Placement: workers bound one per CPU, never on the CPU the caller ran
 *   its last job on, moved when the caller moves; no binding with
 *   KILN_PIN_THREADS=0, more threads than CPUs or fewer.
 * - Waiting: idle workers go to sleep, and woken for a job give the
 *   1-thread results; many short jobs with pauses of every length between
 *   them run every part once; jobs that only a worker can finish, one
 *   after another with and without pauses, never lose a wake-up. No test
 *   asserts on how long anything takes (the bounds are for liveness). */
#define _GNU_SOURCE /* CPU_*, pthread_setaffinity_np, sched_getaffinity */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/pool.h"
#include "src/rt.h"
#include "support/oracle.h"

/* ---- helpers ---- */

static kiln_model *compile_text(kiln_context *ctx, const char *text, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "test_pool", st);
  cr_assert(g, "%s\n%s", kiln_status_message(st), text);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert(m, "%s\n%s", kiln_status_message(st), text);
  return m;
}

static void fill(void *data, size_t nbytes, uint64_t seed) {
  uint64_t s = seed * 2654435761u + 1;
  float *f = data;
  for (size_t i = 0; i < nbytes / sizeof(float); i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    f[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 6 - 3);
  }
}

static kiln_tensor *rand_f32(int rank, const int64_t *shape, uint64_t seed) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  cr_assert(t);
  fill(kiln_tensor_data(t), kiln_tensor_nbytes(t), seed);
  return t;
}

/* The one kernel node of a model (the last node with a kernel). */
static int kernel_node(const kiln_model *m) {
  for (int i = m->g->nnodes - 1; i >= 0; i--)
    if (m->kernels[i]) return i;
  cr_assert_fail("no kernel node");
  return -1;
}

/* ---- split lowerings: parts == whole ---- */

typedef struct split_case {
  const char *label;
  const char *text; /* one kernel node whose operands are the graph inputs */
} split_case;

#define T2(a, b) "!mo.tensor<[" a "], " b ">"
static const split_case SPLIT_CASES[] = {
    {"sum last axis",
     "mo.graph @g(%x: " T2("5, 9", "f32") ") -> (" T2("5, 1", "f32") ") {\n"
     "  %y = mo.sum(%x) {axis = -1} : (" T2("5, 9", "f32") ") -> " T2("5, 1", "f32") "\n"
     "  mo.output %y : " T2("5, 1", "f32") "\n}\n"},
    {"sum leading axis (one outer row: splits inner)",
     "mo.graph @g(%x: " T2("3, 40", "f32") ") -> (" T2("1, 40", "f32") ") {\n"
     "  %y = mo.sum(%x) {axis = 0} : (" T2("3, 40", "f32") ") -> " T2("1, 40", "f32") "\n"
     "  mo.output %y : " T2("1, 40", "f32") "\n}\n"},
    {"mean middle axis, 2 outer rows",
     "mo.graph @g(%x: " T2("2, 3, 50", "f32") ") -> (" T2("2, 1, 50", "f32") ") {\n"
     "  %y = mo.mean(%x) {axis = 1} : (" T2("2, 3, 50", "f32") ") -> " T2("2, 1, 50", "f32") "\n"
     "  mo.output %y : " T2("2, 1, 50", "f32") "\n}\n"},
    {"argmax",
     "mo.graph @g(%x: " T2("6, 33", "f32") ") -> (" T2("6, 1", "si64") ") {\n"
     "  %y = mo.argmax(%x) {axis = -1} : (" T2("6, 33", "f32") ") -> " T2("6, 1", "si64") "\n"
     "  mo.output %y : " T2("6, 1", "si64") "\n}\n"},
    {"max, 2 rows",
     "mo.graph @g(%x: " T2("2, 7", "f32") ") -> (" T2("2, 1", "f32") ") {\n"
     "  %y = mo.max(%x) {axis = 1} : (" T2("2, 7", "f32") ") -> " T2("2, 1", "f32") "\n"
     "  mo.output %y : " T2("2, 1", "f32") "\n}\n"},
    {"softmax",
     "mo.graph @g(%x: " T2("5, 17", "f32") ") -> (" T2("5, 17", "f32") ") {\n"
     "  %y = mo.softmax(%x) : " T2("5, 17", "f32") "\n  mo.output %y : " T2("5, 17", "f32") "\n}\n"},
    {"softmax axis 0",
     "mo.graph @g(%x: " T2("9, 6", "f32") ") -> (" T2("9, 6", "f32") ") {\n"
     "  %y = mo.softmax(%x) {axis = 0} : " T2("9, 6", "f32") "\n"
     "  mo.output %y : " T2("9, 6", "f32") "\n}\n"},
    {"logsoftmax middle axis",
     "mo.graph @g(%x: " T2("2, 5, 3", "f64") ") -> (" T2("2, 5, 3", "f64") ") {\n"
     "  %y = mo.logsoftmax(%x) {axis = 1} : " T2("2, 5, 3", "f64") "\n"
     "  mo.output %y : " T2("2, 5, 3", "f64") "\n}\n"},
    {"layer_norm",
     "mo.graph @g(%x: " T2("6, 10", "f32") ", %gm: " T2("10", "f32") ", %bt: " T2("10", "f32")
     ") -> (" T2("6, 10", "f32") ") {\n"
     "  %y = mo.layer_norm(%x, %gm, %bt) : (" T2("6, 10", "f32") ", " T2("10", "f32") ", "
     T2("10", "f32") ") -> " T2("6, 10", "f32") "\n  mo.output %y : " T2("6, 10", "f32") "\n}\n"},
    {"transpose (tiled)",
     "mo.graph @g(%x: " T2("37, 41", "f32") ") -> (" T2("41, 37", "f32") ") {\n"
     "  %y = mo.transpose(%x) {axis_1 = 0, axis_2 = 1} : (" T2("37, 41", "f32") ") -> "
     T2("41, 37", "f32") "\n  mo.output %y : " T2("41, 37", "f32") "\n}\n"},
    {"transpose small",
     "mo.graph @g(%x: " T2("3, 5", "f32") ") -> (" T2("5, 3", "f32") ") {\n"
     "  %y = mo.transpose(%x) {axis_1 = 0, axis_2 = 1} : (" T2("3, 5", "f32") ") -> "
     T2("5, 3", "f32") "\n  mo.output %y : " T2("5, 3", "f32") "\n}\n"},
    {"transpose, leading 1 (tiled)",
     "mo.graph @g(%x: " T2("1, 40, 33", "f32") ") -> (" T2("1, 33, 40", "f32") ") {\n"
     "  %y = mo.transpose(%x) {axis_1 = 1, axis_2 = 2} : (" T2("1, 40, 33", "f32") ") -> "
     T2("1, 33, 40", "f32") "\n  mo.output %y : " T2("1, 33, 40", "f32") "\n}\n"},
    {"permute",
     "mo.graph @g(%x: " T2("2, 3, 4", "f32") ") -> (" T2("4, 2, 3", "f32") ") {\n"
     "  %y = mo.permute(%x) {dims = [2, 0, 1]} : (" T2("2, 3, 4", "f32") ") -> "
     T2("4, 2, 3", "f32") "\n  mo.output %y : " T2("4, 2, 3", "f32") "\n}\n"},
    {"slice",
     "mo.graph @g(%x: " T2("6, 9", "f32") ") -> (" T2("2, 4", "f32") ") {\n"
     "  %y = mo.slice_tensor(%x) {start = [1, 8], stop = [5, 0], step = [2, -2]} : ("
     T2("6, 9", "f32") ") -> " T2("2, 4", "f32") "\n  mo.output %y : " T2("2, 4", "f32") "\n}\n"},
    {"slice to one element (guard loop)",
     "mo.graph @g(%x: " T2("6, 9", "f32") ") -> (" T2("1, 1", "f32") ") {\n"
     "  %y = mo.slice_tensor(%x) {start = [2, 3], stop = [3, 4], step = [1, 1]} : (" T2("6, 9", "f32") ") -> "
     T2("1, 1", "f32") "\n  mo.output %y : " T2("1, 1", "f32") "\n}\n"},
    {"reshape",
     "mo.graph @g(%x: " T2("6, 7", "f32") ") -> (" T2("42", "f32") ") {\n"
     "  %y = mo.reshape(%x) : (" T2("6, 7", "f32") ") -> " T2("42", "f32") "\n"
     "  mo.output %y : " T2("42", "f32") "\n}\n"},
    {"concat leading axis (one row: splits the blocks)",
     "mo.graph @g(%a: " T2("2, 3", "f32") ", %b: " T2("4, 3", "f32") ") -> (" T2("6, 3", "f32")
     ") {\n  %y = mo.concat(%a, %b) {axis = 0} : (" T2("2, 3", "f32") ", " T2("4, 3", "f32")
     ") -> " T2("6, 3", "f32") "\n  mo.output %y : " T2("6, 3", "f32") "\n}\n"},
    {"concat last axis",
     "mo.graph @g(%a: " T2("5, 2", "f32") ", %b: " T2("5, 3", "f32") ") -> (" T2("5, 5", "f32")
     ") {\n  %y = mo.concat(%a, %b) {axis = 1} : (" T2("5, 2", "f32") ", " T2("5, 3", "f32")
     ") -> " T2("5, 5", "f32") "\n  mo.output %y : " T2("5, 5", "f32") "\n}\n"},
    {"split",
     "mo.graph @g(%x: " T2("4, 5", "f32") ") -> (" T2("4, 2", "f32") ", " T2("4, 3", "f32")
     ") {\n  %a, %b = mo.split(%x) {split_sizes = [2, 3], axis = 1} : (" T2("4, 5", "f32")
     ") -> (" T2("4, 2", "f32") ", " T2("4, 3", "f32") ")\n  mo.output %a, %b : "
     T2("4, 2", "f32") ", " T2("4, 3", "f32") "\n}\n"},
};
#define NSPLIT (int)(sizeof SPLIT_CASES / sizeof SPLIT_CASES[0])

/* Buffers of node n (operands, then results), filled (operands) or
 * poisoned (results) for one run. */
typedef struct bufs {
  int n;
  void *p[8];
  size_t bytes[8];
} bufs;

static size_t value_bytes(const ir_value *v) {
  int64_t numel = 0;
  cr_assert(ir_type_static_numel(&v->type, &numel), "static shapes only");
  return (size_t)numel * ir_dtype_size(v->type.dtype);
}

static void bufs_alloc(bufs *b, const ir_node *n) {
  b->n = n->nin + n->nout;
  cr_assert(b->n <= 8);
  for (int i = 0; i < b->n; i++) {
    const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
    b->bytes[i] = value_bytes(v);
    b->p[i] = malloc(b->bytes[i] + 64);
    cr_assert(b->p[i]);
    if (i < n->nin) fill(b->p[i], b->bytes[i], (uint64_t)i + 7);
  }
}

static void bufs_free(bufs *b) {
  for (int i = 0; i < b->n; i++) free(b->p[i]);
}

Test(split, parts_write_what_the_whole_call_writes) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  for (int c = 0; c < NSPLIT; c++) {
    kiln_model *m = compile_text(ctx, SPLIT_CASES[c].text, st);
    int node = kernel_node(m);
    const ir_node *n = m->g->nodes[node];
    jit_kernel_fn fn = m->kernels[node];
    bufs b;
    bufs_alloc(&b, n);
    int64_t syms[1] = {0};
    /* reference: the whole call */
    for (int i = n->nin; i < b.n; i++) memset(b.p[i], 0xA5, b.bytes[i]);
    cr_assert_eq(fn(b.p, syms, 0, 1), 0, "%s", SPLIT_CASES[c].label);
    void *ref[8];
    for (int i = n->nin; i < b.n; i++) {
      ref[i] = malloc(b.bytes[i] + 1);
      memcpy(ref[i], b.p[i], b.bytes[i]);
    }
    static const int NP[] = {2, 3, 7};
    for (int k = 0; k < 3; k++) {
      int np = NP[k];
      for (int i = n->nin; i < b.n; i++) memset(b.p[i], 0x5A, b.bytes[i]);
      for (int part = np - 1; part >= 0; part--)
        cr_assert_eq(fn(b.p, syms, part, np), 0, "%s: part %d of %d", SPLIT_CASES[c].label,
                     part, np);
      for (int i = n->nin; i < b.n; i++)
        cr_expect(memcmp(ref[i], b.p[i], b.bytes[i]) == 0,
                  "%s: result %d differs when split in %d parts", SPLIT_CASES[c].label,
                  i - n->nin, np);
    }
    for (int i = n->nin; i < b.n; i++) free(ref[i]);
    bufs_free(&b);
    kiln_model_free(m);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* A symbolic kernel splits too: layer_norm over [n, 12] with n bound at run time. */
Test(split, symbolic_rows_split) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  kiln_model *m = compile_text(
      ctx,
      "mo.graph @g<n>(%x: " T2("n, 12", "f32") ", %gm: " T2("12", "f32") ", %bt: "
      T2("12", "f32") ") -> (" T2("n, 12", "f32") ") {\n"
      "  %y = mo.layer_norm(%x, %gm, %bt) : (" T2("n, 12", "f32") ", " T2("12", "f32") ", "
      T2("12", "f32") ") -> " T2("n, 12", "f32") "\n  mo.output %y : " T2("n, 12", "f32") "\n}\n",
      st);
  int node = kernel_node(m);
  cr_assert_eq(m->work[node], -1, "a symbolic node's work is computed per call");
  jit_kernel_fn fn = m->kernels[node];
  int64_t gsyms[1] = {5}, ks[4] = {0};
  for (int j = 0; j < m->knsyms[node]; j++)
    ks[j] = m->ksym_map[node] ? gsyms[m->ksym_map[node][j]] : gsyms[j];
  cr_assert_eq(rt_node_work(m->g, m->g->nodes[node], gsyms), 2 * 5 * 12);
  float x[60], gm[12], bt[12], ref[60], y[60];
  fill(x, sizeof x, 1);
  fill(gm, sizeof gm, 2);
  fill(bt, sizeof bt, 3);
  void *args[4] = {x, gm, bt, ref};
  cr_assert_eq(fn(args, ks, 0, 1), 0);
  args[3] = y;
  for (int np = 2; np <= 7; np++) {
    memset(y, 0x5A, sizeof y);
    for (int part = 0; part < np; part++) cr_assert_eq(fn(args, ks, part, np), 0);
    cr_expect(memcmp(ref, y, sizeof y) == 0, "differs with %d parts", np);
  }
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* Reductions over a leading or middle axis with more than one block of
 * inner positions (jit/reduce.c reduces them COLS columns at a time):
 * the interpreter's results, NaN and integer wrap-around included. */
Test(split, column_blocked_reductions_match_interpreter) {
  static const char text[] =
      "mo.graph @cols<m>(%x: " T2("7, 3, m", "f32") ", %i: " T2("5, 200", "si32") ") -> ("
      T2("7, 1, m", "f32") ", " T2("1, 3, m", "f32") ", " T2("1, 200", "si32") ", "
      T2("1, 200", "si32") ", " T2("7, 1, m", "f32") ") {\n"
      "  %a = mo.max(%x) {axis = 1} : (" T2("7, 3, m", "f32") ") -> " T2("7, 1, m", "f32") "\n"
      "  %b = mo.mean(%x) {axis = 0} : (" T2("7, 3, m", "f32") ") -> " T2("1, 3, m", "f32") "\n"
      "  %c = mo.sum(%i) {axis = 0} : (" T2("5, 200", "si32") ") -> " T2("1, 200", "si32") "\n"
      "  %d = mo.min(%i) {axis = 0} : (" T2("5, 200", "si32") ") -> " T2("1, 200", "si32") "\n"
      "  %e = mo.sum(%x) {axis = 1} : (" T2("7, 3, m", "f32") ") -> " T2("7, 1, m", "f32") "\n"
      "  mo.output %a, %b, %c, %d, %e : " T2("7, 1, m", "f32") ", " T2("1, 3, m", "f32") ", "
      T2("1, 200", "si32") ", " T2("1, 200", "si32") ", " T2("7, 1, m", "f32") "\n}\n";
  oracle_gen gens[2] = {gen_naninf(-3, 3), gen_uniform(-2000000000.0, 2000000000.0)};
  oracle_case c = {.label = "column-blocked reductions", .mlir = text,
                   .bindings = "m=130;m=64;m=1;m=0", .seed = 3, .rtol = 1e-6, .atol = 1e-6,
                   .gens = gens, .ngens = 2};
  ORACLE_ASSERT(&c);
}

/* ---- the work estimate ---- */

Test(split, work_estimates) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  kiln_model *m = compile_text(
      ctx,
      "mo.graph @g(%a: " T2("64, 128", "f32") ", %b: " T2("128, 32", "f32") ") -> ("
      T2("64, 32", "f32") ", " T2("64, 128", "f32") ", " T2("64, 1", "f32") ", "
      T2("64, 128", "f32") ") {\n"
      "  %c = mo.matmul(%a, %b) : (" T2("64, 128", "f32") ", " T2("128, 32", "f32") ") -> "
      T2("64, 32", "f32") "\n  %e = mo.exp(%a) : " T2("64, 128", "f32") "\n"
      "  %s = mo.softmax(%e) : " T2("64, 128", "f32") "\n"
      "  %r = mo.sum(%a) {axis = 1} : (" T2("64, 128", "f32") ") -> " T2("64, 1", "f32") "\n"
      "  mo.output %c, %s, %r, %e : " T2("64, 32", "f32") ", " T2("64, 128", "f32") ", "
      T2("64, 1", "f32") ", " T2("64, 128", "f32") "\n}\n", /* %e an output: no prologue */
      st);
  static const int64_t want[] = {64 * 32 * 128 / 16, 64 * 128, 4 * 64 * 128, 64 * 128};
  int k = 0;
  for (int i = 0; i < m->g->nnodes; i++) {
    if (!m->kernels[i]) continue;
    cr_assert_lt(k, 4);
    cr_expect_eq(m->work[i], want[k], "node %d (mo.%s): work %lld, expected %lld", i,
                 ir_op_get(m->g->nodes[i]->op)->name, (long long)m->work[i], (long long)want[k]);
    k++;
  }
  cr_expect_eq(k, 4);
  kiln_model_free(m);
  /* a softmax with a fused prologue counts as the softmax */
  m = compile_text(ctx,
                   "mo.graph @h(%a: " T2("64, 128", "f32") ") -> (" T2("64, 128", "f32") ") {\n"
                   "  %e = mo.exp(%a) : " T2("64, 128", "f32") "\n"
                   "  %s = mo.softmax(%e) : " T2("64, 128", "f32") "\n"
                   "  mo.output %s : " T2("64, 128", "f32") "\n}\n",
                   st);
  cr_assert_eq(m->g->nnodes, 1);
  cr_expect_eq(m->work[0], 4 * 64 * 128);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* Each class's estimate is its ops.def row's formula: elements of the
 * result or of the operand, scaled; 0 for classes that never split. */
Test(split, work_estimates_follow_the_class_rows) {
  static const char text[] =
      "mo.graph @g(%x: " T2("6, 10", "f32") ", %gm: " T2("10", "f32") ", %bt: " T2("10", "f32")
      ", %i: " T2("3", "si64") ") -> (" T2("6, 10", "f32") ", " T2("6, 3", "f32") ", "
      T2("10, 6", "f32") ", " T2("6, 4", "f32") ", " T2("6, 6", "f32") ", " T2("6, 20", "f32")
      ") {\n"
      "  %ln = mo.layer_norm(%x, %gm, %bt) : (" T2("6, 10", "f32") ", " T2("10", "f32") ", "
      T2("10", "f32") ") -> " T2("6, 10", "f32") "\n"
      "  %ga = mo.gather(%x, %i) : (" T2("6, 10", "f32") ", " T2("3", "si64") ") -> "
      T2("6, 3", "f32") "\n"
      "  %t = mo.transpose(%x) {axis_1 = 0, axis_2 = 1} : (" T2("6, 10", "f32") ") -> "
      T2("10, 6", "f32") "\n"
      "  %s:2 = mo.split(%x) {split_sizes = [4, 6], axis = 1} : (" T2("6, 10", "f32") ") -> ("
      T2("6, 4", "f32") ", " T2("6, 6", "f32") ")\n"
      "  %c = mo.concat(%x, %x) {axis = 1} : (" T2("6, 10", "f32") ", " T2("6, 10", "f32")
      ") -> " T2("6, 20", "f32") "\n"
      "  mo.output %ln, %ga, %t, %s#0, %s#1, %c : " T2("6, 10", "f32") ", " T2("6, 3", "f32")
      ", " T2("10, 6", "f32") ", " T2("6, 4", "f32") ", " T2("6, 6", "f32") ", "
      T2("6, 20", "f32") "\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d: %s", d.line, d.col, d.msg);
  static const int64_t want[] = {2 * 60, 0, 60, 60, 120};
  cr_assert_eq(g->nnodes, 5);
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    cr_expect_eq(rt_node_work(g, n, NULL), want[i], "mo.%s: %lld", ir_op_get(n->op)->name,
                 (long long)rt_node_work(g, n, NULL));
  }
  ir_graph_free(g);
}

/* ---- through the pool, against the interpreter ---- */

/* Every splitting class at sizes over the grain (static and symbolic). */
static const char BIG_GRAPH[] =
    "mo.graph @big<n>(%x: " T2("n, 257", "f32") ", %w: " T2("300, 257", "f32") ", %gm: "
    T2("257", "f32") ", %bt: " T2("257", "f32") ") -> (" T2("n, 1", "f32") ", "
    T2("1, 257", "f32") ", " T2("n, 257", "f32") ", " T2("300, 257", "f32") ", "
    T2("n, 257", "f32") ", " T2("257, 300", "f32") ", " T2("300, 514", "f32") ", "
    T2("600, 257", "f32") ", " T2("n, 1", "si64") ") {\n"
    "  %s = mo.sum(%x) {axis = -1} : (" T2("n, 257", "f32") ") -> " T2("n, 1", "f32") "\n"
    "  %s0 = mo.sum(%w) {axis = 0} : (" T2("300, 257", "f32") ") -> " T2("1, 257", "f32") "\n"
    "  %sm = mo.softmax(%x) : " T2("n, 257", "f32") "\n"
    "  %ls = mo.logsoftmax(%w) {axis = 0} : " T2("300, 257", "f32") "\n"
    "  %ln = mo.layer_norm(%x, %gm, %bt) : (" T2("n, 257", "f32") ", " T2("257", "f32") ", "
    T2("257", "f32") ") -> " T2("n, 257", "f32") "\n"
    "  %t = mo.transpose(%w) {axis_1 = 0, axis_2 = 1} : (" T2("300, 257", "f32") ") -> "
    T2("257, 300", "f32") "\n"
    "  %c1 = mo.concat(%w, %w) {axis = 1} : (" T2("300, 257", "f32") ", " T2("300, 257", "f32")
    ") -> " T2("300, 514", "f32") "\n"
    "  %c0 = mo.concat(%w, %w) {axis = 0} : (" T2("300, 257", "f32") ", " T2("300, 257", "f32")
    ") -> " T2("600, 257", "f32") "\n"
    "  %am = mo.argmax(%x) {axis = -1} : (" T2("n, 257", "f32") ") -> " T2("n, 1", "si64") "\n"
    "  mo.output %s, %s0, %sm, %ls, %ln, %t, %c1, %c0, %am : " T2("n, 1", "f32") ", "
    T2("1, 257", "f32") ", " T2("n, 257", "f32") ", " T2("300, 257", "f32") ", "
    T2("n, 257", "f32") ", " T2("257, 300", "f32") ", " T2("300, 514", "f32") ", "
    T2("600, 257", "f32") ", " T2("n, 1", "si64") "\n}\n";

static void oracle_with_threads(const char *threads) {
  cr_assert_eq(setenv("KILN_NUM_THREADS", threads, 1), 0);
  char label[64];
  snprintf(label, sizeof label, "big graph, %s threads", threads);
  /* sums of 257-300 terms in double, exp: a few ulps of f32 */
  oracle_case c = {.label = label, .mlir = BIG_GRAPH, .bindings = "n=1100;n=3", .seed = 5,
                   .rtol = 1e-5, .atol = 1e-6, .gen_default = gen_uniform(-3, 3),
                   .wgen = gen_uniform(-3, 3)};
  ORACLE_ASSERT(&c);
}

Test(pool, split_graph_matches_interpreter_1_thread) { oracle_with_threads("1"); }
Test(pool, split_graph_matches_interpreter_2_threads) { oracle_with_threads("2"); }
Test(pool, split_graph_matches_interpreter_3_threads) { oracle_with_threads("3"); }
Test(pool, split_graph_matches_interpreter_7_threads) { oracle_with_threads("7"); }

/* ---- rt_kernel_call with a fake kernel ---- */

#define MAX_PARTS 64
typedef struct probe {
  atomic_int runs[MAX_PARTS];
  atomic_int nparts;
  atomic_int calls;
  int fail_part; /* part that returns fail_code, -1 for none */
  int fail_code;
} probe;

static int32_t fake_kernel(void *const *buffers, const int64_t *syms, int64_t part,
                           int64_t nparts) {
  (void)syms;
  probe *p = buffers[0];
  atomic_fetch_add(&p->calls, 1);
  atomic_store(&p->nparts, (int)nparts);
  if (part >= 0 && part < MAX_PARTS) atomic_fetch_add(&p->runs[part], 1);
  return part == p->fail_part ? p->fail_code : 0;
}

static void probe_reset(probe *p, int fail_part, int fail_code) {
  memset(p, 0, sizeof *p);
  p->fail_part = fail_part;
  p->fail_code = fail_code;
}

/* Every part of the last call ran exactly once; returns nparts. */
static int probe_check(probe *p) {
  int np = atomic_load(&p->nparts);
  cr_assert(np >= 1 && np <= MAX_PARTS, "nparts %d", np);
  cr_assert_eq(atomic_load(&p->calls), np);
  for (int i = 0; i < MAX_PARTS; i++)
    cr_assert_eq(atomic_load(&p->runs[i]), i < np ? 1 : 0, "part %d of %d ran %d times", i, np,
                 atomic_load(&p->runs[i]));
  return np;
}

static const char BIG_SOFTMAX[] =
    "mo.graph @g(%x: " T2("1024, 1024", "f32") ") -> (" T2("1024, 1024", "f32") ") {\n"
    "  %y = mo.softmax(%x) : " T2("1024, 1024", "f32") "\n"
    "  mo.output %y : " T2("1024, 1024", "f32") "\n}\n";
static const char SMALL_RELU[] =
    "mo.graph @g(%x: " T2("5", "f32") ") -> (" T2("5", "f32") ") {\n"
    "  %y = mo.relu(%x) : " T2("5", "f32") "\n  mo.output %y : " T2("5", "f32") "\n}\n";

Test(pool, big_kernel_splits_every_part_once_first_error_kept) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0, "%s", kiln_status_message(st));
  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  int node = kernel_node(m);
  cr_assert_gt(m->work[node], 4 * 1024 * 1024 - 1);
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  for (int rep = 0; rep < 50; rep++) {
    probe_reset(p, -1, 0);
    cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 0);
    int np = probe_check(p);
    cr_assert(np > 3 && np <= 12, "a big kernel on 3 threads: %d parts", np);
  }
  cr_assert_eq(rt_pool_workers(ctx), 2);
  probe_reset(p, 5, 42);
  cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 42);
  probe_check(p);
  free(p);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(pool, small_kernel_runs_whole_and_starts_no_thread) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 4, st), 0);
  kiln_model *m = compile_text(ctx, SMALL_RELU, st);
  int node = kernel_node(m);
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  probe_reset(p, 0, 3);
  cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 3);
  cr_assert_eq(probe_check(p), 1);
  int64_t shape[1] = {5};
  kiln_tensor *in = rand_f32(1, shape, 1), *out = NULL;
  for (int i = 0; i < 10; i++) cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0);
  cr_assert_eq(rt_pool_workers(ctx), 0, "a context that never splits starts no thread");
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  free(p);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

typedef struct caller_arg {
  const kiln_model *m;
  int node;
  int bad; /* calls whose parts did not each run once */
  int split; /* calls that ran in more than one part */
} caller_arg;

static void *caller_main(void *arg) {
  caller_arg *a = arg;
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  for (int i = 0; i < 300; i++) {
    probe_reset(p, -1, 0);
    if (rt_kernel_call(a->m, a->node, fake_kernel, args, NULL, NULL) != 0) a->bad++;
    int np = atomic_load(&p->nparts);
    bool ok = np >= 1 && np <= MAX_PARTS && atomic_load(&p->calls) == np;
    for (int k = 0; ok && k < MAX_PARTS; k++) ok = atomic_load(&p->runs[k]) == (k < np);
    if (!ok) a->bad++;
    if (np > 1) a->split++;
  }
  free(p);
  return NULL;
}

Test(pool, concurrent_calls_on_one_pool) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  enum { NT = 4 };
  pthread_t th[NT];
  caller_arg a[NT];
  for (int i = 0; i < NT; i++) {
    a[i] = (caller_arg){.m = m, .node = kernel_node(m)};
    cr_assert_eq(pthread_create(&th[i], NULL, caller_main, &a[i]), 0);
  }
  int split = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(a[i].bad, 0, "caller %d: %d calls ran a part twice or not at all", i, a[i].bad);
    split += a[i].split;
  }
  cr_expect_gt(split, 0, "no call split");
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- executes ---- */

typedef struct exec_arg {
  kiln_model *m;
  kiln_tensor *in;
  const kiln_tensor *ref;
  int bad;
} exec_arg;

static void *exec_main(void *arg) {
  exec_arg *a = arg;
  kiln_status *st = kiln_status_new();
  for (int i = 0; i < 8; i++) {
    kiln_tensor *out = NULL;
    if (kiln_model_execute(a->m, &a->in, 1, &out, 1, st) != 0 ||
        memcmp(kiln_tensor_data(out), kiln_tensor_data(a->ref), kiln_tensor_nbytes(out)) != 0)
      a->bad++;
    kiln_tensor_free(out);
  }
  kiln_status_free(st);
  return NULL;
}

Test(pool, concurrent_executes_of_one_model) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  kiln_model *m = compile_text(
      ctx,
      "mo.graph @g(%x: " T2("512, 512", "f32") ") -> (" T2("512, 512", "f32") ") {\n"
      "  %y = mo.softmax(%x) : " T2("512, 512", "f32") "\n"
      "  %z = mo.transpose(%y) {axis_1 = 0, axis_2 = 1} : " T2("512, 512", "f32") "\n"
      "  mo.output %z : " T2("512, 512", "f32") "\n}\n",
      st);
  int64_t shape[2] = {512, 512};
  kiln_tensor *in = rand_f32(2, shape, 9), *ref = NULL;
  cr_assert_eq(kiln_context_set_num_threads(ctx, 1, st), 0);
  cr_assert_eq(kiln_model_execute(m, &in, 1, &ref, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(rt_pool_workers(ctx), 0);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  enum { NT = 3 };
  pthread_t th[NT];
  exec_arg a[NT];
  for (int i = 0; i < NT; i++) {
    a[i] = (exec_arg){.m = m, .in = in, .ref = ref};
    cr_assert_eq(pthread_create(&th[i], NULL, exec_main, &a[i]), 0);
  }
  for (int i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(a[i].bad, 0, "thread %d: %d executes failed or differed", i, a[i].bad);
  }
  cr_expect_eq(rt_pool_workers(ctx), 2);
  kiln_tensor_free(in);
  kiln_tensor_free(ref);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(pool, set_num_threads) {
  cr_assert_eq(setenv("KILN_NUM_THREADS", "5", 1), 0);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_expect_eq(kiln_context_num_threads(ctx), 5, "default from KILN_NUM_THREADS");
  cr_expect_eq(kiln_context_num_threads(NULL), -1);
  cr_expect_eq(kiln_context_set_num_threads(NULL, 2, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_expect_eq(kiln_context_set_num_threads(ctx, -1, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_expect(strstr(kiln_status_message(st), "-1") != NULL, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_context_set_num_threads(ctx, RT_POOL_MAX_THREADS + 1, st), -1);

  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  int node = kernel_node(m);
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  static const int N[] = {2, 4, 1, 3};
  for (int k = 0; k < 4; k++) {
    cr_assert_eq(kiln_context_set_num_threads(ctx, N[k], st), 0);
    cr_expect_eq(kiln_context_num_threads(ctx), N[k]);
    cr_expect_eq(rt_pool_workers(ctx), 0, "a new count restarts the workers lazily");
    probe_reset(p, -1, 0);
    cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 0);
    int np = probe_check(p);
    cr_expect_eq(rt_pool_workers(ctx), N[k] - 1);
    if (N[k] == 1) cr_expect_eq(np, 1);
    else cr_expect(np > N[k] - 1 && np <= 4 * N[k], "%d threads: %d parts", N[k], np);
  }
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  cr_expect_eq(rt_pool_workers(ctx), 2, "the same count keeps the workers");
  cr_assert_eq(kiln_context_set_num_threads(ctx, 0, st), 0);
  cr_expect_eq(kiln_context_num_threads(ctx), 5, "0 restores the default");
  free(p);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(pool, context_freed_right_after_a_split_execute) {
  for (int rep = 0; rep < 3; rep++) {
    kiln_status *st = kiln_status_new();
    kiln_context *ctx = kiln_context_new(st);
    cr_assert(ctx);
    cr_assert_eq(kiln_context_set_num_threads(ctx, 4, st), 0);
    kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
    int64_t shape[2] = {1024, 1024};
    kiln_tensor *in = rand_f32(2, shape, 3), *out = NULL;
    cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
    cr_expect_eq(rt_pool_workers(ctx), 3);
    kiln_model_free(m);
    kiln_context_free(ctx);
    kiln_tensor_free(in);
    kiln_tensor_free(out);
    kiln_status_free(st);
  }
}

/* ---- placement ---- */

/* The process's CPUs (cr_skip when fewer than two: nothing to place). */
static int allowed_cpus(cpu_set_t *set, int *first, int *second) {
  cr_assert_eq(sched_getaffinity(0, sizeof *set, set), 0);
  int n = CPU_COUNT(set);
  if (n < 2) cr_skip_test("placement needs two CPUs; this process may run on %d", n);
  *first = *second = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, set)) {
      if (*first < 0) *first = c;
      else if (*second < 0) *second = c;
    }
  return n;
}

static void bind_self(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
}

/* One split job from the calling thread, every part run once. */
static void split_job(kiln_model *m, int node) {
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  probe_reset(p, -1, 0);
  cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 0);
  cr_assert_gt(probe_check(p), 1);
  free(p);
}

/* Bound, distinct, in the set, none on `caller`. */
static void expect_placed(const kiln_context *ctx, const cpu_set_t *set, int nworkers, int caller) {
  int placed_caller = -3, cpus[64];
  cr_assert_eq(rt_pool_placement(ctx, &placed_caller, cpus, nworkers), 1);
  cr_expect_eq(placed_caller, caller);
  for (int i = 0; i < nworkers; i++) {
    cr_expect(cpus[i] >= 0 && CPU_ISSET(cpus[i], set), "worker %d bound to %d", i, cpus[i]);
    cr_expect_neq(cpus[i], caller, "worker %d shares the caller's CPU %d", i, caller);
    for (int j = 0; j < i; j++) cr_expect_neq(cpus[i], cpus[j], "workers %d and %d share a CPU", j, i);
  }
}

Test(placement, workers_bound_off_the_callers_cpu_and_moved_with_it) {
  cpu_set_t set;
  int a, b, ncpu = allowed_cpus(&set, &a, &b);
  if (ncpu > 64) cr_skip_test("%d CPUs: a pool of one thread per CPU is too big for this test", ncpu);
  int nt = ncpu; /* bound only with a thread per CPU */
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, nt, st), 0);
  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  int node = kernel_node(m);
  split_job(m, node); /* starts the workers from an unbound caller */
  cr_assert_eq(rt_pool_workers(ctx), nt - 1);
  bind_self(a);
  split_job(m, node);
  expect_placed(ctx, &set, nt - 1, a);
  bind_self(b);
  split_job(m, node);
  expect_placed(ctx, &set, nt - 1, b);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
  /* a whole model still agrees with the interpreter after the moves */
  int64_t shape[2] = {1024, 1024};
  kiln_tensor *in = rand_f32(2, shape, 5), *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* No binding: the workers keep the mask they were started with. threads:
 * 1 one more than the CPUs, -1 one fewer, 0 as many. */
static void expect_unplaced(const char *pin_env, int threads) {
  cpu_set_t set;
  int a, b, ncpu = allowed_cpus(&set, &a, &b);
  if (threads < 0 && ncpu < 3) cr_skip_test("fewer threads than CPUs needs 3 CPUs, have %d", ncpu);
  if (pin_env) cr_assert_eq(setenv("KILN_PIN_THREADS", pin_env, 1), 0);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  int nt = ncpu + threads;
  cr_assert_eq(kiln_context_set_num_threads(ctx, nt, st), 0);
  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  int node = kernel_node(m);
  split_job(m, node);
  int caller = -3, cpus[1];
  cr_expect_eq(rt_pool_placement(ctx, &caller, cpus, 1), 0);
  cr_expect_eq(cpus[0], -1, "worker bound to CPU %d", cpus[0]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(placement, off_with_kiln_pin_threads_0) { expect_unplaced("0", 0); }
Test(placement, off_with_more_threads_than_cpus) { expect_unplaced(NULL, 1); }
Test(placement, off_with_fewer_threads_than_cpus) { expect_unplaced(NULL, -1); }

/* ---- rt_pool_run ---- */

static int32_t fake_job(void *const *args, const int64_t *syms, int64_t part, int64_t nparts) {
  return fake_kernel(args, syms, part, nparts);
}

Test(pool_run, every_part_once_first_error_kept_serial_on_one_thread) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  for (int rep = 0; rep < 20; rep++) {
    probe_reset(p, rep % 7, rep % 7 == 6 ? 0 : 9);
    cr_assert_eq(rt_pool_run(ctx, fake_job, args, 7), rep % 7 == 6 ? 0 : 9);
    cr_assert_eq(probe_check(p), 7);
  }
  cr_expect_eq(rt_pool_workers(ctx), 2);
  probe_reset(p, -1, 0);
  cr_assert_eq(rt_pool_run(ctx, fake_job, args, 1), 0);
  cr_expect_eq(probe_check(p), 1, "one part: one whole call");
  cr_assert_eq(kiln_context_set_num_threads(ctx, 1, st), 0);
  probe_reset(p, -1, 0);
  cr_assert_eq(rt_pool_run(ctx, fake_job, args, 7), 0);
  cr_expect_eq(probe_check(p), 1, "one thread: one whole call (0, 1)");
  cr_expect_eq(rt_pool_workers(ctx), 0);
  free(p);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* A model of several kernels (two GEMMs, fused chains, a softmax) compiled
 * on a 2-thread context: the compile ran on the pool, every node but the
 * sources has its kernel, and the results are the interpreter's. */
Test(pool_run, model_kernels_compile_on_the_pool) {
  cr_assert_eq(setenv("KILN_NUM_THREADS", "2", 1), 0);
  static const char text[] =
      "mo.graph @g<n>(%x: " T2("n, 24", "f32") ", %w: " T2("24, 40", "f32") ", %v: "
      T2("40, 8", "f32") ") -> (" T2("n, 8", "f32") ", " T2("n, 40", "f32") ") {\n"
      "  %h = mo.matmul(%x, %w) : (" T2("n, 24", "f32") ", " T2("24, 40", "f32") ") -> "
      T2("n, 40", "f32") "\n"
      "  %r = mo.relu(%h) : " T2("n, 40", "f32") "\n"
      "  %s = mo.softmax(%r) {axis = -1} : " T2("n, 40", "f32") "\n"
      "  %o = mo.matmul(%r, %v) : (" T2("n, 40", "f32") ", " T2("40, 8", "f32") ") -> "
      T2("n, 8", "f32") "\n"
      "  %t = mo.tanh(%o) : " T2("n, 8", "f32") "\n"
      "  mo.output %t, %s : " T2("n, 8", "f32") ", " T2("n, 40", "f32") "\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  kiln_model *m = compile_text(ctx, text, st);
  cr_expect_eq(rt_pool_workers(ctx), 1, "the compile started the pool's worker");
  for (int i = 0; i < m->g->nnodes; i++)
    if (!ir_node_is_source(m->g->nodes[i]))
      cr_expect_not_null(m->kernels[i], "node %d has no kernel", i);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
  oracle_case c = {.label = "compiled on the pool", .mlir = text, .bindings = "n=1;n=33",
                   .seed = 71, .atol = 1e-4, .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
}

/* ---- waiting: spin, sleep, wake ---- */

/* Wait (up to a minute: a liveness bound, not a timing check) until every
 * worker of ctx's pool sleeps. */
static void expect_all_asleep(const kiln_context *ctx) {
  int workers = rt_pool_workers(ctx);
  cr_assert_gt(workers, 0);
  for (int i = 0; i < 60000 && rt_pool_sleeping(ctx) < workers; i++) usleep(1000);
  cr_assert_eq(rt_pool_sleeping(ctx), workers, "idle workers still awake");
}

/* An execute's results on a 2-thread context whose workers are asleep
 * (the last execute ended a while ago) are the 1-thread context's, bit for
 * bit (softmax rows do not depend on the split), every time; the context
 * is then freed with its workers asleep (the join must wake them). */
Test(wait, workers_asleep_after_idle_then_woken_give_correct_results) {
  kiln_status *st = kiln_status_new();
  kiln_context *one = kiln_context_new(st), *two = kiln_context_new(st);
  cr_assert(one && two);
  cr_assert_eq(kiln_context_set_num_threads(one, 1, st), 0);
  cr_assert_eq(kiln_context_set_num_threads(two, 2, st), 0);
  kiln_model *m1 = compile_text(one, BIG_SOFTMAX, st), *m2 = compile_text(two, BIG_SOFTMAX, st);
  int64_t shape[2] = {1024, 1024};
  kiln_tensor *x = rand_f32(2, shape, 11), *want = NULL;
  cr_assert_eq(kiln_model_execute(m1, &x, 1, &want, 1, st), 0, "%s", kiln_status_message(st));
  for (int rep = 0; rep < 5; rep++) {
    kiln_tensor *got = NULL;
    cr_assert_eq(kiln_model_execute(m2, &x, 1, &got, 1, st), 0, "%s", kiln_status_message(st));
    cr_assert_eq(memcmp(kiln_tensor_data(got), kiln_tensor_data(want), kiln_tensor_nbytes(want)),
                 0, "execute %d after the workers slept differs", rep);
    kiln_tensor_free(got);
    expect_all_asleep(two);
  }
  kiln_tensor_free(x);
  kiln_tensor_free(want);
  kiln_model_free(m1);
  kiln_model_free(m2);
  kiln_context_free(one);
  kiln_context_free(two);
  kiln_status_free(st);
}

/* Many short jobs, back to back and with pauses of a few microseconds to a
 * few milliseconds between them (so that workers are caught spinning,
 * going to sleep and asleep), some ending an "execute" (rt_pool_quiet) and
 * some not: every part of every job runs exactly once. */
Test(wait, many_short_jobs_every_part_once) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 3, st), 0);
  kiln_model *m = compile_text(ctx, BIG_SOFTMAX, st);
  int node = kernel_node(m);
  probe *p = malloc(sizeof *p);
  void *args[1] = {p};
  uint64_t s = 3;
  for (int job = 0; job < 20000; job++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(s >> 33);
    probe_reset(p, -1, 0);
    if (r % 2)
      cr_assert_eq(rt_pool_run(ctx, fake_job, args, 2 + (int)(r / 2 % 11)), 0);
    else
      cr_assert_eq(rt_kernel_call(m, node, fake_kernel, args, NULL, NULL), 0);
    probe_check(p);
    if (r % 5 == 0) rt_pool_quiet(ctx);
    if (r % 97 == 0) usleep(r % 3000);
    else if (r % 7 == 0) usleep(r % 60);
  }
  cr_expect_eq(rt_pool_workers(ctx), 2);
  free(p);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* A job that only a worker can finish: part 0 (which the caller always
 * runs itself, first) returns only once part 1 has started on another
 * thread. Part 1 sometimes takes long enough that the caller gives up
 * spinning and sleeps for it. A lost wake-up of a worker or of the caller
 * hangs (the test's timeout) or, after a minute, fails the job. */
typedef struct handoff {
  atomic_int started;
  atomic_int slow_us;
} handoff;

static int32_t handoff_job(void *const *args, const int64_t *syms, int64_t part, int64_t nparts) {
  (void)syms, (void)nparts;
  handoff *h = args[0];
  if (part == 1) {
    atomic_store(&h->started, 1);
    int us = atomic_load(&h->slow_us);
    if (us) usleep((useconds_t)us);
    return 0;
  }
  for (long i = 0; !atomic_load(&h->started); i++) {
    if (i > 600000) return 77; /* about a minute of sched_yield and usleep(100) */
    if (i % 64 == 63) usleep(100);
    else sched_yield();
  }
  return 0;
}

static void handoff_jobs(int threads, int njobs) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_num_threads(ctx, threads, st), 0);
  handoff h;
  void *args[1] = {&h};
  uint64_t s = 9;
  for (int job = 0; job < njobs; job++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(s >> 33);
    atomic_store(&h.started, 0);
    atomic_store(&h.slow_us, r % 13 == 0 ? (int)(r % 400) : 0);
    cr_assert_eq(rt_pool_run(ctx, handoff_job, args, 2), 0, "job %d: no worker ran part 1", job);
    if (r % 89 == 0) usleep(r % 2000);
    else if (r % 3 == 0) usleep(r % 80);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(wait, no_lost_wakeup_2_threads, .timeout = 300) { handoff_jobs(2, 5000); }
Test(wait, no_lost_wakeup_4_threads, .timeout = 300) { handoff_jobs(4, 3000); }
