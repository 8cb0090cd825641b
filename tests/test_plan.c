/* test_plan.c - the memory planner (src/plan.c): the placement invariant on
 * many random lifetimes (no two live buffers overlap, 64-byte alignment, the
 * arena is at least the largest live set and at most the sum), known small
 * plans, reuse on a long chain, the plans of real graphs checked against
 * lifetimes computed here, and end to end: every shared and bundled example
 * graph and a chain that must reuse memory run with and without
 * KILN_POISON_ARENA=1 (the arena filled with NaNs before each execute) give
 * bit-identical outputs that match the reference interpreter; also with
 * more bindings than the plan cache holds, from several threads at once,
 * and through `kiln run --stats`; reshape-like results sharing their
 * operand's buffer (aliases); a growing dim planned with room, or at the
 * bound the graph gives it.
 * A deliberately broken plan (everything at offset 0) is shown to be caught
 * by the same comparison. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kiln/kiln.h"
#include "ir/interp.h"
#include "src/plan.h"
#include "src/rt.h"

#define EXDIR KILN_SHARED_DIR "/ir-examples"

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 17;
}

static size_t al(size_t n) { return (n + 63) / 64 * 64; }

/* The planner's contract for one plan; NULL when it holds, else what broke
 * (in a static buffer). */
static const char *plan_violation_room(int n, const size_t *size, const int *first,
                                       const int *last, const size_t *off, size_t total,
                                       bool room) {
  static char why[256];
  if (total % 64) return snprintf(why, sizeof why, "total %zu not 64-aligned", total), why;
  size_t sum = 0;
  int maxt = 0;
  for (int i = 0; i < n; i++) {
    if (off[i] % 64)
      return snprintf(why, sizeof why, "offset %zu of %d not aligned", off[i], i), why;
    if (size[i] && off[i] + al(size[i]) > total)
      return snprintf(why, sizeof why, "%d ends at %zu past %zu", i, off[i] + al(size[i]), total),
             why;
    /* a model's plan may give a value up to half as much again, four times as
     * much once its bindings keep growing (plan.c) */
    sum += al(room ? 4 * size[i] + 64 : size[i]);
    if (last[i] > maxt) maxt = last[i];
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!size[i] || !size[j]) continue;
      if (first[i] > last[j] || first[j] > last[i]) continue;
      if (off[i] < off[j] + size[j] && off[j] < off[i] + size[i])
        return snprintf(why, sizeof why,
                        "%d [%d,%d] @%zu+%zu and %d [%d,%d] @%zu+%zu live together overlap", i,
                        first[i], last[i], off[i], size[i], j, first[j], last[j], off[j],
                        size[j]),
               why;
    }
  for (int t = 0; t <= maxt; t++) {
    size_t live = 0;
    for (int i = 0; i < n; i++)
      if (first[i] <= t && t <= last[i]) live += al(size[i]);
    if (live > total)
      return snprintf(why, sizeof why, "%zu bytes live at node %d, arena %zu", live, t, total), why;
  }
  if (total > sum) return snprintf(why, sizeof why, "arena %zu > sum %zu", total, sum), why;
  return NULL;
}

static const char *plan_violation(int n, const size_t *size, const int *first, const int *last,
                                  const size_t *off, size_t total) {
  return plan_violation_room(n, size, first, last, off, total, false);
}

/* ---- placement ---- */
Test(place, random_lifetimes_never_overlap) {
  uint64_t s = 7;
  enum { MAXN = 90 };
  size_t size[MAXN], off[MAXN], off2[MAXN];
  int first[MAXN], last[MAXN];
  for (int c = 0; c < 3000; c++) {
    int n = (int)(rng_next(&s) % MAXN);
    int span = 1 + (int)(rng_next(&s) % 60);
    int kind = (int)(rng_next(&s) % 4);
    for (int i = 0; i < n; i++) {
      first[i] = (int)(rng_next(&s) % (uint64_t)span);
      last[i] = first[i] + (int)(rng_next(&s) % 3 ? rng_next(&s) % 4 : rng_next(&s) % 40);
      switch (kind) {
      case 0: size[i] = 4000; break;                               /* all alike */
      case 1: size[i] = (size_t)(rng_next(&s) % 5) * 64; break;    /* small, zeros */
      case 2: size[i] = (size_t)(rng_next(&s) % 100000); break;    /* unaligned */
      default: size[i] = (size_t)1 << (rng_next(&s) % 22); break;  /* powers of two */
      }
    }
    size_t total = 12345, total2 = 0;
    cr_assert_eq(rt_plan_place(n, size, first, last, off, &total), 0);
    const char *why = plan_violation(n, size, first, last, off, total);
    cr_assert_null(why, "case %d (n=%d): %s", c, n, why);
    cr_assert_eq(rt_plan_place(n, size, first, last, off2, &total2), 0);
    cr_assert_eq(total, total2, "not deterministic");
    cr_assert_eq(memcmp(off, off2, (size_t)n * sizeof *off), 0, "not deterministic");
  }
}

/* The greedy plan.c implements, the plain way: per value (largest first;
 * ties: earlier first node, then index) a scan of every value placed
 * before it, those live together with it sorted by offset, the smallest
 * gap that fits (lowest offset on ties), else above them all. plan.c gets
 * the same offsets from conflict lists (or this scan, for dense graphs). */
typedef struct ref_item {
  size_t size, off;
  int first, last, idx;
} ref_item;

static int ref_by_order(const void *a, const void *b) {
  const ref_item *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->idx < y->idx ? -1 : 1;
}

