# Fits candidate rules for the texture unit's 3-D (trilinear) filtering to texprobe5.npz
# (probe/texprobe5.py: its header documents every array). Offline; python3 + numpy, vectorized
# (about a minute). Usage:
#     python3 probe/fit5.py [probe/texprobe5.npz]
# Prints, per section and element type, the match rate of each candidate rule (and per part
# of the weight list w3), then a few misses of the best one. A synthetic npz
# (texprobe5.py --selfcheck --synthetic OUT) is made with rule "zxy-planes" and so matches it
# 100%: that only proves the plumbing.
#
# What the H200's data says (texprobe5.npz, CUDA 13.0 / driver 580; rates printed by this
# script): the 3-D weights are rule zxy's (every weight the indicator blocks read off, 6,656
# triples); integer texels (u8, u16, i16, i8 with fit4.py's i8 rule) match zxy 100%
# (880,896 fetches); the 2-D sections confirm the 2-D rule (100%, every format), point
# sampling reads the texel (100%). Float texels (v3, 440,448 fetches per format):
#   zxy-planes (each z plane on its own truncation grid, the two sums added exactly): f32
#     99.895% (463 misses), f16 99.931% (305); one sum over the 8 texels: 94.4%, 95.1%.
#     Its misses: every one has texels of nonzero weight in both z planes and the planes'
#     largest exponents E0 != E1 (never where E0 = E1, 137,598 f32 fetches); every one has the
#     GPU's result BELOW the model's (toward -inf: 354 of 463 f32, 242 of 305 f16 larger in
#     magnitude, the rest smaller), mostly 1 ulp (f32 355 of 463), more in the near-cancelling
#     blocks 40-47 (up to 12,288 ulp of a tiny result: there the GPU's total is pinned exactly,
#     e.g. block 40, w3 (256, 256, 8m): GPU = model - (w0 mod 4) units of 2^(E0-35), i.e. the
#     finer plane's sum floored to 2^(E1-37)); elsewhere the exact total typically lies a few
#     units of the finer plane's grid on the model's side of a rounding tie. So the finer
#     plane's sum loses its low bits by a floor (two's complement), not a truncation toward
#     zero, and not a rounding.
#   zxy-planes-floor (the best found): zxy-planes, but the finer plane's sum floored to the
#     coarser plane's grid less k bits, k = 2 (finer plane z0) or 0 (finer plane z1) for f32,
#     k = 1, 1 for f16: f32 99.965% (152 misses), f16 99.967% (146); (s) f32 99.990% (8 of
#     79,424; zxy-planes 3), f16 100%; (n) 46,648 / 46,656 (zxy-planes 46,639) and 4,094 /
#     4,096 (zxy-planes 4,095). Its misses go both ways (f32: 56 below, 96 above; mostly 1
#     ulp), by block: f32 finer-z0 misses want k <= 0..1 (blocks 27, 28, 30, 41, 53), finer-z1
#     misses want k >= 1..2 (blocks 17, 31, 51, 46, 29); f16 mostly block 45 (87). No single
#     k per plane order fits: some fetches need k <= 0 and others k >= 2 with the same plane
#     order (f32 and f16), and (f32) the same signs of both sums and the same exponent gap.
#     But one k per BLOCK (the same k whichever plane is finer) fits all but 6 f32 and 10 f16
#     fetches (k in 0..3): k is a property of the block's texels, not of the plane order or
#     the weights. f32 k = 0: blocks 18, 19, 22, 24, 26, 27, 45, 53; k = 1: 41, 51 (29, 31,
#     44, 61: 1 or more); k = 2: 40, 46 (16, 17, 43, 47: 2 or more); no k: 20, 23, 28, 30
#     (1, 2, 2, 1 misses at best). What sets k was not found (not: the corner or sign of
#     either plane's largest texel, the exponent gap, the signs of the sums; single-texel
#     planes, w3 (0, 0, z): block 41 needs the cut at 2^-30 or above, block 40 at 2^-30 or
#     below, E_coarse 6 and 7, same weights).
#   Tried and worse (f32, misses of 440,448; these only move the finer plane's low bits):
#     the cut relative to the coarser grid, same k for both orders: k = 0..5 -> 386, 356, 267,
#     385, 438, 448 (floor), 771, 602, 433, 489, 515, 518 (toward zero), >= 520 (nearest), >= 535
#     (up); (k0, k1) per plane order: (2, 0) 152, (2, 1) 213, (2, 2) 267, (3, 0) 239;
#     floored to K bits below: the larger plane sum's lead, either plane's own lead, the
#     largest weighted product's lead, texel exponent + weight lead, E + lead(Z weight), the
#     lead of the sum of |products| (each as one cut for both planes or per plane, K 26..44:
#     best 351..446); each weighted product (not the sum) floored (best 360); the finer
#     plane's texels re-cut to E_max - K (texel level: best 502; no K fits all fetches);
#     the cut = max/min(coarser grid - k, a lead - K) (no gain); texels floored instead of
#     truncated (>= 5,146); finer plane kept to more bits (>= 2,650); each plane's sum rounded
#     to N bits (own lead or larger lead, floor/trunc/nearest, N 24..43: >= 446); the whole
#     total floored to E_max - K or lead - K before the final rounding (best 267); E taken
#     over live or all texels for the cut (>= 2,233). Earlier (before this round): kept bits
#     24..40 per plane or over all 8; each plane's sum rounded to 24..60 bits, ties away, to
#     even, or truncated, before the two are added; x or y planes, pairs along x, y or z.
# Clamp addressing clamps a 3-D coordinate to [0.5, n - 0.5] texels before the weights are
# taken (the random normalized coordinates in [-0.1, 1.1]: 84.4% without, 4095 of 4096 with;
# in 1-D and 2-D, whose weights have exact marginals, clamping the texel indices gives the
# same results).
#
# What is known from 1-D and 2-D (fit.py, fit4.py, an H200), which every candidate keeps:
# coordinates floored to 21 fractional bits (normalized: 21 bits, then times the extent);
# x - 0.5 rounded to 8 fractional bits, ties up: the lower texel and the upper one's weight a
# in 1/256; 2-D weights w11 = round_half_up(a b / 256), the others by difference; the f32 mix
# aligns the texels of nonzero weight to the largest one's exponent E, truncates them toward
# zero to 2^(E-27) (f16 texels: 2^(E-14)), sums them with their weights exactly, rounds ties
# away from zero to f32 (f16), flushes f32 subnormal texels and results; a NaN taking part
# (2-D: a corner whose fractions are nonzero, even at rounded weight 0) gives 0x7fffffff (f16
# texels 0x7fffe000), infinities likewise; normalized-read integers mix in 16-bit fixed point
# (u8 widened by 257, J = round_half_up(sum / 256), f32(J / 65535) or max(f32(J / 32767), -1));
# i8: J = floor((129 I + 16 floor(I / 4096) + 64) / 128) of the raw sum I = sum w v (fit4.py).
#
# The 3-D candidates (RULES):
#   zxy      (found from the indicator blocks: every weight of the H200's data) a tree of
#            splits, each rounded half up: z exactly (Z1 = c, Z0 = 256 - c), then x in each z
#            plane (X1 = round(Z a), X0 = Z - X1), then y in each column with the diagonal
#            corner rounded (column X1: w(y1) = round(X1 b); column X0: w(y0) = round(X0 (256 -
#            b)); the other corner the rest); one sum of 8 products, rounded once. In 2-D
#            (Z = 256) it is the 2-D rule;
#   zxy-planes  zxy's weights, each z plane's texels aligned and truncated on that plane's own
#            grid (2^(E_plane - 27)), the two sums added exactly and rounded once (integers:
#            zxy): integers 100%, f32 and f16 99.9%;
#   zxy-planes-floor  zxy-planes, except where both planes count texels and E0 != E1: the
#            finer plane's exact sum (units 2^(E_fine - 35)) floored (toward -inf) to a
#            multiple of 2^(E_coarse - 35 - k), k = FLOOR_K[T][z] (z: the finer plane), the
#            coarser plane untouched; then as zxy-planes. The best fit (99.97%, misses above);
#   split-z  the 2-D weights of (a, b), each split by c as round_half_up(w c / 256) and the
#            rest; one sum of 8 products, rounded once (the simulator's rule before);
#   split-x, split-y  the same with the 2-D weights of (b, c) split by a, of (a, c) split by b;
#   w2xc     the 2-D weights of (a, b) times (256 - c) and c exactly (1/65536 steps), one sum;
#   prod     (256 - a or a)(256 - b or b)(256 - c or c) exactly (1/2^24 steps), one sum;
#   prod-r   each corner's product rounded on its own, round_half_up(p / 2^16) (1/256 steps;
#            the weights need not sum to 256);
#   w2c-r    each 2-D weight of (a, b) times 256 - c or c rounded on its own (ditto);
#   lerp-z   the 2-D result (rounded as the format's 2-D rule) of each z plane, then the 1-D
#            mix of the two with weights 256 - c, c (integers: the 16-bit J of each plane,
#            lerped and rounded to 16 bits again);
#   lerp-x, lerp-y  the same with the planes across x, across y;
#   lerp-z-exact  each z plane's exact 2-D sum (its texels truncated to its own 2^(E-27)), the
#            two lerped by c exactly and rounded once (integers: w2xc);
#   sep      1-D mixes along x, then y, then z, each rounded.
# A corner takes part in a one-sum mix where each of its upper fractions is nonzero (the 2-D
# rule); "split-z/w" instead: where its weight is nonzero.
import math
import os
import sys

