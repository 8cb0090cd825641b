/* tensor.c - kiln._kiln.Tensor: a kiln_tensor as a Python object.
 *
 * Host tensors export their memory through the buffer protocol (numpy's
 * asarray and memoryview see it without a copy) and DLPack (__dlpack__ /
 * __dlpack_device__, the legacy "dltensor" capsule every consumer reads).
 * ext_as_tensor goes the other way: a numpy array or any DLPack producer
 * becomes a kiln tensor that borrows its memory. The DLPack structs below are
 * the ABI of DLPack 0.8 (dlpack.h), declared here. */
#include "ext.h"

#include <stdlib.h>
#include <string.h>

/* ---- DLPack ABI ---- */
enum { DL_CPU = 1, DL_CUDA = 2, DL_ROCM = 10 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };
typedef struct DLDevice {
  int32_t device_type, device_id;
} DLDevice;
typedef struct DLDataType {
  uint8_t code, bits;
  uint16_t lanes;
} DLDataType;
typedef struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

static const struct {
  kiln_dtype kd;
  uint8_t code, bits;
  const char *format; /* buffer protocol; NULL: none */
} DTYPES[] = {
    {KILN_BOOL, DL_BOOL, 8, "?"},     {KILN_INT8, DL_INT, 8, "b"},
    {KILN_INT16, DL_INT, 16, "h"},    {KILN_INT32, DL_INT, 32, "i"},
    {KILN_INT64, DL_INT, 64, "q"},    {KILN_UINT8, DL_UINT, 8, "B"},
    {KILN_UINT16, DL_UINT, 16, "H"},  {KILN_UINT32, DL_UINT, 32, "I"},
    {KILN_UINT64, DL_UINT, 64, "Q"},  {KILN_FLOAT16, DL_FLOAT, 16, "e"},
    {KILN_BFLOAT16, DL_BFLOAT, 16, NULL}, {KILN_FLOAT32, DL_FLOAT, 32, "f"},
    {KILN_FLOAT64, DL_FLOAT, 64, "d"},
};
enum { NDTYPES = sizeof DTYPES / sizeof DTYPES[0] };

static int dtype_row(kiln_dtype d) {
  for (int i = 0; i < NDTYPES; i++)
    if (DTYPES[i].kd == d) return i;
  return -1;
}

/* ---- life ---- */

/* A new instance of tp (Tensor or a Python subclass) holding t. */
static PyObject *tensor_alloc(PyTypeObject *tp, kiln_tensor *t, PyObject *device) {
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  TensorObject *o = (TensorObject *)alloc(tp, 0); /* zeroed */
  if (!o) {
    kiln_tensor_free(t);
    return NULL;
  }
  o->t = t;
  o->device = device ? Py_NewRef(device) : NULL;
  return (PyObject *)o;
}

PyObject *ext_tensor_wrap(kiln_tensor *t, PyObject *device) {
  return tensor_alloc((PyTypeObject *)ext_st->tensor_class, t, device);
}

static void tensor_dealloc(PyObject *self) {
  TensorObject *o = (TensorObject *)self;
  PyTypeObject *tp = Py_TYPE(self);
  kiln_tensor_free(o->t); /* before its device and the memory it borrows */
  if (o->view.obj) PyBuffer_Release(&o->view);
  if (o->dl) {
    DLManagedTensor *m = o->dl;
    if (m->deleter) m->deleter(m);
  }
  free(o->bufdims);
  Py_XDECREF(o->device);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

/* _set_tensor_class(cls): the class (Tensor or a subclass) of the tensors
 * the extension makes (execute's outputs, copies). */
static PyObject *tensor_set_class(PyObject *cls, PyObject *sub) {
  (void)cls;
  if (!PyType_Check(sub) || !PyType_IsSubtype((PyTypeObject *)sub,
                                              (PyTypeObject *)ext_st->tensor_type))
    return ext_raisef(PyExc_TypeError, "expected a subclass of kiln._kiln.Tensor");
  PyObject *old = ext_st->tensor_class;
  ext_st->tensor_class = Py_NewRef(sub);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

/* Tensor(dtype, shape, device=None): zeroed on the host, undefined on a
 * device. */
static PyObject *tensor_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dtype", "shape", "device", NULL};
  int dtype;
  PyObject *shape, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "iO|O", kwlist, &dtype, &shape, &device))
    return NULL;
  kiln_device *d = NULL;
  if (ext_device_of(device, &d) < 0) return NULL;
  PyObject *tup = PySequence_Tuple(shape);
  if (!tup) return NULL;
  Py_ssize_t rank = PyTuple_Size(tup);
  int64_t dims[64];
  if (rank > 64) {
    Py_DECREF(tup);
    return ext_raisef(PyExc_ValueError, "rank %zd > 64", rank);
  }
  for (Py_ssize_t i = 0; i < rank; i++) {
    dims[i] = PyLong_AsLongLong(PyTuple_GetItem(tup, i));
    if (dims[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(tup);
      return NULL;
    }
  }
  Py_DECREF(tup);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = kiln_tensor_new_on(d, (kiln_dtype)dtype, (int)rank, dims, st);
  PyObject *r = t ? tensor_alloc(tp, t, kiln_tensor_device(t) ? device : NULL) : ext_raise(st);
  kiln_status_free(st);
  return r;
}

