/* custom.c - custom kernels (kiln/kernel.h): inspecting a kernel library's
 * bitcode or IR text (jit_lib_inspect) and lowering mo.custom /
 * mo.inplace_custom into a call of the library's function, linked into the
 * kernel's module so O3 inlines it (jit_lower_custom). Elementwise kernels
 * (KILN_ELEMENTWISE_KERNEL, the node marked kiln.elementwise) are scalar
 * functions called per element by the elementwise loops instead
 * (jit_custom_ew_call, jit_simt_custom_ew_fn).
 *
 * Assumes: the node is verified (symbol present, parameters of kind int,
 * float, bool or string, result types declared); the runtime stamped
 * kiln.library with the content hash of the library that defines the
 * symbol after checking its signature (src/kernel_lib.c). The lowering
 * checks the function's type again, since the bytes it links are what runs.
 * Guarantees: no abort on bad input: malformed bitcode, IR that does not
 * parse or verify, a missing or ill-typed function all come back as
 * messages. The library's definitions become internal to the kernel module
 * (jit_link_bitcode), so two kernels of one library never clash in the
 * JIT. The struct types built here mirror kiln/kernel.h field for field
 * (natural C layout on the host). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "custom.h"
#include "jit.h"
#include "kiln/kernel.h"
#include "simt.h"
#include "template.h"

#define ABI_VERSION KILN_KERNEL_ABI

_Static_assert(JIT_SIMT_BLOCK == KILN_SIMT_BLOCK && JIT_SIMT_MAX_GRID == KILN_SIMT_MAX_GRID &&
                   JIT_SIMT_CUSTOM_SHARED == KILN_SIMT_SHARED_BYTES,
               "kiln/kernel.h's SIMT launch constants must be the SIMT lowering's");

/* ---- inspecting a library ---- */


static bool is_bitcode(const unsigned char *p, size_t len) {
  if (len < 4) return false;
  bool raw = p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE;
  bool wrapper = p[0] == 0xDE && p[1] == 0xC0 && p[2] == 0x17 && p[3] == 0x0B;
  return raw || wrapper;
}

/* The module of data in ctx, or NULL with err. */
static LLVMModuleRef read_module(LLVMContextRef ctx, const void *data, size_t len,
                                 const char *label, char *err, size_t errlen) {
  LLVMModuleRef mod = NULL;
  if (is_bitcode(data, len)) {
    jit_diag_sink sink = {.msg = "", .error = false};
    LLVMContextSetDiagnosticHandler(ctx, jit_diag_handler, &sink);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(data, len, label, 0);
    LLVMBool bad = !buf || LLVMParseBitcodeInContext2(ctx, buf, &mod);
    if (buf) LLVMDisposeMemoryBuffer(buf);
    if (bad || !mod) {
      snprintf(err, errlen, "%s: not valid LLVM bitcode: %s", label,
               sink.msg[0] ? sink.msg : "unreadable");
      return NULL;
    }
    return mod;
  }
  /* LLVM IR text; the copy is NUL-terminated, and the parser takes it */
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len, label);
  char *msg = NULL;
  if (!buf || LLVMParseIRInContext(ctx, buf, &mod, &msg) || !mod) {
    snprintf(err, errlen, "%s: not valid LLVM IR: %s", label, msg ? msg : "out of memory");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return mod;
}

static char *dup_str(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* Whether fty is i32 (ptr), the type of int32_t (const kiln_kernel_args *). */
static bool abi_type(LLVMTypeRef fty) {
  LLVMTypeRef ret = LLVMGetReturnType(fty);
  if (LLVMGetTypeKind(ret) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(ret) != 32) return false;
  if (LLVMIsFunctionVarArg(fty) || LLVMCountParamTypes(fty) != 1) return false;
  LLVMTypeRef p;
  LLVMGetParamTypes(fty, &p);
  return LLVMGetTypeKind(p) == LLVMPointerTypeKind;
}

/* The three values of the marker global `name`, false when absent or
 * malformed. */
static bool read_marker_named(LLVMModuleRef mod, const char *name, int32_t v[3]) {
  LLVMValueRef g = LLVMGetNamedGlobal(mod, name);
  if (!g || LLVMIsDeclaration(g) || !LLVMIsGlobalConstant(g)) return false;
  LLVMValueRef init = LLVMGetInitializer(g);
  LLVMTypeRef t = init ? LLVMTypeOf(init) : NULL;
  if (!t || LLVMGetTypeKind(t) != LLVMArrayTypeKind || LLVMGetArrayLength2(t) != 3) return false;
  for (unsigned i = 0; i < 3; i++) {
    LLVMValueRef e = LLVMGetAggregateElement(init, i);
    if (!e || !LLVMIsAConstantInt(e)) return false;
    v[i] = (int32_t)LLVMConstIntGetSExtValue(e);
  }
  return true;
}

/* The kiln_abi_<fn> marker's three values, false when absent or malformed. */
static bool read_marker(LLVMModuleRef mod, const char *fn, int32_t v[3]) {
  char name[512];
  if ((size_t)snprintf(name, sizeof name, "kiln_abi_%s", fn) >= sizeof name) return false;
  return read_marker_named(mod, name, v);
}

static int list_functions(LLVMModuleRef mod, jit_lib_info *out) {
  int n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage) n++;
  out->fns = calloc((size_t)n + 1, sizeof *out->fns);
  if (!out->fns) return -1;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f) || LLVMGetLinkage(f) != LLVMExternalLinkage) continue;
    jit_lib_fn *e = &out->fns[out->nfns++];
    size_t len = 0;
    const char *nm = LLVMGetValueName2(f, &len);
    LLVMTypeRef fty = LLVMGlobalGetValueType(f);
    char *ts = LLVMPrintTypeToString(fty);
    e->name = dup_str(nm, len);
    e->type = ts ? dup_str(ts, strlen(ts)) : NULL;
    LLVMDisposeMessage(ts);
    if (!e->name || !e->type) return -1;
    e->abi_type = abi_type(fty);
    int32_t v[3];
    e->has_marker = read_marker(mod, e->name, v);
    if (e->has_marker) {
      e->abi = v[0];
      e->nin = v[1];
      e->nout = v[2];
    }
  }
  return 0;
}

