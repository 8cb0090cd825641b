/* emit.c - the helpers every lowering builds kernels with (lower.h): the
 * kernel function skeleton, types and constants, dims read from %syms,
 * buffer access, counted loops, data-error exits and intrinsic / libm calls.
 *
 * Shape of a kernel `name` for a node with B buffers:
 *   define i32 @name(ptr noalias readonly %buffers, ptr noalias readonly %syms)
 *     loads buffers[0..B) and tail-calls
 *   define internal i32 @name.body(ptr %buffers, ptr %syms, ptr noalias %b0, ...)
 *     alwaysinline; this is f->fn, where lowerings emit. Its entry block loads
 *     every symbol value once (f->sym_vals), so jit_dim's results dominate
 *     every block of the body.
 * Inlining the body turns the noalias params into alias scopes: LLVM then
 * knows outputs never alias inputs (the runtime guarantees it) and vectorizes
 * loops without run-time overlap checks.
 *
 * Errors (an unknown intrinsic, a buffer index out of range, a malformed dim)
 * are internal mistakes of a lowering, never aborts: they fill f->err, set
 * f->failed and return a poison value of the expected type so emission can
 * continue until the caller checks. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "lower.h"

int jit_fn_error(jit_fn *f, const char *fmt, ...) {
  if (!f->failed && f->err && f->errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, f->errlen, fmt, ap);
    va_end(ap);
  }
  f->failed = true;
  return -1;
}

static void add_fn_attr(jit_fn *f, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name,
                        uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (kind == 0) return; /* unknown to this LLVM: an optimization hint only */
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(f->ctx, kind, val));
}

