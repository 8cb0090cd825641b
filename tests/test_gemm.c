/* test_gemm.c - the GEMM template path of mo.matmul (kernels-templates/
 * gemm.c through jit/template.c and jit/matmul.c), JIT vs the reference
 * interpreter (tests/support/oracle.h: seeded inputs in [-1, 1], outputs
 * also written into garbage-filled caller tensors, so a tile that is left
 * unwritten or accumulated into stale C fails).
 *
 * Shapes cover the template's edges: M, N, K in {0, 1, 2, 3, 7, 15, 16, 17,
 * 31, 33, 63, 64, 65, 100, 129, 257} (below / at / above the register tile's
 * 6 rows and 16 / 32 columns, the small-M path for M < 4, K blocks of 256
 * split evenly), symbolic (one compile, many bindings) and static (sizes
 * fold to constants after inlining), N over 256 with M >= 4 (the wide B
 * block in malloc'd workspace, one or two blocks), batched with broadcasting, f32 and
 * f64, two matmuls sharing one module (the template is linked once), NaN /
 * inf operands, and 512 x 512 x 512 once. The prepacked-B entries (_pex)
 * of every width against _ex bit for bit (tests/test_prepack.c covers them
 * through models); the transposed-B entries (_tex) on few rows against
 * double sums, each four columns the same bits as alone. The prebuilt entries (jit/template.h): a symbolic GEMM
 * calls them, a static one inlines the template, `kiln compile`'s engine
 * never calls them, and the two paths give the same bits.
 * Tolerance: |a|, |b| <= 1, so each output is a K-term dot product; the
 * template sums in blocks with FMA, the oracle in index order in double:
 * atol = 1e-6 * K (f32) / 1e-15 * K (f64), as tests/test_ops_matmul.c
 * argues; one wrong or missing term is off by ~0.25 on average. */
#include <criterion/criterion.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "jit/jit.h"
#include "jit/lower.h"
#include "jit/template.h"
#include "src/prepack.h"
#include "support/gtext.h"
#include "support/oracle.h"

static const int SIZES[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 129, 257};
#define NSIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* "m=..,n=..,k=..;..." for the given triples (at most 16: the oracle's
 * limit); malloc'd. */
static char *bindings(const int (*mnk)[3], int n) {
  size_t cap = (size_t)n * 40 + 1;
  char *s = malloc(cap);
  cr_assert_not_null(s);
  size_t len = 0;
  s[0] = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(s + len, cap - len, "%sm=%d,n=%d,k=%d", i ? ";" : "", mnk[i][0],
                            mnk[i][1], mnk[i][2]);
  return s;
}

static const char *sym_text(gt *t, const char *dt) {
  int a = gt_in(t, dt, "m, k"), b = gt_in(t, dt, "k, n");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, dt, "m, n"));
  return gt_finish(t);
}

/* One symbolic [m, k] x [k, n] matmul of dtype dt over up to 16 triples,
 * through the oracle (both kinds of output tensor). */
