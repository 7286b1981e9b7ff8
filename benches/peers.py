#!/usr/bin/env python3
"""The peers' side of cudajit's benchmark: torch, CuPy and numba-cuda on the workloads that
`benches/bench.rs` runs with cudajit, in the same format, so that `scripts/bench.sh` can put
both in one table of ratios. See docs/BENCHMARKS.md.

    python3 benches/peers.py [--quick] [--only w1,w2] [--impls torch,cupy,numba] [--reps N]
                             [--torch-compile] [--list]

Prints one JSON object per line on stdout:
    {"work": "add", "size": "2^28 f32", "impl": "torch", "variant": "torch.add(out=)",
     "ms": 0.744, "min_ms": ..., "max_ms": ..., "reps": 20, "bytes": 3221225472, "note": ...}
A missing package or a failing peer gives a line with "error" instead, and the run goes on;
the exit status is 0 unless the arguments are wrong.

Method: device work is timed with each framework's CUDA events around every repetition
(torch.cuda.Event, cupy.cuda.Event, numba.cuda.event), after warm-up; "ms" is the median.
Inputs are fresh random numbers for every run (never zeros); every peer's output is first
written into a NaN-poisoned array and checked against a float64 reference before it is timed.
"bytes" counts bytes read plus bytes written (host<->device rows: the bytes transferred).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

WORKS = [
    "copy",
    "add",
    "axpy",
    "chain",
    "add_f64",
    "bcast_add",
    "sum",
    "max",
    "argmax",
    "row_sum",
    "col_sum",
    "scan",
    "scan_i32",
    "launch",
    "compile_cold",
    "compile_cached",
    "compile_new_process",
    "graph",
    "pool",
    "h2d_pinned",
    "d2h_pinned",
    "h2d_pageable",
    "d2h_pageable",
    "peer_copy",
    "all_reduce",
    "sum_1gpu",
    "sum_sharded",
    "add_1gpu",
    "add_sharded",
    "scan_1gpu",
    "scan_sharded",
    # Two processes, one GPU each (torch.distributed): our side's rows run as two processes
    # too (the bench starts itself as ranks). The *_procs rows' torch column is torch's
    # all_reduce / sum_sharded / add_sharded rows of the same run (report.py); the *_sockets
    # rows are torch's run again with NCCL's socket transport forced.
    "all_reduce_procs",
    "sum_procs",
    "add_procs",
    "all_reduce_sockets",
    "sum_sockets",
    "add_sockets",
    "matmul_f32",
    "matmul_tf32",
    "matmul_f16",
    "matmul_bf16",
    "matmul_fp8",
    "matmul_batched",
    "matmul_splitk",
    "gemm_bias_gelu",
    "attention",
    "attention_causal",
    "resize",
    # cudajit only (device launches against host launches): no peer has dynamic parallelism.
    "mandelbrot_dp",
]
# The multi-GPU rows that need two devices (sum_1gpu and add_1gpu run on one).
MULTI_WORKS = ("peer_copy", "all_reduce", "sum_sharded", "add_sharded")
# The torch.distributed works rerun with NCCL's socket transport forced, and their names there.
SOCKET_WORKS = {"all_reduce": "all_reduce_sockets", "sum_sharded": "sum_sockets",
                "add_sharded": "add_sockets"}
SOCKET_VARS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
# Our two-process rows whose torch column is the torch.distributed row of this name.
PROCS_WORKS = {"all_reduce": "all_reduce_procs", "sum_sharded": "sum_procs",
               "add_sharded": "add_procs"}
# nccl-tests' way of timing an all-reduce: the average over this many back-to-back iterations.
NCCL_TESTS_ITERS = 20
IMPLS = ["torch", "cupy", "numba"]
# The graph row: kernels per graph and graph launches per repetition (bench.rs uses the same).
GRAPH_KERNELS, GRAPH_LAUNCHES = 100, 100
# The pool row: bytes per allocation and allocations per repetition.
POOL_BYTES, POOL_ITERS = 1 << 20, 10_000

# numba.cuda once loaded: the numba kernels below name it as a module global, the form numba
# (and its simulator) resolve for sure.
cuda = None


# ------------------------------------------------------------------------------------------
# Output


def emit(**rec):
    """Prints one JSON line (keys with None values are left out)."""
    print(json.dumps({k: v for k, v in rec.items() if v is not None}), flush=True)


def short_error(e):
    msg = "%s: %s" % (type(e).__name__, e)
    msg = " ".join(msg.split())
    return msg[:600]


def size_1d(n, ty):
    if n > 0 and n & (n - 1) == 0:
        return "2^%d %s" % (n.bit_length() - 1, ty)
    return "%d %s" % (n, ty)


def size_bytes(b):
    if b >= 1 << 30 and b % (1 << 30) == 0:
        return "%d GiB" % (b >> 30)
    return "%d MiB" % (b >> 20)


class Sizes:
    """The problem sizes; bench.rs uses the same ones and the same labels."""

    def __init__(self, quick):
        self.quick = quick
        if quick:
            self.n, self.n64, self.mat, self.xfer = 1 << 22, 1 << 21, 2048, 1 << 24
            self.launches, self.compiles = 1000, 3
            self.peer_bytes, self.all_reduce_bytes, self.n_multi = 16 << 20, [4 << 20, 16 << 20], 1 << 22
        else:
            self.n, self.n64, self.mat, self.xfer = 1 << 28, 1 << 27, 16384, 1 << 28
            self.launches, self.compiles = 10_000, 7
            self.peer_bytes, self.all_reduce_bytes = 1 << 30, [4 << 20, 64 << 20, 1 << 30]
            self.n_multi = 1 << 30

    def label(self, work):
        if work == "add_f64":
            return size_1d(self.n64, "f64")
        if work in ("bcast_add", "row_sum", "col_sum"):
            return "%dx%d f32" % (self.mat, self.mat)
        if work == "scan_i32":
            return size_1d(self.n, "i32")
        if work == "launch":
            return "1 elem, 3 arrays"
        if work == "resize":
            m, o = resize_sides(self.quick)
            return "%dx%d->%dx%d f32" % (m, m, o, o)
        if work in ("compile_cold", "compile_cached"):
            return "new kernel"
        if work == "compile_new_process":
            return "cached kernel"
        if work == "graph":
            return "%d kernels, 32 elem" % GRAPH_KERNELS
        if work == "pool":
            return size_bytes(POOL_BYTES)
        if work.startswith("h2d") or work.startswith("d2h"):
            return size_bytes(self.xfer * 4)
        if work == "peer_copy":
            return peer_label(self.peer_bytes, 0, 1)
        if work == "all_reduce":
            return all_reduce_label(self.all_reduce_bytes[-1])
        if work in ("sum_1gpu", "sum_sharded", "add_1gpu", "add_sharded", "scan_1gpu",
                    "scan_sharded"):
            return size_1d(self.n_multi, "f32")
        return size_1d(self.n, "f32")


def peer_label(b, src, dst):
    """The size label of a peer copy of `b` bytes from device src to device dst."""
    return "%s %d->%d" % (size_bytes(b), src, dst)


def all_reduce_label(b):
    return "%s f32" % size_bytes(b)


def busbw_gbs(b, ms, ranks):
    """nccl-tests' bus bandwidth of an all-reduce: bytes per rank / time * 2(n-1)/n, GB/s."""
    return b / (ms * 1e-3) / 1e9 * 2.0 * (ranks - 1) / ranks


# ------------------------------------------------------------------------------------------
# Frameworks, imported lazily; a failed import is remembered and reported per work.


class Frameworks:
    def __init__(self, wanted):
        self.wanted = wanted
        self._mods = {}
        self._errors = {}

    def get(self, name):
        """The framework's module (torch, cupy, numba.cuda), or raises with why not."""
        if name not in self.wanted:
            raise RuntimeError("%s not selected (--impls)" % name)
        if name in self._errors:
            raise RuntimeError(self._errors[name])
        if name not in self._mods:
            try:
                self._mods[name] = getattr(self, "_load_" + name)()
            except BaseException as e:  # ImportError, CUDA init errors, ...
                if isinstance(e, KeyboardInterrupt):
                    raise
                self._errors[name] = "%s unavailable: %s" % (name, short_error(e))
                raise RuntimeError(self._errors[name])
        return self._mods[name]

    @staticmethod
    def _load_torch():
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch.zeros(1, device="cuda")
        return torch

    @staticmethod
    def _load_cupy():
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        cupy.zeros(1, dtype=cupy.float32)
        return cupy

    @staticmethod
    def _load_numba():
        import numpy as np

        # numba 0.68 still refers to np.row_stack, which numpy 2.5 removed.
        if not hasattr(np, "row_stack"):
            np.row_stack = np.vstack
        global cuda
        from numba import cuda as numba_cuda

        if not numba_cuda.is_available():
            raise RuntimeError("numba.cuda.is_available() is False")
        cuda = numba_cuda
        return numba_cuda

    def versions(self):
        out = []
        for name, mod in (("torch", "torch"), ("cupy", "cupy"), ("numba", "numba")):
            try:
                self.get(name)
                m = sys.modules[mod]
                v = getattr(m, "__version__", "?")
                if name == "numba":
                    try:
                        import importlib.metadata as md

                        v += " + numba-cuda " + md.version("numba-cuda")
                    except Exception:
                        pass
                out.append("%s %s" % (name, v))
            except Exception as e:
                out.append("%s: %s" % (name, e))
        return out


# ------------------------------------------------------------------------------------------
# Arrays for inputs and checks: the same small API over torch and CuPy.


class TorchLib:
    name = "torch"

    def __init__(self, torch):
        self.t = torch
        self.g = torch.Generator(device="cuda")

    def rand(self, shape, lo, hi, seed, dtype="float32"):
        self.g.manual_seed(seed)
        return self.t.empty(shape, dtype=getattr(self.t, dtype), device="cuda").uniform_(
            lo, hi, generator=self.g
        )

    def nan(self, shape, dtype="float32"):
        size = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        return self.t.full(size, float("nan"), dtype=getattr(self.t, dtype), device="cuda")

    def f64(self, a):
        return a.double()

    def sqrt(self, a):
        return self.t.sqrt(a)

    def item(self, a):
        return a.item()

    def finite(self, a):
        return bool(self.t.isfinite(a).all().item())

    def norm(self, a):
        return self.t.linalg.vector_norm(a.reshape(-1)).item()

    def sync(self):
        self.t.cuda.synchronize()

    def free(self):
        self.t.cuda.synchronize()
        self.t.cuda.empty_cache()


class CupyLib:
    name = "cupy"

    def __init__(self, cp):
        self.cp = cp

    def rand(self, shape, lo, hi, seed, dtype="float32"):
        rs = self.cp.random.RandomState(seed % (1 << 32))
        return rs.uniform(lo, hi, shape, dtype=getattr(self.cp, dtype))

    def nan(self, shape, dtype="float32"):
        return self.cp.full(shape, float("nan"), dtype=getattr(self.cp, dtype))

    def f64(self, a):
        return a.astype(self.cp.float64)

    def sqrt(self, a):
        return self.cp.sqrt(a)

    def item(self, a):
        return a.item()

    def finite(self, a):
        return bool(self.cp.isfinite(a).all().item())

    def norm(self, a):
        return float(self.cp.linalg.norm(a.reshape(-1)).item())

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def free(self):
        self.cp.cuda.Device().synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()


def check_close(lib, what, got, ref64, tol):
    """Fails unless every output is finite (the output was NaN-poisoned, so this also finds
    unwritten elements) and ||got - ref|| / ||ref|| <= tol; returns the relative error."""
    if not lib.finite(got):
        raise AssertionError("%s: outputs not finite (unwritten?)" % what)
    d = lib.norm(lib.f64(got) - ref64)
    r = lib.norm(ref64)
    rel = d / r if r > 0 else d
    if not rel <= tol:
        raise AssertionError("%s: relative error %.3e exceeds %.0e" % (what, rel, tol))
    return rel