void jit_lib_info_free(jit_lib_info *info) {
  if (!info) return;
  for (int i = 0; i < info->nfns; i++) {
    free(info->fns[i].name);
    free(info->fns[i].type);
  }
  free(info->fns);
  free(info->bitcode);
  memset(info, 0, sizeof *info);
}

/* Bitcode kiln itself wrote and verified before (a C library from the disk
 * cache): read lazily (function bodies stay unread), not verified again,
 * kept as it is. 0, or -1 with err. */
static int inspect_trusted(LLVMContextRef ctx, const void *data, size_t len, const char *label,
                           jit_lib_info *out, char *err, size_t errlen) {
  jit_diag_sink sink = {.msg = "", .error = false};
  LLVMContextSetDiagnosticHandler(ctx, jit_diag_handler, &sink);
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len, label);
  LLVMModuleRef mod = NULL;
  if (!buf || LLVMGetBitcodeModuleInContext2(ctx, buf, &mod) || !mod) { /* takes buf */
    snprintf(err, errlen, "%s: not valid LLVM bitcode: %s", label,
             sink.msg[0] ? sink.msg : "unreadable");
    return -1;
  }
  int rc = list_functions(mod, out);
  if (rc != 0) snprintf(err, errlen, "%s: out of memory", label);
  if (rc == 0 && !(out->bitcode = malloc(len))) {
    snprintf(err, errlen, "%s: out of memory", label);
    rc = -1;
  }
  if (rc == 0) {
    memcpy(out->bitcode, data, len);
    out->len = len;
  }
  LLVMDisposeModule(mod);
  return rc;
}

