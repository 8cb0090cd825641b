/* kernel_lib.h - internal to src/: a context's custom kernel libraries
 * (kernel_lib.c, kernel_cc.c).
 *
 * A library comes from a C source (compiled by clang 19 to bitcode), LLVM IR
 * text (.ll) or bitcode (.bc), from a file or from memory. Each has a
 * content hash ("c-<32 hex>", "ll-...", "bc-..."): of the file's bytes for
 * .ll / .bc; for C, of the source, the flags, kiln/kernel.h and the identity
 * of the compiler (path, size, mtime). Model compile stamps it on every
 * mo.custom node (attribute kiln.library) before fusion, so it is part of
 * the kernel text (also of a fused kernel holding an elementwise custom
 * op) and of every cache key: an edited source is a new key, never stale
 * code.
 * Libraries are kept until the context is freed (compiles in flight may
 * still look one up); adding a library with the same name (path) as an
 * earlier one supersedes it for symbol lookup.
 * Thread-safe: a mutex guards the list; library contents never change once
 * added. */
#ifndef KILN_SRC_KERNEL_LIB_H
#define KILN_SRC_KERNEL_LIB_H

#include <stddef.h>

#include "rt.h"

/* include/kiln/kernel.h, embedded at build time (tools/embed_text.cmake). */
extern const char kiln_kernel_h_text[];
extern const size_t kiln_kernel_h_text_len;

typedef struct rt_kernel_libs rt_kernel_libs;

/* Where compiled C libraries are cached: dir/libs is read and written (dir
 * NULL: memory only), then the libs folders of the read-only seed layers
 * (kiln_context_add_cache_seed_dir) are read, in order. Strings borrowed. */
typedef struct rt_lib_dirs {
  const char *dir;
  const char *const *seeds;
  int nseeds;
} rt_lib_dirs;

/* libs/name from the first layer of d that holds it and passes the cache's
 * owner and mode rule (kc_tree_read), malloc'd with its length in *len;
 * NULL when none does (or d is NULL). */
char *rt_lib_dirs_read(const rt_lib_dirs *d, const char *name, size_t *len);

/* ctx's layers (context_libs.c): its disk cache directory and seed layers.
 * d->seeds is malloc'd when there are seeds (rt_lib_dirs_done frees it);
 * out of memory leaves them out, which only costs a compile. */
void rt_context_lib_dirs(const kiln_context *ctx, rt_lib_dirs *d);
void rt_lib_dirs_done(rt_lib_dirs *d);

rt_kernel_libs *rt_kernel_libs_new(void); /* NULL on out-of-memory */
void rt_kernel_libs_free(rt_kernel_libs *l); /* NULL ok */
/* The resolver jit_engine_set_libs takes (l must outlive the engine's use). */
jit_libs rt_kernel_libs_resolver(rt_kernel_libs *l);

/* Add a library. name: the file name or a label whose extension (.c, .ll,
 * .bc) says the kind; data[0..len) its bytes (borrowed); path: the file it
 * came from (NULL from memory: C diagnostics then name `name`). dirs: the
 * disk cache layers for compiled C (NULL: memory only). 0, or -1 with st
 * filled. */
int rt_kernel_libs_add(rt_kernel_libs *l, const char *name, const char *path, const void *data,
                       size_t len, const rt_lib_dirs *dirs, kiln_status *st);

/* Every mo.custom / mo.inplace_custom node of g (before fusion: not inside
 * fused bodies): find the library that defines its symbol, check the
 * kernel's signature (LLVM type i32 (ptr), a KILN_KERNEL marker of this
 * ABI, operand and result counts) and stamp kiln.library. An elementwise
 * kernel (marker flag KILN_KERNEL_ELEMENTWISE) is checked instead as a
 * scalar function: mo.custom with one result, no parameters, at most
 * KILN_ELEMENTWISE_MAX_INPUTS operands of f32 / f64 / bool / integer
 * dtypes, its LLVM type spelling them ("float (float, float)"), the result
 * shape the broadcast of the operands' (dims as expressions); it fits every
 * placement, and is also stamped kiln.elementwise = 1 (fusion takes such
 * nodes into elementwise chains, the lowerings call the function per
 * element). 0, or -1 with st filled (messages start with line:col). */
