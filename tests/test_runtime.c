/* test_runtime.c - the C API end to end: compile and execute the shared IR
 * examples (known values, and the reference interpreter as the oracle),
 * every execute-time error message, weights, borrowed outputs, the graph
 * builder, .npy and .safetensors files (round trips and malformed files). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/interp.h"
#include "kiln/kiln.h"
#include "src/io.h"
#include "tests/support/st_file.h"
#include "src/json.h"
#include "src/rt.h"

#define EX(name) KILN_SHARED_DIR "/ir-examples/" name

/* ---- helpers ---- */
typedef struct fixture {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *g;
  kiln_model *m;
} fixture;

static void fx_open(fixture *f, const char *path) {
  f->st = kiln_status_new();
  cr_assert(f->st);
  f->ctx = kiln_context_new(f->st);
  cr_assert(f->ctx, "%s", kiln_status_message(f->st));
  f->g = kiln_graph_load(path, f->st);
  cr_assert(f->g, "%s", kiln_status_message(f->st));
  f->m = kiln_model_compile(f->ctx, f->g, f->st);
  cr_assert(f->m, "%s", kiln_status_message(f->st));
}

static void fx_close(fixture *f) {
  kiln_model_free(f->m);
  kiln_graph_free(f->g);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

static kiln_tensor *f32_tensor(int rank, const int64_t *shape, const float *vals) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  cr_assert(t);
  if (vals) memcpy(kiln_tensor_data(t), vals, kiln_tensor_nbytes(t));
  return t;
}

static kiln_tensor *rand_tensor(kiln_dtype dt, int rank, const int64_t *shape, uint64_t seed) {
  kiln_tensor *t = kiln_tensor_new(dt, rank, shape, NULL);
  cr_assert(t);
  uint64_t s = seed * 2654435761u + 1;
  unsigned char *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
    switch (dt) {
    case KILN_FLOAT32: ((float *)p)[i] = (float)u; break;
    case KILN_FLOAT64: ((double *)p)[i] = u; break;
    default:
      for (size_t b = 0; b < kiln_dtype_size(dt); b++)
        p[(size_t)i * kiln_dtype_size(dt) + b] = (unsigned char)(s >> (8 * b));
      break;
    }
  }
  return t;
}

static void assert_error(const kiln_status *st, kiln_code code, const char *needle) {
  cr_assert(kiln_status_is_error(st), "expected an error containing '%s'", needle);
  cr_assert_eq(kiln_status_code(st), code, "code %s, want %s: %s",
               kiln_code_name(kiln_status_code(st)), kiln_code_name(code),
               kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), needle), "message '%s' lacks '%s'",
            kiln_status_message(st), needle);
}

/* Run the reference interpreter on the model's graph with the same inputs
 * and weights and compare every output within a relative tolerance. */
typedef struct weight_ud {
  const kiln_model *m;
  ir_tensor *w;
} weight_ud;

static const ir_tensor *weight_fn(void *ud, const char *name) {
  weight_ud *u = ud;
  for (int i = 0; i < u->m->nweights; i++)
    if (strcmp(u->m->weights[i].port.name, name) == 0) return &u->w[i];
  return NULL;
}

static void to_ir(const kiln_tensor *t, ir_tensor *o) {
  o->dtype = (ir_dtype)t->dtype;
  o->rank = t->rank;
  for (int a = 0; a < t->rank; a++) o->shape[a] = t->shape[a];
  o->data = t->data;
}

static void compare_with_interp(const kiln_model *m, kiln_tensor *const *ins, kiln_tensor **outs,
                                double tol) {
  ir_tensor in[8], w[16], out[8];
  cr_assert(m->ninputs <= 8 && m->nweights <= 16 && m->noutputs <= 8);
  for (int i = 0; i < m->ninputs; i++) to_ir(ins[i], &in[i]);
  for (int i = 0; i < m->nweights; i++) to_ir(m->weights[i].bound, &w[i]);
  weight_ud ud = {m, w};
  char msg[512];
  cr_assert_eq(ir_interp_run(m->g, in, weight_fn, &ud, out, msg, sizeof msg), 0, "%s", msg);
  for (int o = 0; o < m->noutputs; o++) {
    cr_assert_eq(ir_tensor_numel(&out[o]), kiln_tensor_numel(outs[o]));
    cr_assert_eq((int)out[o].dtype, (int)kiln_tensor_dtype(outs[o]));
    for (int64_t i = 0; i < kiln_tensor_numel(outs[o]); i++) {
      double a = 0, b = 0;
      if (out[o].dtype == IR_DT_F32) {
        a = ((float *)out[o].data)[i];
        b = ((float *)kiln_tensor_data(outs[o]))[i];
      } else if (out[o].dtype == IR_DT_SI64) {
        a = (double)((int64_t *)out[o].data)[i];
        b = (double)((int64_t *)kiln_tensor_data(outs[o]))[i];
      } else {
        cr_assert_fail("unexpected dtype in comparison");
      }
      cr_assert(fabs(a - b) <= tol * (1 + fabs(a)), "output %d [%lld]: interp %g, jit %g", o,
                (long long)i, a, b);
    }
    free(out[o].data);
  }
}

/* ---- status, version, dtypes, tensors ---- */
Test(status, null_status_is_tolerated) {
  cr_assert_eq(kiln_status_code(NULL), KILN_OK);
  cr_assert_str_eq(kiln_status_message(NULL), "");
  cr_assert_null(kiln_graph_load("/nonexistent/x.mlir", NULL));
  kiln_status_free(NULL);
}

Test(status, message_is_empty_when_ok_and_cleared) {
  kiln_status *st = kiln_status_new();
  cr_assert_str_eq(kiln_status_message(st), "");
  cr_assert_null(kiln_graph_load("/nonexistent/x.mlir", st));
  assert_error(st, KILN_ERR_NOT_FOUND, "/nonexistent/x.mlir");
  kiln_status_clear(st);
  cr_assert(!kiln_status_is_error(st));
  cr_assert_str_eq(kiln_status_message(st), "");
  kiln_status_free(st);
}

Test(status, long_messages_are_not_truncated) {
  kiln_status *st = kiln_status_new();
  char name[3000];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = 0;
  cr_assert_null(kiln_graph_load(name, st));
  cr_assert(strlen(kiln_status_message(st)) > sizeof name, "%zu",
            strlen(kiln_status_message(st)));
  kiln_status_free(st);
}

Test(status, version_and_names) {
  cr_assert(strncmp(kiln_version(), "0.1.0 (LLVM 19", 14) == 0, "%s", kiln_version());
  cr_assert_str_eq(kiln_code_name(KILN_ERR_PARSE), "parse error");
  cr_assert_str_eq(kiln_dtype_name(KILN_FLOAT32), "f32");
  cr_assert_str_eq(kiln_dtype_name(KILN_INT64), "si64");
  cr_assert_str_eq(kiln_dtype_name(KILN_BOOL), "bool");
  cr_assert_eq(kiln_dtype_size(KILN_BFLOAT16), 2);
  cr_assert_eq(kiln_dtype_size(KILN_DTYPE_COUNT), 0);
}

