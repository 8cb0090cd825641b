/* test_bg_place.c - background threads kept off the executing CPU
 * (bg_place.h): a context's compile and prepare threads leave the CPU an
 * execute ran on, follow a caller that moves, and are left alone with one
 * allowed CPU or KILN_PIN_THREADS=0; a thread that leaves is forgotten.
 * Needs two CPUs; skipped with one. */
#define _GNU_SOURCE /* CPU_*, pthread_setaffinity_np */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/kiln.h"
#include "src/bg_place.h"

static const char *SOFT =
    "mo.graph @s<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %y = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"
    "  %z = mo.softmax(%y) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  mo.output %z : !mo.tensor<[n, 8], f32>\n}\n";

static cpu_set_t start_mask; /* the test thread's CPUs before any pinning */
static int cpu0 = -1, cpu1 = -1;

static void setup(void) {
  cr_assert_eq(sched_getaffinity(0, sizeof start_mask, &start_mask), 0);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &start_mask)) {
      if (cpu0 < 0) cpu0 = c;
      else if (cpu1 < 0) cpu1 = c;
    }
  if (cpu1 < 0) cr_skip_test("needs two CPUs");
}

static void teardown(void) { pthread_setaffinity_np(pthread_self(), sizeof start_mask, &start_mask); }

TestSuite(bg_place, .init = setup, .fini = teardown);

static void pin_self(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  cr_assert_eq(sched_getcpu(), cpu);
}

static cpu_set_t mask_of(pthread_t t) {
  cpu_set_t s;
  cr_assert_eq(pthread_getaffinity_np(t, sizeof s, &s), 0);
  return s;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A background thread of the test's own: created unbound (start_mask),
 * enters `p` when started, leaves when released. */
typedef struct parked {
  rt_bg_place *p;
  pthread_t thread;
  sem_t start, entered, release;
} parked;

static void *park_main(void *arg) {
  parked *k = arg;
  sem_wait(&k->start);
  rt_bg_thread me;
  rt_bg_enter(k->p, &me);
  sem_post(&k->entered);
  sem_wait(&k->release);
  rt_bg_leave(k->p, &me);
  return NULL;
}

static void park_create(parked *k) {
  sem_init(&k->start, 0, 0);
  sem_init(&k->entered, 0, 0);
  sem_init(&k->release, 0, 0);
  cr_assert_eq(pthread_create(&k->thread, NULL, park_main, k), 0);
}

static void park_enter(parked *k, rt_bg_place *p) {
  k->p = p;
  sem_post(&k->start);
  sem_wait(&k->entered);
}

static void park_join(parked *k) {
  sem_post(&k->release);
  pthread_join(k->thread, NULL);
  sem_destroy(&k->start);
  sem_destroy(&k->entered);
  sem_destroy(&k->release);
}

/* Every thread of this process named `name`: how many, and how many of
 * them may run on `cpu`. */
static void named_threads(const char *name, int cpu, int *found, int *on_cpu) {
  *found = *on_cpu = 0;
  DIR *d = opendir("/proc/self/task");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    if (strcmp(comm, name) != 0) continue;
    cpu_set_t s;
    if (sched_getaffinity(atoi(e->d_name), sizeof s, &s) != 0) continue;
    (*found)++;
    if (CPU_ISSET(cpu, &s)) (*on_cpu)++;
  }
  closedir(d);
}

static void exec_n(kiln_model *m, int64_t n, kiln_status *st) {
  int64_t xs[2] = {n, 8};
  kiln_tensor *in = kiln_tensor_new(KILN_FLOAT32, 2, xs, st);
  cr_assert_not_null(in);
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(out);
  kiln_tensor_free(in);
}

