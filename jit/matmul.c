/* matmul.c - lowering of mo.matmul: f32 / f64 through the GEMM kernel
 * template (kernels-templates/gemm.c, linked by jit/template.c), other
 * element types through a host loop nest.
 *
 * a [..., M, K] x b [..., K, N] -> c [..., M, N]; batch dims broadcast like
 * numpy: an operand with fewer axes is padded with leading 1s and a batch
 * axis of size 1 is read with stride 0. Whether an axis is 1 is decided at
 * run time (a select on the dim), so symbolic batch dims broadcast correctly.
 *
 * Assumes a verified node: rank >= 2 on both sides, K equal (the runtime has
 * checked symbolic K), result rank = max of the operand ranks, one element
 * type (float or integer) shared by operands and result.
 *
 * Guarantees: every output element is written, also for K = 0 (zeros).
 * Parts (kernel ABI part / nparts): the template path gives each part whole
 * batches when there are at least nparts of them, else its piece of every
 * batch's GEMM (the template cuts rows or columns, see gemm.c); the loop
 * nest splits every batch's rows. How each element is summed does not
 * depend on the split.
 * jit_emit_matmul with an epilogue (jit/fused.c) passes it to the template,
 * which applies it to each finished block of C in place.
 * Prepacked B: a matmul node with the attribute kiln.packed_b = NR (set by
 * the runtime, src/prepack.c, where B is a constant of static shape) gets
 * B's buffer already in the template's panel layout (gemm.c, NR = 2 vector
 * widths) and calls kiln_gemm_<t>_v<VL>_pex instead, with no workspace (no
 * malloc in the kernel: its A block fits the template's stack); the attribute
 * is part of the kernel text, so such kernels have their own cache keys. It
 * is honoured only for f32 / f64 with a rank-2 B and an NR equal to this
 * target's (jit_gemm_panel_width), else the kernel fails to compile. The
 * epilogue and the parts work the same; the sums are the same bits. The
 * choice lives here, so fused kernels (jit/fused.c) get it unchanged.
 * Transposed B: with kiln.transpose_b (ir/fold_transpose.c folds
 * matmul(a, transpose(b)) into it) b is [..., N, K]; the template's _tex
 * entry packs it from that layout (row stride K), the loop nest reads
 * b[j * K + k]; a prepacked B was packed from it already (_pex).
 * Operands read in place (jit_matmul_in_place: slices fused into the GEMM,
 * fused.c): the template and the loop nest take their row and batch
 * strides instead of the dense ones; nothing else changes.
 * f32 / f64: per batch, one call of kiln_gemm_<t>_v<VL>_ex (16 floats / 8
 * doubles per vector where the kernel's target has avx512f, else 8 / 4) with
 * the batch's A, B, C pointers and row strides K, N, N; for static dims the
 * call is inlined and the sizes fold to constants. The packing workspace the
 * template asks for (kiln_gemm_<t>_v<VL>_work: when N > 256 and M >= 4, 2
 * MiB of B block plus 144 KiB (f32) of A block; else none) is
 * malloc'd once per kernel call, shared by the batches and freed after
 * them (if malloc fails the template falls back to its stack buffers). The
 * template blocks K, so sums are reordered (k ascending within a block of
 * at most 256, blocks added in order) and use fused multiply-add.
 * Other types: per batch and row i, the row of c is zeroed and then, for k
 * in order, c[i, :] += a[i, k] * b[k, :] with llvm.fmuladd (floats; LLVM may fuse) or
 * wrapping integer multiply-add. The j loop is contiguous in b and c, so O3
 * vectorizes it. Accumulation is in the element type, in k order; the
 * reference interpreter accumulates in double and rounds once, so results
 * differ from it by rounding (about K * eps relative to sum |a_ik b_kj|). */
#include <stdio.h>
#include <string.h>

#include "lower.h"
#include "jit.h"
#include "template.h"

/* Element address base + idx (idx in elements of type t). */
static LLVMValueRef elem_ptr(jit_fn *f, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(f->b, t, base, &idx, 1, "");
}

int64_t jit_gemm_panel_width(bool avx512f, ir_dtype dt) {
  if (dt == IR_DT_F32) return avx512f ? 32 : 16; /* 2 vectors of 16 / 8 floats */
  if (dt == IR_DT_F64) return avx512f ? 16 : 8;
  return 0;
}