static int ref_by_off(const void *a, const void *b) {
  const ref_item *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

static size_t ref_place(int n, const size_t *size, const int *first, const int *last,
                        size_t *off) {
  ref_item *it = malloc((size_t)(n ? n : 1) * sizeof *it);
  ref_item *live = malloc((size_t)(n ? n : 1) * sizeof *live);
  cr_assert(it && live);
  for (int i = 0; i < n; i++) it[i] = (ref_item){al(size[i]), 0, first[i], last[i], i};
  qsort(it, (size_t)n, sizeof *it, ref_by_order);
  size_t total = 0;
  for (int k = 0; k < n; k++) {
    off[it[k].idx] = 0;
    if (!it[k].size) continue;
    int nl = 0;
    for (int q = 0; q < k; q++)
      if (it[q].size && it[q].first <= it[k].last && it[k].first <= it[q].last) live[nl++] = it[q];
    qsort(live, (size_t)nl, sizeof *live, ref_by_off);
    size_t cursor = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (int q = 0; q < nl; q++) {
      if (live[q].off > cursor && live[q].off - cursor >= it[k].size &&
          live[q].off - cursor < best_gap) {
        best_gap = live[q].off - cursor;
        best = cursor;
      }
      if (live[q].off + live[q].size > cursor) cursor = live[q].off + live[q].size;
    }
    it[k].off = best == SIZE_MAX ? cursor : best;
    off[it[k].idx] = it[k].off;
    if (it[k].off + it[k].size > total) total = it[k].off + it[k].size;
  }
  free(it);
  free(live);
  return total;
}

static void expect_reference_plan(int n, const size_t *size, const int *first, const int *last,
                                  const char *what, int c) {
  size_t *off = malloc((size_t)(n ? n : 1) * sizeof *off);
  size_t *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
  cr_assert(off && ref);
  size_t total = 12345;
  cr_assert_eq(rt_plan_place(n, size, first, last, off, &total), 0);
  const char *why = plan_violation(n, size, first, last, off, total);
  cr_assert_null(why, "%s %d (n=%d): %s", what, c, n, why);
  size_t ref_total = ref_place(n, size, first, last, ref);
  cr_assert_eq(total, ref_total, "%s %d (n=%d): arena %zu, the greedy's %zu", what, c, n, total,
               ref_total);
  for (int i = 0; i < n; i++)
    cr_assert_eq(off[i], ref[i], "%s %d (n=%d): value %d at %zu, the greedy's %zu", what, c, n,
                 i, off[i], ref[i]);
  free(off);
  free(ref);
}

Test(place, random_lifetimes_give_the_greedy_plain_scan_offsets) {
  /* lifetimes in node order (a graph's) and shuffled (any caller's) */
  uint64_t s = 11;
  enum { MAXN = 160 };
  size_t size[MAXN];
  int first[MAXN], last[MAXN];
  for (int c = 0; c < 2000; c++) {
    int n = (int)(rng_next(&s) % MAXN);
    int span = 1 + (int)(rng_next(&s) % 80);
    bool in_order = rng_next(&s) % 2;
    for (int i = 0; i < n; i++) {
      first[i] = in_order ? i * span / (n ? n : 1) : (int)(rng_next(&s) % (uint64_t)span);
      last[i] = first[i] + (int)(rng_next(&s) % 4 ? rng_next(&s) % 3 : rng_next(&s) % 50);
      size[i] = rng_next(&s) % 7 == 0 ? 0
                : rng_next(&s) % 2  ? (size_t)(rng_next(&s) % 5000)
                                    : (size_t)64 << (rng_next(&s) % 6); /* many ties */
    }
    expect_reference_plan(n, size, first, last, "case", c);
  }
}

Test(place, dense_lifetimes_past_the_conflict_lists_give_the_same_offsets) {
  /* 1600 values all live together: 2.6M conflict entries, past plan.c's
   * bound on the lists, so it scans instead */
  enum { N = 1600 };
  static size_t size[N];
  static int first[N], last[N];
  uint64_t s = 5;
  for (int i = 0; i < N; i++) {
    first[i] = (int)(rng_next(&s) % 8);
    last[i] = 8 + (int)(rng_next(&s) % 8);
    size[i] = (size_t)(rng_next(&s) % 3000);
  }
  expect_reference_plan(N, size, first, last, "dense", 0);
  for (int i = 0; i < N; i++) { /* a long chain: short lists */
    first[i] = i;
    last[i] = i + 1 + (int)(rng_next(&s) % 3);
  }
  expect_reference_plan(N, size, first, last, "chain", 0);
}

Test(place, the_checker_catches_an_overlap) {
  size_t size[] = {100, 100}, off[] = {0, 64};
  int first[] = {0, 1}, last[] = {1, 2};
  cr_assert_not_null(plan_violation(2, size, first, last, off, 256));
  off[1] = 128;
  cr_assert_null(plan_violation(2, size, first, last, off, 256));
  off[1] = 96; /* unaligned */
  cr_assert_not_null(plan_violation(2, size, first, last, off, 256));
}

Test(place, a_chain_reuses_and_operand_never_meets_result) {
  /* v_i defined at node i, used by node i + 1: two live at a time */
  enum { N = 10 };
  size_t size[N], off[N], total;
  int first[N], last[N];
  for (int i = 0; i < N; i++) {
    size[i] = 1000;
    first[i] = i;
    last[i] = i + 1;
  }
  cr_assert_eq(rt_plan_place(N, size, first, last, off, &total), 0);
  cr_assert_eq(total, 2 * al(1000), "arena %zu", total);
  for (int i = 0; i + 1 < N; i++) cr_assert_neq(off[i], off[i + 1], "operand %d meets result", i);
  cr_assert_eq(off[0], off[2], "no reuse");
}

Test(place, best_fit_fills_the_gap) {
  /* a (big) and c live at node 0..1; b dies at 0: d (small, node 1..2) fits
   * where b was instead of growing the arena */
  size_t size[] = {4096, 1024, 4096, 1024}, off[4], total;
  int first[] = {0, 0, 0, 1}, last[] = {1, 0, 1, 2};
  cr_assert_eq(rt_plan_place(4, size, first, last, off, &total), 0);
  cr_assert_null(plan_violation(4, size, first, last, off, total));
  cr_assert_eq(total, 4096 + 1024 + 4096, "arena %zu", total);
  cr_assert_eq(off[3], off[1]);
}

Test(place, zero_sizes_and_empty) {
  size_t size[] = {0, 0, 64}, off[3], total = 99;
  int first[] = {0, 0, 0}, last[] = {3, 3, 3};
  cr_assert_eq(rt_plan_place(0, size, first, last, off, &total), 0);
  cr_assert_eq(total, 0);
  cr_assert_eq(rt_plan_place(2, size, first, last, off, &total), 0);
  cr_assert_eq(total, 0);
  cr_assert_eq(off[0], 0);
  cr_assert_eq(rt_plan_place(3, size, first, last, off, &total), 0);
  cr_assert_eq(total, 64);
}

Test(place, overflow_is_an_error) {
  size_t size[] = {SIZE_MAX - 10, 64}, off[2], total;
  int first[] = {0, 0}, last[] = {0, 0};
  cr_assert_eq(rt_plan_place(2, size, first, last, off, &total), -1);
  size_t half[] = {SIZE_MAX / 2 + 1, SIZE_MAX / 2 - 62}; /* 2^63 each once aligned */
  cr_assert_eq(rt_plan_place(2, half, first, last, off, &total), -1);
  last[1] = 0, first[1] = 0;
  half[1] = SIZE_MAX / 2 - 256; /* fits: 2^64 - 256 */
  cr_assert_eq(rt_plan_place(2, half, first, last, off, &total), 0);
  cr_assert_eq(total, SIZE_MAX - 255);
}

Test(place, poison_is_nan_for_f32_and_f64) {
  _Alignas(64) unsigned char buf[136];
  rt_plan_poison(buf, sizeof buf);
  for (size_t i = 0; i + 4 <= sizeof buf; i += 4) {
    float f;
    memcpy(&f, buf + i, 4);
    cr_assert(isnan(f), "f32 word %zu", i / 4);
  }
  for (size_t i = 0; i + 8 <= sizeof buf; i += 8) {
    double d;
    memcpy(&d, buf + i, 8);
    cr_assert(isnan(d), "f64 word %zu", i / 8);
  }
}

/* ---- models ---- */
typedef struct run_case {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *g;
  kiln_model *m;  /* runs with a clean arena */
  kiln_model *mp; /* the same graph, first executed with KILN_POISON_ARENA=1 */
  int64_t syms[8];
  kiln_tensor *ins[8], *wts[16];
} run_case;

static void fill_random(kiln_tensor *t, uint64_t *s) {
  unsigned char *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) {
    double u = (double)rng_next(s) / (double)(1ull << 47) * 2 - 1;
    switch (kiln_tensor_dtype(t)) {
    case KILN_FLOAT32: ((float *)p)[i] = (float)u; break;
    case KILN_FLOAT64: ((double *)p)[i] = u; break;
    default:
      memset(p + (size_t)i * kiln_dtype_size(kiln_tensor_dtype(t)), 0,
             kiln_dtype_size(kiln_tensor_dtype(t)));
      break;
    }
  }
}

