/* cache_bundle.c - `kiln cache export FILE` and `kiln cache import FILE`:
 * move the entries of a kernel cache directory to other machines of the
 * same target as one bundle file (cache_cli.h; dispatch in cache.c).
 *
 * Bundles, format 1, all numbers decimal:
 *   kiln-cache-bundle 1\n
 *   count <20 digits>\n
 *   per entry: entry <32 hex key> <bytes> <16 hex XXH3-64 of the bytes>\n
 *              <the entry file's bytes, as the store wrote them>
 *   end\n
 *   signature ed25519 <key> <signature>\n   (only with export --sign; cache_sign.c)
 * Import refuses a bundle that is not signed by a --trust-key unless
 * --trust-unsigned is given (the entry keys hash the compile's inputs, not
 * its output, so without a signature forged code would pass every check).
 * It also refuses a FILE that is not a regular file before reading it (a
 * FIFO would block the open). Import checks the whole bundle (syntax,
 * lengths, checksums, that each entry's own header names its key and that
 * the key recomputed from the components the header records is that key)
 * and its signature before it writes anything, then writes each entry
 * through the store (kc_disk_put_file: a temporary file published by
 * rename, no symbolic link followed) and reads it back (kc_disk_get checks
 * every checksum and removes a bad one). Export writes FILE.tmp-PID and renames it. So a failed export
 * or import leaves no partial file behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "../cache_disk.h"
#include "../cache_mem.h"
#include "cache_cli.h"
#include "cli.h"

#define BUNDLE_MAGIC "kiln-cache-bundle 1\n"

/* ---- export / import ---- */

typedef struct key_list {
  kc_key *v;
  size_t n, cap;
  bool oom;
} key_list;

static int keys_visit(const kc_disk_entry *e, void *user) {
  key_list *l = user;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 64;
    kc_key *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      l->oom = true;
      return 1;
    }
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = e->key;
  return 0;
}

/* Whole file at path, malloc'd (non-NULL even when empty); NULL with errno. */
static char *read_all(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return NULL;
  struct stat sb;
  char *buf = NULL;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (buf = malloc((size_t)sb.st_size + 1))) {
    size_t n = 0;
    while (n < (size_t)sb.st_size) {
      ssize_t r = read(fd, buf + n, (size_t)sb.st_size - n);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        break;
      }
      n += (size_t)r;
    }
    *len = n;
  }
  int e = errno;
  close(fd);
  errno = e;
  return buf;
}

/* Append the signature line of the bundle at path. 0, or -1 after printing
 * why. */
static int sign_file(const char *key, const char *path) {
  size_t n = 0;
  char *buf = read_all(path, &n);
  char line[256], why[512];
  int rc = -1;
  if (!buf) snprintf(why, sizeof why, "%s: cannot read back: %s", path, strerror(errno));
  else if (cli_bundle_sign(key, buf, n, line, sizeof line, why, sizeof why) == 0) {
    FILE *f = fopen(path, "ab");
    if (f && fputs(line, f) >= 0 && fclose(f) == 0) rc = 0;
    else snprintf(why, sizeof why, "%s: cannot write: %s", path, strerror(errno));
  }
  if (rc) fprintf(stderr, "kiln cache export: cannot sign: %s; nothing was exported\n", why);
  free(buf);
  return rc;
}

