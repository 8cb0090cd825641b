/* tensor.c - tensor specs, tensor storage (mx_buf), tensor handles and
 * tensor maps of kiln's MAX C API layer, and the M_Dtype <-> kiln_dtype
 * mapping. Storage is reference counted (atomically: handles may be freed
 * from several threads), so a handle taken from a map outlives the map and
 * an output captured by a graph outlives the caller's handle. Borrowed data
 * is never freed here.
 * Storage is host memory, or an accelerator's memory for a tensor made by
 * M_copyTensorToDevice (kiln_tensor_copy_to onto the accelerator's shared
 * kiln_device, whose reference the storage holds): such a tensor has no
 * host data (M_getTensorData is NULL) and goes to a model on that
 * accelerator (capture / replay inputs) without a host round trip. Maps
 * hold host tensors: borrowed inputs and model outputs, which come back to
 * the host also from an accelerator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx.h"

static const struct {
  M_Dtype m;
  kiln_dtype k;
} dtypes[] = {
    {M_BOOL, KILN_BOOL},
    {M_INT8, KILN_INT8},
    {M_INT16, KILN_INT16},
    {M_INT32, KILN_INT32},
    {M_INT64, KILN_INT64},
    {M_UINT8, KILN_UINT8},
    {M_UINT16, KILN_UINT16},
    {M_UINT32, KILN_UINT32},
    {M_UINT64, KILN_UINT64},
    {M_FLOAT16, KILN_FLOAT16},
    {M_BFLOAT16, KILN_BFLOAT16},
    {M_FLOAT32, KILN_FLOAT32},
    {M_FLOAT64, KILN_FLOAT64},
    {M_FLOAT8_E4M3FN, KILN_FLOAT8_E4M3FN},
    {M_FLOAT8_E4M3FNUZ, KILN_FLOAT8_E4M3FNUZ},
    {M_FLOAT8_E5M2, KILN_FLOAT8_E5M2},
    {M_FLOAT8_E5M2FNUZ, KILN_FLOAT8_E5M2FNUZ},
};

bool mx_dtype_to_kiln(M_Dtype d, kiln_dtype *out) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].m == d) {
      *out = dtypes[i].k;
      return true;
    }
  return false;
}

M_Dtype mx_dtype_from_kiln(kiln_dtype d) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].k == d) return dtypes[i].m;
  return M_UNKNOWN;
}

/* ---- specs ---- */

static M_TensorSpec *spec_new(const int64_t *shape, int64_t rank, M_Dtype dtype, const char *name,
                              M_Device device) {
  if (rank < M_DYNAMIC_RANK_VALUE || rank > MX_MAX_RANK || (rank > 0 && !shape)) return NULL;
  M_TensorSpec *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->rank = rank;
  s->dtype = dtype;
  s->device = device;
  s->name = mx_strdup(name ? name : "");
  s->shape = calloc(rank > 0 ? (size_t)rank : 1, sizeof *s->shape);
  if (!s->name || !s->shape) {
    M_freeTensorSpec(s);
    return NULL;
  }
  for (int64_t i = 0; i < rank; i++) s->shape[i] = shape[i];
  return s;
}

MAX_C_API M_TensorSpec *M_newTensorSpec(const int64_t *shape, int64_t rankSize, M_Dtype dtype,
                                        const char *tensorName, const M_Device *device) {
  M_Device dev = {M_HOST, 0, NULL};
  if (device) dev = (M_Device){device->type, device->id, NULL}; /* a copy holds no reference */
  return spec_new(shape, rankSize, dtype, tensorName, dev);
}

MAX_C_API int M_isDynamicRanked(const M_TensorSpec *spec) {
  return spec && spec->rank == M_DYNAMIC_RANK_VALUE ? 1 : 0;
}

MAX_C_API int64_t M_getDimAt(const M_TensorSpec *spec, size_t axis) {
  if (!spec || spec->rank < 0 || axis >= (size_t)spec->rank) return 0;
  return spec->shape[axis];
}

MAX_C_API int64_t M_getRank(const M_TensorSpec *spec) { return spec ? spec->rank : 0; }

MAX_C_API M_Dtype M_getDtype(const M_TensorSpec *spec) { return spec ? spec->dtype : M_UNKNOWN; }

MAX_C_API const char *M_getName(M_TensorSpec *spec) { return spec ? spec->name : NULL; }

MAX_C_API M_DeviceType M_getDeviceTypeFromSpec(const M_TensorSpec *spec) {
  return spec ? spec->device.type : M_HOST;
}

MAX_C_API int M_getDeviceIdFromSpec(const M_TensorSpec *spec) {
  return spec ? spec->device.id : 0;
}

MAX_C_API void M_freeTensorSpec(M_TensorSpec *spec) {
  if (!spec) return;
  free(spec->name);
  free(spec->shape);
  free(spec);
}

/* ---- storage and handles ---- */