# ------------------------------------------------------------------------------------------
# Timing


def time_events(kind, mod, fn, warmup, reps):
    """Times `fn` with the framework's CUDA events around each of `reps` repetitions after
    `warmup` calls: the times in ms. kind: torch, cupy or numba (mod is its module)."""
    for _ in range(warmup):
        fn()
    if kind == "torch":
        mod.cuda.synchronize()
        evs = [
            (mod.cuda.Event(enable_timing=True), mod.cuda.Event(enable_timing=True))
            for _ in range(reps)
        ]
        for s, e in evs:
            s.record()
            fn()
            e.record()
        mod.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in evs]
    if kind == "cupy":
        mod.cuda.Device().synchronize()
        evs = [(mod.cuda.Event(), mod.cuda.Event()) for _ in range(reps)]
        for s, e in evs:
            s.record()
            fn()
            e.record()
        evs[-1][1].synchronize()
        return [mod.cuda.get_elapsed_time(s, e) for s, e in evs]
    if kind == "numba":
        mod.synchronize()
        evs = [(mod.event(), mod.event()) for _ in range(reps)]  # timing is the default
        for s, e in evs:
            s.record()
            fn()
            e.record()
        evs[-1][1].synchronize()
        return [s.elapsed_time(e) for s, e in evs]
    raise ValueError(kind)


def stats(times):
    return dict(
        ms=round(statistics.median(times), 6),
        min_ms=round(min(times), 6),
        max_ms=round(max(times), 6),
        reps=len(times),
    )


# ------------------------------------------------------------------------------------------
# The run


class Run:
    def __init__(self, args):
        self.args = args
        self.sizes = Sizes(args.quick)
        self.reps = args.reps or (5 if args.quick else 20)
        self.warmup = 1 if args.quick else 3
        self.fw = Frameworks(args.impls)
        self.seed = (time.time_ns() ^ (os.getpid() << 20)) & ((1 << 62) - 1)
        self._n = 0

    def next_seed(self):
        self._n += 1
        return (self.seed * 6364136223846793005 + self._n * 1442695040888963407) % (1 << 62)

    def selected(self, work):
        return (not self.args.only or work in self.args.only) and (
            not self.args.filter or self.args.filter in work
        )

    def peer(self, work, impl, variant, body, bytes_=None, unit=None, size=None, devices=None,
             busbw_ranks=None, flops=None):
        """Runs one peer measurement: `body()` returns (times in ms, note) after checking its
        result; any exception becomes an error line. size: the label if not the work's;
        devices: the device count of a multi-GPU row; busbw_ranks: an all-reduce over this many
        ranks (adds busbw_gbs)."""
        if impl not in self.args.impls:
            return
        size = size or self.sizes.label(work)
        try:
            times, note = body()
            st = stats(times)
            bw = None
            if busbw_ranks:
                bw = round(busbw_gbs(bytes_, st["ms"], busbw_ranks), 6)
            emit(
                work=work,
                size=size,
                impl=impl,
                variant=variant,
                bytes=bytes_,
                unit=unit,
                note=note,
                devices=devices,
                busbw_gbs=bw,
                flops=flops,
                **st
            )
        except Exception as e:
            emit(work=work, size=size, impl=impl, variant=variant, devices=devices,
                 error=short_error(e))
            if self.args.verbose:
                traceback.print_exc(file=sys.stderr)

    def lib_for(self, impl):
        """The array library that makes inputs and checks results for `impl`."""
        if impl == "torch":
            return TorchLib(self.fw.get("torch"))
        if impl == "cupy":
            return CupyLib(self.fw.get("cupy"))
        # numba: device arrays from CuPy, else torch (through __cuda_array_interface__)
        errors = []
        for name, cls in (("cupy", CupyLib), ("torch", TorchLib)):
            try:
                return cls(_load_any(self.fw, name))
            except Exception as e:
                errors.append(str(e))
        raise RuntimeError("numba's input arrays need CuPy or torch: " + "; ".join(errors))

    def time(self, impl, fn):
        return time_events(impl, self.fw.get(impl), fn, self.warmup, self.reps)

    def free_all(self):
        for name, cls in (("torch", TorchLib), ("cupy", CupyLib)):
            mod = self.fw._mods.get(name)
            if mod is not None:
                try:
                    cls(mod).free()
                except Exception:
                    pass


def _load_any(fw, name):
    """A framework module for array work even if it was not selected for timing."""
    if name in fw._mods:
        return fw._mods[name]
    if name in fw._errors:
        raise RuntimeError(fw._errors[name])
    try:
        fw._mods[name] = getattr(fw, "_load_" + name)()
    except Exception as e:
        fw._errors[name] = "%s unavailable: %s" % (name, short_error(e))
        raise
    return fw._mods[name]


# ------------------------------------------------------------------------------------------
# numba kernels, compiled on first use


_NB = {}


