#!/usr/bin/env bash
# main.sh - the main job: set up, build, then compile and run every example
# graph on the CPU, printing outputs and timings.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
KILN=build/kiln examples/run_all.sh
