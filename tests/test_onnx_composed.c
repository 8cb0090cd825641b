/* test_onnx_composed.c - ONNX ops the importer composes from other kiln ops
 * (src/onnx/ops_det.c, ops_dft.c (DFT, STFT), ops_einsum.c, ops_unique.c,
 * pool3d.c, pool_argmax.c, ops_unpool.c, ops_mel.c, ops_vision.c's
 * QLinearConv),
 * on models built here with attributes ONNX's node tests leave out, each
 * against a naive loop in this file: Det of 1x1 to 4x4 matrices in a
 * batch (and 5x5 refused by name); DFT real and complex, forward and
 * inverse, onesided, dft_length padding and truncating, on a middle axis;
 * STFT with frame_step and frame_length given at run time (one model, many
 * frame counts), a window, a complex signal; Einsum with ellipses (of
 * different widths, in the middle of a term) and diagonals, an output
 * without "..." refused; Unique along each axis (a negative one too),
 * sorted or in order of occurrence, all four outputs; QLinearConv with
 * a per-channel w_scale, a bias, pads, strides and saturation;
 * MelWeightMatrix with its scalars given at run time (one model, four
 * shapes) against ONNX's reference written in C;
 * 3-D MaxPool / AveragePool with strides, pads, dilations, ceil_mode and
 * count_include_pad; MaxPool's Indices with pads, strides, dilations,
 * ceil_mode, ties, -inf and storage_order 1; MaxUnpool with a larger
 * output_shape, and one too small refused at run time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/onnx_build.h"

TestSuite(onnx_composed, .fini = free_kept);

static const char *dimtxt(int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return keep(strdup(buf));
}

/* A value info of ONNX element type elem with static dims d[rank]. */
static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const int64_t *d) {
  const char **t = keep(calloc((size_t)rank + 1, sizeof *t));
  for (int i = 0; i < rank; i++) t[i] = dimtxt(d[i]);
  return vinfo_of(name, elem, rank, t);
}

static double rnd(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return (double)(*s >> 11) / 9007199254740992.0 * 4.0 - 2.0;
}

/* Execute r on nin f32 / i64 inputs; outputs into out[nout] (caller frees). */
static int run(built *r, kiln_tensor **in, int nin, kiln_tensor **out, int nout) {
  int rc = kiln_model_execute(r->m, in, nin, out, nout, r->st);
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  return rc;
}

static void near(const float *got, const double *want, int64_t n, double tol, const char *what) {
  for (int64_t i = 0; i < n; i++)
    cr_expect(got[i] == want[i] || fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
              "%s: element %lld: %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
}

/* ---- Det ---- */

static double naive_det(const float *a, int m) {
  double t[16];
  for (int i = 0; i < m * m; i++) t[i] = a[i];
  double d = 1;
  for (int c = 0; c < m; c++) {
    int p = c;
    for (int r = c + 1; r < m; r++)
      if (fabs(t[r * m + c]) > fabs(t[p * m + c])) p = r;
    if (t[p * m + c] == 0) return 0;
    if (p != c) {
      for (int k = 0; k < m; k++) {
        double s = t[c * m + k];
        t[c * m + k] = t[p * m + k], t[p * m + k] = s;
      }
      d = -d;
    }
    d *= t[c * m + c];
    for (int r = c + 1; r < m; r++) {
      double f = t[r * m + c] / t[c * m + c];
      for (int k = c; k < m; k++) t[r * m + k] -= f * t[c * m + k];
    }
  }
  return d;
}

static mb *det_model(int m, int batch) {
  mb *b = mb_new();
  int64_t d[3] = {batch, m, m}, o[1] = {batch};
  b->ins[b->g.n_input++] = vi("x", 1, 3, d);
  b->outs[b->g.n_output++] = vi("y", 1, 1, o);
  static const char *const in[] = {"x"};
  node(b, "Det", "det", 1, in, "y");
  return b;
}

Test(onnx_composed, det_up_to_4x4) {
  for (int m = 1; m <= 4; m++) {
    enum { B = 5 };
    built r = compile_built(det_model(m, B));
    float *a = keep(calloc((size_t)(B * m * m), sizeof *a));
    uint64_t s = (uint64_t)m;
    for (int i = 0; i < B * m * m; i++) a[i] = (float)rnd(&s);
    /* a singular one: two equal rows */
    if (m > 1)
      for (int k = 0; k < m; k++) a[m * m + m + k] = a[m * m + k];
    int64_t d[3] = {B, m, m};
    kiln_tensor *in[1] = {kiln_tensor_borrow(KILN_FLOAT32, 3, d, a, r.st)}, *out[1] = {NULL};
    cr_assert_eq(run(&r, in, 1, out, 1), 0, "%s", kiln_status_message(r.st));
    double want[B];
    for (int i = 0; i < B; i++) want[i] = naive_det(a + i * m * m, m);
    char what[32];
    snprintf(what, sizeof what, "det %dx%d", m, m);
    near(kiln_tensor_data(out[0]), want, B, 1e-5, what);
    kiln_tensor_free(out[0]);
    built_free(&r);
  }
}

Test(onnx_composed, det_5x5_is_refused_by_name) {
  import_fails(det_model(5, 2), KILN_ERR_UNSUPPORTED, "5 x 5 matrices");
}

/* ---- DFT ---- */

typedef struct dft_case {
  int64_t shape[4]; /* [B, L, M, c]: the signal on `axis` */
  int axis, inverse, onesided;
  int64_t length; /* dft_length, 0: none */
} dft_case;

/* the naive DFT of x (shape c->shape) along c->axis, into y [.., K, .., 2] */
static void naive_dft(const dft_case *c, const float *x, double *y, int64_t *kout) {
  int64_t b = c->shape[0], l = c->shape[c->axis], other = c->shape[c->axis == 1 ? 2 : 1];
  int64_t comp = c->shape[3], n = c->length ? c->length : l, k = c->onesided ? n / 2 + 1 : n;
  *kout = k;
  double sg = c->inverse ? 1 : -1;
  for (int64_t bi = 0; bi < b; bi++)
    for (int64_t o = 0; o < other; o++)
      for (int64_t kk = 0; kk < k; kk++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n && t < l; t++) {
          int64_t i1 = c->axis == 1 ? t : o, i2 = c->axis == 1 ? o : t;
          const float *e = x + ((bi * c->shape[1] + i1) * c->shape[2] + i2) * comp;
          double xr = e[0], xi = comp == 2 ? e[1] : 0, w = 2 * M_PI * (double)(kk * t % n) / n;
          re += xr * cos(w) - xi * sg * sin(w);
          im += xr * sg * sin(w) + xi * cos(w);
        }
        if (c->inverse) re /= (double)n, im /= (double)n;
        int64_t j1 = c->axis == 1 ? kk : o, j2 = c->axis == 1 ? o : kk;
        int64_t d2 = c->axis == 2 ? k : c->shape[2];
        double *out = y + ((bi * (c->axis == 1 ? k : c->shape[1]) + j1) * d2 + j2) * 2;
        out[0] = re, out[1] = im;
      }
}

