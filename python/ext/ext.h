/* ext.h - what the files of kiln's CPython extension (kiln._kiln) share.
 *
 * The extension is a thin layer over libkiln's C API, written against the
 * stable ABI (Py_LIMITED_API 3.11), so one wheel serves every CPython from
 * 3.11 on. Python modules (kiln.graph, kiln.engine, kiln.driver) build the
 * MAX-shaped API on top of it. Every kiln error becomes an exception of the
 * module's KilnError family with kiln's own message (ext_raise). */
#ifndef KILN_PY_EXT_H
#define KILN_PY_EXT_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

#include "kiln/custom.h"
#include "kiln/device.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"

/* The module's state: its types and exception classes. */
typedef struct ext_state {
  PyObject *graph_type, *value_type, *tensor_type, *context_type, *device_type, *model_type;
  PyObject *tensor_class; /* what ext_tensor_wrap makes: Tensor or kiln.driver's subclass */
  PyObject *error;                                         /* KilnError */
  PyObject *err_by_code[KILN_ERR_UNSUPPORTED + 1];        /* KilnError subclasses */
  PyObject *dtype_error, *shape_error;
} ext_state;

extern ext_state *ext_st; /* set at module init (one interpreter) */

/* Raise the exception for st's code with st's message; returns NULL. */
PyObject *ext_raise(const kiln_status *st);
/* Raise `cls` with a formatted message; returns NULL. */
PyObject *ext_raisef(PyObject *cls, const char *fmt, ...);

/* A device opened by kiln; tensors and models on it keep it alive. */
typedef struct DeviceObject {
  PyObject_HEAD
  kiln_device *dev;
  kiln_device_kind kind;
} DeviceObject;

/* A kiln_tensor and whatever keeps its memory alive: kiln's own memory, a
 * buffer-protocol export of another object (view), or a DLPack capsule's
 * tensor (dl). */
typedef struct TensorObject {
  PyObject_HEAD
  kiln_tensor *t;
  PyObject *device;          /* DeviceObject of a device tensor, else NULL */
  Py_buffer view;            /* held when view.obj != NULL */
  void *dl;                  /* DLManagedTensor * whose deleter we owe, or NULL */
  Py_ssize_t *bufdims;       /* shape then strides for buffer exports, or NULL */
  int exports;               /* live buffer exports */
} TensorObject;

/* Wrap t (taken: freed with the object; freed here on failure); device may
 * be NULL. */
PyObject *ext_tensor_wrap(kiln_tensor *t, PyObject *device);
/* A Tensor object for obj, without copying where its memory allows: a kiln
 * Tensor (itself), a C-contiguous buffer (numpy: borrowed), an object with
 * __dlpack__ (torch, jax, numpy: borrowed); a strided buffer is copied.
 * `what` names the value in errors ("input 0 (x)"). New reference, or NULL
 * with an exception set. */
TensorObject *ext_as_tensor(PyObject *obj, const char *what);
/* The kiln_device of a Device object (NULL for None); -1 (raised) when obj
 * is neither. */
int ext_device_of(PyObject *obj, kiln_device **out);

/* The kiln_graph of a Graph object; NULL (raised) when obj is not one. */
kiln_graph *ext_graph_of(PyObject *obj);

/* The kiln objects of a Context / Model object (model.c), and the slot
 * holding a Context's log callable (a reference, or NULL). */
kiln_context *ext_context_of(PyObject *self);
PyObject **ext_context_log_slot(PyObject *self);
kiln_model *ext_model_of(PyObject *self);

/* Observability methods of Context and Model (observe.c): logs, traces,
 * profiles and the remote cache. */
PyObject *ext_context_set_log(PyObject *self, PyObject *args);
PyObject *ext_context_log_level(PyObject *self, void *c);
PyObject *ext_context_set_trace(PyObject *self, PyObject *arg);
PyObject *ext_context_flush_trace(PyObject *self, PyObject *noargs);
PyObject *ext_context_set_profile(PyObject *self, PyObject *arg);
PyObject *ext_context_set_remote_cache(PyObject *self, PyObject *args);
PyObject *ext_context_flush_remote_cache(PyObject *self, PyObject *args);
PyObject *ext_context_remote_cache_status(PyObject *self, void *c);
PyObject *ext_context_remote_cache_counts(PyObject *self, PyObject *noargs);
PyObject *ext_model_set_profile(PyObject *self, PyObject *arg);
PyObject *ext_model_profile(PyObject *self, PyObject *noargs);

int ext_graph_init(PyObject *m);
int ext_tensor_init(PyObject *m);
int ext_model_init(PyObject *m);

/* kiln's dtype for a buffer-protocol format (numpy's "f", "<i8" style), or
 * -1 when kiln has none. */
int ext_dtype_of_format(const char *format, Py_ssize_t itemsize);

#endif
