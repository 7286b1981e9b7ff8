//! Rust source lines in the PTX (`PtxOptions::lineinfo`): `.file`/`.loc` directives name this
//! file and the lines of the builder calls below; with line information off, nothing changes.

use std::collections::{BTreeSet, HashMap};

use cudajit::codegen::{DeviceFn, Kernel, PtxOptions};
use cudajit::ops::{Elem, Elementwise, Scalar};

use crate::common::{check_ptx, TARGETS};

/// The `.file` entries (index to name) and `.loc` entries (file index, line) of `ptx`.
fn line_table(ptx: &str) -> (HashMap<u32, String>, Vec<(u32, u32)>) {
    let mut files = HashMap::new();
    let mut locs = Vec::new();
    for l in ptx.lines().map(str::trim) {
        let directive = |d: &str| {
            l.strip_prefix(d)
                .filter(|r| r.starts_with(char::is_whitespace))
        };
        if let Some(rest) = directive(".file") {
            let rest = rest.trim();
            let (n, name) = rest.split_once(char::is_whitespace).unwrap();
            let name = name.trim().trim_start_matches('"');
            let name = &name[..name.find('"').unwrap()];
            files.insert(n.parse().unwrap(), name.to_string());
        } else if let Some(rest) = directive(".loc") {
            // `.loc 1 12 5` or, for inlined code, `.loc 1 12 5, function_name .., inlined_at ..`.
            let mut it = rest.split(',').next().unwrap().split_whitespace();
            let f: u32 = it.next().unwrap().parse().unwrap();
            let line: u32 = it.next().unwrap().parse().unwrap();
            locs.push((f, line));
        }
    }
    (files, locs)
}

/// The lines of this file that `ptx`'s `.loc` entries name (but line 0, which LLVM gives
/// instructions merged from several lines); panics if an entry names another file (cudajit's own sources would mean a builder method lacks its location guard).
fn lines_here(ptx: &str) -> BTreeSet<u32> {
    let (files, locs) = line_table(ptx);
    assert!(
        !files.is_empty() && !locs.is_empty(),
        "no line table:\n{ptx}"
    );
    let mut out = BTreeSet::new();
    for (f, line) in locs {
        if line == 0 {
            // Instructions the optimiser merged from several lines.
            continue;
        }
        let name = &files[&f];
        assert!(
            name.ends_with("tests/codegen/lines.rs"),
            "a .loc names {name}:{line}, not this test file:\n{ptx}"
        );
        out.insert(line);
    }
    out
}

fn on(cc: (u32, u32)) -> PtxOptions {
    PtxOptions::for_cc(cc.0, cc.1).lineinfo(true)
}

fn off(cc: (u32, u32)) -> PtxOptions {
    PtxOptions::for_cc(cc.0, cc.1).lineinfo(false)
}

/// A kernel whose builder calls are each on a line recorded in `lines` (what `line!()` says).
#[rustfmt::skip]
fn saxpy(lines: &mut Vec<u32>) -> Kernel<(f32, &'static [f32], &'static mut [f32])> {
    Kernel::<(f32, &[f32], &mut [f32])>::build("lines_saxpy", |k, (a, x, y)| {
        let i = k.grid1(); lines.push(line!());
        k.if_(i.lt(y.len()), |k| { lines.push(line!());
            let v = x.at(i) * a; lines.push(line!());
            let acc = k.var(v); lines.push(line!());
            k.for_range(0u32, 3u32, |_, j| { lines.push(line!());
                acc.set(acc.get() + j.cast::<f32>().sqrt()); lines.push(line!());
            });
            y.set(i, acc.get() + y.at(i)); lines.push(line!());
        });
    })
    .unwrap()
}

#[test]
fn ptx_names_the_builder_calls_lines_in_this_file() {
    let mut lines = Vec::new();
    let k = saxpy(&mut lines);
    for cc in TARGETS {
        let ptx = k.compile_ptx(&on(cc)).unwrap();
        check_ptx(&ptx, cc, "lines_saxpy");
        assert!(
            !ptx.lines()
                .any(|l| l.starts_with(".target") && l.contains("debug")),
            "line directives only, no `.target .., debug`:\n{ptx}"
        );
        // LLVM leaves an empty `.debug_loc` section; no DWARF beyond it.
        assert!(
            !ptx.contains(".debug_info") && !ptx.contains(".debug_abbrev"),
            "no DWARF sections:\n{ptx}"
        );
        let here = lines_here(&ptx);
        // Every .loc is one of the recorded lines; the load, the arithmetic and the store of
        // the body are all there (the optimiser may merge the `if` and `for` headers away).
        for l in &here {
            assert!(
                lines.contains(l),
                "line {l} is not a builder call: {here:?} vs {lines:?}"
            );
        }
        for want in [lines[2], lines[5], lines[6]] {
            assert!(here.contains(&want), "line {want} missing: {here:?}\n{ptx}");
        }
    }
}

/// Builds the same kernel at two places (`line!()` differs, nothing else).
macro_rules! probe {
    () => {
        Kernel::<(&mut [u32],)>::build("lines_probe", |k, (out,)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| out.set(i, 7u32));
        })
        .unwrap()
    };
}

