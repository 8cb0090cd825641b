/* matmul_integer.c - host lowering of mo.matmul.integer (ONNX MatMulInteger):
 * per batch, one call of the 8-bit GEMM template's entry for the operands'
 * signedness (kernels-templates/gemm_int8.c: kiln_mmi_{u8,s8}{u8,s8}), in
 * the fastest form the kernel's target runs (jit_mmi_isa_for): _avx512vnni
 * (vpdpbusd, AVX512-VNNI and BW), _avxvnni (256-bit vpdpbusd), _avx2
 * (vpmaddwd), the generic loops elsewhere; no faster than the engine's cap
 * (jit_engine_cap_int8_gemm: KILN_INT8_GEMM, for tests).
 *
 * a [..., M, K] x b [..., K, N] -> si32 [..., M, N]; a 1-D a is one row, a
 * 1-D b one column. Batch dims broadcast like mo.matmul (jit/matmul.c): an
 * operand's batch axis of size 1 is read with stride 0, decided at run time.
 * Zero points (operands 2 and 3) go to every call with their entry counts (1
 * or M / N), or none when absent.
 *
 * Prepacked b: with kiln.packed_b = 64 (src/prepack.c, for every form but
 * the generic one) b's buffer holds the panels and column sums the _pex
 * entries read (gemm_int8_vnni.h).
 * Parts: every batch's C is cut between the parts by the template (row
 * ranges, or ranges of 64-column panels when M is small: a decode step's B
 * is then read part by each thread), so the parts never share a result
 * element.
 * SIMT targets (jit_simt_lower_matmul_integer): one result element per
 * thread, a dot product over K in si32 (the same wrapping sum).
 * Assumes the shape rule (ir/infer_matmul_integer.c) held: ui8 / si8
 * operands, zero points of their matrices' dtypes with 1 or M / N entries,
 * K equal (symbolic ones checked at run time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit.h"
#include "lower.h"
#include "simt.h"
#include "template.h"

static const char *sign_name(ir_dtype dt) { return dt == IR_DT_SI8 ? "s8" : "u8"; }

static const char *const ISA_NAMES[] = {[JIT_MMI_GENERIC] = "generic", [JIT_MMI_AVX2] = "avx2",
                                        [JIT_MMI_AVXVNNI] = "avxvnni",
                                        [JIT_MMI_AVX512VNNI] = "avx512vnni"};

const char *jit_mmi_isa_name(jit_mmi_isa isa) {
  return isa >= JIT_MMI_GENERIC && isa <= JIT_MMI_AVX512VNNI ? ISA_NAMES[isa] : "?";
}

jit_mmi_isa jit_mmi_isa_parse(const char *name) {
  for (int i = JIT_MMI_GENERIC; name && i <= JIT_MMI_AVX512VNNI; i++)
    if (strcmp(name, ISA_NAMES[i]) == 0) return (jit_mmi_isa)i;
  return 0;
}

jit_mmi_isa jit_mmi_isa_for(const char *features, jit_mmi_isa cap) {
  bool avx2 = jit_features_have(features, "avx2");
  jit_mmi_isa best = JIT_MMI_GENERIC;
  if (avx2 && jit_features_have(features, "avx512f") &&
      jit_features_have(features, "avx512bw") && jit_features_have(features, "avx512vnni"))
    best = JIT_MMI_AVX512VNNI;
  else if (avx2 && jit_features_have(features, "avxvnni"))
    best = JIT_MMI_AVXVNNI;
  else if (avx2)
    best = JIT_MMI_AVX2;
  return cap && cap < best ? cap : best;
}

int64_t jit_mmi_panel_width(jit_mmi_isa isa) { return isa > JIT_MMI_GENERIC ? 64 : 0; }

/* The kernel f's target runs: its features (jit_target_features) and the
 * engine's cap */
static jit_mmi_isa kernel_isa(jit_fn *f) {
  char *features = jit_target_features(f);
  jit_mmi_isa isa = jit_mmi_isa_for(features, f->int8_cap);
  free(features);
  return isa;
}