static void check_symbolic(const char *dt, const int (*mnk)[3], int n, int kmax, unsigned seed) {
  gt *t = gt_new("gemm_sym", "m, n, k");
  const char *text = sym_text(t, dt);
  char *bind = bindings(mnk, n);
  bool f64 = strcmp(dt, "f64") == 0;
  oracle_case c = {.label = dt, .mlir = text, .bindings = bind, .seed = seed,
                   .atol = (f64 ? 1e-15 : 1e-6) * (kmax > 1 ? kmax : 1),
                   .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  free(bind);
  gt_free(t);
}

/* Many triples with one compile (the oracle runner takes 16 bindings per
 * compile): the model is compiled once through the public API and each
 * triple is run by it, into an output pre-filled with NaN bytes, and by
 * ir_interp_run on the same seeded f32 data. atol = 1e-6 * max(K, 1). */
static void check_many(const int (*mnk)[3], int n, unsigned seed) {
  gt *t = gt_new("gemm_many", "m, n, k");
  const char *text = sym_text(t, "f32");
  cr_assert_not_null(text);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *kg = kiln_graph_parse(text, strlen(text), "gemm_many", st);
  cr_assert_not_null(kg, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, kg, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  oracle_gen gen = gen_uniform(-1, 1);
  int bad_cases = 0;
  for (int i = 0; i < n; i++) {
    int64_t M = mnk[i][0], N = mnk[i][1], K = mnk[i][2];
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    float *a = malloc(sizeof *a * (size_t)(M * K + 1));
    float *b = malloc(sizeof *b * (size_t)(K * N + 1));
    cr_assert(a && b);
    oracle_fill(a, KILN_FLOAT32, M * K, &gen, seed + 2 * (unsigned)i);
    oracle_fill(b, KILN_FLOAT32, K * N, &gen, seed + 2 * (unsigned)i + 1);
    kiln_tensor *ta = kiln_tensor_borrow(KILN_FLOAT32, 2, sa, a, st);
    kiln_tensor *tb = kiln_tensor_borrow(KILN_FLOAT32, 2, sb, b, st);
    kiln_tensor *tc = kiln_tensor_new(KILN_FLOAT32, 2, sc, st);
    cr_assert(ta && tb && tc, "%s", kiln_status_message(st));
    memset(kiln_tensor_data(tc), 0xff, kiln_tensor_nbytes(tc)); /* NaN garbage */
    kiln_tensor *ins[2] = {ta, tb};
    int rc = kiln_model_execute(m, ins, 2, &tc, 1, st);
    cr_assert(rc == 0, "M=%lld N=%lld K=%lld: %s", (long long)M, (long long)N, (long long)K,
              kiln_status_message(st));
    ir_tensor iin[2] = {{.dtype = IR_DT_F32, .rank = 2, .shape = {M, K}, .data = a},
                        {.dtype = IR_DT_F32, .rank = 2, .shape = {K, N}, .data = b}};
    ir_tensor iout[1];
    char msg[512] = "";
    cr_assert(ir_interp_run(g, iin, NULL, NULL, iout, msg, sizeof msg) == 0, "%s", msg);
    const float *jc = kiln_tensor_data(tc), *oc = iout[0].data;
    double atol = 1e-6 * (double)(K > 1 ? K : 1);
    for (int64_t e = 0; e < M * N; e++) {
      double diff = (double)jc[e] - (double)oc[e];
      if (!(diff <= atol && diff >= -atol)) {
        cr_expect(false, "M=%lld N=%lld K=%lld: C[%lld, %lld] = %.9g, oracle %.9g",
                  (long long)M, (long long)N, (long long)K, (long long)(e / N),
                  (long long)(e % N), (double)jc[e], (double)oc[e]);
        bad_cases++;
        break;
      }
    }
    free(iout[0].data);
    kiln_tensor_free(ta);
    kiln_tensor_free(tb);
    kiln_tensor_free(tc);
    free(a);
    free(b);
    if (bad_cases > 5) break;
  }
  ir_graph_free(g);
  kiln_model_free(m);
  kiln_graph_free(kg);
  kiln_context_free(ctx);
  kiln_status_free(st);
  gt_free(t);
}

/* Every (M, N, K) with all three from the first `upto` sizes (up to 33). */
Test(gemm, symbolic_grid_small_sizes) {
  int upto = 10, n = 0;
  int(*mnk)[3] = malloc(sizeof *mnk * (size_t)(upto * upto * upto));
  cr_assert_not_null(mnk);
  for (int i = 0; i < upto; i++)
    for (int j = 0; j < upto; j++)
      for (int k = 0; k < upto; k++) {
        mnk[n][0] = SIZES[i];
        mnk[n][1] = SIZES[j];
        mnk[n][2] = SIZES[k];
        n++;
      }
  check_many((const int(*)[3])mnk, n, 61);
  free(mnk);
}

/* Each size at least once as M, as N and as K, with the others drawn from
 * all sizes (a fixed pseudo-random walk, so the set is the same every run). */
Test(gemm, symbolic_all_sizes_mixed) {
  int mnk[3 * NSIZES * 3][3], n = 0;
  unsigned s = 7;
  for (int axis = 0; axis < 3; axis++)
    for (int i = 0; i < NSIZES; i++)
      for (int rep = 0; rep < 3; rep++) {
        for (int d = 0; d < 3; d++) {
          s = s * 1103515245u + 12345u;
          mnk[n][d] = SIZES[(s >> 16) % NSIZES];
        }
        mnk[n][axis] = SIZES[i];
        n++;
      }
  check_many((const int(*)[3])mnk, n, 62);
}

Test(gemm, symbolic_f64) {
  static const int mnk[][3] = {{0, 5, 3},   {1, 1, 1},    {3, 17, 5},   {7, 16, 33},
                               {17, 9, 0},  {65, 33, 17}, {100, 7, 257}, {6, 8, 300},
                               {1, 129, 65}, {2, 31, 64}};
  check_symbolic("f64", mnk, (int)(sizeof mnk / sizeof mnk[0]), 300, 63);
}

/* Static shapes: sizes fold to constants; several matmuls (f32 and f64) in
 * one graph share one module, so the template is linked once and both
 * element types' entries come from that one link. */
Test(gemm, static_shapes_one_module) {
  static const int mnk[][3] = {{1, 1, 1},     {7, 33, 65},   {257, 129, 100}, {64, 64, 64},
                               {100, 1, 257}, {1, 257, 129}, {3, 300, 17},    {65, 63, 513},
                               {6, 32, 256},  {12, 64, 0},   {0, 16, 5},      {7, 300, 33},
                               {65, 513, 20}, {6, 2100, 5},  {4, 257, 3},
                               /* small M, N over one 4096-column chunk */
                               {2, 4100, 9},  {1, 8209, 6}};
  int n = (int)(sizeof mnk / sizeof mnk[0]);
  for (int d = 0; d < 2; d++) {
    gt *t = gt_new("gemm_static", NULL);
    for (int i = 0; i < n; i++) {
      const char *dt = (i + d) % 2 ? "f64" : "f32";
      char sa[32], sb[32], so[32];
      snprintf(sa, sizeof sa, "%d, %d", mnk[i][0], mnk[i][2]);
      snprintf(sb, sizeof sb, "%d, %d", mnk[i][2], mnk[i][1]);
      snprintf(so, sizeof so, "%d, %d", mnk[i][0], mnk[i][1]);
      int a = gt_in(t, dt, sa), b = gt_in(t, dt, sb);
      gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, dt, so));
    }
    oracle_case c = {.label = "static", .mlir = gt_finish(t), .seed = 64 + (unsigned)d,
                     .atol = 1e-6 * 513, .gen_default = gen_uniform(-1, 1)};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* Batch dims broadcast like numpy; the template is called once per batch. */
Test(gemm, batched_broadcast) {
  static const char *cases[][3] = {
      {"b, m, k", "k, n", "b, m, n"},
      {"1, m, k", "b, k, n", "b, m, n"},
      {"b, 1, m, k", "3, k, n", "b, 3, m, n"},
      {"b, m, k", "b, k, n", "b, m, n"},
  };
  for (int d = 0; d < 2; d++) {
    const char *dt = d ? "f64" : "f32";
    gt *t = gt_new("gemm_batched", "b, m, n, k");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
      int a = gt_in(t, dt, cases[i][0]), b = gt_in(t, dt, cases[i][1]);
      gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, dt, cases[i][2]));
    }
    oracle_case c = {.label = dt, .mlir = gt_finish(t),
                     .bindings = "b=1,m=7,n=33,k=17;b=2,m=17,n=65,k=31;b=3,m=1,n=16,k=100;"
                                 "b=0,m=5,n=5,k=5;b=2,m=0,n=3,k=4;b=2,m=3,n=4,k=0",
                     .seed = 66, .atol = (d ? 1e-15 : 1e-6) * 100,
                     .gen_default = gen_uniform(-1, 1)};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
  /* static batch, broadcast both ways */
  gt *t = gt_new("gemm_batched_static", NULL);
  int a = gt_in(t, "f32", "2, 1, 19, 33"), b = gt_in(t, "f32", "3, 33, 40");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, "f32", "2, 3, 19, 40"));
  oracle_case c = {.label = "static batch", .mlir = gt_finish(t), .seed = 67, .atol = 1e-6 * 33,
                   .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* NaN / inf reach the same outputs on both paths (packed and small-M);
 * zero padding of partial tiles must not leak NaN (0 * inf) into C. */
Test(gemm, special_values) {
  gt *t = gt_new("gemm_special", "m, n, k");
  int a = gt_in(t, "f32", "m, k"), b = gt_in(t, "f32", "k, n");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, "f32", "m, n"));
  oracle_case c = {.label = "special", .mlir = gt_finish(t),
                   .bindings = "m=2,n=7,k=5;m=7,n=33,k=9;m=13,n=35,k=20", .seed = 68,
                   .atol = 1e-6 * 20, .gen_default = gen_naninf(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(gemm, big_512) {
  gt *t = gt_new("gemm_big", NULL);
  int a = gt_in(t, "f32", "512, 512"), b = gt_in(t, "f32", "512, 512");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, "f32", "512, 512"));
  oracle_case c = {.label = "512", .mlir = gt_finish(t), .seed = 69, .atol = 1e-6 * 512,
                   .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* The optimized IR of the (last) mo.matmul kernel of graph text, malloc'd. */
static char *matmul_ir(jit_engine *e, const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d: %s", d.line, d.col, d.msg);
  int node = -1;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i] && g->nodes[i]->op == IR_OP_MATMUL) node = i;
  cr_assert(node >= 0, "no mo.matmul in the graph");
  char err[1024] = "";
  char *ir = jit_node_llvm_ir(e, g, node, err, sizeof err);
  cr_assert_not_null(ir, "%s", err);
  ir_graph_free(g);
  return ir;
}

