/* max_test.h - helpers shared by the MAX C API tests (tests/test_max_*.c),
 * written only against include/max/c/: the setup flow (status, config, host
 * device, context), compiling a graph file, borrowing f32 inputs, reading f32
 * outputs by name, writing a small .safetensors file, and C reference
 * computations (relu, dense layers) to check outputs against. */
#ifndef KILN_TESTS_MAX_TEST_H
#define KILN_TESTS_MAX_TEST_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "max/c/common.h"
#include "max/c/context.h"
#include "max/c/device.h"
#include "max/c/model.h"
#include "max/c/safetensors.h"
#include "max/c/tensor.h"
#include "max/c/types.h"
#include "max/c/weights.h"

#define MAX_EX(name) KILN_SHARED_DIR "/ir-examples/" name
#define MAX_GRAPH(name) KILN_SOURCE_DIR "/tests/max/" name

#define MAX_OK(st) cr_assert(!M_isError(st), "unexpected error: %s", M_getError(st))

typedef struct max_env {
  M_Status *st;
  M_RuntimeConfig *cfg;
  M_Device *host;
  M_RuntimeContext *ctx;
} max_env;

static inline void max_env_open(max_env *e) {
  e->st = M_newStatus();
  cr_assert(e->st);
  e->cfg = M_newRuntimeConfig();
  cr_assert(e->cfg);
  e->host = M_newDevice(M_HOST, 0, e->st);
  MAX_OK(e->st);
  M_runtimeConfigAddDevice(e->cfg, e->host);
  e->ctx = M_newRuntimeContext(e->cfg, e->st);
  MAX_OK(e->st);
  cr_assert(e->ctx);
}

/* Frees in the reverse order of max_env_open. */
static inline void max_env_close(max_env *e) {
  M_freeRuntimeContext(e->ctx);
  M_freeDevice(e->host);
  M_freeRuntimeConfig(e->cfg);
  M_freeStatus(e->st);
}

/* Compile `path` (sync or async + wait); asserts success. */
static inline M_AsyncCompiledModel *max_compile(max_env *e, const char *path, int sync) {
  M_CompileConfig *cc = M_newCompileConfig();
  cr_assert(cc);
  M_setModelPath(cc, path);
  M_AsyncCompiledModel *cm =
      sync ? M_compileModelSync(e->ctx, &cc, e->st) : M_compileModel(e->ctx, &cc, e->st);
  MAX_OK(e->st);
  cr_assert(cm);
  cr_assert_null(cc, "the compile call must take the config and set it to NULL");
  if (!sync) {
    M_waitForCompilation(cm, e->st);
    MAX_OK(e->st);
  }
  return cm;
}

static inline void max_borrow_f32(max_env *e, M_AsyncTensorMap *map, const char *name, float *data,
                                  const int64_t *shape, int64_t rank) {
  M_TensorSpec *spec = M_newTensorSpec(shape, rank, M_FLOAT32, name, e->host);
  cr_assert(spec);
  M_borrowTensorInto(map, data, spec, e->st);
  M_freeTensorSpec(spec); /* the map keeps its own copy */
  MAX_OK(e->st);
}

/* Asserts that output `name` of `outputs` has n f32 values equal to want
 * (within tol, relative to max(1, |want|)). */
static inline void max_expect_f32(max_env *e, M_AsyncTensorMap *outputs, const char *name,
                                  const float *want, size_t n, float tol) {
  M_AsyncTensor *t = M_getTensorByNameFrom(outputs, name, e->st);
  MAX_OK(e->st);
  cr_assert(t);
  cr_assert_eq(M_getTensorType(t), M_FLOAT32);
  cr_assert_eq(M_getTensorNumElements(t), n, "output '%s': %zu elements, expected %zu", name,
               M_getTensorNumElements(t), n);
  const float *got = M_getTensorData(t);
  cr_assert(got || n == 0);
  for (size_t i = 0; i < n; i++) {
    float scale = fabsf(want[i]) > 1.0f ? fabsf(want[i]) : 1.0f;
    cr_assert(fabsf(got[i] - want[i]) <= tol * scale, "output '%s'[%zu] = %.7g, expected %.7g",
              name, i, got[i], want[i]);
  }
  M_freeTensor(t);
}

/* y[b][o] = act(sum_i x[b][i] * w[i][o] + bias[o]); relu when act != 0. */
static inline void max_ref_dense(const float *x, const float *w, const float *bias, float *y,
                                 int batch, int in, int out, int relu) {
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < out; o++) {
      double s = bias[o];
      for (int i = 0; i < in; i++) s += (double)x[b * in + i] * w[i * out + o];
      float v = (float)s;
      y[b * out + o] = relu && v < 0 ? 0.0f : v;
    }
}

/* Deterministic values in [-scale, scale). */
static inline void max_fill(float *v, size_t n, unsigned seed, float scale) {
  unsigned s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
}

/* Writes f32 tensors names[n] (shapes[i][ranks[i]], data[i]) as a
 * .safetensors file: 8-byte little-endian header length, JSON header padded
 * with spaces to a multiple of 8, then the data. */
static inline void max_write_safetensors(const char *path, int n, const char *const *names,
                                         const int *ranks, const int64_t shapes[][4],
                                         const float *const *data) {
  char hdr[4096];
  size_t k = 0, off = 0;
  k += (size_t)snprintf(hdr + k, sizeof hdr - k, "{");
  for (int i = 0; i < n; i++) {
    size_t numel = 1;
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                          i ? "," : "", names[i]);
    for (int a = 0; a < ranks[i]; a++) {
      k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%s%lld", a ? "," : "",
                            (long long)shapes[i][a]);
      numel *= (size_t)shapes[i][a];
    }
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "],\"data_offsets\":[%zu,%zu]}", off,
                          off + numel * 4);
    off += numel * 4;
  }
  k += (size_t)snprintf(hdr + k, sizeof hdr - k, "}");
  cr_assert(k < sizeof hdr - 8);
  while (k % 8) hdr[k++] = ' ';
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  unsigned char len[8];
  for (int b = 0; b < 8; b++) len[b] = (unsigned char)((uint64_t)k >> (8 * b));
  cr_assert_eq(fwrite(len, 1, 8, f), 8u);
  cr_assert_eq(fwrite(hdr, 1, k, f), k);
  for (int i = 0; i < n; i++) {
    size_t numel = 1;
    for (int a = 0; a < ranks[i]; a++) numel *= (size_t)shapes[i][a];
    cr_assert_eq(fwrite(data[i], 4, numel, f), numel);
  }
  cr_assert_eq(fclose(f), 0);
}

#endif
