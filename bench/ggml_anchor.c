/* ggml_anchor.c - ggml's mul_mat for bench_quant, through dlopen (see
 * ggml_anchor.h). The declarations below are ggml's C API as of ggml 0.9+
 * (llama-cpp-python 0.3.x): functions taking and returning opaque pointers,
 * enum values passed as int, and ggml_init_params, unchanged since ggml's
 * first release. Every call that could mean something else in another
 * version is checked at open (the type names and block sizes per encoding).
 *
 * One product, as llama.cpp's CPU backend runs a model: the weight [k, n]
 * (ggml's ne0 = k: a row is one output) in a backend buffer of its own,
 * the CPU's plain one or CPU_REPACK (set_tensor repacks the blocks into
 * interleaved rows there), marked as weights; the lhs [k, m] f32 and the
 * mul_mat node in a CPU buffer; the graph built once and computed by the
 * CPU backend on the given thread count each run (ggml quantizes the lhs
 * to q8_0 / q8_K blocks inside, as kiln's qmatmul does). */
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

enum { GGML_TYPE_F32 = 0, GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1 };

/* ggml's type per qb_encoding and the name ggml_type_name gives it. */
static const struct {
  int type;
  const char *name;
} ggml_types[QB_COUNT] = {
    [QB_Q4_0] = {2, "q4_0"}, [QB_Q8_0] = {8, "q8_0"}, [QB_Q4_K] = {12, "q4_K"},
    [QB_Q5_K] = {13, "q5_K"}, [QB_Q6_K] = {14, "q6_K"},
};

typedef void *ptr;
struct anchor_ggml {
  void *base, *cpu; /* dlopen handles */
  const char *version;
  ptr (*init)(struct ggml_init_params);
  void (*free_ctx)(ptr ctx);
  ptr (*new_tensor_2d)(ptr ctx, int type, int64_t ne0, int64_t ne1);
  ptr (*mul_mat)(ptr ctx, ptr a, ptr b);
  ptr (*new_graph)(ptr ctx);
  void (*build_forward_expand)(ptr graph, ptr tensor);
  const char *(*type_name)(int type);
  size_t (*type_size)(int type);
  int64_t (*blck_size)(int type);
  size_t (*tensor_overhead)(void);
  size_t (*graph_overhead)(void);
  const char *(*status_string)(int status);
  ptr (*cpu_init)(void);
  void (*cpu_set_n_threads)(ptr backend, int threads);
  ptr (*cpu_buffer_type)(void);
  void (*backend_free)(ptr backend);
  ptr (*get_device)(ptr backend);
  ptr (*dev_backend_reg)(ptr dev);
  ptr (*reg_get_proc_address)(ptr reg, const char *name);
  bool (*dev_supports_op)(ptr dev, ptr op);
  const char *(*buft_name)(ptr buft);
  ptr (*alloc_ctx_tensors_from_buft)(ptr ctx, ptr buft);
  void (*buffer_set_usage)(ptr buffer, int usage);
  void (*buffer_free)(ptr buffer);
  void (*tensor_set)(ptr tensor, const void *data, size_t offset, size_t size);
  void (*tensor_get)(ptr tensor, void *data, size_t offset, size_t size);
  int (*graph_compute)(ptr backend, ptr graph);
};

struct anchor_ggml_gemv {
  anchor_ggml *g;
  int64_t m, n, k;
  ptr backend, weight_ctx, weight_buffer, io_ctx, io_buffer;
  ptr lhs, prod, graph;
};

static void *load(void *h, const char *name, char *err, size_t errlen) {
  void *f = dlsym(h, name);
  if (!f && err[0] == 0) snprintf(err, errlen, "ggml has no %s", name);
  return f;
}

/* object pointers to function pointers: POSIX's dlsym contract */
#define LOAD(lib, field, name) (*(void **)&g->field = load(g->lib, name, err, errlen))

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
  LOAD(base, init, "ggml_init");
  LOAD(base, free_ctx, "ggml_free");
  LOAD(base, new_tensor_2d, "ggml_new_tensor_2d");
  LOAD(base, mul_mat, "ggml_mul_mat");
  LOAD(base, new_graph, "ggml_new_graph");
  LOAD(base, build_forward_expand, "ggml_build_forward_expand");
  LOAD(base, type_name, "ggml_type_name");
  LOAD(base, type_size, "ggml_type_size");
  LOAD(base, blck_size, "ggml_blck_size");
  LOAD(base, tensor_overhead, "ggml_tensor_overhead");
  LOAD(base, graph_overhead, "ggml_graph_overhead");
  LOAD(base, status_string, "ggml_status_to_string");
  LOAD(cpu, cpu_init, "ggml_backend_cpu_init");
  LOAD(cpu, cpu_set_n_threads, "ggml_backend_cpu_set_n_threads");
  LOAD(cpu, cpu_buffer_type, "ggml_backend_cpu_buffer_type");
  LOAD(base, backend_free, "ggml_backend_free");
  LOAD(base, get_device, "ggml_backend_get_device");
  LOAD(base, dev_backend_reg, "ggml_backend_dev_backend_reg");
  LOAD(base, reg_get_proc_address, "ggml_backend_reg_get_proc_address");
  LOAD(base, dev_supports_op, "ggml_backend_dev_supports_op");
  LOAD(base, buft_name, "ggml_backend_buft_name");
  LOAD(base, alloc_ctx_tensors_from_buft, "ggml_backend_alloc_ctx_tensors_from_buft");
  LOAD(base, buffer_set_usage, "ggml_backend_buffer_set_usage");
  LOAD(base, buffer_free, "ggml_backend_buffer_free");
  LOAD(base, tensor_set, "ggml_backend_tensor_set");
  LOAD(base, tensor_get, "ggml_backend_tensor_get");
  LOAD(base, graph_compute, "ggml_backend_graph_compute");
  if (err[0]) goto fail;
  const char *(*version)(void);
  *(void **)&version = dlsym(g->base, "ggml_version");
  g->version = version ? version() : "?";
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