#[test]
fn lines_off_change_nothing_and_on_they_tell_kernels_apart() {
    let first = probe!();
    let second = probe!();
    let (l1, l2) = (line!() - 2, line!() - 1);
    for cc in TARGETS {
        let (a, b) = (
            first.compile_ptx(&off(cc)).unwrap(),
            second.compile_ptx(&off(cc)).unwrap(),
        );
        assert_eq!(
            a, b,
            "kernels differing only in lines share their PTX with lineinfo off"
        );
        assert!(!a.contains(".loc") && !a.contains(".file"), "{a}");
        // With line information, each kernel's PTX (and cache entry: a shared one would give
        // both the same PTX) names its own line.
        let (a, b) = (
            first.compile_ptx(&on(cc)).unwrap(),
            second.compile_ptx(&on(cc)).unwrap(),
        );
        check_ptx(&a, cc, "lines_probe");
        assert_ne!(a, b);
        assert_eq!(lines_here(&a), BTreeSet::from([l1]), "{a}");
        assert_eq!(lines_here(&b), BTreeSet::from([l2]), "{b}");
        // The same instructions: only the line directives, the labels they use and an empty
        // `.debug_loc` section are added.
        let strip = |p: &str| {
            p.lines()
                .filter(|l| {
                    let l = l.trim_start();
                    let directive = [".loc", ".file", ".section"].iter().any(|d| {
                        l.strip_prefix(d)
                            .is_some_and(|r| r.starts_with(char::is_whitespace))
                    });
                    let label = ["$L__func_begin", "$L__func_end", "$L__tmp"]
                        .iter()
                        .any(|d| l.starts_with(d));
                    !directive && !label
                })
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        };
        let plain = first.compile_ptx(&off(cc)).unwrap();
        assert_eq!(
            strip(&a),
            strip(&plain),
            "lineinfo changes only the line directives"
        );
    }
}

#[test]
#[rustfmt::skip]
fn device_functions_carry_their_own_lines() {
    let f_line = line!() + 2;
    let scale = DeviceFn::<(f32, f32), f32>::build("lines_scale", |_, (x, s)| {
        x * s + 1.0
    })
    .unwrap();
    let g_line = line!() + 2;
    let twice = DeviceFn::<(f32,), f32>::build("lines_twice", |_, (x,)| {
        x + x
    })
    .unwrap()
    .no_inline();
    let mut call_lines = Vec::new();
    let k = Kernel::<(&mut [f32],)>::build("lines_calls", |k, (out,)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let v = scale.call((out.at(i), 3.0f32.into())); call_lines.push(line!());
            out.set(i, twice.call((v,))); call_lines.push(line!());
        });
    })
    .unwrap();
    for cc in TARGETS {
        let ptx = k.compile_ptx(&on(cc)).unwrap();
        check_ptx(&ptx, cc, "lines_calls");
        let here = lines_here(&ptx);
        for want in [f_line, g_line, call_lines[1]] {
            assert!(here.contains(&want), "line {want} missing: {here:?}\n{ptx}");
        }
        // The exported device function alone has its lines too.
        let dev = twice.compile_ptx(&on(cc)).unwrap();
        assert!(lines_here(&dev).contains(&g_line), "{dev}");
    }
}

#[test]
#[rustfmt::skip]
fn elementwise_kernels_with_lines_compile() {
    let ew_line = line!() + 2;
    let axpy = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), _>::new("lines_axpy", |(a, x, y)| {
        a * x + y
    })
    .unwrap();
    for cc in TARGETS {
        let variants = axpy.variants_ptx(&on(cc), 3).unwrap();
        assert!(!variants.is_empty());
        for (name, ptx) in &variants {
            check_ptx(ptx, cc, name);
            let (files, locs) = line_table(ptx);
            let here = files
                .iter()
                .find(|(_, n)| n.ends_with("tests/codegen/lines.rs"))
                .map(|(i, _)| *i)
                .unwrap_or_else(|| panic!("{name}: no .file for this test:\n{ptx}"));
            assert!(
                locs.contains(&(here, ew_line)),
                "{name}: the closure's line {ew_line} is missing:\n{ptx}"
            );
        }
    }
}

#[test]
fn every_line_of_a_kernel_using_most_of_the_builder_is_in_this_file() {
    use cudajit::codegen::FULL_MASK;
    use cudajit::random::Philox;
    let k = Kernel::<(&mut [f32], &mut [u8], &mut [u32])>::build(
        "lines_everything",
        |k, (out, bytes, counts)| {
            let i = k.grid1();
            let t = k.thread_idx().x;
            let sh = k.shared_array::<f32>(64);
            let loc = k.local_array::<u32>(4);
            loc.set(t % 4u32, t);
            sh.set(
                t,
                out.at(i).sin() + out.at(i).exp() * out.at(i).powf(1.5f32),
            );
            k.syncthreads();
            let v = k.shfl_down_sync(FULL_MASK, sh.at(t ^ 1u32), 1u32);
            let r = Philox::new(42u64).uniform_f32(i);
            bytes.atomic_add(i % 16u64, 1u8);
            counts.atomic_max(0u64, loc.at(t % 4u32).popc());
            k.grid_sync();
            k.while_(
                |_| counts.atomic_load(1u64).lt(3u32),
                |_| {
                    counts.atomic_add(1u64, 1u32);
                },
            );
            k.if_(i.eq(0u64), |k| k.printf("%f\n", &[v.into()]));
            out.set(i, v + r);
        },
    )
    .unwrap();
    for cc in TARGETS {
        let ptx = k.compile_ptx(&on(cc)).unwrap();
        check_ptx(&ptx, cc, "lines_everything");
        // `lines_here` panics on a `.loc` outside this file (a builder method without its
        // location guard would point into cudajit's sources).
        let here = lines_here(&ptx);
        assert!(here.len() >= 10, "{here:?}");
    }
}