mx_buf *mx_buf_new(kiln_tensor *t) {
  mx_buf *b = malloc(sizeof *b);
  if (!b) {
    kiln_tensor_free(t);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  b->t = t;
  b->dev = NULL;
  return b;
}

mx_buf *mx_buf_new_on(kiln_tensor *t, mx_dev *dev) {
  mx_buf *b = mx_buf_new(t);
  if (b && dev) {
    mx_dev_ref(dev);
    b->dev = dev;
  }
  return b;
}

void mx_buf_ref(mx_buf *b) { atomic_fetch_add(&b->refs, 1); }

void mx_buf_unref(mx_buf *b) {
  if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
  kiln_tensor_free(b->t); /* before the device it may live on */
  mx_dev_release(b->dev);
  free(b);
}

M_AsyncTensor *mx_tensor_wrap(mx_buf *b, const char *name) {
  M_AsyncTensor *t = malloc(sizeof *t);
  char *nm = mx_strdup(name ? name : "");
  if (!t || !nm) {
    free(t);
    free(nm);
    return NULL;
  }
  mx_buf_ref(b);
  t->buf = b;
  t->name = nm;
  return t;
}

MAX_C_API size_t M_getTensorNumElements(const M_AsyncTensor *tensor) {
  return tensor ? (size_t)kiln_tensor_numel(tensor->buf->t) : 0;
}

MAX_C_API M_Dtype M_getTensorType(const M_AsyncTensor *tensor) {
  return tensor ? mx_dtype_from_kiln(kiln_tensor_dtype(tensor->buf->t)) : M_UNKNOWN;
}

/* NULL for a tensor on an accelerator: its data is device memory. */
MAX_C_API const void *M_getTensorData(const M_AsyncTensor *tensor) {
  return tensor ? kiln_tensor_data(tensor->buf->t) : NULL;
}

/* The device a buffer lives on, as a value holding no reference. */
static M_Device buf_device(const mx_buf *b) {
  if (!b->dev) return (M_Device){M_HOST, 0, NULL};
  return (M_Device){M_ACCELERATOR, b->dev->id, NULL};
}

MAX_C_API M_TensorSpec *M_getTensorSpec(const M_AsyncTensor *tensor) {
  if (!tensor) return NULL;
  const kiln_tensor *t = tensor->buf->t;
  return spec_new(kiln_tensor_shape(t), kiln_tensor_rank(t),
                  mx_dtype_from_kiln(kiln_tensor_dtype(t)), tensor->name,
                  buf_device(tensor->buf));
}

MAX_C_API M_Device *M_getTensorDevice(const M_AsyncTensor *tensor) {
  if (!tensor) return NULL;
  M_Device *d = malloc(sizeof *d);
  if (d) {
    *d = buf_device(tensor->buf);
    d->dev = tensor->buf->dev; /* a handle: one reference, released by M_freeDevice */
    mx_dev_ref(d->dev);
  }
  return d;
}

MAX_C_API M_AsyncTensor *M_copyTensorToDevice(M_AsyncTensor *tensor, M_Device *device,
                                              M_Status *status) {
  mx_ok(status);
  if (!tensor || !device) {
    mx_err(status, "M_copyTensorToDevice: %s is NULL", !tensor ? "tensor" : "device");
    return NULL;
  }
  mx_dev *dev = NULL; /* one reference while copying; NULL: the host */
  if (device->type != M_HOST) {
    if (device->dev) mx_dev_ref(device->dev);
    dev = device->dev ? device->dev : mx_dev_acquire(device->id, "M_copyTensorToDevice", status);
    if (!dev) return NULL;
  }
  const kiln_tensor *src = tensor->buf->t;
  kiln_status *ks = kiln_status_new();
  kiln_tensor *t = ks ? kiln_tensor_copy_to(src, dev ? dev->kd : NULL, ks) : NULL;
  M_AsyncTensor *h = NULL;
  if (!t) {
    mx_err(status, "M_copyTensorToDevice: tensor '%s' from %s to %s: %s", tensor->name,
           mx_dev_label(tensor->buf->dev), mx_dev_label(dev),
           ks ? kiln_status_message(ks) : "out of memory");
  } else {
    mx_buf *b = mx_buf_new_on(t, dev);
    h = b ? mx_tensor_wrap(b, tensor->name) : NULL;
    mx_buf_unref(b); /* the handle holds the only reference */
    if (!h) mx_err(status, "M_copyTensorToDevice: out of memory");
  }
  kiln_status_free(ks);
  mx_dev_release(dev);
  return h;
}

MAX_C_API void M_freeTensor(M_AsyncTensor *tensor) {
  if (!tensor) return;
  mx_buf_unref(tensor->buf);
  free(tensor->name);
  free(tensor);
}

/* ---- maps ---- */

MAX_C_API M_AsyncTensorMap *M_newAsyncTensorMap(const M_RuntimeContext *context) {
  return calloc(1, sizeof(M_AsyncTensorMap));
}

int mx_map_find(const M_AsyncTensorMap *map, const char *name) {
  for (int i = 0; map && name && i < map->n; i++)
    if (strcmp(map->names[i], name) == 0) return i;
  return -1;
}

int mx_map_put(M_AsyncTensorMap *map, const char *name, mx_buf *b, M_Status *st) {
  int i = mx_map_find(map, name);
  if (i >= 0) {
    mx_buf_ref(b);
    mx_buf_unref(map->bufs[i]);
    map->bufs[i] = b;
    return 0;
  }
  if (map->n == map->cap) {
    int cap = map->cap ? 2 * map->cap : 4;
    char **names = realloc(map->names, (size_t)cap * sizeof *names);
    if (names) map->names = names;
    mx_buf **bufs = names ? realloc(map->bufs, (size_t)cap * sizeof *bufs) : NULL;
    if (!bufs) return mx_err(st, "out of memory growing a tensor map");
    map->bufs = bufs;
    map->cap = cap;
  }
  char *nm = mx_strdup(name);
  if (!nm) return mx_err(st, "out of memory growing a tensor map");
  mx_buf_ref(b);
  map->names[map->n] = nm;
  map->bufs[map->n++] = b;
  return 0;
}

/* "a, b, c" (the map's names) into buf. */
static void map_names(const M_AsyncTensorMap *map, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < map->n && k + 1 < cap; i++) {
    int w = snprintf(buf + k, cap - k, "%s'%s'", i ? ", " : "", map->names[i]);
    if (w < 0) break;
    k += (size_t)w;
  }
  if (map->n == 0) snprintf(buf, cap, "none");
}

