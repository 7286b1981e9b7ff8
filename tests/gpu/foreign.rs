//! Foreign device code linked into builder kernels (`declare_device` + `link_file`/`link_ptx`),
//! constant memory (`const_array`) and `printf`, checked against host models.

use cudajit::codegen::{Kernel, MAX_CONST_BYTES};
use cudajit::prelude::*;

use crate::common::{ctx, fixture, same_f32, special_f32, Rng};
use crate::support::child::Child;

type ExtKernel = Kernel<(
    &'static [f32],
    &'static [f32],
    &'static [i32],
    &'static [f64],
    &'static mut [f32],
    &'static mut [i32],
    &'static mut [f64],
)>;

/// A kernel calling the three functions of tests/data/ext_funcs.ptx, linked by `link`.
fn ext_kernel(name: &str, link: impl Fn(&cudajit::codegen::KernelBuilder)) -> ExtKernel {
    ExtKernel::build(name, |k, (a, b, x, d, o1, o2, o3)| {
        let mul_add = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        let imul = k.declare_device::<(i32, i32), i32>("imul_add1_ext");
        let dsq = k.declare_device::<(f64,), f64>("dsquare_ext");
        link(k);
        let i = k.grid1();
        k.if_(i.lt(o1.len()), |_| {
            o1.set(i, mul_add.call((a.at(i), b.at(i))));
            o2.set(i, imul.call((x.at(i), x.at(i + 1u64))));
            o3.set(i, dsq.call((d.at(i),)));
        });
    })
    .unwrap()
}

