/* jit.h - what src/ sees of the JIT: lower a kernel graph (one op, or a
 * fused group) to an LLVM function, optimize it for the host (O3, host CPU
 * and features, prefer-vector-width=512 where AVX-512 exists), emit an
 * object, and link objects into one ORC LLJIT, one ResourceTracker per
 * object (so the caller can unload any kernel on its own).
 *
 * Kernel ABI (host):
 *   int32_t kernel(void *const *buffers, const int64_t *syms, int64_t part, int64_t nparts)
 *   buffers: the node's operands in order, then its results in order; each a
 *            dense row-major array of the value's dtype (bool as one byte 0/1).
 *            A node that defines a symbol from data (ir_node_data_sym:
 *            mo.nonzero) has one more, last: an int64_t the kernel stores
 *            the symbol's value in; syms holds its bound during the call
 *            (ir/shape.h), and the results are written for the value stored.
 *   syms:    the graph's symbol values, indexed like ir_graph.syms; the
 *            kernel computes every dim it needs from them at run time.
 *            Buffers never overlap: a result never shares memory with an
 *            operand or another result (kernels mark them noalias).
 *   part, nparts: 0 <= part < nparts; the call computes part `part` of the
 *            kernel's work split in nparts pieces (its outermost parallel
 *            loop cut in nparts near-equal ranges, jit_split_range). The
 *            nparts calls together compute what one call with (0, 1) does;
 *            they may run concurrently on different threads. A kernel whose
 *            lowering does not split does all its work in part 0 and returns
 *            0 at once for the others. (0, 1) is the plain serial call.
 *   returns: 0, or a JIT_KERR_* code for a data error (no partial promises
 *            about the outputs then).
 * Nodes without a kernel (mo.constant, mo.constant.external) have a NULL
 * entry: the runtime binds their data directly.
 *
 * Threads: jit/ creates none and takes no locks. A jit_engine must not be
 * used from two threads at once (the caller serializes compile and free);
 * kernels, once looked up, may run concurrently. */
#ifndef KILN_JIT_JIT_H
#define KILN_JIT_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

enum {
  JIT_KERR_OK = 0,
  JIT_KERR_INDEX = 1,   /* gather: index out of range */
  JIT_KERR_DIVZERO = 2, /* integer mod by zero */
  JIT_KERR_CUSTOM = 3,  /* a custom kernel returned non-zero */
  JIT_KERR_RANGE = 4,   /* range: step 0, or another length than the declared one */
  JIT_KERR_NOMEM = 5,   /* a kernel's workspace could not be allocated (conv2d) */
  JIT_KERR_ROI = 6,     /* roi_align: a region's sampling grid not finite or too large */
  JIT_KERR_MASKED = 7,  /* masked_scatter: the mask selects more elements than the updates */
  JIT_KERR_REPEAT = 8,  /* repeat_interleave: repeats do not fill the result's axis */
  JIT_KERR_SLICE = 9,   /* mutable.store.slice: the slice is outside the buffer */
};
const char *jit_kernel_error(int code); /* "index out of range", ... */

typedef int32_t (*jit_kernel_fn)(void *const *buffers, const int64_t *syms, int64_t part,
                                 int64_t nparts);

typedef struct jit_engine jit_engine;

/* Initializes LLVM's native target once (idempotent), detects the host and
 * creates the LLJIT. The engine is owned by the caller (jit_engine_free);
 * NULL with err filled on failure. */
jit_engine *jit_engine_new(char *err, size_t errlen);
void jit_engine_free(jit_engine *e); /* all code must be freed first; NULL ok */
/* "x86_64-pc-linux-gnu <cpu> <features>", owned by e. */
const char *jit_engine_target(const jit_engine *e);

/* ---- per-kernel compile units (the kernel cache's entries) ----
 * A kernel graph is the parsed text of ir_kernel_text: one kernel node whose
 * operands are the graph inputs and whose results are the outputs, or, for
 * a fused group (ir_graph_fuse), the group's nodes in order (elementwise
 * ops, at most one matmul first), computed as one kernel (jit/fused.c). It
 * compiles to an object file that defines one exported function `fn_name`
 * (the caller makes the name deterministic from the cache key, so the same
 * bytes load in any process; two objects with the same name must not be
 * loaded into one engine at once: "Duplicate definition").
 * Threads: jit_compile_object uses its own LLVMContext and TargetMachine and
 * only reads the engine's host description, so it may run on several
 * threads at once and concurrently with the calls below; jit_load_object
 * and jit_code_free drive the LLJIT and are serialized by the caller like
 * every other call. */
typedef struct jit_code jit_code;

