#!/usr/bin/env bash
# Installs what building and testing cudajit needs on a Debian/Ubuntu machine, and only that
# which is missing: it checks each thing first, prints one line per thing ("ok: ..." or
# "installing: ..."), and runs `apt-get update` only when an apt package must be installed.
# Safe to run again. Uses sudo only when not root.
#
#   apt:    llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libffi-dev libxml2-dev
#           (LLVM 19, linked statically into cudajit), libclang-19-dev (only for
#           scripts/regenerate-bindings.sh), xz-utils and zstd (scripts/gpu-bundle.sh),
#           build-essential (only if no C compiler is present: Rust links through cc)
#   pip:    nvidia-cuda-nvcc-cu12 (its ptxas lets the tests validate generated PTX without a GPU)
#   rustup: rustfmt and clippy components
#
# Not installed here: scripts/check-bindings.sh (run by CI) fetches cuda.h and nccl.h from the
# pinned nvidia-cuda-runtime-cu12 and nvidia-nccl-cu12 wheels (cuda.h with `pip download`,
# nccl.h read out of its 350 MB wheel by range requests, scripts/fetch-wheel-file.py; only the
# headers are kept); NCCL itself is needed only by the multi-GPU tests on a GPU machine
# (`pip install nvidia-nccl-cu12`), and they skip themselves without it.
#
# Exports nothing; prints where ptxas is.
set -euo pipefail

APT_PACKAGES=(llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libffi-dev libxml2-dev libclang-19-dev xz-utils zstd)
PTXAS_WHEEL="nvidia-cuda-nvcc-cu12"

say() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

# --- privileges -------------------------------------------------------------------------
if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo > /dev/null 2>&1; then
    SUDO=(sudo)
else
    SUDO=(missing-sudo)
fi
as_root() {
    [[ "${SUDO[*]-}" != missing-sudo ]] || die "need root to run: $* (not root and no sudo). Run this script as root."
    "${SUDO[@]}" "$@"
}

# --- apt packages -----------------------------------------------------------------------
dpkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q 'install ok installed'
}

if command -v dpkg-query > /dev/null 2>&1 && command -v apt-get > /dev/null 2>&1; then
    missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        if dpkg_installed "$pkg"; then
            say "ok: $pkg present"
        else
            missing+=("$pkg")
        fi
    done
    if command -v cc > /dev/null 2>&1 && command -v c++ > /dev/null 2>&1; then
        say "ok: C/C++ compiler present ($(command -v cc))"
    else
        missing+=(build-essential)
    fi
    if command -v python3 > /dev/null 2>&1 && ! python3 -m pip --version > /dev/null 2>&1; then
        missing+=(python3-pip)
    fi
    if ((${#missing[@]})); then
        say "installing (apt): ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        as_root apt-get update -q
        if ! as_root apt-get install -y -q --no-install-recommends "${missing[@]}"; then
            die "apt-get could not install: ${missing[*]}.
  llvm-19 is in Debian 12 (bookworm) and Ubuntu 24.04 (noble); on older releases add
  https://apt.llvm.org first (e.g. 'wget https://apt.llvm.org/llvm.sh && sudo bash llvm.sh 19'),
  or install LLVM 19 elsewhere and set LLVM_SYS_191_PREFIX to it."
        fi
        say "installed (apt): ${missing[*]}"
    fi
else
    say "no apt-get/dpkg here (not Debian/Ubuntu): not installing system packages."
    say "  needed: LLVM 19 with llvm-config (set LLVM_SYS_191_PREFIX), libzstd, zlib, libffi,"
    say "  libxml2 (dev packages), libclang 19 (only to regenerate bindings), xz, zstd, a C compiler."
    if command -v llvm-config-19 > /dev/null 2>&1 || [[ -x "${LLVM_SYS_191_PREFIX:-/nonexistent}/bin/llvm-config" ]]; then
        say "ok: LLVM 19 llvm-config found"
    else
        say "warning: no llvm-config-19 on PATH and LLVM_SYS_191_PREFIX not set"
    fi
fi

# --- ptxas from the nvidia-cuda-nvcc-cu12 wheel -----------------------------------------
command -v python3 > /dev/null 2>&1 || die "python3 is needed (for the $PTXAS_WHEEL wheel that provides ptxas)"

find_ptxas() {
    python3 - << 'PY' 2> /dev/null
import importlib.util, os
spec = importlib.util.find_spec("nvidia.cuda_nvcc")
for d in (spec.submodule_search_locations or []) if spec else []:
    p = os.path.join(d, "bin", "ptxas")
    if os.path.isfile(p):
        print(p)
        break
PY
}

ptxas="$(find_ptxas || true)"
if [[ -n "$ptxas" ]]; then
    say "ok: $PTXAS_WHEEL present"
else
    say "installing (pip): $PTXAS_WHEEL (for ptxas)"
    python3 -m pip --version > /dev/null 2>&1 || die "python3 has no pip (Debian/Ubuntu: apt-get install python3-pip)"
    pip_log="$(mktemp)"
    trap 'rm -f "$pip_log"' EXIT
    pip_args=(install --quiet --disable-pip-version-check --no-input "$PTXAS_WHEEL")
    if ! python3 -m pip "${pip_args[@]}" > "$pip_log" 2>&1; then
        if grep -q 'externally-managed-environment' "$pip_log"; then
            say "  pip refused (externally managed Python); retrying with --break-system-packages"
            python3 -m pip "${pip_args[@]}" --break-system-packages > "$pip_log" 2>&1 || {
                cat "$pip_log" >&2
                die "pip could not install $PTXAS_WHEEL"
            }
        else
            cat "$pip_log" >&2
            die "pip could not install $PTXAS_WHEEL"
        fi
    fi
    ptxas="$(find_ptxas || true)"
    [[ -n "$ptxas" ]] || die "installed $PTXAS_WHEEL but found no nvidia/cuda_nvcc/bin/ptxas for $(command -v python3)"
    say "installed (pip): $PTXAS_WHEEL"
fi
[[ -x "$ptxas" ]] || chmod +x "$ptxas" 2> /dev/null || true
say "ptxas: $ptxas"

# --- Rust toolchain components ----------------------------------------------------------
if [[ -f "$HOME/.cargo/env" ]] && ! command -v cargo > /dev/null 2>&1; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
command -v cargo > /dev/null 2>&1 || die "no cargo on PATH: install Rust from https://rustup.rs (e.g. 'curl https://sh.rustup.rs -sSf | sh -s -- -y')"
say "ok: $(cargo --version)"

for comp in rustfmt clippy; do
    sub="fmt"
    [[ "$comp" == clippy ]] && sub="clippy"
    if cargo "$sub" --version > /dev/null 2>&1; then
        say "ok: $comp present"
    elif command -v rustup > /dev/null 2>&1; then
        say "installing (rustup): $comp"
        rustup component add "$comp"
    else
        say "warning: $comp missing and no rustup to add it (needed only for .ci/run)"
    fi
done

say "done."
