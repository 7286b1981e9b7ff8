# Raw texture-sampling data, third round (after texprobe3.py and texprobe4.py, which measured
# 1-D and 2-D only): 3-D linear filtering of CUDA arrays, bit for bit. CuPy fetches; writes
# texprobe5.npz into the folder given:
#     python3 probe/texprobe5.py OUTDIR                      # on the GPU machine (< 60 s)
#     python3 probe/texprobe5.py --selfcheck                 # no GPU: layouts and inputs only
#     python3 probe/texprobe5.py --selfcheck --synthetic OUT # no GPU: OUT/texprobe5.npz with
#         every result filled in by a model (probe/fit5.py's rule "zxy-planes", the simulator's
#         3-D rule) instead of a GPU, to test fit5.py's plumbing; meta_synthetic = 1.
# Every value is stored exactly: texels as their own dtype (f16 as uint16 bits, f32 as uint32
# bits), results as uint32 (the f32 result's bits). All textures are clamped
# (cudaAddressModeClamp), 1 channel, unnormalized coordinates, linear filtering, unless a
# section says otherwise; integer types are read as normalized floats
# (cudaReadModeNormalizedFloat), f16 and f32 as they are.
#
# Layout "cubes" (3-D trilinear mix): a texture of QZ x QY x QX blocks of 2x2x2 texels, shape
# (D, H, W) = (2QZ, 2QY, 2QX), QX = QY = 4 (so H = W = 8); block n = (s, r, q) =
# (n // 16, n // 4 % 4, n % 4) holds texels [2s:2s+2, 2r:2r+2, 2q:2q+2] (index order z, y, x).
# Fetch j of block n is tex3D<float>(t, x, y, z) at
#     x = 2q + 0.5 + w3[j, 0] / 512,  y = 2r + 0.5 + w3[j, 1] / 512,  z = 2s + 0.5 + w3[j, 2] / 512
# (float32, exact: asserted), w3 integers 0..512, so x - 0.5 - 2q = w3[j, 0] / 512: even values
# are the exact weights w3 / 2 in 1/256 steps; odd ones lie halfway between two weights (a tie,
# which the known coordinate rule rounds up); 512 reads the block's upper texel with weight 1
# and the next block's lower texel (clamped at the texture's end) with weight 0.
# The weight list w3 (int32 [J, 3], J = 6882), w3_kind (int8 [J]) saying which part:
#   0, 1, 2: sweeps along x, y, z: that axis at all 513 values 0..512 (all 257 weights and the
#            ties between) while the other two are fixed at (0, 0), (256, 256), (75, 401);
#   3: the grid {0, 64, ..., 512}^3 (weights 0, 1/8, ..., 1);
#   4: edges {0, 2, 4, 254, 256, 258, 508, 510}^3 (weights 0, 1/256, 2/256, 127/256, ...);
#   5: 1024 random triples (768 even, i.e. exact weights, then 256 any value 0..511).
#
# Arrays (prefix = section); meta_device, meta_versions (CUDA runtime, driver), meta_cupy say
# where the data came from; meta_synthetic (int64) is 1 for the --synthetic model data.
# (v) trilinear mixes, T in f32, f16, u8, u16, i16, i8:
#   v3_{T}_tex [D, 8, 8] (D = 8 for f32, f16: 64 blocks; D = 4 for the integers: 32 blocks),
#   v3_{T}_out (uint32 [nblk, J]). Block contents by block index (8 blocks each, in order):
#     f32: 0-7 indicators (corner k = n % 8 is 1.0, the rest +0), 8-15 signed powers of two
#       2^-4..2^4, 16-31 random normals (magnitudes 1e-3..1e3), 32-39 values 1 + k 2^-23
#       (random signs, k < 2^12: products round differently), 40-47 near-cancelling (+-v,
#       -+v (1 + a few ulps)), 48-55 one large corner (2^10..2^24 times the rest: the
#       truncation grid), 56-63 extremes (+-FLT_MAX, +-2^127, +-1, +-0, 3e38 mixed);
#     f16: the same kinds (indicators 1.0, extremes +-65504, 2^15, +-1, +-0, 1 + k 2^-10);
#     integers: 0-7 indicators (corner k = MAX, rest 0), 8-15 extremes (0, 1, MAX, MAX - 1,
#       MIN, -MAX, ...), 16-23 neighbours (v + -3..3), 24-31 uniform random.
#   Corner k of a block (k = 0..7) is texel (x, y, z) = (2q + (k & 1), 2r + (k >> 1 & 1),
#   2s + (k >> 2)) (the same order as the simulator's corner_weights).
# (s) NaN/inf/subnormal/zero texels, f32 (64 blocks) and f16 (32 blocks), at the grid and edge
#   entries of w3 only: s3_j (int32, indices into w3: w3_kind 3 and 4, JS = 1241 entries),
#   s3_{T}_tex [D, 8, 8] (uint32 / uint16 bits), s3_{T}_out (uint32 [nblk, JS]), cubes layout
#   with w3[s3_j]. f32 blocks: 0-7 NaN 0x7fc00000 at corner n % 8, 8-15 +inf at corner n % 8,
#   16-23 -inf at corner n % 8, 24-31 +inf and -inf at two corners, 32-39 NaN 0x7fffffff or
#   -NaN 0xffc00000 and +inf at two corners, 40-47 all subnormal (random signs), 48-55 near
#   the smallest normal (+-, near-cancelling: subnormal sums), 56-63 +-0 and subnormals only
#   (some all -0). Other corners random normals. f16 blocks: 0-7 NaN 0x7e00 at corner n % 8,
#   8-15 +inf, 16-23 -inf, 24-31 f16 subnormals and +-0.
# (p) the same blocks as 2-D textures (z fixed): for each T, the 2-D texture
#   p2_{T}_tex = v3_{T}_tex[0:2].reshape(16, 8) (slice z = k is rows 8k..8k+7), i.e. the 16
#   blocks n = 0..15's two z slices; fetched with tex2D<float> at every distinct (w3[j, 0],
#   w3[j, 1]) pair: u2 (int32 [U, 2]), w3_u2 (int32 [J]: the row of u2 of each j), at
#   x = 2q + 0.5 + u2[i, 0] / 512, y = 8k + 2r + 0.5 + u2[i, 1] / 512:
#   p2_{T}_out (uint32 [16, U, 2]), last index the slice k. (At u2[i, 1] = 512 in block row
#   r = 3 the weight-0 upper row is slice k + 1's row 0, not a clamp: weight 0 either way.)
# (n) normalized coordinates: (i) the f32 cubes texture (8 x 8 x 8) at u = x / 8, v = y / 8,
#   w = z / 8 (exact) for the grid entries n3_j (int32 indices into w3, w3_kind 3): n3_out
#   (uint32 [64, len(n3_j)]); (ii) a random f32 texture n3_odd_tex (uint32 bits [5, 7, 11]:
#   D, H, W) at random float32 normalized coordinates n3_odd_u, _v, _w ([4096]; in [-0.1,
#   1.1]): n3_odd_out (uint32 [4096]).
# (t) point sampling (cudaFilterModePoint), each v3_{T}_tex: at every texel centre, in the
#   order of the texture ([D, 8, 8]): pt_{T}_ctr (uint32 [D, 8, 8]); at random coordinates
#   pt_x, pt_y, pt_z (float32 [2048], in [-1, 9]; z scaled to D = 4 for the integer types:
#   pt_z4): pt_{T}_rnd (uint32 [2048]).
import os
import sys
import time

