#!/usr/bin/env python3
"""The peer side of the CPU-simulator benchmark: numba-cuda's own CUDA simulator
(NUMBA_ENABLE_CUDASIM=1), to set against cudajit's simulator backend (CUDAJIT_SIMULATOR=1).

    python3 benches/sim_peers.py [--kernels add,block_sum] [--sizes 100000,1000000]
                                 [--max-seconds 60] [--min-seconds 5]

Kernels (float32, 128 threads per block, blocks = ceil(n / 128)):
  add        numba's classic add_arrays: out[i] = x[i] + y[i], x = arange(n), y = 2 * arange(n)
  block_sum  each block loads 128 elements into cuda.shared.array, syncthreads, tree reduction
             with a syncthreads per step; thread 0 writes out[blockIdx.x]

numba's simulator runs every GPU thread as a Python thread, so it is very slow (thousands of
threads/s). Running the full grid for N = 10^6 could take most of an hour, so each measurement
has a budget (--max-seconds, all runs of that measurement together):
  * runs grow by doubling from 8 blocks; each run's result is checked against numpy;
  * as soon as the full requested N is predicted (from the last measured rate) to fit in what is
    left of the budget, the full N is run and reported ("extrapolated": false);
  * otherwise growth stops once a run took >= --min-seconds (or the next doubling would not fit
    the budget), and that last (largest) prefix run is reported: "n_run" < "n_requested",
    "extrapolated": true, and "seconds_for_requested" = n_requested / threads_per_s is an
    estimate, not a measurement.
Timed: the kernel launch up to cuda.synchronize(); inputs are copied with cuda.to_device before
and the result copied back after the timer. threads_per_s = n_run / seconds (n_run is a whole
number of blocks for a prefix run, so it equals the threads launched; for a full run the last
block has idle threads, see "threads_launched").

Prints one JSON object per line on stdout; versions and progress go to stderr.
"""

import os

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # must be set before numba is imported

import argparse
import json
import platform
import sys
import time

import numba
import numba_cuda
import numpy as np
from numba import cuda, float32

TPB = 128  # threads per block, both kernels


@cuda.jit
def add_arrays(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def block_sum(x, out):
    sm = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    if i < x.size:  # the last block may be partial: pad with zeros
        sm[t] = x[i]
    else:
        sm[t] = 0.0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = sm[0]


def run_once(kernel, n, rng):
    """Run `kernel` over n elements; check it against numpy; return the timed seconds."""
    blocks = (n + TPB - 1) // TPB
    if kernel == "add":
        x = np.arange(n, dtype=np.float32)
        y = 2 * np.arange(n, dtype=np.float32)
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        dout = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        t0 = time.perf_counter()
        add_arrays[blocks, TPB](dx, dy, dout)
        cuda.synchronize()
        secs = time.perf_counter() - t0
        # exact: every value is an integer below 2^24
        if not np.array_equal(dout.copy_to_host(), x + y):
            raise AssertionError("add: wrong result")
    else:
        x = rng.random(n, dtype=np.float32)
        dx = cuda.to_device(x)
        dout = cuda.to_device(np.full(blocks, np.nan, dtype=np.float32))
        t0 = time.perf_counter()
        block_sum[blocks, TPB](dx, dout)
        cuda.synchronize()
        secs = time.perf_counter() - t0
        pad = np.zeros(blocks * TPB, dtype=np.float64)
        pad[:n] = x
        ref = pad.reshape(blocks, TPB).sum(axis=1)
        if not np.allclose(dout.copy_to_host(), ref, rtol=1e-5, atol=1e-5):
            raise AssertionError("block_sum: wrong result")
    return secs


def measure(kernel, n_req, max_s, min_s, rng):
    spent = 0.0
    n = min(8 * TPB, n_req)
    while True:
        secs = run_once(kernel, n, rng)
        spent += secs
        rate = n / secs
        print(f"  {kernel} n={n}: {secs:.2f} s, {rate:.1f} threads/s", file=sys.stderr)
        if n == n_req:
            break
        left = max_s - spent
        if n_req / rate <= left:
            n = n_req  # the whole requested grid fits the budget: measure it, no extrapolation
            continue
        if secs >= min_s or 2 * secs > left:
            break  # long enough, or the next doubling would not fit: report this prefix
        n = min(2 * n, n_req)
    return {
        "peer": "numba-cudasim",
        "kernel": kernel,
        "n_requested": n_req,
        "n_run": n,
        "threads_launched": (n + TPB - 1) // TPB * TPB,
        "seconds": round(secs, 3),
        "threads_per_s": round(rate, 1),
        "extrapolated": n < n_req,
        "seconds_for_requested": round(n_req / rate, 1),
        "budget_s": max_s,
        "numba_cuda": numba_cuda.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="add,block_sum")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="budget per measurement (kernel x size), all its runs together")
    ap.add_argument("--min-seconds", type=float, default=5.0,
                    help="a prefix run this long is long enough to report")
    a = ap.parse_args()
    kernels = a.kernels.split(",")
    for k in kernels:
        if k not in ("add", "block_sum"):
            ap.error(f"unknown kernel {k!r}")
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    if not numba.config.ENABLE_CUDASIM:  # the simulator, never a real GPU
        sys.exit("NUMBA_ENABLE_CUDASIM did not take effect")
    print(f"numba-cuda {numba_cuda.__version__}, numba {numba.__version__}, "
          f"numpy {np.__version__}, python {platform.python_version()}, "
          f"NUMBA_ENABLE_CUDASIM={os.environ['NUMBA_ENABLE_CUDASIM']}", file=sys.stderr)
    rng = np.random.default_rng(0)
    for k in kernels:
        for n in sizes:
            print(json.dumps(measure(k, n, a.max_seconds, a.min_seconds, rng)), flush=True)


if __name__ == "__main__":
    main()
