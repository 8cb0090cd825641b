/* test_prepack_spread.c - a weight's packed copy made on several threads
 * (rt_prepack_pack_spread, src/prepack.h) is the same bytes as the one
 * made on the calling thread (rt_prepack_pack), for every split: f32 and
 * f64, plain and transposed sources, N a multiple of the panel width and
 * not (a ragged last panel, zero-filled), K of 1 and odd, more CPUs than
 * panels; 8-bit and half sources (never split) too. The share count
 * follows its rule (rt_prepack_shares), and a large block
 * (rt_aligned_alloc_large) is aligned to RT_HUGE_BYTES and freed with
 * free(). The output buffer starts filled with 0xA5 so a byte no share
 * writes shows. A bind packs on one CPU where the process would have no
 * other thread. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "src/prepack.h"
#include "src/rt.h"
#include "src/spread.h"

/* Source bytes that differ at every position (a swapped or skipped element
 * shows). */
static void *source(size_t bytes, unsigned seed) {
  unsigned char *b = malloc(bytes ? bytes : 1);
  cr_assert_not_null(b);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; i++) {
    x = x * 1664525u + 1013904223u;
    b[i] = (unsigned char)(x >> 24);
  }
  return b;
}

static void check_split(ir_dtype dt, int64_t K, int64_t N, int64_t nr, bool trans, int cpus) {
  size_t es = ir_dtype_size(dt), in_bytes = (size_t)(K * N) * es;
  size_t bytes = rt_prepack_bytes(dt, K, N, nr);
  cr_assert_gt(bytes, 0);
  void *b = source(in_bytes, (unsigned)(K * 131 + N * 7 + nr));
  unsigned char *want = malloc(bytes), *got = malloc(bytes);
  cr_assert(want && got);
  memset(want, 0xA5, bytes);
  memset(got, 0xA5, bytes);
  rt_prepack_pack(b, dt, K, N, nr, trans, want);
  rt_prepack_pack_spread(b, dt, K, N, nr, trans, got, cpus);
  for (size_t i = 0; i < bytes; i++)
    if (want[i] != got[i])
      cr_assert_fail("dtype %d K %lld N %lld nr %lld trans %d cpus %d: byte %zu of %zu is %02x, "
               "packed on one thread %02x",
               (int)dt, (long long)K, (long long)N, (long long)nr, trans, cpus, i, bytes, got[i],
               want[i]);
  free(b);
  free(want);
  free(got);
}

Test(prepack_spread, float_splits_match_one_thread) {
  /* sizes past RT_PREPACK_SHARE_BYTES so the copy is split */
  static const struct { int64_t K, N, nr; } shapes[] = {
      {768, 768, 64},  /* whole panels */
      {769, 1000, 64}, /* odd K, a ragged last panel */
      {300, 3072, 32}, /* the AVX2 width */
      {1, 600000, 64}, /* one row */
      {4096, 65, 64},  /* two panels, the second one column wide: more CPUs than panels */
  };
  static const int cpus[] = {2, 3, 8};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (size_t c = 0; c < sizeof cpus / sizeof *cpus; c++)
      for (int trans = 0; trans < 2; trans++) {
        check_split(IR_DT_F32, shapes[s].K, shapes[s].N, shapes[s].nr, trans, cpus[c]);
        check_split(IR_DT_F64, shapes[s].K, shapes[s].N, shapes[s].nr / 2, trans, cpus[c]);
      }
}

Test(prepack_spread, small_and_other_dtypes_match_one_thread) {
  check_split(IR_DT_F32, 3, 5, 64, false, 4); /* one share */
  check_split(IR_DT_SI8, 1024, 1000, 16, false, 4);
  check_split(IR_DT_UI8, 999, 1001, 16, false, 4);
  check_split(IR_DT_BF16, 1025, 700, 32, false, 4);
  check_split(IR_DT_F16, 1024, 513, 32, true, 4);
}

