/* template.c - kernel templates (template.h): parse the embedded bitcode of
 * a kernels-templates/<name>.c file into the kernel's context, retarget it to the
 * kernel's CPU and link it into the kernel's module.
 *
 * Assumes: f->ctx / f->mod are the context and module the kernel f->fn is
 * being emitted into, used by one thread (the engine's rule); the bitcode was
 * produced by clang-19 with LLVM passes disabled (kernels-templates/
 * embed.cmake), so its functions carry clang's generic "target-cpu" and
 * "target-features" and "no-builtins" (from -ffreestanding).
 * Guarantees: a template is linked into a module at most once (its entry
 * functions are looked up by name first), its functions end with internal
 * linkage (no clash between modules or kernels in one JITDylib; O3 drops the
 * ones not called), the kernel's target attributes (f->fn's when set, else
 * the host's) and "prefer-vector-width"="512" with avx512f; the triple and
 * data layout of the template module are taken from f->mod so linking does
 * not warn. Failures are reported through jit_fn_error, never aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/TargetMachine.h>

#include "jit.h"
#include "template.h"

typedef struct tmpl_desc {
  const char *name;
  const unsigned char *bc;
  const size_t *len;
} tmpl_desc;

static const tmpl_desc TEMPLATES[] = {
    [JIT_TMPL_GEMM] = {"gemm", kiln_tmpl_gemm_bc, &kiln_tmpl_gemm_bc_len},
    [JIT_TMPL_QMATMUL] = {"qmatmul", kiln_tmpl_qmatmul_bc, &kiln_tmpl_qmatmul_bc_len},
    [JIT_TMPL_GEMM_INT8] = {"gemm_int8", kiln_tmpl_gemm_int8_bc, &kiln_tmpl_gemm_int8_bc_len},
    [JIT_TMPL_GEMM_HALF] = {"gemm_half", kiln_tmpl_gemm_half_bc, &kiln_tmpl_gemm_half_bc_len},
    [JIT_TMPL_CONV] = {"conv", kiln_tmpl_conv_bc, &kiln_tmpl_conv_bc_len},
    [JIT_TMPL_FFT] = {"fft", kiln_tmpl_fft_bc, &kiln_tmpl_fft_bc_len},
    [JIT_TMPL_ROWS] = {"rows", kiln_tmpl_rows_bc, &kiln_tmpl_rows_bc_len},
};

/* A malloc'd copy of fn's string attribute `key`, or NULL when absent. */
static char *fn_attr(LLVMValueRef fn, const char *key) {
  if (!fn) return NULL;
  LLVMAttributeRef a =
      LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, key, (unsigned)strlen(key));
  if (!a) return NULL;
  unsigned len = 0;
  const char *v = LLVMGetStringAttributeValue(a, &len);
  char *out = malloc((size_t)len + 1);
  if (!out) return NULL;
  if (len) memcpy(out, v, len);
  out[len] = 0;
  return out;
}

/* The kernel's target: f->fn's attributes, else the host's. malloc'd. */
static void kernel_target(jit_fn *f, char **cpu, char **features) {
  *cpu = fn_attr(f->fn, "target-cpu");
  *features = fn_attr(f->fn, "target-features");
  if (!*cpu) *cpu = strdup(jit_host_cpu());
  if (!*features) *features = strdup(jit_host_features());
}

bool jit_features_have(const char *list, const char *feat) {
  if (!list) return false;
  size_t fl = strlen(feat);
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == fl + 1 && p[0] == '+' && memcmp(p + 1, feat, fl) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

char *jit_target_features(jit_fn *f) {
  char *cpu, *features;
  kernel_target(f, &cpu, &features);
  free(cpu);
  return features;
}

char *jit_target_cpu(jit_fn *f) {
  char *cpu, *features;
  kernel_target(f, &cpu, &features);
  free(features);
  return cpu;
}

bool jit_target_has(jit_fn *f, const char *feat) {
  char *features = jit_target_features(f);
  bool r = jit_features_have(features, feat);
  free(features);
  return r;
}

static void set_str_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v) {
  LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, k, (unsigned)strlen(k));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v,
                                                    (unsigned)strlen(v)));
}

