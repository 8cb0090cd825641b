/* dnnl_util.h - oneDNN steps the benchmarks share (bench/conv.c,
 * bench/gemm_int8.c; included only where the build found oneDNN,
 * KILN_BENCH_DNNL): a weight reordered once into the layout a primitive
 * asked for, a src / weights / dst primitive run to completion, and a
 * matmul primitive set up on row-major buffers (bench/gemm_int8.c,
 * bench/gemm_half.c). Each returns dnnl_success or the first failing
 * call's status. */
#ifndef KILN_BENCH_DNNL_UTIL_H
#define KILN_BENCH_DNNL_UTIL_H

#include <dnnl.h>
#include <stdint.h>
#include <string.h>

/* *out: user data `data` (layout user_md) in the primitive's layout want_md:
 * the user memory itself when the layouts are equal, else a new memory
 * filled by one reorder, outside any timing. */
static inline dnnl_status_t bench_dnnl_weights(dnnl_engine_t eng, dnnl_stream_t s,
                                               const dnnl_memory_desc_t *user_md, void *data,
                                               const dnnl_memory_desc_t *want_md,
                                               dnnl_memory_t *out) {
  dnnl_memory_t user;
  dnnl_status_t st = dnnl_memory_create(&user, user_md, eng, data);
  if (st != dnnl_success || dnnl_memory_desc_equal(want_md, user_md)) {
    *out = user;
    return st;
  }
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t r = NULL;
  if ((st = dnnl_memory_create(out, want_md, eng, DNNL_MEMORY_ALLOCATE)) == dnnl_success &&
      (st = dnnl_reorder_primitive_desc_create(&rpd, user_md, eng, want_md, eng, NULL)) ==
          dnnl_success &&
      (st = dnnl_primitive_create(&r, rpd)) == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, *out}};
    if ((st = dnnl_primitive_execute(r, s, 2, args)) == dnnl_success) st = dnnl_stream_wait(s);
  }
  if (r) dnnl_primitive_destroy(r);
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  dnnl_memory_destroy(user);
  return st;
}

/* p(src, weights) -> dst, waited for */
static inline dnnl_status_t bench_dnnl_run(dnnl_primitive_t p, dnnl_stream_t s, dnnl_memory_t src,
                                           dnnl_memory_t wts, dnnl_memory_t dst) {
  dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}};
  dnnl_status_t st = dnnl_primitive_execute(p, s, 3, a);
  return st == dnnl_success ? dnnl_stream_wait(s) : st;
}

/* A matmul primitive c (m x n, dst_dt) = a (m x k, src_dt) x b (k x n,
 * wei_dt), all row-major, on one CPU engine and stream: the weights as
 * given (prepack false) or reordered once into the layout the primitive
 * prefers (format any: oneDNN's best case). The memories wrap the caller's
 * buffers (but a reordered b). */
typedef struct bench_dnnl_mm {
  dnnl_engine_t eng;
  dnnl_stream_t s;
  dnnl_primitive_t p;
  dnnl_memory_t am, bm, cm;
} bench_dnnl_mm;

static inline dnnl_status_t bench_dnnl_mm_init(bench_dnnl_mm *d, int64_t m, int64_t n, int64_t k,
                                               dnnl_data_type_t src_dt, dnnl_data_type_t wei_dt,
                                               dnnl_data_type_t dst_dt, void *a, void *b,
                                               void *c, int prepack) {
  dnnl_memory_desc_t amd, bmd, bplain, cmd;
  dnnl_dims_t ad = {m, k}, bd = {k, n}, cd = {m, n};
  dnnl_matmul_desc_t md;
  dnnl_primitive_desc_t pd = NULL;
  memset(d, 0, sizeof *d);
  /* each step runs while every one before it succeeded */
  dnnl_status_t st = dnnl_engine_create(&d->eng, dnnl_cpu, 0);
  if (st == dnnl_success) st = dnnl_stream_create(&d->s, d->eng, dnnl_stream_default_flags);
  if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&amd, 2, ad, src_dt, dnnl_ab);
  if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&bplain, 2, bd, wei_dt, dnnl_ab);
  if (st == dnnl_success)
    st = dnnl_memory_desc_init_by_tag(&bmd, 2, bd, wei_dt,
                                      prepack ? dnnl_format_tag_any : dnnl_ab);
  if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dst_dt, dnnl_ab);
  if (st == dnnl_success) st = dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd);
  if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL);
  if (st == dnnl_success) st = dnnl_primitive_create(&d->p, pd);
  if (st == dnnl_success) st = dnnl_memory_create(&d->am, &amd, d->eng, a);
  if (st == dnnl_success) st = dnnl_memory_create(&d->cm, &cmd, d->eng, c);
  if (st == dnnl_success)
    st = bench_dnnl_weights(d->eng, d->s, &bplain, b,
                            dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &d->bm);
  if (pd) dnnl_primitive_desc_destroy(pd);
  return st;
}

static inline dnnl_status_t bench_dnnl_mm_run(bench_dnnl_mm *d) {
  return bench_dnnl_run(d->p, d->s, d->am, d->bm, d->cm);
}

static inline void bench_dnnl_mm_free(bench_dnnl_mm *d) {
  if (d->am) dnnl_memory_destroy(d->am);
  if (d->bm) dnnl_memory_destroy(d->bm);
  if (d->cm) dnnl_memory_destroy(d->cm);
  if (d->p) dnnl_primitive_destroy(d->p);
  if (d->s) dnnl_stream_destroy(d->s);
  if (d->eng) dnnl_engine_destroy(d->eng);
}

#endif
