#!/usr/bin/env python3
"""Writes numba-cuda's xoroshiro128+ states and draws (tests/data/numba_xoroshiro128p.txt).

Run on a machine with an NVIDIA GPU and numba-cuda:
    python3 scripts/numba-random-reference.py > tests/data/numba_xoroshiro128p.txt
cudajit's tests compare its host model and its kernels with these numbers (src/random tests,
tests/gpu/random.rs): the same seeds must give the same states and the same draws.
"""

import numpy as np

# numba 0.68 still refers to np.row_stack, which numpy 2.5 removed (as benches/peers.py).
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402
from numba.cuda.random import (  # noqa: E402
    create_xoroshiro128p_states,
    xoroshiro128p_normal_float32,
    xoroshiro128p_normal_float64,
    xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)

THREADS = 16
DRAWS = 8
SEEDS = [0, 1, 42, 2**63 - 1, -1]  # numba takes int64 seeds; -1 is 2^64 - 1 as a u64


@cuda.jit
def draw(states, kind, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            if kind == 0:
                out[i, j] = xoroshiro128p_uniform_float32(states, i)
            elif kind == 1:
                out[i, j] = xoroshiro128p_uniform_float64(states, i)
            elif kind == 2:
                out[i, j] = xoroshiro128p_normal_float32(states, i)
            else:
                out[i, j] = xoroshiro128p_normal_float64(states, i)


def bits(a):
    a = np.ascontiguousarray(a)
    view = np.uint32 if a.dtype == np.float32 else np.uint64
    return [int(v) for v in a.view(view).ravel()]


def main():
    import numba

    try:
        import numba_cuda

        nc = numba_cuda.__version__
    except (ImportError, AttributeError):
        nc = "?"
    gpu = cuda.get_current_device().name
    gpu = gpu.decode() if isinstance(gpu, bytes) else gpu
    print(f"# numba-cuda's xoroshiro128+ (numba {numba.__version__}, numba-cuda {nc}, on an {gpu}): "
          "scripts/numba-random-reference.py")
    print(f"# threads {THREADS} draws {DRAWS}; per case: the first 8 states (s0 s1 ...), "
          "then each kind's draws as bits, thread-major")
    for seed in SEEDS:
        for sub in (0, 3):
            states = create_xoroshiro128p_states(THREADS, seed=seed, subsequence_start=sub)
            host = states.copy_to_host()
            print(f"case {seed & 0xFFFFFFFFFFFFFFFF} {sub}")
            print("states " + " ".join(f"{int(s['s0'])} {int(s['s1'])}" for s in host[:8]))
            for kind, (name, dtype) in enumerate(
                [("uniform_f32", np.float32), ("uniform_f64", np.float64),
                 ("normal_f32", np.float32), ("normal_f64", np.float64)]
            ):
                st = create_xoroshiro128p_states(THREADS, seed=seed, subsequence_start=sub)
                out = cuda.device_array((THREADS, DRAWS), dtype=dtype)
                draw[1, THREADS](st, kind, out)
                print(name + " " + " ".join(str(b) for b in bits(out.copy_to_host())))


if __name__ == "__main__":
    main()