void jit_fn_begin(jit_fn *f, LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g,
                  const ir_node *n, const char *name, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  f->mod = mod;
  f->g = g;
  f->node = n;
  f->err = err;
  f->errlen = errlen;
  f->t_void = LLVMVoidTypeInContext(ctx);
  f->t_i1 = LLVMInt1TypeInContext(ctx);
  f->t_i8 = LLVMInt8TypeInContext(ctx);
  f->t_i16 = LLVMInt16TypeInContext(ctx);
  f->t_i32 = LLVMInt32TypeInContext(ctx);
  f->t_i64 = LLVMInt64TypeInContext(ctx);
  f->t_ptr = LLVMPointerTypeInContext(ctx, 0);
  f->t_f16 = LLVMHalfTypeInContext(ctx);
  f->t_bf16 = LLVMBFloatTypeInContext(ctx);
  f->t_f32 = LLVMFloatTypeInContext(ctx);
  f->t_f64 = LLVMDoubleTypeInContext(ctx);
  f->b = LLVMCreateBuilderInContext(ctx);

  /* a node that defines a symbol from data gets a last buffer: the i64 the
   * kernel stores the symbol's value in (jit.h) */
  int nbufs = n ? n->nin + n->nout + (ir_node_data_sym(n) >= 0) : 0;
  int nsyms = g ? g->nsyms : 0;
  f->nbufs = nbufs;
  f->nsyms = nsyms;
  f->bufs = calloc((size_t)nbufs + 1, sizeof *f->bufs);
  f->sym_vals = calloc((size_t)nsyms + 1, sizeof *f->sym_vals);
  if (!f->bufs || !f->sym_vals) jit_fn_error(f, "out of memory");

  /* The exported wrapper (its body is emitted by jit_fn_finish, once the
   * lowering has said whether it splits its work). */
  LLVMTypeRef kparams[4] = {f->t_ptr, f->t_ptr, f->t_i64, f->t_i64};
  LLVMTypeRef kty = LLVMFunctionType(f->t_i32, kparams, 4, 0);
  f->kernel = LLVMAddFunction(mod, name, kty);
  add_fn_attr(f, f->kernel, LLVMAttributeFunctionIndex, "nounwind", 0);
  for (unsigned p = 1; p <= 2; p++) {
    add_fn_attr(f, f->kernel, p, "noalias", 0);
    add_fn_attr(f, f->kernel, p, "nocapture", 0);
    add_fn_attr(f, f->kernel, p, "readonly", 0);
  }

  /* The body, taking the buffer pointers as noalias params, then part and
   * nparts. */
  int nb = f->bufs ? nbufs : 0;
  LLVMTypeRef *bparams = malloc(sizeof *bparams * ((size_t)nb + 4));
  char *bname = malloc(strlen(name) + 8);
  if (!bparams || !bname) {
    jit_fn_error(f, "out of memory");
    free(bparams);
    free(bname);
    nb = 0;
    bparams = NULL;
    bname = NULL;
  }
  LLVMTypeRef local_params[4];
  LLVMTypeRef *params = bparams ? bparams : local_params;
  for (int i = 0; i < nb + 2; i++) params[i] = f->t_ptr;
  params[nb + 2] = params[nb + 3] = f->t_i64;
  if (bname) sprintf(bname, "%s.body", name);
  f->body_type = LLVMFunctionType(f->t_i32, params, (unsigned)nb + 4, 0);
  f->fn = LLVMAddFunction(mod, bname ? bname : "kiln.body", f->body_type);
  free(bparams);
  free(bname);
  LLVMSetLinkage(f->fn, LLVMInternalLinkage);
  add_fn_attr(f, f->fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  add_fn_attr(f, f->fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  for (unsigned p = 1; p <= 2; p++) {
    add_fn_attr(f, f->fn, p, "noalias", 0);
    add_fn_attr(f, f->fn, p, "nocapture", 0);
    add_fn_attr(f, f->fn, p, "readonly", 0);
  }
  f->buffers = LLVMGetParam(f->fn, 0);
  f->syms = LLVMGetParam(f->fn, 1);
  LLVMSetValueName2(f->buffers, "buffers", 7);
  LLVMSetValueName2(f->syms, "syms", 4);
  for (int i = 0; i < nb; i++) {
    unsigned p = (unsigned)i + 3;
    add_fn_attr(f, f->fn, p, "noalias", 0);
    add_fn_attr(f, f->fn, p, "nocapture", 0);
    if (i < n->nin) add_fn_attr(f, f->fn, p, "readonly", 0);
    f->bufs[i] = LLVMGetParam(f->fn, (unsigned)i + 2);
    char pn[32];
    if (i < n->nin)
      snprintf(pn, sizeof pn, "in%d", i);
    else if (i < n->nin + n->nout)
      snprintf(pn, sizeof pn, "out%d", i - n->nin);
    else
      snprintf(pn, sizeof pn, "data_sym");
    LLVMSetValueName2(f->bufs[i], pn, strlen(pn));
  }
  f->part = LLVMGetParam(f->fn, (unsigned)nb + 2);
  f->nparts = LLVMGetParam(f->fn, (unsigned)nb + 3);
  LLVMSetValueName2(f->part, "part", 4);
  LLVMSetValueName2(f->nparts, "nparts", 6);

  /* Body entry: symbol values once. */
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, f->fn, "entry");
  LLVMPositionBuilderAtEnd(f->b, entry);
  if (f->sym_vals) {
    for (int k = 0; k < nsyms; k++) {
      LLVMValueRef idx = LLVMConstInt(f->t_i64, (unsigned long long)k, 0);
      LLVMValueRef slot = LLVMBuildInBoundsGEP2(f->b, f->t_i64, f->syms, &idx, 1, "");
      const char *sn = g->syms[k] ? g->syms[k] : "sym";
      LLVMValueRef v = LLVMBuildLoad2(f->b, f->t_i64, slot, sn);
      LLVMSetAlignment(v, 8);
      f->sym_vals[k] = v;
    }
  }
}

/* The wrapper: load the buffer pointers, call the body with part / nparts.
 * A body that never split its work (no jit_split_range) runs whole in part 0;
 * the other parts return 0 at once. */
static void emit_wrapper(jit_fn *f) {
  int nb = f->bufs ? f->nbufs : 0;
  LLVMBasicBlockRef kentry = LLVMAppendBasicBlockInContext(f->ctx, f->kernel, "entry");
  LLVMPositionBuilderAtEnd(f->b, kentry);
  LLVMValueRef part = LLVMGetParam(f->kernel, 2), nparts = LLVMGetParam(f->kernel, 3);
  if (!f->split) {
    LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(f->ctx, f->kernel, "run");
    LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(f->ctx, f->kernel, "skip");
    LLVMValueRef first = LLVMBuildICmp(f->b, LLVMIntEQ, part, LLVMConstInt(f->t_i64, 0, 0), "");
    LLVMBuildCondBr(f->b, first, run, skip);
    LLVMPositionBuilderAtEnd(f->b, skip);
    LLVMBuildRet(f->b, LLVMConstInt(f->t_i32, 0, 0));
    LLVMPositionBuilderAtEnd(f->b, run);
    part = LLVMConstInt(f->t_i64, 0, 0);
    nparts = LLVMConstInt(f->t_i64, 1, 0);
  }
  LLVMValueRef *args = malloc(sizeof *args * ((size_t)nb + 4));
  if (!args || f->failed) {
    if (!args) jit_fn_error(f, "out of memory");
    free(args);
    LLVMBuildRet(f->b, LLVMConstInt(f->t_i32, 0, 0));
    return;
  }
  args[0] = LLVMGetParam(f->kernel, 0);
  args[1] = LLVMGetParam(f->kernel, 1);
  for (int i = 0; i < nb; i++) {
    LLVMValueRef idx = LLVMConstInt(f->t_i64, (unsigned long long)i, 0);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(f->b, f->t_ptr, args[0], &idx, 1, "");
    LLVMValueRef p = LLVMBuildLoad2(f->b, f->t_ptr, slot, "");
    LLVMSetAlignment(p, 8);
    args[i + 2] = p;
  }
  args[nb + 2] = part;
  args[nb + 3] = nparts;
  LLVMValueRef r = LLVMBuildCall2(f->b, f->body_type, f->fn, args, (unsigned)nb + 4, "");
  LLVMBuildRet(f->b, r);
  free(args);
}

void jit_fn_finish(jit_fn *f) {
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(f->b);
  if (bb && !LLVMGetBasicBlockTerminator(bb)) LLVMBuildRet(f->b, LLVMConstInt(f->t_i32, 0, 0));
  emit_wrapper(f);
}

void jit_split_range(jit_fn *f, LLVMValueRef n, LLVMValueRef *lo, LLVMValueRef *hi) {
  /* lo(p) = (n / np) * p + min(p, n % np): near-equal ranges, no overflow. */
  f->split = true;
  LLVMValueRef q = LLVMBuildUDiv(f->b, n, f->nparts, "split.q");
  LLVMValueRef r = LLVMBuildURem(f->b, n, f->nparts, "split.r");
  LLVMValueRef bounds[2];
  for (int k = 0; k < 2; k++) {
    LLVMValueRef p = k ? LLVMBuildAdd(f->b, f->part, jit_i64(f, 1), "") : f->part;
    LLVMValueRef lt = LLVMBuildICmp(f->b, LLVMIntULT, p, r, "");
    LLVMValueRef extra = LLVMBuildSelect(f->b, lt, p, r, "");
    bounds[k] = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, q, p, ""), extra, k ? "split.hi" : "split.lo");
  }
  *lo = bounds[0];
  *hi = bounds[1];
}