import numpy as np

RULES = ("zxy-planes-floor", "zxy-planes", "zxy", "split-z", "split-x", "split-y", "w2xc", "prod",
         "prod-r", "w2c-r", "lerp-z", "lerp-x", "lerp-y", "lerp-z-exact", "sep", "split-z/w")
ONE_SUM = ("zxy", "split-z", "split-x", "split-y", "w2xc", "prod", "prod-r", "w2c-r")
FMT = {"f32": (24, -126, 27, True), "f16": (11, -14, 14, False)}  # mant, emin, kept, ftz
NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFFE000}
# zxy-planes-floor: guard bits kept below the coarser plane's grid when the finer plane's sum is
# floored onto it, (finer plane is z0, finer plane is z1), by texel format (fitted, see header)
FLOOR_K = {"f32": (2, 0), "f16": (1, 1)}


# ---------------------------------------------------------------- coordinates and texels
def fixed(x, norm, extent):
    """float32 coordinates -> int64 fixed point with 21 fractional bits (normalized: 21
    bits (22 over 16384 texels), then times the extent; NaN -> 0)."""
    bits = 22 if norm and extent > 16384 else 21
    v = np.floor(np.asarray(x, np.float64) * 2.0 ** bits)
    v = np.nan_to_num(v, nan=0.0, posinf=2.0 ** 50, neginf=-(2.0 ** 50)).clip(-2.0 ** 50, 2.0 ** 50)
    v = v.astype(np.int64)
    if norm:
        v = v * extent
    return v >> (bits - 21)  # (22 bits: the floor keeps every rounding below the same)


