/* simt.c - SIMT kernels (simt.h): target parsing, modules with the target's
 * triple and data layout, the kernel frame (body + per-target entry), the
 * SIMT intrinsics mapped per target, and emission (PTX, AMDGPU object, host
 * object for simt-emu).
 *
 * Intrinsics per target:
 *   ids      nvptx: llvm.nvvm.read.ptx.sreg.{tid,ntid,ctaid,nctaid}.{x,y,z}
 *            amdgpu: llvm.amdgcn.workitem.id.*, workgroup.id.*, and the
 *            block / grid sizes from the HSA dispatch packet
 *            emu: loads from the jit_simt_thread (jit/simt_abi.h)
 *   barrier  nvptx: llvm.nvvm.barrier0; amdgpu: workgroup release fence,
 *            llvm.amdgcn.s.barrier, acquire fence; emu: t->barrier(t)
 *   shared   nvptx / amdgpu: an addrspace(3) global, cast to generic;
 *            emu: t->shared
 * Guarantees: every failure is a message in err; LLVM targets are
 * initialized once, thread-safely; nothing here touches files or devices. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "simt.h"
#include "simt_abi.h"

#define CC_AMDGPU_KERNEL 91 /* LLVM's CallingConv::AMDGPU_KERNEL */
#define AS_SHARED 3         /* nvptx and amdgpu: shared / LDS */

/* ---- targets ---- */

static const struct {
  const char *name;
  jit_simt_kind kind;
  const char *arch;
} known[] = {
    {"sm_80", JIT_SIMT_NVPTX, "sm_80"},   {"sm_90", JIT_SIMT_NVPTX, "sm_90"},
    {"nvptx", JIT_SIMT_NVPTX, "sm_80"},   {"gfx90a", JIT_SIMT_AMDGPU, "gfx90a"},
    {"gfx942", JIT_SIMT_AMDGPU, "gfx942"}, {"amdgpu", JIT_SIMT_AMDGPU, "gfx90a"},
    {"simt-emu", JIT_SIMT_EMU, ""},
};

int jit_simt_target_parse(const char *name, jit_simt_target *t, char *err, size_t errlen) {
  for (size_t i = 0; name && i < sizeof known / sizeof known[0]; i++)
    if (strcmp(name, known[i].name) == 0) {
      t->kind = known[i].kind;
      snprintf(t->arch, sizeof t->arch, "%s", known[i].arch);
      return 0;
    }
  snprintf(err, errlen, "unknown SIMT target '%s' (expected sm_80, sm_90, gfx90a, gfx942 or "
                        "simt-emu)", name ? name : "(null)");
  return -1;
}

static pthread_once_t targets_once = PTHREAD_ONCE_INIT;
static bool targets_ok;

static void init_targets(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
  targets_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
}

static const char *triple_of(const jit_simt_target *t, char **owned) {
  *owned = NULL;
  switch (t->kind) {
  case JIT_SIMT_NVPTX: return "nvptx64-nvidia-cuda";
  case JIT_SIMT_AMDGPU: return "amdgcn-amd-amdhsa";
  case JIT_SIMT_EMU: break;
  }
  *owned = LLVMGetDefaultTargetTriple();
  return *owned;
}

/* A target machine for t; NULL with err. */
static LLVMTargetMachineRef machine_for(const jit_simt_target *t, char *err, size_t errlen) {
  pthread_once(&targets_once, init_targets);
  if (!targets_ok) {
    snprintf(err, errlen, "jit: the host target cannot be initialized");
    return NULL;
  }
  char *owned = NULL;
  const char *triple = triple_of(t, &owned);
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(err, errlen, "jit: no LLVM target for %s: %s", triple, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(owned);
    return NULL;
  }
  char *cpu = NULL, *features = NULL;
  if (t->kind == JIT_SIMT_EMU) {
    cpu = LLVMCreateMessage(jit_host_cpu());
    features = LLVMCreateMessage(jit_host_features());
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      target, triple, cpu ? cpu : t->arch, features ? features : "", LLVMCodeGenLevelAggressive,
      LLVMRelocPIC, t->kind == JIT_SIMT_EMU ? LLVMCodeModelJITDefault : LLVMCodeModelDefault);
  if (!tm) snprintf(err, errlen, "jit: no target machine for %s %s", triple, t->arch);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  LLVMDisposeMessage(owned);
  return tm;
}

