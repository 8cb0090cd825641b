/* model.c - compile configs, compiled models, models and execution of
 * kiln's MAX C API layer.
 *
 * M_compileModel starts a thread that loads the .mlir file and runs
 * kiln_model_compile; M_initModel starts a thread that waits for that
 * compile, takes the compiled kiln_model (a second init of the same compiled
 * model compiles the kept graph again: every kernel then comes from the
 * context's kernel cache) and binds the registry's weights by name with
 * kiln_model_bind_weight. Errors of either thread are kept as messages and
 * reported at every later wait or execute. If a thread cannot be started
 * the work runs at the first wait instead, so the results are the same.
 * Input and output names: the graph's argument_names / result_names, else
 * input<i> / output<i>; telling the two apart needs the model's graph, so
 * this file reads kiln_model's internals (src/rt.h) for that alone.
 * On an accelerator (the context's config holds one, device.c) the compile
 * is kiln_model_compile_on the accelerator's kiln_device, with the
 * context's kernel libraries and cache: the same kiln_model type, so names,
 * input checks and weights read the same. Weights are copied to the device
 * at init; executes take host inputs (copied in) or inputs on that
 * accelerator; every output comes back as a host tensor (one the graph
 * places on the GPU is copied
 * back), as M_getTensorData promises. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx.h"
#include "src/bg_place.h"
#include "src/name_map.h"
#include "src/rt.h"

/* ---- compile configs ---- */

MAX_C_API M_CompileConfig *M_newCompileConfig(void) { return calloc(1, sizeof(M_CompileConfig)); }

MAX_C_API void M_setModelPath(M_CompileConfig *compileConfig, const char *path) {
  if (!compileConfig) return;
  free(compileConfig->path);
  compileConfig->path = mx_strdup(path); /* NULL (out of memory) reads as "no path" later */
}

MAX_C_API void M_freeCompileConfig(M_CompileConfig *config) {
  if (!config) return;
  free(config->path);
  free(config);
}

/* ---- compiled models ---- */

/* Compile g for the host (dev NULL) or for accelerator dev: one kiln_model
 * either way. 0, or -1 with ks filled. */
static int compile_for(kiln_context *kc, mx_dev *dev, const kiln_graph *g, kiln_model **km,
                       kiln_status *ks) {
  *km = kiln_model_compile_on(kc, dev ? dev->kd : NULL, g, ks);
  return *km ? 0 : -1;
}

static void compiled_run(M_AsyncCompiledModel *c) {
  kiln_status *ks = kiln_status_new();
  if (!ks) {
    c->err = mx_strf("model '%s': out of memory", c->path);
    return;
  }
  kiln_graph *g = kiln_graph_load(c->path, ks);
  if (!g) {
    c->err = mx_strf("cannot load model '%s': %s", c->path, kiln_status_message(ks));
  } else if (compile_for(c->kc, c->dev, g, &c->km, ks) != 0) {
    c->err = c->dev ? mx_strf("cannot compile model '%s' for accelerator %d (%s): %s", c->path,
                              c->dev->id, mx_dev_label(c->dev), kiln_status_message(ks))
                    : mx_strf("cannot compile model '%s': %s", c->path, kiln_status_message(ks));
    kiln_graph_free(g);
  } else {
    c->graph = g;
  }
  kiln_status_free(ks);
}

static void *compile_thread(void *arg) {
  M_AsyncCompiledModel *c = arg;
  rt_bg_place *place = c->kc->place; /* the context outlives the compile */
  rt_bg_thread me;
  rt_bg_enter(place, &me); /* off the CPUs where the context's models execute */
  compiled_run(c);
  rt_bg_leave(place, &me);
  return NULL;
}

/* Wait for (or, without a thread, do) the compile. */
static void compiled_wait(M_AsyncCompiledModel *c) {
  pthread_mutex_lock(&c->lock);
  if (!c->done) {
    if (c->has_thread) pthread_join(c->thread, NULL);
    else compiled_run(c);
    c->done = true;
  }
  pthread_mutex_unlock(&c->lock);
}

/* The compile's error after compiled_wait, or NULL when it succeeded. */
static const char *compiled_error(const M_AsyncCompiledModel *c) {
  if (c->graph) return NULL;
  return c->err ? c->err : "out of memory compiling the model";
}

