/* variants.c - shape-specialized variants of a model, the context's
 * background compile thread (see variants.h) and the specialization API of
 * kiln/runtime.h (policies, buckets, bounds, counters).
 *
 * Table: the model's variants, each with its key (variants.h), per-node
 * code from the model's backend (backend.h: compile_bound / code_free; a
 * node whose backend says a bound shape cannot help keeps its generic
 * kernel), a last-use tick and a reference count (the table's own reference plus one per execute using
 * it). Lookup compares the key against the few entries under the mutex; the
 * execute path takes no other lock and allocates nothing (keys of up to
 * KEY_STACK symbols live on the stack). Compiles run outside the mutex; two
 * threads compiling the same key both fetch through the memory cache (which
 * compiles a key once) and the second to insert drops its copy for the
 * first's. Cache entries are released outside the mutex.
 *
 * Buckets (decision, also in runtime.h): a bucket only groups compiles. Its
 * symbol stays a run-time dim of the variant's kernels
 * (ir_kernel_text_partial), so each kernel of such a variant reads dims
 * again, through its own symbol map (like model.c's ksym_map), and its
 * results are exact for every value of the bucket. Padding to the bucket's
 * end is not done: it is wrong for reductions, softmax and layer_norm over
 * the padded axis.
 *
 * What async queues, and whether a variant stays after its first timed
 * executes, is spec_policy.c's (hot bindings, trials, automatic buckets);
 * background compiles are weighed (worth_compiling: a hot binding's
 * execute only queues it) and paced (wait_quiet, rest) here.
 * Async queue (rt_spec_ctx): a FIFO of jobs (model, key) under `mu`, at
 * most RT_SPEC_QUEUE_MAX, one compile thread per context started with the
 * first job (at nice +10: compiles should not take CPU from requests).
 * Lock order: a table's lock is never held while taking `mu`, and `mu` is
 * never held while compiling. A job of a model being freed is cancelled:
 * removed when queued, flagged when running (the compile checks the flag
 * between kernels and drops its work); rt_variants_free waits on `done_cv`
 * until no job of the model runs, so the thread never touches a freed
 * model. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "bg_place.h"
#include "cache_mem.h"
#include "pipeline.h"
#include "plan.h"
#include "pool.h"
#include "spec_policy.h"
#include "spec_prep.h"
#include "tier_up.h"
#include "variants.h"

#define KEY_STACK 16      /* keys of up to this many symbols need no malloc */
#define FAILED_KEYS 8     /* failed keys remembered per model (not retried) */
#define WEIGHED_KEYS 4    /* bucket keys weighed ahead per model (rt_variant_weigh_ahead) */
#define RT_SPEC_CHECK_MS 2 /* how often a waiting background compile looks at the executes */
#define RT_SPEC_PATIENCE_MS 100 /* how long it waits for them to pause (wait_quiet) */

/* Counter slots, in kiln_counter order (KERNELS_EVICTED, CODE_BYTES and the
 * remote cache's are kept elsewhere, their slots unused); COMPILE_MS is kept
 * in microseconds. */
#define NCOUNTERS (KILN_COUNTER_ARENA_GROWS + 1)

struct rt_variant {
  int64_t *key;           /* g->nsyms entries (variants.h) */
  rt_code *code;          /* g->nnodes; fn NULL where the generic kernel serves (backend.h) */
  uint64_t last_use;
  int refs;               /* guarded by the table's lock */
  rt_variant *next_drop;  /* chaining of variants to free after the lock */
};

/* The last `cap` keys of nsyms entries remembered, oldest replaced first
 * (key_ring_find, key_ring_add); keys NULL until the first add. */
typedef struct key_ring {
  int64_t *keys;
  int n, next;
} key_ring;

struct rt_variants {
  pthread_mutex_t lock;
  rt_variant **v;
  int n, cap;
  atomic_int max;         /* 0: the context's bound (read without the lock by enqueue) */
  uint64_t tick;
  int specialized;        /* variants compiled and inserted, ever */
  int8_t *bkind;          /* per symbol kiln_bucket_kind; NULL: all exact (buckets_locked) */
  int64_t *bn;            /* per symbol, the MULTIPLE's n */
  bool *bexplicit;        /* per symbol: the caller chose its bucket (never automatic) */
  int64_t *ahead_up;      /* per symbol: the bucket end past which a variant was queued
                           * ahead (specialize_ahead), 0 none */
  int64_t *sym_max;       /* per symbol: the largest value the graph allows (rt_spec_sym_max);
                           * a bucket ends there at the latest */
  _Atomic(rt_spec_policy *) pol; /* the async policy's bookkeeping (spec_policy.h), or NULL;
                                  * published once (release), read without the lock */
  atomic_int useful;      /* 0 unknown, 1 some kernel can be specialized, 2 none */
  key_ring failed;        /* FAILED_KEYS keys (not retried) */
  key_ring weighed;       /* WEIGHED_KEYS bucket keys weighed ahead, their shares: */
  double weighed_share[WEIGHED_KEYS];
  rt_variant *dead;       /* dropped and unused, chained by next_drop: freed by the
                           * prepare thread (rt_variants_reap) or with the table */
  _Atomic int64_t c[NCOUNTERS];
};

typedef struct spec_job {
  kiln_model *m;
  int64_t *key;           /* NULL for a tier-up job (tier_up.c) */
  atomic_int cancel;
  struct spec_job *next;
} spec_job;

struct rt_spec_ctx {
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the thread waits for jobs */
  pthread_cond_t done_cv; /* a job finished (or the queue changed) */
  spec_job *head, *tail;
  int queued;
  spec_job *running;
  bool started, stop;
  pthread_t thread;
  atomic_int max_variants; /* 0: RT_VARIANTS_MAX */
  atomic_int hot;          /* 0: RT_SPEC_HOT */
  atomic_int test_delay_ms;
  atomic_int test_trial;   /* rt_spec_trial_mode */
  rt_prep *prep;           /* plans ahead of a growing dim (spec_prep.h) */
  rt_bg_place *place;      /* where the compile thread registers (bg_place.h), or NULL */
  _Atomic int64_t c[NCOUNTERS];
};

/* Add d to counter k of m and of its context. */
static void count(const kiln_model *m, int k, int64_t d) {
  if (m->variants) atomic_fetch_add_explicit(&m->variants->c[k], d, memory_order_relaxed);
  if (m->ctx->spec) atomic_fetch_add_explicit(&m->ctx->spec->c[k], d, memory_order_relaxed);
}

void rt_model_count(const kiln_model *m, kiln_counter k) { count(m, k, 1); }

void rt_model_discard_arena(kiln_model *m, void *blk) {
  rt_prep_discard(m->ctx->spec ? m->ctx->spec->prep : NULL, blk);
}

/* ---- context part ---- */

rt_spec_ctx *rt_spec_ctx_new(rt_bg_place *place) {
  rt_spec_ctx *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (pthread_mutex_init(&s->mu, NULL) != 0) goto fail0;
  if (pthread_cond_init(&s->work_cv, NULL) != 0) goto fail1;
  if (pthread_cond_init(&s->done_cv, NULL) != 0) goto fail2;
  if (!(s->prep = rt_prep_new())) goto fail3;
  rt_prep_set_place(s->prep, place);
  s->place = place;
  return s;
fail3:
  pthread_cond_destroy(&s->done_cv);
fail2:
  pthread_cond_destroy(&s->work_cv);
fail1:
  pthread_mutex_destroy(&s->mu);
fail0:
  free(s);
  return NULL;
}

static void job_free(spec_job *j) {
  if (!j) return;
  free(j->key);
  free(j);
}

