/* rt.h - internal to src/: the structs behind the public handles and the
 * helpers the runtime files share (status filling, tensor construction,
 * model introspection for the CLI).
 *
 * Invariants:
 *   - a kiln_status message is NULL or a malloc'd string owned by the status.
 *   - a kiln_tensor's shape lives in the same allocation as the struct; data
 *     is freed with free() only when `owned`.
 *   - a kiln_model owns a verified clone of the graph it was compiled from;
 *     every ir_ pointer the model holds points into that clone's arena.
 * Functions here are not exported from libkiln.so; the CLI and tests link
 * the static library and may use them. */
#ifndef KILN_SRC_RT_H
#define KILN_SRC_RT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "kiln/kiln.h"
#include "ir/shape.h"
#include "ir/ir.h"
#include "jit/jit.h"
#include "log.h"
#include "name_map.h"
#include "trace.h"

#define RT_ALIGN 64

struct kiln_status {
  kiln_code code;
  char *msg; /* malloc'd, or NULL */
};

struct kiln_tensor {
  kiln_dtype dtype;
  int rank;
  bool owned;   /* data (host) or devptr (device) is freed with the tensor */
  void *data;   /* host memory; NULL for a tensor on a device */
  struct kiln_device *device; /* NULL: host memory; else the device devptr lives on */
  uint64_t devptr;            /* kiln_devptr, when device is set */
  size_t nbytes;
  int64_t numel;
  int64_t shape[]; /* rank entries */
};

struct kiln_graph {
  ir_graph *ir;
  const char *origin;   /* given to each node added (ir_node.origin): an importer's source
                           node while it is being imported, else NULL; borrowed */
  struct rt_wsrc *wsrc; /* weights read with the graph (ONNX import), bound at
                           compile; one reference, or NULL (weight_source.h) */
};

struct kiln_context {
  jit_engine *jit;
  pthread_mutex_t lock; /* serializes every use of jit (compile and free) */
  /* ---- kernel cache (context.c, cache_mem.c) ---- */
  struct rt_cache_mem *kcache; /* compiled kernels by content key, shared by all models */
  struct kc_disk *disk;        /* its second level on disk, or NULL (cache_backing.c) */
  char disk_status[1024];      /* "disk cache: DIR", "disk cache off (KILN_CACHE)", ... */
  char disk_warning[1024];     /* a setting that did not work, or "" (cache_backing.c) */
  /* ---- variants (variants.c) ---- */
  atomic_int specialize; /* kiln_specialize_policy of the context's models (0 = off) */
  atomic_int busy;       /* executes running on the context's models now (model.c) */
  atomic_uint execs;     /* executes started on them, ever (model.c): a steady stream */
  struct rt_spec_ctx *spec;      /* compile queue and thread, counters, defaults (spec: variants.c) */
  atomic_int tier_up_min; /* kiln_context_set_tier_up's threshold, 0: off (tier_up.c) */
  atomic_int quick_live;  /* kernels of live models still running QUICK code (tier_up.c) */
  struct kc_disk **disk_retired; /* stores replaced by kiln_context_set_cache_dir, closed at free */
  int ndisk_retired;
  /* ---- remote cache (context_remote.c, cache_remote.h) ---- */
  struct kr_remote *remote;    /* the fleet cache after the disk, or NULL */
  struct rt_tiers *tiers;      /* every disk+remote chain attached, newest first; freed at free */
  struct kr_remote **remote_retired; /* replaced remotes, freed at free */
  int nremote_retired;
  char remote_status[640];     /* "remote cache: ...", "remote cache off", ... */
  /* ---- threads (pool.c, pool.h) ---- */
  struct rt_pool *pool;  /* persistent workers, or NULL (one thread) */
  struct rt_bg_place *place; /* background threads kept off the executing CPUs (bg_place.h) */
  /* ---- custom kernel libraries (kernel_lib.c); the JIT's resolver points here ---- */
  struct rt_kernel_libs *libs;
  /* ---- observing (log.c, trace.c, observe.c) ----
   * watch: nonzero while anything wants each kernel call timed (a trace is
   * open, the context or a model profiles); rt_kernel_call tests only it.
   * watch_trace / profile_all: the context's share of it (0 or 1). */
  rt_log log;
  rt_trace *trace;
  atomic_int watch;
  atomic_int watch_trace;
  atomic_int profile_all;
  /* ---- lifetime (model.c, context.c) ---- */
  atomic_int models; /* live models made for this context: kiln_context_free refuses while > 0 */
};

