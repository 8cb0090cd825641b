/* device_emu.c - simt-emu (device.h): runs SIMT kernels (jit/simt_abi.h) on
 * the CPU with a GPU's launch geometry, so the GPU path can be tested on a
 * machine without a GPU.
 *
 * A launch runs the grid's blocks one after another on the calling thread.
 * Within a block the threads start in thread-id order on fibers (stacks of
 * their own): a fiber runs one thread after another to the end, and only a
 * thread that reaches the barrier keeps its fiber (the next thread starts
 * on a fresh one). So a kernel without barriers runs its whole block on one
 * fiber with no switch per thread, and one with barriers gets a fiber per
 * thread. When every live thread waits at the barrier they are released
 * together and resumed in thread-id order. A block where some threads
 * exited while others wait at a barrier is a barrier divergence: the launch
 * fails with a message naming the block (on a GPU it would hang or be
 * undefined). Shared memory is per block, zeroed, 16-byte aligned. Memory
 * is host memory (a kiln_devptr is a host address), so copies are memmove.
 * Fibers switch in user space (a few instructions of assembly saving the
 * callee-saved registers, x86-64 and AArch64); elsewhere (or built with
 * KILN_EMU_UCONTEXT) through ucontext (swapcontext, which also saves the
 * signal mask: a system call per switch).
 *
 * Code: a module is a host object (jit_simt_emit for simt-emu) linked into
 * the device's own JIT engine when its kernel is first asked for; with
 * KILN_PERF=1 it gets a line in perf's map (named by its function,
 * "kiln simt-emu kiln_3_matmul") and is registered with debuggers, as host
 * kernels are (perf_map.h).
 * Recording (device.h graph_*): a graph is the list of launches and copies
 * the recording thread made (the recorder is thread-local, so other
 * threads' launches run as usual); running it makes them in order and
 * stops at the first failure.
 * Guarantees: no state outlives a launch; a failed launch leaves nothing
 * allocated; launches from several threads at once are independent (all
 * scheduler state is per launch). Under AddressSanitizer the fiber switches
 * are annotated so ASan follows the stacks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "device.h"
#include "jit/simt_abi.h"
#include "perf_map.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#define EMU_STACK_BYTES (256u << 10) /* per fiber; pages are touched only as used */
#define EMU_STACK_COLOR (65u * 64)   /* see run_block */
#define EMU_MAX_THREADS 1024         /* per block, as on current GPUs */
#define EMU_MAX_SHARED (228u << 10)  /* per block, like sm_90's opt-in maximum */

/* ---- contexts: switch stacks in user space where we know the ABI ----
 * emu_ctx_make(c, stack, size, entry, arg): c, once switched to, runs
 * entry(arg) on the stack (entry never returns);
 * emu_ctx_switch(from, to): save the current context in from, resume to. */

typedef void (*emu_entry_fn)(void *arg);

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(KILN_EMU_UCONTEXT)

typedef struct emu_ctx {
  void *sp; /* the saved stack pointer; the callee-saved registers lie above it */
} emu_ctx;

/* dev_emu_switch(void **save_sp, void *load_sp): push the callee-saved
 * registers, store sp in *save_sp, load load_sp, pop the other context's
 * registers, return into it. dev_emu_start: a new context's first return
 * address; it calls the entry (kept in a callee-saved register) with the
 * argument (another one). The FP control registers are not switched: every
 * fiber runs on the launching thread, which keeps them. */
void dev_emu_switch(void **save_sp, void *load_sp) __attribute__((visibility("hidden")));
extern const char dev_emu_start[] __attribute__((visibility("hidden")));

#if defined(__x86_64__)
/* SysV: rbx, rbp, r12-r15 are callee-saved. A new frame holds, from sp up:
 * r15 r14 r13 r12(entry) rbx(arg) rbp(0) ret(dev_emu_start). */
#define EMU_FRAME_WORDS 7
__asm__(".text\n"
        ".p2align 4\n"
        ".globl dev_emu_switch\n"
        ".hidden dev_emu_switch\n"
        ".type dev_emu_switch,@function\n"
        "dev_emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size dev_emu_switch, .-dev_emu_switch\n"
        ".globl dev_emu_start\n"
        ".hidden dev_emu_start\n"
        ".type dev_emu_start,@function\n"
        "dev_emu_start:\n"
        "  movq %rbx, %rdi\n"
        "  callq *%r12\n"
        "  ud2\n"
        ".size dev_emu_start, .-dev_emu_start\n");

