#!/usr/bin/env bash
# Fails if the committed src/dlpack/ffi.rs differs from what scripts/regenerate-dlpack.sh
# produces from the vendored third_party/dlpack/dlpack.h.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
out="src/dlpack/ffi.rs"

scripts/regenerate-dlpack.sh
if ! git diff --exit-code --stat -- "$out"; then
    echo "check-dlpack: $out is out of date with third_party/dlpack/dlpack.h." >&2
    echo "Run scripts/regenerate-dlpack.sh and commit the result." >&2
    exit 1
fi
echo "check-dlpack: $out is up to date."
