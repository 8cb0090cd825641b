/* engine.c - the host JIT (jit.h): detect the host and create the LLJIT;
 * jit_compile_object lowers a one-node kernel graph, or a multi-node one
 * (the text of a mo.fused node: lowered as one fused kernel, jit/fused.c),
 * into its own LLVMContext, verifies it, optimizes it for the host CPU (O3,
 * or a few cleanup passes for the quick tier, jit.h: jit_tier) with a
 * TargetMachine of that tier it holds alone (one spare per tier is kept
 * between calls) and returns the object bytes; jit_load_object links such bytes into the
 * LLJIT under their own ResourceTracker and looks the kernel up;
 * jit_code_free removes that tracker (the kernel is unloaded).
 *
 * Assumes: a verified graph; the caller serializes every call that drives
 * the LLJIT or the engine's TargetMachine (load, free, jit_node_llvm_ir),
 * neither being safe to share between threads; jit_compile_object reads
 * only the engine's immutable host description and may run on any number
 * of threads at once.
 * Guarantees: every failure returns NULL / -1 with a message (which node,
 * which stage) and leaves nothing behind in the JIT; nothing here aborts on
 * bad input. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/LLJITUtils.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "jit.h"
#include "libcalls.h"
#include "lower.h"
#include "template.h"

struct jit_engine {
  char *triple, *cpu, *features; /* LLVM-allocated (LLVMDisposeMessage) */
  char *layout;                  /* data layout string (LLVMDisposeMessage) */
  char *target;                  /* "triple cpu features", malloc'd */
  bool avx512;
  bool generic_half; /* jit_engine_force_generic_half: the half GEMM's generic entries */
  jit_mmi_isa int8_cap; /* jit_engine_cap_int8_gemm: the best 8-bit GEMM kernel; 0: none */
  char *options;                 /* what else decides the code (jit_engine_options), malloc'd */
  char *options_quick;           /* the same for JIT_TIER_QUICK, malloc'd */
  LLVMTargetRef llvm_target;     /* registry entry: immutable, shared by every thread */
  LLVMTargetMachineRef tm;
  /* one TargetMachine kept between jit_compile_object calls (a fresh one
   * costs ~0.6 ms more on its first kernel); taken and returned with atomic
   * exchanges, so a thread always has exclusive use of the one it holds */
  _Atomic(LLVMTargetMachineRef) spare_tm[2]; /* per jit_tier */
  LLVMOrcLLJITRef jit;
  LLVMOrcJITDylibRef jd;
  char session_err[512];       /* last error ORC reported asynchronously */
  jit_libs libs;               /* custom kernel libraries' resolver (find NULL: none) */
  jit_phase_hook phase;        /* compile-phase timing (fn NULL: none) */
  const char *prebuilt;        /* prefix of the prebuilt GEMM entries loaded, or NULL */
  const char *prebuilt_level;  /* its ISA level, "v4" or "v3" */
  LLVMOrcResourceTrackerRef prebuilt_rt; /* their object's, released at free */
  const char *prebuilt_conv;   /* prefix of the prebuilt conv entry loaded (v4), or NULL */
  LLVMOrcResourceTrackerRef prebuilt_conv_rt; /* its object's, released at free */
  const char *prebuilt_rows;   /* prefix of the prebuilt softmax / layer_norm rows, or NULL */
  LLVMOrcResourceTrackerRef prebuilt_rows_rt; /* their object's, released at free */
};

const char *jit_kernel_error(int code) {
  switch (code) {
  case JIT_KERR_OK: return "ok";
  case JIT_KERR_INDEX: return "index out of range";
  case JIT_KERR_DIVZERO: return "integer mod by zero";
  case JIT_KERR_CUSTOM: return "the custom kernel returned an error (non-zero)";
  case JIT_KERR_RANGE:
    return "step is 0, or start, stop and step give another length than the declared one";
  case JIT_KERR_NOMEM: return "out of memory for the kernel's workspace";
  case JIT_KERR_ROI: return "a region's sampling grid is not finite or above 1024 per axis";
  case JIT_KERR_MASKED: return "the mask selects more elements than the updates have";
  case JIT_KERR_REPEAT: return "repeats do not sum to the result's dim along the axis";
  case JIT_KERR_SLICE: return "the slice [start, start + the stored tensor's dims) is outside the "
                              "buffer on some axis";
  default: return "unknown kernel error";
  }
}