import numpy as np

t0 = time.time()
rng = np.random.default_rng(5)

QX = QY = 4
TYPES = ("f32", "f16", "u8", "u16", "i16", "i8")
INFO = {  # numpy dtype, CUDA channel kind name, bits, read normalized
    "u8": (np.uint8, "Unsigned", 8, True), "i8": (np.int8, "Signed", 8, True),
    "u16": (np.uint16, "Unsigned", 16, True), "i16": (np.int16, "Signed", 16, True),
    "f16": (np.uint16, "Float", 16, False), "f32": (np.uint32, "Float", 32, False),
}
NBLK = {"f32": 64, "f16": 64, "u8": 32, "u16": 32, "i16": 32, "i8": 32}
SWEEP_FIXED = ((0, 0), (256, 256), (75, 401))
EDGES = (0, 2, 4, 254, 256, 258, 508, 510)


def make_w3():
    """The weight list w3 (int32 [J, 3], in 1/512) and its parts w3_kind (int8 [J])."""
    r = np.random.default_rng(55)
    rows, kind = [], []
    for axis in range(3):
        for f0, f1 in SWEEP_FIXED:
            for m in range(513):
                t = [f0, f1]
                t.insert(axis, m)
                rows.append(t)
                kind.append(axis)
    g = range(0, 513, 64)
    rows += [[a, b, c] for c in g for b in g for a in g]
    kind += [3] * 9 ** 3
    rows += [[a, b, c] for c in EDGES for b in EDGES for a in EDGES]
    kind += [4] * 8 ** 3
    rows += (2 * r.integers(0, 256, (768, 3))).tolist() + r.integers(0, 512, (256, 3)).tolist()
    kind += [5] * 1024
    return np.array(rows, np.int32), np.array(kind, np.int8)


