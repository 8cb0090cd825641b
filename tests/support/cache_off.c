/* cache_off.c - every test binary starts as ctest starts it: with
 * KILN_CACHE=off unless the environment says otherwise (CMakeLists.txt sets
 * it for ctest), so a test run by hand with a warm ~/.cache/kiln compiles
 * for real as well and its compile counts hold. Tests that want a disk
 * cache unset it themselves (cache_disk_util.h). Linked into every test. */
#include <stdlib.h>

__attribute__((constructor)) static void kiln_tests_cache_off(void) {
  setenv("KILN_CACHE", "off", 0); /* 0: a value already set wins */
}