static void emu_ctx_make(emu_ctx *c, char *stack, size_t size, emu_entry_fn entry, void *arg) {
  /* the top 16-byte aligned; after the pops and the ret sp is the top, so
   * the call in dev_emu_start sees the ABI's alignment */
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  void **f = (void **)top - EMU_FRAME_WORDS;
  f[0] = NULL;                     /* r15 */
  f[1] = NULL;                     /* r14 */
  f[2] = NULL;                     /* r13 */
  f[3] = (void *)(uintptr_t)entry; /* r12 */
  f[4] = arg;                      /* rbx */
  f[5] = NULL;                     /* rbp: the end of the frame chain */
  f[6] = (void *)dev_emu_start;    /* return address */
  c->sp = f;
}
#else
/* AAPCS64: x19-x28, x29 (fp), x30 (lr) and d8-d15 are callee-saved. A frame
 * of 160 bytes: x19..x30 at 0..88, d8..d15 at 96..152. A new frame: x19 =
 * arg, x20 = entry, x29 = 0, x30 = dev_emu_start. */
#define EMU_FRAME_WORDS 20
__asm__(".text\n"
        ".p2align 4\n"
        ".globl dev_emu_switch\n"
        ".hidden dev_emu_switch\n"
        ".type dev_emu_switch,%function\n"
        "dev_emu_switch:\n"
        "  sub sp, sp, #160\n"
        "  stp x19, x20, [sp, #0]\n"
        "  stp x21, x22, [sp, #16]\n"
        "  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n"
        "  stp x27, x28, [sp, #64]\n"
        "  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n"
        "  stp d10, d11, [sp, #112]\n"
        "  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mov x9, sp\n"
        "  str x9, [x0]\n"
        "  mov sp, x1\n"
        "  ldp x19, x20, [sp, #0]\n"
        "  ldp x21, x22, [sp, #16]\n"
        "  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n"
        "  ldp x27, x28, [sp, #64]\n"
        "  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n"
        "  ldp d10, d11, [sp, #112]\n"
        "  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  add sp, sp, #160\n"
        "  ret\n"
        ".size dev_emu_switch, .-dev_emu_switch\n"
        ".globl dev_emu_start\n"
        ".hidden dev_emu_start\n"
        ".type dev_emu_start,%function\n"
        "dev_emu_start:\n"
        "  mov x0, x19\n"
        "  blr x20\n"
        "  brk #0\n"
        ".size dev_emu_start, .-dev_emu_start\n");

static void emu_ctx_make(emu_ctx *c, char *stack, size_t size, emu_entry_fn entry, void *arg) {
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  void **f = (void **)top - EMU_FRAME_WORDS;
  memset(f, 0, EMU_FRAME_WORDS * sizeof *f);
  f[0] = arg;                      /* x19 */
  f[1] = (void *)(uintptr_t)entry; /* x20 */
  f[11] = (void *)dev_emu_start;   /* x30 */
  c->sp = f;
}
#endif

static void emu_ctx_switch(emu_ctx *from, emu_ctx *to) { dev_emu_switch(&from->sp, to->sp); }

#else /* other architectures: ucontext */
#include <ucontext.h>

typedef struct emu_ctx {
  ucontext_t uc;
} emu_ctx;

/* makecontext passes no pointers portably: a new context reads its entry
 * and argument here when it first runs, so the scheduler makes a context
 * just before it first switches to it (on the same thread). */
static __thread emu_entry_fn emu_start_fn;
static __thread void *emu_start_arg;

static void emu_ucontext_start(void) { emu_start_fn(emu_start_arg); }

/* Out of line: getcontext returns twice, so it stays away from the
 * caller's variables. */
static __attribute__((noinline)) void emu_ctx_make(emu_ctx *c, char *stack, size_t size,
                                                   emu_entry_fn entry, void *arg) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = NULL;
  emu_start_fn = entry;
  emu_start_arg = arg;
  makecontext(&c->uc, emu_ucontext_start, 0);
}