Test(prepack_spread, share_rule) {
  size_t u = RT_PREPACK_SHARE_BYTES;
  cr_expect_eq(rt_prepack_shares(100 * u, 1000, 1), 1, "one CPU: no thread");
  cr_expect_eq(rt_prepack_shares(u, 1000, 8), 1, "one share's worth: no thread");
  cr_expect_eq(rt_prepack_shares(3 * u, 1000, 8), 3);
  cr_expect_eq(rt_prepack_shares(100 * u, 1000, 2), 8, "four per CPU at most");
  cr_expect_eq(rt_prepack_shares(100 * u, 5, 8), 5, "one panel per share at most");
  cr_expect_eq(rt_prepack_shares(100 * u, 1, 8), 1);
}

Test(prepack_spread, large_blocks_are_aligned) {
  void *small = rt_aligned_alloc_large(1000);
  cr_assert_not_null(small);
  cr_expect_eq((uintptr_t)small % RT_ALIGN, 0);
  free(small);
  size_t sizes[] = {RT_HUGE_BYTES, RT_HUGE_BYTES * 3 + 4096 + 64};
  for (int i = 0; i < 2; i++) {
    unsigned char *p = rt_aligned_alloc_large(sizes[i]);
    cr_assert_not_null(p);
    cr_expect_eq((uintptr_t)p % RT_HUGE_BYTES, 0);
    memset(p, 1, sizes[i]); /* every byte is ours */
    cr_expect_eq(p[sizes[i] - 1], 1);
    free(p);
  }
}

/* A model of `threads` threads with the quick tier from `tier_up`
 * kernels on (0: off) on the graph of one 1024 x 1024 weight's GEMM. */
static kiln_model *gemm_model(kiln_context **ctx, int threads, int tier_up) {
  static const char text[] =
      "mo.graph @g<m>(%x: !mo.tensor<[m, 1024], f32>) -> (!mo.tensor<[m, 1024], f32>) {\n"
      "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[1024, 1024], f32>\n"
      "  %y = mo.matmul(%x, %w) : (!mo.tensor<[m, 1024], f32>, !mo.tensor<[1024, 1024], f32>)"
      " -> !mo.tensor<[m, 1024], f32>\n"
      "  mo.output %y : !mo.tensor<[m, 1024], f32>\n"
      "}\n";
  kiln_status *st = kiln_status_new();
  *ctx = kiln_context_new(st);
  cr_assert_not_null(*ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_cache_dir(*ctx, NULL, 0, st), 0); /* compiled here, not read */
  cr_assert_eq(kiln_context_set_num_threads(*ctx, threads, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(*ctx, tier_up, st), 0);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(*ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(rt_model_prepack_sources(m), 1, "the weight is packed");
  int64_t shape[2] = {1024, 1024};
  kiln_tensor *w = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
  cr_assert_not_null(w);
  memset(kiln_tensor_data(w), 0, 1024 * 1024 * sizeof(float));
  cr_assert_eq(kiln_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(w); /* packed: the model reads its own copy */
  kiln_graph_free(g);
  kiln_status_free(st);
  return m;
}

/* A context of one thread whose model compiled at FULL (no quick tier, so
 * no compile thread) packs on the calling thread: a single-threaded
 * process keeps glibc's faster single-threaded malloc. With a second
 * thread in the context, or quick kernels (their rebuild thread), the
 * bind packs on every CPU. */
Test(prepack_spread, bind_threads_only_where_the_process_has_some) {
  kiln_context *ctx;
  kiln_model *m = gemm_model(&ctx, 1, 0);
  cr_expect_eq(rt_prepack_bind_cpus(m), 1);
  kiln_model_free(m);
  kiln_context_free(ctx);
  m = gemm_model(&ctx, 2, 0);
  cr_expect_eq(rt_prepack_bind_cpus(m), rt_spread_cpus());
  kiln_model_free(m);
  kiln_context_free(ctx);
  m = gemm_model(&ctx, 1, 1);
  cr_expect_eq(rt_prepack_bind_cpus(m), rt_spread_cpus());
  kiln_model_free(m);
  kiln_context_free(ctx);
}
