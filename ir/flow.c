/* flow.c - a graph with control nodes as steps (control.h, ir_flow_split):
 * maximal runs of ordinary nodes become segment graphs, each control node a
 * step of its own.
 *
 * Assumes: g verified. Guarantees: steps in g's node order; a segment's
 * inputs are the values it reads that earlier steps or g's inputs define
 * (in order of first use), its outputs the values it defines that a later
 * step or g's outputs read (in definition order); a segment nobody reads
 * is left out. Segments keep g's symbols (same names and indices), value
 * names and node locations, so their messages read like g's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

static bool clone_type(ir_arena *a, ir_type *dst, const ir_type *src) {
  *dst = *src;
  dst->dims = NULL;
  if (src->rank <= 0) return true;
  const ir_dim **dims = ir_arena_alloc(a, (size_t)src->rank * sizeof *dims);
  if (!dims) return false;
  for (int i = 0; i < src->rank; i++)
    if (!(dims[i] = ir_dim_clone(a, src->dims[i]))) return false;
  dst->dims = dims;
  return true;
}

/* Whether a node after `last` or an output of g reads v. */
static bool read_later(const ir_graph *g, const ir_value *v, int last) {
  for (int i = last + 1; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i]->nin; k++)
      if (g->nodes[i]->in[k] == v) return true;
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

/* Segment of g's nodes [first, last] into step s; s->seg stays NULL when
 * nothing later reads it. */
static int make_segment(const ir_graph *g, int first, int last, int index, ir_flow_step *s,
                        ir_diag *d) {
  char name[160];
  snprintf(name, sizeof name, "%.100s.seg%d", g->name, index);
  ir_graph *seg = ir_graph_new(name);
  ir_value **map = calloc((size_t)g->nvalues + 1, sizeof *map);
  s->in = malloc(((size_t)g->nvalues + 1) * sizeof *s->in);
  s->out = malloc(((size_t)g->nvalues + 1) * sizeof *s->out);
  ir_type *types = NULL;
  if (!seg || !map || !s->in || !s->out) goto oom;
  for (int i = 0; i < g->nsyms; i++)
    if (ir_graph_symbol(seg, g->syms[i], strlen(g->syms[i]), true) != i) goto oom;
  for (int i = first; i <= last; i++) {
    const ir_node *n = g->nodes[i];
    ir_value *in[n->nin ? n->nin : 1];
    const char *names[n->nout ? n->nout : 1];
    for (int k = 0; k < n->nin; k++) {
      ir_value *v = n->in[k];
      if (!map[v->id]) { /* defined before the segment: an input */
        ir_type t;
        if (!clone_type(seg->arena, &t, &v->type)) goto oom;
        if (!(map[v->id] = ir_graph_add_input(seg, v->name, &t))) goto oom;
        s->in[s->nin++] = v->id;
      }
      in[k] = map[v->id];
    }
    if (!(types = calloc((size_t)n->nout + 1, sizeof *types))) goto oom;
    for (int k = 0; k < n->nout; k++) {
      names[k] = n->out[k]->name;
      if (!clone_type(seg->arena, &types[k], &n->out[k]->type)) goto oom;
    }
    ir_node *m = ir_graph_add_node(seg, n->op, in, n->nin, n->attrs, n->nattrs, n->nout, types,
                                   names, n->loc, d);
    free(types);
    types = NULL;
    if (m && !ir_node_set_origin(seg, m, n->origin)) m = NULL;
    if (!m) goto fail;
    for (int k = 0; k < n->nout; k++) map[n->out[k]->id] = m->out[k];
  }
  for (int i = first; i <= last; i++)
    for (int k = 0; k < g->nodes[i]->nout; k++) {
      const ir_value *v = g->nodes[i]->out[k];
      if (read_later(g, v, last)) s->out[s->nout++] = v->id;
    }
  if (s->nout == 0) { /* dead code: no step */
    ir_graph_free(seg);
    free(map);
    return 0;
  }
  ir_value **outs = ir_arena_alloc(seg->arena, (size_t)s->nout * sizeof *outs);
  if (!outs) goto oom;
  for (int i = 0; i < s->nout; i++) outs[i] = map[s->out[i]];
  if (ir_graph_set_outputs(seg, outs, s->nout, g->output_loc)) goto oom;
  if (ir_graph_verify(seg, d)) goto fail;
  s->seg = seg;
  free(map);
  return 0;
oom:
  ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
fail:
  free(types);
  free(map);
  ir_graph_free(seg);
  return -1;
}

void ir_flow_free(ir_flow *f) {
  if (!f) return;
  for (int i = 0; i < f->nsteps; i++) {
    ir_graph_free(f->steps[i].seg);
    free(f->steps[i].in);
    free(f->steps[i].out);
  }
  free(f->steps);
  free(f);
}

ir_flow *ir_flow_split(const ir_graph *g, ir_diag *d) {
  ir_flow *f = calloc(1, sizeof *f);
  if (!f || !(f->steps = calloc((size_t)g->nnodes + 1, sizeof *f->steps))) {
    free(f);
    ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
    return NULL;
  }
  for (int i = 0, nseg = 0; i < g->nnodes;) {
    ir_flow_step *s = &f->steps[f->nsteps];
    const ir_node *n = g->nodes[i];
    if (ir_node_is_control(n)) {
      s->node = n;
      s->nin = n->nin;
      s->nout = n->nout;
      s->in = malloc(((size_t)n->nin + 1) * sizeof *s->in);
      s->out = malloc(((size_t)n->nout + 1) * sizeof *s->out);
      f->nsteps++;
      if (!s->in || !s->out) {
        ir_diag_set(d, n->loc, "out of memory");
        ir_flow_free(f);
        return NULL;
      }
      for (int k = 0; k < n->nin; k++) s->in[k] = n->in[k]->id;
      for (int k = 0; k < n->nout; k++) s->out[k] = n->out[k]->id;
      i++;
      continue;
    }
    int last = i;
    while (last + 1 < g->nnodes && !ir_node_is_control(g->nodes[last + 1])) last++;
    f->nsteps++; /* counted first so a failure frees what it holds */
    if (make_segment(g, i, last, nseg++, s, d)) {
      ir_flow_free(f);
      return NULL;
    }
    if (!s->seg) { /* nothing reads it */
      free(s->in);
      free(s->out);
      memset(s, 0, sizeof *s);
      f->nsteps--;
    }
    i = last + 1;
  }
  return f;
}