static void set_err(char *err, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...) {
  if (!err || n == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
}

/* Consume an LLVMErrorRef into err, prefixed with what failed. */
static void take_error(LLVMErrorRef e, char *err, size_t n, const char *what) {
  char *m = LLVMGetErrorMessage(e);
  set_err(err, n, "%s: %s", what, m ? m : "unknown error");
  LLVMDisposeErrorMessage(m);
}

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static int llvm_init_failed;
static void llvm_init(void) {
  llvm_init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
}

/* ORC reports some link errors ("Symbols not found: [ x ]") through the
 * session instead of the failing lookup: keep the last one for the message
 * (instead of ORC's default, which prints to stderr). */
static void session_error(void *ctx, LLVMErrorRef le) {
  jit_engine *e = ctx;
  char *m = LLVMGetErrorMessage(le);
  snprintf(e->session_err, sizeof e->session_err, "%s", m ? m : "");
  LLVMDisposeErrorMessage(m);
}

/* A TargetMachine for the host with the engine's options at a tier (the
 * quick one: no code generation optimization, so FastISel and the fast
 * register allocator). Each compiling thread needs its own (LLVM-NOTES.md:
 * never share one). NULL on failure. */
static LLVMTargetMachineRef new_target_machine(const jit_engine *e, jit_tier tier) {
  return LLVMCreateTargetMachine(e->llvm_target, e->triple, e->cpu, e->features,
                                 tier == JIT_TIER_QUICK ? LLVMCodeGenLevelNone
                                                        : LLVMCodeGenLevelAggressive,
                                 LLVMRelocPIC, LLVMCodeModelSmall);
}

/* Whether features (LLVM's host list) has every one of the comma-free
 * names in need. */
static bool has_all(const char *features, const char *const *need) {
  for (; *need; need++)
    if (!jit_features_have(features, *need)) return false;
  return true;
}

#if defined(KILN_PREBUILT_GEMM)
/* Add the object obj[0..len) to the main JITDylib under a tracker of its
 * own and link it now (looking up `probe`), so that a failure shows here,
 * where the engine can do without it: the tracker, or NULL (nothing
 * added). */
static LLVMOrcResourceTrackerRef add_object(jit_engine *e, const unsigned char *obj, size_t len,
                                            const char *label, const char *probe) {
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRange((const char *)obj, len, label, 0);
  if (!buf) return NULL;
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(e->jd);
  LLVMErrorRef le = LLVMOrcLLJITAddObjectFileWithRT(e->jit, rt, buf); /* takes buf */
  if (!le) {
    LLVMOrcExecutorAddress addr = 0;
    le = LLVMOrcLLJITLookup(e->jit, &addr, probe);
  }
  if (le) {
    LLVMConsumeError(le);
    LLVMErrorRef re = LLVMOrcResourceTrackerRemove(rt);
    if (re) LLVMConsumeError(re);
    LLVMOrcReleaseResourceTracker(rt);
    e->session_err[0] = 0;
    return NULL;
  }
  return rt;
}
#endif

/* The prebuilt GEMM of the host's ISA level into the main JITDylib
 * (template.h); e->prebuilt stays NULL when the build has none, the host is
 * below x86-64-v3 (or has avx512f without the rest of v4: its kernels take
 * the AVX-512 families, which only the v4 object holds), or ORC refuses the
 * object: kernels then compile the template, as they always could. At v4
 * the prebuilt direct conv too (e->prebuilt_conv; NULL when ORC refuses
 * it: conv kernels then compile the conv template). The f32 rows of the
 * same level likewise (e->prebuilt_rows; NULL: norm kernels link the row
 * template). */
static void add_prebuilt(jit_engine *e) {
#if defined(KILN_PREBUILT_GEMM)
  static const char *const v3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt",
                                   "movbe", "xsave", NULL};
  static const char *const v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",
                                   NULL};
  /* each level: its name, object, the prefix of its entries, one entry to link */
  static const struct {
    const char *name;
    const unsigned char *obj;
    const size_t *len;
    const char *prefix, *probe;
  } LEVELS[] = {{"v4", kiln_pre_gemm_v4_o, &kiln_pre_gemm_v4_o_len, "kiln_pre_v4_",
                 "kiln_pre_v4_kiln_gemm_f32_v16_work"},
                {"v3", kiln_pre_gemm_v3_o, &kiln_pre_gemm_v3_o_len, "kiln_pre_v3_",
                 "kiln_pre_v3_kiln_gemm_f32_v8_work"}};
  int level = -1;
  if (has_all(e->features, v3) && has_all(e->features, v4)) level = 0;
  else if (has_all(e->features, v3) && !jit_features_have(e->features, "avx512f")) level = 1;
  if (level < 0 || strncmp(e->triple, "x86_64", 6) != 0) return;
  LLVMOrcResourceTrackerRef rt = add_object(e, LEVELS[level].obj, *LEVELS[level].len,
                                             "kiln_prebuilt_gemm", LEVELS[level].probe);
  if (!rt) return;
  e->prebuilt_rt = rt;
  e->prebuilt = LEVELS[level].prefix;
  e->prebuilt_level = LEVELS[level].name;
  char probe[64];
  snprintf(probe, sizeof probe, "%skiln_softmax_f32_row", LEVELS[level].prefix);
  e->prebuilt_rows_rt = add_object(e, level == 0 ? kiln_pre_rows_v4_o : kiln_pre_rows_v3_o,
                                   level == 0 ? kiln_pre_rows_v4_o_len : kiln_pre_rows_v3_o_len,
                                   "kiln_prebuilt_rows", probe);
  if (e->prebuilt_rows_rt) e->prebuilt_rows = LEVELS[level].prefix;
  if (level != 0) return; /* the direct conv runs on AVX-512 targets only */
  e->prebuilt_conv_rt = add_object(e, kiln_pre_conv_v4_o, kiln_pre_conv_v4_o_len,
                                   "kiln_prebuilt_conv", "kiln_pre_v4_kiln_conv_f32_v16_pex");
  if (e->prebuilt_conv_rt) e->prebuilt_conv = LEVELS[level].prefix;