int jit_each_element(jit_fn *f, jit_elem_fn elem, void *ud) {
  const ir_type *y = &f->node->out[0]->type;
  LLVMValueRef lo, hi;
  jit_split_range(f, jit_numel_range(f, y, 0, y->rank), &lo, &hi);
  jit_loop E;
  elem(f, ud, jit_loop_begin(f, &E, lo, hi, "e"));
  jit_loop_end(f, &E);
  return f->failed ? -1 : 0;
}

void jit_fn_dispose(jit_fn *f) {
  if (f->b) LLVMDisposeBuilder(f->b);
  f->b = NULL;
  if (f->tmpl_decls) LLVMDisposeModule(f->tmpl_decls);
  f->tmpl_decls = NULL;
  free(f->bufs);
  f->bufs = NULL;
  free(f->sym_vals);
  f->sym_vals = NULL;
}

/* ---- types and constants ---- */

LLVMTypeRef jit_type(jit_fn *f, ir_dtype t) {
  switch (t) {
  case IR_DT_BOOL: return f->t_i1;
  case IR_DT_SI8:
  case IR_DT_UI8: return f->t_i8;
  case IR_DT_SI16:
  case IR_DT_UI16: return f->t_i16;
  case IR_DT_SI32:
  case IR_DT_UI32: return f->t_i32;
  case IR_DT_SI64:
  case IR_DT_UI64: return f->t_i64;
  case IR_DT_F16: return f->t_f16;
  case IR_DT_BF16: return f->t_bf16;
  case IR_DT_F32: return f->t_f32;
  case IR_DT_F64: return f->t_f64;
  /* float8 kinds are storage-only: moved as raw bytes, never computed on. */
  case IR_DT_F8E4M3FN:
  case IR_DT_F8E4M3FNUZ:
  case IR_DT_F8E5M2:
  case IR_DT_F8E5M2FNUZ: return f->t_i8;
  default: break;
  }
  jit_fn_error(f, "no LLVM type for dtype %d", (int)t);
  return f->t_i8;
}

LLVMTypeRef jit_mem_type(jit_fn *f, ir_dtype t) {
  return t == IR_DT_BOOL ? f->t_i8 : jit_type(f, t);
}

LLVMValueRef jit_i64(jit_fn *f, int64_t v) {
  return LLVMConstInt(f->t_i64, (unsigned long long)v, 1);
}

