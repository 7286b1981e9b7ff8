#!/usr/bin/env bash
# Runs cudajit's benchmark and its peers (torch, CuPy, numba-cuda) on this machine's GPU in one
# run, and prints one table of ratios. See docs/BENCHMARKS.md.
#
#   bash scripts/bench.sh [--ours BIN | --bundle DIR] [--peers PEERS_PY] [--quick]
#                         [--only w1,w2] [--no-ours] [--no-peers] [--sweep] [--torch-compile]
#                         [--gpus N]
#
#   --ours BIN       cudajit's bench binary (bench.rs built in release; in a GPU bundle: bin/bench-bench)
#   --bundle DIR     take the binary from a GPU bundle (scripts/gpu-bundle.sh): DIR/bin/ or DIR/bin.tar.xz
#   --peers FILE     peers.py (default: benches/peers.py next to this script's folder, or DIR/benches/)
#   --quick          small sizes and few repetitions (a smoke test, seconds)
#   --only w1,w2     only these workloads (python3 benches/peers.py --list names them)
#   --gpus N         devices of the all-reduce and sharded rows (default 2; 1 rehearses them on
#                    one GPU: a communicator and a mesh of one device, no scaling)
#   --no-ours / --no-peers   run one side only
#   --sweep          also time our elementwise kernel's launch geometries (rows "cudajit-diag")
#   --torch-compile  also time torch.compile on the fused chain (slow to compile)
#
# Without --ours or --bundle, the binary is looked for in $CUDAJIT_BENCH_BIN, then
# ./gpu-bundle, then built with cargo (release) when cargo is here.
#
# Writes to ${OUT:-bench-out}/: ours.jsonl, peers.jsonl, bench.jsonl (both, merged),
# bench.md (the report), ours.log and peers.log (stderr), topo.txt (the GPU count and
# `nvidia-smi topo -m`, for the multi-GPU rows). Exits 0 when both sides ran (rows
# that failed are in the table as "error"), 1 when a side could not run at all, 2 on bad usage.
# Each side has a time limit: $BENCH_TIMEOUT seconds (default 420).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() {
    printf 'bench.sh: %s\n' "$*" >&2
    exit 2
}

ours=""
bundle=""
peers=""
run_ours=1
run_peers=1
common=()
ours_args=()
peers_args=()
while (($#)); do
    case "$1" in
        --ours) ours="${2?--ours needs a path}"; shift ;;
        --bundle) bundle="${2?--bundle needs a folder}"; shift ;;
        --peers) peers="${2?--peers needs a path}"; shift ;;
        --quick) common+=(--quick) ;;
        --only) common+=(--only "${2?--only needs a list}"); shift ;;
        --gpus) common+=(--gpus "${2?--gpus needs a device count}"); shift ;;
        --no-ours) run_ours=0 ;;
        --no-peers) run_peers=0 ;;
        --sweep) ours_args+=(--sweep) ;;
        --torch-compile) peers_args+=(--torch-compile) ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
command -v python3 > /dev/null 2>&1 || die "python3 is needed (peers.py and the report)"

out="${OUT:-bench-out}"
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"
limit="${BENCH_TIMEOUT:-420}"
timeout_cmd=()
if command -v timeout > /dev/null 2>&1 && [[ "$limit" != 0 ]]; then
    timeout_cmd=(timeout --kill-after=15 "$limit")
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/cudajit-bench.XXXXXX")" || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# --- find our binary ----------------------------------------------------------------------
# example-bench_ours (benches/bench.rs built as an example) comes first: until Cargo.toml says
# `harness = false` for it, bench-bench is a libtest binary with no benchmarks in it.
from_bundle() { # $1: bundle folder; prints the binary's path (unpacked into $tmp if needed)
    local b="$1" name
    for name in example-bench_ours bench-bench; do
        [[ -x "$b/bin/$name" ]] && { echo "$b/bin/$name"; return 0; }
    done
    [[ -f "$b/bin.tar.xz" ]] || return 1
    if command -v tar > /dev/null 2>&1 && command -v xz > /dev/null 2>&1; then
        tar -C "$tmp" -xJf "$b/bin.tar.xz" --wildcards 'bin/*bench*' || return 1
    else
        python3 - "$b/bin.tar.xz" "$tmp" << 'PY' || return 1
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    t.extractall(sys.argv[2], **kw)
PY
    fi
    for name in example-bench_ours bench-bench; do
        [[ -x "$tmp/bin/$name" ]] && { echo "$tmp/bin/$name"; return 0; }
    done
    return 1
}