def linear_index(X):
    """Lower texel and upper weight (1/256) of fixed coordinates X (21 fractional bits)."""
    x8 = (X - (1 << 20) + (1 << 12)) >> 13
    return x8 >> 8, x8 & 255


def to_f32_bits(T, v):
    """Texel values (as stored) of a float type -> f32 bits (int64)."""
    if T == "f32":
        return np.asarray(v).astype(np.uint32).astype(np.int64)
    return np.asarray(v).astype(np.uint16).view(np.float16).astype(np.float32).view(
        np.uint32).astype(np.int64)


def point_value(T, v):
    """A point read's result bits of texel values v."""
    if T in ("f32", "f16"):
        return to_f32_bits(T, v).astype(np.uint32)
    full = {"u8": 255, "i8": 127, "u16": 65535, "i16": 32767}[T]
    r = np.asarray(v).astype(np.float32) / np.float32(full)
    return np.maximum(r, np.float32(-1)).view(np.uint32)


def gather(tex, idx):
    """Texel values at per-axis indices idx (list of int64 arrays, x first), clamped."""
    ext = tex.shape[::-1]
    ii = [np.clip(i, 0, n - 1) for i, n in zip(idx, ext)]
    return tex[tuple(ii[::-1])]


# ---------------------------------------------------------------- the mixes
def bitlen(a):
    """Bit length of nonnegative int64s."""
    a = np.asarray(a, np.int64)
    b = np.where(a > 0, np.floor(np.log2(np.maximum(a, 1).astype(np.float64))).astype(np.int64) + 1, 0)
    b = np.where((b > 0) & ((np.int64(1) << np.clip(b - 1, 0, 62)) > a), b - 1, b)
    b = np.where((b < 63) & ((np.int64(1) << np.clip(b, 0, 62)) <= a) & (a > 0), b + 1, b)
    return b


def fsum(w, live, bits, fmt):
    """The float mix's exact sum: texels `bits` (f32 bits, int64 [N, K]) of weights w (int64
    [N, K]) where `live`, aligned to the largest counted one's exponent E and truncated to
    2^(E - kept): returns (s, grid, flags) with the sum s * 2^grid (times the weights' scale)
    and flags (anynan, pinf, ninf, none counted, all live texels -0)."""
    mant, emin, keep, ftz = FMT[fmt]
    bits = np.asarray(bits, np.int64)
    e = (bits >> 23) & 0xFF
    man = bits & 0x7FFFFF
    neg = (bits >> 31) & 1
    nan = (e == 255) & (man != 0)
    inf = (e == 255) & (man == 0)
    anynan = (nan & live).any(1)
    pinf = (inf & live & (neg == 0)).any(1)
    ninf = (inf & live & (neg == 1)).any(1)
    zero = (e == 0) if ftz else ((e == 0) & (man == 0))
    counted = live & (w != 0) & ~zero & ~nan & ~inf
    m = np.where(e == 0, man, man | (1 << 23))
    p = np.where(e == 0, -149, e - 150)
    lead = p + bitlen(m) - 1
    top = np.where(counted, lead, -(10 ** 6)).max(1)
    grid = top - keep
    sh = p - grid[:, None]
    aligned = np.where(sh >= 0, m << np.clip(sh, 0, 30), m >> np.clip(-sh, 0, 62))
    s = np.where(counted, w * aligned * (1 - 2 * neg), 0).sum(1)
    none = ~counted.any(1)
    allneg0 = (live & ~(zero & (neg == 1))).sum(1) == 0
    return s, grid, (anynan, pinf, ninf, none, allneg0)


