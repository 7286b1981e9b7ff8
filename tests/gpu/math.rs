//! Math functions on the GPU against host references, for f32 and f64, with libdevice and with
//! cudajit's own implementations (a child process with `CUDAJIT_NO_LIBDEVICE=1`), plus the
//! fastmath approximations. Each function and type gets 2^20 random arguments over its useful
//! domain and the special values; the output is poisoned (NaN) first and every element is
//! compared. One line per function/type/path: `math: exp libdevice f32 max_ulp=1 at x=...`.
//!
//! Error measure: the distance in ulps between the GPU's result and the reference rounded to
//! the result type (floats mapped to ordered integers, so the sign of zero counts as one ulp).
//! References: f64 std functions (glibc, within about 1 ulp, so f64 bounds allow one ulp more
//! than the implementation's own error); for f32, the f64 function rounded to f32. Below the
//! smallest normal number the ulp is meaningless for most implementations, so there an absolute
//! error of `bound * MIN_POSITIVE` is accepted. NaN must give NaN, infinities must match.

use cudajit::codegen::{Expr, Float, Kernel, PtxOptions};
use cudajit::prelude::*;
use cudajit::DeviceCopy;

use crate::common::{ctx, erf_ref, Rng};
use crate::support::child::Child;

const CHILD: &str = "CUDAJIT_MATH_GPU_CHILD";
const N: usize = 1 << 20;

/// How arguments are drawn.
#[derive(Clone, Copy)]
enum Dom {
    /// Uniform in [a, b].
    Lin(f64, f64),
    /// `±2^u`, u uniform in [a, b]; the bool: both signs.
    Mag(f64, f64, bool),
}

impl Dom {
    fn draw(self, r: &mut Rng) -> f64 {
        let u = (r.f64() + 1.0) * 0.5;
        match self {
            Dom::Lin(a, b) => a + (b - a) * u,
            Dom::Mag(a, b, signed) => {
                let m = (a + (b - a) * u).exp2();
                if signed && r.next_u64() & 1 == 1 {
                    -m
                } else {
                    m
                }
            }
        }
    }
}

/// One function: domains per type (arguments are drawn from each listed domain in turn),
/// bounds in ulps per type and path `[libdevice, own]`, the host reference, the device code.
struct Case {
    name: &'static str,
    x32: &'static [Dom],
    x64: &'static [Dom],
    y: Option<&'static [Dom]>,
    ulp32: [u64; 2],
    ulp64: [u64; 2],
    reference: fn(f64, f64) -> f64,
    dev32: fn(Expr<f32>, Expr<f32>) -> Expr<f32>,
    dev64: fn(Expr<f64>, Expr<f64>) -> Expr<f64>,
}

macro_rules! case {
    ($name:literal, $x32:expr, $x64:expr, $y:expr, $u32:expr, $u64:expr, |$a:ident, $b:ident| $r:expr, |$x:ident, $yy:ident| $d:expr) => {
        Case {
            name: $name,
            x32: $x32,
            x64: $x64,
            y: $y,
            ulp32: $u32,
            ulp64: $u64,
            reference: |$a, $b| {
                let _ = $b;
                $r
            },
            dev32: |$x, $yy| {
                let _ = $yy;
                $d
            },
            dev64: |$x, $yy| {
                let _ = $yy;
                $d
            },
        }
    };
}

const SMALL: Dom = Dom::Lin(-10.0, 10.0);