static void dft_check(const dft_case *c) {
  mb *b = mb_new();
  b->ins[b->g.n_input++] = vi("x", 1, 4, c->shape);
  int64_t n = c->length ? c->length : c->shape[c->axis], k = c->onesided ? n / 2 + 1 : n;
  int64_t os[4] = {c->shape[0], c->shape[1], c->shape[2], 2};
  os[c->axis] = k;
  b->outs[b->g.n_output++] = vi("y", 1, 4, os);
  const char **in = keep(calloc(2, sizeof *in));
  in[0] = "x";
  in[1] = "len";
  if (c->length) {
    int64_t *lv = keep(calloc(1, sizeof *lv));
    *lv = c->length;
    Onnx__TensorProto *t = init_i64(b, "len", 1, lv);
    t->n_dims = 0; /* a scalar */
  }
  Onnx__NodeProto *nd = node(b, "DFT", "dft", c->length ? 2 : 1, in, "y");
  node_attrs(nd, 3, attr_int("axis", c->axis), attr_int("inverse", c->inverse),
             attr_int("onesided", c->onesided));
  built r = compile_built(b);
  int64_t numel = c->shape[0] * c->shape[1] * c->shape[2] * c->shape[3];
  float *x = keep(calloc((size_t)numel, sizeof *x));
  uint64_t s = 7;
  for (int64_t i = 0; i < numel; i++) x[i] = (float)rnd(&s);
  kiln_tensor *ti[1] = {kiln_tensor_borrow(KILN_FLOAT32, 4, c->shape, x, r.st)}, *to[1] = {NULL};
  cr_assert_eq(run(&r, ti, 1, to, 1), 0, "%s", kiln_status_message(r.st));
  int64_t kk, on = os[0] * os[1] * os[2] * 2;
  double *want = keep(calloc((size_t)on, sizeof *want));
  naive_dft(c, x, want, &kk);
  const int64_t *shp = kiln_tensor_shape(to[0]);
  for (int i = 0; i < 4; i++) cr_assert_eq(shp[i], os[i], "dim %d: %lld", i, (long long)shp[i]);
  char what[96];
  snprintf(what, sizeof what, "DFT axis %d inverse %d onesided %d length %lld", c->axis,
           c->inverse, c->onesided, (long long)c->length);
  near(kiln_tensor_data(to[0]), want, on, 1e-5, what);
  kiln_tensor_free(to[0]);
  built_free(&r);
}

Test(onnx_composed, dft_forms) {
  static const dft_case C[] = {
      {{2, 6, 3, 1}, 1, 0, 0, 0}, {{2, 6, 3, 2}, 1, 0, 0, 0}, {{2, 6, 3, 2}, 1, 1, 0, 0},
      {{1, 3, 7, 2}, 2, 0, 0, 0}, {{1, 3, 7, 1}, 2, 0, 1, 0}, {{2, 6, 3, 1}, 1, 0, 1, 0},
      {{2, 5, 2, 1}, 1, 0, 0, 8}, {{2, 5, 2, 2}, 1, 1, 0, 3}, {{1, 4, 9, 1}, 2, 0, 1, 5},
  };
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) dft_check(&C[i]);
}

/* ---- STFT ---- */

/* naive STFT of x [b, t, c] with frame_step st, frame length l, window w
 * (NULL: ones): y [b, frames, k, 2] */
static int64_t naive_stft(const float *x, int64_t b, int64_t t, int64_t c, int64_t st, int64_t l,
                          const float *w, bool onesided, double *y) {
  int64_t frames = (t - l) / st + 1, k = onesided ? l / 2 + 1 : l, at = 0;
  for (int64_t bi = 0; bi < b; bi++)
    for (int64_t f = 0; f < frames; f++)
      for (int64_t kk = 0; kk < k; kk++, at += 2) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < l; n++) {
          const float *e = x + (bi * t + f * st + n) * c;
          double g = w ? w[n] : 1, xr = e[0] * g, xi = c == 2 ? e[1] * g : 0;
          double a = 2 * M_PI * (double)(kk * n % l) / (double)l;
          re += xr * cos(a) + xi * sin(a);
          im += xi * cos(a) - xr * sin(a);
        }
        y[at] = re, y[at + 1] = im;
      }
  return frames;
}

/* One model, frame_step and frame_length given at run time: every pair
 * gives its own [b, frames, k, 2]; a window of static length; a complex
 * signal two-sided. */
