/* weights.c - weights registries and .safetensors files of kiln's MAX C API
 * layer. A registry is a list of (name, borrowed data, optional dtype and
 * shape); M_initModel copies it, so a registry may be freed once the init
 * call returns. Safetensors files are read with kiln's own validated reader
 * (src/io.h, internal: rt_safetensors_*), every tensor materialized at load
 * (borrowing the mapping when aligned, else an aligned copy), so the data
 * pointers handed out live exactly as long as the M_Safetensors. Files are
 * read into host memory whatever the device: a model on an accelerator
 * gets the weights copied there by M_initModel. */
#include <stdlib.h>
#include <string.h>

#include "mx.h"
#include "src/io.h"
#include "src/name_map.h"

static void weights_free(mx_weight *w, size_t n) {
  for (size_t i = 0; w && i < n; i++) free(w[i].name);
  free(w);
}

MAX_C_API M_WeightsRegistry *M_newWeightsRegistry(const char **names, const void **data,
                                                  size_t numWeights, M_Status *status) {
  mx_ok(status);
  if (numWeights > 0 && (!names || !data)) {
    mx_err(status, "M_newWeightsRegistry: %s is NULL", !names ? "names" : "data");
    return NULL;
  }
  M_WeightsRegistry *r = calloc(1, sizeof *r);
  mx_weight *w = calloc(numWeights ? numWeights : 1, sizeof *w);
  if (!r || !w) {
    free(r);
    free(w);
    mx_err(status, "M_newWeightsRegistry: out of memory");
    return NULL;
  }
  r->w = w;
  rt_name_map seen = {0}; /* names hashed: the duplicate check stays linear */
  for (size_t i = 0; i < numWeights; i++, r->n++) {
    if (!names[i]) {
      mx_err(status, "M_newWeightsRegistry: name %zu is NULL", i);
      goto fail;
    }
    int j = i <= INT32_MAX ? rt_name_map_put(&seen, names[i], strlen(names[i]), (int)i) : -2;
    if (j == -2) {
      mx_err(status, "M_newWeightsRegistry: out of memory");
      goto fail;
    }
    if (j >= 0) {
      mx_err(status, "M_newWeightsRegistry: weight '%s' is given twice (entries %d and %zu)",
             names[i], j, i);
      goto fail;
    }
    w[i].name = mx_strdup(names[i]);
    if (!w[i].name) {
      mx_err(status, "M_newWeightsRegistry: out of memory");
      goto fail;
    }
    w[i].data = data[i];
  }
  rt_name_map_clear(&seen);
  return r;
fail:
  rt_name_map_clear(&seen);
  M_freeWeightsRegistry(r);
  return NULL;
}

MAX_C_API void M_freeWeightsRegistry(M_WeightsRegistry *weightsRegistry) {
  if (!weightsRegistry) return;
  weights_free(weightsRegistry->w, weightsRegistry->n);
  free(weightsRegistry);
}

/* ---- safetensors ---- */

typedef struct mx_st_entry {
  const char *name; /* owned by its file */
  kiln_tensor *t;   /* borrowing the file's mapping, or an owned copy */
} mx_st_entry;

struct M_Safetensors {
  size_t nfiles;
  rt_safetensors **files;
  size_t *first; /* nfiles entries: the index in e of each file's first tensor */
  size_t n;
  mx_st_entry *e;
};

MAX_C_API void M_freeSafetensors(M_Safetensors *safetensors) {
  if (!safetensors) return;
  for (size_t i = 0; i < safetensors->n; i++) kiln_tensor_free(safetensors->e[i].t);
  for (size_t i = 0; i < safetensors->nfiles; i++) rt_safetensors_close(safetensors->files[i]);
  free(safetensors->first);
  free(safetensors->e);
  free(safetensors->files);
  free(safetensors);
}

/* Entry `name` of the first `nfiles` files (each file's names are hashed:
 * a lookup costs one probe per file), or NULL. */
static const mx_st_entry *st_find_in(const M_Safetensors *s, size_t nfiles, const char *name) {
  for (size_t f = 0; s && name && f < nfiles; f++) {
    int k = rt_safetensors_find(s->files[f], name);
    if (k >= 0) return &s->e[s->first[f] + (size_t)k];
  }
  return NULL;
}

static const mx_st_entry *st_find(const M_Safetensors *s, const char *name) {
  return s ? st_find_in(s, s->nfiles, name) : NULL;
}

