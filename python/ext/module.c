/* module.c - kiln._kiln: module init, the exception classes, dtype helpers.
 *
 * Exceptions: KilnError (an Exception) and one subclass per kiln_code, each
 * also a subclass of the builtin a Python user would catch (ParseError is a
 * ValueError, NotFoundError a LookupError, ...). A verify or execute error
 * whose message is about a wrong dtype is a DTypeError (a TypeError too);
 * other execute-time mismatches are ShapeErrors (a ValueError). */
#include "ext.h"

#include <string.h>

ext_state *ext_st;
static ext_state state;

PyObject *ext_raisef(PyObject *cls, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  PyErr_SetString(cls, buf);
  return NULL;
}

/* kiln's messages about a wrong dtype: "operand 1 of mo.add has dtype si32
 * but ...", "input 0 (x): expected dtype f32, got si32", "dtype bf16 is not
 * supported here". */
static bool is_dtype_message(const char *msg) {
  return strstr(msg, "has dtype") || strstr(msg, "expected dtype") ||
         (strstr(msg, "dtype ") && strstr(msg, "not supported"));
}

PyObject *ext_raise(const kiln_status *st) {
  kiln_code c = kiln_status_code(st);
  const char *msg = kiln_status_message(st);
  if (!msg || !*msg) msg = kiln_code_name(c);
  PyObject *cls = ext_st->error;
  if (c > KILN_OK && c <= KILN_ERR_UNSUPPORTED && ext_st->err_by_code[c])
    cls = ext_st->err_by_code[c];
  if ((c == KILN_ERR_VERIFY || c == KILN_ERR_SHAPE) && is_dtype_message(msg))
    cls = ext_st->dtype_error;
  if (c == KILN_ERR_OUT_OF_MEMORY) {
    PyErr_SetString(PyExc_MemoryError, msg);
    return NULL;
  }
  PyErr_SetString(cls, msg);
  return NULL;
}

int ext_dtype_of_format(const char *f, Py_ssize_t itemsize) {
  if (!f) return KILN_UINT8; /* "B" is the default format */
  if (*f == '@' || *f == '=' || *f == '<') f++;
  if (!*f || f[1]) return -1; /* one code; structs and big-endian are refused */
  switch (*f) {
  case '?': return KILN_BOOL;
  case 'e': return KILN_FLOAT16;
  case 'f': return KILN_FLOAT32;
  case 'd': return KILN_FLOAT64;
  case 'b': case 'h': case 'i': case 'l': case 'q':
    switch (itemsize) {
    case 1: return KILN_INT8;
    case 2: return KILN_INT16;
    case 4: return KILN_INT32;
    case 8: return KILN_INT64;
    }
    return -1;
  case 'B': case 'H': case 'I': case 'L': case 'Q':
    switch (itemsize) {
    case 1: return KILN_UINT8;
    case 2: return KILN_UINT16;
    case 4: return KILN_UINT32;
    case 8: return KILN_UINT64;
    }
    return -1;
  }
  return -1;
}

static PyObject *py_version(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return PyUnicode_FromString(kiln_version());
}

static PyObject *py_dtype_name(PyObject *self, PyObject *arg) {
  (void)self;
  long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred()) return NULL;
  if (d < 0 || d >= KILN_DTYPE_COUNT) return ext_raisef(PyExc_ValueError, "no dtype %ld", d);
  return PyUnicode_FromString(kiln_dtype_name((kiln_dtype)d));
}

static PyObject *py_dtype_size(PyObject *self, PyObject *arg) {
  (void)self;
  long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred()) return NULL;
  if (d < 0 || d >= KILN_DTYPE_COUNT) return ext_raisef(PyExc_ValueError, "no dtype %ld", d);
  return PyLong_FromSize_t(kiln_dtype_size((kiln_dtype)d));
}

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, "kiln_version(): \"0.1.0 (LLVM 19.1.7)\"."},
    {"dtype_name", py_dtype_name, METH_O, "MO spelling of a kiln dtype number (\"f32\")."},
    {"dtype_size", py_dtype_size, METH_O, "Bytes per element of a kiln dtype number."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "kiln._kiln",
    "kiln's C extension: graphs, tensors, devices, contexts and models over libkiln.", -1,
    methods, NULL, NULL, NULL, NULL};

/* A new exception class kiln.NAME with the given bases, added to m. */
static PyObject *new_error(PyObject *m, const char *name, PyObject *bases, const char *doc) {
  char full[64];
  snprintf(full, sizeof full, "kiln.%s", name);
  PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
  if (!cls) return NULL;
  if (PyModule_AddObjectRef(m, name, cls) < 0) {
    Py_DECREF(cls);
    return NULL;
  }
  return cls; /* the module holds a reference too; ours lives in state */
}

static PyObject *sub_error(PyObject *m, const char *name, PyObject *builtin, const char *doc) {
  PyObject *bases = builtin ? PyTuple_Pack(2, state.error, builtin) : PyTuple_Pack(1, state.error);
  if (!bases) return NULL;
  PyObject *cls = new_error(m, name, bases, doc);
  Py_DECREF(bases);
  return cls;
}

PyMODINIT_FUNC PyInit__kiln(void); /* the one symbol the module exports */
PyMODINIT_FUNC PyInit__kiln(void) {
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  ext_st = &state;
  if (!(state.error = new_error(m, "KilnError", PyExc_Exception, "Any error kiln reports.")))
    goto fail;
  struct {
    kiln_code code;
    const char *name;
    PyObject *builtin;
    const char *doc;
  } errs[] = {
      {KILN_ERR_INVALID_ARGUMENT, "InvalidArgumentError", PyExc_ValueError,
       "A bad argument: an index out of range, an unknown option."},
      {KILN_ERR_PARSE, "ParseError", PyExc_ValueError, "Malformed IR text, ONNX or C source."},
      {KILN_ERR_VERIFY, "VerifyError", PyExc_ValueError,
       "A well-formed graph that breaks an op's rules (a bad attribute, shape or dtype)."},
      {KILN_ERR_SHAPE, "ShapeError", PyExc_ValueError,
       "A shape that does not fit: an input's axis, an op's operands."},
      {KILN_ERR_NOT_FOUND, "NotFoundError", PyExc_LookupError,
       "A missing input, weight, file or device."},
      {KILN_ERR_IO, "KilnIOError", PyExc_OSError, "A file kiln cannot read or write."},
      {KILN_ERR_COMPILE, "CompileError", NULL, "LLVM or clang failed to compile a kernel."},
      {KILN_ERR_RUNTIME, "ExecutionError", PyExc_RuntimeError,
       "A kernel reported a data error while running (an index out of range, ...)."},
      {KILN_ERR_UNSUPPORTED, "UnsupportedError", PyExc_NotImplementedError,
       "A valid request kiln cannot serve (yet); the message says what."},
  };
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
    if (!(state.err_by_code[errs[i].code] = sub_error(m, errs[i].name, errs[i].builtin,
                                                      errs[i].doc)))
      goto fail;
  state.shape_error = state.err_by_code[KILN_ERR_SHAPE];
  {
    PyObject *bases = PyTuple_Pack(2, state.err_by_code[KILN_ERR_VERIFY], PyExc_TypeError);
    if (!bases) goto fail;
    state.dtype_error = new_error(m, "DTypeError", bases, "A dtype that does not fit.");
    Py_DECREF(bases);
    if (!state.dtype_error) goto fail;
  }
  if (ext_graph_init(m) < 0 || ext_tensor_init(m) < 0 || ext_model_init(m) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
