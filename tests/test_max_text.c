/* test_max_text.c - graphs as MAX prints them (ir/parse_max.c), run by kiln
 * and compared with MAX's own outputs.
 *
 * tests/max_text/NAME.mlir is str(graph) of a graph built with MAX's Python
 * API; NAME/ holds its inputs (input<i>.npy), MAX engine's outputs on the CPU
 * (output<i>.npy) and its weights (weights.safetensors). tools/max_text_gen.py
 * wrote them; MAX is not needed here. Each case is parsed from its file,
 * compiled, run on the CPU and compared: f32 within 1e-5 + 1e-4 * |MAX's|,
 * f64 within 1e-12 + 1e-10 * |MAX's|, NaN matching NaN, integers and bools
 * exactly. Then MAX text that kiln must refuse, each with a clear status at
 * its line:col. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/io.h"
#include "src/rt.h"

#define DIR_MAX KILN_SOURCE_DIR "/tests/max_text"

static bool close_enough(const kiln_tensor *got, const kiln_tensor *want, char *why, size_t cap) {
  if (got->dtype != want->dtype) {
    snprintf(why, cap, "dtype %s, MAX's is %s", kiln_dtype_name(got->dtype),
             kiln_dtype_name(want->dtype));
    return false;
  }
  bool same = got->rank == want->rank;
  for (int i = 0; same && i < got->rank; i++) same = got->shape[i] == want->shape[i];
  if (!same) {
    snprintf(why, cap, "shape differs from MAX's (rank %d vs %d)", got->rank, want->rank);
    return false;
  }
  for (int64_t i = 0; i < got->numel; i++) {
    double a, b, atol, rtol;
    if (got->dtype == KILN_FLOAT32) {
      a = ((const float *)got->data)[i];
      b = ((const float *)want->data)[i];
      atol = 1e-5, rtol = 1e-4;
    } else if (got->dtype == KILN_FLOAT64) {
      a = ((const double *)got->data)[i];
      b = ((const double *)want->data)[i];
      atol = 1e-12, rtol = 1e-10;
    } else {
      size_t es = kiln_dtype_size(got->dtype);
      if (memcmp((const char *)got->data + i * (int64_t)es,
                 (const char *)want->data + i * (int64_t)es, es) != 0) {
        snprintf(why, cap, "element %lld differs from MAX's", (long long)i);
        return false;
      }
      continue;
    }
    if ((isnan(a) && isnan(b)) || a == b) continue;
    if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
      snprintf(why, cap, "element %lld: %.9g, MAX's is %.9g", (long long)i, a, b);
      return false;
    }
  }
  return true;
}

static bool exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Parse, compile, bind, run NAME and compare every output with MAX's. */
static void run_case(const char *name) {
  char path[1024];
  kiln_status *st = kiln_status_new();
  snprintf(path, sizeof path, "%s/%s.mlir", DIR_MAX, name);
  kiln_graph *g = kiln_graph_load(path, st);
  cr_assert(g, "%s: %s", name, kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(NULL);
  cr_assert(ctx);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s: compile: %s", name, kiln_status_message(st));

  rt_safetensors *w = NULL;
  kiln_tensor *wt[16] = {0};
  int nw = kiln_model_num_weights(m);
  cr_assert(nw <= 16);
  if (nw > 0) {
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", DIR_MAX, name);
    w = rt_safetensors_open(path, st);
    cr_assert(w, "%s: %s", name, kiln_status_message(st));
    for (int i = 0; i < nw; i++) {
      const char *wn = kiln_model_weight_name(m, i);
      int k = rt_safetensors_find(w, wn);
      cr_assert(k >= 0, "%s: weight %s is not in weights.safetensors", name, wn);
      wt[i] = rt_safetensors_tensor(w, k, st);
      cr_assert(wt[i], "%s: %s", name, kiln_status_message(st));
      cr_assert_eq(kiln_model_bind_weight(m, wn, wt[i], st), 0, "%s: bind %s: %s", name, wn,
                   kiln_status_message(st));
    }
  }

  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m);
  cr_assert(nin <= 8 && nout <= 32);
  kiln_tensor *ins[8] = {0}, *outs[32] = {0}, *want[32] = {0};
  for (int i = 0; i < nin; i++) {
    snprintf(path, sizeof path, "%s/%s/input%d.npy", DIR_MAX, name, i);
    cr_assert((ins[i] = rt_npy_read(path, st)), "%s: %s", name, kiln_status_message(st));
  }
  for (int i = 0; i < nout; i++) {
    snprintf(path, sizeof path, "%s/%s/output%d.npy", DIR_MAX, name, i);
    cr_assert((want[i] = rt_npy_read(path, st)), "%s: %s", name, kiln_status_message(st));
  }
  snprintf(path, sizeof path, "%s/%s/output%d.npy", DIR_MAX, name, nout);
  cr_assert_not(exists(path), "%s: MAX wrote more outputs than the graph has (%d)", name, nout);
  cr_assert_eq(kiln_model_execute(m, ins, nin, outs, nout, st), 0, "%s: execute: %s", name,
               kiln_status_message(st));
  for (int i = 0; i < nout; i++) {
    char why[256];
    cr_expect(close_enough(outs[i], want[i], why, sizeof why), "%s: output %d: %s", name, i, why);
  }
  for (int i = 0; i < 32; i++) {
    kiln_tensor_free(outs[i]);
    kiln_tensor_free(want[i]);
  }
  for (int i = 0; i < 8; i++) kiln_tensor_free(ins[i]);
  kiln_model_free(m);
  for (int i = 0; i < 16; i++) kiln_tensor_free(wt[i]);
  rt_safetensors_close(w);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

static const char *const CASES[] = {"unary",  "binary",   "compare", "reduce",
                                    "norm",   "movement", "slicing", "gather",
                                    "mlp",    "attention", "integers", "extra",
                                    "shapes"};
#define NCASES (sizeof CASES / sizeof CASES[0])

Test(max_text, unary_ops_match_max) { run_case("unary"); }
Test(max_text, binary_ops_match_max) { run_case("binary"); }
Test(max_text, comparisons_and_logic_match_max) { run_case("compare"); }
Test(max_text, reductions_and_softmax_match_max) { run_case("reduce"); }
Test(max_text, layer_norm_with_weights_matches_max) { run_case("norm"); }
Test(max_text, reshape_transpose_broadcast_concat_match_max) { run_case("movement"); }
Test(max_text, split_and_slices_match_max) { run_case("slicing"); }
Test(max_text, gather_matches_max) { run_case("gather"); }
Test(max_text, mlp_with_weights_matches_max) { run_case("mlp"); }
Test(max_text, attention_matches_max) { run_case("attention"); }
Test(max_text, integer_ops_match_max) { run_case("integers"); }
Test(max_text, scans_band_part_prod_and_builtin_custom_kernels_match_max) { run_case("extra"); }
/* shapes/'s outputs are worked by hand (shape_to_tensor gives the shape it
 * is given), not MAX's: static, from the input and from a reshape's result. */
Test(max_text, shape_to_tensor_static_and_symbolic) { run_case("shapes"); }

/* A case added to the corpus must be added above. */
Test(max_text, every_corpus_file_is_run) {
  DIR *d = opendir(DIR_MAX);
  cr_assert(d, "%s is missing", DIR_MAX);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".mlir") != 0) continue;
    bool listed = false;
    for (size_t i = 0; i < NCASES; i++)
      listed |= strlen(CASES[i]) == len - 5 && strncmp(CASES[i], e->d_name, len - 5) == 0;
    cr_expect(listed, "%s has no test", e->d_name);
    n++;
  }
  closedir(d);
  cr_expect_eq(n, (int)NCASES);
}

