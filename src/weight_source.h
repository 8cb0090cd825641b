/* weight_source.h - named weights a graph carries with it (internal to src/).
 *
 * A front end that reads weights together with the graph (ONNX import)
 * builds an rt_wsrc: a table name -> tensor plus whatever keeps the tensors'
 * memory alive (file mappings, a decoded protobuf). The graph holds one
 * reference (kiln_graph.wsrc); kiln_model_compile / _compile_on bind every
 * weight of the model found in it by name (rt_wsrc_bind) and keep a
 * reference too, so the memory outlives the graph. An explicit
 * kiln_model_bind_weight afterwards simply rebinds (overrides).
 * Reference counts are atomic: graphs and models may be freed from any
 * thread. Tensors are borrowed views or owned copies; all die with the last
 * reference. */
#ifndef KILN_SRC_WEIGHT_SOURCE_H
#define KILN_SRC_WEIGHT_SOURCE_H

#include "rt.h"

typedef struct rt_wsrc rt_wsrc;

rt_wsrc *rt_wsrc_new(kiln_status *st);          /* one reference, the caller's */
rt_wsrc *rt_wsrc_retain(rt_wsrc *w);            /* NULL ok; returns w */
void rt_wsrc_release(rt_wsrc *w);               /* NULL ok; frees at the last reference */
/* Add weight `name` (copied); w takes t (also on failure). */
int rt_wsrc_add(rt_wsrc *w, const char *name, kiln_tensor *t, kiln_status *st);
/* Keep a mapping (munmap'ed at the end) or an object (fr(obj) at the end)
 * alive as long as w. On failure the mapping / object is released at once. */
int rt_wsrc_keep_map(rt_wsrc *w, void *addr, size_t len, kiln_status *st);
int rt_wsrc_keep(rt_wsrc *w, void *obj, void (*fr)(void *), kiln_status *st);
int rt_wsrc_count(const rt_wsrc *w);
const char *rt_wsrc_name(const rt_wsrc *w, int i);         /* owned by w */
const kiln_tensor *rt_wsrc_tensor(const rt_wsrc *w, int i); /* owned by w */
/* Bind every weight of m that w has (by name) and make m hold a reference
 * to w (m->wsrc). w NULL: nothing to do. 0 or -1 with st filled (the
 * weight named). */
int rt_wsrc_bind(kiln_model *m, rt_wsrc *w, kiln_status *st);
/* The same, calling bound(arg, name) right after each weight is bound (so
 * a caller can release what the model no longer reads before the next one
 * is packed). */
int rt_wsrc_bind_each(kiln_model *m, rt_wsrc *w, void (*bound)(void *arg, const char *name),
                      void *arg, kiln_status *st);

#endif