Test(bg_place, a_contexts_compile_and_prepare_threads_leave_the_executing_cpu) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  kiln_graph *g = kiln_graph_parse(SOFT, strlen(SOFT), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_ASYNC, st), 0);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0); /* starts kiln-prepare */
  pin_self(cpu1);
  exec_n(m, 5, st); /* hot at once: queues a compile, starts kiln-compile */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  int prep = 0, prep_on = 0, comp = 0, comp_on = 0;
  for (int i = 0; i < 200; i++) { /* a thread binds itself as it starts */
    exec_n(m, 5, st);
    named_threads("kiln-prepare", cpu1, &prep, &prep_on);
    named_threads("kiln-compile", cpu1, &comp, &comp_on);
    if (prep == 1 && comp == 1 && !prep_on && !comp_on) break;
    sleep_ms(5);
  }
  cr_expect_eq(prep, 1, "kiln-prepare threads: %d", prep);
  cr_expect_eq(comp, 1, "kiln-compile threads: %d", comp);
  cr_expect_eq(prep_on, 0, "kiln-prepare may still run on CPU %d, where the model executes", cpu1);
  cr_expect_eq(comp_on, 0, "kiln-compile may still run on CPU %d, where the model executes", cpu1);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(bg_place, a_caller_that_moves_takes_the_threads_off_its_new_cpu) {
  rt_bg_place *p = rt_bg_place_new();
  cr_assert(rt_bg_place_on(p));
  parked k;
  park_create(&k);
  park_enter(&k, p);
  pin_self(cpu0);
  rt_bg_note_caller(p);
  cpu_set_t s = mask_of(k.thread);
  cr_expect(!CPU_ISSET(cpu0, &s), "bound off CPU %d, the caller's", cpu0);
  cr_expect(CPU_ISSET(cpu1, &s));
  pin_self(cpu1);
  /* the old CPU stays avoided for a while (a caller hopping back and forth
   * must not make the threads chase it), then is given back */
  for (int i = 0; i < 100; i++) {
    rt_bg_note_caller(p);
    s = mask_of(k.thread);
    if (!CPU_ISSET(cpu1, &s) && CPU_ISSET(cpu0, &s)) break;
    sleep_ms(10);
  }
  cr_expect(!CPU_ISSET(cpu1, &s), "still on CPU %d, where the caller moved", cpu1);
  cr_expect(CPU_ISSET(cpu0, &s), "not given back CPU %d, which the caller left", cpu0);
  park_join(&k);
  rt_bg_place_free(p);
}

Test(bg_place, a_thread_that_starts_after_an_execute_starts_off_its_cpu) {
  rt_bg_place *p = rt_bg_place_new();
  parked k;
  park_create(&k);
  pin_self(cpu0);
  rt_bg_note_caller(p);
  park_enter(&k, p);
  cpu_set_t s = mask_of(k.thread);
  cr_expect(!CPU_ISSET(cpu0, &s));
  park_join(&k);
  rt_bg_place_free(p);
}

Test(bg_place, one_allowed_cpu_binds_nothing) {
  parked k;
  park_create(&k); /* may run anywhere */
  pin_self(cpu0);
  rt_bg_place *p = rt_bg_place_new(); /* made by a thread allowed one CPU */
  cr_expect(!rt_bg_place_on(p));
  park_enter(&k, p);
  rt_bg_note_caller(p);
  cpu_set_t s = mask_of(k.thread);
  cr_expect(CPU_EQUAL(&s, &start_mask), "a thread was bound with one CPU allowed");
  park_join(&k);
  rt_bg_place_free(p);
}

Test(bg_place, pin_threads_0_binds_nothing) {
  setenv("KILN_PIN_THREADS", "0", 1);
  rt_bg_place *p = rt_bg_place_new();
  unsetenv("KILN_PIN_THREADS");
  cr_expect(!rt_bg_place_on(p));
  parked k;
  park_create(&k);
  park_enter(&k, p);
  pin_self(cpu0);
  rt_bg_note_caller(p);
  cpu_set_t s = mask_of(k.thread);
  cr_expect(CPU_EQUAL(&s, &start_mask), "a thread was bound under KILN_PIN_THREADS=0");
  park_join(&k);
  rt_bg_place_free(p);
}

Test(bg_place, a_thread_that_exits_is_forgotten) {
  rt_bg_place *p = rt_bg_place_new();
  parked gone, stays;
  park_create(&gone);
  park_create(&stays);
  park_enter(&gone, p);
  park_enter(&stays, p);
  cr_expect_eq(rt_bg_place_count(p), 2);
  park_join(&gone);
  cr_expect_eq(rt_bg_place_count(p), 1);
  pin_self(cpu0); /* re-binds the threads registered: the exited one must not be among them */
  rt_bg_note_caller(p);
  cpu_set_t s = mask_of(stays.thread);
  cr_expect(!CPU_ISSET(cpu0, &s));
  park_join(&stays);
  cr_expect_eq(rt_bg_place_count(p), 0);
  rt_bg_place_free(p);
}

Test(bg_place, a_null_place_is_a_no_op) {
  rt_bg_thread t;
  rt_bg_enter(NULL, &t);
  rt_bg_note_caller(NULL);
  rt_bg_leave(NULL, &t);
  cr_expect(!rt_bg_place_on(NULL));
  cr_expect_eq(rt_bg_place_count(NULL), 0);
  rt_bg_place_free(NULL);
}
