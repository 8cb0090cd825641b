/* device_emu.c - simt-emu (device.h): runs SIMT kernels (jit/simt_abi.h) on
 * the CPU with a GPU's launch geometry, so the GPU path can be tested on a
 * machine without a GPU.
 *
 * A launch runs the grid's blocks one after another on the calling thread.
 * Within a block every thread is a fiber (ucontext) with its own stack; the
 * scheduler runs the fibers in thread-id order until each returns or reaches
 * the barrier; when all live threads wait at the barrier they are released
 * together. A block where some threads exited while others wait at a barrier
 * is a barrier divergence: the launch fails with a message naming the block
 * (on a GPU it would hang or be undefined). Shared memory is per block,
 * zeroed, 16-byte aligned. Memory is host memory (a kiln_devptr is a host
 * address), so copies are memmove.
 *
 * Code: a module is a host object (jit_simt_emit for simt-emu) linked into
 * the device's own JIT engine when its kernel is first asked for.
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
#include <ucontext.h>

#include "device.h"
#include "jit/simt_abi.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define EMU_STACK_BYTES (256u << 10) /* per thread; pages are touched only as used */
#define EMU_MAX_THREADS 1024         /* per block, as on current GPUs */
#define EMU_MAX_SHARED (228u << 10)  /* per block, like sm_90's opt-in maximum */

enum { F_RUNNABLE, F_AT_BARRIER, F_DONE };

typedef struct emu_block emu_block;

typedef struct emu_fiber {
  ucontext_t uc;
  jit_simt_thread t;
  emu_block *blk;
  char *stack;
  int state;
  void *asan_fake; /* ASan's fake stack of this fiber while it is switched out */
} emu_fiber;

struct emu_block {
  ucontext_t sched;
  emu_fiber *f;
  int n;
  int cur;
  jit_simt_kernel_fn fn;
  void **params;
  const void *sched_bottom; /* the scheduler's stack, for ASan */
  size_t sched_size;
};

static void switch_to_sched(emu_fiber *f, bool dying) {
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(dying ? NULL : &f->asan_fake, f->blk->sched_bottom,
                                 f->blk->sched_size);
#else
  (void)dying;
#endif
  swapcontext(&f->uc, &f->blk->sched);
#ifdef EMU_ASAN
  if (!dying) __sanitizer_finish_switch_fiber(f->asan_fake, NULL, NULL);
#endif
}

static void emu_barrier(jit_simt_thread *t) {
  emu_fiber *f = t->emu;
  f->state = F_AT_BARRIER;
  switch_to_sched(f, false);
}

/* The block whose fiber is starting (set by the scheduler before it
 * switches; makecontext passes no pointers portably). */
static __thread emu_block *emu_current;

/* Fiber entry: the block's current fiber runs the kernel to its end. */
static void fiber_main(void) {
  emu_block *blk = emu_current;
  emu_fiber *f = &blk->f[blk->cur];
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(NULL, &blk->sched_bottom, &blk->sched_size);
#endif
  blk->fn(blk->params, &f->t);
  f->state = F_DONE;
  switch_to_sched(f, true); /* never returns */
}

static void resume(emu_block *blk, int i) {
  emu_fiber *f = &blk->f[i];
  blk->cur = i;
  emu_current = blk;
  void *fake = NULL;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(&fake, f->stack, EMU_STACK_BYTES);
#endif
  swapcontext(&blk->sched, &f->uc);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
  (void)fake;
#endif
}

/* Point f's context at fiber_main on its own stack. Out of line: getcontext
 * returns twice, so it stays away from the caller's loop variables. */
static __attribute__((noinline)) void make_fiber(emu_fiber *f) {
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = EMU_STACK_BYTES;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, fiber_main, 0);
}

