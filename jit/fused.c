/* fused.c - lowering of mo.fused (ir/fuse.c): the node's body graph as one
 * kernel. The kernel's buffers are the node's operands (the body's inputs,
 * in order) then its results (the body's outputs).
 *
 * Three shapes of body:
 *   - elementwise only: one loop nest over the result shape
 *     (jit_emit_ew_group), every member computed in registers; the outer
 *     loop is split between the parts.
 *   - one f32 / f64 mo.matmul plus elementwise members on its result (a GEMM
 *     epilogue): the GEMM template writes the product into the result
 *     buffer and calls an epilogue function, emitted here, for every
 *     finished block of C while it is in cache; the epilogue computes the
 *     members element by element (the matmul's value read from C) and
 *     overwrites C with the group's result. So the result needs the
 *     matmul's dtype and shape (fuse.c only makes such groups), and no
 *     member may fail (integer mod is refused: the epilogue has no error
 *     path; fuse.c never groups it).
 *   - either of these may read its matmul's operands in place: a slice
 *     member (first in the body) is not copied; the GEMM gets a pointer to
 *     its first element and its row and batch strides (jit_matmul_in_place),
 *     and with no elementwise member the group is the matmul alone;
 *   - one mo.softmax / mo.logsoftmax whose operand elementwise members
 *     of its shape compute (a prologue: the attention scale, a mask add):
 *     jit_emit_softmax (norm.c) computes each row of the operand into the
 *     result buffer, then normalizes it there while it is in cache.
 * Numbers: every member rounds to its dtype exactly as its own kernel would,
 * so a fused kernel's results equal the unfused kernels' bit for bit.
 * Members may be elementwise custom kernels (mo.custom marked
 * kiln.elementwise): the member calls the library's scalar function,
 * linked into the module once per library and inlined (custom.c); they
 * cannot fail, so they may sit in a GEMM epilogue too.
 *
 * Assumes: a verified body whose symbols are the kernel graph's (same
 * indices), f->node->body set (jit_compile_object builds a node for a
 * multi-node kernel graph; a mo.fused of a compiled graph has its own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "template.h"

/* An elementwise member: a builtin elementwise op, or a mo.custom marked
 * kiln.elementwise (a scalar kernel function the member calls, custom.c). */
static bool ew_member(const ir_node *n) {
  const ir_op_info *o = ir_op_get(n->op);
  if (o && n->op == IR_OP_CUSTOM) return n->nout == 1 && ir_node_attr_int(n, "kiln.elementwise", 0);
  return o && n->nout == 1 && (ir_op_is_elementwise(n->op) || o->cls == IR_CLS_BROADCAST_TO);
}

typedef struct fctx {
  jit_fn *f;
  const ir_graph *b;
  int *member_of;   /* by body value id: member index of its defining node, or -1 */
  int nmem;
  const ir_node **mem;
  int *src;         /* JIT_EW_MAX_IN per member */
  int *view_of;     /* by body value id: index in view of the slice making it, or -1 */
  int nview;
  const ir_node **view; /* slices the members read in place: input b->ninputs + k */
} fctx;

/* A member operand's source that is the value of the node collect skipped
 * (the matmul of a GEMM epilogue, the softmax of a prologue). */
#define SRC_SKIP INT32_MIN

/* Members = the body's elementwise nodes (all but `skip` and the slices a
 * matmul `skip` reads in place), their operand sources: member results, or
 * input buffers (-1 - input index), a slice read in place being input
 * b->ninputs + its index in c->view; a value of `skip` is SRC_SKIP. */
