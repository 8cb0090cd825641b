/* shell.h - run a shell command from a test and capture what it prints. */
#ifndef KILN_TESTS_SHELL_H
#define KILN_TESTS_SHELL_H

/* Run cmd with /bin/sh (popen); stdout is captured whole into *out (malloc'd,
 * NUL-terminated; add 2>&1 to cmd for stderr too). Returns the exit code, or
 * -1 when the command did not exit normally. Asserts on popen failure. */
int shell_capture(const char *cmd, char **out);
/* A fresh directory from template (mkdtemp's XXXXXX, rewritten in place)
 * holding file `name` with `text`; shell_rm_dir removes it and all in it.
 * Both assert on failure. */
void shell_dir_with_file(char *template, const char *name, const char *text);
void shell_rm_dir(const char *dir);

#endif