def nb_kernels(nbc):
    """The numba kernels (defined once; each compiles at its first launch). `nbc` is numba.cuda,
    also the module global `cuda` the kernels use."""
    if _NB:
        return _NB
    import numpy as np

    half, one = np.float32(0.5), np.float32(1.0)

    @nbc.jit
    def add(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    @nbc.jit
    def axpy(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    @nbc.jit
    def chain(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = math.sqrt(x[i] * x[i] + y[i] * y[i]) * half + one

    @nbc.jit
    def bcast(x, row, out):
        j, i = cuda.grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = x[i, j] + row[j]

    _NB.update(add=add, axpy=axpy, chain=chain, bcast=bcast, np=np)
    return _NB


def nb_vadd(nbc):
    """numba's @vectorize(target='cuda') add (apart, so that its failure costs one row)."""
    if "vadd" not in _NB:
        from numba import vectorize

        @vectorize(["float32(float32, float32)"], target="cuda")
        def vadd(a, b):
            return a + b

        _NB["vadd"] = vadd
    return _NB["vadd"]


# ------------------------------------------------------------------------------------------
# Workloads. Each takes the Run and emits its rows.


def w_copy(r):
    n = r.sizes.n
    b = 2 * n * 4

    def torch_():
        lib = r.lib_for("torch")
        x = lib.rand(n, -1.0, 1.0, r.next_seed())
        out = lib.nan(n)
        out.copy_(x)
        check_close(lib, "copy", out, lib.f64(x), 0.0)
        return r.time("torch", lambda: out.copy_(x)), None

    r.peer("copy", "torch", "out.copy_(x)", torch_, b)

    def cupy_(method):
        def body():
            cp = r.fw.get("cupy")
            lib = r.lib_for("cupy")
            x = lib.rand(n, -1.0, 1.0, r.next_seed())
            out = lib.nan(n)
            if method == "memcpy":
                fn = lambda: out.data.copy_from_device_async(x.data, x.nbytes)  # noqa: E731
            else:
                fn = lambda: cp.copyto(out, x)  # noqa: E731
            fn()
            check_close(lib, "copy", out, lib.f64(x), 0.0)
            return r.time("cupy", fn), None

        return body

    r.peer("copy", "cupy", "MemoryPointer.copy_from_device_async (cudaMemcpyAsync)", cupy_("memcpy"), b)
    r.peer("copy", "cupy", "cupy.copyto", cupy_("copyto"), b)

    def numba_():
        cuda = r.fw.get("numba")
        lib = r.lib_for("numba")
        x = lib.rand(n, -1.0, 1.0, r.next_seed())
        out = lib.nan(n)
        dx, dout = cuda.as_cuda_array(x), cuda.as_cuda_array(out)
        dout.copy_to_device(dx)
        cuda.synchronize()
        check_close(lib, "copy", out, lib.f64(x), 0.0)
        return r.time("numba", lambda: dout.copy_to_device(dx)), None

    r.peer("copy", "numba", "DeviceNDArray.copy_to_device (cuMemcpyDtoD)", numba_, b)


def elementwise(r, work, n, dtype, ref, torch_fns, cupy_fns, numba_fns, tol, nin=2, lo=-1.0):
    """Runs the peers of one elementwise workload of `nin` inputs of `n` elements.
    ref(lib, xs64) -> float64 reference; *_fns: [(variant, make(lib, xs, out) -> fn)]."""
    size_of = 8 if dtype == "float64" else 4
    b = (nin + 1) * n * size_of
    for impl, fns in (("torch", torch_fns), ("cupy", cupy_fns), ("numba", numba_fns)):
        for variant, make in fns:

            def body(impl=impl, make=make):
                lib = r.lib_for(impl)
                xs = [lib.rand(n, lo, 1.0, r.next_seed(), dtype) for _ in range(nin)]
                out = lib.nan(n, dtype)
                fn = make(lib, xs, out)
                fn()
                lib.sync()
                rel = check_close(lib, work, out, ref(lib, [lib.f64(x) for x in xs]), tol)
                t = r.time(impl, fn)
                return t, "relative error vs float64 %.1e" % rel

            r.peer(work, impl, variant, body, b)
        r.free_all()


def nb_grid(n, threads=256):
    return (n + threads - 1) // threads, threads


def w_add(r, work="add", n=None, dtype="float32"):
    n = n or r.sizes.n
    cty = "float32" if dtype == "float32" else "float64"

    def cupy_ewk(lib, xs, out):
        k = lib.cp.ElementwiseKernel(
            "%s x, %s y" % (cty, cty), "%s z" % cty, "z = x + y", "bench_peer_add_" + cty
        )
        return lambda: k(xs[0], xs[1], out)

    def nb_jit(lib, xs, out):
        cuda = r.fw.get("numba")
        k = nb_kernels(cuda)["add"]
        dx, dy, do = (cuda.as_cuda_array(a) for a in (xs[0], xs[1], out))
        g, t = nb_grid(n)
        return lambda: k[g, t](dx, dy, do)

    def nb_vec(lib, xs, out):
        cuda = r.fw.get("numba")
        v = nb_vadd(cuda)
        dx, dy, do = (cuda.as_cuda_array(a) for a in (xs[0], xs[1], out))
        return lambda: v(dx, dy, out=do)

    numba_fns = [("@cuda.jit, 256 threads/block", nb_jit)]
    if dtype == "float32":
        numba_fns.append(("@vectorize(target='cuda')", nb_vec))
    elementwise(
        r,
        work,
        n,
        dtype,
        lambda lib, x: x[0] + x[1],
        [("torch.add(out=)", lambda lib, xs, out: lambda: lib.t.add(xs[0], xs[1], out=out))],
        [
            ("cupy.add(out=)", lambda lib, xs, out: lambda: lib.cp.add(xs[0], xs[1], out=out)),
            ("ElementwiseKernel", cupy_ewk),
        ],
        numba_fns,
        1e-6 if dtype == "float32" else 1e-15,
    )


def w_add_f64(r):
    w_add(r, "add_f64", r.sizes.n64, "float64")


def w_axpy(r):
    n = r.sizes.n
    a = 1.0 + (r.next_seed() % 1000) / 1000.0

    def cupy_ewk(lib, xs, out):
        k = lib.cp.ElementwiseKernel(
            "float32 x, float32 y, float32 a", "float32 z", "z = a * x + y", "bench_peer_axpy"
        )
        a32 = lib.cp.float32(a)
        return lambda: k(xs[0], xs[1], a32, out)

    def nb_jit(lib, xs, out):
        cuda = r.fw.get("numba")
        k = nb_kernels(cuda)["axpy"]
        a32 = nb_kernels(cuda)["np"].float32(a)
        dx, dy, do = (cuda.as_cuda_array(v) for v in (xs[0], xs[1], out))
        g, t = nb_grid(n)
        return lambda: k[g, t](a32, dx, dy, do)

    a32 = float(_f32(a))
    elementwise(
        r,
        "axpy",
        n,
        "float32",
        lambda lib, x: a32 * x[0] + x[1],
        [
            (
                "torch.add(y, x, alpha=a, out=)",
                lambda lib, xs, out: lambda: lib.t.add(xs[1], xs[0], alpha=a32, out=out),
            )
        ],
        [("ElementwiseKernel", cupy_ewk)],
        [("@cuda.jit, 256 threads/block", nb_jit)],
        1e-6,
    )


def _f32(v):
    import struct

    return struct.unpack("f", struct.pack("f", v))[0]


def w_chain(r):
    n = r.sizes.n

    def cupy_ewk(lib, xs, out):
        k = lib.cp.ElementwiseKernel(
            "float32 x, float32 y",
            "float32 z",
            "z = sqrtf(x * x + y * y) * 0.5f + 1.0f",
            "bench_peer_chain",
        )
        return lambda: k(xs[0], xs[1], out)

    def torch_eager(lib, xs, out):
        t, (x, y) = lib.t, xs

        return lambda: t.add(t.sqrt(x * x + y * y) * 0.5, 1, out=out)

    def torch_compiled(lib, xs, out):
        t, (x, y) = lib.t, xs
        f = t.compile(lambda a, b: t.sqrt(a * a + b * b) * 0.5 + 1)
        # the first call (checked) writes `out`; the timed calls return a new tensor
        return _Checked(lambda: f(x, y), lambda: out.copy_(f(x, y)))

    def nb_jit(lib, xs, out):
        cuda = r.fw.get("numba")
        k = nb_kernels(cuda)["chain"]
        dx, dy, do = (cuda.as_cuda_array(v) for v in (xs[0], xs[1], out))
        g, t = nb_grid(n)
        return lambda: k[g, t](dx, dy, do)

    torch_fns = [("torch eager: add(sqrt(x*x+y*y)*0.5, 1, out=)", torch_eager)]
    if r.args.torch_compile:
        torch_fns.append(("torch.compile", torch_compiled))
    elementwise(
        r,
        "chain",
        n,
        "float32",
        lambda lib, x: lib.sqrt(x[0] * x[0] + x[1] * x[1]) * 0.5 + 1.0,
        torch_fns,
        [("ElementwiseKernel", cupy_ewk)],
        [("@cuda.jit, 256 threads/block", nb_jit)],
        1e-6,
    )


def resize_sides(quick):
    """Input and output side of the `resize` row (benches/bench/texture.rs has the same)."""
    return (512, 768) if quick else (4096, 6144)


def w_resize(r):
    """A bilinear image resize, align_corners=False sampling points, edges clamped: torch's
    interpolate, CuPy's zoom (order 1, grid_mode=True: the same sampling points). Checked
    against the same library's float64 result."""
    m, o = resize_sides(r.sizes.quick)
    b = (m * m + o * o) * 4
    for impl, variant in (
        ("torch", 'F.interpolate(mode="bilinear", align_corners=False)'),
        ("cupy", 'cupyx.scipy.ndimage.zoom(order=1, grid_mode=True, mode="nearest", output=)'),
    ):

        def body(impl=impl):
            lib = r.lib_for(impl)
            x = lib.rand((m, m), -1.0, 1.0, r.next_seed())
            if impl == "torch":
                F = lib.t.nn.functional
                x4 = x[None, None]

                def fn():
                    return F.interpolate(x4, size=(o, o), mode="bilinear", align_corners=False)

                got = fn()[0, 0]
                ref = F.interpolate(lib.f64(x4), size=(o, o), mode="bilinear",
                                    align_corners=False)[0, 0]
            else:
                import cupyx.scipy.ndimage as ndi

                out = lib.nan((o, o))
                z = (o / m, o / m)

                def fn():
                    ndi.zoom(x, z, output=out, order=1, mode="nearest", grid_mode=True)

                fn()
                got = out
                ref = ndi.zoom(lib.f64(x), z, order=1, mode="nearest", grid_mode=True)
            lib.sync()
            # Not 1e-5: each library computes the sampling points in f32 ((x + 0.5) * scale -
            # 0.5 at x up to 6144 is off the float64 point by up to ~4e-4 texel), and with
            # random pixels that moves the result by ~2e-4 of its norm (measured on an H200).
            rel = check_close(lib, "resize", got, ref, 1e-3)
            return r.time(impl, fn), "relative error vs float64 %.1e" % rel

        r.peer("resize", impl, variant, body, b)
        r.free_all()


def w_bcast_add(r):
    m = r.sizes.mat
    b = 2 * m * m * 4 + m * 4
    for impl, variant in (
        ("torch", "torch.add(x, row, out=)"),
        ("cupy", "cupy.add(x, row, out=)"),
        ("numba", "@cuda.jit 2-D, 32x8 threads/block"),
    ):

        def body(impl=impl):
            lib = r.lib_for(impl)
            x = lib.rand((m, m), -1.0, 1.0, r.next_seed())
            row = lib.rand((m,), -1.0, 1.0, r.next_seed())
            out = lib.nan((m, m))
            if impl == "torch":
                fn = lambda: lib.t.add(x, row, out=out)  # noqa: E731
            elif impl == "cupy":
                fn = lambda: lib.cp.add(x, row, out=out)  # noqa: E731
            else:
                cuda = r.fw.get("numba")
                k = nb_kernels(cuda)["bcast"]
                dx, dr, do = (cuda.as_cuda_array(v) for v in (x, row, out))
                grid = ((m + 31) // 32, (m + 7) // 8)
                fn = lambda: k[grid, (32, 8)](dx, dr, do)  # noqa: E731
            fn()
            lib.sync()
            rel = check_close(lib, "bcast_add", out, lib.f64(x) + lib.f64(row), 1e-6)
            return r.time(impl, fn), "relative error vs float64 %.1e" % rel

        r.peer("bcast_add", impl, variant, body, b)
        r.free_all()


def w_reductions(r):
    """sum, max and argmax of the same kind of input: uniform in [0, 1)."""
    n = r.sizes.n
    b = n * 4
    works = [w for w in ("sum", "max", "argmax") if r.selected(w)]

    def full(impl, work, variant, make, tol=1e-5):
        def body():
            lib = r.lib_for(impl)
            x = lib.rand(n, 0.0, 1.0, r.next_seed())
            fn = make(lib, x)
            got = fn()
            lib.sync()
            x64 = lib.f64(x)
            if work == "sum":
                want = lib.item(x64.sum())
                g = got if isinstance(got, float) else float(lib.item(got))
                rel = abs(g - want) / abs(want)
                if not rel <= tol:
                    raise AssertionError("sum: got %r, want %r (relative %.2e)" % (g, want, rel))
                note = "relative error vs float64 %.1e" % rel
            elif work == "max":
                want = lib.item(x64.max())
                g = float(lib.item(got))
                if g != want:
                    raise AssertionError("max: got %r, want %r" % (g, want))
                note = None
            else:
                i = int(lib.item(got))
                mx = lib.item(x64.max())
                if not (0 <= i < n) or lib.item(x[i]) != mx:
                    raise AssertionError("argmax: index %d does not hold the maximum %r" % (i, mx))
                ties = int(lib.item((x == mx).sum()))
                note = "index %d; the maximum occurs %d times" % (i, ties)
            return r.time(impl, fn), note

        r.peer(work, impl, variant, body, b)

    if "sum" in works:
        full("torch", "sum", "torch.sum", lambda lib, x: lambda: lib.t.sum(x))
        full("cupy", "sum", "cupy.sum (%s)" % _cupy_accel(r), lambda lib, x: lambda: lib.cp.sum(x))

        def cupy_rk(lib, x):
            k = lib.cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "bench_peer_rsum")
            return lambda: k(x)

        full("cupy", "sum", "ReductionKernel", cupy_rk)

        def nb_reduce(lib, x):
            cuda = r.fw.get("numba")
            np = nb_kernels(cuda)["np"]
            red = cuda.reduce(lambda a, b: a + b)
            dx = cuda.as_cuda_array(x)
            res = cuda.device_array(1, dtype=np.float32)

            def fn():
                red(dx, res=res)

            def fn_checked():
                fn()
                return float(res.copy_to_host()[0])

            return _Checked(fn, fn_checked)

        full("numba", "sum", "@cuda.reduce (result on the device)", nb_reduce)
        r.free_all()
    if "max" in works:
        full("torch", "max", "torch.max", lambda lib, x: lambda: lib.t.max(x))
        full("cupy", "max", "cupy.max", lambda lib, x: lambda: lib.cp.max(x))
        r.free_all()
    if "argmax" in works:
        full("torch", "argmax", "torch.argmax", lambda lib, x: lambda: lib.t.argmax(x))
        full("cupy", "argmax", "cupy.argmax", lambda lib, x: lambda: lib.cp.argmax(x))
        r.free_all()


class _Checked:
    """A timed callable whose first call (the check) returns a host value."""

    def __init__(self, fn, first):
        self.fn, self.first, self.done = fn, first, False

    def __call__(self):
        if not self.done:
            self.done = True
            return self.first()
        return self.fn()


def _cupy_accel(r):
    """CuPy's reduction and routine accelerators (CUB, cuTENSOR), for the variant's name."""
    try:
        r.fw.get("cupy")
        from cupy._core import _accelerator

        names = {1: "cub", 2: "cutensor", 3: "cutensornet"}
        acc = list(_accelerator.get_reduction_accelerators())
        acc += list(_accelerator.get_routine_accelerators())
        return "accelerators: " + (", ".join(sorted({names.get(a, str(a)) for a in acc})) or "none")
    except Exception:
        return "accelerators: ?"


def w_axis_sums(r):
    m = r.sizes.mat
    b = m * m * 4 + m * 4
    for work, axis in (("row_sum", 1), ("col_sum", 0)):
        if not r.selected(work):
            continue
        for impl, variant in (
            ("torch", "torch.sum(x, dim=%d)" % axis),
            ("cupy", "cupy.sum(x, axis=%d)" % axis),
        ):

            def body(impl=impl, axis=axis, work=work):
                lib = r.lib_for(impl)
                x = lib.rand((m, m), 0.0, 1.0, r.next_seed())
                if impl == "torch":
                    fn = lambda: lib.t.sum(x, dim=axis)  # noqa: E731
                else:
                    fn = lambda: lib.cp.sum(x, axis=axis)  # noqa: E731
                got = fn()
                lib.sync()
                rel = check_close(lib, work, got, lib.f64(x).sum(axis), 1e-5)
                return r.time(impl, fn), "relative error vs float64 %.1e" % rel

            r.peer(work, impl, variant, body, b)
        r.free_all()


def w_scans(r):
    """Inclusive prefix sums of 2^28 f32 (uniform in [0, 1)) and i32 (in [-100, 100]), the
    output of the input's type (torch and CuPy widen i32 to i64 unless told the dtype).
    Checked: f32 against a float64 cumsum (relative error), i32 exactly against an int64
    cumsum wrapped to 32 bits (no wrap happens for these values). numba has no scan."""
    n = r.sizes.n
    for work, dtype in (("scan", "float32"), ("scan_i32", "int32")):
        if not r.selected(work):
            continue
        for impl, variant in (
            ("torch", "torch.cumsum(x, 0, dtype=x.dtype, out=out)"),
            ("cupy", "cupy.cumsum(x, dtype=x.dtype, out=out) (%s)" % _cupy_accel(r)),
        ):

            def body(impl=impl, dtype=dtype, work=work):
                lib = r.lib_for(impl)
                if dtype == "float32":
                    x = lib.rand(n, 0.0, 1.0, r.next_seed())
                else:
                    x = lib.rand(n, -100.0, 101.0, r.next_seed())
                    if impl == "torch":
                        x = x.floor().to(lib.t.int32)
                    else:
                        x = lib.cp.floor(x).astype(lib.cp.int32)
                out = lib.nan(n) if dtype == "float32" else None
                if impl == "torch":
                    t = lib.t
                    out = t.empty_like(x) if out is None else out
                    fn = lambda: t.cumsum(x, 0, dtype=x.dtype, out=out)  # noqa: E731
                    wide = lambda: t.cumsum(x.double() if dtype == "float32" else x.long(), 0)  # noqa: E731
                else:
                    cp = lib.cp
                    out = cp.empty_like(x) if out is None else out
                    fn = lambda: cp.cumsum(x, dtype=x.dtype, out=out)  # noqa: E731
                    wide = lambda: cp.cumsum(  # noqa: E731
                        x, dtype=cp.float64 if dtype == "float32" else cp.int64
                    )
                fn()
                lib.sync()
                if dtype == "float32":
                    rel = check_close(lib, work, out, wide(), 1e-4)
                    note = "relative error vs float64 %.1e" % rel
                else:
                    want = wide()
                    bad = (out.long() != want) if impl == "torch" else (out.astype(lib.cp.int64) != want)
                    if int(lib.item(bad.sum())) != 0:
                        raise AssertionError("%s: %d elements differ from int64" % (work, int(lib.item(bad.sum()))))
                    note = "exact"
                return r.time(impl, fn), note

            r.peer(work, impl, variant, body, 2 * n * 4)
        r.free_all()


def host_per_launch(fn, sync, n, reps=5):
    """Host time per launch: `n` launches then one synchronize, per repetition (ms)."""
    for _ in range(100):
        fn()
    sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        out.append((time.perf_counter() - t) * 1e3 / n)
    return out


def w_launch(r):
    n = r.sizes.launches
    note = "%d launches then one synchronize, per launch, median of 5" % n

    def torch_():
        lib = r.lib_for("torch")
        x, y = lib.rand(1, 1.0, 2.0, r.next_seed()), lib.rand(1, 1.0, 2.0, r.next_seed())
        out = lib.nan(1)
        fn = lambda: lib.t.add(x, y, out=out)  # noqa: E731
        fn()
        check_close(lib, "launch", out, lib.f64(x) + lib.f64(y), 1e-6)
        return host_per_launch(fn, lib.sync, n), note

    r.peer("launch", "torch", "torch.add(out=) on 1 element", torch_, unit="us")

    def cupy_(kind):
        def body():
            lib = r.lib_for("cupy")
            cp = lib.cp
            x, y = lib.rand(1, 1.0, 2.0, r.next_seed()), lib.rand(1, 1.0, 2.0, r.next_seed())
            out = lib.nan(1)
            if kind == "raw":
                k = cp.RawKernel(
                    r"""extern "C" __global__ void bench_peer_tiny(const float* x, const float* y,
                                                                    float* out, int n) {
                        int i = blockIdx.x * blockDim.x + threadIdx.x;
                        if (i < n) out[i] = x[i] + y[i];
                    }""",
                    "bench_peer_tiny",
                )
                one = cp.int32(1)
                fn = lambda: k((1,), (32,), (x, y, out, one))  # noqa: E731
            elif kind == "ewk":
                k = cp.ElementwiseKernel(
                    "float32 x, float32 y", "float32 z", "z = x + y", "bench_peer_tiny_ewk"
                )
                fn = lambda: k(x, y, out)  # noqa: E731
            else:
                fn = lambda: cp.add(x, y, out=out)  # noqa: E731
            fn()
            check_close(lib, "launch", out, lib.f64(x) + lib.f64(y), 1e-6)
            return host_per_launch(fn, lib.sync, n), note

        return body

    r.peer("launch", "cupy", "RawKernel, 1 block of 32 (3 arrays + int n)", cupy_("raw"), unit="us")
    r.peer("launch", "cupy", "ElementwiseKernel on 1 element", cupy_("ewk"), unit="us")
    r.peer("launch", "cupy", "cupy.add(out=) on 1 element", cupy_("ufunc"), unit="us")

    def numba_():
        nbc = r.fw.get("numba")
        np = nb_kernels(nbc)["np"]

        @nbc.jit("void(float32[::1], float32[::1], float32[::1])")
        def tiny(x, y, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] + y[i]

        hx = np.array([1.25], dtype=np.float32)
        hy = np.array([1.5 + (r.next_seed() % 1000) / 4096.0], dtype=np.float32)
        dx, dy = nbc.to_device(hx), nbc.to_device(hy)
        do = nbc.to_device(np.array([np.nan], dtype=np.float32))
        fn = lambda: tiny[1, 32](dx, dy, do)  # noqa: E731
        fn()
        got = do.copy_to_host()[0]
        if got != hx[0] + hy[0]:
            raise AssertionError("launch: got %r, want %r" % (got, hx[0] + hy[0]))
        return host_per_launch(fn, nbc.synchronize, n), note

    r.peer("launch", "numba", "@cuda.jit with eager signature, [1, 32]", numba_, unit="us")


def w_compile(r):
    """A new elementwise kernel y = x * c + 1 (c unique per kernel and per run, so no cache
    can help): construct, first call on 1024 elements, synchronize. cached: the same source
    again in this process."""
    runs = r.sizes.compiles
    tag = "%x" % (r.seed & 0xFFFFFFFFFF)
    consts = [1.5 + ((r.seed + i) % 1_000_000) * 1e-6 for i in range(runs)]
    want_cold, want_cached = r.selected("compile_cold"), r.selected("compile_cached")

    def cupy_():
        lib = r.lib_for("cupy")
        cp = lib.cp
        x = lib.rand(1024, -1.0, 1.0, r.next_seed())
        out = lib.nan(1024)

        def once(i, c):
            t = time.perf_counter()
            name = "bench_new_%s_%s" % (tag, i if i >= 0 else "warm")
            k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * %.9gf + 1.0f" % c, name)
            k(x, out)
            cp.cuda.Device().synchronize()
            return (time.perf_counter() - t) * 1e3

        once(-1, 0.25 + (r.seed % 1000) * 1e-6)  # NVRTC's and CuPy's one-time set-up
        cold = [once(i, c) for i, c in enumerate(consts)]
        check_close(lib, "compile", out, lib.f64(x) * _f32(consts[-1]) + 1.0, 1e-6)
        cached = [once(i, c) for i, c in enumerate(consts)]
        return cold, cached

    def numba_():
        cuda = r.fw.get("numba")
        np = nb_kernels(cuda)["np"]
        lib = r.lib_for("numba")
        x = lib.rand(1024, -1.0, 1.0, r.next_seed())
        out = lib.nan(1024)
        dx, do = cuda.as_cuda_array(x), cuda.as_cuda_array(out)

        def once(i, c):
            src = (
                "def bench_new_%s_%s(x, y):\n"
                "    i = cuda.grid(1)\n"
                "    if i < y.size:\n"
                "        y[i] = x[i] * np.float32(%r) + np.float32(1.0)\n"
            ) % (tag, i if i >= 0 else "warm", c)
            ns = {"cuda": cuda, "np": np}
            t = time.perf_counter()
            exec(src, ns)
            f = [v for k, v in ns.items() if k.startswith("bench_new_")][0]
            k = cuda.jit(f)
            k[4, 256](dx, do)
            cuda.synchronize()
            return (time.perf_counter() - t) * 1e3

        once(-1, 0.25 + (r.seed % 1000) * 1e-6)
        cold = [once(i, c) for i, c in enumerate(consts)]
        check_close(lib, "compile", out, lib.f64(x) * _f32(consts[-1]) + 1.0, 1e-6)
        cached = [once(i, c) for i, c in enumerate(consts)]
        return cold, cached

    for impl, body, v_cold, v_cached, n_cached in (
        (
            "cupy",
            cupy_,
            "ElementwiseKernel(...) + first call, unique source",
            "ElementwiseKernel(...) again, same source + first call",
            "CuPy's kernel caches (memory, then ~/.cupy/kernel_cache)",
        ),
        (
            "numba",
            numba_,
            "cuda.jit(new function) + first call",
            "cuda.jit(same source again) + first call",
            "numba keeps no cache across dispatchers: it compiles again",
        ),
    ):
        if impl not in r.args.impls:
            continue
        try:
            cold, cached = body()
        except Exception as e:
            for w in ("compile_cold", "compile_cached"):
                if r.selected(w):
                    emit(work=w, size=r.sizes.label(w), impl=impl, error=short_error(e))
            if r.args.verbose:
                traceback.print_exc(file=sys.stderr)
            continue
        if want_cold:
            emit(work="compile_cold", size=r.sizes.label("compile_cold"), impl=impl,
                 variant=v_cold, note="median of %d; host clock" % runs, **stats(cold))
        if want_cached:
            emit(work="compile_cached", size=r.sizes.label("compile_cached"), impl=impl,
                 variant=v_cached, note=n_cached, **stats(cached))
    r.free_all()


def w_transfers(r):
    n = r.sizes.xfer
    b = n * 4
    sel = [w for w in ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable") if r.selected(w)]

    def torch_():
        torch = r.fw.get("torch")
        lib = r.lib_for("torch")
        d = lib.rand(n, -1.0, 1.0, r.next_seed())
        host = d.cpu()  # pageable
        pinned = host.pin_memory()
        out_pageable = torch.empty_like(host)
        out_pinned = torch.empty(n, dtype=torch.float32, pin_memory=True)
        # checks: each path moves the data unchanged
        if not torch.equal(host.cuda(), d) or not torch.equal(pinned.cuda(non_blocking=True), d):
            raise AssertionError("h2d changed the data")
        out_pinned.copy_(d, non_blocking=True)
        torch.cuda.synchronize()
        if not torch.equal(out_pinned, host) or not torch.equal(d.cpu(), host):
            raise AssertionError("d2h changed the data")
        cases = {
            "h2d_pinned": [("pinned.cuda(non_blocking=True)", lambda: pinned.cuda(non_blocking=True))],
            "d2h_pinned": [("pinned.copy_(d, non_blocking=True)",
                            lambda: out_pinned.copy_(d, non_blocking=True))],
            "h2d_pageable": [("x.cuda()", lambda: host.cuda())],
            "d2h_pageable": [("d.cpu()", lambda: d.cpu()),
                             ("pageable.copy_(d)", lambda: out_pageable.copy_(d))],
        }
        return cases

    def cupy_():
        cp = r.fw.get("cupy")
        import numpy as np

        lib = r.lib_for("cupy")
        d = lib.rand(n, -1.0, 1.0, r.next_seed())
        host = d.get()  # pageable numpy
        mem = cp.cuda.alloc_pinned_memory(b)
        pinned = np.frombuffer(mem, np.float32, n)
        pinned[...] = host
        mem2 = cp.cuda.alloc_pinned_memory(b)
        out_pinned = np.frombuffer(mem2, np.float32, n)
        out_pageable = np.empty_like(host)
        d2 = cp.empty_like(d)
        d2.set(host)
        if not bool((d2 == d).all()):
            raise AssertionError("h2d changed the data")
        d2.set(pinned)
        d.get(out=out_pinned)
        cp.cuda.Device().synchronize()
        if not bool((d2 == d).all()) or not np.array_equal(out_pinned, host):
            raise AssertionError("pinned copies changed the data")
        cases = {
            "h2d_pinned": [("ndarray.set(pinned numpy)", lambda: d2.set(pinned))],
            "d2h_pinned": [("ndarray.get(out=pinned numpy)", lambda: d.get(out=out_pinned))],
            "h2d_pageable": [("ndarray.set(numpy)", lambda: d2.set(host))],
            "d2h_pageable": [("ndarray.get(out=numpy)", lambda: d.get(out=out_pageable))],
        }
        return cases

    for impl, setup in (("torch", torch_), ("cupy", cupy_)):
        if impl not in r.args.impls:
            continue
        try:
            cases = setup()
        except Exception as e:
            for w in sel:
                emit(work=w, size=r.sizes.label(w), impl=impl, error=short_error(e))
            if r.args.verbose:
                traceback.print_exc(file=sys.stderr)
            r.free_all()
            continue
        for w in sel:
            for variant, fn in cases[w]:
                r.peer(w, impl, variant, lambda fn=fn, impl=impl: (r.time(impl, fn), None), b)
        del cases
        r.free_all()


def w_graph(r):
    """A chain of GRAPH_KERNELS tiny kernels (out += x on 32 elements) captured into a CUDA
    graph, the graph launched GRAPH_LAUNCHES times then one synchronize: time per kernel."""
    reps = max(r.reps, 20)

    def timed(launch, sync, check):
        for _ in range(10):
            launch()
        sync()
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            for _ in range(GRAPH_LAUNCHES):
                launch()
            sync()
            out.append((time.perf_counter() - t) * 1e3 / (GRAPH_LAUNCHES * GRAPH_KERNELS))
        check((10 + reps * GRAPH_LAUNCHES) * GRAPH_KERNELS)
        return out

    def torch_():
        lib = r.lib_for("torch")
        t = lib.t
        x = t.ones(32, device="cuda")
        out = t.zeros(32, device="cuda")
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):  # warm-up on a side stream, as torch's docs ask
            for _ in range(3):
                out.add_(x)
        t.cuda.current_stream().wait_stream(side)
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            for _ in range(GRAPH_KERNELS):
                out.add_(x)
        out.zero_()

        def check(n):
            got = out.cpu()
            if not bool((got == n).all()):
                raise AssertionError("graph: got %r, want %d" % (got[0].item(), n))

        return timed(g.replay, lib.sync, check), "torch.cuda.CUDAGraph of out.add_(x), replay()"

    r.peer("graph", "torch", "torch.cuda.graph capture, CUDAGraph.replay", torch_, unit="us")

    def cupy_():
        lib = r.lib_for("cupy")
        cp = lib.cp
        x = cp.ones(32, dtype=cp.float32)
        out = cp.zeros(32, dtype=cp.float32)
        k = cp.ElementwiseKernel("float32 x", "float32 y", "y += x", "bench_graph_inc_peer")
        k(x, out)
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            s.begin_capture()
            for _ in range(GRAPH_KERNELS):
                k(x, out)
            g = s.end_capture()
        lib.sync()
        out.fill(0)
        lib.sync()

        def check(n):
            got = cp.asnumpy(out)
            if not (got == n).all():
                raise AssertionError("graph: got %r, want %d" % (got[0], n))

        return timed(lambda: g.launch(s), s.synchronize, check), "cupy Stream.begin_capture/end_capture, Graph.launch"

    r.peer("graph", "cupy", "Stream.begin_capture of an ElementwiseKernel, Graph.launch", cupy_, unit="us")


def w_pool(r):
    """Allocation and free of POOL_BYTES, POOL_ITERS times then one synchronize: time per
    pair, through each library's caching allocator / memory pool."""
    reps = max(r.reps, 5)

    def timed(alloc, sync):
        def run():
            t = time.perf_counter()
            for _ in range(POOL_ITERS):
                a = alloc()
                del a
            sync()
            return (time.perf_counter() - t) * 1e3 / POOL_ITERS
        run()
        return [run() for _ in range(reps)]

    def torch_():
        lib = r.lib_for("torch")
        t = lib.t
        return timed(lambda: t.empty(POOL_BYTES, dtype=t.uint8, device="cuda"), lib.sync), "caching allocator"

    r.peer("pool", "torch", "torch.empty(1 MiB, uint8) + del", torch_, unit="us")

    def cupy_():
        lib = r.lib_for("cupy")
        cp = lib.cp
        return timed(lambda: cp.empty(POOL_BYTES, dtype=cp.uint8), lib.sync), "default memory pool"

    r.peer("pool", "cupy", "cupy.empty(1 MiB, uint8) + del", cupy_, unit="us")


# ------------------------------------------------------------------------------------------
# Multi-GPU rows. Work on several devices is timed as one span, as bench.rs's time_multi does:
# a start event on device 0's stream that the other devices' streams wait on, the work, every
# other stream's end joined back into device 0's stream, and the final event there. The
# torch.distributed rows (one process per GPU) time each rank with its own events instead;
# see _dist_worker.


def multi_labels(r, work):
    """Every size label of a multi-GPU work's rows."""
    if work == "peer_copy":
        return [peer_label(r.sizes.peer_bytes, 0, 1), peer_label(r.sizes.peer_bytes, 1, 0)]
    base = {v: k for k, v in SOCKET_WORKS.items()}.get(work, work)
    if base == "all_reduce":
        return [all_reduce_label(b) for b in r.sizes.all_reduce_bytes]
    return [r.sizes.label(base)]


def emit_multi(r, works, impl, **fields):
    """One line (skip=... or error=...) per row of the selected `works` for `impl`."""
    if impl not in r.args.impls:
        return
    for w in works:
        if r.selected(w):
            for label in multi_labels(r, w):
                emit(work=w, size=label, impl=impl, **fields)


def torch_multi(need):
    """A getter of torch with at least `need` GPUs, which raises with why not (a _Skip when it
    is the machine)."""
    def get(r):
        torch = r.fw.get("torch")
        n = torch.cuda.device_count()
        if n < need:
            raise _Skip("needs %d devices, torch sees %d" % (need, n))
        return torch
    return get


def cupy_multi(need):
    """The same for CuPy."""
    def get(r):
        cp = r.fw.get("cupy")
        n = cp.cuda.runtime.getDeviceCount()
        if n < need:
            raise _Skip("needs %d devices, CuPy sees %d" % (need, n))
        return cp
    return get


class _Skip(Exception):
    """This machine cannot run the row (one GPU, no NCCL): a "skip" line, not an error."""


def multi_setup(r, works, impl, get):
    """The framework for multi-GPU rows of `impl`, or None after printing why not."""
    if impl not in r.args.impls:
        return None
    try:
        return get(r)
    except _Skip as e:
        emit_multi(r, works, impl, skip=str(e))
    except Exception as e:
        emit_multi(r, works, impl, error=short_error(e))
    return None


def torch_time_multi(torch, fn, warmup, reps, devices=(0, 1)):
    """Spans over the current streams of `devices`; the events on the first one's."""
    for _ in range(warmup):
        fn()
    for d in devices:
        torch.cuda.synchronize(d)
    streams = [torch.cuda.current_stream(d) for d in devices]
    s0, others = streams[0], streams[1:]
    joins = [torch.cuda.Event() for _ in others]
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(reps)]
    for start, end in evs:
        start.record(s0)
        for o in others:
            o.wait_event(start)
        fn()
        for o, j in zip(others, joins):
            j.record(o)
            s0.wait_event(j)
        end.record(s0)
    for d in devices:
        torch.cuda.synchronize(d)
    return [s.elapsed_time(e) for s, e in evs]


def cupy_time_multi(cp, streams, fn, warmup, reps):
    """The same with CuPy: `streams[k]` is a stream of device k."""
    for _ in range(warmup):
        fn()
    for s in streams:
        s.synchronize()
    joins = []
    for k in range(1, len(streams)):
        with cp.cuda.Device(k):
            joins.append(cp.cuda.Event(disable_timing=True))
    with cp.cuda.Device(0):
        evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for start, end in evs:
        with cp.cuda.Device(0):
            start.record(streams[0])
        for k in range(1, len(streams)):
            with cp.cuda.Device(k):
                streams[k].wait_event(start)
        fn()
        for k in range(1, len(streams)):
            with cp.cuda.Device(k):
                joins[k - 1].record(streams[k])
            with cp.cuda.Device(0):
                streams[0].wait_event(joins[k - 1])
        with cp.cuda.Device(0):
            end.record(streams[0])
    for s in streams:
        s.synchronize()
    return [cp.cuda.get_elapsed_time(s, e) for s, e in evs]


def cupy_streams(cp, ndev=2):
    out = []
    for k in range(ndev):
        with cp.cuda.Device(k):
            out.append(cp.cuda.Stream(non_blocking=True))
    return out


def cupy_peer_access(cp, a, b):
    """Turns peer access on both ways where the devices can be peers; whether they can."""
    rt = cp.cuda.runtime
    if not (rt.deviceCanAccessPeer(a, b) and rt.deviceCanAccessPeer(b, a)):
        return False
    for d, p in ((a, b), (b, a)):
        with cp.cuda.Device(d):
            try:
                rt.deviceEnablePeerAccess(p)
            except rt.CUDARuntimeError as e:
                if "AlreadyEnabled" not in str(e) and "already" not in str(e).lower():
                    raise
    return True


def w_peer_copy(r):
    b = r.sizes.peer_bytes
    n = b // 4
    works = ["peer_copy"]
    torch = multi_setup(r, works, "torch", torch_multi(2))
    if torch is not None:
        for src, dst in ((0, 1), (1, 0)):

            def body(src=src, dst=dst):
                g = torch.Generator(device="cuda:%d" % src)
                g.manual_seed(r.next_seed() % (1 << 63))
                x = torch.empty(n, device="cuda:%d" % src).uniform_(-1.0, 1.0, generator=g)
                y = torch.full((n,), float("nan"), device="cuda:%d" % dst)
                y.copy_(x)
                if not torch.equal(y.cpu(), x.cpu()):
                    raise AssertionError("peer_copy %d->%d changed the data" % (src, dst))
                p2p = torch.cuda.can_device_access_peer(src, dst)
                t = torch_time_multi(torch, lambda: y.copy_(x), r.warmup, r.reps)
                return t, ("peer access %s (torch enables it itself); bytes moved; span across "
                           "both devices' current streams" % ("possible" if p2p else "impossible"))

            r.peer("peer_copy", "torch", "dst.copy_(src) (on the source device's stream)", body, b,
                   size=peer_label(b, src, dst), devices=2)
            r.free_all()
    cp = multi_setup(r, works, "cupy", cupy_multi(2))
    if cp is not None:
        for src, dst in ((0, 1), (1, 0)):

            def body(src=src, dst=dst):
                p2p = cupy_peer_access(cp, 0, 1)
                streams = cupy_streams(cp)
                with cp.cuda.Device(src):
                    x = cp.random.RandomState(r.next_seed() % (1 << 32)).uniform(
                        -1.0, 1.0, n, dtype=cp.float32)
                with cp.cuda.Device(dst):
                    y = cp.full(n, float("nan"), dtype=cp.float32)

                def fn():
                    with cp.cuda.Device(src):
                        y.data.copy_from_device_async(x.data, b, stream=streams[src])

                fn()
                streams[src].synchronize()
                import numpy as np

                if not np.array_equal(cp.asnumpy(y), cp.asnumpy(x)):
                    raise AssertionError("peer_copy %d->%d changed the data" % (src, dst))
                t = cupy_time_multi(cp, streams, fn, r.warmup, r.reps)
                return t, ("peer access %s; bytes moved; span across both devices' streams"
                           % ("on both ways" if p2p else "impossible"))

            r.peer("peer_copy", "cupy", "MemoryPointer.copy_from_device_async (cudaMemcpyAsync, UVA)",
                   body, b, size=peer_label(b, src, dst), devices=2)
            r.free_all()


def w_one_gpu(r):
    """The baselines of the sharded rows, on device 0: sum_1gpu (torch.sum, cupy.sum),
    add_1gpu (w_add's peers at n_multi) and scan_1gpu (torch.cumsum, cupy.cumsum)."""
    n = r.sizes.n_multi
    if r.selected("sum_1gpu"):
        for impl, variant, make in (
            ("torch", "torch.sum (device 0)", lambda lib, x: lambda: lib.t.sum(x)),
            ("cupy", "cupy.sum (device 0, %s)" % _cupy_accel(r), lambda lib, x: lambda: lib.cp.sum(x)),
        ):

            def body(impl=impl, make=make):
                lib = r.lib_for(impl)
                x = lib.rand(n, 0.0, 1.0, r.next_seed())
                fn = make(lib, x)
                got = float(lib.item(fn()))
                want = lib.item(lib.f64(x).sum())
                rel = abs(got - want) / abs(want)
                if not rel <= 1e-5:
                    raise AssertionError("sum: got %r, want %r (relative %.2e)" % (got, want, rel))
                return r.time(impl, fn), "relative error vs float64 %.1e" % rel

            r.peer("sum_1gpu", impl, variant, body, n * 4, devices=1)
            r.free_all()
    if r.selected("add_1gpu"):
        w_add(r, "add_1gpu", n)
    if r.selected("scan_1gpu"):
        for impl, variant in (
            ("torch", "torch.cumsum(x, 0, out=out) (device 0)"),
            ("cupy", "cupy.cumsum(x, out=out) (device 0, %s)" % _cupy_accel(r)),
        ):

            def body(impl=impl):
                lib = r.lib_for(impl)
                x = lib.rand(n, 0.0, 1.0, r.next_seed())
                out = lib.nan(n)
                if impl == "torch":
                    t = lib.t
                    fn = lambda: t.cumsum(x, 0, out=out)  # noqa: E731
                    wide = lambda: t.cumsum(x.double(), 0)  # noqa: E731
                else:
                    cp = lib.cp
                    fn = lambda: cp.cumsum(x, out=out)  # noqa: E731
                    wide = lambda: cp.cumsum(x, dtype=cp.float64)  # noqa: E731
                fn()
                lib.sync()
                rel = check_close(lib, "scan_1gpu", out, wide(), 1e-4)
                return r.time(impl, fn), "relative error vs float64 %.1e" % rel

            r.peer("scan_1gpu", impl, variant, body, 2 * n * 4, devices=1)
            r.free_all()


def w_sharded(r):
    """all_reduce, sum_sharded, add_sharded and scan_sharded: torch.distributed (one process
    per GPU, NCCL) and CuPy (one process, cupy.cuda.nccl over both devices)."""
    works = [w for w in ("all_reduce", "sum_sharded", "add_sharded", "scan_sharded")
             if r.selected(w) or r.selected(PROCS_WORKS.get(w, ""))]
    g = r.args.gpus
    torch = multi_setup(r, works, "torch", torch_multi(g))
    if torch is not None:
        r.free_all()
        if works:
            run_dist(r, works, g)
    # torch.distributed again with NCCL's socket transport (the two-host stand-in): rows
    # named by SOCKET_WORKS, beside our two-process rows over sockets.
    sock = [w for w in SOCKET_WORKS if r.selected(SOCKET_WORKS[w])]
    named = [SOCKET_WORKS[w] for w in sock]
    if sock and multi_setup(r, named, "torch", torch_multi(g)) is not None:
        r.free_all()
        run_dist(r, sock, g, sockets=True)
    if not works:
        return
    cp = multi_setup(r, works, "cupy", cupy_multi(g))
    if cp is not None:
        try:
            from cupy.cuda import nccl

            if not nccl.available:
                raise _Skip("cupy.cuda.nccl is not available (CuPy without NCCL)")
            comms = nccl.NcclCommunicator.initAll(list(range(g)))
        except _Skip as e:
            emit_multi(r, works, "cupy", skip=str(e))
            return
        except Exception as e:
            emit_multi(r, works, "cupy", error=short_error(e))
            return
        cupy_collectives(r, cp, nccl, comms, works)
        del comms
        r.free_all()


def cupy_collectives(r, cp, nccl, comms, works):
    import numpy as np

    streams = cupy_streams(cp, len(comms))
    nd = len(streams)

    def rand(k, m, lo=-1.0):
        with cp.cuda.Device(k):
            return cp.random.RandomState(r.next_seed() % (1 << 32)).uniform(lo, 1.0, m, dtype=cp.float32)

    def all_reduce(bufs):
        nccl.groupStart()
        try:
            for k, buf in enumerate(bufs):
                with cp.cuda.Device(k):
                    comms[k].allReduce(buf.data.ptr, buf.data.ptr, buf.size, nccl.NCCL_FLOAT32,
                                       nccl.NCCL_SUM, streams[k].ptr)
        finally:
            nccl.groupEnd()

    version = "NCCL %s" % nccl.get_version() if hasattr(nccl, "get_version") else "cupy.cuda.nccl"
    if "all_reduce" in works:
        for b in r.sizes.all_reduce_bytes:
            n = b // 4
            k_iters = NCCL_TESTS_ITERS

            def setup(n=n):
                bufs = [rand(k, n) for k in range(nd)]
                want = sum(cp.asnumpy(x) for x in bufs)
                all_reduce(bufs)
                for k, buf in enumerate(bufs):
                    streams[k].synchronize()
                    if not np.array_equal(cp.asnumpy(buf), want):
                        raise AssertionError("all_reduce: rank %d differs from the host's sum" % k)
                for k, buf in enumerate(bufs):  # in-place sums double: time on zeros
                    with cp.cuda.Device(k):
                        buf.fill(0)
                        cp.cuda.Device().synchronize()
                return bufs

            cache = {}

            def per_iter(n=n):
                if n not in cache:
                    cache[n] = setup(n)
                bufs = cache[n]
                return (cupy_time_multi(cp, streams, lambda: all_reduce(bufs), r.warmup, r.reps),
                        "%s; busbw = bytes / time * 2(n-1)/n; timed on zero-filled buffers" % version)

            def nccl_tests(n=n):
                if n not in cache:
                    cache[n] = setup(n)
                bufs = cache[n]

                def fn():
                    for _ in range(k_iters):
                        all_reduce(bufs)

                t = cupy_time_multi(cp, streams, fn, 1, min(r.reps, 5))
                return [x / k_iters for x in t], "%s; timed on zero-filled buffers" % version

            for variant, body in (("median of per-iteration spans", per_iter),
                                  ("nccl-tests: average of %d back-to-back" % k_iters, nccl_tests)):
                r.peer("all_reduce", "cupy", "NcclCommunicator.allReduce in groupStart/End, " + variant,
                       body, b, size=all_reduce_label(b), devices=nd, busbw_ranks=nd)
            cache.clear()
            r.free_all()
    n = r.sizes.n_multi
    half = n // nd
    if "sum_sharded" in works:

        def body():
            xs = [rand(k, half, 0.0) for k in range(nd)]
            parts = []
            for k in range(nd):
                with cp.cuda.Device(k):
                    parts.append(cp.empty((), dtype=cp.float32))

            def fn():
                for k in range(nd):
                    with cp.cuda.Device(k), streams[k]:
                        cp.sum(xs[k], out=parts[k])
                all_reduce(parts)

            fn()
            streams[0].synchronize()
            got = float(parts[0].get())
            want = 0.0
            for k, x in enumerate(xs):
                with cp.cuda.Device(k):
                    want += float(x.astype(cp.float64).sum().get())
            rel = abs(got - want) / abs(want)
            if not rel <= 1e-5:
                raise AssertionError("sum_sharded: got %r, want %r (relative %.2e)" % (got, want, rel))
            return cupy_time_multi(cp, streams, fn, r.warmup, r.reps), "relative error vs float64 %.1e" % rel

        r.peer("sum_sharded", "cupy", "cupy.sum(out=) per device + NCCL all-reduce of the partials",
               body, n * 4, devices=nd)
        r.free_all()
    if "add_sharded" in works:

        def body():
            a = [rand(k, half) for k in range(nd)]
            b = [rand(k, half) for k in range(nd)]
            c = []
            for k in range(nd):
                with cp.cuda.Device(k):
                    c.append(cp.full(half, float("nan"), dtype=cp.float32))

            def fn():
                for k in range(nd):
                    with cp.cuda.Device(k), streams[k]:
                        cp.add(a[k], b[k], out=c[k])

            fn()
            for k in range(nd):
                streams[k].synchronize()
                with cp.cuda.Device(k):
                    if not bool((c[k] == (a[k].astype(cp.float64) + b[k]).astype(cp.float32)).all()):
                        raise AssertionError("add_sharded: shard %d differs from the float64 sum" % k)
            return cupy_time_multi(cp, streams, fn, r.warmup, r.reps), "span across both devices' streams"

        r.peer("add_sharded", "cupy", "cupy.add(out=) per device", body, 3 * n * 4, devices=nd)
        r.free_all()
    if "scan_sharded" in works:

        def body():
            xs = [rand(k, half, 0.0) for k in range(nd)]
            outs, totals = [], []
            for k in range(nd):
                with cp.cuda.Device(k):
                    outs.append(cp.full(half, float("nan"), dtype=cp.float32))
                    totals.append(cp.empty(nd, dtype=cp.float32))

            def fn():
                for k in range(nd):
                    with cp.cuda.Device(k), streams[k]:
                        cp.cumsum(xs[k], out=outs[k])
                nccl.groupStart()
                try:
                    for k in range(nd):
                        with cp.cuda.Device(k):
                            comms[k].allGather(outs[k][-1:].data.ptr, totals[k].data.ptr, 1,
                                               nccl.NCCL_FLOAT32, streams[k].ptr)
                finally:
                    nccl.groupEnd()
                for k in range(1, nd):
                    with cp.cuda.Device(k), streams[k]:
                        outs[k] += totals[k][:k].sum()

            fn()
            before = 0.0
            for k in range(nd):
                streams[k].synchronize()
                with cp.cuda.Device(k):
                    want = cp.cumsum(xs[k], dtype=cp.float64) + before
                    rel = float(cp.linalg.norm(outs[k].astype(cp.float64) - want)
                                / cp.linalg.norm(want))
                    if not rel <= 1e-4:
                        raise AssertionError("scan_sharded: device %d relative error %.2e" % (k, rel))
                    before += float(xs[k].astype(cp.float64).sum())
            return (cupy_time_multi(cp, streams, fn, r.warmup, r.reps),
                    "span across the devices' streams")

        r.peer("scan_sharded", "cupy",
               "cupy.cumsum(out=) per device, NCCL allGather of the last elements, add the "
               "earlier devices' totals", body, 2 * n * 4, devices=nd)
        r.free_all()


# torch.distributed: one process per GPU.


def run_dist(r, works, world, sockets=False):
    """Runs _dist_worker on ranks 0..world (spawned processes, NCCL, a file store in a new
    temporary folder) and prints the records rank 0 sends back. sockets: with NCCL's socket
    transport forced (SOCKET_VARS in the workers), the rows named by SOCKET_WORKS."""
    import queue
    import shutil
    import tempfile

    import torch.distributed as dist
    import torch.multiprocessing as tmp

    if not dist.is_available() or not dist.is_nccl_available():
        emit_multi(r, [SOCKET_WORKS[w] for w in works] if sockets else works, "torch",
                   skip="torch.distributed with NCCL is not available")
        return
    rename = {w: SOCKET_WORKS[w] for w in works} if sockets else {}
    folder = tempfile.mkdtemp(prefix="cudajit-peers-dist-")
    cfg = dict(
        works=works,
        all_reduce_bytes=r.sizes.all_reduce_bytes,
        n_multi=r.sizes.n_multi,
        labels={w: multi_labels(r, w) for w in works},
        warmup=r.warmup,
        reps=r.reps,
        seed=r.next_seed(),
        init="file://" + os.path.join(folder, "store"),
        verbose=r.args.verbose,
        env=SOCKET_VARS if sockets else {},
        rename=rename,
    )
    ctx = tmp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_dist_worker, args=(k, world, cfg, q), daemon=True) for k in range(world)]
    limit = 120 if r.args.quick else 360
    deadline = time.time() + limit
    seen, fatal, done = set(), [], 0
    try:
        for p in procs:
            p.start()
        while done < world:
            try:
                msg = q.get(timeout=2)
            except queue.Empty:
                if time.time() > deadline:
                    fatal.append("torch.distributed workers timed out after %d s" % limit)
                    break
                if not all(p.is_alive() for p in procs) and q.empty():
                    codes = [p.exitcode for p in procs]
                    if any(c not in (None, 0) for c in codes):
                        fatal.append("a torch.distributed worker exited (exit codes %s)" % codes)
                        break
                continue
            kind = msg[0]
            if kind == "rec":
                emit(**msg[1])
                seen.add((msg[1]["work"], msg[1]["size"]))
            elif kind == "fatal":
                fatal.append("rank %d: %s" % (msg[1], msg[2]))
            elif kind == "done":
                done += 1
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        shutil.rmtree(folder, ignore_errors=True)
    why = "; ".join(fatal) or "no result from the torch.distributed workers"
    for w in works:
        w = rename.get(w, w)
        for label in multi_labels(r, w):
            if (w, label) not in seen:
                emit(work=w, size=label, impl="torch", devices=world, error=why)


