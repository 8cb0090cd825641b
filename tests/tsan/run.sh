#!/usr/bin/env bash
# run.sh - build kiln with ThreadSanitizer (gcc, -DKILN_TSAN=ON) and run
# tsan_stress (tests/tsan/stress.c: executes from several threads on two
# models, background specialization, variant eviction, kernel unloading,
# models compiled and freed meanwhile; every result checked). Any data race
# TSan reports fails the run (tests/tsan.supp names the only suppressions).
# usage: tests/tsan/run.sh [BUILD_DIR (build-tsan)] [SECONDS (20)]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-tsan}"
secs="${2:-20}"
cmake -S . -B "$build" -DKILN_TSAN=ON -DKILN_TESTS=OFF -DKILN_WERROR=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" --target tsan_stress -j"$(nproc)" > "$build/build.log" ||
  { tail -50 "$build/build.log"; exit 1; }
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  KILN_CACHE=off "$build/tsan_stress" "$secs"