/// The functions. Bounds: libdevice as documented by CUDA (f64 plus one for the reference);
/// own as designed (docs/MATH.md).
fn cases() -> Vec<Case> {
    use Dom::*;
    vec![
        case!(
            "rsqrt",
            &[Mag(-126.0, 127.0, false)],
            &[Mag(-1022.0, 1023.0, false)],
            None,
            [2, 1],
            [2, 2],
            |x, y| 1.0 / x.sqrt(),
            |x, y| x.rsqrt()
        ),
        case!(
            "cbrt",
            &[Mag(-149.0, 127.0, true)],
            &[Mag(-1074.0, 1023.0, true)],
            None,
            [1, 1],
            [2, 2],
            |x, y| x.cbrt(),
            |x, y| x.cbrt()
        ),
        case!(
            "exp",
            &[Lin(-104.0, 89.0), SMALL],
            &[Lin(-746.0, 710.0), SMALL],
            None,
            [2, 1],
            [2, 2],
            |x, y| x.exp(),
            |x, y| x.exp()
        ),
        case!(
            "exp2",
            &[Lin(-150.0, 128.0), SMALL],
            &[Lin(-1075.0, 1024.0), SMALL],
            None,
            [2, 1],
            [2, 2],
            |x, y| x.exp2(),
            |x, y| x.exp2()
        ),
        case!(
            "exp_m1",
            &[Lin(-20.0, 89.0), Mag(-30.0, 0.0, true)],
            &[Lin(-40.0, 710.0), Mag(-60.0, 0.0, true)],
            None,
            [1, 1],
            [2, 2],
            |x, y| x.exp_m1(),
            |x, y| x.exp_m1()
        ),
        case!(
            "ln",
            &[Mag(-149.0, 128.0, false), Lin(0.5, 2.0)],
            &[Mag(-1074.0, 1024.0, false), Lin(0.5, 2.0)],
            None,
            [1, 1],
            [2, 2],
            |x, y| x.ln(),
            |x, y| x.ln()
        ),
        case!(
            "log2",
            &[Mag(-149.0, 128.0, false), Lin(0.5, 2.0)],
            &[Mag(-1074.0, 1024.0, false), Lin(0.5, 2.0)],
            None,
            [1, 1],
            [2, 2],
            |x, y| x.log2(),
            |x, y| x.log2()
        ),
        case!(
            "log10",
            &[Mag(-149.0, 128.0, false), Lin(0.5, 2.0)],
            &[Mag(-1074.0, 1024.0, false), Lin(0.5, 2.0)],
            None,
            [2, 1],
            [2, 2],
            |x, y| x.log10(),
            |x, y| x.log10()
        ),
        case!(
            "ln_1p",
            &[
                Lin(-1.0, 4.0),
                Mag(-40.0, 30.0, false),
                Mag(-40.0, -1.0, true)
            ],
            &[
                Lin(-1.0, 4.0),
                Mag(-80.0, 300.0, false),
                Mag(-80.0, -1.0, true)
            ],
            None,
            [1, 1],
            [2, 2],
            |x, y| x.ln_1p(),
            |x, y| x.ln_1p()
        ),
        case!(
            "powf",
            &[Mag(-10.0, 10.0, false), Lin(0.0, 4.0)],
            &[Mag(-10.0, 10.0, false), Lin(0.0, 4.0)],
            Some(&[Lin(-20.0, 20.0), Lin(-3.0, 3.0)]),
            [4, 1],
            [3, 2],
            |x, y| x.powf(y),
            |x, y| x.powf(y)
        ),
        case!(
            "sin",
            &[SMALL, Lin(-1e5, 1e5)],
            &[SMALL, Lin(-1e9, 1e9)],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.sin(),
            |x, y| x.sin()
        ),
        case!(
            "cos",
            &[SMALL, Lin(-1e5, 1e5)],
            &[SMALL, Lin(-1e9, 1e9)],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.cos(),
            |x, y| x.cos()
        ),
        case!(
            "tan",
            &[SMALL, Lin(-1e5, 1e5)],
            &[SMALL, Lin(-1e9, 1e9)],
            None,
            [4, 1],
            [3, 2],
            |x, y| x.tan(),
            |x, y| x.tan()
        ),
        case!(
            "asin",
            &[Lin(-1.0, 1.0), Mag(-30.0, 0.0, true)],
            &[Lin(-1.0, 1.0), Mag(-60.0, 0.0, true)],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.asin(),
            |x, y| x.asin()
        ),
        case!(
            "acos",
            &[Lin(-1.0, 1.0)],
            &[Lin(-1.0, 1.0)],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.acos(),
            |x, y| x.acos()
        ),
        case!(
            "atan",
            &[Mag(-30.0, 30.0, true), SMALL],
            &[Mag(-60.0, 60.0, true), SMALL],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.atan(),
            |x, y| x.atan()
        ),
        case!(
            "atan2",
            &[SMALL, Mag(-20.0, 20.0, true)],
            &[SMALL, Mag(-40.0, 40.0, true)],
            Some(&[SMALL, Mag(-20.0, 20.0, true)]),
            [3, 1],
            [3, 2],
            |x, y| x.atan2(y),
            |x, y| x.atan2(y)
        ),
        case!(
            "sinh",
            &[Lin(-90.0, 90.0), Lin(-2.0, 2.0)],
            &[Lin(-711.0, 711.0), Lin(-2.0, 2.0)],
            None,
            [3, 1],
            [3, 2],
            |x, y| x.sinh(),
            |x, y| x.sinh()
        ),
        case!(
            "cosh",
            &[Lin(-90.0, 90.0), Lin(-2.0, 2.0)],
            &[Lin(-711.0, 711.0), Lin(-2.0, 2.0)],
            None,
            [2, 1],
            [2, 2],
            |x, y| x.cosh(),
            |x, y| x.cosh()
        ),
        // libdevice's f64 tanh measured 3 ulp from Rust's (glibc-grade) tanh on an H200.
        case!(
            "tanh",
            &[SMALL, Mag(-30.0, 0.0, true)],
            &[Lin(-25.0, 25.0), Mag(-60.0, 0.0, true)],
            None,
            [2, 1],
            [3, 2],
            |x, y| x.tanh(),
            |x, y| x.tanh()
        ),
        case!(
            "erf",
            &[Lin(-6.0, 6.0), Mag(-30.0, 0.0, true)],
            &[Lin(-7.0, 7.0), Mag(-60.0, 0.0, true)],
            None,
            [2, 1],
            [3, 2],
            |x, y| erf_ref(x),
            |x, y| x.erf()
        ),
    ]
}

