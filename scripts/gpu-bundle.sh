#!/usr/bin/env bash
# Builds a self-contained bundle of cudajit's test binaries and examples for a GPU machine
# that has no Rust and no network (x86-64 Linux, glibc >= this machine's, NVIDIA driver,
# python3). See docs/GPU_BUNDLE.md.
#
#   bash scripts/gpu-bundle.sh [OUTDIR] [--no-compress] [--no-strip]
#
# OUTDIR (default gpu-bundle/, git-ignored) receives:
#   bin.tar.xz       the release test binaries (test-<target>), examples (example-<name>) and
#                    benches (bench-<name>), stripped; bin/ instead with --no-compress
#   tests/data/      the test fixtures
#   run.sh           the runner: unpacks bin.tar.xz, runs everything, prints a summary
#   README.txt       how to use it
#   BUNDLE_INFO.txt  what was built, from which commit, with which toolchain
#
# xz (not zstd) so that the GPU machine can always unpack it: python3's tarfile reads .tar.xz.
# "-9 -T1": -9's 64 MiB window reaches back into the previous binary, and one thread makes one
# xz block, so the statically linked LLVM that every binary carries is stored about once
# (measured: three 36 MB LLVM binaries -> 11.9 MB, one alone -> 9.8 MB; with -6, or with a
# block per thread, each copy costs ~10 MB again). Override with CUDAJIT_BUNDLE_XZ_OPT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_root="$PWD"

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() {
    printf 'gpu-bundle: error: %s\n' "$*" >&2
    exit 1
}
say() { printf 'gpu-bundle: %s\n' "$*"; }

outdir=""
compress=1
strip_bins=1
while (($#)); do
    case "$1" in
        --no-compress) compress=0 ;;
        --no-strip) strip_bins=0 ;;
        -h | --help)
            usage
            exit 0
            ;;
        -*) die "unknown option $1 (see --help)" ;;
        *)
            [[ -z "$outdir" ]] || die "more than one OUTDIR given"
            outdir="$1"
            ;;
    esac
    shift
done
outdir="${outdir:-gpu-bundle}"
command -v python3 > /dev/null 2>&1 || die "python3 is needed (to read cargo's JSON output)"
if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
command -v cargo > /dev/null 2>&1 || die "no cargo on PATH (bash scripts/setup.sh checks the prerequisites)"
[[ "$(uname -m)" == x86_64 ]] || say "warning: building on $(uname -m); the GPU machine is x86-64"

mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"
case "$outdir" in
    "$repo_root" | / | "$HOME") die "refusing to use $outdir as OUTDIR" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Prints "kind<TAB>name<TAB>executable<TAB>package dir" for each artifact of interest in
# cargo's JSON messages. $1: "test" (test-profile artifacts), "example" or "bench".
artifacts() {
    python3 - "$1" "$2" << 'PY'
import json, os, sys
want, path = sys.argv[1], sys.argv[2]
seen = set()
with open(path) as f:
    for line in f:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        kinds = msg["target"]["kind"]
        is_test = bool(msg.get("profile", {}).get("test"))
        if want == "test" and not (is_test and "bench" not in kinds):
            continue
        if want == "example" and (kinds != ["example"] or is_test):
            continue
        if want == "bench" and kinds != ["bench"]:
            continue
        exe = msg["executable"]
        if exe in seen:
            continue
        seen.add(exe)
        pkg_dir = os.path.basename(os.path.dirname(msg["manifest_path"]))
        print("\t".join([want, msg["target"]["name"], exe, pkg_dir]))
PY
}

cargo_json() { # $1: output file; rest: cargo arguments. Diagnostics go to the terminal.
    local out="$1"
    shift
    say "\$ cargo $*"
    cargo "$@" --message-format=json-render-diagnostics > "$out" ||
        die "cargo $1 failed (see the errors above)"
}

