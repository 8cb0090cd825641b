/* cache_sign.c - Ed25519 keys and bundle signatures for `kiln cache keygen`,
 * `export --sign` and `import --trust-key` (cache_cli.h).
 *
 * A cache entry's key is a hash of what went into the compile, not of the
 * object code, so nothing in a bundle proves that its objects came from
 * that compile: only a signature by a key the importer trusts does. The
 * crypto is libsodium's (crypto_sign, Ed25519ph: a well-kept, audited
 * library; kiln implements no cryptography of its own).
 *
 * Key files, text, one hex line after a header line:
 *   kiln-ed25519-secret-key 1\n<128 hex: libsodium's secret key>\n  (mode 0600)
 *   kiln-ed25519-public-key 1\n<64 hex>\n
 * A secret key file readable by group or others is refused, as ssh does.
 * A signed bundle ends, after its "end\n" line, with one more line:
 *   signature ed25519 <64 hex public key> <128 hex signature>\n
 * The signature covers SIGN_CONTEXT then every bundle byte up to and
 * including "end\n". */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_cli.h"
#include "cli.h"

#define SECRET_MAGIC "kiln-ed25519-secret-key 1\n"
#define PUBLIC_MAGIC "kiln-ed25519-public-key 1\n"
#define SIGN_CONTEXT "kiln-cache-bundle-signature 1\n"
#define SIG_PREFIX "signature ed25519 "

static void to_hex(const uint8_t *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static bool from_hex(const char *s, size_t slen, uint8_t *out, size_t n) {
  size_t got = 0;
  return slen == 2 * n && sodium_hex2bin(out, n, s, slen, NULL, &got, NULL) == 0 && got == n;
}

/* Write text to a new file at path (O_EXCL: an existing key is never
 * overwritten) with mode. 0, or -1 after printing why. */
static int write_new(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    fprintf(stderr, "kiln cache keygen: %s: cannot create: %s%s\n", path, strerror(errno),
            errno == EEXIST ? " (remove it first: keys are never overwritten)" : "");
    return -1;
  }
  size_t n = strlen(text);
  bool ok = write(fd, text, n) == (ssize_t)n;
  if (close(fd) != 0) ok = false;
  if (!ok) {
    fprintf(stderr, "kiln cache keygen: %s: cannot write: %s\n", path, strerror(errno));
    unlink(path);
    return -1;
  }
  return 0;
}

int cli_cache_keygen(const cache_opts *o) {
  if (o->npos != 2) {
    fprintf(stderr, "kiln cache keygen: expected SECRET_KEY_FILE PUBLIC_KEY_FILE\n\n");
    cli_usage_cache(stderr);
    return CLI_USAGE;
  }
  if (sodium_init() < 0) {
    fprintf(stderr, "kiln cache keygen: libsodium failed to initialize\n");
    return CLI_ERR;
  }
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  char text[2 * crypto_sign_SECRETKEYBYTES + 64];
  snprintf(text, sizeof text, "%s", SECRET_MAGIC);
  to_hex(sk, sizeof sk, text + strlen(text));
  strcat(text, "\n");
  sodium_memzero(sk, sizeof sk);
  int rc = write_new(o->pos[0], text, 0600);
  sodium_memzero(text, sizeof text);
  if (rc != 0) return CLI_ERR;
  snprintf(text, sizeof text, "%s", PUBLIC_MAGIC);
  to_hex(pk, sizeof pk, text + strlen(text));
  strcat(text, "\n");
  if (write_new(o->pos[1], text, 0644) != 0) {
    unlink(o->pos[0]);
    return CLI_ERR;
  }
  char id[2 * crypto_sign_PUBLICKEYBYTES + 1];
  to_hex(pk, sizeof pk, id);
  printf("secret key: %s (keep it private: it signs bundles, `kiln cache export --sign`)\n"
         "public key: %s (give it to importers: `kiln cache import --trust-key`)\n"
         "key id:     %s\n",
         o->pos[0], o->pos[1], id);
  return CLI_OK;
}

