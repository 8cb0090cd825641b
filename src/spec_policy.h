/* spec_policy.h - internal to src/: what the async policy specializes, and
 * whether a specialized variant stays (spec_policy.c; variants.c asks).
 *
 * A service sees many shapes, most of them a few times. Specializing on
 * first sight compiles for shapes that never come back, and a variant is
 * not always faster than the generic kernels. So, per model:
 *   - hot: a binding is specialized once it has been executed `hot` times
 *     within the last RT_SPEC_WINDOW executes of the model (before that its
 *     executes are "cold" and run the generic variant);
 *   - worth: a hot binding whose kernels that a bound shape can speed up
 *     are estimated at under RT_SPEC_MIN_SHARE of its execute's time
 *     (rt_spec_share, spec_worth.c: a roofline of each kernel at the
 *     binding) is not compiled: no variant could noticeably pay for its
 *     compile (an encoder whose GEMMs are > 95% of the time);
 *   - trial: a new variant's first RT_SPEC_TRIAL executes are timed and
 *     compared with the binding's generic executes (the fastest of each:
 *     the least disturbed); a variant not RT_SPEC_GAIN faster is dropped
 *     and its binding is never specialized again. A paired trial (the
 *     runtime's) alternates the binding's executes between the variant and
 *     the generic kernels, RT_SPEC_TRIAL timed executes each, and compares
 *     only those: a bucket's executes before its variant was live ran other
 *     shapes (a growing dim: shorter, cheaper ones, which made a variant
 *     look up to 8% slower than it is), and a variant live from the
 *     bucket's first execute had no generic time at all;
 *   - auto buckets: a symbol with no bucket of the caller's that takes more
 *     than RT_SPEC_AUTO_BUCKET distinct values gets pow2 buckets;
 *   - growth: per symbol, how many executes in a row saw it increase (a
 *     decoder's sequence length). variants.c specializes the next bucket of
 *     a symbol the caller bucketed once its run reaches RT_SPEC_AHEAD_RUN, so
 *     the variant is live when the dim crosses into that bucket;
 *   - bounds: a bucket ends at its symbol's largest value the graph allows
 *     (rt_spec_sym_max), and nothing is planned or specialized past it.
 * The table of bindings is bounded (RT_SPEC_SEEN, least recently seen
 * replaced); it has a lock of its own, never held while compiling. */
#ifndef KILN_SRC_SPEC_POLICY_H
#define KILN_SRC_SPEC_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define RT_SPEC_HOT 3          /* default: executes before a binding is specialized */
#define RT_SPEC_WINDOW 256     /* executes of a model over which a binding's count runs */
#define RT_SPEC_SEEN 64        /* bindings remembered per model */
#define RT_SPEC_TRIAL 5        /* executes of a new variant that are timed */
#define RT_SPEC_GEN_SAMPLES 8  /* generic executes of a binding that are timed at most */
#define RT_SPEC_GAIN 0.97      /* a variant stays when its time <= GAIN x the generic's */
#define RT_SPEC_MIN_SHARE 0.05 /* estimated share of the time in kernels a variant rebuilds,
                                * below which a binding is not specialized */
#define RT_SPEC_AUTO_BUCKET 8  /* distinct values of a symbol before it gets pow2 buckets */
#define RT_SPEC_AHEAD_RUN 8    /* executes in a row a symbol grew before its next bucket is
                                * specialized ahead (random shapes: a run of 8 increases
                                * comes once in 8! = 40320 executes) */

typedef struct rt_spec_policy rt_spec_policy;

/* Where an execute's time goes (rt_spec_policy_timed): slot -1 = nowhere. */
typedef struct rt_spec_ticket {
  int slot;
  uint32_t gen;
  bool variant; /* it ran on the binding's variant (else the generic) */
} rt_spec_ticket;

typedef enum rt_spec_verdict {
  RT_SPEC_COLD,    /* not hot yet: run generic, queue nothing */
  RT_SPEC_WEIGH,   /* hot for the first time, no variant: the caller drops it
                    * (rt_spec_policy_drop) when weighed ahead and not worth it, else
                    * queues it and its compile weighs it first (rt_spec_share) */
  RT_SPEC_QUEUE,   /* hot, weighed, no variant: queue its compile */
  RT_SPEC_RUN,     /* a variant exists: run it */
  RT_SPEC_PAIR,    /* a variant exists, on a paired trial: run the generic kernels, timed */
  RT_SPEC_DROPPED, /* its variant did not pay: generic, for good */
} rt_spec_verdict;

/* Test hook (rt_spec_set_test_trial): how trials end. */
typedef enum rt_spec_trial_mode {
  RT_SPEC_TRIAL_MEASURE = 0,
  RT_SPEC_TRIAL_KEEP = 1, /* every variant stays */
  RT_SPEC_TRIAL_DROP = 2, /* every variant is dropped at the end of its trial */
} rt_spec_trial_mode;

/* A policy for keys of nsyms values; NULL on OOM. */
rt_spec_policy *rt_spec_policy_new(int nsyms);
void rt_spec_policy_free(rt_spec_policy *p); /* NULL ok */

/* An execute of the binding `key` (variants.h) under the async policy,
 * which found a live variant or not (has_variant); hot: the threshold;
 * paired: a variant's trial alternates with the generic kernels
 * (RT_SPEC_PAIR every other execute). Fills *t when this execute is to be
 * timed (else t->slot = -1). */
rt_spec_verdict rt_spec_policy_seen(rt_spec_policy *p, const int64_t *key, bool has_variant,
                                    int hot, bool paired, rt_spec_ticket *t);
/* The time of an execute that got ticket t. true when the binding's
 * variant ends its trial without paying: the caller drops it. */
bool rt_spec_policy_timed(rt_spec_policy *p, const rt_spec_ticket *t, int64_t ns,
                          rt_spec_trial_mode mode);
/* Mark the binding `key` as not worth a variant (RT_SPEC_DROPPED from now
 * on, until its slot goes to another binding). */
void rt_spec_policy_drop(rt_spec_policy *p, const int64_t *key);
/* The estimated share of an execute's time at the binding syms (solved
 * symbol values) spent in the kernels of m that a bound shape can speed up
 * (its backend's node_syms > 0): spec_worth.c. 1 when a shape does not
 * evaluate. */
struct kiln_model;
double rt_spec_share(const struct kiln_model *m, const int64_t *syms);
/* Symbol values of an execute; returns a symbol that should get pow2
 * buckets now (its first time over the bound; explicit[k] symbols never),
 * or -1. */
int rt_spec_policy_values(rt_spec_policy *p, const int64_t *syms, const bool *explicit_bucket);
/* How many executes in a row (up to RT_SPEC_AHEAD_RUN) saw symbol k larger
 * than the execute before (counted by rt_spec_policy_values). */
int rt_spec_policy_rising(rt_spec_policy *p, int k);
/* The largest value each symbol of g can take at an execute that passes
 * g's checks, into max[g->nsyms] (INT64_MAX where g sets none): a check
 * "constant >= symbol", or a slice read from data whose result axis is the
 * symbol over a static axis (spec_bound.c). */
struct ir_graph;
void rt_spec_sym_max(const struct ir_graph *g, int64_t *max);

#endif
