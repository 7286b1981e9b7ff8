//! Raw byte copies and fills between host and device, synchronous or on a stream.
//!
//! Callers have checked lengths and contexts; these functions bind the context and call the
//! backend.

use std::ffi::c_void;

use cudajit_sys as sys;

use super::staging;
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// During a graph capture, an error for work given no stream (synchronous).
fn refuse_unordered(stream: Option<&Stream>, what: &str) -> Result<()> {
    match stream {
        Some(_) => Ok(()),
        None => crate::graph::refuse(what),
    }
}

/// Host → device: `bytes` bytes from `src` to `dst`.
pub(crate) fn htod(
    ctx: &Context,
    dst: sys::CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    refuse_unordered(stream, "a synchronous host-to-device copy")?;
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: htod copy {bytes} B"));
    ctx.bind()?;
    // SAFETY: callers pass a host range of `bytes` readable bytes, a device range as long, and
    // a stream of `ctx`.
    unsafe { backend().memcpy_htod(dst, src, bytes, stream.map(Stream::raw)) }
}

/// Device → host: `bytes` bytes from `src` to `dst`.
pub(crate) fn dtoh(
    ctx: &Context,
    dst: *mut c_void,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    refuse_unordered(stream, "a synchronous device-to-host copy")?;
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: dtoh copy {bytes} B"));
    ctx.bind()?;
    // SAFETY: callers pass a host range of `bytes` writable bytes, a device range as long, and
    // a stream of `ctx`.
    unsafe { backend().memcpy_dtoh(dst, src, bytes, stream.map(Stream::raw)) }
}

/// Host → device from pageable memory (a `Vec`, slice or ndarray array). Copies of
/// [`staging::STAGING_MIN`] bytes or more are staged through pinned buffers by several threads
/// (see [`staging`]) and have finished when this returns; smaller ones, pinned sources, and
/// copies the staging path declines go to the driver ([`htod`]).
pub(crate) fn htod_pageable(
    ctx: &Context,
    dst: sys::CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    crate::graph::refuse("a copy from pageable host memory (copy from pinned memory instead)")?;
    if staging::wanted(bytes) {
        let opts = staging::Options::from_env();
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: staged htod copy {bytes} B"));
        // SAFETY: the callers' contract, as for `htod`.
        if unsafe { staging::htod(ctx, dst, src.cast(), bytes, stream, opts) }? {
            return Ok(());
        }
    }
    htod(ctx, dst, src, bytes, stream)
}

/// Device → host into pageable memory; staged as in [`htod_pageable`].
pub(crate) fn dtoh_pageable(
    ctx: &Context,
    dst: *mut c_void,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    crate::graph::refuse("a copy to pageable host memory (copy to pinned memory instead)")?;
    if staging::wanted(bytes) {
        let opts = staging::Options::from_env();
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: staged dtoh copy {bytes} B"));
        // SAFETY: the callers' contract, as for `dtoh`.
        if unsafe { staging::dtoh(ctx, dst.cast(), src, bytes, stream, opts) }? {
            return Ok(());
        }
    }
    dtoh(ctx, dst, src, bytes, stream)
}

/// Device → device: `bytes` bytes from `src` to `dst`.
pub(crate) fn dtod(
    ctx: &Context,
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    refuse_unordered(stream, "a synchronous device-to-device copy")?;
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: dtod copy {bytes} B"));
    ctx.bind()?;
    // SAFETY: callers pass two device ranges of `bytes` bytes and a stream of `ctx`.
    unsafe { backend().memcpy_dtod(dst, src, bytes, stream.map(Stream::raw)) }
}

/// Copies `bytes` from device memory of `src_ctx` to device memory of `dst_ctx`, another
/// device (`cuMemcpyPeer[Async]`). The stream, if any, belongs to one of the two devices.
pub(crate) fn peer(
    dst_ctx: &Context,
    dst: sys::CUdeviceptr,
    src_ctx: &Context,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    if let Some(s) = stream {
        let on = s.context();
        if !on.same_as(dst_ctx) && !on.same_as(src_ctx) {
            return Err(Error::usage(format!(
                "a copy from device {} to device {} was given a stream of device {}; use a stream of \
                 either device",
                src_ctx.device().ordinal(),
                dst_ctx.device().ordinal(),
                on.device().ordinal()
            )));
        }
    }
    if bytes == 0 {
        return Ok(());
    }
    refuse_unordered(stream, "a synchronous peer copy")?;
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: peer copy {bytes} B"));
    stream.map_or(dst_ctx, Stream::context).bind()?;
    // SAFETY: callers pass two device ranges of `bytes` bytes in live contexts, and a stream
    // of one of them.
    unsafe {
        backend().memcpy_peer(
            dst,
            dst_ctx.raw(),
            src,
            src_ctx.raw(),
            bytes,
            stream.map(Stream::raw),
        )
    }
}

/// Fills `count` elements of `size` bytes (1, 2, 4 or 8) at `dst` with the pattern `bits`
/// (the value's bytes, little-endian, in the low `size` bytes).
pub(crate) fn fill(
    ctx: &Context,
    dst: sys::CUdeviceptr,
    bits: u64,
    size: usize,
    count: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    refuse_unordered(stream, "a synchronous fill")?;
    ctx.bind()?;
    let (b, raw) = (backend(), stream.map(Stream::raw));
    let (lo, hi) = (bits as u32, (bits >> 32) as u32);
    // SAFETY (all calls): callers pass a device range of `count * size` bytes at `dst` and a
    // stream of `ctx`.
    match size {
        1 | 2 | 4 => unsafe { b.memset(dst, lo, size, count, size, raw) },
        8 if lo == hi => unsafe { b.memset(dst, lo, 4, count * 2, 4, raw) },
        // Two strided 32-bit fills: the low words, then the high words, 8 bytes apart.
        8 => unsafe {
            b.memset(dst, lo, 4, count, 8, raw)?;
            b.memset(dst + 4, hi, 4, count, 8, raw)
        },
        _ => Err(Error::usage(format!(
            "fill supports elements of 1, 2, 4 or 8 bytes, not {size}; write a kernel for larger elements"
        ))),
    }
}
