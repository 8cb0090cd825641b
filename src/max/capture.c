/* capture.c - capture / replay / verify / release of kiln's MAX C API layer.
 *
 * A capture runs the model once and records, under its key, the input
 * signature (dtype and shape of each input) and the output storage; the
 * caller gets new handles on that storage. A replay checks that its inputs
 * have the captured signature (an error names the key and the input
 * otherwise), runs the model again and writes into the captured outputs in
 * place. On the host there is no launch list to record: a replay is an
 * execute whose shapes and output buffers are fixed in advance. A verify
 * replays, runs the model eagerly into fresh outputs and compares them (f32
 * and f64 within a relative 1e-5, since the two runs may use different
 * variants of the model; other dtypes bit for bit).
 * On an accelerator the same bookkeeping (signature, host output storage)
 * sits on the model's own capture on its device: kiln_model_capture
 * records the launch sequence under the key, a replay reruns it
 * (kiln_model_replay) into the captured outputs, a verify compares an
 * eager execute's launch sequence with it (kiln_model_verify_replay), a
 * release drops it.
 * Captures of one model are serialized by its cap_lock (replays share the
 * output buffers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx.h"

typedef struct mx_sig {
  kiln_dtype dtype;
  int rank;
  int64_t shape[MX_MAX_RANK];
} mx_sig;

struct mx_capture {
  uint64_t key;
  int nin, nout;
  mx_sig *sig;   /* nin entries */
  mx_buf **outs; /* nout entries, one reference each */
  mx_capture *next;
};

static void capture_free(mx_capture *c) {
  if (!c) return;
  for (int i = 0; c->outs && i < c->nout; i++) mx_buf_unref(c->outs[i]);
  free(c->outs);
  free(c->sig);
  free(c);
}

void mx_captures_free(M_AsyncModel *m) {
  mx_capture *c = m->captures;
  while (c) {
    mx_capture *next = c->next;
    capture_free(c);
    c = next;
  }
  m->captures = NULL;
}

static mx_capture *capture_find(const M_AsyncModel *m, uint64_t key) {
  for (mx_capture *c = m->captures; c; c = c->next)
    if (c->key == key) return c;
  return NULL;
}

/* Checks the arguments shared by capture, replay and verify; on success the
 * model is ready and *ins (malloc'd, caller frees) holds the inputs. */
static kiln_model *capture_args(const M_RuntimeContext *context, M_AsyncModel *m,
                                const uint64_t *keys, size_t nkeys, M_AsyncTensor *const *inputs,
                                size_t ninputs, const char *fn, kiln_tensor ***ins,
                                M_Status *st) {
  *ins = NULL;
  if (!context || !m) {
    mx_err(st, "%s: %s is NULL", fn, !context ? "context" : "model");
    return NULL;
  }
  if (!keys || nkeys == 0) {
    mx_err(st, "%s: no graph key given", fn);
    return NULL;
  }
  if (nkeys > 1) {
    mx_err(st, "%s: %zu graph keys for 1 device (%s): pass one key", fn, nkeys,
           mx_model_place(m));
    return NULL;
  }
  kiln_model *km = mx_model_ready(m, st);
  if (!km) return NULL;
  if (ninputs != (size_t)m->nin) {
    mx_err(st, "%s: the model takes %d input%s, got %zu", fn, m->nin, m->nin == 1 ? "" : "s",
           ninputs);
    return NULL;
  }
  if (ninputs > 0 && !inputs) {
    mx_err(st, "%s: inputs is NULL", fn);
    return NULL;
  }
  *ins = calloc(ninputs + 1, sizeof **ins);
  if (!*ins) {
    mx_err(st, "%s: out of memory", fn);
    return NULL;
  }
  for (size_t i = 0; i < ninputs; i++) {
    if (!inputs[i]) {
      mx_err(st, "%s: input %zu ('%s') is NULL", fn, i, m->in_names[i]);
      free(*ins);
      *ins = NULL;
      return NULL;
    }
    (*ins)[i] = inputs[i]->buf->t;
  }
  return km;
}

