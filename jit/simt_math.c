/* simt_math.c - math functions for SIMT kernels on GPUs (simt.h).
 *
 * The scalar code shared with the CPU path calls LLVM intrinsics (llvm.exp,
 * llvm.sin, ...) and libm functions (erff, tanh, log1p, ...). A GPU has no
 * libm, and the NVPTX backend cannot select most of those intrinsics (it
 * aborts on llvm.sin), so before optimizing a GPU module:
 *   - transcendental intrinsic calls become calls to the libm names;
 *   - nvptx: every libm name becomes libdevice's __nv_<name>, and CUDA's
 *     libdevice.10.bc is linked in (KILN_LIBDEVICE, else
 *     $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, else
 *     /usr/local/cuda/nvvm/libdevice/libdevice.10.bc); what it brings is
 *     internalized so O3 keeps only what the kernels call;
 *   - amdgpu: f32 intrinsics stay (the backend has them); libm names would
 *     need ROCm's device libraries, which kiln does not link yet.
 * After optimizing, jit_simt_check_externals refuses a module that still
 * calls a function it does not define: a clear error naming the function,
 * instead of a PTX that ptxas rejects or a code object that fails to load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Linker.h>

#include "simt.h"

static const char *const transcendental[] = {"exp", "exp2", "exp10", "log", "log2", "log10",
                                             "sin", "cos", "tan", "pow"};

/* "llvm.exp.f32" -> "expf", "llvm.pow.f64" -> "pow"; NULL when not one of
 * ours (or a type with no libm name). */
static bool libm_name_of(const char *intr, char *out, size_t cap) {
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
    return true;
  }
  return false;
}

static bool is_f32_intrinsic(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".f32") == 0;
}

/* Point every use of `from` at a declaration named `to` of the same type. */
static void redirect(LLVMModuleRef mod, LLVMValueRef from, const char *to) {
  LLVMTypeRef fty = LLVMGlobalGetValueType(from);
  LLVMValueRef dst = LLVMGetNamedFunction(mod, to);
  if (!dst) dst = LLVMAddFunction(mod, to, fty);
  LLVMReplaceAllUsesWith(from, dst);
  LLVMDeleteFunction(from);
}

static const char *libdevice_path(char *buf, size_t cap) {
  const char *env = getenv("KILN_LIBDEVICE");
  if (env && *env) return env;
  const char *home = getenv("CUDA_HOME");
  FILE *f;
  if (home && *home) {
    snprintf(buf, cap, "%s/nvvm/libdevice/libdevice.10.bc", home);
    if ((f = fopen(buf, "rb"))) {
      fclose(f);
      return buf;
    }
  }
  snprintf(buf, cap, "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  return buf;
}

/* Link libdevice into mod; its functions become internal. */
static int link_libdevice(LLVMModuleRef mod, const char *needs, char *err, size_t errlen) {
  char buf[1024];
  const char *path = libdevice_path(buf, sizeof buf);
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &msg)) {
    snprintf(err, errlen,
             "%s needs CUDA's libdevice on nvptx: %s cannot be read (%s); install the CUDA "
             "toolkit or set KILN_LIBDEVICE",
             needs, path, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMModuleRef lib = NULL;
  if (LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), mb, &lib)) {
    LLVMDisposeMemoryBuffer(mb);
    snprintf(err, errlen, "%s: not LLVM bitcode (libdevice)", path);
    return -1;
  }
  LLVMDisposeMemoryBuffer(mb);
  LLVMSetTarget(lib, LLVMGetTarget(mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  /* remember what is ours: everything else defined after the link is
   * libdevice's and becomes internal */
  size_t cap = 16, n = 0;
  char **ours = malloc(cap * sizeof *ours);
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && ours; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn)) continue;
    if (n == cap) {
      char **g = realloc(ours, (cap *= 2) * sizeof *ours);
      if (!g) break;
      ours = g;
    }
    ours[n++] = strdup(LLVMGetValueName2(fn, &(size_t){0}));
  }
  if (LLVMLinkModules2(mod, lib)) { /* takes lib */
    snprintf(err, errlen, "linking libdevice (%s) failed", path);
    for (size_t i = 0; i < n; i++) free(ours[i]);
    free(ours);
    return -1;
  }
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn)) continue;
    const char *name = LLVMGetValueName2(fn, &(size_t){0});
    bool mine = false;
    for (size_t i = 0; i < n && !mine; i++) mine = ours[i] && strcmp(ours[i], name) == 0;
    if (!mine) LLVMSetLinkage(fn, LLVMInternalLinkage);
  }
  for (size_t i = 0; i < n; i++) free(ours[i]);
  free(ours);
  return 0;
}

int jit_simt_legalize_math(LLVMModuleRef mod, const jit_simt_target *t, char *err,
                           size_t errlen) {
  if (t->kind == JIT_SIMT_EMU) return 0; /* host code: libm is there */
  /* 1. transcendental intrinsics -> libm names (amdgpu keeps f32 ones) */
  LLVMValueRef fn = LLVMGetFirstFunction(mod);
  while (fn) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    const char *name = LLVMGetValueName2(fn, &(size_t){0});
    char libm[32];
    if (LLVMIsDeclaration(fn) && libm_name_of(name, libm, sizeof libm) &&
        !(t->kind == JIT_SIMT_AMDGPU && is_f32_intrinsic(name) && strncmp(name, "llvm.pow", 8)))
      redirect(mod, fn, libm);
    fn = next;
  }
  if (t->kind != JIT_SIMT_NVPTX) return 0;
  /* 2. nvptx: libm names -> libdevice */
  char first[64] = "";
  fn = LLVMGetFirstFunction(mod);
  while (fn) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    const char *name = LLVMGetValueName2(fn, &(size_t){0});
    if (LLVMIsDeclaration(fn) && strncmp(name, "llvm.", 5) != 0 && strncmp(name, "__nv_", 5) != 0 &&
        LLVMGetFirstUse(fn)) {
      char nv[96];
      snprintf(nv, sizeof nv, "__nv_%s", name);
      if (!first[0]) snprintf(first, sizeof first, "%s", name);
      redirect(mod, fn, nv);
    }
    fn = next;
  }
  if (!first[0]) return 0;
  char needs[96];
  snprintf(needs, sizeof needs, "the kernel's call to %s", first);
  return link_libdevice(mod, needs, err, errlen);
}

int jit_simt_check_externals(LLVMModuleRef mod, const jit_simt_target *t, char *err,
                             size_t errlen) {
  if (t->kind == JIT_SIMT_EMU) return 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    const char *name = LLVMGetValueName2(fn, &(size_t){0});
    if (!LLVMIsDeclaration(fn) || strncmp(name, "llvm.", 5) == 0 || !LLVMGetFirstUse(fn))
      continue;
    snprintf(err, errlen,
             "the kernel calls %s, which kiln cannot provide on %s yet (%s)", name, t->arch,
             t->kind == JIT_SIMT_AMDGPU ? "it needs ROCm's device libraries (ocml)"
                                        : "it is not in libdevice");
    return -1;
  }
  return 0;
}