int cli_cache_export(const cache_opts *o, kc_disk *d) {
  if (o->npos != 1) {
    fprintf(stderr, "kiln cache export: expected one FILE\n\n");
    cli_usage_cache(stderr);
    return CLI_USAGE;
  }
  const char *file = o->pos[0];
  kiln_status *st = kiln_status_new();
  key_list l = {0};
  if (kc_disk_list(d, false, keys_visit, &l, st) < 0 || l.oom) {
    fprintf(stderr, "kiln cache export: %s\n", l.oom ? "out of memory" : kiln_status_message(st));
    free(l.v);
    kiln_status_free(st);
    return CLI_ERR;
  }
  kiln_status_free(st);
  size_t tn = strlen(file) + 32;
  char *tmp = malloc(tn);
  if (!tmp) {
    free(l.v);
    return CLI_ERR;
  }
  snprintf(tmp, tn, "%s.tmp-%d", file, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    fprintf(stderr, "kiln cache export: %s: cannot create: %s\n", tmp, strerror(errno));
    free(tmp);
    free(l.v);
    return CLI_ERR;
  }
  int rc = CLI_OK;
  uint64_t count = 0, bytes = 0;
  fprintf(f, "%scount %020llu\n", BUNDLE_MAGIC, 0ull);
  for (size_t i = 0; i < l.n && rc == CLI_OK; i++) {
    char *path = kc_disk_entry_path(d, l.v[i]);
    size_t len = 0;
    char *buf = path ? read_all(path, &len) : NULL;
    free(path);
    if (!buf) continue; /* vanished since the listing (evicted by another process) */
    char hex[33];
    kc_key_hex(l.v[i], hex);
    fprintf(f, "entry %s %zu %016llx\n", hex, len, (unsigned long long)XXH3_64bits(buf, len));
    if (fwrite(buf, 1, len, f) != len) rc = CLI_ERR;
    free(buf);
    count++;
    bytes += len;
  }
  fputs("end\n", f);
  if (rc == CLI_OK && (fseek(f, (long)strlen(BUNDLE_MAGIC), SEEK_SET) != 0 ||
                       fprintf(f, "count %020llu\n", (unsigned long long)count) < 0))
    rc = CLI_ERR;
  if (fclose(f) != 0) rc = CLI_ERR;
  if (rc == CLI_OK && o->sign && sign_file(o->sign, tmp) != 0) {
    unlink(tmp);
    free(tmp);
    free(l.v);
    return CLI_ERR;
  }
  if (rc == CLI_OK && rename(tmp, file) != 0) rc = CLI_ERR;
  char b[32];
  if (rc != CLI_OK) {
    fprintf(stderr, "kiln cache export: %s: cannot write: %s\n", file, strerror(errno));
    unlink(tmp);
  } else {
    if (o->sign) printf("signed with %s\n", o->sign);
    printf("exported %llu entr%s (%s) from %s to %s\n", (unsigned long long)count,
           count == 1 ? "y" : "ies", cli_human_bytes(b, sizeof b, bytes), kc_disk_dir(d), file);
  }
  free(tmp);
  free(l.v);
  return rc;
}

typedef struct bundle_entry {
  kc_key key;
  const char *bytes;
  size_t len;
} bundle_entry;

/* Read the line at buf[*off] (up to '\n', at most 200 bytes) into line. */
static bool bundle_line(const char *buf, size_t n, size_t *off, char *line, size_t cap) {
  size_t i = *off, k = 0;
  while (i < n && buf[i] != '\n' && k + 1 < cap && k < 200) line[k++] = buf[i++];
  if (i >= n || buf[i] != '\n') return false;
  line[k] = 0;
  *off = i + 1;
  return true;
}

/* The key recomputed from the components an entry's header records must be
 * the key it is filed under: a bundle cannot plant code under the key of a
 * different kernel. 0, or -1 with why. */
static int entry_key_check(const char *bytes, size_t len, kc_key key, char *why, size_t whylen) {
  kc_key hk;
  kc_component *c = NULL;
  int nc = 0;
  char pwhy[200];
  if (kc_entry_parse(bytes, len, &hk, &c, &nc, pwhy, sizeof pwhy) < 0) {
    snprintf(why, whylen, "bad entry header: %s", pwhy);
    return -1;
  }
  rt_key_parts parts;
  const char **slot[RT_KEY_NPARTS] = {&parts.kernel,   &parts.triple,       &parts.cpu,
                                      &parts.features, &parts.options,      &parts.kiln_version,
                                      &parts.llvm_version};
  memset(&parts, 0, sizeof parts);
  int rc = 0;
  for (int i = 0; i < nc && rc == 0; i++) {
    int p = 0;
    while (p < RT_KEY_NPARTS && strcmp(rt_key_part_name(p), c[i].name) != 0) p++;
    if (p == RT_KEY_NPARTS) continue; /* a component that is not part of the key */
    if (*slot[p]) {
      snprintf(why, whylen, "component '%s' recorded twice", c[i].name);
      rc = -1;
    }
    *slot[p] = c[i].value;
  }
  for (int p = 0; p < RT_KEY_NPARTS && rc == 0; p++)
    if (!*slot[p]) {
      snprintf(why, whylen, "key component '%s' is not recorded", rt_key_part_name(p));
      rc = -1;
    }
  if (rc == 0) {
    kc_key k;
    rt_key_compute(&parts, &k);
    if (k.lo != key.lo || k.hi != key.hi || hk.lo != key.lo || hk.hi != key.hi) {
      char want[33];
      kc_key_hex(k, want);
      snprintf(why, whylen,
               "its key does not match the components it records (they hash to %s): a tampered "
               "or damaged entry",
               want);
      rc = -1;
    }
  }
  kc_components_free(c, nc);
  return rc;
}