int64_t jit_gemm_tile_rows(bool avx512f) { return avx512f ? 8 : 6; } /* gemm.c's MR */

int jit_gemm_entries(jit_fn *f, ir_dtype dt, const char *variant, bool prefer_prebuilt,
                     LLVMValueRef *gemm, LLVMValueRef *work) {
  bool wide = jit_target_has(f, "avx512f");
  const char *entry = dt == IR_DT_F32 ? (wide ? "kiln_gemm_f32_v16" : "kiln_gemm_f32_v8")
                                      : (wide ? "kiln_gemm_f64_v8" : "kiln_gemm_f64_v4");
  char xname[64], wname[64];
  snprintf(xname, sizeof xname, "%s_%s", entry, variant);
  snprintf(wname, sizeof wname, "%s_work", entry);
  /* the engine's prebuilt entry is the same code, compiled once (template.h) */
  const char *pre = f->prebuilt;
  bool level_ok = pre && (wide ? strstr(pre, "_v4_") != NULL : strstr(pre, "_v3_") != NULL);
  if (level_ok && prefer_prebuilt) {
    *gemm = jit_template_extern(f, JIT_TMPL_GEMM, xname, pre);
    if (work) *work = *gemm ? jit_template_extern(f, JIT_TMPL_GEMM, wname, pre) : NULL;
  } else {
    *gemm = jit_template_function(f, JIT_TMPL_GEMM, xname);
    if (work) *work = *gemm ? jit_template_function(f, JIT_TMPL_GEMM, wname) : NULL;
  }
  return !*gemm || (work && !*work) ? -1 : 0;
}

bool jit_node_calls_prebuilt_gemm(const ir_node *mm) {
  if (!mm || mm->nin < 2 || mm->nout < 1 || !mm->in[0] || !mm->in[1] || !mm->out[0]) return false;
  const ir_type *ta = &mm->in[0]->type, *tb = &mm->in[1]->type;
  ir_dtype dt = mm->out[0]->type.dtype;
  if ((dt != IR_DT_F32 && dt != IR_DT_F64) || ta->rank < 2 || tb->rank < 2) return false;
  bool trans = ir_node_attr_int(mm, "kiln.transpose_b", 0) != 0;
  /* lower_matmul's M, K and N, symbolic when no binding folds them */
  return !ir_dim_is_const(ta->dims[ta->rank - 2], NULL) ||
         !ir_dim_is_const(ta->dims[ta->rank - 1], NULL) ||
         !ir_dim_is_const(tb->dims[tb->rank - (trans ? 2 : 1)], NULL);
}

void jit_matmul_batch_strides(jit_fn *f, const ir_type *ta, int nba, const ir_type *tb, int nbb,
                              const ir_type *tc, int nb, const LLVMValueRef mkn[3],
                              LLVMValueRef *bdim, LLVMValueRef *sa, LLVMValueRef *sb,
                              LLVMValueRef *sc) {
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1);
  LLVMValueRef M = mkn[0], K = mkn[1], N = mkn[2];
  LLVMValueRef acc_a = jit_mul(f, M, K), acc_b = jit_mul(f, K, N), acc_c = jit_mul(f, M, N);
  for (int j = nb - 1; j >= 0; j--) {
    bdim[j] = jit_dim(f, tc->dims[j]);
    sc[j] = acc_c;
    acc_c = jit_mul(f, acc_c, bdim[j]);
    int ja = j - (nb - nba), jb = j - (nb - nbb);
    sa[j] = sb[j] = zero;
    if (ja >= 0) {
      LLVMValueRef d = jit_dim(f, ta->dims[ja]);
      LLVMValueRef is1 = LLVMBuildICmp(f->b, LLVMIntEQ, d, one, "");
      sa[j] = LLVMBuildSelect(f->b, is1, zero, acc_a, "");
      acc_a = jit_mul(f, acc_a, d);
    }
    if (jb >= 0) {
      LLVMValueRef d = jit_dim(f, tb->dims[jb]);
      LLVMValueRef is1 = LLVMBuildICmp(f->b, LLVMIntEQ, d, one, "");
      sb[j] = LLVMBuildSelect(f->b, is1, zero, acc_b, "");
      acc_b = jit_mul(f, acc_b, d);
    }
  }
}

