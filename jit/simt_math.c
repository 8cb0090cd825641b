/* simt_math.c - math functions for SIMT kernels on GPUs (simt.h).
 *
 * The scalar code shared with the CPU path calls LLVM intrinsics (llvm.exp,
 * llvm.sin, ...) and libm functions (erff, tanh, log1p, ...). A GPU has no
 * libm, and the backends cannot select most of those intrinsics (NVPTX
 * aborts on llvm.sin; AMDGPU turns llvm.exp.f64 into a call to `exp`, which
 * nothing defines), so before optimizing a GPU module:
 *   - transcendental intrinsic calls become calls to the libm names, except
 *     on amdgpu the f32 exp / exp2 / exp10 / log / log2 / log10, which the
 *     backend expands accurately itself (its f32 sin / cos are the
 *     hardware's short-range approximations: those go to ocml);
 *   - every libm name the kernels call becomes the vendor library's name
 *     for it, when the library defines that name with the same type:
 *       nvptx   erff -> __nv_erff, from CUDA's libdevice;
 *       amdgpu  erff -> __ocml_erf_f32, erf -> __ocml_erf_f64, from ROCm's
 *               ocml;
 *     the library is asked of the target's resolver (t->math: src/ finds
 *     and reads it, src/simt_mathlib.c; jit/ opens no file) only when a
 *     kernel calls outside the module, and everything it brought becomes
 *     internal, so O3 keeps only what the kernels use (ocml's functions are
 *     linkonce_odr: the linker brings only those referenced); one function
 *     links and internalizes for both;
 *   - amdgpu: ocml reads its configuration from external constants that
 *     ROCm's oclc_*.bc files would define; kiln defines the ones ocml
 *     declares itself (internal, addrspace(4)): __oclc_ISA_version from the
 *     gfx arch (gfx90a 9010, gfx942 9402), finite-only, unsafe-math and
 *     denormals-are-zero off, correctly rounded f32 sqrt on, wave64.
 * A library the resolver cannot give is its error (naming the path and how
 * to provide it); bytes that are not bitcode are an error naming the label
 * and the resolver's hint; LLVM's reader and linker report into a
 * diagnostic sink, never print-and-exit. After optimizing,
 * jit_simt_check_externals refuses a module that still calls a function or
 * reads a global it does not define: a clear error naming it, instead of a
 * PTX that ptxas rejects or a code object that fails to load. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Linker.h>

#include "simt.h"
#include "template.h" /* jit_diag_handler */

static const char *const transcendental[] = {"exp", "exp2", "exp10", "log", "log2", "log10",
                                             "sin", "cos", "tan", "pow"};

/* "llvm.exp.f32" -> "expf", "llvm.pow.f64" -> "pow"; false when not one of
 * ours (or a type with no libm name). *base: the index in transcendental. */
static bool libm_name_of(const char *intr, char *out, size_t cap, size_t *base) {
  if (strncmp(intr, "llvm.", 5) != 0) return false;
  for (size_t i = 0; i < sizeof transcendental / sizeof transcendental[0]; i++) {
    size_t n = strlen(transcendental[i]);
    if (strncmp(intr + 5, transcendental[i], n) != 0 || intr[5 + n] != '.') continue;
    const char *ty = intr + 5 + n + 1;
    if (strcmp(ty, "f32") == 0)
      snprintf(out, cap, "%sf", transcendental[i]);
    else if (strcmp(ty, "f64") == 0)
      snprintf(out, cap, "%s", transcendental[i]);
    else
      return false;
    *base = i;
    return true;
  }
  return false;
}

/* amdgpu lowers these f32 intrinsics well (exp* and log*: the first six of
 * transcendental); the rest go through ocml. */
static bool amdgpu_keeps(const char *intr, size_t base) {
  size_t n = strlen(intr);
  return base < 6 && n > 4 && strcmp(intr + n - 4, ".f32") == 0;
}

/* Point every use of `from` at a function named `to` of the same type.
 * false (nothing changed) when `to` exists with another type. */
static bool redirect(LLVMModuleRef mod, LLVMValueRef from, const char *to) {
  LLVMTypeRef fty = LLVMGlobalGetValueType(from);
  LLVMValueRef dst = LLVMGetNamedFunction(mod, to);
  if (dst == from) return true;
  if (dst && LLVMGlobalGetValueType(dst) != fty) return false;
  if (!dst) dst = LLVMAddFunction(mod, to, fty);
  LLVMReplaceAllUsesWith(from, dst);
  LLVMDeleteFunction(from);
  return true;
}