void rt_spec_ctx_free(rt_spec_ctx *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_broadcast(&s->work_cv);
  bool started = s->started;
  pthread_mutex_unlock(&s->mu);
  if (started) pthread_join(s->thread, NULL);
  rt_prep_free(s->prep);
  for (spec_job *j = s->head, *next; j; j = next) { /* models left behind: never run */
    next = j->next;
    job_free(j);
  }
  pthread_cond_destroy(&s->done_cv);
  pthread_cond_destroy(&s->work_cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void rt_spec_set_test_delay(kiln_context *ctx, int ms) {
  if (ctx && ctx->spec) atomic_store(&ctx->spec->test_delay_ms, ms < 0 ? 0 : ms);
}

void rt_spec_hold_busy(kiln_context *ctx, int delta) {
  if (ctx) atomic_fetch_add(&ctx->busy, delta);
}

void rt_spec_set_test_trial(kiln_context *ctx, int mode) {
  if (ctx && ctx->spec) atomic_store(&ctx->spec->test_trial, mode);
}

/* ---- pacing of background compiles ---- */

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sleep ms, in one sleep: woken early when the job is cancelled
 * (cancel_jobs stores 1 and wakes the word). Slices of 1 ms here woke the
 * compile thread a thousand times a second all the while a busy service
 * kept a tier-up waiting (quiet_for), each wake-up preempting a request's
 * thread where those hold every CPU. */
static void rest(double ms, atomic_int *cancel) {
  int64_t end = rt_now_ns() + (int64_t)(ms * 1e6);
  for (int64_t left; !atomic_load(cancel) && (left = end - rt_now_ns()) > 0;)
    rt_futex_wait(cancel, 0, left);
}

/* Whether executes on ctx hold every CPU: one is running, or one started
 * since the last check (*seen: a decode's steps leave gaps of microseconds
 * between them, which a check at an instant would take for quiet), and the
 * context's threads cover the CPUs, or there are two or fewer. */
static bool cpus_taken(const kiln_context *ctx, unsigned *seen) {
  unsigned n = atomic_load_explicit(&ctx->execs, memory_order_relaxed);
  bool came = n != *seen;
  *seen = n;
  if (!came && atomic_load_explicit(&ctx->busy, memory_order_relaxed) == 0) return false;
  static long ncpu;
  if (!ncpu) ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  return ncpu <= 2 || kiln_context_num_threads(ctx) >= ncpu;
}

/* Before a background kernel compile: wait while requests hold the CPUs
 * (checked every RT_SPEC_CHECK_MS), RT_SPEC_PATIENCE_MS at most: a compile
 * beside a request slows it (issue 20: a decode's steps ran ~10% slower
 * all through a compile on the other vCPU of this 2-CPU host), and a
 * service that never pauses still gets its variants, at a lower rate.
 * Returns whether they still held them. */
static bool wait_quiet(const kiln_context *ctx, atomic_int *cancel) {
  unsigned seen = atomic_load_explicit(&ctx->execs, memory_order_relaxed);
  for (int t = 0; t < RT_SPEC_PATIENCE_MS / RT_SPEC_CHECK_MS && !atomic_load(cancel); t++) {
    rest(RT_SPEC_CHECK_MS, cancel);
    if (!cpus_taken(ctx, &seen)) return false;
  }
  return cpus_taken(ctx, &seen);
}

/* ---- the table ---- */

rt_variants *rt_variants_new(void) {
  rt_variants *vs = calloc(1, sizeof *vs);
  if (vs && pthread_mutex_init(&vs->lock, NULL) != 0) {
    free(vs);
    return NULL;
  }
  return vs;
}

static void variant_free(kiln_model *m, rt_variant *v) {
  if (!v) return;
  for (int i = 0; v->code && i < m->g->nnodes; i++)
    if (v->code[i].fn) m->be->code_free(m, &v->code[i]);
  free(v->code);
  free(v->key);
  free(v);
}

static void drop_list(kiln_model *m, rt_variant *v) {
  while (v) {
    rt_variant *next = v->next_drop;
    variant_free(m, v);
    v = next;
  }
}

/* Free the chain v (dropped variants no execute holds) off the request
 * path: on the prepare thread where m's context has one (a host model),
 * else here. */
static void drop_later(kiln_model *m, rt_variant *v) {
  if (!v) return;
  rt_spec_ctx *s = m->ctx->spec;
  if (!s || m->be != &rt_backend_host) {
    drop_list(m, v);
    return;
  }
  rt_variants *vs = m->variants;
  rt_variant *tail = v;
  while (tail->next_drop) tail = tail->next_drop;
  pthread_mutex_lock(&vs->lock);
  tail->next_drop = vs->dead;
  vs->dead = v;
  pthread_mutex_unlock(&vs->lock);
  if (!rt_prep_reap(s->prep, m)) rt_variants_reap(m); /* queue full or busy: now */
}

void rt_variants_reap(kiln_model *m) {
  rt_variants *vs = m->variants;
  pthread_mutex_lock(&vs->lock);
  rt_variant *dead = vs->dead;
  vs->dead = NULL;
  pthread_mutex_unlock(&vs->lock);
  drop_list(m, dead);
}

/* Cancel m's queued jobs and wait until none of its jobs runs. */
static void cancel_jobs(kiln_model *m) {
  rt_spec_ctx *s = m->ctx->spec;
  if (!s) return;
  spec_job *dead = NULL;
  pthread_mutex_lock(&s->mu);
  for (spec_job **p = &s->head, *prev = NULL; *p;) {
    spec_job *j = *p;
    if (j->m == m) {
      *p = j->next;
      if (s->tail == j) s->tail = prev;
      s->queued--;
      j->next = dead;
      dead = j;
    } else {
      prev = j;
      p = &j->next;
    }
  }
  if (s->running && s->running->m == m) {
    atomic_store(&s->running->cancel, 1);
    rt_futex_wake(&s->running->cancel, INT_MAX); /* out of rest() */
  }
  while (s->running && s->running->m == m) pthread_cond_wait(&s->done_cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  rt_prep_cancel(s->prep, m);
  for (spec_job *next; dead; dead = next) {
    next = dead->next;
    if (dead->key) {
      count(m, KILN_COUNTER_ASYNC_DROPPED, 1);
      count(m, KILN_COUNTER_ASYNC_PENDING, -1);
    }
    job_free(dead);
  }
}

void rt_variants_cancel(kiln_model *m) { cancel_jobs(m); }

void rt_variants_free(kiln_model *m, rt_variants *vs) {
  if (!vs) return;
  cancel_jobs(m); /* a queued reap too: the dropped variants are freed here */
  drop_list(m, vs->dead);
  for (int i = 0; i < vs->n; i++) variant_free(m, vs->v[i]);
  count(m, KILN_COUNTER_VARIANTS_LIVE, -(int64_t)vs->n);
  free(vs->v);
  free(vs->bkind);
  free(vs->bn);
  free(vs->bexplicit);
  free(vs->ahead_up);
  free(vs->sym_max);
  rt_spec_policy_free(atomic_load(&vs->pol));
  free(vs->failed.keys);
  free(vs->weighed.keys);
  pthread_mutex_destroy(&vs->lock);
  free(vs);
}

/* The key of solved values syms into key (variants.h). Lock held. */
static void make_key(const kiln_model *m, const rt_variants *vs, const int64_t *syms,
                     int64_t *key) {
  int ns = m->g->nsyms;
  for (int s = 0; s < ns; s++) {
    int64_t v = syms[s];
    int kind = vs->bkind ? vs->bkind[s] : KILN_BUCKET_EXACT;
    if (kind == KILN_BUCKET_EXACT || v < 0) {
      key[s] = v;
      continue;
    }
    int64_t up = v;
    if (kind == KILN_BUCKET_POW2) {
      if (v > 1 && v <= ((int64_t)1 << 62)) {
        up = 1;
        while (up < v) up <<= 1;
      }
    } else {
      int64_t n = vs->bn[s];
      if (n > 1 && v % n != 0 && v <= INT64_MAX - n) up = (v / n + 1) * n;
    }
    if (up > vs->sym_max[s]) up = v > vs->sym_max[s] ? v : vs->sym_max[s]; /* the last bucket */
    key[s] = -1 - up;
  }
}

/* Bound of m's table. */
static int bound_of(const kiln_model *m, const rt_variants *vs) {
  int own = atomic_load_explicit(&vs->max, memory_order_relaxed);
  if (own > 0) return own;
  int c = m->ctx->spec ? atomic_load_explicit(&m->ctx->spec->max_variants, memory_order_relaxed)
                       : 0;
  return c > 0 ? c : RT_VARIANTS_MAX;
}

/* The variant of key in the table, with a reference taken, or NULL. Lock held. */
static rt_variant *find_locked(const kiln_model *m, rt_variants *vs, const int64_t *key) {
  size_t bytes = (size_t)m->g->nsyms * sizeof *key;
  for (int i = 0; i < vs->n; i++)
    if (memcmp(vs->v[i]->key, key, bytes) == 0) {
      vs->v[i]->last_use = ++vs->tick;
      vs->v[i]->refs++;
      return vs->v[i];
    }
  return NULL;
}

/* The slot of key (ns entries) in r, or -1. */
static int key_ring_find(const key_ring *r, size_t ns, const int64_t *key) {
  for (int i = 0; i < r->n; i++)
    if (memcmp(r->keys + (size_t)i * ns, key, ns * sizeof *key) == 0) return i;
  return -1;
}

/* The slot key was stored in (replacing the oldest of cap), or -1 when it
 * was there already or out of memory. */
static int key_ring_add(key_ring *r, int cap, size_t ns, const int64_t *key) {
  if (!r->keys && !(r->keys = calloc((size_t)cap * ns, sizeof *key))) return -1;
  if (key_ring_find(r, ns, key) >= 0) return -1;
  int slot = r->next;
  memcpy(r->keys + (size_t)slot * ns, key, ns * sizeof *key);
  r->next = (slot + 1) % cap;
  if (r->n < cap) r->n++;
  return slot;
}

static bool failed_locked(const kiln_model *m, const rt_variants *vs, const int64_t *key) {
  return key_ring_find(&vs->failed, (size_t)m->g->nsyms, key) >= 0;
}

/* The share weighed ahead for key (rt_variant_weigh_ahead), or -1. Lock held. */
static double weighed_locked(const kiln_model *m, const rt_variants *vs, const int64_t *key) {
  int i = key_ring_find(&vs->weighed, (size_t)m->g->nsyms, key);
  return i < 0 ? -1 : vs->weighed_share[i];
}

void rt_variant_weigh_ahead(kiln_model *m, const int64_t *syms) {
  rt_variants *vs = m->variants;
  size_t ns = (size_t)m->g->nsyms;
  if (!vs || ns == 0 || ns > KEY_STACK || !atomic_load_explicit(&vs->pol, memory_order_acquire))
    return;
  double share = rt_spec_share(m, syms);
  int64_t key[KEY_STACK];
  pthread_mutex_lock(&vs->lock);
  make_key(m, vs, syms, key);
  int slot = key_ring_add(&vs->weighed, WEIGHED_KEYS, ns, key);
  if (slot >= 0) vs->weighed_share[slot] = share;
  pthread_mutex_unlock(&vs->lock);
}

double rt_variant_weighed(kiln_model *m, const int64_t *syms) {
  rt_variants *vs = m->variants;
  size_t ns = (size_t)m->g->nsyms;
  if (!vs || ns == 0 || ns > KEY_STACK) return -1;
  int64_t key[KEY_STACK];
  pthread_mutex_lock(&vs->lock);
  make_key(m, vs, syms, key);
  double share = weighed_locked(m, vs, key);
  pthread_mutex_unlock(&vs->lock);
  return share;
}

static void remember_failed(kiln_model *m, const int64_t *key) {
  rt_variants *vs = m->variants;
  count(m, KILN_COUNTER_FAILED, 1);
  pthread_mutex_lock(&vs->lock);
  (void)key_ring_add(&vs->failed, FAILED_KEYS, (size_t)m->g->nsyms, key);
  pthread_mutex_unlock(&vs->lock);
}

/* Evict least recently used variants until at most `keep` are left; the
 * evicted ones nobody uses are chained on *drop. Lock held. */
/* Take entry i out of the table, dropping the table's reference; chain it
 * on *drop when nobody else uses it (else its last user frees it). Lock
 * held. */
static void unlink_locked(kiln_model *m, rt_variants *vs, int i, rt_variant **drop) {
  rt_variant *old = vs->v[i];
  vs->v[i] = vs->v[--vs->n];
  count(m, KILN_COUNTER_VARIANTS_LIVE, -1);
  if (--old->refs == 0) {
    old->next_drop = *drop;
    *drop = old;
  }
}

static void evict_locked(kiln_model *m, rt_variants *vs, int keep, rt_variant **drop) {
  while (vs->n > keep && vs->n > 0) {
    int lru = 0;
    for (int i = 1; i < vs->n; i++)
      if (vs->v[i]->last_use < vs->v[lru]->last_use) lru = i;
    unlink_locked(m, vs, lru, drop);
    count(m, KILN_COUNTER_VARIANTS_EVICTED, 1);
  }
}

/* Insert fresh v (or find the one another thread inserted meanwhile), take a
 * reference for the caller when `ref`. Returns the variant in the table, or
 * NULL (v freed) when the table cannot grow. */
static rt_variant *insert(kiln_model *m, rt_variant *v, bool ref) {
  rt_variants *vs = m->variants;
  rt_variant *drop = NULL, *got;
  pthread_mutex_lock(&vs->lock);
  got = find_locked(m, vs, v->key);
  if (got) {
    if (!ref) got->refs--;
    v->next_drop = drop;
    drop = v;
  } else {
    int bound = bound_of(m, vs);
    evict_locked(m, vs, bound - 1, &drop);
    if (vs->n == vs->cap) {
      int nc = vs->cap ? vs->cap * 2 : RT_VARIANTS_MAX;
      rt_variant **nv = realloc(vs->v, (size_t)nc * sizeof *nv);
      if (nv) {
        vs->v = nv;
        vs->cap = nc;
      }
    }
    if (vs->n < vs->cap) {
      v->refs = ref ? 2 : 1;
      v->last_use = ++vs->tick;
      vs->v[vs->n++] = v;
      vs->specialized++;
      count(m, KILN_COUNTER_VARIANTS_BUILT, 1);
      count(m, KILN_COUNTER_VARIANTS_LIVE, 1);
      got = v;
    } else {
      v->next_drop = drop;
      drop = v;
      got = NULL;
    }
  }
  pthread_mutex_unlock(&vs->lock);
  drop_list(m, drop);
  return got;
}

/* Compile the variant of key; NULL with st filled on failure, or NULL with
 * *cancelled set when *cancel became nonzero (checked between kernels). */
static rt_variant *variant_compile(kiln_model *m, const int64_t *key, atomic_int *cancel,
                                   bool *cancelled, kiln_status *st) {
  const ir_graph *g = m->g;
  size_t nn = (size_t)(g->nnodes ? g->nnodes : 1), ns = (size_t)g->nsyms;
  if (cancelled) *cancelled = false;
  rt_variant *v = calloc(1, sizeof *v);
  int64_t *vals = calloc(ns + 1, sizeof *vals);
  bool *bind = calloc(ns + 1, sizeof *bind);
  bool all = true;
  if (!v || !vals || !bind || !(v->key = malloc(ns * sizeof *key)) ||
      !(v->code = calloc(nn, sizeof *v->code))) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory specializing graph @%s", g->name);
    goto fail;
  }
  memcpy(v->key, key, ns * sizeof *key);
  for (size_t s = 0; s < ns; s++) {
    bind[s] = key[s] >= 0;
    vals[s] = key[s] >= 0 ? key[s] : 0;
    all = all && bind[s];
  }
  for (int i = 0; i < g->nnodes; i++) {
    if (m->be->node_syms(m, i) <= 0) continue; /* no kernel, or static: the generic serves */
    if (cancel && atomic_load(cancel)) {
      if (cancelled) *cancelled = true;
      rt_err(st, KILN_ERR_RUNTIME, "specialization of graph @%s cancelled", g->name);
      goto fail;
    }
    rt_binding b = {vals, all ? NULL : bind};
    kiln_counter how;
    double ms = 0;
    bool contended = cancel && wait_quiet(m->ctx, cancel); /* background: pace it */
    double c0 = cancel ? cpu_ms() : 0;
    if (m->be->compile_bound(m, i, &b, &v->code[i], &how, &ms, st) < 0) goto fail;
    count(m, how, 1);
    count(m, KILN_COUNTER_COMPILE_MS, (int64_t)(ms * 1e3)); /* kept in us */
    /* budget: half a core, a fifth while requests have the CPUs */
    if (cancel) rest((cpu_ms() - c0) * (contended ? 4 : 1), cancel);
  }
  free(vals);
  free(bind);
  return v;
fail:
  free(vals);
  free(bind);
  variant_free(m, v);
  return NULL;
}

/* ---- the compile thread ---- */

/* Whether a variant of key could pay for its compile: its share
 * (rt_spec_share) weighed ahead (the prepare thread's), else weighed here,
 * at the bucket's end. One that cannot is not compiled, and its binding is
 * never queued again (dropped from the policy; SPEC_SKIPPED). The weigh
 * walks the whole graph, 5-10 us of a decode step when the execute that met
 * its binding hot did it (issue 20), so that execute only queues it. */
static bool worth_compiling(kiln_model *m, const int64_t *key) {
  rt_variants *vs = m->variants;
  rt_spec_policy *pol = atomic_load_explicit(&vs->pol, memory_order_acquire);
  int ns = m->g->nsyms;
  if (!pol) return true; /* not async's */
  pthread_mutex_lock(&vs->lock);
  double share = weighed_locked(m, vs, key);
  pthread_mutex_unlock(&vs->lock);
  if (share < 0) {
    int64_t buf[KEY_STACK], *at = ns > KEY_STACK ? malloc((size_t)ns * sizeof *at) : buf;
    if (!at) return true; /* out of memory: the compile (and the trial) decide */
    for (int s = 0; s < ns; s++) at[s] = key[s] >= 0 ? key[s] : -1 - key[s];
    share = rt_spec_share(m, at);
    if (at != buf) free(at);
  }
  if (share >= RT_SPEC_MIN_SHARE) return true;
  rt_spec_policy_drop(pol, key);
  count(m, KILN_COUNTER_SPEC_SKIPPED, 1);
  return false;
}

/* Whether no execute held ctx's CPUs (cpus_taken) at any of `ms` checks a
 * millisecond apart: a compile started then takes its CPU time from idle
 * CPUs (a service between bursts, a caller waiting for compiles). After a
 * check that finds them held it rests RT_TIER_BUSY_REST_MS, so a busy
 * service wakes this thread ~100 times a second, never spins it. */
static bool quiet_for(const kiln_context *ctx, int ms, atomic_int *cancel) {
  unsigned seen = atomic_load_explicit(&ctx->execs, memory_order_relaxed);
  for (int t = 0; t < ms; t++) {
    rest(1, cancel);
    if (atomic_load(cancel)) return false;
    if (cpus_taken(ctx, &seen)) {
      rest(RT_TIER_BUSY_REST_MS, cancel);
      return false;
    }
  }
  return true;
}

/* Queue j last; mu held. */
static void append_locked(rt_spec_ctx *s, spec_job *j) {
  j->next = NULL;
  if (s->tail) s->tail->next = j;
  else s->head = j;
  s->tail = j;
  s->queued++;
}

static bool jobs_waiting(rt_spec_ctx *s) {
  pthread_mutex_lock(&s->mu);
  bool any = s->head != NULL;
  pthread_mutex_unlock(&s->mu);
  return any;
}

/* A tier-up job: m's QUICK kernels rebuilt at FULL, one at a time, in
 * tier_up.c's order. The first m->quick_urgent pay (their quick code is
 * 1.1-2x slower): they are not paced beyond the thread's nice +10, since
 * resting would only make the requests run slow code longer. The rest
 * gain nothing while the model runs (the prebuilt GEMM at both tiers):
 * each waits until no execute held the CPUs for RT_TIER_QUIET_MS, since on
 * a machine the requests fill, a compile's CPU time is taken from them
 * (measured, 2 threads on 2 CPUs: the first ~6 requests of a service ran
 * 25-50% slow during ~400 ms of rebuilds, half of them such GEMMs). Returns
 * false when it stopped waiting because other jobs were queued (the caller
 * queues it again behind them), true when done or cancelled. */
static bool tier_up(rt_spec_ctx *s, kiln_model *m, atomic_int *cancel) {
  while (m->quick_next < m->quick_built && !atomic_load(cancel)) {
    if (m->quick_next >= m->quick_urgent)
      while (!quiet_for(m->ctx, RT_TIER_QUIET_MS, cancel)) {
        if (atomic_load(cancel)) return true;
        if (jobs_waiting(s)) return false;
      }
    (void)rt_tier_up_node(m, m->quick_next++); /* a failure keeps the quick kernel */
  }
  return true;
}

static void *compile_thread(void *arg) {
  rt_spec_ctx *s = arg;
#ifdef SYS_gettid
  /* Best effort: background compiles yield the CPU to requests. */
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
#endif
  rt_thread_batch(); /* an execute that queues a job is not preempted by this thread */
  pthread_setname_np(pthread_self(), "kiln-compile"); /* its own track in traces, perf, gdb */
  rt_bg_thread me;
  rt_bg_enter(s->place, &me); /* off the CPUs where models execute (bg_place.c) */
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stop && !s->head) pthread_cond_wait(&s->work_cv, &s->mu);
    if (s->stop) break;
    spec_job *j = s->head;
    s->head = j->next;
    if (!s->head) s->tail = NULL;
    s->queued--;
    s->running = j;
    pthread_mutex_unlock(&s->mu);

    kiln_model *m = j->m; /* valid: its free waits for this job (cancel_jobs) */
    int delay = atomic_load(&s->test_delay_ms);
    if (delay > 0) rest(delay, &j->cancel);
    if (!j->key) {
      bool done = tier_up(s, m, &j->cancel);
      pthread_mutex_lock(&s->mu);
      s->running = NULL;
      if (!done && !s->stop) { /* behind the jobs that came meanwhile */
        append_locked(s, j);
      } else {
        job_free(j);
      }
      pthread_cond_broadcast(&s->done_cv);
      continue;
    }
    rt_variants *vs = m->variants;
    pthread_mutex_lock(&vs->lock);
    rt_variant *have = find_locked(m, vs, j->key);
    if (have) have->refs--;
    pthread_mutex_unlock(&vs->lock);
    bool cancelled = atomic_load(&j->cancel) != 0;
    bool dropped = have || cancelled || !worth_compiling(m, j->key);
    if (!dropped) {
      int64_t t0 = rt_now_ns();
      rt_variant *v = variant_compile(m, j->key, &j->cancel, &cancelled, NULL);
      if (rt_trace_on(m->ctx->trace)) {
        char name[160];
        snprintf(name, sizeof name, "specialize @%s", m->g->name ? m->g->name : "?");
        rt_trace_span(m->ctx->trace, "specialize", name, t0, rt_now_ns(),
                      v ? "\"done\":true" : "\"done\":false");
      }
      if (v) insert(m, v, false);
      else if (cancelled) dropped = true;
      else remember_failed(m, j->key);
    }
    count(m, dropped ? KILN_COUNTER_ASYNC_DROPPED : KILN_COUNTER_ASYNC_DONE, 1);
    count(m, KILN_COUNTER_ASYNC_PENDING, -1);

    pthread_mutex_lock(&s->mu);
    s->running = NULL;
    pthread_cond_broadcast(&s->done_cv);
    job_free(j);
  }
  pthread_mutex_unlock(&s->mu);
  rt_bg_leave(s->place, &me);
  return NULL;
}