static void emu_ctx_switch(emu_ctx *from, emu_ctx *to) { swapcontext(&from->uc, &to->uc); }
#endif

/* ---- the block scheduler ---- */

enum { T_RUNNABLE, T_AT_BARRIER, T_DONE };

typedef struct emu_block emu_block;

typedef struct emu_fiber {
  emu_ctx ctx;
  emu_block *blk;
  char *stack;
  void *asan_fake; /* ASan's fake stack of this fiber while it is switched out */
} emu_fiber;

typedef struct emu_thread {
  jit_simt_thread t;
  emu_fiber *fiber; /* the fiber running the thread (kept while at the barrier) */
  int state;
} emu_thread;

struct emu_block {
  emu_ctx sched;
  emu_thread *th;
  int n;
  int next;         /* the first thread not started yet */
  emu_fiber *fibers; /* n, over n stacks */
  emu_fiber **idle; /* fibers free to start threads on (a stack of nidle) */
  int nidle;
  int nused; /* fibers[0, nused) have run (the idle stack hands them out in order) */
  jit_simt_kernel_fn fn;
  void **params;
  const void *sched_bottom; /* the scheduler's stack, for ASan */
  size_t sched_size;
};

/* From fiber f back to the scheduler; dying: f never runs again. */
static void switch_to_sched(emu_fiber *f, bool dying) {
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(dying ? NULL : &f->asan_fake, f->blk->sched_bottom,
                                 f->blk->sched_size);
#else
  (void)dying;
#endif
  emu_ctx_switch(&f->ctx, &f->blk->sched);
#ifdef EMU_ASAN
  if (!dying) __sanitizer_finish_switch_fiber(f->asan_fake, NULL, NULL);
#endif
}

static void emu_barrier(jit_simt_thread *t) {
  emu_thread *th = t->emu;
  th->state = T_AT_BARRIER;
  switch_to_sched(th->fiber, false);
}

/* A fiber's life: start the block's next threads one after another until
 * one of them parks here at the barrier (then a new fiber takes over) or
 * none is left; a parked thread, resumed, finishes on this fiber. */
static void fiber_main(void *arg) {
  emu_fiber *f = arg;
  emu_block *blk = f->blk;
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(NULL, &blk->sched_bottom, &blk->sched_size);
#endif
  while (blk->next < blk->n) {
    emu_thread *th = &blk->th[blk->next++];
    th->fiber = f;
    blk->fn(blk->params, &th->t);
    th->state = T_DONE;
  }
  blk->idle[blk->nidle++] = f; /* its stack is free once it has switched away */
  switch_to_sched(f, true);    /* never returns */
}

static void resume(emu_block *blk, emu_fiber *f) {
  void *fake = NULL;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(&fake, f->stack, EMU_STACK_BYTES);
#endif
  emu_ctx_switch(&blk->sched, &f->ctx);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
  (void)fake;
#endif
}