/* The key file at path (magic, then n bytes in hex). 0, or -1 with why. */
static int read_key(const char *path, const char *magic, uint8_t *out, size_t n, bool secret,
                    char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    snprintf(why, whylen, "%s: cannot open: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!S_ISREG(sb.st_mode)) {
    snprintf(why, whylen, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  if (secret && (sb.st_mode & 077)) {
    snprintf(why, whylen,
             "%s: the secret key is accessible by group or others (mode %04o): anyone who reads "
             "it can sign bundles; chmod 600 '%s'",
             path, (unsigned)(sb.st_mode & 07777), path);
    close(fd);
    return -1;
  }
  char buf[512];
  ssize_t r = read(fd, buf, sizeof buf - 1);
  close(fd);
  size_t ml = strlen(magic);
  if (r < 0) r = 0;
  buf[r] = 0;
  size_t hl = r > (ssize_t)ml ? strcspn(buf + ml, "\n") : 0;
  if ((size_t)r < ml || memcmp(buf, magic, ml) != 0 || !from_hex(buf + ml, hl, out, n)) {
    snprintf(why, whylen, "%s: not a kiln %s key file (make one with `kiln cache keygen`)", path,
             secret ? "secret" : "public");
    sodium_memzero(buf, sizeof buf);
    return -1;
  }
  sodium_memzero(buf, sizeof buf);
  return 0;
}

static void sign_or_check(const uint8_t *key, const void *buf, size_t n, uint8_t *sig,
                          bool *ok) {
  crypto_sign_state s;
  crypto_sign_init(&s);
  crypto_sign_update(&s, (const unsigned char *)SIGN_CONTEXT, strlen(SIGN_CONTEXT));
  crypto_sign_update(&s, buf, n);
  if (ok) *ok = crypto_sign_final_verify(&s, sig, key) == 0;
  else crypto_sign_final_create(&s, sig, NULL, key);
}

int cli_bundle_sign(const char *secret_path, const void *buf, size_t n, char *line, size_t cap,
                    char *why, size_t whylen) {
  if (sodium_init() < 0) {
    snprintf(why, whylen, "libsodium failed to initialize");
    return -1;
  }
  uint8_t sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
  if (read_key(secret_path, SECRET_MAGIC, sk, sizeof sk, true, why, whylen) != 0) return -1;
  sign_or_check(sk, buf, n, sig, NULL);
  char pkhex[2 * crypto_sign_PUBLICKEYBYTES + 1], sighex[2 * crypto_sign_BYTES + 1];
  to_hex(sk + crypto_sign_SEEDBYTES, crypto_sign_PUBLICKEYBYTES, pkhex); /* sk = seed || pk */
  to_hex(sig, sizeof sig, sighex);
  sodium_memzero(sk, sizeof sk);
  snprintf(line, cap, "%s%s %s\n", SIG_PREFIX, pkhex, sighex);
  return 0;
}

int cli_bundle_check(const char *trailer, size_t tlen, const void *buf, size_t n,
                     const char *const *keys, int nkeys, bool trust_unsigned, char *note,
                     size_t notelen, char *why, size_t whylen) {
  note[0] = 0;
  if (tlen == 0) {
    if (trust_unsigned) {
      snprintf(note, notelen, "the bundle is not signed: imported because of --trust-unsigned");
      return 0;
    }
    snprintf(why, whylen,
             "the bundle is not signed, so nothing proves its code came from your build; sign "
             "it (kiln cache export --sign SECRET_KEY) and import with --trust-key PUBLIC_KEY, "
             "or pass --trust-unsigned to import it anyway");
    return -1;
  }
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sig[crypto_sign_BYTES];
  size_t pl = strlen(SIG_PREFIX), hp = 2 * sizeof pk, hs = 2 * sizeof sig;
  if (tlen != pl + hp + 1 + hs + 1 || memcmp(trailer, SIG_PREFIX, pl) != 0 ||
      trailer[pl + hp] != ' ' || trailer[tlen - 1] != '\n' ||
      !from_hex(trailer + pl, hp, pk, sizeof pk) ||
      !from_hex(trailer + pl + hp + 1, hs, sig, sizeof sig)) {
    snprintf(why, whylen, "expected nothing or one 'signature ed25519 KEY SIGNATURE' line after "
                          "'end': the bundle is damaged or was changed");
    return -1;
  }
  char id[2 * crypto_sign_PUBLICKEYBYTES + 1];
  to_hex(pk, sizeof pk, id);
  if (nkeys == 0) {
    if (trust_unsigned) {
      snprintf(note, notelen, "the bundle is signed by key %s, not checked (no --trust-key; "
                              "imported because of --trust-unsigned)", id);
      return 0;
    }
    snprintf(why, whylen, "the bundle is signed by key %s, but no --trust-key PUBLIC_KEY was "
                          "given to check it against (or pass --trust-unsigned)", id);
    return -1;
  }
  if (sodium_init() < 0) {
    snprintf(why, whylen, "libsodium failed to initialize");
    return -1;
  }
  for (int i = 0; i < nkeys; i++) {
    uint8_t tk[crypto_sign_PUBLICKEYBYTES];
    if (read_key(keys[i], PUBLIC_MAGIC, tk, sizeof tk, false, why, whylen) != 0) return -1;
    if (memcmp(tk, pk, sizeof pk) != 0) continue;
    bool ok = false;
    sign_or_check(tk, buf, n, sig, &ok);
    if (ok) {
      snprintf(note, notelen, "signature by %s verified", keys[i]);
      return 0;
    }
    snprintf(why, whylen, "the signature by key %s (%s) does not verify: the bundle was "
                          "changed after it was signed, or the signature is forged",
             id, keys[i]);
    return -1;
  }
  snprintf(why, whylen, "the bundle is signed by key %s, which is none of the %d --trust-key "
                        "key%s given (%s%s)",
           id, nkeys, nkeys == 1 ? "" : "s", keys[0], nkeys > 1 ? ", ..." : "");
  return -1;
}
