//! Temporary device memory ordered on a stream (`cuMemAllocAsync` / `cuMemFreeAsync`): no
//! synchronisation to allocate or free, for the scratch space of multi-pass kernels.

use std::marker::PhantomData;

use cudajit_sys as sys;

use crate::backend::backend;
use crate::error::{check_in_drop, Result};
use crate::memory::element::DeviceCopy;
use crate::stream::Stream;

/// `bytes` of device memory for work on `stream`, allocated in its order where the driver has
/// memory pools (`true`), else by an ordinary allocation (`false`). Binds the stream's context.
fn alloc_ordered(stream: &Stream, bytes: usize) -> Result<(sys::CUdeviceptr, bool)> {
    stream.context().bind()?;
    // SAFETY: the stream is live; the caller frees the memory.
    match unsafe { backend().mem_alloc_async(bytes, stream.raw()) } {
        Ok(p) => Ok((p, true)),
        Err(e) if e.is_out_of_memory() => Err(e),
        Err(_) => Ok((backend().mem_alloc(bytes)?, false)),
    }
}

/// `len` elements of `T` allocated and freed in `stream`'s order. Falls back to an ordinary
/// allocation (freed synchronously) where the driver has no memory pools.
pub(crate) struct Scratch<'s, T: DeviceCopy> {
    stream: &'s Stream,
    ptr: sys::CUdeviceptr,
    pooled: bool,
    _t: PhantomData<T>,
}

impl<'s, T: DeviceCopy> Scratch<'s, T> {
    /// Allocates `len` elements (uninitialised) for work on `stream`.
    pub(crate) fn new(stream: &'s Stream, len: usize) -> Result<Self> {
        let (ptr, pooled) = alloc_ordered(stream, (len * std::mem::size_of::<T>()).max(1))?;
        Ok(Scratch {
            stream,
            ptr,
            pooled,
            _t: PhantomData,
        })
    }

    /// The device address.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl<T: DeviceCopy> Drop for Scratch<'_, T> {
    fn drop(&mut self) {
        self.stream.context().bind_in_drop();
        // SAFETY: the memory was allocated by `new` and is freed once; a pooled allocation is
        // freed in stream order, after the work that uses it.
        check_in_drop(unsafe {
            if self.pooled {
                backend().mem_free_async(self.ptr, self.stream.raw())
            } else {
                backend().mem_free(self.ptr)
            }
        });
    }
}

/// Bytes at the start of a [`Workspace`] (and of a [`PassSpace`]) that hold the counter of a
/// single-pass kernel; the partial results follow, aligned.
const COUNTER_BYTES: usize = 256;

/// Bytes of partial results a stream's workspace holds per multiprocessor: 32 blocks of 16
/// bytes (a value and an index each).
const PARTIAL_BYTES_PER_SM: usize = 32 * 16;

/// A stream's own device memory for single-pass reductions: a `u32` counter that every kernel
/// using it leaves at zero, then room for per-block partial results. Allocated on first use,
/// zeroed in stream order, freed when the stream is dropped (after its queued work). Kernels
/// on one stream run one after another, so they can share it.
pub(crate) struct Workspace {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    pooled: bool,
    /// The tile descriptors of single-pass scans (grown on demand; see [`ScanSpace`]).
    scan: parking_lot::Mutex<Option<ScanArea>>,
}

impl Workspace {
    /// Allocates and zeroes a workspace for work on `stream`.
    pub(crate) fn new(stream: &Stream) -> Result<Workspace> {
        let sms = stream.context().device().multiprocessor_count()? as usize;
        let bytes = COUNTER_BYTES + sms.max(1) * PARTIAL_BYTES_PER_SM;
        // Freed by `release`.
        let (ptr, pooled) = alloc_ordered(stream, bytes)?;
        let ws = Workspace {
            ptr,
            bytes,
            pooled,
            scan: parking_lot::Mutex::new(None),
        };
        // SAFETY: the counter bytes lie inside the allocation above.
        if let Err(e) =
            unsafe { backend().memset(ptr, 0, 4, COUNTER_BYTES / 4, 4, Some(stream.raw())) }
        {
            // Not handed out: give the memory back (a second error is recorded, not lost).
            crate::error::check_in_drop(ws.release(stream.raw()));
            return Err(e);
        }
        Ok(ws)
    }

