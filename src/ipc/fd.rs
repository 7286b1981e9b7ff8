//! Passing a file descriptor to another process over a Unix socket (`SCM_RIGHTS`), with a
//! payload of bytes: how an exportable pool's descriptor ([`MemPool::export_fd`]) reaches the
//! importer, with the handle bytes of its allocations alongside.
//!
//! A message is the payload's length (4 bytes, little-endian) and the payload, the descriptor
//! attached to its first byte. std has no `SCM_RIGHTS` API on stable Rust, so the two calls
//! go through `libc` (`sendmsg`/`recvmsg`), the only unsafe code here.
//!
//! [`MemPool::export_fd`]: crate::MemPool::export_fd

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use crate::error::{Error, Result};

/// `sendmsg`'s flags: no SIGPIPE when the peer is gone (an error instead), where there is
/// such a flag.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
const SEND_FLAGS: libc::c_int = 0;

/// The largest payload [`recv_fd`] accepts.
const MAX_PAYLOAD: usize = 1 << 20;

fn io_error(what: &str, e: std::io::Error) -> Error {
    Error::Ipc {
        message: format!("{what}: {e}"),
        code: None,
    }
}

/// Sends `fd` and `payload` (at most 1 MiB) over `sock`; the descriptor stays open here (the
/// receiver gets its own). Errors on a socket error or a payload too large.
pub fn send_fd(sock: &UnixStream, fd: BorrowedFd<'_>, payload: &[u8]) -> Result<()> {
    if payload.len() > MAX_PAYLOAD {
        return Err(Error::Ipc {
            message: format!(
                "send_fd: a payload of {} bytes (at most {MAX_PAYLOAD})",
                payload.len()
            ),
            code: None,
        });
    }
    let mut msg = Vec::with_capacity(4 + payload.len());
    msg.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    msg.extend_from_slice(payload);
    let sent = send_with_rights(sock, fd, &msg).map_err(|e| io_error("send_fd: sendmsg", e))?;
    // The descriptor went with the first byte; the rest (if the socket took only part) follows.
    let mut w = sock;
    w.write_all(&msg[sent..])
        .map_err(|e| io_error("send_fd: writing the payload", e))
}

/// Receives a descriptor and its payload sent by [`send_fd`] over `sock` (blocking, as the
/// socket is set). Errors when the peer closed the socket, sent no descriptor, or sent a
/// malformed message.
pub fn recv_fd(sock: &UnixStream) -> Result<(OwnedFd, Vec<u8>)> {
    let mut head = [0u8; 4];
    let (got, fd) =
        recv_with_rights(sock, &mut head).map_err(|e| io_error("recv_fd: recvmsg", e))?;
    if got == 0 {
        return Err(Error::Ipc {
            message: "recv_fd: the peer closed the socket before sending".to_string(),
            code: None,
        });
    }
    let fd = fd.ok_or_else(|| Error::Ipc {
        message: "recv_fd: the message carried no file descriptor (was it sent with send_fd?)"
            .to_string(),
        code: None,
    })?;
    let mut r = sock;
    r.read_exact(&mut head[got..])
        .map_err(|e| io_error("recv_fd: reading the payload's length", e))?;
    let len = u32::from_le_bytes(head) as usize;
    if len > MAX_PAYLOAD {
        return Err(Error::Ipc {
            message: format!("recv_fd: a payload of {len} bytes announced (at most {MAX_PAYLOAD})"),
            code: None,
        });
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)
        .map_err(|e| io_error("recv_fd: reading the payload", e))?;
    Ok((fd, payload))
}

/// Room for one `SCM_RIGHTS` control message with one descriptor (aligned for `cmsghdr`).
#[repr(C)]
union ControlBuf {
    _align: libc::cmsghdr,
    bytes: [u8; 64],
}

/// One `sendmsg` of `data` (non-empty) with `fd` attached; the bytes it sent.
fn send_with_rights(sock: &UnixStream, fd: BorrowedFd<'_>, data: &[u8]) -> std::io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = ControlBuf { bytes: [0; 64] };
    // SAFETY: CMSG_SPACE is a pure computation on a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    debug_assert!(space <= 64);
    // SAFETY: an all-zero msghdr is a valid value (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    // SAFETY: writing the union's byte view, which covers the whole buffer.
    msg.msg_control = unsafe { control.bytes.as_mut_ptr() }.cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg_control points to `space` bytes aligned for cmsghdr, so CMSG_FIRSTHDR is
    // non-null and its data has room for one c_int; all pointers outlive the call, and sendmsg
    // only reads the iovec's bytes.
    let n = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
        loop {
            let n = libc::sendmsg(sock.as_raw_fd(), &msg, SEND_FLAGS);
            if n >= 0 {
                break n;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    };
    Ok(n as usize)
}

/// One `recvmsg` into `buf`; the bytes read and the descriptor that came with them, if any
/// (descriptors beyond the first are closed).
fn recv_with_rights(
    sock: &UnixStream,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = ControlBuf { bytes: [0; 64] };
    // SAFETY: an all-zero msghdr is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    // SAFETY: the union's byte view covers the whole buffer.
    msg.msg_control = unsafe { control.bytes.as_mut_ptr() }.cast();
    msg.msg_controllen = 64;
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let flags = libc::MSG_CMSG_CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let flags = 0;
    // SAFETY: the iovec and control buffer are valid for their lengths during the call.
    let n = loop {
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, flags) };
        if n >= 0 {
            break n as usize;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with msg_controllen bytes of well-formed control
    // messages; CMSG_FIRSTHDR/NXTHDR stay inside them, and an SCM_RIGHTS message's data holds
    // (cmsg_len - CMSG_LEN(0)) / sizeof(int) descriptors, now owned by this process.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                    let fd = std::ptr::read_unaligned(data.add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        // Some descriptors did not fit (the kernel closed them): a message not from send_fd.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the control message was truncated (more than one descriptor sent?)",
        ));
    }
    // Extra descriptors (not from send_fd) are closed as `fds` drops.
    let first = if fds.is_empty() {
        None
    } else {
        Some(fds.swap_remove(0))
    };
    Ok((n, first))
}
