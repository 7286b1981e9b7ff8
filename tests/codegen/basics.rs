//! The builder's core: arithmetic per type, control flow, shared memory, launch geometry, and
//! the errors for misuse the types cannot catch.

use cudajit::codegen::{select, Expr, Kernel, NdMut, NdRef, PtxOptions};
use cudajit::Error;

use crate::common::{check_ptx, compile_all};

#[test]
fn add_kernel_is_an_entry_with_read_only_loads() {
    let k = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })
    .unwrap();
    let (ptx, report) = compile_all(&k);
    assert!(ptx.contains(".visible .entry add("), "{ptx}");
    assert!(
        ptx.contains("ld.global.nc.f32"),
        "read-only arrays use the non-coherent path:\n{ptx}"
    );
    assert!(ptx.contains("st.global.f32"));
    assert_eq!(report.spill_bytes, 0);
    assert_eq!(report.stack_bytes, 0);
    let ir = k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(
        ir.contains("noalias") && ir.contains("nvvm.annotations"),
        "{ir}"
    );
}

#[test]
fn ptx_version_follows_the_target() {
    let k = Kernel::<(&mut [u32],)>::build("ver", |k, (out,)| out.set(k.grid1(), 1u32)).unwrap();
    for (cc, target, version) in [
        ((7, 5), "sm_75", "6.3"),
        ((8, 0), "sm_80", "7.0"),
        ((9, 0), "sm_90", "7.8"),
    ] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        assert!(ptx.contains(&format!(".target {target}")), "{ptx}");
        assert!(ptx.contains(&format!(".version {version}")), "{ptx}");
    }
    // Newer devices get sm_90 PTX, which their driver JIT-compiles.
    let ptx = k.compile_ptx(&PtxOptions::for_cc(10, 0)).unwrap();
    assert!(ptx.contains(".target sm_90"));
}

/// Every arithmetic operator on every numeric type, in one kernel per type.
macro_rules! arith_kernel {
    ($t:ty, $name:literal, int) => {{
        Kernel::<(&[$t], &[$t], &mut [$t])>::build($name, |k, (a, b, out)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let (x, y) = (a.at(i), b.at(i));
                let j = i * 16u64;
                out.set(j, x + y);
                out.set(j + 1u64, x - y);
                out.set(j + 2u64, x * y);
                out.set(j + 3u64, x / y);
                out.set(j + 4u64, x % y);
                out.set(j + 5u64, x & y);
                out.set(j + 6u64, x | y);
                out.set(j + 7u64, x ^ y);
                out.set(j + 8u64, x << y);
                out.set(j + 9u64, x >> y);
                out.set(j + 10u64, x.min(y));
                out.set(j + 11u64, x.max(y));
                out.set(j + 12u64, select(x.lt(y), x, y));
                out.set(j + 13u64, x.cast::<f64>().cast::<$t>());
                out.set(j + 14u64, (x.cast::<u8_like>()).cast::<$t>());
                out.set(j + 15u64, select(x.ge(y).and(x.ne(y)), 1 as $t, 0 as $t));
            });
        })
    }};
}
#[allow(non_camel_case_types)]
type u8_like = u32;

#[test]
fn integer_arithmetic_compiles_for_every_type() {
    let ks = [
        compile_all(&arith_kernel!(i32, "arith_i32", int).unwrap()).0,
        compile_all(&arith_kernel!(u32, "arith_u32", int).unwrap()).0,
        compile_all(&arith_kernel!(i64, "arith_i64", int).unwrap()).0,
        compile_all(&arith_kernel!(u64, "arith_u64", int).unwrap()).0,
    ];
    // Defined division: no trap, a select around the divide.
    for ptx in &ks {
        assert!(ptx.contains("div."), "{ptx}");
    }
}