#else
  (void)e;
  (void)has_all;
#endif
}

jit_engine *jit_engine_new(char *err, size_t errlen) {
  pthread_once(&llvm_once, llvm_init);
  if (llvm_init_failed) {
    set_err(err, errlen, "jit: LLVM has no native target for this host");
    return NULL;
  }
  jit_engine *e = calloc(1, sizeof *e);
  if (!e) {
    set_err(err, errlen, "jit: out of memory");
    return NULL;
  }
  atomic_init(&e->spare_tm[0], NULL);
  atomic_init(&e->spare_tm[1], NULL);
  e->triple = LLVMGetDefaultTargetTriple();
  e->cpu = LLVMCreateMessage(jit_host_cpu()); /* copies: LLVMDisposeMessage frees them */
  e->features = LLVMCreateMessage(jit_host_features());
  if (!e->triple || !e->cpu || !e->features) {
    set_err(err, errlen, "jit: out of memory");
    jit_engine_free(e);
    return NULL;
  }
  e->avx512 = strstr(e->features, "+avx512f") != NULL;
  size_t tl = strlen(e->triple) + strlen(e->cpu) + strlen(e->features) + 3;
  e->target = malloc(tl);
  if (!e->target) {
    set_err(err, errlen, "jit: out of memory");
    jit_engine_free(e);
    return NULL;
  }
  snprintf(e->target, tl, "%s %s %s", e->triple, e->cpu, e->features);

  e->options = strdup(e->avx512 ? "opt=O3 codegen=aggressive reloc=pic prefer-vector-width=512"
                                 : "opt=O3 codegen=aggressive reloc=pic");
  if (!e->options) {
    set_err(err, errlen, "jit: out of memory");
    jit_engine_free(e);
    return NULL;
  }

  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(e->triple, &target, &msg)) {
    set_err(err, errlen, "jit: no LLVM target for %s: %s", e->triple, msg ? msg : "");
    LLVMDisposeMessage(msg);
    jit_engine_free(e);
    return NULL;
  }
  e->llvm_target = target;
  e->tm = new_target_machine(e, JIT_TIER_FULL);
  if (!e->tm) {
    set_err(err, errlen, "jit: cannot create a TargetMachine for %s (%s)", e->triple, e->cpu);
    jit_engine_free(e);
    return NULL;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(e->tm);
  e->layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);

  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  LLVMErrorRef le = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (le) {
    take_error(le, err, errlen, "jit: detecting the host");
    jit_engine_free(e);
    return NULL;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* takes jtmb */
  le = LLVMOrcCreateLLJIT(&e->jit, builder);                     /* takes builder */
  if (le) {
    e->jit = NULL;
    take_error(le, err, errlen, "jit: creating the LLJIT");
    jit_engine_free(e);
    return NULL;
  }
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(e->jit), session_error,
                                          e);
  e->jd = LLVMOrcLLJITGetMainJITDylib(e->jit);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  le = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(e->jit), NULL, NULL);
  if (le) {
    take_error(le, err, errlen, "jit: process symbol generator");
    jit_engine_free(e);
    return NULL;
  }
  LLVMOrcJITDylibAddGenerator(e->jd, gen); /* takes gen */
  if ((le = jit_define_libcalls(e->jit, e->jd))) {
    take_error(le, err, errlen, "jit: defining the runtime routines");
    jit_engine_free(e);
    return NULL;
  }
  add_prebuilt(e);
  if (e->prebuilt) { /* objects that call it load only where it is loaded */
    char *o = malloc(strlen(e->options) + 96);
    if (!o) {
      set_err(err, errlen, "jit: out of memory");
      jit_engine_free(e);
      return NULL;
    }
    sprintf(o, "%s prebuilt-gemm=%s%s%s%s", e->options, e->prebuilt_level,
            e->prebuilt_conv ? " prebuilt-conv=v4" : "", e->prebuilt_rows ? " prebuilt-rows=" : "",
            e->prebuilt_rows ? e->prebuilt_level : "");
    free(e->options);
    e->options = o;
  }
  /* the quick tier: the same with its own passes and code generation */
  size_t ql = strlen(e->options) + 32;
  if (!(e->options_quick = malloc(ql))) {
    set_err(err, errlen, "jit: out of memory");
    jit_engine_free(e);
    return NULL;
  }
  snprintf(e->options_quick, ql, "%s tier=quick", e->options);
  return e;
}