/* The f32 kernel is the template's explicit vector code (llvm.fma on whole
 * vectors of the host's width), not the naive loop (llvm.fmuladd). */
Test(gemm, kernel_uses_template_vectors) {
  char err[1024] = "";
  jit_engine *e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(e, "%s", err);
  const char *text = "mo.graph @g(%a: !mo.tensor<[64, 64], f32>, %b: !mo.tensor<[64, 64], f32>)"
                     " -> (!mo.tensor<[64, 64], f32>) {\n"
                     "  %c = mo.matmul(%a, %b) : (!mo.tensor<[64, 64], f32>, "
                     "!mo.tensor<[64, 64], f32>) -> !mo.tensor<[64, 64], f32>\n"
                     "  mo.output %c : !mo.tensor<[64, 64], f32>\n}\n";
  char *ir = matmul_ir(e, text);
  const char *target = jit_engine_target(e);
  const char *want = strstr(target, "+avx512f") ? "llvm.fma.v16f32" : "llvm.fma.v8f32";
  cr_expect(strstr(ir, want) != NULL, "no %s in the kernel's IR", want);
  cr_expect(strstr(ir, "llvm.fmuladd") == NULL, "the naive loop's llvm.fmuladd is in the IR");
  free(ir);
  jit_engine_free(e);
}

