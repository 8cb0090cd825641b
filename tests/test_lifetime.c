/* test_lifetime.c - freeing models and contexts while they are in use:
 * kiln_model_free waits for the executes running on the model (and refuses
 * ones that start while it waits), kiln_context_free refuses while models
 * of the context live. The executes are one GEMM of 768^3 each (tens of
 * milliseconds), so the free is called while they run; the test waits until
 * every thread is inside its execute (or done) before freeing. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/kiln.h"
#include "src/rt.h"

#define SIDE 768
#define NTHREADS 4

static kiln_model *slow_model(kiln_context *ctx, kiln_status *st) {
  kiln_graph *g = kiln_graph_new("slow", st);
  cr_assert(g, "%s", kiln_status_message(st));
  const char *dims[] = {"768", "768"};
  kiln_value *a = kiln_graph_add_input(g, "a", KILN_FLOAT32, 2, dims, st);
  kiln_value *b = kiln_graph_add_input(g, "b", KILN_FLOAT32, 2, dims, st);
  kiln_value *c = kiln_graph_add_op(g, "mo.matmul", (kiln_value *[]){a, b}, 2, NULL, NULL, st);
  kiln_value *y = c ? kiln_graph_add_op(g, "mo.relu", &c, 1, NULL, NULL, st) : NULL;
  cr_assert(y && kiln_graph_set_outputs(g, &y, 1, NULL, st) == 0, "%s",
            kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_graph_free(g);
  return m;
}

static kiln_tensor *filled(float v) {
  int64_t shape[] = {SIDE, SIDE};
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
  cr_assert(t);
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < SIDE * SIDE; i++) p[i] = v;
  return t;
}

typedef struct exec_arg {
  kiln_model *m;
  kiln_tensor *in[2];
  atomic_int *entered;
  atomic_bool done;
  int rc;
  float y0;
  char msg[256];
} exec_arg;

static void *exec_once(void *p) {
  exec_arg *a = p;
  kiln_status *st = kiln_status_new();
  kiln_tensor *y = NULL;
  atomic_fetch_add(a->entered, 1);
  a->rc = kiln_model_execute(a->m, a->in, 2, &y, 1, st);
  a->y0 = y ? ((const float *)kiln_tensor_data(y))[0] : -1.0f;
  snprintf(a->msg, sizeof a->msg, "%s", kiln_status_message(st));
  kiln_tensor_free(y);
  kiln_status_free(st);
  atomic_store(&a->done, true);
  return NULL;
}

static void nap_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Executes on m now (the count kiln_model_free waits for). */
static unsigned in_flight(const kiln_model *m) {
  return atomic_load(&m->life) & ~RT_LIFE_FREEING;
}

Test(lifetime, model_free_waits_for_running_executes) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_num_threads(ctx, 1, st), 0, "%s", kiln_status_message(st));
  kiln_model *m = slow_model(ctx, st);
  kiln_tensor *a = filled(0.5f), *b = filled(0.25f);
  atomic_int entered = 0;
  exec_arg args[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    args[i] = (exec_arg){.m = m, .in = {a, b}, .entered = &entered};
    cr_assert_eq(pthread_create(&th[i], NULL, exec_once, &args[i]), 0);
  }
  /* every thread inside its execute or through it: none starts another */
  unsigned inside = 0;
  for (int waited = 0; waited < 60000; waited++) {
    int ndone = 0;
    for (int i = 0; i < NTHREADS; i++) ndone += atomic_load(&args[i].done);
    inside = in_flight(m);
    if (atomic_load(&entered) == NTHREADS && (int)inside + ndone == NTHREADS) break;
    nap_ms(1);
  }
  cr_assert(inside > 0, "every execute finished before the free: the GEMM is too small here");
  /* without the wait, the executes go on in freed memory: wrong numbers, a
   * crash, or (under ASan) a use-after-free report */
  kiln_model_free(m);
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(args[i].rc, 0, "thread %d: %s", i, args[i].msg);
    cr_assert_float_eq(args[i].y0, 0.5f * 0.25f * SIDE, 1e-3f);
  }
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  cr_assert_eq(kiln_context_free_checked(ctx, st), 0, "%s", kiln_status_message(st));
  kiln_status_free(st);
}

typedef struct free_arg {
  kiln_model *m;
  atomic_bool done;
} free_arg;

static void *free_model(void *p) {
  free_arg *f = p;
  kiln_model_free(f->m);
  atomic_store(&f->done, true);
  return NULL;
}

Test(lifetime, execute_starting_while_the_free_waits_is_refused) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_num_threads(ctx, 1, st), 0, "%s", kiln_status_message(st));
  kiln_model *m = slow_model(ctx, st);
  kiln_tensor *a = filled(1.0f), *b = filled(1.0f);
  atomic_int entered = 0;
  exec_arg run = {.m = m, .in = {a, b}, .entered = &entered};
  pthread_t te, tf;
  cr_assert_eq(pthread_create(&te, NULL, exec_once, &run), 0);
  while (in_flight(m) == 0 && !atomic_load(&run.done)) nap_ms(1);
  cr_assert(!atomic_load(&run.done), "the execute finished before the test could free");
  free_arg fa = {.m = m};
  cr_assert_eq(pthread_create(&tf, NULL, free_model, &fa), 0);
  while (!(atomic_load(&m->life) & RT_LIFE_FREEING)) nap_ms(0);
  /* the free waits for `run` (tens of ms): m is alive, a new execute refused */
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(m, run.in, 2, &y, 1, st), -1);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(kiln_status_message(st), "the model is being freed"), "%s",
            kiln_status_message(st));
  cr_assert_null(y);
  pthread_join(te, NULL);
  pthread_join(tf, NULL);
  cr_assert(atomic_load(&fa.done));
  cr_assert_eq(run.rc, 0, "%s", run.msg);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(lifetime, context_free_refuses_while_models_live) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  kiln_model *m1 = slow_model(ctx, st), *m2 = slow_model(ctx, st);
  cr_assert_eq(kiln_context_free_checked(ctx, st), -1);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(kiln_status_message(st), "2 models of this context are still live"), "%s",
            kiln_status_message(st));
  kiln_model_free(m1);
  cr_assert_eq(kiln_context_free_checked(ctx, st), -1);
  cr_assert(strstr(kiln_status_message(st), "1 model of this context is still live"), "%s",
            kiln_status_message(st));
  /* the context was left alone: its model still executes */
  kiln_tensor *a = filled(1.0f), *b = filled(2.0f), *y = NULL;
  cr_assert_eq(kiln_model_execute(m2, (kiln_tensor *[]){a, b}, 2, &y, 1, st), 0, "%s",
               kiln_status_message(st));
  cr_assert_float_eq(((const float *)kiln_tensor_data(y))[0], 2.0f * SIDE, 1e-3f);
  kiln_tensor_free(y);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  kiln_model_free(m2);
  cr_assert_eq(kiln_context_free_checked(ctx, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_free_checked(NULL, st), 0);
  kiln_status_free(st);
}
