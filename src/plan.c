/* plan.c - the memory planner (see plan.h): offsets of the intermediates in
 * one arena per execute, by lifetime, and the per-model cache of plans.
 *
 * Assumes a verified graph (node order is a topological order; a value's
 * users come after its definition). Guarantees: two intermediates live at
 * the same node never overlap; every offset is a multiple of RT_PLAN_ALIGN;
 * a cached plan is used for the symbol values it was made for, or for any
 * others whose every intermediate fits in the size that plan gave it (each
 * value then stays inside the range placed for it, so the guarantee holds).
 * The first plan of a model is exact; later ones (the model has seen other
 * shapes) give each value half as much room again, so a dim that grows by
 * a little every execute (a decoder's sequence) plans again every ~50% of
 * growth instead of every execute (issue 20: placement, ~20 us for the
 * decoder's 80 intermediates, was the largest cost of a decode step outside
 * the kernels), and once its executes' values rose GROWTH_RUN times in a
 * row, four times its values (below); where the async policy sees a dim
 * the caller bucketed grow at every execute, the room is that of the end
 * of its bucket (rt_variant_growth_room), so it plans once per bucket, and
 * the prepare thread plans the next two buckets before they are reached
 * (rt_plan_prepare); a growing dim the graph bounds (a KV cache's length)
 * is planned at its bound at once (GROWTH_BOUND_BYTES).
 * A failed plan (shape error, out of memory) is not cached, so the same
 * binding reports the same error every time. */
#include "plan.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "spec_policy.h"
#include "variants.h"

#define GROWTH_SYMS 16 /* graphs with more symbols plan without rt_variant_growth_room */
/* A model whose executes' symbol values rose GROWTH_RUN times in a row (a
 * dim growing by a little every execute: a decoder's sequence without
 * buckets; the same run the async policy waits for, RT_SPEC_AHEAD_RUN)
 * plans with room for GROWTH_ROOM times its values, a plan that serves the
 * bindings that fit down to the one it was made for: a generation of N
 * steps then plans ~log4(N) times on the request path instead of
 * log1.5(N) (512 steps from 6: 4 plans past total 8 instead of 10; issue
 * 20's p99 over 509 steps is the 6th slowest). Its arena is up to that
 * much larger than the binding needs; shapes that vary without growing
 * (a service) rise 8 executes in a row by chance once in 8! runs. */
#define GROWTH_RUN RT_SPEC_AHEAD_RUN
#define GROWTH_ROOM 4
/* A growing dim the graph bounds (rt_spec_sym_max: a KV cache's length) is
 * planned at its bound at once, so a generation plans once on the request
 * path rather than every 4x of growth (issue 20: the plans at totals 65
 * and 261 were 1.5-1.7x a decode step), where the bound's intermediates
 * take at most GROWTH_BOUND_BYTES, or GROWTH_ROOM times the binding's (no
 * more than the 4x plan would): attention scores of one new token grow with
 * the cache, a whole sequence's hidden states would not fit. */
#define GROWTH_BOUND_BYTES ((size_t)16 << 20)

typedef struct rt_plan_slot {
  bool used;
  uint64_t stamp;  /* LRU clock at the last use */
  int64_t *key;    /* g->nsyms symbol values */
  size_t *offset;  /* per intermediate */
  size_t *room;    /* per intermediate: the bytes placed for it (its size, or more) */
  bool ahead;      /* made for the end of a bucket (rt_plan_prepare, or a lookup
                    * with rt_variant_growth_room) or a growing dim's bound:
                    * serves every binding that fits, however much smaller */
  unsigned spare;  /* else the most room a binding may leave unused, in quarters
                    * of its size: 2 (half again), or 4 * (GROWTH_ROOM - 1) */
  size_t total;
} rt_plan_slot;

struct rt_plan_cache {
  bool poison;       /* KILN_POISON_ARENA at the first lookup */
  int n;             /* intermediates */
  int *ids;          /* their value ids, in definition order */
  int *first, *last; /* their lifetimes (node indices, inclusive) */
  uint64_t clock;
  int64_t *last_key; /* the symbol values of the last lookup */
  int64_t *sym_max;  /* per symbol: its bound (rt_spec_sym_max), INT64_MAX for none */
  bool have_last;
  int rising; /* lookups in a row whose values rose from the last one's (every
               * value at least its last one, one larger), up to GROWTH_RUN */
  rt_plan_slot slot[RT_PLAN_SLOTS];
};

