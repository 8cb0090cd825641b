/* spread.c - items on threads of their own (spread.h): the caller and up to
 * threads - 1 helpers (named "kiln-spread" for traces, perf and gdb) take
 * the next item from one atomic counter until none is left, so items of
 * unequal cost (a softmax kernel's compile beside a permute's) balance. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, pthread_setname_np */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "spread.h"

typedef struct spread {
  int (*item)(void *arg, int k);
  void *arg;
  int n;
  atomic_int next;
  atomic_int failed;
} spread;

static void *take_items(void *p) {
  spread *s = p;
  for (int k; (k = atomic_fetch_add(&s->next, 1)) < s->n;)
    if (s->item(s->arg, k) < 0) atomic_store(&s->failed, 1);
  return NULL;
}

static void *helper(void *p) {
  pthread_setname_np(pthread_self(), "kiln-spread");
  return take_items(p);
}

int rt_spread_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return 1;
}

int rt_spread_run(int (*item)(void *arg, int k), void *arg, int n, int threads) {
  spread s = {item, arg, n, 0, 0};
  pthread_t t[RT_SPREAD_MAX];
  int started = 0;
  if (threads > n) threads = n;
  if (threads > RT_SPREAD_MAX) threads = RT_SPREAD_MAX;
  while (started < threads - 1 && pthread_create(&t[started], NULL, helper, &s) == 0) started++;
  take_items(&s);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  return atomic_load(&s.failed) ? -1 : 0;
}
