#!/usr/bin/env bash
# service.sh - issue 15's service trace in one command: builds kiln
# (Release) and bench_service, writes the BERT-style encoder (MO text +
# safetensors, ONNX) and the uniform / skewed traces into a work dir
# (bench/service_gen.py, seeded), then replays both traces with ONNX Runtime
# and kiln under each policy at each thread count, and prints one table
# (bench/README.md, "Service trace", says how to read it).
#
# usage: bench/service.sh [--layers 4] [--requests 500] [--threads 1,2]
#                         [--engines ort,off,async,sync] [--budget-s S] [--rounds R]
#                         [--build DIR] [--venv DIR] [--work DIR]
#                         [--markdown FILE] [-- extra bench_service args]
#   --requests  the first N requests of each trace (the traces hold 500)
#   --rounds    each trace x threads group R times (engine order reversed
#               every other round), then a table of medians (default 1)
#   --budget-s  stop any one replay after S seconds (default 90: `sync` on
#               the uniform trace compiles a variant for nearly every
#               request, seconds each); the table says how many ran
#   --build     kiln's build dir (default build-bench/, Release, tests off)
#   --venv      Python with numpy, onnx, onnxruntime (default $KILN_MAX_VENV,
#               else ~/.cache/kiln-anchors/max-venv; made when missing)
#   --work      model, traces, binary, outputs (default BUILD/service-run);
#               every request's latency goes to WORK/requests.tsv
#
# ONNX Runtime: the library is the PyPI wheel's libonnxruntime.so.* (in the
# venv's onnxruntime/capi/), dlopen'ed by bench_service; the header
# onnxruntime_c_api.h comes from $KILN_ORT_INCLUDE, /usr/include/onnxruntime,
# or else Debian's libonnxruntime-dev package (Debian 13 "trixie": Debian 12
# has none), fetched with apt-get download through a private apt state
# (the system's sources are left alone) and unpacked under
# ~/.cache/kiln-anchors/ort-include. The header's API version (21) is
# older than the wheel's library, which serves it.
# Exit status: bench_service's (0: every run done, 1: outputs disagree or a
# run failed), 2 when something could not be built or found.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/ort_env.sh
. "$here/ort_env.sh"
repo=$(cd "$here/.." && pwd)
build="$repo/build-bench"
venv="${KILN_MAX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors/max-venv}"
layers=4 requests=500 threads=1,2 engines=ort,off,async,sync budget=90 rounds=1
work="" markdown="" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    --*) [ $# -ge 2 ] || { echo "service.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --layers) layers="$2" ;;
    --requests) requests="$2" ;;
    --threads) threads="$2" ;;
    --engines) engines="$2" ;;
    --budget-s) budget="$2" ;;
    --rounds) rounds="$2" ;;
    --build) build="$2" ;;
    --venv) venv="$2" ;;
    --work) work="$2" ;;
    --markdown) markdown="$2" ;;
    *) echo "service.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
say() { echo "service.sh: $*" >&2; }
mkdir -p "$build" && build=$(cd "$build" && pwd) || exit 2
work="${work:-$build/service-run}"
mkdir -p "$work" && work=$(cd "$work" && pwd) || exit 2

# ---- kiln, Release
say "building kiln (Release) in $build"
if ! { cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DKILN_TESTS=OFF &&
       cmake --build "$build" --target kiln -j"$(nproc)"; } >"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log" >&2
  say "building kiln failed (log: $work/build.log)"
  exit 2
fi

# ---- Python: numpy, onnx, onnxruntime
if [ ! -x "$venv/bin/python" ]; then
  say "creating the venv $venv"
  mkdir -p "$(dirname "$venv")" && python3 -m venv "$venv" || exit 2
fi
py="$venv/bin/python"
if ! "$py" -c 'import numpy, onnx, onnxruntime' 2>/dev/null; then
  say "pip-installing numpy onnx onnxruntime into $venv"
  "$py" -m pip install -q numpy onnx onnxruntime >"$work/pip.log" 2>&1 ||
    { tail -n 5 "$work/pip.log" >&2; exit 2; }
fi
ortlib=$(ort_lib "$py")
[ -n "$ortlib" ] || { say "no libonnxruntime.so in the onnxruntime wheel of $venv"; exit 2; }

# ---- onnxruntime_c_api.h
if ! ortinc=$(ort_include "$work"); then
  tail -n 5 "$work/apt-ort.log" >&2
  say "no onnxruntime_c_api.h (set KILN_ORT_INCLUDE to a directory holding it)"
  exit 2
fi

# ---- bench_service
say "compiling bench_service (header: $ortinc, library: $ortlib)"
if ! cc -std=gnu11 -O2 -Wall -Wextra -Wshadow -Wstrict-prototypes -I"$repo/include" -I"$ortinc" \
       "$here/service.c" "$here/service_ort.c" -L"$build" -lkiln -Wl,-rpath,"$build" -ldl -lm \
       -o "$work/bench_service" >"$work/cc.log" 2>&1; then
  cat "$work/cc.log" >&2
  exit 2
fi

# ---- model and traces (seeded; rewritten only when the layer count changes)
if [ "$(cat "$work/model/layers" 2>/dev/null)" != "$layers" ] || [ ! -f "$work/model/skewed.trace" ]; then
  say "writing the $layers-layer encoder and the traces into $work/model"
  "$py" "$here/service_gen.py" "$work/model" --layers "$layers" >&2 || exit 2
  echo "$layers" >"$work/model/layers"
fi

m="$work/model"
args=(--mlir "$m/encoder.mlir" --weights "$m/encoder.safetensors" --onnx "$m/encoder.onnx"
      --ort-lib "$ortlib" --trace uniform="$m/uniform.trace" --trace skewed="$m/skewed.trace"
      --threads "$threads" --engines "$engines" --requests "$requests" --budget-s "$budget"
      --rounds "$rounds" --raw "$work/requests.tsv")
[ -n "$markdown" ] && args+=(--markdown "$markdown")
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
     "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), kiln at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"
"$work/bench_service" "${args[@]}" "${extra[@]}"