LLVMValueRef jit_fconst(jit_fn *f, ir_dtype t, double v) {
  LLVMTypeRef ty = jit_type(f, t);
  LLVMTypeKind k = LLVMGetTypeKind(ty);
  if (k == LLVMIntegerTypeKind) { /* saturating, NaN -> 0: never UB in the C cast */
    long long i = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (long long)v;
    return LLVMConstInt(ty, (unsigned long long)i, 1);
  }
  return LLVMConstReal(ty, v);
}

/* ---- dims ---- */

/* x floordiv c, x ceildiv c, x mod c for a constant c > 0, floor semantics. */
static LLVMValueRef dim_divmod(jit_fn *f, ir_dim_kind kind, LLVMValueRef x, int64_t c) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef cv = jit_i64(f, c);
  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef one = jit_i64(f, 1);
  LLVMValueRef q = LLVMBuildSDiv(b, x, cv, "");
  LLVMValueRef r = LLVMBuildSRem(b, x, cv, "");
  switch (kind) {
  case IR_DIM_FLOORDIV: {
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, r, zero, "");
    return LLVMBuildSub(b, q, LLVMBuildSelect(b, neg, one, zero, ""), "");
  }
  case IR_DIM_CEILDIV: {
    LLVMValueRef pos = LLVMBuildICmp(b, LLVMIntSGT, r, zero, "");
    return LLVMBuildAdd(b, q, LLVMBuildSelect(b, pos, one, zero, ""), "");
  }
  default: {
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, r, zero, "");
    return LLVMBuildAdd(b, r, LLVMBuildSelect(b, neg, cv, zero, ""), "");
  }
  }
}

static LLVMValueRef dim_rec(jit_fn *f, const ir_dim *d, int depth) {
  if (!d || depth > 64) {
    jit_fn_error(f, "malformed dim expression");
    return jit_i64(f, 0);
  }
  switch (d->kind) {
  case IR_DIM_CONST: return jit_i64(f, d->value);
  case IR_DIM_SYM:
    if (d->sym < 0 || d->sym >= f->nsyms || !f->sym_vals) {
      jit_fn_error(f, "dim refers to symbol %d (%s) but the graph has %d symbols", d->sym,
                   d->name ? d->name : "?", f->nsyms);
      return jit_i64(f, 0);
    }
    return f->sym_vals[d->sym];
  case IR_DIM_ADD: {
    LLVMValueRef acc = jit_i64(f, 0);
    for (int i = 0; i < d->n; i++)
      acc = LLVMBuildAdd(f->b, acc, dim_rec(f, d->ops[i], depth + 1), "");
    return acc;
  }
  case IR_DIM_MUL: {
    LLVMValueRef acc = jit_i64(f, d->value);
    for (int i = 0; i < d->n; i++)
      acc = LLVMBuildMul(f->b, acc, dim_rec(f, d->ops[i], depth + 1), "");
    return acc;
  }
  case IR_DIM_FLOORDIV:
  case IR_DIM_CEILDIV:
  case IR_DIM_MOD:
    if (d->n < 1 || !d->ops || d->value <= 0) {
      jit_fn_error(f, "dim floordiv / ceildiv / mod needs a positive constant divisor");
      return jit_i64(f, 0);
    }
    return dim_divmod(f, d->kind, dim_rec(f, d->ops[0], depth + 1), d->value);
  default: break;
  }
  jit_fn_error(f, "unknown dim kind %d", (int)d->kind);
  return jit_i64(f, 0);
}

LLVMValueRef jit_dim(jit_fn *f, const ir_dim *d) { return dim_rec(f, d, 0); }

void jit_shape(jit_fn *f, const ir_type *t, LLVMValueRef *out) {
  for (int i = 0; i < t->rank; i++) out[i] = jit_dim(f, t->dims[i]);
}

LLVMValueRef jit_numel_range(jit_fn *f, const ir_type *t, int from, int to) {
  LLVMValueRef acc = jit_i64(f, 1);
  if (from < 0) from = 0;
  if (to > t->rank) to = t->rank;
  for (int i = from; i < to; i++) acc = LLVMBuildMul(f->b, acc, jit_dim(f, t->dims[i]), "");
  return acc;
}

/* ---- buffers and elements ---- */

LLVMValueRef jit_in(jit_fn *f, int i) {
  if (!f->node || i < 0 || i >= f->node->nin || !f->bufs) {
    jit_fn_error(f, "operand %d out of range", i);
    return LLVMGetPoison(f->t_ptr);
  }
  return f->bufs[i];
}

LLVMValueRef jit_out(jit_fn *f, int i) {
  if (!f->node || i < 0 || i >= f->node->nout || !f->bufs) {
    jit_fn_error(f, "result %d out of range", i);
    return LLVMGetPoison(f->t_ptr);
  }
  return f->bufs[f->node->nin + i];
}