/* Queue key for m unless it is queued or running already, the queue is full
 * or m has as many jobs queued as its bound. Never blocks: an execute calls
 * it, and the compile thread (nice +10) may hold `mu` while it waits for a
 * CPU, for milliseconds on a busy host (measured: 2-5 ms decode steps), so
 * `mu` still held after RT_LOCK_BRIEF_NS means "not now" (false, nothing
 * counted: the next execute of the binding asks again). Returns whether
 * key is queued or running now. A new job wakes the thread, unless owed is
 * given: then *owed is set and the caller wakes it (rt_spec_wake), maybe
 * through the prepare thread (issue 20: each wake of a sleeping thread cost
 * the execute 2-3 us, up to 47 us, on this VM: the other vCPU is woken by an
 * IPI; a bucket's first hot execute woke the compile and prepare threads). */
static bool enqueue(kiln_model *m, const int64_t *key, bool *owed) {
  rt_spec_ctx *s = m->ctx->spec;
  if (!s) return false;
  size_t bytes = (size_t)m->g->nsyms * sizeof *key;
  int bound = bound_of(m, m->variants);
  if (!rt_lock_briefly(&s->mu)) return false;
  bool dup = s->running && s->running->m == m && s->running->key &&
             memcmp(s->running->key, key, bytes) == 0;
  int mine = 0;
  for (spec_job *j = s->head; j && !dup; j = j->next)
    if (j->m == m && j->key) {
      mine++;
      dup = memcmp(j->key, key, bytes) == 0;
    }
  if (dup) {
    pthread_mutex_unlock(&s->mu);
    return true;
  }
  spec_job *j = NULL;
  if (s->queued < RT_SPEC_QUEUE_MAX && mine < bound && !s->stop &&
      (j = calloc(1, sizeof *j)) && (j->key = malloc(bytes ? bytes : 1))) {
    if (!s->started) {
      if (pthread_create(&s->thread, NULL, compile_thread, s) == 0) s->started = true;
    }
    if (s->started) {
      memcpy(j->key, key, bytes);
      j->m = m;
      append_locked(s, j);
      if (owed) *owed = true;
      else pthread_cond_signal(&s->work_cv);
      pthread_mutex_unlock(&s->mu);
      count(m, KILN_COUNTER_ASYNC_QUEUED, 1);
      count(m, KILN_COUNTER_ASYNC_PENDING, 1);
      return true;
    }
  }
  pthread_mutex_unlock(&s->mu);
  job_free(j);
  count(m, KILN_COUNTER_ASYNC_DROPPED, 1);
  return false;
}