/* ---- from other objects ---- */

/* Copy a strided array of `size`-byte elements into dense dst. */
static void copy_strided(char *dst, const char *src, int rank, const int64_t *shape,
                         const int64_t *bstrides, size_t size) {
  if (rank == 0) {
    memcpy(dst, src, size);
    return;
  }
  int64_t inner = 1;
  for (int i = 1; i < rank; i++) inner *= shape[i];
  for (int64_t i = 0; i < shape[0]; i++)
    copy_strided(dst + (size_t)(i * inner) * size, src + i * bstrides[0], rank - 1, shape + 1,
                 bstrides + 1, size);
}

static void dl_capsule_free(PyObject *cap);

/* A tensor over a DLPack producer's memory (CPU only). */
static TensorObject *from_dlpack(PyObject *obj, const char *what) {
  PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (!cap) return NULL;
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (!m) {
    Py_DECREF(cap);
    return NULL;
  }
  DLTensor *dt = &m->dl_tensor;
  kiln_dtype kd = KILN_DTYPE_COUNT;
  for (int i = 0; i < NDTYPES; i++)
    if (DTYPES[i].code == dt->dtype.code && DTYPES[i].bits == dt->dtype.bits) kd = DTYPES[i].kd;
  if (dt->device.device_type != DL_CPU) {
    Py_DECREF(cap); /* not consumed: its destructor frees it */
    return (TensorObject *)ext_raisef(
        ext_st->err_by_code[KILN_ERR_UNSUPPORTED],
        "%s: a DLPack tensor on device type %d: kiln takes host memory here (copy it to "
        "the CPU first)", what, dt->device.device_type);
  }
  if (kd == KILN_DTYPE_COUNT || dt->dtype.lanes != 1 || dt->ndim < 0 || dt->ndim > 64) {
    Py_DECREF(cap);
    return (TensorObject *)ext_raisef(ext_st->dtype_error,
                                      "%s: DLPack dtype (code %d, %d bits, %d lanes) or rank %d "
                                      "that kiln has no type for", what, dt->dtype.code,
                                      dt->dtype.bits, dt->dtype.lanes, dt->ndim);
  }
  if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
    Py_DECREF(cap);
    return NULL;
  }
  Py_DECREF(cap); /* consumed: we owe m's deleter */
  size_t size = kiln_dtype_size(kd);
  char *data = (char *)dt->data + dt->byte_offset;
  bool dense = true;
  int64_t expect = 1;
  for (int i = dt->ndim - 1; dt->strides && i >= 0; i--) {
    if (dt->shape[i] != 1 && dt->strides[i] != expect) dense = false;
    expect *= dt->shape[i];
  }
  kiln_status *st = kiln_status_new();
  kiln_tensor *t;
  if (dense) {
    t = kiln_tensor_borrow(kd, dt->ndim, dt->shape, data, st);
  } else if ((t = kiln_tensor_new(kd, dt->ndim, dt->shape, st))) {
    int64_t bstrides[64];
    for (int i = 0; i < dt->ndim; i++) bstrides[i] = dt->strides[i] * (int64_t)size;
    copy_strided(kiln_tensor_data(t), data, dt->ndim, dt->shape, bstrides, size);
  }
  if (!t) {
    ext_raise(st);
    kiln_status_free(st);
    if (m->deleter) m->deleter(m);
    return NULL;
  }
  kiln_status_free(st);
  TensorObject *o = (TensorObject *)ext_tensor_wrap(t, NULL);
  if (!o) {
    if (m->deleter) m->deleter(m);
    return NULL;
  }
  if (dense) {
    o->dl = m;
  } else if (m->deleter) {
    m->deleter(m);
  }
  return o;
}