/* ---- every entry of the template, AVX2 ones included ----
 * The engine picks the 16-wide f32 / 8-wide f64 entries on an AVX-512 host,
 * so the 8 / 4-wide ones would go untested there. This links the template
 * into a bare module through jit_template_function (the same code the
 * matmul lowering uses) with the probe function targeting x86-64-v3 (AVX2,
 * no AVX-512) or the host, JITs it without IR optimization and calls each
 * entry directly, with row strides larger than the row lengths, with and
 * without the workspace the entry asks for. */
typedef void (*gemm_f32_fn)(int64_t, int64_t, int64_t, const float *, int64_t, const float *,
                            int64_t, float *, int64_t, float *);
typedef void (*gemm_f64_fn)(int64_t, int64_t, int64_t, const double *, int64_t, const double *,
                            int64_t, double *, int64_t, double *);
typedef int64_t (*gemm_work_fn)(int64_t, int64_t, int64_t);

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

/* n elements (f32 or f64) at p, seeded values in [-1, 1] in steps of 1e-3. */
static void fill_unit(char *p, int64_t n, bool f64, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) {
    double v = (double)(lcg(s) % 2001) / 1000.0 - 1.0;
    if (f64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
  }
}

/* C (M x N, row stride ldc, NaN-filled before the call) against the sums in
 * double of A (row stride lda) times B, B[k, j] at b[k * kst + j * jst]:
 * each element within 1e-6 K (f32) / 1e-15 K (f64), the padding past N
 * untouched. */
static void check_c(const char *what, int64_t M, int64_t N, int64_t K, const char *a,
                    int64_t lda, const char *b, int64_t kst, int64_t jst, const char *c,
                    int64_t ldc, bool f64) {
  double atol = (f64 ? 1e-15 : 1e-6) * (double)(K > 1 ? K : 1);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < ldc; j++) {
      double got = f64 ? ((const double *)c)[i * ldc + j] : ((const float *)c)[i * ldc + j];
      if (j >= N) { /* padding between rows: untouched */
        cr_assert(got != got, "%s: M=%lld N=%lld K=%lld wrote C[%lld, %lld] past N", what,
                  (long long)M, (long long)N, (long long)K, (long long)i, (long long)j);
        continue;
      }
      double want = 0;
      for (int64_t k = 0; k < K; k++)
        want += f64 ? ((const double *)a)[i * lda + k] * ((const double *)b)[k * kst + j * jst]
                    : (double)((const float *)a)[i * lda + k] *
                          (double)((const float *)b)[k * kst + j * jst];
      cr_assert(fabs(got - want) <= atol,
                "%s: M=%lld N=%lld K=%lld C[%lld, %lld] = %.17g, want %.17g", what,
                (long long)M, (long long)N, (long long)K, (long long)i, (long long)j, got, want);
    }
}

static void check_entry(void *fnp, gemm_work_fn workfn, bool f64, const char *what) {
  static const int dims[] = {0, 1, 3, 5, 6, 7, 16, 17, 33, 65, 129, 300};
  int nd = (int)(sizeof dims / sizeof dims[0]);
  uint64_t s = 99;
  for (int t = 0; t < 60; t++) {
    int64_t M = dims[lcg(&s) % (uint64_t)nd], N = dims[lcg(&s) % (uint64_t)nd];
    int64_t K = t == 0 ? 300 : dims[lcg(&s) % (uint64_t)nd]; /* one K over a block */
    int64_t lda = K + 3, ldb = N + 5, ldc = N + 2;
    size_t sz = f64 ? sizeof(double) : sizeof(float);
    if (t == 1 || t == 2) { /* rows of A 4 KiB apart with N <= 512: A is packed
                             * into the workspace (once written past its end) */
      M = 33, N = 300, K = t == 1 ? 300 : 65;
      lda = 4096 / (int64_t)sz, ldb = N + 5, ldc = N + 2;
    }
    char *a = malloc(sz * (size_t)(M * lda + 1)), *b = malloc(sz * (size_t)(K * ldb + 1));
    char *c = malloc(sz * (size_t)(M * ldc + 1));
    cr_assert(a && b && c);
    fill_unit(a, M * lda, f64, &s);
    fill_unit(b, K * ldb, f64, &s);
    memset(c, 0xff, sz * (size_t)(M * ldc + 1)); /* NaN everywhere, padding included */
    /* the workspace it asks for on odd t; none (its stack fallback) on even */
    int64_t need = workfn(M, N, K);
    cr_assert(need >= 0);
    void *work = t % 2 && need > 0 ? malloc(sz * (size_t)need) : NULL;
    if (f64)
      ((gemm_f64_fn)fnp)(M, N, K, (double *)a, lda, (double *)b, ldb, (double *)c, ldc, work);
    else
      ((gemm_f32_fn)fnp)(M, N, K, (float *)a, lda, (float *)b, ldb, (float *)c, ldc, work);
    free(work);
    check_c(what, M, N, K, a, lda, b, ldb, 1, c, ldc, f64);
    free(a);
    free(b);
    free(c);
  }
}

