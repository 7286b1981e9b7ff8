//! The same kernels on the GPU and on the simulator: `record FILE` runs a battery of kernels
//! (arithmetic, comparisons, casts, integer and bit operations, math functions, warp
//! intrinsics, atomics, reductions) on inputs rich in special values and writes every output
//! element's bits; `compare A B` compares two such files kernel by kernel: bitwise for exact
//! operations (two NaNs count as equal and are counted apart: Rust leaves NaN bits open, the GPU
//! returns canonical NaNs), in ulps for the math functions (sin/cos/tan beyond the own
//! implementation's range only bounded, as docs/MATH.md documents).
//!
//! Without arguments it does both in one go: records on the GPU, records on the simulator (this
//! program again, in a child process with `CUDAJIT_SIMULATOR=1`), compares the two, and removes
//! the recordings (in a temporary folder). Exits 1 if they differ.
//!
//! ```sh
//! cargo run --release --example sim_vs_gpu                                          # on a GPU
//! cargo run --release --example sim_vs_gpu -- record gpu.bin                         # on a GPU
//! CUDAJIT_SIMULATOR=1 cargo run --release --example sim_vs_gpu -- record sim.bin
//! cargo run --release --example sim_vs_gpu -- compare gpu.bin sim.bin
//! ```

use std::collections::BTreeMap;
use std::io::Write;

use cudajit::codegen::{select, Expr, Kernel, Scalar, ScalarTy, FULL_MASK};
use cudajit::ops::ReduceOps;
use cudajit::prelude::*;

/// Elements per kernel.
const N: usize = 8192;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => record_both_and_compare(),
        ["record", path] => record(path),
        ["compare", a, b] => compare(a, b),
        _ => Err(Error::Usage(
            "usage: sim_vs_gpu [record FILE | compare A B]".into(),
        )),
    };
    if let Err(e) = res {
        eprintln!("sim_vs_gpu: {e}");
        std::process::exit(1);
    }
}