/* A tensor over a buffer's memory: borrowed when C-contiguous, else copied. */
static TensorObject *from_buffer(PyObject *obj, const char *what) {
  Py_buffer v;
  bool dense = PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0;
  if (!dense) {
    PyErr_Clear();
    if (PyObject_GetBuffer(obj, &v, PyBUF_FULL_RO) < 0) return NULL;
  }
  int kd = ext_dtype_of_format(v.format, v.itemsize);
  if (kd < 0 || v.ndim > 64) {
    ext_raisef(ext_st->dtype_error, "%s: buffer format '%s' (%zd-byte items) has no kiln dtype",
               what, v.format ? v.format : "B", v.itemsize);
    PyBuffer_Release(&v);
    return NULL;
  }
  int64_t shape[64];
  for (int i = 0; i < v.ndim; i++) shape[i] = v.shape ? v.shape[i] : v.len / v.itemsize;
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = dense ? kiln_tensor_borrow((kiln_dtype)kd, v.ndim, shape, v.buf, st)
                         : kiln_tensor_new((kiln_dtype)kd, v.ndim, shape, st);
  if (t && !dense && PyBuffer_ToContiguous(kiln_tensor_data(t), &v, v.len, 'C') < 0) {
    kiln_tensor_free(t);
    PyBuffer_Release(&v);
    kiln_status_free(st);
    return NULL;
  }
  if (!t) {
    ext_raise(st);
    kiln_status_free(st);
    PyBuffer_Release(&v);
    return NULL;
  }
  kiln_status_free(st);
  TensorObject *o = (TensorObject *)ext_tensor_wrap(t, NULL);
  if (!o) {
    PyBuffer_Release(&v);
    return NULL;
  }
  if (dense) {
    o->view = v; /* released with o, after t */
  } else {
    PyBuffer_Release(&v);
  }
  return o;
}

TensorObject *ext_as_tensor(PyObject *obj, const char *what) {
  if (PyObject_TypeCheck(obj, (PyTypeObject *)ext_st->tensor_type))
    return (TensorObject *)Py_NewRef(obj);
  if (PyObject_CheckBuffer(obj)) return from_buffer(obj, what);
  if (PyObject_HasAttrString(obj, "__dlpack__")) return from_dlpack(obj, what);
  PyObject *tn = PyType_GetName(Py_TYPE(obj));
  if (tn)
    PyErr_Format(PyExc_TypeError, "%s: expected a numpy array, a kiln Tensor or an object "
                 "with __dlpack__, got %U", what, tn);
  Py_XDECREF(tn);
  return NULL;
}

/* Tensor.from_object(obj): see ext_as_tensor. */
static PyObject *tensor_from_object(PyObject *cls, PyObject *obj) {
  (void)cls;
  return (PyObject *)ext_as_tensor(obj, "tensor");
}

