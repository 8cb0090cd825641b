#!/usr/bin/env bash
# gpu_bundle.sh - run tools/gpu_check.sh on a GPU machine that has the
# driver but not kiln's build dependencies (no LLVM 19, criterion, ...):
#
#   tools/gpu_bundle.sh pack BUILD_DIR BUNDLE.tar.xz    (here, after a build)
#   tools/gpu_bundle.sh run BUNDLE.tar.xz [DEVICE] [OUT_DIR]   (there, in a checkout)
#
# pack: kiln's CLI, the test binaries gpu_check.sh runs and the Python
# extension (stripped), the kernel templates, every shared library they load but glibc's and the
# compiler runtime's (a newer distribution's are backward compatible), and
# ONNX's node test data when installed, with a manifest of the paths the
# tests were built with (KILN_SOURCE_DIR, the build dir, the node data).
# run: extracts into /tmp/kiln-gpu-bundle, links those paths there (the
# build dir to the extracted one, the source dir to this checkout, which
# must be the same commit), and runs tools/gpu_check.sh BUILD DEVICE OUT
# with the bundled libraries; DEVICE defaults to cuda:0, OUT to gpu-check.
# Its exit status is gpu_check's. Needs root where the baked paths are
# outside writable places (/usr/include/onnx for the node data).
set -euo pipefail
NODE=/usr/include/onnx/backend/test/data/node
cmd=${1:?usage: tools/gpu_bundle.sh pack BUILD_DIR BUNDLE | run BUNDLE [DEVICE] [OUT_DIR]}

pack() {
  local build src stage out
  build=$(cd "${1:?build dir}" && pwd)
  out=$(realpath -m "${2:?bundle path}")
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/build" "$stage/lib"
  # the binaries gpu_check.sh runs (test_ops_* and the suites it names), and
  # the Python extension when built: a bundle of every test would not fit
  # where the device machine's upload is limited
  local bins=(kiln) named
  named=$(grep -o 'test_[a-z0-9_]*' "$src/tools/gpu_check.sh" | sort -u)
  for t in "$build"/test_*; do
    local b
    b=$(basename "$t")
    [ -x "$t" ] && [ -f "$t" ] || continue
    case $b in test_ops_*) bins+=("$b") ;; *) grep -qx "$b" <<<"$named" && bins+=("$b") ;; esac
  done
  [ -f "$build/_kiln.abi3.so" ] && bins+=(_kiln.abi3.so)
  for b in "${bins[@]}"; do strip -o "$stage/build/$b" "$build/$b"; done
  [ -d "$build/kernels-templates" ] && cp -r "$build/kernels-templates" "$stage/build/"
  local skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
  for b in "${bins[@]}"; do ldd "$build/$b" | awk '/=> \// {print $1, $3}'; done | sort -u |
    grep -Ev "$skip" | while read -r name path; do
      strip --strip-unneeded -o "$stage/lib/$name" "$(readlink -f "$path")"
    done
  [ -d "$NODE" ] && cp -r "$NODE" "$stage/node"
  printf 'BUILD=%s\nSRC=%s\nCOMMIT=%s\n' "$build" "$src" \
    "$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$stage/manifest"
  (cd "$stage" && tar -cf - .) | xz -T0 -9 >"$out"
  echo "gpu_bundle: $out ($(du -h "$out" | cut -f1)), built from $src at" \
    "$(sed -n 's/^COMMIT=//p' "$stage/manifest")"
}

run() {
  local bundle dev out dir here build src
  bundle=$(realpath "${1:?bundle path}")
  dev=${2:-cuda:0} out=${3:-gpu-check}
  here=$(cd "$(dirname "$0")/.." && pwd -P)
  dir=/tmp/kiln-gpu-bundle
  rm -rf "$dir" && mkdir -p "$dir"
  xz -dc "$bundle" | tar -xf - -C "$dir"
  build=$(sed -n 's/^BUILD=//p' "$dir/manifest")
  src=$(sed -n 's/^SRC=//p' "$dir/manifest")
  echo "gpu_bundle: commit $(sed -n 's/^COMMIT=//p' "$dir/manifest"), checkout $here"
  link "$dir/build" "$build"
  [ "$src" = "$here" ] || link "$here" "$src"
  [ -d "$dir/node" ] && [ ! -d "$NODE" ] && link "$dir/node" "$NODE"
  LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$here/tools/gpu_check.sh" "$build" "$dev" "$out"
}

# link TARGET PATH: PATH (absent, or a link already) points at TARGET.
link() {
  if [ -e "$2" ] && [ ! -L "$2" ]; then
    echo "gpu_bundle: $2 exists and is not a link; not replaced" >&2
    return 0
  fi
  mkdir -p "$(dirname "$2")"
  ln -sfn "$1" "$2"
}

case "$cmd" in
pack) pack "${@:2}" ;;
run) run "${@:2}" ;;
*)
  echo "usage: tools/gpu_bundle.sh pack BUILD_DIR BUNDLE | run BUNDLE [DEVICE] [OUT_DIR]" >&2
  exit 2
  ;;
esac
