/* test_onnx_convt3d.c - ONNX's 3-D ConvTranspose, which the importer
 * composes from two mo.conv2d_transpose (src/onnx/convt3d.c), on models
 * built here against ONNX's definition as a naive scatter loop: strides,
 * dilations, pads and output_padding different on each axis, with a bias;
 * output_shape and auto_pad SAME_UPPER / SAME_LOWER turned into paddings;
 * a symbolic batch run at two sizes. ONNX's node test has none of these
 * (one case, all attributes at their defaults). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/onnx_build.h"

TestSuite(onnx_convt3d, .fini = free_kept);

typedef struct ct_case {
  int64_t c, m, d[3], k[3]; /* input channels, output channels, spatial dims, kernel */
  int64_t st[3], dil[3], pads[6], op[3]; /* pads: begins, then ends */
  bool bias;
  const char *auto_pad;                  /* NULL: NOTSET */
  int64_t out_shape[3];                  /* [0] 0: no output_shape attribute */
} ct_case;

static const char *num(int64_t v) {
  char *t = keep(calloc(24, 1));
  snprintf(t, 24, "%lld", (long long)v);
  return t;
}

/* The paddings ONNX derives for output_shape / auto_pad (its formula). */
static void derive_pads(const ct_case *c, int64_t pads[6], int64_t op[3], int64_t out[3]) {
  bool upper = c->auto_pad && strcmp(c->auto_pad, "SAME_UPPER") == 0;
  bool same = c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0;
  for (int i = 0; i < 3; i++) {
    pads[i] = c->pads[i], pads[3 + i] = c->pads[3 + i], op[i] = c->op[i];
    if (c->out_shape[0] || same) {
      int64_t want = c->out_shape[0] ? c->out_shape[i] : c->d[i] * c->st[i];
      int64_t total = c->st[i] * (c->d[i] - 1) + c->op[i] + (c->k[i] - 1) * c->dil[i] + 1 - want;
      int64_t half = (int64_t)floor((double)total / 2);
      pads[i] = upper ? half : total - half;
      pads[3 + i] = total - pads[i];
    }
    out[i] = c->st[i] * (c->d[i] - 1) + op[i] + (c->k[i] - 1) * c->dil[i] + 1 - pads[i] -
             pads[3 + i];
  }
}

static mb *model(const ct_case *c, const char *batch) {
  mb *b = mb_new();
  int64_t pads[6], op[3], o[3];
  derive_pads(c, pads, op, o);
  const char **xd = keep(calloc(5, sizeof *xd)), **wd = keep(calloc(5, sizeof *wd));
  const char **yd = keep(calloc(5, sizeof *yd)), **bd = keep(calloc(1, sizeof *bd));
  xd[0] = batch, xd[1] = num(c->c), wd[0] = num(c->c), wd[1] = num(c->m);
  yd[0] = batch, yd[1] = num(c->m), bd[0] = num(c->m);
  for (int i = 0; i < 3; i++)
    xd[2 + i] = num(c->d[i]), wd[2 + i] = num(c->k[i]), yd[2 + i] = num(o[i]);
  b->ins[b->g.n_input++] = vinfo("x", 5, xd);
  b->ins[b->g.n_input++] = vinfo("w", 5, wd);
  if (c->bias) b->ins[b->g.n_input++] = vinfo("b", 1, bd);
  b->outs[b->g.n_output++] = vinfo("y", 5, yd);
  static const char *const in[] = {"x", "w", "b"};
  Onnx__NodeProto *n = node(b, "ConvTranspose", "deconv", c->bias ? 3 : 2, in, "y");
  Onnx__AttributeProto *a[5];
  int na = 0;
  a[na++] = attr_ints("strides", 3, c->st);
  a[na++] = attr_ints("dilations", 3, c->dil);
  a[na++] = attr_ints("output_padding", 3, c->op);
  if (c->out_shape[0]) a[na++] = attr_ints("output_shape", 3, c->out_shape);
  else if (c->auto_pad) a[na++] = attr_str("auto_pad", c->auto_pad);
  else a[na++] = attr_ints("pads", 6, c->pads);
  n->n_attribute = (size_t)na;
  n->attribute = keep(calloc((size_t)na, sizeof *n->attribute));
  memcpy(n->attribute, a, (size_t)na * sizeof *a);
  return b;
}