int jit_lib_inspect(const void *data, size_t len, const char *label, bool trusted,
                    jit_lib_info *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!data || len == 0) {
    snprintf(err, errlen, "%s: the library is empty", label);
    return -1;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  if (trusted && is_bitcode(data, len)) {
    int trc = inspect_trusted(ctx, data, len, label, out, err, errlen);
    LLVMContextDispose(ctx);
    if (trc != 0) jit_lib_info_free(out);
    return trc;
  }
  LLVMModuleRef mod = read_module(ctx, data, len, label, err, errlen);
  int rc = mod ? 0 : -1;
  char *msg = NULL;
  if (rc == 0 && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    snprintf(err, errlen, "%s: the LLVM module is invalid: %s", label, msg ? msg : "");
    rc = -1;
  }
  LLVMDisposeMessage(msg);
  if (rc == 0 && list_functions(mod, out) != 0) {
    snprintf(err, errlen, "%s: out of memory", label);
    rc = -1;
  }
  if (rc == 0) {
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
    size_t n = bc ? LLVMGetBufferSize(bc) : 0;
    out->bitcode = n ? malloc(n) : NULL;
    if (!out->bitcode) {
      snprintf(err, errlen, "%s: cannot write the module as bitcode", label);
      rc = -1;
    } else {
      memcpy(out->bitcode, LLVMGetBufferStart(bc), n);
      out->len = n;
    }
    if (bc) LLVMDisposeMemoryBuffer(bc);
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (rc != 0) jit_lib_info_free(out);
  return rc;
}

/* ---- lowering ---- */

/* The kiln/kernel.h structs as LLVM types. */
typedef struct abi_types {
  LLVMTypeRef tensor; /* {ptr data, ptr dims, ptr strides, i32 dtype, i32 rank} */
  LLVMTypeRef param;  /* {ptr name, i32 kind, i32 reserved, i64 i, double f, ptr s} */
  LLVMTypeRef args;   /* {ptr inputs, ptr outputs, ptr params, i32 x 4} */
} abi_types;

static abi_types make_types(jit_fn *f) {
  abi_types t;
  LLVMTypeRef tensor[5] = {f->t_ptr, f->t_ptr, f->t_ptr, f->t_i32, f->t_i32};
  LLVMTypeRef param[6] = {f->t_ptr, f->t_i32, f->t_i32, f->t_i64, f->t_f64, f->t_ptr};
  LLVMTypeRef args[7] = {f->t_ptr, f->t_ptr, f->t_ptr, f->t_i32, f->t_i32, f->t_i32, f->t_i32};
  t.tensor = LLVMStructTypeInContext(f->ctx, tensor, 5, 0);
  t.param = LLVMStructTypeInContext(f->ctx, param, 6, 0);
  t.args = LLVMStructTypeInContext(f->ctx, args, 7, 0);
  return t;
}

/* kiln's own attributes (symbol, kiln.*) are not the kernel's parameters;
 * simt_grid (the SIMT launch) is, harmlessly. */
static bool is_param(const ir_attr *a) {
  return strcmp(a->name, "symbol") != 0 && strncmp(a->name, "kiln.", 5) != 0;
}

/* A private constant global of init in address space as (GPU targets: 1,
 * global memory); its generic address. */
static LLVMValueRef const_global(jit_fn *f, LLVMValueRef init, const char *name, unsigned as) {
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(f->mod, LLVMTypeOf(init), name, as);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return as ? LLVMConstAddrSpaceCast(g, f->t_ptr) : g;
}

/* A private constant C string; its address. */
static LLVMValueRef const_string(jit_fn *f, const char *s, unsigned as) {
  LLVMValueRef init = LLVMConstStringInContext2(f->ctx, s, strlen(s), 0);
  return const_global(f, init, "kiln.str", as);
}

/* p as a generic (address space 0) pointer: allocas live in address space
 * 5 on amdgpu; elsewhere p as it is. */
static LLVMValueRef generic(jit_fn *f, LLVMValueRef p) {
  return LLVMTypeOf(p) == f->t_ptr ? p : LLVMBuildAddrSpaceCast(f->b, p, f->t_ptr, "");
}

/* The parameters as a constant table (NULL pointer when there are none). */
static LLVMValueRef param_table(jit_fn *f, const abi_types *t, int *count, unsigned as) {
  const ir_node *n = f->node;
  *count = 0;
  LLVMValueRef *rows = calloc((size_t)n->nattrs + 1, sizeof *rows);
  if (!rows) {
    jit_fn_error(f, "out of memory");
    return LLVMConstNull(f->t_ptr);
  }
  for (int i = 0; i < n->nattrs; i++) {
    const ir_attr *a = &n->attrs[i];
    if (!is_param(a)) continue;
    int kind = a->kind == IR_ATTR_INT     ? 0 /* KILN_PARAM_INT */
               : a->kind == IR_ATTR_FLOAT ? 1 /* KILN_PARAM_FLOAT */
               : a->kind == IR_ATTR_BOOL  ? 2 /* KILN_PARAM_BOOL */
                                          : 3; /* KILN_PARAM_STRING */
    int64_t iv = a->kind == IR_ATTR_INT ? a->u.i : a->kind == IR_ATTR_BOOL ? (int64_t)a->u.b : 0;
    LLVMValueRef v[6] = {
        const_string(f, a->name, as),
        LLVMConstInt(f->t_i32, (unsigned long long)kind, 0),
        LLVMConstInt(f->t_i32, 0, 0),
        LLVMConstInt(f->t_i64, (unsigned long long)iv, 1),
        LLVMConstReal(f->t_f64, a->kind == IR_ATTR_FLOAT ? a->u.f : 0.0),
        a->kind == IR_ATTR_STRING ? const_string(f, a->u.s, as) : LLVMConstNull(f->t_ptr),
    };
    rows[(*count)++] = LLVMConstStructInContext(f->ctx, v, 6, 0);
  }
  LLVMValueRef out = LLVMConstNull(f->t_ptr);
  if (*count > 0) {
    LLVMValueRef init = LLVMConstArray2(t->param, rows, (uint64_t)*count);
    out = const_global(f, init, "kiln.params", as);
  }
  free(rows);
  return out;
}

static LLVMValueRef field(jit_fn *f, LLVMTypeRef st, LLVMValueRef p, unsigned i) {
  return LLVMBuildStructGEP2(f->b, st, p, i, "");
}

static LLVMValueRef elem(jit_fn *f, LLVMTypeRef t, LLVMValueRef base, int64_t i) {
  LLVMValueRef idx = jit_i64(f, i);
  return LLVMBuildInBoundsGEP2(f->b, t, base, &idx, 1, "");
}

/* Fill tensor view `slot` for buffer ptr of type ty: dims and dense strides
 * in stack arrays (constants fold through them once inlined). */
static void fill_view(jit_fn *f, const abi_types *t, LLVMValueRef slot, LLVMValueRef ptr,
                      const ir_type *ty) {
  int r = ty->rank;
  LLVMTypeRef arr = LLVMArrayType2(f->t_i64, (uint64_t)(r > 0 ? r : 1));
  LLVMValueRef dims = jit_alloca(f, arr, "dims"), strides = jit_alloca(f, arr, "strides");
  LLVMValueRef acc = jit_i64(f, 1);
  for (int k = r - 1; k >= 0; k--) {
    LLVMValueRef d = jit_dim(f, ty->dims[k]);
    LLVMBuildStore(f->b, d, elem(f, f->t_i64, dims, k));
    LLVMBuildStore(f->b, acc, elem(f, f->t_i64, strides, k));
    acc = jit_mul(f, acc, d);
  }
  LLVMBuildStore(f->b, ptr, field(f, t->tensor, slot, 0));
  LLVMBuildStore(f->b, generic(f, dims), field(f, t->tensor, slot, 1));
  LLVMBuildStore(f->b, generic(f, strides), field(f, t->tensor, slot, 2));
  LLVMBuildStore(f->b, LLVMConstInt(f->t_i32, (unsigned long long)ty->dtype, 0),
                 field(f, t->tensor, slot, 3));
  LLVMBuildStore(f->b, LLVMConstInt(f->t_i32, (unsigned long long)r, 0),
                 field(f, t->tensor, slot, 4));
}

/* The buffers reach the kernel through memory (the views), so the body's
 * noalias / nocapture / readonly promises on them no longer hold. */
static void drop_buffer_promises(jit_fn *f) {
  static const char *const kinds[] = {"noalias", "nocapture", "readonly"};
  for (int i = 0; i < f->nbufs; i++)
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      unsigned id = LLVMGetEnumAttributeKindForName(kinds[k], strlen(kinds[k]));
      if (id) LLVMRemoveEnumAttributeAtIndex(f->fn, (unsigned)i + 3, id);
    }
}

/* Mark a library function always_inline so the kernel inlines it, unless
 * the library was built noinline (a -O0 library, optnone: it stays a call). */