const char *jit_engine_prebuilt(const jit_engine *e) { return e ? e->prebuilt : NULL; }

bool jit_engine_has_prebuilt_rows(const jit_engine *e) { return e && e->prebuilt_rows; }

int jit_engine_prebuilt_object(const jit_engine *e, int i, const void **obj, size_t *len) {
  *obj = NULL;
  *len = 0;
#if defined(KILN_PREBUILT_GEMM)
  if (!e || !e->prebuilt_level || i < 0 || i > 2) return -1;
  if (i == 2) {
    if (!e->prebuilt_rows) return -1;
    bool v4 = strcmp(e->prebuilt_level, "v4") == 0;
    *obj = v4 ? (const void *)kiln_pre_rows_v4_o : (const void *)kiln_pre_rows_v3_o;
    *len = v4 ? kiln_pre_rows_v4_o_len : kiln_pre_rows_v3_o_len;
    return 0;
  }
  if (i == 1) {
    if (!e->prebuilt_conv) return -1;
    *obj = kiln_pre_conv_v4_o;
    *len = kiln_pre_conv_v4_o_len;
    return 0;
  }
  bool v4 = strcmp(e->prebuilt_level, "v4") == 0;
  *obj = v4 ? (const void *)kiln_pre_gemm_v4_o : (const void *)kiln_pre_gemm_v3_o;
  *len = v4 ? kiln_pre_gemm_v4_o_len : kiln_pre_gemm_v3_o_len;
  return 0;
#else
  (void)e;
  (void)i;
  return -1;
#endif
}

int jit_engine_enable_debugger(jit_engine *e, char *err, size_t errlen) {
  if (!e) return -1;
  LLVMErrorRef le = LLVMOrcLLJITEnableDebugSupport(e->jit);
  if (le) {
    take_error(le, err, errlen, "jit: debugger registration");
    return -1;
  }
  return 0;
}