/* ---- what kiln refuses ---- */
#define HEAD "mo.graph @g<n>(%arg0: !mo.tensor<[n, 4], f32>) -> !mo.tensor<[n, 4], f32> {\n"
#define TY "!mo.tensor<[n, 4], f32>"

/* text must fail to parse with code and a message containing each of want. */
static void refuse(const char *text, kiln_code code, const char *want1, const char *want2) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "max.mlir", st);
  cr_assert_null(g, "accepted:\n%s", text);
  const char *msg = kiln_status_message(st);
  cr_expect_eq(kiln_status_code(st), code, "code %d: %s", kiln_status_code(st), msg);
  cr_expect(strstr(msg, want1), "message '%s' lacks '%s'", msg, want1);
  if (want2) cr_expect(strstr(msg, want2), "message '%s' lacks '%s'", msg, want2);
  kiln_status_free(st);
}

Test(max_text, unknown_max_op_is_refused_by_name_at_its_place) {
  refuse(HEAD "  %0 = mo.chain.create()\n  %1 = rmo.mo.frobnicate(%arg0) : (" TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, "max.mlir:3:8: ", "unsupported MAX op 'rmo.mo.frobnicate'");
}

Test(max_text, transpose_needs_a_constant_permutation) {
  refuse(HEAD "  %1 = rmo.mo.transpose(%arg0, %arg0) : (" TY ", " TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:32: ", "dims of rmo.mo.transpose (operand 1) must be a mo.constant");
}

Test(max_text, reshape_new_shape_must_match_the_result_type) {
  refuse(HEAD "  %1 = rmo.reshape(%arg0) [newShape = #mosh<ape[4, n]> : !mosh.ape] : (" TY
              ") -> " TY "\n  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:39: ", "newShape of rmo.reshape is not the shape of its result type");
}

Test(max_text, slice_bounds_must_be_constants_or_the_dim_plus_a_constant) {
  refuse(HEAD "  %1 = rmo.slice(%arg0) [starts = #mosh<ape[0, 0]> : !mosh.ape, stops = "
              "#mosh<ape[mul(n, 2), 4]> : !mosh.ape, steps = #mosh<ape[1, 1]> : !mosh.ape] : (" TY
              ") -> " TY "\n  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:73: ", "stops[0] = 2 * n is neither a constant");
  refuse(HEAD "  %1 = rmo.slice(%arg0) [starts = #mosh<ape[0, 0]> : !mosh.ape] : (" TY ") -> " TY
              "\n  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ", "rmo.slice needs property 'stops'");
}

Test(max_text, max_only_property_values_are_refused_by_name) {
  refuse(HEAD "  %1 = rmo.mo.relu(%arg0) [layout = #M.layout<\"nhwc\">] : (" TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:28: ", "property 'layout' of rmo.mo.relu is not supported");
}

Test(max_text, malformed_properties_fail_at_their_place) {
  refuse(HEAD "  %1 = rmo.reshape(%arg0) [newShape = #mosh<ape[n, 4\n", KILN_ERR_PARSE, ":2:39: ",
         "unterminated attribute '#mosh<ape[n, 4'");
  refuse(HEAD "  %1 = rmo.reshape(%arg0) [newShape = #mosh<ape[n, 4]] : (" TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:54: ", "expected '>' to close the attribute's '<', found ']'");
  refuse(HEAD "  %1 = rmo.concat(%arg0, %arg0) [axis = 0 : ] : (" TY ", " TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:45: ", "expected a type after ':'");
}

Test(max_text, kernel_libraries_and_gpu_weights_are_refused) {
  refuse("mo.graph @g<n>(%arg0: " TY ") -> " TY
         " attributes {_kernel_library_paths = [\"/x/libk.so\"]} {\n  mo.output %arg0 : " TY
         "\n}\n",
         KILN_ERR_PARSE, ":1:111: ", "_kernel_library_paths must be empty");
  refuse(HEAD "  %0 = mo.constant.external [name = \"w\", align = 4, device = "
              "#M.device_ref<\"gpu\", 0>] : " TY "\n  mo.output %0 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:62: ", "kiln runs MAX graphs on the CPU");
}

Test(max_text, max_custom_kernels_other_than_its_builtins_are_refused) {
  refuse(HEAD "  %1 = mo.custom [symbol = \"my_kernel\"](%arg0) : (" TY ") -> " TY "\n"
              "  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ",
         "[symbol = \"my_kernel\"]: MAX's custom kernels are not supported");
}

Test(max_text, wrong_operand_counts_name_the_max_op) {
  refuse(HEAD "  %1 = rmo.mo.reduce.softmax(%arg0, %arg0, %arg0) [axis = 1] : (" TY ", " TY
              ", " TY ") -> " TY "\n  mo.output %1 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ", "rmo.mo.reduce.softmax (kiln's mo.softmax) takes 1 operand");
}

/* shape_to_tensor's shape property: a static shape is a constant; a
 * symbolic one needs a value of that shape before it; no operands with it. */
Test(max_text, shape_to_tensor_needs_a_value_of_its_symbolic_shape) {
  refuse(HEAD "  %1 = rmo.shape_to_tensor() [shape = #mosh<ape[n, 5]> : !mosh.ape] : () -> "
              "!mo.tensor<[2], si64>\n  mo.output %arg0 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:39: ",
         "shape [n, 5] of rmo.shape_to_tensor is symbolic and no value before it has that shape");
  refuse(HEAD "  %1 = rmo.shape_to_tensor(%arg0) [shape = #mosh<ape[n, 4]> : !mosh.ape] : (" TY
              ") -> !mo.tensor<[2], si64>\n  mo.output %arg0 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ", "rmo.shape_to_tensor takes a shape property and no operands");
  refuse(HEAD "  %1 = rmo.shape_to_tensor() : () -> !mo.tensor<[2], si64>\n"
              "  mo.output %arg0 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ", "rmo.shape_to_tensor needs property 'shape'");
  refuse(HEAD "  %1 = rmo.shape_to_tensor() [shape = #mosh<ape[2, 5]> : !mosh.ape] : () -> "
              "!mo.tensor<[3], si64>\n  mo.output %arg0 : " TY "\n}\n",
         KILN_ERR_PARSE, ":2:8: ",
         "rmo.shape_to_tensor of a rank-2 shape gives !mo.tensor<[2], si64>, not its declared");
  const char *text = HEAD "  %1 = rmo.shape_to_tensor [shape = #mosh<ape[n, 4]> : !mosh.ape] : "
                          "!mo.tensor<[2], si64>\n  mo.output %arg0 : " TY "\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "max.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  char *printed = kiln_graph_print(g, NULL);
  cr_expect(printed && strstr(printed, "mo.shape_to_tensor(%arg0)"), "%s", printed);
  free(printed);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* MAX's forms are accepted in place of kiln's without changing kiln's own. */
Test(max_text, max_forms_parse_to_kiln_ops) {
  const char *text =
      "mo.graph @g<n>(%arg0: " TY ") -> (" TY ", !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 4], si32>)"
      " attributes {_kernel_library_paths = [], argument_names = [\"x\"]} {\n"
      "  %0 = mo.chain.create()\n"
      "  %1 = rmo.mo.negative(%arg0) : (" TY ") -> " TY "\n"
      "  %2 = mo.constant <#M.dense_array<1> : tensor<si64>> : !mo.tensor<[], si64>\n"
      "  %3 = rmo.mo.reduce.add(%1, %2) : (" TY
      ", !mo.tensor<[], si64>) -> !mo.tensor<[n, 1], f32>\n"
      "  %4 = mo.cast(%arg0) : (" TY ") -> !mo.tensor<[n, 4], si32>\n"
      "  mo.output %1, %3, %4 : " TY ", !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 4], si32>\n"
      "} {counter = 3 : i64}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "max.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  char *printed = kiln_graph_print(g, NULL);
  cr_assert(printed);
  cr_expect(strstr(printed, "mo.negate(%arg0)"), "%s", printed);
  cr_expect(strstr(printed, "mo.sum(%1) {axis = 1}"), "%s", printed);
  cr_expect(strstr(printed, "mo.cast(%arg0) {dtype = si32}"), "%s", printed);
  cr_expect_not(strstr(printed, "chain"), "%s", printed);
  cr_expect_not(strstr(printed, "mo.constant"), "the axis constant stays:\n%s", printed);
  free(printed);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* A constant that became an attribute stays when something else uses it. */
Test(max_text, absorbed_constant_used_elsewhere_stays) {
  const char *text =
      "mo.graph @g(%arg0: !mo.tensor<[2, 3], f32>) -> (!mo.tensor<[3, 2], f32>, "
      "!mo.tensor<[2], si64>) {\n"
      "  %1 = mo.constant <#M.dense_array<1, 0> : tensor<2xsi64>> : !mo.tensor<[2], si64>\n"
      "  %2 = rmo.mo.transpose(%arg0, %1) : (!mo.tensor<[2, 3], f32>, !mo.tensor<[2], si64>) -> "
      "!mo.tensor<[3, 2], f32>\n"
      "  mo.output %2, %1 : !mo.tensor<[3, 2], f32>, !mo.tensor<[2], si64>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "max.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  char *printed = kiln_graph_print(g, NULL);
  cr_expect(strstr(printed, "%1 = mo.constant"), "%s", printed);
  cr_expect(strstr(printed, "mo.permute(%arg0) {dims = [1, 0]}"), "%s", printed);
  free(printed);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Every prefix of a MAX file, and the file with any one byte replaced by a
 * bracket, '#', ':' or a newline, parses or fails with a message and a
 * line:col: never a crash (the sanitized build checks the memory). */
static char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.mlir", DIR_MAX, name);
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  char *buf = malloc(1 << 16);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

static void parse_or_fail_cleanly(const char *text, size_t len) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, len, NULL, st);
  if (!g) {
    kiln_code c = kiln_status_code(st);
    cr_assert(c == KILN_ERR_PARSE || c == KILN_ERR_VERIFY, "code %d: %s", c,
              kiln_status_message(st));
    cr_assert(kiln_status_message(st)[0], "no message for:\n%.*s", (int)len, text);
  }
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(max_text, truncated_or_damaged_max_text_fails_cleanly, .timeout = 300) {
  const char *names[] = {"slicing", "extra", "norm"};
  for (int k = 0; k < 3; k++) {
    size_t len;
    char *buf = slurp(names[k], &len);
    for (size_t n = 0; n < len; n++) parse_or_fail_cleanly(buf, n);
    static const char subst[] = "[]<>#:\n";
    for (size_t i = 0; i < len; i += 3) {
      char keep = buf[i];
      for (const char *c = subst; *c; c++) {
        buf[i] = *c;
        parse_or_fail_cleanly(buf, len);
      }
      buf[i] = keep;
    }
    free(buf);
  }
}

/* What kiln prints for a MAX graph is kiln's own text: it parses again and
 * prints the same. */
Test(max_text, printed_translation_round_trips) {
  for (size_t i = 0; i < NCASES; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.mlir", DIR_MAX, CASES[i]);
    kiln_status *st = kiln_status_new();
    kiln_graph *g = kiln_graph_load(path, st);
    cr_assert(g, "%s", kiln_status_message(st));
    char *t1 = kiln_graph_print(g, st);
    cr_assert(t1);
    cr_expect_not(strstr(t1, "rmo."), "%s still has rmo ops:\n%s", CASES[i], t1);
    kiln_graph *g2 = kiln_graph_parse(t1, strlen(t1), CASES[i], st);
    cr_assert(g2, "%s: %s", CASES[i], kiln_status_message(st));
    char *t2 = kiln_graph_print(g2, st);
    cr_expect_str_eq(t1, t2, "%s", CASES[i]);
    free(t1);
    free(t2);
    kiln_graph_free(g2);
    kiln_graph_free(g);
    kiln_status_free(st);
  }
}