void jit_matmul_batch_begin(jit_fn *f, int nb, const LLVMValueRef *bdim, const LLVMValueRef *sa,
                            const LLVMValueRef *sb, const LLVMValueRef *sc, jit_loop *batch,
                            LLVMValueRef off[3]) {
  off[0] = off[1] = off[2] = jit_i64(f, 0);
  for (int j = 0; j < nb; j++) {
    LLVMValueRef iv = jit_loop_begin(f, &batch[j], jit_i64(f, 0), bdim[j], "b");
    off[0] = jit_add(f, off[0], jit_mul(f, iv, sa[j]));
    off[1] = jit_add(f, off[1], jit_mul(f, iv, sb[j]));
    off[2] = jit_add(f, off[2], jit_mul(f, iv, sc[j]));
  }
}

int jit_lower_matmul(jit_fn *f) {
  return jit_emit_matmul(f, f->node, jit_in(f, 0), jit_in(f, 1), jit_out(f, 0), NULL, NULL);
}

/* t with a dim of 1 inserted before axis `at`, dims from arena a. */
static bool view_with_one(ir_arena *a, const ir_type *t, int at, ir_type *out) {
  *out = *t;
  const ir_dim **d = ir_arena_alloc(a, (size_t)(t->rank + 1) * sizeof *d);
  const ir_dim *one = ir_dim_const(a, 1);
  if (!d || !one || t->rank >= IR_MAX_RANK) return false;
  for (int i = 0, j = 0; i <= t->rank; i++) d[i] = i == at ? one : t->dims[j++];
  out->rank = t->rank + 1;
  out->dims = d;
  return true;
}

bool jit_matmul_view(const ir_node *n, ir_arena *a, jit_matmul_1d *v) {
  v->va = *n->in[0];
  v->vb = *n->in[1];
  v->vc = *n->out[0];
  v->in[0] = &v->va;
  v->in[1] = &v->vb;
  v->out[0] = &v->vc;
  v->node = *n;
  v->node.in = v->in;
  v->node.out = v->out;
  ir_type t;
  if (v->va.type.rank == 1) {
    t = v->vc.type;
    if (!view_with_one(a, &t, t.rank - (v->vb.type.rank == 1 ? 0 : 1), &v->vc.type)) return false;
    t = v->va.type;
    if (!view_with_one(a, &t, 0, &v->va.type)) return false;
  }
  if (v->vb.type.rank == 1) {
    t = v->vc.type;
    if (!view_with_one(a, &t, t.rank, &v->vc.type)) return false;
    t = v->vb.type;
    if (!view_with_one(a, &t, 1, &v->vb.type)) return false;
  }
  return true;
}

/* A matmul with a 1-D operand as the matmul of its matrix view. */
static int emit_matmul_1d(jit_fn *f, const ir_node *n, LLVMValueRef A, LLVMValueRef B,
                          LLVMValueRef C) {
  ir_arena *a = ir_arena_new();
  jit_matmul_1d v;
  int rc = a && jit_matmul_view(n, a, &v) ? jit_emit_matmul(f, &v.node, A, B, C, NULL, NULL)
                                          : jit_fn_error(f, "out of memory");
  ir_arena_free(a);
  return rc;
}