static int collect(fctx *c, const ir_node *skip) {
  const ir_graph *b = c->b;
  for (int i = 0; i < b->nvalues; i++) c->member_of[i] = c->view_of[i] = -1;
  for (int i = 0; i < b->nnodes; i++) {
    const ir_node *n = b->nodes[i];
    /* the matmul, and the slices it reads in place (matmul_operand) */
    if (n == skip || (skip && skip->op == IR_OP_MATMUL && ir_node_is_slice(n))) continue;
    if (ir_node_is_slice(n)) { /* an input read in place (slice_in_place) */
      c->view_of[n->out[0]->id] = c->nview;
      c->view[c->nview++] = n;
      continue;
    }
    if (!ew_member(n) || n->nin > JIT_EW_MAX_IN)
      return jit_fn_error(c->f, "mo.fused: mo.%s cannot be fused here", ir_op_get(n->op)->name);
    int k = c->nmem++;
    c->mem[k] = n;
    for (int j = 0; j < n->nin; j++) {
      const ir_value *v = n->in[j];
      int s;
      if (v->id >= 0 && v->id < b->nvalues && c->member_of[v->id] >= 0) s = c->member_of[v->id];
      else if (skip && v->def == skip) s = SRC_SKIP;
      else if (v->id >= 0 && v->id < b->nvalues && c->view_of[v->id] >= 0)
        s = -1 - (b->ninputs + c->view_of[v->id]);
      else if ((s = ir_graph_input_index(b, v)) >= 0) s = -1 - s;
      else return jit_fn_error(c->f, "mo.fused: operand %d of mo.%s comes from nowhere", j,
                               ir_op_get(n->op)->name);
      c->src[JIT_EW_MAX_IN * k + j] = s;
    }
    c->member_of[n->out[0]->id] = k;
  }
  return 0;
}

/* The buffers a group's members read: the body's inputs, then the slices
 * read in place (c->view). Arrays of b->ninputs + c->nview entries, freed
 * with inputs_free. */
typedef struct group_inputs {
  int n;
  const ir_type **types;
  LLVMValueRef *ptrs;
  const LLVMValueRef **strides;
  LLVMValueRef (*own)[IR_MAX_RANK];
} group_inputs;

static int slice_in_place(fctx *c, const ir_node *s, LLVMValueRef *ptr, LLVMValueRef *strides);

static void inputs_free(group_inputs *in) {
  free(in->types);
  free(in->ptrs);
  free(in->strides);
  free(in->own);
}

static int inputs_make(fctx *c, group_inputs *in) {
  int nin = c->b->ninputs;
  in->n = nin + c->nview;
  in->types = calloc((size_t)in->n + 1, sizeof *in->types);
  in->ptrs = calloc((size_t)in->n + 1, sizeof *in->ptrs);
  in->strides = calloc((size_t)in->n + 1, sizeof *in->strides);
  in->own = calloc((size_t)c->nview + 1, sizeof *in->own);
  if (!in->types || !in->ptrs || !in->strides || !in->own)
    return jit_fn_error(c->f, "out of memory");
  for (int i = 0; i < nin; i++) {
    in->types[i] = &c->b->inputs[i]->type;
    in->ptrs[i] = jit_in(c->f, i);
  }
  for (int k = 0; k < c->nview; k++) {
    in->types[nin + k] = &c->view[k]->out[0]->type;
    in->strides[nin + k] = in->own[k];
    if (slice_in_place(c, c->view[k], &in->ptrs[nin + k], in->own[k]) < 0) return -1;
  }
  return 0;
}

static int lower_ew(fctx *c) {
  jit_fn *f = c->f;
  const ir_graph *b = c->b;
  if (collect(c, NULL) < 0) return -1;
  const ir_type *shape = &b->outputs[0]->type;
  for (int k = 0; k < c->nmem; k++)
    if (!ir_type_same_shape(&c->mem[k]->out[0]->type, shape))
      return jit_fn_error(f, "mo.fused: a member's result shape differs from the group's");
  int nout = b->noutputs;
  group_inputs in = {0};
  LLVMValueRef *out_ptrs = calloc((size_t)nout + 1, sizeof *out_ptrs);
  int *out_node = calloc((size_t)nout + 1, sizeof *out_node);
  int rc = -1;
  if (!out_ptrs || !out_node) {
    jit_fn_error(f, "out of memory");
    goto done;
  }
  if (inputs_make(c, &in) < 0) goto done;
  for (int o = 0; o < nout; o++) {
    const ir_value *v = b->outputs[o];
    if (v->id < 0 || v->id >= b->nvalues || c->member_of[v->id] < 0) {
      jit_fn_error(f, "mo.fused: output %d is not computed by the group", o);
      goto done;
    }
    out_node[o] = c->member_of[v->id];
    out_ptrs[o] = jit_out(f, o);
  }
  jit_ew_group G = {.nnodes = c->nmem, .nodes = c->mem, .src = c->src, .nin = in.n,
                    .in_types = in.types, .in_ptrs = in.ptrs, .in_strides = in.strides,
                    .nout = nout, .out_node = out_node, .out_ptrs = out_ptrs, .shape = shape};
  rc = jit_emit_ew_group(f, &G);
done:
  inputs_free(&in);
  free(out_ptrs);
  free(out_node);
  return rc;
}