static void compiled_unref(M_AsyncCompiledModel *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  compiled_wait(c);
  kiln_model_free(c->km);
  kiln_graph_free(c->graph);
  mx_dev_release(c->dev);
  free(c->path);
  free(c->err);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static M_AsyncCompiledModel *compile_start(const M_RuntimeContext *context,
                                           M_CompileConfig **compileConfig, bool sync,
                                           const char *fn, M_Status *status) {
  mx_ok(status);
  M_CompileConfig *cfg = compileConfig ? *compileConfig : NULL;
  if (compileConfig) *compileConfig = NULL; /* ours now, whatever happens */
  M_AsyncCompiledModel *c = NULL;
  if (!context) {
    mx_err(status, "%s: context is NULL (M_newRuntimeContext)", fn);
    goto out;
  }
  if (!cfg) {
    mx_err(status, "%s: compile config is NULL (M_newCompileConfig)", fn);
    goto out;
  }
  if (!cfg->path) {
    mx_err(status, "%s: the compile config has no model path (call M_setModelPath first)", fn);
    goto out;
  }
  c = calloc(1, sizeof *c);
  if (!c || pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    c = NULL;
    mx_err(status, "%s: out of memory", fn);
    goto out;
  }
  atomic_init(&c->refs, 1);
  c->kc = context->kc;
  c->dev = context->accel;
  mx_dev_ref(c->dev);
  c->path = cfg->path;
  cfg->path = NULL;
  if (sync) {
    compiled_run(c);
    c->done = true;
    const char *err = compiled_error(c);
    if (err) {
      mx_err(status, "%s: %s", fn, err);
      compiled_unref(c);
      c = NULL;
    }
  } else if (pthread_create(&c->thread, NULL, compile_thread, c) == 0) {
    c->has_thread = true;
  } /* else: compiled at the first wait */
out:
  M_freeCompileConfig(cfg);
  return c;
}

MAX_C_API M_AsyncCompiledModel *M_compileModel(const M_RuntimeContext *context,
                                               M_CompileConfig **compileConfig,
                                               M_Status *status) {
  return compile_start(context, compileConfig, false, "M_compileModel", status);
}

MAX_C_API M_AsyncCompiledModel *M_compileModelSync(const M_RuntimeContext *context,
                                                   M_CompileConfig **compileConfig,
                                                   M_Status *status) {
  return compile_start(context, compileConfig, true, "M_compileModelSync", status);
}

MAX_C_API void M_waitForCompilation(M_AsyncCompiledModel *compiledModel, M_Status *status) {
  mx_ok(status);
  if (!compiledModel) {
    mx_err(status, "M_waitForCompilation: compiled model is NULL");
    return;
  }
  compiled_wait(compiledModel);
  const char *err = compiled_error(compiledModel);
  if (err) mx_err(status, "%s", err);
}

MAX_C_API void M_freeCompiledModel(M_AsyncCompiledModel *model) { compiled_unref(model); }

/* ---- models: init ---- */

static void model_fail(M_AsyncModel *m, char *msg) {
  free(m->err);
  m->err = msg ? msg : mx_strdup("out of memory");
}

static int model_names(M_AsyncModel *m) {
  const kiln_model *km = m->km;
  const ir_graph *g = km->g; /* internal: argument_names / result_names */
  m->nin = kiln_model_num_inputs(km);
  m->nout = kiln_model_num_outputs(km);
  m->in_names = calloc((size_t)m->nin + 1, sizeof *m->in_names);
  m->out_names = calloc((size_t)m->nout + 1, sizeof *m->out_names);
  if (!m->in_names || !m->out_names) return -1;
  for (int i = 0; i < m->nin; i++) {
    const char *an = g->input_names && g->input_names[i] ? g->input_names[i] : NULL;
    m->in_names[i] = an ? mx_strdup(an) : mx_strf("input%d", i);
    if (!m->in_names[i]) return -1;
  }
  for (int i = 0; i < m->nout; i++) {
    const char *rn = g->output_names && g->output_names[i] ? g->output_names[i] : NULL;
    m->out_names[i] = rn ? mx_strdup(rn) : mx_strf("output%d", i);
    if (!m->out_names[i]) return -1;
  }
  return 0;
}

/* A dim text that is a plain non-negative integer. */
static bool static_dim(const char *s, int64_t *v) {
  if (!s || !*s) return false;
  int64_t x = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9' || x > (INT64_MAX - 9) / 10) return false;
    x = x * 10 + (*p - '0');
  }
  *v = x;
  return true;
}

