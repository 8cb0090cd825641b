/* fft.c - lowering of the Fourier class (mo.irfft), for the host and for
 * SIMT targets (ops.def documents the meaning).
 *
 * The operand is viewed as [outer, m, inner] values around the axis (each
 * value two elements (re, im) with input_is_complex), the result as
 * [outer, n, inner].
 * Host: the lines (outer * inner of them) are split between the parts
 * (jit_split_range); each part mallocs 4 * n doubles (JIT_KERR_NOMEM when
 * that fails) and runs kernels-templates/fft.c over its lines: a radix-2
 * FFT where n is a power of two, else the O(n^2) real sum, both in double.
 * SIMT: one thread per result element, the real sum of the reference
 * interpreter (ir/interp_fft.c) term by term in double, the angle formed
 * from (k t) mod n: O(n / 2) per element, no workspace.
 * Assumes a verified node (ir/infer_fft.c: axis in range, n >= 1, a last
 * dim of 2 with input_is_complex). */
#include <string.h>

#include "jit.h"
#include "lower.h"
#include "simt.h"
#include "template.h"

typedef struct fftp {
  ir_dtype dt;
  int axis;
  bool cplx;
  int64_t norm; /* 0 backward, 1 ortho, 2 forward (the template's code) */
  LLVMValueRef outer, inner, m, n;
} fftp;

static int fft_setup(jit_fn *f, fftp *q) {
  const ir_node *nd = f->node;
  const ir_type *xt = &nd->in[0]->type, *yt = &nd->out[0]->type;
  q->dt = xt->dtype;
  if (q->dt != IR_DT_F32 && q->dt != IR_DT_F64)
    return jit_fn_error(f, "mo.irfft: dtype %s is not supported", ir_dtype_name(q->dt));
  q->cplx = ir_node_attr_bool(nd, "input_is_complex", false);
  int64_t a = ir_node_attr_int(nd, "axis", -1);
  int rank = yt->rank;
  if (a < 0) a += rank;
  if (a < 0 || a >= rank || xt->rank != rank + (q->cplx ? 1 : 0))
    return jit_fn_error(f, "mo.irfft: axis or rank does not match the operand");
  q->axis = (int)a;
  const char *norm = ir_node_attr_string(nd, "normalization", "backward");
  q->norm = strcmp(norm, "ortho") == 0 ? 1 : strcmp(norm, "forward") == 0 ? 2 : 0;
  q->outer = jit_numel_range(f, yt, 0, q->axis);
  q->inner = jit_numel_range(f, yt, q->axis + 1, rank);
  q->m = jit_dim(f, xt->dims[q->axis]);
  q->n = jit_dim(f, yt->dims[q->axis]);
  return f->failed ? -1 : 0;
}

int jit_lower_fft(jit_fn *f) {
  fftp q = {0};
  if (fft_setup(f, &q) != 0) return -1;
  LLVMValueRef fn = jit_template_function(
      f, JIT_TMPL_FFT, q.dt == IR_DT_F32 ? "kiln_irfft_f32" : "kiln_irfft_f64");
  if (!fn) return -1;
  LLVMValueRef lo, hi;
  jit_split_range(f, jit_mul(f, q.outer, q.inner), &lo, &hi);
  /* 4 n doubles, and 64 spare bytes: never a malloc(0) */
  LLVMValueRef bytes = jit_add(f, jit_mul(f, q.n, jit_i64(f, 32)), jit_i64(f, 64));
  LLVMTypeRef malloc_ty = LLVMFunctionType(f->t_ptr, &f->t_i64, 1, 0);
  LLVMValueRef malloc_fn = jit_libc_fn(f, "malloc", malloc_ty);
  LLVMValueRef work = LLVMBuildCall2(f->b, malloc_ty, malloc_fn, &bytes, 1, "fft.work");
  jit_fail_if(f, LLVMBuildIsNull(f->b, work, ""), JIT_KERR_NOMEM);
  LLVMValueRef args[10] = {lo,  hi, q.inner, q.m, q.n, jit_i64(f, q.cplx), jit_i64(f, q.norm),
                           jit_in(f, 0), jit_out(f, 0), work};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 10, "");
  LLVMTypeRef free_ty = LLVMFunctionType(f->t_void, &f->t_ptr, 1, 0);
  LLVMBuildCall2(f->b, free_ty, jit_libc_fn(f, "free", free_ty), &work, 1, "");
  return f->failed ? -1 : 0;
}

static LLVMValueRef to_f64(jit_fn *f, ir_dtype dt, LLVMValueRef v) {
  return dt == IR_DT_F32 ? LLVMBuildFPExt(f->b, v, f->t_f64, "") : v;
}

/* Result element e: y = (Re X0 + 2 sum_{0<k, 2k<n} (re cos - im sin)
 * + (n even) Re X[n/2] (-1)^t) / s, X[k] = 0 past m. */