/* An input, output or weight as the model reports it. */
typedef struct rt_port {
  const char *name;   /* owned by the model (points into the clone's arena) */
  ir_type type;       /* points into the clone's arena */
  char **dim_text;    /* rank malloc'd strings */
  int64_t *dim_static;/* rank entries; -1 when not constant */
} rt_port;

typedef struct rt_weight {
  rt_port port;
  const kiln_tensor *bound; /* borrowed (or `owned`); NULL until bound */
  kiln_tensor *owned;       /* kiln_model_take_weight's: freed at the next bind and with m */
  int64_t align;            /* the bound data's alignment in bytes: the largest `align` of its
                               mo.constant.external nodes (1: any) */
} rt_weight;

struct kiln_model {
  kiln_context *ctx;
  const struct rt_backend *be; /* how this model's target runs code (backend.h) */
  struct kiln_device *device;  /* the device it runs on; NULL: the host */
  struct rt_dm *dm;            /* the simt backend's state (device_model.c), or NULL */
  kiln_context *own_ctx;       /* a context made for this model alone, freed with it */
  ir_graph *g;       /* verified clone, owned */
  jit_kernel_fn *kernels; /* g->nnodes entries, NULL for source nodes */
  double compile_ms;
  int ninputs, noutputs, nweights;
  rt_port *inputs, *outputs;
  rt_weight *weights;
  int *weight_of_node;   /* g->nnodes entries: weight index, or -1 */
  rt_name_map weight_index; /* weight name -> index (keys: the weights' port names) */
  void **const_data;     /* g->nnodes entries: data of mo.constant nodes (arena or owned) */
  bool *const_owned;     /* g->nnodes entries: const_data[i] was malloc'd (splat expanded) */
  bool data_dims;        /* a node sets a dim from data (ir_node_data_sym): execute.c */
  bool reads_dims;       /* dims read from input data before it runs (ir_graph_reads_dims) */
  int *solve_nodes;      /* the nodes solving visits (ir_solve_nodes), nsolve of them */
  int nsolve;
  int max_node_bufs;     /* largest nin + nout (+ 1: a data symbol's slot) over the nodes */
  /* ---- kernels (model.c, pipeline.c) ----
   * Each kernel node's code is an entry of ctx->kcache (kentries[i], one
   * reference, released at free). The kernel's
   * symbols are its own (ir_kernel_text): kernel symbol j is graph symbol
   * ksym_map[i][j], j < knsyms[i]; ksym_map[i] is NULL when that is the
   * identity (the graph's values are passed as they are). */
  struct rt_kentry **kentries; /* g->nnodes entries, NULL for source nodes */
  int **ksym_map;              /* g->nnodes entries */
  int *knsyms;                 /* g->nnodes entries */
  /* ---- quick kernels first (tier_up.c) ----
   * kquick[i]: kentries[i] was built at the QUICK tier; kfull[i]: the FULL
   * entry that replaced it in kernels[i] (NULL until built; written by the
   * compile thread, released at free; the array NULL when nothing was
   * quick); quick_built / quick_live: such nodes, and those of them still
   * running quick code. */
  bool *kquick;
  struct rt_kentry **kfull;
  int *korder;     /* quick_built nodes: the order of their rebuilds (tier_up.c) */
  int quick_built;
  int quick_urgent; /* korder[0 .. quick_urgent): rebuilt at once; the rest when idle */
  int quick_next;   /* the next korder entry to rebuild (the compile thread's) */
  atomic_int quick_live;
  /* memory planner (plan.c, plan.h): the lifetimes and the last few plans,
   * built on the first execute in g's arena; plan_lock is a spin lock (0 =
   * free) guarding them; plan_peak is the largest arena an execute used. */
  _Atomic(struct rt_plan_cache *) plan;
  atomic_int plan_lock;
  atomic_size_t plan_peak;
  /* alias[v] (g->nvalues entries, rt_plan_aliases): the value whose buffer
   * value v shares, for the result of a reshape-like node that runs no
   * kernel; -1 for every other value. NULL when no value is an alias. */
  int *alias;
  /* ---- variants (variants.c, variants.h) ---- */
  struct rt_variants *variants; /* shape-specialized variants, owned */
  atomic_int specialize;        /* 0: the context's policy, else kiln_specialize_policy + 1 */
  /* ---- threads (model.c, pool.c) ---- */
  int64_t *work; /* g->nnodes entries: rt_node_work with static dims, -1 when symbolic */
  /* ---- prepacked GEMM operands (prepack.c, prepack.h) ----
   * nprepack sources (weights, constants) with their packed copies;
   * prepack_use: g->nnodes entries (the operand that reads a packed copy,
   * and which), or NULL when no node does. */
  struct rt_prepack *prepack;
  int nprepack;
  struct rt_prepack_use *prepack_use;
  /* ---- captures (capture.c, capture.h): a list under a spin lock (0 = free) ---- */
  struct rt_capture *captures;
  atomic_int capture_lock;
  /* ---- execute (execute.c) ---- */
  _Atomic(void *) exec_scratch; /* one execute's scratch block kept for the next, or NULL */
  _Atomic(char *) exec_arena;   /* one execute's arena block kept for the next, or NULL */
  _Atomic size_t exec_arena_taken; /* the capacity of the block the last execute took (a
                                     * reserve no larger waits for it to come back) */
  struct rt_wsrc *wsrc; /* the graph's weight source, bound at compile; a reference, or NULL */
  /* ---- profile (observe.c): per-node counters, NULL for device models ---- */
  struct rt_profile *prof;
  /* ---- lifetime (model.c) ----
   * life counts the executes in flight on m (kiln_model_execute, _capture,
   * _replay, _verify_replay), plus RT_LIFE_FREEING once kiln_model_free
   * has begun; an execute that finds that bit refuses to run. The execute
   * that leaves life at exactly RT_LIFE_FREEING sets drained and wakes the
   * free (life_lock, life_cv), which frees nothing before then. */
  atomic_uint life;
  pthread_mutex_t life_lock;
  pthread_cond_t life_cv;
  bool drained;
  /* ---- control flow (control.c): the regions of a graph with mo.if,
   * mo.while or mo.call, run by the flow backend; NULL otherwise ---- */
  struct rt_region *flow;
};
#define RT_LIFE_FREEING 0x80000000u

