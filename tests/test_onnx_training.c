/* test_onnx_training.c - the optimizers of ONNX domain
 * ai.onnx.preview.training (src/onnx/ops_training.c) on models built here,
 * against the formulas of ONNX's operator docs written out in C (double):
 * Adagrad with a decayed rate, Adam with and without bias correction and
 * norm_coefficient_post, Momentum standard and nesterov over two groups of
 * different shapes. Each model runs at T = 0 and at T > 0 (ONNX's node
 * tests only have T = 0, where Adam and Momentum take another branch).
 * Malformed nodes (a mode ONNX does not define, a group short of a tensor,
 * T of the wrong type) are refused naming the node. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/onnx_build.h"

TestSuite(onnx_training, .fini = free_kept);

#define TRAINING "ai.onnx.preview.training"
#define MAXN 8 /* elements of a group's tensors */

static const char *const *dims_of(int64_t len) {
  char *t = keep(calloc(24, 1));
  snprintf(t, 24, "%lld", (long long)len);
  const char **d = keep(calloc(1, sizeof *d));
  d[0] = t;
  return d;
}

/* An optimizer node over `groups` groups of `kinds` f32 tensors (group i
 * has len[i] elements): inputs R, T, then kind by kind X1.., G1.., ...;
 * outputs (kinds - 1) * groups, named o0, o1, .... */
static Onnx__NodeProto *optimizer(mb *b, const char *op, int groups, int kinds,
                                  const int64_t *len) {
  int nin = 2 + groups * kinds, nout = groups * (kinds - 1);
  const char **in = keep(calloc((size_t)nin, sizeof *in));
  in[0] = "R";
  in[1] = "T";
  b->ins[b->g.n_input++] = vinfo_of("R", 1, 0, NULL);
  b->ins[b->g.n_input++] = vinfo_of("T", 7, 0, NULL);
  for (int k = 0; k < kinds; k++)
    for (int i = 0; i < groups; i++) {
      char *nm = keep(calloc(32, 1));
      snprintf(nm, 32, "in%d_%d", k, i);
      in[2 + k * groups + i] = nm;
      b->ins[b->g.n_input++] = vinfo(nm, 1, dims_of(len[i]));
    }
  Onnx__NodeProto *n = node(b, op, "opt_node", nin, in, "o0");
  n->domain = TRAINING;
  n->n_output = (size_t)nout;
  n->output = keep(calloc((size_t)nout, sizeof *n->output));
  for (int o = 0; o < nout; o++) {
    char *nm = keep(calloc(32, 1));
    snprintf(nm, 32, "o%d", o);
    n->output[o] = nm;
    b->outs[b->g.n_output++] = vinfo(nm, 1, dims_of(len[o % groups]));
  }
  return n;
}

/* The state of one run: inputs per kind and group, outputs likewise. */
typedef struct opt_run {
  int groups, kinds;
  int64_t len[2];
  float r;
  int64_t t;
  float in[4][2][MAXN];
  double want[3][2][MAXN]; /* by output kind (X, then the states) */
} opt_run;

/* Random inputs in [-2, 2); kind `nonneg` (a squared-gradient sum, -1:
 * none) in [0, 2). */
static void fill(opt_run *c, uint64_t seed, int nonneg) {
  for (int k = 0; k < c->kinds; k++)
    for (int i = 0; i < c->groups; i++)
      for (int64_t j = 0; j < c->len[i]; j++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        float v = (float)((double)(seed >> 11) / 9007199254740992.0 * 4.0 - 2.0);
        c->in[k][i][j] = k == nonneg ? fabsf(v) : v;
      }
}

/* Run the compiled model on c's inputs and compare every output with want. */
static void check(built *m, const opt_run *c, const char *what) {
  int nin = 2 + c->groups * c->kinds, nout = c->groups * (c->kinds - 1);
  kiln_tensor *in[2 + 8], *out[6] = {0};
  float r = c->r;
  int64_t t = c->t;
  in[0] = kiln_tensor_borrow(KILN_FLOAT32, 0, NULL, &r, m->st);
  in[1] = kiln_tensor_borrow(KILN_INT64, 0, NULL, &t, m->st);
  for (int k = 0; k < c->kinds; k++)
    for (int i = 0; i < c->groups; i++)
      in[2 + k * c->groups + i] =
          kiln_tensor_borrow(KILN_FLOAT32, 1, &c->len[i], (void *)c->in[k][i], m->st);
  int rc = kiln_model_execute(m->m, in, nin, out, nout, m->st);
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  cr_assert_eq(rc, 0, "%s: %s", what, kiln_status_message(m->st));
  for (int o = 0; o < nout; o++) {
    int kind = o / c->groups, g = o % c->groups;
    const float *got = kiln_tensor_data(out[o]);
    for (int64_t j = 0; j < c->len[g]; j++) {
      double w = c->want[kind][g][j];
      cr_expect(fabs(got[j] - w) <= 1e-5 * (1 + fabs(w)),
                "%s, T = %lld: output %d element %lld: %.9g, expected %.9g", what,
                (long long)c->t, o, (long long)j, got[j], w);
    }
    kiln_tensor_free(out[o]);
  }
}

