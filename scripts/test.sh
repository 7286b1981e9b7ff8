#!/usr/bin/env bash
# The one command that tests cudajit: installs what is missing (scripts/setup.sh says what),
# then runs every test of the workspace except the bindings generator's.
#
#   bash scripts/test.sh                          # CPU tests; GPU tests are reported as ignored
#   bash scripts/test.sh -- --include-ignored     # on a machine with a CUDA GPU: all tests
#   bash scripts/test.sh --release -- some_name   # other arguments go to `cargo test` as given
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

echo "+ cargo test --workspace --exclude cudajit-sys-generate $*"
exec cargo test --workspace --exclude cudajit-sys-generate "$@"
