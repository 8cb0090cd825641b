/* shell.c - shell_capture (shell.h), shared by the tests that run the CLI. */
#include "shell.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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