/* What decides the generated code besides the kernel text, for cache keys
 * (owned by e, "" for NULL): the target triple, the host CPU name, its
 * features ("+avx2,+avx512f,..."), the compile options ("opt=O3 ...
 * prefer-vector-width=512"), and the version of the linked LLVM ("19.1.7"). */
const char *jit_engine_triple(const jit_engine *e);
const char *jit_engine_cpu(const jit_engine *e);
const char *jit_engine_features(const jit_engine *e);
/* The host's CPU name and feature list (LLVMGetHostCPUName / Features),
 * read once per process (jit/host.c: each query costs ~90 us of cpuid in
 * a VM); never freed, "" when LLVM gives none. */
const char *jit_host_cpu(void);
const char *jit_host_features(void);
/* "+feat" is a whole entry of the comma-separated feature list (NULL:
 * false): jit_features_have(jit_engine_features(e), "avx512f"). */
bool jit_features_have(const char *list, const char *feat);
const char *jit_engine_options(const jit_engine *e);
/* Make e's kernels call the half GEMM's generic entries (jit/matmul_half.c)
 * whatever the host has, and the host pipeline use the half GEMM for f16
 * and bf16 on any host (jit_engine_half_gemm), and add
 * "half-gemm=generic" to its options (so to its code keys). For tests of
 * that path (src/context.c: KILN_HALF_GEMM=generic); call it before any
 * compile. 0, or -1 on out-of-memory (e unchanged). */
int jit_engine_force_generic_half(jit_engine *e);
bool jit_engine_generic_half(const jit_engine *e);
/* Make e's softmax / layer_norm kernels link the row template
 * (kernels-templates/rows.c) instead of calling the prebuilt rows, and add
 * "rows=template" to its options. For tests of that fallback; call it
 * before any compile. 0, or -1 on out-of-memory (e unchanged). */
int jit_engine_force_template_rows(jit_engine *e);
/* The 8-bit GEMM's kernels (kernels-templates/gemm_int8.c: the generic
 * loops, gemm_int8_avx2.h, gemm_int8_vnni.h), slowest first. */
typedef enum jit_mmi_isa {
  JIT_MMI_GENERIC = 1,
  JIT_MMI_AVX2,       /* AVX2: widened to int16, vpmaddwd */
  JIT_MMI_AVXVNNI,    /* AVX-VNNI: 256-bit vpdpbusd */
  JIT_MMI_AVX512VNNI, /* AVX512-VNNI (with F and BW): 512-bit vpdpbusd */
} jit_mmi_isa;
/* "generic", "avx2", "avxvnni", "avx512vnni" ("?" for anything else) */
const char *jit_mmi_isa_name(jit_mmi_isa isa);
/* The kernel named so (jit_mmi_isa_name), 0 for an unknown name. */
jit_mmi_isa jit_mmi_isa_parse(const char *name);
/* The fastest kernel a target with these LLVM features ("+avx2,...") runs,
 * no faster than cap (0: no cap). */
jit_mmi_isa jit_mmi_isa_for(const char *features, jit_mmi_isa cap);
/* Let e's kernels pick no 8-bit GEMM kernel faster than cap (the host's
 * best when it is slower) and add "int8-gemm=<cap>" to its options (so to
 * its code keys). For tests and measurements of the slower kernels on a
 * faster host (src/context.c: KILN_INT8_GEMM); call it before any compile.
 * 0 (also when a cap is already set, or cap is not a kernel), or -1 on
 * out-of-memory (e unchanged). */
int jit_engine_cap_int8_gemm(jit_engine *e, jit_mmi_isa cap);
/* The 8-bit GEMM kernel e's kernels run (its features and cap). */
jit_mmi_isa jit_engine_int8_gemm(const jit_engine *e);
/* Whether e's host pipeline should let matmuls read f16 / bf16 (dt)
 * operands as they are (ir_graph_half_gemm): the host runs the half GEMM's
 * native entries for dt (AVX-512 with AVX512-BF16 for bf16, with F16C for
 * f16), or e was forced to the generic ones; elsewhere the casts and the
 * f32 GEMM are faster (jit/matmul_half.c). */
bool jit_engine_half_gemm(const jit_engine *e, ir_dtype dt);
const char *jit_llvm_version(void);

/* How hard a compile optimizes. FULL: O3 and aggressive code generation,
 * the code every cache keeps. QUICK: inlining, cleanup and the loop
 * vectorizer, then LLVM's fast instruction selector and register
 * allocator: about a fifth of FULL's compile time, for code that is about
 * as fast where a kernel calls the prebuilt GEMM and 2-20x slower in norms
 * and softmax: what a model runs while its FULL kernels build in the
 * background (src/tier_up.c). The options of each (cache keys) differ. */
