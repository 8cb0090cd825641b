/* pipeline.h - internal to src/: the two steps every user of the compiler
 * takes, each owned here and nowhere else.
 *
 *   rt_pipeline_prepare   a graph for a target: verify, bind the custom
 *                         kernels, fold transposes into the matmuls that
 *                         read them, fuse, mark the GEMM operands packed
 *                         once (host);
 *   rt_pipeline_kernel_*  node i of a prepared graph under a binding of
 *                         its symbols: which nodes have a kernel, the
 *                         kernel's text and key, its code (host: memory
 *                         cache, then disk, then compile, loaded into the
 *                         context's JIT; SIMT: disk, then compile and link).
 *
 * The CPU model (model.c), its specialized variants (variants.c), device
 * models (device_model.c), `kiln compile` and `kiln cache warm / explain`
 * go through these, so the kernels they name, key and compile agree: `kiln
 * compile --emit llvm` prints the kernels `kiln run` runs.
 *
 * A target is the host JIT of a context or a SIMT target (simt-emu, PTX,
 * AMDGCN); a SIMT target's context is optional (it gives the disk cache and
 * the kernel libraries). */
#ifndef KILN_SRC_PIPELINE_H
#define KILN_SRC_PIPELINE_H

#include "../jit/simt.h"
#include "cache_mem.h"
#include "kernel_lib.h"
#include "rt.h"

typedef enum rt_target_kind { RT_TARGET_HOST, RT_TARGET_SIMT } rt_target_kind;

typedef struct rt_target {
  rt_target_kind kind;
  kiln_context *ctx;    /* host: required; SIMT: NULL means no disk cache, no custom ops */
  jit_simt_target simt; /* SIMT: the target */
  char label[64];       /* "host", "simt-emu", "cuda:0": for messages */
  jit_libs libs;        /* SIMT: the custom kernels built for the target (after prepare) */
  bool has_libs;
  char math_id[1100];   /* SIMT: the device math library's identity, for code keys */
} rt_target;

/* The host target of ctx (borrowed: ctx outlives t). */
void rt_target_host(rt_target *t, kiln_context *ctx);
/* The SIMT target named simt_name ("simt-emu", "sm_80", "gfx90a", ...),
 * label for messages, ctx optional (borrowed). 0, or -1 with st. */
int rt_target_simt(rt_target *t, kiln_context *ctx, const char *simt_name, const char *label,
                   kiln_status *st);

/* A binding of a graph's symbols: vals NULL is the generic binding (every
 * dim read at run time); else vals[s] is symbol s's value where bind is
 * NULL or bind[s]; the other symbols stay run-time dims. */
typedef struct rt_binding {
  const int64_t *vals;
  const bool *bind;
} rt_binding;

/* Prepare g (a clone the caller owns) for t: verify; bind g's custom nodes
 * to the kernel libraries of t's context (SIMT: built for t); fold
 * transposes into matmuls; fuse unless KILN_FUSE is 0 / off / no / false;
 * host: mark the matmuls that
 * read a constant B (prepack.c). filename (may be NULL) locates verify
 * errors. 0, or -1 with st. */
int rt_pipeline_prepare(ir_graph *g, rt_target *t, const char *filename, kiln_status *st);
/* As rt_pipeline_prepare for the host with libs instead of the context's
 * libraries (NULL: no custom node is bound). */
int rt_pipeline_prepare_libs(ir_graph *g, const kiln_context *ctx, rt_kernel_libs *libs,
                             const char *filename, kiln_status *st);

/* Whether node n of prepared g gets a kernel: not a source (constant,
 * weight), not a reshape-like node whose result shares its operand's
 * memory (plan.c: rt_node_is_alias), not a buffer op (buffers.h). */
bool rt_pipeline_has_kernel(const ir_graph *g, const ir_node *n);
/* Whether node i's host kernel gains from a bound shape. An f32 / f64
 * GEMM (fused or not) calls the prebuilt GEMM kernel whatever its dims: a
 * specialized one runs the same code (measured: 1.00-1.04x) after a long
 * compile, so specialized variants, `kiln compile --dim` and `kiln cache
 * warm --dim` keep its generic kernel. */
bool rt_pipeline_host_specializes(const ir_graph *g, int i);

/* "graph @g, node 3 (mo.matmul+mo.add -> %y)" into buf. */
const char *rt_pipeline_node_desc(const ir_graph *g, int i, char *buf, size_t cap);

/* Kernels read at most this many symbols of their own. */
#define RT_KERNEL_MAX_SYMS 64

/* Node i's canonical kernel text under b (NULL: generic), malloc'd; map
 * (room for g->nsyms entries, may be NULL) and *nks get the kernel's own
 * symbols: kernel symbol j is graph symbol map[j], j < *nks. NULL with st
 * filled (out of memory, a negative dim under b, too many symbols). */
char *rt_pipeline_kernel_text(const ir_graph *g, int i, const rt_binding *b, int *map, int *nks,
                              kiln_status *st);

/* The cache key of a host kernel text under t (parts borrow from t's
 * context and from text). */
void rt_pipeline_host_key(const rt_target *t, const char *text, rt_key_parts *parts, kc_key *key);
/* The function name a host kernel's object defines: "kiln_k_<32 hex>". */
void rt_pipeline_host_fn_name(const kc_key *key, char out[48]);

/* A host kernel: a reference to its memory-cache entry (release it with
 * rt_cache_mem_release on the context's cache), the function, the kernel's
 * symbol map (malloc'd, NULL when it is the identity or nsyms is 0), how
 * the call got it (RT_CACHE_*) and the time that took. */
typedef struct rt_host_kernel {
  rt_kentry *entry;
  jit_kernel_fn fn;
  int *sym_map;
  int nsyms;
  int outcome;
  double ms;
} rt_host_kernel;

/* Node i of prepared g under b for host target t. 0, or -1 with st naming
 * the graph, node and op (*out zeroed). Safe for different nodes of one
 * graph at once. */
int rt_pipeline_compile_host(const rt_target *t, const ir_graph *g, int i, const rt_binding *b,
                             rt_host_kernel *out, kiln_status *st);
/* The same through rt_cache_mem_get_mode (cache_mem.h): with
 * RT_GET_FULL_CACHED a kernel no cache holds gives 0 with out->fn NULL and
 * out->outcome RT_CACHE_MISS. */
int rt_pipeline_compile_host_mode(const rt_target *t, const ir_graph *g, int i,
                                  const rt_binding *b, rt_get_mode mode, rt_host_kernel *out,
                                  kiln_status *st);

/* A SIMT kernel's code: image (malloc'd: PTX text, a linked code object,
 * an emulator object), its function's name, the kernel's symbol map
 * (malloc'd, nsyms entries, NULL when nsyms is 0), and whether it came from
 * the disk cache. Free with rt_simt_code_free. */
typedef struct rt_simt_code {
  void *image;
  size_t len;
  char name[64];
  int *sym_map;
  int nsyms;
  bool cached;
} rt_simt_code;

/* Node i of prepared g under b for SIMT target t: from t's context's disk
 * cache, else compiled (and linked for AMDGPU) and stored there. 0, or -1
 * with st (*out zeroed). */
int rt_pipeline_compile_simt(const rt_target *t, const ir_graph *g, int i, const rt_binding *b,
                             rt_simt_code *out, kiln_status *st);
void rt_simt_code_free(rt_simt_code *c); /* the contents; NULL ok */

#endif