int rt_kernel_libs_bind(rt_kernel_libs *l, ir_graph *g, kiln_status *st);

int rt_kernel_libs_count(rt_kernel_libs *l);
/* Whether name's extension (.c, .ll, .bc) says a library kind. */
bool rt_kernel_lib_kind_known(const char *name);

/* ---- SIMT targets ----
 * A kernel declared with KILN_SIMT_KERNEL (marker flag KILN_KERNEL_ON_SIMT)
 * runs only on SIMT devices, one declared with KILN_KERNEL only on the CPU:
 * rt_kernel_libs_bind refuses the first, rt_kernel_libs_bind_simt the
 * second, each with a message saying where the kernel runs. */
typedef enum rt_lib_target {
  RT_LIB_EMU,    /* simt-emu: the host's bitcode */
  RT_LIB_NVPTX,  /* nvptx64-nvidia-cuda */
  RT_LIB_AMDGPU, /* amdgcn-amd-amdhsa */
  RT_LIB_NTARGETS
} rt_lib_target;

/* Bind g's custom nodes for SIMT target t (as rt_kernel_libs_bind, with
 * the placement above), then make sure each bound library has bitcode for
 * t: a C library is compiled for the GPU triple once (kept in memory, and
 * under the cache layers' libs by a hash that includes the target); .ll / .bc serve
 * as given (the lowering refuses a triple of another target). *res: the
 * resolver to give jit_simt_compile_graph_libs (valid while l lives).
 * 0, or -1 with st. */
int rt_kernel_libs_bind_simt(rt_kernel_libs *l, ir_graph *g, rt_lib_target t,
                             const rt_lib_dirs *dirs, jit_libs *res, kiln_status *st);

/* On: rt_kernel_libs_bind stamps a SIMT kernel kiln.simt_stub instead of
 * refusing it, and the CPU lowering makes it a kernel that never calls the
 * library (and fails if run). For a CPU model that only describes a graph
 * whose executes run on a device (kiln run --device). */
void rt_kernel_libs_set_simt_stubs(rt_kernel_libs *l, bool on);

/* ---- the C compiler (kernel_cc.c) ---- */
typedef struct rt_cc_job {
  const char *name;   /* the library's name (messages, and the file name clang sees) */
  const char *target; /* NULL: the host; else a GPU triple (nvptx64-nvidia-cuda,
                         amdgcn-amd-amdhsa): compiled freestanding with kiln's <math.h> */
  const char *path;   /* the source file, or NULL from memory */
  const void *src;    /* the source bytes (borrowed) */
  size_t len;
  char clang[4096];   /* the compiler found */
  char hash[40];      /* "c-<32 hex>": the library hash */
} rt_cc_job;

/* Find clang (KILN_CLANG, else clang-19 then clang on PATH) and compute the
 * library hash of job's source: XXH3-128 of the source, the flags,
 * kiln/kernel.h and the compiler's identity (resolved path, size, mtime; its
 * version is checked when it compiles). 0, or -1 with st filled (no clang:
 * the message names KILN_CLANG). */
int rt_cc_prepare(rt_cc_job *job, kiln_status *st);
/* The bitcode of job: from libs/<hex>.bc of the first cache layer of dirs
 * (NULL: none) holding it, else compiled by clang (version 19 checked) and
 * stored in dirs->dir when there is one. *bc malloc'd (caller frees). 0, or -1 with st filled
 * (clang's own diagnostics, file:line, when the source does not compile). */
int rt_cc_build(const rt_cc_job *job, const rt_lib_dirs *dirs, void **bc, size_t *bclen,
                kiln_status *st);

#endif
