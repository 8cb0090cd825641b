/* spec_policy.c - the async policy's bookkeeping (spec_policy.h): how hot
 * each binding is, the trial of a new variant against the generic kernels,
 * automatic buckets for symbols that vary widely, and runs of growth.
 *
 * Bindings live in a fixed table of RT_SPEC_SEEN slots; a slot's `gen`
 * changes when it is given to another binding, so a ticket taken before
 * that (an execute still running) times nothing. A paired trial's executes
 * alternate generic, variant, generic, ... (it ends on a variant's time, so
 * the execute that ran the variant drops it): consecutive executes of a
 * growing dim differ by one in it, so the two sets of times come from the
 * same shapes and the fastest of each compare like for like. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "spec_policy.h"

typedef enum seen_state { FREE, SEEN, RUNNING, KEPT, DROPPED } seen_state;

typedef struct seen {
  seen_state state;
  uint32_t gen;
  uint64_t last;     /* the model's execute count when last seen */
  int count;         /* executes within the window */
  bool weighed;      /* RT_SPEC_WEIGH was returned for it */
  int gen_n, var_n;  /* timed executes: generic, variant */
  int64_t gen_min, var_min;
  bool paired;       /* its trial alternates (gen_n counts the trial's generic executes) */
  int turns;         /* executes of its paired trial so far */
} seen;

struct rt_spec_policy {
  pthread_mutex_t lock;
  int nsyms;
  uint64_t execs;
  seen slot[RT_SPEC_SEEN];
  int64_t *keys;     /* RT_SPEC_SEEN x nsyms */
  int64_t *values;   /* per symbol: up to RT_SPEC_AUTO_BUCKET + 1 distinct values seen */
  int *nvalues;
  int64_t *last;     /* per symbol: its value at the last execute */
  int *rising;       /* per symbol: executes in a row it grew (up to RT_SPEC_AHEAD_RUN) */
  bool any_values;   /* last holds an execute's values */
};

rt_spec_policy *rt_spec_policy_new(int nsyms) {
  rt_spec_policy *p = calloc(1, sizeof *p);
  size_t ns = (size_t)(nsyms > 0 ? nsyms : 1);
  if (!p) return NULL;
  p->nsyms = nsyms;
  p->keys = calloc(RT_SPEC_SEEN * ns, sizeof *p->keys);
  p->values = calloc((RT_SPEC_AUTO_BUCKET + 1) * ns, sizeof *p->values);
  p->nvalues = calloc(ns, sizeof *p->nvalues);
  p->last = calloc(ns, sizeof *p->last);
  p->rising = calloc(ns, sizeof *p->rising);
  if (!p->keys || !p->values || !p->nvalues || !p->last || !p->rising ||
      pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p->keys);
    free(p->values);
    free(p->nvalues);
    free(p->last);
    free(p->rising);
    free(p);
    return NULL;
  }
  return p;
}

void rt_spec_policy_free(rt_spec_policy *p) {
  if (!p) return;
  pthread_mutex_destroy(&p->lock);
  free(p->keys);
  free(p->values);
  free(p->nvalues);
  free(p->last);
  free(p->rising);
  free(p);
}

/* The slot of key, taking the least recently seen one for a new key. */
static int slot_of(rt_spec_policy *p, const int64_t *key) {
  size_t bytes = (size_t)p->nsyms * sizeof *key;
  int lru = 0;
  for (int i = 0; i < RT_SPEC_SEEN; i++) {
    if (p->slot[i].state != FREE && memcmp(p->keys + (size_t)i * p->nsyms, key, bytes) == 0)
      return i;
    if (p->slot[i].state == FREE || (p->slot[lru].state != FREE && p->slot[i].last < p->slot[lru].last))
      lru = i;
  }
  seen *s = &p->slot[lru];
  uint32_t gen = s->gen + 1;
  *s = (seen){.state = SEEN, .gen = gen};
  memcpy(p->keys + (size_t)lru * p->nsyms, key, bytes);
  return lru;
}