# The link layout of scripts/gpu-bundle-layout.ld (LLVM at the same addresses in every binary,
# so that xz stores it about once) and packed relative relocations (-z pack-relative-relocs,
# DT_RELR: glibc >= 2.36). Both are link flags for the bundle's binaries only: with an explicit
# --target, RUSTFLAGS reach neither build scripts nor proc macros, and the artifacts go to
# target/<host triple>/release, apart from a plain `cargo build --release`.
# On by default where rust-lld can link it (Rust >= 1.90 on x86_64-unknown-linux-gnu; its
# binaries ran green, bare, on an H100 on 2026-11-26, and the archive is about 1.8x smaller);
# CUDAJIT_BUNDLE_LAYOUT=0 builds the plain release binaries instead, =1 insists on the layout.
host="$(rustc -vV | sed -n 's/^host: //p')"
build=(--release)
rustc_minor="$(rustc -vV | sed -n 's/^release: 1\.\([0-9]*\).*/\1/p')"
layout_ok=0
if [[ "$host" == x86_64-unknown-linux-gnu ]] && ((${rustc_minor:-0} >= 90)); then
    layout_ok=1
fi
layout="${CUDAJIT_BUNDLE_LAYOUT:-auto}"
case "$layout" in
    auto) layout="$layout_ok" ;;
    0) ;;
    *)
        # rust-lld is the default linker there from Rust 1.90 on; the script is written for it.
        ((layout_ok)) || die "the bundle's link layout needs Rust >= 1.90 on x86_64-unknown-linux-gnu (rust-lld); this is $(rustc --version) on $host. set CUDAJIT_BUNDLE_LAYOUT=0 to build without it (a larger bundle)"
        layout=1
        ;;
esac
if ((layout)); then
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C link-arg=-Wl,-T,$repo_root/scripts/gpu-bundle-layout.ld -C link-arg=-Wl,-z,pack-relative-relocs"
    build+=(--target "$host")
    say "link layout: scripts/gpu-bundle-layout.ld, packed relocations (target/$host/release)"
else
    say "no link layout (rustc $(rustc -vV | sed -n 's/^release: //p') on $host, CUDAJIT_BUNDLE_LAYOUT=${CUDAJIT_BUNDLE_LAYOUT:-auto}): plain release binaries, a larger archive"
fi

excl=(--workspace --exclude cudajit-sys-generate)
cargo_json "$work/tests.json" test "${build[@]}" "${excl[@]}" --no-run
cargo_json "$work/examples.json" build "${build[@]}" "${excl[@]}" --examples

has_benches="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
members = set(meta["workspace_members"])
print(sum(1 for p in meta["packages"] if p["id"] in members and p["name"] != "cudajit-sys-generate"
          for t in p["targets"] if "bench" in t["kind"]))')"
if ((has_benches > 0)); then
    cargo_json "$work/benches.json" bench "${build[@]:1}" "${excl[@]}" --benches --no-run
else
    say "no bench targets: skipping benches"
    : > "$work/benches.json"
fi

{
    artifacts test "$work/tests.json"
    artifacts example "$work/examples.json"
    artifacts bench "$work/benches.json"
} > "$work/artifacts.tsv"

# --- assemble -----------------------------------------------------------------------------
rm -rf "$outdir/bin" "$outdir/bin.tar.xz" "$outdir/bin.tar.zst" "$outdir/tests/data" \
    "$outdir/run.sh" "$outdir/README.txt" "$outdir/BUNDLE_INFO.txt"
mkdir -p "$outdir/bin"

declare -A used=()
count=0
while IFS=$'\t' read -r kind name exe pkg_dir; do
    prefix="$kind"
    base="$prefix-$name"
    if [[ -n "${used[$base]:-}" ]]; then
        base="$prefix-$pkg_dir-$name" # same target name in two packages
    fi
    [[ -z "${used[$base]:-}" ]] || die "two artifacts would be named $base"
    used[$base]=1
    cp "$exe" "$outdir/bin/$base"
    count=$((count + 1))
done < "$work/artifacts.tsv"
((count > 0)) || die "cargo built no test binaries or examples"

