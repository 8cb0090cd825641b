/* weight_source.c - the refcounted weight table a graph carries
 * (weight_source.h). Lookups at bind time go through a sorted index so a
 * model with thousands of weights binds in n log n. Entries never change
 * after they are added: a source shared by graphs and models that bind it
 * from several threads is read only. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weight_source.h"

typedef struct wsrc_keep {
  void *obj;
  size_t len;            /* a mapping when fr is NULL */
  void (*fr)(void *);
} wsrc_keep;

typedef struct wsrc_entry {
  char *name;
  kiln_tensor *t;      /* a header only (data NULL) when copy_at_bind */
  const void *bytes;   /* in a file mapping w keeps, or NULL */
  size_t len;
  bool copy_at_bind;   /* bytes not aligned for t's dtype: copied at each bind */
} wsrc_entry;

struct rt_wsrc {
  atomic_int refs;
  int n, cap, nkeep, capkeep;
  wsrc_entry *e;
  wsrc_keep *keep;
};

rt_wsrc *rt_wsrc_new(kiln_status *st) {
  rt_wsrc *w = calloc(1, sizeof *w);
  if (!w) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  atomic_init(&w->refs, 1);
  return w;
}

rt_wsrc *rt_wsrc_retain(rt_wsrc *w) {
  if (w) atomic_fetch_add(&w->refs, 1);
  return w;
}

void rt_wsrc_release(rt_wsrc *w) {
  if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
  for (int i = 0; i < w->n; i++) {
    free(w->e[i].name);
    kiln_tensor_free(w->e[i].t);
  }
  for (int i = w->nkeep - 1; i >= 0; i--) {
    if (w->keep[i].fr) w->keep[i].fr(w->keep[i].obj);
    else munmap(w->keep[i].obj, w->keep[i].len);
  }
  free(w->e);
  free(w->keep);
  free(w);
}

int rt_wsrc_add(rt_wsrc *w, const char *name, kiln_tensor *t, kiln_status *st) {
  if (w->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    wsrc_entry *e = realloc(w->e, (size_t)cap * sizeof *e);
    if (!e) goto oom;
    w->e = e;
    w->cap = cap;
  }
  char *nm = strdup(name);
  if (!nm) goto oom;
  w->e[w->n++] = (wsrc_entry){.name = nm, .t = t};
  return 0;
oom:
  kiln_tensor_free(t);
  return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding weight '%s'", name);
}

int rt_wsrc_add_mapped(rt_wsrc *w, const char *name, kiln_tensor *t, const void *bytes,
                       size_t len, kiln_status *st) {
  bool copy = bytes && t->data != bytes;
  if (copy) { /* keep the shape only: each bind copies the file's bytes again */
    kiln_tensor *h = rt_tensor_header(t->dtype, t->rank, t->shape, st);
    kiln_tensor_free(t);
    if (!h) return -1;
    t = h;
    rt_map_drop(bytes, len);
  }
  if (rt_wsrc_add(w, name, t, st) < 0) return -1;
  wsrc_entry *e = &w->e[w->n - 1];
  e->bytes = bytes;
  e->len = len;
  e->copy_at_bind = copy;
  return 0;
}

