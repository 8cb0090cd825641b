#!/bin/sh
# run_all.sh - the main job: run every example graph with `kiln run`
# (seeded random inputs and weights, --dim from each file's "// run:" line,
# 20 runs with timings), the custom-op graphs of examples/custom_ops/ with
# their kernel library (NAME.c beside NAME.mlir), then build examples/hello.c against libkiln.so and
# run it.
#
# usage: examples/run_all.sh [BUILD_DIR]     (default: build)
# Exits non-zero at the first failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
kiln="$build/kiln"
if [ ! -x "$kiln" ]; then
  echo "run_all.sh: $kiln not found: build first (cmake -S . -B build && cmake --build build)" >&2
  exit 1
fi
"$kiln" --version
for g in "$here"/*.mlir; do
  dims=$(sed -n 's|^// run: ||p' "$g")
  echo
  echo "== kiln run examples/$(basename "$g") --random-inputs $dims --repeat 20 --stats"
  # shellcheck disable=SC2086 # dims holds several options
  "$kiln" run "$g" --random-inputs $dims --repeat 20 --stats
done
for g in "$here"/custom_ops/*.mlir; do # custom ops: the kernel library NAME.c beside NAME.mlir
  dims=$(sed -n 's|^// run: ||p' "$g")
  lib="${g%.mlir}.c"
  echo
  echo "== kiln run examples/custom_ops/$(basename "$g") --kernels examples/custom_ops/$(basename "$lib") --random-inputs $dims --repeat 20 --stats"
  # shellcheck disable=SC2086 # dims holds several options
  "$kiln" run "$g" --kernels "$lib" --random-inputs $dims --repeat 20 --stats
done
echo
echo "== examples/hello.c (public C API, linked against libkiln.so)"
${CC:-cc} -std=c11 -Wall -Wextra -I"$here/../include" "$here/hello.c" -L"$build" -lkiln \
  -Wl,-rpath,"$build" -o "$build/hello"
"$build/hello"
