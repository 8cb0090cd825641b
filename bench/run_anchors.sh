#!/usr/bin/env bash
# run_anchors.sh - kiln beside ONNX Runtime (and MAX, where installed) on the
# same graphs, weights and inputs; prints outputs-agree lines and a timing
# table (bench/anchors/README.md says what is compared and how).
#
# usage: bench/run_anchors.sh [BUILD_DIR] [--rounds N] [--quick] [--no-max]
#                             [--markdown FILE] [--json FILE]
#        bench/run_anchors.sh [BUILD_DIR] --install-max
#
# BUILD_DIR (default: build/ in the repository) is configured if it has no
# CMakeCache.txt, and kiln_cli, kiln (libkiln.so) and bench_runtime are built
# in it. Needs python3 with numpy, onnx and onnxruntime.
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
outfiles=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds|--markdown|--json)
      [ $# -ge 2 ] || { echo "run_anchors.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --no-max) use_max=0; shift ;;
    --install-max) install_max=1; shift ;;
    --markdown|--json) outfiles+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "run_anchors.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done

shared="${KILN_SHARED_DIR:-$repo/../shared}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors"
venv="${KILN_MAX_VENV:-$cache_root/max-venv}"
max_cache="$cache_root/max-compile-cache"
max_cold_json="$cache_root/max-cold.json"

python3 -c 'import numpy, onnx, onnxruntime' 2>/dev/null || {
  echo "run_anchors.sh: python3 needs numpy, onnx and onnxruntime (pip install numpy onnx onnxruntime)" >&2
  exit 1
}

buildlog=$(mktemp /tmp/kiln-anchors-build.XXXXXX)
if ! { [ -f "$build/CMakeCache.txt" ] || cmake -S "$repo" -B "$build"; } >"$buildlog" 2>&1 ||
   ! cmake --build "$build" --target kiln_cli kiln bench_runtime -j2 >>"$buildlog" 2>&1; then
  cat "$buildlog" >&2
  rm -f "$buildlog"
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
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
  python3 "$here/anchors/ort_bench.py" "${common[@]}" --max-python "$venv/bin/python" \
    --max-cache "$max_cache" --max-cold-json "$max_cold_json" --max-only || rc=$?
  exit "$rc"
fi

max_args=()
if [ "$use_max" = 1 ]; then
  maxpy="${KILN_MAX_PYTHON:-$venv/bin/python}"
  if [ -x "$maxpy" ] && "$maxpy" -c 'import max.graph' 2>/dev/null; then
    max_args=(--max-python "$maxpy" --max-cold-json "$max_cold_json")
    # the cache --install-max filled; a Python given by hand keeps its own
    [ -z "${KILN_MAX_PYTHON:-}" ] && max_args+=(--max-cache "$max_cache")
  fi
fi

rc=0
python3 "$here/anchors/ort_bench.py" "${common[@]}" --libkiln "$build/libkiln.so" \
  --bench-runtime "$build/bench_runtime" --rounds "$rounds" "${quick[@]}" \
  "${max_args[@]}" "${outfiles[@]}" || rc=$?
exit "$rc"