#[test]
fn float_arithmetic_and_casts_compile() {
    for fast in [false, true] {
        let k = Kernel::<(
            &[f32],
            &[f64],
            &mut [f32],
            &mut [f64],
            &mut [i32],
            &mut [bool],
        )>::build_with(
            if fast { "floats_fast" } else { "floats" },
            PtxOptions::default().fastmath(fast),
            |k, (a, b, fo, d_out, io, bo)| {
                let i = k.grid1();
                k.if_(i.lt(a.len()), |_| {
                    let (x, y) = (a.at(i), b.at(i));
                    fo.set(i, (x * 2.0 + 1.0) / (x - 3.0) + (-x) % 1.5);
                    d_out.set(
                        i,
                        y.sqrt() + y.abs().floor() + y.mul_add(2.0, 1.0) + x.cast::<f64>(),
                    );
                    io.set(i, x.cast::<i32>() + y.round().cast::<i32>());
                    bo.set(i, x.gt(0.5).or(y.le(-0.5)).and(!x.ne(x)));
                });
            },
        )
        .unwrap();
        let (ptx, _) = compile_all(&k);
        if fast {
            assert!(
                ptx.contains("div.approx")
                    || ptx.contains("div.full")
                    || ptx.contains("rcp.approx"),
                "{ptx}"
            );
        } else {
            assert!(ptx.contains("div.rn.f32"), "{ptx}");
        }
        assert!(ptx.contains("cvt.rzi") && ptx.contains("s32.f32"), "{ptx}");
        assert!(
            ptx.contains("sqrt.rn.f64"),
            "f64 stays exact under fastmath:\n{ptx}"
        );
    }
}

/// Fastmath never makes a NaN undefined behaviour: the whole-language fuzzer's tree (seed
/// 42200311, tree 25) took a float `%` of a NaN-literal product under fastmath. With LLVM's
/// `nnan`/`ninf` flags that value was poison, the remainder's loop branched on it, and LLVM
/// deleted every store of the kernel (its PTX was one `exit`). Now the kernel keeps its stores.
#[test]
fn fastmath_nan_literal_remainder_keeps_the_kernels_stores() {
    let k = Kernel::<(&[f32], &[u32], &mut [f32], &mut [f32])>::build_with(
        "fast_nan_rem",
        PtxOptions::default().fastmath(true),
        |k, (a, b, before, out)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let x = a.at(i);
                before.set(i, x + 1.0);
                let sel = select(b.at(i).ne(0u32), Expr::lit(2.0f32), Expr::lit(-99.125f32));
                let nan = Expr::lit(f32::from_bits(0x7fc0_0001));
                let v = (sel * nan.mul_add(x, Expr::lit(f32::INFINITY))) % x;
                out.set(i, v + b.at(i).bitcast::<f32>());
            });
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(!ptx.contains("exit;"), "{ptx}");
    assert_eq!(ptx.matches("st.global.").count(), 2, "{ptx}");
}

#[test]
fn loops_variables_and_early_return() {
    let k = Kernel::<(&[f32], &mut [f32], u32)>::build("loops", |k, (x, out, reps)| {
        let i = k.grid1();
        k.if_(i.ge(x.len()), |k| k.ret());
        let acc = k.var(0.0f32);
        k.for_range(0u32, reps, |k, r| {
            k.if_(r.eq(7u32), |k| k.continue_());
            acc.set(acc.get() + x.at(i) * r.cast::<f32>());
            k.if_(acc.get().gt(1e30f32), |k| k.break_());
        });
        let n = k.var(0u32);
        k.while_(|_| n.get().lt(reps), |_| n.add_assign(2u32));
        out.set(i, acc.get() + n.get().cast::<f32>());
        // Grid-stride loop over everything.
        k.for_step(i, x.len(), k.gridsize1(), |_, j| {
            out.set(j, out.at(j) * 1.0f32)
        });
    })
    .unwrap();
    compile_all(&k);
}

