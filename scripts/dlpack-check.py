#!/usr/bin/env python3
"""DLPack between cudajit and PyTorch / CuPy, zero-copy, through ctypes.

Loads examples/dlpack_py.rs (a C-ABI library: no PyO3) and checks, printing one line per check
(PASS / FAIL / SKIP), exiting 1 if any check failed:

  ctypes  cudajit -> capsule -> cudajit (both DLPack structs), an unconsumed capsule's
          destructor, a producer made here in Python (its deleter counted: exactly once, on
          success and on every refusal). Needs only the library: runs on cudajit's CPU
          simulator too (CUDAJIT_SIMULATOR=1).
  torch   torch.from_dlpack of a cudajit array (same data_ptr; written by torch, read by
          cudajit), torch's tensors taken back (t.__dlpack__(stream=...), the capsule renamed
          "used_dltensor[_versioned]") and written in place by a cudajit kernel, the stream
          handshake both ways on non-default streams, the errors (CPU tensor, dtype,
          non-contiguous, another device), the deleters.
  cupy    the same exchange with CuPy.

Without torch or CuPy (or without a GPU) their sections print SKIP.

  cargo build --release --example dlpack_py      # target/release/examples/libdlpack_py.so
  python3 scripts/dlpack-check.py [--lib PATH] [--device N] [--only ctypes,torch,cupy]
"""
import argparse
import ctypes
import gc
import os
import sys
import traceback

# Capsule names: PyCapsule_New and PyCapsule_SetName keep the pointer, so these bytes objects
# must live as long as the capsules (module globals do).
DLTENSOR = b"dltensor"
DLTENSOR_VERSIONED = b"dltensor_versioned"
USED = b"used_dltensor"
USED_VERSIONED = b"used_dltensor_versioned"

kDLCPU, kDLCUDA = 1, 2
kDLInt, kDLFloat = 0, 2

failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not detail else f"  [{detail}]"))
    sys.stdout.flush()
    if not ok:
        failures.append(name)


def skip(name, why):
    print(f"SKIP {name}: {why}")


# --- the DLPack structs, as dlpack.h lays them out ---------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_uint32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# --- the Python C API for capsules --------------------------------------------------------
api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]


class Lib:
    """The cudajit side: examples/dlpack_py.rs."""

    def __init__(self, path, device):
        self.so = so = ctypes.CDLL(path)
        u64, i64, c_int, f32, vp = (ctypes.c_uint64, ctypes.c_int64, ctypes.c_int,
                                    ctypes.c_float, ctypes.c_void_p)
        sig = {
            "cj_init": (c_int, [c_int]),
            "cj_last_error": (ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t]),
            "cj_stream": (i64, []),
            "cj_sync": (c_int, []),
            "cj_iota_f32": (u64, [ctypes.c_size_t]),
            "cj_add_f32": (c_int, [u64, f32, c_int]),
            "cj_data_ptr": (u64, [u64]),
            "cj_read_f32": (c_int, [u64, ctypes.POINTER(f32), ctypes.c_size_t]),
            "cj_free": (c_int, [u64]),
            "cj_export": (vp, [u64, c_int, c_int, i64]),
            "cj_import": (u64, [vp, c_int, c_int]),
            "cj_import_data_ptr": (u64, [u64]),
            "cj_import_add": (c_int, [u64, f32]),
            "cj_import_read": (c_int, [u64, vp, ctypes.c_size_t]),
            "cj_import_drop": (c_int, [u64]),
            "cj_import_drop_nosync": (c_int, [u64]),
            "cj_bench_roundtrip": (ctypes.c_double, [u64]),
            "cj_counters": (None, [ctypes.POINTER(u64)]),
            "cj_set_capsule_api": (None, [vp, vp]),
        }
        for name, (res, args) in sig.items():
            f = getattr(so, name)
            f.restype, f.argtypes = res, args
        so.cj_set_capsule_api(ctypes.cast(api.PyCapsule_IsValid, vp),
                              ctypes.cast(api.PyCapsule_GetPointer, vp))
        self.destructor = ctypes.cast(so.cj_capsule_destructor, vp)
        if so.cj_init(device) != 0:
            raise RuntimeError("cj_init: " + self.error())

    def error(self):
        buf = ctypes.create_string_buffer(4096)
        self.so.cj_last_error(buf, len(buf))
        return buf.value.decode(errors="replace")

    def counters(self):
        out = (ctypes.c_uint64 * 4)()
        self.so.cj_counters(out)
        return dict(zip(("exported", "export_deleted", "adopted", "adopted_deleted"), out))

    def read(self, h, n):
        out = (ctypes.c_float * n)()
        if self.so.cj_read_f32(h, out, n) != 0:
            raise RuntimeError(self.error())
        return list(out)

    def import_read(self, h, n, ctype=ctypes.c_float):
        out = (ctype * n)()
        if self.so.cj_import_read(h, out, n) != 0:
            raise RuntimeError(self.error())
        return list(out)