static void fft_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  const fftp *q = ud;
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1), two = jit_i64(f, 2);
  LLVMValueRef i = LLVMBuildURem(f->b, e, q->inner, "");
  LLVMValueRef rest = LLVMBuildUDiv(f->b, e, q->inner, "");
  LLVMValueRef t = LLVMBuildURem(f->b, rest, q->n, ""), o = LLVMBuildUDiv(f->b, rest, q->n, "");
  LLVMValueRef ce = jit_i64(f, q->cplx ? 2 : 1);
  /* element index of value k: ((o m + k) inner + i) ce */
  LLVMValueRef base = jit_mul(f, jit_add(f, jit_mul(f, jit_mul(f, o, q->m), q->inner), i), ce);
  LLVMValueRef vstride = jit_mul(f, q->inner, ce);
  LLVMValueRef X = jit_in(f, 0);
  LLVMValueRef acc = jit_alloca(f, f->t_f64, "fft.acc");
  LLVMBuildStore(f->b, jit_dc(f, 0), acc);
  jit_simt_if i0; /* X[0] when m > 0 */
  jit_simt_if_begin(f, &i0, LLVMBuildICmp(f->b, LLVMIntSGT, q->m, zero, ""));
  LLVMBuildStore(f->b, to_f64(f, q->dt, jit_load(f, q->dt, X, base)), acc);
  jit_simt_if_end(f, &i0);
  /* the pairs k = 1 .. K - 1, K = min(ceil(n / 2), m) */
  LLVMValueRef kh = LLVMBuildUDiv(f->b, jit_add(f, q->n, one), two, "");
  LLVMValueRef K = jit_sel(f, LLVMBuildICmp(f->b, LLVMIntSLT, kh, q->m, ""), kh, q->m);
  LLVMValueRef w = jit_fdiv(f, jit_dc(f, 6.283185307179586476925286766559),
                            LLVMBuildSIToFP(f->b, q->n, f->t_f64, ""));
  K = jit_sel(f, LLVMBuildICmp(f->b, LLVMIntSGT, K, one, ""), K, one); /* m = 0: none */
  jit_loop L;
  LLVMValueRef k = jit_loop_begin(f, &L, one, K, "k");
  LLVMValueRef xe = jit_add(f, base, jit_mul(f, k, vstride));
  LLVMValueRef re = jit_load(f, q->dt, X, xe), im;
  if (q->cplx) im = jit_load(f, q->dt, X, jit_add(f, xe, one));
  else im = jit_fconst(f, q->dt, 0);
  re = to_f64(f, q->dt, re);
  im = to_f64(f, q->dt, im);
  LLVMValueRef j = LLVMBuildURem(f->b, jit_mul(f, k, t), q->n, "");
  LLVMValueRef ang = jit_fmul(f, w, LLVMBuildSIToFP(f->b, j, f->t_f64, ""));
  LLVMValueRef c = jit_intrinsic(f, "llvm.cos", f->t_f64, &ang, 1);
  LLVMValueRef s = jit_intrinsic(f, "llvm.sin", f->t_f64, &ang, 1);
  LLVMValueRef diff = jit_fsub(f, jit_fmul(f, re, c), jit_fmul(f, im, s));
  LLVMValueRef term = jit_fmul(f, jit_dc(f, 2), diff);
  LLVMBuildStore(f->b, jit_fadd(f, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), term), acc);
  jit_loop_end(f, &L);
  /* the Nyquist term: n even and n / 2 < m */
  LLVMValueRef half = LLVMBuildUDiv(f->b, q->n, two, "");
  LLVMValueRef even = LLVMBuildICmp(f->b, LLVMIntEQ, LLVMBuildURem(f->b, q->n, two, ""), zero, "");
  LLVMValueRef nyq = LLVMBuildAnd(f->b, even, LLVMBuildICmp(f->b, LLVMIntSLT, half, q->m, ""), "");
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, nyq);
  LLVMValueRef rn = jit_load(f, q->dt, X, jit_add(f, base, jit_mul(f, half, vstride)));
  rn = to_f64(f, q->dt, rn);
  LLVMValueRef odd = LLVMBuildICmp(f->b, LLVMIntEQ, LLVMBuildURem(f->b, t, two, ""), one, "");
  rn = jit_sel(f, odd, LLVMBuildFNeg(f->b, rn, ""), rn);
  LLVMBuildStore(f->b, jit_fadd(f, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), rn), acc);
  jit_simt_if_end(f, &ib);
  LLVMValueRef nd = LLVMBuildSIToFP(f->b, q->n, f->t_f64, "");
  LLVMValueRef scale = q->norm == 2 ? jit_dc(f, 1)
                       : q->norm == 1 ? jit_intrinsic(f, "llvm.sqrt", f->t_f64, &nd, 1)
                                      : nd;
  LLVMValueRef y = jit_fdiv(f, LLVMBuildLoad2(f->b, f->t_f64, acc, ""), scale);
  if (q->dt == IR_DT_F32) y = LLVMBuildFPTrunc(f->b, y, f->t_f32, "");
  jit_store(f, q->dt, jit_out(f, 0), e, y);
}

int jit_simt_lower_fft(jit_simt_fn *sf) {
  fftp q = {0};
  return fft_setup(&sf->f, &q) != 0 ? -1 : jit_simt_each_element(sf, fft_elem, &q);
}