#[test]
fn shared_memory_block_sum_and_2d_transpose() {
    let sum = crate::support::kernels::block_sum::<f32>("block_sum");
    let (ptx, _) = compile_all(&sum);
    assert!(ptx.contains(".shared") && ptx.contains("bar.sync"), "{ptx}");

    let tr = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("transpose", |k, (a, b)| {
        let tile = k.shared_array::<f32>(32 * 33);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 32u32, k.block_idx().y * 32u32);
        let (rows, cols) = (a.dim(0), a.dim(1));
        let (r, c) = ((by + ty).cast::<u64>(), (bx + tx).cast::<u64>());
        k.if_(r.lt(rows).and(c.lt(cols)), |_| {
            tile.set(ty * 33u32 + tx, a.at2(r, c))
        });
        k.syncthreads();
        let (r2, c2) = ((bx + ty).cast::<u64>(), (by + tx).cast::<u64>());
        k.if_(r2.lt(cols).and(c2.lt(rows)), |_| {
            b.set2(r2, c2, tile.at(tx * 33u32 + ty))
        });
    })
    .unwrap();
    compile_all(&tr);

    let dynamic = Kernel::<(&[f32], &mut [f32])>::build("dyn_shared", |k, (x, out)| {
        let smem = k.dynamic_shared::<f32>();
        let (t, n) = (k.thread_idx().x, k.block_dim().x);
        let i = k.grid1();
        smem.set(t, x.at(i));
        k.syncthreads();
        out.set(i, smem.at(n - t - 1u32));
        let c = k.syncthreads_count(x.at(i).gt(0.0f32));
        let all = k.syncthreads_and(x.at(i).gt(0.0f32));
        let any = k.syncthreads_or(x.at(i).gt(0.0f32));
        k.if_(t.eq(0u32), |_| {
            out.set(
                i,
                c.cast::<f32>() + select(all, 1.0f32, 0.0) + select(any, 2.0f32, 0.0),
            )
        });
        k.threadfence_block();
        k.threadfence();
        k.threadfence_system();
        k.syncwarp(0xffff_ffffu32);
    })
    .unwrap();
    let (ptx, _) = compile_all(&dynamic);
    assert!(ptx.contains(".extern .shared"), "{ptx}");
}

#[test]
fn local_arrays_and_geometry() {
    let k = Kernel::<(&mut [u64],)>::build("geometry", |k, (out,)| {
        let buf = k.local_array::<u64>(4);
        let [x, y, z] = k.grid3();
        let [sx, sy, _sz] = k.gridsize3();
        buf.set(0u32, x);
        buf.set(1u32, y);
        buf.set(2u32, z);
        buf.set(
            3u32,
            (k.lane_id() + k.warp_size() + k.grid_dim().x + k.block_dim().z).cast::<u64>(),
        );
        let [gx, gy] = k.grid2();
        let [w, _] = k.gridsize2();
        let idx = (gz_flat(gy, w) + gx) * 4u64;
        k.for_range(0u32, 4u32, |_, j| {
            out.set(idx + j.cast::<u64>(), buf.at(j) + sx * sy)
        });
    })
    .unwrap();
    compile_all(&k);
}

fn gz_flat(
    y: cudajit::codegen::Expr<u64>,
    w: cudajit::codegen::Expr<u64>,
) -> cudajit::codegen::Expr<u64> {
    y * w
}

fn kernel_error<P: cudajit::codegen::KernelParams>(r: cudajit::Result<Kernel<P>>) -> String {
    match r {
        Err(e @ Error::Build { .. }) => e.to_string(),
        Err(e) => panic!("expected a kernel build error, got {e:?}"),
        Ok(_) => panic!("expected a kernel build error"),
    }
}

