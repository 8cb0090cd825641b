#!/usr/bin/env bash
# run.sh - build the ONNX reader's libFuzzer target with clang-19
# (AddressSanitizer and UndefinedBehaviorSanitizer) and run it for a while,
# seeded with ONNX's node test models and tensors (libonnx-testdata) and
# the models under tests/onnx/.
# A crash, leak, timeout or sanitizer report fails the run and leaves the
# input in BUILD/fuzz-artifacts/.
# usage: tests/fuzz/run.sh [BUILD_DIR (build-fuzz)] [SECONDS (30)]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-fuzz}"
secs="${2:-30}"
seeds=/usr/include/onnx/backend/test/data/node
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang-19 -DKILN_FUZZ=ON -DKILN_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Debug > "$build/configure.log" ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --target fuzz_onnx -j"$(nproc)" > "$build/build.log" ||
  { tail -50 "$build/build.log"; exit 1; }
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# the first directory collects new inputs; the seeds are only read
"$build/fuzz_onnx" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" \
  "$build/fuzz-corpus" "$seeds" tests/onnx
echo "fuzz: ONNX reader ran ${secs}s without a finding"