/* The registry's entry `name` through index (its names hashed), or NULL. */
static const mx_weight *registry_find(const M_AsyncModel *m, const rt_name_map *index,
                                      const char *name) {
  int i = rt_name_map_get(index, name, strlen(name));
  return i >= 0 ? &m->w[i] : NULL;
}

static int bind_weights_with(M_AsyncModel *m, const rt_name_map *index, kiln_status *ks);

/* Bind every weight of the model from the registry copy (names hashed
 * once: binding stays linear in the number of weights). */
static int bind_weights(M_AsyncModel *m, kiln_status *ks) {
  rt_name_map index = {0};
  for (size_t i = 0; i < m->nw; i++)
    if (i > INT32_MAX ||
        rt_name_map_put(&index, m->w[i].name, strlen(m->w[i].name), (int)i) == -2) {
      rt_name_map_clear(&index);
      return -1;
    }
  int rc = bind_weights_with(m, &index, ks);
  rt_name_map_clear(&index);
  return rc;
}

static int bind_weights_with(M_AsyncModel *m, const rt_name_map *index, kiln_status *ks) {
  kiln_model *km = m->km;
  int nw = kiln_model_num_weights(km);
  if (nw <= 0) return 0;
  m->bound = calloc((size_t)nw, sizeof *m->bound);
  if (!m->bound) return -1;
  for (int w = 0; w < nw; w++) {
    const char *name = kiln_model_weight_name(km, w);
    const mx_weight *e = registry_find(m, index, name);
    if (!e) {
      model_fail(m, m->has_registry
                        ? mx_strf("weight '%s' of the model is not in the weights registry", name)
                        : mx_strf("the model has weights ('%s', ...) but M_initModel was given no "
                                  "weights registry", name));
      return -1;
    }
    kiln_dtype dt = e->dtype;
    int rank = e->rank;
    int64_t shape[MX_MAX_RANK];
    if (e->typed) {
      memcpy(shape, e->shape, sizeof shape);
    } else {
      dt = kiln_model_weight_dtype(km, w);
      rank = kiln_model_weight_rank(km, w);
      for (int a = 0; a < rank && a < MX_MAX_RANK; a++) {
        const char *d = kiln_model_weight_dim(km, w, a);
        if (!static_dim(d, &shape[a])) {
          model_fail(m, mx_strf("weight '%s': axis %d has the symbolic dimension '%s'; a registry "
                                "from M_newWeightsRegistry carries no shapes (use "
                                "M_newWeightsRegistryFromSafetensors)", name, a, d ? d : "?"));
          return -1;
        }
      }
    }
    kiln_tensor *t = kiln_tensor_borrow(dt, rank, shape, (void *)e->data, ks);
    if (!t) {
      model_fail(m, mx_strf("weight '%s': %s", name, kiln_status_message(ks)));
      return -1;
    }
    m->bound[m->nbound++] = t;
    if (kiln_model_bind_weight(km, name, t, ks) != 0) {
      model_fail(m, mx_strf("weights registry: %s", kiln_status_message(ks)));
      return -1;
    }
  }
  return 0;
}

static void model_init_run(M_AsyncModel *m) {
  M_AsyncCompiledModel *c = m->compiled;
  kiln_status *ks = kiln_status_new();
  compiled_wait(c);
  const char *cerr = compiled_error(c);
  if (!ks) {
    model_fail(m, NULL);
  } else if (cerr) {
    model_fail(m, mx_strf("model compilation failed: %s", cerr));
  } else {
    pthread_mutex_lock(&c->lock);
    m->km = c->km; /* the first init takes the compiled model */
    c->km = NULL;
    pthread_mutex_unlock(&c->lock);
    if (!m->km) compile_for(c->kc, c->dev, c->graph, &m->km, ks);
    if (!m->km)
      model_fail(m, mx_strf("model initialization: compiling '%s' again: %s", c->path,
                            kiln_status_message(ks)));
    else if (model_names(m) != 0)
      model_fail(m, NULL);
    else if (bind_weights(m, ks) != 0 && !m->err)
      model_fail(m, NULL);
  }
  kiln_status_free(ks);
  m->compiled = NULL;
  compiled_unref(c);
}