/* Run node `node`'s kernel on args (operands then results) with the graph's
 * symbol values; returns the kernel's status (model.c). The one place that
 * knows how a model's kernels are called. */
int32_t rt_model_run_kernel(const kiln_model *m, int node, void *const *args, const int64_t *syms);


/* ---- control flow (control.c) ---- */
/* Whether g has control nodes, so that kiln_model_compile (and a device
 * model's compile) prepares it with rt_flow_compile: m has its clone, ports
 * and device (NULL: the host); this compiles every region, on m->device
 * with target_ctx's caches when it is set (0, or -1 with st filled;
 * kiln_model_free frees what it made). */
bool rt_flow_wanted(const ir_graph *g);
int rt_flow_compile(kiln_model *m, kiln_context *target_ctx, kiln_status *st);
/* A weight port of m that no node of m's graph declares (model.c): the flow
 * backend's, standing for its regions' weights. name and t stay owned by
 * the caller and must outlive m's ports. 0, or -1 with st. */
int rt_model_add_weight(kiln_model *m, const char *name, const ir_type *t, int64_t align,
                        kiln_status *st);

/* ---- memory planner (plan.c) ---- */
/* The largest arena of intermediates (bytes) any execute of m has used so
 * far: the peak for the bindings it ran with; 0 before the first execute or
 * when the model has no intermediates. */
size_t rt_model_peak_bytes(const kiln_model *m);

/* ---- clocks ---- */
/* The monotonic clock in nanoseconds and in milliseconds. */
static inline int64_t rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline double rt_now_ms(void) { return (double)rt_now_ns() / 1e6; }

/* ---- status (status.c) ---- */
/* Set st (may be NULL) to code + formatted message; returns -1 so callers can
 * `return rt_err(...)`. */