/* The prepacked entry (_pex) against _ex on the same data: B packed by the
 * runtime's packer (src/prepack.c) with the entry's panel width, every M
 * class (small, packed, one or more blocks, N over the workspace's 2048
 * columns), parts 1 and 3 (every part's piece written, nothing else): the
 * same bits as _ex given the workspace it asks for. */
typedef void (*gemm_pex_fn)(int64_t, int64_t, int64_t, const void *, int64_t, const void *,
                            void *, int64_t, int64_t, int64_t, void *, void *);
typedef void (*gemm_ex_fn)(int64_t, int64_t, int64_t, const void *, int64_t, const void *,
                           int64_t, void *, int64_t, void *, int64_t, int64_t, void *, void *);

static void check_pentry(void *exp, void *pexp, gemm_work_fn workfn, bool f64, int64_t nr,
                         const char *what) {
  static const int dims[] = {0, 1, 3, 4, 5, 6, 7, 16, 17, 33, 65, 129, 300, 520};
  int nd = (int)(sizeof dims / sizeof dims[0]);
  uint64_t s = 7;
  gemm_ex_fn ex = (gemm_ex_fn)(uintptr_t)exp;
  gemm_pex_fn pex = (gemm_pex_fn)(uintptr_t)pexp;
  for (int t = 0; t < 50; t++) {
    int64_t M = dims[lcg(&s) % (uint64_t)nd], N = dims[lcg(&s) % (uint64_t)nd];
    int64_t K = t == 0 ? 300 : dims[lcg(&s) % (uint64_t)nd];
    if (t == 1) M = 64, N = 520, K = 300; /* the wide block with the workspace */
    if (t == 2) M = 13, N = 2100, K = 70;  /* two of them */
    /* narrow small M (strands): one vector, two, four with a partial
     * last one (overlapping on _ex, zero lanes on _pex), K < strands */
    if (t == 3) M = 1, N = 16, K = 520;
    if (t == 4) M = 3, N = 30, K = 301;
    if (t == 5) M = 2, N = 8, K = 7;
    if (t == 6) M = 1, N = 17, K = 129;
    int64_t lda = K + 3, ldc = N + 2;
    ir_dtype dt = f64 ? IR_DT_F64 : IR_DT_F32;
    size_t sz = f64 ? sizeof(double) : sizeof(float);
    char *a = malloc(sz * (size_t)(M * lda + 1)), *b = malloc(sz * (size_t)(K * N + 1));
    char *c1 = malloc(sz * (size_t)(M * ldc + 1)), *c2 = malloc(sz * (size_t)(M * ldc + 1));
    size_t pb = rt_prepack_bytes(dt, K, N, nr);
    char *bp = malloc(pb + 64);
    cr_assert(a && b && c1 && c2 && bp);
    fill_unit(a, M * lda, f64, &s);
    fill_unit(b, K * N, f64, &s);
    rt_prepack_pack(b, dt, K, N, nr, false, bp);
    for (int nparts = 1; nparts <= 3; nparts += 2) {
      int64_t need = workfn(M, N, K);
      cr_assert(need >= 0);
      void *w1 = need > 0 ? malloc(sz * (size_t)need) : NULL;
      memset(c1, 0xff, sz * (size_t)(M * ldc + 1));
      memset(c2, 0xff, sz * (size_t)(M * ldc + 1));
      for (int64_t part = 0; part < nparts; part++) {
        ex(M, N, K, a, lda, b, N, c1, ldc, w1, part, nparts, NULL, NULL);
        pex(M, N, K, a, lda, bp, c2, ldc, part, nparts, NULL, NULL);
      }
      free(w1);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < ldc; j++) {
          size_t e = (size_t)(i * ldc + j) * sz;
          bool same = memcmp(c1 + e, c2 + e, sz) == 0;
          double got = f64 ? ((double *)c2)[i * ldc + j] : ((float *)c2)[i * ldc + j];
          if (j >= N) {
            cr_assert(got != got, "%s: M=%lld N=%lld K=%lld wrote C[%lld, %lld] past N", what,
                      (long long)M, (long long)N, (long long)K, (long long)i, (long long)j);
            continue;
          }
          cr_assert(same && got == got,
                    "%s: M=%lld N=%lld K=%lld parts %d: C[%lld, %lld] = %.17g, _ex gave %.17g",
                    what, (long long)M, (long long)N, (long long)K, nparts, (long long)i,
                    (long long)j, got,
                    f64 ? ((double *)c1)[i * ldc + j] : ((float *)c1)[i * ldc + j]);
        }
    }
    free(a);
    free(b);
    free(c1);
    free(c2);
    free(bp);
  }
}

/* The transposed-B entry (_tex) on few rows (dot products of rows of A and
 * Bt): every element near the double-precision sum, nothing written past N,
 * and each group of four columns the same bits as those four alone, which
 * take the four-at-once lane sums (hsum4): where K is one vector, the
 * columns in runs of vl share one lane-sum tree (hsumvl) that must add
 * each column's lanes exactly as hsum4 does. */