/* Compile g (owned by the case from now) and make random inputs and weights
 * for the symbol values sym_vals (cycled over the graph's symbols). */
static void case_open(run_case *c, kiln_graph *g, const int64_t *sym_vals, int nvals,
                      uint64_t seed) {
  memset(c, 0, sizeof *c);
  unsetenv("KILN_POISON_ARENA");
  c->st = kiln_status_new();
  c->ctx = kiln_context_new(c->st);
  cr_assert(c->ctx, "%s", kiln_status_message(c->st));
  c->g = g;
  c->m = kiln_model_compile(c->ctx, g, c->st);
  cr_assert(c->m, "%s", kiln_status_message(c->st));
  c->mp = kiln_model_compile(c->ctx, g, c->st);
  cr_assert(c->mp, "%s", kiln_status_message(c->st));
  int ns = rt_model_num_symbols(c->m);
  cr_assert(ns <= 8);
  bool known[8];
  for (int k = 0; k < ns; k++) {
    c->syms[k] = sym_vals[k % nvals];
    known[k] = true;
  }
  cr_assert(kiln_model_num_inputs(c->m) <= 8 && kiln_model_num_weights(c->m) <= 16);
  int64_t shape[IR_MAX_RANK];
  for (int i = 0; i < kiln_model_num_inputs(c->m); i++) {
    cr_assert_eq(rt_model_port_shape(c->m, false, i, c->syms, known, shape, NULL, c->st), 0, "%s",
                 kiln_status_message(c->st));
    c->ins[i] = kiln_tensor_new(kiln_model_input_dtype(c->m, i), kiln_model_input_rank(c->m, i),
                                shape, c->st);
    cr_assert(c->ins[i]);
    fill_random(c->ins[i], &seed);
  }
  for (int i = 0; i < kiln_model_num_weights(c->m); i++) {
    cr_assert_eq(rt_model_port_shape(c->m, true, i, c->syms, known, shape, NULL, c->st), 0, "%s",
                 kiln_status_message(c->st));
    c->wts[i] = kiln_tensor_new(kiln_model_weight_dtype(c->m, i), kiln_model_weight_rank(c->m, i),
                                shape, c->st);
    cr_assert(c->wts[i]);
    fill_random(c->wts[i], &seed);
    cr_assert_eq(kiln_model_bind_weight(c->m, kiln_model_weight_name(c->m, i), c->wts[i], c->st),
                 0, "%s", kiln_status_message(c->st));
    cr_assert_eq(kiln_model_bind_weight(c->mp, kiln_model_weight_name(c->m, i), c->wts[i], c->st),
                 0, "%s", kiln_status_message(c->st));
  }
}

static void case_close(run_case *c) {
  for (int i = 0; i < 8; i++) kiln_tensor_free(c->ins[i]);
  for (int i = 0; i < 16; i++) kiln_tensor_free(c->wts[i]);
  kiln_model_free(c->m);
  kiln_model_free(c->mp);
  kiln_graph_free(c->g);
  kiln_context_free(c->ctx);
  kiln_status_free(c->st);
}

/* Execute m; outputs allocated by kiln when fresh, else written into outs. */
static void execute(run_case *c, kiln_model *m, kiln_tensor **outs, bool fresh) {
  int no = kiln_model_num_outputs(m);
  for (int o = 0; fresh && o < no; o++) outs[o] = NULL;
  cr_assert_eq(kiln_model_execute(m, c->ins, kiln_model_num_inputs(m), outs, no, c->st), 0, "%s",
               kiln_status_message(c->st));
}

static void to_ir(const kiln_tensor *t, ir_tensor *o) {
  o->dtype = (ir_dtype)t->dtype;
  o->rank = t->rank;
  for (int a = 0; a < t->rank; a++) o->shape[a] = t->shape[a];
  o->data = t->data;
}

typedef struct weights_ud {
  const kiln_model *m;
  ir_tensor w[16];
} weights_ud;

static const ir_tensor *weight_fn(void *ud, const char *name) {
  weights_ud *u = ud;
  for (int i = 0; i < u->m->nweights; i++)
    if (strcmp(u->m->weights[i].port.name, name) == 0) return &u->w[i];
  return NULL;
}

/* Outputs against the reference interpreter: floats within a relative
 * tolerance, everything else exactly. */
static void check_interp(run_case *c, kiln_tensor *const *outs, const char *what) {
  const kiln_model *m = c->m;
  ir_tensor in[8], out[8];
  weights_ud ud = {.m = m};
  for (int i = 0; i < m->ninputs; i++) to_ir(c->ins[i], &in[i]);
  for (int i = 0; i < m->nweights; i++) to_ir(m->weights[i].bound, &ud.w[i]);
  char msg[512];
  cr_assert_eq(ir_interp_run(m->g, in, weight_fn, &ud, out, msg, sizeof msg), 0, "%s: %s",
               what, msg);
  for (int o = 0; o < m->noutputs; o++) {
    cr_assert_eq(ir_tensor_numel(&out[o]), kiln_tensor_numel(outs[o]), "%s", what);
    int64_t n = kiln_tensor_numel(outs[o]);
    for (int64_t i = 0; i < n; i++) {
      if (out[o].dtype == IR_DT_F32) {
        double a = ((float *)out[o].data)[i], b = ((float *)outs[o]->data)[i];
        cr_assert(fabs(a - b) <= 1e-4 * (1 + fabs(a)), "%s: output %d [%lld]: interp %g, kiln %g",
                  what, o, (long long)i, a, b);
      } else {
        size_t es = ir_dtype_size(out[o].dtype);
        cr_assert_eq(memcmp((char *)out[o].data + (size_t)i * es,
                            (char *)outs[o]->data + (size_t)i * es, es),
                     0, "%s: output %d [%lld] differs", what, o, (long long)i);
      }
    }
    free(out[o].data);
  }
}

