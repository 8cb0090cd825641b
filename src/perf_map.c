/* perf_map.c - /tmp/perf-PID.map lines for JIT kernels (perf_map.h). The
 * object is the ELF relocatable jit_compile_object emitted (or the disk
 * cache kept): its symbol table gives the kernel's size, and every section
 * and string offset is checked against the object's length before use. */
#include "perf_map.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit/jit.h"

bool rt_perf_map_wanted(void) {
  const char *v = getenv("KILN_PERF");
  return v && *v && strcmp(v, "0") != 0;
}

/* Each function symbol of obj: fn(ud, name, size); stops when fn returns
 * true. Every offset is checked against len. */
typedef bool each_fn(void *ud, const char *name, const Elf64_Sym *sym);
static void each_function(const void *obj, size_t len, each_fn *fn, void *ud) {
  const unsigned char *b = obj;
  if (!obj || len < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0 ||
      b[EI_CLASS] != ELFCLASS64)
    return;
  Elf64_Ehdr eh;
  memcpy(&eh, b, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
      (size_t)eh.e_shnum > (len - eh.e_shoff) / sizeof(Elf64_Shdr))
    return;
  for (int i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh, str;
    memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || sh.sh_offset > len ||
        sh.sh_size > len - sh.sh_offset)
      continue;
    memcpy(&str, b + eh.e_shoff + (size_t)sh.sh_link * sizeof str, sizeof str);
    if (str.sh_offset > len || str.sh_size > len - str.sh_offset) continue;
    const char *strs = (const char *)b + str.sh_offset;
    for (size_t k = 0; k + sizeof(Elf64_Sym) <= sh.sh_size; k += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      memcpy(&sym, b + sh.sh_offset + k, sizeof sym);
      /* FUNC only: the FILE symbol carries the module's name, which is the kernel's */
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= str.sh_size ||
          !memchr(strs + sym.st_name, 0, str.sh_size - sym.st_name))
        continue;
      if (fn(ud, strs + sym.st_name, &sym)) return;
    }
  }
}

typedef struct find_sym {
  const char *want;
  Elf64_Sym sym;
  bool found;
} find_sym;

static bool match(void *ud, const char *name, const Elf64_Sym *sym) {
  find_sym *f = ud;
  if (strcmp(name, f->want) != 0) return false;
  f->sym = *sym;
  f->found = true;
  return true;
}

typedef struct kernel_names {
  Elf64_Sym entry;
  uintptr_t addr;
  const char *label;
  int rc;
} kernel_names;

/* A function of the kernel's object beside its entry (the epilogue of a
 * GEMM, say): at the same distance from the entry as in the object. */
static bool name_helper(void *ud, const char *name, const Elf64_Sym *sym) {
  kernel_names *k = ud;
  if (sym->st_shndx != k->entry.st_shndx || sym->st_value == k->entry.st_value || !sym->st_size)
    return false;
  uintptr_t at = k->addr + (uintptr_t)sym->st_value - (uintptr_t)k->entry.st_value;
  if (rt_perf_map_add(at, (size_t)sym->st_size, k->label, name) != 0) k->rc = -1;
  return false;
}

int rt_perf_map_kernel(const void *obj, size_t len, const char *fn_name, uintptr_t addr,
                       const char *label) {
  find_sym f = {fn_name, {0}, false};
  each_function(obj, len, match, &f);
  if (!f.found) return 0;
  if (rt_perf_map_add(addr, (size_t)f.sym.st_size, label, fn_name) != 0) return -1;
  kernel_names k = {f.sym, addr, label, 0};
  each_function(obj, len, name_helper, &k);
  return k.rc;
}

typedef struct each_sym {
  void (*fn)(void *ud, const char *name, size_t size);
  void *ud;
} each_sym;

static bool forward(void *ud, const char *name, const Elf64_Sym *sym) {
  each_sym *e = ud;
  if (sym->st_size) e->fn(e->ud, name, (size_t)sym->st_size);
  return false;
}

void rt_elf_each_function(const void *obj, size_t len,
                          void (*fn)(void *ud, const char *name, size_t size), void *ud) {
  each_sym e = {fn, ud};
  each_function(obj, len, forward, &e);
}

const char *rt_perf_map_path(char *buf, size_t cap) {
  snprintf(buf, cap, "/tmp/perf-%d.map", (int)getpid());
  return buf;
}

int rt_perf_map_add(uintptr_t addr, size_t size, const char *label, const char *fn_name) {
  if (!size) return 0;
  char path[64], line[640];
  int n = snprintf(line, sizeof line, "%lx %zx kiln %s%s%s\n", (unsigned long)addr, size,
                   label && *label ? label : "", label && *label ? " " : "", fn_name);
  if (n < 0 || (size_t)n >= sizeof line) { /* cut: keep the function name whole */
    n = snprintf(line, sizeof line, "%lx %zx kiln %s\n", (unsigned long)addr, size, fn_name);
  }
  int fd = open(rt_perf_map_path(path, sizeof path), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                0644);
  if (fd < 0) return -1;
  ssize_t w = write(fd, line, (size_t)n);
  int e = errno;
  close(fd);
  errno = e;
  return w == n ? 0 : -1;
}

typedef struct prebuilt_names {
  jit_engine *e;
  int rc;
  const char *what; /* the object's label in the map */
} prebuilt_names;

/* Under the JIT lock: one line per prebuilt function (the lookups only
 * read what add_prebuilt linked at engine creation). */
static void name_prebuilt(void *ud, const char *name, size_t size) {
  prebuilt_names *p = ud;
  uint64_t addr = jit_engine_lookup(p->e, name);
  if (addr && rt_perf_map_add((uintptr_t)addr, size, p->what, name) != 0) p->rc = -1;
}

int rt_perf_map_prebuilt(jit_engine *e, pthread_mutex_t *jit_lock) {
  static const char *const WHAT[] = {"prebuilt GEMM", "prebuilt conv", "prebuilt rows"};
  prebuilt_names p = {e, 0, NULL};
  for (int i = 0; i < 3; i++) {
    const void *obj;
    size_t len;
    if (jit_engine_prebuilt_object(e, i, &obj, &len) != 0) continue;
    p.what = WHAT[i];
    pthread_mutex_lock(jit_lock);
    rt_elf_each_function(obj, len, name_prebuilt, &p);
    pthread_mutex_unlock(jit_lock);
  }
  return p.rc;
}