#[test]
fn build_errors_are_typed_and_located() {
    use cudajit::{BuildError, BuildErrorKind};
    use std::error::Error as _;
    let (mut scope_line, mut sync_line) = (0, 0);
    let r = Kernel::<(&[f32], &mut [f32])>::build("typed", |k, (x, out)| {
        let mut leaked = None;
        k.if_(k.thread_idx().x.lt(16u32), |k| {
            leaked = Some(x.at(1u32) * 2.0);
            sync_line = line!() + 1;
            k.syncthreads();
        });
        if let Some(v) = leaked {
            scope_line = line!() + 1;
            out.set(0u32, v);
        }
    });
    let e = r.err().expect("a build error");
    let errors = e.build_errors();
    assert_eq!(errors.len(), 2, "{e}");
    let kinds: Vec<BuildErrorKind> = errors.iter().map(BuildError::kind).collect();
    assert_eq!(
        kinds,
        [BuildErrorKind::DivergentBarrier, BuildErrorKind::OutOfScope],
        "{e}"
    );
    assert!(matches!(errors[1], BuildError::OutOfScope { .. }));
    for (err, line) in errors.iter().zip([sync_line, scope_line]) {
        assert!(err.location().file().ends_with("basics.rs"), "{err}");
        assert_eq!(err.location().line(), line, "{err}");
        let at = format!("(at {})", err.location());
        assert!(err.to_string().ends_with(&at), "{err}");
        assert!(e.to_string().contains(&at), "{e}");
    }
    assert!(
        e.to_string().starts_with("kernel `typed`: in `typed`: "),
        "{e}"
    );
    let first = e.source().expect("the first build error");
    assert_eq!(first.to_string(), errors[0].to_string());

    // What is checked once the kernel is recorded points at the build call.
    let line = line!() + 1;
    let e = Kernel::<(&mut [f32],)>::build("9typed", |_, _| {})
        .err()
        .expect("a build error");
    let errors = e.build_errors();
    assert_eq!(errors.len(), 1, "{e}");
    assert_eq!(errors[0].kind(), BuildErrorKind::InvalidName);
    assert_eq!(errors[0].location().line(), line, "{e}");
}

#[test]
fn misuse_is_a_build_error_not_invalid_ptx() {
    // A value computed in a branch, used after it.
    let e = kernel_error(Kernel::<(&[f32], &mut [f32])>::build(
        "scope",
        |k, (x, out)| {
            let mut leaked = None;
            k.if_(x.at(0u32).gt(0.0f32), |_| leaked = Some(x.at(1u32) * 2.0));
            if let Some(v) = leaked {
                out.set(0u32, v);
            }
        },
    ));
    assert!(e.contains("k.var"), "{e}");

    // A barrier that only some threads reach.
    let e = kernel_error(Kernel::<(&mut [f32],)>::build("divergent", |k, (out,)| {
        k.if_(k.thread_idx().x.lt(16u32), |k| k.syncthreads());
        out.set(0u32, 1.0f32);
    }));
    assert!(
        e.contains("syncthreads") && e.contains("some threads"),
        "{e}"
    );

    // ... including after a return that only some threads take.
    let e = kernel_error(Kernel::<(&[f32], &mut [f32])>::build(
        "early_return",
        |k, (x, out)| {
            let i = k.grid1();
            k.if_(i.ge(x.len()), |k| k.ret());
            k.syncthreads();
            out.set(i, x.at(i));
        },
    ));
    assert!(e.contains("syncthreads"), "{e}");

    // A uniform condition is fine.
    Kernel::<(&mut [f32], u32)>::build("uniform", |k, (out, n)| {
        k.if_(n.gt(4u32), |k| k.syncthreads());
        k.for_range(0u32, n, |k, _| k.syncthreads());
        out.set(0u32, 1.0f32);
    })
    .unwrap();

    let e = kernel_error(Kernel::<(&mut [f32],)>::build("brk", |k, (_,)| k.break_()));
    assert!(e.contains("outside a loop"), "{e}");

    let e = kernel_error(Kernel::<(&mut [f32],)>::build("dynlen", |k, (out,)| {
        let s = k.dynamic_shared::<f32>();
        out.set(0u32, s.len().cast::<f32>());
    }));
    assert!(e.contains("dynamic shared"), "{e}");

    let e = kernel_error(Kernel::<(&mut [f32],)>::build("zero", |k, (out,)| {
        let s = k.shared_array::<f32>(0);
        out.set(0u32, s.at(0u32));
    }));
    assert!(e.contains("at least one element"), "{e}");

    // An expression from one kernel used in another.
    let mut stolen = None;
    Kernel::<(&[f32],)>::build("first", |_, (x,)| stolen = Some(x.at(0u32))).unwrap();
    let e = kernel_error(Kernel::<(&mut [f32],)>::build("second", |_, (out,)| {
        out.set(0u32, stolen.unwrap())
    }));
    assert!(e.contains("another kernel"), "{e}");

    assert!(matches!(
        Kernel::<(&mut [f32],)>::build("9lives", |_, _| {}),
        Err(Error::Build { .. })
    ));
}

