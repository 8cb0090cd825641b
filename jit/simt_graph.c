/* simt_graph.c - every kernel of a graph as SIMT kernels in one module
 * (simt.h: jit_simt_compile_graph), for `kiln compile --target` and for
 * loading a graph onto a device.
 *
 * Each kernel node goes through the same canonical kernel text as the CPU
 * path (ir_kernel_text, or ir_kernel_text_partial / _bound when symbols are
 * bound), parsed back (ir_parse_kernel_text) into a one-node kernel graph,
 * or for a mo.fused node into its body (a graph of several nodes, lowered
 * as one mo.fused kernel standing for the whole graph), and lowered by
 * jit_simt_lower_node; so a kernel's parameters are its own symbols (d0,
 * d1, ...), not the graph's: ir_kernel_text's sym_map gives the map. Custom
 * kernels link their library through the caller's resolver
 * (jit_simt_compile_graph_libs) and are finished by jit_simt_custom_finish.
 * Buffer ops are device copies the runtime makes, except
 * mo.mutable.store.slice, lowered from g itself (simt_buffer.c: its kernel
 * text would have chains), whose symbol parameters are g's.
 * Guarantees: a node with no SIMT lowering, a dim that does not evaluate, a
 * failed emission: -1 with a message naming the node (line and op). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../ir/parse.h"
#include "simt.h"

void jit_simt_kernel_name(const ir_graph *g, int node, char *out, size_t cap) {
  const ir_op_info *info = ir_op_get(g->nodes[node]->op);
  int n = snprintf(out, cap, "kiln_%d_%s", node, info ? info->name : "op");
  for (int i = 0; i < n && (size_t)i < cap; i++)
    if (out[i] == '.') out[i] = '_';
}

/* The kernel graph of node i (parsed canonical text); NULL with err. */
static ir_graph *kernel_graph(const ir_graph *g, int i, const int64_t *syms, const bool *bind,
                              char *err, size_t errlen) {
  const ir_node *n = g->nodes[i];
  char *text;
  int nks = 0;
  if (!syms)
    text = ir_kernel_text(g, n, NULL, &nks);
  else if (!bind)
    text = ir_kernel_text_bound(g, n, syms);
  else
    text = ir_kernel_text_partial(g, n, syms, bind, NULL, &nks);
  if (!text) {
    snprintf(err, errlen, "mo.%s at line %d: its dims do not evaluate under the binding",
             ir_op_get(n->op)->name, n->loc.line);
    return NULL;
  }
  ir_diag d = {0};
  ir_graph *kg = ir_parse_kernel_text(text, strlen(text), &d);
  free(text);
  if (!kg || ir_graph_verify(kg, &d) < 0) {
    snprintf(err, errlen, "mo.%s at line %d: kernel text does not verify: %s",
             ir_op_get(n->op)->name, n->loc.line, d.msg);
    ir_graph_free(kg);
    return NULL;
  }
  return kg;
}

int jit_simt_compile_graph(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                           const bool *bind, int only_node, bool llvm_text, void **out,
                           size_t *len, char *err, size_t errlen) {
  return jit_simt_compile_graph_libs(g, t, syms, bind, only_node, llvm_text, NULL, out, len, err,
                                     errlen);
}

/* Lower node i of g (its kernel text under the binding) into mod as the
 * kernel `name`. 0, or -1 with err naming the op. */