MAX_C_API M_Safetensors *M_loadSafetensors(const char **paths, size_t numPaths, M_Device *device,
                                           M_Status *status) {
  mx_ok(status);
  if (numPaths > 0 && !paths) {
    mx_err(status, "M_loadSafetensors: paths is NULL");
    return NULL;
  }
  /* An accelerator is accepted: the data is read into host memory (the
   * pointers M_getSafetensorData hands out are host pointers), and
   * M_initModel copies a registry's weights to the model's accelerator. */
  (void)device;
  M_Safetensors *s = calloc(1, sizeof *s);
  kiln_status *ks = kiln_status_new();
  if (!s || !ks || !(s->files = calloc(numPaths ? numPaths : 1, sizeof *s->files)) ||
      !(s->first = calloc(numPaths ? numPaths : 1, sizeof *s->first))) {
    mx_err(status, "M_loadSafetensors: out of memory");
    goto fail;
  }
  for (size_t i = 0; i < numPaths; i++) {
    if (!paths[i]) {
      mx_err(status, "M_loadSafetensors: path %zu is NULL", i);
      goto fail;
    }
    rt_safetensors *f = rt_safetensors_open(paths[i], ks);
    if (!f) {
      mx_err(status, "M_loadSafetensors: %s", kiln_status_message(ks));
      goto fail;
    }
    s->first[s->nfiles] = s->n;
    s->files[s->nfiles++] = f;
    int n = rt_safetensors_count(f);
    mx_st_entry *e = realloc(s->e, (s->n + (size_t)n + 1) * sizeof *e);
    if (!e) {
      mx_err(status, "M_loadSafetensors: out of memory");
      goto fail;
    }
    s->e = e;
    for (int k = 0; k < n; k++) {
      const char *name = rt_safetensors_name(f, k);
      if (st_find_in(s, i, name)) {
        mx_err(status, "M_loadSafetensors: tensor '%s' of %s is also in an earlier file", name,
               paths[i]);
        goto fail;
      }
      kiln_tensor *t = rt_safetensors_tensor(f, k, ks);
      if (!t) {
        mx_err(status, "M_loadSafetensors: %s", kiln_status_message(ks));
        goto fail;
      }
      s->e[s->n].name = name;
      s->e[s->n++].t = t;
    }
  }
  kiln_status_free(ks);
  return s;
fail:
  kiln_status_free(ks);
  M_freeSafetensors(s);
  return NULL;
}

MAX_C_API size_t M_getSafetensorCount(const M_Safetensors *safetensors) {
  return safetensors ? safetensors->n : 0;
}

MAX_C_API const char *M_getSafetensorName(const M_Safetensors *safetensors, size_t index) {
  return safetensors && index < safetensors->n ? safetensors->e[index].name : NULL;
}

/* The entry `name`, or NULL with an error in status. */
static const mx_st_entry *st_get(const M_Safetensors *s, const char *name, const char *fn,
                                 M_Status *status) {
  mx_ok(status);
  if (!s || !name) {
    mx_err(status, "%s: %s is NULL", fn, !s ? "safetensors" : "name");
    return NULL;
  }
  const mx_st_entry *e = st_find(s, name);
  if (!e) mx_err(status, "%s: no tensor named '%s' in the safetensors files", fn, name);
  return e;
}

MAX_C_API const void *M_getSafetensorData(const M_Safetensors *safetensors, const char *name,
                                          M_Status *status) {
  const mx_st_entry *e = st_get(safetensors, name, "M_getSafetensorData", status);
  return e ? kiln_tensor_data(e->t) : NULL;
}

MAX_C_API size_t M_getSafetensorNumBytes(const M_Safetensors *safetensors, const char *name,
                                         M_Status *status) {
  const mx_st_entry *e = st_get(safetensors, name, "M_getSafetensorNumBytes", status);
  return e ? kiln_tensor_nbytes(e->t) : 0;
}

MAX_C_API M_Dtype M_getSafetensorDtype(const M_Safetensors *safetensors, const char *name,
                                       M_Status *status) {
  const mx_st_entry *e = st_get(safetensors, name, "M_getSafetensorDtype", status);
  return e ? mx_dtype_from_kiln(kiln_tensor_dtype(e->t)) : M_UNKNOWN;
}

MAX_C_API size_t M_getSafetensorRank(const M_Safetensors *safetensors, const char *name,
                                     M_Status *status) {
  const mx_st_entry *e = st_get(safetensors, name, "M_getSafetensorRank", status);
  return e ? (size_t)kiln_tensor_rank(e->t) : 0;
}

MAX_C_API void M_getSafetensorShape(const M_Safetensors *safetensors, const char *name,
                                    int64_t *shapeOut, M_Status *status) {
  const mx_st_entry *e = st_get(safetensors, name, "M_getSafetensorShape", status);
  if (!e) return;
  int rank = kiln_tensor_rank(e->t);
  if (rank > 0 && !shapeOut) {
    mx_err(status, "M_getSafetensorShape: shapeOut is NULL");
    return;
  }
  for (int a = 0; a < rank; a++) shapeOut[a] = kiln_tensor_shape(e->t)[a];
}

MAX_C_API M_WeightsRegistry *M_newWeightsRegistryFromSafetensors(const M_Safetensors *safetensors,
                                                                 M_Status *status) {
  mx_ok(status);
  if (!safetensors) {
    mx_err(status, "M_newWeightsRegistryFromSafetensors: safetensors is NULL");
    return NULL;
  }
  M_WeightsRegistry *r = calloc(1, sizeof *r);
  mx_weight *w = calloc(safetensors->n ? safetensors->n : 1, sizeof *w);
  if (!r || !w) {
    free(r);
    free(w);
    mx_err(status, "M_newWeightsRegistryFromSafetensors: out of memory");
    return NULL;
  }
  r->w = w;
  for (size_t i = 0; i < safetensors->n; i++, r->n++) {
    const kiln_tensor *t = safetensors->e[i].t;
    w[i].name = mx_strdup(safetensors->e[i].name);
    if (!w[i].name) {
      M_freeWeightsRegistry(r);
      mx_err(status, "M_newWeightsRegistryFromSafetensors: out of memory");
      return NULL;
    }
    w[i].data = kiln_tensor_data(t);
    w[i].typed = true;
    w[i].dtype = kiln_tensor_dtype(t);
    w[i].rank = kiln_tensor_rank(t);
    for (int a = 0; a < w[i].rank && a < MX_MAX_RANK; a++) w[i].shape[a] = kiln_tensor_shape(t)[a];
  }
  return r;
}