static void *init_thread(void *arg) {
  M_AsyncModel *m = arg;
  rt_bg_place *place = m->kc->place; /* the context outlives the model */
  rt_bg_thread me;
  rt_bg_enter(place, &me); /* off the CPUs where the context's models execute */
  model_init_run(m);
  rt_bg_leave(place, &me);
  return NULL;
}

static void model_wait(M_AsyncModel *m) {
  pthread_mutex_lock(&m->lock);
  if (!m->done) {
    if (m->has_thread) pthread_join(m->thread, NULL);
    else model_init_run(m);
    m->done = true;
  }
  pthread_mutex_unlock(&m->lock);
}

kiln_model *mx_model_ready(M_AsyncModel *m, M_Status *st) {
  model_wait(m);
  if (m->err) {
    mx_err(st, "%s", m->err);
    return NULL;
  }
  return m->km;
}

static void model_free_fields(M_AsyncModel *m) {
  for (size_t i = 0; m->w && i < m->nw; i++) free(m->w[i].name);
  free(m->w);
  for (int i = 0; m->in_names && i < m->nin; i++) free(m->in_names[i]);
  for (int i = 0; m->out_names && i < m->nout; i++) free(m->out_names[i]);
  free(m->in_names);
  free(m->out_names);
  free(m->err);
}

MAX_C_API M_AsyncModel *M_initModel(const M_RuntimeContext *context,
                                    const M_AsyncCompiledModel *compiledModel,
                                    const M_WeightsRegistry *weightsRegistry, M_Status *status) {
  mx_ok(status);
  if (!context || !compiledModel) {
    mx_err(status, "M_initModel: %s is NULL", !context ? "context" : "compiled model");
    return NULL;
  }
  M_AsyncCompiledModel *c = (M_AsyncCompiledModel *)compiledModel; /* shared, refcounted */
  if (c->kc != context->kc) {
    mx_err(status, "M_initModel: the compiled model belongs to another runtime context");
    return NULL;
  }
  M_AsyncModel *m = calloc(1, sizeof *m);
  if (!m) goto oom;
  if (pthread_mutex_init(&m->lock, NULL) != 0) {
    free(m);
    goto oom;
  }
  if (pthread_mutex_init(&m->cap_lock, NULL) != 0) {
    pthread_mutex_destroy(&m->lock);
    free(m);
    goto oom;
  }
  m->kc = context->kc;
  m->dev = c->dev;
  mx_dev_ref(m->dev);
  if (weightsRegistry) {
    m->has_registry = true;
    m->w = calloc(weightsRegistry->n ? weightsRegistry->n : 1, sizeof *m->w);
    for (size_t i = 0; m->w && i < weightsRegistry->n; i++, m->nw++) {
      m->w[i] = weightsRegistry->w[i];
      m->w[i].name = mx_strdup(weightsRegistry->w[i].name);
      if (!m->w[i].name) break;
    }
    if (!m->w || m->nw < weightsRegistry->n) {
      mx_dev_release(m->dev);
      model_free_fields(m);
      pthread_mutex_destroy(&m->lock);
      pthread_mutex_destroy(&m->cap_lock);
      free(m);
      goto oom;
    }
  }
  atomic_fetch_add(&c->refs, 1);
  m->compiled = c;
  if (pthread_create(&m->thread, NULL, init_thread, m) == 0) m->has_thread = true;
  return m;
oom:
  mx_err(status, "M_initModel: out of memory");
  return NULL;
}

MAX_C_API void M_waitForModel(M_AsyncModel *model, M_Status *status) {
  mx_ok(status);
  if (!model) {
    mx_err(status, "M_waitForModel: model is NULL");
    return;
  }
  mx_model_ready(model, status);
}

MAX_C_API void M_freeModel(M_AsyncModel *model) {
  if (!model) return;
  model_wait(model);
  mx_captures_free(model);
  kiln_model_free(model->km); /* before the weight tensors it borrows; its captures with it */
  for (int i = 0; i < model->nbound; i++) kiln_tensor_free(model->bound[i]);
  free(model->bound);
  mx_dev_release(model->dev); /* after everything on the device */
  model_free_fields(model);
  pthread_mutex_destroy(&model->lock);
  pthread_mutex_destroy(&model->cap_lock);
  free(model);
}

/* ---- execution ---- */