def _dist_worker(rank, world, cfg, q):
    """One rank of the torch.distributed rows (in its own process, on GPU `rank`). Rank 0 puts
    ("rec", record) on `q` for every row; every rank ends with ("done", rank).

    Timing: each rank records CUDA events around every iteration on its current stream after
    warm-up and a barrier; per iteration the slower rank's time counts (gathered to rank 0),
    and "ms" is the median over iterations."""
    try:
        # Before NCCL reads its environment (the socket transport for the *_sockets rows).
        os.environ.update(cfg.get("env", {}))
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=cfg["init"], rank=rank, world_size=world)
    except BaseException as e:
        q.put(("fatal", rank, short_error(e)))
        q.put(("done", rank))
        return
    dev = torch.device("cuda", rank)
    v = torch.cuda.nccl.version()
    version = "NCCL %s" % (".".join(str(x) for x in v) if isinstance(v, tuple) else v)
    warmup, reps = cfg["warmup"], cfg["reps"]

    def gen(salt):
        g = torch.Generator(device=dev)
        g.manual_seed((cfg["seed"] * 1000003 + salt) % (1 << 63))
        return g

    def rand(m, salt, lo=-1.0):
        return torch.empty(m, device=dev).uniform_(lo, 1.0, generator=gen(salt))

    def time_ranks(fn, warmup=warmup, reps=reps):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        dist.barrier(device_ids=[rank])
        torch.cuda.synchronize()
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(reps)]
        for s, e in evs:
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        mine = [s.elapsed_time(e) for s, e in evs]
        every = [None] * world
        dist.all_gather_object(every, mine)
        return [max(ts) for ts in zip(*every)]

    def row(work, label, variant, setup, bytes_, note, busbw=False, per=1, **kw):
        """setup() checks the result and returns the timed fn; a failing check on any rank is
        an error line (all ranks agree first, so none waits in a collective alone)."""
        work = cfg.get("rename", {}).get(work, work)
        if cfg.get("env"):
            variant += ", NCCL sockets forced (%s)" % " ".join(
                "%s=%s" % kv for kv in sorted(cfg["env"].items()))
        err, fn = None, None
        try:
            fn = setup()
        except Exception as e:
            err = short_error(e)
        errs = [None] * world
        dist.all_gather_object(errs, err)
        bad = ["rank %d: %s" % (k, e) for k, e in enumerate(errs) if e]
        rec = dict(work=work, size=label, impl="torch", variant=variant, devices=world)
        if bad:
            rec["error"] = "; ".join(bad)
        else:
            try:
                t = [x / per for x in time_ranks(fn, **kw)]
                rec.update(bytes=bytes_, note=note, **stats(t))
                if busbw:
                    rec["busbw_gbs"] = round(busbw_gbs(bytes_, rec["ms"], world), 6)
            except Exception as e:
                rec["error"] = short_error(e)
        if rank == 0:
            q.put(("rec", rec))
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    span = ("per iteration the slower rank's CUDA-event time (each rank's current stream), "
            "median; ranks aligned by a barrier after warm-up")
    try:
        if "all_reduce" in cfg["works"]:
            for b, label in zip(cfg["all_reduce_bytes"], cfg["labels"]["all_reduce"]):
                n = b // 4
                t = {}

                def setup(n=n, b=b):
                    t["x"] = rand(n, b * 4 + rank)
                    want = sum(rand(n, b * 4 + k) for k in range(world))
                    dist.all_reduce(t["x"])
                    if not torch.equal(t["x"], want):
                        raise AssertionError("all_reduce differs from the sum of the inputs")
                    t["x"].zero_()  # in-place sums double: time on zeros
                    t["ok"] = True
                    return lambda: dist.all_reduce(t["x"])

                k_iters = NCCL_TESTS_ITERS

                def setup_k():
                    if not t.get("ok"):
                        raise RuntimeError("not checked (the previous row failed)")

                    def fn():
                        for _ in range(k_iters):
                            dist.all_reduce(t["x"])
                    return fn

                row("all_reduce", label, "dist.all_reduce (sum), median of per-iteration times",
                    setup, b, "%s; %s; timed on zero-filled buffers" % (version, span), busbw=True)
                row("all_reduce", label,
                    "dist.all_reduce (sum), nccl-tests: average of %d back-to-back" % k_iters,
                    setup_k, b, "%s; one event span of %d iterations per repetition" % (version, k_iters),
                    busbw=True, per=k_iters, warmup=1, reps=min(reps, 5))
                t.clear()
        half = cfg["n_multi"] // world
        label = next((cfg["labels"][w][0] for w in ("sum_sharded", "add_sharded", "scan_sharded")
                      if w in cfg["labels"]), "")
        if "sum_sharded" in cfg["works"]:
            t = {}

            def setup():
                t["x"] = rand(half, 11 + rank, 0.0)

                def fn():
                    s = t["x"].sum()
                    dist.all_reduce(s)
                    return s

                got = fn().item()
                want = t["x"].double().sum()
                dist.all_reduce(want)
                want = want.item()
                rel = abs(got - want) / abs(want)
                if not rel <= 1e-5:
                    raise AssertionError("sum: got %r, want %r (relative %.2e)" % (got, want, rel))
                return fn

            row("sum_sharded", label, "x_half.sum() + dist.all_reduce(scalar) per rank", setup,
                cfg["n_multi"] * 4, span)
            t.clear()
        if "add_sharded" in cfg["works"]:
            t = {}

            def setup():
                a, b = rand(half, 21 + rank), rand(half, 31 + rank)
                c = torch.full((half,), float("nan"), device=dev)
                t.update(a=a, b=b, c=c)
                torch.add(a, b, out=c)
                if not torch.equal(c, (a.double() + b.double()).float()):
                    raise AssertionError("add differs from the float64 sum rounded")
                return lambda: torch.add(a, b, out=c)

            row("add_sharded", label, "torch.add(out=) on each rank's half", setup,
                3 * cfg["n_multi"] * 4, span + "; no communication")
            t.clear()
        if "scan_sharded" in cfg["works"]:

            def setup():
                x = rand(half, 41 + rank, 0.0)
                out = torch.full((half,), float("nan"), device=dev)
                totals = torch.empty(world, device=dev)

                def fn():
                    torch.cumsum(x, 0, out=out)
                    dist.all_gather_into_tensor(totals, out[-1:])
                    out.add_(totals[:rank].sum())

                fn()
                # The float64 reference: this rank's running sum after the earlier ranks' sums.
                sums = torch.empty(world, dtype=torch.float64, device=dev)
                dist.all_gather_into_tensor(sums, x.double().sum().reshape(1))
                want = torch.cumsum(x.double(), 0) + sums[:rank].sum()
                rel = float(torch.linalg.vector_norm(out.double() - want)
                            / torch.linalg.vector_norm(want))
                if not rel <= 1e-4:
                    raise AssertionError("scan: relative error %.2e" % rel)
                return fn

            row("scan_sharded", label,
                "torch.cumsum(out=) of each rank's half, all_gather of the last elements, add "
                "the earlier ranks' totals", setup, 2 * cfg["n_multi"] * 4, span)
    except BaseException as e:
        q.put(("fatal", rank, short_error(e)))
        if cfg.get("verbose"):
            traceback.print_exc(file=sys.stderr)
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
        q.put(("done", rank))


