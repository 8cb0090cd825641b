/* rows.c - the f32 row routines of mo.softmax / mo.logsoftmax and
 * mo.layer_norm (jit/norm.c): compiled to LLVM bitcode (linked into a
 * kernel when the engine has no prebuilt copy) and, on x86-64, to prebuilt
 * objects at x86-64-v4 and v3 (-DKILN_ROWS_PREBUILT=kiln_pre_<level>_,
 * jit/template.h) that kernels of both tiers call, so a kernel compiles in
 * milliseconds at either tier and runs the same code.
 *
 * Entries:
 *   void kiln_softmax_f32_rows(float *y, const float *x, int64_t n,
 *       int64_t rows, int64_t log)
 *     `rows` contiguous rows of n floats (what a kernel's part calls once),
 *     each: m = max x, e = exp(x - m), s = sum e; y = e * (1 / s) (log 0)
 *     or y = (x - m) - log s (log 1). Nothing when n or rows is <= 0.
 *   void kiln_softmax_f32_row(float *y, const float *x, int64_t n, int64_t log)
 *     one row: kiln_softmax_f32_rows with rows = 1.
 *   void kiln_layer_norm_f32_row(float *y, const float *x, const float *g,
 *       const float *b, int64_t d, double eps)
 *     one row of d floats: mean = sum x / d, var = sum (x - mean)^2 / d,
 *     y = (x - mean) * (1 / sqrt(var + eps)) * g + b.
 * y may be x (a fused softmax prologue wrote the row into y): every element
 * is read before it is written.
 *
 * Numerics (the same bits from the bitcode and from either object: every
 * step is one IEEE operation in a fixed order on 16-lane vectors, which
 * narrower targets split without reordering; no contraction, so no fma but
 * the explicit ones):
 * - softmax: the max is exact and skips NaN (a NaN still reaches the sum
 *   through exp, so the row is NaN, as the interpreter's NaN-propagating
 *   max gives); exp by exp_nonpos below (within 2.2 ulp where x - m > -10,
 *   4.8 down to 2^-126, +0 below); the sum in f32 lanes over blocks of
 *   SUM_BLOCK elements, the block sums in double; 1 / s and log s in double,
 *   rounded to f32 once (1 / s in f32 when one block: the same bits). A few
 *   ulps of f32 from the interpreter's all-double result; a row of only -inf
 *   (or -inf and NaN) is NaN (-inf - -inf).
 * - layer_norm: the mean summed in double lanes (so a large offset against
 *   a small spread keeps its precision), the variance of x - f32(mean) in
 *   f32 lanes within SUM_BLOCK blocks whose sums add in double, 1 / sqrt in
 *   double, the last pass in f32 as before ((x - mean) * rstd * g + b, each
 *   step rounded).
 * Freestanding: no libc beyond log (an LLVM intrinsic that lowers to libm's
 * log, which the JIT resolves from the process). */
#include <stdint.h>

#pragma STDC FP_CONTRACT OFF
/* The helpers below pass 64-byte vectors by value; each is inlined
 * (INLINE), so no call ever uses the AVX2 / AVX-512 ABI difference that
 * -Wpsabi warns about. */
#pragma clang diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__((always_inline))

#ifdef KILN_ROWS_PREBUILT
#define ROWS_ENTRY(name) ROWS_ENTRY_(KILN_ROWS_PREBUILT, name)
#define ROWS_ENTRY_(prefix, name) ROWS_ENTRY__(prefix, name)
#define ROWS_ENTRY__(prefix, name) prefix##name
#else
#define ROWS_ENTRY(name) name
#endif

enum { W = 16, SUM_BLOCK = 1024 }; /* lanes; a block's elements (a multiple of W) */
/* How far ahead (floats) the passes that read x first touch the next
 * rows: a kernel's rows lie one after another, and a softmax over
 * [12, 384, 384] streams 14 MB through L3 once per pass 1; the hardware
 * prefetcher alone left it ~25% slower (prefetches never fault past the
 * end). */
enum { PREFETCH = 1024 };

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
typedef double vd __attribute__((vector_size(64)));

INLINE vf splat(float v) { return (vf){v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v}; }

