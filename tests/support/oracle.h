/* oracle.h - JIT vs reference interpreter, on the same random data.
 *
 * oracle_run parses one graph text twice: through the public API
 * (kiln_graph_parse, kiln_model_compile, kiln_model_execute: the JIT) and
 * through ir_parse + ir_interp_run (the oracle). For every dim binding it
 * makes seeded random inputs (shapes from the binding) and weights (every
 * mo.constant.external, bound with kiln_model_bind_weight and handed to the
 * interpreter through its weight callback), runs both and compares every
 * output: dtype, rank and shape exactly; integers and bool bit for bit;
 * floats within |jit - oracle| <= atol + rtol * |oracle|, NaN only against
 * NaN, inf only against the same inf, and with rtol = atol = 0 exactly,
 * sign of zero included; storage-only dtypes (f16, si8, ...) bit for bit
 * (NaN payloads aside).
 * Each binding is executed twice by the JIT: once with outputs kiln
 * allocates, once into caller tensors pre-filled with a garbage byte pattern
 * (a kernel that leaves elements unwritten or accumulates into its output
 * fails the second run).
 * With expect_error set the case passes only when both sides fail on every
 * binding; the two messages and the JIT's status code are kept in the
 * report so the test can check them.
 * Nothing here aborts: every failure becomes a message in the report. */
#ifndef KILN_TESTS_ORACLE_H
#define KILN_TESTS_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kiln/kiln.h>

#define ORACLE_MAX_INPUTS 64

typedef enum oracle_gen_kind {
  ORACLE_GEN_DEFAULT = 0, /* floats uniform [-3, 3]; ints uniform [-20, 20]; bool 0 / 1 */
  ORACLE_GEN_UNIFORM,     /* floats uniform [lo, hi]; ints uniform integers [lo, hi] */
  ORACLE_GEN_QUANT,       /* floats: multiples of 1/8 in [lo, hi] (exact in every
                             float type, so ties and equal values occur) */
  ORACLE_GEN_HALVES,      /* floats: k / 2 for integers k in [2 lo, 2 hi] (round ties) */
  ORACLE_GEN_SPECIAL,     /* floats: half of the elements from {NaN, +-inf, +-0,
                             +-huge, +-subnormal, +-max, +-1, 0.5, 2.5}, the rest
                             uniform [lo, hi] */
  ORACLE_GEN_NANINF,      /* floats: one element in 8 from {NaN, +inf, -inf}, the
                             rest uniform [lo, hi] (for sums, where huge finite
                             values would only measure cancellation) */
  ORACLE_GEN_CONST,       /* every element = lo */
  ORACLE_GEN_IOTA,        /* element i = lo + i (ints and floats) */
  ORACLE_GEN_INTEGERS,    /* floats with integer values in [lo, hi]; ints as UNIFORM */
} oracle_gen_kind;

typedef struct oracle_gen {
  oracle_gen_kind kind;
  double lo, hi;
  double min_abs; /* resample values with |x| < min_abs (nonzero divisors) */
} oracle_gen;

/* Shorthands for the table entries. */
oracle_gen gen_uniform(double lo, double hi);
oracle_gen gen_nonzero(double lo, double hi, double min_abs);
oracle_gen gen_quant(double lo, double hi);
oracle_gen gen_halves(double lo, double hi);
oracle_gen gen_special(double lo, double hi);
oracle_gen gen_naninf(double lo, double hi);
oracle_gen gen_const(double v);
oracle_gen gen_iota(double start);
oracle_gen gen_integers(double lo, double hi);

/* Fill n elements of dtype dt at data from generator g, seeded (the same
 * seed gives the same values). */
void oracle_fill(void *data, kiln_dtype dt, int64_t n, const oracle_gen *g, uint64_t seed);

typedef struct oracle_case {
  const char *label;       /* names the case in messages: "exp f32" */
  const char *mlir;        /* graph text */
  const char *bindings;    /* "n=3,m=2;n=0,m=5": ';' separates bindings; NULL or
                              "" for one run of a graph without symbols */
  unsigned seed;
  double rtol, atol;       /* for float outputs */
  const oracle_gen *gens;  /* per graph input (by position), may be NULL */
  int ngens;
  oracle_gen gen_default;  /* for inputs without an entry in gens */
  oracle_gen wgen;         /* for weights */
  bool expect_error;       /* pass only when JIT and oracle both fail */
  bool require_finite;     /* also fail when an f32 / f64 output holds NaN or inf
                              (numerical-stability cases, where both sides
                              overflowing alike would otherwise pass) */
} oracle_case;

typedef struct oracle_report {
  char msg[16384];         /* what went wrong (empty on success) */
  /* from the last binding run */
  bool jit_failed, oracle_failed;
  kiln_code jit_code;
  char jit_msg[1024], oracle_msg[1024];
  int compiles;            /* 1 when the model compiled */
} oracle_report;