static int lower_into(LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g, int i,
                      const jit_simt_target *t, const int64_t *syms, const bool *bind,
                      const struct jit_libs *libs, const char *name, char *err,
                      size_t errlen) {
  const ir_node *n = g->nodes[i];
  ir_graph *kg = kernel_graph(g, i, syms, bind, err, errlen);
  if (!kg) return -1;
  /* one kernel node, or several: the text of a mo.fused node (its body),
   * lowered through a node standing for the whole kernel graph */
  const ir_node *kn = NULL;
  int nk = 0, rc = 0;
  bool custom = false;
  for (int k = 0; k < kg->nnodes; k++)
    if (!ir_node_is_source(kg->nodes[k])) {
      kn = kg->nodes[k];
      nk++;
      custom |= ir_op_get(kn->op)->cls == IR_CLS_CUSTOM;
    }
  ir_node group = {0};
  if (nk > 1) {
    group.op = IR_OP_FUSED;
    group.nin = kg->ninputs;
    group.in = kg->inputs;
    group.nout = kg->noutputs;
    group.out = kg->outputs;
    group.body = kg;
    kn = &group;
  }
  char msg[1024] = "";
  jit_simt_fn sf;
  jit_simt_begin(&sf, t, ctx, mod, kg, kn, name, JIT_SIMT_BLOCK, msg, sizeof msg);
  sf.f.libs = libs;
  if (!sf.f.failed && jit_simt_lower_node(&sf) == 0) {
    jit_simt_finish(&sf);
    if (custom && !sf.f.failed) jit_simt_custom_finish(&sf);
  }
  if (sf.f.failed) {
    snprintf(err, errlen, "mo.%s at line %d: %s", ir_op_get(n->op)->name, n->loc.line, msg);
    rc = -1;
  }
  jit_simt_dispose(&sf);
  ir_graph_free(kg);
  return rc;
}

/* Optimize and emit mod into *out (llvm_text: its IR text). */
static int finish_module(LLVMModuleRef mod, const jit_simt_target *t, bool llvm_text, void **out,
                         size_t *len, char *err, size_t errlen);

int jit_simt_compile_node(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                          const bool *bind, int node, const struct jit_libs *libs,
                          const char *fn_name, void **out, size_t *len, char *err,
                          size_t errlen) {
  *out = NULL;
  *len = 0;
  if (node < 0 || node >= g->nnodes || ir_node_is_source(g->nodes[node])) {
    snprintf(err, errlen, "node %d of graph @%s has no kernel", node, g->name ? g->name : "?");
    return -1;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, t, g->name ? g->name : "graph", err, errlen);
  int rc = mod ? lower_into(ctx, mod, g, node, t, syms, bind, libs, fn_name, err, errlen) : -1;
  if (rc == 0) rc = finish_module(mod, t, false, out, len, err, errlen);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return rc;
}

int jit_simt_compile_graph_libs(const ir_graph *g, const jit_simt_target *t, const int64_t *syms,
                                const bool *bind, int only_node, bool llvm_text,
                                const struct jit_libs *libs, void **out, size_t *len, char *err,
                                size_t errlen) {
  *out = NULL;
  *len = 0;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, t, g->name ? g->name : "graph", err, errlen);
  int rc = mod ? 0 : -1, nkernels = 0;
  for (int i = 0; rc == 0 && i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (ir_node_is_source(n) || (only_node >= 0 && i != only_node)) continue;
    bool buffer = ir_op_get(n->op)->cls == IR_CLS_BUFFER; /* copies, but for store.slice */
    if (buffer && n->op != IR_OP_MUTABLE_STORE_SLICE) continue;
    char name[64];
    jit_simt_kernel_name(g, i, name, sizeof name);
    rc = buffer ? jit_simt_store_slice_into(ctx, mod, g, i, t, name, err, errlen)
                : lower_into(ctx, mod, g, i, t, syms, bind, libs, name, err, errlen);
    nkernels++;
  }
  if (rc == 0 && nkernels == 0) {
    snprintf(err, errlen, "graph @%s has no kernels (only constants and inputs)",
             g->name ? g->name : "?");
    rc = -1;
  }
  if (rc == 0) rc = finish_module(mod, t, llvm_text, out, len, err, errlen);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return rc;
}

static int finish_module(LLVMModuleRef mod, const jit_simt_target *t, bool llvm_text, void **out,
                         size_t *len, char *err, size_t errlen) {
  int rc = 0;
  if (llvm_text) {
    if ((rc = jit_simt_optimize(mod, t, err, errlen)) == 0) {
      char *ir = LLVMPrintModuleToString(mod);
      size_t n = strlen(ir);
      if ((*out = malloc(n + 1))) {
        memcpy(*out, ir, n + 1);
        *len = n;
      } else {
        snprintf(err, errlen, "out of memory");
        rc = -1;
      }
      LLVMDisposeMessage(ir);
    }
  } else {
    rc = jit_simt_emit(mod, t, out, len, err, errlen);
  }
  return rc;
}
