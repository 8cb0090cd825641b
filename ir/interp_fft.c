/* interp_fft.c - the reference interpreter's routine for the Fourier class
 * (mo.irfft): the meaning the JIT and SIMT kernels must match (ops.def
 * documents it).
 *
 * Each output value is the Hermitian sum written out, term by term in
 * double (O(n * h) per line, no FFT), so the kernels' FFT is checked
 * against an independent computation:
 *   y[t] = (Re X[0] + 2 sum_{0<k<n-k} (Re X[k] cos(w k t) - Im X[k] sin(w k t))
 *           + (n even) Re X[n/2] (-1)^t) / s,  w = 2 pi / n,
 * with (k t) reduced mod n before the angle is formed. X[k] past the
 * operand's m values is 0. Assumes a verified node; re-checks the
 * run-time shapes it indexes with, so no input makes it read or write out
 * of bounds. */
#include "interp_impl.h"

#include <math.h>
#include <string.h>

/* The divisor of the normalization attribute for length n. */
double ir_ref_fft_scale(const char *norm, int64_t n) {
  if (strcmp(norm, "forward") == 0) return 1;
  if (strcmp(norm, "ortho") == 0) return sqrt((double)n);
  return (double)n; /* "backward" */
}

int ir_ref_fft(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  bool cplx = ir_node_attr_bool(n, "input_is_complex", false);
  int rank = x->rank - (cplx ? 1 : 0);
  int64_t a = ir_node_attr_int(n, "axis", -1);
  if (a < 0) a += rank;
  if (rank < 1 || a < 0 || a >= rank || y->rank != rank || (cplx && x->shape[rank] != 2))
    return ir_ref_fail(msg, msglen, "the operand's shape does not match the attributes");
  int axis = (int)a;
  int64_t m = x->shape[axis], len = y->shape[axis];
  for (int i = 0; i < rank; i++)
    if (i != axis && x->shape[i] != y->shape[i])
      return ir_ref_fail(msg, msglen, "the result's shape does not match the operand's");
  if (len < 1) return ir_ref_fail(msg, msglen, "the output length n = %lld is below 1",
                                  (long long)len);
  double scale = ir_ref_fft_scale(ir_node_attr_string(n, "normalization", "backward"), len);
  int64_t outer = 1, inner = 1, h = len / 2 + 1;
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  for (int i = axis + 1; i < rank; i++) inner *= x->shape[i];
  int64_t ce = cplx ? 2 : 1; /* elements per value */
  const double w = 2 * M_PI / (double)len;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t xb = o * m * inner + in, yb = o * len * inner + in;
      for (int64_t t = 0; t < len; t++) {
        double sum = 0;
        for (int64_t k = 0; k < h && k < m; k++) {
          int64_t e = (xb + k * inner) * ce;
          double re = ir_ref_ld_f(x, e), im = cplx ? ir_ref_ld_f(x, e + 1) : 0;
          double ang = w * (double)((k * t) % len);
          if (k == 0) sum += re;
          else if (2 * k == len) sum += (t % 2 ? -re : re);
          else sum += 2 * (re * cos(ang) - im * sin(ang));
        }
        ir_ref_st_f(y, yb + t * inner, sum / scale);
      }
    }
  return 0;
}
