#!/usr/bin/env bash
# Regenerates src/dlpack/ffi.rs (cudajit's DLPack structs) from third_party/dlpack/dlpack.h,
# the header of the DLPack release below, vendored with its licence (third_party/dlpack/).
# To move to a newer DLPack: replace the header and LICENSE from that tag of dmlc/dlpack, set
# DLPACK_VERSION, run this script, and review the diff (a new major version changes the ABI).
# Needs cargo, rustfmt and libclang (Debian: apt-get install libclang-19-dev, or libclang-dev).
set -euo pipefail

DLPACK_VERSION="v1.1"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
out="src/dlpack/ffi.rs"

if [[ -z "${LIBCLANG_PATH:-}" && -d /usr/lib/llvm-19/lib ]]; then
    export LIBCLANG_PATH=/usr/lib/llvm-19/lib
fi

cargo run --quiet -p cudajit-sys-generate --bin dlpack -- \
    --header third_party/dlpack/dlpack.h --out "$out" --version "$DLPACK_VERSION"
rustfmt --edition 2021 "$out"
echo "Wrote $out (from dlpack.h of DLPack $DLPACK_VERSION):"
wc -c "$out"
