#!/usr/bin/env bash
# setup.sh - install what is missing on Debian 12 and build kiln into ./build.
# Idempotent: packages already present are not reinstalled; the build is
# incremental. Usage: tools/setup.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(llvm-19-dev clang-19 lld-19 libxxhash-dev libcriterion-dev cmake make gcc pkg-config python3
          valgrind libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
          libclang-rt-19-dev python3-dev python3-venv python3-numpy python3-pytest
          libsodium-dev libhiredis-dev libssl-dev openssl redis-server graphviz)
# libssl-dev: TLS for the Redis cache (rediss://), since Debian 12's hiredis 0.14 has
# none; openssl: its tests make their certificates with the CLI.
# Wanted but not needed to build: ROCm's ocml (math functions in AMDGPU
# kernels; without it such kernels fail with a clear error and their tests
# say they were skipped). A failed install of these only warns.
OPTIONAL=(rocm-device-libs)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${OPTIONAL[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null; } ||
    echo "setup: could not install $p (optional: see the comment on OPTIONAL in $0)" >&2
done

BUILD_DIR="${1:-build}"
shift || true
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