static void inline_always(jit_fn *f, LLVMValueRef fn) {
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  bool no = noinline && LLVMGetEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, noinline);
  if (always && !no)
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(f->ctx, always, 0));
}

/* The library's `sym`, linked into f->mod and checked against the ABI. */
static LLVMValueRef link_kernel(jit_fn *f, const char *sym) {
  const char *hash = ir_node_attr_string(f->node, "kiln.library", NULL);
  if (!hash) {
    jit_fn_error(f, "kernel \"%s\": no kernel library is bound to it (add the library that "
                    "defines it: kiln_context_add_kernel_library, kiln run --kernels)", sym);
    return NULL;
  }
  const void *bc = NULL;
  size_t len = 0;
  if (!f->libs || !f->libs->find || f->libs->find(f->libs->ud, hash, &bc, &len) != 0) {
    jit_fn_error(f, "kernel \"%s\": its kernel library (%s) is not loaded in this context", sym,
                 hash);
    return NULL;
  }
  if (LLVMGetNamedFunction(f->mod, sym) || LLVMGetNamedGlobal(f->mod, sym)) {
    jit_fn_error(f, "kernel \"%s\": the name is taken in the kernel module", sym);
    return NULL;
  }
  char label[300];
  snprintf(label, sizeof label, "kernel library of \"%s\"", sym);
  if (jit_link_bitcode(f, bc, len, label) != 0) return NULL;
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, sym);
  if (!fn || LLVMIsDeclaration(fn)) {
    jit_fn_error(f, "kernel \"%s\": its library does not define it", sym);
    return NULL;
  }
  if (!abi_type(LLVMGlobalGetValueType(fn))) {
    jit_fn_error(f, "kernel \"%s\": its type does not fit int32_t (const kiln_kernel_args *)", sym);
    return NULL;
  }
  inline_always(f, fn);
  return fn;
}

static const ir_type *buf_type(const ir_node *n, int b) {
  return b < n->nin ? &n->in[b]->type : &n->out[b - n->nin]->type;
}

/* Build the kiln_kernel_args of f's node (views of f->bufs, parameters in
 * constant globals of address space as) and call fn with them; a non-zero
 * return fails with JIT_KERR_CUSTOM. */
static int call_kernel(jit_fn *f, LLVMValueRef fn, unsigned as) {
  const ir_node *n = f->node;
  abi_types t = make_types(f);
  int nb = f->nbufs;
  LLVMTypeRef views_t = LLVMArrayType2(t.tensor, (uint64_t)(nb > 0 ? nb : 1));
  LLVMValueRef views = jit_alloca(f, views_t, "views");
  for (int b = 0; b < nb; b++)
    fill_view(f, &t, elem(f, t.tensor, views, b), f->bufs[b], buf_type(n, b));
  int nparams = 0;
  LLVMValueRef params = param_table(f, &t, &nparams, as);
  LLVMValueRef args = jit_alloca(f, t.args, "args");
  LLVMValueRef vals[7] = {
      generic(f, elem(f, t.tensor, views, 0)),
      generic(f, elem(f, t.tensor, views, n->nin)),
      params,
      LLVMConstInt(f->t_i32, (unsigned long long)n->nin, 0),
      LLVMConstInt(f->t_i32, (unsigned long long)n->nout, 0),
      LLVMConstInt(f->t_i32, (unsigned long long)nparams, 0),
      LLVMConstInt(f->t_i32, ABI_VERSION, 0),
  };
  for (unsigned i = 0; i < 7; i++) LLVMBuildStore(f->b, vals[i], field(f, t.args, args, i));
  LLVMValueRef argp = generic(f, args);
  LLVMValueRef rc = LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, &argp, 1, "rc");
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntNE, rc, LLVMConstInt(f->t_i32, 0, 0), ""),
              JIT_KERR_CUSTOM);
  return f->failed ? -1 : 0;
}

/* ---- elementwise kernels (KILN_ELEMENTWISE_KERNEL) ----
 * A scalar function T NAME(T0, ...) of one element per operand. Host: the
 * library is linked into the kernel's module once per library (a private
 * global kiln.ewlib.<hash> records it: a fused group may call several
 * functions of one library), its definitions internal and the function
 * alwaysinline, so O3 inlines it into the loop and vectorizes what it can.
 * SIMT: linked like a SIMT kernel (simt_link). Either way the function's
 * type and marker are checked again against the node, since the bytes
 * linked are what runs. */

static bool ew_node(const ir_node *n) {
  return n->op == IR_OP_CUSTOM && ir_node_attr_int(n, "kiln.elementwise", 0) != 0;
}

/* fn's type is the node's scalar signature: result dtype (operand dtypes),
 * in register types (bool as i1). 0, or -1 with f->err. */
static int check_ew_type(jit_fn *f, const ir_node *n, const char *sym, LLVMValueRef fn) {
  LLVMTypeRef fty = LLVMGlobalGetValueType(fn);
  bool ok = !LLVMIsFunctionVarArg(fty) && (int)LLVMCountParamTypes(fty) == n->nin &&
            n->nin <= JIT_EW_MAX_IN && LLVMGetReturnType(fty) == jit_type(f, n->out[0]->type.dtype);
  LLVMTypeRef p[JIT_EW_MAX_IN];
  if (ok) LLVMGetParamTypes(fty, p);
  for (int j = 0; ok && j < n->nin; j++) ok = p[j] == jit_type(f, n->in[j]->type.dtype);
  if (ok) return 0;
  char *ts = LLVMPrintTypeToString(fty);
  jit_fn_error(f, "elementwise kernel \"%s\": its type %s does not fit the op's element types",
               sym, ts ? ts : "?");
  LLVMDisposeMessage(ts);
  return -1;
}