/// Control-flow misuse the fuzzer's statement programs ran into (issue 10): each is a build
/// error naming what to do, as Rust would refuse the same code.
#[test]
fn control_flow_misuse_found_by_the_fuzzer_is_a_build_error() {
    // `break` inside a while_ condition (E0590 in Rust).
    let e = kernel_error(Kernel::<(&mut [u32],)>::build("brk_cond", |k, (out,)| {
        k.for_range(0u32, 3u32, |k, _| {
            k.while_(
                |k| {
                    k.break_();
                    Expr::lit(true)
                },
                |_| {},
            );
        });
        out.set(0u32, 1u32);
    }));
    assert!(e.contains("while_` condition"), "{e}");
    // ... but a loop of the condition's own may break.
    Kernel::<(&mut [u32],)>::build("brk_in_cond_loop", |k, (out,)| {
        let n = k.var(0u32);
        k.while_(
            |k| {
                k.for_range(0u32, 5u32, |k, i| k.if_(i.eq(2u32), |k| k.break_()));
                n.get().lt(3u32)
            },
            |_| n.set(n.get() + 1u32),
        );
        out.set(0u32, n.get());
    })
    .unwrap();

    // A variable read after the block that declared it.
    let e = kernel_error(Kernel::<(&[u32], &mut [u64])>::build(
        "var_scope",
        |k, (x, out)| {
            let mut v = None;
            k.if_(x.at(0u32).gt(0u32), |k| v = Some(k.var(5u64)));
            if let Some(v) = v {
                out.set(0u32, v.get());
            }
        },
    ));
    assert!(e.contains("read outside the block"), "{e}");

    // A barrier that becomes divergent on a later iteration: the variable its condition reads
    // is made thread-dependent after it, in the same loop.
    let e = kernel_error(Kernel::<(&mut [u32],)>::build(
        "late_div_for",
        |k, (out,)| {
            let x = k.var(0u32);
            k.for_range(0u32, 2u32, |k, _| {
                k.if_(x.get().eq(1u32), |k| k.syncthreads());
                x.set(k.thread_idx().x & 1u32);
            });
            out.set(0u32, x.get());
        },
    ));
    assert!(e.contains("later iteration"), "{e}");
    let e = kernel_error(Kernel::<(&mut [u32],)>::build(
        "late_div_while",
        |k, (out,)| {
            let x = k.var(0u32);
            k.while_(
                |_| x.get().lt(1u32),
                |k| {
                    k.syncthreads();
                    x.set(k.thread_idx().x & 1u32);
                },
            );
            out.set(0u32, x.get());
        },
    ));
    assert!(e.contains("later iteration"), "{e}");
    // ... and after a `break` only some threads take.
    let e = kernel_error(Kernel::<(&mut [u32],)>::build(
        "late_div_break",
        |k, (out,)| {
            k.for_range(0u32, 4u32, |k, i| {
                k.syncthreads();
                k.if_(k.thread_idx().x.lt(i), |k| k.break_());
            });
            out.set(0u32, 1u32);
        },
    ));
    assert!(e.contains("later iteration"), "{e}");
    // A uniform loop with a barrier and thread-dependent work stays accepted.
    Kernel::<(&mut [f32],)>::build("uniform_loop_barrier", |k, (out,)| {
        let sh = k.shared_array::<f32>(64);
        let t = k.thread_idx().x;
        let acc = k.var(0.0f32);
        k.for_range(0u32, 4u32, |k, i| {
            sh.set(t, t.cast::<f32>() + i.cast::<f32>());
            k.syncthreads();
            k.if_(t.lt(32u32), |_| acc.set(acc.get() + sh.at(t + 32u32)));
            k.syncthreads();
        });
        out.set(t, acc.get());
    })
    .unwrap();

    // A literal step of zero or less.
    for step in [0i32, -1] {
        let e = kernel_error(Kernel::<(&mut [i32],)>::build("bad_step", |k, (out,)| {
            k.for_step(0i32, 5i32, step, |_, i| out.set(0u32, i));
        }));
        assert!(e.contains(&format!("step of {step}")), "{e}");
    }
}