    /// Frees the memory after the work queued on `stream` (the stream it was allocated for).
    /// The stream's context must be bound.
    pub(crate) fn release(&self, stream: sys::CUstream) -> Result<()> {
        let scan = self
            .scan
            .lock()
            .take()
            .map(|a| free_ordered(a.ptr, a.pooled, stream));
        // SAFETY: allocated by `new` for this stream and released once (by the stream's drop).
        free_ordered(self.ptr, self.pooled, stream)?;
        scan.unwrap_or(Ok(()))
    }
}

/// Frees memory from [`alloc_ordered`] for `stream` after the work queued on it. The
/// stream's context must be bound; `ptr` is freed once.
fn free_ordered(ptr: sys::CUdeviceptr, pooled: bool, stream: sys::CUstream) -> Result<()> {
    // SAFETY: the caller's allocation, for this stream, freed once.
    unsafe {
        if pooled {
            backend().mem_free_async(ptr, stream)
        } else {
            backend().stream_synchronize(stream)?;
            backend().mem_free(ptr)
        }
    }
}

/// Bytes at the start of a scan's space: `u32` control words (0: the tile ticket, 1: the
/// epoch), zeroed once.
const SCAN_CTL_BYTES: usize = 256;

/// Bytes per tile of a scan's descriptors: a status word (`u64`), zeroed once, and for
/// 8-byte element types the tile's aggregate and inclusive prefix (8 bytes each).
const SCAN_TILE_BYTES: usize = 24;

/// A stream's scan descriptors for up to `tiles` tiles.
struct ScanArea {
    ptr: sys::CUdeviceptr,
    tiles: usize,
    pooled: bool,
}

/// Allocates a scan space for `tiles` tiles on `stream` and zeroes its control words and
/// status words in stream order: (address, pooled).
fn scan_alloc(stream: &Stream, tiles: usize) -> Result<(sys::CUdeviceptr, bool)> {
    let (ptr, pooled) = alloc_ordered(stream, SCAN_CTL_BYTES + tiles * SCAN_TILE_BYTES)?;
    let words = (SCAN_CTL_BYTES + tiles * 8) / 4;
    // SAFETY: the control and status words lie inside the allocation; the memset is ordered
    // before any kernel that uses them on this stream.
    if let Err(e) = unsafe { backend().memset(ptr, 0, 4, words, 4, Some(stream.raw())) } {
        check_in_drop(free_ordered(ptr, pooled, stream.raw()));
        return Err(e);
    }
    Ok((ptr, pooled))
}

/// Device memory for one single-pass scan of `tiles` tiles on a stream: control words (a
/// ticket counter that every scan leaves at zero, and an epoch), a status word per tile and,
/// for 8-byte types, two values per tile.
///
/// A status word is valid only when it carries the current epoch, which every scan advances
/// (its last tile stores it once every tile has read it), so the words need no clearing
/// between scans. The stream's own area, grown on demand (and zeroed when allocated), is
/// used where the stream has a workspace; while this thread is capturing a graph an area too
/// small is not replaced: the scan gets a stream-ordered allocation of its own, zeroed
/// first. The stream's area stays locked while the space lives (through the launch).
pub(crate) struct ScanSpace<'s> {
    base: sys::CUdeviceptr,
    tiles: usize,
    area: Option<parking_lot::MutexGuard<'s, Option<ScanArea>>>,
    stream: &'s Stream,
    _own: Option<Scratch<'s, u8>>,
}