class CudajitArray:
    """A cudajit f32 array, offered through the __dlpack__ protocol."""

    def __init__(self, lib, n, device, legacy_only=False):
        self.lib, self.n, self.device = lib, n, device
        self.h = lib.so.cj_iota_f32(n)
        if not self.h:
            raise RuntimeError(lib.error())
        self.legacy_only = legacy_only
        self.last_versioned = None
        self.last_stream = "unset"

    def __dlpack_device__(self):
        return (kDLCUDA, self.device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        versioned = (not self.legacy_only and max_version is not None and max_version[0] >= 1)
        self.last_versioned, self.last_stream = versioned, stream
        ptr = self.lib.so.cj_export(self.h, int(versioned), int(stream is not None),
                                    stream if stream is not None else 0)
        if not ptr:
            raise BufferError(self.lib.error())
        return api.PyCapsule_New(ptr, DLTENSOR_VERSIONED if versioned else DLTENSOR,
                                 self.lib.destructor)

    def data_ptr(self):
        return self.lib.so.cj_data_ptr(self.h)

    def values(self):
        return self.lib.read(self.h, self.n)


class OldProducer:
    """A producer from before DLPack 1.0: `__dlpack__` takes no max_version."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.inner.__dlpack__(stream=stream)


def take(obj, stream):
    """Another library's tensor as (capsule, pointer, versioned), the capsule marked used."""
    try:
        cap = obj.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:  # a producer from before DLPack 1.0's max_version
        cap = obj.__dlpack__(stream=stream)
    name = api.PyCapsule_GetName(cap)
    versioned = name == DLTENSOR_VERSIONED
    ptr = api.PyCapsule_GetPointer(cap, DLTENSOR_VERSIONED if versioned else DLTENSOR)
    api.PyCapsule_SetName(cap, USED_VERSIONED if versioned else USED)
    return cap, ptr, versioned


def import_error(lib, obj, kind, stream):
    """The error message of importing obj as kind (must fail)."""
    _, ptr, versioned = take(obj, stream)
    before = lib.counters()["adopted_deleted"]
    h = lib.so.cj_import(ptr, int(versioned), kind)
    if h:
        lib.so.cj_import_drop(h)
        return None
    deleted = lib.counters()["adopted_deleted"] - before
    return lib.error() if deleted == 1 else f"deleter ran {deleted} times: {lib.error()}"


# --- the sections -------------------------------------------------------------------------
def section_ctypes(lib, device):
    n = 1000
    iota = [float(i) for i in range(n)]
    for versioned in (True, False):
        tag = "versioned" if versioned else "legacy"
        c0 = lib.counters()
        a = CudajitArray(lib, n, device, legacy_only=not versioned)
        cap, ptr, got_versioned = take(a, lib.so.cj_stream())
        check(f"ctypes/{tag}: capsule name", got_versioned == versioned)
        h = lib.so.cj_import(ptr, int(got_versioned), 0)
        check(f"ctypes/{tag}: cudajit takes its own capsule back", h != 0, lib.error())
        if not h:
            continue
        check(f"ctypes/{tag}: zero-copy", lib.so.cj_import_data_ptr(h) == a.data_ptr())
        lib.so.cj_import_add(h, 2.0)
        lib.so.cj_sync()
        check(f"ctypes/{tag}: a kernel's writes seen through the other name",
              a.values() == [x + 2.0 for x in iota])
        lib.so.cj_import_drop(h)
        del cap
        gc.collect()
        c1 = lib.counters()
        check(f"ctypes/{tag}: the export's deleter ran once",
              c1["export_deleted"] - c0["export_deleted"] == 1, f"{c0} -> {c1}")
    # A producer without max_version: the legacy struct, through take()'s fallback.
    a = CudajitArray(lib, 8, device)
    _, ptr, versioned = take(OldProducer(a), lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 0)
    check("ctypes: a producer without max_version gives the legacy struct",
          h != 0 and not versioned, lib.error())
    if h:
        lib.so.cj_import_drop(h)
    per = lib.so.cj_bench_roundtrip(20000)
    print(f"BENCH cudajit export + import + release, in Rust: {per / 1000:.2f} us")

    # A capsule nobody consumed: its destructor runs the deleter.
    c0 = lib.counters()
    a = CudajitArray(lib, 16, device)
    cap = a.__dlpack__(stream=None, max_version=(1, 0))
    del cap
    gc.collect()
    c1 = lib.counters()
    check("ctypes: an unconsumed capsule's destructor runs the deleter once",
          c1["export_deleted"] - c0["export_deleted"] == 1, f"{c0} -> {c1}")

    # A producer made here: a tensor over cudajit's memory with a counting deleter.
    mem = CudajitArray(lib, 12, device)
    calls = []
    deleter = DELETER(lambda p: calls.append(p))
    keep = []

    def made(versioned=True, dtype=(kDLFloat, 32), dev=(kDLCUDA, device), major=1,
             shape=(3, 4), strides=None, flags=0):
        sh = (ctypes.c_int64 * len(shape))(*shape)
        st = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        t = DLTensor(mem.data_ptr(), DLDevice(*dev), len(shape), DLDataType(dtype[0], dtype[1], 1),
                     sh, st, 0)
        if versioned:
            m = DLManagedTensorVersioned(DLPackVersion(major, 0), None, deleter, flags, t)
        else:
            m = DLManagedTensor(t, None, deleter)
        keep.append((sh, st, m))
        return ctypes.addressof(m), int(versioned)

    ptr, v = made()
    h = lib.so.cj_import(ptr, v, 1)
    check("ctypes/producer: imported", h != 0, lib.error())
    if h:
        check("ctypes/producer: zero-copy", lib.so.cj_import_data_ptr(h) == mem.data_ptr())
        check("ctypes/producer: values", lib.import_read(h, 12) == [float(i) for i in range(12)])
        check("ctypes/producer: no deleter before the drop", len(calls) == 0)
        lib.so.cj_import_drop(h)
        check("ctypes/producer: the deleter ran once, at the drop", len(calls) == 1)
    refusals = [
        ("a CPU tensor", dict(dev=(kDLCPU, 0)), "CPU tensor"),
        ("another CUDA device", dict(dev=(kDLCUDA, device + 1)), f"CUDA device {device + 1}"),
        ("int64 as f32", dict(dtype=(kDLInt, 64)), "int64"),
        ("non-contiguous as contiguous", dict(strides=(1, 3)), "not C-contiguous"),
        ("DLPack 2.x", dict(major=2), "DLPack 2.0"),
        ("read-only", dict(flags=1), "read-only"),
        ("legacy int64 as f32", dict(versioned=False, dtype=(kDLInt, 64)), "int64"),
    ]
    for what, kw, needle in refusals:
        before = len(calls)
        ptr, v = made(**kw)
        h = lib.so.cj_import(ptr, v, 1)
        msg = lib.error()
        check(f"ctypes/producer: {what} refused, clearly", h == 0 and needle in msg, msg)
        check(f"ctypes/producer: {what}: the deleter ran once", len(calls) - before == 1)
    ptr, v = made(strides=(1, 3))
    h = lib.so.cj_import(ptr, v, 2)
    check("ctypes/producer: strided import", h != 0, lib.error())
    if h:
        want = [float(j + 3 * i) for j in range(3) for i in range(4)]  # [j, i] at j + 3 i
        check("ctypes/producer: strided values", lib.import_read(h, 12) == want)
        lib.so.cj_import_drop(h)


def section_torch(lib, device):
    try:
        import torch
    except ImportError as e:
        skip("torch", f"not installed ({e})")
        return
    if not torch.cuda.is_available():
        skip("torch", "no CUDA device for torch")
        return
    print(f"torch {torch.__version__}")
    dev = torch.device("cuda", device)
    torch.cuda.set_device(dev)
    n = 1 << 16
    iota = torch.arange(n, dtype=torch.float32, device=dev)

    # cudajit -> torch, through the protocol (torch picks versioned or legacy).
    c0 = lib.counters()
    a = CudajitArray(lib, n, device)
    t = torch.from_dlpack(a)
    check(f"torch.from_dlpack: zero-copy (versioned={a.last_versioned}, stream={a.last_stream})",
          t.data_ptr() == a.data_ptr(), f"{t.data_ptr():#x} vs {a.data_ptr():#x}")
    check("torch.from_dlpack: device, dtype, shape",
          t.device == dev and t.dtype == torch.float32 and tuple(t.shape) == (n,))
    check("torch.from_dlpack: values", torch.equal(t, iota))
    t.add_(1)
    torch.cuda.synchronize()
    check("torch writes, cudajit reads", a.values() == [float(i + 1) for i in range(n)])
    del t
    gc.collect()
    c1 = lib.counters()
    check("torch: the export's deleter ran once when torch let go",
          c1["export_deleted"] - c0["export_deleted"] == 1, f"{c0} -> {c1}")

    # A legacy capsule through torch.utils.dlpack (the pre-protocol path).
    b = CudajitArray(lib, n, device, legacy_only=True)
    cap = b.__dlpack__(stream=None)
    t = torch.utils.dlpack.from_dlpack(cap)
    check("torch.utils.dlpack.from_dlpack(legacy capsule): zero-copy", t.data_ptr() == b.data_ptr())
    check("torch: the consumed capsule was renamed", api.PyCapsule_GetName(cap) == USED)
    del t, cap
    gc.collect()

    # torch -> cudajit, a kernel in place.
    c0 = lib.counters()
    u = torch.arange(n, dtype=torch.float32, device=dev)
    _, ptr, versioned = take(u, lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 0)
    check(f"torch -> cudajit (versioned={versioned})", h != 0, lib.error())
    if h:
        check("torch -> cudajit: zero-copy", lib.so.cj_import_data_ptr(h) == u.data_ptr())
        lib.so.cj_import_add(h, 1.0)
        lib.so.cj_sync()
        check("cudajit's kernel writes, torch reads", torch.equal(u, iota + 1))
        lib.so.cj_import_drop(h)
        c1 = lib.counters()
        check("torch -> cudajit: torch's deleter called once, at the drop",
              c1["adopted_deleted"] - c0["adopted_deleted"] == 1, f"{c0} -> {c1}")

    # The handshake, torch producing on a non-default stream: no host synchronisation.
    big = 1 << 22
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        x = torch.zeros(big, dtype=torch.float32, device=dev)
        for _ in range(8):
            x.add_(1)
        _, ptr, versioned = take(x, lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 1)
    if h:
        vals = lib.import_read(h, big)
        check("handshake torch -> cudajit: cudajit's stream waited for torch's",
              min(vals) == 8.0 and max(vals) == 8.0, f"min {min(vals)} max {max(vals)}")
        lib.so.cj_import_drop(h)
    else:
        check("handshake torch -> cudajit: import", False, lib.error())

    # The handshake, cudajit producing: work queued on cudajit's stream, torch reads on its own.
    c = CudajitArray(lib, big, device)
    lib.so.cj_add_f32(c.h, 1.0, 8)
    s2 = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s2):
        t = torch.from_dlpack(c)
        first, total = float(t[0]), float(t[-1])
    check("handshake cudajit -> torch: torch's stream waited for cudajit's",
          (first, total) == (8.0, float(big - 1 + 8)), f"{first}, {total}")
    del t

    # Errors, each with torch's deleter still called once.
    msg = import_error(lib, torch.arange(4, dtype=torch.float32), 0, None)
    check("torch: a CPU tensor is refused", msg is not None and "CPU tensor" in msg, msg)
    msg = import_error(lib, torch.arange(4, device=dev), 0, lib.so.cj_stream())
    check("torch: int64 as f32 is refused", msg is not None and "int64" in msg, msg)
    m = torch.arange(12, dtype=torch.float32, device=dev).reshape(3, 4)
    msg = import_error(lib, m.t(), 1, lib.so.cj_stream())
    check("torch: a transposed tensor is refused as contiguous",
          msg is not None and "not C-contiguous" in msg, msg)
    _, ptr, versioned = take(m.t(), lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 2)
    if h:
        got = lib.import_read(h, 12)
        check("torch: a transposed tensor imports strided",
              got == m.t().contiguous().flatten().tolist())
        lib.so.cj_import_drop(h)
    else:
        check("torch: strided import", False, lib.error())
    w = torch.arange(10, dtype=torch.int64, device=dev) * 3
    _, ptr, versioned = take(w, lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 3)
    if h:
        check("torch: int64 tensor", lib.import_read(h, 10, ctypes.c_int64) == w.tolist())
        lib.so.cj_import_drop(h)
    else:
        check("torch: int64 tensor", False, lib.error())
    bench(lib, device, "torch", torch.from_dlpack,
          torch.zeros(1024, dtype=torch.float32, device=dev))
    if torch.cuda.device_count() > device + 1:
        other = torch.arange(4, dtype=torch.float32, device=torch.device("cuda", device + 1))
        # torch exports a tensor only with its device current ("Can't export tensors on a
        # different CUDA device index"); cudajit, on device `device`, must then refuse it.
        with torch.cuda.device(device + 1):
            msg = import_error(lib, other, 0, None)
        check("torch: another device's tensor is refused",
              msg is not None and f"CUDA device {device + 1}" in msg, msg)
    else:
        skip("torch: another device's tensor", "one GPU")


