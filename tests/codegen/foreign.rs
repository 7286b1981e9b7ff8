//! Foreign device code (`declare_device`, link inputs), constant memory (`const_array`) and
//! `printf`: the PTX they make, checked by ptxas, and the build errors for their misuse.

use std::path::PathBuf;

use cudajit::codegen::{DeviceFn, Kernel, PtxOptions, MAX_CONST_BYTES};
use cudajit::Error;

use crate::common::{check_ptx, check_ptx_args, compile_all, compile_all_args, fixture, TARGETS};

fn ext_ptx_path() -> PathBuf {
    fixture("ext_funcs.ptx")
}

/// The text with every run of white space made one space.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn kernel_message(e: Error) -> String {
    match e {
        e @ Error::Build { .. } => e.to_string(),
        other => panic!("expected a kernel build error, got {other:?}"),
    }
}

type ExtK = Kernel<(&'static [f32], &'static [f32], &'static mut [f32])>;

fn ext_kernel() -> ExtK {
    ExtK::build("call_ext", |k, (a, b, out)| {
        let f = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        k.link_file(ext_ptx_path());
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, f.call((a.at(i), b.at(i)))));
    })
    .unwrap()
}

#[test]
fn extern_call_is_an_extern_func_in_ptx() {
    let k = ext_kernel();
    // A kernel calling an undefined function assembles only as relocatable code (`-c`); the
    // driver's linker resolves the call at load time.
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    assert!(
        words(&ptx).contains(".extern .func (.param .b32 func_retval0) mul_add_ext ("),
        "{ptx}"
    );
    assert!(ptx.contains("call.uni") || ptx.contains("call "), "{ptx}");
    // The hand-written PTX defining it assembles for both targets too.
    let ext = std::fs::read_to_string(ext_ptx_path()).unwrap();
    for cc in [(7, 5), (9, 0)] {
        check_ptx_args(&ext, cc, "ext_funcs", &["-c"]);
    }
    let ir = k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(
        ir.contains("declare float @mul_add_ext(float, float)"),
        "{ir}"
    );
}

