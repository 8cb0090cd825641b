/* ops_det.c - ONNX's Det: the determinant of each [M, M] matrix of a
 * [..., M, M] float tensor, by cofactor expansion along the first row.
 *
 * Each element a[..., i, j] is a [...] tensor (two mo.gather with a scalar
 * index); the expansion is a sum of products of them, elementwise over the
 * batch. It costs M! products, so M is limited to 1..4 (static); larger
 * matrices are refused as unsupported (an LU factorization with pivoting
 * has no composition in kiln's ops). */
#include "ox.h"

#define DET_MAX 4

/* the [...] tensor of elements (i, j) of a [..., M, M] */
static kiln_value *element(ox *x, kiln_value *a, int i, int j) {
  int r = ox_type(a)->rank;
  kiln_value *ki = ox_scalar(x, IR_DT_SI64, i), *kj = ox_scalar(x, IR_DT_SI64, j), *row;
  if (!ki || !kj || !(row = ox_op(x, "gather", (kiln_value *[]){a, ki}, 2, NULL, "{axis = %d}",
                                  r - 2)))
    return NULL;
  return ox_op(x, "gather", (kiln_value *[]){row, kj}, 2, NULL, "{axis = %d}", r - 2);
}

/* The determinant of rows row..m-1 and the columns in mask (m - row of
 * them), expanded along row `row`. */
static kiln_value *minor_det(ox *x, kiln_value *e[DET_MAX][DET_MAX], int m, int row,
                             unsigned mask) {
  if (row >= DET_MAX || m > DET_MAX) return NULL; /* m <= DET_MAX: ox_op_Det checks */
  kiln_value *sum = NULL;
  int k = 0;
  for (int c = 0; c < m; c++) {
    if (!(mask & (1u << c))) continue;
    kiln_value *t = e[row][c];
    if (row + 1 < m) {
      kiln_value *sub = minor_det(x, e, m, row + 1, mask & ~(1u << c));
      if (!sub || !(t = OP2("mul", t, sub))) return NULL;
    }
    if (!sum) {
      sum = k % 2 ? OP1("negate", t) : t;
    } else {
      sum = k % 2 ? OP2("sub", sum, t) : OP2("add", sum, t);
    }
    if (!sum) return NULL;
    k++;
  }
  return sum;
}

int ox_op_Det(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  if (!ir_dtype_is_float(t->dtype))
    return ox_fail(x, KILN_ERR_VERIFY, "Det of %s: ONNX's Det takes floats",
                   ir_dtype_name(t->dtype));
  if (t->rank < 2)
    return ox_fail(x, KILN_ERR_VERIFY, "Det of a rank-%d tensor (needs [..., M, M])", t->rank);
  int64_t m, m2;
  if (!ir_dim_is_const(t->dims[t->rank - 1], &m) || !ir_dim_is_const(t->dims[t->rank - 2], &m2))
    return ox_unsupported(x, n, "a symbolic matrix size");
  if (m != m2)
    return ox_fail(x, KILN_ERR_VERIFY, "Det of %lld x %lld matrices: they must be square",
                   (long long)m2, (long long)m);
  if (m < 1 || m > DET_MAX)
    return ox_unsupported(x, n, "%lld x %lld matrices (kiln's Det expands cofactors: 1 to %d)",
                          (long long)m, (long long)m, DET_MAX);
  kiln_value *e[DET_MAX][DET_MAX];
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++)
      if (!(e[i][j] = element(x, a, i, j))) return FAILED();
  kiln_value *d = minor_det(x, e, (int)m, 0, (1u << m) - 1);
  if (!d) return FAILED();
  out[0]->v = d;
  return 0;
}
