#!/usr/bin/env bash
# Builds and runs tests/dependent: a crate outside cudajit's workspace that depends on cudajit by
# path, as a user's crate does. Its main builds the classic add kernel with the builder, compiles
# it to PTX for sm_90 and runs it on the CPU simulator (no GPU or driver needed), checking the
# result. CI (.ci/run) runs it after the test suite.
#
#   bash scripts/check-dependent.sh                 # as a user's first build (CI): 30-70 s on 2 cores
#   bash scripts/check-dependent.sh --reuse-target  # in target/: reuses the workspace's compiled dependencies
#
# Cargo runs from a temporary directory outside the checkout, so cudajit's .cargo/config.toml
# (which sets LLVM_SYS_191_PREFIX for the workspace) does not apply, as for a user's crate.
# By default LLVM_SYS_191_PREFIX is unset too and the build has its own target/dependent: llvm-sys
# and cudajit's build script then find LLVM 19 as a user's build does, through `llvm-config-19`
# on PATH (Debian/Ubuntu's llvm-19 package, which scripts/setup.sh installs), and everything
# (cudajit, inkwell, llvm-sys, ...) compiles for this crate.
# --reuse-target builds in the workspace's target/ and sets LLVM_SYS_191_PREFIX to the value
# .cargo/config.toml gives the workspace (when not already set): llvm-sys's and cudajit's build
# scripts rerun when that variable changes, which would rebuild the LLVM-linked chain twice (here
# and in the workspace's next build). It reuses the registry dependencies (llvm-sys, inkwell,
# ndarray, ...), but cudajit and cudajit-sys still compile once more for this crate: built from
# another workspace, cargo gives these path packages other hashes (measured: about 20 s).
#
# The crate starts from the workspace's Cargo.lock (copied to tests/dependent/Cargo.lock, which
# git ignores; cargo drops the entries it does not use), so it builds against the versions the
# workspace is tested with.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

reuse=0
case "${1-}" in
    --reuse-target) reuse=1 ;;
    "") ;;
    *)
        echo "usage: bash scripts/check-dependent.sh [--reuse-target]" >&2
        exit 2
        ;;
esac

crate="$repo/tests/dependent"
cp "$repo/Cargo.lock" "$crate/Cargo.lock"

if ((!reuse)); then
    unset LLVM_SYS_191_PREFIX
    export CARGO_TARGET_DIR="$repo/target/dependent"
else
    # The value .cargo/config.toml's [env] gives the workspace.
    prefix="$(sed -n 's/^LLVM_SYS_191_PREFIX *= *{ *value *= *"\([^"]*\)".*/\1/p' "$repo/.cargo/config.toml")"
    [[ -n "$prefix" ]] || {
        echo "check-dependent: no LLVM_SYS_191_PREFIX in .cargo/config.toml" >&2
        exit 1
    }
    export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-$prefix}"
    export CARGO_TARGET_DIR="$repo/target"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "+ (cd $work && CARGO_TARGET_DIR=$CARGO_TARGET_DIR LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX-<unset>} cargo run --manifest-path $crate/Cargo.toml)"
cargo run --manifest-path "$crate/Cargo.toml"
