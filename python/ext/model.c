/* model.c - kiln._kiln.Device, Context and Model: devices, the context that
 * holds the JIT, caches and thread pool, and compiled models with execute.
 *
 * Compiles and executes release the GIL, so Python threads compile and run
 * in parallel. Objects keep what they need alive: a model its context,
 * device and bound weights; a device tensor its device. Execute wraps its
 * inputs without copying them (ext_as_tensor) and returns kiln's outputs as
 * Tensor objects that own them. */
#include "ext.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Device ---- */

static PyObject *device_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"spec", NULL};
  const char *spec = "cpu";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|s", kwlist, &spec)) return NULL;
  kiln_status *st = kiln_status_new();
  kiln_device *d;
  Py_BEGIN_ALLOW_THREADS d = kiln_device_open(spec, st);
  Py_END_ALLOW_THREADS
  if (!d) {
    ext_raise(st);
    kiln_status_free(st);
    return NULL;
  }
  kiln_status_free(st);
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  DeviceObject *o = (DeviceObject *)alloc(tp, 0);
  if (!o) {
    kiln_device_close(d);
    return NULL;
  }
  o->dev = d;
  o->kind = kiln_device_get_kind(d);
  return (PyObject *)o;
}

static void device_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  kiln_device_close(((DeviceObject *)self)->dev);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

int ext_device_of(PyObject *obj, kiln_device **out) {
  *out = NULL;
  if (obj == Py_None) return 0;
  if (!PyObject_TypeCheck(obj, (PyTypeObject *)ext_st->device_type)) {
    ext_raisef(PyExc_TypeError, "expected a kiln device or None");
    return -1;
  }
  *out = ((DeviceObject *)obj)->dev;
  return 0;
}

static PyObject *device_label(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(kiln_device_label(((DeviceObject *)self)->dev));
}
static PyObject *device_kind(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(kiln_device_kind_name(((DeviceObject *)self)->kind));
}
static PyObject *device_ordinal(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_device_ordinal(((DeviceObject *)self)->dev));
}
static PyObject *device_description(PyObject *self, void *c) {
  (void)c;
  const char *s = kiln_device_description(((DeviceObject *)self)->dev);
  return PyUnicode_FromString(s ? s : "");
}

static PyObject *device_synchronize(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_device_synchronize(((DeviceObject *)self)->dev, st);
  Py_END_ALLOW_THREADS
  PyObject *r = rc < 0 ? ext_raise(st) : Py_NewRef(Py_None);
  kiln_status_free(st);
  return r;
}

/* device_count(kind): "cpu", "cuda", "hip" or "simt-emu" -> how many */
static PyObject *device_count(PyObject *cls, PyObject *arg) {
  (void)cls;
  const char *k = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!k) return NULL;
  kiln_device_kind kinds[] = {KILN_DEVICE_CPU, KILN_DEVICE_CUDA, KILN_DEVICE_HIP,
                              KILN_DEVICE_SIMT_EMU};
  for (int i = 0; i < 4; i++)
    if (!strcmp(k, kiln_device_kind_name(kinds[i]))) {
      int n = kiln_device_count(kinds[i], NULL);
      return PyLong_FromLong(n < 0 ? 0 : n);
    }
  return ext_raisef(PyExc_ValueError, "unknown device kind '%s'", k);
}