LLVMModuleRef jit_simt_module_new(LLVMContextRef ctx, const jit_simt_target *t, const char *name,
                                  char *err, size_t errlen) {
  LLVMTargetMachineRef tm = machine_for(t, err, errlen);
  if (!tm) return NULL;
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, td);
  LLVMDisposeTargetData(td);
  LLVMDisposeTargetMachine(tm);
  return mod;
}

/* ---- the kernel frame ---- */

static void add_attr(LLVMContextRef ctx, LLVMValueRef fn, LLVMAttributeIndex idx,
                     const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (kind) LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(ctx, kind, 0));
}

static void add_str_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(
      fn, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

static void init_types(jit_fn *f, LLVMContextRef ctx) {
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
}

void jit_simt_begin(jit_simt_fn *sf, const jit_simt_target *t, LLVMContextRef ctx,
                    LLVMModuleRef mod, const ir_graph *g, const ir_node *n, const char *name,
                    unsigned max_threads, char *err, size_t errlen) {
  memset(sf, 0, sizeof *sf);
  jit_fn *f = &sf->f;
  sf->target = *t;
  sf->max_threads = max_threads ? max_threads : 1;
  f->ctx = ctx;
  f->mod = mod;
  f->g = g;
  f->node = n;
  f->err = err;
  f->errlen = errlen;
  init_types(f, ctx);
  f->b = LLVMCreateBuilderInContext(ctx);
  /* + the i64 a node that defines a symbol from data stores it in (jit.h) */
  int nb = n ? n->nin + n->nout + (ir_node_data_sym(n) >= 0) : 0, ns = g ? g->nsyms : 0;
  f->nbufs = nb;
  f->nsyms = ns;
  f->bufs = calloc((size_t)nb + 1, sizeof *f->bufs);
  f->sym_vals = calloc((size_t)ns + 1, sizeof *f->sym_vals);
  LLVMTypeRef *params = calloc((size_t)(nb + ns + 2), sizeof *params);
  char *bname = malloc(strlen(name) + 8);
  if (!f->bufs || !f->sym_vals || !params || !bname) {
    jit_fn_error(f, "out of memory");
    free(params);
    free(bname);
    f->nbufs = f->nsyms = 0;
    return;
  }
  /* body: i32 (ptr bufs..., i64 syms..., ptr thread) */
  for (int i = 0; i < nb; i++) params[i] = f->t_ptr;
  for (int k = 0; k < ns; k++) params[nb + k] = f->t_i64;
  params[nb + ns] = f->t_ptr;
  sprintf(bname, "%s.body", name);
  f->body_type = LLVMFunctionType(f->t_i32, params, (unsigned)(nb + ns + 1), 0);
  f->fn = LLVMAddFunction(mod, bname, f->body_type);
  free(bname);
  LLVMSetLinkage(f->fn, LLVMInternalLinkage);
  add_attr(ctx, f->fn, LLVMAttributeFunctionIndex, "nounwind");
  add_attr(ctx, f->fn, LLVMAttributeFunctionIndex, "alwaysinline");
  for (int i = 0; i < nb; i++) {
    f->bufs[i] = LLVMGetParam(f->fn, (unsigned)i);
    add_attr(ctx, f->fn, (unsigned)i + 1, "noalias");
    add_attr(ctx, f->fn, (unsigned)i + 1, "nocapture");
    bool written = n && n->op == IR_OP_MUTABLE_STORE_SLICE && i == 0; /* the buffer */
    if (n && i < n->nin && !written) add_attr(ctx, f->fn, (unsigned)i + 1, "readonly");
  }
  for (int k = 0; k < ns; k++) f->sym_vals[k] = LLVMGetParam(f->fn, (unsigned)(nb + k));
  sf->thread = t->kind == JIT_SIMT_EMU ? LLVMGetParam(f->fn, (unsigned)(nb + ns)) : NULL;

  /* entry: exported; its type depends on the target (built at finish) */
  LLVMTypeRef etype;
  if (t->kind == JIT_SIMT_EMU) {
    LLVMTypeRef ep[2] = {f->t_ptr, f->t_ptr};
    etype = LLVMFunctionType(f->t_void, ep, 2, 0);
  } else {
    params[nb + ns] = f->t_ptr; /* the error word */
    etype = LLVMFunctionType(f->t_void, params, (unsigned)(nb + ns + 1), 0);
  }
  free(params);
  sf->entry = LLVMAddFunction(mod, name, etype);
  add_attr(ctx, sf->entry, LLVMAttributeFunctionIndex, "nounwind");
  char bound[32];
  if (t->kind == JIT_SIMT_AMDGPU) {
    LLVMSetFunctionCallConv(sf->entry, CC_AMDGPU_KERNEL);
    snprintf(bound, sizeof bound, "1,%u", sf->max_threads);
    add_str_attr(ctx, sf->entry, "amdgpu-flat-work-group-size", bound);
  }
  LLVMPositionBuilderAtEnd(f->b, LLVMAppendBasicBlockInContext(ctx, f->fn, "entry"));
}

static void nvvm_annotate(jit_simt_fn *sf, const char *key, unsigned v) {
  LLVMContextRef ctx = sf->f.ctx;
  LLVMMetadataRef ops[3] = {
      LLVMValueAsMetadata(sf->entry), LLVMMDStringInContext2(ctx, key, strlen(key)),
      LLVMValueAsMetadata(LLVMConstInt(sf->f.t_i32, v, 0))};
  LLVMAddNamedMetadataOperand(sf->f.mod, "nvvm.annotations",
                              LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, ops, 3)));
}