/* The product's sizes and batch axes: M, K, N (1 for a 1-D operand's
 * missing axis), *nb batch axes with their sizes and strides of a, b, c
 * (jit_matmul_batch_strides). */
static void mmi_shape(jit_fn *f, LLVMValueRef mkn[3], int *nb, LLVMValueRef *bdim,
                      LLVMValueRef *sa, LLVMValueRef *sb, LLVMValueRef *sc) {
  const ir_node *n = f->node;
  const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *tc = &n->out[0]->type;
  int ra = ta->rank, rb = tb->rank;
  LLVMValueRef one = jit_i64(f, 1);
  mkn[0] = ra >= 2 ? jit_dim(f, ta->dims[ra - 2]) : one;
  mkn[1] = jit_dim(f, ta->dims[ra - 1]);
  mkn[2] = rb >= 2 ? jit_dim(f, tb->dims[rb - 1]) : one;
  /* batch axes: those of the result before its matrix axes */
  int nba = ra - 2 > 0 ? ra - 2 : 0, nbb = rb - 2 > 0 ? rb - 2 : 0;
  *nb = nba > nbb ? nba : nbb;
  jit_matmul_batch_strides(f, ta, nba, tb, nbb, tc, *nb, mkn, bdim, sa, sb, sc);
}

int jit_lower_matmul_integer(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type;
  int ra = ta->rank, rb = tb->rank;
  if (ra < 1 || rb < 1) return jit_fn_error(f, "mo.matmul.integer: operands of rank 0");
  char entry[48];
  jit_mmi_isa isa = kernel_isa(f);
  /* kiln.packed_b (src/prepack.c): b is a rank-2 constant in this target's
   * panel layout; anything else is an error, never a misread */
  int64_t packed = ir_node_attr_int(n, "kiln.packed_b", 0);
  if (packed && (rb != 2 || packed != jit_mmi_panel_width(isa)))
    return jit_fn_error(f, "mo.matmul.integer: kiln.packed_b = %lld needs a rank-2 b and a "
                        "target whose int8 GEMM reads panels of that width (%lld here)",
                        (long long)packed, (long long)jit_mmi_panel_width(isa));
  snprintf(entry, sizeof entry, "kiln_mmi_%s%s%s%s%s", sign_name(ta->dtype),
           sign_name(tb->dtype), isa > JIT_MMI_GENERIC ? "_" : "",
           isa > JIT_MMI_GENERIC ? jit_mmi_isa_name(isa) : "", packed ? "_pex" : "");
  LLVMValueRef fn = jit_template_function(f, JIT_TMPL_GEMM_INT8, entry);
  if (!fn) return -1;

  LLVMValueRef zero = jit_i64(f, 0), mkn[3];
  LLVMValueRef bdim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], sc[IR_MAX_RANK];
  int nb;
  mmi_shape(f, mkn, &nb, bdim, sa, sb, sc);
  LLVMValueRef M = mkn[0], K = mkn[1], N = mkn[2];
  /* zero points: their buffers and entry counts (0: absent) */
  LLVMValueRef zp[2], nzp[2];
  for (int k = 0; k < 2; k++) {
    bool has = n->nin > 2 + k;
    zp[k] = has ? jit_in(f, 2 + k) : LLVMConstPointerNull(f->t_ptr);
    nzp[k] = has ? jit_numel_range(f, &n->in[2 + k]->type, 0, n->in[2 + k]->type.rank) : zero;
  }

  f->split = true; /* the template cuts C into the parts (rows, or panels for few rows) */
  jit_loop batch[IR_MAX_RANK];
  LLVMValueRef off[3];
  jit_matmul_batch_begin(f, nb, bdim, sa, sb, sc, batch, off);
  LLVMValueRef offa = off[0], offb = off[1], offc = off[2];
  LLVMValueRef ap = LLVMBuildGEP2(f->b, f->t_i8, jit_in(f, 0), &offa, 1, "a");
  LLVMValueRef bp = LLVMBuildGEP2(f->b, f->t_i8, jit_in(f, 1), &offb, 1, "b");
  LLVMValueRef cp = LLVMBuildGEP2(f->b, f->t_i32, jit_out(f, 0), &offc, 1, "c");
  LLVMValueRef args[] = {M, N, K, ap, bp, cp, zp[0], nzp[0], zp[1], nzp[1], f->part, f->nparts};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 12, "");
  for (int j = nb - 1; j >= 0; j--) jit_loop_end(f, &batch[j]);
  return f->failed ? -1 : 0;
}