static const char *name_of(LLVMValueRef v) { return LLVMGetValueName2(v, &(size_t){0}); }

/* ---- the two libraries ---- */

typedef struct mathlib {
  const char *what;   /* "CUDA's libdevice" */
  const char *prefix; /* of the library's function names */
} mathlib;

static const mathlib LIBDEVICE = {"CUDA's libdevice", "__nv_"};
static const mathlib OCML = {"ROCm's ocml", "__ocml_"};

/* The library's bitcode (lib, its data freed here) as a module of mod's
 * context, with mod's triple and data layout (so linking does not warn);
 * NULL with err. The caller has put a diagnostic sink on the context
 * (sink). */
static LLVMModuleRef load_library(LLVMModuleRef mod, jit_simt_mathlib *lib, const char *needs,
                                  const jit_diag_sink *sink, char *err, size_t errlen) {
  LLVMMemoryBufferRef mb =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(lib->data, lib->len, lib->label);
  free(lib->data);
  lib->data = NULL;
  /* lazily: the linker reads only the functions it links (all of
   * libdevice's; of ocml's linkonce_odr ones, those the kernels call) */
  LLVMModuleRef m = NULL;
  if (!mb || LLVMGetBitcodeModuleInContext2(LLVMGetModuleContext(mod), mb, &m) || !m) {
    if (mb) LLVMDisposeMemoryBuffer(mb); /* taken only on success */
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(err, errlen, "%s, but %s is not bitcode LLVM %u can read (%s)%s%s", needs,
             lib->label, major, sink->msg[0] ? sink->msg : "?", lib->hint ? "; " : "",
             lib->hint ? lib->hint : "");
    return NULL;
  }
  LLVMSetTarget(m, LLVMGetTarget(mod));
  LLVMSetDataLayout(m, LLVMGetDataLayoutStr(mod));
  return m;
}

typedef struct names {
  char **v;
  size_t n, cap;
} names;

static bool names_add(names *s, const char *name) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    char **g = realloc(s->v, cap * sizeof *g);
    if (!g) return false;
    s->v = g;
    s->cap = cap;
  }
  if (!(s->v[s->n] = strdup(name))) return false;
  s->n++;
  return true;
}

static bool names_has(const names *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], name) == 0) return true;
  return false;
}

static void names_free(names *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
}

/* Link lib (taken) into mod; every function and global that it brought
 * becomes internal. 0, or -1 with err. */
static int link_internalized(LLVMModuleRef mod, LLVMModuleRef lib, const mathlib *ml,
                             const char *path, const jit_diag_sink *sink, char *err,
                             size_t errlen) {
  names ours = {0};
  bool ok = true;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && ok; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn)) ok = names_add(&ours, name_of(fn));
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g && ok; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g)) ok = names_add(&ours, name_of(g));
  if (!ok) {
    names_free(&ours);
    LLVMDisposeModule(lib);
    snprintf(err, errlen, "jit: out of memory linking %s", ml->what);
    return -1;
  }
  if (LLVMLinkModules2(mod, lib)) { /* takes lib */
    names_free(&ours);
    snprintf(err, errlen, "linking %s (%s) failed: %s", ml->what, path,
             sink->msg[0] ? sink->msg : "?");
    return -1;
  }
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    const char *name = name_of(fn);
    if (!LLVMIsDeclaration(fn) && strncmp(name, "llvm.", 5) != 0 && !names_has(&ours, name))
      LLVMSetLinkage(fn, LLVMInternalLinkage);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    const char *name = name_of(g);
    if (!LLVMIsDeclaration(g) && strncmp(name, "llvm.", 5) != 0 && !names_has(&ours, name))
      LLVMSetLinkage(g, LLVMInternalLinkage);
  }
  names_free(&ours);
  return 0;
}

/* The library's name for libm function decl ("erff" -> "__nv_erff" or
 * "__ocml_erf_f32"); false when there is none (a type ocml has no suffix
 * for, an f32 name without the f). */