/* Run one block; 0, or -1 with st on a barrier divergence. */
static int run_block(emu_block *blk, const uint32_t ctaid[3], const rt_launch_dims *g,
                     void *shared, const char *label, kiln_status *st) {
  if (shared) memset(shared, 0, g->shared_bytes);
  int i = 0;
  for (uint32_t z = 0; z < g->block[2]; z++)
    for (uint32_t y = 0; y < g->block[1]; y++)
      for (uint32_t x = 0; x < g->block[0]; x++, i++) {
        emu_thread *th = &blk->th[i];
        th->state = T_RUNNABLE;
        th->fiber = NULL;
        jit_simt_thread *t = &th->t;
        t->tid[0] = x, t->tid[1] = y, t->tid[2] = z;
        for (int k = 0; k < 3; k++) {
          t->ntid[k] = g->block[k];
          t->ctaid[k] = ctaid[k];
          t->nctaid[k] = g->grid[k];
        }
        t->shared = shared;
        t->barrier = emu_barrier;
        t->emu = th;
      }
  blk->next = 0;
  blk->nidle = 0;
  for (i = blk->n - 1; i >= 0; i--) blk->idle[blk->nidle++] = &blk->fibers[i];
  /* start every thread: each fiber runs threads until one parks */
  while (blk->next < blk->n) {
    emu_fiber *f = blk->idle[--blk->nidle]; /* one is idle: at most n - 1 threads are parked */
    if (f - blk->fibers >= blk->nused) blk->nused = (int)(f - blk->fibers) + 1;
    f->blk = blk;
    f->asan_fake = NULL;
    /* stacks EMU_STACK_BYTES apart would put every fiber's frames in the
     * same cache sets: each starts at its own offset below the top */
    size_t color = (size_t)(f - blk->fibers) * EMU_STACK_COLOR % (64u << 10);
    emu_ctx_make(&f->ctx, f->stack, EMU_STACK_BYTES - color, fiber_main, f);
    resume(blk, f);
  }
  for (;;) {
    int waiting = 0, done = 0;
    for (i = 0; i < blk->n; i++) {
      waiting += blk->th[i].state == T_AT_BARRIER;
      done += blk->th[i].state == T_DONE;
    }
    if (waiting == 0) return 0;
    if (done > 0)
      return rt_err(st, KILN_ERR_RUNTIME,
                    "%s: barrier divergence in block (%u, %u, %u): %d of %d threads wait at a "
                    "barrier that %d exited threads never reach",
                    label, ctaid[0], ctaid[1], ctaid[2], waiting, blk->n, done);
    for (i = 0; i < blk->n; i++) blk->th[i].state = T_RUNNABLE;
    for (i = 0; i < blk->n; i++)
      if (blk->th[i].state == T_RUNNABLE) resume(blk, blk->th[i].fiber);
  }
}

/* ---- recording ---- */

typedef struct emu_step {
  void *fn; /* NULL: a copy */
  rt_launch_dims dims;
  void **params;
  kiln_devptr dst, src;
  size_t n;
} emu_step;

typedef struct emu_graph {
  const kiln_device *dev;
  emu_step *steps;
  int n, cap;
  bool oom; /* a step could not be recorded: graph_end fails */
} emu_graph;

static __thread emu_graph *emu_recording; /* this thread's, while it records */

/* Record a step when this thread records on d; false when it does not. */
static bool record(const kiln_device *d, const emu_step *step) {
  emu_graph *r = emu_recording;
  if (!r || r->dev != d) return false;
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    emu_step *grown = realloc(r->steps, sizeof *grown * (size_t)cap);
    if (!grown) {
      r->oom = true;
      return true;
    }
    r->steps = grown;
    r->cap = cap;
  }
  r->steps[r->n++] = *step;
  return true;
}

static int emu_launch_now(kiln_device *d, void *fn, const rt_launch_dims *g, void **params,
                          kiln_status *st);

static int emu_launch(kiln_device *d, void *fn, const rt_launch_dims *g, void **params,
                      kiln_status *st) {
  emu_step step = {.fn = fn, .dims = *g, .params = params};
  if (record(d, &step)) return 0;
  return emu_launch_now(d, fn, g, params, st);
}

static int emu_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                       kiln_status *st) {
  emu_step step = {.dst = dst, .src = src, .n = n};
  if (record(d, &step)) return 0;
  return rt_host_copy_dd(d, dst, src, n, st);
}

static int emu_graph_begin(kiln_device *d, kiln_status *st) {
  if (emu_recording)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: this thread is already recording",
                  d->label);
  if (!(emu_recording = calloc(1, sizeof *emu_recording)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  emu_recording->dev = d;
  return 0;
}

static void emu_graph_free(kiln_device *d, void *graph) {
  (void)d;
  emu_graph *r = graph;
  if (!r) return;
  free(r->steps);
  free(r);
}

static int emu_graph_end(kiln_device *d, void **graph, kiln_status *st) {
  emu_graph *r = emu_recording;
  if (!r || r->dev != d)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: graph end without a graph begin",
                  d->label);
  emu_recording = NULL;
  if (r->oom) {
    emu_graph_free(d, r);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory recording launches", d->label);
  }
  *graph = r;
  return 0;
}

static int emu_graph_launch(kiln_device *d, void *graph, kiln_status *st) {
  const emu_graph *r = graph;
  for (int i = 0; i < r->n; i++) {
    const emu_step *s = &r->steps[i];
    int rc = s->fn ? emu_launch_now(d, s->fn, &s->dims, s->params, st)
                   : rt_host_copy_dd(d, s->dst, s->src, s->n, st);
    if (rc < 0) return -1;
  }
  return 0;
}