/* Intermediates' lifetimes computed here, independently of plan.c, and the
 * model's plan for c->syms checked against them. Returns the arena size and
 * the sum of the intermediates' sizes in *sum. */
/* Value v's buffer as computed here: the start of a chain of reshape-like
 * nodes (reshape, squeeze, unsqueeze, transfer_to) whose results are no
 * graph outputs, which share their operand's buffer (plan.h). */
static bool is_graph_output(const ir_graph *g, const ir_value *v) {
  for (int o = 0; o < g->noutputs; o++)
    if (g->outputs[o] == v) return true;
  return false;
}

static const ir_value *buffer_of(const ir_graph *g, const ir_value *v) {
  while (v->def && v->def->nin == 1 && !is_graph_output(g, v) &&
         (v->def->op == IR_OP_RESHAPE || v->def->op == IR_OP_SQUEEZE ||
          v->def->op == IR_OP_UNSQUEEZE || v->def->op == IR_OP_TRANSFER_TO))
    v = v->def->in[0];
  return v;
}

static size_t check_model_plan(run_case *c, size_t *sum) {
  const ir_graph *g = c->m->g;
  rt_plan_view v;
  size_t *off = calloc((size_t)g->nvalues + 1, sizeof *off);
  size_t *size = calloc((size_t)g->nvalues + 1, sizeof *size);
  int *first = calloc((size_t)g->nvalues + 1, sizeof *first);
  int *last = calloc((size_t)g->nvalues + 1, sizeof *last);
  cr_assert(off && size && first && last);
  cr_assert_eq(rt_plan_lookup(c->m, c->syms, &v, off, c->st), 0, "%s",
               kiln_status_message(c->st));
  cr_assert(!v.poison);
  int n = v.n;
  size_t total = v.total;
  *sum = 0;
  int expect = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *nd = g->nodes[i];
    if (nd->op == IR_OP_CONSTANT || nd->op == IR_OP_CONSTANT_EXTERNAL) continue;
    for (int k = 0; k < nd->nout; k++)
      expect += !is_graph_output(g, nd->out[k]) && buffer_of(g, nd->out[k]) == nd->out[k];
  }
  cr_assert_eq(n, expect, "%d intermediates planned, %d expected", n, expect);
  for (int k = 0; k < n; k++) {
    const ir_value *val = g->values[v.ids[k]];
    cr_assert(val->def, "a graph input is planned");
    for (int o = 0; o < g->noutputs; o++)
      cr_assert_neq(g->outputs[o], val, "an output is planned");
    first[k] = last[k] = val->def->id;
    for (int i = val->def->id + 1; i < g->nnodes; i++)
      for (int j = 0; j < g->nodes[i]->nin; j++)
        if (buffer_of(g, g->nodes[i]->in[j]) == val) last[k] = i;
    int64_t shape[IR_MAX_RANK], numel;
    char msg[256];
    cr_assert_eq(ir_eval_shape(&val->type, c->syms, shape, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(rt_shape_bytes((kiln_dtype)val->type.dtype, val->type.rank, shape, &numel,
                                &size[k], NULL),
                 0);
    *sum += al(size[k]);
  }
  const char *why = plan_violation_room(n, size, first, last, off, total, true);
  cr_assert_null(why, "graph @%s: %s", g->name, why);
  free(off);
  free(size);
  free(first);
  free(last);
  return total;
}

/* Run c's graph without and with poisoning (the poisoned model's first
 * execute sees KILN_POISON_ARENA=1, which sticks to it): identical bits, and
 * both match the interpreter. */
static void poison_roundtrip(run_case *c, const char *what) {
  kiln_tensor *a[8], *b[8];
  int no = kiln_model_num_outputs(c->m);
  cr_assert(no <= 8);
  unsetenv("KILN_POISON_ARENA");
  execute(c, c->m, a, true);
  setenv("KILN_POISON_ARENA", "1", 1);
  execute(c, c->mp, b, true);
  unsetenv("KILN_POISON_ARENA");
  execute(c, c->mp, b, false); /* again into the same outputs: a cached plan, still poisoned */
  rt_plan_view v;
  size_t *off = calloc((size_t)c->mp->g->nvalues + 1, sizeof *off);
  cr_assert(off);
  cr_assert_eq(rt_plan_lookup(c->mp, c->syms, &v, off, c->st), 0);
  cr_assert(v.poison, "%s: the poisoned model does not poison", what);
  free(off);
  for (int o = 0; o < no; o++) {
    cr_assert_eq(kiln_tensor_nbytes(a[o]), kiln_tensor_nbytes(b[o]));
    cr_assert_eq(memcmp(kiln_tensor_data(a[o]), kiln_tensor_data(b[o]), kiln_tensor_nbytes(a[o])),
                 0, "%s: output %d differs with a poisoned arena", what, o);
  }
  check_interp(c, b, what);
  for (int o = 0; o < no; o++) {
    kiln_tensor_free(a[o]);
    kiln_tensor_free(b[o]);
  }
}

static kiln_graph *parse(const char *text) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "chain.mlir", st);
  cr_assert(g, "%s\n%s", kiln_status_message(st), text);
  kiln_status_free(st);
  return g;
}

/* A chain over [n, 16] f32: t_i from t_{i-1} and t_{i-2} (tanh every third
 * step keeps values small), a concat to [n, 32] and a split back (several
 * results), a sum to [n, 1] broadcast back, and t_1 used again at the very
 * end (a long lifetime among short ones). */
static kiln_graph *chain_graph(int len) {
  size_t cap = 1 << 16, k = 0;
  char *s = malloc(cap);
  cr_assert(s);
#define T "!mo.tensor<[n, 16], f32>"
  k += (size_t)snprintf(s + k, cap - k, "mo.graph @chain<n>(%%x: " T ") -> (" T ") {\n");
  k += (size_t)snprintf(s + k, cap - k, "  %%t1 = mo.tanh(%%x) : " T "\n");
  k += (size_t)snprintf(s + k, cap - k, "  %%t2 = mo.mul(%%t1, %%x) : " T "\n");
  for (int i = 3; i <= len; i++) {
    if (i % 3 == 0)
      k += (size_t)snprintf(s + k, cap - k, "  %%t%d = mo.tanh(%%t%d) : " T "\n", i, i - 1);
    else
      k += (size_t)snprintf(s + k, cap - k, "  %%t%d = mo.%s(%%t%d, %%t%d) : " T "\n", i,
                            i % 3 == 1 ? "add" : "sub", i - 1, i - 2);
  }
  k += (size_t)snprintf(
      s + k, cap - k,
      "  %%c = mo.concat(%%t%d, %%t%d) {axis = 1} : (" T ", " T ") -> !mo.tensor<[n, 32], f32>\n"
      "  %%a, %%b = mo.split(%%c) {split_sizes = [16, 16], axis = 1} : (!mo.tensor<[n, 32], f32>) "
      "-> (" T ", " T ")\n"
      "  %%r = mo.sum(%%a) {axis = 1} : (" T ") -> !mo.tensor<[n, 1], f32>\n"
      "  %%u = mo.mul(%%b, %%r) : (" T ", !mo.tensor<[n, 1], f32>) -> " T "\n"
      "  %%y = mo.add(%%u, %%t1) : " T "\n"
      "  mo.output %%y : " T "\n}\n",
      len, len - 1);
#undef T
  cr_assert(k < cap);
  kiln_graph *g = parse(s);
  free(s);
  return g;
}