static PyGetSetDef device_getset[] = {
    {"label", device_label, NULL, "\"cpu\", \"cuda:0\", \"simt-emu\"", NULL},
    {"kind", device_kind, NULL, "\"cpu\", \"cuda\", \"hip\" or \"simt-emu\"", NULL},
    {"ordinal", device_ordinal, NULL, "the device's number among its kind", NULL},
    {"description", device_description, NULL, "what the driver says it is", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef device_methods[] = {
    {"synchronize", device_synchronize, METH_NOARGS, "Wait for the device's queued work."},
    {"count", device_count, METH_O | METH_CLASS, "count(kind): devices of that kind here."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_new},         {Py_tp_dealloc, device_dealloc},
    {Py_tp_getset, device_getset},   {Py_tp_methods, device_methods},
    {Py_tp_doc, "Device(spec='cpu'): a device kiln opened (kiln_device)."},
    {0, NULL}};

static PyType_Spec device_spec = {"kiln._kiln.Device", sizeof(DeviceObject), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, device_slots};

/* ---- Context ---- */

typedef struct ContextObject {
  PyObject_HEAD
  kiln_context *ctx;
  PyObject *log_fn; /* the callable kiln's log lines go to (observe.c), or NULL */
} ContextObject;

kiln_context *ext_context_of(PyObject *self) { return ((ContextObject *)self)->ctx; }
PyObject **ext_context_log_slot(PyObject *self) { return &((ContextObject *)self)->log_fn; }

static PyObject *context_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "", kwlist)) return NULL;
  kiln_status *st = kiln_status_new();
  kiln_context *c = kiln_context_new(st);
  if (!c) {
    ext_raise(st);
    kiln_status_free(st);
    return NULL;
  }
  kiln_status_free(st);
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  ContextObject *o = (ContextObject *)alloc(tp, 0);
  if (!o) {
    kiln_context_free(c);
    return NULL;
  }
  o->ctx = c;
  return (PyObject *)o;
}

static void context_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  kiln_context *c = ((ContextObject *)self)->ctx;
  Py_BEGIN_ALLOW_THREADS kiln_context_free(c); /* waits for its compile thread */
  Py_END_ALLOW_THREADS
  Py_XDECREF(((ContextObject *)self)->log_fn); /* no kiln thread logs to it any more */
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

/* The common tail of the setters: rc < 0 raises st's error. */
static PyObject *done(int rc, kiln_status *st) {
  PyObject *r = rc < 0 ? ext_raise(st) : Py_NewRef(Py_None);
  kiln_status_free(st);
  return r;
}

#define CTX(self) (((ContextObject *)(self))->ctx)

static PyObject *context_set_num_threads(PyObject *self, PyObject *arg) {
  int n = (int)PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_context_set_num_threads(CTX(self), n, st), st);
}

static PyObject *context_num_threads(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_context_num_threads(CTX(self)));
}

static PyObject *context_target(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(kiln_context_target(CTX(self)));
}

static PyObject *context_cache_dir(PyObject *self, void *c) {
  (void)c;
  const char *d = kiln_context_cache_dir(CTX(self));
  return d ? PyUnicode_FromString(d) : Py_NewRef(Py_None);
}

static PyObject *context_cache_status(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(kiln_context_cache_status(CTX(self)));
}

static PyObject *context_cache_warning(PyObject *self, void *c) {
  (void)c;
  const char *w = kiln_context_cache_warning(CTX(self));
  return w ? PyUnicode_FromString(w) : Py_NewRef(Py_None);
}

/* add_cache_seed_dir(dir): a read-only cache layer looked up after the own one */
static PyObject *context_add_cache_seed_dir(PyObject *self, PyObject *arg) {
  PyObject *b = PyUnicode_EncodeFSDefault(arg);
  if (!b) return NULL;
  const char *dir = PyBytes_AsString(b);
  kiln_status *st = kiln_status_new();
  int rc = -1;
  if (dir) {
    Py_BEGIN_ALLOW_THREADS rc = kiln_context_add_cache_seed_dir(CTX(self), dir, st);
    Py_END_ALLOW_THREADS
  }
  Py_DECREF(b);
  if (!dir) {
    kiln_status_free(st);
    return NULL;
  }
  return done(rc, st);
}

/* set_cache_dir(dir or None, max_bytes=0) */
static PyObject *context_set_cache_dir(PyObject *self, PyObject *args) {
  const char *dir;
  unsigned long long max = 0;
  if (!PyArg_ParseTuple(args, "z|K", &dir, &max)) return NULL;
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_set_cache_dir(CTX(self), dir, (uint64_t)max, st);
  Py_END_ALLOW_THREADS
  return done(rc, st);
}

static PyObject *context_set_specialize(PyObject *self, PyObject *arg) {
  int p = (int)PyLong_AsLong(arg);
  if (p == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_context_set_specialize(CTX(self), (kiln_specialize_policy)p, st), st);
}

