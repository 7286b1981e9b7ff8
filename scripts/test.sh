#!/usr/bin/env bash
# The one command that tests cudajit: installs what is missing (scripts/setup.sh says what),
# then runs every test of the workspace except the bindings generator's.
#
#   bash scripts/test.sh                          # CPU tests; GPU tests are reported as ignored
#   bash scripts/test.sh -- --include-ignored     # on a machine with a CUDA GPU: all tests
#   bash scripts/test.sh --release -- some_name   # other arguments go to `cargo test` as given
#
# After the workspace's tests it runs the GPU tests (tests/gpu) once more on the CPU simulator
# (CUDAJIT_SIMULATOR=1) with two simulated devices (CUDAJIT_SIM_DEVICES=2, so the two-device
# tests run too), skipping those marked at the test as not for the simulator
# (`#[ignore = "needs a CUDA GPU; not on the simulator: <why>"]`, listed by scripts/sim-skips.py);
# CUDAJIT_TEST_SIMULATOR=0 leaves that run out.
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

# The GPU test suite once more, on the CPU simulator (so every kernel test checks its results
# on every run, GPU or not), skipping the tests marked as not for the simulator (scripts/sim-skips.py).
# Only when no test filter was given (the arguments after `--` are passed on).
if ((rc == 0)) && [[ "${CUDAJIT_TEST_SIMULATOR:-1}" != 0 ]]; then
    skips=()
    skip_list="$(python3 scripts/sim-skips.py)" || exit 1
    while IFS=$'\t' read -r name _; do
        [[ -z "$name" ]] || skips+=(--skip "$name")
    done <<< "$skip_list"
    cargo_args=()
    for a in "$@"; do
        [[ "$a" == -- ]] && break
        cargo_args+=("$a")
    done
    echo "+ CUDAJIT_SIMULATOR=1 CUDAJIT_SIM_DEVICES=2 cargo test ${cargo_args[*]} -p cudajit --test gpu -- --include-ignored (skipping the $((${#skips[@]} / 2)) tests marked 'not on the simulator')"
    set +e
    CUDAJIT_SIMULATOR=1 CUDAJIT_SIM_DEVICES=2 cargo test "${cargo_args[@]}" -p cudajit --test gpu -- --include-ignored "${skips[@]}" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    set -e
fi
# The DLPack exchange through its C ABI (examples/dlpack_py, built by `cargo test` above, loaded
# by Python's ctypes): the capsule round trips and a producer made in Python, on the simulator
# (under a second). Its torch and CuPy sections need those packages and a GPU
# (`python3 scripts/dlpack-check.py` on a GPU machine).
if ((rc == 0)) && command -v python3 > /dev/null 2>&1; then
    dlpack_lib=""
    for p in "${CARGO_TARGET_DIR:-target}"/{debug,release}/examples/libdlpack_py.so; do
        [[ -f "$p" && ( -z "$dlpack_lib" || "$p" -nt "$dlpack_lib" ) ]] && dlpack_lib="$p"
    done
    if [[ -n "$dlpack_lib" ]]; then
        echo "+ CUDAJIT_SIMULATOR=1 python3 scripts/dlpack-check.py --only ctypes --lib $dlpack_lib"
        set +e
        CUDAJIT_SIMULATOR=1 python3 scripts/dlpack-check.py --only ctypes --lib "$dlpack_lib"
        rc=$?
        set -e
    fi
fi
# One closing line for the whole run: the last `test result:` of each test binary (a test that
# re-runs itself in a child process may print the child's too), summed. Ignored tests are the GPU tests on a machine without a GPU.
awk 'function add() { if (have) { p += lp; f += lf; s += ls; have = 0 } }
     /^ *(Running|Doc-tests) / { add() }
     /^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) lp = $(i-1); if ($i ~ /^failed/) lf = $(i-1); if ($i ~ /^ignored/) ls = $(i-1) } have = 1 }
     END { add(); printf "all tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$rc"