impl<'s> ScanSpace<'s> {
    /// Space for a scan of `tiles` tiles on `stream`.
    pub(crate) fn new(stream: &'s Stream, tiles: usize) -> Result<Self> {
        let tiles = tiles.max(1);
        if let Some(ws) = stream.workspace()? {
            let mut area = ws.scan.lock();
            let fits = area.as_ref().is_some_and(|a| a.tiles >= tiles);
            if !fits && !crate::graph::capturing() {
                if let Some(old) = area.take() {
                    stream.context().bind()?;
                    free_ordered(old.ptr, old.pooled, stream.raw())?;
                }
                let cap = tiles.next_power_of_two().max(1024);
                let (ptr, pooled) = scan_alloc(stream, cap)?;
                *area = Some(ScanArea {
                    ptr,
                    tiles: cap,
                    pooled,
                });
            }
            if let Some(a) = area.as_ref().filter(|a| a.tiles >= tiles) {
                return Ok(ScanSpace {
                    base: a.ptr,
                    tiles: a.tiles,
                    area: Some(area),
                    stream,
                    _own: None,
                });
            }
        }
        let own = Scratch::<u8>::new(stream, SCAN_CTL_BYTES + tiles * SCAN_TILE_BYTES)?;
        let words = (SCAN_CTL_BYTES + tiles * 8) / 4;
        // SAFETY: the words lie inside the allocation; the memset is ordered before the
        // kernel on the same stream.
        unsafe { backend().memset(own.ptr(), 0, 4, words, 4, Some(stream.raw())) }?;
        Ok(ScanSpace {
            base: own.ptr(),
            tiles,
            area: None,
            stream,
            _own: Some(own),
        })
    }

    /// The control words' device address (`u32`s: the ticket, the epoch).
    pub(crate) fn ctl(&self) -> sys::CUdeviceptr {
        self.base
    }

    /// Tiles the space has room for.
    pub(crate) fn tiles(&self) -> usize {
        self.tiles
    }

    /// The status words' device address (one `u64` per tile).
    pub(crate) fn status(&self) -> sys::CUdeviceptr {
        self.base + SCAN_CTL_BYTES as u64
    }

    /// The values' device address (8 bytes per tile: the aggregates, then the inclusive
    /// prefixes, `tiles()` of each).
    pub(crate) fn values(&self) -> sys::CUdeviceptr {
        self.status() + (self.tiles * 8) as u64
    }

    /// Gives up the stream's area after a failed launch (a kernel stopped part-way may leave
    /// its ticket counter off zero): the next scan allocates a fresh one.
    pub(crate) fn discard(mut self) {
        if let Some(a) = self.area.as_mut().and_then(|g| g.take()) {
            self.stream.context().bind_in_drop();
            check_in_drop(free_ordered(a.ptr, a.pooled, self.stream.raw()));
        }
    }
}

/// Device memory for one single-pass reduction on a stream: a zeroed `u32` counter (which the
/// kernel leaves at zero) and room for partial results. The stream's [`Workspace`] where it
/// has one and it is large enough, else a stream-ordered allocation whose counter is zeroed
/// in stream order first.
pub(crate) struct PassSpace<'s> {
    counter: sys::CUdeviceptr,
    partials: sys::CUdeviceptr,
    _own: Option<Scratch<'s, u8>>,
}

impl<'s> PassSpace<'s> {
    /// Space for `partial_bytes` of partial results for a kernel on `stream`.
    pub(crate) fn new(stream: &'s Stream, partial_bytes: usize) -> Result<Self> {
        if let Some(ws) = stream.workspace()? {
            if partial_bytes <= ws.bytes - COUNTER_BYTES {
                return Ok(PassSpace {
                    counter: ws.ptr,
                    partials: ws.ptr + COUNTER_BYTES as u64,
                    _own: None,
                });
            }
        }
        let own = Scratch::<u8>::new(stream, COUNTER_BYTES + partial_bytes)?;
        // SAFETY: the counter lies inside the allocation; the memset is ordered before the
        // kernel on the same stream.
        unsafe { backend().memset(own.ptr(), 0, 4, 1, 4, Some(stream.raw())) }?;
        Ok(PassSpace {
            counter: own.ptr(),
            partials: own.ptr() + COUNTER_BYTES as u64,
            _own: Some(own),
        })
    }

    /// The counter's device address (one `u32`).
    pub(crate) fn counter(&self) -> sys::CUdeviceptr {
        self.counter
    }

    /// The partial results' device address (256-byte aligned).
    pub(crate) fn partials(&self) -> sys::CUdeviceptr {
        self.partials
    }
}