/* The libraries stay loaded: ggml keeps process-wide state (its backend
 * registry, the CPU backend's tables) that dlclose would orphan. */
void anchor_ggml_close(anchor_ggml *g) { free(g); }

const char *anchor_ggml_version(const anchor_ggml *g) { return g->version; }

/* The CPU device's extra buffer type named CPU_REPACK, or NULL. */
static ptr repack_buffer_type(anchor_ggml *g, ptr dev) {
  ptr *(*extra_bufts)(ptr dev);
  *(void **)&extra_bufts =
      g->reg_get_proc_address(g->dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts");
  ptr *b = extra_bufts ? extra_bufts(dev) : NULL;
  for (; b && *b; b++)
    if (strcmp(g->buft_name(*b), "CPU_REPACK") == 0) return *b;
  return NULL;
}

anchor_ggml_gemv *anchor_ggml_gemv_new(anchor_ggml *g, int enc, int64_t m, int64_t n, int64_t k,
                                       const uint8_t *w, bool repack, int threads, char *err,
                                       size_t errlen) {
  if (enc < 0 || enc >= QB_COUNT || m < 1 || n < 1 || k < 1 || k % QB_ELEMS(enc) != 0) {
    snprintf(err, errlen, "ggml gemv: bad shape or encoding (m %lld, n %lld, k %lld, enc %d)",
             (long long)m, (long long)n, (long long)k, enc);
    return NULL;
  }
  anchor_ggml_gemv *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "ggml gemv: out of memory");
    return NULL;
  }
  p->g = g, p->m = m, p->n = n, p->k = k;
  /* tensors only (no_alloc): their memory comes from the backend buffers */
  struct ggml_init_params wp = {4 * g->tensor_overhead(), NULL, true};
  struct ggml_init_params ip = {8 * g->tensor_overhead() + g->graph_overhead(), NULL, true};
  if (!(p->backend = g->cpu_init()) || !(p->weight_ctx = g->init(wp)) ||
      !(p->io_ctx = g->init(ip))) {
    snprintf(err, errlen, "ggml gemv: the CPU backend or a context could not be made");
    goto fail;
  }
  g->cpu_set_n_threads(p->backend, threads);
  ptr dev = g->get_device(p->backend);
  ptr buft = repack ? repack_buffer_type(g, dev) : g->cpu_buffer_type();
  if (!buft) {
    snprintf(err, errlen, "ggml has no CPU_REPACK buffer type");
    goto fail;
  }
  ptr weight = g->new_tensor_2d(p->weight_ctx, ggml_types[enc].type, k, n);
  if (!(p->weight_buffer = g->alloc_ctx_tensors_from_buft(p->weight_ctx, buft))) {
    snprintf(err, errlen, "ggml gemv: no %s buffer for the weight", g->buft_name(buft));
    goto fail;
  }
  g->buffer_set_usage(p->weight_buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  p->lhs = g->new_tensor_2d(p->io_ctx, GGML_TYPE_F32, k, m);
  p->prod = g->mul_mat(p->io_ctx, weight, p->lhs);
  p->graph = g->new_graph(p->io_ctx);
  g->build_forward_expand(p->graph, p->prod);
  if (!(p->io_buffer = g->alloc_ctx_tensors_from_buft(p->io_ctx, g->cpu_buffer_type()))) {
    snprintf(err, errlen, "ggml gemv: no CPU buffer for the lhs and result");
    goto fail;
  }
  /* a repack buffer holds only the types its CPU has kernels for; writing
   * any other type there would fail inside ggml */
  if (!g->dev_supports_op(dev, p->prod)) {
    snprintf(err, errlen, "ggml's %s has no kernel for %s weights on this CPU",
             g->buft_name(buft), ggml_types[enc].name);
    goto fail;
  }
  g->tensor_set(weight, w, 0, (size_t)(n * (k / QB_ELEMS(enc)) * QB_BYTES(enc)));
  return p;
fail:
  anchor_ggml_gemv_free(p);
  return NULL;
}

int anchor_ggml_gemv_run(anchor_ggml_gemv *p, const float *a, float *y, double *seconds) {
  anchor_ggml *g = p->g;
  g->tensor_set(p->lhs, a, 0, sizeof(float) * (size_t)(p->m * p->k));
  double t0 = bench_now_s();
  int status = g->graph_compute(p->backend, p->graph);
  *seconds = bench_now_s() - t0;
  if (status != 0) {
    fprintf(stderr, "ggml_backend_graph_compute: %s\n", g->status_string(status));
    return -1;
  }
  g->tensor_get(p->prod, y, 0, sizeof(float) * (size_t)(p->m * p->n));
  return 0;
}

void anchor_ggml_gemv_free(anchor_ggml_gemv *p) {
  if (!p) return;
  anchor_ggml *g = p->g;
  if (p->io_buffer) g->buffer_free(p->io_buffer);
  if (p->weight_buffer) g->buffer_free(p->weight_buffer);
  if (p->io_ctx) g->free_ctx(p->io_ctx);
  if (p->weight_ctx) g->free_ctx(p->weight_ctx);
  if (p->backend) g->backend_free(p->backend);
  free(p);
}