/* ---- GEMM epilogue ---- */

/* ctx layout (i64 slots), per input buffer i: 4i pointer, 4i+1 batch offset,
 * 4i+2 stride along M, 4i+3 stride along N. */
static LLVMValueRef slot(jit_fn *f, LLVMValueRef ctx, int k) {
  LLVMValueRef idx = jit_i64(f, k);
  return LLVMBuildInBoundsGEP2(f->b, f->t_i64, ctx, &idx, 1, "");
}

static LLVMValueRef load_slot(jit_fn *f, LLVMValueRef ctx, int k, LLVMTypeRef t) {
  LLVMValueRef v = LLVMBuildLoad2(f->b, t, slot(f, ctx, k), "");
  LLVMSetAlignment(v, 8);
  return v;
}

/* A stride known at compile time is used as a constant in the epilogue;
 * otherwise it is read from its ctx slot. */
static LLVMValueRef stride_in_epi(jit_fn *f, LLVMValueRef kernel_val, LLVMValueRef ctx, int k) {
  if (LLVMIsAConstantInt(kernel_val)) return kernel_val;
  return load_slot(f, ctx, k, f->t_i64);
}

/* Emit the epilogue function into f->mod: the members at each element of a
 * block, the matmul's value read from C, the group's result written back. */
static LLVMValueRef emit_epilogue(fctx *c, const ir_node *mm, const int *used,
                                  LLVMValueRef (*st)[IR_MAX_RANK], int r, int root) {
  jit_fn *f = c->f;
  const ir_graph *b = c->b;
  ir_dtype dt = mm->out[0]->type.dtype;
  LLVMTypeRef params[7] = {f->t_ptr, f->t_i64, f->t_i64, f->t_i64, f->t_i64, f->t_ptr, f->t_i64};
  LLVMTypeRef ety = LLVMFunctionType(f->t_void, params, 7, 0);
  size_t klen = 0;
  const char *kname = f->kernel ? LLVMGetValueName2(f->kernel, &klen) : "kernel";
  char name[200];
  snprintf(name, sizeof name, "%.*s.epi", (int)(klen < 180 ? klen : 180), kname);
  LLVMValueRef E = LLVMAddFunction(f->mod, name, ety);
  LLVMSetLinkage(E, LLVMInternalLinkage);
  jit_template_retarget(f, E);

  /* emit into E with f's helpers: swap the function, keep the rest */
  LLVMValueRef save_fn = f->fn, save_fail_code = f->fail_code;
  LLVMBasicBlockRef save_bb = LLVMGetInsertBlock(f->b), save_fail = f->fail_bb;
  f->fn = E;
  f->fail_bb = NULL;
  f->fail_code = NULL;
  LLVMPositionBuilderAtEnd(f->b, LLVMAppendBasicBlockInContext(f->ctx, E, "entry"));
  LLVMValueRef ctx = LLVMGetParam(E, 0), i0 = LLVMGetParam(E, 1), j0 = LLVMGetParam(E, 2);
  LLVMValueRef m = LLVMGetParam(E, 3), n = LLVMGetParam(E, 4), C = LLVMGetParam(E, 5);
  LLVMValueRef ldc = LLVMGetParam(E, 6);
  int nin = b->ninputs;
  LLVMValueRef *ptr = calloc((size_t)nin + 1, sizeof *ptr);
  LLVMValueRef *boff = calloc((size_t)nin + 1, sizeof *boff);
  LLVMValueRef *sm = calloc((size_t)nin + 1, sizeof *sm);
  LLVMValueRef *sn = calloc((size_t)nin + 1, sizeof *sn);
  LLVMValueRef *row = calloc((size_t)nin + 1, sizeof *row);
  LLVMValueRef *reg = calloc((size_t)c->nmem + 1, sizeof *reg);
  LLVMValueRef *loaded = calloc((size_t)nin + 1, sizeof *loaded);
  if (!ptr || !boff || !sm || !sn || !row || !reg || !loaded) {
    jit_fn_error(f, "out of memory");
    goto out;
  }
  for (int i = 0; i < nin; i++) {
    if (!used[i]) continue;
    ptr[i] = load_slot(f, ctx, 4 * i, f->t_ptr);
    boff[i] = load_slot(f, ctx, 4 * i + 1, f->t_i64);
    sm[i] = stride_in_epi(f, st[i][r - 2], ctx, 4 * i + 2);
    sn[i] = stride_in_epi(f, st[i][r - 1], ctx, 4 * i + 3);
  }
  jit_loop LI, LJ;
  LLVMValueRef i = jit_loop_begin(f, &LI, jit_i64(f, 0), m, "ei");
  LLVMValueRef gi = jit_add(f, i0, i);
  LLVMValueRef crow = jit_mul(f, i, ldc);
  for (int k = 0; k < nin; k++)
    if (used[k]) row[k] = jit_add(f, boff[k], jit_mul(f, gi, sm[k]));
  LLVMValueRef j = jit_loop_begin(f, &LJ, jit_i64(f, 0), n, "ej");
  LLVMValueRef gj = jit_add(f, j0, j);
  LLVMValueRef cidx = jit_add(f, crow, j);
  LLVMValueRef cval = jit_load(f, dt, C, cidx);
  for (int k = 0; k < c->nmem && !f->failed; k++) {
    const ir_node *mn = c->mem[k];
    LLVMValueRef v[JIT_EW_MAX_IN];
    for (int q = 0; q < mn->nin; q++) {
      int s = c->src[JIT_EW_MAX_IN * k + q];
      if (s >= 0) {
        v[q] = reg[s];
      } else if (s == SRC_SKIP) {
        v[q] = cval;
      } else {
        int bi = -1 - s;
        if (!loaded[bi])
          loaded[bi] = jit_load(f, b->inputs[bi]->type.dtype, ptr[bi],
                                jit_add(f, row[bi], jit_mul(f, gj, sn[bi])));
        v[q] = loaded[bi];
      }
    }
    reg[k] = jit_ew_compute(f, mn, v);
  }
  if (!f->failed) jit_store(f, dt, C, cidx, reg[root]);
  jit_ew_loop_end(f, &LJ, c->mem, c->nmem);
  jit_loop_end(f, &LI);
  LLVMBuildRetVoid(f->b);
  if (f->fail_bb) jit_fn_error(f, "mo.fused: a GEMM epilogue cannot fail (integer mod)");
out:
  free(ptr);
  free(boff);
  free(sm);
  free(sn);
  free(row);
  free(reg);
  free(loaded);
  f->fn = save_fn;
  f->fail_bb = save_fail;
  f->fail_code = save_fail_code;
  LLVMPositionBuilderAtEnd(f->b, save_bb);
  return E;
}