typedef enum jit_tier { JIT_TIER_FULL = 0, JIT_TIER_QUICK = 1 } jit_tier;
const char *jit_engine_options_tier(const jit_engine *e, jit_tier tier);
/* The prebuilt GEMM the engine loaded (jit/template.h): the prefix of its
 * entries ("kiln_pre_v4_", "kiln_pre_v3_"), NULL when none. Kernels whose
 * GEMM sizes are symbolic call it, so their objects load only into an
 * engine that has it: jit_engine_options says "prebuilt-gemm=v4" then. */
const char *jit_engine_prebuilt(const jit_engine *e);
/* Whether e loaded the prebuilt f32 softmax / layer_norm rows
 * (jit/template.h); "prebuilt-rows=v4|v3" in its options then. */
bool jit_engine_has_prebuilt_rows(const jit_engine *e);
/* Whether node n's kernel normalizes its rows with the row template's
 * routine (jit/norm.c): mo.softmax / mo.logsoftmax of f32 along the last
 * axis, mo.layer_norm with every operand f32. With the engine's prebuilt
 * rows such a kernel runs the same code at both tiers (a fused
 * prologue's elementwise loop aside), so a FULL rebuild gains nothing. */
bool jit_node_calls_rows(const ir_node *n);
/* Whether the generic kernel (no symbol bound) of matmul node mm calls
 * the engine's prebuilt GEMM (jit_engine_prebuilt) where it has one: f32 /
 * f64 with M, N or K symbolic (jit/matmul.c; a variant binding them
 * inlines the template). Its QUICK and FULL kernels then run the same
 * GEMM. */
bool jit_node_calls_prebuilt_gemm(const ir_node *mm);
/* The prebuilt objects as loaded (embedded bytes, valid while the program
 * runs), for naming their functions to profilers: i = 0 the GEMM's, 1 the
 * direct conv's (v4 only), 2 the f32 rows'. 0 with *obj and *len set, -1 when the engine
 * loaded no object i. */
int jit_engine_prebuilt_object(const jit_engine *e, int i, const void **obj, size_t *len);
/* The address of a symbol the engine has loaded (a kernel's or the prebuilt
 * GEMM's), or 0. Drives the LLJIT: the caller holds the context's JIT lock. */
uint64_t jit_engine_lookup(jit_engine *e, const char *name);
/* Register every object loaded from now on with debuggers (gdb's JIT
 * interface, through ORC's debug-object plugin), so gdb and lldb name
 * kernels in backtraces. Call right after jit_engine_new. 0, or -1 with err
 * (the engine works as before). */
int jit_engine_enable_debugger(jit_engine *e, char *err, size_t errlen);

/* Lower, optimize and emit kg's kernel as `fn_name`. On success *obj is a
 * malloc'd object file of *len bytes (caller frees with free()) and 0 is
 * returned; -1 with err filled otherwise (*obj NULL). */
int jit_compile_object(jit_engine *e, const ir_graph *kg, const char *fn_name, void **obj,
                       size_t *len, char *err, size_t errlen);
/* The same at a chosen tier (jit_compile_object is JIT_TIER_FULL). */
int jit_compile_object_tier(jit_engine *e, const ir_graph *kg, const char *fn_name,
                            jit_tier tier, void **obj, size_t *len, char *err, size_t errlen);
/* Link a copy of obj[0..len) into e's LLJIT under its own ResourceTracker and
 * look up `fn_name` into *out. The code is owned by the caller (unload it
 * with jit_code_free; *out is valid until then). NULL with err filled on
 * failure (nothing left in the JIT). obj stays the caller's. */
jit_code *jit_load_object(jit_engine *e, const void *obj, size_t len, const char *fn_name,
                          jit_kernel_fn *out, char *err, size_t errlen);
/* Unload (ResourceTracker remove) and free. NULL ok. */
void jit_code_free(jit_engine *e, jit_code *c);

/* Prepacked GEMM operands (jit/matmul.c): the panel width
 * NR, in columns, of the layout kernels-templates/gemm.c reads a prepacked
 * B in, for element type dt on a target with (or without) avx512f; 0 for
 * types the GEMM template does not take. A mo.matmul with the attribute
 * kiln.packed_b = NR takes its B operand in that layout (src/prepack.c). */