Test(tensor, new_is_zeroed_and_aligned) {
  int64_t shape[] = {3, 7};
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT64, 2, shape, NULL);
  cr_assert(t);
  cr_assert_eq((uintptr_t)kiln_tensor_data(t) % 64, 0);
  cr_assert_eq(kiln_tensor_numel(t), 21);
  cr_assert_eq(kiln_tensor_nbytes(t), 168);
  for (int i = 0; i < 21; i++) cr_assert_eq(((double *)kiln_tensor_data(t))[i], 0.0);
  kiln_tensor_free(t);
  kiln_tensor_free(NULL);
}

Test(tensor, negative_dim_is_an_error) {
  kiln_status *st = kiln_status_new();
  int64_t shape[] = {3, -1};
  cr_assert_null(kiln_tensor_new(KILN_FLOAT32, 2, shape, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "axis 1 has negative size -1");
  kiln_status_free(st);
}

Test(tensor, borrow_does_not_copy) {
  float data[4] = {1, 2, 3, 4};
  int64_t shape[] = {4};
  kiln_tensor *t = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, data, NULL);
  cr_assert_eq(kiln_tensor_data(t), data);
  kiln_tensor_free(t);
  cr_assert_eq(data[3], 4); /* still ours */
}

/* ---- the shared examples ---- */
Test(examples, relu_known_values_and_metadata) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  cr_assert_eq(kiln_model_num_inputs(f.m), 1);
  cr_assert_str_eq(kiln_model_input_name(f.m, 0), "x");
  cr_assert_str_eq(kiln_model_output_name(f.m, 0), "y");
  cr_assert_str_eq(kiln_model_input_dim(f.m, 0, 0), "5");
  cr_assert_eq(kiln_model_input_dim_static(f.m, 0, 0), 5);
  cr_assert_eq(kiln_model_output_dtype(f.m, 0), KILN_FLOAT32);
  cr_assert_null(kiln_model_input_name(f.m, 1));
  cr_assert_eq(kiln_model_input_index(f.m, "x"), 0);
  cr_assert_eq(kiln_model_input_index(f.m, "nope"), -1);
  cr_assert(kiln_model_compile_ms(f.m) > 0);
  int64_t shape[] = {5};
  float xv[] = {-2, -0.5f, 0, 1.5f, 3};
  kiln_tensor *x = f32_tensor(1, shape, xv), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), 0, "%s", kiln_status_message(f.st));
  const float want[] = {0, 0, 0, 1.5f, 3};
  cr_assert_eq(kiln_tensor_rank(y), 1);
  cr_assert_eq(kiln_tensor_shape(y)[0], 5);
  for (int i = 0; i < 5; i++) cr_assert_eq(((float *)kiln_tensor_data(y))[i], want[i]);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  fx_close(&f);
}

Test(examples, add_const_known_values) {
  fixture f;
  fx_open(&f, EX("add_const.mlir"));
  int64_t shape[] = {5};
  float av[] = {1, 2, 3, 4, 5};
  kiln_tensor *a = f32_tensor(1, shape, av), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &a, 1, &y, 1, f.st), 0, "%s", kiln_status_message(f.st));
  const float want[] = {4, 3, -3, 6, 10};
  for (int i = 0; i < 5; i++) cr_assert_eq(((float *)kiln_tensor_data(y))[i], want[i]);
  kiln_tensor_free(a);
  kiln_tensor_free(y);
  fx_close(&f);
}

static void bind_random_weights(fixture *f, kiln_tensor **w) {
  for (int i = 0; i < kiln_model_num_weights(f->m); i++) {
    int64_t shape[16];
    int rank = kiln_model_weight_rank(f->m, i);
    for (int a = 0; a < rank; a++) shape[a] = atoll(kiln_model_weight_dim(f->m, i, a));
    w[i] = rand_tensor(kiln_model_weight_dtype(f->m, i), rank, shape, 100 + (uint64_t)i);
    cr_assert_eq(kiln_model_bind_weight(f->m, kiln_model_weight_name(f->m, i), w[i], f->st), 0,
                 "%s", kiln_status_message(f->st));
  }
}

Test(examples, mlp_metadata_and_matches_interpreter) {
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  cr_assert_str_eq(kiln_model_input_name(f.m, 0), "pixels");
  cr_assert_str_eq(kiln_model_input_dim(f.m, 0, 0), "batch");
  cr_assert_eq(kiln_model_input_dim_static(f.m, 0, 0), -1);
  cr_assert_eq(kiln_model_input_dim_static(f.m, 0, 1), 784);
  cr_assert_str_eq(kiln_model_output_name(f.m, 0), "logits");
  cr_assert_str_eq(kiln_model_output_dim(f.m, 0, 0), "batch");
  cr_assert_eq(kiln_model_num_weights(f.m), 4);
  cr_assert_str_eq(kiln_model_weight_name(f.m, 0), "fc1.weight");
  kiln_tensor *w[4];
  bind_random_weights(&f, w);
  int64_t batches[] = {1, 3};
  for (int b = 0; b < 2; b++) {
    int64_t shape[] = {batches[b], 784};
    kiln_tensor *x = rand_tensor(KILN_FLOAT32, 2, shape, 7), *y = NULL;
    cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), 0, "%s",
                 kiln_status_message(f.st));
    cr_assert_eq(kiln_tensor_shape(y)[0], batches[b]);
    cr_assert_eq(kiln_tensor_shape(y)[1], 10);
    compare_with_interp(f.m, &x, &y, 1e-4);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
  }
  for (int i = 0; i < 4; i++) kiln_tensor_free(w[i]);
  fx_close(&f);
}

Test(examples, attention_matches_interpreter) {
  fixture f;
  fx_open(&f, EX("attention_block.mlir"));
  kiln_tensor *w[2];
  bind_random_weights(&f, w);
  int64_t shape[] = {2, 3, 64};
  kiln_tensor *in[2] = {rand_tensor(KILN_FLOAT32, 3, shape, 1),
                        rand_tensor(KILN_FLOAT32, 3, shape, 2)};
  kiln_tensor *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(f.m, in, 2, out, 2, f.st), 0, "%s", kiln_status_message(f.st));
  cr_assert_eq(kiln_tensor_shape(out[1])[0], 6); /* batch * seq */
  compare_with_interp(f.m, in, out, 1e-4);
  for (int i = 0; i < 2; i++) {
    kiln_tensor_free(in[i]);
    kiln_tensor_free(out[i]);
    kiln_tensor_free(w[i]);
  }
  fx_close(&f);
}

