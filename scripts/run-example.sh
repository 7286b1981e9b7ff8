#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh says what), then builds and runs one example.
#
#   bash scripts/run-example.sh                  # examples/device_query.rs
#   bash scripts/run-example.sh NAME [ARGS...]   # examples/NAME.rs, ARGS passed to it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example="${1:-device_query}"
(($# == 0)) || shift

bash scripts/setup.sh
if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

echo "+ cargo run --release --example $example${*:+ -- $*}"
exec cargo run --release --example "$example" -- "$@"
