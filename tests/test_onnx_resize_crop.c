/* test_onnx_resize_crop.c - ONNX Resize with coordinate_transformation_mode
 * tf_crop_and_resize (src/onnx/resize_crop.c) on models built here, against
 * ONNX's formula written out in C: "linear" with a run-time roi reaching
 * past the input on both sides (extrapolation_value there), "nearest" in
 * each nearest_mode with sizes given at run time (one model, several
 * sizes, an axis resized to 1), and sizes from known scales. ONNX's node
 * test has one case (linear, fixed sizes). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/onnx_build.h"

TestSuite(onnx_resize_crop, .fini = free_kept);

enum { RANK = 4, MAXOUT = 1024 };

typedef struct crop_case {
  int64_t in[RANK], out[RANK];
  float roi[2 * RANK];
  bool linear;
  const char *round; /* nearest_mode (nearest only) */
  float extrap;
} crop_case;

/* ONNX's source coordinate of output position p on axis i. */
static double coord(const crop_case *c, int i, int64_t p) {
  double s = c->roi[i], e = c->roi[RANK + i], hi = (double)(c->in[i] - 1);
  if (c->out[i] > 1) return s * hi + (double)p * (e - s) * hi / (double)(c->out[i] - 1);
  return 0.5 * (s + e) * hi;
}

static int64_t clampi(double v, int64_t hi) { return v < 0 ? 0 : v > (double)hi ? hi : (int64_t)v; }

static int64_t round_nearest(const char *mode, double v) {
  if (strcmp(mode, "round_prefer_floor") == 0)
    return (int64_t)(v - floor(v) == 0.5 ? floor(v) : round(v));
  if (strcmp(mode, "round_prefer_ceil") == 0)
    return (int64_t)(v - floor(v) == 0.5 ? ceil(v) : round(v));
  return (int64_t)(strcmp(mode, "floor") == 0 ? floor(v) : ceil(v));
}

/* The expected output of c over x (row-major c->in) into y. */
static void oracle(const crop_case *c, const float *x, double *y) {
  int64_t n = c->out[0] * c->out[1] * c->out[2] * c->out[3];
  for (int64_t o = 0; o < n; o++) {
    int64_t q = o, p[RANK];
    for (int i = RANK - 1; i >= 0; i--) p[i] = q % c->out[i], q /= c->out[i];
    int64_t lo[RANK], hi[RANK];
    double w[RANK];
    bool outside = false;
    for (int i = 0; i < RANK; i++) {
      double v = coord(c, i, p[i]);
      outside |= v < 0 || v > (double)(c->in[i] - 1);
      if (c->linear) {
        lo[i] = clampi(floor(v), c->in[i] - 1);
        hi[i] = clampi(floor(v) + 1, c->in[i] - 1);
        w[i] = v - floor(v);
      } else {
        lo[i] = hi[i] = clampi((double)round_nearest(c->round, v), c->in[i] - 1);
        w[i] = 0;
      }
    }
    if (outside) {
      y[o] = c->extrap;
      continue;
    }
    double acc = 0;
    for (int corner = 0; corner < 1 << RANK; corner++) {
      double wt = 1;
      int64_t at = 0;
      for (int i = 0; i < RANK; i++) {
        bool up = corner >> i & 1;
        wt *= up ? w[i] : 1 - w[i];
        at = at * c->in[i] + (up ? hi[i] : lo[i]);
      }
      if (wt != 0) acc += wt * x[at];
    }
    y[o] = acc;
  }
}

static const char *const *dims4(const int64_t *d) {
  const char **t = keep(calloc(RANK, sizeof *t));
  for (int i = 0; i < RANK; i++) {
    char *s = keep(calloc(24, 1));
    snprintf(s, 24, "%lld", (long long)d[i]);
    t[i] = s;
  }
  return t;
}

/* Resize(X, roi, scales, sizes) with roi, and sizes unless scales_init is
 * given (then an f32 initializer named "scales"), as graph inputs. */
static mb *model(const crop_case *c, const float *scales_init) {
  mb *b = mb_new();
  static const char *const sd[1] = {"4"}, *const rd[1] = {"8"}, *const od[RANK] = {"a", "b", "c",
                                                                                  "d"};
  b->ins[b->g.n_input++] = vinfo("X", RANK, dims4(c->in));
  b->ins[b->g.n_input++] = vinfo("roi", 1, rd);
  if (!scales_init) b->ins[b->g.n_input++] = vinfo_of("sizes", 7, 1, sd);
  b->outs[b->g.n_output++] = vinfo("Y", RANK, od);
  static const char *const with_sizes[] = {"X", "roi", "", "sizes"};
  static const char *const with_scales[] = {"X", "roi", "scales"};
  Onnx__NodeProto *n = node(b, "Resize", "crop", scales_init ? 3 : 4,
                            scales_init ? with_scales : with_sizes, "Y");
  if (scales_init) {
    Onnx__TensorProto *t = init_f32(b, "scales", RANK, RANK * sizeof(float));
    memcpy(t->raw_data.data, scales_init, RANK * sizeof(float));
  }
  node_attrs(n, 4, attr_str("coordinate_transformation_mode", "tf_crop_and_resize"),
             attr_str("mode", c->linear ? "linear" : "nearest"),
             attr_str("nearest_mode", c->round ? c->round : "round_prefer_floor"),
             attr_float("extrapolation_value", c->extrap));
  return b;
}

