/* graph.c - kiln._kiln.Graph and Value: a kiln_graph built op by op (or
 * parsed, loaded, imported from ONNX), and handles to its values.
 *
 * A Value holds a reference to its Graph, so a graph lives as long as any of
 * its values. Ops are added by MO name with their attributes written as MO
 * text; result types are inferred by kiln (kiln_graph_add_op). */
#include "ext.h"

#include <stdlib.h>

typedef struct GraphObject {
  PyObject_HEAD
  kiln_graph *g;
} GraphObject;

typedef struct ValueObject {
  PyObject_HEAD
  PyObject *graph; /* GraphObject */
  kiln_value *v;
} ValueObject;

static PyObject *graph_wrap(kiln_graph *g) {
  GraphObject *o = PyObject_New(GraphObject, (PyTypeObject *)ext_st->graph_type);
  if (!o) {
    kiln_graph_free(g);
    return NULL;
  }
  o->g = g;
  return (PyObject *)o;
}

static PyObject *value_wrap(PyObject *graph, kiln_value *v) {
  ValueObject *o = PyObject_New(ValueObject, (PyTypeObject *)ext_st->value_type);
  if (!o) return NULL;
  Py_INCREF(graph);
  o->graph = graph;
  o->v = v;
  return (PyObject *)o;
}

/* The tail of every call that makes a graph / value: wrap it, or raise
 * st's error; st is freed either way. */
static PyObject *graph_result(kiln_graph *g, kiln_status *st) {
  PyObject *r = g ? graph_wrap(g) : ext_raise(st);
  kiln_status_free(st);
  return r;
}

static PyObject *value_result(PyObject *graph, kiln_value *v, kiln_status *st) {
  PyObject *r = v ? value_wrap(graph, v) : ext_raise(st);
  kiln_status_free(st);
  return r;
}

static void graph_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  kiln_graph_free(((GraphObject *)self)->g);
  PyObject_Free(self);
  Py_DECREF(tp);
}

static void value_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  Py_XDECREF(((ValueObject *)self)->graph);
  PyObject_Free(self);
  Py_DECREF(tp);
}

/* ---- constructors (module functions) ---- */

static PyObject *graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  (void)tp;
  static char *kwlist[] = {"name", NULL};
  const char *name = "graph";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|s", kwlist, &name)) return NULL;
  kiln_status *st = kiln_status_new();
  return graph_result(kiln_graph_new(name, st), st);
}

static PyObject *graph_parse(PyObject *cls, PyObject *args) {
  (void)cls;
  const char *text, *filename = NULL;
  Py_ssize_t len;
  if (!PyArg_ParseTuple(args, "s#|z", &text, &len, &filename)) return NULL;
  kiln_status *st = kiln_status_new();
  return graph_result(kiln_graph_parse(text, (size_t)len, filename, st), st);
}

static PyObject *graph_load(PyObject *cls, PyObject *args) {
  (void)cls;
  const char *path;
  if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
  kiln_status *st = kiln_status_new();
  return graph_result(kiln_graph_load(path, st), st);
}

/* from_onnx(path: str) or from_onnx(data: bytes) */
static PyObject *graph_from_onnx(PyObject *cls, PyObject *arg) {
  (void)cls;
  kiln_status *st = kiln_status_new();
  kiln_graph *g = NULL;
  if (PyUnicode_Check(arg)) {
    const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!path) goto out;
    Py_BEGIN_ALLOW_THREADS g = kiln_graph_from_onnx_file(path, st);
    Py_END_ALLOW_THREADS
  } else {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) goto out;
    Py_BEGIN_ALLOW_THREADS g = kiln_graph_from_onnx_memory(b.buf, (size_t)b.len, st);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
  }
  return graph_result(g, st);
out:
  kiln_status_free(st);
  return NULL;
}

/* ---- building ---- */

/* dims: a sequence of str -> a malloc'd array of UTF-8 pointers (borrowed
 * from the list's items, which the caller keeps alive). */