INLINE vf load(const float *p) {
  vf v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

INLINE void store(float *p, vf v) { __builtin_memcpy(p, &v, sizeof v); }

/* Lanes of v where mask is set, else +0. */
INLINE vf keep(vi mask, vf v) { return (vf)(mask & (vi)v); }

/* v > acc ? v : acc per lane: a NaN in v is skipped, and acc (from -inf)
 * never holds one (one vmaxps on x86). */
INLINE vf max_skip_nan(vf acc, vf v) {
  vi gt = v > acc;
  return (vf)((gt & (vi)v) | (~gt & (vi)acc));
}

/* Lanes i < n set (0 <= n <= W). */
INLINE vi lanes_below(int64_t n) {
  const vi iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return iota < (vi){0} + (int32_t)n;
}

/* The 16 lanes of v folded in halves (fixed order) to one float. */
INLINE float fold_sum(vf v) {
  __attribute__((vector_size(32))) float h8 =
      __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
      __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  __attribute__((vector_size(16))) float h4 =
      __builtin_shufflevector(h8, h8, 0, 1, 2, 3) + __builtin_shufflevector(h8, h8, 4, 5, 6, 7);
  float a = h4[0] + h4[2], b = h4[1] + h4[3];
  return a + b;
}

/* The max of the 16 lanes of v (no NaN in them), folded in halves: four
 * steps, where a lane-by-lane loop is 15 dependent ones per row. */
INLINE float fold_max(vf v) {
  v = max_skip_nan(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11,
                                              12, 13, 14, 15));
  v = max_skip_nan(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6,
                                              7));
  v = max_skip_nan(v, __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                              3));
  v = max_skip_nan(v, __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                              1));
  return v[0];
}

INLINE double fold_sum_d(vd v) {
  double a = (v[0] + v[4]) + (v[2] + v[6]), b = (v[1] + v[5]) + (v[3] + v[7]);
  return a + b;
}

/* exp(x) for x <= 0, -inf or NaN (x - max): x = k ln2 + r, k from the
 * bits of y = fma(x, log2 e, M), M = 1.5 * 2^23 + 127: bits(y) = bits(M) + k,
 * so bits(y) << 23 = (k + 127) << 23 is 2^k with no bias to add (M odd
 * only moves a tie of x log2 e to its other neighbour, both in range);
 * r = x - k f32(ln2) in one fma; exp(r) a degree-5 polynomial in Horner
 * form (relative-minimax coefficients on [-ln2 / 2, ln2 / 2], 1 exact),
 * times 2^k; +0 where x < log(2^-126). Checked over every float in
 * [log(2^-126), 0] against libm's double exp: within 2.2 ulp where
 * x > -10, 4.8 ulp at worst (the one-step reduction is off by |k| 2e-9
 * relative, which only matters near 2^-126). Against jit/emit.c's
 * jit_exp_f32_nonpos (two-step reduction, degree 6, within an ulp) this is
 * 8 multiply-class operations per vector instead of 10: those bound the
 * exp pass on a host with two FMA pipes (0.88 against 1.06 cycles per
 * float on an AVX2 EPYC). */
INLINE vf exp_nonpos(vf x) {
  const float magic = 0x1.8000fep23f; /* M: bits 0x4b40007f */
  vf y = __builtin_elementwise_fma(x, splat(0x1.715476p+0f), splat(magic));
  vf r = __builtin_elementwise_fma(splat(magic) - y, splat(0x1.62e43p-1f), x);
  vf p = splat(0x1.108f3ap-7f);
  p = __builtin_elementwise_fma(p, r, splat(0x1.573adcp-5f));
  p = __builtin_elementwise_fma(p, r, splat(0x1.55580ap-3f));
  p = __builtin_elementwise_fma(p, r, splat(0x1.fffdc4p-2f));
  p = __builtin_elementwise_fma(p, r, splat(0x1.fffffcp-1f));
  vf e = __builtin_elementwise_fma(p, r, splat(1.0f));
  e = e * (vf)((__attribute__((vector_size(64))) uint32_t)y << 23);
  return keep(~(x < splat(-0x1.5d5e2ap+6f)), e);
}