if ((strip_bins)); then
    if command -v strip > /dev/null 2>&1; then
        strip "$outdir"/bin/*
    else
        say "warning: no strip (binutils) here: binaries stay unstripped"
    fi
fi

if [[ -d tests/data ]]; then
    mkdir -p "$outdir/tests"
    cp -R tests/data "$outdir/tests/data"
fi

# Shared libraries the binaries need: the GPU machine must have them all.
needed="$(for f in "$outdir"/bin/*; do
    if command -v readelf > /dev/null 2>&1; then
        readelf -d "$f" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
    fi
done | sort -u | tr '\n' ' ')"
if [[ "$needed" == *libLLVM* ]]; then
    say "warning: binaries link libLLVM dynamically ($needed); the GPU machine has no LLVM"
fi

{
    echo "cudajit GPU bundle"
    echo "built:    $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
    echo "commit:   $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet HEAD 2> /dev/null || echo ' (+ uncommitted changes)')"
    echo "rustc:    $(rustc --version 2> /dev/null || echo unknown)"
    echo "glibc:    $(ldd --version 2> /dev/null | head -n1 | sed 's/.* //') (the GPU machine needs this or newer)"
    echo "needs:    ${needed:-unknown}"
    echo "binaries:"
    (cd "$outdir/bin" && for f in *; do printf '  %-40s %10s bytes\n' "$f" "$(wc -c < "$f")"; done)
} > "$outdir/BUNDLE_INFO.txt"

if ((compress)); then
    xz_opt="${CUDAJIT_BUNDLE_XZ_OPT:--9 -T1}"
    say "compressing bin/ into bin.tar.xz (xz $xz_opt) ..."
    if command -v xz > /dev/null 2>&1; then
        # shellcheck disable=SC2086
        tar -C "$outdir" --sort=name --owner=0 --group=0 --numeric-owner -cf - bin | xz $xz_opt > "$outdir/bin.tar.xz"
    else
        say "no xz here: compressing with python3's lzma"
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "w:xz", preset=9).add(sys.argv[2], "bin")' \
            "$outdir/bin.tar.xz" "$outdir/bin"
    fi
    rm -rf "$outdir/bin"
fi

# --- the runner -----------------------------------------------------------------------------
cat > "$outdir/run.sh" << 'RUNNER'
#!/usr/bin/env bash
# Runs the cudajit GPU bundle: every test binary (GPU tests included, one test at a time),
# then example-device_query, then the other examples, then the benches; logs each to
# $OUT/<name>.log (default: out/ next to run.sh) and prints a summary. Exits non-zero if
# anything failed.
#
# Examples and benches run with the arguments of a short run (see example_args and bench_args
# below): sim_vs_gpu records on the GPU and on the simulator and compares; soak runs 20 s
# instead of 60; fuzz stops after 60 s at most; multi_gpu runs the one-device path and says
# what it skipped when there are fewer than two GPUs or no NCCL; bench-bench runs --quick
# unless the benches are asked for with --only benches (full sizes, minutes).
#
#   bash run.sh [--filter SUBSTR] [--only tests|examples|benches] [--tests a,b]
#               [--examples a,b] [--timeout SECONDS] [--sanitize TOOL] [-- EXTRA TEST ARGS]
#
#   --filter SUBSTR   run only the tests whose name contains SUBSTR (passed to test binaries)
#   --only KIND       run only the test binaries, only the examples, or only the benches
#                     (--only benches: bench-bench at full size, not --quick)
#   --tests a,b       run only these test binaries (names without "test-", e.g. gpu,cudajit)
#   --examples a,b    run only these examples, in this order (names without "example-")
#   --timeout N       kill a binary after N seconds (default $RUN_TIMEOUT or 900; 0: never)
#   --sanitize TOOL   run every binary under compute-sanitizer --tool TOOL (memcheck, racecheck,
#                     synccheck, initcheck; memcheck with --leak-check full); a binary with a
#                     finding fails. CUDA API errors are not reported (the tests provoke many on
#                     purpose and check each one); SANITIZE_API_ERRORS=explicit shows them.
#                     The benches, and the test that faults a kernel on purpose
#                     (modules::kernel_fault_is_a_clear_error), are left out.
#   --multi-gpu       the multi-GPU checks only: the gpu tests of peers, NCCL, sharded
#                     arrays and arrays sharded over processes (distributed::, two ranks
#                     started as processes) with CUDAJIT_TEST_MIN_DEVICES=2 (a machine with
#                     fewer than two GPUs, or without NCCL, fails them instead of skipping),
#                     then the multi_gpu and multi_process examples
#   -- ARGS           more arguments for the test binaries (e.g. -- --nocapture)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
filter=""
only="all"
tests_list=""
examples_list=""
timeout_s="${RUN_TIMEOUT:-900}"
sanitize=""
multi=0
extra=()
usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
while (($#)); do
    case "$1" in
        --filter) filter="${2?--filter needs a value}"; shift ;;
        --only) only="${2?--only needs tests, examples or benches}"; shift ;;
        --tests) tests_list="${2?--tests needs a list}"; shift ;;
        --examples) examples_list="${2?--examples needs a list}"; shift ;;
        --timeout) timeout_s="${2?--timeout needs seconds}"; shift ;;
        --sanitize) sanitize="${2?--sanitize needs memcheck, racecheck, synccheck or initcheck}"; shift ;;
        --multi-gpu) multi=1 ;;
        -h | --help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
multi_filters=()
if ((multi)); then
    export CUDAJIT_TEST_MIN_DEVICES=2
    tests_list="${tests_list:-gpu}"
    examples_list="${examples_list:-multi_gpu,multi_process}"
    [[ -n "$filter" ]] || multi_filters=(peer:: nccl:: sharded:: distributed::)
    [[ "$only" == all ]] && only=tests+examples
fi
case "$only" in all | tests | examples | benches | tests+examples) ;; *) echo "run.sh: --only takes tests, examples or benches" >&2; exit 2 ;; esac
sanitizer=()
sanitize_skips=()
if [[ -n "$sanitize" ]]; then
    case "$sanitize" in memcheck | racecheck | synccheck | initcheck) ;; *) echo "run.sh: --sanitize takes memcheck, racecheck, synccheck or initcheck" >&2; exit 2 ;; esac
    cs="$(command -v compute-sanitizer || true)"
    for c in /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [[ -z "$cs" && -x "$c" ]] && cs="$c"
    done
    [[ -n "$cs" ]] || { echo "run.sh: --sanitize needs compute-sanitizer (part of the CUDA toolkit), not found" >&2; exit 2; }
    sanitizer=("$cs" --tool "$sanitize" --error-exitcode 86 --target-processes all
        --report-api-errors "${SANITIZE_API_ERRORS:-no}" --print-limit 50)
    [[ "$sanitize" == memcheck ]] && sanitizer+=(--leak-check full)
    sanitize_skips=(--skip modules::kernel_fault_is_a_clear_error)
    [[ "$only" == all ]] && only=tests+examples
fi

log_dir="${OUT:-$here/out}"
mkdir -p "$log_dir" || exit 2
log_dir="$(cd "$log_dir" && pwd)"

# --- unpack -------------------------------------------------------------------------------
# Into a temporary folder, removed at exit, so the bundle stays as it was (small enough to
# carry again) and may be read-only. A bundle built with --no-compress has bin/ instead.
bin_dir="$here/bin"
archive=""
for a in "$here"/bin.tar.xz "$here"/bin.tar.zst; do [[ -f "$a" ]] && { archive="$a"; break; }; done
if [[ -n "$archive" ]]; then
    dest="$(mktemp -d "${TMPDIR:-/tmp}/cudajit-bundle.XXXXXX")" || exit 2
    trap 'rm -rf "$dest"' EXIT
    bin_dir="$dest/bin"
    echo "run.sh: unpacking $(basename "$archive") ($(wc -c < "$archive") bytes) into $dest ..."
    case "$archive" in
        *.xz)
            if command -v tar > /dev/null 2>&1 && command -v xz > /dev/null 2>&1; then
                tar -C "$dest" -xJf "$archive"
            else
                python3 - "$archive" "$dest" << 'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    t.extractall(sys.argv[2], **kw)
PY
            fi
            ;;
        *.zst)
            command -v zstd > /dev/null 2>&1 || { echo "run.sh: $archive needs zstd, which is not installed" >&2; exit 2; }
            zstd -dc "$archive" | tar -C "$dest" -xf -
            ;;
    esac || { echo "run.sh: could not unpack $archive" >&2; exit 2; }
fi
[[ -d "$bin_dir" ]] || { echo "run.sh: no bin.tar.xz or bin/ next to run.sh" >&2; exit 2; }

# --- environment --------------------------------------------------------------------------
cd "$here" || exit 2 # tests find tests/data relative to the working directory
export CUDAJIT_TEST_DATA="$here/tests/data"
export CARGO_MANIFEST_DIR="$here"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

{
    [[ -f BUNDLE_INFO.txt ]] && sed -n '1,6p' BUNDLE_INFO.txt
    echo "host:     $(uname -srm), $(ldd --version 2> /dev/null | head -n1)"
    if command -v nvidia-smi > /dev/null 2>&1; then
        nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | sed 's/^/gpu:      /'
    else
        echo "gpu:      (no nvidia-smi on PATH)"
    fi
} | tee "$log_dir/environment.log"
missing_libs="$(for f in "$bin_dir"/*; do ldd "$f" 2> /dev/null | grep 'not found'; done | sort -u)"
if [[ -n "$missing_libs" ]]; then
    echo "run.sh: WARNING: shared libraries missing on this machine:" | tee -a "$log_dir/environment.log"
    echo "$missing_libs" | tee -a "$log_dir/environment.log"
fi

timeout_cmd=()
if [[ "$timeout_s" != 0 ]] && command -v timeout > /dev/null 2>&1; then
    timeout_cmd=(timeout --kill-after=15 "$timeout_s")
fi

# --- what the examples and benches get --------------------------------------------------------
# Every example runs bare (no arguments) except these; each one's own defaults are in its
# header comment. lineinfo runs without --oob (the out-of-bounds launch is for the sanitizer).
example_args() { # $1: example name; prints one argument per line
    case "$1" in
        soak) printf '%s\n' 16 20 ;;             # 16 threads for 20 s (default 60 s)
        fuzz) printf '%s\n' --seconds 60 ;;      # its default size, stopped after 60 s at most
        *) ;;
    esac
}
bench_args() { # $1: bench name
    printf '%s\n' --bench # what cargo bench passes; the benches ignore it
    # bench-bench at full size takes minutes (2^28-element rows): --quick unless asked for.
    [[ "$1" == bench && "$only" != benches ]] && printf '%s\n' --quick
    return 0
}

# --- run ----------------------------------------------------------------------------------
names=() rcs=() passed=() failed=() ignored=() secs=() notes=()
run_one() { # $1: display name; rest: command
    local name="$1" log="$log_dir/$1.log" start=$SECONDS rc
    shift
    printf '\n==== %s\n==== $ %s\n' "$name" "${sanitizer[*]} $*"
    "${timeout_cmd[@]}" "${sanitizer[@]}" "$@" < /dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    local p f i
    # The last "test result:" line is the binary's own; earlier ones come from child processes
    # that some tests spawn (their output is shown when such a test fails).
    read -r p f i < <(awk '/^test result:/ { line = $0 }
        END {
            if (line == "") { print "-", "-", "-"; exit }
            n = split(line, w, " ")
            for (k = 2; k <= n; k++) {
                if (w[k] ~ /^passed;?$/) p = w[k - 1]
                if (w[k] ~ /^failed;?$/) f = w[k - 1]
                if (w[k] ~ /^ignored;?$/) i = w[k - 1]
            }
            print p + 0, f + 0, i + 0
        }' "$log")
    local note=""
    # Examples that skip part of their work say so; the summary repeats it.
    if grep -q '^needs two devices' "$log"; then
        note="skipped: needs two GPUs"
    elif grep -q '^all-reduce skipped' "$log"; then
        note="all-reduce skipped (no NCCL)"
    fi
    names+=("$name") rcs+=("$rc") passed+=("$p") failed+=("$f") ignored+=("$i") secs+=($((SECONDS - start))) notes+=("$note")
}

in_list() { [[ -z "$2" || ",$2," == *",$1,"* ]]; }

if [[ "$only" == all || "$only" == tests || "$only" == tests+examples ]]; then
    for b in "$bin_dir"/test-*; do
        [[ -e "$b" ]] || continue
        n="${b##*/}"
        in_list "${n#test-}" "$tests_list" || continue
        run_one "$n" "$b" --include-ignored --test-threads=1 ${filter:+"$filter"} "${multi_filters[@]}" "${sanitize_skips[@]}" "${extra[@]}"
    done