Test(examples, split_concat_known_values) {
  fixture f;
  fx_open(&f, EX("split_concat.mlir"));
  int64_t shape[] = {2, 6};
  float xv[12];
  for (int i = 0; i < 12; i++) xv[i] = (float)i + 0.5f;
  kiln_tensor *x = f32_tensor(2, shape, xv), *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, out, 2, f.st), 0, "%s", kiln_status_message(f.st));
  const float wy[] = {2.5f, 3.5f, 4.5f, 5.5f, 0.5f, 1.5f, 8.5f, 9.5f, 10.5f, 11.5f, 6.5f, 7.5f};
  const int64_t wi[] = {2, 3, 4, 5, 8, 9, 10, 11};
  for (int i = 0; i < 12; i++) cr_assert_eq(((float *)kiln_tensor_data(out[0]))[i], wy[i]);
  cr_assert_eq(kiln_tensor_dtype(out[1]), KILN_INT64);
  for (int i = 0; i < 8; i++) cr_assert_eq(((int64_t *)kiln_tensor_data(out[1]))[i], wi[i]);
  kiln_tensor_free(x);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  fx_close(&f);
}

Test(examples, bad_inputs_give_their_messages) {
  const char *files[] = {"shape_mismatch.mlir", "truncated.mlir", "undefined_value.mlir",
                         "unknown_symbol.mlir"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[512], expect[512] = "";
    snprintf(path, sizeof path, "%s/ir-examples/bad/%s", KILN_SHARED_DIR, files[i]);
    FILE *fp = fopen(path, "r");
    cr_assert(fp);
    cr_assert(fgets(expect, sizeof expect, fp));
    fclose(fp);
    expect[strcspn(expect, "\n")] = 0;
    kiln_status *st = kiln_status_new();
    cr_assert_null(kiln_graph_load(path, st));
    const char *msg = kiln_status_message(st);
    cr_assert(strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':', "%s", msg);
    cr_assert(strstr(msg, expect + strlen("// expect: ")), "%s: '%s'", files[i], msg);
    kiln_status_free(st);
  }
}

Test(graph, parse_error_without_filename_is_line_col) {
  kiln_status *st = kiln_status_new();
  const char *text = "mo.graph @g(%a: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
                     "  %0 = mo.relu(%zz) : !mo.tensor<[5], f32>\n"
                     "  mo.output %0 : !mo.tensor<[5], f32>\n}\n";
  cr_assert_null(kiln_graph_parse(text, strlen(text), NULL, st));
  assert_error(st, KILN_ERR_PARSE, "use of undefined value %zz");
  cr_assert(strncmp(kiln_status_message(st), "2:", 2) == 0, "%s", kiln_status_message(st));
  kiln_status_free(st);
}

Test(graph, print_round_trips) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_load(EX("attention_block.mlir"), st);
  cr_assert(g, "%s", kiln_status_message(st));
  char *a = kiln_graph_print(g, st);
  cr_assert(a);
  kiln_graph *h = kiln_graph_parse(a, strlen(a), "printed", st);
  cr_assert(h, "%s", kiln_status_message(st));
  char *b = kiln_graph_print(h, st);
  cr_assert_str_eq(a, b);
  free(a);
  free(b);
  kiln_graph_free(g);
  kiln_graph_free(h);
  kiln_status_free(st);
}

/* ---- execute-time errors ---- */
Test(errors, disagreeing_symbolic_dims) {
  fixture f;
  fx_open(&f, EX("attention_block.mlir"));
  kiln_tensor *w[2];
  bind_random_weights(&f, w);
  int64_t sq[] = {2, 3, 64}, sk[] = {2, 4, 64};
  kiln_tensor *in[2] = {f32_tensor(3, sq, NULL), f32_tensor(3, sk, NULL)}, *out[2] = {0};
  cr_assert_eq(kiln_model_execute(f.m, in, 2, out, 2, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "input 1 (k): axis 1 is seq = 3 from input 0, got 4");
  cr_assert_null(out[0]);
  cr_assert_null(out[1]);
  for (int i = 0; i < 2; i++) {
    kiln_tensor_free(in[i]);
    kiln_tensor_free(w[i]);
  }
  fx_close(&f);
}

Test(errors, wrong_static_dim) {
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  kiln_tensor *w[4];
  bind_random_weights(&f, w);
  int64_t shape[] = {3, 783};
  kiln_tensor *x = f32_tensor(2, shape, NULL), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "input 0 (pixels): axis 1 expected 784, got 783");
  cr_assert_null(y);
  kiln_tensor_free(x);
  for (int i = 0; i < 4; i++) kiln_tensor_free(w[i]);
  fx_close(&f);
}

Test(errors, wrong_dtype) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  int64_t shape[] = {5};
  kiln_tensor *x = kiln_tensor_new(KILN_INT32, 1, shape, NULL), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "input 0 (x): expected dtype f32, got si32");
  kiln_tensor_free(x);
  fx_close(&f);
}

Test(errors, wrong_rank) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  int64_t shape[] = {5, 1};
  kiln_tensor *x = f32_tensor(2, shape, NULL), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "input 0 (x): expected rank 1, got 2");
  kiln_tensor_free(x);
  fx_close(&f);
}

Test(errors, missing_input) {
  fixture f;
  fx_open(&f, EX("attention_block.mlir"));
  int64_t shape[] = {2, 3, 64};
  kiln_tensor *q = f32_tensor(3, shape, NULL), *out[2] = {0};
  cr_assert_eq(kiln_model_execute(f.m, &q, 1, out, 2, f.st), -1);
  assert_error(f.st, KILN_ERR_NOT_FOUND, "missing input: the model takes 2 inputs, got 1");
  cr_assert(strstr(kiln_status_message(f.st), "(k)"));
  kiln_tensor *in[2] = {q, NULL};
  cr_assert_eq(kiln_model_execute(f.m, in, 2, out, 2, f.st), -1);
  assert_error(f.st, KILN_ERR_NOT_FOUND, "input 1 (k) is missing");
  kiln_tensor_free(q);
  fx_close(&f);
}

Test(errors, missing_weight) {
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  int64_t shape[] = {2, 784};
  kiln_tensor *x = f32_tensor(2, shape, NULL), *y = NULL;
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_NOT_FOUND, "weight 'fc1.weight' is not bound");
  kiln_tensor_free(x);
  fx_close(&f);
}