LLVMValueRef jit_load(jit_fn *f, ir_dtype t, LLVMValueRef base, LLVMValueRef idx) {
  LLVMTypeRef mt = jit_mem_type(f, t);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(f->b, mt, base, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(f->b, mt, p, "");
  size_t sz = ir_dtype_size(t);
  LLVMSetAlignment(v, sz ? (unsigned)sz : 1);
  if (t == IR_DT_BOOL) v = LLVMBuildICmp(f->b, LLVMIntNE, v, LLVMConstInt(f->t_i8, 0, 0), "");
  return v;
}

void jit_store(jit_fn *f, ir_dtype t, LLVMValueRef base, LLVMValueRef idx, LLVMValueRef v) {
  LLVMTypeRef mt = jit_mem_type(f, t);
  if (t == IR_DT_BOOL && LLVMTypeOf(v) != f->t_i8) v = LLVMBuildZExt(f->b, v, f->t_i8, "");
  LLVMValueRef p = LLVMBuildInBoundsGEP2(f->b, mt, base, &idx, 1, "");
  LLVMValueRef st = LLVMBuildStore(f->b, v, p);
  size_t sz = ir_dtype_size(t);
  LLVMSetAlignment(st, sz ? (unsigned)sz : 1);
}

/* ---- loops ---- */

LLVMValueRef jit_loop_begin(jit_fn *f, jit_loop *l, LLVMValueRef lo, LLVMValueRef hi,
                            const char *name) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  l->header = LLVMAppendBasicBlockInContext(f->ctx, f->fn, name);
  l->body = LLVMAppendBasicBlockInContext(f->ctx, f->fn, name);
  l->exit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, name);
  LLVMBuildBr(f->b, l->header);
  LLVMPositionBuilderAtEnd(f->b, l->header);
  l->iv = LLVMBuildPhi(f->b, f->t_i64, name);
  LLVMAddIncoming(l->iv, &lo, &pre, 1);
  LLVMValueRef c = LLVMBuildICmp(f->b, LLVMIntSLT, l->iv, hi, "");
  LLVMBuildCondBr(f->b, c, l->body, l->exit);
  LLVMPositionBuilderAtEnd(f->b, l->body);
  l->iv_next_phi_in = NULL;
  return l->iv;
}

void jit_loop_end(jit_fn *f, jit_loop *l) {
  /* iv < hi <= INT64_MAX, so iv + 1 cannot overflow. */
  LLVMValueRef next = LLVMBuildNSWAdd(f->b, l->iv, jit_i64(f, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMBuildBr(f->b, l->header);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  l->iv_next_phi_in = next;
  LLVMPositionBuilderAtEnd(f->b, l->exit);
}

/* Mark the loop whose latch ends `latch` with !llvm.loop !0, !0 = distinct
 * !{!0, !{name[, i32 value]}} (value < 0: none); the self reference goes
 * through a temporary node. */
static void loop_hint(jit_fn *f, LLVMBasicBlockRef latch, const char *name, int value) {
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(f->ctx, NULL, 0);
  LLVMMetadataRef what[2] = {LLVMMDStringInContext2(f->ctx, name, strlen(name)),
                             LLVMValueAsMetadata(LLVMConstInt(f->t_i32, (unsigned)value, 0))};
  LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(f->ctx, what, value < 0 ? 1 : 2)};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(f->ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, loop);
  unsigned kind = LLVMGetMDKindIDInContext(f->ctx, "llvm.loop", 9);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(latch), kind, LLVMMetadataAsValue(f->ctx, loop));
}

void jit_loop_end_rolled(jit_fn *f, jit_loop *l) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  jit_loop_end(f, l);
  loop_hint(f, latch, "llvm.loop.unroll.disable", -1);
}

void jit_loop_end_interleaved(jit_fn *f, jit_loop *l, int count) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  jit_loop_end(f, l);
  loop_hint(f, latch, "llvm.loop.interleave.count", count);
}

/* ---- data errors ---- */

void jit_fail_if(jit_fn *f, LLVMValueRef cond, int code) {
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(f->b);
  if (!f->fail_bb) {
    f->fail_bb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "fail");
    LLVMPositionBuilderAtEnd(f->b, f->fail_bb);
    f->fail_code = LLVMBuildPhi(f->b, f->t_i32, "code");
    LLVMBuildRet(f->b, f->fail_code);
    LLVMPositionBuilderAtEnd(f->b, cur);
  }
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "ok");
  LLVMBuildCondBr(f->b, cond, f->fail_bb, cont);
  LLVMValueRef cv = LLVMConstInt(f->t_i32, (unsigned long long)code, 0);
  LLVMAddIncoming(f->fail_code, &cv, &cur, 1);
  LLVMPositionBuilderAtEnd(f->b, cont);
}