Test(onnx_composed, stft_run_time_steps) {
  enum { B = 2, T = 19 };
  for (int form = 0; form < 3; form++) {
    int64_t c = form == 2 ? 2 : 1, xs[3] = {B, T, c};
    bool window = form == 1, onesided = form != 2;
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vi("x", 1, 3, xs);
    b->ins[b->g.n_input++] = vi("step", 7, 0, NULL);
    static const int64_t wlen[1] = {6};
    if (window) b->ins[b->g.n_input++] = vi("w", 1, 1, wlen);
    else b->ins[b->g.n_input++] = vi("len", 7, 0, NULL);
    static const char *const sym[4] = {"b", "f", "k", "two"};
    b->outs[b->g.n_output++] = vinfo_of("y", 1, 4, sym);
    static const char *const in_len[] = {"x", "step", "", "len"};
    static const char *const in_w[] = {"x", "step", "w"};
    Onnx__NodeProto *nd = node(b, "STFT", "stft", window ? 3 : 4, window ? in_w : in_len, "y");
    node_attrs(nd, 1, attr_int("onesided", onesided));
    built r = compile_built(b);
    float x[B * T * 2], w[6];
    uint64_t s = 3;
    for (int i = 0; i < B * T * 2; i++) x[i] = (float)rnd(&s);
    for (int i = 0; i < 6; i++) w[i] = (float)(0.5 + 0.1 * i);
    static const int64_t P[][2] = {{1, 6}, {4, 6}, {3, 5}, {7, 8}, {2, 19}};
    for (size_t p = 0; p < sizeof P / sizeof *P; p++) {
      int64_t st = P[p][0], l = window ? 6 : P[p][1];
      kiln_tensor *ti[3] = {kiln_tensor_borrow(KILN_FLOAT32, 3, xs, x, r.st),
                            kiln_tensor_borrow(KILN_INT64, 0, NULL, &st, r.st),
                            window ? kiln_tensor_borrow(KILN_FLOAT32, 1, wlen, w, r.st)
                                   : kiln_tensor_borrow(KILN_INT64, 0, NULL, &l, r.st)};
      kiln_tensor *to[1] = {NULL};
      cr_assert_eq(run(&r, ti, 3, to, 1), 0, "%s", kiln_status_message(r.st));
      double *want = keep(calloc(B * T * T * 2, sizeof *want));
      int64_t frames = naive_stft(x, B, T, c, st, l, window ? w : NULL, onesided, want);
      int64_t k = onesided ? l / 2 + 1 : l, os[4] = {B, frames, k, 2};
      for (int i = 0; i < 4; i++)
        cr_assert_eq(kiln_tensor_shape(to[0])[i], os[i], "step %lld len %lld: dim %d: %lld",
                     (long long)st, (long long)l, i, (long long)kiln_tensor_shape(to[0])[i]);
      char what[64];
      snprintf(what, sizeof what, "STFT form %d step %lld len %lld", form, (long long)st,
               (long long)l);
      near(kiln_tensor_data(to[0]), want, B * frames * k * 2, 1e-5, what);
      kiln_tensor_free(to[0]);
    }
    built_free(&r);
  }
}

/* ---- Einsum: ellipses and diagonals ---- */

/* The letters of term s with its "..." written out as the last e of the
 * letters '0'..; into out (no spaces). */
static void spell(const char *s, int e, int emax, char *out) {
  for (; *s; s++) {
    if (*s == '.') {
      for (int i = 0; i < e; i++) *out++ = (char)('0' + emax - e + i);
      s += 2;
    } else if (*s != ' ') {
      *out++ = *s;
    }
  }
  *out = 0;
}

/* naive einsum: every assignment of the letters, products summed into y */
static void naive_einsum(const char *const *terms, int nt, const char *outl,
                         const float *const *xs, const int64_t *const *shapes, double *y,
                         int64_t ny) {
  char all[64] = "";
  int64_t size[128] = {0};
  for (int k = 0; k < nt; k++)
    for (int i = 0; terms[k][i]; i++) {
      char c = terms[k][i];
      size[(int)c] = shapes[k][i];
      if (!strchr(all, c)) strncat(all, &c, 1);
    }
  int nl = (int)strlen(all);
  int64_t val[128] = {0};
  memset(y, 0, (size_t)ny * sizeof *y);
  for (;;) {
    double prod = 1;
    for (int k = 0; k < nt; k++) {
      int64_t off = 0;
      for (int i = 0; terms[k][i]; i++) off = off * shapes[k][i] + val[(int)terms[k][i]];
      prod *= xs[k][off];
    }
    int64_t at = 0;
    for (int i = 0; outl[i]; i++) at = at * size[(int)outl[i]] + val[(int)outl[i]];
    y[at] += prod;
    int j = nl - 1;
    while (j >= 0 && ++val[(int)all[j]] == size[(int)all[j]]) val[(int)all[j--]] = 0;
    if (j < 0) break;
  }
}

typedef struct einsum_case {
  const char *eq;
  int nt;
  int rank[2];
  int64_t shape[2][4];
} einsum_case;

