/* fuzz_compile.c - libFuzzer target for the compiler: bytes that parse as an
 * MO graph are compiled by the JIT and executed beside the reference
 * interpreter (tests/support/oracle.h) on seeded random inputs, each symbol
 * of the graph (the canonical text's header: `mo.graph @g<n, m>`) bound to 2
 * and then 0. A
 * crash or sanitizer report, one side failing where the other runs, or
 * different shapes / dtypes / integers / floats beyond the oracle's
 * tolerance (loose here: mutated graphs chain ops freely) is a finding.
 * Graphs of more than 64 KiB of text or 2^16 elements per value are
 * skipped (the fuzzer looks for wrong code, not for slow inputs). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kiln/kiln.h"
#include "tests/support/oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "n=2,m=2;n=0,m=0" for the header's symbols, or ";" when it has none. */
static void bindings(const char *text, char *out, size_t cap) {
  out[0] = 0;
  const char *g = strstr(text, "mo.graph @");
  const char *paren = g ? strchr(g, '(') : NULL;
  const char *lt = g ? strchr(g, '<') : NULL;
  if (!lt || !paren || lt > paren) return;
  const char *gt = strchr(lt, '>');
  if (!gt || gt > paren) return;
  char two[512] = "", zero[512] = "";
  for (const char *p = lt + 1; p < gt;) {
    while (p < gt && (*p == ' ' || *p == ',')) p++;
    const char *s = p;
    while (p < gt && *p != ',' && *p != ' ') p++;
    if (p == s || p - s > 32) continue;
    size_t l2 = strlen(two), l0 = strlen(zero);
    snprintf(two + l2, sizeof two - l2, "%s%.*s=2", l2 ? "," : "", (int)(p - s), s);
    snprintf(zero + l0, sizeof zero - l0, "%s%.*s=0", l0 ? "," : "", (int)(p - s), s);
  }
  snprintf(out, cap, "%s;%s", two, zero);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, size, "fuzz", st);
  /* no oversized values: every static dim product bounded (symbols are 2) */
  bool small = g != NULL && !strstr(text, "65536") && strlen(text) == size;
  for (const char *p = text; small && (p = strchr(p, '[')); p++) {
    int64_t n = 1;
    for (const char *q = p + 1; *q && *q != ']'; q++)
      if (*q >= '0' && *q <= '9') {
        int64_t v = strtoll(q, (char **)&q, 10);
        n = v > 4096 || n * (v ? v : 1) > 65536 ? 65537 : n * (v ? v : 1);
        q--;
      }
    small = n <= 65536;
  }
  /* a verified graph kiln refuses to compile must say it cannot serve it
   * (a placed graph on the CPU, ...): LLVM failing on it is a finding */
  static kiln_context *ctx;
  if (small && (ctx || (ctx = kiln_context_new(st)))) {
    kiln_model *m = kiln_model_compile(ctx, g, st);
    if (!m && kiln_status_code(st) == KILN_ERR_COMPILE) {
      fprintf(stderr, "fuzz_compile: %s\n", kiln_status_message(st));
      __builtin_trap();
    }
    small = m != NULL;
    kiln_model_free(m);
  }
  /* the canonical text lists every symbol in its header */
  char *canon = small ? kiln_graph_print(g, st) : NULL;
  if (canon) {
    char b[1100];
    bindings(canon, b, sizeof b);
    /* one binding per run, so the report's flags are that binding's */
    for (char *next = b, *one; (one = strsep(&next, ";"));) {
      oracle_case c = {.label = "fuzz", .mlir = canon, .bindings = one, .seed = 1,
                       .rtol = 1e-2, .atol = 1e-2,
                       .gen_default = {ORACLE_GEN_UNIFORM, -1, 1, 0},
                       .wgen = {ORACLE_GEN_UNIFORM, -1, 1, 0}};
      static oracle_report r;
      int rc = oracle_run(&c, &r);
      /* both refusing (a binding the graph's constraints exclude), or kiln
       * saying it cannot serve it, is an answer; anything else is not */
      bool refused = r.jit_failed && (r.oracle_failed || r.jit_code == KILN_ERR_UNSUPPORTED ||
                                      r.jit_code == KILN_ERR_OUT_OF_MEMORY);
      if (rc < 0 && !refused) {
        fprintf(stderr, "fuzz_compile: %s\n", r.msg);
        __builtin_trap();
      }
    }
    free(canon);
  }
  kiln_graph_free(g);
  kiln_status_free(st);
  free(text);
  return 0;
}
