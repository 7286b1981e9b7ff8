//! Raw byte copies and fills between host and device, synchronous or on a stream.
//!
//! Callers have checked lengths and contexts; these functions bind the context and call the driver.

use std::ffi::c_void;

use cudajit_sys as sys;

use crate::context::Context;
use crate::error::{check, Result};
use crate::stream::Stream;

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
    ctx.bind()?;
    match stream {
        // SAFETY: callers pass a host range of `bytes` readable bytes and a device range as long.
        None => check(
            unsafe { sys::cuMemcpyHtoD_v2(dst, src, bytes) },
            "cuMemcpyHtoD_v2",
        ),
        Some(s) => check(
            // SAFETY: as above; the stream belongs to `ctx` (checked by callers).
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, s.raw()) },
            "cuMemcpyHtoDAsync_v2",
        ),
    }
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
    ctx.bind()?;
    match stream {
        // SAFETY: callers pass a host range of `bytes` writable bytes and a device range as long.
        None => check(
            unsafe { sys::cuMemcpyDtoH_v2(dst, src, bytes) },
            "cuMemcpyDtoH_v2",
        ),
        Some(s) => check(
            // SAFETY: as above; the stream belongs to `ctx` (checked by callers).
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, s.raw()) },
            "cuMemcpyDtoHAsync_v2",
        ),
    }
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
    ctx.bind()?;
    match stream {
        // SAFETY: callers pass two device ranges of `bytes` bytes each.
        None => check(
            unsafe { sys::cuMemcpyDtoD_v2(dst, src, bytes) },
            "cuMemcpyDtoD_v2",
        ),
        Some(s) => check(
            // SAFETY: as above; the stream belongs to `ctx` (checked by callers).
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s.raw()) },
            "cuMemcpyDtoDAsync_v2",
        ),
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
    ctx.bind()?;
    let raw = stream.map(Stream::raw);
    // SAFETY (all arms): callers pass a device range of `count * size` bytes at `dst`, and a
    // stream of `ctx`.
    match (size, raw) {
        (1, None) => check(unsafe { sys::cuMemsetD8_v2(dst, bits as u8, count) }, "cuMemsetD8_v2"),
        (1, Some(s)) => check(unsafe { sys::cuMemsetD8Async(dst, bits as u8, count, s) }, "cuMemsetD8Async"),
        (2, None) => check(unsafe { sys::cuMemsetD16_v2(dst, bits as u16, count) }, "cuMemsetD16_v2"),
        (2, Some(s)) => check(unsafe { sys::cuMemsetD16Async(dst, bits as u16, count, s) }, "cuMemsetD16Async"),
        (4, None) => check(unsafe { sys::cuMemsetD32_v2(dst, bits as u32, count) }, "cuMemsetD32_v2"),
        (4, Some(s)) => check(unsafe { sys::cuMemsetD32Async(dst, bits as u32, count, s) }, "cuMemsetD32Async"),
        (8, _) if (bits >> 32) as u32 == bits as u32 => fill(ctx, dst, bits, 4, count * 2, stream),
        (8, _) => {
            // Two strided 32-bit fills: the low words, then the high words, 8 bytes apart.
            for (offset, word) in [(0, bits as u32), (4, (bits >> 32) as u32)] {
                match raw {
                    None => check(
                        unsafe { sys::cuMemsetD2D32_v2(dst + offset, 8, word, 1, count) },
                        "cuMemsetD2D32_v2",
                    )?,
                    Some(s) => check(
                        unsafe { sys::cuMemsetD2D32Async(dst + offset, 8, word, 1, count, s) },
                        "cuMemsetD2D32Async",
                    )?,
                }
            }
            Ok(())
        }
        _ => Err(crate::error::Error::usage(format!(
            "fill supports elements of 1, 2, 4 or 8 bytes, not {size}; write a kernel for larger elements"
        ))),
    }
}