uint64_t jit_engine_lookup(jit_engine *e, const char *name) {
  if (!e || !name) return 0;
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef le = LLVMOrcLLJITLookup(e->jit, &addr, name);
  if (le) {
    LLVMConsumeError(le);
    e->session_err[0] = 0;
    return 0;
  }
  return addr;
}

void jit_engine_free(jit_engine *e) {
  if (!e) return;
  if (e->prebuilt_rt) LLVMOrcReleaseResourceTracker(e->prebuilt_rt); /* the code goes with the JIT */
  if (e->prebuilt_conv_rt) LLVMOrcReleaseResourceTracker(e->prebuilt_conv_rt);
  if (e->prebuilt_rows_rt) LLVMOrcReleaseResourceTracker(e->prebuilt_rows_rt);
  if (e->jit) {
    LLVMErrorRef le = LLVMOrcDisposeLLJIT(e->jit);
    if (le) LLVMConsumeError(le);
  }
  if (e->tm) LLVMDisposeTargetMachine(e->tm);
  for (int t = 0; t < 2; t++) {
    LLVMTargetMachineRef spare = atomic_exchange(&e->spare_tm[t], NULL);
    if (spare) LLVMDisposeTargetMachine(spare);
  }
  LLVMDisposeMessage(e->triple);
  LLVMDisposeMessage(e->cpu);
  LLVMDisposeMessage(e->features);
  LLVMDisposeMessage(e->layout);
  free(e->target);
  free(e->options);
  free(e->options_quick);
  free(e);
}

void jit_engine_set_libs(jit_engine *e, const jit_libs *libs) {
  if (!e) return;
  if (libs) e->libs = *libs;
  else memset(&e->libs, 0, sizeof e->libs);
}

void jit_engine_set_phase_hook(jit_engine *e, const jit_phase_hook *hook) {
  if (!e) return;
  if (hook) e->phase = *hook;
  else memset(&e->phase, 0, sizeof e->phase);
}

static int64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Report the phase that began at *t to the hook and start the next one. */
static void phase_done(const jit_engine *e, const char *phase, const char *fn_name, int64_t *t) {
  if (!e->phase.fn) return;
  int64_t now = clock_ns();
  e->phase.fn(e->phase.ud, phase, fn_name, *t, now);
  *t = now;
}

const char *jit_engine_target(const jit_engine *e) { return e ? e->target : ""; }
const char *jit_engine_triple(const jit_engine *e) { return e && e->triple ? e->triple : ""; }
const char *jit_engine_cpu(const jit_engine *e) { return e && e->cpu ? e->cpu : ""; }
const char *jit_engine_features(const jit_engine *e) {
  return e && e->features ? e->features : "";
}
bool jit_engine_generic_half(const jit_engine *e) { return e && e->generic_half; }

/* Append word (" name=value") to both tiers' options. 0, or -1 on
 * out-of-memory (e unchanged). */
static int append_option(jit_engine *e, const char *word) {
  char *o = malloc(strlen(e->options) + strlen(word) + 1);
  char *q = malloc(strlen(e->options_quick) + strlen(word) + 1);
  if (!o || !q) {
    free(o);
    free(q);
    return -1;
  }
  sprintf(o, "%s%s", e->options, word);
  sprintf(q, "%s%s", e->options_quick, word);
  free(e->options);
  free(e->options_quick);
  e->options = o;
  e->options_quick = q;
  return 0;
}

int jit_engine_force_generic_half(jit_engine *e) {
  if (!e || e->generic_half) return 0;
  if (append_option(e, " half-gemm=generic") < 0) return -1;
  e->generic_half = true;
  return 0;
}

int jit_engine_force_template_rows(jit_engine *e) {
  if (!e || !e->prebuilt_rows) return 0;
  if (append_option(e, " rows=template") < 0) return -1;
  e->prebuilt_rows = NULL; /* its object stays loaded until the engine's free */
  return 0;
}

int jit_engine_cap_int8_gemm(jit_engine *e, jit_mmi_isa cap) {
  if (!e || e->int8_cap || cap < JIT_MMI_GENERIC || cap > JIT_MMI_AVX512VNNI) return 0;
  char word[48];
  snprintf(word, sizeof word, " int8-gemm=%s", jit_mmi_isa_name(cap));
  if (append_option(e, word) < 0) return -1;
  e->int8_cap = cap;
  return 0;
}

