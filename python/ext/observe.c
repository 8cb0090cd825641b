/* observe.c - the extension's view of kiln's observability (ext.h): log
 * lines to a Python callable, Chrome traces, per-kernel profiles, and the
 * remote (Redis) kernel cache of a context.
 *
 * Logs. kiln calls the log function from whichever thread logs (its
 * compile threads too), one line at a time under the context's log lock.
 * The function here takes the GIL (PyGILState_Ensure) before calling the
 * callable, so every kiln call that may log while another thread holds
 * that lock must not hold the GIL: the setters here (and the context's
 * cache setters in model.c) release it, as compiles and executes do. An
 * exception the callable raises is reported as unraisable, never seen by
 * kiln. The Context object keeps the callable alive until kiln no longer
 * calls it: set_log swaps it under kiln's lock, and the Context's dealloc
 * drops it after kiln_context_free. */
#include <string.h>

#include "ext.h"

static const char *const level_names[] = {"off", "warn", "info", "debug"};

/* kiln's log function: user is the callable (held by the Context). */
static void log_to_python(void *user, kiln_log_level level, const char *line) {
  PyGILState_STATE g = PyGILState_Ensure();
  const char *name = level >= KILN_LOG_OFF && level <= KILN_LOG_DEBUG ? level_names[level] : "?";
  PyObject *r = PyObject_CallFunction((PyObject *)user, "ss", name, line);
  if (r) Py_DECREF(r);
  else PyErr_WriteUnraisable((PyObject *)user);
  PyGILState_Release(g);
}

/* A level by name ("warn", "warning", "info", "debug", "off"); -1 raised. */
static int level_of(PyObject *o) {
  if (PyLong_Check(o)) {
    long v = PyLong_AsLong(o);
    if (v >= KILN_LOG_OFF && v <= KILN_LOG_DEBUG) return (int)v;
  } else if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8AndSize(o, NULL);
    if (!s) return -1;
    for (int i = 0; i < 4; i++)
      if (!strcmp(s, level_names[i])) return i;
    if (!strcmp(s, "warning")) return KILN_LOG_WARN;
  }
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "log level %R: expected 'off', 'warn', 'info' or 'debug'", o);
  return -1;
}

/* The common tail: rc < 0 raises st's error. */
static PyObject *finish(int rc, kiln_status *st) {
  PyObject *r = rc < 0 ? ext_raise(st) : Py_NewRef(Py_None);
  kiln_status_free(st);
  return r;
}

/* set_log(callable or None, level): None sends the lines to stderr. */
PyObject *ext_context_set_log(PyObject *self, PyObject *args) {
  PyObject *fn, *level_obj;
  if (!PyArg_ParseTuple(args, "OO", &fn, &level_obj)) return NULL;
  if (fn != Py_None && !PyCallable_Check(fn))
    return ext_raisef(PyExc_TypeError, "set_log: expected a callable(level, line) or None");
  int level = level_of(level_obj);
  if (level < 0) return NULL;
  PyObject **slot = ext_context_log_slot(self), *old = *slot;
  PyObject *keep = fn == Py_None ? NULL : Py_NewRef(fn);
  kiln_context *ctx = ext_context_of(self);
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS /* a kiln thread may be in the old callable, waiting for the GIL */
  rc = kiln_context_set_log(ctx, keep ? log_to_python : NULL, keep, (kiln_log_level)level, st);
  Py_END_ALLOW_THREADS
  if (rc < 0) {
    Py_XDECREF(keep);
    return finish(rc, st);
  }
  *slot = keep;
  Py_XDECREF(old); /* kiln swapped it under its log lock: no call of it is running */
  return finish(0, st);
}

PyObject *ext_context_log_level(PyObject *self, void *c) {
  (void)c;
  kiln_log_level l = kiln_context_log_level(ext_context_of(self));
  return PyUnicode_FromString(l >= KILN_LOG_OFF && l <= KILN_LOG_DEBUG ? level_names[l] : "?");
}

/* A path argument (str, bytes or os.PathLike) as bytes, or None: *out NULL. */
static int path_arg(PyObject *arg, PyObject **out) {
  *out = NULL;
  if (arg == Py_None) return 0;
  return PyUnicode_FSConverter(arg, out) ? 0 : -1;
}