static const char **dim_texts(PyObject *seq, int *rank) {
  Py_ssize_t n = PySequence_Size(seq);
  if (n < 0) return NULL;
  if (n > 64) return (const char **)ext_raisef(PyExc_ValueError, "rank %zd > 64", n);
  const char **d = calloc((size_t)n + 1, sizeof *d);
  if (!d) return (const char **)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PySequence_GetItem(seq, i);
    if (!it) goto fail;
    if (!PyUnicode_Check(it)) {
      Py_DECREF(it);
      ext_raisef(PyExc_TypeError, "dim %zd: expected str", i);
      goto fail;
    }
    d[i] = PyUnicode_AsUTF8AndSize(it, NULL); /* cached in the str, which seq holds */
    Py_DECREF(it);
    if (!d[i]) goto fail;
  }
  *rank = (int)n;
  return d;
fail:
  free(d);
  return NULL;
}

/* add_input(name, dtype, dims, gpu=-1, buffer=False) */
static PyObject *graph_add_input(PyObject *self, PyObject *args) {
  GraphObject *go = (GraphObject *)self;
  const char *name;
  int dtype, gpu = -1, buffer = 0;
  PyObject *dims;
  if (!PyArg_ParseTuple(args, "ziO|ip", &name, &dtype, &dims, &gpu, &buffer)) return NULL;
  if (buffer && gpu >= 0) {
    PyErr_SetString(PyExc_ValueError, "a buffer input lives on the host (buffers run on the CPU "
                    "runtime only)");
    return NULL;
  }
  dims = PySequence_List(dims);
  if (!dims) return NULL;
  int rank = 0;
  const char **d = dim_texts(dims, &rank);
  PyObject *r = NULL;
  if (d) {
    kiln_status *st = kiln_status_new();
    kiln_value *v = buffer ? kiln_graph_add_buffer_input(go->g, name, (kiln_dtype)dtype, rank,
                                                         d, st)
                           : kiln_graph_add_input_on(go->g, name, (kiln_dtype)dtype, rank, d,
                                                     gpu, st);
    r = value_result(self, v, st);
    free(d);
  }
  Py_DECREF(dims);
  return r;
}

static PyObject *graph_add_weight(PyObject *self, PyObject *args) {
  GraphObject *go = (GraphObject *)self;
  const char *name;
  int dtype;
  PyObject *dims;
  if (!PyArg_ParseTuple(args, "siO", &name, &dtype, &dims)) return NULL;
  dims = PySequence_List(dims);
  if (!dims) return NULL;
  int rank = 0;
  const char **d = dim_texts(dims, &rank);
  PyObject *r = NULL;
  if (d) {
    kiln_status *st = kiln_status_new();
    r = value_result(self, kiln_graph_add_weight(go->g, name, (kiln_dtype)dtype, rank, d, st), st);
    free(d);
  }
  Py_DECREF(dims);
  return r;
}

/* operands: a sequence of Value of this graph -> a malloc'd kiln_value *[] */
static kiln_value **value_array(PyObject *self, PyObject *seq, int *n) {
  Py_ssize_t len = PySequence_Size(seq);
  if (len < 0) return NULL;
  kiln_value **vs = calloc((size_t)len + 1, sizeof *vs);
  if (!vs) return (kiln_value **)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *it = PySequence_GetItem(seq, i);
    if (!it) goto fail;
    int ok = PyObject_TypeCheck(it, (PyTypeObject *)ext_st->value_type);
    if (ok && ((ValueObject *)it)->graph != self) ok = -1;
    if (ok == 1) vs[i] = ((ValueObject *)it)->v;
    Py_DECREF(it);
    if (ok == 0) {
      ext_raisef(PyExc_TypeError, "operand %zd: expected a graph value", i);
      goto fail;
    }
    if (ok < 0) {
      ext_raisef(ext_st->err_by_code[KILN_ERR_INVALID_ARGUMENT],
                 "operand %zd: a value of another graph", i);
      goto fail;
    }
  }
  *n = (int)len;
  return vs;