/* c's input: n rows of random values (seeded), and the binding n. */
static void set_rows(run_case *c, int64_t n, uint64_t seed) {
  int64_t shape[] = {n, 16};
  kiln_tensor_free(c->ins[0]);
  c->ins[0] = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
  fill_random(c->ins[0], &seed);
  c->syms[0] = n;
}

/* Every .mlir in dir through the plan check and the poison round trip. */
/* Whether the graph's "// run:" line sends it to a device (--device). */
static bool runs_on_a_device(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert(f, "%s", path);
  char line[512];
  bool dev = false;
  while (!dev && fgets(line, sizeof line, f))
    dev = strncmp(line, "// run:", 7) == 0 && strstr(line, "--device");
  fclose(f);
  return dev;
}

static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert(d, "%s", dir);
  struct dirent *e;
  int count = 0;
  const int64_t syms[] = {3, 5, 2};
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".mlir") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (runs_on_a_device(path)) continue; /* the CPU model refuses values on a GPU */
    kiln_status *st = kiln_status_new();
    kiln_graph *g = kiln_graph_load(path, st);
    cr_assert(g, "%s", kiln_status_message(st));
    kiln_status_free(st);
    run_case c;
    case_open(&c, g, syms, 3, 11);
    size_t sum;
    size_t total = check_model_plan(&c, &sum);
    poison_roundtrip(&c, e->d_name);
    cr_assert_eq(rt_model_peak_bytes(c.m), total, "%s", e->d_name);
    case_close(&c);
    count++;
  }
  closedir(d);
  return count;
}

Test(model, shared_examples_poisoned_match_the_interpreter) {
  int count = run_dir(EXDIR);
  cr_assert(count >= 5, "only %d examples found in %s", count, EXDIR);
}

Test(model, bundled_examples_poisoned_match_the_interpreter) {
  int count = run_dir(KILN_SOURCE_DIR "/examples");
  cr_assert(count >= 5, "only %d examples found in %s", count, KILN_SOURCE_DIR "/examples");
}

Test(model, long_chain_reuses_memory) {
  run_case c;
  const int64_t n[] = {37};
  case_open(&c, chain_graph(40), n, 1, 5);
  cr_assert_eq(rt_model_peak_bytes(c.m), 0, "peak before any execute");
  size_t sum, total = check_model_plan(&c, &sum);
  size_t one = al(37 * 16 * 4);
  cr_assert(total < sum, "arena %zu, sum of intermediates %zu", total, sum);
  /* t_{i-1}, t_{i-2}, the result and the long-lived t1; concat is twice as big */
  cr_assert(total <= 6 * one, "arena %zu is more than 6 x %zu", total, one);
  poison_roundtrip(&c, "chain");
  cr_assert_eq(rt_model_peak_bytes(c.m), total);
  case_close(&c);
}

Test(model, no_intermediates_no_arena) {
  kiln_graph *g = parse("mo.graph @r(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
                        "  %0 = mo.relu(%x) : !mo.tensor<[5], f32>\n"
                        "  mo.output %0 : !mo.tensor<[5], f32>\n}\n");
  run_case c;
  const int64_t none[] = {1};
  case_open(&c, g, none, 1, 3);
  size_t sum;
  cr_assert_eq(check_model_plan(&c, &sum), 0);
  poison_roundtrip(&c, "relu");
  cr_assert_eq(rt_model_peak_bytes(c.m), 0);
  case_close(&c);
}

Test(model, zero_size_intermediates_get_a_pointer) {
  run_case c;
  const int64_t n[] = {0};
  case_open(&c, chain_graph(6), n, 1, 5);
  size_t sum;
  cr_assert_eq(check_model_plan(&c, &sum), 0);
  poison_roundtrip(&c, "chain n=0");
  case_close(&c);
}

/* More bindings than the cache holds, revisited: every execute matches the
 * interpreter and the peak is the largest arena. */
Test(model, bindings_beyond_the_cache) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t peak = 0;
  const int64_t order[] = {1, 2, 3, 4, 5, 6, 7, 1, 9, 2, 7, 1};
  for (size_t r = 0; r < sizeof order / sizeof *order; r++) {
    set_rows(&c, order[r], 100 + r);
    size_t sum, total = check_model_plan(&c, &sum);
    if (total > peak) peak = total;
    char what[64];
    snprintf(what, sizeof what, "chain n=%lld", (long long)order[r]);
    poison_roundtrip(&c, what);
  }
  cr_assert_eq(rt_model_peak_bytes(c.m), peak);
  case_close(&c);
}

/* The plan of n rows of c's model: its total (and the offsets in off). */
static size_t plan_total(run_case *c, int64_t n, size_t *off) {
  rt_plan_view v;
  int64_t syms[1] = {n};
  cr_assert_eq(rt_plan_lookup(c->m, syms, &v, off, c->st), 0, "%s", kiln_status_message(c->st));
  return v.total;
}

/* A dim growing by one per execute (a decoder): once the model has seen a
 * second shape its plans leave half as much room again, so the next few
 * bindings reuse the plan (same offsets, no placement) and still check as
 * valid plans; a binding past the room plans again. */
Test(model, a_growing_dim_reuses_a_plan_that_fits) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t off[256] = {0}, off2[256] = {0}, sum;
  (void)plan_total(&c, 1, off);
  size_t t100 = plan_total(&c, 100, off); /* a second shape: planned with room */
  size_t t110 = plan_total(&c, 110, off2);
  cr_expect_eq(t110, t100, "110 rows fit 100's room: its plan (%zu), got %zu", t100, t110);
  cr_expect_eq(memcmp(off, off2, sizeof off), 0); /* entries past n stay 0 */
  c.syms[0] = 110;
  (void)check_model_plan(&c, &sum);
  size_t t200 = plan_total(&c, 200, off2);
  cr_expect_gt(t200, t100, "200 rows do not fit 100's room");
  for (int64_t n = 101; n <= 124; n += 23) { /* executes on the reused plan match the interpreter */
    set_rows(&c, n, 7 + (uint64_t)n);
    poison_roundtrip(&c, "chain, growing");
  }
  case_close(&c);
}

