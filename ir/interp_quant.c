/* interp_quant.c - the reference meaning of mo.dequantize and mo.qmatmul
 * (ops.def; the block math in ir/qblock.h).
 *
 * dequantize: each block decoded to f32 (qb_decode).
 * qmatmul, MAX's dequantize(quantize(lhs) @ transpose(rhs)), llama.cpp's
 * way: each row of lhs is quantized block by block (Q8_0 blocks for q4_0 /
 * q8_0 weights with the scale rounded to f16; Q8_K blocks with f32 scale and
 * 16-element sums for q4_k, q5_k, q6_k; round to nearest even), each weight
 * block times the lhs block under it is an exact int32 dot scaled in f32 in
 * qblock.h's stated order (qb_dot), and result[m, n] is the sum of row n's
 * block terms in double, rounded once to f32. The JIT computes the same
 * terms (the integer parts exactly) and sums them in f32, so it is compared
 * against this within the rounding of a sum of K / block terms.
 *
 * Assumes the shape rule (infer_quant.c) held: the encoding is known, the
 * block operand's last dim is whole blocks and qmatmul's K matches them. */
#include <stdlib.h>

#include "interp_impl.h"
#include "qblock.h"

static int enc_of(const ir_node *n) {
  return qb_from_name(ir_node_attr_string(n, "encoding", ""));
}

int ir_ref_dequantize(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg,
                      size_t msglen) {
  int enc = enc_of(n);
  if (enc < 0) return ir_ref_fail(msg, msglen, "unknown encoding");
  int64_t nblocks = ir_tensor_numel(x) / QB_BYTES(enc);
  const uint8_t *b = x->data;
  float *out = y->data;
  for (int64_t i = 0; i < nblocks; i++)
    qb_decode((qb_encoding)enc, b + i * QB_BYTES(enc), out + i * QB_ELEMS(enc));
  return 0;
}

int ir_ref_qmatmul(const ir_node *n, const ir_tensor *a, const ir_tensor *w, ir_tensor *y,
                   char *msg, size_t msglen) {
  int enc = enc_of(n);
  if (enc < 0) return ir_ref_fail(msg, msglen, "unknown encoding");
  qb_encoding e = (qb_encoding)enc;
  int64_t k = a->rank ? a->shape[a->rank - 1] : 1, nrows = w->shape[0];
  int64_t m = k ? ir_tensor_numel(a) / k : 0, rowbytes = w->shape[1];
  float *yv = y->data;
  if (k == 0 || m == 0 || nrows == 0) {
    for (int64_t i = 0; i < m * nrows; i++) yv[i] = 0;
    return 0;
  }
  int64_t nb = k / QB_ELEMS(e);
  /* one lhs row at a time, quantized: q, the blocks' scales and bsums */
  int8_t *q = malloc((size_t)k);
  float *da = malloc(sizeof *da * (size_t)nb);
  int16_t *bsums = malloc(sizeof *bsums * (size_t)(k / 16));
  if (!q || !da || !bsums) {
    free(q);
    free(da);
    free(bsums);
    return ir_ref_fail(msg, msglen, "out of memory");
  }
  const float *av = a->data;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t b = 0; b < nb; b++) {
      int64_t at = b * QB_ELEMS(e);
      da[b] = qb_quantize_lhs(e, av + i * k + at, q + at, bsums + at / 16);
    }
    for (int64_t j = 0; j < nrows; j++) {
      const uint8_t *row = (const uint8_t *)w->data + j * rowbytes;
      double s = 0;
      for (int64_t b = 0; b < nb; b++) {
        int64_t at = b * QB_ELEMS(e);
        s += qb_dot(e, row + b * QB_BYTES(e), q + at, bsums + at / 16, da[b]);
      }
      yv[i * nrows + j] = (float)s;
    }
  }
  free(q);
  free(da);
  free(bsums);
  return 0;
}