fail:
  free(vs);
  return NULL;
}

/* The results of the op whose first result is v, as a list of Values. */
static PyObject *results_list(PyObject *self, kiln_value *v) {
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  for (int i = 0;; i++) {
    kiln_value *r = kiln_value_result(v, i);
    if (!r) break;
    PyObject *w = value_wrap(self, r);
    if (!w || PyList_Append(list, w) < 0) {
      Py_XDECREF(w);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(w);
  }
  return list;
}

/* add_op(op, operands, attrs=None, result_types=None) -> list of Values
 * (every result of the op: one for most, several for mo.split). result_types:
 * None, one type's text, or a sequence of them (one per result). */
static PyObject *graph_add_op(PyObject *self, PyObject *args) {
  GraphObject *go = (GraphObject *)self;
  const char *op, *attrs = NULL;
  PyObject *ops, *rtypes = Py_None;
  if (!PyArg_ParseTuple(args, "sO|zO", &op, &ops, &attrs, &rtypes)) return NULL;
  PyObject *rlist = NULL;
  if (PyUnicode_Check(rtypes)) {
    rlist = PyList_New(1);
    if (rlist) PyList_SetItem(rlist, 0, Py_NewRef(rtypes));
  } else if (rtypes == Py_None) {
    rlist = PyList_New(0);
  } else {
    rlist = PySequence_List(rtypes);
  }
  if (!rlist) return NULL;
  Py_ssize_t nr = PyList_Size(rlist);
  const char **rt = calloc((size_t)nr + 1, sizeof *rt);
  if (!rt) {
    Py_DECREF(rlist);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < nr; i++) {
    PyObject *it = PyList_GetItem(rlist, i);
    if (!PyUnicode_Check(it) || !(rt[i] = PyUnicode_AsUTF8AndSize(it, NULL))) {
      if (!PyErr_Occurred()) ext_raisef(PyExc_TypeError, "result type %zd: expected str", i);
      free(rt);
      Py_DECREF(rlist);
      return NULL;
    }
  }
  int n = 0;
  kiln_value **vs = value_array(self, ops, &n);
  kiln_value *v = NULL;
  kiln_status *st = kiln_status_new();
  if (vs) v = kiln_graph_add_op_typed(go->g, op, vs, n, attrs, rt, (int)nr, st);
  free(vs);
  free(rt);
  Py_DECREF(rlist);
  if (!v) {
    if (!PyErr_Occurred()) ext_raise(st);
    kiln_status_free(st);
    return NULL;
  }
  kiln_status_free(st);
  return results_list(self, v);
}

/* add_region_op(op, operands, (region, region), result_types): mo.if /
 * mo.while; the regions (Graphs) are copied into the node. */
static PyObject *graph_add_region_op(PyObject *self, PyObject *args) {
  const char *op;
  PyObject *ops, *regs, *rtypes;
  if (!PyArg_ParseTuple(args, "sOOO", &op, &ops, &regs, &rtypes)) return NULL;
  PyObject *rlist = PySequence_List(rtypes), *glist = PySequence_List(regs);
  const char **rt = NULL;
  kiln_graph *rg[2] = {NULL, NULL};
  kiln_value **vs = NULL, *v = NULL;
  int n = 0;
  if (!rlist || !glist) goto fail;
  if (PyList_Size(glist) != 2) {
    ext_raisef(PyExc_ValueError, "%s takes two regions", op);
    goto fail;
  }
  for (int i = 0; i < 2; i++) {
    PyObject *it = PyList_GetItem(glist, i);
    if (!PyObject_TypeCheck(it, (PyTypeObject *)ext_st->graph_type)) {
      ext_raisef(PyExc_TypeError, "region %d: expected a Graph", i);
      goto fail;
    }
    rg[i] = ((GraphObject *)it)->g;
  }
  Py_ssize_t nr = PyList_Size(rlist);
  if (!(rt = calloc((size_t)nr + 1, sizeof *rt))) {
    PyErr_NoMemory();
    goto fail;
  }
  for (Py_ssize_t i = 0; i < nr; i++) {
    PyObject *it = PyList_GetItem(rlist, i);
    if (!PyUnicode_Check(it) || !(rt[i] = PyUnicode_AsUTF8AndSize(it, NULL))) {
      if (!PyErr_Occurred()) ext_raisef(PyExc_TypeError, "result type %zd: expected str", i);
      goto fail;
    }
  }
  if (!(vs = value_array(self, ops, &n))) goto fail;
  kiln_status *st = kiln_status_new();
  v = kiln_graph_add_region_op(((GraphObject *)self)->g, op, vs, n, rg, 2, rt, (int)nr, st);
  if (!v) ext_raise(st);
  kiln_status_free(st);
fail:
  free(vs);
  free(rt);
  Py_XDECREF(rlist);
  Py_XDECREF(glist);
  return v ? results_list(self, v) : NULL;
}

/* add_subgraph(graph): a copy of graph joins this graph's module. */
static PyObject *graph_add_subgraph(PyObject *self, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, (PyTypeObject *)ext_st->graph_type))
    return ext_raisef(PyExc_TypeError, "add_subgraph: expected a Graph");
  kiln_status *st = kiln_status_new();
  int rc = kiln_graph_add_subgraph(((GraphObject *)self)->g, ((GraphObject *)arg)->g, st);
  PyObject *r = rc == 0 ? Py_NewRef(Py_None) : ext_raise(st);
  kiln_status_free(st);
  return r;
}

