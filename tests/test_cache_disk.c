/* test_cache_disk.c - the disk cache's entry store (src/cache_disk.h), one
 * process at a time: round trips, persistence, readable components, key
 * text, and every kind of corrupt entry (a miss, removed, counted, warned
 * about). test_cache_disk_share.c covers the size bound, the environment,
 * directories and many processes at once.
 *
 * Each test runs in its own process (Criterion) with its own mkdtemp
 * directory, removed afterwards; the cache variables are unset first. */
#define _GNU_SOURCE /* nftw */
#include "cache_disk_util.h"

TestSuite(cache_disk, .init = setup, .fini = teardown, .timeout = 60);

/* ---- round trips ---- */

Test(cache_disk, put_then_get_returns_the_exact_bytes) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 5000);
  cr_assert_eq(get_check(d, 1, 5000), KC_DISK_HIT);
  cr_assert_eq(get_check(d, 2, 5000), KC_DISK_MISS, "another key misses");
  kc_disk_stats s = stats_of(d);
  cr_assert(s.enabled);
  cr_assert_str_eq(s.dir, tmp_path("c"));
  cr_assert_eq(s.hits, 1);
  cr_assert_eq(s.misses, 1);
  cr_assert_eq(s.puts, 1);
  cr_assert_eq(s.entries, 1);
  cr_assert_eq(s.max_bytes, KC_DISK_DEFAULT_MAX_BYTES);
  char *p = kc_disk_entry_path(d, key_of(1));
  cr_assert_eq(s.bytes, file_size(p));
  char hex[33];
  kc_key_hex(key_of(1), hex);
  char want[600];
  snprintf(want, sizeof want, "%s/%.2s/%s.kc", tmp_path("c"), hex, hex);
  cr_assert_str_eq(p, want, "one file per entry, named by the key, under its first byte");
  free(p);
  kc_disk_close(d);
}

Test(cache_disk, empty_payload_round_trips) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 3, 0);
  cr_assert_eq(get_check(d, 3, 0), KC_DISK_HIT);
  kc_disk_close(d);
}

Test(cache_disk, entries_persist_across_close_and_open) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 300);
  put_ok(d, 2, 70000); /* longer than the first header read */
  kc_disk_close(d);
  d = open_store(tmp_path("c"), 0);
  cr_assert_eq(get_check(d, 1, 300), KC_DISK_HIT);
  cr_assert_eq(get_check(d, 2, 70000), KC_DISK_HIT);
  kc_disk_close(d);
}

Test(cache_disk, put_replaces_an_entry) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 300);
  put_ok(d, 1, 900);
  cr_assert_eq(get_check(d, 1, 900), KC_DISK_HIT);
  cr_assert_eq(stats_of(d).entries, 1);
  kc_disk_close(d);
}

Test(cache_disk, components_are_readable_lines_in_the_file) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 100);
  char *path = kc_disk_entry_path(d, key_of(1));
  size_t n;
  char *b = slurp(path, &n);
  char hex[33], keyline[64];
  kc_key_hex(key_of(1), hex);
  snprintf(keyline, sizeof keyline, "\nkey %s\n", hex);
  cr_assert(!strncmp(b, "kiln-cache-entry\nformat 1\n", 26), "magic and version first");
  cr_assert(strstr(b, keyline));
  cr_assert(strstr(b, "\ncomponent kernel_ir=func @k(%a: tensor<?x4xf32>) {\\n  mo.relu "
                      "%a\\n}\\ttab \\\\ back \\x01 ctl\n"),
            "escaped on one line");
  cr_assert(strstr(b, "\ncomponent cpu=znver4\n"));
  cr_assert(strstr(b, "\ncomponent features=+avx2,+fma,-avx512f\n"));
  cr_assert(strstr(b, "\ncomponent llvm_version=19.1.7\n"));
  cr_assert(strstr(b, "\npayload-bytes 100\n"));
  free(b);
  free(path);
  kc_disk_close(d);
}

typedef struct listed {
  int n;
  kc_key keys[16];
  bool comps_match;
  uint64_t payload_bytes[16];
} listed;