Test(onnx_training, adagrad_decays_the_rate_with_t) {
  const double decay = 0.25, eps = 1e-3, norm = 0.05;
  int64_t len[1] = {7};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Adagrad", 1, 3, len);
  node_attrs(n, 3, attr_float("decay_factor", (float)decay), attr_float("epsilon", (float)eps),
             attr_float("norm_coefficient", (float)norm));
  built m = compile_built(b);
  for (int64_t t = 0; t <= 5; t += 5) {
    opt_run c = {.groups = 1, .kinds = 3, .len = {7}, .r = 0.3f, .t = t};
    fill(&c, 11 + (uint64_t)t, 2);
    double rate = c.r / (1 + (double)t * (float)decay);
    for (int j = 0; j < 7; j++) {
      double x = c.in[0][0][j], g = (float)norm * x + c.in[1][0][j];
      double h = c.in[2][0][j] + g * g;
      c.want[0][0][j] = x - rate * g / (sqrt(h) + (float)eps);
      c.want[1][0][j] = h;
    }
    check(&m, &c, "Adagrad");
  }
  built_free(&m);
}

Test(onnx_training, adam_corrects_bias_after_the_first_step) {
  const double alpha = 0.8, beta = 0.95, eps = 1e-4, norm = 0.02, post = 0.1;
  int64_t len[1] = {6};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Adam", 1, 4, len);
  node_attrs(n, 5, attr_float("alpha", (float)alpha), attr_float("beta", (float)beta),
             attr_float("epsilon", (float)eps), attr_float("norm_coefficient", (float)norm),
             attr_float("norm_coefficient_post", (float)post));
  built m = compile_built(b);
  const int64_t ts[3] = {0, 1, 7};
  for (int s = 0; s < 3; s++) {
    int64_t t = ts[s];
    opt_run c = {.groups = 1, .kinds = 4, .len = {6}, .r = 0.05f, .t = t};
    fill(&c, 23 + (uint64_t)t, 3);
    double a = (float)alpha, be = (float)beta;
    double rate = t > 0 ? c.r * sqrt(1 - pow(be, (double)t)) / (1 - pow(a, (double)t)) : c.r;
    for (int j = 0; j < 6; j++) {
      double x = c.in[0][0][j], g = (float)norm * x + c.in[1][0][j];
      double v = a * c.in[2][0][j] + (1 - a) * g;
      double h = be * c.in[3][0][j] + (1 - be) * g * g;
      c.want[0][0][j] = (1 - (float)post) * (x - rate * v / (sqrt(h) + (float)eps));
      c.want[1][0][j] = v;
      c.want[2][0][j] = h;
    }
    check(&m, &c, "Adam");
  }
  built_free(&m);
}

/* Momentum over two groups ([3] and [5]) in mode standard or nesterov. */
static void momentum(const char *mode) {
  const double alpha = 0.9, beta = 0.3, norm = 0.01;
  int64_t len[2] = {3, 5};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Momentum", 2, 3, len);
  node_attrs(n, 4, attr_float("alpha", (float)alpha), attr_float("beta", (float)beta),
             attr_float("norm_coefficient", (float)norm), attr_str("mode", mode));
  built m = compile_built(b);
  bool nesterov = strcmp(mode, "nesterov") == 0;
  for (int64_t t = 0; t <= 2; t += 2) {
    opt_run c = {.groups = 2, .kinds = 3, .len = {3, 5}, .r = 0.1f, .t = t};
    fill(&c, 5 + (uint64_t)t, -1);
    double a = (float)alpha, be = t > 0 ? (float)beta : 1;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < len[i]; j++) {
        double x = c.in[0][i][j], g = (float)norm * x + c.in[1][i][j];
        double v = a * c.in[2][i][j] + be * g;
        c.want[0][i][j] = x - c.r * (nesterov ? g + a * v : v);
        c.want[1][i][j] = v;
      }
    check(&m, &c, mode);
  }
  built_free(&m);
}

Test(onnx_training, momentum_standard_over_two_groups) { momentum("standard"); }
Test(onnx_training, momentum_nesterov_over_two_groups) { momentum("nesterov"); }

Test(onnx_training, an_unknown_mode_is_refused_naming_the_node) {
  int64_t len[1] = {4};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Momentum", 1, 3, len);
  node_attrs(n, 4, attr_float("alpha", 0.9f), attr_float("beta", 1.0f),
             attr_float("norm_coefficient", 0.0f), attr_str("mode", "heavy_ball"));
  import_fails(b, KILN_ERR_INVALID_ARGUMENT, "node 'opt_node' (Momentum)");
  import_fails(b, KILN_ERR_INVALID_ARGUMENT, "mode 'heavy_ball'");
}

Test(onnx_training, a_missing_required_attribute_is_refused) {
  int64_t len[1] = {4};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Momentum", 1, 3, len);
  node_attrs(n, 2, attr_float("alpha", 0.9f), attr_str("mode", "standard"));
  import_fails(b, KILN_ERR_INVALID_ARGUMENT, "attribute 'beta' is required");
}

Test(onnx_training, a_group_short_of_a_tensor_is_refused) {
  int64_t len[1] = {4};
  mb *b = mb_new();
  Onnx__NodeProto *n = optimizer(b, "Adagrad", 1, 3, len);
  n->n_input = 4; /* R, T, X, G: no H */
  b->g.n_input = 4;
  n->n_output = 1;
  b->g.n_output = 1;
  import_fails(b, KILN_ERR_INVALID_ARGUMENT, "4 inputs: expected R, T and 3 tensors per");
}

Test(onnx_training, t_must_be_an_int64_scalar) {
  int64_t len[1] = {4};
  mb *b = mb_new();
  optimizer(b, "Adagrad", 1, 3, len);
  b->ins[1] = vinfo_of("T", 1, 0, NULL); /* f32 */
  import_fails(b, KILN_ERR_INVALID_ARGUMENT, "input 1 (T) must be an int64 scalar");
}