jit_mmi_isa jit_engine_int8_gemm(const jit_engine *e) {
  return jit_mmi_isa_for(jit_engine_features(e), e ? e->int8_cap : 0);
}

const char *jit_engine_options(const jit_engine *e) { return e && e->options ? e->options : ""; }
const char *jit_engine_options_tier(const jit_engine *e, jit_tier tier) {
  if (tier == JIT_TIER_QUICK) return e && e->options_quick ? e->options_quick : "";
  return jit_engine_options(e);
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char llvm_version[32];
static void read_llvm_version(void) {
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  snprintf(llvm_version, sizeof llvm_version, "%u.%u.%u", major, minor, patch);
}
const char *jit_llvm_version(void) {
  pthread_once(&version_once, read_llvm_version);
  return llvm_version;
}

/* ---- building a module ---- */

static bool has_kernel(const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  return info && info->cls != IR_CLS_CONSTANT && info->cls != IR_CLS_CONSTANT_EXTERNAL;
}

static void kernel_name(char *buf, size_t cap, const char *prefix, const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  int len = snprintf(buf, cap, "%s_%d_%s", prefix, n->id, info ? info->name : "op");
  for (int i = 0; i < len && (size_t)i < cap; i++)
    if (!isalnum((unsigned char)buf[i]) && buf[i] != '_') buf[i] = '_';
}

static void set_str_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v,
                                                    (unsigned)strlen(v)));
}

/* Lower node n (a kernel node) into mod as function `name` for a tier: the
 * QUICK tier's conv kernels call the prebuilt direct conv (a compile of
 * milliseconds), the FULL tier's inline the template, whose static sizes
 * fold (measured 2-8% faster on ResNet-50's 3x3 layers at batch 1). 0 or
 * -1. */
static int lower_one(jit_engine *e, LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g,
                     const ir_node *n, const char *name, jit_tier tier, char *err,
                     size_t errlen) {
  char msg[512] = "";
  jit_fn f;
  jit_fn_begin(&f, ctx, mod, g, n, name, msg, sizeof msg);
  f.libs = e->libs.find ? &e->libs : NULL;
  f.prebuilt = e->prebuilt;
  f.prebuilt_conv = tier == JIT_TIER_QUICK ? e->prebuilt_conv : NULL;
  f.prebuilt_rows = e->prebuilt_rows;
  f.generic_half = e->generic_half;
  f.int8_cap = e->int8_cap;
  int rc = f.failed ? -1 : jit_lower_node(&f);
  if (rc == 0 && f.failed) rc = -1;
  if (rc == 0) jit_fn_finish(&f);
  LLVMValueRef fns[2] = {f.kernel, f.fn};
  jit_fn_dispose(&f);
  if (rc != 0) {
    const ir_op_info *info = ir_op_get(n->op);
    const char *vname = n->nout > 0 && n->out[0] && n->out[0]->name ? n->out[0]->name : "?";
    set_err(err, errlen, "jit: node %d (mo.%s -> %%%s): %s", n->id, info ? info->name : "?",
            vname, msg[0] ? msg : "lowering failed");
    return -1;
  }
  for (int i = 0; i < 2; i++) {
    if (!fns[i]) continue;
    set_str_attr(ctx, fns[i], "target-cpu", e->cpu);
    set_str_attr(ctx, fns[i], "target-features", e->features);
    if (e->avx512) set_str_attr(ctx, fns[i], "prefer-vector-width", "512");
  }
  return 0;
}

static LLVMModuleRef new_module(jit_engine *e, LLVMContextRef ctx, const char *name) {
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
  LLVMSetTarget(mod, e->triple);
  LLVMSetDataLayout(mod, e->layout);
  return mod;
}

