/* pool.c - the context's thread pool, the work estimate and rt_kernel_call
 * (pool.h), and kiln_context_set_num_threads / kiln_context_num_threads.
 *
 * The serial path: rt_kernel_call reads the node's work estimate (cached
 * per node at compile, model.c, or computed from the solved symbols for a
 * symbolic node) and, below two grains, calls the kernel as (0, 1) on the
 * calling thread. Nothing else: no pool lookup, no atomic.
 *
 * Above, the call is split in min(threads * RT_OVERSPLIT, work / grain)
 * parts (kernel ABI, jit.h; one part per thread for a matmul and for the
 * other classes ops.def does not mark as streaming). The pool (one per context, created
 * then) starts its n - 1 workers on the first job that needs them, never
 * per call; a context that never splits starts no thread. One job runs at a
 * time: an execute that finds the pool busy (another thread executing on
 * the same context) runs its kernel serially, as (0, 1), rather than
 * waiting.
 *
 * A job is published through one 64-bit ticket: generation (32 bits),
 * number of parts (16), next unclaimed part (16). Parts are claimed by a CAS
 * on the ticket of the job's own generation, so a worker that wakes late
 * and read the arguments of an old job can never claim a part of a newer
 * one (its CAS fails), and a successful claim proves the arguments it read
 * belong to that job (the job cannot end, nor the next one be written,
 * before the claimed part is done). The caller runs part 0 itself, claims
 * parts like a worker until none is left, then waits for the parts the
 * workers took. The status is the first nonzero one any part returned, in
 * time order.
 *
 * Waiting: a thread spins only while what it waits for is likely within
 * the spin (RT_SPIN_NS, or twice the measured wake-up of a sleeping worker
 * where that is longer, RT_SPIN_MAX_NS at most), then sleeps on a futex,
 * so an idle pool costs no CPU that the caller's other threads (or other
 * processes) could use. Likely: the thread's last wait of the same kind
 * was within the spin: for a worker, its job was published within it; for
 * the caller, the parts ended within it, its sleep and wake-up included (so
 * a machine too busy to run a woken thread promptly makes it spin less).
 * A worker tells two kinds apart: waits within an execute (the split
 * kernels of one execute come back to back; if they do not, it spins
 * RT_SPIN_SHORT_NS) and waits across the end of one (rt_pool_quiet,
 * which execute.c calls as an execute ends: after it a worker spins only
 * if requests came back to back, and stops spinning when the end comes
 * mid-spin). The caller waits for the parts the workers
 * claimed, which are running, the same way (RT_SPIN_SHORT_NS after a long
 * wait). Sleeping and waking go straight through futex(2) on the words the
 * threads wait on (a wake count bumped by every publish, and the count of
 * unfinished parts), rather than a condition variable: the kernel checks
 * the word and sleeps in one step, so no lock is taken on either side (a
 * condition variable needs its mutex around the predicate and the wake),
 * a job wakes no more sleepers than it has parts for, and a publish that
 * finds no sleeper makes no system call. The pool is Linux-only already
 * (affinity, sched_getcpu).
 *
 * Placement: when the pool has exactly as many threads as the thread that
 * started its workers may use CPUs (the default count), each worker is
 * bound to a CPU of its own, none of them the caller's CPU at its last job;
 * a job that finds the caller on another CPU than last time moves the
 * workers first (one pthread_setaffinity_np per worker, only then). A pool
 * of fewer threads is left unbound: pools of other processes or contexts
 * beside it would all pick the same CPUs. Unbound, the scheduler was
 * measured putting a woken worker on the caller's CPU and leaving it there
 * for milliseconds while the other CPU idled: a 2-thread 512^3 GEMM ran at
 * 1.0x the 1-thread speed in whole runs, 1024^3 anywhere from 1.0x to 1.9x
 * call to call (2-vCPU VM).
 * KILN_PIN_THREADS=0 leaves the workers where the scheduler puts them. The
 * caller's own thread is never bound.
 *
 * Workers block every signal (signal handlers run on the application's
 * threads). A worker that cannot be created only means fewer threads: the
 * caller runs whatever no worker claims. */
