/* matmul_half.c - host lowering of a mo.matmul with kiln.wide_result (f16 /
 * bf16 operands read as they are, an f32 result: ir/half_gemm.c) through the
 * half GEMM template (kernels-templates/gemm_half.c): per batch, one call of
 * kiln_hgemm_<t>_<layout>, its _avx512 form where the kernel's target has
 * AVX512-BF16 (bf16: vdpbf16ps for few rows) or AVX-512 with F16C (f16:
 * converted, f32 FMA), bf16's _avx512dp form (vdpbf16ps for every M) on AMD
 * Zen 4 and later, the generic loops elsewhere. The host pipeline rewrites matmuls to
 * this form only where the native entries run (jit_engine_half_gemm) or the
 * engine is forced to the generic ones (KILN_HALF_GEMM=generic, tests):
 * the generic loops are slower than the casts and the f32 GEMM.
 *
 * a [..., M, K] x b [..., K, N] (or [..., N, K] with kiln.transpose_b: the
 * _tex entry) -> c f32 [..., M, N]; batch dims broadcast as jit/matmul.c's
 * (jit_matmul_batch_strides); 1-D operands come here as their matrix views.
 * Prepacked b (kiln.packed_b = 64, src/prepack.c): the _pex entry reads the
 * panels, the same for every batch (rank-2 b only).
 * Epilogue (jit/fused.c): the template calls it on each finished block of
 * the batch's C, with the batch's buffer offsets stored first (as matmul.c).
 * Parts: every batch's C is cut between the parts by the template (row
 * ranges, or ranges of 64-column panels when M is small: a decode step's B
 * is then read half by each of two threads), so the parts never share a
 * result element; how an element is summed does not depend on the split.
 * Assumes the shape rule held (ir/infer.c: half operands of one dtype). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit.h"
#include "lower.h"
#include "template.h"

int64_t jit_hgemm_panel_width(void) { return 64; } /* gemm_half.c's HG_NR */

/* The _avx512 entries' needs for dt */
static const char *const NATIVE_NEEDS[2][3] = {{"avx512f", "avx512bw", "f16c"},
                                               {"avx512f", "avx512bw", "avx512bf16"}};

static bool has_native_needs(const char *features, ir_dtype dt) {
  bool r = true;
  for (int i = 0; i < 3; i++)
    r = r && jit_features_have(features, NATIVE_NEEDS[dt == IR_DT_BF16][i]);
  return r;
}

/* bf16 takes the _avx512dp entries (vdpbf16ps for every M) where the CPU
 * runs vdpbf16ps at twice the f32 FMA's FLOP rate: AMD's Zen 4 and later
 * (znver4, znver5: the only AMD cores with AVX512-BF16), measured 1.9-2.9x
 * the converting kernel's GFLOP/s from 16 to 1024 rows
 * (gemm_half_avx512.h). Elsewhere (the Xeon gemm_half_fma.h was measured
 * on: half the FMA's rate) the _avx512 entries choose by M. */
const char *jit_hgemm_entry_suffix(const char *cpu, const char *features, ir_dtype dt) {
  if (!has_native_needs(features, dt)) return "";
  if (dt == IR_DT_BF16 && cpu && strncmp(cpu, "znver", 5) == 0) return "_avx512dp";
  return "_avx512";
}

bool jit_engine_half_gemm(const jit_engine *e, ir_dtype dt) {
  return jit_engine_generic_half(e) || has_native_needs(jit_engine_features(e), dt);
}