/* The marker of sym (named `marker` in f->mod) says elementwise, of this
 * ABI and operand count. 0, or -1 with f->err. */
static int check_ew_marker(jit_fn *f, const ir_node *n, const char *sym, const char *marker) {
  int32_t mk[3];
  if (!read_marker_named(f->mod, marker, mk) || !(mk[0] & KILN_KERNEL_ELEMENTWISE))
    return jit_fn_error(f, "kernel \"%s\" is not declared with KILN_ELEMENTWISE_KERNEL(%s, NIN), "
                           "but the op is marked kiln.elementwise", sym, sym);
  if ((mk[0] & ~(KILN_KERNEL_ELEMENTWISE | KILN_KERNEL_ON_SIMT)) != KILN_KERNEL_ABI)
    return jit_fn_error(f, "kernel \"%s\" was built for kernel ABI %d, this kiln has ABI %d", sym,
                        (int)(mk[0] & ~(KILN_KERNEL_ELEMENTWISE | KILN_KERNEL_ON_SIMT)),
                        KILN_KERNEL_ABI);
  if (mk[1] >= 0 && mk[1] != n->nin)
    return jit_fn_error(f, "kernel \"%s\" takes %d operands, the op gives %d", sym, (int)mk[1],
                        n->nin);
  return 0;
}

/* sym of the node's library, linked into f->mod (host targets) once per
 * library; checked. NULL with f->err. */
static LLVMValueRef ew_link_host(jit_fn *f, const ir_node *n, const char *sym) {
  const char *hash = ir_node_attr_string(n, "kiln.library", NULL);
  if (!hash) {
    jit_fn_error(f, "kernel \"%s\": no kernel library is bound to it (add the library that "
                    "defines it: kiln_context_add_kernel_library, kiln run --kernels)", sym);
    return NULL;
  }
  char mark[80];
  snprintf(mark, sizeof mark, "kiln.ewlib.%s", hash);
  if (!LLVMGetNamedGlobal(f->mod, mark)) {
    const void *bc = NULL;
    size_t len = 0;
    if (!f->libs || !f->libs->find || f->libs->find(f->libs->ud, hash, &bc, &len) != 0) {
      jit_fn_error(f, "kernel \"%s\": its kernel library (%s) is not loaded in this context",
                   sym, hash);
      return NULL;
    }
    char label[300];
    snprintf(label, sizeof label, "kernel library of \"%s\"", sym);
    if (jit_link_bitcode(f, bc, len, label) != 0) return NULL;
    LLVMValueRef g = LLVMAddGlobal(f->mod, f->t_i8, mark);
    LLVMSetInitializer(g, LLVMConstInt(f->t_i8, 0, 0));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
  }
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, sym);
  if (!fn || LLVMIsDeclaration(fn)) {
    jit_fn_error(f, "kernel \"%s\": its library does not define it", sym);
    return NULL;
  }
  char marker[300];
  snprintf(marker, sizeof marker, "kiln_abi_%s", sym);
  if (check_ew_marker(f, n, sym, marker) < 0 || check_ew_type(f, n, sym, fn) < 0) return NULL;
  inline_always(f, fn);
  return fn;
}

/* call fn(v...) at the builder, with fn's signext / zeroext promises on the
 * call (i8 / i16 / bool arguments and results, should it stay a call). */
static LLVMValueRef ew_call(jit_fn *f, LLVMValueRef fn, int nin, LLVMValueRef *v) {
  LLVMValueRef c = LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, v, (unsigned)nin, "");
  static const char *const kinds[] = {"signext", "zeroext", "noundef"};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    unsigned id = LLVMGetEnumAttributeKindForName(kinds[k], strlen(kinds[k]));
    for (int i = -1; id && i < nin; i++) { /* -1: the return value (index 0) */
      unsigned idx = i < 0 ? LLVMAttributeReturnIndex : (unsigned)i + 1;
      LLVMAttributeRef a = LLVMGetEnumAttributeAtIndex(fn, idx, id);
      if (a) LLVMAddCallSiteAttribute(c, idx, a);
    }
  }
  return c;
}

LLVMValueRef jit_custom_ew_call(jit_fn *f, const ir_node *n, LLVMValueRef *v) {
  const char *sym = ir_node_attr_string(n, "symbol", NULL);
  LLVMTypeRef rt = jit_type(f, n->out[0]->type.dtype);
  if (!sym || !sym[0]) {
    jit_fn_error(f, "mo.custom has no symbol");
    return LLVMGetPoison(rt);
  }
  LLVMValueRef fn = ew_link_host(f, n, sym);
  return fn ? ew_call(f, fn, n->nin, v) : LLVMGetPoison(rt);
}

int jit_lower_custom(jit_fn *f) {
  const ir_node *n = f->node;
  const char *sym = ir_node_attr_string(n, "symbol", NULL);
  if (!sym || !sym[0]) return jit_fn_error(f, "mo.custom has no symbol");
  /* an elementwise kernel alone: the elementwise loop (a group of one, its
   * outer loop split between parts like any elementwise op) */
  if (ew_node(n)) return jit_lower_elementwise(f);
  if (ir_node_attr(n, "kiln.simt_stub")) {
    /* a SIMT kernel in a CPU model that only describes the graph for a
     * device run (kernel_lib.c): never linked, never called */
    jit_fail_if(f, LLVMConstInt(f->t_i1, 1, 0), JIT_KERR_CUSTOM);
    return f->failed ? -1 : 0;
  }
  LLVMValueRef fn = link_kernel(f, sym);
  if (!fn) return -1;
  int32_t mk[3];
  if (read_marker(f->mod, sym, mk) && (mk[0] & KILN_KERNEL_ON_SIMT))
    return jit_fn_error(f, "kernel \"%s\" is a SIMT kernel (KILN_SIMT_KERNEL): it runs on a SIMT "
                           "device (simt-emu, cuda, hip), not on the CPU", sym);
  drop_buffer_promises(f);
  if (n->op == IR_OP_INPLACE_CUSTOM) { /* the buffer to update starts as operand 0 */
    const ir_type *ty = &n->in[0]->type;
    LLVMValueRef bytes = jit_mul(f, jit_numel_range(f, ty, 0, ty->rank),
                                 jit_i64(f, (int64_t)ir_dtype_size(ty->dtype)));
    LLVMBuildMemCpy(f->b, f->bufs[n->nin], 1, f->bufs[0], 1, bytes);
  }
  return call_kernel(f, fn, 0);
}