/* The quick tier's passes: inline the lowering's helpers, promote its
 * stack slots, fold, merge blocks, rotate loops and vectorize the inner
 * ones; no unrolling, no interleaving, no loop-nest transforms. Measured on
 * a one-layer encoder (1 thread, busy host): cold load 477 -> 107 ms;
 * without the inliner and the vectorizer 78 ms, but layer_norm and softmax
 * then ran 20-30x slower than at O3 instead of 2-10x. The vectorizer takes
 * only loops whose latch exits (rotated): without loop-rotate, most of the
 * lowering's row loops stayed scalar, and layer_norm / softmax over [1024,
 * 384] / [1024, 12, 128] ran 24x / 11x slower than at O3; rotated, about
 * 1.2x / 1.0x, for ~1.5x the quick compile time of those kernels (code
 * generation at LLVMCodeGenLevelLess instead would triple it). globaldce
 * drops what the inliner left unused, the templates' helpers among them:
 * code generation at LLVMCodeGenLevelNone cannot lower the AVX-512 ones for
 * a host without AVX-512 (the half GEMM's, KILN_HALF_GEMM=generic: an LLVM
 * fatal error, the process aborted), and O3 never compiled them either. */
static const char QUICK_PASSES[] =
    "cgscc(inline),globaldce,function(sroa,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop(loop-rotate),loop-vectorize,instcombine<no-verify-fixpoint>)";

/* Verify and run the tier's passes (O3 for FULL). 0, or -1 with err. */
static int verify_and_optimize(LLVMTargetMachineRef tm, LLVMModuleRef mod, jit_tier tier,
                               char *err, size_t errlen) {
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    set_err(err, errlen, "jit: generated LLVM IR is invalid: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  LLVMErrorRef le =
      LLVMRunPasses(mod, tier == JIT_TIER_QUICK ? QUICK_PASSES : "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (le) {
    take_error(le, err, errlen, "jit: optimizing");
    return -1;
  }
  return 0;
}

char *jit_node_llvm_ir(jit_engine *e, const ir_graph *g, int node_id, char *err, size_t errlen) {
  if (!e || !g || node_id < 0 || node_id >= g->nnodes || !g->nodes[node_id]) {
    set_err(err, errlen, "jit: no node %d in the graph", node_id);
    return NULL;
  }
  const ir_node *n = g->nodes[node_id];
  if (!has_kernel(n)) {
    const ir_op_info *info = ir_op_get(n->op);
    set_err(err, errlen, "jit: node %d (mo.%s) has no kernel", node_id, info ? info->name : "?");
    return NULL;
  }
  char name[160];
  kernel_name(name, sizeof name, "kiln_ir", n);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = new_module(e, ctx, name);
  char *out = NULL;
  if (lower_one(e, ctx, mod, g, n, name, JIT_TIER_FULL, err, errlen) == 0 &&
      verify_and_optimize(e->tm, mod, JIT_TIER_FULL, err, errlen) == 0) {
    char *text = LLVMPrintModuleToString(mod);
    out = text ? strdup(text) : NULL;
    if (!out) set_err(err, errlen, "jit: out of memory");
    LLVMDisposeMessage(text);
  }
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return out;
}

/* ---- per-kernel compile units (the kernel cache's entries) ---- */

struct jit_code {
  LLVMOrcResourceTrackerRef rt;
};

int jit_compile_object(jit_engine *e, const ir_graph *kg, const char *fn_name, void **obj,
                       size_t *len, char *err, size_t errlen) {
  return jit_compile_object_tier(e, kg, fn_name, JIT_TIER_FULL, obj, len, err, errlen);
}

int jit_compile_object_tier(jit_engine *e, const ir_graph *kg, const char *fn_name,
                            jit_tier tier, void **obj, size_t *len, char *err, size_t errlen) {
  if (obj) *obj = NULL;
  if (len) *len = 0;
  if (!e || !kg || !fn_name || !fn_name[0] || !obj || !len) {
    set_err(err, errlen, "jit: compile_object: no engine, graph, name or result");
    return -1;
  }
  const ir_node *n = NULL;
  int nkernels = 0;
  for (int i = 0; i < kg->nnodes; i++)
    if (kg->nodes[i] && has_kernel(kg->nodes[i])) {
      n = kg->nodes[i];
      nkernels++;
    }
  /* Several kernel nodes: the graph is a fused group (the text of a
   * mo.fused node, ir_kernel_text), lowered as one kernel through a node
   * standing for the whole graph: operands = its inputs, results = its
   * outputs, body = the graph itself (only read). */
  ir_node group = {0};
  if (nkernels > 1) {
    group.op = IR_OP_FUSED;
    group.nin = kg->ninputs;
    group.in = kg->inputs;
    group.nout = kg->noutputs;
    group.out = kg->outputs;
    group.body = (ir_graph *)kg;
    n = &group;
  }
  if (nkernels < 1 || kg->noutputs < 1) {
    set_err(err, errlen, "jit: a kernel graph needs a kernel node and an output, @%s has %d and %d",
            kg->name ? kg->name : "?", nkernels, kg->noutputs);
    return -1;
  }
  tier = tier == JIT_TIER_QUICK ? JIT_TIER_QUICK : JIT_TIER_FULL;
  LLVMTargetMachineRef tm = atomic_exchange(&e->spare_tm[tier], NULL);
  if (!tm) tm = new_target_machine(e, tier);
  if (!tm) {
    set_err(err, errlen, "jit: cannot create a TargetMachine for %s (%s)", e->triple, e->cpu);
    return -1;
  }
  int64_t tp = e->phase.fn ? clock_ns() : 0;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = new_module(e, ctx, fn_name);
  int rc = lower_one(e, ctx, mod, kg, n, fn_name, tier, err, errlen);
  phase_done(e, "lower", fn_name, &tp);
  if (rc == 0) {
    rc = verify_and_optimize(tm, mod, tier, err, errlen);
    phase_done(e, tier == JIT_TIER_QUICK ? "quick passes" : "O3", fn_name, &tp);
  }
  LLVMMemoryBufferRef buf = NULL;
  if (rc == 0) {
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
      set_err(err, errlen, "jit: emitting the object of %s: %s", fn_name, msg ? msg : "");
      buf = NULL;
      rc = -1;
    }
    LLVMDisposeMessage(msg);
    phase_done(e, "codegen", fn_name, &tp);
  }
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMTargetMachineRef old = atomic_exchange(&e->spare_tm[tier], tm);
  if (old) LLVMDisposeTargetMachine(old);
  if (rc != 0) return -1;
  size_t sz = LLVMGetBufferSize(buf);
  void *bytes = malloc(sz ? sz : 1);
  if (!bytes) {
    LLVMDisposeMemoryBuffer(buf);
    set_err(err, errlen, "jit: out of memory copying the object of %s", fn_name);
    return -1;
  }
  memcpy(bytes, LLVMGetBufferStart(buf), sz);
  LLVMDisposeMemoryBuffer(buf);
  *obj = bytes;
  *len = sz;
  return 0;
}

