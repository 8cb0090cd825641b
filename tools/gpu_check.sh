#!/usr/bin/env bash
# gpu_check.sh - kiln's checks on a real GPU: the op suites and ONNX's node
# tests with every model compiled for DEVICE (KILN_TEST_DEVICE, see
# tests/support/under_test.h) against the same reference interpreter and
# ONNX outputs as on the CPU; the tiny MiniLM against ONNX Runtime's
# outputs; random graphs of the differential fuzzer; the device round trip,
# the device-model tests and the suites that look for a GPU themselves; the
# examples run on DEVICE against the CPU (python3 compares them).
#
# Usage: tools/gpu_check.sh BUILD_DIR [DEVICE] [OUT_DIR]
#   DEVICE defaults to cuda:0 (hip:0 and simt-emu work too); OUT_DIR (default
#   ./gpu-check) gets one log per suite, summary.txt and onnx_pass.txt.
# KILN_GPU_CHECK_JOBS (default nproc) tests at a time, KILN_GPU_CHECK_TIMEOUT
# seconds per suite (600), KILN_GPU_CHECK_REPEAT timed runs per example (20),
# KILN_GPU_CHECK_FUZZ random graphs of tests/test_graph_fuzz.c (200),
# KILN_GPU_CHECK_QUICK=1 skips the op and ONNX suites.
# Exit status: 0 when every suite passed, 1 otherwise; a machine without the
# device says so and exits 77 (skipped).
set -u
BUILD=${1:?usage: tools/gpu_check.sh BUILD_DIR [DEVICE] [OUT_DIR]}
DEV=${2:-cuda:0}
OUT=${3:-gpu-check}
SRC=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${KILN_GPU_CHECK_JOBS:-$(nproc)}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
export KILN_CACHE=off

say() { echo "$*" | tee -a "$SUMMARY"; }

if ! "$BUILD/kiln" devices 2>&1 | tee "$OUT/devices.txt" | grep -q "^ *$DEV\b"; then
  say "skipped: $DEV is not among kiln's devices here:"
  cat "$OUT/devices.txt"
  exit 77
fi
say "device: $(grep "^ *$DEV\b" "$OUT/devices.txt" | head -1 | sed 's/^ *//')"

failed=0
# suite NAME [ENV=VALUE...]: one Criterion binary with the device under test.
suite() {
  local name=$1
  shift
  local t0=$SECONDS
  env KILN_TEST_DEVICE="$DEV" "$@" timeout "${KILN_GPU_CHECK_TIMEOUT:-600}" "$BUILD/$name" --jobs "$JOBS" \
    >"$OUT/$name.log" 2>&1
  local rc=$?
  local syn
  syn=$(grep -a "Synthesis" "$OUT/$name.log" | tail -1 | sed 's/.*Synthesis: //')
  case $syn in *"Tested: 0 "*) syn="$syn (SKIPPED: every test skipped itself)" ;; esac
  say "$(printf '%-22s rc=%-3s %4ss  %s' "$name" "$rc" $((SECONDS - t0)) "${syn:-no synthesis line}")"
  if [ "$rc" -ne 0 ]; then
    failed=1
    grep -a "^\[FAIL\]" "$OUT/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
  fi
}

[ -n "${KILN_GPU_CHECK_QUICK:-}" ] || for t in "$BUILD"/test_ops_*; do suite "$(basename "$t")"; done
suite test_device
suite test_device_model
suite test_onnx_model
suite test_graph_fuzz KILN_GRAPH_FUZZ="${KILN_GPU_CHECK_FUZZ:-200}"
# Suites that find the GPU themselves (or must still pass where there is one).
for t in test_model_on test_device_tensor test_max_device test_placement test_pipeline \
  test_observe_device test_control test_simt_ops test_buffers; do
  suite $t
done
[ -n "${KILN_GPU_CHECK_QUICK:-}" ] || suite test_onnx_node KILN_ONNX_PASS_OUT="$OUT/onnx_pass.txt"
[ -n "${KILN_GPU_CHECK_QUICK:-}" ] || suite test_onnx_const_inputs
[ -f "$OUT/test_onnx_node.log" ] && grep -a "^ONNX node tests" "$OUT/test_onnx_node.log" | sed 's/^/    /' | tee -a "$SUMMARY"
if [ -f "$OUT/onnx_pass.txt" ]; then
  missing=$(sort "$SRC/tests/onnx/expected_pass.txt" | grep -v '^#' |
    comm -23 - <(sort "$OUT/onnx_pass.txt") | wc -l)
  say "    ONNX node tests passing on the CPU (expected_pass.txt) but not on $DEV: $missing"
