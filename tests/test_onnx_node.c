/* test_onnx_node.c - ONNX's backend node tests (Debian libonnx-testdata)
 * through the importer and the CPU model: every test dir's model.onnx is
 * imported, compiled and run on test_data_set_0's inputs, and the outputs
 * are compared with ONNX's (f32 / f64: rtol 1e-3, atol 1e-5, NaN matches
 * NaN; integers and bools exact). Prints per-op pass / fail / unsupported
 * counts and the ops that block the most tests. Fails when a test named in
 * tests/onnx/expected_pass.txt does not pass (the list may only grow).
 * Skips, saying so, when the test data is not installed.
 * KILN_ONNX_PASS_OUT=FILE writes the names of the passing tests (to grow the
 * list); KILN_ONNX_NODE_FILTER=SUBSTR runs only matching tests. Under
 * AddressSanitizer only the expected passes run (the rest adds time, not
 * coverage of kiln's own memory handling). KILN_TEST_DEVICE=cuda:0 runs the
 * models there (tests/support/under_test.h); the expected list is the CPU's. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"
#include "src/onnx/onnx_io.h"
#include "src/rt.h"
#include "support/under_test.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node"
#define EXPECTED KILN_SOURCE_DIR "/tests/onnx/expected_pass.txt"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

typedef enum { R_PASS, R_FAIL, R_UNSUP } result;

typedef struct op_stat {
  char name[64];
  int pass, fail, unsup, blocked; /* blocked: tests this op alone keeps from running */
} op_stat;

static op_stat ops[512];
static int nops;

