/* test_safetensors.c - what the .safetensors reader (src/safetensors.c)
 * refuses beyond a well-formed header: data ranges that overlap, leave a
 * hole or leave bytes after the last tensor, and tensor names (or other
 * header text) that are not UTF-8, each named in the message; and that
 * reading a header of 200,000 tensors (JSON parse, duplicate-key check,
 * validation, a lookup of every name) stays far from quadratic: checked
 * as a ratio of CPU times, 8 times the tensors against 25,000 (so any build
 * passes), and a loose bound; bench/scale.c has the figures. Round trips
 * and the older malformed-header cases are in test_runtime.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/io.h"
#include "tests/support/st_file.h"

static char *tmp_path(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "/tmp/kiln_test_st_%d_%s", (int)getpid(), name);
  return buf;
}

static void rejects(const char *header, size_t ndata, const char *needle) {
  char *path = tmp_path("bad.safetensors");
  st_write_raw(path, header, strlen(header), ndata);
  kiln_status *st = kiln_status_new();
  rt_safetensors *f = rt_safetensors_open(path, st);
  cr_assert_null(f, "accepted: %s", header);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO, "%s", kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), needle), "message '%s' lacks '%s'",
            kiln_status_message(st), needle);
  kiln_status_free(st);
  unlink(path);
}

static void accepts(const char *header, size_t ndata, int count) {
  char *path = tmp_path("good.safetensors");
  st_write_raw(path, header, strlen(header), ndata);
  kiln_status *st = kiln_status_new();
  rt_safetensors *f = rt_safetensors_open(path, st);
  cr_assert(f, "refused: %s: %s", header, kiln_status_message(st));
  cr_assert_eq(rt_safetensors_count(f), count);
  rt_safetensors_close(f);
  kiln_status_free(st);
  unlink(path);
}

#define T(name, a, b)                                                                    \
  "\"" name "\": {\"dtype\": \"F32\", \"shape\": [" #b "], \"data_offsets\": " a "}"

Test(safetensors_strict, overlapping_data_offsets_are_refused) {
  rejects("{" T("a", "[0, 8]", 2) ", " T("b", "[4, 12]", 2) "}", 12,
          "tensor 'b': data_offsets overlap another tensor's ([4, 12) overlaps tensor 'a' at "
          "[0, 8))");
  /* the same range twice, and one inside another (listed first) */
  rejects("{" T("a", "[0, 8]", 2) ", " T("b", "[0, 8]", 2) "}", 8,
          "data_offsets overlap another tensor's");
  rejects("{" T("big", "[4, 8]", 1) ", " T("outer", "[0, 12]", 3) "}", 12,
          "tensor 'big': data_offsets overlap another tensor's ([4, 8) overlaps tensor 'outer'");
}

Test(safetensors_strict, holes_and_trailing_bytes_are_refused) {
  rejects("{" T("a", "[0, 4]", 1) ", " T("b", "[8, 12]", 1) "}", 12,
          "tensor 'b': data_offsets leave a hole in the data section ([8, 12) begins 4 bytes "
          "after tensor 'a' ends, at 4)");
  rejects("{" T("a", "[4, 8]", 1) "}", 8,
          "tensor 'a': data_offsets leave a hole in the data section (it begins at 4");
  rejects("{" T("a", "[0, 4]", 1) "}", 8,
          "tensor 'a': data continues after this tensor, the last one (the data section has 8 "
          "bytes; the last tensor's data ends at 4)");
  rejects("{}", 4, "no tensor holds the data section's 4 bytes");
}

Test(safetensors_strict, tiling_in_any_header_order_with_empty_tensors_is_accepted) {
  /* listed out of order; a zero-size tensor at 4 and one at the very end */
  accepts("{" T("c", "[8, 12]", 1) ", " T("e", "[4, 4]", 0) ", " T("a", "[0, 4]", 1) ", "
          T("z", "[12, 12]", 0) ", " T("b", "[4, 8]", 1) "}",
          12, 5);
  accepts("{}", 0, 0);
  accepts("{" T("e", "[0, 0]", 0) "}", 0, 1);
}