int jit_emit_matmul_half(jit_fn *f, const ir_node *n, LLVMValueRef A, LLVMValueRef B,
                         LLVMValueRef C, const jit_gemm_epi *epi) {
  const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *tc = &n->out[0]->type;
  int ra = ta->rank, rb = tb->rank, rc = tc->rank;
  ir_dtype dt = ta->dtype;
  if (!ir_dtype_is_half(dt) || tb->dtype != dt || tc->dtype != IR_DT_F32)
    return jit_fn_error(f, "mo.matmul: kiln.wide_result needs f16 / bf16 operands of one dtype "
                        "and an f32 result, got %s, %s -> %s", ir_dtype_name(dt),
                        ir_dtype_name(tb->dtype), ir_dtype_name(tc->dtype));
  if (ra < 2 || rb < 2 || rc != (ra > rb ? ra : rb))
    return jit_fn_error(f, "mo.matmul: operand ranks %d and %d, result rank %d", ra, rb, rc);
  bool trans = ir_node_attr_int(n, "kiln.transpose_b", 0) != 0;
  int64_t packed = ir_node_attr_int(n, "kiln.packed_b", 0);
  if (packed && (rb != 2 || packed != jit_hgemm_panel_width()))
    return jit_fn_error(f, "mo.matmul: kiln.packed_b = %lld on half operands needs a rank-2 b "
                        "and panels of %lld", (long long)packed,
                        (long long)jit_hgemm_panel_width());
  char entry[64], *cpu = jit_target_cpu(f), *features = jit_target_features(f);
  snprintf(entry, sizeof entry, "kiln_hgemm_%s_%s%s", dt == IR_DT_BF16 ? "bf16" : "f16",
           packed ? "pex" : trans ? "tex" : "ex",
           f->generic_half ? "" : jit_hgemm_entry_suffix(cpu, features, dt));
  free(cpu);
  free(features);
  LLVMValueRef fn = jit_template_function(f, JIT_TMPL_GEMM_HALF, entry);
  if (!fn) return -1;

  LLVMValueRef zero = jit_i64(f, 0);
  LLVMValueRef M = jit_dim(f, ta->dims[ra - 2]), K = jit_dim(f, ta->dims[ra - 1]);
  LLVMValueRef N = jit_dim(f, tb->dims[rb - (trans ? 2 : 1)]);
  int nb = rc - 2;
  LLVMValueRef bdim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], sc[IR_MAX_RANK];
  jit_matmul_batch_strides(f, ta, ra - 2, tb, rb - 2, tc, nb, (LLVMValueRef[]){M, K, N}, bdim,
                           sa, sb, sc);
  f->split = true; /* the template cuts C into the parts (rows, or panels for few rows) */
  jit_loop batch[IR_MAX_RANK];
  LLVMValueRef off[3];
  jit_matmul_batch_begin(f, nb, bdim, sa, sb, sc, batch, off);
  LLVMValueRef offa = off[0], offb = off[1], offc = off[2];
  for (int b = 0; epi && b < epi->nbufs; b++) { /* the epilogue's offsets for this batch */
    LLVMValueRef boff = zero;
    for (int j = 0; j < nb; j++)
      boff = jit_add(f, boff, jit_mul(f, batch[j].iv, epi->bstride[b][j]));
    LLVMSetAlignment(LLVMBuildStore(f->b, boff, epi->boff_slot[b]), 8);
  }
  LLVMValueRef ap = LLVMBuildGEP2(f->b, f->t_i16, A, &offa, 1, "a");
  LLVMValueRef bp = packed ? B : LLVMBuildGEP2(f->b, f->t_i16, B, &offb, 1, "b");
  LLVMValueRef cp = LLVMBuildGEP2(f->b, f->t_f32, C, &offc, 1, "c");
  LLVMValueRef efn = epi ? epi->fn : LLVMConstPointerNull(f->t_ptr);
  LLVMValueRef ectx = epi ? epi->ctx : LLVMConstPointerNull(f->t_ptr);
  LLVMValueRef args[] = {M, N, K, ap, bp, cp, f->part, f->nparts, efn, ectx};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 10, "");
  for (int j = nb - 1; j >= 0; j--) jit_loop_end(f, &batch[j]);
  return f->failed ? -1 : 0;
}
