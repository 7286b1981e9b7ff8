# Fits candidate rules for linear filtering (and point sampling) under wrap, mirror, border
# and clamp addressing to texprobe6.npz (probe/texprobe6.py: its header documents every
# array). Offline; python3 + numpy (imports fit5.py's mixes, unchanged). Usage:
#     python3 probe/fit6.py [OUT/texprobe6.npz] [--misses N]
# Prints, per section (dims, coordinates normalized or not, texture size, address modes x y z,
# texels), the match rate of each candidate rule, then the best rule's rate per part of the
# coordinate list (sweeps along x, y, z; corners; boundaries; random) and a few of its misses. f32
# texels (random and indicator textures): exact and within 1 ulp (same sign, bits differ by
# <= 1). A synthetic npz (texprobe6.py --selfcheck --synthetic OUT) is made with rule "index"
# (1-D: "index+row") and so matches it 100%: that only proves the plumbing.
#
# What the H200's data says (probe/texprobe6.npz, 2026-11-27, CUDA 13.0 / driver 580): rule
# "index" (1-D: "index+row") matches every one of the 24,414,386 fetches, in every section: 3-D
# under wrap, mirror, border, clamp and the mixes WMB, MBW, BCM (normalized), border and clamp
# (unnormalized), 2-D and 1-D under every mode, f32, u16 and u8 texels and the indicator
# textures (every weight), and point sampling. So each texel index is addressed on its own,
# after the weights are taken from the raw coordinate (the 3-D clamp of texprobe5 aside); the
# rules that bring the coordinate into range first miss mirror's ties and texel boundaries
# ("coord": 78.8-99.9% of the mirror sections; "coord-m1" 88-99.9%).
#
# Every rule keeps what fit5.py's header says is known (21-bit fixed point, normalized: 21
# bits then times the extent; x - 0.5 to 8 fractional bits ties up; 2-D weights exact
# marginals; 3-D weights zxy; f32 mix zxy-planes; integers in 16-bit fixed point). A rule
# says what each address mode does, per axis (U = floor(u 2^21) the normalized coordinate,
# X = U n the texel coordinate in 2^-21 steps; unnormalized: X = floor(x 2^21)):
#   index      the current model (tests/support/tex_model.rs): weights from the raw X, each
#              texel index addressed on its own (wrap: modulo n; mirror: i mod 2n, reflected
#              as 2n - 1 - p; border: outside [0, n) reads the border colour 0; clamp: the
#              index clamped) and, in 3-D only, a clamp-mode coordinate first clamped to
#              [0.5, n - 0.5] texels (texprobe5);
#   coord      the coordinate brought into the texture's range before the weights: wrap
#              U mod 2^21 (the fraction in fixed point); mirror m = U mod 2^22, reflected to
#              2^22 - m where m >= 2^21 (a reflected coordinate rounds its ties down); border
#              X clamped to [-0.5, n + 0.5] texels (invisible with border colour 0: the same
#              as untouched); clamp X clamped to [0.5, n - 0.5] in every dimension; then the
#              indices addressed as in index;
#   coord-m1   coord, but mirror reflected to 2^22 - 1 - m (the reflection of the interval
#              [U, U + 1) in 2^-21 steps rather than of the point U);
#   ffrac      wrap: the fraction u - floor(u) taken in float32 first, then 21 bits (differs
#              from coord only for coordinates with bits below 2^-21, i.e. the random ones);
#              mirror: t = u - 2 floor(u / 2) in float32, 2 - t where t >= 1 (float32);
#              border, clamp as index;
#   border-out index, but a fetch whose coordinate lies outside [0, n) texels on a border axis
#              returns the border colour (0) outright (no mix with the texels inside);
#   index-raw  index without the 3-D clamp-mode coordinate clamp (texprobe5: 84% for clamp).
# 1-D (a 1-D CUDA array) is fitted twice: each rule as written, and "+row": as the current
# model's fetch_1d_array, a 2-D texture of one row read at v = 0 (rows -1 and 0 at weight
# 1/2 each, row -1 addressed with the x axis's mode: under border half the 1-D mix).
# Point sampling: the texel floor(X / 2^21) of the (rule-transformed) coordinate, addressed.
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit5  # noqa: E402

