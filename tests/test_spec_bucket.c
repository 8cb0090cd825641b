/* test_spec_bucket.c - bucketing and variant bounds (src/variants.c):
 * pow2 groups seq = 5, 6, 7, 8 into one variant whose results match the
 * reference interpreter and the generic variant for every value (softmax,
 * a sum and a mean over the bucketed axis: nothing is padded); a second
 * bucket shares the first one's kernels (cache hits, no compile); multiples
 * of N; bad bucket arguments; the per-model and per-context variant bound
 * (LRU eviction, lowering a bound evicts, range checks). Policies are set
 * explicitly (sync) so the outcomes are deterministic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/rt.h"
#include "src/variants.h"

/* softmax over seq, plus a sum and a mean over seq */
#define G2                                                                                      \
  "mo.graph @b<batch, seq>(%x: !mo.tensor<[batch, seq, 8], f32>, %y: !mo.tensor<[batch, 8, "    \
  "seq], f32>) -> (!mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[batch, 1, seq], f32>, "      \
  "!mo.tensor<[batch, seq, 1], f32>) {\n"                                                       \
  "  %s = mo.matmul(%x, %y) : (!mo.tensor<[batch, seq, 8], f32>, !mo.tensor<[batch, 8, seq], "  \
  "f32>) -> !mo.tensor<[batch, seq, seq], f32>\n"                                               \
  "  %p = mo.softmax(%s) {axis = -1} : !mo.tensor<[batch, seq, seq], f32>\n"                    \
  "  %t = mo.sum(%s) {axis = 1} : (!mo.tensor<[batch, seq, seq], f32>) -> !mo.tensor<[batch, "  \
  "1, seq], f32>\n"                                                                             \
  "  %m = mo.mean(%x) {axis = -1} : (!mo.tensor<[batch, seq, 8], f32>) -> !mo.tensor<[batch, "  \
  "seq, 1], f32>\n"                                                                             \
  "  mo.output %p, %t, %m : !mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[batch, 1, seq], "   \
  "f32>, !mo.tensor<[batch, seq, 1], f32>\n"                                                    \
  "}\n"

#define RELU                                                                                  \
  "mo.graph @a<batch>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) {\n" \
  "  %y = mo.relu(%x) : !mo.tensor<[batch, 8], f32>\n"                                       \
  "  mo.output %y : !mo.tensor<[batch, 8], f32>\n"                                           \
  "}\n"

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

typedef struct fx {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *kg;
  ir_graph *g;
} fx;

static void fx_init(fx *f, const char *text) {
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert_not_null(f->ctx, "%s", kiln_status_message(f->st));
  f->kg = kiln_graph_parse(text, strlen(text), "test", f->st);
  cr_assert_not_null(f->kg, "%s", kiln_status_message(f->st));
  ir_diag d = {0};
  f->g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(f->g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(f->g, &d), 0, "%s", d.msg);
}