def fround(s, base, flags, fmt):
    """s * 2^base (int64 s) rounded ties away from zero to fmt, with fsum's flags: f32 bits."""
    mant, emin, keep, ftz = FMT[fmt]
    anynan, pinf, ninf, none, allneg0 = flags
    a = np.abs(s)
    ld = base + bitlen(a) - 1
    q = np.maximum(ld, emin) - (mant - 1)
    shr = q - base
    r = np.where(shr > 0, (a + (np.int64(1) << np.clip(shr - 1, 0, 62))) >> np.clip(shr, 0, 62),
                 a << np.clip(-shr, 0, 62))
    with np.errstate(over="ignore"):
        val = np.ldexp(r.astype(np.float64), np.clip(q, -1100, 1100)).astype(np.float32)
    if ftz:
        val = np.where(val < np.float32(2.0 ** -126), np.float32(0), val)
    val = np.where(s < 0, -val, val)
    out = val.view(np.uint32).copy()
    out = np.where((val == 0) & (s < 0), np.uint32(0x80000000), out)
    out = np.where((val == 0) & (s >= 0), np.uint32(0), out)
    out = np.where(none, np.where(allneg0, np.uint32(0x80000000), np.uint32(0)), out)
    out = np.where(pinf | ninf, np.where(pinf, np.uint32(0x7F800000), np.uint32(0xFF800000)), out)
    out = np.where(anynan | (pinf & ninf), np.uint32(NAN[fmt]), out)
    return out.astype(np.uint32)


def fmix(w, live, bits, fmt, S=8):
    """The float mix (f32 bits, uint32 [N]) of texels `bits` (f32 bits, int64 [N, K]) with
    weights w (int64 [N, K], summing to 2^S) where `live`, at format fmt's precision."""
    s, grid, flags = fsum(w, live, bits, fmt)
    return fround(s, grid - S, flags, fmt)


def round_big(s, base, fmt):
    """Python-int sums s (object array) times 2^base (int array), rounded ties away from zero
    to fmt: f32 bits (uint32; a zero keeps the sum's sign, an f32 subnormal is flushed)."""
    mant, emin, keep, ftz = FMT[fmt]

    def one(si, bi):
        si, bi = int(si), int(bi)
        if si == 0:
            return 0
        a = abs(si)
        q = max(bi + a.bit_length() - 1, emin) - (mant - 1)
        if q > bi:
            a = (a + (1 << (q - bi - 1))) >> (q - bi)
        else:
            a <<= bi - q
        v = float(np.float32(math.ldexp(a, q) if q < 200 else math.inf))
        if ftz and v < 2.0 ** -126:
            v = 0.0
        if v == 0:
            return 0x80000000 if si < 0 else 0
        return int(np.float32(-v if si < 0 else v).view(np.uint32))

    return np.frompyfunc(one, 2, 1)(s, base).astype(np.int64).astype(np.uint32)


def imix(w, vals, T, S=8, raw=True):
    """Normalized-read integer mix: the 16-bit J (int64 [N]) of texels vals (int64 [N, K];
    raw texel integers if raw, else earlier stages' J) with weights w (summing to 2^S)."""
    vals = np.asarray(vals, np.int64)
    if raw and T == "i8":  # fit4.py: J = floor((129 I + 16 floor(I / 4096) + 64) / 128), I in
        i = (w * vals).sum(1)  # 1/256 (here 1/2^S) of a texel step
        k = 1 << (S - 8)
        return (129 * i + 16 * k * (i >> (S + 4)) + 64 * k) >> (S - 1)
    if raw and T == "u8":
        vals = vals * 257
    return ((w * vals).sum(1) + (1 << (S - 1))) >> S


def iout(J, T):
    """f32 bits (uint32) of 16-bit fixed-point results J of type T."""
    full = np.float32(65535 if T in ("u8", "u16") else 32767)
    return np.maximum(J.astype(np.float32) / full, np.float32(-1)).view(np.uint32)


def w1(a):
    return np.stack([256 - a, a], 1)


def w2(a, b):
    """2-D weights, corner order (00, 10, 01, 11)."""
    w11 = (a * b + 128) >> 8
    return np.stack([256 - a - b + w11, a - w11, b - w11, w11], 1)


def corners_live(f):
    """[N, 2^dims] where corner k takes part: every axis d whose upper texel it takes
    (bit d of k) has a nonzero fraction."""
    dims = f.shape[1]
    return np.stack([np.all(np.stack([(f[:, d] != 0) | (k >> d & 1 == 0)
                                      for d in range(dims)], 1), 1)
                     for k in range(1 << dims)], 1)


def corner_of(bits_by_axis):
    """Corner index k from per-axis upper bits (x first)."""
    return sum(b << d for d, b in enumerate(bits_by_axis))