static PyObject *context_set_max_variants(PyObject *self, PyObject *arg) {
  int n = (int)PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_context_set_max_variants(CTX(self), n, st), st);
}

static PyObject *context_set_code_limit(PyObject *self, PyObject *arg) {
  size_t n = PyLong_AsSize_t(arg);
  if (n == (size_t)-1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  int rc; /* evicting kernels logs: the GIL goes (a log callback takes it) */
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_set_code_limit(CTX(self), n, st);
  Py_END_ALLOW_THREADS
  return done(rc, st);
}

static PyObject *context_set_tier_up(PyObject *self, PyObject *arg) {
  int n = (int)PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_context_set_tier_up(CTX(self), n, st), st);
}

static PyObject *context_add_kernel_library(PyObject *self, PyObject *arg) {
  PyObject *b = PyUnicode_EncodeFSDefault(arg);
  if (!b) return NULL;
  const char *path = PyBytes_AsString(b);
  kiln_status *st = kiln_status_new();
  int rc = -1;
  if (path) {
    Py_BEGIN_ALLOW_THREADS rc = kiln_context_add_kernel_library(CTX(self), path, st);
    Py_END_ALLOW_THREADS
  }
  Py_DECREF(b);
  if (!path) {
    kiln_status_free(st);
    return NULL;
  }
  return done(rc, st);
}

static PyObject *context_wait_compiles(PyObject *self, PyObject *args) {
  long long ms = -1;
  if (!PyArg_ParseTuple(args, "|L", &ms)) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_wait_compiles(CTX(self), ms, NULL);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(rc == 0);
}

static PyObject *context_counter(PyObject *self, PyObject *arg) {
  int c = (int)PyLong_AsLong(arg);
  if (c == -1 && PyErr_Occurred()) return NULL;
  return PyFloat_FromDouble(kiln_context_counter(CTX(self), (kiln_counter)c));
}

