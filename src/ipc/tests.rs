//! CPU tests of the IPC handles' bytes and checks, and of passing a descriptor between two
//! processes (this test binary run again as the child).

use super::wire::{process_token, ArrayDesc, Kind, Origin, Record};
use super::{IpcEventHandle, IpcMemHandle, IpcPoolPtrHandle};
use crate::error::Error;
use ndarray::Dimension;

fn origin(token: u64) -> Origin {
    Origin {
        token,
        pid: 4242,
        uuid: [7; 16],
        ordinal: 1,
    }
}

fn mem_record(kind: Kind, type_name: &str, elem_size: u32, shape: &[usize]) -> Record {
    let mut raw = [0u8; 64];
    for (i, b) in raw.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0xa5;
    }
    Record {
        kind,
        raw,
        origin: origin(0x0123_4567_89ab_cdef),
        array: Some(ArrayDesc {
            byte_offset: 256,
            elem_size,
            type_name: type_name.to_string(),
            shape: shape.to_vec(),
        }),
    }
}

fn message(e: Error) -> String {
    match &e {
        Error::Ipc { .. } => e.to_string(),
        other => panic!("expected Error::Ipc, got {other:?}"),
    }
}

#[test]
fn records_round_trip_through_bytes() {
    for shape in [&[][..], &[0], &[5], &[3, 4], &[2, 1, 7, 1, 9]] {
        for kind in [Kind::Mem, Kind::PoolPtr] {
            let r = mem_record(kind, "f32", 4, shape);
            let bytes = r.encode();
            assert_eq!(Record::decode(&bytes, kind).unwrap(), r);
        }
    }
    let ev = Record {
        kind: Kind::Event,
        raw: [0xee; 64],
        origin: origin(9),
        array: None,
    };
    assert_eq!(Record::decode(&ev.encode(), Kind::Event).unwrap(), ev);

    // Through the public types.
    let m = mem_record(Kind::Mem, "num_complex::Complex<f64>", 16, &[6, 2]).encode();
    let h = IpcMemHandle::from_bytes(&m).unwrap();
    assert_eq!(h.shape(), &[6, 2]);
    assert_eq!(h.type_name(), "num_complex::Complex<f64>");
    assert_eq!(h.exporter_pid(), 4242);
    assert_eq!(h.device_uuid(), [7; 16]);
    assert_eq!(h.to_bytes(), m);
    let p = mem_record(Kind::PoolPtr, "u8", 1, &[100]).encode();
    let hp = IpcPoolPtrHandle::from_bytes(&p).unwrap();
    assert_eq!((hp.shape(), hp.type_name()), (&[100usize][..], "u8"));
    assert_eq!(hp.to_bytes(), p);
    let he = IpcEventHandle::from_bytes(&ev.encode()).unwrap();
    assert_eq!(he.exporter_pid(), 4242);
    assert_eq!(he.to_bytes(), ev.encode());
    assert!(format!("{h:?}").contains("Complex<f64>"), "{h:?}");
}

#[test]
fn bad_bytes_are_errors_never_panics() {
    let good = mem_record(Kind::Mem, "f64", 8, &[3, 5]).encode();
    // Every truncation is an error.
    for n in 0..good.len() {
        let e = message(IpcMemHandle::from_bytes(&good[..n]).unwrap_err());
        assert!(e.contains("invalid IPC handle bytes"), "{n}: {e}");
    }
    // Trailing bytes.
    let mut long = good.clone();
    long.push(0);
    assert!(message(IpcMemHandle::from_bytes(&long).unwrap_err()).contains("1 bytes follow"));
    // Not ours.
    let e = message(IpcMemHandle::from_bytes(b"hello world, not a handle").unwrap_err());
    assert!(e.contains("not a cudajit IPC handle"), "{e}");
    // Another version.
    let mut v = good.clone();
    v[5] = 99;
    assert!(message(IpcMemHandle::from_bytes(&v).unwrap_err()).contains("version 99"));
    // Another kind.
    let e = message(IpcEventHandle::from_bytes(&good).unwrap_err());
    assert!(
        e.contains("IpcMemHandle") && e.contains("not an IPC event handle"),
        "{e}"
    );
    let e = message(IpcPoolPtrHandle::from_bytes(&good).unwrap_err());
    assert!(e.contains("IpcMemHandle"), "{e}");
    // A shape whose byte size overflows.
    let huge = mem_record(Kind::Mem, "f64", 8, &[usize::MAX / 4, 3]).encode();
    assert!(message(IpcMemHandle::from_bytes(&huge).unwrap_err()).contains("overflows"));
    // A zero element size.
    let zero = mem_record(Kind::Mem, "f64", 0, &[3]).encode();
    assert!(message(IpcMemHandle::from_bytes(&zero).unwrap_err()).contains("element size of 0"));
    // Random corruption of every byte: an error or a handle, never a panic.
    for i in 0..good.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut c = good.clone();
            c[i] ^= x;
            let _ = IpcMemHandle::from_bytes(&c);
        }
    }
}