/* Run one block; 0, or -1 with st on a barrier divergence. */
static int run_block(emu_block *blk, const uint32_t ctaid[3], const rt_launch_dims *g,
                     void *shared, const char *label, kiln_status *st) {
  if (shared) memset(shared, 0, g->shared_bytes);
  int i = 0;
  for (uint32_t z = 0; z < g->block[2]; z++)
    for (uint32_t y = 0; y < g->block[1]; y++)
      for (uint32_t x = 0; x < g->block[0]; x++, i++) {
        emu_fiber *f = &blk->f[i];
        f->blk = blk;
        f->state = F_RUNNABLE;
        f->asan_fake = NULL;
        jit_simt_thread *t = &f->t;
        t->tid[0] = x, t->tid[1] = y, t->tid[2] = z;
        for (int k = 0; k < 3; k++) {
          t->ntid[k] = g->block[k];
          t->ctaid[k] = ctaid[k];
          t->nctaid[k] = g->grid[k];
        }
        t->shared = shared;
        t->barrier = emu_barrier;
        t->emu = f;
        make_fiber(f);
      }
  for (;;) {
    int waiting = 0, done = 0;
    for (i = 0; i < blk->n; i++) {
      if (blk->f[i].state == F_RUNNABLE) resume(blk, i);
      waiting += blk->f[i].state == F_AT_BARRIER;
      done += blk->f[i].state == F_DONE;
    }
    if (waiting == 0) return 0;
    if (done > 0)
      return rt_err(st, KILN_ERR_RUNTIME,
                    "%s: barrier divergence in block (%u, %u, %u): %d of %d threads wait at a "
                    "barrier that %d exited threads never reach",
                    label, ctaid[0], ctaid[1], ctaid[2], waiting, blk->n, done);
    for (i = 0; i < blk->n; i++) blk->f[i].state = F_RUNNABLE;
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
  blk.f = calloc((size_t)blk.n, sizeof *blk.f);
  size_t stack_bytes = (size_t)blk.n * EMU_STACK_BYTES;
  char *stacks = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *shared = g->shared_bytes ? rt_aligned_alloc(g->shared_bytes) : NULL;
  int rc = 0;
  if (!blk.f || stacks == MAP_FAILED || (g->shared_bytes && !shared)) {
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory for a block of %d threads",
                d->label, blk.n);
    goto done;
  }
  for (int i = 0; i < blk.n; i++) blk.f[i].stack = stacks + (size_t)i * EMU_STACK_BYTES;
  uint32_t c[3];
  for (c[2] = 0; rc == 0 && c[2] < g->grid[2]; c[2]++)
    for (c[1] = 0; rc == 0 && c[1] < g->grid[1]; c[1]++)
      for (c[0] = 0; rc == 0 && c[0] < g->grid[0]; c[0]++)
        rc = run_block(&blk, c, g, shared, d->label, st);
done:
  free(shared);
  if (stacks != MAP_FAILED) munmap(stacks, stack_bytes);
  free(blk.f);
  return rc;
}

/* ---- code: host objects of SIMT kernels (jit_simt_emit for simt-emu),
 * linked into a JIT engine of the device's own. One kernel per module. ---- */

typedef struct emu_dev {
  pthread_mutex_t lock; /* the engine is not safe to drive from two threads */
  jit_engine *jit;      /* created at the first module load */
} emu_dev;

typedef struct emu_module {
  void *obj;
  size_t len;
  jit_code *code; /* loaded at the first module_function */
  jit_kernel_fn fn;
  char *name;
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
  if (m->code) {
    pthread_mutex_lock(&e->lock);
    jit_code_free(e->jit, m->code);
    pthread_mutex_unlock(&e->lock);
  }
  free(m->name);
  free(m->obj);
  free(m);
}

static int emu_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                               kiln_status *st) {
  emu_dev *e = d->impl;
  emu_module *m = mod;
  if (m->code) {
    if (strcmp(m->name, name) != 0)
      return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': this module holds '%s' only",
                    d->label, name, m->name);
    *fn = (void *)(uintptr_t)m->fn;
    return 0;
  }
  char err[1024] = "";
  pthread_mutex_lock(&e->lock);
  if (!e->jit) e->jit = jit_engine_new(err, sizeof err);
  if (e->jit) m->code = jit_load_object(e->jit, m->obj, m->len, name, &m->fn, err, sizeof err);
  pthread_mutex_unlock(&e->lock);
  if (!m->code)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': %s", d->label, name, err);
  if (!(m->name = strdup(name))) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  *fn = (void *)(uintptr_t)m->fn;
  return 0;
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
           "SIMT emulator on the host CPU (blocks in order, threads as fibers)");
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