/* add_constant(dtype, shape, buffer): the buffer's bytes (C order) are
 * copied into the graph. */
static PyObject *graph_add_constant(PyObject *self, PyObject *args) {
  GraphObject *go = (GraphObject *)self;
  int dtype;
  PyObject *shape, *data;
  if (!PyArg_ParseTuple(args, "iOO", &dtype, &shape, &data)) return NULL;
  if (dtype < 0 || dtype >= KILN_DTYPE_COUNT)
    return ext_raisef(PyExc_ValueError, "no dtype %d", dtype);
  shape = PySequence_Tuple(shape);
  if (!shape) return NULL;
  Py_ssize_t rank = PyTuple_Size(shape);
  int64_t dims[64];
  int64_t numel = 1;
  PyObject *r = NULL;
  Py_buffer b = {0};
  if (rank > 64) {
    ext_raisef(PyExc_ValueError, "rank %zd > 64", rank);
    goto out;
  }
  for (Py_ssize_t i = 0; i < rank; i++) {
    dims[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
    if (dims[i] == -1 && PyErr_Occurred()) goto out;
    if (dims[i] < 0) {
      ext_raisef(PyExc_ValueError, "constant: dim %zd is negative", i);
      goto out;
    }
    numel *= dims[i];
  }
  if (PyObject_GetBuffer(data, &b, PyBUF_C_CONTIGUOUS) < 0) goto out;
  if ((size_t)b.len != (size_t)numel * kiln_dtype_size((kiln_dtype)dtype)) {
    ext_raisef(PyExc_ValueError, "constant: %zd bytes of data for %lld elements of %s", b.len,
               (long long)numel, kiln_dtype_name((kiln_dtype)dtype));
    goto out;
  }
  kiln_status *st = kiln_status_new();
  r = value_result(self, kiln_graph_add_constant(go->g, (kiln_dtype)dtype, (int)rank, dims,
                                                b.buf, st), st);
out:
  if (b.obj) PyBuffer_Release(&b);
  Py_DECREF(shape);
  return r;
}

/* set_outputs(values, names=None) */
static PyObject *graph_set_outputs(PyObject *self, PyObject *args) {
  GraphObject *go = (GraphObject *)self;
  PyObject *vals, *names = Py_None;
  if (!PyArg_ParseTuple(args, "O|O", &vals, &names)) return NULL;
  int n = 0;
  kiln_value **vs = value_array(self, vals, &n);
  if (!vs) return NULL;
  const char **nm = NULL;
  PyObject *nlist = NULL, *r = NULL;
  if (names != Py_None) {
    if (!(nlist = PySequence_List(names))) goto out;
    if (PyList_Size(nlist) != n) {
      ext_raisef(PyExc_ValueError, "%zd names for %d outputs", PyList_Size(nlist), n);
      goto out;
    }
    if (!(nm = calloc((size_t)n + 1, sizeof *nm))) {
      PyErr_NoMemory();
      goto out;
    }
    for (int i = 0; i < n; i++) {
      PyObject *it = PyList_GetItem(nlist, i);
      if (it != Py_None && !(nm[i] = PyUnicode_AsUTF8AndSize(it, NULL))) goto out;
    }
  }
  kiln_status *st = kiln_status_new();
  if (kiln_graph_set_outputs(go->g, vs, n, nm, st) < 0) {
    ext_raise(st);
  } else {
    r = Py_NewRef(Py_None);
  }
  kiln_status_free(st);
out:
  free(vs);
  free(nm);
  Py_XDECREF(nlist);
  return r;
}

static PyObject *graph_declare_symbol(PyObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
  if (!name) return NULL;
  kiln_status *st = kiln_status_new();
  int rc = kiln_graph_declare_symbol(((GraphObject *)self)->g, name, st);
  PyObject *r = rc < 0 ? ext_raise(st) : Py_NewRef(Py_None);
  kiln_status_free(st);
  return r;
}

static PyObject *graph_verify(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_status *st = kiln_status_new();
  int rc = kiln_graph_verify(((GraphObject *)self)->g, st);
  PyObject *r = rc < 0 ? ext_raise(st) : Py_NewRef(Py_None);
  kiln_status_free(st);
  return r;
}

static PyObject *graph_print(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_status *st = kiln_status_new();
  char *s = kiln_graph_print(((GraphObject *)self)->g, st);
  PyObject *r = s ? PyUnicode_FromString(s) : ext_raise(st);
  free(s);
  kiln_status_free(st);
  return r;
}

static PyMethodDef graph_methods[] = {
    {"parse", graph_parse, METH_VARARGS | METH_CLASS,
     "parse(text, filename=None): a graph from MO text."},
    {"load", graph_load, METH_VARARGS | METH_CLASS, "load(path): a graph from an MO text file."},
    {"from_onnx", graph_from_onnx, METH_O | METH_CLASS,
     "from_onnx(path_or_bytes): a graph imported from an ONNX model (weights as constants)."},
    {"add_input", graph_add_input, METH_VARARGS,
     "add_input(name, dtype, dims, gpu=-1, buffer=False) -> Value (gpu N: typed on gpu:N; "
     "buffer: a !mo.buffer the model changes in place)"},
    {"add_weight", graph_add_weight, METH_VARARGS, "add_weight(name, dtype, dims) -> Value"},
    {"add_op", graph_add_op, METH_VARARGS,
     "add_op(op, operands, attrs=None, result_types=None) -> [Value]"},
    {"add_region_op", graph_add_region_op, METH_VARARGS,
     "add_region_op(op, operands, (region, region), result_types) -> [Value] (mo.if, mo.while)"},
    {"add_subgraph", graph_add_subgraph, METH_O, "add_subgraph(graph): for mo.call"},
    {"add_constant", graph_add_constant, METH_VARARGS,
     "add_constant(dtype, shape, buffer) -> Value"},
    {"set_outputs", graph_set_outputs, METH_VARARGS, "set_outputs(values, names=None)"},
    {"declare_symbol", graph_declare_symbol, METH_O, "declare_symbol(name)"},
    {"verify", graph_verify, METH_NOARGS, "verify()"},
    {"print", graph_print, METH_NOARGS, "print() -> the canonical MO text"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_methods, graph_methods},
    {Py_tp_doc, "Graph(name='graph'): a kiln graph (kiln_graph) under construction or parsed."},
    {0, NULL}};

static PyType_Spec graph_spec = {"kiln._kiln.Graph", sizeof(GraphObject), 0, Py_TPFLAGS_DEFAULT,
                                 graph_slots};

/* ---- Value ---- */

static PyObject *value_dtype(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_value_dtype(((ValueObject *)self)->v));
}

