/* simt_mathlib.c - find and read the device math library of a GPU SIMT
 * target for jit/ (simt_mathlib.h; jit/simt_math.c links it):
 *   nvptx   CUDA's libdevice.10.bc: KILN_LIBDEVICE, else
 *           $CUDA_HOME/nvvm/libdevice/libdevice.10.bc when readable, else
 *           /usr/local/cuda/nvvm/libdevice/libdevice.10.bc;
 *   amdgpu  ROCm's ocml.bc: KILN_OCML, else Debian's rocm-device-libs in
 *           /usr/lib/x86_64-linux-gnu/amdgcn/bitcode, else
 *           /opt/rocm/amdgcn/bitcode, else the newest clang's
 *           /opt/rocm/lib/llvm/lib/clang/N/lib/amdgcn/bitcode.
 * A variable, when set and not empty, is taken as it is (a file it names
 * that cannot be read is an error naming it, not a reason to look
 * elsewhere). Guarantees: a library that is not found or cannot be read is
 * an error naming the kernel's call that needs it, the path (or the places
 * looked at) and how to provide it (the variable, the package); the path
 * keys use (rt_simt_mathlib_path) is the file the resolver reads. Reads the
 * environment each time, keeps no state: any thread. */
#include "simt_mathlib.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

#define LIBDEVICE_DEFAULT "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
#define OCML_DEBIAN "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc"
#define OCML_ROCM "/opt/rocm/amdgcn/bitcode/ocml.bc"
#define OCML_ROCM_CLANG "/opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode/ocml.bc"

static const char LIBDEVICE_HINT[] = "install the CUDA toolkit or set KILN_LIBDEVICE";
static const char OCML_HINT[] =
    "install the package rocm-device-libs or set KILN_OCML to the path of ocml.bc";

static bool readable(const char *path) { return access(path, R_OK) == 0; }

static const char *env_value(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static const char *libdevice_path(char *buf, size_t cap) {
  const char *env = env_value("KILN_LIBDEVICE");
  if (env) return env;
  const char *home = env_value("CUDA_HOME");
  if (home) {
    snprintf(buf, cap, "%s/nvvm/libdevice/libdevice.10.bc", home);
    if (readable(buf)) return buf;
  }
  snprintf(buf, cap, "%s", LIBDEVICE_DEFAULT);
  return buf;
}

/* *found: false when no candidate exists (buf then holds the first). */
static const char *ocml_path(char *buf, size_t cap, bool *found) {
  *found = true;
  const char *env = env_value("KILN_OCML");
  if (env) return env;
  static const char *const fixed[] = {OCML_DEBIAN, OCML_ROCM};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (readable(fixed[i])) {
      snprintf(buf, cap, "%s", fixed[i]);
      return buf;
    }
  glob_t g;
  if (glob(OCML_ROCM_CLANG, 0, NULL, &g) == 0) {
    /* sorted: the last is the newest clang's */
    for (size_t i = g.gl_pathc; i-- > 0;)
      if (readable(g.gl_pathv[i]) && strlen(g.gl_pathv[i]) < cap) {
        snprintf(buf, cap, "%s", g.gl_pathv[i]);
        globfree(&g);
        return buf;
      }
    globfree(&g);
  }
  *found = false;
  snprintf(buf, cap, "%s", OCML_DEBIAN);
  return buf;
}

const char *rt_simt_mathlib_path(const jit_simt_target *t, char *buf, size_t cap) {
  bool found;
  switch (t->kind) {
  case JIT_SIMT_NVPTX: return libdevice_path(buf, cap);
  case JIT_SIMT_AMDGPU: return ocml_path(buf, cap, &found);
  case JIT_SIMT_EMU: return NULL;
  }
  return NULL;
}

/* jit_simt_math.find: t's library, read whole. */
static int find_mathlib(void *ud, const jit_simt_target *t, const char *needs,
                        jit_simt_mathlib *lib, char *err, size_t errlen) {
  (void)ud;
  char buf[1024];
  bool found = true;
  const char *path = t->kind == JIT_SIMT_NVPTX    ? libdevice_path(buf, sizeof buf)
                     : t->kind == JIT_SIMT_AMDGPU ? ocml_path(buf, sizeof buf, &found)
                                                  : NULL;
  if (!path) {
    snprintf(err, errlen, "%s, but simt-emu has no device math library (it calls libm)", needs);
    return -1;
  }
  const char *hint = t->kind == JIT_SIMT_NVPTX ? LIBDEVICE_HINT : OCML_HINT;
  if (!found) {
    snprintf(err, errlen, "%s, which was not found (looked for %s, %s, %s); %s", needs,
             OCML_DEBIAN, OCML_ROCM, OCML_ROCM_CLANG, hint);
    return -1;
  }
  kiln_status st = {0};
  size_t len = 0;
  char *data = rt_read_file(path, path, &len, &st);
  if (!data) {
    snprintf(err, errlen, "%s: %s; %s", needs, st.msg ? st.msg : path, hint);
    free(st.msg);
    return -1;
  }
  lib->data = data;
  lib->len = len;
  snprintf(lib->label, sizeof lib->label, "%s", path);
  lib->hint = hint;
  return 0;
}

const jit_simt_math rt_simt_math = {NULL, find_mathlib};