/// f32 and f64 on the host side of the test.
trait TFloat:
    Float + DeviceCopy + cudajit::AnyBitPattern + Copy + std::fmt::Display + std::fmt::LowerExp
{
    const NAME: &'static str;
    const NAN: Self;
    const MIN_POSITIVE: f64;
    /// Above this |x| the own sin/cos/tan are not accurate (no Payne-Hanek reduction).
    const TRIG_LIMIT: f64;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Distance in ulps (ordered integers).
    fn ulps(a: Self, b: Self) -> u64;
    fn dev(c: &Case) -> fn(Expr<Self>, Expr<Self>) -> Expr<Self>;
    fn specials() -> Vec<f64>;
}

impl TFloat for f32 {
    const NAME: &'static str = "f32";
    const NAN: f32 = f32::NAN;
    const MIN_POSITIVE: f64 = f32::MIN_POSITIVE as f64;
    const TRIG_LIMIT: f64 = 1e6;
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn ulps(a: f32, b: f32) -> u64 {
        let o = |v: f32| {
            let b = v.to_bits() as i32;
            (if b < 0 { i32::MIN.wrapping_sub(b) } else { b }) as i64
        };
        (o(a) - o(b)).unsigned_abs()
    }
    fn dev(c: &Case) -> fn(Expr<f32>, Expr<f32>) -> Expr<f32> {
        c.dev32
    }
    fn specials() -> Vec<f64> {
        let mut v = vec![
            f32::MIN_POSITIVE as f64,
            1e-45,
            f32::MAX as f64,
            88.72,
            88.73,
            -87.3,
            -103.9,
            -104.0,
            128.0,
            -150.0,
        ];
        v.extend([3.4e38, 1e30, 1e6, 1e5, -1e5]);
        v
    }
}