static PyGetSetDef context_getset[] = {
    {"num_threads", context_num_threads, NULL, "threads of the context's pool", NULL},
    {"target", context_target, NULL, "the host target as the JIT sees it", NULL},
    {"cache_dir", context_cache_dir, NULL, "the disk cache's directory, or None", NULL},
    {"cache_status", context_cache_status, NULL, "one line: the disk cache's settings", NULL},
    {"cache_warning", context_cache_warning, NULL, "the cache problem to fix, or None", NULL},
    {"log_level", ext_context_log_level, NULL, "the level logged: off, warn, info or debug", NULL},
    {"remote_cache_status", ext_context_remote_cache_status, NULL,
     "one line: the remote cache in use, off, or why it is unavailable", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef context_methods[] = {
    {"set_num_threads", context_set_num_threads, METH_O, "set_num_threads(n); 0: default"},
    {"set_cache_dir", context_set_cache_dir, METH_VARARGS,
     "set_cache_dir(dir_or_None, max_bytes=0)"},
    {"add_cache_seed_dir", context_add_cache_seed_dir, METH_O,
     "add_cache_seed_dir(dir): a read-only cache layer read after the own directory"},
    {"set_specialize", context_set_specialize, METH_O, "set_specialize(policy number)"},
    {"set_max_variants", context_set_max_variants, METH_O, "set_max_variants(n)"},
    {"set_code_limit", context_set_code_limit, METH_O, "set_code_limit(bytes)"},
    {"set_tier_up", context_set_tier_up, METH_O, "set_tier_up(min_kernels); 0: off"},
    {"add_kernel_library", context_add_kernel_library, METH_O,
     "add_kernel_library(path): custom kernels from a .c, .ll or .bc file"},
    {"wait_compiles", context_wait_compiles, METH_VARARGS,
     "wait_compiles(timeout_ms=-1) -> True when idle"},
    {"counter", context_counter, METH_O, "counter(number) -> float"},
    {"set_log", ext_context_set_log, METH_VARARGS,
     "set_log(callable_or_None, level): kiln's log lines at or above level"},
    {"set_trace", ext_context_set_trace, METH_O, "set_trace(path_or_None): Chrome trace JSON"},
    {"flush_trace", ext_context_flush_trace, METH_NOARGS, "flush_trace(): write what is buffered"},
    {"set_profile", ext_context_set_profile, METH_O, "set_profile(on): profile every model"},
    {"set_remote_cache", ext_context_set_remote_cache, METH_VARARGS,
     "set_remote_cache(url_or_None, namespace=None, timeout_ms=0)"},
    {"flush_remote_cache", ext_context_flush_remote_cache, METH_VARARGS,
     "flush_remote_cache(timeout_ms=-1) -> True when every kernel is published"},
    {"remote_cache_counts", ext_context_remote_cache_counts, METH_NOARGS,
     "remote_cache_counts() -> {hits, misses, errors, published}"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot context_slots[] = {
    {Py_tp_new, context_new},        {Py_tp_dealloc, context_dealloc},
    {Py_tp_getset, context_getset},  {Py_tp_methods, context_methods},
    {Py_tp_doc, "Context(): a kiln context (JIT, caches, thread pool)."},
    {0, NULL}};

static PyType_Spec context_spec = {"kiln._kiln.Context", sizeof(ContextObject), 0,
                                   Py_TPFLAGS_DEFAULT, context_slots};

/* ---- Model ---- */

typedef struct ModelObject {
  PyObject_HEAD
  kiln_model *m;
  PyObject *context, *device; /* device: a Device or NULL (the host) */
  PyObject *weights;          /* name -> Tensor whose memory the model may read */
  /* kiln_model_bind_weight must not run beside an execute: binds take it
   * exclusively, runs shared (both without the GIL, so no lock order issue) */
  pthread_rwlock_t bind_lock;
  bool lock_ready;
  /* "input i (name)" per input, for error messages: formatted once here
   * rather than at every execute (snprintf was ~3% of a decoder step) */
  char **input_what;
  int ninput_what;
} ModelObject;

#define MODEL(self) (((ModelObject *)(self))->m)

kiln_model *ext_model_of(PyObject *self) { return MODEL(self); }

/* Model(context, graph, device=None): compile (the GIL released). */
/* "input i (name)" into buf: how error messages name input i. Returns buf. */
static const char *input_label(kiln_model *m, int i, char *buf, size_t cap) {
  const char *name = kiln_model_input_name(m, i);
  snprintf(buf, cap, "input %d (%s)", i, name ? name : "?");
  return buf;
}

static PyObject *model_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"context", "graph", "device", NULL};
  PyObject *ctx, *graph, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O", kwlist,
                                   (PyTypeObject *)ext_st->context_type, &ctx, &graph, &device))
    return NULL;
  kiln_graph *g = ext_graph_of(graph);
  kiln_device *d = NULL;
  if (!g || ext_device_of(device, &d) < 0) return NULL;
  PyObject *weights = PyDict_New();
  if (!weights) return NULL;
  kiln_status *st = kiln_status_new();
  kiln_model *m;
  kiln_context *c = CTX(ctx);
  Py_BEGIN_ALLOW_THREADS m = kiln_model_compile_on(c, d, g, st);
  Py_END_ALLOW_THREADS
  if (!m) {
    ext_raise(st);
    kiln_status_free(st);
    Py_DECREF(weights);
    return NULL;
  }
  kiln_status_free(st);
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  ModelObject *o = (ModelObject *)alloc(tp, 0);
  if (!o) {
    kiln_model_free(m);
    Py_DECREF(weights);
    return NULL;
  }
  o->m = m;
  o->context = Py_NewRef(ctx);
  o->device = d ? Py_NewRef(device) : NULL;
  o->weights = weights;
  if (pthread_rwlock_init(&o->bind_lock, NULL) != 0) {
    Py_DECREF(o); /* model_dealloc frees the rest */
    return PyErr_NoMemory();
  }
  o->lock_ready = true;
  int nin = kiln_model_num_inputs(m);
  if (nin > 0 && (o->input_what = calloc((size_t)nin, sizeof *o->input_what))) {
    o->ninput_what = nin;
    for (int i = 0; i < nin; i++) {
      const char *name = kiln_model_input_name(m, i);
      size_t len = 32 + (name ? strlen(name) : 1);
      if ((o->input_what[i] = malloc(len))) input_label(m, i, o->input_what[i], len);
    }
  }
  return (PyObject *)o;
}

