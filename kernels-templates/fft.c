/* fft.c - the inverse real FFT kernel template (mo.irfft): compiled to LLVM
 * bitcode at build time and linked into the irfft kernel at JIT time
 * (jit/fft.c, jit/template.c).
 *
 * Entries (T = float, double):
 *   void kiln_irfft_<f32|f64>(int64_t l0, int64_t l1, int64_t inner,
 *       int64_t m, int64_t n, int64_t cplx, int64_t norm, const T *X, T *Y,
 *       double *work)
 * compute the lines l0 <= l < l1 of [outer, inner] (o = l / inner, i = l %
 * inner): value k of line l is X[((o * m + k) * inner + i) * c] (+ 1: its
 * imaginary part when cplx, c = 2; else 0 and c = 1), and
 *   Y[(o * n + t) * inner + i] = sum_{k<n} Z[k] e^(2 pi i k t / n) / s
 * where Z[k] = X[k] for k <= n / 2 (0 past m; the imaginary parts of Z[0]
 * and, n even, Z[n / 2] dropped), Z[n - k] = conj(Z[k]) (so the sum is
 * real), s = n (norm 0, "backward"), sqrt(n) (1, "ortho") or 1 (2,
 * "forward"). work holds 4 * n doubles (the kernel's malloc).
 *
 * Method: n a power of two: the spectrum Z built in work, then an in-place
 * iterative radix-2 transform (bit-reversed order, butterflies with the
 * table of e^(2 pi i j / n), j < n / 2); Y is its real part. Other n: the
 * real sum of ir/interp_fft.c, O(n * (n / 2 + 1)) per line, through the
 * table of n twiddles ((k t) mod n kept as a running index). The table is
 * computed once per call with cos / sin in double; every sum is in double
 * and each result rounded once, so results differ from the reference
 * interpreter's only by the order of the additions.
 * Assumes: n >= 1, m >= 0, l0 <= l1 <= outer * inner; X, Y, work disjoint.
 * Freestanding: no libc beyond cos / sin / sqrt (LLVM intrinsics). */
#include <stdint.h>

/* The twiddles e^(2 pi i j / n), j < n: re in tw[0..n), im in tw[n..2n). */
static void fft_twiddles(int64_t n, double *tw) {
  const double w = 6.283185307179586476925286766559 / (double)n;
  for (int64_t j = 0; j < n; j++) {
    tw[j] = __builtin_cos(w * (double)j);
    tw[n + j] = __builtin_sin(w * (double)j);
  }
}

/* In-place inverse (positive-sign) radix-2 transform of re / im (n a power
 * of two), twiddles tw of length n. */
static void fft_radix2(int64_t n, double *re, double *im, const double *tw) {
  for (int64_t i = 1, j = 0; i < n; i++) { /* bit reversal */
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double tr = re[i], ti = im[i];
      re[i] = re[j];
      im[i] = im[j];
      re[j] = tr;
      im[j] = ti;
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len >> 1, step = n / len;
    for (int64_t s = 0; s < n; s += len)
      for (int64_t k = 0; k < half; k++) {
        double wr = tw[k * step], wi = tw[n + k * step];
        int64_t a = s + k, b = a + half;
        double br = re[b] * wr - im[b] * wi, bi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - br;
        im[b] = im[a] - bi;
        re[a] += br;
        im[a] += bi;
      }
  }
}

#define DEFINE_IRFFT(NAME, T)                                                                   \
  void NAME(int64_t l0, int64_t l1, int64_t inner, int64_t m, int64_t n, int64_t cplx,         \
            int64_t norm, const T *X, T *Y, double *work);                                     \
  void NAME(int64_t l0, int64_t l1, int64_t inner, int64_t m, int64_t n, int64_t cplx,         \
            int64_t norm, const T *X, T *Y, double *work) {                                    \
    if (l1 <= l0 || n < 1) return;                                                              \
    const double s = norm == 2 ? 1.0 : norm == 1 ? __builtin_sqrt((double)n) : (double)n;      \
    const int64_t c = cplx ? 2 : 1, h = n / 2 + 1;                                              \
    const int pow2 = (n & (n - 1)) == 0;                                                        \
    double *tw = work, *re = work + 2 * n, *im = work + 3 * n;                                  \
    fft_twiddles(n, tw);                                                                        \
    for (int64_t l = l0; l < l1; l++) {                                                         \
      int64_t o = l / inner, i = l % inner;                                                     \
      const T *x = X + (o * m * inner + i) * c;                                                 \
      T *y = Y + o * n * inner + i;                                                             \
      for (int64_t k = 0; k < h; k++) { /* Z[0 .. h) */                                         \
        re[k] = k < m ? (double)x[k * inner * c] : 0;                                           \
        im[k] = k < m && cplx ? (double)x[k * inner * c + 1] : 0;                               \
      }                                                                                         \
      im[0] = 0;                                                                                \
      if (n % 2 == 0) im[n / 2] = 0;                                                            \
      if (pow2) {                                                                               \
        for (int64_t k = h; k < n; k++) { /* the conjugate half */                              \
          re[k] = re[n - k];                                                                    \
          im[k] = -im[n - k];                                                                   \
        }                                                                                       \
        fft_radix2(n, re, im, tw);                                                              \
        for (int64_t t = 0; t < n; t++) y[t * inner] = (T)(re[t] / s);                          \
        continue;                                                                               \
      }                                                                                         \
      for (int64_t t = 0; t < n; t++) {                                                         \
        double sum = re[0];                                                                     \
        int64_t j = 0; /* (k t) mod n */                                                        \
        for (int64_t k = 1; 2 * k < n; k++) {                                                   \
          j += t;                                                                               \
          if (j >= n) j -= n;                                                                   \
          sum += 2 * (re[k] * tw[j] - im[k] * tw[n + j]);                                       \
        }                                                                                       \
        if (n % 2 == 0) sum += t % 2 ? -re[n / 2] : re[n / 2];                                  \
        y[t * inner] = (T)(sum / s);                                                            \
      }                                                                                         \
    }                                                                                           \
  }

DEFINE_IRFFT(kiln_irfft_f32, float)
DEFINE_IRFFT(kiln_irfft_f64, double)
