#!/usr/bin/env bash
# The simulator's benchmark on this machine: cudajit's simulator (benches/sim.rs) and numba-cuda's
# CUDA simulator (benches/sim_peers.py, NUMBA_ENABLE_CUDASIM=1) on the same kernels and sizes, in
# one run; prints both JSON lines and the ratio of threads per second.
#
#   bash scripts/bench-sim.sh [--max-seconds S]    # S: numba's time budget per row (default 60)
#
# numba's simulator needs `pip install numba-cuda nvidia-cuda-runtime-cu12`; without it only
# cudajit's rows are printed. numba runs a prefix of the grid when the whole would exceed the
# budget (its rows say so: "extrapolated": true, with the n it ran).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
max="${2:-60}"
[[ "${1:-}" == --max-seconds ]] || max=60

ours=$(cargo bench -q --bench sim 2> /dev/null | grep '^{')
echo "$ours"
peers=""
if python3 -c "import numba.cuda" > /dev/null 2>&1 || NUMBA_ENABLE_CUDASIM=1 python3 -c "import numba.cuda" > /dev/null 2>&1; then
    peers=$(python3 benches/sim_peers.py --max-seconds "$max" | grep '^{')$'\n'
    printf '%s' "$peers"
else
    echo "bench-sim: numba-cuda is not installed: no peer rows (pip install numba-cuda nvidia-cuda-runtime-cu12)"
fi
OURS="$ours" PEERS="$peers" python3 - << 'PY'
import json, os
ours = [json.loads(l) for l in os.environ["OURS"].splitlines() if l.startswith("{")]
peers = [json.loads(l) for l in os.environ["PEERS"].splitlines() if l.startswith("{")]
print(f"\n| kernel | n | cudajit sim threads/s | numba sim threads/s | ratio |")
print("|---|---|---|---|---|")
for o in ours:
    p = next((p for p in peers if p.get("kernel") == o["kernel"] and p.get("n_requested") == o["n"]), None)
    pr = f'{p["threads_per_s"]:,.0f}' + (f' (ran {p["n_run"]:,})' if p and p.get("extrapolated") else "") if p else "-"
    ratio = f'{o["threads_per_s"] / p["threads_per_s"]:,.0f}x' if p else "-"
    print(f'| {o["kernel"]} | {o["n"]:,} | {o["threads_per_s"]:,.0f} | {pr} | {ratio} |')
PY
