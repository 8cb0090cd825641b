/* cache_mem.c - kernel keys and the per-context memory cache of compiled
 * kernels (see cache_mem.h for the contract).
 *
 * The map is a chained hash table keyed by the 128-bit key, guarded by one
 * mutex `mu`. An entry is PENDING while one thread produces it (backing
 * store or compile, both outside `mu`; then the load under the JIT lock) and
 * READY after; a thread that finds a PENDING entry waits on `cv` and looks
 * the key up again (the producer may have failed and removed it: the waiter
 * then produces it itself). So a key is produced and loaded at most once at
 * a time per context, and a loaded key is never loaded again while its entry
 * lives (no "Duplicate definition" in the LLJIT).
 * Lock order: `mu` is never held while taking the JIT lock. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "cache_mem.h"
#include "ir/ir.h"

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "unknown"
#endif

/* ---- keys ---- */

static const char *const part_names[RT_KEY_NPARTS] = {
    "kernel_ir", "triple", "cpu", "features", "options", "kiln_version", "llvm_version",
};

const char *rt_key_part_name(int i) { return i >= 0 && i < RT_KEY_NPARTS ? part_names[i] : NULL; }

const char *rt_key_part(const rt_key_parts *p, int i) {
  if (!p) return NULL;
  switch (i) {
  case 0: return p->kernel;
  case 1: return p->triple;
  case 2: return p->cpu;
  case 3: return p->features;
  case 4: return p->options;
  case 5: return p->kiln_version;
  case 6: return p->llvm_version;
  default: return NULL;
  }
}

const char *rt_kiln_version(void) { return KILN_VERSION_STRING; }

static const char key_magic[] = "kiln-kernel-key/1\n";

void rt_key_compute(const rt_key_parts *p, kc_key *out) {
  /* Stream the canonical byte string through XXH3-128: no copy of the text,
   * and the state lives on the stack, so this cannot fail. */
  XXH3_state_t s;
  XXH3_INITSTATE(&s);
  XXH3_128bits_reset(&s);
  XXH3_128bits_update(&s, key_magic, sizeof key_magic - 1);
  char head[64];
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    const char *v = rt_key_part(p, i);
    size_t n = v ? strlen(v) : 0;
    int hn = snprintf(head, sizeof head, "%s=%zu:", part_names[i], n);
    XXH3_128bits_update(&s, head, (size_t)hn);
    if (n) XXH3_128bits_update(&s, v, n);
    XXH3_128bits_update(&s, "\n", 1);
  }
  XXH128_hash_t h = XXH3_128bits_digest(&s);
  out->lo = h.low64;
  out->hi = h.high64;
}

void rt_key_hex(const kc_key *k, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)k->hi, (unsigned long long)k->lo);
}

/* ---- the cache ---- */

enum { ENTRY_PENDING, ENTRY_READY };

struct rt_kentry {
  kc_key key;
  uint64_t hash; /* key.lo: the bucket */
  rt_kentry *next;
  int state;
  int refs;
  jit_code *code;
  jit_kernel_fn fn;
  char name[48]; /* kiln_k_<32 hex> */
};

