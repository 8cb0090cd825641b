/* device_cpu.c - the cpu device (device.h): host memory, synchronous
 * copies. Kernels run on the CPU through models (kiln_model_execute), not
 * through module loads, so the code entries stay NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

static int cpu_count(kiln_status *st) {
  (void)st;
  return 1;
}

/* The first "model name" line of /proc/cpuinfo, else "host CPU". */
static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "host CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    v++;
    while (*v == ' ' || *v == '\t') v++;
    snprintf(out, cap, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  fclose(f);
}

static int cpu_open(kiln_device *d, kiln_status *st) {
  (void)st;
  cpu_model(d->desc, sizeof d->desc);
  return 0;
}

static void cpu_close(kiln_device *d) { (void)d; }

int rt_host_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st) {
  void *p = rt_aligned_alloc(bytes);
  if (!p)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory allocating %zu bytes", d->label,
                  bytes);
  *out = (kiln_devptr)(uintptr_t)p;
  return 0;
}

void rt_host_free(kiln_device *d, kiln_devptr p) {
  (void)d;
  free((void *)(uintptr_t)p);
}

int rt_host_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n,
                       kiln_status *st) {
  (void)d;
  (void)st;
  memmove((void *)(uintptr_t)dst, src, n);
  return 0;
}

int rt_host_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st) {
  (void)d;
  (void)st;
  memmove(dst, (const void *)(uintptr_t)src, n);
  return 0;
}

int rt_host_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                    kiln_status *st) {
  (void)d;
  (void)st;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return 0;
}

int rt_host_synchronize(kiln_device *d, kiln_status *st) {
  (void)d;
  (void)st;
  return 0;
}

const rt_device_ops rt_device_cpu_ops = {
    .count = cpu_count,
    .open = cpu_open,
    .close = cpu_close,
    .alloc = rt_host_alloc,
    .free = rt_host_free,
    .copy_to = rt_host_copy_to,
    .copy_from = rt_host_copy_from,
    .copy_dd = rt_host_copy_dd,
    .synchronize = rt_host_synchronize,
};
