/* ggml_anchor.c - ggml's mul_mat for bench_quant, through dlopen (see
 * ggml_anchor.h). The declarations below are ggml's C API as of ggml 0.9+
 * (llama-cpp-python 0.3.x): functions taking and returning opaque pointers,
 * enum values passed as int, and ggml_init_params, unchanged since ggml's
 * first release. Every call that could mean something else in another
 * version is checked at open (the type names and block sizes per encoding).
 *
 * One product: a weight tensor [k, n] (ggml's ne0 = k: a row is one output)
 * allocated once in its own context, and per run a small context in a
 * buffer kept for the purpose, holding the lhs [k, m] f32, the mul_mat node,
 * the graph and ggml's work buffer (the lhs quantized to q8_0 / q8_K blocks:
 * ggml's vec_dot types, the same as kiln's qmatmul lhs). */
#include "ggml_anchor.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/qblock.h"
#include "bench_util.h"

struct ggml_init_params {
  size_t mem_size;
  void *mem_buffer;
  bool no_alloc;
};

enum { GGML_TYPE_F32 = 0 };

/* ggml's type per qb_encoding and the name ggml_type_name gives it. */
static const struct {
  int type;
  const char *name;
} ggml_types[QB_COUNT] = {
    [QB_Q4_0] = {2, "q4_0"}, [QB_Q8_0] = {8, "q8_0"}, [QB_Q4_K] = {12, "q4_K"},
    [QB_Q5_K] = {13, "q5_K"}, [QB_Q6_K] = {14, "q6_K"},
};

struct anchor_ggml {
  void *base, *cpu; /* dlopen handles */
  const char *version;
  void *(*init)(struct ggml_init_params);
  void (*free_ctx)(void *ctx);
  void *(*new_tensor_2d)(void *ctx, int type, int64_t ne0, int64_t ne1);
  void *(*mul_mat)(void *ctx, void *a, void *b);
  void *(*new_graph)(void *ctx);
  void (*build_forward_expand)(void *graph, void *tensor);
  void *(*get_data)(const void *tensor);
  const char *(*type_name)(int type);
  size_t (*type_size)(int type);
  int64_t (*blck_size)(int type);
  size_t (*tensor_overhead)(void);
  size_t (*graph_overhead)(void);
  const char *(*status_string)(int status);
  int (*compute_with_ctx)(void *ctx, void *graph, int threads);
};

struct anchor_ggml_gemv {
  anchor_ggml *g;
  int type;
  int64_t m, n, k;
  void *weight_ctx, *weight;
  void *step_buffer; /* the per-run context's memory */
  size_t step_size;
};

static void *load(void *h, const char *name, char *err, size_t errlen) {
  void *f = dlsym(h, name);
  if (!f && err[0] == 0) snprintf(err, errlen, "ggml has no %s", name);
  return f;
}

anchor_ggml *anchor_ggml_open(const char *libdir, char *err, size_t errlen) {
  anchor_ggml *g = calloc(1, sizeof *g);
  char path[4096];
  err[0] = 0;
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  /* base first: libggml-cpu.so needs it and may have no rpath to find it */
  snprintf(path, sizeof path, "%s/libggml-base.so", libdir);
  if (!(g->base = dlopen(path, RTLD_NOW | RTLD_LOCAL))) goto dl_fail;
  snprintf(path, sizeof path, "%s/libggml-cpu.so", libdir);
  if (!(g->cpu = dlopen(path, RTLD_NOW | RTLD_LOCAL))) goto dl_fail;
  /* object pointers to function pointers: POSIX's dlsym contract */
  *(void **)&g->init = load(g->base, "ggml_init", err, errlen);
  *(void **)&g->free_ctx = load(g->base, "ggml_free", err, errlen);
  *(void **)&g->new_tensor_2d = load(g->base, "ggml_new_tensor_2d", err, errlen);
  *(void **)&g->mul_mat = load(g->base, "ggml_mul_mat", err, errlen);
  *(void **)&g->new_graph = load(g->base, "ggml_new_graph", err, errlen);
  *(void **)&g->build_forward_expand = load(g->base, "ggml_build_forward_expand", err, errlen);
  *(void **)&g->get_data = load(g->base, "ggml_get_data", err, errlen);
  *(void **)&g->type_name = load(g->base, "ggml_type_name", err, errlen);
  *(void **)&g->type_size = load(g->base, "ggml_type_size", err, errlen);
  *(void **)&g->blck_size = load(g->base, "ggml_blck_size", err, errlen);
  *(void **)&g->tensor_overhead = load(g->base, "ggml_tensor_overhead", err, errlen);
  *(void **)&g->graph_overhead = load(g->base, "ggml_graph_overhead", err, errlen);
  *(void **)&g->status_string = load(g->base, "ggml_status_to_string", err, errlen);
  *(void **)&g->compute_with_ctx = load(g->cpu, "ggml_graph_compute_with_ctx", err, errlen);
  if (err[0]) goto fail;
  const char *(*version)(void);
  *(void **)&version = dlsym(g->base, "ggml_version");
  g->version = version ? version() : "?";
  void (*cpu_init)(void);
  *(void **)&cpu_init = dlsym(g->cpu, "ggml_cpu_init");
  if (cpu_init) cpu_init();
  if (strcmp(g->type_name(GGML_TYPE_F32), "f32") != 0) {
    snprintf(err, errlen, "ggml type 0 is %s, not f32", g->type_name(GGML_TYPE_F32));
    goto fail;
  }
  for (int e = 0; e < QB_COUNT; e++) {
    int t = ggml_types[e].type;
    const char *name = g->type_name(t);
    if (!name || strcmp(name, ggml_types[e].name) != 0 || g->blck_size(t) != QB_ELEMS(e) ||
        g->type_size(t) != (size_t)QB_BYTES(e)) {
      snprintf(err, errlen,
               "ggml %s: type %d is %s (%lld elements in %zu bytes), expected %s (%d in %d)",
               g->version, t, name ? name : "?", (long long)g->blck_size(t), g->type_size(t),
               ggml_types[e].name, QB_ELEMS(e), QB_BYTES(e));
      goto fail;
    }
  }
  return g;
dl_fail:
  snprintf(err, errlen, "%s", dlerror());
fail:
  anchor_ggml_close(g);
  return NULL;
}