/* ---- placement ----
 *
 * Three steps: the order (largest first; ties: earlier first node, then
 * index); the conflicts, which values live at the same time as which, as
 * one list per value (built by one sweep over the values sorted by first
 * node: a value b starting at or after a's start overlaps a iff b starts by
 * a's last node, so each inner loop stops at the first value past a's end);
 * then per value in order, its conflicts placed already, sorted by offset,
 * walked for the best-fitting gap. O(n log n + conflicts x log) where a
 * scan of every placed value for each value was O(n^2) (a synthetic set of
 * 300 values: ~100 -> ~24 us, 3000: ~10 -> ~0.6 ms; a decoder's 68, whose
 * 424 conflicts are a fifth of all pairs, ~5 us either way). Where the
 * lists would pass PLACE_MAX_CONFLICTS (most values live together in a
 * large graph) each value scans the placed ones instead; both give the
 * same offsets. */

#define PLACE_MAX_CONFLICTS (1 << 20) /* list entries (ints): 4 MiB */

typedef struct order_item {
  size_t size;
  int first, idx;
} order_item;

static bool before(const order_item *x, const order_item *y) {
  if (x->size != y->size) return x->size > y->size; /* largest first */
  if (x->first != y->first) return x->first < y->first;
  return x->idx < y->idx;
}

/* Sort a[0..n) by `before` (a strict total order: idx is unique): merges
 * of runs doubling from 1, through tmp (n items); inline comparisons
 * (qsort's calls through a pointer were a third of a 68-value plan). */
