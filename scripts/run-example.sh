#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh says what), then builds and runs one example.
#
#   bash scripts/run-example.sh                  # examples/add_arrays.rs (Numba's classic example)
#   bash scripts/run-example.sh NAME [ARGS...]   # examples/NAME.rs, ARGS passed to it
#
# On the GPU when this machine has an NVIDIA GPU and driver; otherwise on cudajit's CPU
# simulator (CUDAJIT_SIMULATOR=1), saying which. Set CUDAJIT_SIMULATOR yourself to choose.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example="${1:-add_arrays}"
(($# == 0)) || shift

bash scripts/setup.sh
if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

if [[ -z "${CUDAJIT_SIMULATOR:-}" ]]; then
    if compgen -G '/dev/nvidia[0-9]*' > /dev/null &&
        { [[ -n "${CUDAJIT_DRIVER:-}" ]] || ldconfig -p 2> /dev/null | grep -q 'libcuda\.so'; }; then
        echo "run-example: an NVIDIA GPU and driver are present: running on the GPU"
    else
        echo "run-example: no NVIDIA GPU or driver here: running on cudajit's CPU simulator (CUDAJIT_SIMULATOR=1)"
        export CUDAJIT_SIMULATOR=1
    fi
fi

echo "+ cargo run --release --example $example${*:+ -- $*}"
exec cargo run --release --example "$example" -- "$@"