W3, W3_KIND = make_w3()
S3_J = np.flatnonzero((W3_KIND == 3) | (W3_KIND == 4)).astype(np.int32)
N3_J = np.flatnonzero(W3_KIND == 3).astype(np.int32)
U2, W3_U2 = np.unique(W3[:, :2], axis=0, return_inverse=True)
U2 = U2.astype(np.int32)
W3_U2 = W3_U2.reshape(-1).astype(np.int32)


def block_origin(n):
    """(q, r, s) of block n of the cubes layout (arrays)."""
    n = np.asarray(n)
    return n % QX, n // QX % QY, n // (QX * QY)


def cube_xyz(nblk, w3=W3):
    """Fetch coordinates of the cubes layout: x, y, z float32 [nblk, len(w3)] each."""
    q, r, s = block_origin(np.arange(nblk))
    out = []
    for base, col in ((q, 0), (r, 1), (s, 2)):
        v = 2 * base[:, None] + 0.5 + w3[None, :, col] / 512.0
        assert np.all(v.astype(np.float32) == v)  # exact
        out.append(v.astype(np.float32))
    return out


def plane_xy(u2=U2):
    """Fetch coordinates of section (p): x, y float32 [16, U, 2] (blocks 0..15, slice k)."""
    q, r, _ = block_origin(np.arange(16))
    x = 2 * q[:, None, None] + 0.5 + u2[None, :, 0, None] / 512.0 + 0 * np.arange(2)
    y = 8 * np.arange(2)[None, None, :] + 2 * r[:, None, None] + 0.5 + u2[None, :, 1, None] / 512.0
    assert np.all(x.astype(np.float32) == x) and np.all(y.astype(np.float32) == y)
    return x.astype(np.float32), y.astype(np.float32)


