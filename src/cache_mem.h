/* cache_mem.h - internal to src/: content-hash keys of kernels and the
 * per-context memory cache of compiled kernels (cache_mem.c).
 *
 * Key: XXH3-128 over a canonical byte string of the key parts (rt_key_parts:
 * the canonical kernel text of ir_kernel_text, target triple, CPU name, CPU
 * features, compile options, kiln version, LLVM version). The parts stay
 * available in readable form (the disk cache writes them into its entry
 * header, `kiln cache explain` compares them).
 *
 * Memory cache: a map key -> loaded kernel, one per context, shared by all
 * its models, safe to use from any number of threads. A miss compiles the
 * kernel text to an object (outside every lock, threads compile in
 * parallel), then links it into the context's LLJIT under the JIT lock; a
 * second thread asking for a key that is being compiled waits for it, so a
 * key is compiled once and loaded once per context (no duplicate
 * definitions). Entries are counted by the models and variants that use
 * them. An entry whose count drops to 0 stays loaded (the next model hits)
 * while the unreferenced entries' code fits the cache's bound
 * (rt_cache_mem_set_limit, bytes of object code, RT_CODE_LIMIT_DEFAULT);
 * past it, unreferenced entries are unloaded least recently released
 * first (their ResourceTracker removed under the JIT lock) and a later get
 * of their key produces them again (backing store, else compile).
 * Referenced entries are never unloaded, whatever the bound. Everything
 * left is unloaded by rt_cache_mem_free. The function name inside an entry's object is
 * "kiln_k_<32 hex digits of the key>", so object bytes are loadable in any
 * process: the payload a disk cache stores is exactly the object file.
 *
 * Ownership: rt_cache_mem_get hands out a reference (release it with
 * rt_cache_mem_release); the entry and its kernel function stay valid until
 * then, and not after (the entry may be unloaded and freed at once). */
#ifndef KILN_SRC_CACHE_MEM_H
#define KILN_SRC_CACHE_MEM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "jit/jit.h"

/* ---- keys ---- */
#include "cache_key.h"

typedef struct rt_key_parts {
  const char *kernel;       /* ir_kernel_text */
  const char *triple;       /* x86_64-pc-linux-gnu */
  const char *cpu;          /* znver5 */
  const char *features;     /* +avx2,+avx512f,... */
  const char *options;      /* opt=O3 codegen=aggressive ... */
  const char *kiln_version; /* "0.1.0+<hash of the code generator sources>" */
  const char *llvm_version; /* of the linked LLVM, 19.1.7 */
} rt_key_parts;

#define RT_KEY_NPARTS 7
/* Name of part i ("kernel_ir", "triple", "cpu", "features", "options",
 * "kiln_version", "llvm_version": the component names of cache_disk.h),
 * NULL out of range; and its value in p (NULL parts hash as ""). */
const char *rt_key_part_name(int i);
const char *rt_key_part(const rt_key_parts *p, int i);

/* The key of p: XXH3-128 of "kiln-kernel-key/1\n" followed, for each part
 * in the order above, by "<name>=<decimal byte length>:<bytes>\n". */
void rt_key_compute(const rt_key_parts *p, kc_key *out);
/* 32 lowercase hex digits (hi, then lo: XXH128's canonical order, as in
 * cache_disk.h's file names) and a NUL into out. */
void rt_key_hex(const kc_key *k, char out[33]);
/* The kiln version that goes into keys: version + build id (tools/build_id.cmake). */
const char *rt_kiln_version(void);

/* ---- the memory cache ---- */
typedef struct rt_cache_mem rt_cache_mem;
typedef struct rt_kentry rt_kentry;

typedef struct rt_cache_stats {
  uint64_t hits;      /* gets served by an entry already there (or compiled by another thread meanwhile) */
  uint64_t misses;    /* gets that had to produce the entry */
  uint64_t compiles;  /* kernels compiled (misses not served by the backing store) */
  uint64_t quick_compiles; /* of those, at the QUICK tier (rt_cache_mem_get_mode) */
  uint64_t backing_hits; /* misses served by the backing store's object */
  uint64_t remote_hits;  /* of those, objects from its remote tier (get returned 1) */
  double compile_ms;  /* wall time of those compiles (text parse, lowering, O3, emission) */
  double load_ms;     /* wall time of linking objects into the LLJIT */
  int entries;        /* entries live (loaded) */
  int idle_entries;   /* of those, entries no one references (unloadable) */
  uint64_t evicted;   /* entries unloaded by the bound (rt_cache_mem_set_limit) */
  uint64_t code_bytes; /* object bytes of the entries live */
  uint64_t idle_bytes; /* of those, the unreferenced entries' */
} rt_cache_stats;

/* Optional second level (the disk cache plugs in here): called outside the
 * cache's locks, from any thread. get: 0 and a malloc'd object (the caller
 * frees it) for key (1 instead when it came from the remote tier, not the
 * local disk: counted apart), or -1 on a miss; a stored object that fails to load is
 * treated as a miss and compiled. put: store a freshly compiled object
 * (borrowed for the call). Either may be NULL. */
typedef struct rt_cache_backing {
  void *ud;
  int (*get)(void *ud, const kc_key *key, const rt_key_parts *parts, void **obj,
             size_t *len);
  void (*put)(void *ud, const kc_key *key, const rt_key_parts *parts, const void *obj,
              size_t len);
} rt_cache_backing;