Test(errors, bind_weight_checks_name_dtype_and_shape) {
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  int64_t good[] = {512}, bad[] = {511};
  kiln_tensor *t = f32_tensor(1, bad, NULL);
  cr_assert_eq(kiln_model_bind_weight(f.m, "fc1.bias", t, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "weight 'fc1.bias': axis 0 expected 512, got 511");
  cr_assert_eq(kiln_model_bind_weight(f.m, "fc3.bias", t, f.st), -1);
  assert_error(f.st, KILN_ERR_NOT_FOUND,
               "model has no weight 'fc3.bias' (weights: fc1.weight, fc1.bias, fc2.weight, "
               "fc2.bias)");
  kiln_tensor *d = kiln_tensor_new(KILN_FLOAT64, 1, good, NULL);
  cr_assert_eq(kiln_model_bind_weight(f.m, "fc1.bias", d, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "weight 'fc1.bias': expected dtype f32, got f64");
  kiln_tensor_free(t);
  kiln_tensor_free(d);
  fx_close(&f);
}

/* A weight's symbolic axis is checked at every execute, against the value
 * the inputs give its symbol (its static axes were checked at bind). */
Test(errors, a_weight_with_a_symbolic_axis_is_checked_at_execute) {
  static const char text[] =
      "mo.graph @g<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[n], f32>\n"
      "  %y = mo.add(%x, %w) : !mo.tensor<[n], f32>\n"
      "  mo.output %y : !mo.tensor<[n], f32>\n"
      "}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "wsym", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t three[] = {3}, four[] = {4};
  const float wv[] = {1, 2, 3}, xv[] = {10, 20, 30, 40};
  kiln_tensor *w = f32_tensor(1, three, wv), *x3 = f32_tensor(1, three, xv);
  kiln_tensor *x4 = f32_tensor(1, four, xv), *y = NULL;
  cr_assert_eq(kiln_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m, &x3, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  cr_expect_eq(((const float *)kiln_tensor_data(y))[2], 33.0f);
  kiln_tensor_free(y);
  y = NULL;
  cr_assert_eq(kiln_model_execute(m, &x4, 1, &y, 1, st), -1);
  assert_error(st, KILN_ERR_SHAPE, "weight 'w': axis 0 is n = 4, got 3");
  kiln_model_free(m); /* before w: it borrows w */
  kiln_tensor_free(w);
  kiln_tensor_free(x3);
  kiln_tensor_free(x4);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* mo.constant.external's align (MAX's Weight.align): the model borrows the
 * bound memory, so data that does not start at a multiple of align is
 * refused, naming the weight; is_placeholder is accepted and changes
 * nothing (the name is bound as written) */
#define ALIGNED_GRAPH(attrs)                                                                  \
  "mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>) {\n"                      \
  "  %w = mo.constant.external {name = \"w\"" attrs "} : !mo.tensor<[4], f32>\n"             \
  "  %y = mo.add(%x, %w) : (!mo.tensor<[4], f32>, !mo.tensor<[4], f32>) -> "                  \
  "!mo.tensor<[4], f32>\n  mo.output %y : !mo.tensor<[4], f32>\n}\n"

Test(errors, bind_weight_checks_its_align) {
  static const char text[] = ALIGNED_GRAPH(", align = 64, is_placeholder = true");
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "align.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  float *buf = aligned_alloc(64, 128);
  cr_assert(buf);
  for (int i = 0; i < 32; i++) buf[i] = (float)i;
  int64_t s4[] = {4};
  kiln_tensor *off = kiln_tensor_borrow(KILN_FLOAT32, 1, s4, buf + 1, st);
  cr_assert_eq(kiln_model_bind_weight(m, "w", off, st), -1);
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "weight 'w': its data at ");
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "is not aligned to 64 bytes (its align)");
  kiln_tensor *at = kiln_tensor_borrow(KILN_FLOAT32, 1, s4, buf + 16, st);
  cr_assert_eq(kiln_model_bind_weight(m, "w", at, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *x = f32_tensor(1, s4, (const float[]){1, 1, 1, 1}), *y = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  const float *yv = kiln_tensor_data(y);
  for (int i = 0; i < 4; i++) cr_expect_eq(yv[i], 17.0f + (float)i);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_tensor_free(off);
  kiln_tensor_free(at);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  free(buf);
}

Test(errors, constant_external_align_must_be_a_power_of_two) {
  static const char *const bad[] = {ALIGNED_GRAPH(", align = 3"), ALIGNED_GRAPH(", align = 0"),
                                    ALIGNED_GRAPH(", align = -8")};
  kiln_status *st = kiln_status_new();
  for (int i = 0; i < 3; i++) {
    kiln_graph *g = kiln_graph_parse(bad[i], strlen(bad[i]), "align.mlir", st);
    cr_assert_null(g);
    assert_error(st, KILN_ERR_VERIFY, "align.mlir:2:3: mo.constant.external: align ");
    assert_error(st, KILN_ERR_VERIFY, " must be a power of two in [1, 2^30]");
  }
  static const char str[] = ALIGNED_GRAPH(", is_placeholder = 1");
  cr_assert_null(kiln_graph_parse(str, strlen(str), "align.mlir", st));
  assert_error(st, KILN_ERR_VERIFY, "attribute 'is_placeholder' of mo.constant.external must be "
                                    "a boolean");
  kiln_status_free(st);
}

Test(errors, borrowed_output_with_wrong_shape_or_dtype) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  int64_t s5[] = {5}, s4[] = {4};
  kiln_tensor *x = f32_tensor(1, s5, NULL), *y = f32_tensor(1, s4, NULL);
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "output 0 (y): expected shape [5], got [4]");
  kiln_tensor *z = kiln_tensor_new(KILN_FLOAT64, 1, s5, NULL);
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &z, 1, f.st), -1);
  assert_error(f.st, KILN_ERR_SHAPE, "output 0 (y): expected dtype f32, got f64");
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_tensor_free(z);
  fx_close(&f);
}

Test(errors, wrong_output_count) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  int64_t s5[] = {5};
  kiln_tensor *x = f32_tensor(1, s5, NULL), *y[2] = {0};
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, y, 2, f.st), -1);
  assert_error(f.st, KILN_ERR_INVALID_ARGUMENT, "the model has 1 output, got room for 2");
  cr_assert_null(y[0]);
  kiln_tensor_free(x);
  fx_close(&f);
}

Test(errors, kernel_error_names_op_line_and_value) {
  kiln_status *st = kiln_status_new();
  const char *text =
      "mo.graph @gather(%x: !mo.tensor<[4], f32>, %i: !mo.tensor<[2], si64>) -> "
      "(!mo.tensor<[2], f32>) {\n"
      "  %g = mo.gather(%x, %i) {axis = 0} : (!mo.tensor<[4], f32>, !mo.tensor<[2], si64>) -> "
      "!mo.tensor<[2], f32>\n"
      "  mo.output %g : !mo.tensor<[2], f32>\n}\n";
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t s4[] = {4}, s2[] = {2};
  int64_t idx[] = {1, 9};
  kiln_tensor *in[2] = {f32_tensor(1, s4, NULL), kiln_tensor_new(KILN_INT64, 1, s2, NULL)};
  memcpy(kiln_tensor_data(in[1]), idx, sizeof idx);
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, in, 2, &out, 1, st), -1);
  assert_error(st, KILN_ERR_RUNTIME, "mo.gather at line 2 (%g): index out of range");
  cr_assert_null(out);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* ---- outputs ---- */