static bool is_identifier(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.'))
      return false;
  return true;
}

typedef struct sym_binding {
  const char *sym;
  int64_t value;
  int input, axis;
} sym_binding;

int mx_check_inputs(M_AsyncModel *m, kiln_model *km, kiln_tensor *const *inputs, M_Status *st) {
  int nb = 0;
  sym_binding *b = calloc((size_t)m->nin * MX_MAX_RANK + 1, sizeof *b);
  if (!b) return mx_err(st, "out of memory checking the inputs");
  int rc = -1;
  for (int i = 0; i < m->nin; i++) {
    const kiln_tensor *t = inputs[i];
    const char *nm = m->in_names[i];
    kiln_dtype want = kiln_model_input_dtype(km, i), got = kiln_tensor_dtype(t);
    if (want != got) {
      mx_err(st, "input '%s' (%d): expected dtype %s, got %s", nm, i, kiln_dtype_name(want),
             kiln_dtype_name(got));
      goto out;
    }
    int rank = kiln_model_input_rank(km, i);
    if (kiln_tensor_rank(t) != rank) {
      mx_err(st, "input '%s' (%d): expected rank %d, got %d", nm, i, rank, kiln_tensor_rank(t));
      goto out;
    }
    const int64_t *shape = kiln_tensor_shape(t);
    for (int a = 0; a < rank; a++) {
      int64_t fixed = kiln_model_input_dim_static(km, i, a);
      const char *txt = kiln_model_input_dim(km, i, a);
      if (fixed >= 0) {
        if (shape[a] != fixed) {
          mx_err(st, "input '%s' (%d): axis %d expected %lld, got %lld", nm, i, a,
                 (long long)fixed, (long long)shape[a]);
          goto out;
        }
        continue;
      }
      if (!is_identifier(txt)) continue; /* an expression: kiln checks it at execute */
      int k = 0;
      while (k < nb && strcmp(b[k].sym, txt) != 0) k++;
      if (k == nb) {
        b[nb++] = (sym_binding){txt, shape[a], i, a};
      } else if (b[k].value != shape[a]) {
        mx_err(st, "input '%s' (%d): axis %d is the symbolic dimension '%s', which input '%s' "
                   "axis %d sets to %lld, but it is %lld here", nm, i, a, txt,
               m->in_names[b[k].input], b[k].axis, (long long)b[k].value, (long long)shape[a]);
        goto out;
      }
    }
  }
  rc = 0;
out:
  free(b);
  return rc;
}

const char *mx_model_place(const M_AsyncModel *m) { return mx_dev_label(m->dev); }

/* Run m->km on its accelerator; the outputs it allocates on its device are copied back to the
 * host (fresh: outputs[] that were NULL on entry). */
static int run_device(M_AsyncModel *m, mx_op op, uint64_t key, kiln_tensor *const *inputs,
                      kiln_tensor **outputs, kiln_status *ks) {
  bool *fresh = calloc((size_t)m->nout + 1, sizeof *fresh);
  if (!fresh) return -1;
  for (int i = 0; i < m->nout; i++) fresh[i] = !outputs[i];
  int rc = op == MX_CAPTURE  ? kiln_model_capture(m->km, key, inputs, m->nin, outputs, m->nout, ks)
           : op == MX_REPLAY ? kiln_model_replay(m->km, key, inputs, m->nin, outputs, m->nout, ks)
                             : kiln_model_execute(m->km, inputs, m->nin, outputs, m->nout, ks);
  for (int i = 0; rc == 0 && i < m->nout; i++) {
    if (!fresh[i] || !kiln_tensor_device(outputs[i])) continue;
    kiln_tensor *h = kiln_tensor_copy_to(outputs[i], NULL, ks);
    if (!h) rc = -1;
    kiln_tensor_free(outputs[i]);
    outputs[i] = h;
  }
  free(fresh);
  if (rc != 0 && op == MX_CAPTURE) kiln_model_release(m->km, key, NULL); /* if it took */
  return rc;
}