/* 0 when JIT and oracle agree on every binding (or, with expect_error, both
 * fail on every binding); -1 with r->msg saying where and why. */
int oracle_run(const oracle_case *c, oracle_report *r);

/* Compare two dense buffers of one dtype and shape with the rules above;
 * 0, or -1 with "<what>, dtype shape): k of n elements differ; first at ..."
 * appended to r->msg. (Used by oracle_run; exposed for its self-test.) */
int oracle_compare(oracle_report *r, const char *what, kiln_dtype dt, int rank,
                   const int64_t *shape, const void *jit, const void *oracle, double rtol,
                   double atol);

/* Known answers: a graph without inputs (its operands are mo.constant)
 * whose outputs are given here, computed by hand from seed 002's semantics.
 * Both the JIT and the oracle must produce them (so a semantic slip shared
 * by both is caught too). 0, or -1 with the report saying which side
 * differs where. */
typedef struct oracle_expect {
  kiln_dtype dtype;
  int rank;
  int64_t shape[8];
  const void *data;
} oracle_expect;
int oracle_known(const char *label, const char *mlir, const oracle_expect *exp, int nexp,
                 double rtol, double atol, oracle_report *r);

/* Shorthands for known-answer tests: literal arrays for oracle_expect.data;
 * a mo.constant line of graph text (%name, its shape as in types "2, 3",
 * its dense type's dims as "2x3x"); oracle_known of one output compared
 * exactly, as a test expectation. */
#define ORACLE_F32(...) ((const float[]){__VA_ARGS__})
#define ORACLE_I64(...) ((const int64_t[]){__VA_ARGS__})
#define ORACLE_CONST(name, dt, shape, dense, vals)                                            \
  "  %" name " = mo.constant {value = #M.dense_array<" vals "> : tensor<" dense dt ">} : "     \
  "!mo.tensor<[" shape "], " dt ">\n"
void oracle_expect_known(const char *label, const char *mlir, oracle_expect e);
/* Run c expecting the JIT and the oracle both to fail (c->expect_error is
 * set), each message naming `word`; test expectations otherwise. */
void oracle_expect_both_fail(oracle_case *c, const char *word);

/* Parse and compile only: 0 when both the public parse and kiln_model_compile
 * succeed, else -1 with the status code and message in *code / msg (msg may
 * be NULL). Used for "rejected with a clear error" cases. */
int oracle_compile_only(const char *mlir, kiln_code *code, char *msg, size_t cap);
/* 0 when ir_parse accepts the text, else -1 with the diagnostic in msg. */
int oracle_ir_parse_only(const char *mlir, char *msg, size_t cap);

/* Float tolerances used throughout, with the reasons in oracle.c:
 * exact IEEE ops (one correctly rounded operation per element) */
#define TOL_EXACT 0.0
/* f32 / f64 arithmetic: a few ulps (one op, but the JIT may contract or
 * reorder a fused formula differently from the oracle) */
#define TOL_F32_ARITH 2e-6
#define TOL_F64_ARITH 1e-12
/* libm transcendentals: the JIT may call a different libm entry point or a
 * vectorized polynomial; both are within a few ulps of the true value */
#define TOL_F32_TRANS 1e-5
#define TOL_F64_TRANS 1e-12

/* The Criterion assertion every op test uses: runs the case and fails the
 * test with the report (case label, binding, output, first differing index,
 * both values, the graph text). */
#define ORACLE_ASSERT(casep)                              \
  do {                                                    \
    oracle_report *r_ = malloc(sizeof(oracle_report));    \
    cr_assert(r_ != NULL, "out of memory");               \
    int rc_ = oracle_run((casep), r_);                    \
    cr_expect(rc_ == 0, "%s", r_->msg);                   \
    free(r_);                                             \
  } while (0)

/* The assertion for a graph that must be refused: ir_parse and kiln's
 * compile both fail, with a parse or verify error, and both messages
 * mention `what` (a string). */
#define EXPECT_REJECTED(mlir, what)                                                           \
  do {                                                                                        \
    char msg_[1024];                                                                          \
    kiln_code code_;                                                                          \
    cr_expect_neq(oracle_ir_parse_only((mlir), msg_, sizeof msg_), 0, "ir_parse accepted %s", \
                  (what));                                                                    \
    cr_expect(strstr(msg_, (what)) != NULL, "ir_parse message '%s' does not mention '%s'",    \
              msg_, (what));                                                                  \
    cr_expect_neq(oracle_compile_only((mlir), &code_, msg_, sizeof msg_), 0,                  \
                  "kiln accepted %s", (what));                                                \
    cr_expect(code_ == KILN_ERR_VERIFY || code_ == KILN_ERR_PARSE, "code %s: %s",             \
              kiln_code_name(code_), msg_);                                                   \
    cr_expect(strstr(msg_, (what)) != NULL, "kiln message '%s' does not mention '%s'", msg_,  \
              (what));                                                                        \
  } while (0)

#endif