/* mx_check_inputs with the function name in front of its message. */
static int check_inputs(M_AsyncModel *m, kiln_model *km, kiln_tensor *const *ins, const char *fn,
                        M_Status *st) {
  if (mx_check_inputs(m, km, ins, st) == 0) return 0;
  char *msg = mx_strdup(M_getError(st));
  mx_err(st, "%s: %s", fn, msg ? msg : "bad inputs");
  free(msg);
  return -1;
}

MAX_C_API M_AsyncTensor **M_captureModelSync(const M_RuntimeContext *context,
                                             M_AsyncModel *initializedModel,
                                             const uint64_t *graphKeys, size_t numGraphKeys,
                                             M_AsyncTensor *const *inputs, size_t numInputs,
                                             size_t *numOutputs, M_Status *status) {
  static const char fn[] = "M_captureModelSync";
  mx_ok(status);
  if (numOutputs) *numOutputs = 0;
  M_AsyncModel *m = initializedModel;
  kiln_tensor **ins;
  kiln_model *km =
      capture_args(context, m, graphKeys, numGraphKeys, inputs, numInputs, fn, &ins, status);
  if (!km) return NULL;
  M_AsyncTensor **res = NULL;
  kiln_tensor **outs = calloc((size_t)m->nout + 1, sizeof *outs);
  mx_capture *c = calloc(1, sizeof *c);
  pthread_mutex_lock(&m->cap_lock);
  if (!outs || !c) {
    mx_err(status, "%s: out of memory", fn);
    goto out;
  }
  if (capture_find(m, graphKeys[0])) {
    mx_err(status, "%s: graph key %llu is already captured (M_releaseCapturedGraphs first)", fn,
           (unsigned long long)graphKeys[0]);
    goto out;
  }
  if (check_inputs(m, km, ins, fn, status) != 0) goto out;
  if (mx_run(m, km, MX_CAPTURE, graphKeys[0], ins, outs, fn, status) != 0) goto out;
  c->key = graphKeys[0];
  c->nin = m->nin;
  c->nout = m->nout;
  c->sig = calloc((size_t)m->nin + 1, sizeof *c->sig);
  c->outs = calloc((size_t)m->nout + 1, sizeof *c->outs);
  res = malloc(((size_t)m->nout + 1) * sizeof *res);
  if (!c->sig || !c->outs || !res) goto oom;
  for (int i = 0; i < m->nin; i++) {
    c->sig[i].dtype = kiln_tensor_dtype(ins[i]);
    c->sig[i].rank = kiln_tensor_rank(ins[i]);
    for (int a = 0; a < c->sig[i].rank; a++) c->sig[i].shape[a] = kiln_tensor_shape(ins[i])[a];
  }
  for (int i = 0; i < m->nout; i++) {
    c->outs[i] = mx_buf_new(outs[i]);
    outs[i] = NULL;
    if (!c->outs[i]) goto oom;
  }
  for (int i = 0; i < m->nout; i++) {
    res[i] = mx_tensor_wrap(c->outs[i], m->out_names[i]);
    if (!res[i]) {
      while (i > 0) M_freeTensor(res[--i]);
      goto oom;
    }
  }
  c->next = m->captures;
  m->captures = c;
  c = NULL;
  if (numOutputs) *numOutputs = (size_t)m->nout;
  goto out;
oom:
  mx_err(status, "%s: out of memory", fn);
  free(res);
  res = NULL;
  if (m->dev) kiln_model_release(m->km, graphKeys[0], NULL);
out:
  pthread_mutex_unlock(&m->cap_lock);
  capture_free(c);
  for (int i = 0; outs && i < m->nout; i++) kiln_tensor_free(outs[i]);
  free(outs);
  free(ins);
  return res;
}

static void shape_text(char *buf, size_t cap, int rank, const int64_t *shape) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int a = 0; a < rank && k < cap; a++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%lld", a ? ", " : "", (long long)shape[a]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The capture of key, its inputs' signature matching ins; NULL with st
 * filled. Under m->cap_lock (held by the caller). */