static void model_dealloc(PyObject *self) {
  ModelObject *o = (ModelObject *)self;
  PyTypeObject *tp = Py_TYPE(self);
  kiln_model *m = o->m;
  Py_BEGIN_ALLOW_THREADS kiln_model_free(m); /* may wait for a kernel being compiled */
  Py_END_ALLOW_THREADS
  if (o->lock_ready) pthread_rwlock_destroy(&o->bind_lock);
  for (int i = 0; i < o->ninput_what; i++) free(o->input_what[i]);
  free(o->input_what);
  Py_XDECREF(o->weights);
  Py_XDECREF(o->device);
  Py_XDECREF(o->context);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

enum run_mode { RUN_EXECUTE, RUN_CAPTURE, RUN_REPLAY, RUN_VERIFY };

/* A buffer input is written in place, so it must be memory kiln can write
 * and the caller sees: a kiln Tensor, a writable C-contiguous buffer, or
 * a __dlpack__ object (borrowed); a copy would lose the writes. */
static bool writable_in_place(PyObject *obj, const char *what) {
  if (PyObject_TypeCheck(obj, (PyTypeObject *)ext_st->tensor_type) ||
      !PyObject_CheckBuffer(obj))
    return true;
  Py_buffer v;
  if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0) {
    PyBuffer_Release(&v);
    return true;
  }
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError, "%s is a buffer the model changes in place: pass a writable "
               "C-contiguous array (np.ascontiguousarray, not read-only) or a kiln Tensor",
               what);
  return false;
}

/* The inputs as kiln tensors (objs keep their memory alive), or -1 raised. */
static int gather_inputs(const ModelObject *mo, PyObject *const *args, Py_ssize_t nargs,
                         TensorObject **objs, kiln_tensor **ins) {
  kiln_model *m = mo->m;
  for (Py_ssize_t i = 0; i < nargs; i++) {
    char buf[160];
    const char *what = i < mo->ninput_what ? mo->input_what[i] : NULL;
    if (!what) what = input_label(m, (int)i, buf, sizeof buf);
    if (kiln_model_input_is_buffer(m, (int)i) == 1 && !writable_in_place(args[i], what)) {
      while (i-- > 0) Py_DECREF(objs[i]);
      return -1;
    }
    if (!(objs[i] = ext_as_tensor(args[i], what))) {
      while (i-- > 0) Py_DECREF(objs[i]);
      return -1;
    }
    ins[i] = objs[i]->t;
  }
  return 0;
}

