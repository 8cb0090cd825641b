/* note.h - a line a test prints on stderr when it skips part of its work
 * (a tool or library absent) or notices something worth reading. Not
 * cr_log_warn: Criterion 2.4 makes the run exit 1 once a warning is
 * logged, so a plain skip would fail the suite. */
#ifndef KILN_TESTS_NOTE_H
#define KILN_TESTS_NOTE_H

#include <stdarg.h>
#include <stdio.h>

__attribute__((format(printf, 1, 2))) static inline void test_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("[NOTE] ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

#endif