static void einsum_check(const einsum_case *c) {
  mb *b = mb_new();
  static const char *const names[2] = {"a", "b"};
  const float *xs[2];
  kiln_tensor *ti[2];
  char terms[2][32], outl[32];
  const char *tp[2] = {terms[0], terms[1]};
  const int64_t *sp[2] = {c->shape[0], c->shape[1]};
  /* the ellipsis widths: each operand's rank minus its letters */
  const char *arrow = strstr(c->eq, "->");
  char lhs[64];
  snprintf(lhs, sizeof lhs, "%.*s", arrow ? (int)(arrow - c->eq) : (int)strlen(c->eq), c->eq);
  char *second = strchr(lhs, ',');
  if (second) *second++ = 0;
  const char *src[2] = {lhs, second};
  int e[2] = {0, 0}, emax = 0;
  for (int k = 0; k < c->nt; k++) {
    int letters = 0;
    for (const char *q = src[k]; *q; q++) letters += (*q >= 'a' && *q <= 'z');
    e[k] = c->rank[k] - letters;
    if (e[k] > emax) emax = e[k];
  }
  for (int k = 0; k < c->nt; k++) spell(src[k], e[k], emax, terms[k]);
  spell(arrow + 2, emax, emax, outl);
  int64_t ny = 1, os[8];
  int orank = (int)strlen(outl);
  for (int i = 0; i < orank; i++) {
    for (int k = 0; k < c->nt; k++) {
      const char *at = strchr(terms[k], outl[i]);
      if (at) os[i] = c->shape[k][at - terms[k]];
    }
    ny *= os[i];
  }
  uint64_t s = 5;
  for (int k = 0; k < c->nt; k++) {
    b->ins[b->g.n_input++] = vi(names[k], 1, c->rank[k], c->shape[k]);
    int64_t n = 1;
    for (int i = 0; i < c->rank[k]; i++) n *= c->shape[k][i];
    float *x = keep(calloc((size_t)n, sizeof *x));
    for (int64_t i = 0; i < n; i++) x[i] = (float)rnd(&s);
    xs[k] = x;
  }
  b->outs[b->g.n_output++] = vi("y", 1, orank, os);
  Onnx__NodeProto *nd = node(b, "Einsum", "einsum", c->nt, names, "y");
  node_attrs(nd, 1, attr_str("equation", c->eq));
  built r = compile_built(b);
  for (int k = 0; k < c->nt; k++)
    ti[k] = kiln_tensor_borrow(KILN_FLOAT32, c->rank[k], c->shape[k], (void *)xs[k], r.st);
  kiln_tensor *to[1] = {NULL};
  cr_assert_eq(run(&r, ti, c->nt, to, 1), 0, "%s: %s", c->eq, kiln_status_message(r.st));
  double *want = keep(calloc((size_t)ny, sizeof *want));
  naive_einsum(tp, c->nt, outl, xs, sp, want, ny);
  cr_assert_eq(kiln_tensor_numel(to[0]), ny, "%s: %lld elements", c->eq,
               (long long)kiln_tensor_numel(to[0]));
  near(kiln_tensor_data(to[0]), want, ny, 1e-5, c->eq);
  kiln_tensor_free(to[0]);
  built_free(&r);
}

Test(onnx_composed, einsum_ellipses_and_diagonals) {
  static const einsum_case C[] = {
      {"...ii->...i", 1, {3, 0}, {{2, 3, 3}}},
      {"...ii->...", 1, {4, 0}, {{2, 2, 4, 4}}},
      {"ii->i", 1, {2, 0}, {{5, 5}}},
      {"i...i->...", 1, {3, 0}, {{3, 2, 3}}},
      {"...ij,...jk->...ik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}},
      {"bij,...jk->bik", 2, {3, 2}, {{2, 3, 4}, {4, 5}}},
      {"...ij,jk->...ik", 2, {4, 2}, {{2, 2, 3, 4}, {4, 3}}},
      {"iij,jk->ik", 2, {3, 2}, {{3, 3, 4}, {4, 2}}},
  };
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) einsum_check(&C[i]);
}

Test(onnx_composed, einsum_ellipsis_left_out_of_the_output_is_refused) {
  mb *b = mb_new();
  static const int64_t d[3] = {2, 3, 3}, od[1] = {3};
  b->ins[b->g.n_input++] = vi("a", 1, 3, d);
  b->outs[b->g.n_output++] = vi("y", 1, 1, od);
  static const char *const in[] = {"a"};
  Onnx__NodeProto *nd = node(b, "Einsum", "einsum", 1, in, "y");
  node_attrs(nd, 1, attr_str("equation", "...ii->i"));
  import_fails(b, KILN_ERR_VERIFY, "has no \"...\"");
}

/* ---- Unique along an axis ---- */

/* slice k of x (dims d[3]) along axis ax into out (its elements in order) */
static void slice_of(const float *x, const int64_t *d, int ax, int64_t k, float *out) {
  int64_t at = 0;
  for (int64_t i = 0; i < d[0]; i++)
    for (int64_t j = 0; j < d[1]; j++)
      for (int64_t l = 0; l < d[2]; l++) {
        int64_t idx[3] = {i, j, l};
        if (idx[ax] == k) out[at++] = x[(i * d[1] + j) * d[2] + l];
      }
}