void rt_spec_wake(rt_spec_ctx *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
}

void rt_tier_up_enqueue(kiln_model *m) {
  rt_spec_ctx *s = m->ctx->spec;
  spec_job *j = s ? calloc(1, sizeof *j) : NULL;
  if (!j) return; /* the quick kernels keep serving */
  j->m = m;
  pthread_mutex_lock(&s->mu);
  if (!s->started && !s->stop &&
      pthread_create(&s->thread, NULL, compile_thread, s) == 0)
    s->started = true;
  if (!s->started || s->stop) {
    pthread_mutex_unlock(&s->mu);
    job_free(j);
    return;
  }
  j->next = s->head; /* first: a model's own kernels before any variant */
  s->head = j;
  if (!s->tail) s->tail = j;
  s->queued++;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
}

/* ---- the execute path ---- */

static int policy_of(const kiln_model *m) {
  int p = atomic_load_explicit(&m->specialize, memory_order_relaxed);
  return p ? p - 1 : atomic_load_explicit(&m->ctx->specialize, memory_order_relaxed);
}

/* Whether some kernel of m can be specialized (backend.h: node_syms). */
static bool useful(kiln_model *m) {
  rt_variants *vs = m->variants;
  int u = atomic_load_explicit(&vs->useful, memory_order_relaxed);
  if (u == 0) {
    u = 2;
    for (int i = 0; i < m->g->nnodes && u == 2; i++)
      if (m->be->node_syms(m, i) > 0) u = 1;
    atomic_store_explicit(&vs->useful, u, memory_order_relaxed);
  }
  return u == 1;
}