static void sort_order(order_item *a, order_item *tmp, int n) {
  order_item *src = a, *dst = tmp;
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) {
      int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = before(&src[j], &src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    order_item *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

static size_t round_up(size_t n) { return (n + RT_PLAN_ALIGN - 1) / RT_PLAN_ALIGN * RT_PLAN_ALIGN; }

/* [off, end) of a placed value live together with the one being placed */
typedef struct span {
  size_t off, end;
} span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

/* By offset; equal offsets in any order (the walk below gives the same gap
 * either way: after the first, the cursor is past their common offset). */
static void sort_spans(span *sp, int n) {
  if (n > 64) {
    qsort(sp, (size_t)n, sizeof *sp, cmp_span);
    return;
  }
  for (int i = 1; i < n; i++) {
    span x = sp[i];
    int j = i;
    for (; j > 0 && sp[j - 1].off > x.off; j--) sp[j] = sp[j - 1];
    sp[j] = x;
  }
}

/* The lowest offset of the smallest gap of at least s bytes between the
 * spans (sorted by offset), else the end of the highest; SIZE_MAX when that
 * overflows. */
static size_t best_gap(const span *sp, int n, size_t s) {
  size_t cursor = 0, best = SIZE_MAX, best_size = SIZE_MAX;
  for (int q = 0; q < n; q++) {
    if (sp[q].off > cursor) {
      size_t gap = sp[q].off - cursor;
      if (gap >= s && gap < best_size) {
        best_size = gap;
        best = cursor;
      }
    }
    if (sp[q].end > cursor) cursor = sp[q].end;
  }
  if (best != SIZE_MAX) return best;
  return cursor > SIZE_MAX - s ? SIZE_MAX : cursor;
}

static int cmp_first(const void *a, const void *b) {
  const int *x = a, *y = b; /* (first, index) pairs */
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The conflict lists of n values as CSR: the conflicts of i are
 * adj[start[i] .. start[i + 1]). byfirst: 2n ints of scratch. NULL adj
 * when there are more than PLACE_MAX_CONFLICTS entries or out of memory
 * (the caller scans instead). */
static int *conflict_lists(int n, const size_t *size, const int *first, const int *last,
                           int *byfirst, int *start) {
  bool sorted = true;
  for (int i = 0; i < n; i++) {
    byfirst[2 * i] = first[i];
    byfirst[2 * i + 1] = i;
    sorted = sorted && (i == 0 || first[i - 1] <= first[i]);
  }
  if (!sorted) qsort(byfirst, (size_t)n, 2 * sizeof *byfirst, cmp_first);
  for (int i = 0; i <= n; i++) start[i] = 0;
  size_t entries = 0;
  for (int a = 0; a < n; a++) { /* count */
    int i = byfirst[2 * a + 1];
    if (!size[i]) continue;
    for (int b = a + 1; b < n && byfirst[2 * b] <= last[i]; b++) {
      int j = byfirst[2 * b + 1];
      if (!size[j]) continue;
      start[i + 1]++;
      start[j + 1]++;
      entries += 2;
    }
    if (entries > PLACE_MAX_CONFLICTS) return NULL;
  }
  for (int i = 0; i < n; i++) start[i + 1] += start[i];
  int *adj = malloc((entries ? entries : 1) * sizeof *adj);
  if (!adj) return NULL;
  int *pos = malloc((size_t)n * sizeof *pos);
  if (!pos) {
    free(adj);
    return NULL;
  }
  memcpy(pos, start, (size_t)n * sizeof *pos);
  for (int a = 0; a < n; a++) {
    int i = byfirst[2 * a + 1];
    if (!size[i]) continue;
    for (int b = a + 1; b < n && byfirst[2 * b] <= last[i]; b++) {
      int j = byfirst[2 * b + 1];
      if (!size[j]) continue;
      adj[pos[i]++] = j;
      adj[pos[j]++] = i;
    }
  }
  free(pos);
  return adj;
}

int rt_plan_place(int n, const size_t *size, const int *first, const int *last, size_t *offset,
                  size_t *total) {
  *total = 0;
  if (n <= 0) return 0;
  order_item *ord = malloc(2 * (size_t)n * sizeof *ord); /* the order, then the sort's scratch */
  span *sp = malloc((size_t)n * sizeof *sp);
  int *ints = malloc((size_t)(3 * n + 1) * sizeof *ints); /* byfirst (2n), start (n + 1) */
  bool *placed = calloc((size_t)n, sizeof *placed);
  int *adj = NULL, rc = -1;
  if (!ord || !sp || !ints || !placed) goto done;
  for (int i = 0; i < n; i++) {
    if (size[i] > SIZE_MAX - RT_PLAN_ALIGN || first[i] > last[i]) goto done;
    ord[i] = (order_item){round_up(size[i]), first[i], i};
    offset[i] = 0;
  }
  sort_order(ord, ord + n, n);
  int *start = ints + 2 * n;
  adj = conflict_lists(n, size, first, last, ints, start);
  size_t end = 0;
  for (int k = 0; k < n; k++) {
    int i = ord[k].idx;
    size_t s = ord[k].size;
    if (s == 0) continue; /* takes no space: offset 0 */
    int ns = 0;
    if (adj) {
      for (int e = start[i]; e < start[i + 1]; e++) {
        int j = adj[e];
        if (placed[j]) sp[ns++] = (span){offset[j], offset[j] + round_up(size[j])};
      }
    } else {
      for (int q = 0; q < k; q++) {
        int j = ord[q].idx;
        if (ord[q].size && first[j] <= last[i] && first[i] <= last[j])
          sp[ns++] = (span){offset[j], offset[j] + ord[q].size};
      }
    }
    sort_spans(sp, ns);
    size_t best = best_gap(sp, ns, s);
    if (best == SIZE_MAX) goto done;
    offset[i] = best;
    placed[i] = true;
    if (best + s > end) end = best + s;
  }
  *total = end;
  rc = 0;
done:
  free(ord);
  free(sp);
  free(ints);
  free(placed);
  free(adj);
  return rc;
}

void rt_plan_poison(void *arena, size_t nbytes) {
  /* as f32 words: 0xFFABABAB and 0xFFF8ABAB, both NaN; as an f64: NaN */
  static const unsigned char pat[8] = {0xAB, 0xAB, 0xAB, 0xFF, 0xAB, 0xAB, 0xF8, 0xFF};
  unsigned char *p = arena;
  size_t i = 0;
  for (; i + 8 <= nbytes; i += 8) memcpy(p + i, pat, 8);
  for (; i < nbytes; i++) p[i] = pat[i % 8];
}

/* ---- the per-model cache ---- */

static void lock(kiln_model *m) {
  for (;;) {
    int free_ = 0;
    if (atomic_compare_exchange_weak_explicit(&m->plan_lock, &free_, 1, memory_order_acquire,
                                              memory_order_relaxed))
      return;
    while (atomic_load_explicit(&m->plan_lock, memory_order_relaxed)) sched_yield();
  }
}

static void unlock(kiln_model *m) { atomic_store_explicit(&m->plan_lock, 0, memory_order_release); }

static bool is_alias(const kiln_model *m, const ir_value *v) {
  return m->alias && m->alias[v->id] >= 0;
}

static bool reshape_like(const ir_node *nd) {
  return (nd->op == IR_OP_RESHAPE || nd->op == IR_OP_SQUEEZE || nd->op == IR_OP_UNSQUEEZE ||
          nd->op == IR_OP_TRANSFER_TO) &&
         nd->nin == 1 && nd->nout == 1 && nd->in[0]->type.dtype == nd->out[0]->type.dtype;
}

bool rt_node_is_alias(const ir_graph *g, const ir_node *n) {
  if (!reshape_like(n)) return false;
  for (int o = 0; o < g->noutputs; o++)
    if (g->outputs[o] == n->out[0]) return false; /* the caller's tensor: a copy */
  return true;
}

int rt_plan_aliases(kiln_model *m, kiln_status *st) {
  const ir_graph *g = m->g;
  free(m->alias);
  m->alias = NULL;
  bool any = false;
  for (int i = 0; i < g->nnodes && !any; i++)
    any = reshape_like(g->nodes[i]) || g->nodes[i]->op == IR_OP_INPLACE_CUSTOM ||
          g->nodes[i]->op == IR_OP_MUTABLE_LOAD;
  if (!any) return 0;
  int nv = g->nvalues;
  int *alias = malloc((size_t)nv * sizeof *alias);
  if (!alias) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory planning the intermediates");
  for (int v = 0; v < nv; v++) alias[v] = -1;
  any = false;
  for (int i = 0; i < g->nnodes; i++) { /* in order: an operand's own alias is known */
    const ir_node *nd = g->nodes[i];
    if (!rt_node_is_alias(g, nd)) continue;
    int src = nd->in[0]->id;
    alias[nd->out[0]->id] = alias[src] >= 0 ? alias[src] : src;
    any = true;
  }
  if (rt_buffer_alias_in_place(g, alias) > 0) any = true; /* buffers.h */
  if (rt_buffer_alias_loads(g, alias) > 0) any = true;
  if (any) m->alias = alias;
  else free(alias);
  return 0;
}

/* Lifetimes of m's intermediates and empty slots, in g's arena. Called with
 * the lock held. NULL when out of memory. */
static struct rt_plan_cache *build_cache(const kiln_model *m) {
  const ir_graph *g = m->g;
  ir_arena *a = g->arena;
  int nv = g->nvalues;
  int *last_use = malloc((size_t)(nv ? nv : 1) * sizeof *last_use);
  bool *is_out = calloc((size_t)(nv ? nv : 1), 1);
  struct rt_plan_cache *c = NULL;
  if (!last_use || !is_out) goto done;
  for (int v = 0; v < nv; v++) last_use[v] = -1;
  for (int o = 0; o < g->noutputs; o++) is_out[g->outputs[o]->id] = true;
  int n = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *nd = g->nodes[i];
    for (int j = 0; j < nd->nin; j++) { /* a use of an alias is one of its buffer's */
      const ir_value *v = nd->in[j];
      last_use[is_alias(m, v) ? m->alias[v->id] : v->id] = i;
    }
    if (!ir_node_is_source(nd))
      for (int k = 0; k < nd->nout; k++) n += !is_out[nd->out[k]->id] && !is_alias(m, nd->out[k]);
  }
  size_t cap = (size_t)(n ? n : 1);
  size_t ns = (size_t)(g->nsyms ? g->nsyms : 1);
  struct rt_plan_cache *cc = ir_arena_alloc(a, sizeof *cc);
  if (!cc || !(cc->ids = ir_arena_alloc(a, cap * sizeof(int))) ||
      !(cc->first = ir_arena_alloc(a, cap * sizeof(int))) ||
      !(cc->last = ir_arena_alloc(a, cap * sizeof(int))) ||
      !(cc->last_key = ir_arena_alloc(a, ns * sizeof(int64_t))) ||
      !(cc->sym_max = ir_arena_alloc(a, ns * sizeof(int64_t))))
    goto done;
  rt_spec_sym_max(g, cc->sym_max);
  for (int s = 0; s < RT_PLAN_SLOTS; s++)
    if (!(cc->slot[s].key = ir_arena_alloc(a, ns * sizeof(int64_t))) ||
        !(cc->slot[s].offset = ir_arena_alloc(a, cap * sizeof(size_t))) ||
        !(cc->slot[s].room = ir_arena_alloc(a, cap * sizeof(size_t))))
      goto done;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *nd = g->nodes[i];
    if (ir_node_is_source(nd)) continue;
    for (int k = 0; k < nd->nout; k++) {
      const ir_value *v = nd->out[k];
      if (is_out[v->id] || is_alias(m, v)) continue;
      cc->ids[cc->n] = v->id;
      cc->first[cc->n] = i;
      cc->last[cc->n] = last_use[v->id] > i ? last_use[v->id] : i;
      cc->n++;
    }
  }
  const char *env = getenv("KILN_POISON_ARENA");
  cc->poison = env && env[0] && strcmp(env, "0") != 0;
  c = cc;
done:
  free(last_use);
  free(is_out);
  return c;
}

static struct rt_plan_cache *get_cache(kiln_model *m, kiln_status *st) {
  struct rt_plan_cache *c = atomic_load_explicit(&m->plan, memory_order_acquire);
  if (c) return c;
  lock(m);
  c = atomic_load_explicit(&m->plan, memory_order_relaxed);
  if (!c && (c = build_cache(m))) atomic_store_explicit(&m->plan, c, memory_order_release);
  unlock(m);
  if (!c) rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory planning the intermediates");
  return c;
}

static void note_peak(kiln_model *m, size_t total) {
  size_t cur = atomic_load_explicit(&m->plan_peak, memory_order_relaxed);
  while (total > cur && !atomic_compare_exchange_weak_explicit(
                            &m->plan_peak, &cur, total, memory_order_relaxed, memory_order_relaxed))
    ;
}

/* Sizes of the intermediates for syms, with the messages of a shape error. */
static int eval_sizes(const kiln_model *m, const struct rt_plan_cache *c, const int64_t *syms,
                      size_t *size, kiln_status *st) {
  const ir_graph *g = m->g;
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  for (int k = 0; k < c->n; k++) {
    const ir_value *v = g->values[c->ids[k]];
    if (ir_eval_shape(&v->type, syms, shape, msg, sizeof msg) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "mo.%s (%%%s): %s", ir_op_get(v->def->op)->name, v->name,
                    msg);
    int64_t numel;
    if (rt_shape_bytes((kiln_dtype)v->type.dtype, v->type.rank, shape, &numel, &size[k], st) < 0)
      return -1;
  }
  return 0;
}

/* Whether a value of `size` may use `room` (>= size) with spare quarters
 * of its size left unused (plus the alignment). */
static bool spare_fits(size_t room, size_t size, unsigned spare) {
  return size > SIZE_MAX / spare || room - size <= size * spare / 4 + RT_PLAN_ALIGN;
}

/* The slot whose plan fits sizes (every value in the room it placed for it,
 * and that room at most half as large again, or its spare: a plan made for
 * much larger shapes would spread a small execute's values over a large
 * arena), the smallest such, or -1. Lock held. */
static int fitting_slot(const struct rt_plan_cache *c, const size_t *size) {
  int best = -1;
  for (int s = 0; s < RT_PLAN_SLOTS; s++) {
    const rt_plan_slot *sl = &c->slot[s];
    bool fits = sl->used && (best < 0 || sl->total < c->slot[best].total);
    for (int k = 0; k < c->n && fits; k++)
      fits = size[k] <= sl->room[k] && (sl->ahead || spare_fits(sl->room[k], size[k], sl->spare));
    if (fits) best = s;
  }
  return best;
}

/* The slot to take a new plan: one planned for the same key meanwhile (raced),
 * an empty one, else the least recently used. Lock held. */
static int victim_slot(const struct rt_plan_cache *c, const int64_t *syms, size_t kb) {
  for (int s = 0; s < RT_PLAN_SLOTS; s++)
    if (c->slot[s].used && memcmp(c->slot[s].key, syms, kb) == 0) return s;
  for (int s = 0; s < RT_PLAN_SLOTS; s++)
    if (!c->slot[s].used) return s;
  int victim = 0;
  for (int s = 1; s < RT_PLAN_SLOTS; s++)
    if (c->slot[s].stamp < c->slot[victim].stamp) victim = s;
  return victim;
}

/* Whether every symbol value of key is at least its value in last, one
 * larger. */
static bool key_rose(const int64_t *last, const int64_t *key, int nsyms) {
  bool larger = false;
  for (int s = 0; s < nsyms; s++) {
    if (key[s] < last[s]) return false;
    larger = larger || key[s] > last[s];
  }
  return larger;
}

/* Cache the plan (offset, room, total) of syms over the least recently used
 * slot. Takes the lock. */
static void insert_plan(kiln_model *m, struct rt_plan_cache *c, const int64_t *syms,
                        const size_t *offset, const size_t *room, size_t total, bool ahead,
                        unsigned spare) {
  size_t kb = (size_t)m->g->nsyms * sizeof(int64_t), ob = (size_t)c->n * sizeof(size_t);
  lock(m);
  rt_plan_slot *sl = &c->slot[victim_slot(c, syms, kb)];
  if (kb) memcpy(sl->key, syms, kb);
  memcpy(sl->offset, offset, ob);
  memcpy(sl->room, room, ob);
  sl->total = total;
  sl->used = true;
  sl->ahead = ahead;
  sl->spare = spare;
  sl->stamp = ++c->clock;
  unlock(m);
}

int rt_plan_lookup(kiln_model *m, const int64_t *syms, rt_plan_view *v, size_t *offset,
                   kiln_status *st) {
  struct rt_plan_cache *c = get_cache(m, st);
  if (!c) return -1;
  v->n = c->n;
  v->ids = c->ids;
  v->total = 0;
  v->poison = c->poison;
  if (c->n == 0) return 0;
  size_t *total = &v->total;
  size_t kb = (size_t)m->g->nsyms * sizeof(int64_t), ob = (size_t)c->n * sizeof(size_t);
  lock(m);
  bool rose = c->have_last && key_rose(c->last_key, syms, m->g->nsyms);
  c->rising = rose ? (c->rising < GROWTH_RUN ? c->rising + 1 : GROWTH_RUN) : 0;
  bool growing = c->rising >= GROWTH_RUN;
  int64_t bounds[GROWTH_SYMS]; /* growing: the symbols that rose at their bounds */
  bool to_bound = false;
  for (int s = 0; growing && m->g->nsyms <= GROWTH_SYMS && s < m->g->nsyms; s++) {
    bool up = syms[s] > c->last_key[s] && c->sym_max[s] > syms[s] && c->sym_max[s] < INT64_MAX;
    bounds[s] = up ? c->sym_max[s] : syms[s];
    to_bound = to_bound || up;
  }
  if (kb) memcpy(c->last_key, syms, kb);
  c->have_last = true;
  for (int s = 0; s < RT_PLAN_SLOTS; s++) {
    rt_plan_slot *sl = &c->slot[s];
    if (sl->used && memcmp(sl->key, syms, kb) == 0) {
      sl->stamp = ++c->clock;
      memcpy(offset, sl->offset, ob);
      *total = sl->total;
      unlock(m);
      note_peak(m, *total);
      return 0;
    }
  }
  unlock(m);

  /* miss: the sizes; a plan they fit in, else plan outside the lock and
   * insert (over the least recently used) */
  size_t *size = malloc(2 * ob);
  if (!size) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory planning the intermediates");
  size_t *room = size + c->n;
  if (eval_sizes(m, c, syms, size, st) < 0) {
    free(size);
    return -1;
  }
  lock(m);
  int fit = fitting_slot(c, size);
  bool seen_other = c->clock > 0; /* a plan was made before: the model's shapes vary */
  if (fit >= 0) {
    rt_plan_slot *sl = &c->slot[fit];
    sl->stamp = ++c->clock;
    memcpy(offset, sl->offset, ob);
    *total = sl->total;
  }
  unlock(m);
  if (fit >= 0) {
    free(size);
    note_peak(m, *total);
    return 0;
  }
  /* planned ahead: for the end of the bucket, or a growing dim's bound */
  int64_t ends[GROWTH_SYMS];
  bool ahead = m->g->nsyms <= GROWTH_SYMS && rt_variant_growth_room(m, syms, ends) &&
               eval_sizes(m, c, ends, room, NULL) == 0;
  if (!ahead && to_bound && eval_sizes(m, c, bounds, room, NULL) == 0) {
    size_t need = 0, now = 0;
    for (int k = 0; k < c->n; k++) {
      need = room[k] > SIZE_MAX - need ? SIZE_MAX : need + room[k];
      now = size[k] > SIZE_MAX - now ? SIZE_MAX : now + size[k];
    }
    ahead = need <= GROWTH_BOUND_BYTES || need / GROWTH_ROOM <= now;
  }
  for (int k = 0; k < c->n; k++) {
    size_t more = seen_other && size[k] <= SIZE_MAX / 2 ? size[k] + size[k] / 2 : size[k];
    if (growing && !ahead && size[k] <= SIZE_MAX / GROWTH_ROOM) more = size[k] * GROWTH_ROOM;
    if (!ahead || room[k] < more) room[k] = more;
  }
  int rc = 0;
  if (rt_plan_place(c->n, room, c->first, c->last, offset, total) < 0)
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY,
                "out of memory planning the arena of %d intermediates", c->n);
  if (rc == 0) {
    insert_plan(m, c, syms, offset, room, *total, ahead, growing ? 4 * (GROWTH_ROOM - 1) : 2);
    note_peak(m, *total);
    rt_model_count(m, KILN_COUNTER_PLANS);
  }
  free(size);
  return rc;
}

