/* weight_source.h - named weights a graph carries with it (internal to src/).
 *
 * A front end that reads weights together with the graph (ONNX import)
 * builds an rt_wsrc: a table name -> tensor plus whatever keeps the tensors'
 * memory alive (file mappings, a decoded protobuf). The graph holds one
 * reference (kiln_graph.wsrc); kiln_model_compile / _compile_on bind every
 * weight of the model found in it by name (rt_wsrc_bind) and keep a
 * reference too, so the memory outlives the graph. An explicit
 * kiln_model_bind_weight afterwards simply rebinds (overrides). A weight
 * read from a file mapping remembers its bytes there, so binding can give
 * the file's pages back once the model holds its own (packed) copy.
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
/* The same for a weight whose bytes lie at [bytes, bytes + len) of a
 * read-only file mapping that w keeps (bytes NULL: as rt_wsrc_add). t is a
 * borrowed view of them, or a copy where they are not aligned for its
 * dtype. A view is bound as it is, and its pages are given back
 * (rt_map_drop) once a model reads only its own copy. A copy is not kept:
 * a model that only packs the weight packs the bytes where they lie (the
 * packs read any address), and one that reads the data itself gets a copy
 * of its own through one scratch buffer (rt_model_bind_weight_transient),
 * so an unaligned weight is not resident twice either, and binding
 * allocates no transient copy per weight. */
int rt_wsrc_add_mapped(rt_wsrc *w, const char *name, kiln_tensor *t, const void *bytes,
                       size_t len, kiln_status *st);
/* Keep a mapping (munmap'ed at the end) or an object (fr(obj) at the end)
 * alive as long as w. On failure the mapping / object is released at once. */
int rt_wsrc_keep_map(rt_wsrc *w, void *addr, size_t len, kiln_status *st);
int rt_wsrc_keep(rt_wsrc *w, void *obj, void (*fr)(void *), kiln_status *st);
int rt_wsrc_count(const rt_wsrc *w);
const char *rt_wsrc_name(const rt_wsrc *w, int i);         /* owned by w */
/* Weight i as a new tensor the caller frees: a view of w's (valid while w
 * lives) or a fresh copy of its file bytes. NULL with st filled. */
kiln_tensor *rt_wsrc_get(const rt_wsrc *w, int i, kiln_status *st);
/* Bind every weight of m that w has (by name), one after another (a file
 * weight's pages go before the next one is packed, so the peak while
 * binding stays near the model's own copies), and make m hold a reference
 * to w (m->wsrc). w NULL: nothing to do. 0 or -1 with st filled (the
 * weight named). */
int rt_wsrc_bind(kiln_model *m, rt_wsrc *w, kiln_status *st);
/* Bind weight `name` of m to t, whose data is valid only during the call
 * (a scratch buffer, or bytes in a file mapping at any address: not
 * aligned, they are only copied or packed, both with memcpy): where the model reads only its packed copy it keeps
 * that and t's shape, else a copy of t it owns (kiln_model_take_weight).
 * 0, or -1 with st filled. (model.c) */
int rt_model_bind_weight_transient(kiln_model *m, const char *name, const kiln_tensor *t,
                                   kiln_status *st);
/* The alignment weight `name` of m declares (its constant.external's align
 * attribute; 1 when none); -1 when m has no such weight. (model.c) */
int64_t rt_model_weight_align(const kiln_model *m, const char *name);
/* Give back the resident pages wholly inside [p, p + len) of a read-only
 * file mapping (madvise DONTNEED): touching them again reads the file, so
 * this saves memory and never changes data. NULL / 0 ok. */
void rt_map_drop(const void *p, size_t len);

#endif
