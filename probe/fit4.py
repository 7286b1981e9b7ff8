# Fits the texture unit's filtering to the second probe, texprobe4.npz (texprobe4.py on an H200,
# driver 580.159.04): normalized-read 8/16-bit integer texels, f16 texels, f32 tiny/subnormal
# and NaN/inf texels, normalized point-sampling thresholds for large N, layered reads at any
# layer index, and tex2Dgather/tex2D/tex2DLod of 4-channel textures. Offline; python3 + numpy.
# Usage: python3 probe/fit4.py [probe/texprobe4.npz] [--quick]  (about 3 minutes; --quick
# checks every 7th row of the big arrays). Prints the match rate of each rule per section.
#
# What the data says (rates printed by this script; fit.py's rules for f32 stay as they were):
# (a) Normalized-read integers are filtered in 16-bit fixed point, not in f32: each texel is
#     widened to 16 bits (u8: v * 257, i.e. bit replication; u16 and i16: as is), summed with
#     its 1/256 weights exactly, and the sum rounded to 16 bits, ties up: J = floor((S + 128) /
#     256); the result is f32(J / 65535) (unsigned) or max(f32(J / 32767), -1) (signed): u8, u16,
#     i16 match 100%. i8 is a function of the raw sum I = sum w v (I in 1/256 of a texel step;
#     no conflicts over 51,325 distinct sums): J = floor((129 I + 16 floor(I / 4096) + 64) / 128),
#     i.e. round(I + I / 128 + floor(I / 4096) / 8), then max(f32(J / 32767), -1): 100% of the
#     1-D and 2-D i8 fetches (found in session 14 by a search over floor((I (2^u + 2^(u-7)) +
#     B floor(I / 2^t) + c) / 2^u), after the error of round(I * 32767 / 32512), the closest
#     rule before (94.8%), showed a sawtooth of period 4096 in I, 0 to -1/8). Rejected before
#     that (none exact): widening tables (258 v + (v >> 6), with
#     the -64 exception the weight-256 reads show) with any constant rounding offset; lerps
#     V0 + round(a (V1 - V0)); floor((I K + c) / 2^s) for any K near 32767/32512 * 2^s,
#     s = 7..25, any c; I / 32512 in fixed point (14..25 bits, floor/trunc/nearest, or by a
#     truncated reciprocal) then round(x 32767); I / 32512 rounded to a 12..21-bit float;
#     the f32 or f16 mix of f32(v / 127) then round(x 32767); (session 14) the table
#     round(v 32767 / 127) (v = -128 -> -32767 or -32768) filtered in 16-bit fixed point,
#     rounded half up, half down, half away, half even, or truncated (77% 1-D, 68% 2-D);
#     258 v + trunc(v / 64) likewise (79%, 84%). Point reads are
#     exactly f32(v / 255), f32(v / 127) clamped to -1, and so on (conversion tables 100%).
#     f16 texels are mixed like f32 ones but at f16 precision: aligned to the largest texel's
#     exponent E and truncated to 2^(E-14), summed exactly, rounded to f16 ties away from zero
#     (f16 subnormals kept); every f16 result is an f16.
# (b) f32: subnormal texels are flushed to zero (keeping their sign) in the mix, and a subnormal
#     result is flushed to zero with the exact sum's sign; a zero result whose texels (of
#     nonzero weight) are all -0 is -0. Point reads keep subnormals. A NaN or an infinity of
#     weight zero does not count; any NaN of nonzero weight, or infinities of both signs, give
#     the NaN 0x7fffffff; otherwise an infinity wins. f16 alike (NaN 0x7fffffff).
# (c), (d), (e): see the sections below.
import math
import sys
from collections import Counter
from fractions import Fraction as Fr

import numpy as np

PATH = next((a for a in sys.argv[1:] if not a.startswith("--")), "probe/texprobe4.npz")
QUICK = "--quick" in sys.argv
D = np.load(PATH)
NAN_OUT = 0x7FFFFFFF
print("data:", D["meta_device"], "CUDA/driver", D["meta_versions"], "CuPy", D["meta_cupy"])