struct rt_cache_mem {
  jit_engine *jit;
  pthread_mutex_t *jit_lock;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  rt_kentry **buckets;
  size_t nbuckets; /* power of two */
  size_t count;    /* entries in the table, pending included */
  rt_cache_stats st;
  rt_cache_backing backing;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...) {
  if (!err || !n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
}

static uint64_t key_hash(const kc_key *k) { return k->lo; }

rt_cache_mem *rt_cache_mem_new(jit_engine *jit, pthread_mutex_t *jit_lock) {
  rt_cache_mem *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->jit = jit;
  c->jit_lock = jit_lock;
  c->nbuckets = 64;
  c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    free(c->buckets);
    free(c);
    return NULL;
  }
  if (pthread_cond_init(&c->cv, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    free(c->buckets);
    free(c);
    return NULL;
  }
  return c;
}

void rt_cache_mem_free(rt_cache_mem *c) {
  if (!c) return;
  for (size_t b = 0; b < c->nbuckets; b++) {
    rt_kentry *e = c->buckets[b];
    while (e) {
      rt_kentry *next = e->next;
      jit_code_free(c->jit, e->code);
      free(e);
      e = next;
    }
  }
  free(c->buckets);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

void rt_cache_mem_set_backing(rt_cache_mem *c, const rt_cache_backing *b) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (b) c->backing = *b;
  else memset(&c->backing, 0, sizeof c->backing);
  pthread_mutex_unlock(&c->mu);
}

void rt_cache_mem_key_parts(const rt_cache_mem *c, const char *kernel_text, rt_key_parts *out) {
  jit_engine *e = c ? c->jit : NULL;
  out->kernel = kernel_text;
  out->triple = jit_engine_triple(e);
  out->cpu = jit_engine_cpu(e);
  out->features = jit_engine_features(e);
  out->options = jit_engine_options(e);
  out->kiln_version = rt_kiln_version();
  out->llvm_version = jit_llvm_version();
}

/* Under mu. */
static rt_kentry *find(rt_cache_mem *c, const kc_key *k, uint64_t h) {
  for (rt_kentry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->next)
    if (e->hash == h && e->key.hi == k->hi) return e;
  return NULL;
}

/* Under mu. Grows the table when it is full (a failed growth keeps the old
 * table: chains just get longer). */
static void insert(rt_cache_mem *c, rt_kentry *e) {
  if (c->count + 1 > c->nbuckets) {
    size_t nb = c->nbuckets * 2;
    rt_kentry **bk = calloc(nb, sizeof *bk);
    if (bk) {
      for (size_t b = 0; b < c->nbuckets; b++)
        for (rt_kentry *x = c->buckets[b], *next; x; x = next) {
          next = x->next;
          x->next = bk[x->hash & (nb - 1)];
          bk[x->hash & (nb - 1)] = x;
        }
      free(c->buckets);
      c->buckets = bk;
      c->nbuckets = nb;
    }
  }
  rt_kentry **slot = &c->buckets[e->hash & (c->nbuckets - 1)];
  e->next = *slot;
  *slot = e;
  c->count++;
}

/* Under mu. */
static void unlink_entry(rt_cache_mem *c, rt_kentry *e) {
  for (rt_kentry **p = &c->buckets[e->hash & (c->nbuckets - 1)]; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      c->count--;
      return;
    }
}

/* Produce e's object (backing store, else compile) and load it. Runs
 * outside mu; takes the JIT lock for the load. 0 or -1 with err. */
static int produce(rt_cache_mem *c, rt_kentry *e, const rt_key_parts *parts, rt_cache_backing bk,
                   bool *compiled, double *compile_ms, double *load_ms, char *err,
                   size_t errlen) {
  *compiled = false;
  void *obj = NULL;
  size_t len = 0;
  jit_kernel_fn fn = NULL;
  if (bk.get && bk.get(bk.ud, &e->key, parts, &obj, &len) == 0 && obj && len) {
    double t0 = now_ms();
    pthread_mutex_lock(c->jit_lock);
    e->code = jit_load_object(c->jit, obj, len, e->name, &fn, err, errlen);
    pthread_mutex_unlock(c->jit_lock);
    *load_ms = now_ms() - t0;
    free(obj);
    obj = NULL;
    if (e->code) {
      e->fn = fn;
      return 0;
    }
    /* a stored object that does not load: compile it afresh */
  } else {
    free(obj);
    obj = NULL;
  }

  double t0 = now_ms();
  ir_diag d = {0};
  ir_graph *kg = ir_parse(parts->kernel, strlen(parts->kernel), &d);
  if (!kg) {
    set_err(err, errlen, "kernel text does not parse (%d:%d: %s)", d.line, d.col, d.msg);
    return -1;
  }
  int rc = jit_compile_object(c->jit, kg, e->name, &obj, &len, err, errlen);
  ir_graph_free(kg);
  *compile_ms = now_ms() - t0;
  if (rc != 0) return -1;
  *compiled = true;
  if (bk.put) bk.put(bk.ud, &e->key, parts, obj, len);
  t0 = now_ms();
  pthread_mutex_lock(c->jit_lock);
  e->code = jit_load_object(c->jit, obj, len, e->name, &fn, err, errlen);
  pthread_mutex_unlock(c->jit_lock);
  *load_ms = now_ms() - t0;
  free(obj);
  if (!e->code) return -1;
  e->fn = fn;
  return 0;
}

int rt_cache_mem_get(rt_cache_mem *c, const char *kernel_text, rt_kentry **entry,
                     jit_kernel_fn *fn, char *err, size_t errlen) {
  if (entry) *entry = NULL;
  if (fn) *fn = NULL;
  if (!c || !kernel_text || !entry || !fn) {
    set_err(err, errlen, "kernel cache: no cache, kernel text or result");
    return -1;
  }
  rt_key_parts parts;
  rt_cache_mem_key_parts(c, kernel_text, &parts);
  kc_key key;
  rt_key_compute(&parts, &key);
  uint64_t h = key_hash(&key);

  pthread_mutex_lock(&c->mu);
  rt_kentry *e;
  while ((e = find(c, &key, h)) && e->state == ENTRY_PENDING) pthread_cond_wait(&c->cv, &c->mu);
  if (e) { /* READY */
    e->refs++;
    c->st.hits++;
    pthread_mutex_unlock(&c->mu);
    *entry = e;
    *fn = e->fn;
    return 0;
  }
  e = calloc(1, sizeof *e);
  if (!e) {
    pthread_mutex_unlock(&c->mu);
    set_err(err, errlen, "kernel cache: out of memory");
    return -1;
  }
  e->key = key;
  e->hash = h;
  e->state = ENTRY_PENDING;
  char hex[33];
  rt_key_hex(&key, hex);
  snprintf(e->name, sizeof e->name, "kiln_k_%s", hex);
  insert(c, e);
  c->st.misses++;
  rt_cache_backing bk = c->backing;
  pthread_mutex_unlock(&c->mu);

  bool compiled = false;
  double cms = 0, lms = 0;
  int rc = produce(c, e, &parts, bk, &compiled, &cms, &lms, err, errlen);

  pthread_mutex_lock(&c->mu);
  if (compiled) {
    c->st.compiles++;
    c->st.compile_ms += cms;
  } else if (rc == 0) {
    c->st.backing_hits++;
  }
  c->st.load_ms += lms;
  if (rc != 0) {
    unlink_entry(c, e);
  } else {
    e->state = ENTRY_READY;
    e->refs = 1;
    c->st.entries++;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (rc != 0) {
    free(e);
    return -1;
  }
  *entry = e;
  *fn = e->fn;
  return 0;
}

void rt_cache_mem_release(rt_cache_mem *c, rt_kentry *e) {
  if (!c || !e) return;
  pthread_mutex_lock(&c->mu);
  if (e->refs > 0) e->refs--;
  pthread_mutex_unlock(&c->mu);
}

const kc_key *rt_kentry_key(const rt_kentry *e) { return e ? &e->key : NULL; }
const char *rt_kentry_fn_name(const rt_kentry *e) { return e ? e->name : NULL; }

int rt_kentry_refs(rt_cache_mem *c, const rt_kentry *e) {
  if (!c || !e) return 0;
  pthread_mutex_lock(&c->mu);
  int r = e->refs;
  pthread_mutex_unlock(&c->mu);
  return r;
}

void rt_cache_mem_stats(rt_cache_mem *c, rt_cache_stats *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  *out = c->st;
  pthread_mutex_unlock(&c->mu);
}