/* The max of x[0..n), NaNs skipped: four accumulators of 16 lanes (one
 * chain is latency-bound), then one. */
INLINE float row_max(const float *x, int64_t n) {
  vf a0 = splat(-__builtin_inff()), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    a0 = max_skip_nan(a0, load(x + i));
    a1 = max_skip_nan(a1, load(x + i + W));
    a2 = max_skip_nan(a2, load(x + i + 2 * W));
    a3 = max_skip_nan(a3, load(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) a0 = max_skip_nan(a0, load(x + i));
  float m = fold_max(max_skip_nan(max_skip_nan(a0, a1), max_skip_nan(a2, a3)));
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

/* exp(x - m) of the k <= W elements at x (a partial vector when k < W:
 * its other lanes are +0). */
INLINE vf exp_chunk(const float *x, int64_t k, float m) {
  if (k == W) return exp_nonpos(load(x) - splat(m));
  vf v = splat(0.0f);
  for (int64_t j = 0; j < k; j++) v[j] = x[j];
  return keep(lanes_below(k), exp_nonpos(v - splat(m)));
}

/* The sum of exp(x - m) over [lo, hi) (at most SUM_BLOCK elements) in f32
 * lanes: four accumulators over groups of four vectors (four independent
 * exp chains), folded to two for a pair, a last whole vector into the
 * first, the partial one into the second; each e stored into y when
 * keep_e (a constant where it is inlined). */
INLINE float block_exp_sum(float *y, const float *x, int64_t lo, int64_t hi, float m, int keep_e) {
  const vf mv = splat(m);
  vf a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = lo;
  for (; i + 4 * W <= hi; i += 4 * W) {
    vf e0 = exp_nonpos(load(x + i) - mv), e1 = exp_nonpos(load(x + i + W) - mv);
    vf e2 = exp_nonpos(load(x + i + 2 * W) - mv), e3 = exp_nonpos(load(x + i + 3 * W) - mv);
    for (int l = 0; l < 4; l++) __builtin_prefetch(x + i + PREFETCH + l * W, 0, 3);
    if (keep_e) {
      store(y + i, e0);
      store(y + i + W, e1);
      store(y + i + 2 * W, e2);
      store(y + i + 3 * W, e3);
    }
    a0 += e0;
    a1 += e1;
    a2 += e2;
    a3 += e3;
  }
  a0 += a2;
  a1 += a3;
  for (; i + 2 * W <= hi; i += 2 * W) {
    vf e0 = exp_nonpos(load(x + i) - mv), e1 = exp_nonpos(load(x + i + W) - mv);
    if (keep_e) {
      store(y + i, e0);
      store(y + i + W, e1);
    }
    a0 += e0;
    a1 += e1;
  }
  if (i + W <= hi) {
    vf e = exp_nonpos(load(x + i) - mv);
    if (keep_e) store(y + i, e);
    a0 += e;
    i += W;
  }
  if (i < hi) {
    vf e = exp_chunk(x + i, hi - i, m);
    if (keep_e)
      for (int64_t j = 0; j < hi - i; j++) y[i + j] = e[j];
    a1 += e;
  }
  return fold_sum(a0 + a1);
}

/* The sum of exp(x - m) over a row of n, block sums in double. */
INLINE double exp_sum(float *y, const float *x, int64_t n, float m, int keep_e) {
  double s = 0.0;
  for (int64_t lo = 0; lo < n; lo += SUM_BLOCK)
    s += (double)block_exp_sum(y, x, lo, n - lo < SUM_BLOCK ? n : lo + SUM_BLOCK, m, keep_e);
  return s;
}

/* Row x / y's last pass once s = sum exp(x - m) is known: y = e * (1 / s)
 * (e already in y) or (x - m) - log s. A row of at most SUM_BLOCK has s
 * exactly an f32 (one block sum), and 1 / s in f32 is then the double
 * quotient rounded to f32 (division rounded twice, 53 >= 2 * 24 + 2 bits,
 * is rounded once): the same bits, without the double latency. */
INLINE void normalize(float *y, const float *x, int64_t n, float m, double s, int64_t log) {
  int64_t i = 0;
  if (log) {
    const float ls = (float)__builtin_log(s);
    for (; i + W <= n; i += W) store(y + i, (load(x + i) - splat(m)) - splat(ls));
    for (; i < n; i++) y[i] = (x[i] - m) - ls;
  } else {
    const float inv = n <= SUM_BLOCK ? 1.0f / (float)s : (float)(1.0 / s);
    for (; i + W <= n; i += W) store(y + i, load(y + i) * splat(inv));
    for (; i < n; i++) y[i] = y[i] * inv;
  }
}

/* rows rows of n, one after another: the next row's max is taken between
 * this row's exp pass and its last pass, so it runs while this row's sum
 * is folded and inverted (a dependent chain of ~60 cycles per row, which
 * dominates rows of a few dozen floats). Row by row the same arithmetic as
 * kiln_softmax_f32_row: the same bits. */
void ROWS_ENTRY(kiln_softmax_f32_rows)(float *y, const float *x, int64_t n, int64_t rows,
                                       int64_t log);
void ROWS_ENTRY(kiln_softmax_f32_rows)(float *y, const float *x, int64_t n, int64_t rows,
                                       int64_t log) {
  if (n <= 0 || rows <= 0) return;
  float m = row_max(x, n);
  for (int64_t r = 0; r < rows; r++, x += n, y += n) {
    const double s = log ? exp_sum(y, x, n, m, 0) : exp_sum(y, x, n, m, 1);
    const float next = r + 1 < rows ? row_max(x + n, n) : 0.0f;
    normalize(y, x, n, m, s, log);
    m = next;
  }
}

void ROWS_ENTRY(kiln_softmax_f32_row)(float *y, const float *x, int64_t n, int64_t log);
void ROWS_ENTRY(kiln_softmax_f32_row)(float *y, const float *x, int64_t n, int64_t log) {
  ROWS_ENTRY(kiln_softmax_f32_rows)(y, x, n, 1, log);
}

/* The 16 floats at x widened to doubles and added to *lo / *hi. */
INLINE void add_wide(vd *lo, vd *hi, vf v) {
  *lo += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), vd);
  *hi += __builtin_convertvector(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15), vd);
}