int jit_emit_matmul(jit_fn *f, const ir_node *n, LLVMValueRef A, LLVMValueRef B, LLVMValueRef C,
                    const jit_gemm_epi *epi, const jit_matmul_in_place *ip) {
  if (n->nin != 2 || n->nout != 1)
    return jit_fn_error(f, "expected 2 operands and 1 result, got %d and %d", n->nin, n->nout);
  bool in_place = ip && (ip->on[0] || ip->on[1]);
  if (in_place && (n->in[0]->type.rank < 2 || n->in[1]->type.rank < 2 ||
                   ir_node_attr_int(n, "kiln.wide_result", 0) ||
                   ir_node_attr_int(n, "kiln.packed_b", 0)))
    return jit_fn_error(f, "an operand read in place needs rank >= 2, not a half or packed GEMM");
  if (!epi && (n->in[0]->type.rank == 1 || n->in[1]->type.rank == 1))
    return emit_matmul_1d(f, n, A, B, C);
  /* half operands, an f32 result (ir/half_gemm.c): the half GEMM template */
  if (ir_node_attr_int(n, "kiln.wide_result", 0)) return jit_emit_matmul_half(f, n, A, B, C, epi);
  const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *tc = &n->out[0]->type;
  int ra = ta->rank, rb = tb->rank, rc = tc->rank;
  if (ra < 2 || rb < 2) return jit_fn_error(f, "operands must have rank >= 2, got %d and %d", ra, rb);
  if (rc != (ra > rb ? ra : rb))
    return jit_fn_error(f, "result rank %d does not match operand ranks %d and %d", rc, ra, rb);
  ir_dtype dt = tc->dtype;
  if (ta->dtype != dt || tb->dtype != dt)
    return jit_fn_error(f, "operand dtypes %s, %s differ from result dtype %s", ir_dtype_name(ta->dtype),
                  ir_dtype_name(tb->dtype), ir_dtype_name(dt));
  bool isf = ir_dtype_is_float(dt);
  if (!isf && !ir_dtype_is_int(dt))
    return jit_fn_error(f, "dtype %s is not supported", ir_dtype_name(dt));

  LLVMTypeRef et = jit_type(f, dt), mt = jit_mem_type(f, dt);
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1);
  LLVMValueRef M = jit_dim(f, ta->dims[ra - 2]);
  LLVMValueRef K = jit_dim(f, ta->dims[ra - 1]);
  /* kiln.transpose_b (ir/fold_transpose.c): B is [..., N, K], element
   * (k, j) of a batch's matrix at j * K + k */
  bool trans = ir_node_attr_int(n, "kiln.transpose_b", 0) != 0;
  LLVMValueRef N = jit_dim(f, tb->dims[rb - (trans ? 2 : 1)]);

  /* Batch strides in elements; stride 0 where an operand's axis is 1 (or
   * absent). Computed once, before any loop. */
  int nb = rc - 2;
  LLVMValueRef bdim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], sc[IR_MAX_RANK];
  jit_matmul_batch_strides(f, ta, ra - 2, tb, rb - 2, tc, nb, (LLVMValueRef[]){M, K, N}, bdim,
                           sa, sb, sc);
  /* Row strides: dense, or an operand's own where it is read in place (its
   * batch strides then too, still 0 where its axis is 1). */
  LLVMValueRef lda = K, ldb = trans ? K : N;
  for (int k = 0; in_place && k < 2; k++) {
    if (!ip->on[k]) continue;
    const ir_type *t = k ? tb : ta;
    LLVMValueRef *s = k ? sb : sa;
    *(k ? &ldb : &lda) = ip->strides[k][t->rank - 2];
    for (int j = 0; j < nb; j++) {
      int jt = j - (nb - (t->rank - 2));
      if (jt < 0) continue;
      LLVMValueRef is1 = LLVMBuildICmp(f->b, LLVMIntEQ, jit_dim(f, t->dims[jt]), one, "");
      s[j] = LLVMBuildSelect(f->b, is1, zero, ip->strides[k][jt], "");
    }
  }

  if (epi && dt != IR_DT_F32 && dt != IR_DT_F64)
    return jit_fn_error(f, "a GEMM epilogue needs f32 or f64, not %s", ir_dtype_name(dt));

  /* B prepacked by the runtime (kiln.packed_b = the panel width it packed
   * with): only for the template path, a rank-2 B (the same matrix for
   * every batch), and only when the width is the one this target's entry
   * reads; anything else is an error, never a silent misread. */
  int64_t packed = ir_node_attr_int(n, "kiln.packed_b", 0);
  if (packed) {
    if ((dt != IR_DT_F32 && dt != IR_DT_F64) || rb != 2)
      return jit_fn_error(f, "kiln.packed_b needs an f32 / f64 matmul with a rank-2 B, got %s "
                          "and rank %d", ir_dtype_name(dt), rb);
    int64_t want = jit_gemm_panel_width(jit_target_has(f, "avx512f"), dt);
    if (packed != want)
      return jit_fn_error(f, "kiln.packed_b = %lld, but this target's GEMM reads panels of %lld",
                          (long long)packed, (long long)want);
  }

  /* f32 / f64: the template. Linked (once per module) before any batch loop
   * is opened, so a failure leaves no half-built loop behind. */
  LLVMValueRef gemm = NULL, gemm_work = NULL;
  if (dt == IR_DT_F32 || dt == IR_DT_F64) {
    /* a prepacked B was packed from whichever layout it had (prepack.c);
     * symbolic sizes fold to nothing, so they call the prebuilt entry (for
     * a kernel built without a binding: jit_node_calls_prebuilt_gemm) */
    bool sym = !(LLVMIsConstant(M) && LLVMIsConstant(N) && LLVMIsConstant(K));
    if (jit_gemm_entries(f, dt, packed ? "pex" : trans ? "tex" : "ex", sym, &gemm,
                         packed ? NULL : &gemm_work) != 0)
      return -1;
  }
  LLVMValueRef row_bytes = jit_mul(f, N, jit_i64(f, (int64_t)ir_dtype_size(dt)));
  unsigned align = (unsigned)ir_dtype_size(dt);

  /* The template's workspace (a wide B block) for this shape: malloc'd once
   * per call when it wants one and shared by every batch; NULL (the
   * template then blocks on its stack) when it wants none or malloc fails. */
  LLVMValueRef work = NULL;
  LLVMTypeRef malloc_ty = NULL, free_ty = NULL;
  LLVMValueRef free_fn = NULL;
  if (gemm_work) { /* _pex takes none */
    LLVMValueRef wargs[3] = {M, N, K};
    LLVMValueRef welems =
        LLVMBuildCall2(f->b, LLVMGlobalGetValueType(gemm_work), gemm_work, wargs, 3, "work.elems");
    LLVMValueRef wbytes = jit_mul(f, welems, jit_i64(f, (int64_t)ir_dtype_size(dt)));
    malloc_ty = LLVMFunctionType(f->t_ptr, &f->t_i64, 1, 0);
    free_ty = LLVMFunctionType(f->t_void, &f->t_ptr, 1, 0);
    LLVMValueRef malloc_fn = jit_libc_fn(f, "malloc", malloc_ty);
    free_fn = jit_libc_fn(f, "free", free_ty);
    LLVMBasicBlockRef from = LLVMGetInsertBlock(f->b);
    LLVMBasicBlockRef alloc_bb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "gemm.alloc");
    LLVMBasicBlockRef join_bb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "gemm.work");
    LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntSGT, wbytes, zero, ""), alloc_bb, join_bb);
    LLVMPositionBuilderAtEnd(f->b, alloc_bb);
    LLVMValueRef p = LLVMBuildCall2(f->b, malloc_ty, malloc_fn, &wbytes, 1, "work.heap");
    LLVMBuildBr(f->b, join_bb);
    LLVMPositionBuilderAtEnd(f->b, join_bb);
    work = LLVMBuildPhi(f->b, f->t_ptr, "work");
    LLVMValueRef vals[2] = {LLVMConstPointerNull(f->t_ptr), p};
    LLVMBasicBlockRef bbs[2] = {from, alloc_bb};
    LLVMAddIncoming(work, vals, bbs, 2);
  }

  /* Parts of a batched GEMM: with at least nparts batches each part takes
   * whole batches (its range of the batch index), else every part takes its
   * piece of every batch's GEMM (the template splits rows or columns). */
  LLVMValueRef blo = NULL, bhi = NULL, whole = NULL, bstr[IR_MAX_RANK];
  if (gemm && nb > 0) {
    LLVMValueRef nbatch = one;
    for (int j = nb - 1; j >= 0; j--) {
      bstr[j] = nbatch;
      nbatch = jit_mul(f, nbatch, bdim[j]);
    }
    jit_split_range(f, nbatch, &blo, &bhi);
    whole = LLVMBuildICmp(f->b, LLVMIntUGE, nbatch, f->nparts, "whole.batches");
  }
  jit_loop batch[IR_MAX_RANK];
  LLVMValueRef offa = zero, offb = zero, offc = zero, bidx = zero;
  for (int j = 0; j < nb; j++) {
    LLVMValueRef iv = jit_loop_begin(f, &batch[j], zero, bdim[j], "b");
    offa = jit_add(f, offa, jit_mul(f, iv, sa[j]));
    offb = jit_add(f, offb, jit_mul(f, iv, sb[j]));
    offc = jit_add(f, offc, jit_mul(f, iv, sc[j]));
    if (whole) bidx = jit_add(f, bidx, jit_mul(f, iv, bstr[j]));
  }

  if (gemm) {
    /* the epilogue's buffers: their offsets for this batch */
    for (int b = 0; epi && b < epi->nbufs; b++) {
      LLVMValueRef off = zero;
      for (int j = 0; j < nb; j++) off = jit_add(f, off, jit_mul(f, batch[j].iv, epi->bstride[b][j]));
      LLVMSetAlignment(LLVMBuildStore(f->b, off, epi->boff_slot[b]), 8);
    }
    f->split = true;
    LLVMValueRef part = f->part, nparts = f->nparts;
    LLVMBasicBlockRef cont = NULL;
    if (whole) { /* this part's whole batches only, each GEMM in one piece */
      LLVMValueRef mine = LLVMBuildAnd(f->b, LLVMBuildICmp(f->b, LLVMIntSGE, bidx, blo, ""),
                                       LLVMBuildICmp(f->b, LLVMIntSLT, bidx, bhi, ""), "");
      LLVMValueRef run = LLVMBuildOr(f->b, mine, LLVMBuildNot(f->b, whole, ""), "");
      LLVMBasicBlockRef call_bb = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "gemm.batch");
      cont = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "gemm.next");
      LLVMBuildCondBr(f->b, run, call_bb, cont);
      LLVMPositionBuilderAtEnd(f->b, call_bb);
      part = LLVMBuildSelect(f->b, whole, zero, f->part, "");
      nparts = LLVMBuildSelect(f->b, whole, one, f->nparts, "");
    }
    LLVMValueRef efn = epi ? epi->fn : LLVMConstPointerNull(f->t_ptr);
    LLVMValueRef ectx = epi ? epi->ctx : LLVMConstPointerNull(f->t_ptr);
    LLVMValueRef ap = elem_ptr(f, mt, A, offa), cp = elem_ptr(f, mt, C, offc);
    if (packed) { /* _pex: the panels as they are (no batch offset, no ldb) */
      LLVMValueRef args[12] = {M, N, K, ap, lda, B, cp, N, part, nparts, efn, ectx};
      LLVMBuildCall2(f->b, LLVMGlobalGetValueType(gemm), gemm, args, 12, "");
    } else {
      LLVMValueRef args[14] = {M, N, K, ap, lda, elem_ptr(f, mt, B, offb), ldb,
                               cp, N, work, part, nparts, efn, ectx};
      LLVMBuildCall2(f->b, LLVMGlobalGetValueType(gemm), gemm, args, 14, "");
    }
    if (cont) {
      LLVMBuildBr(f->b, cont);
      LLVMPositionBuilderAtEnd(f->b, cont);
    }
    for (int jj = nb - 1; jj >= 0; jj--) jit_loop_end(f, &batch[jj]);
    if (work) LLVMBuildCall2(f->b, free_ty, free_fn, &work, 1, ""); /* free(NULL): no-op */
    return f->failed ? -1 : 0;
  }

  LLVMValueRef ilo, ihi;
  jit_split_range(f, M, &ilo, &ihi); /* rows of every batch, split between the parts */
  jit_loop li;
  LLVMValueRef i = jit_loop_begin(f, &li, ilo, ihi, "i");
  LLVMValueRef arow = jit_add(f, offa, jit_mul(f, i, lda));
  LLVMValueRef crow = jit_add(f, offc, jit_mul(f, i, N));
  LLVMValueRef cptr = elem_ptr(f, mt, C, crow);
  LLVMBuildMemSet(f->b, cptr, LLVMConstInt(f->t_i8, 0, 0), row_bytes, align);

  jit_loop lk;
  LLVMValueRef k = jit_loop_begin(f, &lk, zero, K, "k");
  LLVMValueRef aik = jit_load(f, dt, A, jit_add(f, arow, k));
  LLVMValueRef brow = jit_add(f, offb, trans ? k : jit_mul(f, k, ldb));
  jit_loop lj;
  LLVMValueRef j = jit_loop_begin(f, &lj, zero, N, "j");
  LLVMValueRef bkj = jit_load(f, dt, B, jit_add(f, brow, trans ? jit_mul(f, j, ldb) : j));
  LLVMValueRef cidx = jit_add(f, crow, j);
  LLVMValueRef cij = jit_load(f, dt, C, cidx);
  LLVMValueRef r;
  if (isf) {
    LLVMValueRef args[3] = {aik, bkj, cij};
    r = jit_intrinsic(f, "llvm.fmuladd", et, args, 3);
  } else {
    r = LLVMBuildAdd(f->b, LLVMBuildMul(f->b, aik, bkj, ""), cij, "");
  }
  jit_store(f, dt, C, cidx, r);
  jit_loop_end(f, &lj);
  jit_loop_end(f, &lk);
  jit_loop_end(f, &li);

  for (int jj = nb - 1; jj >= 0; jj--) jit_loop_end(f, &batch[jj]);
  return f->failed ? -1 : 0;
}