void jit_simt_finish(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  if (!f->fn || !f->b) return;
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(f->b);
  if (bb && !LLVMGetBasicBlockTerminator(bb)) LLVMBuildRet(f->b, LLVMConstInt(f->t_i32, 0, 0));
  int nb = f->nbufs, ns = f->nsyms;
  LLVMValueRef *args = calloc((size_t)(nb + ns + 2), sizeof *args);
  if (!args) {
    jit_fn_error(f, "out of memory");
    return;
  }
  LLVMPositionBuilderAtEnd(f->b, LLVMAppendBasicBlockInContext(f->ctx, sf->entry, "entry"));
  LLVMValueRef errp;
  if (sf->target.kind == JIT_SIMT_EMU) {
    /* params[i] -> value: unpack buffers, symbols, then the error word */
    LLVMValueRef pv = LLVMGetParam(sf->entry, 0);
    for (int i = 0; i < nb + ns + 1; i++) {
      LLVMValueRef idx = LLVMConstInt(f->t_i64, (unsigned long long)i, 0);
      LLVMValueRef slot = LLVMBuildLoad2(
          f->b, f->t_ptr, LLVMBuildInBoundsGEP2(f->b, f->t_ptr, pv, &idx, 1, ""), "");
      args[i] = LLVMBuildLoad2(f->b, i >= nb && i < nb + ns ? f->t_i64 : f->t_ptr, slot, "");
    }
    errp = args[nb + ns];
    args[nb + ns] = LLVMGetParam(sf->entry, 1);
  } else {
    for (int i = 0; i < nb + ns; i++) args[i] = LLVMGetParam(sf->entry, (unsigned)i);
    errp = LLVMGetParam(sf->entry, (unsigned)(nb + ns));
    args[nb + ns] = LLVMConstNull(f->t_ptr);
  }
  LLVMValueRef rc = LLVMBuildCall2(f->b, f->body_type, f->fn, args, (unsigned)(nb + ns + 1), "");
  free(args);
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(f->ctx, sf->entry, "fail");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(f->ctx, sf->entry, "done");
  LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntNE, rc, LLVMConstInt(f->t_i32, 0, 0), ""),
                  fail, done);
  LLVMPositionBuilderAtEnd(f->b, fail);
  LLVMValueRef st = LLVMBuildStore(f->b, rc, errp);
  LLVMSetVolatile(st, 1); /* any failing thread's code will do; it must land */
  LLVMBuildBr(f->b, done);
  LLVMPositionBuilderAtEnd(f->b, done);
  LLVMBuildRetVoid(f->b);
  if (sf->target.kind == JIT_SIMT_NVPTX) {
    nvvm_annotate(sf, "kernel", 1);
    nvvm_annotate(sf, "maxntidx", sf->max_threads);
  }
}

