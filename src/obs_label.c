/* obs_label.c - kernel names for traces, profiles, logs and perf maps
 * (obs_label.h). */
#include "obs_label.h"

#include <stdio.h>
#include <string.h>

#include "ir/dim.h"

/* Append text to buf (length *k), cutting at cap. */
static void put(char *buf, size_t cap, size_t *k, const char *text) {
  if (*k + 1 >= cap) return;
  int n = snprintf(buf + *k, cap - *k, "%s", text);
  *k += (size_t)n < cap - *k ? (size_t)n : cap - *k - 1;
}

static void put_ops(const ir_graph *g, char *buf, size_t cap, size_t *k) {
  int any = 0;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = g->nodes[j];
    if (!n || ir_node_is_source(n)) continue;
    if (any++) put(buf, cap, k, "+");
    put(buf, cap, k, "mo.");
    put(buf, cap, k, ir_op_get(n->op)->name);
  }
}

const char *rt_obs_node_ops(const ir_graph *g, int i, char *buf, size_t cap) {
  if (!cap) return buf;
  buf[0] = 0;
  size_t k = 0;
  const ir_node *n = g->nodes[i];
  if (n->body) {
    put_ops(n->body, buf, cap, &k);
  } else {
    put(buf, cap, &k, "mo.");
    put(buf, cap, &k, ir_op_get(n->op)->name);
  }
  return buf;
}

const char *rt_obs_type_text(const ir_type *t, char *buf, size_t cap) {
  if (!cap) return buf;
  buf[0] = 0;
  size_t k = 0;
  put(buf, cap, &k, "[");
  for (int a = 0; a < t->rank; a++) {
    char d[128];
    ir_dim_print(t->dims[a], d, sizeof d);
    if (a) put(buf, cap, &k, ", ");
    put(buf, cap, &k, d);
  }
  put(buf, cap, &k, "] ");
  put(buf, cap, &k, ir_dtype_name(t->dtype));
  return buf;
}

const char *rt_obs_kernel_label(const ir_graph *kg, char *buf, size_t cap) {
  if (!cap) return buf;
  buf[0] = 0;
  size_t k = 0;
  put_ops(kg, buf, cap, &k);
  if (kg->noutputs > 0) {
    char ty[256];
    put(buf, cap, &k, " ");
    put(buf, cap, &k, rt_obs_type_text(&kg->outputs[0]->type, ty, sizeof ty));
  }
  return buf;
}