rt_spec_verdict rt_spec_policy_seen(rt_spec_policy *p, const int64_t *key, bool has_variant,
                                    int hot, bool paired, rt_spec_ticket *t) {
  t->slot = -1;
  pthread_mutex_lock(&p->lock);
  int i = slot_of(p, key);
  seen *s = &p->slot[i];
  uint64_t now = ++p->execs;
  if (now - s->last > RT_SPEC_WINDOW) s->count = 0;
  s->last = now;
  if (s->count < 1 << 30) s->count++;
  rt_spec_verdict v;
  if (s->state == DROPPED) {
    v = RT_SPEC_DROPPED;
  } else if (has_variant) {
    if (s->state != KEPT && s->state != RUNNING) { /* on trial until RT_SPEC_TRIAL timed runs */
      s->state = RUNNING;
      s->paired = paired;
      s->turns = 0;
      if (paired) s->gen_n = 0; /* earlier generic times ran other shapes of the bucket */
    }
    v = RT_SPEC_RUN;
    if (s->state == RUNNING && s->paired && s->turns++ % 2 == 0) v = RT_SPEC_PAIR;
  } else {
    if (s->state == KEPT || s->state == RUNNING) s->state = SEEN; /* evicted: a new trial */
    s->var_n = 0;
    v = s->count < hot ? RT_SPEC_COLD : s->weighed ? RT_SPEC_QUEUE : RT_SPEC_WEIGH;
    s->weighed = s->weighed || v == RT_SPEC_WEIGH;
  }
  bool time_it = v == RT_SPEC_RUN || v == RT_SPEC_PAIR
                     ? s->state == RUNNING
                     : v != RT_SPEC_DROPPED && s->gen_n < RT_SPEC_GEN_SAMPLES;
  if (time_it) *t = (rt_spec_ticket){i, s->gen, v == RT_SPEC_RUN};
  pthread_mutex_unlock(&p->lock);
  return v;
}

void rt_spec_policy_drop(rt_spec_policy *p, const int64_t *key) {
  pthread_mutex_lock(&p->lock);
  p->slot[slot_of(p, key)].state = DROPPED;
  pthread_mutex_unlock(&p->lock);
}

static void keep_min(int *n, int64_t *min, int64_t ns) {
  if (*n == 0 || ns < *min) *min = ns;
  (*n)++;
}

bool rt_spec_policy_timed(rt_spec_policy *p, const rt_spec_ticket *t, int64_t ns,
                          rt_spec_trial_mode mode) {
  if (t->slot < 0) return false;
  bool drop = false;
  pthread_mutex_lock(&p->lock);
  seen *s = &p->slot[t->slot];
  if (s->gen == t->gen && s->state != FREE) {
    if (!t->variant) keep_min(&s->gen_n, &s->gen_min, ns);
    else if (s->state == RUNNING) keep_min(&s->var_n, &s->var_min, ns);
    if (s->state == RUNNING && t->variant) { /* the caller drops the variant it ran */
      /* a paired trial ends with as many generic times as the variant's */
      if (s->var_n >= RT_SPEC_TRIAL && (!s->paired || s->gen_n >= RT_SPEC_TRIAL)) {
        drop = mode == RT_SPEC_TRIAL_DROP ||
               (mode == RT_SPEC_TRIAL_MEASURE && s->gen_n > 0 &&
                (double)s->var_min > RT_SPEC_GAIN * (double)s->gen_min);
        s->state = drop ? DROPPED : KEPT;
      }
    }
  }
  pthread_mutex_unlock(&p->lock);
  return drop;
}

int rt_spec_policy_values(rt_spec_policy *p, const int64_t *syms, const bool *explicit_bucket) {
  int grow = -1;
  pthread_mutex_lock(&p->lock);
  for (int k = 0; k < p->nsyms; k++) {
    int r = p->any_values && syms[k] > p->last[k] ? p->rising[k] + 1 : 0;
    p->rising[k] = r < RT_SPEC_AHEAD_RUN ? r : RT_SPEC_AHEAD_RUN;
    p->last[k] = syms[k];
  }
  p->any_values = true;
  for (int k = 0; k < p->nsyms && grow < 0; k++) {
    int n = p->nvalues[k];
    if (n > RT_SPEC_AUTO_BUCKET || (explicit_bucket && explicit_bucket[k])) continue;
    int64_t *vals = p->values + (size_t)k * (RT_SPEC_AUTO_BUCKET + 1);
    bool known = false;
    for (int j = 0; j < n && !known; j++) known = vals[j] == syms[k];
    if (known) continue;
    vals[n] = syms[k];
    p->nvalues[k] = n + 1;
    if (n + 1 > RT_SPEC_AUTO_BUCKET) grow = k;
  }
  pthread_mutex_unlock(&p->lock);
  return grow;
}

int rt_spec_policy_rising(rt_spec_policy *p, int k) {
  if (k < 0 || k >= p->nsyms) return 0;
  pthread_mutex_lock(&p->lock);
  int r = p->rising[k];
  pthread_mutex_unlock(&p->lock);
  return r;
}