# ------------------------------------------------------------------------------------------
# Matrix multiply (issue 24): torch.matmul and cupy.matmul (cuBLAS); GEMM + bias + GELU as
# torch's (and CuPy's) unfused chain: matmul, then add, then gelu. The same shapes and labels
# as benches/bench/matmul.rs.


def matmul_shapes(r):
    """(batch, m, n, k) of the per-dtype rows: cubes, then the odd size."""
    env = os.environ.get("CUDAJIT_BENCH_MATMUL")
    if env:
        return [(1, c, c, c) for c in (int(x) for x in env.split(",") if x.strip())]
    cubes = [256, 512] if r.args.quick else [1024, 2048, 4096, 8192]
    odd = (255, 257, 259) if r.args.quick else (4095, 4097, 4099)
    return [(1, c, c, c) for c in cubes] + [(1,) + odd]


def splitk_shapes(r):
    """(batch, m, n, k) of the matmul_splitk rows: few tiles of C, a long K."""
    if r.args.quick:
        return [(1, 256, 256, 4096)]
    return [(1, 1024, 1024, 16384), (1, 512, 512, 16384), (1, 2048, 1024, 8192)]


def matmul_label(shape, ty):
    b, m, n, k = shape
    pre = "%dx " % b if b > 1 else ""
    if m == n == k:
        return "%s%d^3 %s" % (pre, m, ty)
    return "%s%dx%dx%d %s" % (pre, m, n, k, ty)