int rt_err(kiln_status *st, kiln_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rt_verr(kiln_status *st, kiln_code code, const char *fmt, va_list ap);
/* An ir_diag as "FILE:LINE:COL: message" ("LINE:COL: message" without a
 * file, just the message when the diag has no line). */
int rt_err_diag(kiln_status *st, kiln_code code, const char *filename, const ir_diag *d);
/* Set st to ok (when not NULL). */
void rt_ok(kiln_status *st);

/* ---- tensors (tensor.c) ---- */
/* Allocate size bytes aligned to RT_ALIGN (at least RT_ALIGN bytes, so a
 * zero-size tensor still has a valid, unique pointer). NULL on failure. */
void *rt_aligned_alloc(size_t size);
/* The same for a large block written once and read often (a packed
 * weight): from RT_HUGE_BYTES on, aligned to that size and, where the
 * kernel allows it (transparent huge pages in "madvise" mode), backed by
 * huge pages over its whole multiples of RT_HUGE_BYTES, so filling it
 * takes one page fault per 2 MiB instead of 512 and reading it fewer TLB
 * misses; the tail stays in small pages (no memory beyond size is
 * touched). Freed with free(). NULL on failure. */
void *rt_aligned_alloc_large(size_t size);
#define RT_HUGE_BYTES ((size_t)2 << 20)
/* numel * elem size with overflow and negative-dim checks. Returns 0 or -1
 * with st filled. */
int rt_shape_bytes(kiln_dtype dt, int rank, const int64_t *shape, int64_t *numel, size_t *nbytes,
                   kiln_status *st);
/* Owned tensor with uninitialized (not zeroed) data. */
kiln_tensor *rt_tensor_alloc(kiln_dtype dtype, int rank, const int64_t *shape, kiln_status *st);
/* "simt-emu", "cuda:0": the label of the device t lives on ("the host"
 * for a host tensor); device_tensor.c. */
const char *rt_tensor_device_label(const kiln_tensor *t);
/* path opened for reading (O_NONBLOCK, then fstat) if it is a regular file;
 * NULL with st naming it (what, else path) otherwise: a FIFO, socket or
 * device is refused before any read could block. */
FILE *rt_fopen_regular(const char *path, const char *what, kiln_status *st);
/* The whole file at path, malloc'd with a NUL after the last byte (*len
 * does not count it); NULL with st filled on failure: NOT_FOUND, IO (cannot
 * open, read error), INVALID_ARGUMENT (not a regular file), OUT_OF_MEMORY.
 * Messages start with `what` (e.g. "kernel library 'k.c'"), the path when
 * NULL (file_read.c). */
char *rt_read_file(const char *path, const char *what, size_t *len, kiln_status *st);
/* A tensor header with no memory (data NULL, not owned, on the host): the
 * shape checked and copied. NULL with st filled on a bad shape or OOM. */
kiln_tensor *rt_tensor_header(kiln_dtype dtype, int rank, const int64_t *shape, kiln_status *st);

/* ---- models (model.c) ---- */
/* Symbols of the model's graph, for the CLI's --dim. */
int rt_model_num_symbols(const kiln_model *m);
const char *rt_model_symbol_name(const kiln_model *m, int i);
/* Evaluate the shape of input i (is_weight false) or weight i (true) with the
 * symbol values `syms[nsyms]` where known[k] says which are bound. An unbound
 * symbol the shape needs is an error naming it, with its index in *missing
 * (when not NULL). shape has the port's rank entries. */
int rt_model_port_shape(const kiln_model *m, bool is_weight, int i, const int64_t *syms,
                        const bool *known, int64_t *shape, int *missing, kiln_status *st);

/* The remote cache of a context (context_remote.c). rt_context_reattach:
 * plug the current disk store and remote under the memory cache (0, or -1
 * out of memory); _open: from KILN_CACHE_REMOTE at context creation;
 * _free: at context free; _counter: a KILN_COUNTER_REMOTE_* value. */
int rt_context_reattach(kiln_context *ctx);
void rt_context_remote_open(kiln_context *ctx);
void rt_context_remote_free(kiln_context *ctx);
double rt_context_remote_counter(const kiln_context *ctx, kiln_counter c);

#endif