void rt_map_drop(const void *p, size_t len) {
  long pg = sysconf(_SC_PAGESIZE);
  if (!p || len == 0 || pg <= 0) return;
  uintptr_t lo = (uintptr_t)p, hi = lo + len, mask = (uintptr_t)pg - 1;
  lo = (lo + mask) & ~mask; /* whole pages only: the neighbours' bytes stay */
  hi &= ~mask;
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* An owned copy of entry e's file bytes. */
static kiln_tensor *copy_bytes(const wsrc_entry *e, kiln_status *st) {
  kiln_tensor *c = rt_tensor_alloc(e->t->dtype, e->t->rank, e->t->shape, st);
  if (c && c->nbytes) memcpy(c->data, e->bytes, c->nbytes);
  return c;
}

static int keep(rt_wsrc *w, void *obj, size_t len, void (*fr)(void *), kiln_status *st) {
  if (w->nkeep == w->capkeep) {
    int cap = w->capkeep ? 2 * w->capkeep : 4;
    wsrc_keep *k = realloc(w->keep, (size_t)cap * sizeof *k);
    if (!k) {
      if (fr) fr(obj);
      else munmap(obj, len);
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    w->keep = k;
    w->capkeep = cap;
  }
  w->keep[w->nkeep++] = (wsrc_keep){obj, len, fr};
  return 0;
}

int rt_wsrc_keep_map(rt_wsrc *w, void *addr, size_t len, kiln_status *st) {
  return keep(w, addr, len, NULL, st);
}

int rt_wsrc_keep(rt_wsrc *w, void *obj, void (*fr)(void *), kiln_status *st) {
  return keep(w, obj, 0, fr, st);
}

int rt_wsrc_count(const rt_wsrc *w) { return w ? w->n : 0; }
const char *rt_wsrc_name(const rt_wsrc *w, int i) {
  return w && i >= 0 && i < w->n ? w->e[i].name : NULL;
}
kiln_tensor *rt_wsrc_get(const rt_wsrc *w, int i, kiln_status *st) {
  if (!w || i < 0 || i >= w->n) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "no weight %d in the weight source", i);
    return NULL;
  }
  const wsrc_entry *e = &w->e[i];
  if (e->copy_at_bind) return copy_bytes(e, st);
  return kiln_tensor_borrow(e->t->dtype, e->t->rank, e->t->shape, e->t->data, st);
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const wsrc_entry *)a)->name, ((const wsrc_entry *)b)->name);
}

/* Bind e to m, then give back the file's pages m no longer reads. An
 * unaligned entry that m only packs is packed from the mapping where it
 * lies (the packs read any address: prepack.h); one m reads itself is
 * copied into scratch (grown as needed, freed by the caller): one buffer
 * for all of them, not an allocation per weight, whose freed blocks the
 * allocator would keep beside the packed copies. */
static int bind_entry(kiln_model *m, const wsrc_entry *e, void **scratch, size_t *cap,
                      kiln_status *st) {
  bool packed_only = e->bytes && kiln_model_weight_needs_data(m, e->name) == 0;
  if (!e->copy_at_bind) {
    if (kiln_model_bind_weight(m, e->name, e->t, st) < 0) return -1;
    if (packed_only) rt_map_drop(e->bytes, e->len);
    return 0;
  }
  if (packed_only && rt_model_weight_align(m, e->name) <= 1) {
    kiln_tensor *in_map =
        kiln_tensor_borrow(e->t->dtype, e->t->rank, e->t->shape, (void *)e->bytes, st);
    int rc = in_map ? rt_model_bind_weight_transient(m, e->name, in_map, st) : -1;
    kiln_tensor_free(in_map);
    rt_map_drop(e->bytes, e->len);
    return rc;
  }
  if (e->len > *cap) {
    void *p = rt_aligned_alloc(e->len);
    if (!p) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory binding weight '%s'", e->name);
    free(*scratch);
    *scratch = p;
    *cap = e->len;
  }
  if (e->len) memcpy(*scratch, e->bytes, e->len);
  rt_map_drop(e->bytes, e->len); /* read again from the file at the next bind */
  kiln_tensor *view = kiln_tensor_borrow(e->t->dtype, e->t->rank, e->t->shape, *scratch, st);
  int rc = view ? rt_model_bind_weight_transient(m, e->name, view, st) : -1;
  kiln_tensor_free(view);
  return rc;
}

int rt_wsrc_bind(kiln_model *m, rt_wsrc *w, kiln_status *st) {
  if (!w) return 0;
  wsrc_entry *sorted = malloc((size_t)(w->n ? w->n : 1) * sizeof *sorted);
  if (!sorted) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory binding weights");
  if (w->n > 0) {
    memcpy(sorted, w->e, (size_t)w->n * sizeof *sorted);
    qsort(sorted, (size_t)w->n, sizeof *sorted, cmp_entry);
  }
  int rc = 0;
  void *scratch = NULL;
  size_t cap = 0;
  for (int i = 0; i < kiln_model_num_weights(m) && rc == 0; i++) {
    wsrc_entry key = {.name = (char *)kiln_model_weight_name(m, i)};
    const wsrc_entry *e =
        w->n ? bsearch(&key, sorted, (size_t)w->n, sizeof *sorted, cmp_entry) : NULL;
    if (e) rc = bind_entry(m, e, &scratch, &cap, st);
  }
  free(scratch);
  free(sorted);
  if (rc < 0) return -1;
  m->wsrc = rt_wsrc_retain(w);
  return 0;
}