PyObject *ext_context_set_trace(PyObject *self, PyObject *arg) {
  PyObject *b;
  if (path_arg(arg, &b) < 0) return NULL;
  const char *path = b ? PyBytes_AsString(b) : NULL;
  kiln_context *ctx = ext_context_of(self);
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_set_trace(ctx, path, st);
  Py_END_ALLOW_THREADS
  Py_XDECREF(b);
  return finish(rc, st);
}

PyObject *ext_context_flush_trace(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_context *ctx = ext_context_of(self);
  kiln_status *st = kiln_status_new();
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_flush_trace(ctx, st);
  Py_END_ALLOW_THREADS
  return finish(rc, st);
}

PyObject *ext_context_set_profile(PyObject *self, PyObject *arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  kiln_status *st = kiln_status_new();
  return finish(kiln_context_set_profile(ext_context_of(self), on, st), st);
}

/* set_remote_cache(url or None, namespace=None, timeout_ms=0) */
PyObject *ext_context_set_remote_cache(PyObject *self, PyObject *args) {
  const char *url, *ns = NULL;
  int timeout_ms = 0;
  if (!PyArg_ParseTuple(args, "z|zi", &url, &ns, &timeout_ms)) return NULL;
  kiln_context *ctx = ext_context_of(self);
  kiln_status *st = kiln_status_new();
  int rc; /* a bad URL warns or fails, which logs: the GIL goes */
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_set_remote_cache(ctx, url, ns, timeout_ms, st);
  Py_END_ALLOW_THREADS
  return finish(rc, st);
}

PyObject *ext_context_flush_remote_cache(PyObject *self, PyObject *args) {
  long long ms = -1;
  if (!PyArg_ParseTuple(args, "|L", &ms)) return NULL;
  kiln_context *ctx = ext_context_of(self);
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = kiln_context_flush_remote_cache(ctx, ms, NULL);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(rc == 0);
}

PyObject *ext_context_remote_cache_status(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(kiln_context_remote_cache_status(ext_context_of(self)));
}

PyObject *ext_context_remote_cache_counts(PyObject *self, PyObject *noargs) {
  (void)noargs;
  const kiln_context *ctx = ext_context_of(self);
  return Py_BuildValue(
      "{s:K,s:K,s:K,s:K}", "hits",
      (unsigned long long)kiln_context_counter(ctx, KILN_COUNTER_REMOTE_HITS), "misses",
      (unsigned long long)kiln_context_counter(ctx, KILN_COUNTER_REMOTE_MISSES), "errors",
      (unsigned long long)kiln_context_counter(ctx, KILN_COUNTER_REMOTE_ERRORS), "published",
      (unsigned long long)kiln_context_counter(ctx, KILN_COUNTER_REMOTE_PUBLISHED));
}

PyObject *ext_model_set_profile(PyObject *self, PyObject *arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  kiln_status *st = kiln_status_new();
  return finish(kiln_model_set_profile(ext_model_of(self), on, st), st);
}

/* profile() -> (executes, execute_ms, [row tuples]); kiln.engine makes the
 * rows ProfileRows and adds the rates. */
PyObject *ext_model_profile(PyObject *self, PyObject *noargs) {
  (void)noargs;
  kiln_status *st = kiln_status_new();
  kiln_profile *p = kiln_model_profile(ext_model_of(self), st);
  if (!p) return finish(-1, st);
  kiln_status_free(st);
  int n = kiln_profile_num_rows(p);
  PyObject *rows = PyList_New(n);
  for (int i = 0; rows && i < n; i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    PyObject *t = Py_BuildValue("(issKddddd)", r->node, r->kernel, r->shape,
                                (unsigned long long)r->calls, r->total_ms, r->mean_ms, r->share,
                                r->gflop, r->gbyte);
    if (!t) {
      Py_CLEAR(rows);
      break;
    }
    PyList_SetItem(rows, i, t); /* steals t */
  }
  PyObject *out = rows ? Py_BuildValue("(KdN)", (unsigned long long)kiln_profile_executes(p),
                                       kiln_profile_execute_ms(p), rows)
                       : NULL;
  kiln_profile_free(p);
  return out;
}