bool rt_model_spec_useful(kiln_model *m) { return m && m->variants && useful(m); }

/* The per-symbol bucket arrays (kind, n, chosen by the caller), all zero
 * (exact) when first made; false when they cannot be allocated (none then
 * exists). Lock held. */
static bool buckets_locked(const kiln_model *m, rt_variants *vs) {
  if (vs->bkind) return true;
  size_t ns = (size_t)m->g->nsyms;
  vs->bkind = calloc(ns, sizeof *vs->bkind);
  vs->bn = calloc(ns, sizeof *vs->bn);
  vs->bexplicit = calloc(ns, sizeof *vs->bexplicit);
  vs->ahead_up = calloc(ns, sizeof *vs->ahead_up);
  vs->sym_max = calloc(ns ? ns : 1, sizeof *vs->sym_max);
  if (vs->bkind && vs->bn && vs->bexplicit && vs->ahead_up && vs->sym_max) {
    rt_spec_sym_max(m->g, vs->sym_max);
    return true;
  }
  free(vs->bkind);
  free(vs->bn);
  free(vs->bexplicit);
  free(vs->ahead_up);
  free(vs->sym_max);
  vs->bkind = NULL;
  vs->bn = NULL;
  vs->bexplicit = NULL;
  vs->ahead_up = NULL;
  vs->sym_max = NULL;
  return false;
}

/* Symbol k gets pow2 buckets (the async policy saw it vary widely). */
static void auto_bucket(kiln_model *m, int k) {
  rt_variants *vs = m->variants;
  bool done = false;
  pthread_mutex_lock(&vs->lock);
  if (buckets_locked(m, vs) && !vs->bexplicit[k]) {
    vs->bkind[k] = KILN_BUCKET_POW2;
    done = true;
  }
  pthread_mutex_unlock(&vs->lock);
  if (done) count(m, KILN_COUNTER_AUTO_BUCKETS, 1);
}

/* The first symbol of key whose next bucket specialize_ahead may queue: a
 * bucket the caller chose (automatic buckets serve services whose shapes
 * vary, issue 15), not yet queued ahead from this bucket, and not the last
 * one (it ends at the symbol's bound: rt_spec_sym_max); -1 for none. Lock
 * held. */
static int ahead_candidate_locked(const kiln_model *m, const rt_variants *vs,
                                  const int64_t *key) {
  for (int k = 0; vs->bexplicit && k < m->g->nsyms; k++)
    if (key[k] < 0 && vs->bexplicit[k] && vs->ahead_up[k] != -1 - key[k] &&
        -1 - key[k] < vs->sym_max[k]) /* the last bucket has no next one */
      return k;
  return -1;
}

/* Under async, an execute whose binding is worth a variant (hot, or live)
 * with symbol k bucketed by the caller: once k has grown RT_SPEC_AHEAD_RUN
 * executes in a row (a sequence being decoded), prepare the next bucket
 * (the binding syms with k one past its bucket's end) so that crossing
 * into it stalls no execute: its variant is queued on the compile thread
 * (live when k gets there instead of `hot` executes after; not when it is
 * live already, from an earlier sequence), and the plans of its end and of
 * the end of the bucket after it, with their arena, on the prepare thread
 * (spec_prep.h: at once, whatever the compile thread is busy with). Once
 * per bucket; SPEC_AHEAD counts the compiles. The compile thread is woken
 * by the prepare thread when a plan job is queued here (its wake, and one
 * the caller owes: *owed, enqueue), else *owed is left for the caller: one
 * wake of a sleeping thread per bucket on the request path, not two. */