static mx_capture *capture_match(M_AsyncModel *m, uint64_t key, kiln_tensor *const *ins,
                                 const char *fn, M_Status *st) {
  mx_capture *c = capture_find(m, key);
  if (!c) {
    mx_err(st, "%s: no captured graph for key %llu", fn, (unsigned long long)key);
    return NULL;
  }
  for (int i = 0; i < c->nin; i++) {
    const kiln_tensor *t = ins[i];
    bool same = kiln_tensor_dtype(t) == c->sig[i].dtype && kiln_tensor_rank(t) == c->sig[i].rank;
    for (int a = 0; same && a < c->sig[i].rank; a++)
      same = kiln_tensor_shape(t)[a] == c->sig[i].shape[a];
    if (!same) {
      char want[256], got[256];
      shape_text(want, sizeof want, c->sig[i].rank, c->sig[i].shape);
      shape_text(got, sizeof got, kiln_tensor_rank(t), kiln_tensor_shape(t));
      mx_err(st, "%s: graph key %llu was captured with input %d ('%s') %s %s, got %s %s", fn,
             (unsigned long long)key, i, m->in_names[i], kiln_dtype_name(c->sig[i].dtype), want,
             kiln_dtype_name(kiln_tensor_dtype(t)), got);
      return NULL;
    }
  }
  return c;
}

/* Replay under m->cap_lock (held by the caller). */
static int replay_locked(M_AsyncModel *m, kiln_model *km, uint64_t key, kiln_tensor *const *ins,
                         const char *fn, M_Status *st) {
  mx_capture *c = capture_match(m, key, ins, fn, st);
  if (!c) return -1;
  kiln_tensor **outs = calloc((size_t)c->nout + 1, sizeof *outs);
  if (!outs) return mx_err(st, "%s: out of memory", fn);
  for (int i = 0; i < c->nout; i++) outs[i] = c->outs[i]->t;
  int rc = mx_run(m, km, MX_REPLAY, key, ins, outs, fn, st);
  free(outs);
  return rc;
}

MAX_C_API void M_replayModelSync(const M_RuntimeContext *context, M_AsyncModel *initializedModel,
                                 const uint64_t *graphKeys, size_t numGraphKeys,
                                 M_AsyncTensor *const *inputs, size_t numInputs,
                                 M_Status *status) {
  static const char fn[] = "M_replayModelSync";
  mx_ok(status);
  kiln_tensor **ins;
  kiln_model *km = capture_args(context, initializedModel, graphKeys, numGraphKeys, inputs,
                                numInputs, fn, &ins, status);
  if (!km) return;
  pthread_mutex_lock(&initializedModel->cap_lock);
  replay_locked(initializedModel, km, graphKeys[0], ins, fn, status);
  pthread_mutex_unlock(&initializedModel->cap_lock);
  free(ins);
}

/* Byte offset of the first element where a and b (nb bytes of dtype dt)
 * differ, nb when none does. f32 / f64 agree within a relative 1e-5: the
 * replay and the eager run may use different variants of the model (generic
 * or shape-specialized), which are not promised to agree bit for bit. Other
 * dtypes must match exactly. */
static size_t first_difference(kiln_dtype dt, const void *a, const void *b, size_t nb) {
  if (dt == KILN_FLOAT32 || dt == KILN_FLOAT64) {
    size_t es = dt == KILN_FLOAT32 ? 4 : 8;
    for (size_t k = 0; k + es <= nb; k += es) {
      double x, y;
      if (dt == KILN_FLOAT32) {
        float fx, fy;
        memcpy(&fx, (const char *)a + k, 4);
        memcpy(&fy, (const char *)b + k, 4);
        x = fx, y = fy;
      } else {
        memcpy(&x, (const char *)a + k, 8);
        memcpy(&y, (const char *)b + k, 8);
      }
      if (x == y || (x != x && y != y)) continue; /* equal, or both NaN */
      double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y, d = x - y;
      double scale = ax > ay ? ax : ay;
      if ((d < 0 ? -d : d) <= 1e-5 * (scale > 1 ? scale : 1)) continue;
      return k;
    }
    return nb;
  }
  const unsigned char *p = a, *q = b;
  for (size_t k = 0; k < nb; k++)
    if (p[k] != q[k]) return k;
  return nb;
}