#[test]
fn type_and_axes_are_checked() {
    let r = mem_record(Kind::Mem, "f64", 8, &[3, 5]);
    let a = r.array.as_ref().unwrap();
    a.check_type::<f64>().unwrap();
    let e = message(a.check_type::<f32>().unwrap_err());
    assert!(
        e.contains("array of f64 (8 bytes each) of shape (3, 5)")
            && e.contains("as an array of f32"),
        "{e}"
    );
    let e = message(a.check_type::<u64>().unwrap_err());
    assert!(e.contains("as an array of u64"), "{e}");
    let d: ndarray::Ix2 = a.dim().unwrap();
    assert_eq!(d.slice(), &[3, 5]);
    let d: ndarray::IxDyn = a.dim().unwrap();
    assert_eq!(d.slice(), &[3, 5]);
    let e = message(a.dim::<ndarray::Ix1>().unwrap_err());
    assert!(
        e.contains("shape (3, 5) (2 axes)") && e.contains("with 1 axes"),
        "{e}"
    );
    assert_eq!(a.num_bytes(), 120);
}

#[test]
fn the_exporting_process_is_refused() {
    let mine = origin(process_token());
    let e = message(mine.check_other_process(Kind::Mem).unwrap_err());
    assert!(e.contains("in the process that exported it"), "{e}");
    let e = message(mine.check_other_process(Kind::Event).unwrap_err());
    assert!(e.contains("IPC event handle"), "{e}");
    origin(process_token() ^ 1)
        .check_other_process(Kind::Mem)
        .unwrap();
    assert_eq!(process_token(), process_token());
}

#[test]
fn driver_errors_say_what_they_mean() {
    let e = super::driver_error(
        Error::Driver {
            call: "cuIpcOpenMemHandle_v2",
            code: crate::error::DriverCode(cudajit_sys::CUresult::CUDA_ERROR_MAP_FAILED),
        },
        "opening the IPC memory handle",
        |code| format!("the exporter may be gone (code {code})"),
    );
    let text = e.to_string();
    assert!(
        text.contains("opening the IPC memory handle failed in cuIpcOpenMemHandle_v2")
            && text.contains("the exporter may be gone (code 205)")
            && text.contains("CUDA_ERROR_MAP_FAILED"),
        "{text}"
    );
    assert_eq!(e.driver_code().map(|c| c.value()), Some(205));
    // Not the driver's: unchanged.
    let u = Error::Usage("x".into());
    assert_eq!(super::driver_error(u.clone(), "y", |_| String::new()), u);
}

#[cfg(unix)]
mod fd_passing {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::{UnixListener, UnixStream};

    use crate::ipc::{recv_fd, send_fd};

    const CHILD: &str = "CUDAJIT_IPC_FD_CHILD";

    /// The child (run by [`a_descriptor_crosses_to_another_process`]): connects to the socket
    /// named by the variable, receives a file's descriptor with a payload, and prints what it
    /// reads through the descriptor and the payload.
    #[test]
    fn fd_child() {
        let Some(path) = std::env::var_os(CHILD) else {
            return;
        };
        let sock = UnixStream::connect(path).unwrap();
        let (fd, payload) = recv_fd(&sock).unwrap();
        let mut file = std::fs::File::from(fd);
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        println!(
            "FILE[{text}] PAYLOAD[{}]",
            String::from_utf8(payload).unwrap()
        );
        // A second message: an empty payload.
        let (_fd, payload) = recv_fd(&sock).unwrap();
        println!("SECOND[{}]", payload.len());
        // The parent closes the socket: the next receive is an error, not a hang.
        let e = recv_fd(&sock).unwrap_err().to_string();
        println!("THIRD[{e}]");
    }

    #[test]
    fn a_descriptor_crosses_to_another_process() {
        let dir = std::env::temp_dir().join(format!("cudajit-ipc-fd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock_path = dir.join("sock");
        let _ = std::fs::remove_file(&sock_path);
        let listener = UnixListener::bind(&sock_path).unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["ipc::tests::fd_passing::fd_child", "--exact", "--nocapture"])
            .env(CHILD, &sock_path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (sock, _) = listener.accept().unwrap();
        // A file unlinked at once: only the descriptor reaches it.
        let file_path = dir.join("data");
        let mut file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&file_path)
            .unwrap();
        std::fs::remove_file(&file_path).unwrap();
        file.write_all(b"written by the parent").unwrap();
        let payload = vec![b'h'; 70_000]; // more than one socket buffer write may take
        let mut big = b"handle:".to_vec();
        big.extend_from_slice(&payload);
        send_fd(&sock, file.as_fd(), &big).unwrap();
        send_fd(&sock, file.as_fd(), &[]).unwrap();
        drop(sock);
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}\n{err}");
        let want = format!(
            "FILE[written by the parent] PAYLOAD[handle:{}]",
            String::from_utf8(payload).unwrap()
        );
        assert!(text.contains(&want), "{}", &text[..text.len().min(400)]);
        assert!(text.contains("SECOND[0]"), "{text}");
        assert!(
            text.contains("THIRD[IPC: recv_fd: the peer closed the socket"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_message_without_a_descriptor_is_an_error() {
        let (a, b) = UnixStream::pair().unwrap();
        (&a).write_all(&[3, 0, 0, 0, 1, 2, 3]).unwrap();
        let e = recv_fd(&b).unwrap_err().to_string();
        assert!(e.contains("carried no file descriptor"), "{e}");
        let e = send_fd(&a, a.as_fd(), &vec![0; (1 << 20) + 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most"), "{e}");
    }
}