static int emu_launch_now(kiln_device *d, void *fn, const rt_launch_dims *g, void **params,
                          kiln_status *st) {
  uint64_t nthreads = (uint64_t)g->block[0] * g->block[1] * g->block[2];
  if (nthreads > EMU_MAX_THREADS)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "%s: a block of %ux%ux%u = %llu threads (at most %d)", d->label, g->block[0],
                  g->block[1], g->block[2], (unsigned long long)nthreads, EMU_MAX_THREADS);
  if (g->shared_bytes > EMU_MAX_SHARED)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: %u bytes of shared memory (at most %u)",
                  d->label, g->shared_bytes, EMU_MAX_SHARED);
  emu_block blk = {0};
  blk.n = (int)nthreads;
  blk.fn = (jit_simt_kernel_fn)(uintptr_t)fn;
  blk.params = params;
  blk.th = calloc((size_t)blk.n, sizeof *blk.th);
  blk.fibers = calloc((size_t)blk.n, sizeof *blk.fibers);
  blk.idle = calloc((size_t)blk.n, sizeof *blk.idle);
  /* a stack per thread at most (a fiber per parked thread); untouched
   * pages cost nothing, and a kernel without barriers touches one stack */
  size_t stack_bytes = (size_t)blk.n * EMU_STACK_BYTES;
  char *stacks = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *shared = g->shared_bytes ? rt_aligned_alloc(g->shared_bytes) : NULL;
  int rc = 0;
  if (!blk.th || !blk.fibers || !blk.idle || stacks == MAP_FAILED ||
      (g->shared_bytes && !shared)) {
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory for a block of %d threads",
                d->label, blk.n);
    goto done;
  }
  for (int i = 0; i < blk.n; i++) blk.fibers[i].stack = stacks + (size_t)i * EMU_STACK_BYTES;
  uint32_t c[3];
  for (c[2] = 0; rc == 0 && c[2] < g->grid[2]; c[2]++)
    for (c[1] = 0; rc == 0 && c[1] < g->grid[1]; c[1]++)
      for (c[0] = 0; rc == 0 && c[0] < g->grid[0]; c[0]++)
        rc = run_block(&blk, c, g, shared, d->label, st);
done:
  free(shared);
#ifdef EMU_ASAN
  /* frames that never returned (a fiber's first, a thread abandoned at a
   * divergence) leave their redzones poisoned */
  if (stacks != MAP_FAILED) ASAN_UNPOISON_MEMORY_REGION(stacks, (size_t)blk.nused * EMU_STACK_BYTES);
#endif
  if (stacks != MAP_FAILED) munmap(stacks, stack_bytes);
  free(blk.th);
  free(blk.fibers);
  free(blk.idle);
  return rc;
}

/* ---- code: host objects of SIMT kernels (jit_simt_emit for simt-emu),
 * linked into a JIT engine of the device's own. One kernel per module.
 * The engine has one symbol namespace where a GPU has one per module: two
 * modules defining the same function with the same object bytes (two
 * models of one graph on this device) share one load, counted; the same
 * name with other bytes is refused with a message. ---- */

typedef struct emu_load {
  char *name;
  void *obj; /* the bytes loaded under name */
  size_t len;
  jit_code *code;
  jit_kernel_fn fn;
  int refs;
  struct emu_load *next;
} emu_load;

typedef struct emu_dev {
  pthread_mutex_t lock; /* the engine is not safe to drive from two threads */
  jit_engine *jit;      /* created at the first module load */
  emu_load *loads;      /* functions loaded into jit, by name */
} emu_dev;

typedef struct emu_module {
  void *obj;
  size_t len;
  emu_load *load; /* set at the first module_function */
} emu_module;

static int emu_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                           kiln_status *st) {
  emu_module *m = calloc(1, sizeof *m);
  if (!m || !(m->obj = malloc(len ? len : 1))) {
    free(m);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory loading a module", d->label);
  }
  memcpy(m->obj, image, len);
  m->len = len;
  *mod = m;
  return 0;
}

