/* device_tensor.c - tensors in a device's memory (kiln/device.h, "tensors
 * on a device"): allocation, copies between host and devices, and the
 * checks the runtime uses to keep device tensors away from host code.
 *
 * A device tensor is a kiln_tensor whose `device` is set: `data` is NULL,
 * `devptr` holds its memory (owned: freed by kiln_tensor_free through the
 * device). The CPU device's memory is host memory, so a tensor "on the CPU
 * device" is simply a host tensor. */
#include <stdlib.h>
#include <string.h>

#include "kiln/device.h"
#include "device.h"
#include "rt.h"

static bool is_host_device(const kiln_device *d) { return !d || d->kind == KILN_DEVICE_CPU; }

KILN_API kiln_tensor *kiln_tensor_new_on(kiln_device *d, kiln_dtype dtype, int rank,
                                         const int64_t *shape, kiln_status *st) {
  if (is_host_device(d)) return kiln_tensor_new(dtype, rank, shape, st);
  kiln_tensor *t = rt_tensor_header(dtype, rank, shape, st);
  if (!t) return NULL;
  if (kiln_device_alloc(d, t->nbytes, &t->devptr, st) < 0) {
    free(t);
    return NULL;
  }
  t->device = d;
  t->owned = true;
  rt_ok(st);
  return t;
}

int rt_device_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                      kiln_status *st) {
  if (!n || dst == src) return 0;
  if (!dst || !src)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: copy of %zu bytes with a NULL pointer",
                  d->label, n);
  return d->ops->copy_dd(d, dst, src, n, st);
}

/* Copy src's bytes into dst (same byte count), wherever each lives. */
static int copy_contents(kiln_tensor *dst, const kiln_tensor *src, kiln_status *st) {
  size_t n = src->nbytes;
  if (!n) return 0;
  if (!src->device && !dst->device) {
    memcpy(dst->data, src->data, n);
    return 0;
  }
  if (!src->device) return kiln_device_copy_to(dst->device, dst->devptr, src->data, n, st);
  if (!dst->device) return kiln_device_copy_from(src->device, dst->data, src->devptr, n, st);
  if (src->device == dst->device)
    return rt_device_copy_dd(dst->device, dst->devptr, src->devptr, n, st);
  /* between two devices: through the host */
  void *tmp = rt_aligned_alloc(n);
  if (!tmp) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory staging %zu bytes", n);
  int rc = kiln_device_copy_from(src->device, tmp, src->devptr, n, st);
  if (rc == 0) rc = kiln_device_copy_to(dst->device, dst->devptr, tmp, n, st);
  free(tmp);
  return rc;
}

KILN_API kiln_tensor *kiln_tensor_copy_to(const kiln_tensor *t, kiln_device *d, kiln_status *st) {
  if (!t) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_tensor_copy_to: tensor is NULL");
    return NULL;
  }
  if (!t->device && t->nbytes && !t->data) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_tensor_copy_to: the tensor's data is NULL");
    return NULL;
  }
  kiln_tensor *out = is_host_device(d) ? rt_tensor_alloc(t->dtype, t->rank, t->shape, st)
                                       : kiln_tensor_new_on(d, t->dtype, t->rank, t->shape, st);
  if (!out) return NULL;
  if (copy_contents(out, t, st) < 0) {
    kiln_tensor_free(out);
    return NULL;
  }
  rt_ok(st);
  return out;
}

const char *rt_tensor_device_label(const kiln_tensor *t) {
  return t && t->device ? t->device->label : "the host";
}

KILN_API kiln_device *kiln_tensor_device(const kiln_tensor *t) { return t ? t->device : NULL; }

KILN_API kiln_devptr kiln_tensor_devptr(const kiln_tensor *t) {
  return t && t->device ? t->devptr : 0;
}
