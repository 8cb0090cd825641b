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

bool rt_perf_map_wanted(void) {
  const char *v = getenv("KILN_PERF");
  return v && *v && strcmp(v, "0") != 0;
}

size_t rt_elf_symbol_size(const void *obj, size_t len, const char *fn_name) {
  const unsigned char *b = obj;
  if (!obj || len < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0 ||
      b[EI_CLASS] != ELFCLASS64)
    return 0;
  Elf64_Ehdr eh;
  memcpy(&eh, b, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
      (size_t)eh.e_shnum > (len - eh.e_shoff) / sizeof(Elf64_Shdr))
    return 0;
  size_t want = strlen(fn_name);
  for (int i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh, str;
    memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || sh.sh_offset > len ||
        sh.sh_size > len - sh.sh_offset)
      continue;
    memcpy(&str, b + eh.e_shoff + (size_t)sh.sh_link * sizeof str, sizeof str);
    if (str.sh_offset > len || str.sh_size > len - str.sh_offset) continue;
    for (size_t k = 0; k + sizeof(Elf64_Sym) <= sh.sh_size; k += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      memcpy(&sym, b + sh.sh_offset + k, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= str.sh_size ||
          str.sh_size - sym.st_name <= want)
        continue; /* the FILE symbol carries the same name (the module's) */
      const char *nm = (const char *)b + str.sh_offset + sym.st_name;
      if (memcmp(nm, fn_name, want + 1) == 0) return (size_t)sym.st_size;
    }
  }
  return 0;
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