fn check_ext_kernel(k: &ExtKernel) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 33, 4099] {
        let a = special_f32(&mut rng, n);
        let b = special_f32(&mut rng, n);
        let x: Vec<i32> = rng.vec(n + 1, |r| r.next_u64() as i32);
        let d: Vec<f64> = rng.vec(n, |r| match r.next_u64() % 5 {
            0 => f64::from_bits(r.next_u64()),
            1 => f64::from_bits(r.next_u64() & 0x000f_ffff_ffff_ffff),
            _ => r.f64() * 1e10,
        });
        let (da, db, dx, dd) = (
            s.to_device(&a).unwrap(),
            s.to_device(&b).unwrap(),
            s.to_device(&x).unwrap(),
            s.to_device(&d).unwrap(),
        );
        let mut o1 = c.alloc::<f32, _>(n).unwrap();
        let mut o2 = c.alloc::<i32, _>(n).unwrap();
        let mut o3 = c.alloc::<f64, _>(n).unwrap();
        o1.fill_async(f32::from_bits(0x7fc0_dead), &s).unwrap();
        o2.fill_async(0x5eed_beef, &s).unwrap();
        o3.fill_async(f64::from_bits(0x7ff8_0000_dead_beef), &s)
            .unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(n, 128).unwrap(),
            (&da, &db, &dx, &dd, &mut o1, &mut o2, &mut o3),
        )
        .unwrap();
        let (g1, g2, g3) = (
            o1.to_vec_async(&s).unwrap(),
            o2.to_vec_async(&s).unwrap(),
            o3.to_vec_async(&s).unwrap(),
        );
        for i in 0..n {
            let want = a[i].mul_add(b[i], 0.5);
            assert!(
                same_f32(g1[i], want),
                "mul_add_ext({:e}, {:e}) = {:e} ({:#x}), want {want:e} ({:#x}); n={n} i={i}",
                a[i],
                b[i],
                g1[i],
                g1[i].to_bits(),
                want.to_bits()
            );
            let want = x[i].wrapping_mul(x[i + 1]).wrapping_add(1);
            assert_eq!(g2[i], want, "imul_add1_ext, n={n} i={i}");
            let want = d[i] * d[i];
            assert!(
                (g3[i].is_nan() && want.is_nan()) || g3[i].to_bits() == want.to_bits(),
                "dsquare_ext({:e}) = {:e}, want {want:e}; n={n} i={i}",
                d[i],
                g3[i]
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: foreign PTX linked by the driver's linker: the simulator cannot run it (tests/simulator.rs checks its clear error)"]
fn extern_ptx_functions_from_a_file_match_host() {
    check_ext_kernel(&ext_kernel("ext_from_file", |k| {
        k.link_file(fixture("ext_funcs.ptx"))
    }));
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: foreign PTX linked by the driver's linker: the simulator cannot run it"]
fn extern_ptx_functions_from_text_match_host() {
    let text = std::fs::read_to_string(fixture("ext_funcs.ptx")).unwrap();
    check_ext_kernel(&ext_kernel("ext_from_text", |k| k.link_ptx(&text)));
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: a cubin is GPU machine code"]
fn extern_relocatable_cubin_links_on_sm90() {
    // tests/data/ext_funcs_sm90.cubin: `ptxas -arch=sm_90 -c tests/data/ext_funcs.ptx`.
    let c = ctx();
    if c.device().compute_capability().unwrap() != (9, 0) {
        eprintln!("note: the cubin fixture is for sm_90; this device is not, test skipped");
        return;
    }
    check_ext_kernel(&ext_kernel("ext_from_cubin", |k| {
        k.link_file(fixture("ext_funcs_sm90.cubin"))
    }));
}

/// The launch's error message, which must be a kernel error.
fn launch_error(k: &Kernel<(&'static mut [f32],)>) -> String {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut o = c.alloc::<f32, _>(32).unwrap();
    match k.launch(&s, LaunchConfig::new(1, 32), (&mut o,)) {
        Err(e @ (Error::Kernel { .. } | Error::Codegen(_))) => e.to_string(),
        other => panic!("expected a kernel (link) error, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: the driver's linker and its log"]
fn missing_extern_symbol_is_a_clear_link_error() {
    let k = Kernel::<(&mut [f32],)>::build("ext_missing", |k, (o,)| {
        let f = k.declare_device::<(f32,), f32>("no_such_ext_fn");
        k.link_file(fixture("ext_funcs.ptx"));
        o.set(k.grid1(), f.call((1.0f32.into(),)));
    })
    .unwrap();
    let m = launch_error(&k);
    assert!(
        m.contains("`no_such_ext_fn`") && m.contains("link_ptx") && m.contains("Linker log"),
        "{m}"
    );
    // With no link input at all, the same.
    let k = Kernel::<(&mut [f32],)>::build("ext_unlinked", |k, (o,)| {
        let f = k.declare_device::<(f32,), f32>("no_such_ext_fn");
        o.set(k.grid1(), f.call((1.0f32.into(),)));
    })
    .unwrap();
    let m = launch_error(&k);
    assert!(
        m.contains("`no_such_ext_fn`") && m.contains("no link inputs") && m.contains("link_ptx"),
        "{m}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn const_arrays_read_by_index_match_host() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let table_f = special_f32(&mut rng, 1000);
    let table_i: Vec<i64> = rng.vec(77, |r| r.next_u64() as i64);
    let table_b: Vec<bool> = rng.vec(13, |r| r.next_u64() & 1 == 1);
    // The rest of the 64 KiB a module may hold, as u32 (exactly full: each array takes its
    // size rounded up to 16 bytes).
    let used = 4000 + 624 + 16;
    let big_len = (MAX_CONST_BYTES - used) / 4;
    let table_u: Vec<u32> = rng.vec(big_len, |r| r.next_u64() as u32);
    let k = Kernel::<(
        &[u32],
        &mut [f32],
        &mut [i64],
        &mut [bool],
        &mut [u32],
        &mut [u64],
    )>::build("const_tables", |k, (idx, of, oi, ob, ou, olen)| {
        let (tf, ti, tb, tu) = (
            k.const_array(&table_f),
            k.const_array(&table_i),
            k.const_array(&table_b),
            k.const_array(&table_u),
        );
        let i = k.grid1();
        k.if_(i.lt(idx.len()), |_| {
            let j = idx.at(i).cast::<u64>();
            of.set(i, tf.at(j % tf.len()));
            oi.set(i, ti.at(j % ti.len()));
            ob.set(i, tb.at(j % tb.len()));
            ou.set(i, tu.at(j % tu.len()));
        });
        k.if_(i.eq(0u64), |_| {
            olen.set(0, tf.len());
            olen.set(1, tu.len());
        });
    })
    .unwrap();
    let n = 5000;
    let idx: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let didx = s.to_device(&idx).unwrap();
    let mut of = c.alloc::<f32, _>(n).unwrap();
    let mut oi = c.alloc::<i64, _>(n).unwrap();
    let mut ob = c.zeros::<bool, _>(n).unwrap();
    let mut ou = c.alloc::<u32, _>(n).unwrap();
    let mut olen = c.alloc::<u64, _>(2).unwrap();
    of.fill_async(f32::from_bits(0x7fc0_dead), &s).unwrap();
    oi.fill_async(0x5eed, &s).unwrap();
    ou.fill_async(0xdead_beef, &s).unwrap();
    olen.fill_async(u64::MAX, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&didx, &mut of, &mut oi, &mut ob, &mut ou, &mut olen),
    )
    .unwrap();
    let (gf, gi, gb, gu) = (
        of.to_vec_async(&s).unwrap(),
        oi.to_vec_async(&s).unwrap(),
        ob.to_vec_async(&s).unwrap(),
        ou.to_vec_async(&s).unwrap(),
    );
    assert_eq!(olen.to_vec_async(&s).unwrap(), vec![1000, big_len as u64]);
    for i in 0..n {
        let j = idx[i] as usize;
        let wf = table_f[j % table_f.len()];
        assert!(same_f32(gf[i], wf), "f32 table, i={i}: {} vs {wf}", gf[i]);
        assert_eq!(gi[i], table_i[j % table_i.len()], "i64 table, i={i}");
        assert_eq!(gb[i], table_b[j % table_b.len()], "bool table, i={i}");
        assert_eq!(gu[i], table_u[j % table_u.len()], "u32 table, i={i}");
    }
}

const PRINTF_CHILD: &str = "CUDAJIT_GPU_PRINTF_TEST_CHILD";

/// Run by [`printf_output_matches_host_formatting`] in a child process (does nothing when run
/// directly): launches a kernel that prints, and synchronises.
#[test]
#[ignore = "needs a CUDA GPU"]
fn printf_child_process() {
    if std::env::var_os(PRINTF_CHILD).is_none() {
        return;
    }
    let c = ctx();
    assert!(c.printf_fifo_size().unwrap() > 0);
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &[i64], &[u32])>::build("printer", |k, (x, y, z)| {
        let t = k.thread_idx().x;
        k.printf(
            "PF: t=%d x=%.3f y=%ld z=%u hex=%#x e=%e g=%g b=%d c=%c [%5d|%-5d|%05.1f] %% %-4s|\n",
            &[
                t.into(),
                x.at(t).into(),
                y.at(t).into(),
                z.at(t).into(),
                z.at(t).into(),
                x.at(t).cast::<f64>().into(),
                x.at(t).into(),
                t.lt(2u32).into(),
                (t + 65u32).into(),
                t.into(),
                t.into(),
                x.at(t).into(),
                "5%".into(),
            ],
        );
        k.if_(t.eq(0u32), |k| {
            k.printf("PF: done %lu\n", &[y.len().into()])
        });
    })
    .unwrap();
    let x = s.to_device(&[1.5f32, -2.3, 1234.5, 0.0001]).unwrap();
    let y = s.to_device(&[-1i64, i64::MAX, 0, 42]).unwrap();
    let z = s.to_device(&[0u32, 255, u32::MAX, 7]).unwrap();
    k.launch(&s, LaunchConfig::new(1, 4), (&x, &y, &z)).unwrap();
    s.synchronize().unwrap();
    c.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn printf_output_matches_host_formatting() {
    // On a GPU the driver writes kernels' printf output to the process's file descriptor 1
    // (not through Rust's captured stdout): run the printing kernel in a child process and
    // read its output.
    let out = Child::test("foreign::printf_child_process", PRINTF_CHILD, "1").run();
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(out.success, "child failed:\n{stdout}\n{stderr}");
    let mut got: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.find("PF: ").map(|i| l[i..].to_string()))
        .collect();
    got.sort();
    let mut want: Vec<String> = [
        "PF: t=0 x=1.500 y=-1 z=0 hex=0 e=1.500000e+00 g=1.5 b=1 c=A [    0|0    |001.5] % 5%  |",
        "PF: t=1 x=-2.300 y=9223372036854775807 z=255 hex=0xff e=-2.300000e+00 g=-2.3 b=1 c=B [    1|1    |-02.3] % 5%  |",
        "PF: t=2 x=1234.500 y=0 z=4294967295 hex=0xffffffff e=1.234500e+03 g=1234.5 b=0 c=C [    2|2    |1234.5] % 5%  |",
        "PF: t=3 x=0.000 y=42 z=7 hex=0x7 e=1.000000e-04 g=0.0001 b=0 c=D [    3|3    |000.0] % 5%  |",
        "PF: done 4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    want.sort();
    assert_eq!(got, want, "child stdout:\n{stdout}");
}
