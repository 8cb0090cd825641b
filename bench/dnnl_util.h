/* dnnl_util.h - oneDNN steps the benchmarks share (bench/conv.c,
 * bench/gemm_int8.c; included only where the build found oneDNN,
 * KILN_BENCH_DNNL): a weight reordered once into the layout a primitive
 * asked for, and a src / weights / dst primitive run to completion. Each
 * returns dnnl_success or the first failing call's status. */
#ifndef KILN_BENCH_DNNL_UTIL_H
#define KILN_BENCH_DNNL_UTIL_H

#include <dnnl.h>

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

#endif