def weights3(f, rule):
    """One-sum 3-D weights (int64 [N, 8], corner k = x | y << 1 | z << 2) and their scale S."""
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    w = np.zeros((f.shape[0], 8), np.int64)
    if rule.startswith("split"):
        axis = {"z": 2, "x": 0, "y": 1}[rule[6]]
        d1, d2 = [d for d in range(3) if d != axis]
        p = w2(f[:, d1], f[:, d2])
        up = (p * f[:, axis, None] + 128) >> 8
        for k2 in range(4):
            for u, part in ((0, p[:, k2] - up[:, k2]), (1, up[:, k2])):
                bits = [0, 0, 0]
                bits[d1], bits[d2], bits[axis] = k2 & 1, k2 >> 1, u
                w[:, corner_of(bits)] = part
        return w, 8
    if rule == "w2xc":
        p = w2(a, b)
        for k in range(8):
            w[:, k] = p[:, k & 3] * (c if k >> 2 else 256 - c)
        return w, 16
    if rule == "prod":
        for k in range(8):
            w[:, k] = ((a if k & 1 else 256 - a) * (b if k >> 1 & 1 else 256 - b)
                       * (c if k >> 2 else 256 - c))
        return w, 24
    if rule == "zxy":
        # z first, exactly: Z1 = c, Z0 = 256 - c; then x in each z plane: X1 = round_half_up(Z a),
        # X0 = Z - X1; then y in each column, the diagonal corner rounded: in column X1,
        # w(y1) = round_half_up(X1 b), in column X0, w(y0) = round_half_up(X0 (256 - b)); the
        # other corner the rest.
        for zb, Zw in ((0, 256 - c), (1, c)):
            X1 = (Zw * a + 128) >> 8
            X0 = Zw - X1
            w11 = (X1 * b + 128) >> 8
            w00 = (X0 * (256 - b) + 128) >> 8
            w[:, 4 * zb + 3], w[:, 4 * zb + 1] = w11, X1 - w11
            w[:, 4 * zb + 0], w[:, 4 * zb + 2] = w00, X0 - w00
        return w, 8
    if rule == "prod-r":
        w, _ = weights3(f, "prod")
        return (w + (1 << 15)) >> 16, 8
    if rule == "w2c-r":
        w, _ = weights3(f, "w2xc")
        return (w + 128) >> 8, 8
    raise ValueError(rule)


def mix_any(T, w, live, v, S):
    """One stage's mix: float types -> f32 bits (int64), integers -> J."""
    if T in ("f32", "f16"):
        return fmix(w, live, v, T, S).astype(np.int64)
    return imix(w, v, T, S, raw=False)


