#!/usr/bin/env bash
# python_test.sh - install the Python package the way users do (pip install .
# into a venv that sees Debian's numpy and pytest) and run its tests.
# The build is incremental (pyproject.toml: build-py/). Usage:
#   tools/python_test.sh [pytest args...]
#   tools/python_test.sh --sanitized BUILD_DIR [pytest args...]
# The second form runs the same tests over BUILD_DIR's kiln._kiln, an
# AddressSanitizer + UBSan build (cmake -DKILN_SANITIZE=ON -DKILN_PYTHON=ON),
# the sanitizer runtimes preloaded into Debian's python3 (leak checks off:
# the interpreter itself keeps memory at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
python=/usr/bin/python3 # Debian's, with python3-numpy / python3-pytest (tools/setup.sh)
[ -x "$python" ] || python=python3

if [ "${1:-}" = "--sanitized" ]; then
  build="$(cd "$2" && pwd)"
  shift 2
  pkg="$build/python-package"
  rm -rf "$pkg" && mkdir -p "$pkg"
  cp -r python/kiln "$pkg/"
  ln -s "$build/_kiln.abi3.so" "$pkg/kiln/_kiln.abi3.so"
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  cd "$build"
  LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" PYTHONPATH="$pkg" \
    "$python" -m pytest "$root/tests/python" -q -p no:cacheprovider "$@"
  exit
fi

venv="$PWD/build-py/venv"
[ -x "$venv/bin/python" ] || "$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check .
# run from outside the source tree, so that the installed package is the one imported
cd build-py
"$venv/bin/python" -c "import kiln; print('python_test: kiln', kiln.version(), 'from', kiln.__file__)"
"$venv/bin/python" -m pytest ../tests/python -q -p no:cacheprovider "$@"