/* Check the whole bundle; entries into *out (pointing into buf) and the
 * length up to and including "end\n" into *body (what follows is the
 * signature line, if any). 0, or -1 with why and the offset of the trouble
 * in *bad_off. */
static int bundle_parse(const char *buf, size_t n, bundle_entry **out, size_t *nout,
                        size_t *body, size_t *bad_off, char *why, size_t whylen) {
  size_t off = 0, ml = strlen(BUNDLE_MAGIC);
  char line[256];
  *out = NULL;
  *nout = 0;
  *bad_off = 0;
  if (n < ml || memcmp(buf, BUNDLE_MAGIC, ml) != 0) {
    snprintf(why, whylen, n == 0 ? "the file is empty" : "not a kiln cache bundle (bad magic)");
    return -1;
  }
  off = ml;
  *bad_off = off;
  unsigned long long count;
  char extra;
  if (!bundle_line(buf, n, &off, line, sizeof line) ||
      sscanf(line, "count %llu%c", &count, &extra) != 1) {
    snprintf(why, whylen, "expected 'count N'");
    return -1;
  }
  if (count > n / 64 + 1) { /* an entry takes far more than 64 bytes */
    snprintf(why, whylen, "count %llu is more than the file can hold", count);
    return -1;
  }
  bundle_entry *v = calloc((size_t)count + 1, sizeof *v);
  if (!v) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  for (unsigned long long i = 0; i < count; i++) {
    *bad_off = off;
    char hex[40];
    unsigned long long len, sum;
    int used = 0;
    if (!bundle_line(buf, n, &off, line, sizeof line) ||
        sscanf(line, "entry %32s %llu %16llx%n", hex, &len, &sum, &used) != 3 ||
        line[used] != 0 || !kc_key_parse(hex, &v[i].key)) {
      snprintf(why, whylen, "entry %llu of %llu: expected 'entry KEY BYTES CHECKSUM'%s", i + 1,
               count, off >= n ? " (the file is truncated)" : "");
      free(v);
      return -1;
    }
    if (len > n - off) {
      snprintf(why, whylen, "entry %llu of %llu (%s): %llu bytes announced, %zu left: the file "
                            "is truncated",
               i + 1, count, hex, len, n - off);
      free(v);
      return -1;
    }
    *bad_off = off;
    if (XXH3_64bits(buf + off, (size_t)len) != sum) {
      snprintf(why, whylen, "entry %llu of %llu (%s): checksum mismatch (the bundle is corrupt)",
               i + 1, count, hex);
      free(v);
      return -1;
    }
    char head[128], khex[33];
    kc_key_hex(v[i].key, khex);
    snprintf(head, sizeof head, "kiln-cache-entry\nformat %d\nkey %s\n", KC_DISK_FORMAT, khex);
    if (len < strlen(head) || memcmp(buf + off, head, strlen(head)) != 0) {
      snprintf(why, whylen, "entry %llu of %llu (%s): not a format %d cache entry for that key",
               i + 1, count, hex, KC_DISK_FORMAT);
      free(v);
      return -1;
    }
    char kwhy[256];
    if (entry_key_check(buf + off, (size_t)len, v[i].key, kwhy, sizeof kwhy) < 0) {
      snprintf(why, whylen, "entry %llu of %llu (%s): %s", i + 1, count, hex, kwhy);
      free(v);
      return -1;
    }
    v[i].bytes = buf + off;
    v[i].len = (size_t)len;
    off += (size_t)len;
  }
  *bad_off = off;
  if (!bundle_line(buf, n, &off, line, sizeof line) || strcmp(line, "end") != 0) {
    snprintf(why, whylen, "expected 'end' after %llu entries%s", count,
             off >= n ? " (the file is truncated)" : "");
    free(v);
    return -1;
  }
  *out = v;
  *nout = (size_t)count;
  *body = off;
  return 0;
}