void jit_simt_dispose(jit_simt_fn *sf) { jit_fn_dispose(&sf->f); }

/* ---- intrinsics ---- */

static LLVMValueRef call0(jit_fn *f, const char *name, LLVMTypeRef ret) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) {
    jit_fn_error(f, "unknown LLVM intrinsic %s", name);
    return LLVMGetPoison(ret ? ret : f->t_i32);
  }
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(f->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(f->ctx, id, NULL, 0);
  return LLVMBuildCall2(f->b, fty, decl, NULL, 0, "");
}

/* emu: the i32 at byte offset off of the jit_simt_thread. */
static LLVMValueRef thread_field(jit_simt_fn *sf, size_t off, LLVMTypeRef ty) {
  jit_fn *f = &sf->f;
  LLVMValueRef idx = LLVMConstInt(f->t_i64, off, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(f->b, f->t_i8, sf->thread, &idx, 1, "");
  return LLVMBuildLoad2(f->b, ty, p, "");
}

/* amdgpu: a field of the HSA kernel dispatch packet. */
static LLVMValueRef dispatch_field(jit_simt_fn *sf, unsigned off, LLVMTypeRef ty) {
  jit_fn *f = &sf->f;
  LLVMValueRef dp = call0(f, "llvm.amdgcn.dispatch.ptr", NULL);
  LLVMValueRef idx = LLVMConstInt(f->t_i64, off, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(f->b, f->t_i8, dp, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(f->b, ty, p, "");
  LLVMSetAlignment(v, LLVMGetIntTypeWidth(ty) / 8);
  return LLVMBuildZExt(f->b, v, f->t_i32, "");
}

LLVMValueRef jit_simt_sreg_get(jit_simt_fn *sf, jit_simt_sreg r, int dim) {
  jit_fn *f = &sf->f;
  if (dim < 0 || dim > 2 || (unsigned)r > JIT_SIMT_NCTAID) {
    jit_fn_error(f, "SIMT register %d.%d out of range", (int)r, dim);
    return LLVMGetPoison(f->t_i32);
  }
  static const char xyz[] = "xyz";
  char name[64];
  switch (sf->target.kind) {
  case JIT_SIMT_NVPTX: {
    static const char *reg[] = {"tid", "ntid", "ctaid", "nctaid"};
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg[r], xyz[dim]);
    return call0(f, name, f->t_i32);
  }
  case JIT_SIMT_AMDGPU: {
    /* hsa_kernel_dispatch_packet_t: workgroup_size_{x,y,z} u16 at 4, 6, 8;
     * grid_size_{x,y,z} u32 at 12, 16, 20 (in work-items). */
    if (r == JIT_SIMT_TID) {
      snprintf(name, sizeof name, "llvm.amdgcn.workitem.id.%c", xyz[dim]);
      return call0(f, name, f->t_i32);
    }
    if (r == JIT_SIMT_CTAID) {
      snprintf(name, sizeof name, "llvm.amdgcn.workgroup.id.%c", xyz[dim]);
      return call0(f, name, f->t_i32);
    }
    LLVMValueRef ntid = dispatch_field(sf, 4 + 2 * (unsigned)dim, f->t_i16);
    if (r == JIT_SIMT_NTID) return ntid;
    LLVMValueRef grid = dispatch_field(sf, 12 + 4 * (unsigned)dim, f->t_i32);
    return LLVMBuildUDiv(f->b, grid, ntid, "nctaid");
  }
  case JIT_SIMT_EMU: {
    size_t base = r == JIT_SIMT_TID     ? offsetof(jit_simt_thread, tid)
                  : r == JIT_SIMT_NTID  ? offsetof(jit_simt_thread, ntid)
                  : r == JIT_SIMT_CTAID ? offsetof(jit_simt_thread, ctaid)
                                        : offsetof(jit_simt_thread, nctaid);
    return thread_field(sf, base + 4 * (size_t)dim, f->t_i32);
  }
  }
  return LLVMGetPoison(f->t_i32);
}

static void fence(jit_fn *f, LLVMAtomicOrdering o) {
  /* LLVMBuildFenceSyncScope exists from LLVM 20; workgroup scope needs the
   * C++ API, so a system-scope fence: stronger than needed, still correct. */
  LLVMBuildFence(f->b, o, 0, "");
}

void jit_simt_barrier(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  switch (sf->target.kind) {
  case JIT_SIMT_NVPTX: call0(f, "llvm.nvvm.barrier0", NULL); return;
  case JIT_SIMT_AMDGPU:
    fence(f, LLVMAtomicOrderingRelease);
    call0(f, "llvm.amdgcn.s.barrier", NULL);
    fence(f, LLVMAtomicOrderingAcquire);
    return;
  case JIT_SIMT_EMU: {
    LLVMValueRef fp = thread_field(sf, offsetof(jit_simt_thread, barrier), f->t_ptr);
    LLVMTypeRef fty = LLVMFunctionType(f->t_void, &f->t_ptr, 1, 0);
    LLVMBuildCall2(f->b, fty, fp, &sf->thread, 1, "");
    return;
  }
  }
}

LLVMValueRef jit_simt_shared(jit_simt_fn *sf, uint64_t bytes) {
  jit_fn *f = &sf->f;
  if (sf->shared) {
    if (bytes > sf->shared_bytes)
      jit_fn_error(f, "shared memory asked for %llu bytes after %llu",
                   (unsigned long long)bytes, (unsigned long long)sf->shared_bytes);
    return sf->shared;
  }
  sf->shared_bytes = bytes ? bytes : 16;
  if (sf->target.kind == JIT_SIMT_EMU) {
    /* loaded in the body's entry block so every use is dominated */
    LLVMBuilderRef tmp = LLVMCreateBuilderInContext(f->ctx);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(f->fn);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
      LLVMPositionBuilderBefore(tmp, first);
    else
      LLVMPositionBuilderAtEnd(tmp, entry);
    LLVMValueRef idx = LLVMConstInt(f->t_i64, offsetof(jit_simt_thread, shared), 0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(tmp, f->t_i8, sf->thread, &idx, 1, "");
    sf->shared = LLVMBuildLoad2(tmp, f->t_ptr, p, "shared");
    LLVMDisposeBuilder(tmp);
    return sf->shared;
  }
  LLVMTypeRef arr = LLVMArrayType2(f->t_i8, sf->shared_bytes);
  char name[128];
  snprintf(name, sizeof name, "%s.shared", LLVMGetValueName2(sf->entry, &(size_t){0}));
  LLVMValueRef gv = LLVMAddGlobalInAddressSpace(f->mod, arr, name, AS_SHARED);
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  LLVMSetInitializer(gv, LLVMGetUndef(arr));
  LLVMSetAlignment(gv, 16);
  sf->shared = LLVMConstAddrSpaceCast(gv, f->t_ptr);
  return sf->shared;
}

/* ---- loops ---- */

LLVMValueRef jit_simt_grid_loop_begin(jit_simt_fn *sf, jit_simt_loop *l, LLVMValueRef n) {
  jit_fn *f = &sf->f;
  LLVMValueRef tid = LLVMBuildZExt(f->b, jit_simt_sreg_get(sf, JIT_SIMT_TID, 0), f->t_i64, "");
  LLVMValueRef ntid = LLVMBuildZExt(f->b, jit_simt_sreg_get(sf, JIT_SIMT_NTID, 0), f->t_i64, "");
  LLVMValueRef ctaid =
      LLVMBuildZExt(f->b, jit_simt_sreg_get(sf, JIT_SIMT_CTAID, 0), f->t_i64, "");
  LLVMValueRef nctaid =
      LLVMBuildZExt(f->b, jit_simt_sreg_get(sf, JIT_SIMT_NCTAID, 0), f->t_i64, "");
  LLVMValueRef start = LLVMBuildNUWAdd(f->b, LLVMBuildNUWMul(f->b, ctaid, ntid, ""), tid, "gid");
  l->step = LLVMBuildNUWMul(f->b, nctaid, ntid, "gstride");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  l->header = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "grid.header");
  l->body = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "grid.body");
  l->exit = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "grid.exit");
  LLVMBuildBr(f->b, l->header);
  LLVMPositionBuilderAtEnd(f->b, l->header);
  l->iv = LLVMBuildPhi(f->b, f->t_i64, "gi");
  LLVMAddIncoming(l->iv, &start, &pre, 1);
  LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, l->iv, n, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(f->b, l->body);
  return l->iv;
}

