/* perf_map.h - internal to src/: name JIT kernels for perf (perf_map.c).
 *
 * perf's convention for JIT code: /tmp/perf-PID.map, one line per symbol,
 * "START SIZE NAME" (hex, no 0x). With KILN_PERF=1 the memory cache appends
 * a line per kernel it loads, naming it by its ops and shape ("kiln
 * mo.add+mo.relu [d0, 128] f32 kiln_k_<hex>"), so `perf report` shows that
 * instead of [JIT] tid. Lines are appended with one write(2) on an
 * O_APPEND descriptor, so threads and contexts of one process never
 * interleave. The file is left for perf to read after the process exits
 * (perf never removes it either). An unloaded kernel's line stays: perf
 * maps hold no removals. */
#ifndef KILN_SRC_PERF_MAP_H
#define KILN_SRC_PERF_MAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* KILN_PERF set to something other than "" or "0". */
bool rt_perf_map_wanted(void);
/* The lines of a kernel loaded at addr from the ELF object obj[0..len):
 * its entry fn_name, and each other function of the object placed beside
 * it (same section: the loader keeps their distance), all named with
 * label. 0, or -1 (errno) when the map cannot be written. */
int rt_perf_map_kernel(const void *obj, size_t len, const char *fn_name, uintptr_t addr,
                       const char *label);
/* Call fn(ud, name, size) for each function symbol of the ELF object
 * obj[0..len) with a nonzero size. */
void rt_elf_each_function(const void *obj, size_t len,
                          void (*fn)(void *ud, const char *name, size_t size), void *ud);
/* Append "addr size kiln <label> <fn_name>" to /tmp/perf-PID.map (size 0:
 * nothing is written). 0, or -1 when the file cannot be written (errno). */
int rt_perf_map_add(uintptr_t addr, size_t size, const char *label, const char *fn_name);
/* Name the functions of the prebuilt objects e loaded (GEMM, conv; jit.h) in the map; takes
 * jit_lock for the lookups. Nothing when e has none. 0, or -1 (errno) when
 * the map cannot be written. */
struct jit_engine;
int rt_perf_map_prebuilt(struct jit_engine *e, pthread_mutex_t *jit_lock);
/* The map's path for this process into buf. */
const char *rt_perf_map_path(char *buf, size_t cap);

#endif
