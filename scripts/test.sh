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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --exclude cudajit-sys-generate "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# One closing line for the whole run: the last `test result:` of each test binary (a test that
# re-runs itself in a child process may print the child's too), summed. Ignored tests are the GPU tests on a machine without a GPU.
awk 'function add() { if (have) { p += lp; f += lf; s += ls; have = 0 } }
     /^ *(Running|Doc-tests) / { add() }
     /^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) lp = $(i-1); if ($i ~ /^failed/) lf = $(i-1); if ($i ~ /^ignored/) ls = $(i-1) } have = 1 }
     END { add(); printf "all tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$rc"
