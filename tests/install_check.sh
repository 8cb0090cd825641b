#!/bin/sh
# install_check.sh BUILD_DIR SOURCE_DIR - `cmake --install` into a scratch
# prefix, then build examples/hello.c against it with pkg-config alone and run
# it: the installed headers, libkiln.so and kiln.pc must be enough.
set -eu
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs kiln)
# shellcheck disable=SC2086 # flags holds several words
${CC:-cc} -std=c11 -Wall -Wextra -Werror "$src/examples/hello.c" $flags -Wl,-rpath,"$prefix/lib" -o "$prefix/hello"
"$prefix/hello" | grep -q "expected error: input 0 (x): axis 1 expected 4, got 5"
for h in kiln.h common.h graph.h runtime.h; do test -f "$prefix/include/kiln/$h"; done
test -f "$prefix/lib/libkiln.a"
echo "install_check: ok"