def trilinear(T, f, vals, rule):
    """The result bits (uint32 [N]) of 3-D fetches with fractions f (int64 [N, 3], 1/256) and
    corner texels vals ([N, 8], as stored) under `rule`."""
    flt = T in ("f32", "f16")
    v = to_f32_bits(T, vals) if flt else np.asarray(vals).astype(np.int64)
    live = corners_live(f)
    if rule in ONE_SUM + ("split-z/w",):
        w, S = weights3(f, rule[:7] if rule == "split-z/w" else rule)
        if rule == "split-z/w":
            live = w != 0
        return fmix(w, live, v, T, S) if flt else iout(imix(w, v, T, S), T)
    if rule in ("lerp-z", "lerp-x", "lerp-y"):
        axis = {"z": 2, "x": 0, "y": 1}[rule[5]]
        d1, d2 = [d for d in range(3) if d != axis]
        planes = []
        for u in (0, 1):
            ks = []
            for k2 in range(4):
                bits = [0, 0, 0]
                bits[d1], bits[d2], bits[axis] = k2 & 1, k2 >> 1, u
                ks.append(corner_of(bits))
            fw = w2(f[:, d1], f[:, d2])
            fl = corners_live(f[:, [d1, d2]])
            if flt:
                planes.append(fmix(fw, fl, v[:, ks], T, 8).astype(np.int64))
            else:
                planes.append(imix(fw, v[:, ks], T, 8))
        pv = np.stack(planes, 1)
        fa = f[:, axis]
        r = mix_any(T, w1(fa), np.stack([fa >= 0, fa != 0], 1), pv, 8)
        return r.astype(np.uint32) if flt else iout(r, T)
    if rule in ("zxy-planes", "zxy-planes-floor"):
        if not flt:  # one linear sum: zxy
            return trilinear(T, f, vals, "zxy")
        w, _ = weights3(f, "zxy")
        parts = [fsum(w[:, g], live[:, g], v[:, g], T) for g in ([0, 1, 2, 3], [4, 5, 6, 7])]
        if rule == "zxy-planes-floor":
            # Where both planes count texels and their grids differ, the finer plane's exact sum
            # is floored (two's complement, toward -inf) to the coarser plane's grid less
            # FLOOR_K[T][z] bits (z: the finer plane's index); the coarser plane is untouched.
            has = [~p[2][3] for p in parts]
            g0, g1 = parts[0][1], parts[1][1]
            both = has[0] & has[1]
            cut = [np.where(both & (g0 < g1), g1 - FLOOR_K[T][0], -(10 ** 6)),
                   np.where(both & (g1 < g0), g0 - FLOOR_K[T][1], -(10 ** 6))]
            newp = []
            for z, p in enumerate(parts):  # (s >> sh) on the grid cut: s floored, exactly
                sh = cut[z] - p[1]
                newp.append((np.where(sh > 0, p[0] >> np.clip(sh, 0, 63), p[0]),
                             np.where(sh > 0, cut[z], p[1]), p[2]))
            parts = newp
        # Planes whose sum is 0 add nothing; the others are added exactly on the finer grid,
        # except that one more than 80 bits below the other counts only as a sticky bit.
        use = [p[0] != 0 for p in parts]
        grids = [np.where(u, p[1], -(10 ** 6)) for p, u in zip(parts, use)]
        gmax = np.maximum.reduce(grids)
        grids = [np.where(u, p[1], 10 ** 6) for p, u in zip(parts, use)]
        gmin = np.maximum(np.minimum.reduce(grids), gmax - 80)
        gmin = np.where(gmax < -(10 ** 5), 0, gmin)

        tot = np.zeros(len(gmin), object)
        for p, u in zip(parts, use):
            sh = np.where(u, p[1] - gmin, 0)
            for i in np.flatnonzero(u):
                si, k = int(p[0][i]), int(sh[i])
                if k >= 0:
                    tot[i] += si << k
                else:
                    q = abs(si) >> -k
                    q += (q << -k) != abs(si)  # sticky
                    tot[i] += q if si > 0 else -q
        out = round_big(tot, gmin - 8, T)
        anynan, pinf, ninf = (parts[0][2][i] | parts[1][2][i] for i in range(3))
        none, allneg0 = parts[0][2][3] & parts[1][2][3], parts[0][2][4] & parts[1][2][4]
        out = np.where(none, np.where(allneg0, np.uint32(0x80000000), np.uint32(0)), out)
        out = np.where(pinf | ninf, np.where(pinf, np.uint32(0x7F800000), np.uint32(0xFF800000)),
                       out)
        return np.where(anynan | (pinf & ninf), np.uint32(NAN[T]), out).astype(np.uint32)
    if rule == "lerp-z-exact":
        if not flt:  # a linear datapath: the exact lerp of the planes' sums is w2xc
            return trilinear(T, f, vals, "w2xc")
        fw = w2(f[:, 0], f[:, 1])
        fl = corners_live(f[:, :2])
        c = f[:, 2]
        s0, g0, fl0 = fsum(fw, fl, v[:, :4], T)
        s1, g1, fl1 = fsum(fw, fl & (c != 0)[:, None], v[:, 4:], T)
        g0 = np.where(fl0[3], g1, g0)
        g1 = np.where(fl1[3], g0, g1)
        gmin = np.minimum(g0, g1)
        o = lambda x: np.asarray(x, np.int64).astype(object)
        tot = (o(256 - c) * o(s0) * (o(np.ones_like(c)) << o(g0 - gmin))
               + o(c) * o(s1) * (o(np.ones_like(c)) << o(g1 - gmin)))
        out = round_big(tot, gmin - 16, T)
        anynan, pinf, ninf = (fl0[i] | fl1[i] for i in range(3))
        none, allneg0 = fl0[3] & fl1[3], fl0[4] & (fl1[4] | (c == 0))
        out = np.where(none, np.where(allneg0, np.uint32(0x80000000), np.uint32(0)), out)
        out = np.where(pinf | ninf, np.where(pinf, np.uint32(0x7F800000), np.uint32(0xFF800000)),
                       out)
        return np.where(anynan | (pinf & ninf), np.uint32(NAN[T]), out).astype(np.uint32)
    if rule == "sep":
        cur = v  # corners k = x | y << 1 | z << 2
        first = True
        for d in range(3):
            fa = f[:, d]
            outs = []
            for k in range(0, cur.shape[1], 2):
                pair = cur[:, [k, k + 1]]
                lv = np.stack([fa >= 0, fa != 0], 1)
                if flt:
                    outs.append(fmix(w1(fa), lv, pair, T, 8).astype(np.int64))
                else:
                    outs.append(imix(w1(fa), pair, T, 8, raw=first))
            cur = np.stack(outs, 1)
            first = False
        r = cur[:, 0]
        return r.astype(np.uint32) if flt else iout(r, T)
    raise ValueError(rule)


def bilinear(T, f, vals):
    """2-D fetches (the known rule): fractions f [N, 2], corner texels vals [N, 4]."""
    w = w2(f[:, 0], f[:, 1])
    if T in ("f32", "f16"):
        return fmix(w, corners_live(f), to_f32_bits(T, vals), T, 8)
    return iout(imix(w, np.asarray(vals).astype(np.int64), T, 8), T)


def model_fetch(T, tex, norm, filt, coords, rule="split-z"):
    """A fetch (tex3D or tex2D by len(coords)) from texture tex (as stored: [D, H, W] or
    [H, W]) at float32 coords (x first), clamp addressing, under `rule` for 3-D linear."""
    shape = np.shape(coords[0])
    ext = tex.shape[::-1]
    X = [fixed(np.ravel(c), norm, n) for c, n in zip(coords, ext)]
    if filt == "point":
        return point_value(T, gather(tex, [x >> 21 for x in X])).reshape(shape)
    dims = len(coords)
    if dims == 3:  # clamp addressing: the coordinate clamped to [0.5, n - 0.5] texels first
        X = [np.clip(x, 1 << 20, n * (1 << 21) - (1 << 20)) for x, n in zip(X, ext)]
    li = [linear_index(x) for x in X]
    f = np.stack([x[1] for x in li], 1)
    vals = np.stack([gather(tex, [li[d][0] + (k >> d & 1) for d in range(dims)])
                     for k in range(1 << dims)], 1)
    out = trilinear(T, f, vals, rule) if dims == 3 else bilinear(T, f, vals)
    return out.reshape(shape)