#define _GNU_SOURCE /* sched_getcpu, sched_getaffinity, CPU_*, pthread_setaffinity_np */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "observe.h"

/* A part must be worth about this many cost units (~ns of one core):
 * handing a part to a spinning worker costs well under a microsecond, so
 * parts of 16-30 us keep that overhead small (measured: a row sum splits
 * from 64k elements on, 1.84x on 2 threads there). */
#define RT_GRAIN ((int64_t)32768)
/* Most parts per thread for a kernel other than a matmul. */
#define RT_OVERSPLIT 4
/* Longest spin, for the next job (workers) or for the running parts (the
 * caller), before sleeping. Measured on a 2-vCPU EPYC VM: a futex wake
 * costs the waker ~8 us of CPU and the sleeper ~10 us more, and the woken
 * thread runs ~10 us after the wake; spinning longer than a sleep and wake
 * cost can save no CPU (about 2x the best choice in the worst case), and
 * it covers the serial kernels between the split ones of most executes. */
#define RT_SPIN_NS 20000
/* The longest spin when waking a sleeping thread is measured slower: the
 * spin then lasts up to twice the measured wake (a woken worker's delay
 * from the publish to its first instruction), so it still costs no more
 * than the sleep it avoids. A 2-vCPU Firecracker VM (Xeon) measured ~50-100
 * us per wake: at 20 us the workers slept before every split kernel. */
#define RT_SPIN_MAX_NS 200000
/* Spin of a worker whose last wait within an execute was longer than
 * RT_SPIN_NS (its jobs are far apart), and of the caller after a wait
 * that long. */
#define RT_SPIN_SHORT_NS 2000
/* A spin only pauses this long; then each round also yields the core (on
 * an oversubscribed machine, to the thread it waits for, or anyone). */
#define RT_SPIN_PAUSE_NS 10000

typedef struct rt_worker {
  rt_pool *pool;
  pthread_t thread;
  uint32_t seen;     /* generation of the last job this worker looked at */
  bool near_within;  /* its last wait within an execute was shorter than RT_SPIN_NS */
  bool near_between; /* its last wait across the end of an execute was */
} rt_worker;

struct rt_pool {
  pthread_mutex_t submit; /* held by the thread running a job (try-locked) and by set_num_threads */
  atomic_int nthreads;    /* configured: the caller + nthreads - 1 workers */
  int nworkers;           /* started (under submit) */
  rt_worker *workers;     /* nworkers entries (under submit) */
  uint32_t gen;           /* generation of the last job published (under submit) */
  /* the job: written by the submitter before the ticket, read by claimers */
  _Atomic(jit_kernel_fn) fn;
  _Atomic(void *const *) args;
  _Atomic(const int64_t *) syms;
  _Atomic(const char *) label; /* the kernel's name while a trace is open, else NULL */
  rt_trace *trace;             /* the context's (trace.h), borrowed */
  _Atomic uint64_t ticket;     /* gen << 32 | nparts << 16 | next */
  _Atomic int64_t published;   /* rt_now_ns() of the last publish, stored before the ticket */
  _Atomic int64_t wake_ns;     /* a sleeping worker's delay from a publish to running, averaged */
  atomic_int pending;          /* parts not finished, part 0 excluded */
  atomic_int status;           /* first nonzero part status */
  atomic_int stop;             /* workers exit */
  atomic_uint quiet;           /* generation whose execute has ended (rt_pool_quiet) */
  /* sleeping: workers on wake, the submitter on pending (futex words) */
  atomic_uint wake;            /* bumped by every publish and by stop */
  atomic_int sleepers;         /* workers asleep or about to be */
  atomic_int waiting;          /* the submitter sleeps on pending */
  bool parts_near;             /* its last wait for parts took < RT_SPIN_NS (under submit) */
  /* placement (under submit) */
  bool place;        /* bind the workers one per CPU, off the caller's */
  cpu_set_t allowed; /* the starting thread's CPUs when the workers started */
  int caller_cpu;    /* the caller's CPU when the workers were last bound */
};