static void remove_str_attr(LLVMValueRef fn, const char *k) {
  LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, k, (unsigned)strlen(k));
}

/* Diagnostics from the bitcode reader and the linker: without a handler an
 * error diagnostic makes LLVM print and exit(1). Keep the first error. */
void jit_diag_handler(LLVMDiagnosticInfoRef di, void *p) {
  jit_diag_sink *s = p;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || s->error) return;
  char *m = LLVMGetDiagInfoDescription(di);
  snprintf(s->msg, sizeof s->msg, "%s", m ? m : "");
  LLVMDisposeMessage(m);
  s->error = true;
}

void jit_template_retarget(jit_fn *f, LLVMValueRef fn) {
  char *cpu, *features;
  kernel_target(f, &cpu, &features);
  if (cpu) set_str_attr(f->ctx, fn, "target-cpu", cpu);
  if (features) set_str_attr(f->ctx, fn, "target-features", features);
  if (jit_features_have(features, "avx512f")) set_str_attr(f->ctx, fn, "prefer-vector-width", "512");
  free(cpu);
  free(features);
}

/* Record the name of definition g into *ext (grown as needed); false on OOM. */
static bool remember_name(LLVMValueRef g, char ***ext, int *next, int *cap) {
  if (*next == *cap) {
    int nc = *cap ? *cap * 2 : 8;
    char **n = realloc(*ext, sizeof *n * (size_t)nc);
    if (!n) return false;
    *ext = n;
    *cap = nc;
  }
  size_t len = 0;
  const char *nm = LLVMGetValueName2(g, &len);
  (*ext)[*next] = strndup(nm, len);
  if (!(*ext)[*next]) return false;
  (*next)++;
  return true;
}

int jit_link_bitcode(jit_fn *f, const void *bc, size_t len, const char *label) {
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRange((const char *)bc, len, label, 0);
  if (!buf) return jit_fn_error(f, "%s: out of memory", label);
  jit_diag_sink sink = {.msg = "", .error = false};
  LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(f->ctx);
  void *old_ctx = LLVMContextGetDiagnosticContext(f->ctx);
  LLVMContextSetDiagnosticHandler(f->ctx, jit_diag_handler, &sink);
  LLVMModuleRef tm = NULL;
  LLVMBool bad = LLVMParseBitcodeInContext2(f->ctx, buf, &tm); /* does not take buf */
  LLVMDisposeMemoryBuffer(buf);
  if (bad || !tm) {
    LLVMContextSetDiagnosticHandler(f->ctx, old_handler, old_ctx);
    return jit_fn_error(f, "%s: the bitcode does not parse: %s", label, sink.msg);
  }
  LLVMSetTarget(tm, LLVMGetTarget(f->mod));
  LLVMSetDataLayout(tm, LLVMGetDataLayoutStr(f->mod));

  char *cpu, *features;
  kernel_target(f, &cpu, &features);
  bool avx512 = jit_features_have(features, "avx512f");

  /* Retarget every definition; remember the external ones (functions and
   * globals), which the linker brings over by name and which become
   * internal afterwards. */
  int next = 0, cap = 0;
  char **ext = NULL;
  bool oom = !cpu || !features;
  for (LLVMValueRef g = LLVMGetFirstFunction(tm); g && !oom; g = LLVMGetNextFunction(g)) {
    if (LLVMIsDeclaration(g)) continue;
    set_str_attr(f->ctx, g, "target-cpu", cpu);
    set_str_attr(f->ctx, g, "target-features", features);
    remove_str_attr(g, "tune-cpu");
    remove_str_attr(g, "no-builtins");            /* would block inlining into the kernel */
    remove_str_attr(g, "min-legal-vector-width"); /* clang's "0" would split zmm code */
    if (avx512) set_str_attr(f->ctx, g, "prefer-vector-width", "512");
    if (LLVMGetLinkage(g) == LLVMExternalLinkage && !remember_name(g, &ext, &next, &cap))
      oom = true;
  }
  size_t nfuncs = (size_t)next;
  for (LLVMValueRef g = LLVMGetFirstGlobal(tm); g && !oom; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage &&
        !remember_name(g, &ext, &next, &cap))
      oom = true;
  free(cpu);
  free(features);
  int rc = 0;
  if (oom) {
    LLVMDisposeModule(tm);
    rc = jit_fn_error(f, "%s: out of memory", label);
  } else if (LLVMLinkModules2(f->mod, tm)) { /* destroys tm */
    rc = jit_fn_error(f, "%s: linking into the kernel module failed: %s", label, sink.msg);
  } else {
    for (int i = 0; i < next; i++) {
      LLVMValueRef g = (size_t)i < nfuncs ? LLVMGetNamedFunction(f->mod, ext[i])
                                          : LLVMGetNamedGlobal(f->mod, ext[i]);
      if (g) LLVMSetLinkage(g, LLVMInternalLinkage);
    }
  }
  LLVMContextSetDiagnosticHandler(f->ctx, old_handler, old_ctx);
  for (int i = 0; i < next; i++) free(ext[i]);
  free(ext);
  return rc;
}