/* ---- SIMT (simt.h: jit_simt_lower_custom, jit_simt_custom_finish) ----
 * The library's module is parsed into the kernel's context, retargeted
 * (triple, data layout; the host's target-cpu / features dropped), every
 * function made alwaysinline, its external names prefixed with the kernel's
 * name (two custom kernels of one module never clash) and linked; the
 * prefixed names then become internal. */

enum { H_TID, H_NTID, H_CTAID, H_NCTAID, H_BARRIER, H_SHARED, H_COUNT };
static const char *const simt_helpers[H_COUNT] = {
    "kiln_simt_thread_id", "kiln_simt_block_dim", "kiln_simt_block_id",
    "kiln_simt_grid_dim",  "kiln_simt_barrier",   "kiln_simt_shared"};

static const char *target_label(const jit_simt_target *t) {
  return t->kind == JIT_SIMT_EMU ? "simt-emu" : t->arch;
}

/* The architecture of a triple ("x86_64" of "x86_64-pc-linux-gnu") agrees. */
static bool triple_fits(const char *lib, const char *mod) {
  if (!lib || !lib[0]) return true; /* target-neutral IR */
  size_t a = strcspn(lib, "-"), b = strcspn(mod, "-");
  return a == b && strncmp(lib, mod, a) == 0;
}

static void retarget_fn(LLVMContextRef ctx, LLVMValueRef fn) {
  static const char *const strs[] = {"target-cpu", "target-features", "tune-cpu",
                                     "no-builtins", "min-legal-vector-width",
                                     "prefer-vector-width"};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    LLVMRemoveStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, strs[i],
                                     (unsigned)strlen(strs[i]));
  static const char *const enums[] = {"noinline", "optnone"};
  for (size_t i = 0; i < sizeof enums / sizeof enums[0]; i++) {
    unsigned id = LLVMGetEnumAttributeKindForName(enums[i], strlen(enums[i]));
    if (id) LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, id);
  }
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  if (always)
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(ctx, always, 0));
}

/* Prefix every external definition of m (functions and globals) with pre;
 * the new names into *names (malloc'd array of malloc'd strings). */
static int prefix_externals(LLVMModuleRef m, const char *pre, char ***names, int *n) {
  int cap = 0;
  *names = NULL;
  *n = 0;
  for (int pass = 0; pass < 2; pass++) {
    LLVMValueRef g = pass == 0 ? LLVMGetFirstFunction(m) : LLVMGetFirstGlobal(m);
    for (; g; g = pass == 0 ? LLVMGetNextFunction(g) : LLVMGetNextGlobal(g)) {
      if (LLVMIsDeclaration(g) || LLVMGetLinkage(g) != LLVMExternalLinkage) continue;
      size_t len = 0;
      const char *nm = LLVMGetValueName2(g, &len);
      if (*n == cap) {
        cap = cap ? 2 * cap : 16;
        char **nn = realloc(*names, sizeof *nn * (size_t)cap);
        if (!nn) return -1;
        *names = nn;
      }
      char *full = malloc(strlen(pre) + len + 1);
      if (!full) return -1;
      sprintf(full, "%s%.*s", pre, (int)len, nm);
      LLVMSetValueName2(g, full, strlen(full));
      (*names)[(*n)++] = full;
    }
  }
  return 0;
}