# ---------------------------------------------------------------- the fit
def report(name, ok, n):
    print(f"  {name:60s} {ok:9d}/{n:<9d} = {100 * ok / max(n, 1):8.4f}%", flush=True)
    return ok == n


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import texprobe5 as tp

    path = next((a for a in sys.argv[1:] if not a.startswith("--")), "probe/texprobe5.npz")
    D = np.load(path)
    print("data:", D["meta_device"], "CUDA/driver", D["meta_versions"], "CuPy", D["meta_cupy"],
          "synthetic" if int(D["meta_synthetic"]) else "")
    w3, kinds = D["w3"], D["w3_kind"]
    kind_names = ("x-sweep", "y-sweep", "z-sweep", "grid", "edges", "random")
    best = {}

    print("(v) trilinear mixes, every rule (then the best rule per part of w3)")
    for T in tp.TYPES:
        tex, out = D[f"v3_{T}_tex"], D[f"v3_{T}_out"]
        x, y, z = tp.cube_xyz(out.shape[0], w3)
        rates = {}
        for rule in RULES:
            got = model_fetch(T, tex, False, "linear", (x, y, z), rule)
            rates[rule] = (got == out)
        order = sorted(RULES, key=lambda r: -rates[r].sum())
        print(f" {T}: " + ", ".join(f"{r} {100 * rates[r].mean():.3f}%" for r in order))
        b = order[0]
        best[T] = b
        print(f"   {b} by part of w3: " + ", ".join(
            f"{kn} {100 * rates[b][:, kinds == k].mean():.3f}%"
            for k, kn in enumerate(kind_names)))
        print(f"   {b} by 8 blocks: " + ", ".join(
            f"{100 * rates[b][bn:bn + 8].mean():.2f}%" for bn in range(0, out.shape[0], 8)))
        miss = np.argwhere(~rates[b])[:4]
        got = model_fetch(T, tex, False, "linear", (x, y, z), b)
        for n, j in miss:
            q, r, s = (int(v) for v in tp.block_origin(n))
            blk = tex[2 * s:2 * s + 2, 2 * r:2 * r + 2, 2 * q:2 * q + 2].ravel()
            print(f"     miss: block {n} w3 {w3[j].tolist()} texels {blk.tolist()} "
                  f"gpu {int(out[n, j]):#010x} {b} {int(got[n, j]):#010x}")
        if T == "f32":  # indicator blocks: each corner's effective weight, against the rules'
            wk = out[:8].view(np.float32).astype(np.float64)  # [8 (corner), J]
            f = (w3 + 1) // 2
            lo = f >> 8
            f = f & 255
            res = []
            for rule in ONE_SUM:
                w, S = weights3(f.astype(np.int64), rule)
                want = np.zeros((8, w3.shape[0]))
                for k in range(8):  # block k holds 1.0 at corner k; w3 = 512 moves the corner
                    ks = [(k >> d & 1) - lo[:, d] for d in range(3)]
                    ok = np.all([(kk == 0) | (kk == 1) for kk in ks], 0)
                    kc = sum(np.clip(kk, 0, 1) << d for d, kk in enumerate(ks))
                    want[k] = np.where(ok, w[np.arange(w.shape[0]), kc] / 2.0 ** S, 0)
                res.append((rule, int((want == wk).sum())))
            print("   indicator blocks (1.0 at one corner): the weight read off equals the rule's"
                  " weight: " + ", ".join(f"{r} {100 * n / wk.size:.3f}%" for r, n in res))
        if T in ("f32", "u16"):  # indicator blocks: is each corner's weight in 1/256 steps?
            ind = out[:8].view(np.float32).astype(np.float64)
            if T == "f32":
                on256 = ind * 256 == np.round(ind * 256)
            else:  # J = round_half_up(65535 k / 256) for an integer k
                J = np.round(ind * 65535).astype(np.int64)
                k = np.round(J * 256 / 65535).astype(np.int64)
                on256 = J == (65535 * k + 128) >> 8
            report(f"{T} indicator blocks: corner weights in 1/256 steps", int(on256.sum()),
                   on256.size)

    print("(s) NaN/inf/subnormal/zero texels (grid and edge weights)")
    for T in ("f32", "f16"):
        tex, out = D[f"s3_{T}_tex"], D[f"s3_{T}_out"]
        x, y, z = tp.cube_xyz(out.shape[0], w3[D["s3_j"]])
        res = {r: int((model_fetch(T, tex, False, "linear", (x, y, z), r) == out).sum())
               for r in RULES}
        order = sorted(RULES, key=lambda r: -res[r])
        print(f" {T}: " + ", ".join(f"{r} {100 * res[r] / out.size:.3f}%" for r in order))
        b = order[0]
        got = model_fetch(T, tex, False, "linear", (x, y, z), b)
        ok = got == out
        print(f"   {b} by 8 blocks: " + ", ".join(
            f"{100 * ok[bn:bn + 8].mean():.2f}%" for bn in range(0, out.shape[0], 8)))
        for n, j in np.argwhere(~ok)[:6]:
            q, r, s_ = (int(v) for v in tp.block_origin(n))
            blk = tex[2 * s_:2 * s_ + 2, 2 * r:2 * r + 2, 2 * q:2 * q + 2].ravel()
            print(f"     miss: block {n} w3 {w3[D['s3_j'][j]].tolist()} texels "
                  f"{[hex(int(t)) for t in blk]} gpu {int(out[n, j]):#010x} {b} "
                  f"{int(got[n, j]):#010x}")

    print("(p) the blocks as 2-D textures: the 2-D rule; the 3-D result vs the lerp in z of the")
    print("    measured 2-D results (the 1-D rule, integers through their 16-bit J)")
    px, py = tp.plane_xy(D["u2"])
    for T in tp.TYPES:
        tex2 = D[f"v3_{T}_tex"][0:2].reshape(16, 8)
        out2 = D[f"p2_{T}_out"]
        got = model_fetch(T, tex2, False, "linear", (px, py))
        report(f"{T}: 2-D rule", int((got == out2).sum()), out2.size)
        planes = out2[:, D["w3_u2"], :]  # [16, J, 2]
        c = (w3[:, 2] + 1) // 2
        cc = np.broadcast_to(c, planes.shape[:2]).reshape(-1)
        c8, up = cc & 255, cc >> 8  # c = 256: the upper plane alone
        pl = planes.reshape(-1, 2)
        pv = np.where(up[:, None] == 1, pl[:, [1, 1]], pl).astype(np.int64)
        lv = np.stack([np.ones_like(c8, bool), c8 != 0], 1)
        if T in ("f32", "f16"):
            r = fmix(w1(c8), lv, pv, T, 8)
        else:
            full = 65535 if T in ("u8", "u16") else 32767
            J = np.round(pv.astype(np.uint32).view(np.float32).astype(np.float64) * full).astype(np.int64)
            r = iout(imix(w1(c8), J, T, 8, raw=False), T)
        v3 = D[f"v3_{T}_out"][:16].reshape(-1)
        report(f"{T}: 3-D = lerp-z of the measured 2-D results", int((r == v3).sum()), v3.size)

    print("(n) normalized coordinates, f32 (the best (v) rule)")
    b = best["f32"]
    x, y, z = tp.cube_xyz(64, w3[D["n3_j"]])
    got = model_fetch("f32", D["v3_f32_tex"], True, "linear",
                      (x / np.float32(8), y / np.float32(8), z / np.float32(8)), b)
    report(f"8x8x8 at x/8: {b}", int((got == D["n3_out"]).sum()), got.size)
    uvw = (D["n3_odd_u"], D["n3_odd_v"], D["n3_odd_w"])
    got = model_fetch("f32", D["n3_odd_tex"], True, "linear", uvw, b)
    report(f"11x7x5 random: {b}", int((got == D["n3_odd_out"]).sum()), got.size)

    k4 = os.path.join(os.path.dirname(os.path.abspath(path)), "texprobe4.npz")
    if os.path.exists(k4):
        print("(k) this script's 2-D model against texprobe4.npz's 2-D blocks (i8: ~95% known)")
        K = np.load(k4)
        for T in ("u8", "u16", "i16", "i8", "f16"):
            got = model_fetch(T, K[f"a2_{T}_tex"], False, "linear", (K["a2_x"], K["a2_y"]))
            report(f"a2_{T}", int((got == K[f"a2_{T}_out"]).sum()), got.size)
        for n in ("tiny", "spec"):
            out = K[f"b2_{n}_out"]
            nb = out.shape[0]
            got = model_fetch("f32", K[f"b2_{n}_tex"], False, "linear",
                              (K["b2_x"][:nb], K["b2_y"][:nb]))
            report(f"b2_{n} (f32)", int((got == out).sum()), got.size)

    print("(t) point sampling")
    for T in tp.TYPES:
        tex = D[f"v3_{T}_tex"]
        report(f"{T}: texel centres read the texel", int((point_value(T, tex) == D[f"pt_{T}_ctr"]).sum()),
               tex.size)
        pz = D["pt_z"] if tex.shape[0] == 8 else D["pt_z4"]
        got = model_fetch(T, tex, False, "point", (D["pt_x"], D["pt_y"], pz))
        report(f"{T}: random coordinates, floor of 21-bit fixed point, clamped",
               int((got == D[f"pt_{T}_rnd"]).sum()), got.size)


if __name__ == "__main__":
    main()
