# Raw texture-sampling data, fourth round (after texprobe5.py, which measured 3-D filtering
# under clamp addressing only): linear filtering and point sampling under wrap, mirror, border
# and clamp addressing, near every edge and corner of the texture in every period, at tie
# fractions, bit for bit. CuPy fetches; writes texprobe6.npz into the folder given:
#     python3 probe/texprobe6.py OUTDIR                      # on the GPU machine (< 60 s)
#     python3 probe/texprobe6.py --selfcheck                 # no GPU: layouts and inputs only
#     python3 probe/texprobe6.py --selfcheck --synthetic OUT # no GPU: OUT/texprobe6.npz with
#         every result filled in by the current model (probe/fit6.py's rule "index", 1-D
#         "index+row", i.e. tests/support/tex_model.rs) instead of a GPU, to test fit6.py's
#         plumbing; meta_synthetic = 1.
# Every value is stored exactly: texels as their own dtype (f32 as uint32 bits), coordinates
# as float32, results as uint32 (the f32 result's bits). Textures are CUDA arrays, 1 channel,
# linear filtering unless the section is point sampling; u8 and u16 read as normalized floats
# (cudaReadModeNormalizedFloat), f32 as is; border colour 0 (CuPy's default). The texture
# descriptor's addressMode[0..2] are the section's modes for x, y, z (1-D and 2-D: the x
# axis's mode repeated into the unused slots).
#
# Texture sizes (x first): 3-D s5x4x3 (W 5, H 4, D 3) and s8x8x8; 2-D s5x4 and s8x8; 1-D s5
# and s8. Address modes are tagged one letter per axis, x first: W wrap, M mirror, B border,
# C clamp (cudaAddressMode*); e.g. WMB = wrap x, mirror y, border z.
#
# Coordinate lists c{d}{n|u}_{size} (d = dims; n normalized, u unnormalized texel
# coordinates): _u, _v, _w (float32 [N], x, y, z; as many as dims), _part (int8 [N]: 0, 1, 2
# a sweep along x, y, z; 3 corners; 5 texel boundaries; 4 random), _nind (int64: the first
# nind entries, the sweeps and corners, are the ones the indicator textures are read at;
# then the boundaries, then the random ones). Exact entries (every part but 4) aim at texel
# coordinate x = e n + d / 512 on each axis (n the axis's extent, e an edge: e in {-1, 0, 1,
# 2} normalized, i.e. u in [-1.5, 2.5] around every period's edges; e in {0, 1}
# unnormalized), d an integer: the normalized u is U / 2^21 (float32, exact: asserted) with U
# the nearest integer to x 2^21 / n, so the texture unit's X = U n (2^-21 texel steps) is
# x 2^21 exactly where n divides d (always for n = 4, 8; for n = 5 and 3 every 5th / 3rd d,
# ties included; the others lie within n/2 steps of 2^-21 texel of the target, on either
# side); unnormalized x = X / 2^21 is exact. d odd puts x - 0.5 exactly between two 1/256
# weights (a tie, which the known rule rounds up).
#   sweeps (part a): axis a at every d in -320..320 (x from 0.625 texel before the edge to
#     0.625 after: every weight and tie of the footprints that straddle the edge, reach the
#     clamp limits 0.5 / n - 0.5 and the border limits -0.5 / n + 0.5) at each edge e, the
#     other axes fixed at one (e, d) pair each, drawn from FIXED (near-edge ties, exact
#     weights, an interior point x = 1 + 129/512); 2-D and 3-D: two such sweeps per edge;
#   corners (part 3): at each corner (every combination of edges over the axes: normalized
#     4^dims, unnormalized 2^dims), 3-D 96 and 2-D 64 (unnormalized 64) random tuples of d
#     from CORNER_D (ties, exact weights, 0, +-256 (x = edge +- 0.5), +-257, +-255, ...);
#     1-D has no corners (its sweep covers them);
#   boundaries (part 5): axis a at x = k + BOUND_D / 512 for every integer k in the range
#     (normalized u in [-1.5, 2.5], unnormalized x in [-2, n + 2]), BOUND_D = -3, -1, 0, 1,
#     3, 256 (point sampling's texel boundaries in every period, where reflecting the
#     coordinate and reflecting the index differ; linear ties across whole periods); the
#     other axes at x = 1 + 129/512;
#   random (part 4): uniform float32 (full precision, not on the 1/512 grid): normalized in
#     [-1.5, 2.5], unnormalized in [-2, n + 2]; 3-D 2048, 2-D and 1-D 1024 (unnormalized 3-D
#     1024).
#
# Textures (the same for every mode; index order [D, H, W] / [H, W] / [W]):
#   tex{d}_{size}_{T}: random texels, T f32 (uint32 bits of uniform [-1, 1)), u16, u8
#     (uniform over the type); tex{d}_{size}_idx: f32 texel = its linear index + 1 (point
#     sampling reads off which texel it took: value k + 1 is texel k = (z H + y) W + x);
#   ind{d}_{size}_pos (int32 [K, d], x first): the indicator textures: texture k is all +0
#     except f32 1.0 at ind_pos[k]: every texel whose index on each axis is in {0, 1, n - 2,
#     n - 1} (every texel the sweeps and corners can read under any mode, asserted: K = 48
#     for s5x4x3, 64 for s8x8x8, 16 for 2-D, 4 for 1-D); a fetch returns that texel's weight
#     (the sum of the weights of the footprint corners that address it).
#
# Results (uint32, f32 bits):
#   lin{d}{n|u}_{size}_{MODES}_{T}  linear filtering at the coordinate list c{d}{n|u}_{size}:
#     T f32, u16, u8: [N] on tex{d}_{size}_{T}; T ind: [K, nind] on the K indicator textures.
#     3-D normalized MODES: WWW MMM BBB CCC WMB MBW BCM; 3-D unnormalized: BBB CCC BCC;
#     2-D normalized: WW MM BB CC WM MB BW; 1-D normalized: W M B C (tex1D of a 1-D array:
#     the simulator's model reads it as one row of a 2-D texture, see fit6.py "+row").
#   pt{d}{n|u}_{size}_{MODES}_idx   point sampling of tex{d}_{size}_idx: 3-D normalized every
#     MODES above, 3-D unnormalized BBB CCC ([N]).
# meta_device, meta_versions (CUDA runtime, driver), meta_cupy say where the data came from;
# meta_synthetic (int64) is 1 for the --synthetic model data.
import os
import sys
import time