RULES = ("index", "coord", "coord-m1", "ffrac", "border-out", "index-raw")
ONE = 1 << 21


def fixed_u(u):
    """U = floor(u 2^21) (int64) of float32 normalized coordinates (NaN -> 0)."""
    v = np.floor(np.asarray(u, np.float32).astype(np.float64) * 2.0 ** 21)
    return np.nan_to_num(v, nan=0.0).clip(-2.0 ** 40, 2.0 ** 40).astype(np.int64)


def f32_frac(u, mode):
    """ffrac's float32 transform of normalized u: the wrap fraction or the mirror reflection."""
    u = np.asarray(u, np.float32)
    with np.errstate(invalid="ignore"):
        if mode == "wrap":
            return (u - np.floor(u)).astype(np.float32)
        h = np.floor(u * np.float32(0.5)).astype(np.float32)
        t = (u - np.float32(2) * h).astype(np.float32)
        return np.where(t >= np.float32(1), np.float32(2) - t, t).astype(np.float32)


def texel_coord(u, n, norm, mode, rule, dims):
    """The fixed texel coordinate X (int64, 2^-21 steps) that the weights are taken from."""
    if not norm:
        X = np.floor(np.asarray(u, np.float32).astype(np.float64) * 2.0 ** 21)
        X = np.nan_to_num(X, nan=0.0).clip(-2.0 ** 50, 2.0 ** 50).astype(np.int64)
    elif rule == "ffrac" and mode in ("wrap", "mirror"):
        X = fixed_u(f32_frac(u, mode)) * n
    else:
        U = fixed_u(u)
        if rule in ("coord", "coord-m1") and mode == "wrap":
            U = U % ONE
        elif rule in ("coord", "coord-m1") and mode == "mirror":
            m = U % (2 * ONE)
            U = np.where(m >= ONE, 2 * ONE - m - (rule == "coord-m1"), m)
        X = U * n
    if mode == "clamp" and (rule in ("coord", "coord-m1") or (dims == 3 and rule != "index-raw")):
        X = np.clip(X, ONE // 2, n * ONE - ONE // 2)
    if mode == "border" and rule in ("coord", "coord-m1"):
        X = np.clip(X, -ONE // 2, n * ONE + ONE // 2)
    return X


def address(i, n, mode):
    """(index, valid) of texel indices i (int64) on an axis of n texels."""
    if mode == "clamp":
        return np.clip(i, 0, n - 1), np.ones(i.shape, bool)
    if mode == "wrap":
        return i % n, np.ones(i.shape, bool)
    if mode == "mirror":
        p = i % (2 * n)
        return np.where(p >= n, 2 * n - 1 - p, p), np.ones(i.shape, bool)
    ok = (i >= 0) & (i < n)
    return np.clip(i, 0, n - 1), ok


def linear1(T, f, vals):
    """1-D linear mix: fractions f [N], texels vals [N, 2] (as stored)."""
    w = fit5.w1(f)
    if T in ("f32", "f16"):
        live = np.stack([np.ones_like(f, bool), f != 0], 1)
        return fit5.fmix(w, live, fit5.to_f32_bits(T, vals), T, 8)
    return fit5.iout(fit5.imix(w, np.asarray(vals).astype(np.int64), T, 8), T)


def taps6(shape, norm, filt, modes, coords, rule="index", row=False):
    """What a fetch reads from a texture of `shape` (as stored: [W], [H, W] or [D, H, W]) at
    float32 coords (x first) under address modes `modes` (per axis: 'wrap', 'mirror',
    'border', 'clamp') and `rule`: (f, idx, out) with f the fractions (int64 [N, dims], 1/256;
    None for point sampling), idx the flat texel index of each footprint corner (int64
    [N, 2^dims], corner k taking the upper texel of axis d where bit d of k is set; point: [N,
    1]; -1 where it reads the border colour), out where border-out returns the border colour.
    row: a 1-D linear fetch as the current model's fetch_1d_array (one row of a 2-D texture
    read at v = 0, the row axis addressed with x's mode)."""
    dims = len(coords)
    if row and dims == 1 and filt == "linear":
        zero = np.zeros(np.shape(coords[0]), np.float32)
        return taps6((1,) + tuple(shape), norm, filt, (modes[0], modes[0]), (coords[0], zero),
                     rule)
    ext = tuple(shape)[::-1]
    X = [texel_coord(np.ravel(c), n, norm, m, rule, dims) for c, n, m in zip(coords, ext, modes)]
    out = np.zeros(X[0].shape, bool)
    if rule == "border-out":
        for x, n, m in zip(X, ext, modes):
            if m == "border":
                out |= (x < 0) | (x >= n * ONE)
    strides = [int(np.prod(ext[:d])) for d in range(dims)]

    def flat(idx):
        fi, ok = np.zeros(idx[0].shape, np.int64), np.ones(idx[0].shape, bool)
        for i, n, m, s in zip(idx, ext, modes, strides):
            a, v = address(i, n, m)
            fi += a * s
            ok &= v
        return np.where(ok, fi, -1)

    if filt == "point":
        return None, flat([x >> 21 for x in X])[:, None], out
    li = [fit5.linear_index(x) for x in X]
    f = np.stack([x[1] for x in li], 1)
    idx = np.stack([flat([li[d][0] + (k >> d & 1) for d in range(dims)])
                    for k in range(1 << dims)], 1)
    return f, idx, out


def weights6(f):
    """The corner weights (int64 [N, 2^dims], 1/256) of fractions f: 1-D, 2-D, 3-D zxy."""
    if f.shape[1] == 3:
        return fit5.weights3(f, "zxy")[0]
    if f.shape[1] == 2:
        return fit5.w2(f[:, 0], f[:, 1])
    return fit5.w1(f[:, 0])


def model_fetch6(T, tex, norm, filt, modes, coords, rule="index", row=False):
    """Result bits (uint32, coords' shape) of a fetch from tex (as stored) at float32 coords
    (x first) with address modes `modes` under `rule` (see taps6)."""
    shape = np.shape(coords[0])
    f, idx, out = taps6(tex.shape, norm, filt, modes, coords, rule, row)
    vals = np.where(idx >= 0, np.ravel(tex)[np.clip(idx, 0, None)], 0).astype(tex.dtype)
    if filt == "point":
        r = fit5.point_value(T, vals[:, 0])
    elif f.shape[1] == 3:
        r = fit5.trilinear(T, f, vals, "zxy-planes")
    elif f.shape[1] == 2:
        r = fit5.bilinear(T, f, vals)
    else:
        r = linear1(T, f[:, 0], vals)
    return np.where(out, np.uint32(0), r).astype(np.uint32).reshape(shape)


def indicator_fetch6(shape, pos, norm, modes, coords, rule="index", row=False):
    """Linear fetches (uint32 [K, N]) from the K indicator textures (f32 1.0 at pos[k] (x
    first), +0 elsewhere): each the f32 of the weight the footprint gives that texel (exact,
    what model_fetch6 gives for these textures, faster)."""
    f, idx, out = taps6(shape, norm, "linear", modes, coords, rule, row)
    w = weights6(f)
    ext = tuple(shape)[::-1]
    res = []
    for p in pos:
        pf = sum(int(p[d]) * int(np.prod(ext[:d])) for d in range(len(ext)))
        W = np.where(idx == pf, w, 0).sum(1)
        r = (W / np.float32(256)).astype(np.float32).view(np.uint32)
        res.append(np.where(out, np.uint32(0), r))
    return np.array(res, np.uint32)


# ---------------------------------------------------------------- the fit
MODE = {"W": "wrap", "M": "mirror", "B": "border", "C": "clamp"}
PART_NAMES = ("sweep-x", "sweep-y", "sweep-z", "corners", "random", "boundaries")


def ulp1(a, b):
    """Within one ulp: the same sign bit and bits differing by at most 1."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    return ((a >> 31) == (b >> 31)) & (np.abs(a - b) <= 1)


def main():
    args = sys.argv[1:]
    nmiss = 3
    if "--misses" in args:
        i = args.index("--misses")
        nmiss = int(args[i + 1])
        del args[i:i + 2]
    path = args[0] if args else "probe/texprobe6.npz"
    D = np.load(path)
    print("data:", D["meta_device"], "CUDA/driver", D["meta_versions"], "CuPy", D["meta_cupy"],
          "synthetic" if int(D["meta_synthetic"]) else "")
    totals = {}
    pat = re.compile(r"^(lin|pt)(\d)([nu])_(s[0-9x]+)_([WMBC]+)_(\w+)$")
    for key in sorted(D.files, key=lambda k: (k[:2] != "li", k)):
        m = pat.match(key)
        if not m:
            continue
        kind, dims, nu, size, mtag, T = m.groups()
        dims, norm = int(dims), nu == "n"
        cs = f"c{dims}{nu}_{size}"
        coords = [D[f"{cs}_{a}"] for a in "uvw"[:dims]]
        part = D[f"{cs}_part"]
        modes = tuple(MODE[c] for c in mtag)
        out = D[key]
        filt = "point" if kind == "pt" else "linear"
        if T == "ind":
            nind = int(D[f"{cs}_nind"])
            coords = [c[:nind] for c in coords]
            part = part[:nind]
            pos = D[f"ind{dims}_{size}_pos"]
            shape = D[f"tex{dims}_{size}_f32"].shape
            Tm = "f32"
        else:
            Tm = "f32" if T in ("f32", "idx") else T
            texs = [D[f"tex{dims}_{size}_{T}"]]
            shape = texs[0].shape
        variants = [(r, False) for r in RULES]
        if dims == 1 and filt == "linear":
            variants += [(r, True) for r in RULES]
        res = {}
        for r, row in variants:
            if T == "ind":
                got = indicator_fetch6(shape, pos, norm, modes, coords, r, row)
            else:
                got = model_fetch6(Tm, texs[0], norm, filt, modes, coords, r, row)[None]
            res[(r, row)] = (got, got == out.reshape(got.shape))
        name = lambda v: v[0] + ("+row" if v[1] else "")
        order = sorted(variants, key=lambda v: -res[v][1].sum())
        flt = Tm == "f32" and filt == "linear"
        head = f"{kind}{dims}{nu} {size} {mtag:3s} {T:4s} n={out.size:7d}:"
        parts = []
        for v in order:
            got, ok = res[v]
            s = f"{name(v)} {100 * ok.mean():.3f}%"
            if flt:
                s += f" (1ulp {100 * ulp1(got, out.reshape(got.shape)).mean():.3f}%)"
            parts.append(s)
            totals.setdefault(name(v), [0, 0])
            totals[name(v)][0] += int(ok.sum())
            totals[name(v)][1] += ok.size
        print(head, ", ".join(parts), flush=True)
        b = order[0]
        got, ok = res[b]
        okp = ok.reshape(-1, part.size)
        if not ok.all():
            print("    best by part: " + ", ".join(
                f"{PART_NAMES[k]} "
                f"{100 * okp[:, part == k].mean():.2f}%" for k in np.unique(part)))
            for ti, j in np.argwhere(~okp)[:nmiss]:
                c = [float(cc[j]) for cc in coords]
                X = [int(texel_coord(np.array([cc[j]]), n, norm, mo, "index", dims)[0])
                     for cc, n, mo in zip(coords, shape[::-1], modes)]
                extra = f" indicator at {pos[ti].tolist()}" if T == "ind" else ""
                print(f"    miss: coords {c} texel x*512 {[x / 4096 for x in X]}{extra} gpu "
                      f"{int(out.reshape(got.shape)[ti, j]):#010x} {name(b)} {int(got[ti, j]):#010x}")
    print("totals over every section:")
    for k, (a, n) in sorted(totals.items(), key=lambda kv: -kv[1][0] / max(kv[1][1], 1)):
        print(f"  {k:16s} {a:9d}/{n:<9d} = {100 * a / max(n, 1):8.4f}%")


if __name__ == "__main__":
    main()