Test(safetensors_strict, names_that_are_not_utf8_are_refused) {
  /* a stray continuation byte, an overlong '/', a UTF-16 surrogate, a
   * truncated sequence, above U+10FFFF */
  const char *names[] = {"w\x80", "\xc0\xaf", "x\xed\xa0\x80", "y\xe2\x82", "\xf4\x90\x80\x80"};
  const char *shown[] = {"w\\x80", "\\xc0\\xaf", "x\\xed\\xa0\\x80", "y\\xe2\\x82",
                         "\\xf4\\x90\\x80\\x80"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char h[256], want[128];
    snprintf(h, sizeof h,
             "{\"%s\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
             names[i]);
    snprintf(want, sizeof want, "tensor '%s': its name is not valid UTF-8", shown[i]);
    rejects(h, 4, want);
  }
  /* valid UTF-8, escaped or not, is a name like any other */
  accepts("{\"caf\xc3\xa9.w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
          "\"\\u00e9\\ud83d\\ude00\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
          "[4, 8]}}",
          8, 2);
}

Test(safetensors_strict, header_text_that_is_not_utf8_is_refused) {
  rejects("{\"__metadata__\": {\"format\": \"p\xfft\"}, " T("a", "[0, 4]", 1) "}", 4,
          "malformed safetensors header: byte 30 is not valid UTF-8");
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds to open a file of n tensors "t<i>" and find each by name. */
static double open_and_find(int n) {
  size_t cap = (size_t)n * 80 + 64, k = 0;
  char *h = malloc(cap);
  cr_assert(h);
  h[k++] = '{';
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(h + k, cap - k,
                          "%s\"t%d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                          i ? "," : "", i, 4 * i, 4 * i + 4);
  h[k++] = '}';
  h[k] = 0;
  char *path = tmp_path("many.safetensors");
  st_write_raw(path, h, k, (size_t)n * 4);
  free(h);
  kiln_status *st = kiln_status_new();
  double t0 = cpu_s();
  rt_safetensors *f = rt_safetensors_open(path, st);
  cr_assert(f, "%s", kiln_status_message(st));
  cr_assert_eq(rt_safetensors_count(f), n);
  char name[32];
  for (int i = n - 1; i >= 0; i--) {
    snprintf(name, sizeof name, "t%d", i);
    cr_assert_eq(rt_safetensors_find(f, name), i);
  }
  snprintf(name, sizeof name, "t%d", n);
  cr_assert_eq(rt_safetensors_find(f, name), -1);
  double s = cpu_s() - t0;
  rt_safetensors_close(f);
  kiln_status_free(st);
  unlink(path);
  return s;
}

/* 8 times the tensors must cost about 8 times the time (64 times when
 * quadratic): a ratio, so that slow builds (Debug, sanitizers) and busy
 * machines pass alike; plus a bound far above a linear reader's time in
 * any build (~0.3 s optimized, ~10 s Debug with ASan) and far below a
 * quadratic one's (minutes). */
Test(safetensors_strict, two_hundred_thousand_tensors_open_in_linear_time, .timeout = 150) {
  double small = open_and_find(25000), big = open_and_find(200000);
  cr_assert(big < 24 * (small > 1e-3 ? small : 1e-3),
            "25,000 tensors took %.3f s of CPU, 200,000 took %.3f s: not linear", small, big);
  cr_assert(big < 60.0, "opening 200,000 tensors and finding each took %.2f s of CPU", big);
}

/* a FIFO given as weights is refused at once, not waited on for a writer */
Test(safetensors_strict, a_fifo_is_refused_not_waited_on, .timeout = 20) {
  char path[] = "/tmp/kiln_st_fifo_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  unlink(path);
  cr_assert_eq(mkfifo(path, 0600), 0);
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_safetensors_open(path, st));
  cr_expect(strstr(kiln_status_message(st), "not a regular file"), "%s", kiln_status_message(st));
  kiln_status_free(st);
  unlink(path);
}