/* execute / capture / replay / verify_replay with inputs args[first..]. */
static PyObject *run(PyObject *self, enum run_mode mode, PyObject *const *args,
                     Py_ssize_t nargs) {
  ModelObject *mo = (ModelObject *)self;
  kiln_model *m = mo->m;
  uint64_t key = 0;
  if (mode != RUN_EXECUTE) {
    if (nargs < 1) return ext_raisef(PyExc_TypeError, "the first argument is the key (an int)");
    key = PyLong_AsUnsignedLongLong(args[0]);
    if (key == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    args++, nargs--;
  }
  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m);
  if (nargs != nin) {
    return ext_raisef(PyExc_TypeError, "the model takes %d input%s, got %zd", nin,
                      nin == 1 ? "" : "s", nargs);
  }
  PyObject *result = NULL;
  TensorObject *objs_small[16];
  kiln_tensor *ins_small[16], *outs_small[16];
  TensorObject **objs = objs_small;
  kiln_tensor **ins = ins_small, **outs = outs_small;
  if (nin > 16 || nout > 16) {
    objs = calloc((size_t)nin + 1, sizeof *objs);
    ins = calloc((size_t)nin + 1, sizeof *ins);
    outs = calloc((size_t)nout + 1, sizeof *outs);
    if (!objs || !ins || !outs) {
      PyErr_NoMemory();
      goto free_arrays;
    }
  }
  for (int i = 0; i < nout; i++) outs[i] = NULL;
  if (gather_inputs(mo, args, nargs, objs, ins) < 0) goto free_arrays;
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS pthread_rwlock_rdlock(&mo->bind_lock);
  switch (mode) {
  case RUN_EXECUTE: rc = kiln_model_execute(m, ins, nin, outs, nout, st); break;
  case RUN_CAPTURE: rc = kiln_model_capture(m, key, ins, nin, outs, nout, st); break;
  case RUN_REPLAY: rc = kiln_model_replay(m, key, ins, nin, outs, nout, st); break;
  default: rc = kiln_model_verify_replay(m, key, ins, nin, st); break;
  }
  pthread_rwlock_unlock(&mo->bind_lock);
  Py_END_ALLOW_THREADS
  for (int i = 0; i < nin; i++) Py_DECREF(objs[i]);
  if (rc < 0) {
    ext_raise(st);
    kiln_status_free(st);
    goto free_arrays;
  }
  kiln_status_free(st);
  if (mode == RUN_VERIFY) {
    result = Py_NewRef(Py_None);
    goto free_arrays;
  }
  if (!(result = PyList_New(nout))) {
    for (int i = 0; i < nout; i++) kiln_tensor_free(outs[i]);
    goto free_arrays;
  }
  for (int i = 0; i < nout; i++) {
    PyObject *dev = kiln_tensor_device(outs[i]) ? mo->device : NULL;
    PyObject *t = ext_tensor_wrap(outs[i], dev); /* frees outs[i] on failure */
    if (!t) {
      for (int j = i + 1; j < nout; j++) kiln_tensor_free(outs[j]);
      Py_CLEAR(result);
      break;
    }
    PyList_SetItem(result, i, t);
  }
free_arrays:
  if (objs != objs_small) {
    free(objs);
    free(ins);
    free(outs);
  }
  return result;
}

static PyObject *model_execute(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return run(self, RUN_EXECUTE, args, nargs);
}
static PyObject *model_capture(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return run(self, RUN_CAPTURE, args, nargs);
}
static PyObject *model_replay(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return run(self, RUN_REPLAY, args, nargs);
}
static PyObject *model_verify_replay(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  return run(self, RUN_VERIFY, args, nargs);
}

static PyObject *model_release(PyObject *self, PyObject *arg) {
  uint64_t key = PyLong_AsUnsignedLongLong(arg);
  if (key == (uint64_t)-1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  kiln_model *m = MODEL(self);
  int rc; /* dropping code may evict kernels, which logs: the GIL goes */
  Py_BEGIN_ALLOW_THREADS rc = kiln_model_release(m, key, st);
  Py_END_ALLOW_THREADS
  return done(rc, st);
}

/* bind_weight(name, array): the model borrows the array's memory (kept
 * alive by the model until bound again). Waits for running executes. */
static PyObject *model_bind_weight(PyObject *self, PyObject *args) {
  ModelObject *mo = (ModelObject *)self;
  PyObject *nameobj, *arr;
  if (!PyArg_ParseTuple(args, "UO", &nameobj, &arr)) return NULL;
  const char *name = PyUnicode_AsUTF8AndSize(nameobj, NULL);
  if (!name) return NULL;
  char what[160];
  snprintf(what, sizeof what, "weight '%s'", name);
  TensorObject *t = ext_as_tensor(arr, what);
  if (!t) return NULL;
  kiln_status *st = kiln_status_new();
  int rc;
  kiln_model *m = mo->m;
  Py_BEGIN_ALLOW_THREADS pthread_rwlock_wrlock(&mo->bind_lock);
  rc = kiln_model_bind_weight(m, name, t->t, st);
  pthread_rwlock_unlock(&mo->bind_lock);
  Py_END_ALLOW_THREADS
  if (rc == 0 && PyDict_SetItem(mo->weights, nameobj, (PyObject *)t) < 0) rc = -2;
  Py_DECREF(t);
  if (rc == -2) {
    kiln_status_free(st);
    return NULL;
  }
  return done(rc, st);
}

/* (name, dtype number, (dim texts...), (static dims or -1...)) per port */
static PyObject *ports(PyObject *self, int outputs) {
  kiln_model *m = MODEL(self);
  int n = outputs ? kiln_model_num_outputs(m) : kiln_model_num_inputs(m);
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    const char *name = outputs ? kiln_model_output_name(m, i) : kiln_model_input_name(m, i);
    int dt = outputs ? kiln_model_output_dtype(m, i) : kiln_model_input_dtype(m, i);
    int rank = outputs ? kiln_model_output_rank(m, i) : kiln_model_input_rank(m, i);
    PyObject *dims = PyTuple_New(rank), *stat = PyTuple_New(rank);
    for (int a = 0; dims && stat && a < rank; a++) {
      const char *d = outputs ? kiln_model_output_dim(m, i, a) : kiln_model_input_dim(m, i, a);
      int64_t s = outputs ? kiln_model_output_dim_static(m, i, a)
                          : kiln_model_input_dim_static(m, i, a);
      PyTuple_SetItem(dims, a, PyUnicode_FromString(d ? d : "?"));
      PyTuple_SetItem(stat, a, PyLong_FromLongLong(s));
    }
    PyObject *item = dims && stat ? Py_BuildValue("(siOO)", name ? name : "", dt, dims, stat)
                                  : NULL;
    Py_XDECREF(dims);
    Py_XDECREF(stat);
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SetItem(list, i, item);
  }
  return list;
}

