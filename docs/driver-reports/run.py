#!/usr/bin/env python3
"""Runs the minimal PTX reproducers of this folder on the GPU and compares every output with
its model. Needs only the NVIDIA driver and CuPy (which loads the PTX with the driver's JIT,
`cuModuleLoadData`, as cudajit does). Each kernel takes (const u16* in, u32* out, u32 n) and
is run once over all 65,536 u16 values.

    python3 docs/driver-reports/run.py            # every reproducer
    python3 docs/driver-reports/run.py w14        # those whose file name starts with w14

Exit status 1 if any reproducer reproduced (its output differs from the model).
"""
import glob
import os
import sys

import cupy as cp
import numpy as np


def s16(x):
    return x.astype(np.uint16).view(np.int16)


MODELS = {
    # out[i] = (s32) -(s16) x
    "neg_s16_widened": lambda x: (-s16(x)).astype(np.int32).view(np.uint32),
    # out[i] = max(x, 1) == 1
    "max_u16_eq": lambda x: (np.maximum(x, 1) == 1).astype(np.uint32),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"device: {props['name'].decode()} (sm_{props['major']}{props['minor']}), driver "
          f"{cp.cuda.runtime.driverGetVersion()}")
    x = np.arange(1 << 16, dtype=np.uint16)
    reproduced = False
    for path in sorted(glob.glob(os.path.join(here, prefix + "*.ptx"))):
        mod = cp.RawModule(path=path)
        for name, model in MODELS.items():
            try:
                k = mod.get_function(name)
            except Exception:
                continue
            n = x.size
            dx = cp.asarray(x)
            out = cp.full(n, 0xDEADBEEF, dtype=cp.uint32)
            k(((n + 255) // 256,), (256,), (dx, out, np.uint32(n)))
            got = cp.asnumpy(out)
            want = model(x)
            bad = np.nonzero(got != want)[0]
            print(f"{os.path.basename(path)} ({name}): {bad.size} of {n} outputs differ from the model")
            for i in bad[:5]:
                print(f"    x = {x[i]:#06x}: got {got[i]:#010x}, want {want[i]:#010x}")
            reproduced |= bad.size > 0
    sys.exit(1 if reproduced else 0)


if __name__ == "__main__":
    main()
