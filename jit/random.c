/* random.c - lowering of mo.random.uniform and mo.random.normal for the
 * host and for SIMT targets. ir/interp_random.c defines the generator (a
 * splitmix64 hash of the seed's key and the element's row-major index,
 * ir/random.h); this file emits the same integer arithmetic and the same
 * double operations (an explicit llvm.fma, ldexp as an exact multiply by a
 * power of two), so uniform values agree with the interpreter bit for bit
 * on every target, and normal ones wherever log, sqrt and cos round as the
 * host's libm does (devices use their math library: last-bit differences).
 * Each element depends on its index only: the host splits the elements
 * between the parts (jit_split_range), SIMT runs a grid-stride loop.
 * Assumes a verified node (no operands, result f32 or f64). */
#include <math.h>

#include "../ir/random.h"
#include "lower.h"
#include "simt.h"

typedef struct rnd {
  bool uni;
  double a, b; /* low, high or mean, std */
  LLVMValueRef key;
} rnd;

static LLVMValueRef k64(jit_fn *f, uint64_t v) { return LLVMConstInt(f->t_i64, v, 0); }

static LLVMValueRef mix(jit_fn *f, LLVMValueRef z) {
  z = LLVMBuildXor(f->b, z, LLVMBuildLShr(f->b, z, k64(f, 30), ""), "");
  z = LLVMBuildMul(f->b, z, k64(f, IR_RAND_M1), "");
  z = LLVMBuildXor(f->b, z, LLVMBuildLShr(f->b, z, k64(f, 27), ""), "");
  z = LLVMBuildMul(f->b, z, k64(f, IR_RAND_M2), "");
  return LLVMBuildXor(f->b, z, LLVMBuildLShr(f->b, z, k64(f, 31), ""), "");
}

/* bits(i) of ir/random.h */
static LLVMValueRef bits(jit_fn *f, const rnd *r, LLVMValueRef i) {
  LLVMValueRef c = LLVMBuildAdd(f->b, i, k64(f, 1), "");
  return mix(f, LLVMBuildAdd(f->b, r->key, LLVMBuildMul(f->b, c, k64(f, IR_RAND_GOLDEN), ""), ""));
}

/* (v >> shift) as a double times 2^-scale (exact: at most 53 bits). */
static LLVMValueRef unit(jit_fn *f, LLVMValueRef v, int shift, uint64_t add, int scale) {
  v = LLVMBuildAdd(f->b, LLVMBuildLShr(f->b, v, k64(f, (uint64_t)shift), ""), k64(f, add), "");
  LLVMValueRef d = LLVMBuildUIToFP(f->b, v, f->t_f64, "");
  return LLVMBuildFMul(f->b, d, LLVMConstReal(f->t_f64, ldexp(1.0, -scale)), "");
}

static LLVMValueRef fma3(jit_fn *f, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z) {
  LLVMValueRef a[3] = {x, y, z};
  return jit_intrinsic(f, "llvm.fma", f->t_f64, a, 3);
}

static LLVMValueRef call1(jit_fn *f, const char *name, LLVMValueRef x) {
  return jit_intrinsic(f, name, f->t_f64, &x, 1);
}

static void rnd_elem(jit_fn *f, void *ud, LLVMValueRef i) {
  const rnd *r = ud;
  ir_dtype dt = f->node->out[0]->type.dtype;
  LLVMValueRef v, a = LLVMConstReal(f->t_f64, r->a);
  if (r->uni) {
    int m = dt == IR_DT_F32 ? 24 : 53;
    LLVMValueRef u = unit(f, bits(f, r, i), 64 - m, 0, m);
    v = fma3(f, LLVMConstReal(f->t_f64, r->b - r->a), u, a);
  } else {
    LLVMValueRef j = LLVMBuildMul(f->b, i, k64(f, 2), "");
    LLVMValueRef u1 = unit(f, bits(f, r, j), 11, 1, 53);
    LLVMValueRef u2 = unit(f, bits(f, r, LLVMBuildAdd(f->b, j, k64(f, 1), "")), 11, 0, 53);
    LLVMValueRef l =
        LLVMBuildFMul(f->b, LLVMConstReal(f->t_f64, -2.0), call1(f, "llvm.log", u1), "");
    LLVMValueRef c =
        call1(f, "llvm.cos", LLVMBuildFMul(f->b, LLVMConstReal(f->t_f64, IR_RAND_TWO_PI), u2, ""));
    LLVMValueRef z = LLVMBuildFMul(f->b, call1(f, "llvm.sqrt", l), c, "");
    v = fma3(f, LLVMConstReal(f->t_f64, r->b), z, a);
  }
  if (dt != IR_DT_F64)
    v = LLVMBuildFPTrunc(f->b, v, jit_type(f, dt), "");
  jit_store(f, dt, jit_out(f, 0), i, v);
}

static int rnd_setup(jit_fn *f, rnd *r) {
  const ir_node *n = f->node;
  ir_dtype dt = n->out[0]->type.dtype;
  if (dt != IR_DT_F32 && dt != IR_DT_F64)
    return jit_fn_error(f, "mo.%s: no lowering for dtype %s", ir_op_get(n->op)->name,
                        ir_dtype_name(dt));
  r->uni = n->op == IR_OP_RANDOM_UNIFORM;
  r->a = ir_node_attr_float(n, r->uni ? "low" : "mean", 0.0);
  r->b = ir_node_attr_float(n, r->uni ? "high" : "std", 1.0);
  r->key = k64(f, ir_rand_key(ir_node_attr_int(n, "seed", 0)));
  return 0;
}

int jit_lower_random(jit_fn *f) {
  rnd r;
  return rnd_setup(f, &r) != 0 ? -1 : jit_each_element(f, rnd_elem, &r);
}

int jit_simt_lower_random(jit_simt_fn *sf) {
  rnd r;
  return rnd_setup(&sf->f, &r) != 0 ? -1 : jit_simt_each_element(sf, rnd_elem, &r);
}