void jit_simt_grid_loop_end(jit_simt_fn *sf, jit_simt_loop *l) {
  jit_fn *f = &sf->f;
  LLVMValueRef next = LLVMBuildNUWAdd(f->b, l->iv, l->step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMBuildBr(f->b, l->header);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(f->b, l->exit);
}

/* ---- emission ---- */

int jit_simt_optimize(LLVMModuleRef mod, const jit_simt_target *t, char *err, size_t errlen) {
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    snprintf(err, errlen, "jit: invalid SIMT module: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  if (jit_simt_legalize_math(mod, t, err, errlen) < 0) return -1;
  LLVMTargetMachineRef tm = machine_for(t, err, errlen);
  if (!tm) return -1;
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, t->kind == JIT_SIMT_EMU);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, t->kind == JIT_SIMT_EMU);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  LLVMErrorRef le = LLVMRunPasses(mod, "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  LLVMDisposeTargetMachine(tm);
  if (le) {
    char *m = LLVMGetErrorMessage(le);
    snprintf(err, errlen, "jit: optimizing the SIMT module: %s", m ? m : "?");
    LLVMDisposeErrorMessage(m);
    return -1;
  }
  return jit_simt_check_externals(mod, t, err, errlen);
}

int jit_simt_emit(LLVMModuleRef mod, const jit_simt_target *t, void **out, size_t *len, char *err,
                  size_t errlen) {
  *out = NULL;
  *len = 0;
  if (jit_simt_optimize(mod, t, err, errlen) < 0) return -1;
  LLVMTargetMachineRef tm = machine_for(t, err, errlen);
  if (!tm) return -1;
  char *msg = NULL;
  LLVMMemoryBufferRef buf = NULL;
  bool text = t->kind == JIT_SIMT_NVPTX;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, text ? LLVMAssemblyFile : LLVMObjectFile, &msg,
                                          &buf)) {
    snprintf(err, errlen, "jit: emitting %s: %s", t->arch[0] ? t->arch : "host",
             msg ? msg : "?");
    LLVMDisposeMessage(msg);
    LLVMDisposeTargetMachine(tm);
    return -1;
  }
  LLVMDisposeTargetMachine(tm);
  size_t n = LLVMGetBufferSize(buf);
  char *copy = malloc(n + 1);
  if (!copy) {
    LLVMDisposeMemoryBuffer(buf);
    snprintf(err, errlen, "jit: out of memory");
    return -1;
  }
  memcpy(copy, LLVMGetBufferStart(buf), n);
  copy[n] = 0;
  LLVMDisposeMemoryBuffer(buf);
  *out = copy;
  *len = text ? n + 1 : n;
  return 0;
}
