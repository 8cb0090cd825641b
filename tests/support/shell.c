/* shell.c - shell_capture and temporary directories (shell.h), shared by the
 * tests that run the CLI. */
#include "shell.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int shell_capture(const char *cmd, char **out) {
  FILE *p = popen(cmd, "r");
  cr_assert(p, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0, k;
  char *buf = malloc(cap);
  cr_assert(buf);
  while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += k;
    if (n + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      cr_assert(buf);
    }
  }
  buf[n] = 0;
  int status = pclose(p);
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void shell_dir_with_file(char *template, const char *name, const char *text) {
  cr_assert(mkdtemp(template), "mkdtemp %s", template);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", template, name);
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, 1, "%s", path);
}

void shell_rm_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}