static void check_tentry(void *texp, bool f64, int64_t vl, const char *what) {
  gemm_ex_fn tex = (gemm_ex_fn)(uintptr_t)texp;
  const int64_t ks[] = {vl - 1, vl, vl + 1, 2 * vl, 3 * vl + 2};
  const int64_t ns[] = {vl + 5, 3 * vl + 7};
  size_t sz = f64 ? sizeof(double) : sizeof(float);
  uint64_t s = 5;
  for (int64_t M = 1; M <= 3; M++)
    for (int ki = 0; ki < 5; ki++)
      for (int ni = 0; ni < 2; ni++) {
        int64_t K = ks[ki], N = ns[ni], lda = K + 1, ldbt = K + 3, ldc = N + 1;
        char *a = malloc(sz * (size_t)(M * lda)), *bt = malloc(sz * (size_t)(N * ldbt));
        char *c = malloc(sz * (size_t)(M * ldc)), *c4 = malloc(sz * (size_t)(M * 4));
        cr_assert(a && bt && c && c4);
        fill_unit(a, M * lda, f64, &s);
        fill_unit(bt, N * ldbt, f64, &s);
        memset(c, 0xff, sz * (size_t)(M * ldc)); /* NaN: padding must stay so */
        tex(M, N, K, a, lda, bt, ldbt, c, ldc, NULL, 0, 1, NULL, NULL);
        char tw[128];
        snprintf(tw, sizeof tw, "%s _tex", what);
        check_c(tw, M, N, K, a, lda, bt, 1, ldbt, c, ldc, f64);
        for (int64_t j = 0; j + 4 <= N; j += 4) {
          tex(M, 4, K, a, lda, bt + (size_t)(j * ldbt) * sz, ldbt, c4, 4, NULL, 0, 1, NULL, NULL);
          for (int64_t i = 0; i < M; i++)
            cr_assert(memcmp(c + (size_t)(i * ldc + j) * sz, c4 + (size_t)(i * 4) * sz,
                             4 * sz) == 0,
                      "%s _tex: M=%lld N=%lld K=%lld columns %lld..%lld differ from the "
                      "same four alone",
                      what, (long long)M, (long long)N, (long long)K, (long long)j,
                      (long long)j + 3);
        }
        free(a);
        free(bt);
        free(c);
        free(c4);
      }
}

static void check_entries(const char *cpu, const char *features) {
  static const char *entries[] = {"kiln_gemm_f32_v16", "kiln_gemm_f32_v8", "kiln_gemm_f64_v8",
                                  "kiln_gemm_f64_v4"};
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("tmpl_probe", ctx);
  char err[512] = "";
  jit_fn f;
  jit_fn_begin(&f, ctx, mod, NULL, NULL, "tmpl_probe", err, sizeof err);
  LLVMAddAttributeAtIndex(
      f.fn, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu)));
  LLVMAddAttributeAtIndex(f.fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(ctx, "target-features", 15, features,
                                                    (unsigned)strlen(features)));
  static const char *suffix[] = {"", "_work", "_ex", "_pex", "_tex"};
  for (int i = 0; i < 4; i++)
    for (int w = 0; w < 5; w++) {
      char name[64];
      snprintf(name, sizeof name, "%s%s", entries[i], suffix[w]);
      LLVMValueRef e = jit_template_function(&f, JIT_TMPL_GEMM, name);
      cr_assert_not_null(e, "%s: %s", name, err);
      LLVMSetLinkage(e, LLVMExternalLinkage); /* so the JIT exports it */
    }
  /* a second lookup finds the linked function instead of linking again */
  cr_assert_eq(jit_template_function(&f, JIT_TMPL_GEMM, entries[0]),
               LLVMGetNamedFunction(mod, entries[0]));
  jit_fn_finish(&f);
  jit_fn_dispose(&f);

  LLVMOrcLLJITRef jit = NULL;
  LLVMErrorRef le = LLVMOrcCreateLLJIT(&jit, LLVMOrcCreateLLJITBuilder());
  cr_assert_null(le, "LLJIT");
  LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(jit));
  LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(jit));
  le = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit),
                                   LLVMOrcCreateNewThreadSafeModule(mod, tsc));
  cr_assert_null(le, "add module");
  LLVMOrcDisposeThreadSafeContext(tsc);
  for (int i = 0; i < 4; i++) {
    LLVMOrcExecutorAddress addr = 0, waddr = 0;
    char wname[64];
    snprintf(wname, sizeof wname, "%s_work", entries[i]);
    le = LLVMOrcLLJITLookup(jit, &addr, entries[i]);
    cr_assert(le == NULL && addr != 0, "lookup %s", entries[i]);
    le = LLVMOrcLLJITLookup(jit, &waddr, wname);
    cr_assert(le == NULL && waddr != 0, "lookup %s", wname);
    char what[96];
    snprintf(what, sizeof what, "%s (%s)", entries[i], cpu);
    bool f64 = strstr(entries[i], "f64") != NULL;
    check_entry((void *)(uintptr_t)addr, (gemm_work_fn)(uintptr_t)waddr, f64, what);
    LLVMOrcExecutorAddress xaddr = 0, paddr = 0;
    char xname[64], pname[64];
    snprintf(xname, sizeof xname, "%s_ex", entries[i]);
    snprintf(pname, sizeof pname, "%s_pex", entries[i]);
    cr_assert(LLVMOrcLLJITLookup(jit, &xaddr, xname) == NULL && xaddr, "lookup %s", xname);
    cr_assert(LLVMOrcLLJITLookup(jit, &paddr, pname) == NULL && paddr, "lookup %s", pname);
    bool wide = strstr(entries[i], "_v16") || strstr(entries[i], "f64_v8");
    check_pentry((void *)(uintptr_t)xaddr, (void *)(uintptr_t)paddr,
                 (gemm_work_fn)(uintptr_t)waddr, f64,
                 jit_gemm_panel_width(wide, f64 ? IR_DT_F64 : IR_DT_F32), what);
    LLVMOrcExecutorAddress taddr = 0;
    char tname[64];
    snprintf(tname, sizeof tname, "%s_tex", entries[i]);
    cr_assert(LLVMOrcLLJITLookup(jit, &taddr, tname) == NULL && taddr, "lookup %s", tname);
    check_tentry((void *)(uintptr_t)taddr, f64, (wide ? 16 : 8) / (f64 ? 2 : 1), what);
  }
  le = LLVMOrcDisposeLLJIT(jit);
  if (le) LLVMConsumeError(le);
}