impl TFloat for f64 {
    const NAME: &'static str = "f64";
    const NAN: f64 = f64::NAN;
    const MIN_POSITIVE: f64 = f64::MIN_POSITIVE;
    const TRIG_LIMIT: f64 = 1e15;
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn ulps(a: f64, b: f64) -> u64 {
        let o = |v: f64| {
            let b = v.to_bits() as i64;
            (if b < 0 { i64::MIN.wrapping_sub(b) } else { b }) as i128
        };
        (o(a) - o(b)).unsigned_abs() as u64
    }
    fn dev(c: &Case) -> fn(Expr<f64>, Expr<f64>) -> Expr<f64> {
        c.dev64
    }
    fn specials() -> Vec<f64> {
        vec![
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            709.78,
            709.79,
            -708.4,
            -745.1,
            -746.0,
            1024.0,
            -1075.0,
            1e300,
            1e15,
            1e9,
            -1e9,
        ]
    }
}

/// The special values every function gets (as x, and paired with each other for x, y).
fn common_specials<T: TFloat>() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    v.extend(T::specials());
    v.extend(T::specials().iter().map(|x| -x));
    v
}

/// Where the fastmath forms are checked.
fn fast_domain(name: &str, x: f64) -> f64 {
    let x = if x.is_nan() {
        1.0
    } else {
        x.clamp(-20.0, 20.0)
    };
    match name {
        "ln" | "log2" | "log10" | "powf" | "rsqrt" => x.abs().max(1e-3),
        "sin" | "cos" | "tan" => x.clamp(-std::f64::consts::PI, std::f64::consts::PI),
        _ => x,
    }
}