static void free_names(char **names, int n) {
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* Parse, retarget and link the node's library into sf's module; the
 * kernel function (its prefixed name in pre_sym), checked as a SIMT kernel
 * or (ew) as an elementwise one. NULL with f->err. */
static LLVMValueRef simt_link(jit_simt_fn *sf, const char *sym, char *pre_sym, size_t cap,
                              bool ew) {
  jit_fn *f = &sf->f;
  const char *hash = ir_node_attr_string(f->node, "kiln.library", NULL);
  const char *tl = target_label(&sf->target);
  if (!hash) {
    jit_fn_error(f, "kernel \"%s\": no kernel library is bound to it (add the library that "
                    "defines it: kiln_context_add_kernel_library, --kernels)", sym);
    return NULL;
  }
  const void *bc = NULL;
  size_t len = 0;
  if (!f->libs || !f->libs->find || f->libs->find(f->libs->ud, hash, &bc, &len) != 0) {
    jit_fn_error(f, "kernel \"%s\": its kernel library (%s) is not available for %s (compile the "
                    "graph with the context that holds it)", sym, hash, tl);
    return NULL;
  }
  char label[300], err[600] = "";
  snprintf(label, sizeof label, "kernel library of \"%s\"", sym);
  LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(f->ctx);
  void *old_ctx = LLVMContextGetDiagnosticContext(f->ctx);
  LLVMModuleRef lm = read_module(f->ctx, bc, len, label, err, sizeof err);
  LLVMContextSetDiagnosticHandler(f->ctx, old_handler, old_ctx);
  if (!lm) {
    jit_fn_error(f, "%s", err);
    return NULL;
  }
  const char *lt = LLVMGetTarget(lm), *mt = LLVMGetTarget(f->mod);
  if (!triple_fits(lt, mt)) {
    jit_fn_error(f, "kernel \"%s\": its library is LLVM code for %s, which cannot run on %s "
                    "(give the library as C, which kiln compiles for each target, or as "
                    ".ll / .bc for %s)", sym, lt, tl, mt);
    LLVMDisposeModule(lm);
    return NULL;
  }
  LLVMSetTarget(lm, mt);
  LLVMSetDataLayout(lm, LLVMGetDataLayoutStr(f->mod));
  for (LLVMValueRef g = LLVMGetFirstFunction(lm); g; g = LLVMGetNextFunction(g))
    if (!LLVMIsDeclaration(g)) retarget_fn(f->ctx, g);
  for (int h = 0; h < H_COUNT; h++) {
    LLVMValueRef d = LLVMGetNamedFunction(lm, simt_helpers[h]);
    if (d && !LLVMIsDeclaration(d)) {
      jit_fn_error(f, "kernel \"%s\": its library defines %s, a name kiln/kernel.h reserves",
                   sym, simt_helpers[h]);
      LLVMDisposeModule(lm);
      return NULL;
    }
  }
  size_t plen = 0;
  const char *ename = LLVMGetValueName2(sf->entry, &plen);
  char pre[160];
  snprintf(pre, sizeof pre, "%.*s__", (int)plen, ename);
  char **names = NULL;
  int nnames = 0;
  if (prefix_externals(lm, pre, &names, &nnames) < 0) {
    free_names(names, nnames);
    LLVMDisposeModule(lm);
    jit_fn_error(f, "out of memory");
    return NULL;
  }
  jit_diag_sink sink = {.msg = "", .error = false};
  LLVMContextSetDiagnosticHandler(f->ctx, jit_diag_handler, &sink);
  LLVMBool bad = LLVMLinkModules2(f->mod, lm); /* destroys lm */
  LLVMContextSetDiagnosticHandler(f->ctx, old_handler, old_ctx);
  if (bad) {
    free_names(names, nnames);
    jit_fn_error(f, "%s: linking into the kernel module failed: %s", label, sink.msg);
    return NULL;
  }
  for (int i = 0; i < nnames; i++) {
    LLVMValueRef g = LLVMGetNamedFunction(f->mod, names[i]);
    if (!g) g = LLVMGetNamedGlobal(f->mod, names[i]);
    if (g) LLVMSetLinkage(g, LLVMInternalLinkage);
  }
  free_names(names, nnames);
  LLVMValueRef used = LLVMGetNamedGlobal(f->mod, "llvm.used"); /* the markers' */
  if (used) LLVMDeleteGlobal(used);

  char marker[600];
  snprintf(pre_sym, cap, "%s%s", pre, sym);
  snprintf(marker, sizeof marker, "%skiln_abi_%s", pre, sym);
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, pre_sym);
  int32_t mk[3];
  if (!fn || LLVMIsDeclaration(fn)) {
    jit_fn_error(f, "kernel \"%s\": its library (built for %s) does not define it", sym, tl);
    return NULL;
  }
  if (ew) /* runs on every target: no placement flag to check */
    return check_ew_marker(f, f->node, sym, marker) < 0 || check_ew_type(f, f->node, sym, fn) < 0
               ? NULL
               : fn;
  if (read_marker_named(f->mod, marker, mk) && (mk[0] & KILN_KERNEL_ELEMENTWISE)) {
    jit_fn_error(f, "kernel \"%s\" is an elementwise kernel (KILN_ELEMENTWISE_KERNEL), but the "
                    "op is not marked kiln.elementwise (bind it through a context)", sym);
    return NULL;
  }
  if (!abi_type(LLVMGlobalGetValueType(fn))) {
    jit_fn_error(f, "kernel \"%s\": its type does not fit int32_t (const kiln_kernel_args *)", sym);
    return NULL;
  }
  if (!read_marker_named(f->mod, marker, mk)) {
    jit_fn_error(f, "kernel \"%s\" is not declared with KILN_SIMT_KERNEL(%s, NIN, NOUT) (no "
                    "kiln_abi_%s marker): kiln cannot check its signature", sym, sym, sym);
    return NULL;
  }
  if (!(mk[0] & KILN_KERNEL_ON_SIMT)) {
    jit_fn_error(f, "kernel \"%s\" is a host kernel (KILN_KERNEL): it runs on the CPU only; "
                    "declare it with KILN_SIMT_KERNEL to run it on %s", sym, tl);
    return NULL;
  }
  if ((mk[0] & ~KILN_KERNEL_ON_SIMT) != KILN_KERNEL_ABI) {
    jit_fn_error(f, "kernel \"%s\" was built for kernel ABI %d, this kiln has ABI %d", sym,
                 (int)(mk[0] & ~KILN_KERNEL_ON_SIMT), KILN_KERNEL_ABI);
    return NULL;
  }
  if ((mk[1] >= 0 && mk[1] != f->node->nin) || (mk[2] >= 0 && mk[2] != f->node->nout)) {
    jit_fn_error(f, "kernel \"%s\" takes %d operands and makes %d results, the op has %d and %d",
                 sym, (int)mk[1], (int)mk[2], f->node->nin, f->node->nout);
    return NULL;
  }
  return fn;
}