/* Bindings that keep growing (8 executes in a row, each binding above the
 * last: a decoder without buckets) get room for four times their values:
 * the next bindings up to that reuse the plan and run as valid plans, one
 * past it plans again, and a much smaller binding does not use it; shapes
 * that rise fewer times in a row plan with half as much room again. */
Test(model, a_dim_that_keeps_growing_plans_with_room_for_four_times) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t off[256] = {0}, off2[256] = {0}, sum;
  (void)plan_total(&c, 30, off);
  size_t t = plan_total(&c, 10, off); /* fell: a second shape, half again */
  size_t t16 = plan_total(&c, 16, off);
  cr_expect_gt(plan_total(&c, 40, off), t16, "40 rows planned anew");
  for (int64_t n = 41; n <= 47; n++) (void)plan_total(&c, n, off); /* rose 8 times at 47 */
  cr_expect_gt(plan_total(&c, 61, off2), t, "61 rows fit no room but 40's");
  size_t t61 = plan_total(&c, 61, off); /* an exact hit: the run ends, the plan stays */
  for (int64_t n = 62; n <= 244; n += 61) {
    cr_expect_eq(plan_total(&c, n, off2), t61, "%lld rows fit 61's room", (long long)n);
    cr_expect_eq(memcmp(off, off2, sizeof off), 0);
    set_rows(&c, n, 11 + (uint64_t)n);
    (void)check_model_plan(&c, &sum);
    poison_roundtrip(&c, "chain, growing with room");
  }
  cr_expect_gt(plan_total(&c, 245, off2), t61, "245 rows do not fit 61's room");
  cr_expect_lt(plan_total(&c, 10, off2), t61 / 4, "10 rows use a plan made for 61");
  case_close(&c);
}

/* A model of total rows cut from a [bound, 8] input by a slice read from
 * data (a decoder's cache[:, :total]): total can never exceed bound. */
static kiln_model *bounded_model(kiln_context *ctx, int64_t bound, kiln_status *st) {
  char text[1024];
  snprintf(text, sizeof text,
           "mo.graph @w<total>(%%c: !mo.tensor<[%lld, 8], f32>, %%stop: !mo.tensor<[1], si64>)"
           " -> (!mo.tensor<[total, 8], f32>) {\n"
           "  %%z = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : !mo.tensor<[1], si64>\n"
           "  %%one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : "
           "!mo.tensor<[1], si64>\n"
           "  %%s = mo.slice_tensor(%%c, %%z, %%stop, %%one, %%z) : (!mo.tensor<[%lld, 8], f32>, "
           "!mo.tensor<[1], si64>, !mo.tensor<[1], si64>, !mo.tensor<[1], si64>, "
           "!mo.tensor<[1], si64>) -> !mo.tensor<[total, 8], f32>\n"
           "  %%y = mo.tanh(%%s) : !mo.tensor<[total, 8], f32>\n"
           "  %%j = mo.concat(%%y, %%s) {axis = 1} : (!mo.tensor<[total, 8], f32>, "
           "!mo.tensor<[total, 8], f32>) -> !mo.tensor<[total, 16], f32>\n"
           "  %%r = mo.sum(%%j) {axis = 1} : (!mo.tensor<[total, 16], f32>) -> "
           "!mo.tensor<[total, 1], f32>\n"
           "  %%o = mo.mul(%%y, %%r) : (!mo.tensor<[total, 8], f32>, !mo.tensor<[total, 1], f32>)"
           " -> !mo.tensor<[total, 8], f32>\n"
           "  mo.output %%o : !mo.tensor<[total, 8], f32>\n}\n",
           (long long)bound, (long long)bound);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  return m;
}

/* A dim that keeps growing and that the graph bounds is planned at its
 * bound once it rose 8 times in a row: no plan after that, up to the bound
 * (a decode of 200 steps plans on the request path only while it starts);
 * where the bound's intermediates would be large (a bound of 2^20 rows: 32
 * MiB each), it gets room for four times its values instead. */
Test(model, a_growing_dim_with_a_bound_is_planned_at_the_bound) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_model *m = bounded_model(ctx, 200, st);
  size_t off[16];
  rt_plan_view v;
  int64_t n;
  for (n = 1; n <= 12; n++) cr_assert_eq(rt_plan_lookup(m, &n, &v, off, st), 0);
  double plans = kiln_model_counter(m, KILN_COUNTER_PLANS);
  size_t at_bound = v.total;
  cr_expect_geq(at_bound, (size_t)200 * 16 * sizeof(float), "planned for 200 rows: %zu bytes",
                at_bound);
  for (n = 13; n <= 200; n++) {
    cr_assert_eq(rt_plan_lookup(m, &n, &v, off, st), 0);
    cr_expect_eq(v.total, at_bound, "total = %lld planned again", (long long)n);
  }
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_PLANS), plans);
  kiln_model_free(m);
  m = bounded_model(ctx, (int64_t)1 << 20, st);
  for (n = 1; n <= 12; n++) cr_assert_eq(rt_plan_lookup(m, &n, &v, off, st), 0);
  cr_expect_lt(v.total, (size_t)1 << 20, "a large bound planned at once: %zu bytes", v.total);
  cr_expect_geq(v.total, (size_t)4 * 9 * 16 * sizeof(float), /* the 8th rise: 9 rows */
                "room for four times 9 rows: %zu bytes", v.total);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* A plan made for much larger shapes is not used for small ones: their
 * values would spread over an arena far larger than they need. */
Test(model, a_plan_for_far_larger_shapes_is_not_reused) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t off[256];
  size_t big = plan_total(&c, 1000, off);
  size_t small = plan_total(&c, 10, off);
  cr_expect_lt(small, big / 10, "10 rows got an arena of %zu (1000 rows: %zu)", small, big);
  case_close(&c);
}

/* rt_plan_prepare (the compile thread, ahead of a growing dim): its plan
 * serves every smaller binding that fits, however much smaller, and
 * rt_arena_reserve makes the kept block large enough for it. */
Test(model, a_prepared_plan_serves_the_bindings_that_fit) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t off[256], total = 0;
  int64_t at[1] = {512};
  cr_assert_eq(rt_plan_prepare(c.m, at, &total, c.st), 0, "%s", kiln_status_message(c.st));
  cr_assert_gt(total, 0);
  cr_expect_eq(plan_total(&c, 300, off), total);
  cr_expect_eq(plan_total(&c, 512, off), total);
  cr_expect_gt(plan_total(&c, 513, off), total);
  int64_t at300[1] = {300}, at513[1] = {513};
  cr_expect(rt_plan_cached_ahead(c.m, at), "512's plan made ahead is not found");
  cr_expect(!rt_plan_cached_ahead(c.m, at300), "300 was served, not planned ahead");
  cr_expect(!rt_plan_cached_ahead(c.m, at513), "513 was planned by a lookup, not ahead");
  rt_arena_reserve(c.m, total);
  char *kept = atomic_load(&c.m->exec_arena);
  cr_assert_not_null(kept);
  cr_expect_geq(*(size_t *)kept, total);
  rt_arena_reserve(c.m, 64); /* smaller: the kept block stays */
  cr_expect_eq(atomic_load(&c.m->exec_arena), kept);
  set_rows(&c, 300, 3);
  poison_roundtrip(&c, "chain on a prepared plan");
  case_close(&c);
}