int mx_run(M_AsyncModel *m, kiln_model *km, mx_op op, uint64_t key, kiln_tensor *const *inputs,
           kiln_tensor **outputs, const char *what, M_Status *st) {
  kiln_status *ks = kiln_status_new();
  if (!ks) return mx_err(st, "%s: out of memory", what);
  int rc = m->dev ? run_device(m, op, key, inputs, outputs, ks)
                 : kiln_model_execute(km, inputs, m->nin, outputs, m->nout, ks);
  if (rc != 0 && kiln_status_code(ks) == KILN_OK) {
    mx_err(st, "%s: out of memory", what);
  } else if (rc != 0) {
    bool symbolic = false;
    for (int i = 0; i < m->nin && !symbolic; i++)
      for (int a = 0; a < kiln_model_input_rank(km, i); a++)
        if (kiln_model_input_dim_static(km, i, a) < 0) symbolic = true;
    if (kiln_status_code(ks) == KILN_ERR_SHAPE && symbolic)
      mx_err(st, "%s: symbolic dimension mismatch: %s", what, kiln_status_message(ks));
    else
      mx_err(st, "%s: %s", what, kiln_status_message(ks));
  }
  kiln_status_free(ks);
  return rc == 0 ? 0 : -1;
}

/* "'a', 'b'" of names[n] into buf. */
static void names_text(char *const *names, int n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && k + 1 < cap; i++) {
    int w = snprintf(buf + k, cap - k, "%s'%s'", i ? ", " : "", names[i]);
    if (w < 0) break;
    k += (size_t)w;
  }
  if (n == 0) snprintf(buf, cap, "none");
}

MAX_C_API M_AsyncTensorMap *M_executeModelSync(const M_RuntimeContext *context,
                                               M_AsyncModel *initializedModel,
                                               M_AsyncTensorMap *inputs, M_Status *status) {
  mx_ok(status);
  M_AsyncModel *m = initializedModel;
  if (!context || !m || !inputs) {
    mx_err(status, "M_executeModelSync: %s is NULL",
           !context ? "context" : !m ? "model" : "input map");
    return NULL;
  }
  kiln_model *km = mx_model_ready(m, status);
  if (!km) return NULL;
  char list[512];
  for (int j = 0; j < inputs->n; j++) {
    int i = 0;
    while (i < m->nin && strcmp(m->in_names[i], inputs->names[j]) != 0) i++;
    if (i == m->nin) {
      names_text(m->in_names, m->nin, list, sizeof list);
      mx_err(status, "M_executeModelSync: tensor '%s' of the input map is not an input of the "
                     "model (inputs: %s)", inputs->names[j], list);
      return NULL;
    }
  }
  kiln_tensor **ins = calloc((size_t)m->nin + 1, sizeof *ins);
  kiln_tensor **outs = calloc((size_t)m->nout + 1, sizeof *outs);
  M_AsyncTensorMap *res = NULL;
  if (!ins || !outs) {
    mx_err(status, "M_executeModelSync: out of memory");
    goto out;
  }
  for (int i = 0; i < m->nin; i++) {
    int j = mx_map_find(inputs, m->in_names[i]);
    if (j < 0) {
      names_text(inputs->names, inputs->n, list, sizeof list);
      mx_err(status, "M_executeModelSync: input '%s' (%d of %d) is missing from the input map "
                     "(it holds: %s)", m->in_names[i], i, m->nin, list);
      goto out;
    }
    ins[i] = inputs->bufs[j]->t;
  }
  if (mx_check_inputs(m, km, ins, status) != 0) {
    /* prefix the function name, keeping the checker's message */
    char *msg = mx_strdup(M_getError(status));
    mx_err(status, "M_executeModelSync: %s", msg ? msg : "bad inputs");
    free(msg);
    goto out;
  }
  if (mx_run(m, km, MX_EXECUTE, 0, ins, outs, "M_executeModelSync", status) != 0) goto out;
  res = M_newAsyncTensorMap(context);
  if (!res) {
    mx_err(status, "M_executeModelSync: out of memory");
    goto out;
  }
  for (int i = 0; i < m->nout; i++) {
    mx_buf *b = mx_buf_new(outs[i]);
    outs[i] = NULL; /* taken (freed on failure) */
    if (!b || mx_map_put(res, m->out_names[i], b, status) != 0) {
      mx_buf_unref(b);
      mx_err(status, "M_executeModelSync: out of memory");
      M_freeAsyncTensorMap(res);
      res = NULL;
      goto out;
    }
    mx_buf_unref(b);
  }
out:
  for (int i = 0; outs && i < m->nout; i++) kiln_tensor_free(outs[i]);
  free(outs);
  free(ins);
  return res;
}
