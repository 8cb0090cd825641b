#!/usr/bin/env bash
# run.sh - build kiln's libFuzzer targets with clang-19 (AddressSanitizer and
# UndefinedBehaviorSanitizer) and run each for a while from its seeds:
#   onnx         the ONNX reader: ONNX's node test models and tensors
#                (libonnx-testdata), the models under tests/onnx/, inputs that
#                once failed (tests/fuzz/corpus/onnx/)
#   text         the MO text reader: tests/ir/, tests/max_text/, examples/
#   npy          the .npy reader: tests/fuzz/corpus/npy/, the tests' .npy files
#   safetensors  the .safetensors reader: tests/fuzz/corpus/safetensors/,
#                tests/max_text/*/weights.safetensors
#   gguf         the GGUF reader: tests/gguf/ (files the gguf Python package wrote)
#   compile      the JIT against the reference interpreter on graphs that
#                parse: tests/ir/, tests/max_text/
# A crash, leak, timeout or sanitizer report fails the run and leaves the
# input in BUILD/fuzz-artifacts/TARGET/.
# usage: tests/fuzz/run.sh [BUILD_DIR (build-fuzz)] [SECONDS per target (30)] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-fuzz}"
secs="${2:-30}"
shift 2 || shift $# # the remaining arguments name targets
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx text npy safetensors gguf compile)
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang-19 -DKILN_FUZZ=ON -DKILN_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Debug > "$build/configure.log" ||
  { cat "$build/configure.log"; exit 1; }
for t in "${targets[@]}"; do
  cmake --build "$build" --target "fuzz_$t" -j"$(nproc)" > "$build/build.log" 2>&1 ||
    { tail -50 "$build/build.log"; exit 1; }
done
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
seeds() {
  case "$1" in
  onnx) echo /usr/include/onnx/backend/test/data/node tests/onnx tests/fuzz/corpus/onnx ;;
  text) echo tests/ir tests/max_text examples ;;
  npy) echo tests/fuzz/corpus/npy tests/onnx/minilm_tiny ;;
  safetensors) echo tests/fuzz/corpus/safetensors tests/max_text/mlp tests/max_text/norm ;;
  gguf) echo tests/gguf ;;
  compile) echo tests/ir tests/max_text ;;
  esac
}
for t in "${targets[@]}"; do
  mkdir -p "$build/fuzz-corpus/$t" "$build/fuzz-artifacts/$t"
  # the first directory collects new inputs; the seeds are only read
  # shellcheck disable=SC2046
  if ! "$build/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$t/" \
      "$build/fuzz-corpus/$t" $(seeds "$t") > "$build/fuzz-$t.log" 2>&1; then
    tail -60 "$build/fuzz-$t.log"
    echo "fuzz: $t found a failing input (in $build/fuzz-artifacts/$t/)"
    exit 1
  fi
  grep -E "^Done [0-9]+ runs" "$build/fuzz-$t.log" || true
  echo "fuzz: $t ran ${secs}s without a finding"
done