/* ---- calls ---- */

LLVMValueRef jit_intrinsic_n(jit_fn *f, const char *name, LLVMTypeRef *overloads, int noverloads,
                             LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    jit_fn_error(f, "unknown LLVM intrinsic %s", name);
    return LLVMGetPoison(noverloads > 0 ? overloads[0] : f->t_i32);
  }
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(f->mod, id, overloads, (size_t)noverloads);
  LLVMTypeRef fty = LLVMIntrinsicGetType(f->ctx, id, overloads, (size_t)noverloads);
  if (!decl || !fty || LLVMCountParamTypes(fty) != (unsigned)nargs) {
    jit_fn_error(f, "LLVM intrinsic %s called with %d arguments", name, nargs);
    return LLVMGetPoison(noverloads > 0 ? overloads[0] : f->t_i32);
  }
  return LLVMBuildCall2(f->b, fty, decl, args, (unsigned)nargs, "");
}

LLVMValueRef jit_intrinsic(jit_fn *f, const char *name, LLVMTypeRef overload, LLVMValueRef *args,
                           int nargs) {
  return jit_intrinsic_n(f, name, &overload, overload ? 1 : 0, args, nargs);
}

LLVMValueRef jit_libm(jit_fn *f, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs) {
  LLVMTypeRef params[4];
  if (nargs < 0 || nargs > 4) {
    jit_fn_error(f, "libm call %s with %d arguments", name, nargs);
    return LLVMGetPoison(t);
  }
  for (int i = 0; i < nargs; i++) params[i] = t;
  LLVMTypeRef fty = LLVMFunctionType(t, params, (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(f->mod, name, fty);
    /* Pure for kiln's purposes: errno is never read. */
    add_fn_attr(f, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
    add_fn_attr(f, fn, LLVMAttributeFunctionIndex, "willreturn", 0);
    add_fn_attr(f, fn, LLVMAttributeFunctionIndex, "memory", 0);
  } else if (LLVMGlobalGetValueType(fn) != fty) {
    jit_fn_error(f, "libm function %s declared twice with different types", name);
    return LLVMGetPoison(t);
  }
  return LLVMBuildCall2(f->b, fty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef jit_libc_fn(jit_fn *f, const char *name, LLVMTypeRef ty) {
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, name);
  return fn ? fn : LLVMAddFunction(f->mod, name, ty);
}

LLVMValueRef jit_alloca(jit_fn *f, LLVMTypeRef t, const char *name) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(f->fn);
  LLVMBuilderRef tmp = LLVMCreateBuilderInContext(f->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(tmp, first);
  else
    LLVMPositionBuilderAtEnd(tmp, entry);
  LLVMValueRef a = LLVMBuildAlloca(tmp, t, name);
  LLVMDisposeBuilder(tmp);
  return a;
}

LLVMValueRef jit_mul(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildNSWMul(f->b, a, b, "");
}

LLVMValueRef jit_add(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildNSWAdd(f->b, a, b, "");
}

LLVMValueRef jit_sub(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildNSWSub(f->b, a, b, "");
}

/* exp(x) for a double x with no call, so loops using it vectorize. Cody-Waite
 * reduction x = k ln2 + r (|r| <= ln2 / 2, ln2 split in a high part with
 * trailing zeros and a low part), exp(r) by its Taylor series to r^13 (the
 * first dropped term is below 5e-18 relative), then scaling by 2^k in two
 * halves so that subnormal results come out right. x is clamped to
 * [-746, 710] (beyond them the result is 0 or inf anyway); NaN stays NaN.
 * Within an ulp or two of libm's exp. */
LLVMValueRef jit_exp_f64(jit_fn *f, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef d = f->t_f64;
  LLVMValueRef lo_lim = LLVMConstReal(d, -746.0), hi_lim = LLVMConstReal(d, 710.0);
  LLVMValueRef xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, lo_lim, ""), lo_lim, x, "");
  xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, xc, hi_lim, ""), hi_lim, xc, "");
  LLVMValueRef t = LLVMBuildFMul(b, xc, LLVMConstReal(d, 1.4426950408889634), "");
  LLVMValueRef k = jit_intrinsic(f, "llvm.rint", d, &t, 1);
  LLVMValueRef nk = LLVMBuildFNeg(b, k, "");
  LLVMValueRef a1[3] = {nk, LLVMConstReal(d, 6.93147180369123816490e-01), xc};
  LLVMValueRef r = jit_intrinsic(f, "llvm.fma", d, a1, 3);
  LLVMValueRef a2[3] = {nk, LLVMConstReal(d, 1.90821492927058770002e-10), r};
  r = jit_intrinsic(f, "llvm.fma", d, a2, 3);
  LLVMValueRef p = LLVMConstReal(d, 1.0 / 6227020800.0); /* 1/13! */
  static const double inv_fact[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                    1.0 / 362880.0,    1.0 / 40320.0,    1.0 / 5040.0,
                                    1.0 / 720.0,       1.0 / 120.0,      1.0 / 24.0,
                                    1.0 / 6.0,         0.5,              1.0,
                                    1.0};
  for (size_t i = 0; i < sizeof inv_fact / sizeof inv_fact[0]; i++) {
    LLVMValueRef a[3] = {p, r, LLVMConstReal(d, inv_fact[i])};
    p = jit_intrinsic(f, "llvm.fma", d, a, 3);
  }
  LLVMValueRef ki = LLVMBuildFPToSI(b, k, f->t_i64, "");
  LLVMValueRef k1 = LLVMBuildAShr(b, ki, jit_i64(f, 1), "");
  LLVMValueRef k2 = LLVMBuildSub(b, ki, k1, "");
  LLVMValueRef half[2] = {k1, k2};
  for (int i = 0; i < 2; i++) { /* p *= 2^half[i], built from its exponent bits */
    LLVMValueRef bits = LLVMBuildShl(b, LLVMBuildAdd(b, half[i], jit_i64(f, 1023), ""),
                                     jit_i64(f, 52), "");
    p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, bits, d, ""), "");
  }
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, p, "");
}

