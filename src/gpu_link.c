/* gpu_link.c - AMDGPU code objects (gpu_link.h): write the relocatable
 * object to a private temporary directory, run ld.lld -shared on it with
 * posix_spawnp (no shell), read the result back, remove the directory.
 * The linker's stderr is captured into the status on failure. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_link.h"

extern char **environ;

static int write_all(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return close(fd);
}

static char *read_all(const char *path, size_t *len, size_t limit) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, 4096, f);
    n += r;
    if (r == 0 || n >= limit) break;
  }
  fclose(f);
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Run argv[0] with stderr into errpath; its exit status, or -1 (errno) when
 * it could not start. */
static int run(char *const *argv, const char *errpath) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int rt_link_amdgpu(const void *obj, size_t len, void **out, size_t *out_len, kiln_status *st) {
  *out = NULL;
  *out_len = 0;
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kiln-link-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return rt_err(st, KILN_ERR_IO, "cannot create a temporary directory in %s: %s",
                  tmp && *tmp ? tmp : "/tmp", strerror(errno));
  char in[600], so[600], errf[600];
  snprintf(in, sizeof in, "%s/kernels.o", dir);
  snprintf(so, sizeof so, "%s/kernels.hsaco", dir);
  snprintf(errf, sizeof errf, "%s/ld.err", dir);
  int rc = -1;
  if (write_all(in, obj, len) < 0) {
    rt_err(st, KILN_ERR_IO, "cannot write %s: %s", in, strerror(errno));
    goto done;
  }
  const char *env = getenv("KILN_LLD");
  const char *cands[3] = {env && *env ? env : "ld.lld-19", env && *env ? NULL : "ld.lld", NULL};
  int status = -1;
  const char *used = NULL;
  for (int i = 0; cands[i] && status < 0; i++) {
    char *argv[] = {(char *)cands[i], "-shared", in, "-o", so, NULL};
    status = run(argv, errf);
    used = cands[i];
  }
  if (status < 0) {
    rt_err(st, KILN_ERR_NOT_FOUND,
           "no LLVM linker to make an AMDGPU code object: %s not found (install lld-19 or set "
           "KILN_LLD)",
           env && *env ? env : "ld.lld-19 / ld.lld");
    goto done;
  }
  if (status != 0) {
    size_t n = 0;
    char *msg = read_all(errf, &n, 4000);
    rt_err(st, KILN_ERR_COMPILE, "%s failed (status %d): %s", used, status,
           msg && n ? msg : "no message");
    free(msg);
    goto done;
  }
  char *code = read_all(so, out_len, (size_t)1 << 30);
  if (!code) {
    rt_err(st, KILN_ERR_IO, "cannot read %s: %s", so, strerror(errno));
    goto done;
  }
  *out = code;
  rc = 0;
done:
  unlink(in);
  unlink(so);
  unlink(errf);
  rmdir(dir);
  return rc;
}