/// LLVM 19 crashed (a segfault in InstSimplify) on a float min/max beside another intrinsic
/// over the same operands (llvm-project#173705); float min/max are now emitted as PTX
/// `min`/`max` directly. Found by the fuzzer's programs (seed 1100120).
#[test]
fn float_min_max_beside_fma_compiles() {
    let k = Kernel::<(&[f64], &mut [f64])>::build("minmax_fma", |k, (x, out)| {
        let i = k.grid1();
        let (v, w) = (x.at(i), x.at(i + 1u64));
        out.set(i, v.max(w).max(w.mul_add(v, v)));
        out.set(i + 1u64, v.min(w).min(w.mul_add(v, v)));
        out.set(i + 2u64, v.max(w).min(v.copysign(w)));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains("max.f64") && ptx.contains("min.f64"), "{ptx}");
}

#[test]
fn every_scalar_parameter_type() {
    let k = Kernel::<(&mut [f64], f32, f64, i32, u32, i64, u64, bool)>::build(
        "scalars",
        |_, (out, a, b, c, d, e, f, g)| {
            let s = a.cast::<f64>() + b + c.cast() + d.cast() + e.cast() + f.cast::<f64>();
            out.set(0u32, select(g, s, -s));
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains(".param .u8") || ptx.contains(".param .b8"),
        "{ptx}"
    );
    let _ = check_ptx; // used by other modules
}

#[test]
fn device_functions_inlined_or_called() {
    use cudajit::codegen::DeviceFn;
    let sq = DeviceFn::<(f32,), f32>::build("sq", |_, (x,)| x * x).unwrap();
    let sq2 = sq.clone();
    let hyp = DeviceFn::<(f32, f32), f32>::build("hyp", move |_, (a, b)| {
        (sq2.call((a,)) + sq2.call((b,))).sqrt()
    })
    .unwrap()
    .no_inline();
    let flag = DeviceFn::<(bool, i64), i64>::build("flag", |_, (b, v)| select(b, v, -v)).unwrap();
    let k = Kernel::<(&[f32], &[f32], &mut [f32])>::build("use_device_fns", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |k| {
            let h = hyp.call((x.at(i), y.at(i)));
            let s = flag.call((h.gt(1.0f32), k.lit(3i64))).cast::<f32>();
            out.set(i, h + sq.call((s,)));
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains(".func") && ptx.contains("call"),
        "hyp is a real call:\n{ptx}"
    );
    // A device function returning a value cannot `ret()`.
    let e = DeviceFn::<(f32,), f32>::build("bad_ret", |k, (x,)| {
        k.ret();
        x
    });
    assert!(matches!(e, Err(Error::Build { .. })));
}

#[test]
fn vector_loads_and_stores_where_asked() {
    let k = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_v4", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len() / 4u64), |_| {
            let (a, b) = (x.load_vec::<4>(i), y.load_vec::<4>(i));
            out.store_vec(i, [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]);
        });
    })
    .unwrap();
    let (ptx, report) = compile_all(&k);
    assert!(ptx.contains("ld.global.nc.v4.f32"), "{ptx}");
    assert!(ptx.contains("st.global.v4.f32"), "{ptx}");
    assert_eq!(report.spill_bytes, 0);
    let k2 = Kernel::<(&[f64], &mut [f64])>::build("copy_v2", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len() / 2u64), |_| {
            out.store_vec(i, x.load_vec::<2>(i))
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k2);
    assert!(
        ptx.contains("ld.global.nc.v2.f64") && ptx.contains("st.global.v2.f64"),
        "{ptx}"
    );
    // 3 lanes, or 32 bytes, are not a vector access.
    let e = Kernel::<(&[f64],)>::build("bad_vec", |_, (x,)| {
        let _ = x.load_vec::<4>(0u32);
    });
    assert!(matches!(e, Err(Error::Build { .. })));
}