Test(gemm, every_entry_avx2_target) {
  cr_assert(LLVMInitializeNativeTarget() == 0 && LLVMInitializeNativeAsmPrinter() == 0);
  char *host = LLVMGetHostCPUFeatures();
  bool avx2 = host && strstr(host, "+avx2") && strstr(host, "+fma");
  LLVMDisposeMessage(host);
  if (!avx2) cr_skip_test("host has no AVX2 / FMA");
  check_entries("x86-64-v3", "+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2");
}

Test(gemm, every_entry_host_target) {
  cr_assert(LLVMInitializeNativeTarget() == 0 && LLVMInitializeNativeAsmPrinter() == 0);
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  check_entries(cpu, features);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

/* ---- the prebuilt GEMM (jit/template.h) ---- */

Test(gemm, symbolic_kernel_calls_the_prebuilt_entry) {
  char err[1024] = "";
  jit_engine *e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(e, "%s", err);
  const char *pre = jit_engine_prebuilt(e);
  if (!pre) {
    /* an x86-64 build has it for every host at x86-64-v3 or v4 */
    const char *feat = jit_engine_features(e);
    bool v3 = strncmp(jit_engine_triple(e), "x86_64", 6) == 0 && jit_features_have(feat, "avx2") &&
              jit_features_have(feat, "fma") && jit_features_have(feat, "bmi2") &&
              jit_features_have(feat, "movbe") && jit_features_have(feat, "lzcnt");
    bool v4 = v3 && jit_features_have(feat, "avx512f") && jit_features_have(feat, "avx512bw") &&
              jit_features_have(feat, "avx512dq") && jit_features_have(feat, "avx512vl") &&
              jit_features_have(feat, "avx512cd");
    bool expected = v4 || (v3 && !jit_features_have(feat, "avx512f"));
    jit_engine_free(e);
    cr_assert(!expected, "an x86-64-%s host, but the engine loaded no prebuilt GEMM", v4 ? "v4" : "v3");
    cr_skip_test("no prebuilt GEMM for this host (not x86-64-v3 or v4)");
  }
  cr_expect(strstr(jit_engine_options(e), "prebuilt-gemm=") != NULL, "options: %s",
            jit_engine_options(e));
  gt *t = gt_new("gemm_sym", "m, n, k");
  char *sym = matmul_ir(e, sym_text(t, "f32"));
  cr_expect(strstr(sym, pre) != NULL, "the symbolic kernel does not call %s...", pre);
  cr_expect(strstr(sym, "llvm.fma.v") == NULL, "the symbolic kernel compiled the template");
  gt *ts = gt_new("gemm_static", NULL);
  int a = gt_in(ts, "f32", "64, 64"), b = gt_in(ts, "f32", "64, 64");
  gt_out(ts, gt_op2(ts, "mo.matmul", NULL, a, b, "f32", "64, 64"));
  char *stat = matmul_ir(e, gt_finish(ts));
  cr_expect(strstr(stat, pre) == NULL, "a static GEMM calls the prebuilt entry");
  free(sym);
  free(stat);
  gt_free(t);
  gt_free(ts);
  jit_engine_free(e);
}

/* One matmul, of whole tensors or of a weight, the result through relu (a
 * fused epilogue): dims "m, k" / "k, n" symbolic or numbers. */
static char *epi_text(const char *am, const char *bk, const char *cm, bool weight) {
  char *s = malloc(2048);
  cr_assert_not_null(s);
  snprintf(s, 2048,
           "mo.graph @g%s(%%a: !mo.tensor<[%s], f32>%s%s%s) -> (!mo.tensor<[%s], f32>) {\n"
           "%s%s%s"
           "  %%c = mo.matmul(%%a, %%b) : (!mo.tensor<[%s], f32>, !mo.tensor<[%s], f32>) -> "
           "!mo.tensor<[%s], f32>\n"
           "  %%r = mo.relu(%%c) : !mo.tensor<[%s], f32>\n"
           "  mo.output %%r : !mo.tensor<[%s], f32>\n}\n",
           strchr(am, 'm') ? (strchr(am, 'k') ? "<m, n, k>" : "<m>") : "", am, weight ? "" : ", %b: !mo.tensor<[",
           weight ? "" : bk, weight ? "" : "], f32>", cm, weight ? "  %b = mo.constant.external "
           "{name = \"w\"} : !mo.tensor<[" : "", weight ? bk : "", weight ? "], f32>\n" : "",
           am, bk, cm, cm, cm);
  return s;
}

/* out = model(text)(a, b), b a weight when `weight` (bound first). */
static float *run_epi(kiln_context *ctx, const char *text, bool weight, int64_t M, int64_t N,
                      int64_t K, float *a, float *b) {
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = kiln_graph_parse(text, strlen(text), "prebuilt", st);
  cr_assert_not_null(kg, "%s\n%s", kiln_status_message(st), text);
  kiln_model *m = kiln_model_compile(ctx, kg, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  kiln_tensor *ta = kiln_tensor_borrow(KILN_FLOAT32, 2, sa, a, st);
  kiln_tensor *tb = kiln_tensor_borrow(KILN_FLOAT32, 2, sb, b, st);
  kiln_tensor *tc = kiln_tensor_new(KILN_FLOAT32, 2, sc, st);
  cr_assert(ta && tb && tc, "%s", kiln_status_message(st));
  if (weight) cr_assert_eq(kiln_model_bind_weight(m, "w", tb, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *ins[2] = {ta, tb};
  cr_assert_eq(kiln_model_execute(m, ins, weight ? 1 : 2, &tc, 1, st), 0, "%s",
               kiln_status_message(st));
  float *out = malloc(sizeof *out * (size_t)(M * N + 1));
  cr_assert_not_null(out);
  memcpy(out, kiln_tensor_data(tc), sizeof *out * (size_t)(M * N));
  kiln_tensor_free(ta);
  kiln_tensor_free(tb);
  kiln_tensor_free(tc);
  kiln_model_free(m);
  kiln_graph_free(kg);
  kiln_status_free(st);
  return out;
}

/* The generic model (symbolic sizes: the prebuilt entries, specialization
 * off) and the static one (the template inlined) on the same data: equal
 * bit for bit, A and B given and B a (prepacked) weight, with an epilogue,
 * A read in place and packed (N over 512), one-vector tiles. */
Test(gemm, prebuilt_and_inlined_give_the_same_bits) {
  cr_assert_eq(setenv("KILN_SPECIALIZE", "off", 1), 0);
  static const int mnk[][3] = {{7, 33, 65},   {64, 10, 512}, {65, 63, 513},
                               {130, 600, 257}, {9, 1000, 40}, {33, 96, 300},
                               {20, 300, 700}};
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  oracle_gen gen = gen_uniform(-1, 1);
  for (int w = 0; w < 2; w++)
    for (size_t i = 0; i < sizeof mnk / sizeof mnk[0]; i++) {
      int64_t M = mnk[i][0], N = mnk[i][1], K = mnk[i][2];
      float *a = malloc(sizeof *a * (size_t)(M * K)), *b = malloc(sizeof *b * (size_t)(K * N));
      cr_assert(a && b);
      oracle_fill(a, KILN_FLOAT32, M * K, &gen, 80 + (unsigned)i);
      oracle_fill(b, KILN_FLOAT32, K * N, &gen, 90 + (unsigned)i);
      char am[32], bk[32], cm[32];
      snprintf(am, sizeof am, "%lld, %lld", (long long)M, (long long)K);
      snprintf(bk, sizeof bk, "%lld, %lld", (long long)K, (long long)N);
      snprintf(cm, sizeof cm, "%lld, %lld", (long long)M, (long long)N);
      char sa[32], sc[32]; /* a weight's shape is static: only M symbolic then */
      snprintf(sa, sizeof sa, "m, %lld", (long long)K);
      snprintf(sc, sizeof sc, "m, %lld", (long long)N);
      char *sym = w ? epi_text(sa, bk, sc, true) : epi_text("m, k", "k, n", "m, n", false);
      char *stat = epi_text(am, bk, cm, w);
      float *o1 = run_epi(ctx, sym, w, M, N, K, a, b);
      float *o2 = run_epi(ctx, stat, w, M, N, K, a, b);
      cr_expect(memcmp(o1, o2, sizeof *o1 * (size_t)(M * N)) == 0,
                "%s M=%lld N=%lld K=%lld: the generic and static models differ", w ? "weight" : "input",
                (long long)M, (long long)N, (long long)K);
      free(sym);
      free(stat);
      free(o1);
      free(o2);
      free(a);
      free(b);
    }
  kiln_context_free(ctx);
  kiln_status_free(st);
}