def one_matmul(r, work, shape, ty, fused=False):
    b, m, n, k = shape
    flops = 2 * b * m * n * k
    dtype = {"f32": "float32", "tf32": "float32", "f16": "float16", "bf16": "bfloat16"}[ty]
    tol = {"f32": 1e-5, "tf32": 4e-3, "f16": 2e-3, "bf16": 1e-2}[ty]
    label = matmul_label(shape, ty)
    for impl in ("torch", "cupy"):
        variant = ("torch.matmul(out=)" if impl == "torch" else "cupy.matmul(out=)")
        if fused:
            variant = ("torch.matmul, then add and gelu" if impl == "torch"
                       else "cupy.matmul, then an ElementwiseKernel add + gelu")
        if ty == "tf32":
            variant += ", allow_tf32"

        def body(impl=impl):
            if impl == "cupy" and ty == "bf16":
                raise RuntimeError("CuPy has no bfloat16")
            if impl == "cupy" and ty == "tf32":
                raise RuntimeError("CuPy's TF32 is chosen by CUPY_TF32=1 at import, not per call")
            lib = r.lib_for(impl)
            lead = (b,) if b > 1 else ()
            if impl == "torch":
                t = lib.t
                t.backends.cuda.matmul.allow_tf32 = ty == "tf32"
                a = lib.rand(lead + (m, k), -1.0, 1.0, r.next_seed()).to(getattr(t, dtype))
                bb = lib.rand(lead + (k, n), -1.0, 1.0, r.next_seed()).to(getattr(t, dtype))
                bias = lib.rand((n,), -1.0, 1.0, r.next_seed()).to(getattr(t, dtype))
                out = t.full(lead + (m, n), float("nan"), dtype=getattr(t, dtype), device="cuda")
                gelu = t.nn.functional.gelu
                if fused:
                    def fn():
                        out.copy_(gelu(t.matmul(a, bb) + bias))
                else:
                    fn = lambda: t.matmul(a, bb, out=out)  # noqa: E731
                ref = t.matmul(a.double(), bb.double())
                mag = t.matmul(a.double().abs(), bb.double().abs())
                if fused:
                    ref = gelu(ref + bias.double())
                fn()
                lib.sync()
                err = ((out.double() - ref).abs() / (mag + 1.0)).max().item()
            else:
                cp = lib.cp
                a = lib.rand(lead + (m, k), -1.0, 1.0, r.next_seed()).astype(dtype)
                bb = lib.rand(lead + (k, n), -1.0, 1.0, r.next_seed()).astype(dtype)
                bias = lib.rand((n,), -1.0, 1.0, r.next_seed()).astype(dtype)
                out = cp.full(lead + (m, n), cp.nan, dtype=dtype)
                if fused:
                    add_gelu = cp.ElementwiseKernel(
                        "T x, T bias", "T y",
                        "float v = (float)x + (float)bias; y = (T)(0.5f * v * (1.0f + erff(v * 0.70710678f)))",
                        "cudajit_bench_add_gelu")

                    def fn():
                        cp.matmul(a, bb, out=out)
                        add_gelu(out, bias, out)
                else:
                    fn = lambda: cp.matmul(a, bb, out=out)  # noqa: E731
                a64, b64 = a.astype("float64"), bb.astype("float64")
                ref = cp.matmul(a64, b64)
                mag = cp.matmul(cp.abs(a64), cp.abs(b64))
                if fused:
                    v = ref + bias.astype("float64")
                    from cupyx.scipy.special import erf
                    ref = 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))
                fn()
                lib.sync()
                err = float((cp.abs(out.astype("float64") - ref) / (mag + 1.0)).max())
            if not err <= tol:
                raise AssertionError("%s %s: error %.2e relative to sum |a*b| exceeds %.0e"
                                     % (work, label, err, tol))
            del ref, mag
            times = r.time(impl, fn)
            ms = statistics.median(times)
            return times, "%.1f TFLOP/s; within %.1e of float64 (relative to sum |a*b|)" % (
                flops / (ms * 1e-3) / 1e12, err)

        r.peer(work, impl, variant, body, size=label, flops=flops)
        r.free_all()