/* Where slice s of the body's input lies: *ptr at its first element,
 * strides[a] for each of its axes (attribute bounds, or data bounds read
 * from their input buffers at run time). */
static int slice_in_place(fctx *c, const ir_node *s, LLVMValueRef *ptr, LLVMValueRef *strides) {
  jit_fn *f = c->f;
  if (s->nin > 5) return jit_fn_error(f, "mo.fused: malformed slice");
  LLVMValueRef bufs[5] = {NULL}, base;
  for (int j = 0; j < s->nin; j++) {
    int q = ir_graph_input_index(c->b, s->in[j]);
    if (q < 0) return jit_fn_error(f, "mo.fused: a slice read in place must read inputs");
    bufs[j] = jit_in(f, q);
  }
  int rc = s->op == IR_OP_SLICE_TENSOR ? jit_slice_layout(f, s, &base, strides)
                                       : jit_slice_data_layout(f, s, bufs, &base, strides);
  if (rc < 0) return -1;
  *ptr = LLVMBuildInBoundsGEP2(f->b, jit_mem_type(f, s->out[0]->type.dtype), bufs[0], &base, 1,
                               "");
  return 0;
}

/* Operand k of matmul mm: a body input (its buffer), or a slice of one
 * that the GEMM reads in place (fuse.c takes in only slices whose last axis
 * has step 1: constant attributes, or constant step / axes operands, whose
 * buffers hold those constants): the pointer to its first element and its
 * strides go to ip. */