/* ---- ticket ---- */
static uint32_t t_gen(uint64_t t) { return (uint32_t)(t >> 32); }
static int t_nparts(uint64_t t) { return (int)((t >> 16) & 0xffff); }
static int t_next(uint64_t t) { return (int)(t & 0xffff); }
static uint64_t t_pack(uint32_t gen, int nparts, int next) {
  return (uint64_t)gen << 32 | (uint64_t)(unsigned)nparts << 16 | (uint64_t)(unsigned)next;
}

/* ---- thread count ---- */

static int clamp_threads(long n) {
  return n < 1 ? 1 : n > RT_POOL_MAX_THREADS ? RT_POOL_MAX_THREADS : (int)n;
}

/* CPUs the calling thread may run on (its affinity mask, which the
 * workers it starts inherit); -1 when it cannot be read. */
static int thread_cpus(cpu_set_t *set) {
  if (sched_getaffinity(0, sizeof *set, set) == 0 && CPU_COUNT(set) > 0) return CPU_COUNT(set);
  return -1;
}

/* KILN_NUM_THREADS when it is a positive integer, else the calling
 * thread's CPUs. */
static int default_threads(void) {
  const char *e = getenv("KILN_NUM_THREADS");
  if (e && *e) {
    char *end = NULL;
    errno = 0;
    long v = strtol(e, &end, 10);
    if (errno == 0 && end && *end == 0 && v >= 1) return clamp_threads(v);
  }
  cpu_set_t set;
  int n = thread_cpus(&set);
  return clamp_threads(n > 0 ? n : sysconf(_SC_NPROCESSORS_ONLN));
}

/* ---- running parts ---- */

void rt_futex_wait(void *word, unsigned expected, int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, ns < 0 ? NULL : &ts, NULL, 0);
}

void rt_futex_wake(void *word, int n) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void futex_wait(void *word, unsigned expected) { rt_futex_wait(word, expected, -1); }
static void futex_wake(void *word, int n) { rt_futex_wake(word, n); }

static void finish_part(rt_pool *p) {
  /* seq_cst both: pairs with wait_parts' store of waiting and load of pending */
  if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->waiting)) futex_wake(&p->pending, 1);
}

static void record_status(rt_pool *p, int32_t rc) {
  if (rc == 0) return;
  int zero = 0;
  atomic_compare_exchange_strong(&p->status, &zero, (int)rc);
}

/* Claim and run parts of generation g until none is left (or the job
 * changed). fn, args, syms were read after seeing generation g. */
static void run_parts(rt_pool *p, uint32_t g, jit_kernel_fn fn, void *const *args,
                      const int64_t *syms, const char *label) {
  uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  for (;;) {
    if (t_gen(t) != g || t_next(t) >= t_nparts(t)) return;
    if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) continue; /* t reloaded */
    if (__builtin_expect(label != NULL, 0)) { /* a trace is open: each part on its thread's track */
      int64_t t0 = rt_now_ns();
      record_status(p, fn(args, syms, t_next(t), t_nparts(t)));
      char a[48];
      snprintf(a, sizeof a, "\"part\":%d,\"parts\":%d", t_next(t), t_nparts(t));
      rt_trace_span(p->trace, "part", label, t0, rt_now_ns(), a);
      finish_part(p);
      t = atomic_load_explicit(&p->ticket, memory_order_acquire);
      continue;
    }
    record_status(p, fn(args, syms, t_next(t), t_nparts(t)));
    finish_part(p);
    t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  }
}

/* What a spin waits for: done(p, arg) true. */
typedef bool spin_done_fn(rt_pool *p, uint32_t arg);

/* Spin until done(p, arg) or budget_ns has passed; whether done. Pauses,
 * reading the clock every few rounds; after RT_SPIN_PAUSE_NS each round
 * also yields the core, so that on an oversubscribed machine the thread
 * waited for (or anyone else) runs. */
static bool spin_until(spin_done_fn *done, rt_pool *p, uint32_t arg, int64_t budget_ns) {
  int64_t t0 = 0;
  for (int i = 0;; i++) {
    if (done(p, arg)) return true;
    if (i % 8) {
      rt_cpu_relax();
      continue;
    }
    int64_t t = rt_now_ns();
    if (!t0) t0 = t;
    if (t - t0 >= budget_ns) return false;
    if (t - t0 >= RT_SPIN_PAUSE_NS)
      sched_yield();
    else
      rt_cpu_relax();
  }
}

