/* capture.c - capture / replay / verify of CPU model executes (capture.h,
 * kiln/runtime.h). Captures are a list per model under a spin lock (the
 * lock is held only to find, add or unlink one); each holds a reference to
 * its variant (variants.c), released with the capture. A capture is
 * immutable once listed, so a replay reads it without the lock; releasing a
 * key while a replay of that key runs is the caller's error (documented in
 * runtime.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "capture.h"

struct rt_capture {
  uint64_t key;
  int64_t *syms;                    /* g->nsyms solved values */
  ir_dtype *dtype;                  /* per input */
  int64_t (*shape)[IR_MAX_RANK];    /* per input */
  rt_variant *var;                  /* the variant the execute ran (a reference), or NULL */
  struct rt_capture *next;
};

static void lock(kiln_model *m) {
  int free_ = 0;
  while (!atomic_compare_exchange_weak_explicit(&m->capture_lock, &free_, 1, memory_order_acquire,
                                                memory_order_relaxed))
    free_ = 0;
}

static void unlock(kiln_model *m) { atomic_store_explicit(&m->capture_lock, 0, memory_order_release); }

static void capture_free(kiln_model *m, rt_capture *c) {
  if (!c) return;
  rt_variant_release(m, c->var);
  free(c->syms);
  free(c->dtype);
  free(c->shape);
  free(c);
}

static rt_capture *find(kiln_model *m, uint64_t key) {
  lock(m);
  rt_capture *c = m->captures;
  while (c && c->key != key) c = c->next;
  unlock(m);
  return c;
}

void rt_captures_free(kiln_model *m) {
  rt_capture *c = m->captures;
  m->captures = NULL;
  while (c) {
    rt_capture *next = c->next;
    capture_free(m, c);
    c = next;
  }
}

int rt_capture_check_inputs(const kiln_model *m, const rt_capture *c, const ir_tensor *ins,
                            int64_t *syms, kiln_status *st) {
  for (int i = 0; i < m->ninputs; i++) {
    bool same = ins[i].dtype == c->dtype[i];
    for (int a = 0; same && a < ins[i].rank; a++) same = ins[i].shape[a] == c->shape[i][a];
    if (!same)
      return rt_err(st, KILN_ERR_SHAPE,
                    "replay of key %llu: input %d (%s) must have the captured dtype and shape",
                    (unsigned long long)c->key, i, m->inputs[i].name);
  }
  memcpy(syms, c->syms, (size_t)m->g->nsyms * sizeof *syms);
  return 0;
}

rt_variant *rt_capture_variant(const rt_capture *c) { return c->var; }

int rt_capture_record(kiln_model *m, rt_capture *c, const ir_tensor *ins, const int64_t *syms,
                      rt_variant *var, kiln_status *st) {
  size_t ns = (size_t)m->g->nsyms, ni = (size_t)m->ninputs;
  c->syms = malloc((ns + 1) * sizeof *c->syms);
  c->dtype = malloc((ni + 1) * sizeof *c->dtype);
  c->shape = calloc(ni + 1, sizeof *c->shape);
  if (!c->syms || !c->dtype || !c->shape)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory capturing an execute");
  memcpy(c->syms, syms, ns * sizeof *syms);
  for (size_t i = 0; i < ni; i++) {
    c->dtype[i] = ins[i].dtype;
    memcpy(c->shape[i], ins[i].shape, (size_t)ins[i].rank * sizeof(int64_t));
  }
  rt_variant_retain(m, var);
  c->var = var;
  return 0;
}

int rt_host_capture(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                int ninputs, kiln_tensor **outputs, int noutputs,
                                kiln_status *st) {
  if (find(m, key))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "key %llu is already captured (release it first)", (unsigned long long)key);
  rt_capture *c = calloc(1, sizeof *c);
  if (!c) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory capturing an execute");
  c->key = key;
  if (rt_model_execute(m, inputs, ninputs, outputs, noutputs, NULL, c, st) < 0) {
    capture_free(m, c);
    return -1;
  }
  lock(m);
  bool taken = false;
  for (rt_capture *o = m->captures; o && !taken; o = o->next) taken = o->key == key;
  if (!taken) {
    c->next = m->captures;
    m->captures = c;
  }
  unlock(m);
  if (taken) { /* another thread captured the key meanwhile */
    capture_free(m, c);
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "key %llu is already captured (release it first)", (unsigned long long)key);
  }
  return 0;
}

int rt_host_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                               int ninputs, kiln_tensor **outputs, int noutputs,
                               kiln_status *st) {
  rt_capture *c = find(m, key);
  if (!c) return rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
  return rt_model_execute(m, inputs, ninputs, outputs, noutputs, c, NULL, st);
}

int rt_host_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                      int ninputs, kiln_status *st) {
  rt_capture *c = find(m, key);
  if (!c) return rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
  if (ninputs != m->ninputs || (ninputs && !inputs))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the model takes %d inputs, got %d", m->ninputs,
                  ninputs);
  ir_tensor *ins = calloc((size_t)m->ninputs + 1, sizeof *ins);
  int64_t *syms = calloc((size_t)m->g->nsyms + 1, sizeof *syms);
  int rc = -1;
  char msg[1024];
  if (!ins || !syms) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < m->ninputs; i++) {
    const kiln_tensor *t = inputs[i];
    if (!t || t->rank != m->inputs[i].type.rank || t->rank > IR_MAX_RANK) {
      rt_err(st, KILN_ERR_SHAPE, "input %d (%s): expected rank %d", i, m->inputs[i].name,
             m->inputs[i].type.rank);
      goto done;
    }
    ins[i] = (ir_tensor){.dtype = (ir_dtype)t->dtype, .rank = t->rank, .data = t->data};
    memcpy(ins[i].shape, t->shape, (size_t)t->rank * sizeof(int64_t));
  }
  /* what an execute of these inputs resolves now must be what was captured */
  if (ir_solve_symbols(m->g, ins, m->ninputs, syms, msg, sizeof msg) < 0) {
    rt_err(st, KILN_ERR_SHAPE, "verify replay of key %llu: %s", (unsigned long long)key, msg);
    goto done;
  }
  if (rt_capture_check_inputs(m, c, ins, syms, st) < 0) goto done;
  rc = 0;
  rt_ok(st);
done:
  free(ins);
  free(syms);
  return rc;
}

int rt_host_release(kiln_model *m, uint64_t key, kiln_status *st) {
  lock(m);
  rt_capture **p = &m->captures;
  while (*p && (*p)->key != key) p = &(*p)->next;
  rt_capture *c = *p;
  if (c) *p = c->next;
  unlock(m);
  if (!c) return rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
  capture_free(m, c);
  rt_ok(st);
  return 0;
}