#[test]
fn device_function_mode_exports_a_func() {
    use cudajit::codegen::DeviceFn;
    let f = DeviceFn::<(f32, f32), f32>::build("madd", |_, (a, b)| a * b + 1.0f32).unwrap();
    let ptx = f.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(
        ptx.contains(".visible .func") && ptx.contains("madd"),
        "{ptx}"
    );
    assert!(!ptx.contains(".entry"), "{ptx}");
    assert!(f
        .llvm_ir(&PtxOptions::for_cc(9, 0))
        .unwrap()
        .contains("define"));
}

#[test]
fn bitcasts_between_equal_sizes() {
    let k = Kernel::<(&[f32], &mut [u32], &mut [f64])>::build("bits", |k, (x, u, d)| {
        let i = k.grid1();
        u.set(i, x.at(i).bitcast::<u32>());
        d.set(
            i,
            (x.at(i).cast::<f64>().bitcast::<u64>() ^ 1u64).bitcast::<f64>(),
        );
    })
    .unwrap();
    compile_all(&k);
    let e = Kernel::<(&[f32], &mut [u64])>::build("bad_bits", |k, (x, u)| {
        u.set(k.grid1(), x.at(0u32).bitcast::<u64>())
    });
    assert!(matches!(e, Err(Error::Build { .. })));
}

#[test]
fn launch_bounds_reach_the_ptx() {
    let k = Kernel::<(&[f32], &mut [f32])>::build("bounded", |k, (x, out)| {
        k.launch_bounds(128, 6);
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) * 2.0f32));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains(".maxntid 128, 1, 1"), "{ptx}");
    assert!(ptx.contains(".minnctapersm 6"), "{ptx}");
    // Without a block minimum, only the thread limit.
    let k = Kernel::<(&mut [f32],)>::build("threads_only", |k, (out,)| {
        k.launch_bounds(64, 0);
        out.set(k.grid1(), 1.0f32);
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains(".maxntid 64, 1, 1") && !ptx.contains(".minnctapersm"),
        "{ptx}"
    );
    // Out of range, and on a device function: build errors.
    let e = kernel_error(Kernel::<(&mut [f32],)>::build("too_many", |k, (out,)| {
        k.launch_bounds(2048, 1);
        out.set(0u32, 1.0f32);
    }));
    assert!(e.contains("1 to 1024"), "{e}");
    let e = cudajit::codegen::DeviceFn::<(f32,), f32>::build("bounded_fn", |k, (x,)| {
        k.launch_bounds(128, 2);
        x
    });
    assert!(
        matches!(&e, Err(e @ Error::Build { .. }) if e.to_string().contains("for kernels")),
        "{:?}",
        e.err()
    );
}