/* A job newer than generation seen is published, or the workers stop. */
static bool job_ready(rt_pool *p, uint32_t seen) {
  return t_gen(atomic_load(&p->ticket)) != seen ||
         atomic_load_explicit(&p->stop, memory_order_relaxed);
}

/* job_ready, or the execute that published generation seen has ended (no
 * job is likely soon: stop spinning). */
static bool job_or_quiet(rt_pool *p, uint32_t seen) {
  return job_ready(p, seen) || atomic_load_explicit(&p->quiet, memory_order_relaxed) == seen;
}

/* Sleep until job_ready(p, seen). A publish bumps wake after the ticket and
 * wakes sleepers when it sees any; a sleeper counts itself in sleepers
 * before it reads wake and the ticket (seq_cst both sides), so either it
 * sees the job or the publish sees it, and a wake that comes between its
 * check and its sleep makes futex_wait return at once. */
static void sleep_until_job(rt_pool *p, uint32_t seen) {
  atomic_fetch_add(&p->sleepers, 1);
  for (;;) {
    unsigned w = atomic_load(&p->wake);
    if (job_ready(p, seen)) break;
    futex_wait(&p->wake, w);
  }
  atomic_fetch_sub(&p->sleepers, 1);
}

/* How long a spin may last: RT_SPIN_NS, or twice the measured wake where
 * that is longer (RT_SPIN_MAX_NS at most). */
static int64_t spin_ns(rt_pool *p) {
  int64_t s = 2 * atomic_load_explicit(&p->wake_ns, memory_order_relaxed);
  return s < RT_SPIN_NS ? RT_SPIN_NS : s > RT_SPIN_MAX_NS ? RT_SPIN_MAX_NS : s;
}

/* Wait for a job newer than the worker's last (or stop): spin up to
 * spin_ns when the last wait of this kind (within an execute, or across the
 * end of one) was near (below), else RT_SPIN_SHORT_NS within an execute and
 * not at all across; then sleep. After a sleep, the delay from the job's
 * publish to this thread running feeds the measured wake (wake_ns). */
static void wait_job(rt_pool *p, rt_worker *w) {
  uint32_t seen = w->seen;
  bool across = atomic_load_explicit(&p->quiet, memory_order_relaxed) == seen;
  int64_t spin = spin_ns(p);
  int64_t budget = (across ? w->near_between : w->near_within) ? spin
                   : across                                  ? 0
                                                             : RT_SPIN_SHORT_NS;
  int64_t t0 = rt_now_ns();
  if (!spin_until(w->near_between ? job_ready : job_or_quiet, p, seen, budget) ||
      !job_ready(p, seen)) {
    sleep_until_job(p, seen);
    int64_t pub = atomic_load_explicit(&p->published, memory_order_relaxed);
    int64_t late = rt_now_ns() - pub;
    int64_t avg = atomic_load_explicit(&p->wake_ns, memory_order_relaxed);
    if (pub > t0 && late > 0 && late < 10 * RT_SPIN_MAX_NS) /* woken by this job's publish */
      atomic_store_explicit(&p->wake_ns, avg ? (3 * avg + late) / 4 : late, memory_order_relaxed);
  }
  /* near: the job came within the spin of the wait's start, so a spin
   * would have caught it. Timed to its publish, not to this thread's wake:
   * where waking a sleeping CPU takes longer than RT_SPIN_NS (a 2-vCPU
   * Firecracker VM: ~50-100 us), timing to the wake made every wait after
   * one sleep look far, so the worker slept before every split kernel
   * (MiniLM 1x16 on 2 threads: 2.1-2.4 ms per execute against 1.2 ms,
   * and more CPU: 3.0 s against 2.4-2.6 for 800). The ticket read above
   * (seq_cst) orders the publish's time before it. */
  bool near = atomic_load_explicit(&p->published, memory_order_relaxed) - t0 < spin;
  if (atomic_load_explicit(&p->quiet, memory_order_relaxed) == seen)
    w->near_between = near; /* the execute of job seen ended before the new job */
  else
    w->near_within = near;
}

