/* gtext.h - a tiny builder of MO graph text for the op tests.
 *
 * Tests describe a graph as a list of inputs, ops (each with its declared
 * result types) and outputs; gt_finish prints it in the explicit form
 *   %v3 = mo.add(%x0, %x1) {attrs} : (T0, T1) -> R
 * so that one table of (op, dtype, shape) drives many cases. Shapes are dim
 * lists without brackets ("n, 67", "" for a scalar). The builder checks
 * nothing about op rules: the parser and verifier do that; a wrong declared
 * result type is a bug in the test and shows up as a parse error.
 * Each input can carry its own random generator (oracle.h); the oracle
 * runner reads them with gt_gens.
 * Memory: everything is owned by the gt and freed by gt_free. Out-of-memory
 * is reported by gt_finish returning NULL. */
#ifndef KILN_TESTS_GTEXT_H
#define KILN_TESTS_GTEXT_H

#include "oracle.h"

typedef struct gt gt;

/* name: graph name (without '@'); syms: the symbol list ("n, m"), or NULL /
 * "" for a graph without a <...> list. */
gt *gt_new(const char *name, const char *syms);
void gt_free(gt *t);

/* Values are small integers (indices into the builder's value list). */
int gt_in(gt *t, const char *dtype, const char *shape);
int gt_in_gen(gt *t, const char *dtype, const char *shape, oracle_gen g);
/* mo.constant.external {name = NAME} */
int gt_weight(gt *t, const char *name, const char *dtype, const char *shape);
/* mo.constant with a dense value: values is the comma-separated element list
 * ("1.0, 2.5"); the dense tensor type is derived from shape and dtype. */
int gt_const(gt *t, const char *dtype, const char *shape, const char *values);
/* An op with one result. attrs is the dictionary text ("{axis = -1}") or NULL. */
int gt_op(gt *t, const char *op, const char *attrs, const int *ins, int nin, const char *dtype,
          const char *shape);
int gt_op1(gt *t, const char *op, const char *attrs, int a, const char *dtype, const char *shape);
int gt_op2(gt *t, const char *op, const char *attrs, int a, int b, const char *dtype,
           const char *shape);
/* An op with nres results (split); returns the first, the others follow. */
int gt_opn(gt *t, const char *op, const char *attrs, const int *ins, int nin, int nres,
           const char *const *dtypes, const char *const *shapes);
void gt_out(gt *t, int v);

/* dtype / shape text of a value (owned by t). */
const char *gt_dtype(const gt *t, int v);
const char *gt_shape(const gt *t, int v);

/* The graph text, owned by t (valid until gt_free); NULL on out-of-memory
 * or when a value index was invalid. */
const char *gt_finish(gt *t);
/* Per-input generators (kind ORACLE_GEN_DEFAULT where none was given). */
const oracle_gen *gt_gens(const gt *t, int *n);

#endif