static PyObject *value_dims(PyObject *self, void *c) {
  (void)c;
  kiln_value *v = ((ValueObject *)self)->v;
  int rank = kiln_value_rank(v);
  PyObject *t = PyTuple_New(rank < 0 ? 0 : rank);
  if (!t) return NULL;
  for (int i = 0; i < rank; i++) {
    char buf[256];
    size_t n = kiln_value_dim(v, i, buf, sizeof buf);
    PyObject *s;
    if (n >= sizeof buf) { /* a long algebraic dim */
      char *big = malloc(n + 1);
      if (!big) {
        Py_DECREF(t);
        return PyErr_NoMemory();
      }
      kiln_value_dim(v, i, big, n + 1);
      s = PyUnicode_FromString(big);
      free(big);
    } else {
      s = PyUnicode_FromString(buf);
    }
    if (!s) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SetItem(t, i, s);
  }
  return t;
}

static PyObject *value_gpu(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(kiln_value_gpu(((ValueObject *)self)->v));
}

static PyObject *value_kind(PyObject *self, void *c) {
  (void)c;
  switch (kiln_value_kind_of(((ValueObject *)self)->v)) {
  case KILN_VALUE_BUFFER: return PyUnicode_FromString("buffer");
  case KILN_VALUE_CHAIN: return PyUnicode_FromString("chain");
  default: return PyUnicode_FromString("tensor");
  }
}