static void *worker_main(void *arg) {
  rt_worker *w = arg;
  rt_pool *p = w->pool;
  w->near_within = true;
  for (;;) {
    wait_job(p, w);
    if (atomic_load(&p->stop)) return NULL;
    uint32_t g = t_gen(atomic_load_explicit(&p->ticket, memory_order_acquire));
    w->seen = g;
    jit_kernel_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
    void *const *args = atomic_load_explicit(&p->args, memory_order_relaxed);
    const int64_t *syms = atomic_load_explicit(&p->syms, memory_order_relaxed);
    const char *label = atomic_load_explicit(&p->label, memory_order_relaxed);
    run_parts(p, g, fn, args, syms, label);
  }
}

/* Join every worker (submit held, no job running). */
static void stop_workers(rt_pool *p) {
  if (p->nworkers == 0) return;
  atomic_store(&p->stop, 1);
  atomic_fetch_add(&p->wake, 1);
  futex_wake(&p->wake, INT_MAX);
  for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i].thread, NULL);
  free(p->workers);
  p->workers = NULL;
  p->nworkers = 0;
  atomic_store(&p->stop, 0);
}

/* Bind worker i to the i-th allowed CPU other than `caller` (submit held). */
static void place_workers(rt_pool *p, int caller) {
  int cpu = 0;
  for (int i = 0; i < p->nworkers; i++) {
    while (cpu < CPU_SETSIZE && (!CPU_ISSET(cpu, &p->allowed) || cpu == caller)) cpu++;
    if (cpu == CPU_SETSIZE) break; /* the caller is on a CPU outside the set: one fewer */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(p->workers[i].thread, sizeof one, &one); /* failure: unbound */
    cpu++;
  }
  p->caller_cpu = caller;
}

static bool env_off(const char *name) {
  const char *e = getenv(name);
  return e && strcmp(e, "0") == 0;
}

/* Start the configured workers (submit held). Fewer on failure. */
static void start_workers(rt_pool *p) {
  int want = atomic_load_explicit(&p->nthreads, memory_order_relaxed) - 1;
  if (want <= 0 || p->workers) return;
  p->workers = calloc((size_t)want, sizeof *p->workers);
  if (!p->workers) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the workers */
  for (int i = 0; i < want; i++) {
    rt_worker *w = &p->workers[i];
    w->pool = p;
    w->seen = p->gen;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
    char name[32]; /* perf, gdb and traces show it (15 characters at most) */
    snprintf(name, sizeof name, "kiln-pool-%d", i + 1);
    name[15] = 0;
    pthread_setname_np(w->thread, name);
    p->nworkers = i + 1;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  /* bound only when the pool takes every CPU it may run on: pools that use
   * fewer (other processes or contexts beside it) would all pick the same
   * CPUs and could not move off them */
  p->place = p->nworkers > 0 && !env_off("KILN_PIN_THREADS") &&
             thread_cpus(&p->allowed) == p->nworkers + 1;
  p->caller_cpu = -2; /* bound at the first job */
}

static rt_pool *pool_new(int nthreads) {
  rt_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  if (pthread_mutex_init(&p->submit, NULL) != 0) {
    free(p);
    return NULL;
  }
  atomic_init(&p->nthreads, nthreads);
  atomic_init(&p->ticket, 0);
  p->parts_near = true;
  return p;
}

void rt_pool_free(rt_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->submit);
  stop_workers(p);
  pthread_mutex_unlock(&p->submit);
  pthread_mutex_destroy(&p->submit);
  free(p);
}