static void specialize_ahead(kiln_model *m, rt_spec_policy *pol, const int64_t *syms, int k,
                             bool *owed) {
  rt_variants *vs = m->variants;
  int ns = m->g->nsyms;
  if (rt_spec_policy_rising(pol, k) < RT_SPEC_AHEAD_RUN) return;
  int64_t sbuf[KEY_STACK], abuf[KEY_STACK], kbuf[KEY_STACK];
  int64_t *next = sbuf, *then = abuf, *key = kbuf;
  if (ns > KEY_STACK) {
    next = malloc((size_t)ns * sizeof *next);
    then = malloc((size_t)ns * sizeof *then);
    key = malloc((size_t)ns * sizeof *key);
  }
  if (!next || !then || !key) goto done;
  memcpy(next, syms, (size_t)ns * sizeof *next);
  bool claimed = false, compile = false;
  int64_t up = 0, after = 0;
  if (!rt_lock_briefly(&vs->lock)) goto done; /* held: a later execute claims */
  make_key(m, vs, syms, key);
  up = -1 - key[k];
  /* the last bucket (it ends at the symbol's bound) has no next one */
  if (key[k] < 0 && vs->ahead_up[k] != up && up < vs->sym_max[k]) {
    vs->ahead_up[k] = up; /* claimed: no other execute queues it */
    claimed = true;
    next[k] = up + 1;
    make_key(m, vs, next, key);
    rt_variant *have = find_locked(m, vs, key);
    if (have) have->refs--; /* find_locked took a reference */
    compile = !have && !failed_locked(m, vs, key);
    int64_t end = -1 - key[k]; /* the end of the next bucket: its arena is planned ahead */
    if (end < vs->sym_max[k]) { /* and the end of the one after it (below) */
      next[k] = end + 1;
      make_key(m, vs, next, key);
      after = key[k] < 0 ? -1 - key[k] : 0;
      next[k] = up + 1;
      make_key(m, vs, next, key); /* the next bucket's key again: its compile */
    }
    next[k] = end;
  }
  pthread_mutex_unlock(&vs->lock);
  if (!claimed) goto done;
  /* The plans of the next bucket and (the prepare thread may start
   * milliseconds after it was woken on a loaded host, 2.8 ms measured, issue
   * 20, later than a short bucket lasts: 16 decode steps of ~30 us) of the
   * one after it, queued together (one lock, one wake). Once the first is
   * queued the claim stays, even when the compile queue refuses the variant
   * (full, or the model's bound: then the bucket's own executes queue it,
   * the generic kernels serving meanwhile), so that no execute of this
   * bucket asks again: each would wake the threads. The compile is queued
   * first, without a wake, so that the plan job can carry it. */
  bool host = m->be == &rt_backend_host;
  memcpy(then, next, (size_t)ns * sizeof *then);
  then[k] = after;
  const int64_t *plans[2];
  int nplans = 0;
  bool have_next = !host || rt_plan_cached_ahead(m, next);
  if (!have_next) plans[nplans++] = next;
  if (host && after > 0 && !rt_plan_cached_ahead(m, then)) plans[nplans++] = then;
  bool queued = compile && enqueue(m, key, owed);
  bool kicked = false;
  int got = nplans ? rt_prep_plans(m->ctx->spec->prep, m, plans, nplans, *owed, &kicked) : 0;
  if (kicked) *owed = false;
  bool planned = have_next || got > 0;
  if (planned && queued) count(m, KILN_COUNTER_SPEC_AHEAD, 1);
  if (!planned) { /* the prepare queue full or busy: a later execute tries again */
    pthread_mutex_lock(&vs->lock);
    if (vs->ahead_up[k] == up) vs->ahead_up[k] = 0;
    pthread_mutex_unlock(&vs->lock);
  }
done:
  if (next != sbuf) free(next);
  if (then != abuf) free(then);
  if (key != kbuf) free(key);
}

bool rt_variant_growth_room(kiln_model *m, const int64_t *syms, int64_t *ends) {
  rt_variants *vs = m->variants;
  rt_spec_policy *pol = vs ? atomic_load_explicit(&vs->pol, memory_order_acquire) : NULL;
  int ns = m->g->nsyms;
  if (!pol || policy_of(m) != KILN_SPECIALIZE_ASYNC || ns > KEY_STACK) return false;
  int64_t key[KEY_STACK];
  bool any = false;
  memcpy(ends, syms, (size_t)ns * sizeof *ends);
  pthread_mutex_lock(&vs->lock);
  if (vs->bexplicit) {
    make_key(m, vs, syms, key);
    for (int k = 0; k < ns; k++)
      if (key[k] < 0 && vs->bexplicit[k]) {
        ends[k] = -1 - key[k];
        any = true;
      }
  }
  pthread_mutex_unlock(&vs->lock);
  if (!any) return false;
  any = false;
  for (int k = 0; k < ns; k++) {
    if (ends[k] == syms[k]) continue;
    if (rt_spec_policy_rising(pol, k) >= RT_SPEC_AHEAD_RUN) any = true;
    else ends[k] = syms[k]; /* bucketed but not growing: planned as it is */
  }
  return any;
}

int rt_spec_hot(const kiln_context *ctx) {
  int h = ctx && ctx->spec ? atomic_load_explicit(&ctx->spec->hot, memory_order_relaxed) : 0;
  return h > 0 ? h : RT_SPEC_HOT;
}

rt_variant *rt_variant_acquire(kiln_model *m, const int64_t *syms, rt_spec_ticket *t) {
  if (t) t->slot = -1;
  if (m->g->nsyms == 0 || !m->variants) return NULL;
  int p = policy_of(m);
  if (p == KILN_SPECIALIZE_OFF || !useful(m)) return NULL;
  rt_variants *vs = m->variants;
  rt_spec_policy *pol = NULL;
  if (p == KILN_SPECIALIZE_ASYNC && !(pol = atomic_load_explicit(&vs->pol, memory_order_acquire))) {
    rt_spec_policy *made = rt_spec_policy_new(m->g->nsyms); /* made on first use; kept */
    if (made && atomic_compare_exchange_strong_explicit(&vs->pol, &pol, made,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire))
      pol = made, made = NULL;
    rt_spec_policy_free(made);
  }
  bool async = pol != NULL;
  if (async) {
    int k = rt_spec_policy_values(pol, syms, NULL); /* explicit: auto_bucket */
    if (k >= 0) auto_bucket(m, k);
  }
  int64_t kbuf[KEY_STACK], *key = kbuf;
  if (m->g->nsyms > KEY_STACK && !(key = malloc((size_t)m->g->nsyms * sizeof *key)))
    return NULL;
  pthread_mutex_lock(&vs->lock);
  make_key(m, vs, syms, key);
  rt_variant *v = find_locked(m, vs, key);
  bool failed = !v && failed_locked(m, vs, key);
  int ahead = async ? ahead_candidate_locked(m, vs, key) : -1;
  double weighed = async ? weighed_locked(m, vs, key) : -1;
  pthread_mutex_unlock(&vs->lock);
  if (async) {
    rt_spec_ticket tk;
    /* a measured trial is paired (spec_policy.h); the test modes count plain trials */
    bool paired = !m->ctx->spec || atomic_load_explicit(&m->ctx->spec->test_trial,
                                                        memory_order_relaxed) ==
                                        RT_SPEC_TRIAL_MEASURE;
    rt_spec_verdict d =
        rt_spec_policy_seen(pol, key, v != NULL, rt_spec_hot(m->ctx), paired, &tk);
    if (t) *t = tk;
    if (d == RT_SPEC_PAIR) { /* the trial's generic turn */
      rt_variant_release(m, v);
      v = NULL;
    }
    count(m, v ? KILN_COUNTER_HITS : KILN_COUNTER_MISSES, 1);
    /* a bucket planned ahead was weighed then, at its end; any other is
     * queued, and the compile thread weighs it (worth_compiling) */
    if (d == RT_SPEC_WEIGH && weighed >= 0 && weighed < RT_SPEC_MIN_SHARE) {
      rt_spec_policy_drop(pol, key); /* nothing a variant would rebuild matters here */
      count(m, KILN_COUNTER_SPEC_SKIPPED, 1);
      d = RT_SPEC_DROPPED;
    }
    bool owed = false; /* a compile queued, its thread not woken yet */
    if (d == RT_SPEC_COLD) count(m, KILN_COUNTER_COLD, 1);
    else if ((d == RT_SPEC_WEIGH || d == RT_SPEC_QUEUE) && !failed) (void)enqueue(m, key, &owed);
    if (ahead >= 0 && (d == RT_SPEC_WEIGH || d == RT_SPEC_QUEUE || d == RT_SPEC_RUN ||
                       d == RT_SPEC_PAIR))
      specialize_ahead(m, pol, syms, ahead, &owed); /* the prepare thread may wake it */
    if (owed) rt_spec_wake(m->ctx->spec);
  } else {
    count(m, v ? KILN_COUNTER_HITS : KILN_COUNTER_MISSES, 1);
    if (!v && !failed && p == KILN_SPECIALIZE_SYNC) {
      rt_variant *fresh = variant_compile(m, key, NULL, NULL, NULL); /* on failure: generic */
      if (fresh) v = insert(m, fresh, true);
      else remember_failed(m, key);
    }
  }
  if (key != kbuf) free(key);
  return v;
}