/// Runs one function on one type (fastmath or not), prints the worst case and checks the bound.
fn check<T: TFloat>(c: &Case, path: &str, fast: bool, s: &cudajit::Stream, rng: &mut Rng) {
    let dev = T::dev(c);
    let name = format!(
        "math_{}_{}{}",
        c.name,
        T::NAME,
        if fast { "_fast" } else { "" }
    );
    let k = Kernel::<(&[T], &[T], &mut [T])>::build_with(
        &name,
        PtxOptions::default().fastmath(fast),
        |k, (x, y, out)| {
            let i = k.grid1();
            k.if_(i.lt(x.len()), |_| out.set(i, dev(x.at(i), y.at(i))));
        },
    )
    .unwrap();
    let doms = if T::NAME == "f32" { c.x32 } else { c.x64 };
    let mut xs: Vec<f64> = Vec::with_capacity(N);
    let mut ys: Vec<f64> = Vec::with_capacity(N);
    let sp = common_specials::<T>();
    for &a in &sp {
        for &b in if c.y.is_some() { &sp[..] } else { &sp[..1] } {
            xs.push(a);
            ys.push(b);
        }
    }
    let two = c.y.is_some();
    while xs.len() < N {
        let i = xs.len();
        let mut x = doms[i % doms.len()].draw(rng);
        let mut y = c.y.map_or(0.0, |d| d[i % d.len()].draw(rng));
        if c.name == "powf" && i % 8 == 0 {
            // Negative bases with integer exponents.
            x = -x;
            y = y.round();
        }
        xs.push(x);
        ys.push(y);
    }
    if fast {
        // The approximations are documented on moderate arguments only.
        for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
            *x = fast_domain(c.name, *x);
            *y = y.clamp(-4.0, 4.0);
        }
    }
    let hx: Vec<T> = xs.iter().map(|&v| T::from_f64(v)).collect();
    let hy: Vec<T> = ys.iter().map(|&v| T::from_f64(v)).collect();
    let ctx = s.context();
    let dx = s.to_device(&hx).unwrap();
    let dy = s.to_device(&hy).unwrap();
    let mut dout = ctx.alloc::<T, _>(N).unwrap();
    dout.fill_async(T::NAN, s).unwrap();
    k.launch(
        s,
        LaunchConfig::for_num_elems(N, 256).unwrap(),
        (&dx, &dy, &mut dout),
    )
    .unwrap();
    let got = dout.to_vec_async(s).unwrap();
    let bound = if fast {
        0
    } else if T::NAME == "f32" {
        c.ulp32[(path == "own") as usize]
    } else {
        c.ulp64[(path == "own") as usize]
    };
    let (mut worst, mut at) = (0u64, 0usize);
    let mut fast_worst = 0f64;
    for i in 0..N {
        let (x, y) = (hx[i].to_f64(), hy[i].to_f64());
        let want_f = (c.reference)(x, y);
        let want = T::from_f64(want_f);
        let g = got[i];
        let (gf, wf) = (g.to_f64(), want.to_f64());
        if fast {
            // Relative error (absolute below 1) on moderate arguments.
            // Special inputs (NaN, infinities) are outside what the approximations promise,
            // as for CUDA's `__powf(1, NaN)`.
            let special = !x.is_finite() || !y.is_finite();
            if !special && wf.is_finite() && !(c.name == "tan" && wf.abs() > 100.0) {
                let e = (gf - want_f).abs() / want_f.abs().max(1.0);
                let e = if e.is_nan() { f64::INFINITY } else { e };
                if e > fast_worst {
                    fast_worst = e;
                    at = i;
                }
            }
            continue;
        }
        if path == "own" && matches!(c.name, "sin" | "cos" | "tan") && x.abs() > T::TRIG_LIMIT {
            // Beyond the own reduction's range (docs/MATH.md): only bounded, not accurate.
            // Infinite arguments give NaN; finite ones a value in [-1, 1].
            let bounded = c.name == "tan"
                || if x.is_finite() {
                    gf.abs() <= 1.0
                } else {
                    gf.is_nan()
                };
            assert!(bounded, "{} own {}({x:e}) = {gf:e}", T::NAME, c.name);
            continue;
        }
        let err = if wf.is_nan() || gf.is_nan() {
            if wf.is_nan() == gf.is_nan() {
                0
            } else {
                u64::MAX
            }
        } else if wf.is_infinite() || gf.is_infinite() {
            if wf == gf {
                0
            } else {
                u64::MAX
            }
        } else if wf.abs() < T::MIN_POSITIVE && (gf - wf).abs() <= bound as f64 * T::MIN_POSITIVE {
            0
        } else {
            T::ulps(g, want)
        };
        if err > worst {
            worst = err;
            at = i;
        }
    }
    let yl = if two {
        format!(" y={:e}", hy[at])
    } else {
        String::new()
    };
    if fast {
        let tol = match c.name {
            "sin" | "cos" | "exp2" | "log2" => 2e-6,
            "tan" | "powf" => 1e-4,
            _ => 1e-5,
        };
        println!(
            "math: {} {path} {} fastmath max_rel_err={fast_worst:.3e} at x={:e}{yl} got={:e} want={:e}",
            c.name, T::NAME, hx[at], got[at], (c.reference)(hx[at].to_f64(), hy[at].to_f64())
        );
        assert!(
            fast_worst <= tol,
            "{} {path} {} fastmath: relative error {fast_worst:e} > {tol:e}",
            c.name,
            T::NAME
        );
        return;
    }
    println!(
        "math: {} {path} {} max_ulp={} at x={:e}{yl} got={:e} want={:e}",
        c.name,
        T::NAME,
        if worst == u64::MAX {
            "NaN/inf mismatch".to_string()
        } else {
            worst.to_string()
        },
        hx[at],
        got[at],
        T::from_f64((c.reference)(hx[at].to_f64(), hy[at].to_f64()))
    );
    assert!(
        worst <= bound,
        "{} {path} {}: {worst} ulps > {bound}",
        c.name,
        T::NAME
    );
}

