/* dot.c - `kiln check --dot F` / `kiln compile --dot F`: the graph as
 * Graphviz DOT, before and after kiln prepares it for the host (custom
 * kernels bound, transposes folded, fused: pipeline.c), side by side as two
 * clusters. Each fused group is a cluster of its own holding its body's
 * nodes; every edge is labelled with the shape and dtype of the value it
 * carries. Node ids carry the side's prefix ("b" before, "a" after), so
 * the two pictures never share a node; labels are escaped for DOT. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"
#include "../obs_label.h"
#include "../pipeline.h"
#include "../rt.h"
#include "cli.h"
#include "cli_dot.h"

/* s with '"' and '\' escaped for a DOT string (cut to cap). */
static const char *esc(const char *s, char *buf, size_t cap) {
  size_t k = 0;
  for (; s && *s && k + 3 < cap; s++) {
    if (*s == '"' || *s == '\\') buf[k++] = '\\';
    buf[k++] = *s;
  }
  buf[k] = 0;
  return buf;
}

typedef char dot_id[48];

static void edge(FILE *f, const char *from, const char *to, const ir_value *v) {
  char ty[256], e[300];
  rt_obs_type_text(&v->type, ty, sizeof ty);
  fprintf(f, "    %s -> %s [label=\"%s\"];\n", from, to, esc(ty, e, sizeof e));
}

/* A node labelled "mo.op" and, on a second line (DOT's \n), its result. */
static void op_node(FILE *f, const char *id, const ir_node *n, const char *indent) {
  char name[256];
  esc(n->nout > 0 ? n->out[0]->name : "?", name, sizeof name);
  fprintf(f, "%s%s [label=\"mo.%s\\n%%%s\"%s];\n", indent, id, ir_op_get(n->op)->name, name,
          ir_node_is_source(n) ? ", shape=box, style=dashed" : "");
}

/* One side: g's inputs, nodes (fused ones as clusters) and outputs. */
static int side(FILE *f, const ir_graph *g, const char *p, const char *title) {
  dot_id *vid = calloc((size_t)g->nvalues + 1, sizeof *vid);
  if (!vid) return -1;
  char e[300];
  fprintf(f, "  subgraph cluster_%s {\n    label=\"%s\";\n", p, esc(title, e, sizeof e));
  for (int k = 0; k < g->ninputs; k++) {
    snprintf(vid[g->inputs[k]->id], sizeof(dot_id), "%s_in%d", p, k);
    fprintf(f, "    %s [label=\"%%%s\", shape=invhouse];\n", vid[g->inputs[k]->id],
            esc(g->inputs[k]->name, e, sizeof e));
  }
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (!n->body) {
      dot_id id;
      snprintf(id, sizeof id, "%s_n%d", p, i);
      op_node(f, id, n, "    ");
      for (int j = 0; j < n->nin; j++)
        if (vid[n->in[j]->id][0]) edge(f, vid[n->in[j]->id], id, n->in[j]);
      for (int j = 0; j < n->nout; j++) snprintf(vid[n->out[j]->id], sizeof(dot_id), "%s", id);
      continue;
    }
    const ir_graph *b = n->body;
    dot_id *bid = calloc((size_t)b->nvalues + 1, sizeof *bid);
    if (!bid) {
      free(vid);
      return -1;
    }
    char ops[256];
    rt_obs_node_ops(g, i, ops, sizeof ops);
    fprintf(f, "    subgraph cluster_%s_f%d {\n      label=\"fused: %s\";\n      style=filled; "
               "color=lightgrey;\n", p, i, esc(ops, e, sizeof e));
    for (int k = 0; k < b->ninputs && k < n->nin; k++) /* body input k is operand k */
      snprintf(bid[b->inputs[k]->id], sizeof(dot_id), "%s", vid[n->in[k]->id]);
    /* the nodes inside the cluster, every edge after it: an edge written
     * inside would pull its outer end into the cluster */
    for (int j = 0; j < b->nnodes; j++) {
      dot_id id;
      snprintf(id, sizeof id, "%s_n%d_%d", p, i, j);
      op_node(f, id, b->nodes[j], "      ");
    }
    fprintf(f, "    }\n");
    for (int j = 0; j < b->nnodes; j++) {
      const ir_node *bn = b->nodes[j];
      dot_id id;
      snprintf(id, sizeof id, "%s_n%d_%d", p, i, j);
      for (int q = 0; q < bn->nin; q++)
        if (bid[bn->in[q]->id][0]) edge(f, bid[bn->in[q]->id], id, bn->in[q]);
      for (int q = 0; q < bn->nout; q++) snprintf(bid[bn->out[q]->id], sizeof(dot_id), "%s", id);
    }
    for (int k = 0; k < b->noutputs && k < n->nout; k++) /* result k is body output k */
      snprintf(vid[n->out[k]->id], sizeof(dot_id), "%s", bid[b->outputs[k]->id]);
    free(bid);
  }
  fprintf(f, "    %s_out [label=\"output\", shape=house];\n", p);
  dot_id out;
  snprintf(out, sizeof out, "%s_out", p);
  for (int k = 0; k < g->noutputs; k++)
    if (vid[g->outputs[k]->id][0]) edge(f, vid[g->outputs[k]->id], out, g->outputs[k]);
  fprintf(f, "  }\n");
  free(vid);
  return 0;
}

int cli_write_dot(const char *path, const kiln_graph *kg, kiln_status *st) {
  const ir_graph *before = kg->ir;
  ir_graph *after = ir_graph_clone(before);
  if (!after) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "--dot: out of memory");
  setenv("KILN_CACHE", "off", 1); /* a picture compiles nothing: no store to open */
  kiln_context *ctx = kiln_context_new(st); /* the host target's passes and options */
  rt_target t;
  if (ctx) rt_target_host(&t, ctx);
  if (!ctx || rt_pipeline_prepare(after, &t, NULL, st) < 0) {
    ir_graph_free(after);
    kiln_context_free(ctx);
    return -1;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    ir_graph_free(after);
    kiln_context_free(ctx);
    return rt_err(st, KILN_ERR_IO, "--dot %s: cannot create the file: %s", path, strerror(e));
  }
  char e[300];
  fprintf(f, "digraph \"%s\" {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n"
             "  edge [fontname=\"monospace\", fontsize=10];\n",
          esc(before->name ? before->name : "graph", e, sizeof e));
  int rc = side(f, before, "b", "before fusion");
  if (rc == 0) rc = side(f, after, "a", "after fusion (host)");
  fprintf(f, "}\n");
  if (fclose(f) != 0 && rc == 0) rc = -2;
  ir_graph_free(after);
  kiln_context_free(ctx);
  if (rc == -1) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "--dot: out of memory");
  if (rc == -2) return rt_err(st, KILN_ERR_IO, "--dot %s: write failed", path);
  rt_ok(st);
  return 0;
}