static int collect(const kc_disk_entry *e, void *user) {
  listed *l = user;
  if (l->n < 16) {
    l->keys[l->n] = e->key;
    l->payload_bytes[l->n] = e->payload_bytes;
  }
  l->n++;
  bool ok = e->ncomponents == NCOMPS;
  for (int i = 0; ok && i < NCOMPS; i++)
    ok = !strcmp(e->components[i].name, COMPS[i].name) &&
         !strcmp(e->components[i].value, COMPS[i].value);
  l->comps_match = ok;
  return 0;
}

Test(cache_disk, list_gives_components_back_in_lru_order) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  for (int i = 0; i < 3; i++) put_ok(d, i, 100 + (size_t)i);
  char *p0 = kc_disk_entry_path(d, key_of(0)), *p1 = kc_disk_entry_path(d, key_of(1)),
       *p2 = kc_disk_entry_path(d, key_of(2));
  set_age(p0, 100);
  set_age(p1, 300);
  set_age(p2, 200);
  listed l = {0};
  cr_assert_eq(kc_disk_list(d, true, collect, &l, NULL), 0);
  cr_assert_eq(l.n, 3);
  cr_assert(l.comps_match, "components decode to what was put");
  int order[3] = {1, 2, 0};
  for (int i = 0; i < 3; i++) {
    cr_assert(l.keys[i].lo == key_of(order[i]).lo && l.keys[i].hi == key_of(order[i]).hi,
              "position %d", i);
    cr_assert_eq(l.payload_bytes[i], 100 + (uint64_t)order[i]);
  }
  free(p0), free(p1), free(p2);
  kc_disk_close(d);
}

Test(cache_disk, bad_component_name_is_an_error_and_writes_nothing) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  kiln_status *st = kiln_status_new();
  kc_component bad[] = {{"cpu name", "x"}};
  cr_assert_eq(kc_disk_put(d, key_of(1), bad, 1, "ab", 2, st), -1);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(kiln_status_message(st), "'cpu name'"), "%s", kiln_status_message(st));
  cr_assert(!entry_exists(d, 1));
  kiln_status_free(st);
  kc_disk_close(d);
}

Test(cache_disk, key_hex_round_trips) {
  kc_key k = {.lo = 0x0123456789abcdefull, .hi = 0xfedcba9876543210ull}, back;
  char hex[33];
  kc_key_hex(k, hex);
  cr_assert_str_eq(hex, "fedcba98765432100123456789abcdef");
  cr_assert(kc_key_parse(hex, &back));
  cr_assert(back.lo == k.lo && back.hi == k.hi);
  cr_assert(kc_key_parse("FEDCBA98765432100123456789ABCDEF", &back));
  cr_assert(!kc_key_parse("fedcba98765432100123456789abcde", &back), "31 digits");
  cr_assert(!kc_key_parse("fedcba98765432100123456789abcdefa", &back), "33 digits");
  cr_assert(!kc_key_parse("gedcba98765432100123456789abcdef", &back));
}

Test(cache_disk, key_bytes_are_xxh128_canonical_order) {
  XXH128_hash_t h = XXH3_128bits("kernel", 6);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  kc_key k = kc_key_from_bytes(c.digest);
  cr_assert(k.lo == h.low64 && k.hi == h.high64);
  uint8_t back[16];
  kc_key_to_bytes(k, back);
  cr_assert(memcmp(back, c.digest, 16) == 0);
  char hex[33], want[33];
  kc_key_hex(k, hex);
  for (int i = 0; i < 16; i++) snprintf(want + 2 * i, 3, "%02x", c.digest[i]);
  cr_assert_str_eq(hex, want, "file names read like the canonical hash");
}

Test(cache_disk, null_store_is_a_disabled_one) {
  void *p = (void *)1;
  size_t n = 1;
  cr_assert_eq(kc_disk_get(NULL, key_of(1), &p, &n, NULL), KC_DISK_MISS);
  cr_assert(!p && !n);
  cr_assert_eq(kc_disk_put(NULL, key_of(1), COMPS, NCOMPS, "x", 1, NULL), 0);
  kc_disk_close(NULL);
}