/// No arguments: `record` here (on the GPU), `record` in a child process on the simulator,
/// then `compare`, in a temporary folder removed at the end.
fn record_both_and_compare() -> cudajit::Result<()> {
    let io = |what: &str, e: std::io::Error| Error::Usage(format!("{what}: {e}"));
    let dir = std::env::temp_dir().join(format!("sim_vs_gpu.{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir.display().to_string(), e))?;
    let res = (|| {
        let gpu = dir.join("gpu.bin").display().to_string();
        let sim = dir.join("sim.bin").display().to_string();
        record(&gpu)?;
        if cudajit::on_simulator() {
            println!("already on the simulator (CUDAJIT_SIMULATOR): nothing to compare with");
            return Ok(());
        }
        let exe = std::env::current_exe().map_err(|e| io("finding this program", e))?;
        let status = std::process::Command::new(exe)
            .args(["record", &sim])
            .env("CUDAJIT_SIMULATOR", "1")
            .status()
            .map_err(|e| io("running this program on the simulator", e))?;
        if !status.success() {
            return Err(Error::Usage(format!(
                "recording on the simulator failed ({status})"
            )));
        }
        compare(&gpu, &sim)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    res
}

/// Deterministic values: special ones first, then a spread of magnitudes and signs.
fn f32s(seed: u64) -> Vec<f32> {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        1e-40,
        -1e-45,
        f32::MAX,
        f32::MIN,
        16_777_217.0,
        1e30,
        -1e-30,
        std::f32::consts::PI,
        100.0,
    ];
    let mut r = Rng(seed);
    (0..N)
        .map(|i| match i {
            i if i < special.len() => special[i],
            i if i % 7 == 0 => special[r.next() as usize % special.len()],
            _ => {
                let m = (r.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                m * 2f32.powi((r.next() % 40) as i32 - 20)
            }
        })
        .collect()
}

fn f64s(seed: u64) -> Vec<f64> {
    let mut r = Rng(seed ^ 0x5555);
    f32s(seed)
        .into_iter()
        .map(|v| v as f64 * (1.0 + (r.next() >> 12) as f64 * 2f64.powi(-60)))
        .collect()
}

fn i32s(seed: u64) -> Vec<i32> {
    let special = [
        0,
        1,
        -1,
        2,
        -2,
        31,
        32,
        33,
        63,
        64,
        i32::MIN,
        i32::MAX,
        7,
        -7,
    ];
    let mut r = Rng(seed);
    (0..N)
        .map(|i| {
            if i < special.len() {
                special[i]
            } else if i % 5 == 0 {
                special[r.next() as usize % special.len()]
            } else {
                r.next() as i32 >> (r.next() % 31)
            }
        })
        .collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11 ^ self.0 << 7
    }
}

/// Results by kernel name: the output bits, and whether the comparison is in ulps (f32/f64
/// math) or bitwise.
type Results = BTreeMap<String, (u8, Vec<u64>)>;

const EXACT: u8 = 0;
const ULP32: u8 = 1;
const ULP64: u8 = 2;
/// sin/cos/tan beyond the own implementation's range: NaN where the other is NaN, else
/// sin/cos in [-1, 1] and tan finite or infinite alike (f32 or f64 by the kernel's name).
const BOUNDED: u8 = 3;
/// Exact, with an f32 / f64 result.
const EXACT_F32: u8 = 4;
const EXACT_F64: u8 = 5;

struct Rec<'a> {
    ctx: &'a Context,
    s: Stream,
    out: Results,
}

impl Rec<'_> {
    /// `out[i] = f(x[i], y[i])`.
    fn bin<T: Scalar, R: Scalar>(
        &mut self,
        name: &str,
        kind: u8,
        x: &[T],
        y: &[T],
        f: impl Fn(Expr<T>, Expr<T>) -> Expr<R>,
    ) -> cudajit::Result<()> {
        let k = Kernel::<(&[T], &[T], &mut [R])>::build(name, |k, (xa, ya, o)| {
            let i = k.grid1();
            k.if_(i.lt(o.len()), |_| o.set(i, f(xa.at(i), ya.at(i))));
        })?;
        let (dx, dy) = (self.s.to_device(x)?, self.s.to_device(y)?);
        let mut o = self.ctx.zeros::<R, _>(x.len())?;
        k.launch(
            &self.s,
            LaunchConfig::for_num_elems(x.len(), 128)?,
            (&dx, &dy, &mut o),
        )?;
        let v = o.to_vec_async(&self.s)?;
        // Exact kernels with a float result: marked so that NaNs compare as NaNs.
        let kind = match (kind, R::TY) {
            (EXACT, ScalarTy::F32) => EXACT_F32,
            (EXACT, ScalarTy::F64) => EXACT_F64,
            _ => kind,
        };
        self.out.insert(
            name.to_string(),
            (kind, v.into_iter().map(R::to_bits).collect()),
        );
        Ok(())
    }
}

macro_rules! float_battery {
    ($r:expr, $T:ty, $x:expr, $y:expr, $ulp:expr, $p:literal, $far:expr) => {{
        let (x, y) = (&$x, &$y);
        let r = $r;
        r.bin(concat!($p, "_add"), EXACT, x, y, |a, b| a + b)?;
        r.bin(concat!($p, "_sub"), EXACT, x, y, |a, b| a - b)?;
        r.bin(concat!($p, "_mul"), EXACT, x, y, |a, b| a * b)?;
        r.bin(concat!($p, "_div"), EXACT, x, y, |a, b| a / b)?;
        r.bin(concat!($p, "_rem"), EXACT, x, y, |a, b| a % b)?;
        r.bin(concat!($p, "_min"), EXACT, x, y, |a, b| a.min(b))?;
        r.bin(concat!($p, "_max"), EXACT, x, y, |a, b| a.max(b))?;
        r.bin(concat!($p, "_fma"), EXACT, x, y, |a, b| a.mul_add(b, a))?;
        r.bin(concat!($p, "_sqrt"), EXACT, x, y, |a, _| a.sqrt())?;
        r.bin(concat!($p, "_abs_floor_ceil"), EXACT, x, y, |a, b| {
            a.abs().floor() - b.ceil()
        })?;
        r.bin(concat!($p, "_trunc_round"), EXACT, x, y, |a, b| {
            a.trunc() + b.round()
        })?;
        r.bin(concat!($p, "_copysign"), EXACT, x, y, |a, b| a.copysign(b))?;
        r.bin(concat!($p, "_cmp_select"), EXACT, x, y, |a, b| {
            select(a.lt(b), a, select(a.ge(b), b, a * 2.0 as $T))
        })?;
        r.bin(concat!($p, "_ne_eq"), EXACT, x, y, |a, b| {
            a.ne(b).or(a.eq(b.abs()))
        })?;
        r.bin(concat!($p, "_to_i32"), EXACT, x, y, |a, _| a.cast::<i32>())?;
        r.bin(concat!($p, "_to_u32"), EXACT, x, y, |a, _| a.cast::<u32>())?;
        r.bin(concat!($p, "_to_i64"), EXACT, x, y, |a, _| a.cast::<i64>())?;
        r.bin(concat!($p, "_to_u64"), EXACT, x, y, |a, _| a.cast::<u64>())?;
        r.bin(concat!($p, "_to_bool"), EXACT, x, y, |a, _| {
            a.cast::<bool>()
        })?;
        r.bin(concat!($p, "_roundtrip"), EXACT, x, y, |a, _| {
            a.cast::<f64>().cast::<f32>()
        })?;
        r.bin(concat!($p, "_is_nan_inf"), EXACT, x, y, |a, b| {
            a.is_nan().or(b.is_infinite())
        })?;
        r.bin(concat!($p, "_exp"), $ulp, x, y, |a, _| a.exp())?;
        r.bin(concat!($p, "_exp2"), $ulp, x, y, |a, _| a.exp2())?;
        r.bin(concat!($p, "_exp_m1"), $ulp, x, y, |a, _| a.exp_m1())?;
        r.bin(concat!($p, "_ln"), $ulp, x, y, |a, _| a.ln())?;
        r.bin(concat!($p, "_log2"), $ulp, x, y, |a, _| a.log2())?;
        r.bin(concat!($p, "_log10"), $ulp, x, y, |a, _| a.log10())?;
        r.bin(concat!($p, "_ln_1p"), $ulp, x, y, |a, _| a.ln_1p())?;
        r.bin(concat!($p, "_powf"), $ulp, x, y, |a, b| a.powf(b))?;
        // sin/cos/tan: in ulps within the own implementation's range (docs/MATH.md), beyond
        // it only bounded (the simulator computes std's accurate value there, as libdevice
        // does; the own implementation on the GPU is bounded but not accurate).
        let far: $T = $far;
        let nan = <$T>::NAN;
        r.bin(concat!($p, "_sin"), $ulp, x, y, move |a, _| {
            select(a.abs().le(far), a.sin(), nan)
        })?;
        r.bin(concat!($p, "_cos"), $ulp, x, y, move |a, _| {
            select(a.abs().le(far), a.cos(), nan)
        })?;
        r.bin(concat!($p, "_tan"), $ulp, x, y, move |a, _| {
            select(a.abs().le(far), a.tan(), nan)
        })?;
        r.bin(concat!($p, "_sin_far"), BOUNDED, x, y, move |a, _| {
            select(a.abs().gt(far), a.sin(), 0.0)
        })?;
        r.bin(concat!($p, "_cos_far"), BOUNDED, x, y, move |a, _| {
            select(a.abs().gt(far), a.cos(), 0.0)
        })?;
        r.bin(concat!($p, "_tan_far"), BOUNDED, x, y, move |a, _| {
            select(a.abs().gt(far), a.tan(), 0.0)
        })?;
        r.bin(concat!($p, "_asin"), $ulp, x, y, |a, _| a.asin())?;
        r.bin(concat!($p, "_acos"), $ulp, x, y, |a, _| a.acos())?;
        r.bin(concat!($p, "_atan"), $ulp, x, y, |a, _| a.atan())?;
        r.bin(concat!($p, "_atan2"), $ulp, x, y, |a, b| a.atan2(b))?;
        r.bin(concat!($p, "_sinh"), $ulp, x, y, |a, _| a.sinh())?;
        r.bin(concat!($p, "_cosh"), $ulp, x, y, |a, _| a.cosh())?;
        r.bin(concat!($p, "_tanh"), $ulp, x, y, |a, _| a.tanh())?;
        r.bin(concat!($p, "_erf"), $ulp, x, y, |a, _| a.erf())?;
        r.bin(concat!($p, "_cbrt"), $ulp, x, y, |a, _| a.cbrt())?;
        r.bin(concat!($p, "_rsqrt"), $ulp, x, y, |a, _| a.rsqrt())?;
    }};
}

macro_rules! int_battery {
    ($r:expr, $T:ty, $x:expr, $y:expr, $p:literal) => {{
        let (x, y): (&[$T], &[$T]) = (&$x, &$y);
        let r = $r;
        r.bin(concat!($p, "_add_sub_mul"), EXACT, x, y, |a, b| {
            (a + b) * b - a
        })?;
        r.bin(concat!($p, "_div"), EXACT, x, y, |a, b| a / b)?;
        r.bin(concat!($p, "_rem"), EXACT, x, y, |a, b| a % b)?;
        r.bin(concat!($p, "_bits"), EXACT, x, y, |a, b| {
            (a & b) | (a ^ (b + b))
        })?;
        r.bin(concat!($p, "_shifts"), EXACT, x, y, |a, b| {
            (a << b) ^ (a >> b)
        })?;
        r.bin(concat!($p, "_min_max"), EXACT, x, y, |a, b| {
            a.min(b) - a.max(b)
        })?;
        r.bin(concat!($p, "_cmp"), EXACT, x, y, |a, b| {
            a.lt(b).and(b.ge(a + a))
        })?;
        r.bin(concat!($p, "_to_f32"), EXACT, x, y, |a, _| a.cast::<f32>())?;
        r.bin(concat!($p, "_to_f64"), EXACT, x, y, |a, _| a.cast::<f64>())?;
        r.bin(concat!($p, "_to_i32"), EXACT, x, y, |a, _| a.cast::<i32>())?;
        r.bin(concat!($p, "_to_u64"), EXACT, x, y, |a, _| a.cast::<u64>())?;
        r.bin(concat!($p, "_popc_clz_ffs"), EXACT, x, y, |a, b| {
            a.popc() * 10000u32 + a.clz() * 100u32 + b.ffs()
        })?;
        r.bin(concat!($p, "_brev"), EXACT, x, y, |a, _| a.brev())?;
    }};
}

fn record(path: &str) -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    println!(
        "recording on {} ({})",
        ctx.device().name()?,
        if cudajit::on_simulator() {
            "simulator"
        } else {
            "GPU"
        }
    );
    let mut r = Rec {
        ctx: &ctx,
        s: ctx.new_stream()?,
        out: Results::new(),
    };
    let (x32, y32) = (f32s(1), f32s(2));
    let (x64, y64) = (f64s(1), f64s(2));
    float_battery!(&mut r, f32, x32, y32, ULP32, "f32", 1e5);
    float_battery!(&mut r, f64, x64, y64, ULP64, "f64", 1e9);
    let (xi, yi) = (i32s(3), i32s(4));
    let xu: Vec<u32> = xi.iter().map(|&v| v as u32).collect();
    let yu: Vec<u32> = yi.iter().map(|&v| v as u32).collect();
    let xl: Vec<i64> = xi
        .iter()
        .zip(&yi)
        .map(|(&a, &b)| (a as i64) << 20 ^ b as i64)
        .collect();
    let xul: Vec<u64> = xl
        .iter()
        .map(|&v| v as u64 ^ 0xdead_beef_0000_0000)
        .collect();
    let yl: Vec<i64> = yi.iter().map(|&v| v as i64).collect();
    let yul: Vec<u64> = yu.iter().map(|&v| v as u64).collect();
    int_battery!(&mut r, i32, xi, yi, "i32");
    int_battery!(&mut r, u32, xu, yu, "u32");
    int_battery!(&mut r, i64, xl, yl, "i64");
    int_battery!(&mut r, u64, xul, yul, "u64");
    warps_atomics_reductions(&mut r, &xu, &x32)?;
    let mut f = std::fs::File::create(path).map_err(|e| Error::Usage(format!("{path}: {e}")))?;
    for (name, (kind, bits)) in &r.out {
        let line = format!(
            "{name} {kind} {}\n",
            bits.iter()
                .map(|b| format!("{b:x}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        f.write_all(line.as_bytes())
            .map_err(|e| Error::Usage(format!("{path}: {e}")))?;
    }
    println!(
        "{} kernels, {N} elements each, written to {path}",
        r.out.len()
    );
    Ok(())
}

fn warps_atomics_reductions(r: &mut Rec<'_>, xu: &[u32], x32: &[f32]) -> cudajit::Result<()> {
    let (ctx, s) = (r.ctx, &r.s);
    // Shuffles, votes and match on the warp's lanes, then with lanes 20..31 inactive.
    let k = Kernel::<(&[u32], &mut [u32])>::build("warp_mix", |k, (x, o)| {
        let i = k.grid1();
        let v = x.at(i);
        let lane = k.lane_id();
        let down = k.shfl_down_sync(FULL_MASK, v, 3u32);
        let xor = k.shfl_xor_sync(FULL_MASK, v, 5u32);
        let idx = k.shfl_sync(FULL_MASK, v, lane * 7u32);
        let ballot = k.ballot_sync(FULL_MASK, v.gt(1u32 << 31));
        let any = k.match_any_sync(FULL_MASK, v & 3u32);
        let out = k.var(down ^ (xor << 1u32) ^ idx ^ ballot ^ any);
        k.if_(lane.lt(20u32), |k| {
            let m = k.activemask();
            let up = k.shfl_up_sync(m, v, 2u32);
            let all = k.all_sync(m, v.gt(7u32)).cast::<u32>();
            out.set(out.get() + up + m + all);
        });
        o.set(i, out.get());
    })?;
    let dx = s.to_device(xu)?;
    let mut o = ctx.zeros::<u32, _>(xu.len())?;
    k.launch(
        s,
        LaunchConfig::new((xu.len() / 128) as u32, 128),
        (&dx, &mut o),
    )?;
    let v = o.to_vec_async(s)?;
    r.out.insert(
        "warp_mix".into(),
        (EXACT, v.into_iter().map(u64::from).collect()),
    );
    // An atomic histogram (integer atomics commute: the counts are exact on both).
    let k = Kernel::<(&[u32], &mut [u32])>::build("atomic_hist", |k, (x, h)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            h.atomic_add(x.at(i) % 64u32, 1u32);
            h.atomic_max(64u32, x.at(i));
        });
    })?;
    let mut h = ctx.zeros::<u32, _>(65)?;
    k.launch(
        s,
        LaunchConfig::for_num_elems(xu.len(), 128)?,
        (&dx, &mut h),
    )?;
    let v = h.to_vec_async(s)?;
    r.out.insert(
        "atomic_hist".into(),
        (EXACT, v.into_iter().map(u64::from).collect()),
    );
    // Deterministic reductions over finite values: bitwise equal.
    let finite: Vec<f32> = x32
        .iter()
        .map(|&v| {
            if v.is_finite() {
                v.clamp(-1e6, 1e6)
            } else {
                0.5
            }
        })
        .collect();
    let big: Vec<f32> = (0..1 << 20)
        .map(|i| finite[i % finite.len()] * (1.0 + i as f32 * 1e-7))
        .collect();
    let d = s.to_device(&big)?;
    let sums = vec![
        d.sum(s)?.to_bits() as u64,
        d.max(s)?.to_bits() as u64,
        d.min(s)?.to_bits() as u64,
        d.argmax(s)?,
        d.argmin(s)?,
    ];
    r.out.insert("reductions".into(), (EXACT, sums));
    Ok(())
}