static float *ramp(int64_t n) {
  float *v = keep(calloc((size_t)n, sizeof *v));
  for (int64_t i = 0; i < n; i++) v[i] = (float)(i * 37 % 101) / 8.0f - 3.0f;
  return v;
}

/* Run the compiled model r on case c (its sizes fed unless by_scales). */
static void run_case(built *r, const crop_case *c, bool by_scales) {
  int64_t xn = c->in[0] * c->in[1] * c->in[2] * c->in[3], eight = 8, four = 4;
  int64_t yn = c->out[0] * c->out[1] * c->out[2] * c->out[3];
  cr_assert(yn <= MAXOUT);
  float *x = ramp(xn), roi[8];
  memcpy(roi, c->roi, sizeof roi);
  int64_t sizes[RANK];
  memcpy(sizes, c->out, sizeof sizes);
  kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, RANK, c->in, x, r->st),
                        kiln_tensor_borrow(KILN_FLOAT32, 1, &eight, roi, r->st),
                        kiln_tensor_borrow(KILN_INT64, 1, &four, sizes, r->st)};
  kiln_tensor *out[1] = {NULL};
  int nin = by_scales ? 2 : 3;
  int rc = kiln_model_execute(r->m, in, nin, out, 1, r->st);
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  cr_assert_eq(rc, 0, "%s", kiln_status_message(r->st));
  const int64_t *shape = kiln_tensor_shape(out[0]);
  for (int i = 0; i < RANK; i++)
    cr_assert_eq(shape[i], c->out[i], "axis %d: %lld, expected %lld", i, (long long)shape[i],
                 (long long)c->out[i]);
  double want[MAXOUT];
  oracle(c, x, want);
  const float *got = kiln_tensor_data(out[0]);
  for (int64_t i = 0; i < yn; i++)
    cr_expect(fabs(got[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])),
              "%s %s: element %lld: %.9g, expected %.9g", c->linear ? "linear" : "nearest",
              c->round ? c->round : "", (long long)i, got[i], want[i]);
  kiln_tensor_free(out[0]);
}

Test(onnx_resize_crop, linear_with_a_roi_past_both_edges) {
  crop_case c = {.in = {1, 2, 5, 4}, .out = {1, 2, 4, 6},
                 .roi = {0, 0, -0.2f, 0.1f, 1, 1, 1.3f, 0.8f}, .linear = true, .extrap = 7};
  built r = compile_built(model(&c, NULL));
  run_case(&r, &c, false);
  /* the same model, another roi and other sizes: both are run-time data */
  crop_case d = c;
  const float roi2[8] = {0, 0.5f, 0.25f, -0.5f, 1, 0.5f, 0.75f, 0.5f};
  memcpy(d.roi, roi2, sizeof roi2);
  d.out[2] = 7, d.out[3] = 1, d.out[1] = 3;
  run_case(&r, &d, false);
  built_free(&r);
}

Test(onnx_resize_crop, nearest_in_each_mode) {
  static const char *const modes[4] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  for (int m = 0; m < 4; m++) {
    /* roi [0.125, 0.875] of 5 cells at 4 and 7 outputs: coordinates x.5 and x.25 */
    crop_case c = {.in = {2, 1, 5, 5}, .out = {2, 1, 4, 7},
                   .roi = {0, 0, 0.125f, 0, 1, 1, 0.875f, 1.5f}, .round = modes[m],
                   .extrap = -1};
    built r = compile_built(model(&c, NULL));
    run_case(&r, &c, false);
    c.out[2] = 1, c.out[3] = 2;
    run_case(&r, &c, false);
    built_free(&r);
  }
}

Test(onnx_resize_crop, sizes_from_known_scales) {
  const float scales[RANK] = {1, 1, 1.5f, 0.5f};
  crop_case c = {.in = {1, 3, 4, 6}, .out = {1, 3, 6, 3},
                 .roi = {0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 1.1f}, .linear = true, .extrap = 2.5f};
  built r = compile_built(model(&c, scales));
  run_case(&r, &c, true);
  built_free(&r);
}