/* Element idx of an 8-bit operand, widened to i32 by its signedness. */
static LLVMValueRef load_i32(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef idx) {
  LLVMValueRef v = jit_load(f, dt, base, idx);
  return dt == IR_DT_SI8 ? LLVMBuildSExt(f->b, v, f->t_i32, "") : LLVMBuildZExt(f->b, v, f->t_i32, "");
}

int jit_simt_lower_matmul_integer(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *tc = &n->out[0]->type;
  int ra = ta->rank, rb = tb->rank;
  if (ra < 1 || rb < 1) return jit_fn_error(f, "mo.matmul.integer: operands of rank 0");
  if (ir_node_attr_int(n, "kiln.packed_b", 0)) /* the CPU runtime's, never a device's */
    return jit_fn_error(f, "mo.matmul.integer: kiln.packed_b is not supported on SIMT targets");
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1), mkn[3];
  LLVMValueRef dims[IR_MAX_RANK + 2], sa[IR_MAX_RANK], sb[IR_MAX_RANK], sc[IR_MAX_RANK];
  int nb;
  mmi_shape(f, mkn, &nb, dims, sa, sb, sc);
  LLVMValueRef K = mkn[1], N = mkn[2];
  dims[nb] = mkn[0];
  dims[nb + 1] = N;
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, tc, 0, tc->rank));
  LLVMValueRef co[IR_MAX_RANK + 2];
  jit_simt_unravel(f, e, dims, nb + 2, co);
  LLVMValueRef offa = zero, offb = zero;
  for (int j = 0; j < nb; j++) {
    offa = jit_add(f, offa, jit_mul(f, co[j], sa[j]));
    offb = jit_add(f, offb, jit_mul(f, co[j], sb[j]));
  }
  LLVMValueRef i = co[nb], jn = co[nb + 1];
  /* zero points: one entry, or one per row of a / column of b */
  LLVMValueRef zp[2] = {LLVMConstInt(f->t_i32, 0, 0), LLVMConstInt(f->t_i32, 0, 0)};
  for (int k = 0; k < 2 && n->nin > 2 + k; k++) {
    LLVMValueRef cnt = jit_numel_range(f, &n->in[2 + k]->type, 0, n->in[2 + k]->type.rank);
    LLVMValueRef at = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, cnt, one, ""), zero,
                                      k == 0 ? i : jn, "");
    zp[k] = load_i32(f, n->in[2 + k]->type.dtype, jit_in(f, 2 + k), at);
  }
  LLVMValueRef acc = jit_alloca(f, f->t_i32, "acc");
  LLVMBuildStore(f->b, LLVMConstInt(f->t_i32, 0, 0), acc);
  LLVMValueRef arow = jit_add(f, offa, jit_mul(f, i, K));
  jit_loop Kk;
  LLVMValueRef k = jit_loop_begin(f, &Kk, zero, K, "k");
  LLVMValueRef av = LLVMBuildSub(f->b, load_i32(f, ta->dtype, jit_in(f, 0), jit_add(f, arow, k)),
                                 zp[0], "");
  LLVMValueRef bv = LLVMBuildSub(
      f->b, load_i32(f, tb->dtype, jit_in(f, 1), jit_add(f, offb, jit_add(f, jit_mul(f, k, N), jn))),
      zp[1], "");
  LLVMValueRef sum = LLVMBuildAdd(f->b, LLVMBuildLoad2(f->b, f->t_i32, acc, ""),
                                  LLVMBuildMul(f->b, av, bv, ""), "");
  LLVMBuildStore(f->b, sum, acc);
  jit_loop_end(f, &Kk);
  jit_store(f, IR_DT_SI32, jit_out(f, 0), e, LLVMBuildLoad2(f->b, f->t_i32, acc, ""));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