if ((run_ours)); then
    if [[ -n "$ours" ]]; then
        [[ -x "$ours" ]] || die "--ours $ours is not an executable"
    elif [[ -n "$bundle" ]]; then
        ours="$(from_bundle "$bundle")" || die "no bench-bench (or example-bench_ours) in the bundle $bundle"
    elif [[ -n "${CUDAJIT_BENCH_BIN:-}" ]]; then
        ours="$CUDAJIT_BENCH_BIN"
    elif [[ -d "$root/gpu-bundle" ]] && ours="$(from_bundle "$root/gpu-bundle")"; then
        :
    elif command -v cargo > /dev/null 2>&1; then
        echo "bench.sh: building the bench binary (cargo, release) ..." >&2
        ours="$(cd "$root" && cargo bench --bench bench --no-run --message-format=json 2> "$tmp/cargo.log" |
            python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])')" || true
        [[ -n "$ours" && -x "$ours" ]] || {
            cat "$tmp/cargo.log" >&2
            die "could not build the bench binary (is [[bench]] name = \"bench\" in Cargo.toml?); use --ours"
        }
    else
        die "no bench binary: give --ours BIN or --bundle DIR"
    fi
fi

if ((run_peers)); then
    if [[ -z "$peers" ]]; then
        for p in "$root/benches/peers.py" "${bundle:+$bundle/benches/peers.py}" "$here/benches/peers.py"; do
            [[ -n "$p" && -f "$p" ]] && { peers="$p"; break; }
        done
    fi
    [[ -n "$peers" && -f "$peers" ]] || die "peers.py not found: give --peers FILE"
fi
report=""
for p in "$(dirname "${peers:-$root/benches/peers.py}")/report.py" "$root/benches/report.py" \
    "${bundle:+$bundle/benches/report.py}"; do
    [[ -n "$p" && -f "$p" ]] && { report="$p"; break; }
done
[[ -n "$report" ]] || die "report.py not found (it lives next to peers.py)"

# --- run ----------------------------------------------------------------------------------
status=0
: > "$out/ours.jsonl"
: > "$out/peers.jsonl"
if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
        --format=csv > "$out/gpu-before.csv" 2>&1 || true
    # The multi-GPU rows' context: how many GPUs and how they are linked (NVLink, PCIe).
    {
        echo "GPUs: $(nvidia-smi --query-gpu=index --format=csv,noheader 2> /dev/null | wc -l)"
        nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader 2> /dev/null
        echo
        nvidia-smi topo -m 2>&1
    } > "$out/topo.txt" || true
else
    echo "GPUs: ? (no nvidia-smi)" > "$out/topo.txt"
fi
if ((run_ours)); then
    echo "bench.sh: ours:  $ours ${common[*]} ${ours_args[*]}" >&2
    start=$SECONDS
    "${timeout_cmd[@]}" "$ours" --bench "${common[@]}" "${ours_args[@]}" > "$out/ours.jsonl" 2> "$out/ours.log" < /dev/null
    rc=$?
    echo "bench.sh: ours finished in $((SECONDS - start)) s (exit $rc)" >&2
    if ((rc != 0)); then
        status=1
        tail -n 20 "$out/ours.log" >&2
    fi
fi
if ((run_peers)); then
    echo "bench.sh: peers: python3 $peers ${common[*]} ${peers_args[*]}" >&2
    start=$SECONDS
    "${timeout_cmd[@]}" python3 "$peers" "${common[@]}" "${peers_args[@]}" > "$out/peers.jsonl" 2> "$out/peers.log" < /dev/null
    rc=$?
    echo "bench.sh: peers finished in $((SECONDS - start)) s (exit $rc)" >&2
    if ((rc != 0)); then
        status=1
        tail -n 20 "$out/peers.log" >&2
    fi
fi
cat "$out/ours.jsonl" "$out/peers.jsonl" | grep '^{' > "$out/bench.jsonl" || true
if [[ ! -s "$out/bench.jsonl" ]]; then
    echo "bench.sh: no results (see $out/ours.log and $out/peers.log)" >&2
    exit 1
fi
python3 "$report" "$out/bench.jsonl" --markdown "$out/bench.md" --summary-only --topo "$out/topo.txt" || status=1
echo "bench.sh: full report (every variant, notes, errors) in $out/bench.md; raw rows in $out/bench.jsonl" >&2
exit "$status"