/* The arena block an execute takes: exact the first time; once outgrown,
 * replaced by one half as large again (a growing dim then allocates every
 * ~50% of growth); and a reserve no larger than the block an execute holds
 * (it comes back to the model after the execute) allocates nothing. */
Test(model, an_outgrown_arena_block_grows_with_room_and_reserves_see_the_held_one) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(12), first, 1, 9);
  size_t off[256];
  kiln_tensor *outs[8];
  set_rows(&c, 8, 1);
  execute(&c, c.m, outs, true);
  kiln_tensor_free(outs[0]);
  char *kept = atomic_load(&c.m->exec_arena);
  cr_assert_not_null(kept);
  cr_expect_eq(*(size_t *)kept, plan_total(&c, 8, off), "the first block is exact");
  set_rows(&c, 300, 2);
  execute(&c, c.m, outs, true);
  kiln_tensor_free(outs[0]);
  kept = atomic_load(&c.m->exec_arena);
  size_t t300 = plan_total(&c, 300, off);
  cr_expect_eq(*(size_t *)kept, t300 + t300 / 2, "an outgrown block: half as large again");
  /* as an execute holds it: taken, its capacity noted */
  char *held = atomic_exchange(&c.m->exec_arena, NULL);
  cr_expect_eq(atomic_load(&c.m->exec_arena_taken), *(size_t *)held);
  rt_arena_reserve(c.m, t300);
  cr_expect_null(atomic_load(&c.m->exec_arena), "a reserve the held block covers allocated one");
  rt_arena_reserve(c.m, 2 * *(size_t *)held);
  char *more = atomic_load(&c.m->exec_arena);
  cr_assert_not_null(more, "a reserve larger than the held block allocated nothing");
  cr_expect_geq(*(size_t *)more, 2 * *(size_t *)held);
  free(held); /* the execute's give-back would discard it now (a larger one is kept) */
  case_close(&c);
}

/* ---- threads: one model, many bindings at once, poisoned ---- */
typedef struct thread_arg {
  kiln_model *m;
  int id;
  kiln_tensor *in[10], *want[10];
  int bad;
} thread_arg;

static void *worker(void *p) {
  thread_arg *a = p;
  kiln_status *st = kiln_status_new();
  for (int r = 0; r < 40; r++) {
    int k = (r * 3 + a->id) % 10;
    kiln_tensor *out = NULL;
    if (kiln_model_execute(a->m, &a->in[k], 1, &out, 1, st) != 0 ||
        memcmp(kiln_tensor_data(out), kiln_tensor_data(a->want[k]), kiln_tensor_nbytes(out)) != 0)
      a->bad++;
    kiln_tensor_free(out);
  }
  kiln_status_free(st);
  return NULL;
}

Test(model, concurrent_executes_with_many_bindings) {
  run_case c;
  const int64_t first[] = {1};
  case_open(&c, chain_graph(15), first, 1, 9);
  setenv("KILN_POISON_ARENA", "1", 1); /* sticks to c.mp at its first execute */
  kiln_tensor *in[10], *want[10];
  for (int k = 0; k < 10; k++) {
    int64_t shape[] = {k + 1, 16};
    in[k] = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
    uint64_t seed = 50 + (uint64_t)k;
    fill_random(in[k], &seed);
    want[k] = NULL;
    cr_assert_eq(kiln_model_execute(c.mp, &in[k], 1, &want[k], 1, c.st), 0, "%s",
                 kiln_status_message(c.st));
  }
  unsetenv("KILN_POISON_ARENA");
  enum { NT = 4 };
  pthread_t th[NT];
  thread_arg args[NT];
  for (int t = 0; t < NT; t++) {
    args[t] = (thread_arg){.m = c.mp, .id = t};
    memcpy(args[t].in, in, sizeof in);
    memcpy(args[t].want, want, sizeof want);
    cr_assert_eq(pthread_create(&th[t], NULL, worker, &args[t]), 0);
  }
  int bad = 0;
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    bad += args[t].bad;
  }
  cr_assert_eq(bad, 0, "%d executes failed or differed", bad);
  for (int k = 0; k < 10; k++) {
    kiln_tensor_free(in[k]);
    kiln_tensor_free(want[k]);
  }
  case_close(&c);
}

/* ---- the comparison catches a broken plan ---- */
/* Run the chain's kernels by hand with every intermediate at offset 0 of a
 * poisoned arena (what a planner that ignores lifetimes might do): the
 * result must differ from the interpreter's. The same harness with the
 * real plan matches, so the difference is the plan's. */
static bool run_by_hand(run_case *c, bool broken, float *out) {
  const ir_graph *g = c->m->g;
  rt_plan_view v;
  size_t *off = calloc((size_t)g->nvalues, sizeof *off);
  void **bufs = calloc((size_t)g->nvalues, sizeof *bufs);
  void *args[8];
  cr_assert(off && bufs);
  cr_assert_eq(rt_plan_lookup(c->m, c->syms, &v, off, c->st), 0);
  char *arena = rt_aligned_alloc(v.total);
  rt_plan_poison(arena, v.total);
  bufs[g->inputs[0]->id] = c->ins[0]->data;
  bufs[g->outputs[0]->id] = out;
  for (int k = 0; k < v.n; k++) bufs[v.ids[k]] = arena + (broken ? 0 : off[k]);
  bool ok = true;
  for (int i = 0; i < g->nnodes && ok; i++) {
    const ir_node *nd = g->nodes[i];
    int a = 0;
    for (int j = 0; j < nd->nin; j++) args[a++] = bufs[nd->in[j]->id];
    for (int j = 0; j < nd->nout; j++) args[a++] = bufs[nd->out[j]->id];
    ok = rt_model_run_kernel(c->m, i, args, c->syms) == 0;
  }
  free(arena);
  free(off);
  free(bufs);
  return ok;
}

Test(model, a_broken_plan_is_caught) {
  run_case c;
  const int64_t n[] = {8};
  case_open(&c, chain_graph(9), n, 1, 21);
  kiln_tensor *ref[1];
  execute(&c, c.m, ref, true);
  float *good = malloc(8 * 16 * sizeof(float)), *bad = malloc(8 * 16 * sizeof(float));
  cr_assert(run_by_hand(&c, false, good));
  cr_assert_eq(memcmp(good, kiln_tensor_data(ref[0]), 8 * 16 * sizeof(float)), 0,
               "the hand-run harness differs from kiln_model_execute");
  run_by_hand(&c, true, bad);
  int differ = 0;
  for (int i = 0; i < 8 * 16; i++) differ += !(fabsf(good[i] - bad[i]) <= 1e-4f);
  cr_assert(differ > 0, "overlapping buffers went unnoticed");
  free(good);
  free(bad);
  kiln_tensor_free(ref[0]);
  case_close(&c);
}