static op_stat *stat_of(const char *name) {
  for (int i = 0; i < nops; i++)
    if (strcmp(ops[i].name, name) == 0) return &ops[i];
  if (nops == 512) return &ops[511];
  snprintf(ops[nops].name, sizeof ops[nops].name, "%.63s", name);
  return &ops[nops++];
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool close_enough(const kiln_tensor *got, const kiln_tensor *want, char *why, size_t cap) {
  if (got->dtype != want->dtype) {
    snprintf(why, cap, "dtype %s, expected %s", kiln_dtype_name(got->dtype),
             kiln_dtype_name(want->dtype));
    return false;
  }
  bool same_shape = got->rank == want->rank;
  for (int i = 0; same_shape && i < got->rank; i++) same_shape = got->shape[i] == want->shape[i];
  if (!same_shape) {
    snprintf(why, cap, "shape differs (rank %d vs %d)", got->rank, want->rank);
    return false;
  }
  for (int64_t i = 0; i < got->numel; i++) {
    double a, b;
    if (got->dtype == KILN_FLOAT32) {
      a = ((const float *)got->data)[i];
      b = ((const float *)want->data)[i];
    } else if (got->dtype == KILN_FLOAT64) {
      a = ((const double *)got->data)[i];
      b = ((const double *)want->data)[i];
    } else {
      size_t es = kiln_dtype_size(got->dtype);
      if (memcmp((const char *)got->data + i * (int64_t)es, (const char *)want->data + i * (int64_t)es,
                 es) != 0) {
        snprintf(why, cap, "element %lld differs", (long long)i);
        return false;
      }
      continue;
    }
    if (isnan(a) && isnan(b)) continue;
    if (a == b) continue; /* infinities */
    if (!(fabs(a - b) <= 1e-5 + 1e-3 * fabs(b))) {
      snprintf(why, cap, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
      return false;
    }
  }
  return true;
}

/* ONNX's bf16 test data is stored as uint16 (the same bits): read as the
 * bf16 the model declares. */
static void bf16_from_uint16(kiln_tensor *t, kiln_dtype declared) {
  if (t && declared == KILN_BFLOAT16 && t->dtype == KILN_UINT16) t->dtype = KILN_BFLOAT16;
}

/* Run one test dir; *why says what failed. */
static result run_one(kiln_context *ctx, const char *dir, char *why, size_t cap) {
  char path[1024];
  snprintf(path, sizeof path, "%.900s/model.onnx", dir);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_file(path, st);
  result r = R_FAIL;
  kiln_model *m = NULL;
  kiln_tensor *ins[64] = {0}, *outs[64] = {0}, *want[64] = {0};
  int nin = 0, nout = 0;
  if (!g) {
    r = kiln_status_code(st) == KILN_ERR_UNSUPPORTED ? R_UNSUP : R_FAIL;
    snprintf(why, cap, "import: %s", kiln_status_message(st));
    goto done;
  }
  if (!(m = under_test_compile(ctx, g, st))) {
    snprintf(why, cap, "compile: %s", kiln_status_message(st));
    goto done;
  }
  nin = kiln_model_num_inputs(m);
  nout = kiln_model_num_outputs(m);
  if (nin > 64 || nout > 64) goto done;
  for (int i = 0; i < nin; i++) {
    snprintf(path, sizeof path, "%.900s/test_data_set_0/input_%d.pb", dir, i);
    if (!(ins[i] = rt_onnx_tensor_read(path, NULL, st))) {
      r = kiln_status_code(st) == KILN_ERR_UNSUPPORTED ? R_UNSUP : R_FAIL;
      snprintf(why, cap, "input %d: %s", i, kiln_status_message(st));
      goto done;
    }
    bf16_from_uint16(ins[i], kiln_model_input_dtype(m, i));
  }
  for (int i = 0; i < nout; i++) {
    snprintf(path, sizeof path, "%.900s/test_data_set_0/output_%d.pb", dir, i);
    if (!(want[i] = rt_onnx_tensor_read(path, NULL, st))) {
      r = kiln_status_code(st) == KILN_ERR_UNSUPPORTED ? R_UNSUP : R_FAIL;
      snprintf(why, cap, "output %d: %s", i, kiln_status_message(st));
      goto done;
    }
    bf16_from_uint16(want[i], kiln_model_output_dtype(m, i));
  }
  if (kiln_model_execute(m, ins, nin, outs, nout, st) < 0) {
    snprintf(why, cap, "execute: %s", kiln_status_message(st));
    goto done;
  }
  r = R_PASS;
  for (int i = 0; i < nout && r == R_PASS; i++) {
    char w[256];
    if (!close_enough(outs[i], want[i], w, sizeof w)) {
      snprintf(why, cap, "output %d: %s", i, w);
      r = R_FAIL;
    }
  }
done:
  for (int i = 0; i < 64; i++) {
    kiln_tensor_free(ins[i]);
    kiln_tensor_free(outs[i]);
    kiln_tensor_free(want[i]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
  return r;
}

/* The op types of a test's model (Constant aside), for the per-op table. */
static int model_ops(const char *dir, char names[][64], int max) {
  char path[1024];
  snprintf(path, sizeof path, "%.900s/model.onnx", dir);
  size_t len = 0;
  char *buf = rt_read_file(path, NULL, &len, NULL);
  if (!buf) return 0;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
  free(buf);
  int n = 0;
  for (size_t i = 0; mp && mp->graph && i < mp->graph->n_node; i++) {
    const char *op = mp->graph->node[i]->op_type;
    if (!op || (strcmp(op, "Constant") == 0 && mp->graph->n_node > 1)) continue;
    bool seen = false;
    for (int k = 0; k < n; k++) seen |= strcmp(names[k], op) == 0;
    if (!seen && n < max) snprintf(names[n++], 64, "%.63s", op);
  }
  if (mp) onnx__model_proto__free_unpacked(mp, NULL);
  return n;
}

static char **read_lines(const char *path, int *n) {
  *n = 0;
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char **v = NULL, line[512];
  int cap = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#') continue;
    if (*n == cap) v = realloc(v, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *v);
    v[(*n)++] = strdup(line);
  }
  fclose(f);
  return v;
}

static bool listed(char **v, int n, const char *name) {
  return n > 0 && bsearch(&name, v, (size_t)n, sizeof *v, cmp_str) != NULL;
}

static int cmp_blocked(const void *a, const void *b) {
  const op_stat *x = a, *y = b;
  return y->blocked - x->blocked;
}

Test(onnx_node, conformance, .timeout = 900) {
  DIR *d = opendir(NODE_DIR);
  if (!d) cr_skip_test("ONNX node test data not installed (%s; Debian: libonnx-testdata)", NODE_DIR);
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "test_", 5) != 0) continue;
    if (n == cap) names = realloc(names, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  int nexp = 0;
  char **exp = read_lines(EXPECTED, &nexp);
  if (exp) qsort(exp, (size_t)nexp, sizeof *exp, cmp_str);
  const char *filter = getenv("KILN_ONNX_NODE_FILTER");
  const char *pass_out = getenv("KILN_ONNX_PASS_OUT");
  FILE *pf = pass_out ? fopen(pass_out, "w") : NULL;
  kiln_context *ctx = kiln_context_new(NULL);
  cr_assert(ctx);
  int npass = 0, nfail = 0, nunsup = 0, regressions = 0, ran = 0;
  for (int i = 0; i < n; i++) {
    if (filter && !strstr(names[i], filter)) continue;
    if (UNDER_ASAN && !filter && !listed(exp, nexp, names[i])) continue;
    char dir[1024], why[2048] = "";
    snprintf(dir, sizeof dir, "%s/%.900s", NODE_DIR, names[i]);
    result r = run_one(ctx, dir, why, sizeof why);
    ran++;
    char opn[16][64];
    int k = model_ops(dir, opn, 16);
    for (int j = 0; j < k; j++) {
      op_stat *s = stat_of(opn[j]);
      if (r == R_PASS) s->pass++;
      else if (r == R_FAIL) s->fail++;
      else s->unsup++;
      /* an op named in the unsupported list blocks this test */
      char pat[80];
      snprintf(pat, sizeof pat, "\n  %.63s (", opn[j]);
      if (r == R_UNSUP && strstr(why, pat)) s->blocked++;
    }
    if (r == R_PASS) {
      npass++;
      if (pf) fprintf(pf, "%s\n", names[i]);
    } else {
      r == R_FAIL ? nfail++ : nunsup++;
      if (listed(exp, nexp, names[i])) {
        regressions++;
        fprintf(stderr, "REGRESSION %s: %s\n", names[i], why);
      } else if (getenv("KILN_ONNX_VERBOSE") || r == R_FAIL) {
        char *nl = strchr(why, '\n');
        fprintf(stderr, "%s %s: %.*s\n", r == R_FAIL ? "fail" : "unsupported", names[i],
                nl ? (int)(nl - why) : (int)strlen(why), why);
      }
    }
  }
  if (pf) fclose(pf);
  fprintf(stderr, "\nONNX node tests: %d run, %d pass, %d fail, %d unsupported (expected passes: %d)\n",
          ran, npass, nfail, nunsup, nexp);
  fprintf(stderr, "per op (pass / fail / unsupported):\n");
  for (int i = 0; i < nops; i++)
    if (ops[i].pass || ops[i].fail)
      fprintf(stderr, "  %-24s %3d / %3d / %3d\n", ops[i].name, ops[i].pass, ops[i].fail,
              ops[i].unsup);
  qsort(ops, (size_t)nops, sizeof *ops, cmp_blocked);
  fprintf(stderr, "top missing ops (tests blocked):");
  for (int i = 0; i < nops && i < 25 && ops[i].blocked > 0; i++)
    fprintf(stderr, "%s %s %d", i ? "," : "", ops[i].name, ops[i].blocked);
  fprintf(stderr, "\n");
  kiln_context_free(ctx);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  for (int i = 0; i < nexp; i++) free(exp[i]);
  free(exp);
  cr_expect_eq(regressions, 0, "%d test(s) of tests/onnx/expected_pass.txt no longer pass",
               regressions);
}