def report(name, ok, n):
    print(f"  {name:70s} {ok:8d}/{n} = {100 * ok / max(n, 1):7.3f}%")
    return ok == n


# ---- exact arithmetic helpers -----------------------------------------------------------
def expo(x):
    """floor(log2 |x|) of a nonzero Fraction."""
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fr(2) ** e > a:
        e -= 1
    if Fr(2) ** (e + 1) <= a:
        e += 1
    return e


def trunc_to(x, g):
    """x truncated toward zero to a multiple of 2^g."""
    q = math.floor(abs(x) / Fr(2) ** g)
    return (1 if x > 0 else -1) * q * Fr(2) ** g


def round_away(x, mant, emin):
    """x rounded, ties away from zero, to a float grid of `mant` significand bits whose
    smallest normal exponent is emin (below it the grid is 2^(emin - mant + 1))."""
    if x == 0:
        return x
    e = max(expo(x), emin)
    q = abs(x) / Fr(2) ** (e - mant + 1)
    n = math.floor(q + Fr(1, 2))
    return (1 if x > 0 else -1) * n * Fr(2) ** (e - mant + 1)


def f32_of(bits):
    return float(np.uint32(bits).view(np.float32))


def f16_of(bits):
    return float(np.uint16(bits).view(np.float16))


def bits_of_f32(x):
    return int(np.float32(x).view(np.uint32))


# ---- the models ----------------------------------------------------------------------------
FMT = {  # significand bits, smallest normal exponent, bits kept below the leading one, FTZ
    "f32": (24, -126, 27, True),
    "f16": (11, -14, 14, False),
}


def float_mix(ws, bits, fmt, live=None):
    """The filtered value (f32 bits) of texels `bits` (f32 or f16 bit patterns) with weights
    `ws` (1/256 steps, summing to 256). `live`: which texels take part (default: those of
    nonzero weight; in 2-D a corner takes part where its x and y fractions are nonzero, even
    when its rounded weight is 0)."""
    mant, emin, keep, ftz = FMT[fmt]
    dec = f32_of if fmt == "f32" else f16_of
    sbit = 31 if fmt == "f32" else 15
    nan_out = NAN_OUT if fmt == "f32" else 0x7FFFE000
    if live is None:
        live = [w != 0 for w in ws]
    vals = [(w, dec(b), (b >> sbit) & 1) for w, b, l in zip(ws, bits, live) if l]
    if any(math.isnan(v) for _, v, _ in vals):
        return nan_out
    pinf = any(v == math.inf for _, v, _ in vals)
    ninf = any(v == -math.inf for _, v, _ in vals)
    if pinf and ninf:
        return nan_out
    if pinf or ninf:
        return 0x7F800000 if pinf else 0xFF800000
    xs = []
    for w, v, s in vals:
        x = Fr(v)
        if ftz and x != 0 and abs(x) < Fr(2) ** emin:
            x = Fr(0)
        xs.append((w, x, s))
    nz = [(w, x) for w, x, _ in xs if x != 0 and w != 0]
    if not nz:
        # -0 only if every texel taking part is a -0 (or a flushed negative subnormal); a
        # nonzero texel of weight 0 (2-D) counts as +0.
        return 0x80000000 if all(s and x == 0 for _, x, s in xs) else 0
    top = max(expo(x) for _, x in nz)
    exact = sum(w * trunc_to(x, top - keep) for w, x in nz) / 256
    r = round_away(exact, mant, emin)
    if ftz and abs(r) < Fr(2) ** emin:
        r = Fr(0)
    if r == 0:
        return 0x80000000 if exact < 0 else 0
    return bits_of_f32(float(r))


WIDEN = {"u8": (lambda v: 257 * v, 65535), "u16": (lambda v: v, 65535),
         "i16": (lambda v: v, 32767), "i8": (lambda v: 258 * v + (v >> 6), 32767)}