static void fx_free(fx *f) {
  ir_graph_free(f->g);
  kiln_graph_free(f->kg);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

static kiln_model *model(fx *f, kiln_specialize_policy p) {
  kiln_model *m = kiln_model_compile(f->ctx, f->kg, f->st);
  cr_assert_not_null(m, "%s", kiln_status_message(f->st));
  cr_assert_eq(kiln_model_set_specialize(m, p, f->st), 0);
  return m;
}

/* Run m on random inputs for syms; compare every output with the generic
 * model gen (close) and the interpreter (close). */
static void check(fx *f, kiln_model *m, kiln_model *gen, const int64_t *syms) {
  kiln_tensor *ins[4] = {0}, *a[4] = {0}, *b[4] = {0};
  ir_tensor its[4], ref[4];
  uint64_t seed = 17 + (uint64_t)syms[f->g->nsyms - 1];
  for (int i = 0; i < f->g->ninputs; i++) {
    int64_t shape[IR_MAX_RANK];
    char msg[256];
    cr_assert_eq(ir_eval_shape(&f->g->inputs[i]->type, syms, shape, msg, sizeof msg), 0);
    ins[i] = kiln_tensor_new(KILN_FLOAT32, f->g->inputs[i]->type.rank, shape, f->st);
    float *v = kiln_tensor_data(ins[i]);
    for (int64_t e = 0; e < kiln_tensor_numel(ins[i]); e++) v[e] = frand(&seed);
    its[i] = (ir_tensor){.dtype = IR_DT_F32, .rank = kiln_tensor_rank(ins[i]), .data = v};
    memcpy(its[i].shape, shape, sizeof(int64_t) * (size_t)its[i].rank);
  }
  int no = f->g->noutputs;
  cr_assert_eq(kiln_model_execute(m, ins, f->g->ninputs, a, no, f->st), 0, "%s",
               kiln_status_message(f->st));
  cr_assert_eq(kiln_model_execute(gen, ins, f->g->ninputs, b, no, f->st), 0, "%s",
               kiln_status_message(f->st));
  char msg[512];
  cr_assert_eq(ir_interp_run(f->g, its, NULL, NULL, ref, msg, sizeof msg), 0, "%s", msg);
  for (int o = 0; o < no; o++) {
    int64_t n = kiln_tensor_numel(a[o]);
    cr_assert_eq(n, ir_tensor_numel(&ref[o]));
    const float *x = kiln_tensor_data(a[o]), *y = kiln_tensor_data(b[o]), *r = ref[o].data;
    for (int64_t e = 0; e < n; e++) {
      cr_assert(fabsf(x[e] - r[e]) <= 1e-4f * (1 + fabsf(r[e])), "output %d [%lld]: %g vs %g", o,
                (long long)e, x[e], r[e]);
      cr_assert(fabsf(x[e] - y[e]) <= 1e-5f * (1 + fabsf(y[e])), "output %d [%lld]: %g vs %g", o,
                (long long)e, x[e], y[e]);
    }
    free(ref[o].data);
    kiln_tensor_free(a[o]);
    kiln_tensor_free(b[o]);
  }
  for (int i = 0; i < f->g->ninputs; i++) kiln_tensor_free(ins[i]);
}

Test(spec_bucket, pow2_groups_5_to_8_into_one_exact_variant) {
  fx f;
  fx_init(&f, G2);
  kiln_model *gen = model(&f, KILN_SPECIALIZE_OFF);
  kiln_model *m = model(&f, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "seq", KILN_BUCKET_POW2, 0, f.st), 0, "%s",
               kiln_status_message(f.st));
  for (int64_t seq = 5; seq <= 8; seq++) {
    int64_t s[2] = {2, seq};
    check(&f, m, gen, s);
    cr_assert_eq(kiln_model_variants(m), 1, "seq %lld", (long long)seq);
  }
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 1);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 3);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_MISSES), 1);
  double compiles = kiln_model_counter(m, KILN_COUNTER_COMPILES);
  cr_assert_gt(compiles, 0, "batch = 2 is bound: kernels of their own");
  /* seq 3 -> bucket 4: another variant, same kernels (seq is a run-time dim) */
  int64_t s3[2] = {2, 3};
  check(&f, m, gen, s3);
  cr_assert_eq(kiln_model_variants(m), 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_COMPILES), compiles);
  cr_assert_gt(kiln_model_counter(m, KILN_COUNTER_KERNEL_HITS), 0);
  /* another batch: exact, so new kernels */
  int64_t s9[2] = {3, 9};
  check(&f, m, gen, s9);
  cr_assert_eq(kiln_model_variants(m), 3);
  cr_assert_gt(kiln_model_counter(m, KILN_COUNTER_COMPILES), compiles);
  kiln_model_free(m);
  kiln_model_free(gen);
  fx_free(&f);
}