static bool library_name(const jit_simt_target *t, LLVMValueRef decl, char *out, size_t cap) {
  const char *name = name_of(decl);
  if (t->kind == JIT_SIMT_NVPTX) {
    snprintf(out, cap, "__nv_%s", name);
    return true;
  }
  LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(decl));
  size_t n = strlen(name);
  switch (LLVMGetTypeKind(rt)) {
  case LLVMFloatTypeKind:
    if (n < 2 || name[n - 1] != 'f') return false;
    snprintf(out, cap, "__ocml_%.*s_f32", (int)(n - 1), name);
    return true;
  case LLVMDoubleTypeKind: snprintf(out, cap, "__ocml_%s_f64", name); return true;
  default: return false;
  }
}

/* ---- ocml's configuration constants ---- */

/* "gfx90a" -> 9010, "gfx942" -> 9402, "gfx1030" -> 10300: major * 1000 +
 * minor * 100 + stepping (the last two are hex digits). -1 if not gfx. */
static int isa_version(const char *arch) {
  if (strncmp(arch, "gfx", 3) != 0) return -1;
  const char *d = arch + 3;
  size_t n = strlen(d);
  if (n < 3 || n > 4) return -1;
  int major = 0;
  for (size_t i = 0; i + 2 < n; i++) {
    if (!isdigit((unsigned char)d[i])) return -1;
    major = major * 10 + (d[i] - '0');
  }
  int minor = 0, step = 0;
  char hex[2] = {d[n - 2], d[n - 1]};
  for (int i = 0; i < 2; i++) {
    int c = tolower((unsigned char)hex[i]), v;
    if (isdigit(c))
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return -1;
    *(i ? &step : &minor) = v;
  }
  return major * 1000 + minor * 100 + step;
}

/* Give every oclc constant that mod declares (ocml's) its value: internal,
 * constant, addrspace(4). 0, or -1 with err. */
static int define_oclc(LLVMModuleRef mod, const jit_simt_target *t, const char *path, char *err,
                       size_t errlen) {
  int isa = isa_version(t->arch);
  if (isa < 0) {
    snprintf(err, errlen, "ROCm's ocml: no ISA version for '%s'", t->arch);
    return -1;
  }
  static const struct {
    const char *name;
    int bits;
    int value; /* -1: the ISA version */
  } consts[] = {
      {"__oclc_ISA_version", 32, -1},
      {"__oclc_finite_only_opt", 8, 0},
      {"__oclc_unsafe_math_opt", 8, 0},
      {"__oclc_daz_opt", 8, 0},
      {"__oclc_correctly_rounded_sqrt32", 8, 1},
      {"__oclc_wavefrontsize64", 8, 1},
  };
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++) {
    LLVMValueRef g = LLVMGetNamedGlobal(mod, consts[i].name);
    if (!g || !LLVMIsDeclaration(g)) continue;
    LLVMTypeRef ty = LLVMGlobalGetValueType(g);
    if (LLVMGetTypeKind(ty) != LLVMIntegerTypeKind ||
        LLVMGetIntTypeWidth(ty) != (unsigned)consts[i].bits ||
        LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 4) {
      snprintf(err, errlen,
               "ROCm's ocml (%s) declares %s with a type kiln does not expect (want an i%d "
               "constant in addrspace(4)): an ocml.bc of another ROCm version?",
               path, consts[i].name, consts[i].bits);
      return -1;
    }
    int v = consts[i].value < 0 ? isa : consts[i].value;
    LLVMSetInitializer(g, LLVMConstInt(LLVMIntTypeInContext(ctx, (unsigned)consts[i].bits),
                                       (unsigned long long)v, 0));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMInternalLinkage);
  }
  return 0;
}

/* Ask t's resolver for its library, load it, point the module's libm calls
 * at its functions, link it, define what it expects of the module. */
