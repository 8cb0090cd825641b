/* hello.c - kiln's C API in one page: build a graph op by op, compile it,
 * run it on two batch sizes, and read a graph from text.
 *
 *   cc hello.c -I include -L build -lkiln -Wl,-rpath,build -o hello
 *
 * Every call that can fail takes a kiln_status; on failure it returns NULL
 * or -1 and the status says what went wrong and where. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(kiln_status *st) {
  fprintf(stderr, "error: %s\n", kiln_status_message(st));
  return 1;
}

static void print_rows(const kiln_tensor *t) {
  const int64_t *shape = kiln_tensor_shape(t);
  const float *v = kiln_tensor_data(t);
  for (int64_t r = 0; r < shape[0]; r++) {
    printf("  [");
    for (int64_t c = 0; c < shape[1]; c++) printf("%s%6.2f", c ? ", " : "", v[r * shape[1] + c]);
    printf("]\n");
  }
}

int main(void) {
  printf("kiln %s\n", kiln_version());
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) return fail(st);
  const char *target = kiln_context_target(ctx); /* "triple cpu +feature,..." */
  const char *sp = strchr(target, ' ');
  int len = sp && strchr(sp + 1, ' ') ? (int)(strchr(sp + 1, ' ') - target) : (int)strlen(target);
  printf("target: %.*s\n", len, target);

  /* y = relu(x * scale + bias), x: [batch, 4] */
  kiln_graph *g = kiln_graph_new("scale_bias_relu", st);
  const char *xdims[] = {"batch", "4"};
  const char *bdims[] = {"4"};
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 2, xdims, st);
  int64_t one = 1;
  float two = 2.0f;
  kiln_value *scale = kiln_graph_add_constant(g, KILN_FLOAT32, 1, &one, &two, st);
  kiln_value *bias = kiln_graph_add_weight(g, "bias", KILN_FLOAT32, 1, bdims, st);
  if (!x || !scale || !bias) return fail(st);
  kiln_value *h = kiln_graph_add_op(g, "mo.mul", (kiln_value *[]){x, scale}, 2, NULL, NULL, st);
  if (!h) return fail(st);
  h = kiln_graph_add_op(g, "mo.add", (kiln_value *[]){h, bias}, 2, NULL, NULL, st);
  if (!h) return fail(st);
  kiln_value *y = kiln_graph_add_op(g, "mo.relu", &h, 1, NULL, NULL, st);
  if (!y) return fail(st);
  const char *out_names[] = {"y"};
  if (kiln_graph_set_outputs(g, &y, 1, out_names, st) != 0) return fail(st);
  char *text = kiln_graph_print(g, st);
  printf("graph:\n%s\n", text);
  free(text);

  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) return fail(st);
  kiln_graph_free(g); /* the model keeps what it needs */
  printf("compiled in %.1f ms; input %s: [%s, %s]\n", kiln_model_compile_ms(m),
         kiln_model_input_name(m, 0), kiln_model_input_dim(m, 0, 0), kiln_model_input_dim(m, 0, 1));

  float bias_v[4] = {-1, 0, 1, 2};
  int64_t bshape[] = {4};
  kiln_tensor *bias_t = kiln_tensor_borrow(KILN_FLOAT32, 1, bshape, bias_v, st);
  if (kiln_model_bind_weight(m, "bias", bias_t, st) != 0) return fail(st);

  for (int64_t batch = 1; batch <= 3; batch += 2) { /* one compiled model, any batch */
    int64_t shape[] = {batch, 4};
    kiln_tensor *in = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
    float *v = kiln_tensor_data(in);
    for (int64_t i = 0; i < batch * 4; i++) v[i] = (float)i * 0.5f - 1.0f;
    kiln_tensor *out = NULL; /* kiln allocates it */
    if (kiln_model_execute(m, &in, 1, &out, 1, st) != 0) return fail(st);
    printf("batch %lld -> y:\n", (long long)batch);
    print_rows(out);
    kiln_tensor_free(in);
    kiln_tensor_free(out);
  }

  /* a shape error is a message, not a crash */
  int64_t bad_shape[] = {2, 5};
  kiln_tensor *bad = kiln_tensor_new(KILN_FLOAT32, 2, bad_shape, st);
  kiln_tensor *out = NULL;
  if (kiln_model_execute(m, &bad, 1, &out, 1, st) != 0)
    printf("expected error: %s\n", kiln_status_message(st));
  kiln_tensor_free(bad);

  /* graphs also come from MO text */
  const char *src = "mo.graph @neg(%a: !mo.tensor<[3], f64>) -> (!mo.tensor<[3], f64>) {\n"
                    "  %0 = mo.negate(%a) : !mo.tensor<[3], f64>\n"
                    "  mo.output %0 : !mo.tensor<[3], f64>\n"
                    "}\n";
  kiln_graph *g2 = kiln_graph_parse(src, strlen(src), "neg.mlir", st);
  kiln_model *m2 = g2 ? kiln_model_compile(ctx, g2, st) : NULL;
  if (!m2) return fail(st);
  double a[3] = {1.5, -2, 0.25}, r[3];
  int64_t s3[] = {3};
  kiln_tensor *at = kiln_tensor_borrow(KILN_FLOAT64, 1, s3, a, st);
  kiln_tensor *rt = kiln_tensor_borrow(KILN_FLOAT64, 1, s3, r, st); /* written in place */
  if (kiln_model_execute(m2, &at, 1, &rt, 1, st) != 0) return fail(st);
  printf("neg: [%g, %g, %g]\n", r[0], r[1], r[2]);

  kiln_tensor_free(at);
  kiln_tensor_free(rt);
  kiln_model_free(m2);
  kiln_graph_free(g2);
  kiln_model_free(m); /* before the weight it borrows */
  kiln_tensor_free(bias_t);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