/* The context's pool, created (without threads) on first use; NULL on OOM. */
static rt_pool *pool_get(kiln_context *ctx) {
  rt_pool *p = __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE);
  if (p) return p;
  rt_pool *fresh = pool_new(default_threads());
  if (!fresh) return NULL;
  fresh->trace = ctx->trace;
  rt_pool *expected = NULL;
  if (__atomic_compare_exchange_n(&ctx->pool, &expected, fresh, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return fresh;
  rt_pool_free(fresh); /* another thread won */
  return expected;
}

static bool parts_done(rt_pool *p, uint32_t unused) {
  (void)unused;
  return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

/* Spin for the workers' parts up to budget_ns, then sleep on pending, which
 * the last finish_part wakes. */
static void wait_parts_for(rt_pool *p, int64_t budget_ns) {
  if (spin_until(parts_done, p, 0, budget_ns)) return;
  atomic_store(&p->waiting, 1); /* seq_cst: pairs with finish_part */
  for (int left; (left = atomic_load(&p->pending)) > 0;) futex_wait(&p->pending, (unsigned)left);
  atomic_store(&p->waiting, 0);
}

/* Wait for the parts the workers claimed (they are running now), spinning
 * up to RT_SPIN_NS, or RT_SPIN_SHORT_NS when the last wait took longer
 * than that (the machine is busy: a worker was preempted, say). */
static void wait_parts(rt_pool *p) {
  if (parts_done(p, 0)) return;
  int64_t t0 = rt_now_ns();
  int64_t spin = spin_ns(p);
  wait_parts_for(p, p->parts_near ? spin : RT_SPIN_SHORT_NS);
  p->parts_near = rt_now_ns() - t0 < spin;
}

/* Run fn in nparts parts on p (submit held). */
static int32_t pool_run(rt_pool *p, jit_kernel_fn fn, void *const *args, const int64_t *syms,
                        int nparts, const char *label) {
  start_workers(p);
  if (p->nworkers == 0) return fn(args, syms, 0, 1);
  if (p->place) {
    int cpu = sched_getcpu();
    if (cpu != p->caller_cpu) place_workers(p, cpu);
  }
  atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&p->args, args, memory_order_relaxed);
  atomic_store_explicit(&p->syms, syms, memory_order_relaxed);
  atomic_store_explicit(&p->label, label, memory_order_relaxed);
  atomic_store_explicit(&p->status, 0, memory_order_relaxed);
  atomic_store_explicit(&p->pending, nparts - 1, memory_order_relaxed);
  atomic_store_explicit(&p->published, rt_now_ns(), memory_order_relaxed);
  uint32_t g = ++p->gen;
  if (g == 0) g = ++p->gen; /* 0 is the idle ticket's generation */
  atomic_store(&p->ticket, t_pack(g, nparts, 1)); /* seq_cst: pairs with sleep_until_job */
  atomic_fetch_add(&p->wake, 1);
  if (atomic_load(&p->sleepers) > 0) /* wake no more sleeping workers than there are parts */
    futex_wake(&p->wake, nparts - 1 < p->nworkers ? nparts - 1 : p->nworkers);
  int64_t t0 = label ? rt_now_ns() : 0;
  record_status(p, fn(args, syms, 0, nparts));
  if (label) {
    char a[48];
    snprintf(a, sizeof a, "\"part\":0,\"parts\":%d", nparts);
    rt_trace_span(p->trace, "part", label, t0, rt_now_ns(), a);
  }
  run_parts(p, g, fn, args, syms, label);
  wait_parts(p);
  return (int32_t)atomic_load_explicit(&p->status, memory_order_acquire);
}

/* ---- work estimate ---- */

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Elements of t under gsyms (NULL: static dims only, -1 when one is not);
 * 0 when a dim does not evaluate. */
static int64_t numel(const ir_type *t, const int64_t *gsyms) {
  int64_t n = 1;
  for (int a = 0; a < t->rank; a++) {
    int64_t d;
    if (!ir_dim_is_const(t->dims[a], &d)) {
      if (!gsyms) return -1;
      ir_dim_err err;
      if (!ir_dim_eval(t->dims[a], gsyms, &d, &err)) return 0;
    }
    if (d <= 0) return 0;
    n = sat_mul(n, d);
  }
  return n;
}

static int64_t scaled(int64_t n, int64_t mul, int64_t div) {
  return n < 0 ? -1 : sat_mul(n, mul) / div;
}

/* An elementwise custom kernel (kernel_lib.c stamps kiln.elementwise): an
 * elementwise loop, estimated and split like one. */
static bool custom_elementwise(const ir_node *n) {
  return n->op == IR_OP_CUSTOM && ir_node_attr_int(n, "kiln.elementwise", 0);
}

/* The estimate of the node's class (ops.def's CLS rows: a formula and a
 * scale). */
int64_t rt_node_work(const ir_graph *g, const ir_node *n, const int64_t *gsyms) {
  (void)g;
  if (n->nout < 1) return 0;
  const ir_type *out = &n->out[0]->type;
  const ir_type *in = n->nin > 0 ? &n->in[0]->type : out;
  if (custom_elementwise(n)) return numel(out, gsyms);
  const ir_class_info *ci = ir_class_get(ir_op_get(n->op)->cls);
  switch (ci->work) {
  case IR_WORK_NONE: return 0;
  case IR_WORK_OUT: return scaled(numel(out, gsyms), ci->work_mul, ci->work_div);
  case IR_WORK_IN: return scaled(numel(in, gsyms), ci->work_mul, ci->work_div);
  case IR_WORK_MATMUL: {
    if (n->nin < 1 || in->rank < 1) return 0;
    int64_t mn = numel(out, gsyms);
    ir_type k = *in;
    k.dims = in->dims + in->rank - 1;
    k.rank = 1;
    int64_t kk = numel(&k, gsyms);
    if (mn < 0 || kk < 0) return -1;
    return scaled(sat_mul(mn, kk), ci->work_mul, ci->work_div);
  }
  case IR_WORK_BODY: { /* a GEMM with its epilogue, a softmax with its prologue: that node's
                         work; else elements */
    const ir_node *k = ir_node_matmul(n);
    for (int i = 0; !k && n->body && i < n->body->nnodes; i++)
      if (ir_op_get(n->body->nodes[i]->op)->cls == IR_CLS_SOFTMAX) k = n->body->nodes[i];
    return k ? rt_node_work(n->body, k, gsyms) : numel(out, gsyms);
  }
  }
  return numel(out, gsyms);
}

/* Whether the node's kernel streams over its data, so finer parts only
 * balance better (the class's flag in ops.def); the others (a GEMM packs
 * operand panels per part) get one part per thread. */
static bool streams(const ir_node *n) {
  if (custom_elementwise(n)) return true;
  const ir_class_info *ci = ir_class_get(ir_op_get(n->op)->cls);
  if (ci->work == IR_WORK_BODY) return !ir_node_matmul(n);
  return ci->streams;
}

/* ---- the kernel call ---- */

/* fn in nparts parts on p (the caller included) when p runs several
 * threads and no other job; else whole, as (0, 1), in the caller. */
static int32_t run_split(rt_pool *p, jit_kernel_fn fn, void *const *args, const int64_t *syms,
                         int64_t nparts, const char *label) {
  if (!p || nparts <= 1 || nparts > 0xffff ||
      atomic_load_explicit(&p->nthreads, memory_order_relaxed) <= 1 ||
      pthread_mutex_trylock(&p->submit) != 0)
    return fn(args, syms, 0, 1);
  int32_t rc = pool_run(p, fn, args, syms, (int)nparts, label);
  pthread_mutex_unlock(&p->submit);
  return rc;
}

int32_t rt_kernel_call(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                       const int64_t *ksyms, const int64_t *gsyms) {
  if (__builtin_expect(atomic_load_explicit(&m->ctx->watch, memory_order_relaxed) != 0, 0))
    return rt_observe_kernel(m, node, fn, args, ksyms, gsyms); /* observe.c: times, traces */
  return rt_kernel_call_labeled(m, node, fn, args, ksyms, gsyms, NULL);
}

int32_t rt_kernel_call_labeled(const kiln_model *m, int node, jit_kernel_fn fn,
                               void *const *args, const int64_t *ksyms, const int64_t *gsyms,
                               const char *label) {
  int64_t work = m->work ? m->work[node] : -1;
  if (work >= 0 && work < 2 * RT_GRAIN) return fn(args, ksyms, 0, 1);
  /* a context of one thread runs every kernel whole: no need to weigh a
   * symbolic node's work (a shape evaluation per kernel call) */
  rt_pool *p = __atomic_load_n(&m->ctx->pool, __ATOMIC_ACQUIRE);
  if (p && atomic_load_explicit(&p->nthreads, memory_order_relaxed) <= 1)
    return fn(args, ksyms, 0, 1);
  if (work < 0) work = gsyms ? rt_node_work(m->g, m->g->nodes[node], gsyms) : 0;
  if (work < 2 * RT_GRAIN) return fn(args, ksyms, 0, 1);
  p = pool_get(m->ctx);
  if (!p) return fn(args, ksyms, 0, 1);
  int nt = atomic_load_explicit(&p->nthreads, memory_order_relaxed);
  if (nt <= 1) return fn(args, ksyms, 0, 1);
  /* Streaming kernels get up to RT_OVERSPLIT parts per thread: parts are
   * claimed dynamically, so a thread that runs late (preempted, on a busy
   * machine) leaves smaller pieces for the others to wait on. */
  int64_t most = (int64_t)nt * (streams(m->g->nodes[node]) ? RT_OVERSPLIT : 1);
  int64_t parts = work / RT_GRAIN;
  if (parts > most) parts = most;
  return run_split(p, fn, args, ksyms, parts, label);
}

int rt_pool_placement(const kiln_context *ctx, int *caller_cpu, int *worker_cpus, int n) {
  rt_pool *p = ctx ? __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE) : NULL;
  if (!p) return -1;
  pthread_mutex_lock(&p->submit);
  int placed = p->place;
  *caller_cpu = p->caller_cpu;
  for (int i = 0; i < n && i < p->nworkers; i++) {
    cpu_set_t set;
    worker_cpus[i] = -1;
    if (pthread_getaffinity_np(p->workers[i].thread, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) worker_cpus[i] = c;
  }
  pthread_mutex_unlock(&p->submit);
  return placed;
}

int32_t rt_pool_run(kiln_context *ctx, jit_kernel_fn fn, void *const *args, int nparts) {
  int32_t rc = run_split(nparts > 1 ? pool_get(ctx) : NULL, fn, args, NULL, nparts, NULL);
  rt_pool_quiet(ctx); /* a job on its own: no other follows it */
  return rc;
}

void rt_pool_quiet(const kiln_context *ctx) {
  rt_pool *p = __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE);
  if (!p) return;
  unsigned g = t_gen(atomic_load_explicit(&p->ticket, memory_order_relaxed));
  if (atomic_load_explicit(&p->quiet, memory_order_relaxed) != g)
    atomic_store_explicit(&p->quiet, g, memory_order_relaxed);
}