#[test]
fn extern_calls_of_several_types_and_from_device_functions() {
    let helper = DeviceFn::<(f64,), f64>::build("helper", |k, (x,)| {
        let sq = k.declare_device::<(f64,), f64>("dsquare_ext");
        sq.call((x,)) + 1.0
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&[i32], &[f64], &mut [i32], &mut [f64], &mut [bool])>::build(
        "ext_types",
        |k, (x, y, o, p, q)| {
            let im = k.declare_device::<(i32, i32), i32>("imul_add1_ext");
            let flag = k.declare_device::<(bool, u64), bool>("flag_ext");
            let i = k.grid1();
            o.set(i, im.call((x.at(i), 3i32.into())));
            p.set(i, helper.call((y.at(i),)));
            q.set(i, flag.call((x.at(i).lt(0), 7u64.into())));
        },
    )
    .unwrap();
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    for f in ["imul_add1_ext", "dsquare_ext", "flag_ext"] {
        assert!(
            ptx.lines()
                .any(|l| l.contains(".extern .func") && l.contains(f)),
            "{f}:\n{ptx}"
        );
    }
}

#[test]
fn declaring_a_name_twice_with_other_types_is_a_build_error() {
    let e = Kernel::<(&mut [f32],)>::build("twice", |k, (o,)| {
        let a = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        let b = k.declare_device::<(f64, f64), f64>("mul_add_ext");
        let _ = b;
        o.set(0, a.call((1.0f32.into(), 2.0f32.into())));
    })
    .err()
    .expect("two signatures for one name");
    let m = kernel_message(e);
    assert!(
        m.contains("mul_add_ext")
            && m.contains("fn(f32, f32) -> f32")
            && m.contains("fn(f64, f64) -> f64"),
        "{m}"
    );
    // The same declaration twice is fine.
    Kernel::<(&mut [f32],)>::build("twice_same", |k, (o,)| {
        let a = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        let b = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        o.set(
            0,
            a.call((1.0f32.into(), 2.0f32.into())) + b.call((3.0f32.into(), 4.0f32.into())),
        );
    })
    .unwrap();
    // A device function and its kernel disagreeing is caught when the kernel is built.
    let d = DeviceFn::<(f32,), f32>::build("d", |k, (x,)| {
        k.declare_device::<(f32,), f32>("clash_ext").call((x,))
    })
    .unwrap();
    let e = Kernel::<(&mut [f64],)>::build("clash", |k, (o,)| {
        let c = k.declare_device::<(f64,), f64>("clash_ext");
        o.set(
            0,
            c.call((1.0f64.into(),)) + d.call((2.0f32.into(),)).cast::<f64>(),
        );
    })
    .err()
    .expect("signatures disagree across functions");
    assert!(kernel_message(e).contains("clash_ext"));
}

#[test]
fn a_declaration_that_disagrees_with_the_linked_ptx_is_a_build_error() {
    // mul_add_ext takes two 32-bit parameters in tests/data/ext_funcs.ptx.
    let e = Kernel::<(&mut [f64],)>::build("ext_mismatch", |k, (o,)| {
        let f = k.declare_device::<(f64, f64), f64>("mul_add_ext");
        k.link_file(ext_ptx_path());
        o.set(0, f.call((1.0f64.into(), 2.0f64.into())));
    })
    .err()
    .expect("64-bit parameters against 32-bit ones");
    let m = kernel_message(e);
    assert!(
        m.contains("`mul_add_ext` is declared as `fn(f64, f64) -> f64`")
            && m.contains("(.param .b32, .param .b32) -> .param .b32")
            && m.contains("ext_funcs.ptx"),
        "{m}"
    );
    let e = Kernel::<(&mut [i32],)>::build("ext_arity", |k, (o,)| {
        let f = k.declare_device::<(i32,), i32>("imul_add1_ext");
        k.link_file(ext_ptx_path());
        o.set(0, f.call((1i32.into(),)));
    })
    .err()
    .expect("one parameter against two");
    assert!(kernel_message(e).contains("imul_add1_ext"));
    // u32 and bool pass as 32-bit parameters too: these match.
    Kernel::<(&mut [u32],)>::build("ext_match", |k, (o,)| {
        let f = k.declare_device::<(u32, bool), u32>("imul_add1_ext");
        k.link_file(ext_ptx_path());
        o.set(0, f.call((1u32.into(), true.into())));
    })
    .unwrap();
}

#[test]
fn link_inputs_are_checked_at_build() {
    let e = Kernel::<(&mut [f32],)>::build("no_file", |k, (o,)| {
        k.link_file("/nonexistent/ext.ptx");
        o.set(0, 1.0f32);
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("cannot read `/nonexistent/ext.ptx`"));
    let e = Kernel::<(&mut [f32],)>::build("bad_ext", |k, (o,)| {
        k.link_file(ext_ptx_path().with_extension("txt"));
        o.set(0, 1.0f32);
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("extension"));
    let e = Kernel::<(&mut [f32],)>::build("bad_name", |k, (o,)| {
        let f = k.declare_device::<(f32,), f32>("9lives");
        o.set(0, f.call((1.0f32.into(),)));
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("9lives"));
}

#[test]
fn const_array_is_dot_const_read_with_ld_const() {
    let table: Vec<f32> = (0..256).map(|i| (i as f32).sqrt()).collect();
    let k = Kernel::<(&[u32], &mut [f32])>::build("const_read", |k, (idx, out)| {
        let t = k.const_array(&table);
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            out.set(i, t.at(idx.at(i)) + t.len().cast::<f32>())
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains(".const .align 16 .b8") && ptx.contains("[1024]"),
        "a 1 KiB constant array:\n{ptx}"
    );
    assert!(ptx.contains("ld.const.f32"), "{ptx}");
    // The data is in the PTX (sqrt(1) = 1.0f = 0x3f800000: bytes 0, 0, 128, 63).
    assert!(ptx.contains("0, 0, 128, 63"), "{ptx}");
}

#[test]
fn const_arrays_of_every_type_and_in_device_functions() {
    let d = DeviceFn::<(i32,), f64>::build("lookup", |k, (i,)| {
        k.const_array(&[0.5f64, 1.5, -2.5]).at(i)
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&mut [f64], &mut [u64], &mut [bool], &mut [i32])>::build(
        "const_types",
        |k, (a, b, c, e)| {
            let i = k.grid1();
            a.set(i, d.call((i.cast(),)));
            b.set(i, k.const_array(&[u64::MAX, 1, 2]).at(i));
            c.set(i, k.const_array(&[true, false]).at(i));
            e.set(i, k.const_array(&[-1i32, 7]).at(i));
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains("ld.const.f64") && ptx.contains("ld.const.u64"),
        "{ptx}"
    );
    assert!(
        ptx.contains("ld.const.u8") || ptx.contains("ld.const.b8") || ptx.contains("ld.const.s8"),
        "{ptx}"
    );
}

#[test]
fn const_memory_over_64_kib_is_a_build_error() {
    let big = vec![0u32; MAX_CONST_BYTES / 4 + 1];
    let e = Kernel::<(&mut [u32],)>::build("too_big", |k, (o,)| {
        o.set(0, k.const_array(&big).at(0));
    })
    .err()
    .unwrap();
    let m = kernel_message(e);
    assert!(m.contains("64 KiB") && m.contains("65552"), "{m}");
    // Exactly 64 KiB is allowed.
    let full = vec![7u32; MAX_CONST_BYTES / 4];
    Kernel::<(&mut [u32],)>::build("just_fits", |k, (o,)| {
        o.set(0, k.const_array(&full).at(0));
    })
    .unwrap();
    // Split over a kernel and a device function, the module total counts.
    let half = vec![1u32; MAX_CONST_BYTES / 8 + 1];
    let d = DeviceFn::<(u32,), u32>::build("half", |k, (i,)| k.const_array(&half).at(i)).unwrap();
    let e = Kernel::<(&mut [u32],)>::build("two_halves", |k, (o,)| {
        o.set(0, k.const_array(&half).at(0) + d.call((0u32.into(),)));
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("64 KiB"));
    let e = Kernel::<(&mut [u32],)>::build("empty_const", |k, (o,)| {
        o.set(0, k.const_array::<u32>(&[]).at(0));
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("at least one element"));
}

/// Arrays of mixed sizes filling the 64 KiB with their 16-byte padding pass ptxas (which
/// counts the padding: a check on the bytes alone let 0x10008 bytes through); one byte more
/// is a build error.
#[test]
fn mixed_const_arrays_fill_64_kib_with_their_padding() {
    let f: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let l: Vec<i64> = (0..77).map(|i| i * 3 - 100).collect();
    let b: Vec<bool> = (0..13).map(|i| i % 3 == 0).collect();
    let used = 4000 + 624 + 16;
    let build = |extra: usize| {
        let u: Vec<u32> = (0..(MAX_CONST_BYTES - used) / 4 + extra)
            .map(|i| i as u32 * 7)
            .collect();
        Kernel::<(&[u32], &mut [f32])>::build("const_full", |k, (idx, o)| {
            let (tf, tl, tb, tu) = (
                k.const_array(&f),
                k.const_array(&l),
                k.const_array(&b),
                k.const_array(&u),
            );
            let i = k.grid1();
            k.if_(i.lt(idx.len()), |_| {
                let j = idx.at(i).cast::<u64>();
                let v = tf.at(j % tf.len())
                    + tl.at(j % tl.len()).cast::<f32>()
                    + tb.at(j % tb.len()).cast::<f32>()
                    + tu.at(j % tu.len()).cast::<f32>();
                o.set(i, v);
            });
        })
    };
    let k = build(0).unwrap();
    for cc in TARGETS {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        check_ptx(&ptx, cc, "const_full");
    }
    let e = build(1).err().expect("one element more is refused");
    assert!(kernel_message(e).contains("64 KiB"));
}

#[test]
fn const_data_is_part_of_the_cache_key() {
    let make = |v: u32| {
        Kernel::<(&mut [u32],)>::build("const_key", |k, (o,)| {
            // Indexed by a loaded value, so LLVM cannot fold the read away.
            o.set(0, k.const_array(&[v, 2, 3]).at(o.at(1)))
        })
        .unwrap()
    };
    let o = PtxOptions::for_cc(7, 5);
    let (a, b) = (
        make(11).compile_ptx(&o).unwrap(),
        make(12).compile_ptx(&o).unwrap(),
    );
    assert_ne!(a, b, "other constant data gives other PTX, not a cache hit");
    assert!(
        a.contains("{11, 0, 0, 0,") && b.contains("{12, 0, 0, 0,"),
        "{a}\n{b}"
    );
}

#[test]
fn printf_calls_vprintf_with_promoted_arguments() {
    let k = Kernel::<(&[f32], &[i64], &[u32])>::build("print", |k, (x, y, z)| {
        let i = k.grid1();
        k.printf(
            "i=%lu x=%f y=%ld z=%u b=%d %%\n",
            &[
                i.into(),
                x.at(i).into(),
                y.at(i).into(),
                z.at(i).into(),
                i.lt(3).into(),
            ],
        );
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        words(&ptx).contains(".extern .func (.param .b32 func_retval0) vprintf ("),
        "{ptx}"
    );
    assert!(ptx.contains("call.uni") || ptx.contains("call "), "{ptx}");
    // f32 is promoted to f64 (C varargs).
    assert!(ptx.contains("cvt.f64.f32"), "{ptx}");
    let ir = k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(ir.contains("@vprintf(ptr"), "{ir}");
    assert!(ir.contains("i=%lu x=%f y=%ld z=%u b=%d %%\\0A\\00"), "{ir}");
    // String arguments are written into the format, padded and with `%` doubled.
    let k = Kernel::<(&[i32],)>::build("print_str", |k, (x,)| {
        k.printf(
            "[%-6s|%4s|%.2s] %d\n",
            &["abc".into(), "50%".into(), "xyz".into(), x.at(0).into()],
        );
    })
    .unwrap();
    let ir = k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(ir.contains("[abc   | 50%%|xy] %d\\0A\\00"), "{ir}");
    compile_all(&k);
    // No arguments: a null argument buffer.
    let k = Kernel::<(&mut [u32],)>::build("print0", |k, (_o,)| {
        k.printf("hello from the GPU\n", &[]);
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains("vprintf"), "{ptx}");
}

#[test]
fn printf_format_misuse_is_a_build_error() {
    let cases: &[(&str, &str)] = &[
        ("%d %d\n", "2 conversion(s) but 1 argument"),
        ("%f\n", "wants f32 or f64"),
        ("%ld\n", "64-bit"),
        ("%s\n", "`%s` prints a string"),
        ("%*d\n", "`*`"),
        ("%hd\n", "length modifier"),
        ("%p\n", "not supported"),
        ("50%\n", "not supported"),
    ];
    for (fmt, want) in cases {
        let e = Kernel::<(&mut [u32],)>::build("bad_printf", |k, (o,)| {
            let v = o.at(0).cast::<i32>();
            k.printf(fmt, &[v.into()]);
        })
        .err()
        .unwrap_or_else(|| panic!("{fmt:?} should not build"));
        let m = kernel_message(e);
        assert!(m.contains(want), "{fmt:?}: {m}");
    }
    // A string for another conversion.
    let e = Kernel::<(&mut [u32],)>::build("bad_printf_str", |k, (_o,)| {
        k.printf("%d\n", &["text".into()]);
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("only `%s`"));
    // A 64-bit integer with %d names the fix.
    let e = Kernel::<(&mut [u64],)>::build("bad_printf64", |k, (o,)| {
        k.printf("%d\n", &[o.at(0).into()]);
    })
    .err()
    .unwrap();
    assert!(kernel_message(e).contains("%ld"));
}

/// `llvm_ir` then `compile_ptx` on several threads: NVPTX's process-wide cache of each module's
/// `nvvm.annotations` (keyed by the module's address) must not hand a dropped module's
/// "kernel" marks to a later module's functions (it did: `.extern .entry vprintf`, in about
/// one compile in thirty, before `llvm_ir` ran the code generator to clear its entry).
#[test]
fn llvm_ir_leaves_no_stale_kernel_marks() {
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                for it in 0..60 {
                    let tag = format!("{t}.{it}");
                    let k = Kernel::<(&[i32],)>::build("stale_marks", |k, (x,)| {
                        k.printf("%s %d\n", &[tag.as_str().into(), x.at(0).into()]);
                    })
                    .unwrap();
                    k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
                    let ptx = k.compile_ptx(&PtxOptions::for_cc(7, 5)).unwrap();
                    assert!(!ptx.contains(".extern .entry"), "{ptx}");
                }
            });
        }
    });
}
