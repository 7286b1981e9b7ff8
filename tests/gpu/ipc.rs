//! IPC between processes (`cudajit::ipc`): plain device memory and stream-ordered pool memory
//! opened by a child process (this test binary again), which doubles the array with a kernel
//! and records an IPC event that the parent waits on before checking every element; and the
//! error cases (wrong type or axes, the exporting process, an exporter that is gone, pool
//! misuse). On the simulator every IPC call is an error saying IPC needs a real GPU, which the
//! tests check instead.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};

use cudajit::codegen::Kernel;
use cudajit::ipc::{recv_fd, send_fd, IpcEventHandle, IpcMemHandle, IpcPoolPtrHandle};
use cudajit::prelude::*;
use cudajit::MemPool;

use crate::common::{ctx, has_devices, Rng};

/// The variable that makes a child test do its part (its value: what it needs, hex-encoded or
/// a socket path).
const CHILD: &str = "CUDAJIT_IPC_CHILD";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The kernel the children run: every element doubled in place.
fn double_kernel() -> Kernel<(&'static mut [f32],)> {
    Kernel::<(&mut [f32],)>::build("ipc_double", |k, (a,)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| a.set(i, a.at(i) + a.at(i)));
    })
    .unwrap()
}

/// Asserts that `e` is the simulator's IPC refusal.
fn assert_needs_gpu<T: std::fmt::Debug>(r: cudajit::Result<T>) {
    let e = r.unwrap_err();
    assert!(
        matches!(e, Error::Ipc { .. }) && e.to_string().contains("IPC needs a real GPU"),
        "{e}"
    );
}

/// A child running `test` with `CHILD=value` (and `extra` vars), its stdin and stdout piped
/// so that parent and child can take turns.
struct Kid {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Kid {
    fn spawn(test: &str, value: &str, extra: &[(&str, String)]) -> Kid {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                test,
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, value)
            .envs(extra.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Kid { child, out }
    }

    /// The child's next line that starts with `tag`, without it; panics (with what came) when
    /// the child ends first.
    fn line(&mut self, tag: &str) -> String {
        let mut seen = String::new();
        loop {
            let mut l = String::new();
            if self.out.read_line(&mut l).unwrap() == 0 {
                let status = self.child.wait().unwrap();
                panic!("the child ended ({status}) before printing {tag}; it printed:\n{seen}");
            }
            // libtest may print `test name ... ` on the same line, before the child's output.
            if let Some(at) = l.find(tag) {
                return l[at + tag.len()..].trim_end().to_string();
            }
            seen.push_str(&l);
        }
    }