def per_call_us(f, iters=2000):
    """Host microseconds per call of f (after a warm-up)."""
    import time
    for _ in range(50):
        f()
    t0 = time.perf_counter()
    for _ in range(iters):
        f()
    return (time.perf_counter() - t0) / iters * 1e6


def bench(lib, device, name, from_dlpack, native):
    """The host cost of the exchange against the library's own from_dlpack of its own array."""
    a = CudajitArray(lib, 1024, device)
    own = per_call_us(lambda: from_dlpack(native))
    ours = per_call_us(lambda: from_dlpack(a))

    def into_cudajit():
        _, ptr, versioned = take(native, lib.so.cj_stream())
        h = lib.so.cj_import(ptr, int(versioned), 0)
        lib.so.cj_import_drop_nosync(h)

    back = per_call_us(into_cudajit)
    lib.so.cj_sync()
    print(f"BENCH {name}: {name}.from_dlpack({name} array) {own:.2f} us (its own cost); "
          f"{name}.from_dlpack(cudajit array) {ours:.2f} us; "
          f"a {name} array into cudajit (__dlpack__ + import + release) {back:.2f} us")


def section_cupy(lib, device):
    try:
        import cupy
    except ImportError as e:
        skip("cupy", f"not installed ({e})")
        return
    try:
        cupy.cuda.Device(device).use()
    except Exception as e:  # no GPU for CuPy
        skip("cupy", f"no CUDA device for CuPy ({e})")
        return
    print(f"cupy {cupy.__version__}")
    n = 1 << 16
    c0 = lib.counters()
    a = CudajitArray(lib, n, device)
    x = cupy.from_dlpack(a)
    check(f"cupy.from_dlpack: zero-copy (versioned={a.last_versioned}, stream={a.last_stream})",
          x.data.ptr == a.data_ptr())
    check("cupy.from_dlpack: values", bool((x == cupy.arange(n, dtype=cupy.float32)).all()))
    x += 1
    cupy.cuda.Device(device).synchronize()
    check("cupy writes, cudajit reads", a.values() == [float(i + 1) for i in range(n)])
    del x
    gc.collect()
    c1 = lib.counters()
    check("cupy: the export's deleter ran once", c1["export_deleted"] - c0["export_deleted"] == 1,
          f"{c0} -> {c1}")

    y = cupy.arange(n, dtype=cupy.float32)
    c0 = lib.counters()
    _, ptr, versioned = take(y, lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 0)
    check(f"cupy -> cudajit (versioned={versioned})", h != 0, lib.error())
    if h:
        check("cupy -> cudajit: zero-copy", lib.so.cj_import_data_ptr(h) == y.data.ptr)
        lib.so.cj_import_add(h, 1.0)
        lib.so.cj_sync()
        check("cudajit's kernel writes, cupy reads",
              bool((y == cupy.arange(n, dtype=cupy.float32) + 1).all()))
        lib.so.cj_import_drop(h)
        c1 = lib.counters()
        check("cupy -> cudajit: CuPy's deleter called once",
              c1["adopted_deleted"] - c0["adopted_deleted"] == 1)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        z = cupy.zeros(1 << 22, dtype=cupy.float32)
        for _ in range(8):
            z += 1
        _, ptr, versioned = take(z, lib.so.cj_stream())
    h = lib.so.cj_import(ptr, int(versioned), 1)
    if h:
        vals = lib.import_read(h, 1 << 22)
        check("handshake cupy -> cudajit", min(vals) == 8.0 and max(vals) == 8.0)
        lib.so.cj_import_drop(h)
    else:
        check("handshake cupy -> cudajit: import", False, lib.error())
    bench(lib, device, "cupy", cupy.from_dlpack, cupy.zeros(1024, dtype=cupy.float32))


def default_lib():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    for profile in ("release", "debug"):
        p = os.path.join(root, "target", profile, "examples", "libdlpack_py.so")
        if os.path.exists(p):
            return p
    return "libdlpack_py.so"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("CUDAJIT_DLPACK_LIB") or default_lib())
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--only", default="ctypes,torch,cupy")
    args = ap.parse_args()
    print(f"library: {args.lib}")
    lib = Lib(args.lib, args.device)
    sections = {"ctypes": section_ctypes, "torch": section_torch, "cupy": section_cupy}
    for name in args.only.split(","):
        try:
            sections[name](lib, args.device)
        except Exception as e:
            traceback.print_exc()
            check(f"{name}: raised", False, repr(e))
    gc.collect()
    print(f"counters: {lib.counters()}")
    print(f"{len(failures)} failed" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