static int matmul_operand(fctx *c, const ir_node *mm, int k, LLVMValueRef *ptr,
                          jit_matmul_in_place *ip) {
  jit_fn *f = c->f;
  const ir_value *v = mm->in[k];
  int i = ir_graph_input_index(c->b, v);
  if (i >= 0) {
    *ptr = jit_in(f, i);
    return 0;
  }
  const ir_node *s = v->def;
  if (!s || !ir_node_is_slice(s))
    return jit_fn_error(f, "mo.fused: the matmul's operands must be inputs or slices of inputs");
  if (slice_in_place(c, s, ptr, ip->strides[k]) < 0) return -1;
  int r = v->type.rank;
  if (s->op == IR_OP_SLICE_TENSOR && (!LLVMIsAConstantInt(ip->strides[k][r - 1]) ||
                                      LLVMConstIntGetSExtValue(ip->strides[k][r - 1]) != 1))
    return jit_fn_error(f, "mo.fused: a slice the matmul reads in place needs step 1 on its "
                           "last axis");
  ip->strides[k][r - 1] = jit_i64(f, 1);
  ip->on[k] = true;
  return 0;
}

/* A matmul reading slices in place, with no epilogue. */
static int lower_gemm_alone(fctx *c, const ir_node *mm) {
  jit_fn *f = c->f;
  const ir_graph *b = c->b;
  if (b->noutputs != 1 || f->node->nout != 1 || b->outputs[0] != mm->out[0])
    return jit_fn_error(f, "mo.fused: a matmul group has one result, the matmul's");
  for (int i = 0; i < b->nnodes; i++)
    if (b->nodes[i] != mm && !ir_node_is_slice(b->nodes[i]))
      return jit_fn_error(f, "mo.fused: mo.%s cannot be fused here",
                          ir_op_get(b->nodes[i]->op)->name);
  jit_matmul_in_place ip = {{false, false}, {{NULL}}};
  LLVMValueRef A, B;
  if (matmul_operand(c, mm, 0, &A, &ip) < 0 || matmul_operand(c, mm, 1, &B, &ip) < 0) return -1;
  return jit_emit_matmul(f, mm, A, B, jit_out(f, 0), NULL, &ip);
}

