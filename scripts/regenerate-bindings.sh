#!/usr/bin/env bash
# Regenerates sys/src/generated/{types,functions,names}.rs from the CUDA driver header, and
# sys/src/generated/nccl_{types,functions,names}.rs from NCCL's nccl.h.
#
# The headers (cuda.h, nccl.h) come from the pinned PyPI wheels below and are downloaded into
# a temporary directory; they are never committed. Set CUDA_INCLUDE_DIR to a directory that
# contains cuda.h (and cuda_runtime.h), NCCL_INCLUDE_DIR to one that contains nccl.h, to skip
# a download (nccl.h is read out of the nvidia-nccl-cu12 wheel on PyPI by range requests,
# scripts/fetch-wheel-file.py, instead of downloading its 350 MB). Needs python3 (with pip), cargo, rustfmt and
# libclang (Debian: apt-get install libclang-19-dev, or libclang-dev).
set -euo pipefail

CUDA_RUNTIME_WHEEL_VERSION="12.9.79"
NCCL_WHEEL_VERSION="2.32.3"

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

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [[ -n "${CUDA_INCLUDE_DIR:-}" ]]; then
    include_dir="$CUDA_INCLUDE_DIR"
    header_version="${CUDA_HEADER_VERSION:-$CUDA_RUNTIME_WHEEL_VERSION}"
else
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

if [[ -n "${NCCL_INCLUDE_DIR:-}" ]]; then
    nccl_dir="$NCCL_INCLUDE_DIR"
    nccl_version="${NCCL_HEADER_VERSION:-$NCCL_WHEEL_VERSION}"
else
    mkdir -p "$tmp/nccl"
    # Only nccl.h, read out of the wheel on PyPI by range requests (~50 KB); the whole wheel
    # (about 350 MB) when that fails.
    if ! python3 scripts/fetch-wheel-file.py nvidia-nccl-cu12 "$NCCL_WHEEL_VERSION" \
        nvidia/nccl/include/nccl.h "$tmp/nccl"; then
        echo "Downloading nvidia-nccl-cu12==$NCCL_WHEEL_VERSION for nccl.h (about 350 MB) ..." >&2
        python3 -m pip download --quiet --no-deps --only-binary=:all: \
            "nvidia-nccl-cu12==$NCCL_WHEEL_VERSION" -d "$tmp/nccl" ||
            die "pip could not download nvidia-nccl-cu12==$NCCL_WHEEL_VERSION (or set NCCL_INCLUDE_DIR to a directory with nccl.h)"
        python3 - "$tmp/nccl" << 'PY'
import glob, sys, zipfile
tmp = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{tmp}/*.whl")[0]) as wheel:
    wheel.extract("nvidia/nccl/include/nccl.h", tmp)
PY
        rm -f "$tmp"/nccl/*.whl
    fi
    nccl_dir="$tmp/nccl/nvidia/nccl/include"
    nccl_version="$NCCL_WHEEL_VERSION"
fi
[[ -f "$nccl_dir/nccl.h" ]] || die "no nccl.h in $nccl_dir"

cargo run --quiet -p cudajit-sys-generate -- \
    --include "$include_dir" --out "$out_dir" --header-version "$header_version" \
    --nccl-include "$nccl_dir" --nccl-version "$nccl_version"

files=("$out_dir/types.rs" "$out_dir/functions.rs" "$out_dir/names.rs")
nccl_files=("$out_dir/nccl_types.rs" "$out_dir/nccl_functions.rs" "$out_dir/nccl_names.rs")
rustfmt --edition 2021 "${files[@]}" "${nccl_files[@]}"

echo "Wrote (from cuda.h of nvidia-cuda-runtime-cu12 $header_version):"
wc -c "${files[@]}"
echo "Wrote (from nccl.h of nvidia-nccl-cu12 $nccl_version):"
wc -c "${nccl_files[@]}"
