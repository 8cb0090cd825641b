#!/bin/sh
# max_valgrind.sh BUILD_DIR SOURCE_DIR - the MAX C API leak check: build
# tests/max_flow.c (a plain program on include/max/c/ only) against the
# build's libkiln.so, run it once normally, then under valgrind's leak
# check. Only definite and indirect leaks (and memory errors) fail it; the
# LLVM JIT's "still reachable" blocks do not. Exit 77 (skipped) when
# valgrind is not installed.
set -eu
build=$1
src=$2
if ! command -v valgrind >/dev/null 2>&1; then
  echo "max_valgrind: valgrind is not installed (apt-get install valgrind): skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$src/include" "$src/tests/max_flow.c" \
  -L"$build" -lkiln -lm -Wl,-rpath,"$build" -o "$tmp/max_flow"
export KILN_CACHE=off
"$tmp/max_flow" "$src"
valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
  "$tmp/max_flow" "$src"
echo "max_valgrind: no leaks, no memory errors"