    /// Tells the child to go on (a line on its stdin).
    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the child's end; panics unless it passed.
    fn finish(mut self) {
        let tail = self.line("IPC CHILD OK");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the child failed ({status}) {tail}");
    }
}

/// In a child: waits for the parent's "go".
fn wait_for_go() {
    let mut l = String::new();
    std::io::stdin().read_line(&mut l).unwrap();
    assert_eq!(l.trim(), "go");
}

fn say(line: &str) {
    println!("{line}");
    std::io::stdout().flush().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn child_doubles_plain_memory() {
    let Ok(v) = std::env::var(CHILD) else { return };
    let (mem, ev) = v.split_once(',').unwrap();
    let ordinal: usize = std::env::var("CUDAJIT_IPC_DEVICE")
        .ok()
        .map_or(0, |d| d.parse().unwrap());
    let c = Context::new(ordinal).unwrap();
    let s = c.new_stream().unwrap();
    let h = IpcMemHandle::from_bytes(&unhex(mem)).unwrap();
    // The event is the parent's, of device 0: used where this process runs on device 0 too
    // (on a peer device the stream is synchronized instead).
    let e = (ordinal == 0).then(|| {
        IpcEventHandle::from_bytes(&unhex(ev))
            .unwrap()
            .open(&c)
            .unwrap()
    });
    // Opened as another type or number of axes: errors, nothing mapped.
    let err = h.open::<f64, ndarray::Ix1>(&c).unwrap_err().to_string();
    assert!(err.contains("as an array of f64"), "{err}");
    let err = h.open::<f32, ndarray::Ix2>(&c).unwrap_err().to_string();
    assert!(err.contains("with 2 axes"), "{err}");
    let mut a: DeviceArray<f32, ndarray::Ix1> = h.open(&c).unwrap();
    assert_eq!(a.shape(), h.shape());
    // The parent's data is complete (it synchronized before sending the handle).
    double_kernel()
        .launch(
            &s,
            LaunchConfig::for_num_elems(a.len(), 256).unwrap(),
            (&mut a,),
        )
        .unwrap();
    match &e {
        Some(e) => e.record(&s).unwrap(),
        None => s.synchronize().unwrap(),
    }
    say("RECORDED");
    // The parent checks, then lets this process close the mapping and end.
    wait_for_go();
    drop(a);
    s.synchronize().unwrap();
    assert!(cudajit::take_drop_errors().is_empty());
    say("IPC CHILD OK");
}

/// Shares `n` f32 with a child on device `child_device`, which doubles them; checks every one.
fn plain_round_trip(n: usize, child_device: usize) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host: Vec<f32> = rng.vec(n, |r| r.f32() * 1e3 - 500.0);
    let a = s.to_device(&host).unwrap();
    let ev = c.new_ipc_event().unwrap();
    let h = a.ipc_handle().unwrap();
    assert_eq!((h.shape(), h.type_name()), (&[n][..], "f32"));
    s.synchronize().unwrap();
    let value = format!(
        "{},{}",
        hex(&h.to_bytes()),
        hex(&ev.ipc_handle().unwrap().to_bytes())
    );
    let mut kid = Kid::spawn(
        "ipc::child_doubles_plain_memory",
        &value,
        &[("CUDAJIT_IPC_DEVICE", child_device.to_string())],
    );
    kid.line("RECORDED");
    // The child's kernel is ordered before the event it recorded: wait for it on a stream.
    s.wait_event(&ev).unwrap();
    let got = a.to_vec_async(&s).unwrap();
    for (i, (g, x)) in got.iter().zip(&host).enumerate() {
        assert_eq!(
            g.to_bits(),
            (x + x).to_bits(),
            "element {i}: {g} != 2 * {x}"
        );
    }
    kid.go();
    kid.finish();
    drop(a); // only now: the child has closed its mapping
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_process_doubles_an_array_in_place() {
    if cudajit::on_simulator() {
        let c = ctx();
        let a = c.to_device(&[1.0f32; 8]).unwrap();
        assert_needs_gpu(a.ipc_handle());
        let ev = c.new_ipc_event().unwrap();
        assert_needs_gpu(ev.ipc_handle());
        return;
    }
    plain_round_trip(1 << 20, 0);
    plain_round_trip(1, 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_on_a_peer_device_opens_the_array() {
    if cudajit::on_simulator() || !has_devices(2) {
        return;
    }
    let (d0, d1) = (Device::get(0).unwrap(), Device::get(1).unwrap());
    if d1.can_access_peer(&d0).unwrap() {
        plain_round_trip(4099, 1);
    } else {
        println!("skipping: device 1 cannot access device 0's memory (no peer access)");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn opening_in_the_exporting_process_is_an_error() {
    let c = ctx();
    let a = c.to_device(&[1.0f32, 2.0, 3.0]).unwrap();
    let h = match a.ipc_handle() {
        Ok(h) => h,
        Err(e) => {
            assert!(cudajit::on_simulator(), "{e}");
            return assert_needs_gpu::<()>(Err(e));
        }
    };
    // Type and axes are checked first, then the process.
    let e = h.open::<i32, ndarray::Ix1>(&c).unwrap_err().to_string();
    assert!(
        e.contains("array of f32 (4 bytes each) of shape (3,)"),
        "{e}"
    );
    let e = h.open::<f32, ndarray::Ix1>(&c).unwrap_err().to_string();
    assert!(e.contains("in the process that exported it"), "{e}");
    let e = h.open::<f32, ndarray::IxDyn>(&c).unwrap_err().to_string();
    assert!(e.contains("in the process that exported it"), "{e}");
    let ev = c.new_ipc_event().unwrap();
    let eh = ev.ipc_handle().unwrap();
    let e = eh.open(&c).unwrap_err().to_string();
    assert!(e.contains("in the process that exported it"), "{e}");
    // A round trip through bytes keeps every field.
    assert_eq!(IpcMemHandle::from_bytes(&h.to_bytes()).unwrap(), h);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn child_exports_and_exits() {
    let Ok(_) = std::env::var(CHILD) else { return };
    let c = ctx();
    let a = c.to_device(&[7u32; 1000]).unwrap();
    say(&format!(
        "HANDLE{}",
        hex(&a.ipc_handle().unwrap().to_bytes())
    ));
    drop(a);
    say("IPC CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_handle_whose_exporter_is_gone_is_an_error() {
    if cudajit::on_simulator() {
        return;
    }
    let mut kid = Kid::spawn("ipc::child_exports_and_exits", "1", &[]);
    let bytes = unhex(&kid.line("HANDLE"));
    kid.finish();
    let h = IpcMemHandle::from_bytes(&bytes).unwrap();
    let c = ctx();
    match h.open::<u32, ndarray::Ix1>(&c) {
        Err(e @ Error::Ipc { code: Some(_), .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("opening the IPC memory handle failed"),
                "{text}"
            );
        }
        other => panic!("opening a handle of an exited process: {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pool_and_event_misuse_are_errors() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // Not an IPC event.
    let e = c.new_event().unwrap().ipc_handle().unwrap_err().to_string();
    assert!(e.contains("Context::new_ipc_event"), "{e}");
    // Stream-ordered memory of the default pool: neither kind of handle.
    let a = s.zeros_async::<f32, _>(16).unwrap();
    let e = a.ipc_handle().unwrap_err().to_string();
    assert!(e.contains("stream-ordered pool memory"), "{e}");
    let e = a.pool_ipc_handle().unwrap_err().to_string();
    assert!(e.contains("exportable pool"), "{e}");
    let e = c
        .to_device(&[1u8])
        .unwrap()
        .pool_ipc_handle()
        .unwrap_err()
        .to_string();
    assert!(e.contains("exportable pool"), "{e}");
    let e = c.mem_pool().unwrap().export_fd().unwrap_err().to_string();
    assert!(e.contains("new_exportable_mem_pool"), "{e}");
    if cudajit::on_simulator() {
        assert_needs_gpu(c.new_exportable_mem_pool());
        let (r, _w) = UnixStream::pair().unwrap();
        assert_needs_gpu(MemPool::import_fd(&c, r.as_fd()));
        return;
    }
    let pool = c.new_exportable_mem_pool().unwrap();
    assert!(pool.is_exportable() && !pool.is_imported());
    let b = s.alloc_from_pool::<f32, _>(&pool, (4, 8)).unwrap();
    let h = b.pool_ipc_handle().unwrap();
    assert_eq!(h.shape(), &[4, 8]);
    let e = b.ipc_handle().unwrap_err().to_string();
    assert!(e.contains("pool_ipc_handle"), "{e}");
    // Opened from a pool that is not imported, or in this process.
    let e = h
        .open::<f32, ndarray::Ix2>(&pool, &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("MemPool::import_fd"), "{e}");
    assert_eq!(IpcPoolPtrHandle::from_bytes(&h.to_bytes()).unwrap(), h);
    drop(b);
    s.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn child_doubles_pool_memory() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let c = ctx();
    let s = c.new_stream().unwrap();
    let sock = UnixStream::connect(path).unwrap();
    let (fd, payload) = recv_fd(&sock).unwrap();
    let split = u32::from_le_bytes(payload[..4].try_into().unwrap()) as usize;
    let ptr = IpcPoolPtrHandle::from_bytes(&payload[4..4 + split]).unwrap();
    let ev = IpcEventHandle::from_bytes(&payload[4 + split..])
        .unwrap()
        .open(&c)
        .unwrap();
    let pool = MemPool::import_fd(&c, fd.as_fd()).unwrap();
    drop(fd);
    assert!(pool.is_imported());
    let e = s
        .alloc_from_pool::<f32, _>(&pool, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot allocate"), "{e}");
    let e = ptr
        .open::<u32, ndarray::Ix1>(&pool, &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("as an array of u32"), "{e}");
    let mut a: DeviceArray<f32, ndarray::Ix1> = ptr.open(&pool, &s).unwrap();
    // The parent recorded the event after filling the allocation: wait for that first.
    s.wait_event(&ev).unwrap();
    double_kernel()
        .launch(
            &s,
            LaunchConfig::for_num_elems(a.len(), 256).unwrap(),
            (&mut a,),
        )
        .unwrap();
    // Freed in this stream's order, then the event marks both the kernel and the free, which
    // the parent's free must follow.
    drop(a);
    ev.record(&s).unwrap();
    say("RECORDED");
    wait_for_go();
    s.synchronize().unwrap();
    drop(pool);
    assert!(cudajit::take_drop_errors().is_empty());
    say("IPC CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_process_doubles_pool_memory_passed_over_a_socket() {
    if cudajit::on_simulator() {
        assert_needs_gpu(ctx().new_exportable_mem_pool());
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let pool = c.new_exportable_mem_pool().unwrap();
    let n = (1 << 20) + 3;
    let mut rng = Rng::new();
    let host: Vec<f32> = rng.vec(n, |r| r.f32() * 2e3 - 1e3);
    let mut a = s.alloc_from_pool::<f32, _>(&pool, n).unwrap();
    a.copy_from_host_async(&host, &s).unwrap();
    let ev = c.new_ipc_event().unwrap();
    ev.record(&s).unwrap(); // the allocation and the copy: what the child waits for
    let ptr = a.pool_ipc_handle().unwrap().to_bytes();
    let mut payload = (ptr.len() as u32).to_le_bytes().to_vec();
    payload.extend_from_slice(&ptr);
    payload.extend_from_slice(&ev.ipc_handle().unwrap().to_bytes());

    let dir = std::env::temp_dir().join(format!("cudajit-ipc-pool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let mut kid = Kid::spawn(
        "ipc::child_doubles_pool_memory",
        path.to_str().unwrap(),
        &[],
    );
    let (sock, _) = listener.accept().unwrap();
    let fd = pool.export_fd().unwrap();
    send_fd(&sock, fd.as_fd(), &payload).unwrap();
    drop(fd);
    kid.line("RECORDED");
    // After the child's kernel and its free of the imported pointer.
    s.wait_event(&ev).unwrap();
    let got = a.to_vec_async(&s).unwrap();
    for (i, (g, x)) in got.iter().zip(&host).enumerate() {
        assert_eq!(
            g.to_bits(),
            (x + x).to_bits(),
            "element {i}: {g} != 2 * {x}"
        );
    }
    drop(a); // on `s`, after the wait: after the importer's free, as the driver requires
    kid.go();
    kid.finish();
    s.synchronize().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