/* ---- corruption: every kind is a miss, removed, counted, warned about ---- */

typedef void (*mutator)(const char *path, kc_disk *d);

/* Rewrite the header's field `from` as `to` and fix the header checksum, so
 * that only the check under test can catch the change. */
static void rewrite_header(const char *path, const char *from, const char *to) {
  size_t n;
  char *b = slurp(path, &n);
  char *at = strstr(b, from), *hh = strstr(b, "header-xxh3-64 ");
  cr_assert(at && hh && at < hh);
  size_t out_cap = n + strlen(to) + 64, k = 0;
  char *o = malloc(out_cap);
  memcpy(o, b, (size_t)(at - b));
  k = (size_t)(at - b);
  k += (size_t)sprintf(o + k, "%s", to);
  size_t rest = (size_t)(hh - at) - strlen(from);
  memcpy(o + k, at + strlen(from), rest);
  k += rest;
  k += (size_t)sprintf(o + k, "header-xxh3-64 %016llx\n", (unsigned long long)XXH3_64bits(o, k));
  char *payload = strchr(hh, '\n') + 1;
  size_t plen = n - (size_t)(payload - b);
  memcpy(o + k, payload, plen);
  spit(path, o, k + plen);
  free(o);
  free(b);
}

static void flip_payload_byte(const char *path, kc_disk *d) {
  size_t n;
  char *b = slurp(path, &n);
  b[n - 10] ^= 0x20;
  spit(path, b, n);
  free(b);
}
static void flip_component_byte(const char *path, kc_disk *d) {
  size_t n;
  char *b = slurp(path, &n);
  char *at = strstr(b, "znver4");
  at[0] = 'Z';
  spit(path, b, n);
  free(b);
}
static void truncate_payload(const char *path, kc_disk *d) {
  cr_assert_eq(truncate(path, (off_t)file_size(path) - 100), 0);
}
static void truncate_in_header(const char *path, kc_disk *d) { cr_assert_eq(truncate(path, 40), 0); }
static void truncate_to_zero(const char *path, kc_disk *d) { cr_assert_eq(truncate(path, 0), 0); }
static void bad_magic(const char *path, kc_disk *d) {
  size_t n;
  char *b = slurp(path, &n);
  b[0] = 'K';
  spit(path, b, n);
  free(b);
}
static void wrong_version(const char *path, kc_disk *d) {
  rewrite_header(path, "format 1\n", "format 2\n");
}
static void huge_length(const char *path, kc_disk *d) {
  rewrite_header(path, "payload-bytes 2000\n", "payload-bytes 18446744073709551000\n");
}
static void short_length(const char *path, kc_disk *d) {
  rewrite_header(path, "payload-bytes 2000\n", "payload-bytes 1999\n");
}
static void other_key(const char *path, kc_disk *d) {
  put_ok(d, 9, 2000);
  char *p9 = kc_disk_entry_path(d, key_of(9));
  cr_assert_eq(rename(p9, path), 0);
  free(p9);
}
static void foreign_bytes(const char *path, kc_disk *d) {
  unsigned char *junk = payload_of(77, 3000);
  spit(path, junk, 3000);
  free(junk);
}

static void check_corrupt(mutator m, const char *why) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 2000);
  char *path = kc_disk_entry_path(d, key_of(1));
  m(path, d);
  cr_assert_eq(get_check(d, 1, 2000), KC_DISK_MISS, "a corrupt entry (%s) is a miss", why);
  cr_assert(!exists(path), "the corrupt entry (%s) is removed", why);
  kc_disk_stats s = stats_of(d);
  cr_assert_eq(s.corrupt_removed, 1);
  cr_assert_eq(s.hits, 0);
  cr_assert_eq(g_nwarn, 1, "one warning: %s", g_warn);
  cr_assert(strstr(g_warn, why), "warning names the problem (%s): %s", why, g_warn);
  put_ok(d, 1, 2000); /* recompiled and stored again */
  cr_assert_eq(get_check(d, 1, 2000), KC_DISK_HIT);
  free(path);
  kc_disk_close(d);
}