int cli_cache_import(const cache_opts *o, kc_disk *d) {
  if (o->npos != 1) {
    fprintf(stderr, "kiln cache import: expected one FILE\n\n");
    cli_usage_cache(stderr);
    return CLI_USAGE;
  }
  const char *file = o->pos[0];
  if (kc_disk_read_only(d)) {
    fprintf(stderr, "kiln cache import: cannot import into %s: %s\n", kc_disk_dir(d),
            kc_disk_note(d));
    return CLI_ERR;
  }
  /* O_NONBLOCK: opening a FIFO must not wait for a writer */
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fprintf(stderr, "kiln cache import: %s: %s%s\n", file,
            fd < 0 ? "cannot open: " : "not a regular file",
            fd < 0 ? strerror(errno)
                   : " (a bundle is a file written by kiln cache export, not a pipe or device)");
    if (fd >= 0) close(fd);
    return CLI_ERR;
  }
  size_t n = (size_t)sb.st_size;
  const char *buf = "";
  void *map = NULL;
  if (n) {
    map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      fprintf(stderr, "kiln cache import: %s: cannot read: %s\n", file, strerror(errno));
      close(fd);
      return CLI_ERR;
    }
    buf = map;
  }
  close(fd);
  bundle_entry *v = NULL;
  size_t nv = 0, bad_off = 0, body = 0;
  char why[1024], note[512] = "";
  int rc = CLI_OK;
  if (bundle_parse(buf, n, &v, &nv, &body, &bad_off, why, sizeof why) < 0) {
    fprintf(stderr, "kiln cache import: %s: at offset %zu: %s; nothing was imported\n", file,
            bad_off, why);
    rc = CLI_ERR;
  } else if (cli_bundle_check(buf + body, n - body, buf, body, o->trust_keys, o->ntrust_keys,
                              o->trust_unsigned, note, sizeof note, why, sizeof why) < 0) {
    fprintf(stderr, "kiln cache import: %s: %s; nothing was imported\n", file, why);
    rc = CLI_ERR;
  }
  uint64_t imported = 0, replaced = 0, dropped = 0;
  kiln_status *st = kiln_status_new();
  for (size_t i = 0; rc == CLI_OK && i < nv; i++) {
    char *path = kc_disk_entry_path(d, v[i].key);
    struct stat es;
    bool existed = path && stat(path, &es) == 0;
    free(path);
    if (kc_disk_put_file(d, v[i].key, v[i].bytes, v[i].len, st) < 0) {
      fprintf(stderr, "kiln cache import: %s: %s (%llu entries imported before it are "
                      "complete)\n",
              file, kiln_status_message(st), (unsigned long long)imported);
      rc = CLI_ERR;
      break;
    }
    void *payload = NULL;
    size_t len = 0;
    int g = kc_disk_get(d, v[i].key, &payload, &len, st); /* full check; a bad one is removed */
    free(payload);
    if (g == KC_DISK_HIT) {
      imported++;
      replaced += existed;
    } else {
      dropped++;
    }
  }
  uint64_t evicted = 0;
  if (rc == CLI_OK) {
    if (kc_disk_prune(d, kc_disk_max_bytes(d), &evicted, NULL, st) < 0) evicted = 0;
    if (note[0]) printf("%s\n", note);
    printf("imported %llu entr%s into %s", (unsigned long long)imported,
           imported == 1 ? "y" : "ies", kc_disk_dir(d));
    if (replaced) printf(" (%llu were already there)", (unsigned long long)replaced);
    printf("\n");
    if (dropped)
      printf("dropped %llu entr%s that failed the store's checks\n", (unsigned long long)dropped,
             dropped == 1 ? "y" : "ies");
    if (evicted)
      printf("evicted %llu least recently used entr%s to stay within the bound\n",
             (unsigned long long)evicted, evicted == 1 ? "y" : "ies");
    printf("entries built for another target stay unused here (their keys differ)\n");
  }
  kiln_status_free(st);
  free(v);
  if (map) munmap(map, n);
  return rc;
}