static PyObject *model_inputs(PyObject *self, void *c) {
  (void)c;
  return ports(self, 0);
}
static PyObject *model_outputs(PyObject *self, void *c) {
  (void)c;
  return ports(self, 1);
}

/* [(name, dtype number, (dim texts...))] of the graph's weights */
static PyObject *model_weights(PyObject *self, void *c) {
  (void)c;
  kiln_model *m = MODEL(self);
  int n = kiln_model_num_weights(m);
  PyObject *list = PyList_New(n < 0 ? 0 : n);
  for (int i = 0; list && i < n; i++) {
    int rank = kiln_model_weight_rank(m, i);
    PyObject *dims = PyTuple_New(rank < 0 ? 0 : rank);
    for (int a = 0; dims && a < rank; a++) {
      const char *d = kiln_model_weight_dim(m, i, a);
      PyTuple_SetItem(dims, a, PyUnicode_FromString(d ? d : "?"));
    }
    PyObject *item = dims ? Py_BuildValue("(siO)", kiln_model_weight_name(m, i),
                                          (int)kiln_model_weight_dtype(m, i), dims)
                          : NULL;
    Py_XDECREF(dims);
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SetItem(list, i, item);
  }
  return list;
}

static PyObject *model_compile_ms(PyObject *self, void *c) {
  (void)c;
  return PyFloat_FromDouble(kiln_model_compile_ms(MODEL(self)));
}
static PyObject *model_variants(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_model_variants(MODEL(self)));
}

static PyObject *model_set_specialize(PyObject *self, PyObject *arg) {
  int p = (int)PyLong_AsLong(arg);
  if (p == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_model_set_specialize(MODEL(self), (kiln_specialize_policy)p, st), st);
}

static PyObject *model_set_max_variants(PyObject *self, PyObject *arg) {
  int n = (int)PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_model_set_max_variants(MODEL(self), n, st), st);
}

/* set_bucket(symbol, kind number, n=0) */
static PyObject *model_set_bucket(PyObject *self, PyObject *args) {
  const char *sym;
  int kind;
  long long n = 0;
  if (!PyArg_ParseTuple(args, "si|L", &sym, &kind, &n)) return NULL;
  kiln_status *st = kiln_status_new();
  return done(kiln_model_set_bucket(MODEL(self), sym, (kiln_bucket_kind)kind, n, st), st);
}