/* ---- kiln run --stats ---- */
static char *cli(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", KILN_CLI, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  char *buf = calloc(1, 1 << 16);
  cr_assert(buf);
  size_t n = fread(buf, 1, (1 << 16) - 1, p);
  buf[n] = 0;
  int status = pclose(p);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s\n%s", cmd, buf);
  return buf;
}

Test(cli, stats_prints_the_peak) {
  /* mlp at batch 4, fused (matmul + bias + relu): one [4, 512] f32
   * intermediate */
  char *out = cli("run " EXDIR "/mlp.mlir --random-inputs --dim batch=4 --stats");
  cr_assert(strstr(out, "memory: 8192 bytes peak for intermediates (arena)\n"), "%s", out);
  free(out);
  out = cli("run " EXDIR "/relu.mlir --random-inputs --stats");
  cr_assert(strstr(out, "memory: 0 bytes peak for intermediates (arena)\n"), "%s", out);
  free(out);
}

/* Reshape-like nodes share their operand's buffer (plan.h): a reshape of
 * an intermediate (the chain t -> r1 -> r2 keeps t live until r2's last
 * use, by an op that writes a new buffer between them), a squeeze /
 * unsqueeze of a graph input, a reshape that is a graph output (a copy:
 * its tensor is the caller's) and one of a weight. Poisoned and not, every
 * output matches the interpreter; the aliases are not planned
 * (check_model_plan: the planned set and the lifetimes, an alias's uses
 * counted as its buffer's). */
Test(model, reshapes_share_their_operands_buffer) {
  kiln_graph *g = parse(
      "mo.graph @alias<n>(%x: !mo.tensor<[n, 6], f32>, %y: !mo.tensor<[n, 1, 6], f32>) -> "
      "(!mo.tensor<[n, 6], f32>, !mo.tensor<[n * 6], f32>, !mo.tensor<[2, 3], f32>, "
      "!mo.tensor<[n, 6], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[6], f32>\n"
      "  %t = mo.tanh(%x) : !mo.tensor<[n, 6], f32>\n"
      "  %r1 = mo.reshape(%t) : (!mo.tensor<[n, 6], f32>) -> !mo.tensor<[n, 2, 3], f32>\n"
      "  %r2 = mo.reshape(%r1) : (!mo.tensor<[n, 2, 3], f32>) -> !mo.tensor<[n * 6], f32>\n"
      "  %a = mo.exp(%t) : !mo.tensor<[n, 6], f32>\n"
      "  %b = mo.negate(%r2) : !mo.tensor<[n * 6], f32>\n"
      "  %ys = mo.squeeze(%y) {axis = 1} : (!mo.tensor<[n, 1, 6], f32>) -> !mo.tensor<[n, 6], f32>\n"
      "  %c = mo.add(%a, %ys) : (!mo.tensor<[n, 6], f32>, !mo.tensor<[n, 6], f32>) -> "
      "!mo.tensor<[n, 6], f32>\n"
      "  %ru = mo.unsqueeze(%c) {axis = 0} : (!mo.tensor<[n, 6], f32>) -> !mo.tensor<[1, n, 6], f32>\n"
      "  %rr = mo.reshape(%ru) : (!mo.tensor<[1, n, 6], f32>) -> !mo.tensor<[n, 6], f32>\n"
      "  %d = mo.mul(%rr, %t) : (!mo.tensor<[n, 6], f32>, !mo.tensor<[n, 6], f32>) -> "
      "!mo.tensor<[n, 6], f32>\n"
      "  %out = mo.reshape(%b) : (!mo.tensor<[n * 6], f32>) -> !mo.tensor<[n * 6], f32>\n"
      "  %wr = mo.reshape(%w) : (!mo.tensor<[6], f32>) -> !mo.tensor<[2, 3], f32>\n"
      /* s is dead after its reshape unless the alias keeps it live: e, of
       * s's size, would then take its place before f reads it */
      "  %s = mo.sigmoid(%x) : !mo.tensor<[n, 6], f32>\n"
      "  %rs = mo.reshape(%s) : (!mo.tensor<[n, 6], f32>) -> !mo.tensor<[n, 2, 3], f32>\n"
      "  %e = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 6], f32>\n"
      "  %rs2 = mo.reshape(%rs) : (!mo.tensor<[n, 2, 3], f32>) -> !mo.tensor<[n, 6], f32>\n"
      "  %f = mo.add(%rs2, %e) : (!mo.tensor<[n, 6], f32>, !mo.tensor<[n, 6], f32>) -> "
      "!mo.tensor<[n, 6], f32>\n"
      "  mo.output %d, %out, %wr, %f : !mo.tensor<[n, 6], f32>, !mo.tensor<[n * 6], f32>, "
      "!mo.tensor<[2, 3], f32>, !mo.tensor<[n, 6], f32>\n}\n");
  run_case c;
  const int64_t n[] = {7};
  case_open(&c, g, n, 1, 11);
  const ir_graph *mg = c.m->g;
  cr_assert_not_null(c.m->alias, "no alias in a graph of reshapes");
  int aliases = 0;
  for (int v = 0; v < mg->nvalues; v++) aliases += c.m->alias[v] >= 0;
  cr_assert_eq(aliases, 7, "r1, r2, ys, ru, rr, rs, rs2 are aliases (not out: an output)");
  for (int i = 0; i < mg->nnodes; i++) { /* an alias gets no kernel; every other node one */
    const ir_node *nd = mg->nodes[i];
    bool alias = nd->nout == 1 && c.m->alias[nd->out[0]->id] >= 0;
    cr_expect_eq(rt_node_is_alias(mg, nd), alias, "node %d (%%%s)", i, nd->out[0]->name);
    if (!ir_node_is_source(nd))
      cr_expect_eq(c.m->kernels[i] != NULL, !alias, "node %d (%%%s): kernel %p", i,
                   nd->out[0]->name, (void *)c.m->kernels[i]);
  }
  size_t sum, total = check_model_plan(&c, &sum);
  size_t one = al(7 * 6 * 4);
  /* at most t, a, b, c, s, e are planned (fusion may take a into c's kernel) */
  cr_assert(sum <= 6 * one, "planned %zu bytes, more than t, a, b, c, s, e", sum);
  cr_assert(total <= sum);
  poison_roundtrip(&c, "aliases");
  case_close(&c);
}

/* Without aliases a graph's model has none (NULL): nothing to look up. */
Test(model, no_reshape_no_alias_table) {
  run_case c;
  const int64_t n[] = {5};
  case_open(&c, chain_graph(4), n, 1, 2);
  cr_assert_null(c.m->alias);
  case_close(&c);
}