static int lower_gemm_epilogue(fctx *c, const ir_node *mm) {
  jit_fn *f = c->f;
  const ir_graph *b = c->b;
  if (collect(c, mm) < 0) return -1;
  const ir_type *rt = &mm->out[0]->type;
  int r = rt->rank, nin = b->ninputs;
  ir_dtype dt = rt->dtype;
  if (b->noutputs != 1 || f->node->nout != 1)
    return jit_fn_error(f, "mo.fused: a GEMM epilogue group has one result");
  if (c->nview > 0)
    return jit_fn_error(f, "mo.fused: a GEMM epilogue reads no slice in place");
  const ir_value *out = b->outputs[0];
  int root = out->id >= 0 && out->id < b->nvalues ? c->member_of[out->id] : -1;
  if (root < 0 || out->type.dtype != dt || !ir_type_same_shape(&out->type, rt) || r < 2 ||
      (dt != IR_DT_F32 && dt != IR_DT_F64))
    return jit_fn_error(f, "mo.fused: the epilogue's result must be an f32 / f64 member of the "
                           "matmul's shape and dtype");
  for (int k = 0; k < c->nmem; k++) {
    if (!ir_type_same_shape(&c->mem[k]->out[0]->type, rt))
      return jit_fn_error(f, "mo.fused: an epilogue member's shape differs from the matmul's");
    if (ir_node_ew_can_fail(c->mem[k]))
      return jit_fn_error(f, "mo.fused: integer mo.%s cannot be in a GEMM epilogue",
                          ir_op_get(c->mem[k]->op)->name);
  }

  int *used = calloc((size_t)nin + 1, sizeof *used);
  LLVMValueRef (*st)[IR_MAX_RANK] = calloc((size_t)nin + 1, sizeof *st);
  LLVMValueRef (*bst)[IR_MAX_RANK] = calloc((size_t)nin + 1, sizeof *bst);
  LLVMValueRef *slots = calloc((size_t)nin + 1, sizeof *slots);
  int rc = -1;
  if (!used || !st || !bst || !slots) {
    jit_fn_error(f, "out of memory");
    goto done;
  }
  for (int k = 0; k < c->nmem; k++)
    for (int q = 0; q < c->mem[k]->nin; q++)
      if (c->src[JIT_EW_MAX_IN * k + q] < 0 && c->src[JIT_EW_MAX_IN * k + q] != SRC_SKIP)
        used[-1 - c->src[JIT_EW_MAX_IN * k + q]] = 1;
  /* the ctx the epilogue reads: pointers and strides now, batch offsets
   * before each batch's GEMM (jit_emit_matmul) */
  LLVMValueRef ctx = jit_alloca(f, LLVMArrayType(f->t_i64, (unsigned)(4 * nin + 1)), "epi.ctx");
  int nused = 0;
  for (int i = 0; i < nin; i++) {
    if (!used[i]) continue;
    const ir_type *t = &b->inputs[i]->type;
    if (t->rank > r) {
      jit_fn_error(f, "mo.fused: input %d has a higher rank than the matmul's result", i);
      goto done;
    }
    jit_bcast_strides(f, t, rt, st[i]);
    LLVMSetAlignment(LLVMBuildStore(f->b, jit_in(f, i), slot(f, ctx, 4 * i)), 8);
    LLVMSetAlignment(LLVMBuildStore(f->b, st[i][r - 2], slot(f, ctx, 4 * i + 2)), 8);
    LLVMSetAlignment(LLVMBuildStore(f->b, st[i][r - 1], slot(f, ctx, 4 * i + 3)), 8);
    memcpy(bst[nused], st[i], sizeof st[i]);
    slots[nused++] = slot(f, ctx, 4 * i + 1);
  }
  LLVMValueRef E = emit_epilogue(c, mm, used, st, r, root);
  if (f->failed) goto done;
  jit_gemm_epi epi = {E, ctx, nused, bst, slots};
  jit_matmul_in_place ip = {{false, false}, {{NULL}}};
  LLVMValueRef A, B;
  if (matmul_operand(c, mm, 0, &A, &ip) < 0 || matmul_operand(c, mm, 1, &B, &ip) < 0) goto done;
  rc = jit_emit_matmul(f, mm, A, B, jit_out(f, 0), &epi, &ip);
done:
  free(used);
  free(st);
  free(bst);
  free(slots);
  return rc;
}

/* ---- softmax prologue ---- */

/* The body: elementwise members computing the operand of one mo.softmax /
 * mo.logsoftmax, the group's result (jit_emit_softmax writes each row of
 * the operand into the result, then normalizes it there). */