/* ---- exp of a float, in float arithmetic (no call, so loops vectorize 16
 * wide with AVX-512) ----
 *
 * x = k ln2 + r, k = rint(x / ln2), |r| <= ln2 / 2 (Cody-Waite: ln2 split in
 * 0x1.62e4p-1, 14 fraction bits so k * hi is exact, and 0x1.7f7d1cp-20; both
 * steps are fmas). exp(r) = 1 + (r + r^2 P(r)), P of degree 4 fitted for kiln
 * with numpy (Lawson's iteratively reweighted least squares, i.e. a minimax
 * fit, of (expm1(r) - r) / r^2 on [-ln2/2, ln2/2], weighted for the relative
 * error of exp(r); fit error 3.1e-9 relative, 0.05 ulp), coefficients
 * rounded to float. */
static const double EXP_F32_P[5] = {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558f2p-5, 0x1.1239d4p-7,
                                    0x1.6a244cp-10};

/* exp(r) = 1 + (r + r^2 P(r)) for the reduced argument r = x - k ln2,
 * k = rint(x / ln2) (Cody-Waite: both steps fmas), given -k as nk. */
static LLVMValueRef exp_f32_poly(jit_fn *f, LLVMValueRef x, LLVMValueRef nk) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef t = f->t_f32;
  LLVMValueRef a1[3] = {nk, LLVMConstReal(t, 0x1.62e4p-1), x};
  LLVMValueRef r = jit_intrinsic(f, "llvm.fma", t, a1, 3);
  LLVMValueRef a2[3] = {nk, LLVMConstReal(t, 0x1.7f7d1cp-20), r};
  r = jit_intrinsic(f, "llvm.fma", t, a2, 3);
  LLVMValueRef p = LLVMConstReal(t, EXP_F32_P[4]);
  for (int i = 3; i >= 0; i--) {
    LLVMValueRef a[3] = {p, r, LLVMConstReal(t, EXP_F32_P[i])};
    p = jit_intrinsic(f, "llvm.fma", t, a, 3);
  }
  LLVMValueRef a3[3] = {LLVMBuildFMul(b, r, r, ""), p, r};
  LLVMValueRef em1 = jit_intrinsic(f, "llvm.fma", t, a3, 3);
  return LLVMBuildFAdd(b, LLVMConstReal(t, 1.0), em1, "");
}

/* exp(r) in [0.70, 1.42] of the reduced argument; *k gets k (a float). x
 * must not be NaN (rint of NaN would make fptosi poison). */
static LLVMValueRef exp_f32_reduced(jit_fn *f, LLVMValueRef x, LLVMValueRef *k) {
  LLVMValueRef y = LLVMBuildFMul(f->b, x, LLVMConstReal(f->t_f32, 0x1.715476p+0), "");
  LLVMValueRef kf = jit_intrinsic(f, "llvm.rint", f->t_f32, &y, 1);
  *k = kf;
  return exp_f32_poly(f, x, LLVMBuildFNeg(f->b, kf, ""));
}