def int_mix(ws, vals, T):
    """Normalized-read integer texels: widened to 16 bits, summed, rounded to 16 bits (ties
    up), then converted like a 16-bit texel."""
    if T == "i8":  # J = floor((129 I + 16 floor(I / 4096) + 64) / 128) of the raw sum I
        i = sum(w * v for w, v in zip(ws, vals))
        j = (129 * i + 16 * (i >> 12) + 64) >> 7
        return bits_of_f32(max(np.float32(j) / np.float32(32767), np.float32(-1)))
    widen, full = WIDEN[T]
    s = sum(w * widen(v) for w, v in zip(ws, vals))
    j = (s + 128) >> 8
    return bits_of_f32(max(np.float32(j / full), np.float32(-1)))


def weights2(a, b):
    """fit.py's 2-D weights (w00, w10, w01, w11) in 1/256 steps."""
    w11 = (a * b + 128) >> 8
    return [256 - a - b + w11, a - w11, b - w11, w11]


def live2(a, b):
    """Which corners take part in a 2-D fetch: those whose x and y fractions are nonzero."""
    return [True, a != 0, b != 0, a != 0 and b != 0]


def texel_model(T):
    if T in ("f32", "f16"):
        return lambda ws, vs: float_mix(ws, vs, T)
    return lambda ws, vs: int_mix(ws, vs, T)


def pair_rows(tex, P):
    """(weights, texel indices) of the pairs layout's fetches, row-major [p, m]."""
    n = tex.shape[0]
    for p in range(P):
        for m in range(513):
            if m == 512:  # texel 2p+1 weight 1, texel 2p+2 (clamped) weight 0
                yield p, m, (256, 0), (2 * p + 1, min(2 * p + 2, n - 1))
            else:
                a = (m + 1) // 2  # odd m: a tie, rounded up
                yield p, m, (256 - a, a), (2 * p, 2 * p + 1)


def block_rows(shape, nblk):
    """(weights, texel coordinates) of the blocks layout's fetches, [n, j]."""
    H, W = shape
    wa, wb = D["w2_a"], D["w2_b"]
    for n in range(nblk):
        r, q = divmod(n, 8)
        for j in range(wa.size):
            A, B = int(wa[j]), int(wb[j])
            x0, a = 2 * q + A // 256, A % 256
            y0, b = 2 * r + B // 256, B % 256
            xs = (x0, min(x0 + 1, W - 1))
            ys = (y0, min(y0 + 1, H - 1))
            yield n, j, (weights2(a, b), live2(a, b)), [(xs[0], ys[0]), (xs[1], ys[0]), (xs[0], ys[1]),
                                         (xs[1], ys[1])]


def stride():
    return 7 if QUICK else 1


# ---- (a) normalized-read integers and f16 --------------------------------------------------
print("(a) conversion tables (point reads of every value)")
for T, full in (("u8", 255), ("i8", 127), ("u16", 65535), ("i16", 32767)):
    v = D[f"a_conv_{T}_in"].astype(np.int64)
    want = np.maximum((v / full).astype(np.float32), np.float32(-1)).view(np.uint32)
    report(f"{T}: f32(v / {full}), clamped to -1", int((want == D[f"a_conv_{T}_out"]).sum()),
           v.size)
v = D["a_conv_f16_in"]
want = v.view(np.float16).astype(np.float32).view(np.uint32)
report("f16: the f16 value as f32 (NaN payloads kept)", int((want == D["a_conv_f16_out"]).sum()),
       v.size)


def texel_bits(T, t):
    """Texel values as the models take them: integers, or bit patterns for floats."""
    return [int(x) for x in (t.astype(np.int64) if T not in ("f16", "f32") else t)]


print("(a1) 1-D pairs at all 257 weights and the ties between")
for T in ("u8", "i8", "u16", "i16", "f16"):
    tex = D[f"a1_{T}_tex"]
    out = D[f"a1_{T}_out"]
    vals = texel_bits(T, tex)
    f = texel_model(T)
    ok = n = 0
    for p, m, ws, ix in pair_rows(tex, out.shape[0]):
        if (p * 513 + m) % stride():
            continue
        n += 1
        ok += f(ws, [vals[i] for i in ix]) == int(out[p, m])
    rule = {"i8": "(129 I + 16 (I >> 12) + 64) >> 7", "f16": "f16 mix, 2^(E-14), RA"}.get(
        T, "16-bit fixed point, ties up")
    report(f"{T}: {rule}", ok, n)