Test(outputs, borrowed_output_is_written_in_place) {
  fixture f;
  fx_open(&f, EX("relu.mlir"));
  int64_t s5[] = {5};
  float xv[] = {-1, 2, -3, 4, -5}, yv[5] = {9, 9, 9, 9, 9};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s5, xv, NULL);
  kiln_tensor *y = kiln_tensor_borrow(KILN_FLOAT32, 1, s5, yv, NULL);
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y, 1, f.st), 0, "%s", kiln_status_message(f.st));
  cr_assert_eq(yv[0], 0);
  cr_assert_eq(yv[1], 2);
  cr_assert_eq(yv[4], 0);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  fx_close(&f);
}

Test(outputs, graph_input_as_output_is_copied) {
  kiln_status *st = kiln_status_new();
  const char *text = "mo.graph @id(%a: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>, "
                     "!mo.tensor<[3], f32>) {\n"
                     "  %r = mo.relu(%a) : !mo.tensor<[3], f32>\n"
                     "  mo.output %a, %r : !mo.tensor<[3], f32>, !mo.tensor<[3], f32>\n}\n";
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t s3[] = {3};
  float av[] = {-1, 0, 1};
  kiln_tensor *a = f32_tensor(1, s3, av), *out[2] = {0};
  cr_assert_eq(kiln_model_execute(m, &a, 1, out, 2, st), 0, "%s", kiln_status_message(st));
  cr_assert_neq(kiln_tensor_data(out[0]), kiln_tensor_data(a));
  cr_assert_eq(((float *)kiln_tensor_data(out[0]))[0], -1);
  cr_assert_eq(((float *)kiln_tensor_data(out[1]))[0], 0);
  kiln_tensor_free(a);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* ---- concurrency ---- */
typedef struct thread_arg {
  kiln_model *m;
  float first;
  int failures;
} thread_arg;

static void *exec_thread(void *p) {
  thread_arg *a = p;
  int64_t shape[] = {4, 784};
  kiln_tensor *x = rand_tensor(KILN_FLOAT32, 2, shape, 5);
  for (int r = 0; r < 20; r++) {
    kiln_tensor *y = NULL;
    if (kiln_model_execute(a->m, &x, 1, &y, 1, NULL) != 0) {
      a->failures++;
      continue;
    }
    a->first = ((float *)kiln_tensor_data(y))[0];
    kiln_tensor_free(y);
  }
  kiln_tensor_free(x);
  return NULL;
}

Test(concurrency, executes_from_two_threads_agree) {
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  kiln_tensor *w[4];
  bind_random_weights(&f, w);
  thread_arg a[2] = {{f.m, 0, 0}, {f.m, 0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, exec_thread, &a[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  cr_assert_eq(a[0].failures + a[1].failures, 0);
  cr_assert_eq(a[0].first, a[1].first);
  for (int i = 0; i < 4; i++) kiln_tensor_free(w[i]);
  fx_close(&f);
}

Test(concurrency, two_contexts_side_by_side) {
  fixture f1, f2;
  fx_open(&f1, EX("relu.mlir"));
  fx_open(&f2, EX("relu.mlir"));
  int64_t s5[] = {5};
  float xv[] = {-1, 1, -2, 2, 0};
  kiln_tensor *x = f32_tensor(1, s5, xv), *y1 = NULL, *y2 = NULL;
  cr_assert_eq(kiln_model_execute(f1.m, &x, 1, &y1, 1, NULL), 0);
  fx_close(&f1);
  cr_assert_eq(kiln_model_execute(f2.m, &x, 1, &y2, 1, NULL), 0);
  cr_assert_eq(memcmp(kiln_tensor_data(y1), kiln_tensor_data(y2), 20), 0);
  kiln_tensor_free(x);
  kiln_tensor_free(y1);
  kiln_tensor_free(y2);
  fx_close(&f2);
}

/* ---- the builder ---- */
static kiln_graph *build_mlp(kiln_status *st) {
  kiln_graph *g = kiln_graph_new("mlp", st);
  cr_assert(g, "%s", kiln_status_message(st));
  const char *xd[] = {"batch", "784"}, *w1d[] = {"784", "512"}, *b1d[] = {"512"},
             *w2d[] = {"512", "10"}, *b2d[] = {"10"};
  kiln_value *x = kiln_graph_add_input(g, "pixels", KILN_FLOAT32, 2, xd, st);
  kiln_value *w1 = kiln_graph_add_weight(g, "fc1.weight", KILN_FLOAT32, 2, w1d, st);
  kiln_value *b1 = kiln_graph_add_weight(g, "fc1.bias", KILN_FLOAT32, 1, b1d, st);
  kiln_value *w2 = kiln_graph_add_weight(g, "fc2.weight", KILN_FLOAT32, 2, w2d, st);
  kiln_value *b2 = kiln_graph_add_weight(g, "fc2.bias", KILN_FLOAT32, 1, b2d, st);
  cr_assert(x && w1 && b1 && w2 && b2, "%s", kiln_status_message(st));
  kiln_value *h = kiln_graph_add_op(g, "mo.matmul", (kiln_value *[]){x, w1}, 2, NULL, NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  h = kiln_graph_add_op(g, "add", (kiln_value *[]){h, b1}, 2, NULL, NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  h = kiln_graph_add_op(g, "mo.relu", &h, 1, NULL, NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  h = kiln_graph_add_op(g, "mo.matmul", (kiln_value *[]){h, w2}, 2, NULL, NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  h = kiln_graph_add_op(g, "mo.add", (kiln_value *[]){h, b2}, 2, NULL, NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  char dim[32];
  cr_assert_eq(kiln_value_rank(h), 2);
  kiln_value_dim(h, 0, dim, sizeof dim);
  cr_assert_str_eq(dim, "batch");
  const char *names[] = {"logits"};
  cr_assert_eq(kiln_graph_set_outputs(g, &h, 1, names, st), 0, "%s", kiln_status_message(st));
  return g;
}

Test(builder, mlp_op_by_op_matches_the_parsed_mlp) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = build_mlp(st);
  fixture f;
  fx_open(&f, EX("mlp.mlir"));
  kiln_model *m = kiln_model_compile(f.ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_str_eq(kiln_model_input_name(m, 0), "pixels");
  cr_assert_str_eq(kiln_model_output_name(m, 0), "logits");
  kiln_tensor *w[4];
  bind_random_weights(&f, w);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(kiln_model_bind_weight(m, kiln_model_weight_name(f.m, i), w[i], st), 0, "%s",
                 kiln_status_message(st));
  int64_t shape[] = {2, 784};
  kiln_tensor *x = rand_tensor(KILN_FLOAT32, 2, shape, 3), *y1 = NULL, *y2 = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y1, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(f.m, &x, 1, &y2, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(memcmp(kiln_tensor_data(y1), kiln_tensor_data(y2), kiln_tensor_nbytes(y1)), 0);
  char *text = kiln_graph_print(g, st);
  cr_assert(text && strstr(text, "mo.matmul"), "%s", text ? text : kiln_status_message(st));
  kiln_graph *h = kiln_graph_parse(text, strlen(text), "built", st);
  cr_assert(h, "%s\n%s", kiln_status_message(st), text);
  free(text);
  kiln_graph_free(h);
  kiln_tensor_free(x);
  kiln_tensor_free(y1);
  kiln_tensor_free(y2);
  kiln_model_free(m);
  for (int i = 0; i < 4; i++) kiln_tensor_free(w[i]);
  kiln_graph_free(g);
  fx_close(&f);
  kiln_status_free(st);
}

Test(builder, bad_op_is_rolled_back_and_building_goes_on) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("g", st);
  const char *d5[] = {"5"}, *d4[] = {"4"};
  kiln_value *a = kiln_graph_add_input(g, "a", KILN_FLOAT32, 1, d5, st);
  kiln_value *b = kiln_graph_add_input(g, "b", KILN_FLOAT32, 1, d4, st);
  cr_assert_null(kiln_graph_add_op(g, "mo.add", (kiln_value *[]){a, b}, 2, NULL, NULL, st));
  assert_error(st, KILN_ERR_VERIFY, "does not broadcast");
  cr_assert_null(kiln_graph_add_op(g, "mo.frobnicate", &a, 1, NULL, NULL, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "unknown op 'mo.frobnicate'");
  cr_assert_null(kiln_graph_add_op(g, "mo.relu", (kiln_value *[]){a, b}, 2, NULL, NULL, st));
  assert_error(st, KILN_ERR_VERIFY, "mo.relu does not take 2 operands");
  kiln_value *r = kiln_graph_add_op(g, "mo.relu", &a, 1, NULL, NULL, st);
  cr_assert(r, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &r, 1, NULL, st), 0, "%s", kiln_status_message(st));
  char *text = kiln_graph_print(g, st);
  cr_assert(text);
  cr_assert_null(strstr(text, "mo.add"), "%s", text);
  free(text);
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(builder, value_of_another_graph_is_refused) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g1 = kiln_graph_new("g1", st), *g2 = kiln_graph_new("g2", st);
  const char *d5[] = {"5"};
  kiln_value *a = kiln_graph_add_input(g1, "a", KILN_FLOAT32, 1, d5, st);
  cr_assert_null(kiln_graph_add_op(g2, "mo.relu", &a, 1, NULL, NULL, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "operand 0 is a value of another graph");
  kiln_graph_free(g1);
  kiln_graph_free(g2);
  kiln_status_free(st);
}

Test(builder, declared_symbols_are_enforced) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("g", st);
  cr_assert_eq(kiln_graph_declare_symbol(g, "batch", st), 0);
  const char *dims[] = {"batch", "seq"};
  cr_assert_null(kiln_graph_add_input(g, "x", KILN_FLOAT32, 2, dims, st));
  assert_error(st, KILN_ERR_PARSE, "symbolic dim 'seq' is not declared");
  const char *bad[] = {"batch +"};
  cr_assert_null(kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, bad, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_PARSE);
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(builder, attributes_and_result_types_parse) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("g", st);
  const char *dims[] = {"n", "6"};
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 2, dims, st);
  cr_assert(x, "%s", kiln_status_message(st));
  kiln_value *s = kiln_graph_add_op(g, "mo.split", &x, 1, "{split_sizes = [2, 4], axis = 1}",
                                    NULL, st);
  cr_assert(s, "%s", kiln_status_message(st));
  kiln_value *b = kiln_value_result(s, 1);
  cr_assert(b);
  cr_assert_null(kiln_value_result(s, 2));
  kiln_value *r = kiln_graph_add_op(g, "mo.reshape", &b, 1, NULL, "!mo.tensor<[n * 4], f32>", st);
  cr_assert(r, "%s", kiln_status_message(st));
  char dim[32];
  kiln_value_dim(r, 0, dim, sizeof dim);
  cr_assert_str_eq(dim, "4 * n");
  cr_assert_null(kiln_graph_add_op(g, "mo.reshape", &b, 1, NULL, NULL, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "needs result_type");
  cr_assert_null(kiln_graph_add_op(g, "mo.softmax", &b, 1, "{axis = }", NULL, st));
  assert_error(st, KILN_ERR_PARSE, "attributes of mo.softmax");
  cr_assert_null(kiln_graph_add_op(g, "mo.relu", &b, 1, NULL, "!mo.tensor<[n, 5], f32>", st));
  assert_error(st, KILN_ERR_VERIFY, "is declared as !mo.tensor<[n, 5], f32> but is");
  kiln_value *ok = kiln_graph_add_op(g, "mo.relu", &b, 1, NULL, "!mo.tensor<[n, 4], f32>", st);
  cr_assert(ok, "%s", kiln_status_message(st));
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(builder, inputs_on_a_gpu_and_declared_result_types) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("g", st);
  const char *dims[] = {"4"};
  kiln_value *x = kiln_graph_add_input_on(g, "x", KILN_FLOAT32, 1, dims, 0, st);
  cr_assert(x, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_value_gpu(x), 0);
  kiln_value *h = kiln_graph_add_op(g, "mo.transfer_to", &x, 1, "{device = \"cpu\"}", NULL, st);
  cr_assert(h, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_value_gpu(h), -1);
  cr_assert_eq(kiln_value_gpu(NULL), -2);
  cr_assert_null(kiln_graph_add_input_on(g, "y", KILN_FLOAT32, 1, dims, -3, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "gpu -3 is out of range");
  /* a repeats tensor: the declared result is the target */
  const char *rd[] = {"4"};
  kiln_value *r = kiln_graph_add_input(g, "r", KILN_INT64, 1, rd, st);
  kiln_value *ops[] = {h, r};
  kiln_value *y = kiln_graph_add_op(g, "mo.repeat_interleave", ops, 2, "{axis = 0}",
                                    "!mo.tensor<[total], f32>", st);
  cr_assert(y, "%s", kiln_status_message(st));
  char dim[32];
  kiln_value_dim(y, 0, dim, sizeof dim);
  cr_assert_str_eq(dim, "total");
  /* several declared results: a split of the symbolic total into a and b */
  const char *parts[] = {"!mo.tensor<[a], f32>", "!mo.tensor<[b], f32>"};
  kiln_value *s = kiln_graph_add_op_typed(g, "mo.split", &y, 1,
                                          "{split_sizes = [-1, -1], axis = 0}", parts, 2, st);
  cr_assert(s, "%s", kiln_status_message(st));
  kiln_value_dim(kiln_value_result(s, 1), 0, dim, sizeof dim);
  cr_assert_str_eq(dim, "b");
  cr_assert_null(kiln_graph_add_op_typed(g, "mo.split", &y, 1,
                                         "{split_sizes = [-1, -1, -1], axis = 0}", parts, 2, st));
  assert_error(st, KILN_ERR_INVALID_ARGUMENT, "has 3 results but 2 result types were given");
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(builder, constant_and_execute) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("c", st);
  const char *d3[] = {"3"};
  int64_t s3[] = {3};
  double cv[] = {1.5, -2, 10};
  kiln_value *a = kiln_graph_add_input(g, NULL, KILN_FLOAT64, 1, d3, st);
  kiln_value *c = kiln_graph_add_constant(g, KILN_FLOAT64, 1, s3, cv, st);
  cr_assert(a && c, "%s", kiln_status_message(st));
  kiln_value *y = kiln_graph_add_op(g, "mo.mul", (kiln_value *[]){a, c}, 2, NULL, NULL, st);
  cr_assert(y, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &y, 1, NULL, st), 0, "%s", kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  double av[] = {2, 3, -1};
  kiln_tensor *at = kiln_tensor_borrow(KILN_FLOAT64, 1, s3, av, st), *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &at, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  double *o = kiln_tensor_data(out);
  cr_assert(o[0] == 3 && o[1] == -6 && o[2] == -10);
  kiln_tensor_free(at);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* ---- .npy ---- */
static char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "/tmp/kiln_test_rt_%d_%s", (int)getpid(), name);
  return p;
}

Test(npy, round_trip_every_dtype) {
  kiln_status *st = kiln_status_new();
  for (int dt = 0; dt < KILN_DTYPE_COUNT; dt++) {
    if (!ir_dtype_numpy_descr((ir_dtype)dt)) continue;
    int64_t shapes[][3] = {{2, 3, 4}, {0, 5, 1}};
    for (int s = 0; s < 2; s++) {
      kiln_tensor *t = rand_tensor((kiln_dtype)dt, 3, shapes[s], (uint64_t)dt);
      char *path = tmp_path("rt.npy");
      cr_assert_eq(rt_npy_write(path, t, st), 0, "%s", kiln_status_message(st));
      kiln_tensor *u = rt_npy_read(path, st);
      cr_assert(u, "%s: %s", kiln_dtype_name((kiln_dtype)dt), kiln_status_message(st));
      cr_assert_eq((int)kiln_tensor_dtype(u), dt);
      cr_assert_eq(kiln_tensor_rank(u), 3);
      for (int a = 0; a < 3; a++) cr_assert_eq(kiln_tensor_shape(u)[a], shapes[s][a]);
      cr_assert_eq(memcmp(kiln_tensor_data(t), kiln_tensor_data(u), kiln_tensor_nbytes(t)), 0);
      kiln_tensor_free(t);
      kiln_tensor_free(u);
      unlink(path);
    }
  }
  kiln_status_free(st);
}

Test(npy, scalar_round_trip_and_header_alignment) {
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, 0, NULL, st);
  *(float *)kiln_tensor_data(t) = 2.5f;
  size_t len;
  unsigned char *buf = rt_npy_encode(t, &len, st);
  cr_assert(buf);
  cr_assert_eq((len - 4) % 64, 0, "%zu", len); /* data starts 64-byte aligned */
  cr_assert_eq(buf[len - 5], '\n');
  cr_assert(strstr((char *)buf + 10, "'shape': ()"));
  kiln_tensor *u = rt_npy_decode(buf, len, "mem", st);
  cr_assert(u, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_rank(u), 0);
  cr_assert_eq(*(float *)kiln_tensor_data(u), 2.5f);
  free(buf);
  kiln_tensor_free(t);
  kiln_tensor_free(u);
  kiln_status_free(st);
}

Test(npy, bf16_has_no_numpy_dtype) {
  kiln_status *st = kiln_status_new();
  int64_t s[] = {2};
  kiln_tensor *t = kiln_tensor_new(KILN_BFLOAT16, 1, s, st);
  cr_assert_eq(rt_npy_write(tmp_path("bf16.npy"), t, st), -1);
  assert_error(st, KILN_ERR_UNSUPPORTED, "bf16 has no numpy dtype");
  kiln_tensor_free(t);
  kiln_status_free(st);
}

/* A .npy file image: version `major`, header dict text, data bytes. */
static size_t make_npy(unsigned char *out, int major, const char *dict, size_t ndata) {
  size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = 0;
  for (size_t k = 0; k < pre - 8; k++) out[8 + k] = (unsigned char)(hl >> (8 * k));
  memcpy(out + pre, dict, hl);
  memset(out + pre + hl, 0, ndata);
  return pre + hl + ndata;
}

static void npy_rejects(int major, const char *dict, size_t ndata, kiln_code code,
                        const char *needle) {
  unsigned char buf[1024];
  size_t n = make_npy(buf, major, dict, ndata);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_decode(buf, n, "x.npy", st);
  cr_assert_null(t, "accepted: %s", dict);
  assert_error(st, code, needle);
  kiln_status_free(st);
}

Test(npy, versions_2_and_3_are_read) {
  unsigned char buf[256];
  const char *d = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  for (int v = 2; v <= 3; v++) {
    size_t n = make_npy(buf, v, d, 8);
    kiln_tensor *t = rt_npy_decode(buf, n, "v.npy", NULL);
    cr_assert(t, "version %d", v);
    cr_assert_eq(kiln_tensor_dtype(t), KILN_INT32);
    kiln_tensor_free(t);
  }
}

Test(npy, malformed_files_give_clear_errors) {
  const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  npy_rejects(1, ok, 23, KILN_ERR_IO, "x.npy: .npy data is 23 bytes, shape and dtype need 24");
  npy_rejects(1, ok, 25, KILN_ERR_IO, "x.npy: .npy data is 25 bytes, shape and dtype need 24");
  npy_rejects(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8,
              KILN_ERR_UNSUPPORTED, "fortran_order is True");
  npy_rejects(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
              KILN_ERR_UNSUPPORTED, "big-endian");
  npy_rejects(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
              KILN_ERR_UNSUPPORTED, ".npy dtype '<c8' is not supported");
  npy_rejects(1, "{'descr': '<f4', 'shape': (2,), }", 8, KILN_ERR_IO, "missing 'fortran_order'");
  npy_rejects(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
              KILN_ERR_IO, "unexpected or repeated key");
  npy_rejects(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1), }", 8, KILN_ERR_IO,
              "malformed .npy header");
  npy_rejects(9, ok, 24, KILN_ERR_UNSUPPORTED, "format version 9.0");
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_npy_decode("PK\x03\x04zzzzzzzz", 12, "zip.npy", st));
  assert_error(st, KILN_ERR_IO, "zip.npy: not a .npy file (bad magic");
  unsigned char buf[256];
  size_t n = make_npy(buf, 1, ok, 24);
  cr_assert_null(rt_npy_decode(buf, 30, "cut.npy", st)); /* cut inside the header */
  assert_error(st, KILN_ERR_IO, "cut.npy: truncated .npy header");
  (void)n;
  cr_assert_null(rt_npy_read("/nonexistent/a.npy", st));
  assert_error(st, KILN_ERR_NOT_FOUND, "/nonexistent/a.npy: cannot open");
  kiln_status_free(st);
}

Test(npy, truncated_file_on_disk) {
  unsigned char buf[256];
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n", 32);
  char *path = tmp_path("trunc.npy");
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, n - 5, f);
  fclose(f);
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_npy_read(path, st));
  assert_error(st, KILN_ERR_IO, ".npy data is 27 bytes, shape and dtype need 32");
  unlink(path);
  kiln_status_free(st);
}

/* ---- JSON and .safetensors ---- */
Test(json, strict_reader) {
  char err[128];
  const char *txt = "{\"a\": [1, -2.5e3, \"x\\u00e9\\ud83d\\ude00\"], \"b\": null}";
  rt_json *j = rt_json_parse(txt, strlen(txt), err, sizeof err);
  cr_assert(j, "%s", err);
  const rt_json *a = rt_json_get(j, "a");
  cr_assert(a && a->n == 3 && a->items[0].is_int && a->items[0].i == 1);
  cr_assert_eq(a->items[1].num, -2500.0);
  cr_assert_str_eq(a->items[2].s, "x\xc3\xa9\xf0\x9f\x98\x80");
  rt_json_free(j);
  const char *bad[] = {"{\"a\": 1,}", "{\"a\": 1, \"a\": 2}", "[01]", "{'a': 1}", "[1] x",
                       "\"\\ud800\"", "[1, 2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_null(rt_json_parse(bad[i], strlen(bad[i]), err, sizeof err), "%s", bad[i]);
  char deep[200];
  memset(deep, '[', sizeof deep);
  cr_assert_null(rt_json_parse(deep, sizeof deep, err, sizeof err));
  cr_assert(strstr(err, "nesting too deep"), "%s", err);
}

static void st_rejects(const char *header, size_t ndata, kiln_code code, const char *needle) {
  char *path = tmp_path("bad.safetensors");
  st_write_raw(path, header, strlen(header), ndata);
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_safetensors_open(path, st), "accepted: %s", header);
  assert_error(st, code, needle);
  kiln_status_free(st);
  unlink(path);
}

Test(safetensors, round_trip_with_metadata_and_bf16) {
  kiln_status *st = kiln_status_new();
  int64_t s1[] = {3, 2}, s2[] = {5};
  kiln_tensor *t[3] = {rand_tensor(KILN_FLOAT32, 2, s1, 1), rand_tensor(KILN_BFLOAT16, 1, s2, 2),
                       rand_tensor(KILN_INT64, 1, s2, 3)};
  const char *names[] = {"fc1.weight", "emb", "ids"};
  char *path = tmp_path("w.safetensors");
  cr_assert_eq(rt_safetensors_write(path, names, (const kiln_tensor *const *)t, 3, st), 0, "%s",
               kiln_status_message(st));
  rt_safetensors *f = rt_safetensors_open(path, st);
  cr_assert(f, "%s", kiln_status_message(st));
  cr_assert_eq(rt_safetensors_count(f), 3);
  for (int i = 0; i < 3; i++) {
    int k = rt_safetensors_find(f, names[i]);
    cr_assert(k >= 0);
    kiln_tensor *u = rt_safetensors_tensor(f, k, st);
    cr_assert(u, "%s", kiln_status_message(st));
    cr_assert_eq(kiln_tensor_dtype(u), kiln_tensor_dtype(t[i]));
    cr_assert_eq(memcmp(kiln_tensor_data(u), kiln_tensor_data(t[i]), kiln_tensor_nbytes(t[i])), 0);
    kiln_tensor_free(u);
  }
  rt_safetensors_close(f);
  for (int i = 0; i < 3; i++) kiln_tensor_free(t[i]);
  /* __metadata__ is accepted and skipped */
  const char *h = "{\"__metadata__\": {\"format\": \"pt\"}, \"a\": {\"dtype\": \"F32\", \"shape\": "
                  "[2], \"data_offsets\": [0, 8]}}";
  st_write_raw(path, h, strlen(h), 8);
  f = rt_safetensors_open(path, st);
  cr_assert(f, "%s", kiln_status_message(st));
  cr_assert_eq(rt_safetensors_count(f), 1);
  kiln_tensor *u = rt_safetensors_tensor(f, 0, st); /* unaligned data: copied */
  cr_assert(u);
  cr_assert_eq(((unsigned char *)kiln_tensor_data(u))[1], 1);
  kiln_tensor_free(u);
  rt_safetensors_close(f);
  unlink(path);
  kiln_status_free(st);
}

Test(safetensors, malformed_files_give_clear_errors) {
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 8,
             KILN_ERR_IO, "tensor 'a': data_offsets run past the end of the file");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8,
             KILN_ERR_IO, "tensor 'a': size does not match dtype and shape");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", 8,
             KILN_ERR_IO, "data_offsets begin after they end");
  st_rejects("{\"a\": {\"dtype\": \"C64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8,
             KILN_ERR_UNSUPPORTED, "unsupported safetensors dtype 'C64'");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 8,
             KILN_ERR_IO, "'shape' entries must be non-negative integers");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", 8, KILN_ERR_IO,
             "'data_offsets' must be an array of two integers");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"x\": 1}}",
             8, KILN_ERR_IO, "unknown field x");
  st_rejects("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},}", 8,
             KILN_ERR_IO, "malformed safetensors header: JSON byte");
  st_rejects("[1, 2]", 0, KILN_ERR_IO, "expected a JSON object");
  /* header length past the end of the file, and a file too short for one */
  char *path = tmp_path("short.safetensors");
  FILE *f = fopen(path, "wb");
  unsigned char len8[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
  fwrite(len8, 1, 8, f);
  fputs("{}", f);
  fclose(f);
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_safetensors_open(path, st));
  assert_error(st, KILN_ERR_IO, "header length 65535 runs past the end of the file (10 bytes)");
  f = fopen(path, "wb");
  fwrite(len8, 1, 5, f);
  fclose(f);
  cr_assert_null(rt_safetensors_open(path, st));
  assert_error(st, KILN_ERR_IO, "5 bytes, too short for the header length");
  cr_assert_null(rt_safetensors_open("/nonexistent/w.safetensors", st));
  assert_error(st, KILN_ERR_NOT_FOUND, "cannot open");
  unlink(path);
  kiln_status_free(st);
}