/* 2^k for an integer k (i32) in [-126, 127], from its exponent bits. */
static LLVMValueRef pow2_f32(jit_fn *f, LLVMValueRef ki) {
  LLVMValueRef bits = LLVMBuildShl(f->b, LLVMBuildAdd(f->b, ki, LLVMConstInt(f->t_i32, 127, 0), ""),
                                   LLVMConstInt(f->t_i32, 23, 0), "");
  return LLVMBuildBitCast(f->b, bits, f->t_f32, "");
}

/* Measured over every float, against libm's double exp: within 1.014 ulp
 * of the exact value, at most 1 ulp from the correctly rounded float
 * (tests/test_fastmath.c checks that bound on a dense sample); overflow to
 * +inf and underflow to +0 exactly where the correctly rounded result does,
 * exp(-inf) = +0, exp(+inf) = +inf, NaN stays NaN. */
LLVMValueRef jit_exp_f32(jit_fn *f, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef t = f->t_f32;
  /* clamp to [-104, 89] (NaN goes to -104 here, and is put back at the end):
   * exp(-104) is below half the smallest subnormal, exp(89) overflows */
  LLVMValueRef lo = LLVMConstReal(t, -104.0), hi = LLVMConstReal(t, 89.0);
  LLVMValueRef xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, lo, ""), x, lo, "");
  xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, xc, hi, ""), xc, hi, "");
  LLVMValueRef kf;
  LLVMValueRef p = exp_f32_reduced(f, xc, &kf);
  /* times 2^k, k in [-150, 128], in two halves so that each factor is a
   * normal float and a subnormal or infinite result is rounded once */
  LLVMValueRef ki = LLVMBuildFPToSI(b, kf, f->t_i32, "");
  LLVMValueRef k1 = LLVMBuildAShr(b, ki, LLVMConstInt(f->t_i32, 1, 0), "");
  LLVMValueRef k2 = LLVMBuildSub(b, ki, k1, "");
  p = LLVMBuildFMul(b, p, pow2_f32(f, k1), "");
  p = LLVMBuildFMul(b, p, pow2_f32(f, k2), "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, p, "");
}

/* 1.5 * 2^23: y = fma(x, log2e, MAGIC) holds k = rint(x log2e) in its low
 * mantissa bits for |k| < 2^22, so k needs no rint and no fptosi (whose
 * NaN input would be poison). */
#define EXP_MAGIC 0x1.8p23
/* Below this exp is under 2^-126 (k < -126: 2^k is no normal float). */
#define EXP_NORMAL_MIN (-0x1.5d5e2ap+6) /* -87.336 = log(2^-126) */

/* exp(x) for x <= 0 (as softmax's x - max) in fewer instructions and
 * constants than jit_exp_f32 (it is the inner loop of softmax): the same
 * reduction and polynomial, so the same accuracy where exp(x) >= 2^-126,
 * with k taken from the bits of a magic-number sum and 2^k from k's bits
 * (one multiply, as k >= -126 there); below (x < -87.34, -inf included)
 * the result is +0, where jit_exp_f32 rounds to a subnormal: an absolute
 * difference under 2^-126. A NaN goes through the arithmetic as NaN (its
 * compare is false). x > 0 is outside its contract. */
LLVMValueRef jit_exp_f32_nonpos(jit_fn *f, LLVMValueRef x) {
  LLVMBuilderRef b = f->b;
  LLVMTypeRef t = f->t_f32;
  LLVMValueRef magic = LLVMConstReal(t, EXP_MAGIC);
  LLVMValueRef a[3] = {x, LLVMConstReal(t, 0x1.715476p+0), magic};
  LLVMValueRef y = jit_intrinsic(f, "llvm.fma", t, a, 3);
  LLVMValueRef p = exp_f32_poly(f, x, LLVMBuildFSub(b, magic, y, ""));
  /* 2^k = (k + 127) << 23 = (bits(y) << 23) + ((127 - bits(MAGIC)) << 23) (mod 2^32) */
  float mf = (float)EXP_MAGIC;
  uint32_t mb;
  memcpy(&mb, &mf, sizeof mb);
  LLVMValueRef bias = LLVMConstInt(f->t_i32, (uint32_t)((127u - mb) << 23), 0);
  LLVMValueRef yb = LLVMBuildBitCast(b, y, f->t_i32, "");
  LLVMValueRef sc = LLVMBuildAdd(b, LLVMBuildShl(b, yb, LLVMConstInt(f->t_i32, 23, 0), ""), bias, "");
  p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, sc, t, ""), "");
  LLVMValueRef tiny = LLVMBuildFCmp(b, LLVMRealOLT, x, LLVMConstReal(t, EXP_NORMAL_MIN), "");
  return LLVMBuildSelect(b, tiny, LLVMConstReal(t, 0.0), p, "");
}