static int bring_library(LLVMModuleRef mod, const jit_simt_target *t, const mathlib *ml,
                         const char *needs, const jit_diag_sink *sink, char *err,
                         size_t errlen) {
  if (!t->math || !t->math->find) {
    snprintf(err, errlen, "%s, but the caller gave no way to find it", needs);
    return -1;
  }
  jit_simt_mathlib lib = {0};
  if (t->math->find(t->math->ud, t, needs, &lib, err, errlen) < 0) {
    free(lib.data);
    return -1;
  }
  lib.label[sizeof lib.label - 1] = 0;
  LLVMModuleRef lm = load_library(mod, &lib, needs, sink, err, errlen);
  if (!lm) return -1;
  /* libm names -> the library's, where it has them with the same type; the
   * others stay and jit_simt_check_externals names them */
  size_t plen = strlen(ml->prefix);
  LLVMValueRef fn = LLVMGetFirstFunction(mod);
  while (fn) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    const char *name = name_of(fn);
    char to[96];
    if (LLVMIsDeclaration(fn) && strncmp(name, "llvm.", 5) != 0 &&
        strncmp(name, ml->prefix, plen) != 0 && LLVMGetFirstUse(fn) &&
        library_name(t, fn, to, sizeof to)) {
      LLVMValueRef def = LLVMGetNamedFunction(lm, to);
      if (def && !LLVMIsDeclaration(def) &&
          LLVMGlobalGetValueType(def) == LLVMGlobalGetValueType(fn))
        redirect(mod, fn, to);
    }
    fn = next;
  }
  /* link; what the library brought becomes internal */
  if (link_internalized(mod, lm, ml, lib.label, sink, err, errlen) < 0) return -1;
  return t->kind == JIT_SIMT_AMDGPU ? define_oclc(mod, t, lib.label, err, errlen) : 0;
}

/* ---- the passes ---- */

int jit_simt_legalize_math(LLVMModuleRef mod, const jit_simt_target *t, char *err,
                           size_t errlen) {
  if (t->kind == JIT_SIMT_EMU) return 0; /* host code: libm is there */
  const mathlib *ml = t->kind == JIT_SIMT_NVPTX ? &LIBDEVICE : &OCML;
  /* 1. transcendental intrinsics -> libm names (amdgpu keeps some f32 ones) */
  LLVMValueRef fn = LLVMGetFirstFunction(mod);
  while (fn) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    const char *name = name_of(fn);
    char libm[32];
    size_t base = 0;
    if (LLVMIsDeclaration(fn) && libm_name_of(name, libm, sizeof libm, &base) &&
        !(t->kind == JIT_SIMT_AMDGPU && amdgpu_keeps(name, base)))
      redirect(mod, fn, libm);
    fn = next;
  }
  /* 2. does a kernel call anything outside the module? */
  const char *first = NULL;
  size_t plen = strlen(ml->prefix);
  for (fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    const char *name = name_of(fn);
    if (!LLVMIsDeclaration(fn) || strncmp(name, "llvm.", 5) == 0 || !LLVMGetFirstUse(fn))
      continue;
    if (!first || strncmp(first, ml->prefix, plen) == 0) first = name; /* a libm name first */
  }
  if (!first) return 0;
  char needs[256];
  snprintf(needs, sizeof needs, "the kernel's call to %s needs %s on %s", first, ml->what,
           t->arch);
  /* without a handler, an error diagnostic of the reader or the linker
   * makes LLVM print and exit */
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  jit_diag_sink sink = {.msg = "", .error = false};
  LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(ctx);
  void *old_ctx = LLVMContextGetDiagnosticContext(ctx);
  LLVMContextSetDiagnosticHandler(ctx, jit_diag_handler, &sink);
  int rc = bring_library(mod, t, ml, needs, &sink, err, errlen);
  LLVMContextSetDiagnosticHandler(ctx, old_handler, old_ctx);
  return rc;
}

int jit_simt_check_externals(LLVMModuleRef mod, const jit_simt_target *t, char *err,
                             size_t errlen) {
  if (t->kind == JIT_SIMT_EMU) return 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    const char *name = name_of(fn);
    if (!LLVMIsDeclaration(fn) || strncmp(name, "llvm.", 5) == 0 || !LLVMGetFirstUse(fn))
      continue;
    snprintf(err, errlen, "the kernel calls %s, which kiln cannot provide on %s yet (%s)", name,
             t->arch,
             t->kind == JIT_SIMT_AMDGPU ? "it is not in ROCm's ocml" : "it is not in libdevice");
    return -1;
  }
  /* a global the module reads but does not define (an ocml of another ROCm
   * version that expects a constant kiln does not know) */
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    const char *name = name_of(g);
    if (!LLVMIsDeclaration(g) || strncmp(name, "llvm.", 5) == 0 || !LLVMGetFirstUse(g)) continue;
    bool oclc = strncmp(name, "__oclc_", 7) == 0;
    snprintf(err, errlen, "the kernel reads the global %s, which kiln does not define on %s%s",
             name, t->arch,
             oclc ? " (ROCm's ocml expects it: an ocml.bc of another ROCm version? "
                    "rocm-device-libs 5.2 is known to work)"
                  : "");
    return -1;
  }
  return 0;
}