static PyObject *value_graph(PyObject *self, void *c) {
  (void)c;
  return Py_NewRef(((ValueObject *)self)->graph);
}

static PyObject *value_id(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromVoidPtr(((ValueObject *)self)->v);
}

static PyGetSetDef value_getset[] = {
    {"dtype", value_dtype, NULL, "kiln dtype number", NULL},
    {"dims", value_dims, NULL, "dims as MO text: ('batch', '784')", NULL},
    {"gpu", value_gpu, NULL, "N when the value lives on gpu:N, -1 on the host", NULL},
    {"graph", value_graph, NULL, "the Graph it belongs to", NULL},
    {"kind", value_kind, NULL, "'tensor', 'buffer' or 'chain'", NULL},
    {"id", value_id, NULL, "identity of the underlying kiln_value", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot value_slots[] = {{Py_tp_dealloc, value_dealloc},
                                    {Py_tp_getset, value_getset},
                                    {Py_tp_doc, "A value of a kiln graph (kiln_value)."},
                                    {0, NULL}};

static PyType_Spec value_spec = {"kiln._kiln.Value", sizeof(ValueObject), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                 value_slots};

kiln_graph *ext_graph_of(PyObject *o) {
  if (!PyObject_TypeCheck(o, (PyTypeObject *)ext_st->graph_type))
    return (kiln_graph *)ext_raisef(PyExc_TypeError, "expected a kiln._kiln.Graph");
  return ((GraphObject *)o)->g;
}

int ext_graph_init(PyObject *m) {
  if (!(ext_st->graph_type = PyType_FromSpec(&graph_spec))) return -1;
  if (!(ext_st->value_type = PyType_FromSpec(&value_spec))) return -1;
  if (PyModule_AddObjectRef(m, "Graph", ext_st->graph_type) < 0) return -1;
  if (PyModule_AddObjectRef(m, "Value", ext_st->value_type) < 0) return -1;
  return 0;
}
