#!/usr/bin/env bash
# run_anchors.sh - kiln beside ONNX Runtime (and MAX, where installed) on the
# same graphs, weights and inputs; prints outputs-agree lines and a timing
# table (bench/anchors/README.md says what is compared and how).
#
# usage: bench/run_anchors.sh [BUILD_DIR] [--rounds N] [--quick] [--no-max]
#                             [--python PY] [--no-bench-runtime] [--no-build]
#                             [--markdown FILE] [--json FILE]
#        bench/run_anchors.sh [BUILD_DIR] --install-max
#
# BUILD_DIR (default: build/ in the repository) is configured if it has no
# CMakeCache.txt, and kiln_cli, kiln (libkiln.so) and bench_runtime are built
# in it. Needs a Python (python3, or --python PY: bench/run.sh passes its
# venv's) with numpy, onnx and onnxruntime. --no-bench-runtime leaves out
# the bench_runtime rows (bench/run.sh does not use them); --no-build uses
# BUILD_DIR as it is (bench/run.sh has just built it: every step of its
# table then measures the same binaries).
#
# MAX: --install-max makes a venv (default ~/.cache/kiln-anchors/max-venv,
# or $KILN_MAX_VENV), pip-installs `max` into it, and runs the MAX graphs
# once with an empty compile cache: that first, cold load takes minutes and
# is saved (max-cold.json beside the venv) for the table. Later runs use
# that venv and its now-warm cache when present ($KILN_MAX_PYTHON overrides
# the Python); --no-max skips MAX.
#
# Assumes: run from anywhere; ../shared beside the repository (or
# $KILN_SHARED_DIR) holds ir-examples/attention_block.mlir.
# Guarantees: exit 0 when everything ran and every engine's outputs agree
# with ORT's, 1 otherwise, 2 on a usage error. Work files go to a temporary
# directory that is removed at exit (or $KILN_ANCHORS_WORK, kept).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build"
rounds=3
quick=()
use_max=1
install_max=0
py=python3
bench_runtime=1
do_build=1
outfiles=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds|--markdown|--json|--python)
      [ $# -ge 2 ] || { echo "run_anchors.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --no-max) use_max=0; shift ;;
    --python) py="$2"; shift 2 ;;
    --no-bench-runtime) bench_runtime=0; shift ;;
    --no-build) do_build=0; shift ;;
    --install-max) install_max=1; shift ;;
    --markdown|--json) outfiles+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "run_anchors.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done

# one thread on every side (ORT and MAX are set to one below / in the Python):
# kiln's contexts take their default thread count from KILN_NUM_THREADS
export KILN_NUM_THREADS=1

shared="${KILN_SHARED_DIR:-$repo/../shared}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors"
venv="${KILN_MAX_VENV:-$cache_root/max-venv}"
max_cache="$cache_root/max-compile-cache"
max_cold_json="$cache_root/max-cold.json"

"$py" -c 'import numpy, onnx, onnxruntime' 2>/dev/null || {
  echo "run_anchors.sh: $py needs numpy, onnx and onnxruntime (pip install numpy onnx onnxruntime)" >&2
  exit 1
}

buildlog=$(mktemp /tmp/kiln-anchors-build.XXXXXX)
if [ "$do_build" = 0 ]; then
  if [ ! -f "$build/CMakeCache.txt" ] || [ ! -x "$build/kiln" ] || [ ! -f "$build/libkiln.so" ]; then
    echo "run_anchors.sh: --no-build, but $build has no kiln / libkiln.so" >&2
    rm -f "$buildlog"
    exit 1
  fi
elif ! { [ -f "$build/CMakeCache.txt" ] || cmake -S "$repo" -B "$build"; } >"$buildlog" 2>&1 ||
   ! cmake --build "$build" --target kiln_cli kiln bench_runtime -j2 >>"$buildlog" 2>&1; then
  cat "$buildlog" >&2
  rm -f "$buildlog"
  echo "run_anchors.sh: building kiln in $build failed" >&2
  exit 1
fi
rm -f "$buildlog"
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")

work="${KILN_ANCHORS_WORK:-}"
if [ -z "$work" ]; then
  work=$(mktemp -d /tmp/kiln-anchors.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi

common=(--kiln "$build/kiln" --examples "$repo/examples" --shared "$shared" --work "$work"
        --source "${source_dir:-$repo}")

if [ "$install_max" = 1 ]; then
  mkdir -p "$cache_root"
  if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
  "$venv/bin/pip" install --progress-bar off max
  rm -rf "$max_cache"
  echo "run_anchors.sh: first MAX load with an empty cache (several minutes)..."
  rc=0
  "$py" "$here/anchors/ort_bench.py" "${common[@]}" --max-python "$venv/bin/python" \
    --max-cache "$max_cache" --max-cold-json "$max_cold_json" --max-only || rc=$?
  exit "$rc"
fi

max_args=()
if [ "$use_max" = 1 ]; then
  maxpy="${KILN_MAX_PYTHON:-$venv/bin/python}"
  if [ ! -x "$maxpy" ]; then
    max_args=(--max-skip-reason "no Python with max at $maxpy (bench/run_anchors.sh --install-max makes one)")
  elif ! maxerr=$("$maxpy" -c 'import max.graph' 2>&1); then
    max_args=(--max-skip-reason "$maxpy cannot import max.graph: $(printf '%s\n' "$maxerr" | tail -n 1)")
  else
    max_args=(--max-python "$maxpy" --max-cold-json "$max_cold_json")
    # the cache --install-max filled; a Python given by hand keeps its own
    [ -z "${KILN_MAX_PYTHON:-}" ] && max_args+=(--max-cache "$max_cache")
  fi
else
  max_args=(--max-skip-reason "--no-max was given")
fi
br_args=()
[ "$bench_runtime" = 1 ] && br_args=(--bench-runtime "$build/bench_runtime")

rc=0
"$py" "$here/anchors/ort_bench.py" "${common[@]}" --libkiln "$build/libkiln.so" \
  "${br_args[@]}" --rounds "$rounds" "${quick[@]}" \
  "${max_args[@]}" "${outfiles[@]}" || rc=$?
exit "$rc"