/* ---- to other objects ---- */

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  TensorObject *o = (TensorObject *)self;
  void *data = kiln_tensor_data(o->t);
  kiln_dtype kd = kiln_tensor_dtype(o->t);
  int row = dtype_row(kd);
  view->obj = NULL;
  if (!data && kiln_tensor_numel(o->t) != 0) {
    PyErr_Format(PyExc_BufferError, "a tensor on %s has no host memory: copy it to the CPU "
                 "first (tensor.to(CPU()))", kiln_device_label(kiln_tensor_device(o->t)));
    return -1;
  }
  if (row < 0 || !DTYPES[row].format) {
    PyErr_Format(PyExc_BufferError, "dtype %s has no buffer format (use __dlpack__ or view "
                 "it as another dtype)", kiln_dtype_name(kd));
    return -1;
  }
  int rank = kiln_tensor_rank(o->t);
  const int64_t *shape = kiln_tensor_shape(o->t);
  if (!o->bufdims) {
    if (!(o->bufdims = malloc(sizeof(Py_ssize_t) * (size_t)(2 * rank + 1)))) {
      PyErr_NoMemory();
      return -1;
    }
    Py_ssize_t stride = (Py_ssize_t)kiln_dtype_size(kd);
    for (int i = rank - 1; i >= 0; i--) {
      o->bufdims[i] = (Py_ssize_t)shape[i];
      o->bufdims[rank + i] = stride;
      stride *= (Py_ssize_t)shape[i];
    }
  }
  static char empty[1];
  view->buf = data ? data : empty;
  view->obj = Py_NewRef(self);
  view->len = (Py_ssize_t)kiln_tensor_nbytes(o->t);
  view->itemsize = (Py_ssize_t)kiln_dtype_size(kd);
  view->readonly = o->view.obj ? o->view.readonly : 0;
  if (view->readonly && (flags & PyBUF_WRITABLE)) {
    Py_CLEAR(view->obj);
    PyErr_SetString(PyExc_BufferError, "the tensor borrows read-only memory");
    return -1;
  }
  view->format = (flags & PyBUF_FORMAT) ? (char *)DTYPES[row].format : NULL;
  view->ndim = rank;
  view->shape = (flags & PyBUF_ND) ? o->bufdims : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? o->bufdims + rank : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  o->exports++;
  return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view) {
  (void)view;
  ((TensorObject *)self)->exports--;
}

/* What a DLPack capsule of ours holds: the managed tensor, its shape, and a
 * reference to the Tensor whose memory it is. */
typedef struct DLExport {
  DLManagedTensor m;
  int64_t shape[];
} DLExport;

static void dl_export_delete(DLManagedTensor *m) {
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF((PyObject *)m->manager_ctx);
  free(m);
  PyGILState_Release(g);
}

static void dl_capsule_free(PyObject *cap) {
  if (!PyCapsule_IsValid(cap, "dltensor")) return; /* consumed: the consumer deletes it */
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter) m->deleter(m);
}

static PyObject *tensor_dlpack_device(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_device *d = kiln_tensor_device(((TensorObject *)self)->t);
  int type = DL_CPU, id = 0;
  if (d && kiln_device_get_kind(d) == KILN_DEVICE_CUDA) type = DL_CUDA, id = kiln_device_ordinal(d);
  if (d && kiln_device_get_kind(d) == KILN_DEVICE_HIP) type = DL_ROCM, id = kiln_device_ordinal(d);
  return Py_BuildValue("(ii)", type, id);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
static PyObject *tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *maxv = Py_None, *dldev = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", kwlist, &stream, &maxv, &dldev, &copy))
    return NULL;
  if (copy == Py_True)
    return ext_raisef(PyExc_BufferError, "__dlpack__(copy=True): copy the tensor first");
  TensorObject *o = (TensorObject *)self;
  kiln_dtype kd = kiln_tensor_dtype(o->t);
  int row = dtype_row(kd);
  if (row < 0)
    return ext_raisef(PyExc_BufferError, "dtype %s has no DLPack type", kiln_dtype_name(kd));
  int rank = kiln_tensor_rank(o->t);
  DLExport *e = calloc(1, sizeof *e + sizeof(int64_t) * (size_t)(rank + 1));
  if (!e) return PyErr_NoMemory();
  kiln_device *d = kiln_tensor_device(o->t);
  DLTensor *dt = &e->m.dl_tensor;
  dt->data = d ? (void *)(uintptr_t)kiln_tensor_devptr(o->t) : kiln_tensor_data(o->t);
  PyObject *dev = tensor_dlpack_device(self, NULL);
  if (!dev) {
    free(e);
    return NULL;
  }
  dt->device.device_type = (int32_t)PyLong_AsLong(PyTuple_GetItem(dev, 0));
  dt->device.device_id = (int32_t)PyLong_AsLong(PyTuple_GetItem(dev, 1));
  Py_DECREF(dev);
  dt->ndim = rank;
  dt->dtype.code = DTYPES[row].code;
  dt->dtype.bits = DTYPES[row].bits;
  dt->dtype.lanes = 1;
  memcpy(e->shape, kiln_tensor_shape(o->t), sizeof(int64_t) * (size_t)rank);
  dt->shape = e->shape;
  dt->strides = NULL; /* compact row-major */
  e->m.manager_ctx = Py_NewRef(self);
  e->m.deleter = dl_export_delete;
  PyObject *cap = PyCapsule_New(&e->m, "dltensor", dl_capsule_free);
  if (!cap) {
    Py_DECREF(self);
    free(e);
  }
  return cap;
}