int rt_pool_workers(const kiln_context *ctx) {
  if (!ctx) return 0;
  rt_pool *p = __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE);
  if (!p) return 0;
  pthread_mutex_lock(&p->submit);
  int n = p->nworkers;
  pthread_mutex_unlock(&p->submit);
  return n;
}

int rt_pool_sleeping(const kiln_context *ctx) {
  rt_pool *p = ctx ? __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE) : NULL;
  return p ? atomic_load(&p->sleepers) : 0;
}

/* ---- public ---- */

KILN_API int kiln_context_set_num_threads(kiln_context *ctx, int n, kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_num_threads: context is NULL");
  if (n < 0 || n > RT_POOL_MAX_THREADS)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_num_threads: %d threads; expected 1 to %d, or 0 for the default",
                  n, RT_POOL_MAX_THREADS);
  rt_pool *p = pool_get(ctx);
  if (!p) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating the thread pool");
  int want = n ? n : default_threads();
  pthread_mutex_lock(&p->submit);
  if (want != atomic_load(&p->nthreads)) {
    stop_workers(p); /* restarted lazily, with the new count, by the next split */
    atomic_store(&p->nthreads, want);
  }
  pthread_mutex_unlock(&p->submit);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_context_num_threads(const kiln_context *ctx) {
  if (!ctx) return -1;
  rt_pool *p = __atomic_load_n(&ctx->pool, __ATOMIC_ACQUIRE);
  return p ? atomic_load(&p->nthreads) : default_threads();
}
