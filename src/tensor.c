/* tensor.c - dense CPU tensors: owned (64-byte aligned, kiln frees) or
 * borrowed (the caller's memory, never freed by kiln).
 *
 * Shapes are checked once here (no negative dims, no size overflow), so code
 * holding a kiln_tensor may trust numel and nbytes. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kiln/device.h"
#include "rt.h"

void *rt_aligned_alloc(size_t size) {
  if (size > SIZE_MAX - RT_ALIGN) return NULL;
  size_t n = (size + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
  if (n == 0) n = RT_ALIGN;
  return aligned_alloc(RT_ALIGN, n);
}

void *rt_aligned_alloc_large(size_t size) {
  if (size < RT_HUGE_BYTES) return rt_aligned_alloc(size);
  void *p = NULL;
  if (posix_memalign(&p, RT_HUGE_BYTES, size) != 0) return NULL;
#if defined(MADV_HUGEPAGE)
  /* advice only: a kernel without THP (or with it off) keeps small pages */
  (void)madvise(p, size / RT_HUGE_BYTES * RT_HUGE_BYTES, MADV_HUGEPAGE);
#endif
  return p;
}

int rt_shape_bytes(kiln_dtype dt, int rank, const int64_t *shape, int64_t *numel, size_t *nbytes,
                   kiln_status *st) {
  if ((unsigned)dt >= KILN_DTYPE_COUNT)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "invalid dtype %d", (int)dt);
  if (rank < 0) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "negative rank %d", rank);
  if (rank > 0 && !shape)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "shape is NULL for a rank-%d tensor", rank);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "axis %d has negative size %lld", i,
                    (long long)shape[i]);
    if (shape[i] != 0 && n > INT64_MAX / shape[i])
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "tensor size overflows at axis %d", i);
    n *= shape[i];
  }
  size_t es = kiln_dtype_size(dt);
  if ((uint64_t)n > SIZE_MAX / es)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "tensor of %lld elements is too large",
                  (long long)n);
  *numel = n;
  *nbytes = (size_t)n * es;
  return 0;
}

kiln_tensor *rt_tensor_header(kiln_dtype dtype, int rank, const int64_t *shape,
                              kiln_status *st) {
  int64_t numel;
  size_t nbytes;
  if (rt_shape_bytes(dtype, rank, shape, &numel, &nbytes, st) < 0) return NULL;
  kiln_tensor *t = malloc(sizeof(kiln_tensor) + (size_t)rank * sizeof(int64_t));
  if (!t) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory allocating a tensor header");
    return NULL;
  }
  t->dtype = dtype;
  t->rank = rank;
  t->owned = false;
  t->data = NULL;
  t->device = NULL;
  t->devptr = 0;
  t->numel = numel;
  t->nbytes = nbytes;
  if (rank > 0) memcpy(t->shape, shape, (size_t)rank * sizeof(int64_t));
  return t;
}

kiln_tensor *rt_tensor_alloc(kiln_dtype dtype, int rank, const int64_t *shape, kiln_status *st) {
  kiln_tensor *t = rt_tensor_header(dtype, rank, shape, st);
  if (!t) return NULL;
  t->data = rt_aligned_alloc(t->nbytes);
  if (!t->data) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes for a tensor",
           t->nbytes);
    free(t);
    return NULL;
  }
  t->owned = true;
  return t;
}

KILN_API kiln_tensor *kiln_tensor_new(kiln_dtype dtype, int rank, const int64_t *shape,
                                      kiln_status *st) {
  kiln_tensor *t = rt_tensor_alloc(dtype, rank, shape, st);
  if (!t) return NULL;
  memset(t->data, 0, t->nbytes);
  rt_ok(st);
  return t;
}

KILN_API kiln_tensor *kiln_tensor_borrow(kiln_dtype dtype, int rank, const int64_t *shape,
                                         void *data, kiln_status *st) {
  kiln_tensor *t = rt_tensor_header(dtype, rank, shape, st);
  if (!t) return NULL;
  if (!data && t->nbytes > 0) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "borrowed tensor data is NULL");
    free(t);
    return NULL;
  }
  t->data = data;
  rt_ok(st);
  return t;
}

KILN_API void kiln_tensor_free(kiln_tensor *t) {
  if (!t) return;
  if (t->owned && t->device) kiln_device_free(t->device, t->devptr);
  else if (t->owned) free(t->data);
  free(t);
}

KILN_API void *kiln_tensor_data(const kiln_tensor *t) { return t ? t->data : NULL; }
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) {
  return t ? t->dtype : KILN_DTYPE_COUNT;
}
KILN_API int kiln_tensor_rank(const kiln_tensor *t) { return t ? t->rank : -1; }
KILN_API const int64_t *kiln_tensor_shape(const kiln_tensor *t) { return t ? t->shape : NULL; }
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t) { return t ? t->numel : 0; }
KILN_API size_t kiln_tensor_nbytes(const kiln_tensor *t) { return t ? t->nbytes : 0; }