/* Drop v from m's table (its trial found it no faster). */
static void drop_variant(kiln_model *m, rt_variant *v) {
  rt_variants *vs = m->variants;
  rt_variant *drop = NULL;
  pthread_mutex_lock(&vs->lock);
  for (int i = 0; i < vs->n; i++)
    if (vs->v[i] == v) {
      unlink_locked(m, vs, i, &drop);
      break;
    }
  pthread_mutex_unlock(&vs->lock);
  count(m, KILN_COUNTER_DROPPED, 1);
  drop_later(m, drop);
}

void rt_variant_timed(kiln_model *m, rt_variant *v, const rt_spec_ticket *t, int64_t ns) {
  rt_spec_policy *pol = NULL;
  if (!t || t->slot < 0 || !m->variants
      || !(pol = atomic_load_explicit(&m->variants->pol, memory_order_acquire)))
    return;
  int mode = atomic_load_explicit(&m->ctx->spec->test_trial, memory_order_relaxed);
  if (rt_spec_policy_timed(pol, t, ns, (rt_spec_trial_mode)mode) && v)
    drop_variant(m, v);
}

void rt_variant_retain(kiln_model *m, rt_variant *v) {
  if (!v) return;
  pthread_mutex_lock(&m->variants->lock);
  v->refs++;
  pthread_mutex_unlock(&m->variants->lock);
}

void rt_variant_release(kiln_model *m, rt_variant *v) {
  if (!v) return;
  rt_variants *vs = m->variants;
  pthread_mutex_lock(&vs->lock);
  bool last = --v->refs == 0;
  pthread_mutex_unlock(&vs->lock);
  if (last) {
    v->next_drop = NULL;
    drop_later(m, v);
  }
}

bool rt_variant_has_kernel(const rt_variant *v, int node) { return v && v->code[node].fn; }

const rt_code *rt_variant_code(const rt_variant *v, int node) {
  return v && v->code[node].fn ? &v->code[node] : NULL;
}

int32_t rt_variant_run(const kiln_model *m, const rt_variant *v, int node, void *const *args,
                       const int64_t *syms) {
  const rt_code *c = &v->code[node];
  jit_kernel_fn fn = (jit_kernel_fn)c->fn;
  if (c->nsyms == 0) return rt_kernel_call(m, node, fn, args, NULL, syms);
  int64_t ks[RT_KERNEL_MAX_SYMS]; /* a bucketed variant's kernel reads its remaining dims */
  for (int j = 0; j < c->nsyms; j++) ks[j] = syms[c->sym_map[j]];
  return rt_kernel_call(m, node, fn, args, ks, syms);
}

int rt_model_num_specialized(const kiln_model *m) {
  if (!m || !m->variants) return 0;
  pthread_mutex_lock(&m->variants->lock);
  int n = m->variants->specialized;
  pthread_mutex_unlock(&m->variants->lock);
  return n;
}

/* ---- API ---- */
static bool policy_ok(kiln_specialize_policy p) {
  return p == KILN_SPECIALIZE_OFF || p == KILN_SPECIALIZE_SYNC || p == KILN_SPECIALIZE_AHEAD ||
         p == KILN_SPECIALIZE_ASYNC;
}

KILN_API int kiln_context_set_specialize(kiln_context *ctx, kiln_specialize_policy p,
                                         kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_specialize: context is NULL");
  if (!policy_ok(p))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_specialize: unknown policy %d (off 0, sync 1, ahead 2, async 3)",
                  (int)p);
  atomic_store(&ctx->specialize, (int)p);
  rt_ok(st);
  return 0;
}

KILN_API kiln_specialize_policy kiln_context_specialize_policy(const kiln_context *ctx) {
  return ctx ? (kiln_specialize_policy)atomic_load(&((kiln_context *)ctx)->specialize)
             : KILN_SPECIALIZE_OFF;
}

KILN_API int kiln_model_set_specialize(kiln_model *m, kiln_specialize_policy p, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_set_specialize: model is NULL");
  if (!policy_ok(p))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_set_specialize: unknown policy %d (off 0, sync 1, ahead 2, async 3)",
                  (int)p);
  atomic_store(&m->specialize, (int)p + 1);
  rt_ok(st);
  return 0;
}

static int sym_index(const ir_graph *g, const char *name) {
  for (int k = 0; name && k < g->nsyms; k++)
    if (strcmp(g->syms[k], name) == 0) return k;
  return -1;
}

KILN_API int kiln_model_specialize(kiln_model *m, const char *const *syms, const int64_t *values,
                                   int n, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: model is NULL");
  if (n < 0 || (n > 0 && (!syms || !values)))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: bad binding list (%d)", n);
  const ir_graph *g = m->g;
  if (g->nsyms == 0 || !m->variants) { /* static graph: the generic variant is specialized */
    rt_ok(st);
    return 0;
  }
  int64_t *b = malloc((size_t)g->nsyms * sizeof *b), *key = malloc((size_t)g->nsyms * sizeof *key);
  bool *set = calloc((size_t)g->nsyms, sizeof *set);
  if (!b || !set || !key) {
    free(b);
    free(key);
    free(set);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int rc = 0;
  for (int i = 0; rc == 0 && i < n; i++) {
    int k = sym_index(g, syms[i]);
    if (k < 0)
      rc = rt_err(st, KILN_ERR_NOT_FOUND, "kiln_model_specialize: graph @%s has no symbolic dim '%s'",
                  g->name, syms[i] ? syms[i] : "(null)");
    else if (values[i] < 0)
      rc = rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: %s = %lld is negative",
                  syms[i], (long long)values[i]);
    else {
      b[k] = values[i];
      set[k] = true;
    }
  }
  for (int k = 0; rc == 0 && k < g->nsyms; k++)
    if (!set[k])
      rc = rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_specialize: symbolic dim '%s' of graph @%s has no value", g->syms[k],
                  g->name);
  if (rc == 0) {
    rt_variants *vs = m->variants;
    pthread_mutex_lock(&vs->lock);
    make_key(m, vs, b, key);
    rt_variant *v = find_locked(m, vs, key);
    if (v) v->refs--; /* present: only marked used */
    pthread_mutex_unlock(&vs->lock);
    if (!v) {
      rt_variant *fresh = variant_compile(m, key, NULL, NULL, st);
      if (!fresh) rc = -1;
      else if (!insert(m, fresh, false))
        rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a variant");
    }
  }
  free(b);
  free(key);
  free(set);
  if (rc == 0) rt_ok(st);
  return rc;
}