/* specialize({symbol: value}): compile that variant now */
static PyObject *model_specialize(PyObject *self, PyObject *dict) {
  if (!PyDict_Check(dict)) return ext_raisef(PyExc_TypeError, "expected a dict {symbol: int}");
  Py_ssize_t n = PyDict_Size(dict), pos = 0, i = 0;
  const char **syms = calloc((size_t)n + 1, sizeof *syms);
  int64_t *vals = calloc((size_t)n + 1, sizeof *vals);
  PyObject *k, *v, *r = NULL;
  if (!syms || !vals) {
    PyErr_NoMemory();
    goto out;
  }
  while (PyDict_Next(dict, &pos, &k, &v)) {
    if (!(syms[i] = PyUnicode_AsUTF8AndSize(k, NULL))) goto out;
    vals[i] = PyLong_AsLongLong(v);
    if (vals[i] == -1 && PyErr_Occurred()) goto out;
    i++;
  }
  kiln_status *st = kiln_status_new();
  int rc;
  kiln_model *m = MODEL(self);
  Py_BEGIN_ALLOW_THREADS rc = kiln_model_specialize(m, syms, vals, (int)n, st);
  Py_END_ALLOW_THREADS
  r = done(rc, st);
out:
  free(syms);
  free(vals);
  return r;
}

static PyObject *model_counter(PyObject *self, PyObject *arg) {
  int c = (int)PyLong_AsLong(arg);
  if (c == -1 && PyErr_Occurred()) return NULL;
  return PyFloat_FromDouble(kiln_model_counter(MODEL(self), (kiln_counter)c));
}

static PyGetSetDef model_getset[] = {
    {"inputs", model_inputs, NULL, "[(name, dtype, dims, static dims)] of the inputs", NULL},
    {"outputs", model_outputs, NULL, "[(name, dtype, dims, static dims)] of the outputs", NULL},
    {"weights", model_weights, NULL, "[(name, dtype, dims)] of the weights", NULL},
    {"compile_ms", model_compile_ms, NULL, "wall time of the compile", NULL},
    {"variants", model_variants, NULL, "live specialized variants", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL
static PyMethodDef model_methods[] = {
    {"execute", FAST(model_execute), "execute(*inputs) -> [Tensor]"},
    {"capture", FAST(model_capture), "capture(key, *inputs) -> [Tensor]"},
    {"replay", FAST(model_replay), "replay(key, *inputs) -> [Tensor]"},
    {"verify_replay", FAST(model_verify_replay), "verify_replay(key, *inputs)"},
    {"release", model_release, METH_O, "release(key)"},
    {"bind_weight", model_bind_weight, METH_VARARGS, "bind_weight(name, array)"},
    {"set_specialize", model_set_specialize, METH_O, "set_specialize(policy number)"},
    {"set_max_variants", model_set_max_variants, METH_O, "set_max_variants(n)"},
    {"set_bucket", model_set_bucket, METH_VARARGS, "set_bucket(symbol, kind, n=0)"},
    {"specialize", model_specialize, METH_O, "specialize({symbol: value})"},
    {"counter", model_counter, METH_O, "counter(number) -> float"},
    {"set_profile", ext_model_set_profile, METH_O, "set_profile(on): count kernel times"},
    {"profile", ext_model_profile, METH_NOARGS,
     "profile() -> (executes, execute_ms, [(node, kernel, shape, calls, total_ms, mean_ms, "
     "share, gflop, gbyte)])"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot model_slots[] = {
    {Py_tp_new, model_new},         {Py_tp_dealloc, model_dealloc},
    {Py_tp_getset, model_getset},   {Py_tp_methods, model_methods},
    {Py_tp_doc, "Model(context, graph, device=None): a compiled kiln model."},
    {0, NULL}};

static PyType_Spec model_spec = {"kiln._kiln.Model", sizeof(ModelObject), 0, Py_TPFLAGS_DEFAULT,
                                 model_slots};

int ext_model_init(PyObject *m) {
  if (!(ext_st->device_type = PyType_FromSpec(&device_spec))) return -1;
  if (!(ext_st->context_type = PyType_FromSpec(&context_spec))) return -1;
  if (!(ext_st->model_type = PyType_FromSpec(&model_spec))) return -1;
  if (PyModule_AddObjectRef(m, "Device", ext_st->device_type) < 0) return -1;
  if (PyModule_AddObjectRef(m, "Context", ext_st->context_type) < 0) return -1;
  return PyModule_AddObjectRef(m, "Model", ext_st->model_type);
}