void anchor_ggml_close(anchor_ggml *g) {
  if (!g) return;
  if (g->cpu) dlclose(g->cpu);
  if (g->base) dlclose(g->base);
  free(g);
}

const char *anchor_ggml_version(const anchor_ggml *g) { return g->version; }

anchor_ggml_gemv *anchor_ggml_gemv_new(anchor_ggml *g, int enc, int64_t m, int64_t n, int64_t k,
                                       const uint8_t *w, char *err, size_t errlen) {
  if (enc < 0 || enc >= QB_COUNT || m < 1 || n < 1 || k < 1 || k % QB_ELEMS(enc) != 0) {
    snprintf(err, errlen, "ggml gemv: bad shape or encoding (m %lld, n %lld, k %lld, enc %d)",
             (long long)m, (long long)n, (long long)k, enc);
    return NULL;
  }
  anchor_ggml_gemv *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->g = g, p->type = ggml_types[enc].type, p->m = m, p->n = n, p->k = k;
  size_t wbytes = (size_t)(n * (k / QB_ELEMS(enc)) * QB_BYTES(enc));
  struct ggml_init_params wp = {wbytes + g->tensor_overhead() + 4096, NULL, false};
  if (!(p->weight_ctx = g->init(wp))) goto oom;
  p->weight = g->new_tensor_2d(p->weight_ctx, p->type, k, n);
  memcpy(g->get_data(p->weight), w, wbytes);
  /* lhs, result, ggml's quantized lhs (at most 2 bytes an element) and the
   * graph, with room to spare: running out would abort inside ggml */
  p->step_size = (size_t)(m * k) * 6 + (size_t)(m * n) * 4 + 4 * g->tensor_overhead() +
                 g->graph_overhead() + (1u << 20);
  if (!(p->step_buffer = malloc(p->step_size))) goto oom;
  return p;
oom:
  snprintf(err, errlen, "ggml gemv: out of memory");
  anchor_ggml_gemv_free(p);
  return NULL;
}

int anchor_ggml_gemv_run(anchor_ggml_gemv *p, const float *a, float *y, int threads,
                         double *seconds) {
  anchor_ggml *g = p->g;
  struct ggml_init_params sp = {p->step_size, p->step_buffer, false};
  void *ctx = g->init(sp);
  if (!ctx) return -1;
  void *lhs = g->new_tensor_2d(ctx, GGML_TYPE_F32, p->k, p->m);
  memcpy(g->get_data(lhs), a, sizeof(float) * (size_t)(p->m * p->k));
  double t0 = bench_now_s();
  void *prod = g->mul_mat(ctx, p->weight, lhs);
  void *graph = g->new_graph(ctx);
  g->build_forward_expand(graph, prod);
  int status = g->compute_with_ctx(ctx, graph, threads);
  *seconds = bench_now_s() - t0;
  if (status == 0) memcpy(y, g->get_data(prod), sizeof(float) * (size_t)(p->m * p->n));
  else fprintf(stderr, "ggml_graph_compute: %s\n", g->status_string(status));
  g->free_ctx(ctx);
  return status == 0 ? 0 : -1;
}

void anchor_ggml_gemv_free(anchor_ggml_gemv *p) {
  if (!p) return;
  if (p->weight_ctx) p->g->free_ctx(p->weight_ctx);
  free(p->step_buffer);
  free(p);
}