for T, C in (("u8", 2), ("u8", 4), ("i16", 2), ("i16", 4)):
    tex = D[f"a1_{T}x{C}_tex"]
    out = D[f"a1_{T}x{C}_out"]
    f = texel_model(T)
    ok = n = 0
    for p, m, ws, ix in pair_rows(tex, out.shape[0]):
        for c in range(C):
            n += 1
            ok += f(ws, [int(tex[i, c]) for i in ix]) == int(out[p, m, c])
    report(f"{T}x{C}: each channel as one", ok, n)

print("(a2) 2-D blocks at the weight list W2 (fit.py's 2-D weights)")
for T in ("u8", "i8", "u16", "i16", "f16", "u8x4"):
    tex = D[f"a2_{T}_tex"]
    out = D[f"a2_{T}_out"]
    base = T[:-2] if T.endswith("x4") else T
    f = texel_model(base)
    C = 4 if T.endswith("x4") else 1
    ok = n = 0
    for blk, j, (ws, _), xy in block_rows(tex.shape[:2], out.shape[0]):
        if (blk * 1445 + j) % stride():
            continue
        for c in range(C):
            vs = [int(tex[y, x, c]) if C > 1 else int(tex[y, x]) for x, y in xy]
            got = int(out[blk, j, c]) if C > 1 else int(out[blk, j])
            n += 1
            ok += f(ws, vs) == got
    report(f"{T}", ok, n)


# ---- (b) f32 tiny/subnormal mixes, NaN/inf texels ---------------------------------------
print("(b) f32 subnormals (flushed in and out of the mix), NaN/inf at weight 0 and above")
pt = D["b1_tiny_point"]
report("b1_tiny_point: point reads keep subnormal texels", int((pt == D["b1_tiny_tex"]).sum()),
       pt.size)
for name, T in (("b1_tiny", "f32"), ("b1_spec", "f32"), ("b1_f16spec", "f16")):
    tex = D[f"{name}_tex"]
    out = D[f"{name}_out"]
    vals = [int(x) for x in tex]
    ok = n = 0
    zero_w_special = Counter()
    for p, m, ws, ix in pair_rows(tex, out.shape[0]):
        n += 1
        got = int(out[p, m])
        ok += float_mix(ws, [vals[i] for i in ix], T) == got
    report(f"{name}: {T} mix, subnormals flushed, NaN canonical, weight-0 texels ignored",
           ok, n)
for name in ("b2_tiny", "b2_spec"):
    tex = D[f"{name}_tex"]
    out = D[f"{name}_out"]
    ok = n = 0
    bad = []
    for blk, j, (ws, live), xy in block_rows(tex.shape, out.shape[0]):
        n += 1
        vs = [int(tex[y, x]) for x, y in xy]
        want = float_mix(ws, vs, "f32", live)
        got = int(out[blk, j])
        ok += want == got
        if want != got and len(bad) < 4:
            bad.append((blk, j, ws, [hex(v) for v in vs], hex(got), hex(want)))
    report(f"{name}: 2-D, the same mix", ok, n)
    for b in bad:
        print("     miss:", b)


# ---- (c) normalized point-sampling thresholds -----------------------------------------
print("(c) normalized point sampling: smallest u reading texel >= k, every k, per N")


def coord_frac_bits(n):
    """Fractional bits a normalized coordinate keeps (floored) before it is scaled by the
    extent n: 21 measured for n <= 4097, 22 for n >= 32767; the switch in between is not
    measured (the simulator takes n > 16384)."""
    return 22 if n > 16384 else 21