LLVMValueRef jit_template_function(jit_fn *f, jit_template_id t, const char *entry) {
  if ((unsigned)t >= sizeof TEMPLATES / sizeof TEMPLATES[0]) {
    jit_fn_error(f, "unknown kernel template %d", (int)t);
    return NULL;
  }
  const tmpl_desc *d = &TEMPLATES[t];
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, entry);
  if (fn && !LLVMIsDeclaration(fn)) return fn; /* linked by an earlier kernel */
  if (fn) {
    jit_fn_error(f, "template %s: the module already declares %s", d->name, entry);
    return NULL;
  }
  char label[64];
  snprintf(label, sizeof label, "template %s", d->name);
  if (jit_link_bitcode(f, d->bc, *d->len, label) != 0) return NULL;
  LLVMValueRef out = LLVMGetNamedFunction(f->mod, entry);
  if (!out || LLVMIsDeclaration(out)) {
    jit_fn_error(f, "template %s has no function %s", d->name, entry);
    return NULL;
  }
  return out;
}

LLVMValueRef jit_template_extern(jit_fn *f, jit_template_id t, const char *entry,
                                 const char *prefix) {
  if ((unsigned)t >= sizeof TEMPLATES / sizeof TEMPLATES[0]) {
    jit_fn_error(f, "unknown kernel template %d", (int)t);
    return NULL;
  }
  const tmpl_desc *d = &TEMPLATES[t];
  char name[160];
  snprintf(name, sizeof name, "%s%s", prefix, entry);
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, name);
  if (fn) return fn; /* declared by an earlier call */
  /* the entry's type, from a lazily read copy of the bitcode: only the
   * declarations are materialized, no function body; kept on f for the
   * kernel's other entries of the same template */
  if (f->tmpl_decls && f->tmpl_decls_id != (int)t) {
    LLVMDisposeModule(f->tmpl_decls);
    f->tmpl_decls = NULL;
  }
  if (!f->tmpl_decls) {
    LLVMMemoryBufferRef mb =
        LLVMCreateMemoryBufferWithMemoryRange((const char *)d->bc, *d->len, d->name, 0);
    LLVMModuleRef lazy = NULL;
    jit_diag_sink sink = {0};
    LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(f->ctx);
    void *old_ctx = LLVMContextGetDiagnosticContext(f->ctx);
    LLVMContextSetDiagnosticHandler(f->ctx, jit_diag_handler, &sink);
    bool bad = !mb || LLVMGetBitcodeModuleInContext2(f->ctx, mb, &lazy); /* takes mb if read */
    LLVMContextSetDiagnosticHandler(f->ctx, old_handler, old_ctx);
    if (bad) {
      if (mb) LLVMDisposeMemoryBuffer(mb);
      jit_fn_error(f, "template %s: the bitcode does not parse: %s", d->name, sink.msg);
      return NULL;
    }
    f->tmpl_decls = lazy;
    f->tmpl_decls_id = (int)t;
  }
  LLVMValueRef src = LLVMGetNamedFunction(f->tmpl_decls, entry);
  LLVMTypeRef ty = src ? LLVMGlobalGetValueType(src) : NULL; /* owned by f->ctx */
  if (!ty) {
    jit_fn_error(f, "template %s has no function %s", d->name, entry);
    return NULL;
  }
  return LLVMAddFunction(f->mod, name, ty);
}