def one_scaled_mm(r, shape):
    """torch._scaled_mm (cuBLAS's fp8 GEMM): e4m3 A (M x K, row-major) times e4m3 B (K x N,
    column-major, as cuBLAS's fp8 GEMM needs), unit scales, bf16 out."""
    b, m, n, k = shape
    flops = 2 * b * m * n * k
    label = matmul_label(shape, "e4m3")
    work = "matmul_fp8"

    def body():
        lib = r.lib_for("torch")
        t = lib.t
        if not hasattr(t, "_scaled_mm") or not hasattr(t, "float8_e4m3fn"):
            raise RuntimeError("this torch has no _scaled_mm / float8_e4m3fn")
        a = lib.rand((m, k), -1.0, 1.0, r.next_seed()).to(t.float8_e4m3fn)
        bt = lib.rand((n, k), -1.0, 1.0, r.next_seed()).to(t.float8_e4m3fn)
        one = t.ones((), dtype=t.float32, device="cuda")
        fn = lambda: t._scaled_mm(a, bt.t(), scale_a=one, scale_b=one,  # noqa: E731
                                  out_dtype=t.bfloat16)
        out = fn()
        a64, b64 = a.double(), bt.double().t()
        ref = t.matmul(a64, b64)
        mag = t.matmul(a64.abs(), b64.abs())
        lib.sync()
        err = ((out.double() - ref).abs() / (mag + 1.0)).max().item()
        if not err <= 1e-2:
            raise AssertionError("%s %s: error %.2e relative to sum |a*b| exceeds 1e-2"
                                 % (work, label, err))
        del ref, mag, out
        times = r.time("torch", fn)
        ms = statistics.median(times)
        return times, "%.1f TFLOP/s; within %.1e of float64 (relative to sum |a*b|)" % (
            flops / (ms * 1e-3) / 1e12, err)

    r.peer(work, "torch", "torch._scaled_mm(e4m3, e4m3 col-major, out_dtype=bf16)", body,
           size=label, flops=flops)
    r.free_all()