static int cmp_slices(const float *a, const float *b, int64_t m) {
  for (int64_t i = 0; i < m; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

static void unique_check(int ax, int sorted) {
  static const int64_t d[3] = {4, 5, 2};
  float x[40];
  uint64_t s = 9;
  for (int i = 0; i < 40; i++) x[i] = (float)floor(rnd(&s)); /* few values: equal slices */
  /* make some slices along ax equal: copy slice 0 over the last */
  int64_t len = d[ax], m = 40 / len;
  for (int64_t i = 0; i < d[0]; i++)
    for (int64_t j = 0; j < d[1]; j++)
      for (int64_t l = 0; l < d[2]; l++) {
        int64_t idx[3] = {i, j, l}, src[3] = {i, j, l};
        if (idx[ax] != len - 1) continue;
        src[ax] = 0;
        x[(i * d[1] + j) * d[2] + l] = x[(src[0] * d[1] + src[1]) * d[2] + src[2]];
      }
  /* naive: groups of equal slices, in order of first occurrence */
  float sl[5][40];
  int64_t first[5], cnt[5] = {0}, inv[5], ng = 0;
  for (int64_t k = 0; k < len; k++) {
    slice_of(x, d, ax, k, sl[k]);
    int64_t g = 0;
    while (g < ng && cmp_slices(sl[first[g]], sl[k], m) != 0) g++;
    if (g == ng) first[ng++] = k;
    cnt[g]++, inv[k] = g;
  }
  int64_t order[5];
  for (int64_t g = 0; g < ng; g++) order[g] = g;
  if (sorted) /* by slice, lexicographically */
    for (int64_t i = 1; i < ng; i++)
      for (int64_t j = i; j > 0 && cmp_slices(sl[first[order[j - 1]]], sl[first[order[j]]], m) > 0;
           j--) {
        int64_t t = order[j];
        order[j] = order[j - 1], order[j - 1] = t;
      }
  int64_t rank[5];
  for (int64_t g = 0; g < ng; g++) rank[order[g]] = g;
  mb *b = mb_new();
  b->ins[b->g.n_input++] = vi("x", 1, 3, d);
  static const char *const sym[3] = {"p", "q", "r"}, *const one[1] = {"u"};
  b->outs[b->g.n_output++] = vinfo_of("y", 1, 3, sym);
  b->outs[b->g.n_output++] = vinfo_of("i", 7, 1, one);
  b->outs[b->g.n_output++] = vi("inv", 7, 1, &d[ax]);
  b->outs[b->g.n_output++] = vinfo_of("c", 7, 1, one);
  static const char *const in[] = {"x"};
  Onnx__NodeProto *nd = node(b, "Unique", "unique", 1, in, "y");
  node_outputs(nd, 4, "y", "i", "inv", "c");
  node_attrs(nd, 2, attr_int("axis", ax - 3 * (ax == 2)), attr_int("sorted", sorted));
  built r = compile_built(b);
  kiln_tensor *ti[1] = {kiln_tensor_borrow(KILN_FLOAT32, 3, d, x, r.st)};
  kiln_tensor *to[4] = {NULL, NULL, NULL, NULL};
  cr_assert_eq(run(&r, ti, 1, to, 4), 0, "%s", kiln_status_message(r.st));
  cr_assert_eq(kiln_tensor_shape(to[0])[ax], ng, "axis %d: %lld groups, expected %lld", ax,
               (long long)kiln_tensor_shape(to[0])[ax], (long long)ng);
  const float *y = kiln_tensor_data(to[0]);
  const int64_t *gi = kiln_tensor_data(to[1]), *ginv = kiln_tensor_data(to[2]);
  const int64_t *gc = kiln_tensor_data(to[3]);
  int64_t yd[3] = {d[0], d[1], d[2]};
  yd[ax] = ng;
  for (int64_t g = 0; g < ng; g++) {
    float got[40];
    slice_of(y, yd, ax, g, got);
    cr_expect_eq(cmp_slices(got, sl[first[order[g]]], m), 0, "axis %d sorted %d: slice %lld", ax,
                 sorted, (long long)g);
    cr_expect_eq(gi[g], first[order[g]], "axis %d sorted %d: indices[%lld] = %lld", ax, sorted,
                 (long long)g, (long long)gi[g]);
    cr_expect_eq(gc[g], cnt[order[g]], "axis %d sorted %d: counts[%lld] = %lld", ax, sorted,
                 (long long)g, (long long)gc[g]);
  }
  for (int64_t k = 0; k < len; k++)
    cr_expect_eq(ginv[k], rank[inv[k]], "axis %d sorted %d: inverse[%lld] = %lld", ax, sorted,
                 (long long)k, (long long)ginv[k]);
  for (int k = 0; k < 4; k++) kiln_tensor_free(to[k]);
  built_free(&r);
}

Test(onnx_composed, unique_along_each_axis) {
  for (int ax = 0; ax < 3; ax++)
    for (int sorted = 0; sorted < 2; sorted++) unique_check(ax, sorted);
}

/* ---- QLinearConv ---- */

/* Per-channel w_scale, an int32 bias, pads and strides, results that
 * saturate both ways and ties that round to even, against a naive loop in
 * double with the multiplier formed in float as ONNX's reference. */
Test(onnx_composed, qlinearconv_per_channel) {
  enum { C = 2, H = 5, W = 6, M = 3, K = 3 };
  static const int64_t xs[4] = {1, C, H, W}, ws[4] = {M, C, K, K}, m1[1] = {M};
  static const int64_t os[4] = {1, M, 3, 3};
  mb *b = mb_new();
  b->ins[b->g.n_input++] = vi("x", 2, 4, xs);           /* uint8 */
  b->ins[b->g.n_input++] = vi("xs", 1, 0, NULL);
  b->ins[b->g.n_input++] = vi("xz", 2, 0, NULL);
  b->ins[b->g.n_input++] = vi("w", 3, 4, ws);           /* int8 */
  b->ins[b->g.n_input++] = vi("wsc", 1, 1, m1);
  b->ins[b->g.n_input++] = vi("wz", 3, 0, NULL);
  b->ins[b->g.n_input++] = vi("ys", 1, 0, NULL);
  b->ins[b->g.n_input++] = vi("yz", 2, 0, NULL);
  b->ins[b->g.n_input++] = vi("bias", 6, 1, m1);        /* int32 */
  b->outs[b->g.n_output++] = vi("y", 2, 4, os);
  static const char *const in[] = {"x", "xs", "xz", "w", "wsc", "wz", "ys", "yz", "bias"};
  Onnx__NodeProto *nd = node(b, "QLinearConv", "qconv", 9, in, "y");
  static const int64_t k[2] = {K, K}, st[2] = {2, 2}, pads[4] = {1, 0, 1, 1};
  node_attrs(nd, 3, attr_ints("kernel_shape", 2, k), attr_ints("strides", 2, st),
             attr_ints("pads", 4, pads));
  built r = compile_built(b);
  uint8_t x[C * H * W], xz = 100, yz = 120;
  int8_t w[M * C * K * K], wz = -3;
  float xsc = 0.05f, wsc[M] = {0.02f, 0.5f, 0.001f}, ysc = 0.125f;
  int32_t bias[M] = {-40, 7, 3000};
  uint64_t s = 13;
  for (int i = 0; i < C * H * W; i++) x[i] = (uint8_t)(rnd(&s) * 60 + 128);
  for (int i = 0; i < M * C * K * K; i++) w[i] = (int8_t)(rnd(&s) * 60);
  kiln_tensor *ti[9] = {
      kiln_tensor_borrow(KILN_UINT8, 4, xs, x, r.st),
      kiln_tensor_borrow(KILN_FLOAT32, 0, NULL, &xsc, r.st),
      kiln_tensor_borrow(KILN_UINT8, 0, NULL, &xz, r.st),
      kiln_tensor_borrow(KILN_INT8, 4, ws, w, r.st),
      kiln_tensor_borrow(KILN_FLOAT32, 1, m1, wsc, r.st),
      kiln_tensor_borrow(KILN_INT8, 0, NULL, &wz, r.st),
      kiln_tensor_borrow(KILN_FLOAT32, 0, NULL, &ysc, r.st),
      kiln_tensor_borrow(KILN_UINT8, 0, NULL, &yz, r.st),
      kiln_tensor_borrow(KILN_INT32, 1, m1, bias, r.st)};
  kiln_tensor *to[1] = {NULL};
  cr_assert_eq(run(&r, ti, 9, to, 1), 0, "%s", kiln_status_message(r.st));
  const uint8_t *got = kiln_tensor_data(to[0]);
  int saturated = 0;
  for (int m = 0; m < M; m++)
    for (int oh = 0; oh < 3; oh++)
      for (int ow = 0; ow < 3; ow++) {
        long acc = bias[m];
        for (int c = 0; c < C; c++)
          for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
              int h = oh * 2 - 1 + i, v = ow * 2 + j;
              if (h < 0 || h >= H || v < 0 || v >= W) continue;
              acc += (long)(x[(c * H + h) * W + v] - xz) * (w[((m * C + c) * K + i) * K + j] - wz);
            }
        float mult = xsc * wsc[m] / ysc;
        double q = nearbyint((double)acc * (double)mult) + yz;
        q = q < 0 ? 0 : q > 255 ? 255 : q;
        saturated += q == 0 || q == 255;
        uint8_t g = got[(m * 3 + oh) * 3 + ow];
        cr_expect_eq(g, (uint8_t)q, "y[%d, %d, %d] = %d, expected %d", m, oh, ow, g, (int)q);
      }
  cr_expect(saturated > 0, "no result saturated: the case does not test it");
  kiln_tensor_free(to[0]);
  built_free(&r);
}

/* ---- MelWeightMatrix ---- */

/* ONNX's reference in C: the mel edges and step in float, the rest in
 * double; y [d / 2 + 1, m] */
static void naive_mel(int64_t m, int64_t d, double sr, float lo, float hi, double *y) {
  float lm = 2595.0f * (float)log10((double)(1.0f + lo / 700.0f));
  float hm = 2595.0f * (float)log10((double)(1.0f + hi / 700.0f));
  float step = (hm - lm) / (float)(m + 2);
  int64_t b[64], s = d / 2 + 1;
  for (int64_t k = 0; k < m + 2; k++) {
    double hz = 700 * (pow(10, ((double)k * step + lm) / 2595) - 1);
    b[k] = (int64_t)floor((double)(d + 1) * hz / sr);
  }
  memset(y, 0, (size_t)(s * m) * sizeof *y);
  for (int64_t i = 0; i < m; i++) {
    int64_t l = b[i], c = b[i + 1], h = b[i + 2];
    if (c == l) y[c * m + i] = 1;
    else
      for (int64_t j = l; j <= c; j++) y[j * m + i] = (double)(j - l) / (double)(c - l);
    for (int64_t j = c; j < h; j++) y[j * m + i] = (double)(h - j) / (double)(h - c);
  }
}

/* One model, its five scalars given at run time: each set gives its own
 * [d / 2 + 1, m] matrix. */
Test(onnx_composed, melweightmatrix_run_time_inputs) {
  mb *b = mb_new();
  static const char *const names[5] = {"m", "d", "sr", "lo", "hi"};
  static const int elem[5] = {7, 7, 7, 1, 1};
  for (int i = 0; i < 5; i++) b->ins[b->g.n_input++] = vi(names[i], elem[i], 0, NULL);
  static const char *const sym[2] = {"s", "mm"};
  b->outs[b->g.n_output++] = vinfo_of("y", 1, 2, sym);
  node(b, "MelWeightMatrix", "mel", 5, names, "y");
  built r = compile_built(b);
  static const struct {
    int64_t m, d, sr;
    float lo, hi;
  } C[] = {{8, 16, 8192, 0, 4096}, {5, 31, 16000, 100, 7000}, {3, 8, 1000, 50, 400},
           {10, 64, 22050, 20, 11000}};
  for (size_t k = 0; k < sizeof C / sizeof *C; k++) {
    int64_t m = C[k].m, d = C[k].d, sr = C[k].sr;
    float lo = C[k].lo, hi = C[k].hi;
    kiln_tensor *ti[5] = {kiln_tensor_borrow(KILN_INT64, 0, NULL, &m, r.st),
                          kiln_tensor_borrow(KILN_INT64, 0, NULL, &d, r.st),
                          kiln_tensor_borrow(KILN_INT64, 0, NULL, &sr, r.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 0, NULL, &lo, r.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 0, NULL, &hi, r.st)};
    kiln_tensor *to[1] = {NULL};
    cr_assert_eq(run(&r, ti, 5, to, 1), 0, "%s", kiln_status_message(r.st));
    cr_assert_eq(kiln_tensor_shape(to[0])[0], d / 2 + 1, "case %zu: %lld rows", k,
                 (long long)kiln_tensor_shape(to[0])[0]);
    cr_assert_eq(kiln_tensor_shape(to[0])[1], m, "case %zu: %lld columns", k,
                 (long long)kiln_tensor_shape(to[0])[1]);
    double want[33 * 10];
    naive_mel(m, d, (double)sr, lo, hi, want);
    char what[32];
    snprintf(what, sizeof what, "mel case %zu", k);
    near(kiln_tensor_data(to[0]), want, (d / 2 + 1) * m, 1e-6, what);
    kiln_tensor_free(to[0]);
  }
  built_free(&r);
}

/* ---- pools ---- */

typedef struct pool_case {
  int sp;                 /* 2 or 3 spatial axes */
  int64_t shape[5];       /* N, C, spatial... */
  int64_t k[3], st[3], dil[3], pads[6];
  int ceil, count_pad, avg, order;
} pool_case;

/* output length of one axis as ONNX computes it (a last ceil window
 * starting in the end padding is dropped) */
static int64_t out_len(int64_t in, int64_t k, int64_t st, int64_t dil, int64_t pb, int64_t pe,
                       bool ceil) {
  int64_t eff = dil * (k - 1) + 1, span = in + pb + pe - eff;
  int64_t o = (ceil ? (span + st - 1) / st : span / st) + 1;
  if (ceil && (o - 1) * st >= in + pb) o--;
  return o;
}

/* naive pooling of x; y values and (max, 2-D) flat indices */
static void naive_pool(const pool_case *c, const float *x, double *y, int64_t *idx,
                       int64_t *os) {
  int sp = c->sp;
  int64_t in[3] = {1, 1, 1}, o[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1},
          dl[3] = {1, 1, 1}, pb[3] = {0}, pe[3] = {0};
  for (int i = 0; i < sp; i++) {
    int a = 3 - sp + i;
    in[a] = c->shape[2 + i], k[a] = c->k[i], st[a] = c->st[i], dl[a] = c->dil[i];
    pb[a] = c->pads[i], pe[a] = c->pads[sp + i];
    o[a] = out_len(in[a], k[a], st[a], dl[a], pb[a], pe[a], c->ceil);
    os[2 + i] = o[a];
  }
  os[0] = c->shape[0], os[1] = c->shape[1];
  int64_t plane = in[0] * in[1] * in[2], at = 0;
  for (int64_t nc = 0; nc < c->shape[0] * c->shape[1]; nc++)
    for (int64_t z = 0; z < o[0]; z++)
      for (int64_t h = 0; h < o[1]; h++)
        for (int64_t w = 0; w < o[2]; w++, at++) {
          double best = 0, sum = 0;
          int64_t cnt = 0, padcnt = 0, bi = -1;
          for (int64_t a = 0; a < k[0]; a++)
            for (int64_t b2 = 0; b2 < k[1]; b2++)
              for (int64_t e = 0; e < k[2]; e++) {
                int64_t p[3] = {z * st[0] - pb[0] + a * dl[0], h * st[1] - pb[1] + b2 * dl[1],
                                w * st[2] - pb[2] + e * dl[2]};
                bool inside = true, inpad = true;
                for (int q = 0; q < 3; q++) {
                  inside = inside && p[q] >= 0 && p[q] < in[q];
                  inpad = inpad && p[q] >= -pb[q] && p[q] < in[q] + pe[q];
                }
                padcnt += inpad;
                if (!inside) continue;
                int64_t off = (p[0] * in[1] + p[1]) * in[2] + p[2];
                double v = x[nc * plane + off];
                sum += v, cnt++;
                if (bi < 0 || v > best) {
                  best = v;
                  bi = nc * plane + (c->order ? p[1] + p[2] * in[1] : off);
                }
              }
          y[at] = c->avg ? sum / (double)(c->count_pad ? padcnt : cnt) : best;
          if (idx) idx[at] = bi;
        }
}

static void pool_check(const pool_case *c) {
  mb *b = mb_new();
  int r = c->sp + 2;
  int64_t os[5], numel = 1, onumel = 1;
  for (int i = 0; i < r; i++) numel *= c->shape[i];
  float *x = keep(calloc((size_t)numel, sizeof *x));
  uint64_t s = 11;
  for (int64_t i = 0; i < numel; i++) x[i] = (float)(floor(rnd(&s) * 4) / 4); /* ties */
  if (numel > 3) x[3] = -INFINITY;
  double *want = keep(calloc((size_t)numel * 8, sizeof *want));
  int64_t *wix = keep(calloc((size_t)numel * 8, sizeof *wix));
  naive_pool(c, x, want, c->avg ? NULL : wix, os);
  for (int i = 0; i < r; i++) onumel *= os[i];
  bool indices = !c->avg && c->sp == 2;
  b->ins[b->g.n_input++] = vi("x", 1, r, c->shape);
  b->outs[b->g.n_output++] = vi("y", 1, r, os);
  if (indices) b->outs[b->g.n_output++] = vi("i", 7, r, os);
  static const char *const in[] = {"x"};
  Onnx__NodeProto *nd = node(b, c->avg ? "AveragePool" : "MaxPool", "pool", 1, in, "y");
  if (indices) node_outputs(nd, 2, "y", "i");
  Onnx__AttributeProto *common[4] = {attr_ints("kernel_shape", c->sp, c->k),
                                     attr_ints("strides", c->sp, c->st),
                                     attr_ints("pads", 2 * c->sp, c->pads),
                                     attr_int("ceil_mode", c->ceil)};
  if (c->avg)
    node_attrs(nd, 5, common[0], common[1], common[2], common[3],
               attr_int("count_include_pad", c->count_pad));
  else
    node_attrs(nd, 6, common[0], common[1], common[2], common[3],
               attr_ints("dilations", c->sp, c->dil), attr_int("storage_order", c->order));
  built rb = compile_built(b);
  kiln_tensor *ti[1] = {kiln_tensor_borrow(KILN_FLOAT32, r, c->shape, x, rb.st)};
  kiln_tensor *to[2] = {NULL, NULL};
  cr_assert_eq(run(&rb, ti, 1, to, indices ? 2 : 1), 0, "%s", kiln_status_message(rb.st));
  for (int i = 0; i < r; i++)
    cr_assert_eq(kiln_tensor_shape(to[0])[i], os[i], "dim %d: %lld, expected %lld", i,
                 (long long)kiln_tensor_shape(to[0])[i], (long long)os[i]);
  char what[64];
  snprintf(what, sizeof what, "%d-D %s ceil %d", c->sp, c->avg ? "avg" : "max", c->ceil);
  near(kiln_tensor_data(to[0]), want, onumel, 1e-5, what);
  if (indices) {
    const int64_t *got = kiln_tensor_data(to[1]);
    for (int64_t i = 0; i < onumel; i++)
      cr_expect_eq(got[i], wix[i], "%s order %d: index %lld: %lld, expected %lld", what,
                   c->order, (long long)i, (long long)got[i], (long long)wix[i]);
    kiln_tensor_free(to[1]);
  }
  kiln_tensor_free(to[0]);
  built_free(&rb);
}

Test(onnx_composed, pool_3d) {
  static const pool_case C[] = {
      {3, {1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 0, 1, 0, 1, 1}, 0, 0, 0, 0},
      {3, {2, 1, 5, 6, 7}, {3, 2, 2}, {2, 2, 3}, {1, 1, 1}, {1, 1, 0, 1, 0, 1}, 1, 0, 1, 0},
      {3, {2, 1, 5, 6, 7}, {3, 2, 2}, {2, 2, 3}, {1, 1, 1}, {1, 1, 0, 1, 0, 1}, 1, 1, 1, 0},
      {3, {1, 2, 4, 5, 6}, {2, 2, 2}, {1, 1, 1}, {2, 1, 2}, {0, 0, 0, 0, 0, 0}, 0, 0, 0, 0},
      {3, {1, 1, 6, 5, 4}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 1, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) pool_check(&C[i]);
}

Test(onnx_composed, maxpool_indices) {
  static const pool_case C[] = {
      {2, {1, 2, 5, 6}, {2, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}, 0, 0, 0, 0},
      {2, {2, 3, 7, 5}, {3, 2}, {2, 1}, {1, 1}, {0, 1, 0, 0}, 1, 0, 0, 0},
      {2, {1, 2, 7, 8}, {2, 3}, {1, 2}, {2, 2}, {1, 1, 2, 0}, 0, 0, 0, 1},
      {2, {1, 1, 6, 6}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) pool_check(&C[i]);
}

/* ---- MaxUnpool ---- */

static mb *unpool_model(const int64_t *xs, const int64_t *ys, const int64_t *shape_init) {
  mb *b = mb_new();
  b->ins[b->g.n_input++] = vi("x", 1, 4, xs);
  b->ins[b->g.n_input++] = vi("i", 7, 4, xs);
  static const char *const sym[4] = {"n", "c", "h", "w"};
  b->outs[b->g.n_output++] = shape_init ? vi("y", 1, 4, ys) : vinfo_of("y", 1, 4, sym);
  static const char *const in[] = {"x", "i", "s"};
  if (shape_init) init_i64(b, "s", 4, shape_init);
  else b->ins[b->g.n_input++] = vi("s", 7, 1, (int64_t[]){4});
  static const int64_t k[2] = {2, 2};
  Onnx__NodeProto *nd = node(b, "MaxUnpool", "unpool", 3, in, "y");
  node_attrs(nd, 2, attr_ints("kernel_shape", 2, k), attr_ints("strides", 2, k));
  return b;
}

Test(onnx_composed, maxunpool_into_a_larger_output) {
  static const int64_t xs[4] = {1, 2, 2, 3}, ys[4] = {1, 2, 5, 7};
  static const int64_t shape[4] = {1, 2, 5, 7}; /* inferred: 1, 2, 4, 6 */
  float x[12];
  int64_t ix[12];
  double want[70] = {0};
  for (int i = 0; i < 12; i++) {
    int c = i / 6, h = (i / 3) % 2, w = i % 3, dh = i % 2, dw = (i / 2) % 2;
    x[i] = (float)(i + 1);
    ix[i] = (c * 4 + 2 * h + dh) * 6 + 2 * w + dw; /* into [1, 2, 4, 6] */
    want[(c * 5 + 2 * h + dh) * 7 + 2 * w + dw] = i + 1;
  }
  for (int pass = 0; pass < 2; pass++) { /* output_shape an initializer, then an input */
    built r = compile_built(unpool_model(xs, ys, pass ? NULL : shape));
    kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 4, xs, x, r.st),
                          kiln_tensor_borrow(KILN_INT64, 4, xs, ix, r.st),
                          kiln_tensor_borrow(KILN_INT64, 1, (int64_t[]){4}, (void *)shape, r.st)};
    kiln_tensor *out[1] = {NULL};
    cr_assert_eq(run(&r, in, pass ? 3 : 2, out, 1), 0, "%s", kiln_status_message(r.st));
    if (!pass) kiln_tensor_free(in[2]);
    near(kiln_tensor_data(out[0]), want, 70, 0, pass ? "unpool, shape input" : "unpool");
    kiln_tensor_free(out[0]);
    out[0] = NULL;
    /* an output_shape smaller than the inferred one is an error, not a wrong place */
    if (pass) {
      static const int64_t small[4] = {1, 2, 4, 5};
      kiln_tensor *in2[3] = {kiln_tensor_borrow(KILN_FLOAT32, 4, xs, x, r.st),
                             kiln_tensor_borrow(KILN_INT64, 4, xs, ix, r.st),
                             kiln_tensor_borrow(KILN_INT64, 1, (int64_t[]){4}, (void *)small,
                                                r.st)};
      cr_expect_neq(run(&r, in2, 3, out, 1), 0, "a too small output_shape ran");
      cr_expect(strstr(kiln_status_message(r.st), "scatter"), "%s", kiln_status_message(r.st));
    }
    built_free(&r);
  }
}
