#!/usr/bin/env bash
# A fuzzing campaign on a GPU machine: several processes of the differential fuzzer
# (examples/fuzz) per GPU, on fresh seeds, time-boxed, each with its own log; then one table of
# what ran and what differed (docs/RELIABILITY.md, "The campaign").
#
#   bash scripts/fuzz-campaign.sh --fuzz BIN --out DIR [--seconds S] [--procs P] [--gpus N]
#                                 [--seed0 X] [--blocks-every K] [--complex-every K]
#                                 [--] [fuzz arguments...]
#
#   --fuzz BIN        the fuzz example binary (a bundle's example-fuzz, or target/release/examples/fuzz)
#   --out DIR         where the logs and summary.txt go
#   --seconds S       each process's time box (default 300)
#   --procs P         processes per GPU (default 8)
#   --gpus N          GPUs to use (default: every one nvidia-smi lists)
#   --seed0 X         process i takes seeds X + i·100000 (batch b of it uses seed + b; default 31000000)
#   --blocks-every K  every K-th process runs block programs instead of trees and statement
#                     programs (default 3; 0: none)
#   --complex-every K every K-th process (counted before --blocks-every) runs complex trees only
#                     (default 0: none; the others run none: `--complex 0`)
#   fuzz arguments    passed to every process (e.g. --lang whole)
#
# Every process runs with CUDAJIT_CACHE=0 (one-off kernels would fill the disk cache). Exit
# status 1 if any process found a mismatch or failed.
set -uo pipefail

fuzz="" out="" seconds=300 procs=8 gpus="" seed0=31000000 blocks_every=3 complex_every=0
while (($#)); do
    case "$1" in
        --fuzz) fuzz="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --procs) procs="$2"; shift 2 ;;
        --gpus) gpus="$2"; shift 2 ;;
        --seed0) seed0="$2"; shift 2 ;;
        --blocks-every) blocks_every="$2"; shift 2 ;;
        --complex-every) complex_every="$2"; shift 2 ;;
        --) shift; break ;;
        -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) break ;;
    esac
done
extra=("$@")
[[ -x "$fuzz" ]] || { echo "fuzz-campaign: --fuzz BIN (an executable) is needed" >&2; exit 2; }
[[ -n "$out" ]] || { echo "fuzz-campaign: --out DIR is needed" >&2; exit 2; }
if [[ -z "$gpus" ]]; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    ((gpus > 0)) || gpus=1
fi
mkdir -p "$out"
total=$((procs * gpus))
echo "fuzz-campaign: $total processes ($procs on each of $gpus GPUs), ${seconds} s each, seeds from $seed0; extra: ${extra[*]:-none}" | tee "$out/summary.txt"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader >> "$out/summary.txt" 2>/dev/null
pids=()
for ((i = 0; i < total; i++)); do
    g=$((i % gpus))
    seed=$((seed0 + i * 100000))
    if ((complex_every > 0 && i % complex_every == complex_every - 1)); then
        what=(--trees 0 --programs 0 --complex 100000000)
    elif ((blocks_every > 0 && i % blocks_every == blocks_every - 1)); then
        what=(--trees 0 --programs 0 --blocks 100000000 --complex 0)
    else
        what=(--trees 100000000 --programs 100000000 --complex 0)
    fi
    CUDA_VISIBLE_DEVICES=$g CUDAJIT_CACHE=0 timeout $((seconds + 120)) \
        "$fuzz" "${what[@]}" --seed "$seed" --seconds "$seconds" "${extra[@]}" \
        > "$out/p$i.log" 2>&1 &
    pids+=($!)
done
fail=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    echo "process $i: exit $rc" >> "$out/summary.txt"
    ((rc == 0)) || fail=1
done
python3 - "$out" <<'EOF' | tee -a "$out/summary.txt"
import glob, os, re, sys
out = sys.argv[1]
tot = {"trees": 0, "tree_mm": 0, "programs": 0, "prog_mm": 0, "blocks": 0, "block_mm": 0,
       "compared": 0, "words": 0, "block_words": 0, "complex": 0, "cx_parts": 0, "cx_mm": 0}
for f in sorted(glob.glob(os.path.join(out, "p*.log"))):
    t = open(f, errors="replace").read()
    m = re.search(r"fuzz: (\d+) trees \(\d+ nodes\) in \d+ kernels, (\d+) results compared.*?(\d+) mismatches", t)
    if m:
        tot["trees"] += int(m.group(1)); tot["compared"] += int(m.group(2)); tot["tree_mm"] += int(m.group(3))
    m = re.search(r"fuzz: (\d+) programs \(\d+ statements\), (\d+) output words.*?(\d+) mismatches", t)
    if m:
        tot["programs"] += int(m.group(1)); tot["words"] += int(m.group(2)); tot["prog_mm"] += int(m.group(3))
    m = re.search(r"fuzz: (\d+) block programs .*?(\d+) words compared, \d+ left open, (\d+) mismatches", t)
    if m:
        tot["blocks"] += int(m.group(1)); tot["block_words"] += int(m.group(2)); tot["block_mm"] += int(m.group(3))
    m = re.search(r"fuzz: (\d+) complex trees .*?, (\d+) parts compared bit for bit.*?(\d+) mismatches", t)
    if m:
        tot["complex"] += int(m.group(1)); tot["cx_parts"] += int(m.group(2)); tot["cx_mm"] += int(m.group(3))
n = tot["trees"] + tot["programs"] + tot["blocks"] + tot["complex"]
mm = tot["tree_mm"] + tot["prog_mm"] + tot["block_mm"] + tot["cx_mm"]
print("| kind | programs | compared | mismatches |")
print("|---|---:|---:|---:|")
print("| expression trees | {:,} | {:,} results | {} |".format(tot["trees"], tot["compared"], tot["tree_mm"]))
print("| statement programs | {:,} | {:,} words | {} |".format(tot["programs"], tot["words"], tot["prog_mm"]))
print("| block programs | {:,} | {:,} words | {} |".format(tot["blocks"], tot["block_words"], tot["block_mm"]))
print("| complex trees | {:,} | {:,} parts | {} |".format(tot["complex"], tot["cx_parts"], tot["cx_mm"]))
print("| all | {:,} | | {} ({:.2f} per 10^6) |".format(n, mm, mm * 1e6 / n if n else 0.0))
EOF
exit $fail