KILN_API int kiln_model_variants(const kiln_model *m) {
  if (!m) return -1;
  if (!m->variants) return 0;
  pthread_mutex_lock(&m->variants->lock);
  int n = m->variants->n;
  pthread_mutex_unlock(&m->variants->lock);
  return n;
}

KILN_API int kiln_model_set_bucket(kiln_model *m, const char *sym, kiln_bucket_kind kind,
                                   int64_t n, kiln_status *st) {
  if (!m || !sym)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_set_bucket: %s is NULL",
                  !m ? "model" : "symbol");
  if (kind != KILN_BUCKET_EXACT && kind != KILN_BUCKET_POW2 && kind != KILN_BUCKET_MULTIPLE)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_set_bucket: unknown bucket kind %d (exact 0, pow2 1, multiple 2)",
                  (int)kind);
  if (kind == KILN_BUCKET_MULTIPLE && n < 1)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_set_bucket: %s: a multiple must be >= 1, got %lld", sym, (long long)n);
  int k = sym_index(m->g, sym);
  if (k < 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "kiln_model_set_bucket: graph @%s has no symbolic dim '%s'",
                  m->g->name, sym);
  rt_variants *vs = m->variants; /* NULL: dims set from data, no variants (model.c) */
  if (!vs) {
    rt_ok(st);
    return 0;
  }
  int rc = 0;
  pthread_mutex_lock(&vs->lock);
  if (!buckets_locked(m, vs)) {
    rc = -1;
  } else {
    vs->bkind[k] = (int8_t)kind;
    vs->bn[k] = kind == KILN_BUCKET_MULTIPLE ? n : 0;
    vs->bexplicit[k] = true;
  }
  pthread_mutex_unlock(&vs->lock);
  if (rc < 0) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (m->be == &rt_backend_host && m->ctx->spec) rt_prep_start(m->ctx->spec->prep);
  rt_ok(st);
  return 0;
}

static int check_bound(const char *fn, int n, kiln_status *st) {
  if (n < 0 || n > RT_VARIANTS_LIMIT)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: %d is out of range (0 .. %d)", fn, n,
                  RT_VARIANTS_LIMIT);
  return 0;
}

KILN_API int kiln_context_set_specialize_hot(kiln_context *ctx, int executes, kiln_status *st) {
  if (!ctx || !ctx->spec)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_specialize_hot: context is NULL");
  if (executes < 0)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_specialize_hot: %d executes (>= 1, or 0 for the default)",
                  executes);
  atomic_store(&ctx->spec->hot, executes);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_context_set_max_variants(kiln_context *ctx, int n, kiln_status *st) {
  if (!ctx || !ctx->spec)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_max_variants: context is NULL");
  if (check_bound("kiln_context_set_max_variants", n, st) < 0) return -1;
  atomic_store(&ctx->spec->max_variants, n);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_model_set_max_variants(kiln_model *m, int n, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_set_max_variants: model is NULL");
  if (check_bound("kiln_model_set_max_variants", n, st) < 0) return -1;
  rt_variants *vs = m->variants;
  if (vs) {
    rt_variant *drop = NULL;
    pthread_mutex_lock(&vs->lock);
    atomic_store(&vs->max, n);
    evict_locked(m, vs, bound_of(m, vs), &drop);
    pthread_mutex_unlock(&vs->lock);
    drop_list(m, drop);
  }
  rt_ok(st);
  return 0;
}

static double counter_value(const _Atomic int64_t *c, kiln_counter k) {
  int64_t v = atomic_load_explicit(&c[k], memory_order_relaxed);
  return k == KILN_COUNTER_COMPILE_MS ? (double)v / 1e3 : (double)v;
}

#define NPUBLIC (KILN_COUNTER_ARENA_GROWS + 1)

static bool is_remote_counter(kiln_counter c) {
  return c >= KILN_COUNTER_REMOTE_HITS && c <= KILN_COUNTER_REMOTE_CORRUPT;
}

KILN_API double kiln_model_counter(const kiln_model *m, kiln_counter c) {
  if (!m || (int)c < 0 || (int)c >= NPUBLIC) return -1;
  if (c == KILN_COUNTER_QUICK_KERNELS) return m->quick_built;
  if (c == KILN_COUNTER_QUICK_LIVE) return atomic_load(&((kiln_model *)m)->quick_live);
  if (!m->variants || c == KILN_COUNTER_KERNELS_EVICTED || c == KILN_COUNTER_CODE_BYTES ||
      is_remote_counter(c))
    return 0;
  return counter_value(m->variants->c, c);
}

KILN_API double kiln_context_counter(const kiln_context *ctx, kiln_counter c) {
  if (!ctx || !ctx->spec || (int)c < 0 || (int)c >= NPUBLIC) return -1;
  if (c == KILN_COUNTER_QUICK_LIVE) return atomic_load(&((kiln_context *)ctx)->quick_live);
  if (is_remote_counter(c)) return rt_context_remote_counter(ctx, c);
  if (c == KILN_COUNTER_KERNEL_HITS || c == KILN_COUNTER_DISK_HITS ||
      c == KILN_COUNTER_COMPILES || c == KILN_COUNTER_COMPILE_MS ||
      c == KILN_COUNTER_KERNELS_EVICTED || c == KILN_COUNTER_CODE_BYTES ||
      c == KILN_COUNTER_QUICK_KERNELS) {
    rt_cache_stats cs;
    rt_cache_mem_stats(ctx->kcache, &cs);
    return c == KILN_COUNTER_KERNEL_HITS     ? (double)cs.hits
           : c == KILN_COUNTER_DISK_HITS     ? (double)(cs.backing_hits - cs.remote_hits)
           : c == KILN_COUNTER_COMPILES      ? (double)cs.compiles
           : c == KILN_COUNTER_KERNELS_EVICTED ? (double)cs.evicted
           : c == KILN_COUNTER_CODE_BYTES    ? (double)cs.code_bytes
           : c == KILN_COUNTER_QUICK_KERNELS ? (double)cs.quick_compiles
                                             : cs.compile_ms + cs.load_ms;
  }
  return counter_value(ctx->spec->c, c);
}

KILN_API int kiln_context_wait_compiles(kiln_context *ctx, int64_t timeout_ms, kiln_status *st) {
  if (!ctx || !ctx->spec)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_wait_compiles: context is NULL");
  rt_spec_ctx *s = ctx->spec;
  int64_t prep_deadline = timeout_ms < 0 ? -1 : rt_now_ns() + timeout_ms * 1000000;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  if (timeout_ms > 0) {
    int64_t ns = dl.tv_nsec + (timeout_ms % 1000) * 1000000;
    dl.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
    dl.tv_nsec = (long)(ns % 1000000000);
  }
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  while (s->head || s->running) {
    if (timeout_ms == 0) {
      rc = 1;
      break;
    }
    if (timeout_ms < 0) {
      pthread_cond_wait(&s->done_cv, &s->mu);
    } else if (pthread_cond_timedwait(&s->done_cv, &s->mu, &dl) == ETIMEDOUT) {
      rc = (s->head || s->running) ? 1 : 0;
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (rc == 0) rc = rt_prep_wait(s->prep, prep_deadline); /* the plans made ahead too */
  rt_ok(st);
  return rc;
}