fi
if [[ "$only" == all || "$only" == examples || "$only" == tests+examples ]]; then
    order=()
    if [[ -n "$examples_list" ]]; then
        IFS=',' read -r -a order <<< "$examples_list"
    else
        [[ -e "$bin_dir/example-device_query" ]] && order+=(device_query)
        for b in "$bin_dir"/example-*; do
            [[ -e "$b" ]] || continue
            n="${b##*/example-}"
            [[ "$n" == device_query ]] || order+=("$n")
        done
    fi
    for n in "${order[@]}"; do
        if [[ -x "$bin_dir/example-$n" ]]; then
            mapfile -t args < <(example_args "$n")
            run_one "example-$n" "$bin_dir/example-$n" "${args[@]}"
        else
            echo "run.sh: no example named $n in this bundle" >&2
            names+=("example-$n") rcs+=(127) passed+=(-) failed+=(-) ignored+=(-) secs+=(0) notes+=("")
        fi
    done
fi
if [[ "$only" == all || "$only" == benches ]]; then
    for b in "$bin_dir"/bench-*; do
        [[ -e "$b" ]] || continue
        mapfile -t args < <(bench_args "${b##*/bench-}")
        run_one "${b##*/}" "$b" "${args[@]}" ${filter:+"$filter"}
    done
