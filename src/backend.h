/* backend.h - internal to src/: what a model's backend does.
 *
 * One kiln_model type serves every target: model.c owns what all models
 * share (the prepared graph, ports and weights, the specialization policy
 * and variant table of variants.c, compile time), and a backend table says
 * how this target gets, runs and frees code:
 *
 *   host (model.c, execute.c, capture.c): kernels from the context's JIT,
 *        run on the context's thread pool;
 *   simt (device_model.c): SIMT kernels loaded as modules on a kiln_device
 *        (simt-emu, cuda:N, hip:N), launched over a device memory plan.
 *
 * Both take their code through pipeline.c, so a specialized variant is the
 * same for every backend: per node, the code of the node's kernel text with
 * the variant's symbols bound (rt_code), fetched by compile_bound and freed
 * by code_free. */
#ifndef KILN_SRC_BACKEND_H
#define KILN_SRC_BACKEND_H

#include "pipeline.h"
#include "rt.h"

/* The code of one kernel of one node. fn: a jit_kernel_fn (host) or the
 * device module's function; handle: the memory-cache entry holding it
 * (host, one reference) or the module (device); the kernel reads its own
 * symbols: kernel symbol j is graph symbol sym_map[j], j < nsyms (sym_map
 * NULL: the identity on the host, none on a device when nsyms is 0). */
typedef struct rt_code {
  void *fn;
  void *handle;
  int *sym_map;
  int nsyms;
} rt_code;

typedef struct rt_dm rt_dm; /* the simt backend's state (device_model.c) */

typedef struct rt_backend {
  /* Symbols node i's generic kernel reads: 0 when it is static (the
   * generic kernel then serves every variant), -1 when i has no kernel. */
  int (*node_syms)(const kiln_model *m, int node);
  /* The code of node i with the symbols b binds (a specialized variant's
   * kernel); *counter is how it was got (KILN_COUNTER_COMPILES, _DISK_HITS,
   * _KERNEL_HITS), *ms what that took. 0, or -1 with st. Runs on the
   * context's compile thread too, concurrently with executes. */
  int (*compile_bound)(kiln_model *m, int node, const rt_binding *b, rt_code *c,
                       kiln_counter *counter, double *ms, kiln_status *st);
  void (*code_free)(kiln_model *m, rt_code *c); /* zeroed c ok */
  /* Bind weight w (checked against the port by model.c). */
  int (*bind_weight)(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st);
  int (*execute)(kiln_model *m, kiln_tensor *const *inputs, int ninputs, kiln_tensor **outputs,
                 int noutputs, kiln_status *st);
  int (*capture)(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                 kiln_tensor **outputs, int noutputs, kiln_status *st);
  int (*replay)(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                kiln_tensor **outputs, int noutputs, kiln_status *st);
  int (*verify_replay)(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                       kiln_status *st);
  int (*release)(kiln_model *m, uint64_t key, kiln_status *st);
  /* Free the backend's state, first in kiln_model_free: everything that
   * holds variant references (captures, plans) goes here; code_free must
   * still work afterwards (variants are freed next). */
  void (*free)(kiln_model *m);
} rt_backend;

extern const rt_backend rt_backend_host; /* model.c */
extern const rt_backend rt_backend_simt; /* device_model.c */

/* ---- the host backend's entries in other files ---- */
int rt_host_capture(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                    kiln_tensor **outputs, int noutputs, kiln_status *st);
int rt_host_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                   kiln_tensor **outputs, int noutputs, kiln_status *st);
int rt_host_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                          kiln_status *st);
int rt_host_release(kiln_model *m, uint64_t key, kiln_status *st);
int rt_host_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs, kiln_tensor **outputs,
                    int noutputs, kiln_status *st);

/* ---- the simt backend (device_model.c) ----
 * A device model is built in two steps around model.c's ports: prepare
 * m->g (the caller's clone) for device d's SIMT target and check its
 * placement (target_ctx: the context whose disk cache and kernel libraries
 * the kernels use, or NULL for none), then load every kernel and copy the
 * constants (m->const_data) to the device. 0, or -1 with st. */
int rt_dm_prepare(kiln_model *m, kiln_device *d, kiln_context *target_ctx, kiln_status *st);
int rt_dm_load(kiln_model *m, kiln_status *st);

/* A model of g on SIMT device d (model.c): ctx its context; own_ctx a
 * context made for it alone (freed with it, also on failure), or NULL;
 * target_ctx as for rt_dm_prepare. NULL with st on error. */
kiln_model *rt_model_compile_device(kiln_context *ctx, kiln_context *own_ctx, kiln_device *d,
                                    kiln_context *target_ctx, const kiln_graph *g,
                                    kiln_status *st);

#endif