import numpy as np

t0 = time.time()

INFO = {  # numpy dtype, CUDA channel kind name, bits, read normalized
    "u8": (np.uint8, "Unsigned", 8, True), "u16": (np.uint16, "Unsigned", 16, True),
    "f32": (np.uint32, "Float", 32, False),
}
RND_TYPES = ("f32", "u16", "u8")
SIZES = {3: ((5, 4, 3), (8, 8, 8)), 2: ((5, 4), (8, 8)), 1: ((5,), (8,))}
MODES_N = {3: ("WWW", "MMM", "BBB", "CCC", "WMB", "MBW", "BCM"),
           2: ("WW", "MM", "BB", "CC", "WM", "MB", "BW"), 1: ("W", "M", "B", "C")}
MODES_U = {3: ("BBB", "CCC", "BCC")}
PT_MODES_U = ("BBB", "CCC")
EDGES_N = (-1, 0, 1, 2)
EDGES_U = (0, 1)
SWEEP = np.arange(-320, 321)
FIXED = ((0, 1), (1, -255), (2, 129), (-1, 385), (0, -129), (1, 3), (2, -1), (-1, 256),
         (0, 512 + 129), (1, 257), (2, -256), (-1, -3))
CORNER_D = (-385, -320, -257, -256, -255, -129, -64, -3, -1, 0, 1, 3, 127, 129, 255, 256, 257,
            383)