fi

# --- summary ------------------------------------------------------------------------------
status=0
{
    printf '\n==== summary (logs in %s)\n' "$log_dir"
    printf '%-32s %5s %7s %7s %8s %6s  %s\n' NAME EXIT PASSED FAILED IGNORED SECS RESULT
    for k in "${!names[@]}"; do
        r=ok
        if [[ "${rcs[k]}" == 124 || "${rcs[k]}" == 137 ]] && ((${#timeout_cmd[@]})); then
            r="TIMEOUT"
        elif [[ "${rcs[k]}" != 0 ]]; then
            r="FAILED"
        fi
        [[ "$r" == ok ]] || status=1
        printf '%-32s %5s %7s %7s %8s %6s  %s\n' "${names[k]}" "${rcs[k]}" "${passed[k]}" "${failed[k]}" "${ignored[k]}" "${secs[k]}" "$r${notes[k]:+ (${notes[k]})}"
    done
    ((${#names[@]})) || echo "(nothing ran)"
    if ((status)); then echo "RESULT: FAILED"; else echo "RESULT: ok"; fi
} | tee "$log_dir/summary.txt"
# the pipeline ran in a subshell: recompute the status here
for rc in "${rcs[@]}"; do [[ "$rc" == 0 ]] || exit 1; done
((${#names[@]})) || exit 1
exit 0
RUNNER
chmod +x "$outdir/run.sh"

cat > "$outdir/README.txt" << 'README'
cudajit GPU bundle
==================

Release builds of cudajit's test binaries, examples and benches, for an x86-64 Linux machine
with an NVIDIA GPU and its driver. Nothing else is needed there: no Rust, no CUDA toolkit, no LLVM
(LLVM is linked statically), no network. python3 or xz is used to unpack bin.tar.xz.

Use it
  1. Copy this whole folder to the GPU machine, e.g.
       rsync -a gpu-bundle/ gpu-host:cudajit-bundle/
     (or, with the project's device tool, carry "gpu-bundle" and run "bash gpu-bundle/run.sh").
  2. Run:  bash run.sh
     It unpacks bin.tar.xz into a temporary folder (removed at the end), runs every test-*
     binary with --include-ignored --test-threads=1 (GPU tests included, one at a time), then
     example-device_query and the other examples, then the benches, and prints a summary
     table. Exit status 0 means everything passed. Examples and benches take the arguments
     of a short run: soak 20 s, fuzz at most 60 s, bench-bench --quick (full size with
     --only benches); multi_gpu says what it skipped on fewer than two GPUs or without NCCL.
  3. Logs: one <name>.log per binary, environment.log and summary.txt, in $OUT if set,
     else in out/ next to run.sh.

Options: bash run.sh --help
  --filter SUBSTR     only tests whose name contains SUBSTR
  --only tests|examples|benches    (--only benches: bench-bench at full size)
  --tests gpu,cudajit / --examples device_query,...   pick binaries
  --timeout N         per-binary time limit in seconds (default 900)
  --sanitize TOOL     under compute-sanitizer: memcheck (with --leak-check full), racecheck,
                      synccheck or initcheck
  --multi-gpu         on a machine with two or more GPUs: the peer, NCCL, sharded-array and
                      distributed tests (failing, not skipping, with fewer than two GPUs), then
                      multi_gpu and multi_process
  -- ARGS             more libtest arguments, e.g. -- --nocapture

Test binaries run with the bundle folder as working directory and CUDAJIT_TEST_DATA pointing
at tests/data. BUNDLE_INFO.txt says what was built, from which commit, and which shared
libraries the binaries need. Rebuild with: bash scripts/gpu-bundle.sh
README

# --- report -------------------------------------------------------------------------------
say "bundled $count binaries into $outdir:"
sed -n '/^binaries:/,$p' "$outdir/BUNDLE_INFO.txt" | sed 's/^/  /'
say "needs on the GPU machine: ${needed:-?}"
total="$(du -sb "$outdir" --exclude=out 2> /dev/null | cut -f1)"
say "total size: $total bytes ($(du -sh --exclude=out "$outdir" | cut -f1))"
# The device tool carries at most 64 MiB in all (the bundle and the working tree together).
# Measured 2026-11-25 with the link layout: 27 binaries, bin.tar.xz see docs/GPU_BUNDLE.md.
warn_mib="${CUDAJIT_BUNDLE_WARN_MIB:-30}"
# Without the layout the archive is about 52 MiB (27 binaries): the limit is then 58 MiB.
if ((layout)); then default_max=40; else default_max=58; fi
max_mib="${CUDAJIT_BUNDLE_MAX_MIB:-$default_max}"
if [[ -f "$outdir/bin.tar.xz" ]]; then
    xz_size="$(wc -c < "$outdir/bin.tar.xz")"
    say "bin.tar.xz: $xz_size bytes ($((xz_size / 1024)) KiB) for $count binaries; warning above $warn_mib MiB, error above $max_mib MiB"
    if ((xz_size > max_mib * 1024 * 1024)); then
        die "bin.tar.xz is $xz_size bytes, over $max_mib MiB: it would leave too little of the device tool's 64 MiB. Was a binary added? The link layout (on by default where rust-lld links it) makes it smaller. See docs/GPU_BUNDLE.md ('Size'). CUDAJIT_BUNDLE_MAX_MIB raises the limit"
    elif ((xz_size > warn_mib * 1024 * 1024)); then
        say "warning: bin.tar.xz is over $warn_mib MiB; see docs/GPU_BUNDLE.md ('Size')"
    fi
fi
say "run it (on the GPU machine): bash ${outdir#"$repo_root"/}/run.sh"