int jit_simt_lower_custom(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const char *sym = ir_node_attr_string(f->node, "symbol", NULL);
  if (!sym || !sym[0]) return jit_fn_error(f, "mo.custom has no symbol");
  if (ew_node(f->node))
    return jit_fn_error(f, "elementwise kernel \"%s\": lowered by the element loop, not here", sym);
  char full[600];
  LLVMValueRef fn = simt_link(sf, sym, full, sizeof full, false);
  if (!fn) return -1;
  /* the buffers reach the kernel through memory: drop the body's promises */
  static const char *const kinds[] = {"noalias", "nocapture", "readonly"};
  for (int i = 0; i < f->nbufs; i++)
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      unsigned id = LLVMGetEnumAttributeKindForName(kinds[k], strlen(kinds[k]));
      if (id) LLVMRemoveEnumAttributeAtIndex(f->fn, (unsigned)i + 1, id);
    }
  return call_kernel(f, fn, sf->target.kind == JIT_SIMT_EMU ? 0 : 1);
}

LLVMValueRef jit_simt_custom_ew_fn(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const char *sym = ir_node_attr_string(f->node, "symbol", NULL);
  if (!sym || !sym[0]) {
    jit_fn_error(f, "mo.custom has no symbol");
    return NULL;
  }
  if (!ew_node(f->node)) {
    jit_fn_error(f, "kernel \"%s\": the op is not marked kiln.elementwise", sym);
    return NULL;
  }
  char full[600];
  return simt_link(sf, sym, full, sizeof full, true);
}

LLVMValueRef jit_simt_custom_ew_call(jit_fn *f, LLVMValueRef fn, int nin, LLVMValueRef *v) {
  return ew_call(f, fn, nin, v);
}

/* The target's value for helper h, built at the builder (NULL for the
 * barrier, which has none). */
static LLVMValueRef helper_value(jit_simt_fn *sf, int h) {
  switch (h) {
  case H_TID: return jit_simt_sreg_get(sf, JIT_SIMT_TID, 0);
  case H_NTID: return jit_simt_sreg_get(sf, JIT_SIMT_NTID, 0);
  case H_CTAID: return jit_simt_sreg_get(sf, JIT_SIMT_CTAID, 0);
  case H_NCTAID: return jit_simt_sreg_get(sf, JIT_SIMT_NCTAID, 0);
  case H_BARRIER: jit_simt_barrier(sf); return NULL;
  default: return jit_simt_shared(sf, JIT_SIMT_CUSTOM_SHARED);
  }
}

static bool helper_type_ok(jit_fn *f, int h, LLVMTypeRef fty) {
  if (LLVMCountParamTypes(fty) != 0 || LLVMIsFunctionVarArg(fty)) return false;
  LLVMTypeRef r = LLVMGetReturnType(fty);
  if (h == H_BARRIER) return LLVMGetTypeKind(r) == LLVMVoidTypeKind;
  if (h == H_SHARED) return r == f->t_ptr;
  return r == f->t_i32;
}

int jit_simt_custom_finish(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  if (f->failed) return -1;
  /* inline the library into the body (not the body into the entry yet:
   * the emulator's helpers read the body's thread parameter) */
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMRemoveEnumAttributeAtIndex(f->fn, LLVMAttributeFunctionIndex, always);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef le = LLVMRunPasses(f->mod, "always-inline", NULL, opts);
  LLVMDisposePassBuilderOptions(opts);
  LLVMAddAttributeAtIndex(f->fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(f->ctx, always, 0));
  if (le) {
    char *m = LLVMGetErrorMessage(le);
    jit_fn_error(f, "inlining the custom kernel: %s", m ? m : "?");
    LLVMDisposeErrorMessage(m);
    return -1;
  }
  bool emu = sf->target.kind == JIT_SIMT_EMU;
  for (int h = 0; h < H_COUNT && !f->failed; h++) {
    LLVMValueRef d = LLVMGetNamedFunction(f->mod, simt_helpers[h]);
    if (!d) continue;
    if (!helper_type_ok(f, h, LLVMGlobalGetValueType(d))) {
      char *ts = LLVMPrintTypeToString(LLVMGlobalGetValueType(d));
      jit_fn_error(f, "%s is declared as %s, not as kiln/kernel.h declares it", simt_helpers[h],
                   ts ? ts : "?");
      LLVMDisposeMessage(ts);
      return -1;
    }
    LLVMUseRef u;
    while ((u = LLVMGetFirstUse(d))) {
      LLVMValueRef call = LLVMGetUser(u);
      if (!LLVMIsACallInst(call) || LLVMGetCalledValue(call) != d)
        return jit_fn_error(f, "the kernel takes the address of %s: only calls are supported",
                            simt_helpers[h]);
      LLVMValueRef parent = LLVMGetBasicBlockParent(LLVMGetInstructionParent(call));
      if (parent != f->fn && !LLVMGetFirstUse(parent) &&
          LLVMGetLinkage(parent) == LLVMInternalLinkage) {
        LLVMDeleteFunction(parent); /* a library function nothing calls */
        continue;
      }
      if (emu && parent != f->fn) {
        size_t nl = 0;
        const char *pn = LLVMGetValueName2(parent, &nl);
        return jit_fn_error(f, "%s is called from %.*s, which kiln cannot inline into the "
                               "kernel (recursive?): on simt-emu the SIMT helpers must be "
                               "reached through inlinable calls", simt_helpers[h], (int)nl, pn);
      }
      LLVMPositionBuilderBefore(f->b, call);
      LLVMValueRef v = helper_value(sf, h);
      if (v) LLVMReplaceAllUsesWith(call, v);
      LLVMInstructionEraseFromParent(call);
    }
    LLVMDeleteFunction(d);
  }
  return f->failed ? -1 : 0;
}