/* ONNX's ConvTranspose as a scatter: every input cell times the kernel. */
static void naive(const ct_case *c, int64_t nb, const float *x, const float *w, const float *bias,
                  double *y, const int64_t pads[6], const int64_t o[3]) {
  int64_t on = c->m * o[0] * o[1] * o[2];
  for (int64_t i = 0; i < nb * on; i++) y[i] = bias ? bias[(i / (o[0] * o[1] * o[2])) % c->m] : 0;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t ci = 0; ci < c->c; ci++)
      for (int64_t i0 = 0; i0 < c->d[0]; i0++)
        for (int64_t i1 = 0; i1 < c->d[1]; i1++)
          for (int64_t i2 = 0; i2 < c->d[2]; i2++) {
            double v = x[(((b * c->c + ci) * c->d[0] + i0) * c->d[1] + i1) * c->d[2] + i2];
            for (int64_t m = 0; m < c->m; m++)
              for (int64_t k0 = 0; k0 < c->k[0]; k0++)
                for (int64_t k1 = 0; k1 < c->k[1]; k1++)
                  for (int64_t k2 = 0; k2 < c->k[2]; k2++) {
                    int64_t p0 = i0 * c->st[0] + k0 * c->dil[0] - pads[0];
                    int64_t p1 = i1 * c->st[1] + k1 * c->dil[1] - pads[1];
                    int64_t p2 = i2 * c->st[2] + k2 * c->dil[2] - pads[2];
                    if (p0 < 0 || p0 >= o[0] || p1 < 0 || p1 >= o[1] || p2 < 0 || p2 >= o[2])
                      continue;
                    double wv = w[(((ci * c->m + m) * c->k[0] + k0) * c->k[1] + k1) * c->k[2] + k2];
                    y[(((b * c->m + m) * o[0] + p0) * o[1] + p1) * o[2] + p2] += v * wv;
                  }
          }
}

static float *random_f32(int64_t n, uint64_t s) {
  float *v = keep(calloc((size_t)n, sizeof *v));
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    v[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

/* Compile c (batch dim named `batch` or a number) and run it at each of
 * the batch sizes nbs[nn] against the naive loop. */
static void check(const ct_case *c, const char *batch, const int64_t *nbs, int nn) {
  built r = compile_built(model(c, batch));
  int64_t pads[6], op[3], o[3];
  derive_pads(c, pads, op, o);
  for (int t = 0; t < nn; t++) {
    int64_t nb = nbs[t], xs[5] = {nb, c->c, c->d[0], c->d[1], c->d[2]};
    int64_t ws[5] = {c->c, c->m, c->k[0], c->k[1], c->k[2]};
    int64_t xn = nb * c->c * c->d[0] * c->d[1] * c->d[2];
    int64_t wn = c->c * c->m * c->k[0] * c->k[1] * c->k[2];
    float *x = random_f32(xn, 3 + (uint64_t)nb), *w = random_f32(wn, 7);
    float *bias = random_f32(c->m, 9);
    kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 5, xs, x, r.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 5, ws, w, r.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &c->m, bias, r.st)};
    kiln_tensor *out[1] = {NULL};
    int nin = c->bias ? 3 : 2;
    int rc = kiln_model_execute(r.m, in, nin, out, 1, r.st);
    for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
    cr_assert_eq(rc, 0, "%s", kiln_status_message(r.st));
    int64_t yn = nb * c->m * o[0] * o[1] * o[2];
    const int64_t *shape = kiln_tensor_shape(out[0]);
    cr_assert_eq(kiln_tensor_numel(out[0]), yn, "output %lld x %lld x %lld x %lld x %lld",
                 (long long)shape[0], (long long)shape[1], (long long)shape[2],
                 (long long)shape[3], (long long)shape[4]);
    double *want = keep(calloc((size_t)yn, sizeof *want));
    naive(c, nb, x, w, c->bias ? bias : NULL, want, pads, o);
    const float *got = kiln_tensor_data(out[0]);
    for (int64_t i = 0; i < yn; i++)
      cr_expect(fabs(got[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])),
                "batch %lld, element %lld: %.9g, expected %.9g", (long long)nb, (long long)i,
                got[i], want[i]);
    kiln_tensor_free(out[0]);
  }
  built_free(&r);
}

Test(onnx_convt3d, strides_dilations_pads_and_output_padding_per_axis) {
  ct_case c = {.c = 3, .m = 2, .d = {3, 4, 2}, .k = {3, 2, 2}, .st = {2, 1, 3},
               .dil = {1, 2, 1}, .pads = {1, 0, 2, 0, 1, 1}, .op = {1, 0, 2}, .bias = true};
  const int64_t nb[1] = {2};
  check(&c, "2", nb, 1);
}

Test(onnx_convt3d, output_shape_becomes_paddings) {
  ct_case c = {.c = 2, .m = 3, .d = {2, 3, 3}, .k = {2, 3, 2}, .st = {2, 2, 1},
               .dil = {1, 1, 2}, .op = {0, 1, 0}, .out_shape = {4, 7, 5}};
  const int64_t nb[1] = {1};
  check(&c, "1", nb, 1);
}

Test(onnx_convt3d, auto_pad_same_upper_and_lower) {
  ct_case c = {.c = 2, .m = 2, .d = {3, 2, 4}, .k = {2, 3, 3}, .st = {2, 3, 1},
               .dil = {1, 1, 1}, .bias = true, .auto_pad = "SAME_UPPER"};
  const int64_t nb[1] = {1};
  check(&c, "1", nb, 1);
  c.auto_pad = "SAME_LOWER";
  check(&c, "1", nb, 1);
}

Test(onnx_convt3d, a_symbolic_batch_serves_every_size) {
  ct_case c = {.c = 2, .m = 4, .d = {2, 2, 3}, .k = {2, 2, 2}, .st = {1, 2, 1},
               .dil = {2, 1, 1}, .pads = {0, 1, 0, 1, 0, 0}, .bias = true};
  const int64_t nb[2] = {1, 3};
  check(&c, "n", nb, 2);
}