jit_code *jit_load_object(jit_engine *e, const void *obj, size_t len, const char *fn_name,
                          jit_kernel_fn *out, char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!e || !obj || len == 0 || !fn_name || !out) {
    set_err(err, errlen, "jit: load_object: no engine, object, name or result");
    return NULL;
  }
  jit_code *c = calloc(1, sizeof *c);
  LLVMMemoryBufferRef buf =
      c ? LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, fn_name) : NULL;
  if (!buf) {
    free(c);
    set_err(err, errlen, "jit: out of memory loading %s", fn_name);
    return NULL;
  }
  e->session_err[0] = 0;
  c->rt = LLVMOrcJITDylibCreateResourceTracker(e->jd);
  LLVMErrorRef le = LLVMOrcLLJITAddObjectFileWithRT(e->jit, c->rt, buf); /* takes buf */
  if (le) {
    take_error(le, err, errlen, "jit: adding the object");
    jit_code_free(e, c);
    return NULL;
  }
  LLVMOrcExecutorAddress addr = 0;
  le = LLVMOrcLLJITLookup(e->jit, &addr, fn_name);
  if (le || !addr) {
    char what[800];
    snprintf(what, sizeof what, "jit: linking kernel %s%s%s%s", fn_name,
             e->session_err[0] ? " (" : "", e->session_err, e->session_err[0] ? ")" : "");
    if (le) take_error(le, err, errlen, what);
    else set_err(err, errlen, "%s: address 0", what);
    jit_code_free(e, c);
    return NULL;
  }
  *out = (jit_kernel_fn)(uintptr_t)addr;
  return c;
}

void jit_code_free(jit_engine *e, jit_code *c) {
  (void)e;
  if (!c) return;
  if (c->rt) {
    LLVMErrorRef le = LLVMOrcResourceTrackerRemove(c->rt);
    if (le) LLVMConsumeError(le);
    LLVMOrcReleaseResourceTracker(c->rt);
  }
  free(c);
}