BOUND_D = (-3, -1, 0, 1, 3, 256)
NCORNER = {(3, True): 96, (2, True): 64, (3, False): 64}
NRAND = {(3, True): 2048, (2, True): 1024, (1, True): 1024, (3, False): 1024}


def tag(size):
    return "s" + "x".join(str(n) for n in size)


def target_U(e, d, n, norm):
    """The integer coordinate aimed at: normalized U (u = U / 2^21) nearest to x 2^21 / n,
    ties down; unnormalized X = x 2^21 (u = X / 2^21); x = e n + d / 512."""
    X = (np.asarray(e, np.int64) * n * 512 + np.asarray(d, np.int64)) << 12
    if not norm:
        return X
    return (X + (n - 1) // 2) // n  # nearest multiple of n (ties down)


def coord_list(dims, size, norm):
    """(coords (list of float32 [N], x first), part (int8 [N]), nind, U (int64 [dims, nind]
    the exact entries' integers), targets (int64 [dims, nind], x 2^21))."""
    r = np.random.default_rng(600 + 10 * dims + int(norm) + sum(size))
    edges = EDGES_N if norm else EDGES_U
    Us, tg, parts = [[] for _ in range(dims)], [[] for _ in range(dims)], []
    k = 0
    for a in range(dims):  # sweeps
        for e in edges:
            for _ in range(1 if dims == 1 else 2):
                for d in range(dims):
                    if d == a:
                        ee, dd = np.full(SWEEP.size, e), SWEEP
                    else:
                        fe, fd = FIXED[(k + 5 * d) % len(FIXED)]
                        if not norm:
                            fe = fe % 2
                        ee, dd = np.full(SWEEP.size, fe), np.full(SWEEP.size, fd)
                    Us[d].append(target_U(ee, dd, size[d], norm))
                    tg[d].append((ee * size[d] * 512 + dd) << 12)
                k += 1
                parts.append(np.full(SWEEP.size, a, np.int8))
    if dims > 1:  # corners
        nc = NCORNER[(dims, norm)]
        for corner in np.stack(np.meshgrid(*[edges] * dims, indexing="ij"), -1).reshape(-1, dims):
            dd = np.array(CORNER_D)[r.integers(0, len(CORNER_D), (nc, dims))]
            for d in range(dims):
                Us[d].append(target_U(np.full(nc, corner[d]), dd[:, d], size[d], norm))
                tg[d].append((corner[d] * size[d] * 512 + dd[:, d]) << 12)
            parts.append(np.full(nc, 3, np.int8))
    nind = sum(p.size for p in parts)
    for a in range(dims):  # texel boundaries (part 5), the other axes at x = 1 + 129/512
        lo, hi = (-3 * size[a] // 2 - 1, 5 * size[a] // 2 + 1) if norm else (-2, size[a] + 2)
        dd = (512 * np.arange(lo, hi + 1)[:, None] + np.array(BOUND_D)[None, :]).ravel()
        dd = dd[(dd >= 512 * size[a] * (-1.5 if norm else -2)) &
                (dd <= 512 * (size[a] * 2.5 if norm else size[a] + 2))]
        for d in range(dims):
            dv = dd if d == a else np.full(dd.size, 512 + 129)
            Us[d].append(target_U(np.zeros(dd.size, np.int64), dv, size[d], norm))
            tg[d].append(dv.astype(np.int64) << 12)
        parts.append(np.full(dd.size, 5, np.int8))
    U = np.array([np.concatenate(u) for u in Us])
    targets = np.array([np.concatenate(t) for t in tg])
    coords = []
    nr = NRAND[(dims, norm)]
    for d in range(dims):
        c = (U[d] / 2.0 ** 21)
        assert np.all(c.astype(np.float32) == c)  # exact
        lo, hi = (-1.5, 2.5) if norm else (-2.0, size[d] + 2.0)
        rnd = r.uniform(lo, hi, nr).astype(np.float32)
        coords.append(np.concatenate([c.astype(np.float32), rnd]))
    part = np.concatenate(parts + [np.full(nr, 4, np.int8)])
    return coords, part, nind, U, targets


def ind_positions(size):
    """Indicator texel positions (int32 [K, dims], x first): every index in {0, 1, n-2, n-1}."""
    axes = [sorted({0, 1, n - 2, n - 1} & set(range(n))) for n in size]
    g = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(size))
    return g.astype(np.int32)


def ind_tex(size, p):
    t = np.zeros(size[::-1], np.uint32)
    t[tuple(p[::-1])] = np.float32(1).view(np.uint32)
    return t


def make_textures(dims, size):
    r = np.random.default_rng(700 + sum(size) * 3 + dims)
    shp = size[::-1]
    out = {"f32": r.uniform(-1, 1, shp).astype(np.float32).view(np.uint32),
           "u16": r.integers(0, 1 << 16, shp).astype(np.uint16),
           "u8": r.integers(0, 1 << 8, shp).astype(np.uint8),
           "idx": (np.arange(int(np.prod(shp))) + 1).astype(np.float32).reshape(shp).view(np.uint32)}
    return out


def selfcheck():
    """Checks the layouts and inputs without a GPU: python3 probe/texprobe6.py --selfcheck."""
    nf = 0
    for dims in (3, 2, 1):
        for norm in (True, False):
            if not norm and dims != 3:
                continue
            for size in SIZES[dims]:
                coords, part, nind, U, targets = coord_list(dims, size, norm)
                assert len(coords) == dims and all(c.dtype == np.float32 for c in coords)
                assert part.size == coords[0].size and (part[:nind] < 4).all()
                assert ((part[nind:] == 4) | (part[nind:] == 5)).all()
                nex = U.shape[1]  # the exact entries: all but the random ones
                assert (part[:nex] != 4).all() and (part[nex:] == 4).all()
                for d in range(dims):
                    n = size[d]
                    c = coords[d][:nex].astype(np.float64)
                    # every exact coordinate is the float32 intended, and its fixed point
                    assert (c * 2.0 ** 21 == U[d]).all()
                    X = U[d] * n if norm else U[d]
                    assert (np.abs(X - targets[d]) <= n // 2).all()
                    exact = (targets[d] % n == 0) if norm else np.ones(nex, bool)
                    assert (X[exact] == targets[d][exact]).all()
                    # some of the exact ones are ties (x - 0.5 an odd multiple of 1/512)
                    tie = exact & (((targets[d] >> 12) & 1) == 1) & ((targets[d] & 4095) == 0)
                    assert tie.sum() > 50, (dims, size, d, tie.sum())
                    if norm:
                        lo, hi = coords[d].min(), coords[d].max()
                        assert -1.5 - 1 / n <= lo and hi <= 2.5 + 1 / n
                        # every texel boundary of every period, exactly where n divides it
                        kb = np.arange(-3 * n // 2 + 1, 5 * n // 2)
                        hit = set((targets[d][(part[:nex] == 5) & exact] >> 21).tolist())
                        assert set((kb[(kb * 2 ** 21) % n == 0]).tolist()) <= hit
                        # the sweeps reach every period's edge
                        for e in EDGES_N:
                            assert ((part[:nex] == d) & (targets[d] == e * n << 21)).any()
                pos = ind_positions(size)
                assert pos.shape[1] == dims
                for p in pos:
                    t = ind_tex(size, p)
                    assert t.sum() == np.float32(1).view(np.uint32) and t[tuple(p[::-1])] != 0
                # every texel a sweep or corner footprint can read (index model, any mode) is
                # an indicator position
                for d in range(dims):
                    n = size[d]
                    X = (U[d] * n if norm else U[d])[:nind]
                    lower = (X - (1 << 20) + (1 << 12)) >> 21
                    axis_set = set(pos[:, d].tolist())
                    for i in np.unique(np.concatenate([lower, lower + 1])):
                        m = int(i) % (2 * n)
                        idx = {int(i) % n, min(max(int(i), 0), n - 1),
                               2 * n - 1 - m if m >= n else m}
                        assert idx <= axis_set, (dims, size, d, i, idx, axis_set)
                tex = make_textures(dims, size)
                for T in RND_TYPES:
                    assert tex[T].shape == size[::-1] and tex[T].dtype == INFO[T][0]
                assert np.isfinite(tex["f32"].view(np.float32)).all()
                n_modes = len(MODES_N[dims]) if norm else len(MODES_U[3])
                N = coords[0].size
                nf += n_modes * (3 * N + pos.shape[0] * nind)
                if dims == 3:
                    nf += (len(MODES_N[3]) if norm else len(PT_MODES_U)) * N
                print(f"  c{dims}{'n' if norm else 'u'}_{tag(size)}: N {N}, nind {nind}, "
                      f"indicators {pos.shape[0]}")
    print("selfcheck ok: fetches", nf)


def save(data, outdir):
    """Writes what there is so far (a fault in a later section keeps the earlier ones)."""
    path = os.path.join(outdir, "texprobe6.npz")
    np.savez_compressed(path, **data)
    print("saved", path, os.path.getsize(path), "bytes", round(time.time() - t0, 1), flush=True)
    if os.path.getsize(path) > 8 << 20:
        print("WARNING: over 8 MiB", flush=True)


def run(fetch, data, outdir):
    """Fills `data` section by section. `fetch(T, tex, norm, filt, mtag, coords)` returns the
    result bits (uint32 [N]); tex as stored in the npz ([W], [H, W] or [D, H, W]), mtag the
    modes' letters (x first), coords a list of float32 [N] (x first)."""
    for dims in (3, 2, 1):
        for norm in ((True, False) if dims == 3 else (True,)):
            nu = "n" if norm else "u"
            for size in SIZES[dims]:
                st = tag(size)
                coords, part, nind, _, _ = coord_list(dims, size, norm)
                cs = f"c{dims}{nu}_{st}"
                for a, c in zip("uvw", coords):
                    data[f"{cs}_{a}"] = c
                data[f"{cs}_part"] = part
                data[f"{cs}_nind"] = np.int64(nind)
                tex = make_textures(dims, size)
                pos = ind_positions(size)
                for T in RND_TYPES + ("idx",):
                    data[f"tex{dims}_{st}_{T}"] = tex[T]
                data[f"ind{dims}_{st}_pos"] = pos
                ci = [c[:nind] for c in coords]
                for mt in (MODES_N[dims] if norm else MODES_U[3]):
                    key = f"lin{dims}{nu}_{st}_{mt}"
                    for T in RND_TYPES:
                        data[f"{key}_{T}"] = fetch(T, tex[T], norm, "linear", mt, coords)
                    data[f"{key}_ind"] = np.stack(
                        [fetch("f32", ind_tex(size, p), norm, "linear", mt, ci) for p in pos])
                if dims == 3:
                    for mt in (MODES_N[3] if norm else PT_MODES_U):
                        data[f"pt{dims}{nu}_{st}_{mt}_idx"] = fetch("f32", tex["idx"], norm,
                                                                    "point", mt, coords)
                print(f"{cs} done", round(time.time() - t0, 1), flush=True)
            save(data, outdir)


def gpu_main(outdir):
    import cupy as cp
    from cupy.cuda import texture as Tx
    from cupy.cuda import runtime as R

    src = r'''
extern "C" __global__ void f3(cudaTextureObject_t t, const float* xs, const float* ys,
                              const float* zs, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(t, xs[i], ys[i], zs[i]); }
extern "C" __global__ void f2(cudaTextureObject_t t, const float* xs, const float* ys,
                              float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, xs[i], ys[i]); }
extern "C" __global__ void f1(cudaTextureObject_t t, const float* xs, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float>(t, xs[i]); }
'''
    selfcheck()
    mod = cp.RawModule(code=src, options=("-std=c++11",))
    fn = {k: mod.get_function(k) for k in ("f3", "f2", "f1")}
    AM = {"W": R.cudaAddressModeWrap, "M": R.cudaAddressModeMirror,
          "B": R.cudaAddressModeBorder, "C": R.cudaAddressModeClamp}
    keep = []  # arrays and texture objects alive until the end
    dev_coords = {}  # uploaded coordinate arrays, by the host arrays' ids

    def fetch(T, tex, norm, filt, mt, coords):
        dt, ck, bits, rn = INFO[T]
        ch = Tx.ChannelFormatDescriptor(bits, 0, 0, 0, getattr(R, "cudaChannelFormatKind" + ck))
        v = np.ascontiguousarray(tex)
        v = v.view(np.float32) if T == "f32" else v
        dims = v.ndim
        if dims == 3:
            arr = Tx.CUDAarray(ch, v.shape[2], v.shape[1], v.shape[0])
        elif dims == 2:
            arr = Tx.CUDAarray(ch, v.shape[1], v.shape[0])
        else:
            arr = Tx.CUDAarray(ch, v.shape[0], 0, 0)
        arr.copy_from(v)
        res = Tx.ResourceDescriptor(R.cudaResourceTypeArray, cuArr=arr)
        rm = R.cudaReadModeNormalizedFloat if rn else R.cudaReadModeElementType
        fm = R.cudaFilterModeLinear if filt == "linear" else R.cudaFilterModePoint
        am = tuple(AM[c] for c in (mt + mt[0] * 3)[:3])
        td = Tx.TextureDescriptor(am, fm, rm, normalizedCoords=int(norm))
        to = Tx.TextureObject(res, td)
        keep.append((arr, to))
        cs = []
        for c in coords:
            k = (id(c), c.size)
            if k not in dev_coords:
                dev_coords[k] = (c, cp.asarray(c, cp.float32))  # c kept: its id stays unique
            cs.append(dev_coords[k][1])
        n = cs[0].size
        out = cp.empty(n, cp.float32)
        fn["f%d" % dims](((n + 255) // 256,), (256,), (to.ptr, *cs, out, np.int32(n)))
        return cp.asnumpy(out).view(np.uint32)

    data = {"meta_synthetic": np.int64(0)}
    try:
        props = R.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        data["meta_device"] = np.array(name.decode() if isinstance(name, bytes) else str(name))
        data["meta_versions"] = np.array([R.runtimeGetVersion(), R.driverGetVersion()], np.int64)
        data["meta_cupy"] = np.array(cp.__version__)
    except Exception as e:  # metadata only
        print("no metadata:", e, flush=True)
    print("device", data.get("meta_device"), flush=True)
    run(fetch, data, outdir)


def synthetic_main(outdir):
    """Model data in place of the GPU's (fit6.py's rule 'index', 1-D 'index+row': the
    current model), to test fit6.py."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fit6

    def fetch(T, tex, norm, filt, mt, coords):
        modes = tuple(fit6.MODE[c] for c in mt)
        return fit6.model_fetch6(T, tex, norm, filt, modes, coords, "index", row=True)

    data = {"meta_synthetic": np.int64(1), "meta_device": np.array("synthetic (fit6 index)"),
            "meta_versions": np.array([0, 0], np.int64), "meta_cupy": np.array("none")}
    run(fetch, data, outdir)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--selfcheck"]:
        selfcheck()
        if args[1:2] == ["--synthetic"] and len(args) == 3:
            synthetic_main(args[2])
    elif len(args) == 1:
        gpu_main(args[0])
    else:
        sys.exit("usage: texprobe6.py OUTDIR | --selfcheck [--synthetic OUTDIR]")