/// Which implementation kernels get in this process.
fn path() -> &'static str {
    let k = Kernel::<(&[f32], &mut [f32])>::build("math_probe", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).exp()));
    })
    .unwrap();
    let opts = PtxOptions {
        opt: 0,
        ..PtxOptions::for_cc(9, 0)
    };
    if k.llvm_ir(&opts).unwrap().contains("__nv_expf") {
        "libdevice"
    } else {
        "own"
    }
}

/// Every function, f32 and f64, plus the fastmath forms of the f32 functions that have one.
fn run_all(expect: &str) {
    let p = path();
    if p != expect {
        println!("math: libdevice not found on this machine: the libdevice path is not tested");
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let t = std::time::Instant::now();
    let mut failures = Vec::new();
    for case in cases() {
        for fast in [false, true] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if fast {
                    if matches!(
                        case.name,
                        "exp"
                            | "exp2"
                            | "ln"
                            | "log2"
                            | "log10"
                            | "powf"
                            | "sin"
                            | "cos"
                            | "tan"
                            | "rsqrt"
                    ) {
                        check::<f32>(&case, p, true, &s, &mut rng);
                    }
                } else {
                    check::<f32>(&case, p, false, &s, &mut rng);
                    check::<f64>(&case, p, false, &s, &mut rng);
                }
            }));
            if let Err(e) = r {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| format!("{:?}", e.downcast_ref::<&str>()));
                failures.push(msg);
            }
        }
    }
    println!(
        "math: {p} path checked in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "math failures ({p}):\n{}",
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn math_functions_libdevice() {
    run_all("libdevice");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn math_functions_own_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    run_all("own");
    println!("CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn math_functions_own() {
    let out = Child::test("math::math_functions_own_child", CHILD, "1")
        .env("CUDAJIT_NO_LIBDEVICE", "1")
        .run();
    let text = out.text();
    for l in text.lines().filter(|l| l.starts_with("math:")) {
        println!("{l}");
    }
    assert!(out.passed(), "{text}");
}

/// `exp2_approx` (`ex2.approx.ftz.f32`) on 2^20 arguments rich in special values, output
/// poisoned first: within 2^-21 relative of 2^x rounded to f32 (the simulator's value; the
/// PTX ISA promises about 2 ulp), subnormal arguments read as 0, subnormal results flushed
/// (either side of the boundary within the error), ±∞ → +∞ / +0, a NaN gives a NaN.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_approx_is_the_hardware_approximation() {
    let mut rng = Rng::new();
    let mut x = crate::common::special_f32(&mut rng, N);
    // Most arguments where 2^x is a normal f32, the rest special.
    for v in x.iter_mut().step_by(2) {
        *v = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 260.0 - 130.0;
    }
    let got = crate::common::map_f32("exp2_approx", &x, |a| a.exp2_approx());
    let mut worst = 0.0f64;
    for (&a, &g) in x.iter().zip(&got) {
        let ok = if a.is_nan() {
            g.is_nan()
        } else {
            let a = if a.is_subnormal() { 0.0 } else { a as f64 };
            let want = a.exp2();
            // At and near the top of the range (2^128 itself is past f32::MAX by less than
            // one part in 10^7) the approximation may overflow to infinity.
            if want.is_infinite() || want > f32::MAX as f64 * (1.0 - 1e-6) {
                g == f32::INFINITY || (g as f64 - want).abs() <= want * 2f64.powi(-21)
            } else if want < f32::MIN_POSITIVE as f64 * (1.0 + 1e-6) {
                g == 0.0 || (g as f64 - want).abs() <= want * 2f64.powi(-21)
            } else {
                let err = (g as f64 - want).abs() / want;
                worst = worst.max(err);
                err <= 2f64.powi(-21)
            }
        };
        assert!(ok, "exp2_approx({a:e}) = {g:e} ({:#x})", g.to_bits());
    }
    println!("exp2_approx: worst relative error {worst:.3e} over {N} arguments");
}