Test(spec_bucket, multiples_of_n_and_back_to_exact) {
  fx f;
  fx_init(&f, G2);
  kiln_model *gen = model(&f, KILN_SPECIALIZE_OFF);
  kiln_model *m = model(&f, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "seq", KILN_BUCKET_MULTIPLE, 4, f.st), 0);
  for (int64_t seq = 5; seq <= 9; seq++) {
    int64_t s[2] = {1, seq};
    check(&f, m, gen, s);
  }
  cr_assert_eq(kiln_model_variants(m), 2, "5..8 and 9..12");
  cr_assert_eq(kiln_model_set_bucket(m, "seq", KILN_BUCKET_EXACT, 0, f.st), 0);
  int64_t s[2] = {1, 6};
  check(&f, m, gen, s);
  cr_assert_eq(kiln_model_variants(m), 3, "exact seq 6: a fully bound variant");
  kiln_model_free(m);
  kiln_model_free(gen);
  fx_free(&f);
}

Test(spec_bucket, bad_arguments) {
  fx f;
  fx_init(&f, G2);
  kiln_model *m = model(&f, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "nosuch", KILN_BUCKET_POW2, 0, f.st), -1);
  cr_assert_eq(kiln_status_code(f.st), KILN_ERR_NOT_FOUND);
  cr_assert_not_null(strstr(kiln_status_message(f.st), "nosuch"));
  cr_assert_eq(kiln_model_set_bucket(m, "seq", KILN_BUCKET_MULTIPLE, 0, f.st), -1);
  cr_assert_eq(kiln_model_set_bucket(m, "seq", (kiln_bucket_kind)9, 0, f.st), -1);
  cr_assert_eq(kiln_model_set_bucket(NULL, "seq", KILN_BUCKET_POW2, 0, f.st), -1);
  cr_assert_eq(kiln_model_set_bucket(m, NULL, KILN_BUCKET_POW2, 0, f.st), -1);
  kiln_model_free(m);
  fx_free(&f);
}

static void exec_relu(fx *f, kiln_model *m, int64_t batch) {
  kiln_tensor *in = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){batch, 8}, f->st), *out[1] = {0};
  cr_assert_eq(kiln_model_execute(m, &in, 1, out, 1, f->st), 0, "%s", kiln_status_message(f->st));
  kiln_tensor_free(out[0]);
  kiln_tensor_free(in);
}

Test(spec_bucket, variant_bound_per_model_and_context) {
  fx f;
  fx_init(&f, RELU);
  kiln_model *m = model(&f, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_model_set_max_variants(m, 2, f.st), 0);
  for (int64_t b = 1; b <= 3; b++) exec_relu(&f, m, b);
  cr_assert_eq(kiln_model_variants(m), 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_EVICTED), 1);
  exec_relu(&f, m, 3); /* live */
  exec_relu(&f, m, 2); /* live */
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 3);
  exec_relu(&f, m, 1); /* evicted earlier: built again, evicts 3 (the LRU) */
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 4);
  exec_relu(&f, m, 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 4, "2 stayed");
  cr_assert_eq(kiln_model_set_max_variants(m, 1, f.st), 0); /* evicts at once */
  cr_assert_eq(kiln_model_variants(m), 1);
  /* the context's bound for models without their own */
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 3, f.st), 0);
  cr_assert_eq(kiln_model_set_max_variants(m, 0, f.st), 0);
  for (int64_t b = 4; b <= 8; b++) exec_relu(&f, m, b);
  cr_assert_eq(kiln_model_variants(m), 3);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_VARIANTS_LIVE), 3);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 0, f.st), 0); /* back to 8 */
  for (int64_t b = 9; b <= 20; b++) exec_relu(&f, m, b);
  cr_assert_eq(kiln_model_variants(m), 8);
  cr_assert_eq(kiln_model_set_max_variants(m, -1, f.st), -1);
  cr_assert_eq(kiln_model_set_max_variants(m, 5000, f.st), -1);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, -2, f.st), -1);
  cr_assert_eq(kiln_model_set_max_variants(NULL, 2, f.st), -1);
  kiln_model_free(m);
  fx_free(&f);
}
