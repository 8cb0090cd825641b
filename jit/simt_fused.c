/* simt_fused.c - the SIMT lowering of mo.fused (ir/fuse.c; simt.h): the
 * node's body graph as one kernel whose buffers are the node's operands
 * (the body's inputs, in order) then its results (the body's outputs).
 * Two forms of body:
 *   elementwise  members over one shape: a grid-stride loop over it; at
 *                each element the members' operands are loaded from the
 *                inputs (broadcast, each input once), the members are
 *                computed in order in registers and the outputs stored;
 *   GEMM         one mo.matmul whose product only elementwise members of
 *                its shape use: the tiled matmul (simt_lower.c) with the
 *                members computed on each output element of the product
 *                before its one store (an epilogue). The product never
 *                reaches memory, so the result may have another dtype.
 * Members are builtin elementwise ops (jit_simt_ew_value, the CPU path's
 * scalar code, so each member rounds as its own kernel would and a fused
 * kernel equals the unfused ones) or elementwise custom kernels (their
 * library linked once per module, custom.c). A member that can fail
 * (integer mod) stores its code in the error word as its own kernel would.
 * Any other body is refused with the op and the reason
 * (jit_simt_check_fused), never lowered approximately.
 * Assumes: a verified body (types inferred) whose symbols are the kernel's
 * (same indices). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom.h"
#include "simt.h"

/* The body, resolved: members in order, where each operand comes from, and
 * which member computes each output. */
typedef struct group {
  const ir_graph *b;
  const ir_node *mm; /* the GEMM, or NULL */
  const ir_type *shape; /* every member's result shape */
  int nmem;
  const ir_node **mem;
  int *src;       /* JIT_EW_MAX_IN per member: >= 0 a member, -1 - i input i, PRODUCT */
  int *member_of; /* by body value id: the member defining it, or -1 */
  int *out_mem;   /* by output */
} group;

#define PRODUCT(g) (-1 - (g)->b->ninputs) /* the GEMM's product */

static bool ew_custom(const ir_node *n) {
  return n->op == IR_OP_CUSTOM && ir_node_attr_int(n, "kiln.elementwise", 0) != 0;
}

static bool ew_member(const ir_node *n) {
  const ir_op_info *o = ir_op_get(n->op);
  if (!o || n->nout != 1 || n->nin < 1 || n->nin > JIT_EW_MAX_IN) return false;
  return ew_custom(n) || ir_op_is_elementwise(n->op) || o->cls == IR_CLS_BROADCAST_TO;
}

