/* device_buffers.c - the buffer ops of a device model (device_model.c; the
 * CPU runtime's are in buffers.c): mo.mutable.store.slice's kernel, built
 * for the device's target and loaded (jit_simt_compile_store_slice), and
 * which buffer inputs a graph stores to (copied back to the caller's tensor
 * after an execute). mo.buffer.create, mo.mutable.load and mo.mutable.store
 * need no code: device_model.c runs them as copies on the device.
 *
 * The store.slice kernel is compiled at every model load, never cached on
 * disk (it is a few dozen instructions). Its name is a hash of everything
 * its code depends on (the target, the graph's symbols in order, the
 * buffer's and the slice's types, the start's dtype), since simt-emu loads
 * every module into one namespace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "buffers.h"
#include "device.h"
#include "gpu_link.h"
#include "obs_label.h"

int rt_dm_store_slice_load(kiln_device *d, const jit_simt_target *t, const ir_graph *g, int i,
                           rt_code *c, kiln_status *st) {
  const ir_node *n = g->nodes[i];
  memset(c, 0, sizeof *c);
  char key[2048], name[64], err[2048] = "";
  size_t k = (size_t)snprintf(key, sizeof key, "%d %s %d|", (int)t->kind, t->arch,
                              (int)n->in[2]->type.dtype);
  for (int s = 0; s < g->nsyms && k < sizeof key; s++)
    k += (size_t)snprintf(key + k, sizeof key - k, "%s,", g->syms[s]);
  for (int j = 0; j < 2 && k < sizeof key; j++) {
    rt_obs_type_text(&n->in[j]->type, key + k, sizeof key - k);
    k += strlen(key + k);
  }
  snprintf(name, sizeof name, "kiln_store_slice_%016llx",
           (unsigned long long)XXH3_64bits(key, strnlen(key, sizeof key)));
  void *obj = NULL, *image = NULL;
  size_t olen = 0, len = 0;
  if (jit_simt_compile_store_slice(g, t, i, name, &obj, &olen, err, sizeof err) < 0)
    return rt_err(st, KILN_ERR_COMPILE, "%s", err);
  int rc = 0;
  if (t->kind == JIT_SIMT_AMDGPU) {
    rc = rt_link_amdgpu(obj, olen, &image, &len, st);
    free(obj);
  } else {
    image = obj;
    len = olen;
  }
  if (rc == 0) rc = rt_device_module_load(d, image, len, &c->handle, st);
  free(image);
  if (rc == 0) rc = rt_device_module_function(d, c->handle, name, &c->fn, st);
  if (rc == 0 && g->nsyms > 0 && !(c->sym_map = malloc(sizeof *c->sym_map * (size_t)g->nsyms)))
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc < 0) {
    rt_device_module_unload(d, c->handle);
    memset(c, 0, sizeof *c);
    return -1;
  }
  for (int s = 0; s < g->nsyms; s++)
    c->sym_map[s] = s; /* the graph's own symbols */
  c->nsyms = g->nsyms;
  return 0;
}

bool rt_buffer_stored(const ir_graph *g, const ir_value *v) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    bool store = n->op == IR_OP_MUTABLE_STORE || n->op == IR_OP_MUTABLE_STORE_SLICE;
    if (store && n->in[0] == v) return true;
  }
  return false;
}
