/* simt_check.c - helpers the SIMT tests share (simt_check.h). */
#include "simt_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double simt_urand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (double)(*s >> 11) / 9007199254740992.0;
}

void simt_fill(ir_tensor *t, uint64_t *s, double span, int ispan) {
  int64_t n = ir_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double u = simt_urand(s);
    switch (t->dtype) {
    case IR_DT_F32: ((float *)t->data)[i] = (float)(u * span - span / 2); break;
    case IR_DT_F64: ((double *)t->data)[i] = u * span - span / 2; break;
    case IR_DT_SI32: ((int32_t *)t->data)[i] = (int32_t)(u * ispan) - ispan / 2; break;
    case IR_DT_SI64: ((int64_t *)t->data)[i] = (int64_t)(u * ispan) - ispan / 2; break;
    case IR_DT_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
    default: cr_assert_fail("no generator for %s", ir_dtype_name(t->dtype));
    }
  }
}

bool simt_close(ir_dtype dt, const void *got, const void *want, int64_t i, double f32_tol) {
  if (dt == IR_DT_F32 || dt == IR_DT_F64) {
    double g = dt == IR_DT_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
    double w = dt == IR_DT_F32 ? ((const float *)want)[i] : ((const double *)want)[i];
    if (isnan(w)) return isnan(g);
    if (isinf(w)) return g == w;
    double tol = (dt == IR_DT_F32 ? f32_tol : 1e-12) * (1 + fabs(w));
    return fabs(g - w) <= tol;
  }
  size_t es = ir_dtype_size(dt);
  return memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0;
}

void *simt_emit_node(const ir_graph *g, const ir_node *n, const jit_simt_target *t,
                     const char *name, size_t *len, char *err, size_t errlen) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, t, name, err, errlen);
  void *out = NULL;
  if (mod) {
    jit_simt_fn sf;
    jit_simt_begin(&sf, t, ctx, mod, g, n, name, JIT_SIMT_BLOCK, err, errlen);
    int rc = sf.f.failed ? -1 : jit_simt_lower_node(&sf);
    if (rc == 0) jit_simt_finish(&sf);
    bool ok = rc == 0 && !sf.f.failed;
    jit_simt_dispose(&sf);
    if (ok && jit_simt_emit(mod, t, &out, len, err, errlen) < 0) out = NULL;
    LLVMDisposeModule(mod);
  }
  LLVMContextDispose(ctx);
  return out;
}

void simt_expect_ptxas(const void *ptx, size_t len, const char *what) {
  if (!ptx || len < 1 || system("command -v ptxas >/dev/null 2>&1") != 0) return;
  char path[] = "/tmp/kiln-simt-ptx-XXXXXX.ptx";
  int fd = mkstemps(path, 4);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, ptx, len - 1), (ssize_t)(len - 1));
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ptxas -arch=sm_80 %s -o /dev/null", path);
  cr_expect_eq(system(cmd), 0, "ptxas rejected %s (%s)", what, path);
  unlink(path);
}