static void group_free(group *g) {
  free(g->mem);
  free(g->src);
  free(g->member_of);
  free(g->out_mem);
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* Resolve n's body into g; 0, or -1 with err naming the op and why. */
static int group_build(group *g, const ir_node *n, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  const ir_graph *b = n ? n->body : NULL;
  if (!b || b->ninputs != n->nin || b->noutputs != n->nout || b->noutputs < 1 || b->nnodes < 1)
    return fail(err, errlen, "mo.fused: no body matching the node");
  g->b = b;
  g->mem = calloc((size_t)b->nnodes + 1, sizeof *g->mem);
  g->src = calloc(JIT_EW_MAX_IN * ((size_t)b->nnodes + 1), sizeof *g->src);
  g->member_of = calloc((size_t)b->nvalues + 1, sizeof *g->member_of);
  g->out_mem = calloc((size_t)b->noutputs + 1, sizeof *g->out_mem);
  if (!g->mem || !g->src || !g->member_of || !g->out_mem)
    return fail(err, errlen, "mo.fused: out of memory");
  for (int i = 0; i < b->nvalues; i++) g->member_of[i] = -1;
  for (int i = 0; i < b->nnodes; i++) {
    const ir_node *m = b->nodes[i];
    const ir_op_info *o = ir_op_get(m->op);
    const char *name = o ? o->name : "?";
    if (m->op == IR_OP_MATMUL) {
      if (g->mm)
        return fail(err, errlen, "mo.fused: a second mo.%s in one group", name);
      if (m->nin != 2 || m->nout != 1 || m->in[0]->type.rank < 2 || m->in[1]->type.rank < 2)
        return fail(err, errlen, "mo.fused: mo.%s of this form cannot be fused", name);
      if (ir_graph_input_index(b, m->in[0]) < 0 || ir_graph_input_index(b, m->in[1]) < 0)
        return fail(err, errlen, "mo.fused: the operands of mo.%s must come from outside the "
                                 "group", name);
      if (ir_node_attr_int(m, "kiln.packed_b", 0))
        return fail(err, errlen, "mo.fused: mo.%s: kiln.packed_b is not supported on SIMT "
                                 "targets", name);
      if (g->nmem > 0)
        return fail(err, errlen, "mo.fused: mo.%s must come before the elementwise members "
                                 "(they form its epilogue)", name);
      g->mm = m;
      continue;
    }
    if (!ew_member(m))
      return fail(err, errlen, "mo.fused: mo.%s cannot be in a fused kernel on SIMT targets "
                               "(only elementwise ops and one leading matmul)", name);
    int k = g->nmem++;
    g->mem[k] = m;
    for (int j = 0; j < m->nin; j++) {
      const ir_value *v = m->in[j];
      int s;
      if (v->id >= 0 && v->id < b->nvalues && g->member_of[v->id] >= 0)
        s = g->member_of[v->id];
      else if (g->mm && v == g->mm->out[0])
        s = PRODUCT(g);
      else if ((s = ir_graph_input_index(b, v)) >= 0)
        s = -1 - s;
      else
        return fail(err, errlen, "mo.fused: an operand of mo.%s comes from nowhere", name);
      g->src[JIT_EW_MAX_IN * k + j] = s;
    }
    if (m->out[0]->id >= 0 && m->out[0]->id < b->nvalues) g->member_of[m->out[0]->id] = k;
  }
  if (g->nmem == 0)
    return fail(err, errlen, "mo.fused: a group without elementwise members");
  g->shape = g->mm ? &g->mm->out[0]->type : &b->outputs[0]->type;
  for (int k = 0; k < g->nmem; k++)
    if (!ir_type_same_shape(&g->mem[k]->out[0]->type, g->shape))
      return fail(err, errlen, "mo.fused: the result of mo.%s has another shape than the "
                               "group's", ir_op_get(g->mem[k]->op)->name);
  if (g->mm && b->noutputs != 1)
    return fail(err, errlen, "mo.fused: a GEMM epilogue group has one result");
  for (int o = 0; o < b->noutputs; o++) {
    const ir_value *v = b->outputs[o];
    int k = v->id >= 0 && v->id < b->nvalues ? g->member_of[v->id] : -1;
    if (k < 0)
      return fail(err, errlen, "mo.fused: a result of the group is not computed by an "
                               "elementwise member");
    g->out_mem[o] = k;
  }
  for (int i = 0; i < b->ninputs; i++)
    if (b->inputs[i]->type.rank > g->shape->rank &&
        !(g->mm && (b->inputs[i] == g->mm->in[0] || b->inputs[i] == g->mm->in[1])))
      return fail(err, errlen, "mo.fused: an input has a higher rank than the group's result");
  return 0;
}

int jit_simt_check_fused(const ir_node *n, char *err, size_t errlen) {
  group g;
  int rc = group_build(&g, n, err, errlen);
  group_free(&g);
  return rc;
}

/* ---- code ---- */

typedef struct emit_ctx {
  jit_simt_fn *sf;
  group *g;
  LLVMValueRef *fn;     /* per member: its custom kernel's scalar function, or NULL */
  LLVMValueRef *reg;    /* per member: its value at the current element */
  LLVMValueRef *loaded; /* per input: its value at the current element, once loaded */
} emit_ctx;

/* The scalar functions of the custom members, each library linked once
 * (a second symbol of a linked library is found by its linked name). */
static int link_customs(emit_ctx *c) {
  jit_simt_fn *sf = c->sf;
  jit_fn *f = &sf->f;
  const group *g = c->g;
  for (int k = 0; k < g->nmem; k++) {
    const ir_node *m = g->mem[k];
    if (!ew_custom(m)) continue;
    const char *lib = ir_node_attr_string(m, "kiln.library", "");
    const char *sym = ir_node_attr_string(m, "symbol", "");
    int prev = -1;
    for (int q = 0; q < k && prev < 0; q++)
      if (c->fn[q] && strcmp(ir_node_attr_string(g->mem[q], "kiln.library", ""), lib) == 0)
        prev = q;
    if (prev >= 0) {
      size_t elen = 0;
      const char *ename = LLVMGetValueName2(sf->entry, &elen);
      char name[600];
      snprintf(name, sizeof name, "%.*s__%s", (int)elen, ename, sym);
      c->fn[k] = LLVMGetNamedFunction(f->mod, name);
      if (!c->fn[k] || LLVMIsDeclaration(c->fn[k]))
        return jit_fn_error(f, "mo.fused: kernel \"%s\": its library does not define it", sym);
      continue;
    }
    const ir_node *save = f->node;
    f->node = m; /* the library and symbol are the member's */
    c->fn[k] = jit_simt_custom_ew_fn(sf);
    f->node = save;
    if (!c->fn[k]) return -1;
  }
  return 0;
}

/* Compute every member at the element with coordinates coord over the
 * group's shape (linear index i, or NULL); product: the GEMM's value. */
static void members_at(emit_ctx *c, const LLVMValueRef *coord, LLVMValueRef i,
                       LLVMValueRef product) {
  jit_fn *f = &c->sf->f;
  const group *g = c->g;
  const ir_graph *b = g->b;
  int r = g->shape->rank;
  for (int k = 0; k < g->nmem && !f->failed; k++) {
    const ir_node *m = g->mem[k];
    LLVMValueRef v[JIT_EW_MAX_IN];
    for (int q = 0; q < m->nin; q++) {
      int s = g->src[JIT_EW_MAX_IN * k + q];
      if (s >= 0) {
        v[q] = c->reg[s];
      } else if (s == PRODUCT(g)) {
        v[q] = product;
      } else {
        int bi = -1 - s;
        if (!c->loaded[bi]) {
          const ir_type *t = &b->inputs[bi]->type;
          LLVMValueRef idx = i && ir_type_same_shape(t, g->shape)
                                 ? i
                                 : jit_simt_bcast_index(f, t, g->shape, r, coord);
          c->loaded[bi] = jit_load(f, t->dtype, jit_in(f, bi), idx);
        }
        v[q] = c->loaded[bi];
      }
    }
    c->reg[k] = c->fn[k] ? jit_simt_custom_ew_call(f, c->fn[k], m->nin, v)
                         : jit_simt_ew_value(f, m, v);
  }
}

static LLVMValueRef epilogue(jit_simt_fn *sf, void *ud, LLVMValueRef v, const LLVMValueRef *coord) {
  emit_ctx *c = ud;
  (void)sf;
  memset(c->loaded, 0, sizeof *c->loaded * (size_t)c->g->b->ninputs);
  members_at(c, coord, NULL, v);
  return c->reg[c->g->out_mem[0]];
}

static int lower_elements(emit_ctx *c) {
  jit_simt_fn *sf = c->sf;
  jit_fn *f = &sf->f;
  const group *g = c->g;
  const ir_type *shape = g->shape;
  LLVMValueRef dims[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, shape, dims);
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, shape, 0, shape->rank));
  jit_simt_unravel(f, i, dims, shape->rank, coord);
  members_at(c, coord, i, NULL);
  for (int o = 0; o < g->b->noutputs && !f->failed; o++)
    jit_store(f, g->b->outputs[o]->type.dtype, jit_out(f, o), i, c->reg[g->out_mem[o]]);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_fused(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  char err[512];
  group g;
  if (group_build(&g, f->node, err, sizeof err) < 0) {
    group_free(&g);
    return jit_fn_error(f, "%s", err);
  }
  if (g.b->nsyms != f->nsyms) {
    group_free(&g);
    return jit_fn_error(f, "mo.fused: the body has %d symbols, the kernel %d", g.b->nsyms,
                        f->nsyms);
  }
  emit_ctx c = {sf, &g, calloc((size_t)g.nmem + 1, sizeof *c.fn),
                calloc((size_t)g.nmem + 1, sizeof *c.reg),
                calloc((size_t)g.b->ninputs + 1, sizeof *c.loaded)};
  int rc;
  if (!c.fn || !c.reg || !c.loaded)
    rc = jit_fn_error(f, "out of memory");
  else if ((rc = link_customs(&c)) == 0)
    rc = g.mm ? jit_simt_lower_matmul(sf, g.mm, ir_graph_input_index(g.b, g.mm->in[0]),
                                      ir_graph_input_index(g.b, g.mm->in[1]), epilogue, &c)
              : lower_elements(&c);
  free(c.fn);
  free(c.reg);
  free(c.loaded);
  group_free(&g);
  return rc < 0 || f->failed ? -1 : 0;
}