/* A cache that compiles with jit and loads into it while holding *jit_lock
 * (the context's lock, which serializes every LLJIT add / lookup / remove).
 * Both are borrowed and must outlive the cache. NULL on out-of-memory. */
rt_cache_mem *rt_cache_mem_new(jit_engine *jit, pthread_mutex_t *jit_lock);
/* Unload and free every entry (no references may be left). NULL ok. */
void rt_cache_mem_free(rt_cache_mem *c);

/* Bound on the object bytes of the unreferenced entries kept loaded: past
 * it, such entries are unloaded, least recently released first, until the
 * rest fits. 0 keeps none (an entry is unloaded when its last reference
 * goes); SIZE_MAX never unloads. Applies at once (takes the JIT lock when
 * something is unloaded: do not call it while holding that lock). Safe
 * while gets and releases run. A new cache has RT_CODE_LIMIT_DEFAULT. */
#define RT_CODE_LIMIT_DEFAULT ((size_t)8 << 20)
void rt_cache_mem_set_limit(rt_cache_mem *c, size_t max_idle_bytes);
size_t rt_cache_mem_limit(rt_cache_mem *c); /* 0 for NULL */
/* Set (or, with NULL, clear) the backing store. Safe while gets run: a get
 * in flight keeps the store it started with, so the old store's ud must
 * stay valid until those gets end (context.c keeps replaced stores until
 * the context is freed). */
void rt_cache_mem_set_backing(rt_cache_mem *c, const rt_cache_backing *b);

/* The key parts of a kernel text compiled by c (borrowed strings: valid while
 * c and kernel_text live), at the FULL tier; _tier: at a chosen one. */
void rt_cache_mem_key_parts(const rt_cache_mem *c, const char *kernel_text, rt_key_parts *out);
void rt_cache_mem_key_parts_tier(const rt_cache_mem *c, const char *kernel_text, jit_tier tier,
                                 rt_key_parts *out);

/* Get the kernel of kernel_text (an ir_kernel_text), compiling and loading it
 * on a miss. 0 with *entry (a reference) and *fn set, or -1 with err filled
 * (nothing held). */
int rt_cache_mem_get(rt_cache_mem *c, const char *kernel_text, rt_kentry **entry,
                     jit_kernel_fn *fn, char *err, size_t errlen);
/* rt_cache_mem_get that also says how this call got the entry (outcome:
 * RT_CACHE_HIT, RT_CACHE_BACKING_HIT or RT_CACHE_COMPILED) and the wall time
 * it spent producing it (ms: 0 for a hit). outcome and ms may be NULL. */
enum { RT_CACHE_HIT = 0, RT_CACHE_BACKING_HIT = 1, RT_CACHE_COMPILED = 2, RT_CACHE_MISS = 3 };
int rt_cache_mem_get_info(rt_cache_mem *c, const char *kernel_text, rt_kentry **entry,
                          jit_kernel_fn *fn, int *outcome, double *ms, char *err, size_t errlen);
/* How rt_cache_mem_get_mode gets an entry:
 *   RT_GET_FULL: the FULL tier's kernel, compiled on a miss (what
 *     rt_cache_mem_get_info does);
 *   RT_GET_FULL_CACHED: the FULL tier's only if the table or the backing
 *     store has it: on a miss, 0 with *entry and *fn NULL and outcome
 *     RT_CACHE_MISS (nothing compiled);
 *   RT_GET_QUICK: the QUICK tier's (jit.h), compiled on a miss; the backing
 *     store is neither read nor written (such code only serves until the
 *     FULL kernel is built, tier_up.c). */
typedef enum rt_get_mode { RT_GET_FULL, RT_GET_FULL_CACHED, RT_GET_QUICK } rt_get_mode;
int rt_cache_mem_get_mode(rt_cache_mem *c, const char *kernel_text, rt_get_mode mode,
                          rt_kentry **entry, jit_kernel_fn *fn, int *outcome, double *ms,
                          char *err, size_t errlen);
/* Drop a reference from rt_cache_mem_get. The entry stays cached while the
 * bound allows (see rt_cache_mem_set_limit); the caller must not use e or
 * its function afterwards. Unloading what the bound no longer allows takes
 * the JIT lock: do not call it while holding that lock. NULL ok. */
void rt_cache_mem_release(rt_cache_mem *c, rt_kentry *e);

/* Of an entry the caller holds a reference to: */
const kc_key *rt_kentry_key(const rt_kentry *e);
const char *rt_kentry_fn_name(const rt_kentry *e); /* "kiln_k_<hex>", owned by e */
int rt_kentry_refs(rt_cache_mem *c, const rt_kentry *e); /* models holding it (for tests) */

void rt_cache_mem_stats(rt_cache_mem *c, rt_cache_stats *out);
/* Where the cache reports what it does (both borrowed, outliving c; either
 * may be NULL): log gets a line per compile, disk load, eviction and
 * unload (log.h); trace gets hits and misses as instant events and spans
 * for compile, disk read, disk write and load (trace.h). KILN_PERF=1 (read
 * here) also writes each loaded kernel to /tmp/perf-PID.map (perf_map.h).
 * Call before any get. */
struct rt_log;
struct rt_trace;
void rt_cache_mem_set_obs(rt_cache_mem *c, struct rt_log *log, struct rt_trace *trace);

/* The memory cache of a context (context.c, owned by ctx), for the CLI and
 * tests. */
struct kiln_context;
rt_cache_mem *rt_context_cache(const struct kiln_context *ctx);

#endif