Test(cache_disk, flipped_payload_byte_is_a_miss) { check_corrupt(flip_payload_byte, "payload checksum"); }
Test(cache_disk, flipped_header_byte_is_a_miss) { check_corrupt(flip_component_byte, "header checksum"); }
Test(cache_disk, truncated_payload_is_a_miss) { check_corrupt(truncate_payload, "truncated"); }
Test(cache_disk, truncated_header_is_a_miss) { check_corrupt(truncate_in_header, "truncated header"); }
Test(cache_disk, zero_length_file_is_a_miss) { check_corrupt(truncate_to_zero, "truncated header (0"); }
Test(cache_disk, bad_magic_is_a_miss) { check_corrupt(bad_magic, "bad magic"); }
Test(cache_disk, wrong_format_version_is_a_miss) { check_corrupt(wrong_version, "format version 2"); }
Test(cache_disk, header_claiming_a_huge_length_is_a_miss) { check_corrupt(huge_length, "header says 18446744073709551000"); }
Test(cache_disk, header_claiming_a_short_length_is_a_miss) { check_corrupt(short_length, "wrong length"); }
Test(cache_disk, entry_holding_another_key_is_a_miss) { check_corrupt(other_key, "another key"); }
Test(cache_disk, foreign_file_under_an_entry_name_is_a_miss) { check_corrupt(foreign_bytes, "bad magic"); }

Test(cache_disk, verify_removes_only_the_bad_entries) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  for (int i = 0; i < 4; i++) put_ok(d, i, 500);
  char *p = kc_disk_entry_path(d, key_of(2));
  flip_payload_byte(p, d);
  uint64_t bad = 99;
  cr_assert_eq(kc_disk_verify(d, &bad, NULL), 0);
  cr_assert_eq(bad, 1);
  cr_assert(!exists(p));
  cr_assert_eq(stats_of(d).entries, 3);
  free(p);
  kc_disk_close(d);
}

Test(cache_disk, listing_removes_an_entry_whose_header_is_bad) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 500);
  put_ok(d, 2, 500);
  char *p = kc_disk_entry_path(d, key_of(1));
  bad_magic(p, d);
  listed l = {0};
  cr_assert_eq(kc_disk_list(d, true, collect, &l, NULL), 0);
  cr_assert_eq(l.n, 1);
  cr_assert(!exists(p));
  cr_assert_eq(stats_of(d).corrupt_removed, 1);
  free(p);
  kc_disk_close(d);
}

/* Any single flipped byte anywhere in the file, and a cut at any length: a
 * miss with the file removed, or (a flip that keeps the meaning, like the
 * case of a hex digit) a hit with the exact bytes. Never other bytes. */
Test(cache_disk, every_byte_flip_and_every_truncation_is_caught) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 200);
  char *path = kc_disk_entry_path(d, key_of(1));
  size_t n;
  char *orig = slurp(path, &n);
  int misses = 0;
  for (size_t i = 0; i < n; i++) {
    for (int bit = 0; bit < 8; bit += 5) { /* bits 0 and 5 */
      orig[i] ^= (char)(1 << bit);
      spit(path, orig, n);
      orig[i] ^= (char)(1 << bit);
      if (get_check(d, 1, 200) == KC_DISK_MISS) {
        misses++;
        cr_assert(!exists(path), "byte %zu bit %d: a miss removes the file", i, bit);
      }
    }
  }
  cr_assert_geq(misses, (int)(2 * n) - 64, "almost every flip is a miss (%d of %zu)", misses, 2 * n);
  for (size_t len = 0; len < n; len++) {
    spit(path, orig, len);
    cr_assert_eq(get_check(d, 1, 200), KC_DISK_MISS, "cut at %zu bytes", len);
    cr_assert(!exists(path));
  }
  cr_assert_eq(stats_of(d).hits, (uint64_t)(2 * n) - (uint64_t)misses);
  free(orig);
  free(path);
  kc_disk_close(d);
}