MAX_C_API void M_borrowTensorInto(M_AsyncTensorMap *tensors, void *input,
                                  const M_TensorSpec *tensorSpec, M_Status *status) {
  mx_ok(status);
  if (!tensors || !tensorSpec) {
    mx_err(status, "M_borrowTensorInto: %s is NULL", !tensors ? "tensor map" : "tensor spec");
    return;
  }
  const M_TensorSpec *s = tensorSpec;
  if (!s->name[0]) {
    mx_err(status, "M_borrowTensorInto: the tensor spec has no name");
    return;
  }
  if (s->device.type != M_HOST) {
    mx_err(status, "M_borrowTensorInto: tensor '%s': the spec is on accelerator %d, but borrowed "
                   "data must be host memory: borrow it with a host spec (a model on an "
                   "accelerator copies host inputs there) or copy a tensor to the accelerator "
                   "with M_copyTensorToDevice", s->name, s->device.id);
    return;
  }
  kiln_dtype kd;
  if (!mx_dtype_to_kiln(s->dtype, &kd)) {
    mx_err(status, "M_borrowTensorInto: tensor '%s': unknown dtype 0x%x", s->name,
           (unsigned)s->dtype);
    return;
  }
  if (s->rank < 0) {
    mx_err(status, "M_borrowTensorInto: tensor '%s': the spec has a dynamic rank; the data "
                   "needs a concrete shape", s->name);
    return;
  }
  for (int64_t a = 0; a < s->rank; a++)
    if (s->shape[a] < 0) {
      mx_err(status, "M_borrowTensorInto: tensor '%s': axis %lld is dynamic (%lld); the data "
                     "needs a concrete shape", s->name, (long long)a, (long long)s->shape[a]);
      return;
    }
  kiln_status *ks = kiln_status_new();
  kiln_tensor *t = kiln_tensor_borrow(kd, (int)s->rank, s->shape, input, ks);
  if (!t) {
    mx_err(status, "M_borrowTensorInto: tensor '%s': %s", s->name,
           ks ? kiln_status_message(ks) : "out of memory");
    kiln_status_free(ks);
    return;
  }
  kiln_status_free(ks);
  mx_buf *b = mx_buf_new(t);
  if (!b) {
    mx_err(status, "M_borrowTensorInto: out of memory");
    return;
  }
  mx_map_put(tensors, s->name, b, status);
  mx_buf_unref(b);
}

MAX_C_API M_AsyncTensor *M_getTensorByNameFrom(M_AsyncTensorMap *tensorMap, const char *name,
                                               M_Status *status) {
  mx_ok(status);
  if (!tensorMap || !name) {
    mx_err(status, "M_getTensorByNameFrom: %s is NULL", !tensorMap ? "tensor map" : "name");
    return NULL;
  }
  int i = mx_map_find(tensorMap, name);
  if (i < 0) {
    char names[512];
    map_names(tensorMap, names, sizeof names);
    mx_err(status, "no tensor named '%s' in the tensor map (it holds: %s)", name, names);
    return NULL;
  }
  M_AsyncTensor *t = mx_tensor_wrap(tensorMap->bufs[i], name);
  if (!t) mx_err(status, "M_getTensorByNameFrom: out of memory");
  return t;
}

MAX_C_API void M_freeAsyncTensorMap(M_AsyncTensorMap *tensorMap) {
  if (!tensorMap) return;
  for (int i = 0; i < tensorMap->n; i++) {
    free(tensorMap->names[i]);
    mx_buf_unref(tensorMap->bufs[i]);
  }
  free(tensorMap->names);
  free(tensorMap->bufs);
  free(tensorMap);
}