static void emu_module_unload(kiln_device *d, void *mod) {
  emu_dev *e = d->impl;
  emu_module *m = mod;
  if (m->load) {
    pthread_mutex_lock(&e->lock);
    if (--m->load->refs == 0) {
      emu_load **p = &e->loads;
      while (*p != m->load) p = &(*p)->next;
      *p = m->load->next;
      jit_code_free(e->jit, m->load->code);
      free(m->load->name);
      free(m->load->obj);
      free(m->load);
    }
    pthread_mutex_unlock(&e->lock);
  }
  free(m->obj);
  free(m);
}

static int emu_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                               kiln_status *st) {
  emu_dev *e = d->impl;
  emu_module *m = mod;
  if (m->load) {
    if (strcmp(m->load->name, name) != 0)
      return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': this module holds '%s' only",
                    d->label, name, m->load->name);
    *fn = (void *)(uintptr_t)m->load->fn;
    return 0;
  }
  char err[1024] = "";
  int rc = 0;
  pthread_mutex_lock(&e->lock);
  emu_load *l = e->loads;
  while (l && strcmp(l->name, name) != 0) l = l->next;
  if (l && (l->len != m->len || memcmp(l->obj, m->obj, m->len) != 0)) {
    rc = rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                "%s: kernel '%s': another module already defines that function with other code "
                "(the emulator has one symbol namespace)",
                d->label, name);
  } else if (!l) {
    if (!e->jit && (e->jit = jit_engine_new(err, sizeof err)) && rt_perf_map_wanted())
      jit_engine_enable_debugger(e->jit, err, sizeof err); /* best effort, as on the host */
    err[0] = 0;
    l = calloc(1, sizeof *l);
    if (l) l->name = strdup(name);
    if (l && l->name && e->jit) {
      l->obj = m->obj; /* the module's copy: kept alive by the load, the module takes none */
      l->len = m->len;
      l->code = jit_load_object(e->jit, l->obj, l->len, name, &l->fn, err, sizeof err);
    }
    if (!l || !l->code) {
      rc = rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': %s", d->label, name,
                  err[0] ? err : "out of memory");
      if (l) free(l->name);
      free(l);
      l = NULL;
    } else {
      m->obj = NULL; /* now the load's */
      l->next = e->loads;
      e->loads = l;
      /* KILN_PERF: perf names the kernel (its name says node and op) */
      if (rt_perf_map_wanted())
        rt_perf_map_kernel(l->obj, l->len, name, (uintptr_t)l->fn, kiln_device_label(d));
    }
  }
  if (l) {
    l->refs++;
    m->load = l;
    *fn = (void *)(uintptr_t)l->fn;
  }
  pthread_mutex_unlock(&e->lock);
  return rc;
}

static int emu_count(kiln_status *st) {
  (void)st;
  return 1;
}

static int emu_open(kiln_device *d, kiln_status *st) {
  emu_dev *e = calloc(1, sizeof *e);
  if (!e || pthread_mutex_init(&e->lock, NULL) != 0) {
    free(e);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  }
  d->impl = e;
  snprintf(d->desc, sizeof d->desc,
           "SIMT emulator on the host CPU (blocks in order, threads on fibers)");
  return 0;
}

static void emu_close(kiln_device *d) {
  emu_dev *e = d->impl;
  if (!e) return;
  jit_engine_free(e->jit); /* modules are unloaded first (kiln_device_close's contract) */
  pthread_mutex_destroy(&e->lock);
  free(e);
  d->impl = NULL;
}

const rt_device_ops rt_device_emu_ops = {
    .count = emu_count,
    .open = emu_open,
    .close = emu_close,
    .alloc = rt_host_alloc,
    .free = rt_host_free,
    .copy_to = rt_host_copy_to,
    .copy_from = rt_host_copy_from,
    .copy_dd = emu_copy_dd,
    .synchronize = rt_host_synchronize,
    .module_load = emu_module_load,
    .module_unload = emu_module_unload,
    .module_function = emu_module_function,
    .launch = emu_launch,
    .graph_begin = emu_graph_begin,
    .graph_end = emu_graph_end,
    .graph_launch = emu_graph_launch,
    .graph_free = emu_graph_free,
};
