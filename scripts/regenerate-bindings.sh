#!/usr/bin/env bash
# Regenerates sys/src/generated/{types,functions,names}.rs from the CUDA driver header.
#
# The header (cuda.h) comes from the pinned PyPI wheel below and is downloaded into a
# temporary directory; it is never committed. Set CUDA_INCLUDE_DIR to a directory that
# contains cuda.h to skip the download. Needs python3 (with pip), cargo, rustfmt and
# libclang (Debian: apt-get install libclang-19-dev, or libclang-dev).
set -euo pipefail

CUDA_RUNTIME_WHEEL_VERSION="12.9.79"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
out_dir="sys/src/generated"

die() {
    echo "regenerate-bindings: error: $*" >&2
    exit 1
}

# bindgen loads libclang at run time; find it before building anything.
if [[ -z "${LIBCLANG_PATH:-}" && -d /usr/lib/llvm-19/lib ]]; then
    export LIBCLANG_PATH=/usr/lib/llvm-19/lib
fi
if [[ -n "${LIBCLANG_PATH:-}" ]]; then
    compgen -G "$LIBCLANG_PATH/libclang*.so*" > /dev/null ||
        die "no libclang.so in LIBCLANG_PATH=$LIBCLANG_PATH. Install libclang (Debian/Ubuntu: apt-get install libclang-19-dev, or libclang-dev) or point LIBCLANG_PATH at the directory holding libclang.so."
elif ! { ldconfig -p 2> /dev/null || true; } | grep -q 'libclang[-.0-9]*\.so'; then
    die "libclang not found. Install it (Debian/Ubuntu: apt-get install libclang-19-dev, or libclang-dev) or set LIBCLANG_PATH to the directory holding libclang.so."
fi

if [[ -n "${CUDA_INCLUDE_DIR:-}" ]]; then
    include_dir="$CUDA_INCLUDE_DIR"
    header_version="${CUDA_HEADER_VERSION:-$CUDA_RUNTIME_WHEEL_VERSION}"
else
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    echo "Downloading nvidia-cuda-runtime-cu12==$CUDA_RUNTIME_WHEEL_VERSION for cuda.h ..." >&2
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        "nvidia-cuda-runtime-cu12==$CUDA_RUNTIME_WHEEL_VERSION" -d "$tmp" ||
        die "pip could not download nvidia-cuda-runtime-cu12==$CUDA_RUNTIME_WHEEL_VERSION (or set CUDA_INCLUDE_DIR to a directory with cuda.h)"
    python3 - "$tmp" << 'PY'
import glob, sys, zipfile
tmp = sys.argv[1]
prefix = "nvidia/cuda_runtime/include/"
with zipfile.ZipFile(glob.glob(f"{tmp}/*.whl")[0]) as wheel:
    for name in wheel.namelist():
        if name.startswith(prefix):
            wheel.extract(name, tmp)
PY
    include_dir="$tmp/nvidia/cuda_runtime/include"
    header_version="$CUDA_RUNTIME_WHEEL_VERSION"
fi
[[ -f "$include_dir/cuda.h" ]] || die "no cuda.h in $include_dir"

cargo run --quiet -p cudajit-sys-generate -- \
    --include "$include_dir" --out "$out_dir" --header-version "$header_version"

files=("$out_dir/types.rs" "$out_dir/functions.rs" "$out_dir/names.rs")
rustfmt --edition 2021 "${files[@]}"

echo "Wrote (from cuda.h of nvidia-cuda-runtime-cu12 $header_version):"
wc -c "${files[@]}"
