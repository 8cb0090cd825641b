#!/usr/bin/env bash
# test.sh - set up, then build and run the whole test suite twice: a normal
# build (warnings as errors) and one with AddressSanitizer and
# UndefinedBehaviorSanitizer; the Python package, installed with pip into a
# venv, under pytest (tools/python_test.sh), and again over the sanitized
# build of its extension; the tests that call JIT and custom kernels again
# under clang's ASan + UBSan (its UBSan checks indirect calls differently
# from gcc's); a concurrency stress under ThreadSanitizer (tests/tsan/run.sh);
# then fuzz kiln's readers and compiler for a minute each (tests/fuzz/run.sh).
# The soak (bench_soak --check) runs after the normal build's tests.
# Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

tools/setup.sh build-test -DKILN_WERROR=ON
(cd build-test && ctest --output-on-failure -j"$jobs")
# the soak (bench/soak.c): 3,000 requests over ~1,500 shapes under sync and
# async with a small code bound; fails when RSS does not level off, variants
# pass their bound or an output is wrong; prints p50/p99 per shape class
build-test/bench_soak --check

tools/python_test.sh

tools/setup.sh build-asan -DKILN_WERROR=ON -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DKILN_PYTHON=ON
# allocator_may_return_null: a huge request returns NULL (kiln reports it) as in
# release builds, instead of ASan aborting.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd build-asan && ctest --output-on-failure -j"$jobs")
tools/python_test.sh --sanitized build-asan # the extension's own C under the sanitizers

# clang-19's sanitizers over a subset (the whole suite twice more would not
# fit CI's budget): the library, and the tests that call JIT kernels
# directly (test_fusion), through models (test_runtime, test_lifetime's
# threads), custom kernels (test_custom) and the file readers
# (test_safetensors). Costs ~10 minutes on 2 cores.
clang_tests=(test_runtime test_lifetime test_fusion test_custom test_safetensors)
CC=clang-19 cmake -S . -B build-clang-asan -DKILN_WERROR=ON -DKILN_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-clang-asan -j"$jobs" --target "${clang_tests[@]}"
(cd build-clang-asan &&
  ctest --output-on-failure -j"$jobs" -R "^($(IFS='|'; echo "${clang_tests[*]}"))\$")

# executes, background compiles and cache eviction on many threads under
# ThreadSanitizer (tests/tsan/run.sh)
tests/tsan/run.sh build-tsan 20

# the readers (ONNX, MO text, .npy, .safetensors) and the compiler (against the
# interpreter) under libFuzzer (clang-19, ASan + UBSan), a minute each
tests/fuzz/run.sh build-fuzz 60
echo "test.sh: all tests passed (normal, ASan+UBSan with gcc and with clang, Python, TSan, fuzzing)"
