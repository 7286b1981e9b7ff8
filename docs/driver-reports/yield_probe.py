#!/usr/bin/env python3
"""A probe, not a reproducer (docs/driver-reports/README.md, section 4): where do the lanes of a
warp meet again after an if/else whose one side is a compare-and-swap loop (whose head ptxas
gives a YIELD)? `yield_probe.ptx` runs, per thread, one atom.shared.cas (odd input) or a CAS-loop
f64 min on one shared word (even input), then stores `activemask`. ptxas brackets the if/else
with BSSY/BSYNC, so a warp that met again there reads 0xffffffff everywhere; a partial mask
means the lanes reached the `activemask` apart (the PTX allows it; ptxas's code after such a
BSYNC assumes they did not). Needs CuPy and the driver (the driver's JIT compiles the PTX).

    python3 docs/driver-reports/yield_probe.py [RUNS]
"""
import collections
import os
import sys

import cupy as cp
import numpy as np


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    here = os.path.dirname(os.path.abspath(__file__))
    k = cp.RawModule(path=os.path.join(here, "yield_probe.ptx")).get_function(
        "cas_loop_then_activemask")
    n = 1 << 16
    x = cp.asarray(np.arange(n, dtype=np.uint16))
    for run in range(runs):
        out = cp.zeros(n, dtype=cp.uint32)
        k(((n + 255) // 256,), (256,), (x, out, np.uint32(n)))
        masks = cp.asnumpy(out).reshape(-1, 32)
        split = [w for w in range(masks.shape[0]) if (masks[w] != 0xFFFFFFFF).any()]
        kinds = collections.Counter(
            tuple(sorted(set(int(m) for m in masks[w]))) for w in split)
        print(f"run {run}: {len(split)} of {masks.shape[0]} warps read a partial activemask")
        for groups, count in kinds.most_common(3):
            print(f"    {count} warps: " + ", ".join(f"{g:#010x}" for g in groups))


if __name__ == "__main__":
    main()
