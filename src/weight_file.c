/* weight_file.c - one reader over the two weights formats kiln opens by
 * path (.safetensors and GGUF, told apart by GGUF's magic, not by the
 * name), for `kiln run --weights` and kiln_model_bind_weights_file.
 *
 * kiln_model_bind_weights_file binds every tensor of the file whose name is
 * a weight of the model (a GGUF file carries a whole model; a graph may use
 * part of it) and keeps the file mapped as long as the model: the file's
 * reader joins the model's weight source (weight_source.h), chained to the
 * one it had. The tensors are borrowed views of the mapping where their
 * data is aligned, so a GGUF's blocks are read in place by qmatmul. Each
 * is added with its bytes in the mapping (rt_wsrc_add_mapped), so the
 * weight source gives a weight's pages back as soon as the model reads
 * only its packed copy (read again from the file if ever needed): a packed
 * weight is resident once. */
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "name_map.h"
#include "weight_file.h"
#include "weight_source.h"

struct rt_wfile {
  rt_safetensors *st;
  rt_gguf *gg;
};

static bool starts_with_gguf(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return false;
  char m[4] = {0};
  bool yes = fread(m, 1, 4, fp) == 4 && memcmp(m, "GGUF", 4) == 0;
  fclose(fp);
  return yes;
}

rt_wfile *rt_wfile_open(const char *path, kiln_status *st) {
  rt_wfile *w = calloc(1, sizeof *w);
  if (!w) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  /* a path that does not open falls to the safetensors reader's message */
  bool gguf = path && starts_with_gguf(path);
  if (gguf ? !(w->gg = rt_gguf_open(path, st)) : !(w->st = rt_safetensors_open(path, st))) {
    free(w);
    return NULL;
  }
  return w;
}

void rt_wfile_close(rt_wfile *w) {
  if (!w) return;
  rt_safetensors_close(w->st);
  rt_gguf_close(w->gg);
  free(w);
}

bool rt_wfile_is_gguf(const rt_wfile *w) { return w && w->gg; }

int rt_wfile_count(const rt_wfile *w) {
  return !w ? 0 : w->gg ? rt_gguf_count(w->gg) : rt_safetensors_count(w->st);
}

const char *rt_wfile_name(const rt_wfile *w, int i) {
  return !w ? NULL : w->gg ? rt_gguf_name(w->gg, i) : rt_safetensors_name(w->st, i);
}

kiln_tensor *rt_wfile_tensor(const rt_wfile *w, int i, kiln_status *st) {
  return w->gg ? rt_gguf_tensor(w->gg, i, st) : rt_safetensors_tensor(w->st, i, st);
}

const void *rt_wfile_bytes(const rt_wfile *w, int i, size_t *len) {
  *len = 0;
  return !w ? NULL : w->gg ? rt_gguf_bytes(w->gg, i, len) : rt_safetensors_bytes(w->st, i, len);
}

void rt_wfile_drop(const rt_wfile *w, int i) {
  size_t len;
  const void *p = rt_wfile_bytes(w, i, &len);
  rt_map_drop(p, len);
}

static void close_any(void *w) { rt_wfile_close(w); }

static void release_wsrc(void *w) { rt_wsrc_release(w); }

int kiln_model_bind_weights_file(kiln_model *m, const char *path, kiln_status *st) {
  if (!m || !path)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_bind_weights_file: NULL %s",
                  m ? "path" : "model");
  rt_wfile *f = rt_wfile_open(path, st);
  if (!f) return -1;
  rt_wsrc *w = rt_wsrc_new(st);
  if (!w) {
    rt_wfile_close(f);
    return -1;
  }
  /* w owns f from here on (also when keep fails: it closes f then) */
  rt_name_map names = {0};
  if (rt_wsrc_keep(w, f, close_any, st) < 0) goto fail;
  for (int k = 0; k < kiln_model_num_weights(m); k++) {
    const char *nm = kiln_model_weight_name(m, k);
    if (rt_name_map_put(&names, nm, strlen(nm), k) == -2) {
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      goto fail;
    }
  }
  for (int i = 0; i < rt_wfile_count(f); i++) {
    const char *name = rt_wfile_name(f, i);
    if (rt_name_map_get(&names, name, strlen(name)) < 0) continue; /* not read by m */
    kiln_tensor *t = rt_wfile_tensor(f, i, st);
    size_t len;
    const void *bytes = rt_wfile_bytes(f, i, &len);
    if (!t || rt_wsrc_add_mapped(w, name, t, bytes, len, st) < 0) goto fail;
  }
  rt_name_map_clear(&names);
  rt_wsrc *old = m->wsrc;
  if (old && rt_wsrc_keep(w, rt_wsrc_retain(old), release_wsrc, st) < 0) goto fail;
  int rc = rt_wsrc_bind(m, w, st); /* success: m->wsrc = w */
  if (rc < 0) m->wsrc = rt_wsrc_retain(w); /* weights bound before the failure read w */
  rt_wsrc_release(old); /* the model's reference: w holds its own */
  rt_wsrc_release(w);
  return rc;
fail:
  rt_name_map_clear(&names);
  rt_wsrc_release(w);
  return -1;
}