for N in D["c_Ns"]:
    N = int(N)
    thr = D[f"c_{N}_thr"].astype(np.int64)
    good = D[f"c_{N}_flags"] == 3
    assert (D[f"c_{N}_viol"][good] == 0).all(), "a non-monotonic threshold"
    k = np.arange(1, N, dtype=np.int64)
    res = {}
    for F in (20, 21, 22, 23):
        m = -(-(k << F) // N)  # the smallest U with floor(U N / 2^F) >= k
        res[F] = (m / 2.0**F).astype(np.float32).view(np.uint32).astype(np.int64)
    F = coord_frac_bits(N)
    report(f"N = {N}: u floored to {F} bits, times N; (20..23 bits: "
           + ", ".join(f"{int((res[f] == thr)[good].sum())}" for f in (20, 21, 22, 23)) + ")",
           int((res[F] == thr)[good].sum()), int(good.sum()))

# ---- (d) layered reads --------------------------------------------------------------------
print("(d) layered 2-D reads at layer indices -2^31..2^31-1 under 12 sampling states")
L = D["d_layers"].astype(np.int64)
eff = np.minimum(L & 0xFFFFFFFF, D["d_tex"].shape[0] - 1)
want = D["d_tex"][eff].reshape(L.size, -1).view(np.uint32)
report("layer = min(index as u32, layers - 1) (negative ones read the last layer)",
       int((D["d_out"] == want[None]).sum()), D["d_out"].size)

# ---- (e) gather, tex2D, tex2DLod ----------------------------------------------------------
print("(e) tex2Dgather / tex2D / tex2DLod(0) of u8x4, u16x4, f32x4, f32x1 (6 x 4)")


def linear_index(X, F):
    x8 = (X - (1 << (F - 1)) + (1 << (F - 9))) >> (F - 8)
    return x8 >> 8, x8 & 255


W, H = 6, 4
for Fm in ("u8x4", "u16x4", "f32x4", "f32x1"):
    tex = D[f"e_{Fm}_tex"]
    out = D[f"e_{Fm}_out"]
    C = tex.shape[2]
    T = Fm.split("x")[0]
    okg = okl = ng = nl = 0
    for mi, (addr, filt, norm) in enumerate(D["e_modes"]):
        for k in range(D["e_x"].size):
            x, y = np.float32(D["e_x"][k]), np.float32(D["e_y"][k])
            if norm:
                x, y = x / np.float32(W), y / np.float32(H)
            X = math.floor(Fr(float(x)) * 2**21) * (W if norm else 1)
            Y = math.floor(Fr(float(y)) * 2**21) * (H if norm else 1)
            i0, a = linear_index(X, 21)
            j0, b = linear_index(Y, 21)

            def tx(i, j, c):
                if c >= C or (addr == 3 and not (0 <= i < W and 0 <= j < H)):
                    return None  # a missing channel or a border texel reads 0
                return int(tex[min(max(j, 0), H - 1), min(max(i, 0), W - 1), c])

            def conv(v):
                if v is None:
                    return 0
                return v if T == "f32" else int_mix([256], [v], T)

            corners = [(i0, j0), (i0 + 1, j0), (i0, j0 + 1), (i0 + 1, j0 + 1)]
            o = out[mi, k]
            for comp in range(4):  # gather: (x0 y1, x1 y1, x1 y0, x0 y0), linear footprint
                g = [conv(tx(*corners[q], comp)) for q in (2, 3, 1, 0)]
                ng += 4
                okg += sum(int(a_) == b_ for a_, b_ in zip(o[4 * comp:4 * comp + 4], g))
            for off in (16, 20):  # tex2D, tex2DLod(0)
                for c in range(4):
                    nl += 1
                    if c >= C:
                        want = 0
                    elif filt == 1:
                        vs = [tx(i, j, c) for i, j in corners]
                        vs = [0 if v is None else v for v in vs]
                        ws = weights2(a, b)
                        want = (float_mix(ws, vs, "f32", live2(a, b)) if T == "f32"
                                else int_mix(ws, vs, T))
                    else:
                        want = conv(tx(X >> 21, Y >> 21, c))
                    okl += want == int(o[off + c])
    report(f"{Fm}: gather = (x0y1, x1y1, x1y0, x0y0) of the linear footprint", okg, ng)
    report(f"{Fm}: tex2D and tex2DLod(0) by the rules above (missing channels 0)", okl, nl)