#[test]
fn short_circuit_and_or_compile_to_branches() {
    let k = Kernel::<(&[f32], &mut [u32], u64)>::build("short_circuit", |k, (x, out, n)| {
        let i = k.grid1();
        let guarded = i.lt(n).and_then(|| x.at(i).gt(0.0f32));
        let either = i.ge(n).or_else(|| x.at(i).lt(-1.0f32));
        let via_k = k.and_then(guarded, |_| !either);
        k.if_(i.lt(out.len()), |_| {
            out.set(
                i,
                guarded.cast::<u32>() + either.cast::<u32>() * 2u32 + via_k.cast::<u32>() * 4u32,
            )
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    // The loads of `x` sit behind branches or predicates (never speculated).
    assert!(ptx.contains("ld.global.nc.f32"), "{ptx}");
    assert!(ptx.contains("bra") || ptx.contains("@%p"), "{ptx}");
}

/// `%globaltimer` and `%globaltimer_lo`: every read is its own (two reads around a loop stay
/// two, one inside a loop stays inside it), for sm_75 and sm_90 through ptxas.
#[test]
fn globaltimer_reads_are_never_merged_or_hoisted() {
    let k = Kernel::<(&mut [u64], &mut [u32])>::build("timer", |k, (out, lo)| {
        let t0 = k.globaltimer();
        let l0 = k.globaltimer_lo();
        let now = k.var(t0);
        k.while_(
            |_| (now.get() - t0).lt(1000u64),
            |k| now.set(k.globaltimer()),
        );
        out.set(0u32, t0);
        out.set(1u32, now.get());
        lo.set(0u32, k.globaltimer_lo() - l0);
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    assert_eq!(ptx.matches("%globaltimer;").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("%globaltimer_lo;").count(), 2, "{ptx}");
}

/// The sharded reductions' device-side join, in each reduction's kernels: the partial pass that
/// publishes (a system fence, then the flag's store, after the result's) and the combining
/// kernel that waits for the flags first (volatile reads of the flags, `%globaltimer`, a
/// system fence), through ptxas for sm_75 and sm_90.
#[test]
fn sharded_join_kernels_compile() {
    let sum = cudajit::ops::Reduction::<f32, f32, f32>::new("join_sum", |x| x, |a, b| a + b, 0.0)
        .unwrap();
    for cc in crate::common::TARGETS {
        let variants = sum.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        let find = |suffix: &str| {
            variants
                .iter()
                .find(|(n, _)| n.ends_with(suffix))
                .unwrap_or_else(|| panic!("no `{suffix}` kernel"))
        };
        for suffix in ["part1_publish", "part_vec_publish"] {
            let (name, ptx) = find(suffix);
            check_ptx(ptx, cc, name);
            // The result's store, the fence, the flag's store, in this order.
            let fence = ptx.find("membar.sys").expect("a system fence");
            assert!(ptx[fence..].contains("st.global.u64"), "{ptx}");
            assert!(ptx[..fence].contains("st.global.f32"), "{ptx}");
        }
        // The join's compare-and-swap sits in a polling loop, not a retry loop: no kernel of
        // the reduction is compiled at -O0 (workaround 19).
        for (name, ptx) in &variants {
            assert!(
                !ptx.contains("// cudajit: compile at -O0"),
                "{name} asks for -O0"
            );
        }
        let (name, wait) = find("cols_final_join");
        check_ptx(wait, cc, name);
        assert!(wait.contains("%globaltimer;"), "{wait}");
        assert!(wait.contains("ld.volatile.global.u64"), "{wait}");
        assert!(wait.contains("membar.sys"), "{wait}");
        // The partials arrive while the kernel runs: never read through the non-coherent path.
        assert!(!wait.contains(".nc."), "{wait}");
        // The plain partial pass publishes nothing.
        assert!(!find("part1").1.contains("membar.sys"));
    }
}