fi

# The examples: DEVICE against a reference device (the CPU, or simt-emu for a
# graph typed for a GPU) on the same seeded random inputs.
compare_run() {
  local name=$1 ref=$2 graph=$3
  shift 3
  rm -rf "$OUT/ex-ref" "$OUT/ex-dev"
  if ! "$BUILD/kiln" run "$graph" --random-inputs "$@" --device "$ref" --out "$OUT/ex-ref" \
    >"$OUT/ex-$name.log" 2>&1 ||
    ! "$BUILD/kiln" run "$graph" --random-inputs "$@" --device "$DEV" --repeat "${KILN_GPU_CHECK_REPEAT:-20}" \
      --out "$OUT/ex-dev" >>"$OUT/ex-$name.log" 2>&1; then
    say "example $name: failed (ex-$name.log)"
    failed=1
    return
  fi
  if python3 - "$OUT/ex-ref" "$OUT/ex-dev" >>"$OUT/ex-$name.log" 2>&1 <<'EOF'; then
# kiln's f32 .npy outputs compared without numpy: rtol 1e-4, atol 1e-5 of
# the output's largest magnitude (sums of random products cancel to ~0).
import array, math, os, sys
def load(path):
    b = open(path, "rb").read()
    hl = int.from_bytes(b[8:10], "little")
    head = b[10:10 + hl].decode()
    if "'<f4'" not in head:
        sys.exit(path + ": not f32: " + head)
    v = array.array("f")
    v.frombytes(b[10 + hl:])
    return head, v
bad = 0
for f in sorted(os.listdir(sys.argv[1])):
    (ha, a), (hb, b) = load(os.path.join(sys.argv[1], f)), load(os.path.join(sys.argv[2], f))
    atol = 1e-5 * max((abs(x) for x in a if not math.isnan(x)), default=1.0)
    ok = ha == hb and all(abs(x - y) <= atol + 1e-4 * abs(x) or (math.isnan(x) and math.isnan(y))
                          for x, y in zip(a, b))
    worst = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    print(f, len(a), "values, max |diff|", worst, "ok" if ok else "DIFFERS")
    bad += not ok
sys.exit(1 if bad else 0)
EOF
    say "example $name: matches $ref; $(grep -a -m1 "median" "$OUT/ex-$name.log" | sed 's/^ *//')"
  else
    say "example $name: DIFFERS from $ref (ex-$name.log)"
    failed=1
  fi
}
compare_run mlp cpu "$SRC/tests/shared/ir-examples/mlp.mlir" --dim batch=64
compare_run attention cpu "$SRC/examples/attention.mlir" --dim batch=2 --dim seq=128
compare_run ffn cpu "$SRC/examples/ffn.mlir" --dim batch=8 --dim seq=16
compare_run mlp_on_gpu simt-emu "$SRC/examples/mlp_on_gpu.mlir" --dim batch=2
rm -rf "$OUT/ex-ref" "$OUT/ex-dev"

# The Python API on a real GPU (tests/python/test_accelerator.py), where the
# extension is built and python3 has numpy and pytest.
case $DEV in
cuda* | hip*)
  if [ -f "$BUILD/_kiln.abi3.so" ] && python3 -c "import numpy, pytest" 2>/dev/null; then
    py=$(mktemp -d)
    cp -r "$SRC/python/kiln" "$py/"
    ln -s "$(realpath "$BUILD/_kiln.abi3.so")" "$py/kiln/"
    if PYTHONPATH=$py python3 -m pytest -q -p no:cacheprovider \
      "$SRC/tests/python/test_accelerator.py" >"$OUT/python.log" 2>&1; then
      say "python test_accelerator: $(tail -n 1 "$OUT/python.log")"
    else
      say "python test_accelerator: FAILED (python.log)"
      failed=1
    fi
    rm -rf "$py"
  else
    say "python test_accelerator: skipped (no _kiln.abi3.so in $BUILD, or no numpy / pytest)"
  fi
  ;;
esac

say "gpu_check: $([ $failed = 0 ] && echo passed || echo FAILED)"
exit $failed