/// How two results of one kernel differ.
#[derive(Default)]
struct Diff {
    /// Elements that differ beyond what the kind allows.
    bad: usize,
    /// Worst distance in ulps (math kernels; `u64::MAX` for NaN against a number).
    worst: u64,
    /// Elements where both are NaN with different bits (Rust leaves NaN bits open; the GPU
    /// returns canonical NaNs, the simulator the host's).
    nan_bits: usize,
    /// The first few differing elements: `(index, a, b)`.
    examples: Vec<(usize, u64, u64)>,
}

fn is_nan_bits(kind: u8, v: u64) -> bool {
    match kind {
        ULP32 | EXACT_F32 => f32::from_bits(v as u32).is_nan(),
        ULP64 | EXACT_F64 => f64::from_bits(v).is_nan(),
        _ => false,
    }
}

/// Compares two results of one kernel.
fn diff(name: &str, kind: u8, a: &[u64], b: &[u64]) -> Diff {
    let mut d = Diff::default();
    let single = name.starts_with("f32");
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        if x == y {
            continue;
        }
        if is_nan_bits(kind, x) && is_nan_bits(kind, y) {
            d.nan_bits += 1;
            continue;
        }
        let ulps = match kind {
            ULP32 => ulp_distance(
                f32::from_bits(x as u32) as f64,
                f32::from_bits(y as u32) as f64,
                true,
            ),
            ULP64 => ulp_distance(f64::from_bits(x), f64::from_bits(y), false),
            BOUNDED => {
                let f = |v: u64| {
                    if single {
                        f32::from_bits(v as u32) as f64
                    } else {
                        f64::from_bits(v)
                    }
                };
                let (p, q) = (f(x), f(y));
                let ok = if name.contains("tan") {
                    p.is_nan() == q.is_nan()
                } else {
                    (p.is_nan() && q.is_nan()) || (p.abs() <= 1.0 && q.abs() <= 1.0)
                };
                if ok {
                    0
                } else {
                    u64::MAX
                }
            }
            _ => u64::MAX,
        };
        if ulps > 0 {
            d.bad += 1;
            d.worst = d.worst.max(ulps);
            if d.examples.len() < 3 {
                d.examples.push((i, x, y));
            }
        }
    }
    d
}