void ROWS_ENTRY(kiln_layer_norm_f32_row)(float *y, const float *x, const float *g,
                                         const float *b, int64_t d, double eps);
void ROWS_ENTRY(kiln_layer_norm_f32_row)(float *y, const float *x, const float *g,
                                         const float *b, int64_t d, double eps) {
  if (d <= 0) return;
  /* pass 1: the mean, in double lanes */
  vd lo = {0}, hi = {0};
  int64_t i = 0;
  for (; i + W <= d; i += W) {
    __builtin_prefetch(x + i + PREFETCH, 0, 3);
    add_wide(&lo, &hi, load(x + i));
  }
  double s = fold_sum_d(lo + hi);
  for (; i < d; i++) s += (double)x[i];
  const double mean = s / (double)d;
  const float mf = (float)mean;
  /* pass 2: the biased variance of x - f32(mean), f32 lanes within blocks */
  double ss = 0.0;
  for (int64_t blo = 0; blo < d; blo += SUM_BLOCK) {
    int64_t bhi = d - blo < SUM_BLOCK ? d : blo + SUM_BLOCK;
    vf acc = splat(0.0f);
    int64_t j = blo;
    for (; j + W <= bhi; j += W) {
      vf t = load(x + j) - splat(mf);
      acc += t * t;
    }
    float tail = 0.0f;
    for (; j < bhi; j++) {
      float t = x[j] - mf;
      tail += t * t;
    }
    ss += (double)(fold_sum(acc) + tail);
  }
  const float rf = (float)(1.0 / __builtin_sqrt(ss / (double)d + eps));
  /* pass 3: normalize, scale, shift in f32 */
  i = 0;
  for (; i + W <= d; i += W)
    store(y + i, (load(x + i) - splat(mf)) * splat(rf) * load(g + i) + load(b + i));
  for (; i < d; i++) y[i] = (x[i] - mf) * rf * g[i] + b[i];
}