MAX_C_API void M_debugVerifyReplayModelSync(const M_RuntimeContext *context,
                                            M_AsyncModel *initializedModel,
                                            const uint64_t *graphKeys, size_t numGraphKeys,
                                            M_AsyncTensor *const *inputs, size_t numInputs,
                                            M_Status *status) {
  static const char fn[] = "M_debugVerifyReplayModelSync";
  mx_ok(status);
  M_AsyncModel *m = initializedModel;
  kiln_tensor **ins;
  kiln_model *km =
      capture_args(context, m, graphKeys, numGraphKeys, inputs, numInputs, fn, &ins, status);
  if (!km) return;
  kiln_tensor **fresh = calloc((size_t)m->nout + 1, sizeof *fresh);
  pthread_mutex_lock(&m->cap_lock);
  if (!fresh) {
    mx_err(status, "%s: out of memory", fn);
    goto out;
  }
  if (m->dev) { /* on an accelerator the model compares launch sequences */
    if (!capture_match(m, graphKeys[0], ins, fn, status)) goto out;
    kiln_status *ks = kiln_status_new();
    if (!ks || kiln_model_verify_replay(m->km, graphKeys[0], ins, m->nin, ks) != 0)
      mx_err(status, "%s: graph key %llu: %s", fn, (unsigned long long)graphKeys[0],
             ks ? kiln_status_message(ks) : "out of memory");
    kiln_status_free(ks);
    goto out;
  }
  if (replay_locked(m, km, graphKeys[0], ins, fn, status) != 0) goto out;
  if (mx_run(m, km, MX_EXECUTE, 0, ins, fresh, fn, status) != 0) goto out;
  const mx_capture *c = capture_find(m, graphKeys[0]);
  for (int i = 0; i < m->nout; i++) {
    const kiln_tensor *r = c->outs[i]->t, *e = fresh[i];
    size_t nb = kiln_tensor_nbytes(e), es = kiln_dtype_size(kiln_tensor_dtype(e));
    if (kiln_tensor_nbytes(r) != nb) {
      mx_err(status, "%s: graph key %llu: output %d ('%s') has %zu bytes in the replay, %zu "
                     "in an eager run", fn, (unsigned long long)c->key, i, m->out_names[i],
             kiln_tensor_nbytes(r), nb);
      goto out;
    }
    size_t k = first_difference(kiln_tensor_dtype(e), kiln_tensor_data(r), kiln_tensor_data(e), nb);
    if (k < nb) {
      mx_err(status, "%s: graph key %llu: output %d ('%s') differs between the replay and an "
                     "eager run at element %zu", fn, (unsigned long long)c->key, i,
             m->out_names[i], es ? k / es : k);
      goto out;
    }
  }
out:
  pthread_mutex_unlock(&m->cap_lock);
  for (int i = 0; fresh && i < m->nout; i++) kiln_tensor_free(fresh[i]);
  free(fresh);
  free(ins);
}

MAX_C_API void M_releaseCapturedGraphs(const M_RuntimeContext *context,
                                       M_AsyncModel *initializedModel, const uint64_t *graphKeys,
                                       size_t numGraphKeys, M_Status *status) {
  mx_ok(status);
  M_AsyncModel *m = initializedModel;
  if (!context || !m) {
    mx_err(status, "M_releaseCapturedGraphs: %s is NULL", !context ? "context" : "model");
    return;
  }
  if (numGraphKeys > 0 && !graphKeys) {
    mx_err(status, "M_releaseCapturedGraphs: graphKeys is NULL");
    return;
  }
  pthread_mutex_lock(&m->cap_lock);
  for (size_t k = 0; k < numGraphKeys; k++) {
    mx_capture **p = &m->captures;
    while (*p && (*p)->key != graphKeys[k]) p = &(*p)->next;
    if (!*p) continue; /* never captured: nothing to release */
    mx_capture *c = *p;
    *p = c->next;
    if (m->dev) kiln_model_release(m->km, c->key, NULL);
    capture_free(c);
  }
  pthread_mutex_unlock(&m->cap_lock);
}