def blocks_to_tex(blocks):
    """[nblk, 8] blocks (corner k = (x, y, z) bits (k & 1, k >> 1 & 1, k >> 2)) -> texture
    (2QZ, 8, 8), index order z, y, x."""
    nb = blocks.shape[0]
    b = blocks.reshape(nb // (QX * QY), QY, QX, 2, 2, 2)  # s, r, q, dz, dy, dx
    return b.transpose(0, 3, 1, 4, 2, 5).reshape(2 * nb // (QX * QY), 2 * QY, 2 * QX)


# ---------------------------------------------------------------- texel values (no GPU)
def f32_normal(n):
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)


def sign(n):
    return np.where(rng.integers(0, 2, n) == 1, -1.0, 1.0)


def float_blocks(T):
    """64 blocks [64, 8] of f32 (uint32 bits) or f16 (uint16 bits), kinds as the header says."""
    ft = np.float32 if T == "f32" else np.float16
    ulp = 2.0 ** -23 if T == "f32" else 2.0 ** -10
    big = (2.0 ** 127, 3.4028235e38, 3e38) if T == "f32" else (32768.0, 65504.0, 60000.0)
    maxe = 24 if T == "f32" else 12
    b = []
    for k in range(8):  # indicators
        v = np.zeros(8)
        v[k] = 1.0
        b.append(v)
    for _ in range(8):  # powers of two
        b.append(sign(8) * 2.0 ** rng.integers(-4, 5, 8))
    for _ in range(16):  # random normals
        if T == "f32":
            b.append(f32_normal(8).astype(np.float64))
        else:
            b.append(rng.standard_normal(8) * 10.0 ** rng.integers(-2, 3, 8))
    for _ in range(8):  # near one
        b.append(sign(8) * (1.0 + rng.integers(0, 1 << 12, 8) * ulp))
    for _ in range(8):  # near-cancelling pairs
        v = rng.standard_normal(4) * 10.0 ** rng.integers(-2, 3, 4)
        w = -v * (1.0 + rng.integers(-4, 5, 4) * ulp)
        b.append(rng.permutation(np.concatenate([v, w])))
    for _ in range(8):  # one large corner
        v = rng.standard_normal(8)
        v[rng.integers(0, 8)] *= 2.0 ** rng.integers(10, maxe + 1)
        b.append(v)
    ext = [big[0], -big[0], big[1], -big[1], big[2], 1.0, -1.0, 0.0, -0.0]
    for _ in range(8):  # extremes
        b.append(np.array([ext[i] for i in rng.integers(0, len(ext), 8)]))
    out = np.array(b).astype(ft)
    assert np.isfinite(out).all()
    return out.view(np.uint32 if T == "f32" else np.uint16)


def int_blocks(T):
    """32 blocks [32, 8] of integer type T, kinds as the header says."""
    dt = INFO[T][0]
    ii = np.iinfo(dt)
    if ii.min < 0:
        ext = [0, 1, -1, ii.max, ii.min, -ii.max, ii.max - 1, ii.min + 2]
    else:
        ext = [0, 1, 2, ii.max, ii.max - 1, ii.max // 2, ii.max // 2 + 1]
    b = []
    for k in range(8):
        v = np.zeros(8, np.int64)
        v[k] = ii.max
        b.append(v)
    for _ in range(8):
        b.append(np.array([ext[i] for i in rng.integers(0, len(ext), 8)], np.int64))
    for _ in range(8):
        a = int(rng.integers(ii.min, ii.max + 1))
        b.append(np.clip(a + rng.integers(-3, 4, 8), ii.min, ii.max))
    for _ in range(8):
        b.append(rng.integers(ii.min, ii.max + 1, 8, dtype=np.int64))
    return np.array(b, np.int64).astype(dt)


def special_blocks_f32():
    """64 f32 blocks (uint32 bits) with NaN, infinities, subnormals, zeros (see the header)."""
    b = []
    for s in (0x7FC00000, 0x7F800000, 0xFF800000):
        for k in range(8):
            v = f32_normal(8).view(np.uint32)
            v[k] = s
            b.append(v)
    pairs = [(i, j) for i in range(8) for j in range(8) if i != j]
    for s0, s1, n in ((0x7F800000, 0xFF800000, 8), (0x7FFFFFFF, 0x7F800000, 4),
                      (0xFFC00000, 0x7F800000, 4)):
        for i in rng.permutation(len(pairs))[:n]:
            v = f32_normal(8).view(np.uint32)
            v[pairs[i][0]], v[pairs[i][1]] = s0, s1
            b.append(v)
    for _ in range(8):  # subnormals
        b.append(rng.integers(1, 1 << 23, 8).astype(np.uint32) | (rng.integers(0, 2, 8) << 31).astype(np.uint32))
    for _ in range(8):  # near the smallest normal, near-cancelling
        a = rng.integers(0x00800000, 0x00900000, 4)
        v = np.concatenate([a, (a + rng.integers(-40, 41, 4)) | (1 << 31)])
        b.append(rng.permutation(v).astype(np.uint32))
    for i in range(8):  # zeros and subnormals; blocks 56, 57 all -0
        v = np.where(rng.integers(0, 2, 8) == 1, 0x80000000, 0).astype(np.uint32)
        if i < 2:
            v[:] = 0x80000000
        elif i >= 4:
            v[rng.integers(0, 8, 2)] |= rng.integers(1, 1 << 12, 2).astype(np.uint32)
        b.append(v)
    return np.array(b, np.uint32)


def special_blocks_f16():
    """32 f16 blocks (uint16 bits): NaN, +inf, -inf at each corner, subnormals and zeros."""
    b = []
    for s in (0x7E00, 0x7C00, 0xFC00):
        for k in range(8):
            v = rng.standard_normal(8).astype(np.float16).view(np.uint16)
            v[k] = s
            b.append(v)
    for _ in range(8):
        v = rng.integers(0, 0x400, 8) | (rng.integers(0, 2, 8) << 15)
        b.append(v.astype(np.uint16))
    return np.array(b, np.uint16)


PT = 2048


def point_coords():
    r = np.random.default_rng(56)
    x, y, z = (r.uniform(-1, 9, PT).astype(np.float32) for _ in range(3))
    z4 = (z / np.float32(2)).astype(np.float32)
    return x, y, z, z4


def odd_coords():
    r = np.random.default_rng(57)
    return [r.uniform(-0.1, 1.1, 4096).astype(np.float32) for _ in range(3)]


def make_inputs():
    """Every texel array the probe uploads, by npz name (deterministic: rng reseeded)."""
    global rng
    rng = np.random.default_rng(5)
    inp = {}
    for T in TYPES:
        blk = float_blocks(T) if T in ("f32", "f16") else int_blocks(T)
        assert blk.shape == (NBLK[T], 8)
        inp[f"v3_{T}_tex"] = blocks_to_tex(blk)
    inp["s3_f32_tex"] = blocks_to_tex(special_blocks_f32())
    inp["s3_f16_tex"] = blocks_to_tex(special_blocks_f16())
    inp["n3_odd_tex"] = f32_normal(5 * 7 * 11).view(np.uint32).reshape(5, 7, 11)
    return inp


def selfcheck():
    """Checks the layouts and inputs without a GPU: python3 probe/texprobe5.py --selfcheck."""
    assert W3.shape == (6882, 3) and W3.min() == 0 and W3.max() == 512
    assert S3_J.size == 1241 and N3_J.size == 729
    assert (U2[W3_U2] == W3[:, :2]).all()
    blk = np.arange(64 * 8).reshape(64, 8)
    t3 = blocks_to_tex(blk)
    for n in range(64):
        q, r, s = (int(v) for v in block_origin(n))
        for k in range(8):
            assert t3[2 * s + (k >> 2), 2 * r + (k >> 1 & 1), 2 * q + (k & 1)] == blk[n, k]
    x, y, z = cube_xyz(64)
    q, r, s = block_origin(np.arange(64))
    # The known coordinate rule (x - 0.5 to 8 fractional bits, ties up) gives the block's
    # lower texel and the weight (w3 + 1) // 2 in 1/256 (512: the upper texel at weight 0).
    for v, base, col in ((x, q, 0), (y, r, 1), (z, s, 2)):
        X = np.floor((v.astype(np.float64) - 0.5) * 256 + 0.5).astype(np.int64)
        assert (X == 2 * base[:, None] * 256 + (W3[None, :, col] + 1) // 2).all()
    px, py = plane_xy()
    assert px.shape == (16, U2.shape[0], 2)
    inp = make_inputs()
    for T in TYPES:
        t = inp[f"v3_{T}_tex"]
        assert t.shape == (2 * NBLK[T] // 16, 8, 8) and t.dtype == INFO[T][0], T
        if T == "f32":
            assert np.isfinite(t.view(np.float32)).all()
        elif T == "f16":
            assert np.isfinite(t.view(np.float16)).all()
        else:
            ii = np.iinfo(t.dtype)
            assert {ii.min if ii.min < 0 else 0, ii.max}.issubset(set(t.ravel().tolist()))
    sf = inp["s3_f32_tex"].view(np.float32)
    assert sf.shape == (8, 8, 8) and np.isnan(sf).any() and np.isinf(sf).any()
    assert inp["s3_f16_tex"].shape == (4, 8, 8)
    print("selfcheck ok: J", W3.shape[0], "U", U2.shape[0], "JS", S3_J.size,
          "fetches", sum(NBLK[T] * W3.shape[0] + 32 * U2.shape[0] for T in TYPES)
          + 64 * S3_J.size + 32 * S3_J.size + 64 * N3_J.size + 4096 + 6 * (512 + PT))


def save(data, outdir):
    """Writes what there is so far (a fault in a later section keeps the earlier ones)."""
    path = os.path.join(outdir, "texprobe5.npz")
    np.savez_compressed(path, **data)
    print("saved", path, os.path.getsize(path), "bytes", round(time.time() - t0, 1), flush=True)
    if os.path.getsize(path) > 15 << 20:
        print("WARNING: over 15 MiB", flush=True)


def run(fetch, data, outdir):
    """Fills `data` section by section. `fetch(kind, T, tex, norm, filt, *coords)` returns the
    result bits (uint32, coords' shape): kind 3 (tex3D) or 2 (tex2D); tex as stored in the npz;
    filt 'linear' or 'point'."""
    inp = make_inputs()
    data.update({"w3": W3, "w3_kind": W3_KIND, "s3_j": S3_J, "n3_j": N3_J, "u2": U2,
                 "w3_u2": W3_U2})
    # (v)
    for T in TYPES:
        tex = inp[f"v3_{T}_tex"]
        x, y, z = cube_xyz(NBLK[T])
        data[f"v3_{T}_tex"] = tex
        data[f"v3_{T}_out"] = fetch(3, T, tex, False, "linear", x, y, z)
    print("v", round(time.time() - t0, 1), flush=True)
    save(data, outdir)
    # (s)
    for T, nb in (("f32", 64), ("f16", 32)):
        tex = inp[f"s3_{T}_tex"]
        x, y, z = cube_xyz(nb, W3[S3_J])
        data[f"s3_{T}_tex"] = tex
        data[f"s3_{T}_out"] = fetch(3, T, tex, False, "linear", x, y, z)
    # (p)
    px, py = plane_xy()
    for T in TYPES:
        tex = inp[f"v3_{T}_tex"][0:2].reshape(16, 8)
        data[f"p2_{T}_out"] = fetch(2, T, tex, False, "linear", px, py)
    print("s, p", round(time.time() - t0, 1), flush=True)
    save(data, outdir)
    # (n)
    x, y, z = cube_xyz(64, W3[N3_J])
    data["n3_out"] = fetch(3, "f32", inp["v3_f32_tex"], True, "linear",
                           x / np.float32(8), y / np.float32(8), z / np.float32(8))
    u, v, w = odd_coords()
    data["n3_odd_tex"] = inp["n3_odd_tex"]
    data["n3_odd_u"], data["n3_odd_v"], data["n3_odd_w"] = u, v, w
    data["n3_odd_out"] = fetch(3, "f32", inp["n3_odd_tex"], True, "linear", u, v, w)
    # (t)
    px, py, pz, pz4 = point_coords()
    data["pt_x"], data["pt_y"], data["pt_z"], data["pt_z4"] = px, py, pz, pz4
    for T in TYPES:
        tex = inp[f"v3_{T}_tex"]
        cz, cy, cx = np.meshgrid(*(np.arange(n) + np.float32(0.5) for n in tex.shape),
                                 indexing="ij")
        data[f"pt_{T}_ctr"] = fetch(3, T, tex, False, "point", cx.astype(np.float32),
                                    cy.astype(np.float32), cz.astype(np.float32))
        data[f"pt_{T}_rnd"] = fetch(3, T, tex, False, "point", px, py,
                                    pz if tex.shape[0] == 8 else pz4)
    print("n, t", round(time.time() - t0, 1), flush=True)
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
'''
    selfcheck()
    mod = cp.RawModule(code=src, options=("-std=c++11",))
    fn = {k: mod.get_function(k) for k in ("f3", "f2")}
    keep = []  # arrays and texture objects alive until the end

    def fetch(kind, T, tex, norm, filt, *coords):
        dt, ck, bits, rn = INFO[T]
        ch = Tx.ChannelFormatDescriptor(bits, 0, 0, 0, getattr(R, "cudaChannelFormatKind" + ck))
        v = np.ascontiguousarray(tex)
        v = v.view(np.float32) if T == "f32" else v.view(np.float16) if T == "f16" else v
        if kind == 3:
            arr = Tx.CUDAarray(ch, v.shape[2], v.shape[1], v.shape[0])
        else:
            arr = Tx.CUDAarray(ch, v.shape[1], v.shape[0])
        arr.copy_from(v)
        res = Tx.ResourceDescriptor(R.cudaResourceTypeArray, cuArr=arr)
        rm = R.cudaReadModeNormalizedFloat if rn else R.cudaReadModeElementType
        fm = R.cudaFilterModeLinear if filt == "linear" else R.cudaFilterModePoint
        td = Tx.TextureDescriptor((R.cudaAddressModeClamp,) * kind, fm, rm,
                                  normalizedCoords=int(norm))
        to = Tx.TextureObject(res, td)
        keep.append((arr, to))
        shape = np.shape(coords[0])
        cs = [cp.asarray(np.ravel(c), cp.float32) for c in coords]
        n = cs[0].size
        out = cp.empty(n, cp.float32)
        fn["f%d" % kind](((n + 255) // 256,), (256,), (to.ptr, *cs, out, np.int32(n)))
        return cp.asnumpy(out).view(np.uint32).reshape(shape)

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
    """Model data in place of the GPU's (fit5.py's rule 'zxy-planes'), to test fit5.py."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fit5

    def fetch(kind, T, tex, norm, filt, *coords):
        return fit5.model_fetch(T, tex, norm, filt, coords, rule="zxy-planes")

    data = {"meta_synthetic": np.int64(1), "meta_device": np.array("synthetic (fit5 zxy-planes)"),
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
        sys.exit(__doc__ or "usage: texprobe5.py OUTDIR | --selfcheck [--synthetic OUTDIR]")
