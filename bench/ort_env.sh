# ort_env.sh - sourced by bench/service.sh and bench/run.sh: where ONNX
# Runtime's library and C header are. The library comes from a venv's
# onnxruntime wheel; the header (onnxruntime_c_api.h, not in the wheel) from
# $KILN_ORT_INCLUDE, /usr/include/onnxruntime, or Debian trixie's
# libonnxruntime-dev, downloaded once and unpacked under
# ~/.cache/kiln-anchors/ort-include (the library's C API is versioned, so
# the newer header serves the wheel's library).

# ort_lib PY: print the path of PY's onnxruntime/capi/libonnxruntime.so*
# (empty when there is none).
ort_lib() {
  "$1" - <<'EOF'
import glob, os, onnxruntime
libs = sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))
print(libs[-1] if libs else "")
EOF
}

# ort_include WORK: print a directory holding onnxruntime_c_api.h, fetching
# it into the cache when needed (WORK holds apt's state and log); 1 without.
ort_include() {
  local work=$1 d
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/kiln-anchors/ort-include"
  for d in "${KILN_ORT_INCLUDE:-}" /usr/include/onnxruntime "$cache/usr/include/onnxruntime"; do
    [ -n "$d" ] && [ -f "$d/onnxruntime_c_api.h" ] && { echo "$d"; return 0; }
  done
  local apt="$work/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    >"$apt/sources.list"
  local aptopts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
                 -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
                 -o APT::Sandbox::User=root)
  if (cd "$apt" && apt-get "${aptopts[@]}" update -qq &&
      apt-get "${aptopts[@]}" download libonnxruntime-dev) >"$work/apt-ort.log" 2>&1 &&
     dpkg-deb -x "$(ls "$apt"/libonnxruntime-dev_*.deb | head -n 1)" "$cache"; then
    echo "$cache/usr/include/onnxruntime"
    return 0
  fi
  return 1
}