int64_t jit_gemm_panel_width(bool avx512f, ir_dtype dt);
/* The same for mo.matmul.integer's ui8 / si8 B (jit/matmul_integer.c): 64
 * for the AVX2, AVX-VNNI and AVX512-VNNI kernels, which read the layout
 * kernels-templates/gemm_int8_vnni.h documents; 0 (no packing) for the
 * generic one. */
int64_t jit_mmi_panel_width(jit_mmi_isa isa);
/* The same for a mo.matmul with kiln.wide_result (f16 / bf16 operands,
 * jit/matmul_half.c): 64 on every target, whose kernels all read the layout
 * kernels-templates/gemm_half.c documents (bf16: k pairs interleaved; f16:
 * converted to f32). */
int64_t jit_hgemm_panel_width(void);
/* The half GEMM entry's suffix for dt on a target (LLVM's CPU name and
 * feature list, "+avx512bf16,..."): "" (the generic loops) without
 * AVX-512 and AVX512-BF16 (bf16) or F16C (f16), bf16's "_avx512dp"
 * (vdpbf16ps for every M) on AMD Zen 4 and later, else "_avx512"
 * (jit/matmul_half.c). */
const char *jit_hgemm_entry_suffix(const char *cpu, const char *features, ir_dtype dt);

/* For tests and `kiln compile`: the optimized LLVM IR text of one node's
 * kernel (malloc'd), NULL with err on failure. */
char *jit_node_llvm_ir(jit_engine *e, const ir_graph *g, int node_id, char *err, size_t errlen);

/* ---- custom kernel libraries (jit/custom.c) ----
 * A kernel library is LLVM bitcode (or LLVM IR text, turned into bitcode)
 * holding kernels of the kiln/kernel.h ABI. jit/ never reads files or runs
 * programs: src/ hands it bytes. */

/* One external function definition of a library, as jit_lib_inspect saw it. */
typedef struct jit_lib_fn {
  char *name;        /* malloc'd */
  char *type;        /* its LLVM type, "i32 (ptr)", malloc'd */
  bool abi_type;     /* the type is i32 (ptr): int32_t (const kiln_kernel_args *) */
  bool has_marker;   /* a constant kiln_abi_<name> = [3 x i32] exists */
  int32_t abi, nin, nout; /* the marker's values (when has_marker) */
} jit_lib_fn;

typedef struct jit_lib_info {
  void *bitcode; /* the library as bitcode (malloc'd), what jit_libs hands back */
  size_t len;
  int nfns;
  jit_lib_fn *fns; /* malloc'd */
} jit_lib_info;

/* Read data[0..len) (bitcode, by its magic, else LLVM IR text), verify the
 * module and list its external function definitions into *out (caller frees
 * with jit_lib_info_free). label names the library in errors. trusted:
 * bitcode kiln wrote itself after a verified compile (the C cache): read
 * lazily, not verified again, kept byte for byte (a warm load then costs
 * ~0.1 ms instead of ~0.5; a damaged file still fails to parse or to link,
 * with a message). Uses its own LLVMContext: any thread. 0, or -1 with err
 * filled ("lib.ll:3:7: error: ...", "lib.bc: not valid LLVM bitcode: ...")
 * and *out empty. */
int jit_lib_inspect(const void *data, size_t len, const char *label, bool trusted,
                    jit_lib_info *out, char *err, size_t errlen);
void jit_lib_info_free(jit_lib_info *info); /* the contents; NULL ok */

/* How the engine finds a library's bitcode when it lowers a mo.custom node:
 * find(ud, hash) with the node's kiln.library attribute; 0 with *data /
 * *len set (bytes that stay valid while the engine lives), or -1. Called
 * from compiling threads at once: find must be thread-safe. */
typedef struct jit_libs {
  void *ud;
  int (*find)(void *ud, const char *hash, const void **data, size_t *len);
} jit_libs;
/* Set the engine's resolver (copied). Call before any compile; libs NULL
 * clears it (mo.custom then fails to lower with a clear message). */
void jit_engine_set_libs(jit_engine *e, const jit_libs *libs);

/* Compile-phase timing: jit_compile_object calls fn(ud, phase, fn_name,
 * t0_ns, t1_ns) after each of its phases ("lower", "O3" or "quick passes",
 * "codegen"), on the compiling thread, with CLOCK_MONOTONIC times. jit/
 * does no I/O: src/ records them (trace.c). fn must be thread-safe. Set it
 * before any compile (copied); NULL clears it. */
typedef struct jit_phase_hook {
  void *ud;
  void (*fn)(void *ud, const char *phase, const char *fn_name, int64_t t0_ns, int64_t t1_ns);
} jit_phase_hook;
void jit_engine_set_phase_hook(jit_engine *e, const jit_phase_hook *hook);

#endif