def w_matmul(r):
    for work, ty in (("matmul_f32", "f32"), ("matmul_tf32", "tf32"), ("matmul_f16", "f16"),
                     ("matmul_bf16", "bf16")):
        if r.selected(work):
            for shape in matmul_shapes(r):
                one_matmul(r, work, shape, ty)
    if r.selected("matmul_fp8"):
        for shape in matmul_shapes(r):
            one_scaled_mm(r, shape)
    if r.selected("matmul_batched"):
        one_matmul(r, "matmul_batched", (8, 128, 128, 128) if r.args.quick else (64, 512, 512, 512),
                   "bf16")
    if r.selected("matmul_splitk"):
        for shape in splitk_shapes(r):
            one_matmul(r, "matmul_splitk", shape, "bf16")
    if r.selected("gemm_bias_gelu"):
        c = 512 if r.args.quick else 4096
        one_matmul(r, "gemm_bias_gelu", (1, c, c, c), "bf16", fused=True)


def w_attention(r):
    """torch.nn.functional.scaled_dot_product_attention on (batch, heads, seq, 128) bf16, each
    backend torch offers (cuDNN, flash, memory-efficient) as a variant; checked on 16 sampled
    rows against float64 first."""
    b, h, s, d = (2, 2, 512, 128) if r.args.quick else (8, 16, 4096, 128)
    label = "%dx%dx%d d%d bf16" % (b, h, s, d)
    for work, causal in (("attention", False), ("attention_causal", True)):
        if not r.selected(work):
            continue
        flops = 4 * b * h * s * s * d // (2 if causal else 1)
        for backend in ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"):
            def body(backend=backend, causal=causal):
                lib = r.lib_for("torch")
                t = lib.t
                from torch.nn.attention import sdpa_kernel, SDPBackend
                q, k, v = (lib.rand((b, h, s, d), -1.0, 1.0, r.next_seed()).to(t.bfloat16)
                           for _ in range(3))
                sdpa = t.nn.functional.scaled_dot_product_attention
                be = getattr(SDPBackend, backend)

                def fn():
                    with sdpa_kernel(be):
                        return sdpa(q, k, v, is_causal=causal)
                out = fn()
                lib.sync()
                g = t.Generator().manual_seed(r.next_seed())
                worst = 0.0
                for _ in range(16):
                    bi = int(t.randint(0, b, (1,), generator=g))
                    hi = int(t.randint(0, h, (1,), generator=g))
                    row = int(t.randint(0, s, (1,), generator=g))
                    keys = row + 1 if causal else s
                    q64 = q[bi, hi, row].double()
                    k64, v64 = k[bi, hi, :keys].double(), v[bi, hi, :keys].double()
                    p = t.softmax(k64 @ q64 / d ** 0.5, 0)
                    want, mag = p @ v64, p @ v64.abs()
                    err = ((out[bi, hi, row].double() - want).abs()
                           / (4.0 / 256.0 * (want.abs() + mag) + 1e-6)).max().item()
                    if not err <= 1.0:
                        raise AssertionError("%s row %d: error %.2f of the bound" % (work, row, err))
                    worst = max(worst, err)
                times = r.time("torch", fn)
                ms = statistics.median(times)
                return times, "%.0f TFLOP/s; 16 sampled rows within %.2f of their error bound" % (
                    flops / (ms * 1e-3) / 1e12, worst)

            r.peer(work, "torch", "scaled_dot_product_attention, %s" % backend, body,
                   size=label, flops=flops)
        r.free_all()


RUNNERS = [
    (("copy",), w_copy),
    (("add",), w_add),
    (("axpy",), w_axpy),
    (("chain",), w_chain),
    (("add_f64",), w_add_f64),
    (("bcast_add",), w_bcast_add),
    (("resize",), w_resize),
    (("sum", "max", "argmax"), w_reductions),
    (("row_sum", "col_sum"), w_axis_sums),
    (("scan", "scan_i32"), w_scans),
    (("launch",), w_launch),
    (("compile_cold", "compile_cached"), w_compile),
    (("graph",), w_graph),
    (("pool",), w_pool),
    (("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"), w_transfers),
    (("peer_copy",), w_peer_copy),
    (("sum_1gpu", "add_1gpu", "scan_1gpu"), w_one_gpu),
    (("all_reduce", "sum_sharded", "add_sharded", "scan_sharded", "all_reduce_procs",
      "sum_procs", "add_procs", "all_reduce_sockets", "sum_sockets", "add_sockets"), w_sharded),
    (("matmul_f32", "matmul_tf32", "matmul_f16", "matmul_bf16", "matmul_fp8",
      "matmul_batched", "matmul_splitk", "gemm_bias_gelu"), w_matmul),
    (("attention", "attention_causal"), w_attention),
]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, 5 repetitions")
    p.add_argument("--only", type=lambda s: [w for w in s.split(",") if w], default=None,
                   help="comma-separated works (--list names them)")
    p.add_argument("--impls", type=lambda s: [w for w in s.split(",") if w], default=IMPLS,
                   help="comma-separated peers to time (default: torch,cupy,numba)")
    p.add_argument("--reps", type=int, default=0, help="timed repetitions (default 20; 5 with --quick)")
    p.add_argument("--torch-compile", action="store_true",
                   help="also time torch.compile on the fused chain (compiles with Inductor/Triton)")
    p.add_argument("--list", action="store_true", help="print the works and exit")
    p.add_argument("--gpus", type=int, default=2, choices=range(1, 9), metavar="N",
                   help="devices of the all-reduce and sharded rows (default 2; 1 rehearses "
                   "them on one device)")
    p.add_argument("--verbose", action="store_true", help="tracebacks of failures on stderr")
    p.add_argument("filter", nargs="?", default=None, help="only works whose name contains this")
    a = p.parse_args(argv)
    for w in a.only or []:
        if w not in WORKS:
            p.error("unknown work %r (--list names them)" % w)
    for i in a.impls:
        if i not in IMPLS:
            p.error("unknown peer %r (torch, cupy, numba)" % i)
    if a.reps < 0:
        p.error("--reps must be positive")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        print("\n".join(WORKS))
        return 0
    r = Run(args)
    t0 = time.perf_counter()
    versions = r.fw.versions()
    device = "?"
    for name in ("torch", "cupy"):
        try:
            mod = r.fw.get(name)
            if name == "torch":
                device = mod.cuda.get_device_name(0)
            else:
                device = mod.cuda.runtime.getDeviceProperties(0)["name"].decode()
            break
        except Exception:
            continue
    emit(work="_env", size="-", impl="peers",
         note="%s; %s; python %s; seed %x%s" % (device, ", ".join(versions),
                                                sys.version.split()[0], r.seed,
                                                ", --quick" if args.quick else ""))
    for works, fn in RUNNERS:
        if not any(r.selected(w) for w in works):
            continue
        try:
            fn(r)
        except Exception as e:  # a bug in this script: report it against the works, go on
            for w in works:
                if r.selected(w):
                    emit(work=w, size=r.sizes.label(w), impl="peers", error=short_error(e))
            if args.verbose:
                traceback.print_exc(file=sys.stderr)
        r.free_all()
    print("peers.py: done in %.1f s" % (time.perf_counter() - t0), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