static int lower_softmax_prologue(fctx *c, const ir_node *sm) {
  jit_fn *f = c->f;
  const ir_graph *b = c->b;
  if (collect(c, sm) < 0) return -1;
  if (b->noutputs != 1 || f->node->nout != 1 || b->outputs[0] != sm->out[0])
    return jit_fn_error(f, "mo.fused: a softmax group has one result, the softmax's");
  const ir_type *shape = &sm->in[0]->type;
  for (int k = 0; k < c->nmem; k++) {
    if (!ir_type_same_shape(&c->mem[k]->out[0]->type, shape))
      return jit_fn_error(f, "mo.fused: a prologue member's shape differs from the softmax's");
    for (int q = 0; q < c->mem[k]->nin; q++)
      if (c->src[JIT_EW_MAX_IN * k + q] == SRC_SKIP)
        return jit_fn_error(f, "mo.fused: a member reads the softmax's result");
  }
  const ir_value *x = sm->in[0];
  int root = x->id >= 0 && x->id < b->nvalues ? c->member_of[x->id] : -1;
  if (root < 0) {
    int ix = ir_graph_input_index(b, x);
    if (ix < 0 || c->nmem > 0)
      return jit_fn_error(f, "mo.fused: the softmax's operand comes from nowhere");
    return jit_emit_softmax(f, sm, jit_in(f, ix), jit_out(f, 0), NULL);
  }
  group_inputs in = {0};
  int rc = inputs_make(c, &in);
  if (rc == 0) {
    jit_ew_group G = {.nnodes = c->nmem, .nodes = c->mem, .src = c->src, .nin = in.n,
                      .in_types = in.types, .in_ptrs = in.ptrs, .in_strides = in.strides,
                      .nout = 1, .out_node = &root, .shape = shape};
    rc = jit_emit_softmax(f, sm, NULL, jit_out(f, 0), &G);
  }
  inputs_free(&in);
  return rc;
}

static bool is_softmax(const ir_node *n) {
  return n->op == IR_OP_SOFTMAX || n->op == IR_OP_LOGSOFTMAX;
}

int jit_lower_fused(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_graph *b = n ? n->body : NULL;
  if (!b || b->ninputs != n->nin || b->noutputs != n->nout || b->noutputs < 1 || b->nnodes < 1)
    return jit_fn_error(f, "mo.fused: no body matching the node");
  if (b->nsyms != f->nsyms)
    return jit_fn_error(f, "mo.fused: the body has %d symbols, the kernel %d", b->nsyms, f->nsyms);
  const ir_node *mm = NULL, *sm = NULL;
  for (int i = 0; i < b->nnodes; i++) {
    const ir_node *m = b->nodes[i];
    if (is_softmax(m)) {
      if (sm) return jit_fn_error(f, "mo.fused: at most one softmax per group");
      sm = m;
    }
    if (m->op != IR_OP_MATMUL) continue;
    if (mm) return jit_fn_error(f, "mo.fused: at most one matmul per group");
    mm = m;
  }
  if (mm && sm) return jit_fn_error(f, "mo.fused: a matmul and a softmax in one group");
  fctx c = {f, b, calloc((size_t)b->nvalues + 1, sizeof(int)), 0,
            calloc((size_t)b->nnodes + 1, sizeof(ir_node *)),
            calloc(JIT_EW_MAX_IN * ((size_t)b->nnodes + 1), sizeof(int)),
            calloc((size_t)b->nvalues + 1, sizeof(int)), 0,
            calloc((size_t)b->nnodes + 1, sizeof(ir_node *))};
  int rc;
  if (!c.member_of || !c.mem || !c.src || !c.view_of || !c.view)
    rc = jit_fn_error(f, "out of memory");
  else if (mm && b->outputs[0] == mm->out[0]) rc = lower_gemm_alone(&c, mm);
  else if (mm) rc = lower_gemm_epilogue(&c, mm);
  else rc = sm ? lower_softmax_prologue(&c, sm) : lower_ew(&c);
  free(c.member_of);
  free(c.mem);
  free(c.src);
  free(c.view_of);
  free(c.view);
  return rc;
}