bool rt_plan_cached_ahead(kiln_model *m, const int64_t *syms) {
  struct rt_plan_cache *c = atomic_load_explicit(&m->plan, memory_order_acquire);
  if (!c) return false;
  size_t kb = (size_t)m->g->nsyms * sizeof(int64_t);
  bool have = false;
  lock(m);
  for (int s = 0; s < RT_PLAN_SLOTS && !have; s++) {
    rt_plan_slot *sl = &c->slot[s];
    if ((have = sl->used && sl->ahead && memcmp(sl->key, syms, kb) == 0)) sl->stamp = ++c->clock;
  }
  unlock(m);
  return have;
}

int rt_plan_prepare(kiln_model *m, const int64_t *syms, size_t *total, kiln_status *st) {
  struct rt_plan_cache *c = get_cache(m, st);
  *total = 0;
  if (!c) return -1;
  if (c->n == 0) return 0;
  size_t ob = (size_t)c->n * sizeof(size_t);
  size_t *size = malloc(2 * ob);
  if (!size) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory planning the intermediates");
  size_t *offset = size + c->n;
  int rc = eval_sizes(m, c, syms, size, st);
  if (rc == 0) { /* planned ahead already (an earlier sequence): keep that plan */
    lock(m);
    int fit = fitting_slot(c, size);
    bool have = fit >= 0 && c->slot[fit].ahead;
    if (have) {
      c->slot[fit].stamp = ++c->clock;
      *total = c->slot[fit].total;
    }
    unlock(m);
    if (have) {
      free(size);
      return 0;
    }
  }
  if (rc == 0 && rt_plan_place(c->n, size, c->first, c->last, offset, total) < 0)
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY,
                "out of memory planning the arena of %d intermediates", c->n);
  if (rc == 0) {
    insert_plan(m, c, syms, offset, size, *total, true, 2);
    rt_model_count(m, KILN_COUNTER_PLANS_AHEAD);
  }
  free(size);
  return rc;
}

size_t rt_model_peak_bytes(const kiln_model *m) {
  return m ? atomic_load_explicit(&m->plan_peak, memory_order_relaxed) : 0;
}
