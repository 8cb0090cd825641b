/* interp_quant.c - the reference meaning of mo.dequantize and mo.qmatmul
 * (ops.def; encodings in ir/qblock.h): each block decoded to f32, then, for
 * qmatmul, a matmul with the transposed weight summed in double and rounded
 * once to f32 per result element (the oracle the JIT's f32 sums are
 * compared against within a tolerance).
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
  int64_t k = a->rank ? a->shape[a->rank - 1] : 1, nrows = w->shape[0];
  int64_t m = k ? ir_tensor_numel(a) / k : 0, rowbytes = w->shape[1];
  if (k == 0 || m == 0 || nrows == 0) {
    for (int64_t i = 0; i < m * nrows; i++) ((float *)y->data)[i] = 0;
    return 0;
  }
  float *row = malloc(sizeof *row * (size_t)k);
  if (!row) return ir_ref_fail(msg, msglen, "out of memory");
  const float *av = a->data;
  float *yv = y->data;
  for (int64_t j = 0; j < nrows; j++) {
    const uint8_t *b = (const uint8_t *)w->data + j * rowbytes;
    for (int64_t blk = 0; blk < k / QB_ELEMS(enc); blk++)
      qb_decode((qb_encoding)enc, b + blk * QB_BYTES(enc), row + blk * QB_ELEMS(enc));
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t e = 0; e < k; e++) s += (double)av[i * k + e] * (double)row[e];
      yv[i * nrows + j] = (float)s;
    }
  }
  free(row);
  return 0;
}