fn ulp_distance(x: f64, y: f64, single: bool) -> u64 {
    if x.is_nan() && y.is_nan() {
        return 0;
    }
    if x.is_nan() || y.is_nan() {
        return u64::MAX;
    }
    let ord = |v: f64| -> i64 {
        if single {
            let b = (v as f32).to_bits() as i32 as i64;
            if b < 0 {
                i32::MIN as i64 - b
            } else {
                b
            }
        } else {
            let b = v.to_bits() as i64;
            if b < 0 {
                i64::MIN - b
            } else {
                b
            }
        }
    };
    ord(x).abs_diff(ord(y))
}

fn load(path: &str) -> cudajit::Result<Results> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Usage(format!("{path}: {e}")))?;
    let mut out = Results::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (Some(name), Some(kind), Some(bits)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let bits = bits
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|h| u64::from_str_radix(h, 16).unwrap_or(0))
            .collect();
        out.insert(name.to_string(), (kind.parse().unwrap_or(0), bits));
    }
    Ok(out)
}

fn compare(a: &str, b: &str) -> cudajit::Result<()> {
    let (ra, rb) = (load(a)?, load(b)?);
    let (mut exact_ok, mut exact_n, mut math_n, mut elems) = (0, 0, 0, 0usize);
    let mut nan_bits = 0;
    let mut failures = 0;
    println!(
        "{:<24} {:>6} {:>10} {:>10}",
        "kernel", "kind", "differing", "worst ulp"
    );
    for (name, (kind, bits)) in &ra {
        let Some((_, other)) = rb.get(name) else {
            println!("{name:<24} missing from {b}");
            failures += 1;
            continue;
        };
        elems += bits.len();
        let Diff {
            bad,
            worst,
            nan_bits: nb,
            examples,
        } = diff(name, *kind, bits, other);
        nan_bits += nb;
        let exact = matches!(*kind, EXACT | EXACT_F32 | EXACT_F64);
        let kind_s = if exact {
            "exact"
        } else {
            ["exact", "f32", "f64", "bound"][(*kind as usize).min(3)]
        };
        if exact {
            exact_n += 1;
            exact_ok += (bad == 0) as usize;
        } else {
            math_n += 1;
        }
        // Math functions: within the documented bounds (docs/MATH.md: at most 4 ulps).
        let ok = if exact || *kind == BOUNDED {
            bad == 0
        } else {
            worst <= 4
        };
        failures += (!ok) as usize;
        if bad > 0 || !ok {
            let w = if worst == u64::MAX {
                "NaN/inf".to_string()
            } else {
                worst.to_string()
            };
            println!(
                "{name:<24} {kind_s:>6} {bad:>10} {w:>10}{}",
                if ok { "" } else { "  MISMATCH" }
            );
            for (i, x, y) in examples.iter().filter(|_| !ok) {
                let show = |v: u64| match *kind {
                    ULP32 => format!("{:e} ({v:#010x})", f32::from_bits(v as u32)),
                    ULP64 => format!("{:e} ({v:#018x})", f64::from_bits(v)),
                    _ => format!("{v:#018x}"),
                };
                println!("    element {i}: {} vs {}", show(*x), show(*y));
            }
        }
    }
    println!(
        "{} kernels, {elems} elements: {exact_ok}/{exact_n} exact kernels bitwise equal (NaN bits aside), {math_n} math kernels compared in ulps or bounds; {failures} mismatching; {nan_bits} NaN results with other NaN bits (Rust leaves them open)",
        ra.len()
    );
    if failures > 0 {
        return Err(Error::Usage(format!("{failures} kernels differ")));
    }
    Ok(())
}
