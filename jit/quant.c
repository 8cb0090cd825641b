/* quant.c - host lowering of mo.qmatmul and mo.dequantize: a call of the
 * qmatmul template's entry for the node's encoding
 * (kernels-templates/qmatmul.c), which computes from the GGUF blocks with
 * no dequantized copy of the weight: qmatmul's _avx512 entry where the
 * target has AVX2, F16C, FMA, AVX512F / BW / VL, AVX512-VNNI and
 * AVX512-VBMI (512-bit vpdpbusd / vpdpwssd, vpermt2b), its _avxvnni entry
 * with AVX2, F16C, FMA and AVX-VNNI (256-bit vpdpbusd), its _avx2 entry with
 * AVX2 and F16C (vpmaddubsw / vpmaddwd), else its generic one; dequantize's
 * _f16c entry where the target has F16C (the f16 scales converted by one
 * instruction).
 *
 * Splitting: qmatmul splits N (rows of the weight) between the parts, so a
 * decode step (M = 1) streams each part's slice of the weight once and the
 * parts never share a result; dequantize splits the blocks.
 * Assumes the shape rule (ir/infer_quant.c) held: a known encoding, ui8
 * blocks with a static last dim of whole blocks, qmatmul's K matching. */
#include <stdio.h>

#include "../ir/qblock.h"
#include "lower.h"
#include "template.h"

int jit_lower_quant(jit_fn *f) {
  const ir_node *n = f->node;
  int enc = qb_from_name(ir_node_attr_string(n, "encoding", ""));
  if (enc < 0) return jit_fn_error(f, "mo.%s: unknown encoding", ir_op_get(n->op)->name);
  char entry[64];
  bool mm = n->op == IR_OP_QMATMUL, f16c = jit_target_has(f, "f16c");
  bool avx2 = f16c && jit_target_has(f, "avx2");
  bool fma = avx2 && jit_target_has(f, "fma");
  bool vnni = fma && jit_target_has(f, "avxvnni");
  bool x512 = fma && jit_target_has(f, "avx512f") && jit_target_has(f, "avx512bw") &&
              jit_target_has(f, "avx512vl") && jit_target_has(f, "avx512vnni") &&
              jit_target_has(f, "avx512vbmi");
  const char *suffix = !f16c  ? ""
                       : !mm  ? "_f16c"
                       : x512 ? "_avx512"
                       : vnni ? "_avxvnni"
                       : avx2 ? "_avx2"
                              : "";
  snprintf(entry, sizeof entry, "kiln_%s_%s%s", mm ? "qmatmul" : "dequantize",
           qb_name((qb_encoding)enc), suffix);
  LLVMValueRef fn = jit_template_function(f, JIT_TMPL_QMATMUL, entry);
  if (!fn) return -1;
  const ir_type *t = &n->in[0]->type;
  LLVMValueRef lo, hi;
  if (mm) {
    LLVMValueRef K = jit_dim(f, t->dims[t->rank - 1]);
    LLVMValueRef M = jit_numel_range(f, t, 0, t->rank - 1);
    LLVMValueRef N = jit_dim(f, n->in[1]->type.dims[0]);
    jit_split_range(f, N, &lo, &hi);
    LLVMValueRef args[] = {M, N, K, jit_in(f, 0), jit_in(f, 1), jit_out(f, 0), lo, hi};
    LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 8, "");
  } else {
    int64_t bytes = 0;
    ir_dim_is_const(t->dims[t->rank - 1], &bytes);
    LLVMValueRef rows = jit_numel_range(f, t, 0, t->rank - 1);
    LLVMValueRef blocks =
        LLVMBuildMul(f->b, rows, jit_i64(f, bytes / QB_BYTES(enc)), "blocks");
    jit_split_range(f, blocks, &lo, &hi);
    LLVMValueRef args[] = {jit_in(f, 0), jit_out(f, 0), lo, hi};
    LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 4, "");
  }
  return f->failed ? -1 : 0;
}