/* ---- attributes ---- */

static PyObject *tensor_dtype(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_tensor_dtype(((TensorObject *)self)->t));
}

static PyObject *tensor_shape(PyObject *self, void *c) {
  (void)c;
  kiln_tensor *t = ((TensorObject *)self)->t;
  int rank = kiln_tensor_rank(t);
  const int64_t *s = kiln_tensor_shape(t);
  PyObject *tup = PyTuple_New(rank);
  for (int i = 0; tup && i < rank; i++) {
    PyObject *d = PyLong_FromLongLong(s[i]);
    if (!d) {
      Py_DECREF(tup);
      return NULL;
    }
    PyTuple_SetItem(tup, i, d);
  }
  return tup;
}

static PyObject *tensor_device(PyObject *self, void *c) {
  (void)c;
  PyObject *d = ((TensorObject *)self)->device;
  return Py_NewRef(d ? d : Py_None);
}

static PyObject *tensor_nbytes(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromSize_t(kiln_tensor_nbytes(((TensorObject *)self)->t));
}

static PyObject *tensor_data_ptr(PyObject *self, void *c) {
  (void)c;
  kiln_tensor *t = ((TensorObject *)self)->t;
  if (kiln_tensor_device(t)) return PyLong_FromUnsignedLongLong(kiln_tensor_devptr(t));
  return PyLong_FromVoidPtr(kiln_tensor_data(t));
}

/* copy_to(device=None): a new tensor with the same contents on device (the
 * host for None). */
static PyObject *tensor_copy_to(PyObject *self, PyObject *args) {
  PyObject *device = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &device)) return NULL;
  kiln_device *d = NULL;
  if (ext_device_of(device, &d) < 0) return NULL;
  kiln_status *st = kiln_status_new();
  kiln_tensor *t;
  Py_BEGIN_ALLOW_THREADS t = kiln_tensor_copy_to(((TensorObject *)self)->t, d, st);
  Py_END_ALLOW_THREADS
  PyObject *r = t ? ext_tensor_wrap(t, kiln_tensor_device(t) ? device : NULL) : ext_raise(st);
  kiln_status_free(st);
  return r;
}

static PyGetSetDef tensor_getset[] = {
    {"_dtype", tensor_dtype, NULL, "kiln dtype number", NULL},
    {"shape", tensor_shape, NULL, "the shape, a tuple of ints", NULL},
    {"_device", tensor_device, NULL, "the Device object of a device tensor, None on the host",
     NULL},
    {"nbytes", tensor_nbytes, NULL, "bytes of the elements", NULL},
    {"data_ptr", tensor_data_ptr, NULL, "address of the elements (host or device)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef tensor_methods[] = {
    {"from_object", tensor_from_object, METH_O | METH_CLASS,
     "from_object(obj): a Tensor over a numpy array's or DLPack producer's memory (no copy "
     "when it is C-contiguous host memory)."},
    {"_set_tensor_class", tensor_set_class, METH_O | METH_CLASS,
     "_set_tensor_class(cls): the class of the tensors the extension makes."},
    {"copy_to", tensor_copy_to, METH_VARARGS, "copy_to(device=None): a copy on device."},
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "DLPack export (no copy)."},
    {"__dlpack_device__", tensor_dlpack_device, METH_NOARGS, "(device type, device id)"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot tensor_slots[] = {
    {Py_tp_new, tensor_new},
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_methods, tensor_methods},
    {Py_tp_getset, tensor_getset},
    {Py_bf_getbuffer, tensor_getbuffer},
    {Py_bf_releasebuffer, tensor_releasebuffer},
    {Py_tp_doc, "Tensor(dtype, shape, device=None): a kiln_tensor (host or device memory)."},
    {0, NULL}};

static PyType_Spec tensor_spec = {"kiln._kiln.Tensor", sizeof(TensorObject), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, tensor_slots};

int ext_tensor_init(PyObject *m) {
  if (!(ext_st->tensor_type = PyType_FromSpec(&tensor_spec))) return -1;
  ext_st->tensor_class = Py_NewRef(ext_st->tensor_type);
  return PyModule_AddObjectRef(m, "Tensor", ext_st->tensor_type);
}
