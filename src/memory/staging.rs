//! Large copies between pageable host memory (a `Vec`, a slice, an ndarray array) and the
//! device, staged through cudajit's own pinned buffers by several host threads at once.
//!
//! The driver copies pageable memory through a pinned buffer of its own, with one thread: its
//! speed is one core's `memcpy`, well below what PCIe carries. Here up to [`DEFAULT_THREADS`]
//! threads each `memcpy` their share of the data into (host → device) or out of (device → host)
//! pinned chunks while the DMA of other chunks runs, on the caller's stream (or the legacy
//! default stream for the synchronous calls).
//!
//! - Host → device, per chunk: wait for the buffer's previous DMA (its event), `memcpy` the
//!   chunk into it, enqueue `cuMemcpyHtoDAsync` from it, record the buffer's event.
//! - Device → host, per chunk: enqueue `cuMemcpyDtoHAsync` into a buffer and record its event;
//!   enqueue the worker's next chunk into its other buffer; wait for the first event and
//!   `memcpy` the chunk out.
//!
//! Worker `w` of `T` takes chunks `w, w + T, w + 2T, ...`, with two buffers of its own (double
//! buffering). Every copy has finished when the functions return (also on a stream, as the
//! driver's pageable copies do): no staging buffer is reused while a DMA uses it, and the
//! caller's memory is not touched after the return. An error in any worker stops the others at
//! their next chunk; all enqueued work is waited for, then the first error is returned.
//!
//! The buffers are a per-context pool ([`StagingPool`]), made on first use and freed with the
//! context. A copy that finds the pool in use by another thread, or cannot allocate pinned
//! memory, or whose host memory is already pinned (or managed), goes to the driver instead.
//!
//! Environment (read once): `CUDAJIT_STAGING=0` (or `off`, `false`, `no`) turns staging off;
//! `CUDAJIT_STAGING_THREADS=n` sets the thread count (1 to [`MAX_THREADS`]).

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use cudajit_sys as sys;
use parking_lot::{Mutex, MutexGuard};

use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, record_drop_error, Error, Result};
use crate::stream::Stream;

/// Copies of at least this many bytes are staged; smaller ones take the driver's path, where
/// starting threads would cost more than it saves. (Not measured yet: the driver's own pageable
/// path reaches its full rate, about 10 GB/s, from a few MiB.)
pub(crate) const STAGING_MIN: usize = 16 << 20;

/// Bytes per chunk, and the size of each pinned staging buffer. Large enough that the cost of
/// one enqueue and one event (a few microseconds) is small next to its DMA (about 75 µs at
/// 55 GB/s), small enough that the pipeline fills quickly. Not tuned on hardware.
pub(crate) const CHUNK: usize = 4 << 20;

/// The default thread count is the machine's parallelism, at most this: eight threads copying
/// at several GB/s each outrun a PCIe 5 x16 link. Not tuned on hardware.
pub(crate) const DEFAULT_THREADS: usize = 8;

/// The most threads `CUDAJIT_STAGING_THREADS` may ask for (the pool then holds
/// `2 * MAX_THREADS` chunks, 256 MiB of pinned memory).
pub(crate) const MAX_THREADS: usize = 32;

// A staged copy has several chunks to spread over the threads.
const _: () = assert!(STAGING_MIN >= 2 * CHUNK);

/// Staging buffers per worker: one is filled (or drained) by the host while the other's DMA runs.
const BUFS_PER_WORKER: usize = 2;

// ---------------------------------------------------------------------------------------------
// Configuration.

/// What the environment asks for, read once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Config {
    enabled: bool,
    threads: usize,
}

fn config() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    *CONFIG.get_or_init(|| {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            enabled: parse_enabled(std::env::var("CUDAJIT_STAGING").ok().as_deref()),
            threads: parse_threads(
                std::env::var("CUDAJIT_STAGING_THREADS").ok().as_deref(),
                available,
            ),
        }
    })
}

/// `CUDAJIT_STAGING`: on unless `0`, `off`, `false` or `no` (any case, spaces ignored).
fn parse_enabled(value: Option<&str>) -> bool {
    !matches!(
        value.map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Some("0" | "off" | "false" | "no")
    )
}

/// `CUDAJIT_STAGING_THREADS`: a count from 1 to [`MAX_THREADS`] (larger is clamped); unset,
/// empty or unparsable means `min(available, DEFAULT_THREADS)`.
fn parse_threads(value: Option<&str>, available: usize) -> usize {
    match value.and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(n) if n >= 1 => n.min(MAX_THREADS),
        _ => available.clamp(1, DEFAULT_THREADS),
    }
}

/// Whether a pageable copy of `bytes` bytes should be staged (the size threshold and the
/// environment's switch).
pub(crate) fn wanted(bytes: usize) -> bool {
    bytes >= STAGING_MIN && config().enabled
}

// ---------------------------------------------------------------------------------------------
// Splitting the work.

/// The number of `chunk`-byte chunks in `bytes` bytes (the last may be shorter).
fn num_chunks(bytes: usize, chunk: usize) -> usize {
    bytes.div_ceil(chunk)
}

/// Chunk `i`'s byte offset and length.
fn chunk_range(i: usize, bytes: usize, chunk: usize) -> (usize, usize) {
    let off = i * chunk;
    (off, chunk.min(bytes - off))
}

/// The number of workers for `chunks` chunks with up to `threads` threads.
fn worker_count(threads: usize, chunks: usize) -> usize {
    threads.min(chunks).max(1)
}

/// The chunks worker `w` of `workers` copies, in order.
fn worker_chunks(w: usize, workers: usize, chunks: usize) -> impl Iterator<Item = usize> {
    (w..chunks).step_by(workers.max(1))
}

// ---------------------------------------------------------------------------------------------
// The pool.

/// One pinned staging buffer of [`CHUNK`] bytes and the event that marks the end of its last DMA.
struct StagingBuf {
    ptr: NonNull<u8>,
    event: sys::CUevent,
}

// SAFETY: the buffer owns its pinned memory and event; a worker gets `&mut` access to its own
// buffers only, and the event handle may be used from any thread.
unsafe impl Send for StagingBuf {}

/// A context's pinned staging buffers (none until the first staged copy).
pub(crate) struct StagingPool {
    bufs: Mutex<Vec<StagingBuf>>,
}

impl StagingPool {
    /// An empty pool.
    pub(crate) fn new() -> StagingPool {
        StagingPool {
            bufs: Mutex::new(Vec::new()),
        }
    }

    /// Frees the buffers; called by the context's `Drop`, before the context is released.
    /// `ctx` is the context's handle. Errors are recorded as drop errors.
    pub(crate) fn release(&mut self, ctx: sys::CUcontext) {
        let bufs = std::mem::take(self.bufs.get_mut());
        free_bufs(bufs, ctx);
    }

    /// Frees the buffers if no copy is using them now (at process exit, while the context may
    /// still be held by statics); a later staged copy allocates new ones.
    pub(crate) fn release_idle(&self, ctx: sys::CUcontext) {
        if let Some(mut guard) = self.bufs.try_lock() {
            let bufs = std::mem::take(&mut *guard);
            drop(guard);
            free_bufs(bufs, ctx);
        }
    }
}

/// Frees staging buffers of the context `ctx` (binding it for the calls if it is not current).
fn free_bufs(bufs: Vec<StagingBuf>, ctx: sys::CUcontext) {
    if bufs.is_empty() {
        return;
    }
    let b = backend();
    let previous = match b.ctx_get_current() {
        Ok(p) => p,
        Err(e) => {
            // Without a context the memory cannot be freed safely; it is leaked.
            record_drop_error(e);
            return;
        }
    };
    if previous != ctx {
        // SAFETY: `ctx` is the live primary context that owns the buffers (it is released
        // after this returns).
        if let Err(e) = unsafe { b.ctx_set_current(ctx) } {
            record_drop_error(e);
            return;
        }
    }
    for buf in bufs {
        // SAFETY: every copy waited for its DMAs before it returned, so no work uses the
        // buffer or its event; each is freed once, here.
        unsafe {
            check_in_drop(b.event_destroy(buf.event));
            check_in_drop(b.host_free(buf.ptr.as_ptr().cast()));
        }
    }
    if previous != ctx {
        // SAFETY: restores what was current before (null unbinds).
        check_in_drop(unsafe { b.ctx_set_current(previous) });
    }
}

/// Grows the locked pool to `n` buffers (the context is bound); returns how many it holds, fewer
/// than `n` when pinned memory or events run out.
fn reserve(bufs: &mut Vec<StagingBuf>, n: usize) -> usize {
    let b = backend();
    while bufs.len() < n {
        let Ok(p) = b.host_alloc(CHUNK, 0) else { break };
        let Some(ptr) = NonNull::new(p.cast::<u8>()) else {
            break;
        };
        match b.event_create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0) {
            Ok(event) => bufs.push(StagingBuf { ptr, event }),
            Err(_) => {
                // SAFETY: allocated just above, used by nothing, freed once.
                check_in_drop(unsafe { b.host_free(p) });
                break;
            }
        }
    }
    bufs.len()
}

// ---------------------------------------------------------------------------------------------
// The copies.

/// How a staged copy runs: the thread count, and whether to wait for a busy pool (the tests
/// do) rather than leave the copy to the driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    pub(crate) threads: usize,
    pub(crate) wait_for_pool: bool,
}

impl Options {
    /// The environment's thread count; a busy pool means the driver's path.
    pub(crate) fn from_env() -> Options {
        Options {
            threads: config().threads,
            wait_for_pool: false,
        }
    }
}

/// A host address shared by the workers, each of which touches only its own chunks' bytes.
#[derive(Clone, Copy)]
struct HostPtr(*mut u8);

#[derive(Clone, Copy)]
enum Direction {
    HtoD,
    DtoH,
}

/// One staged copy, shared by its workers.
struct Job {
    dir: Direction,
    host: HostPtr,
    dev: sys::CUdeviceptr,
    bytes: usize,
    chunks: usize,
    workers: usize,
    stream: sys::CUstream,
    abort: AtomicBool,
}

// SAFETY: the host range is valid for the whole copy (the caller's contract, and the workers
// are joined before `copy` returns); workers touch disjoint chunks of it. The stream handle is
// live for the copy and driver calls on it are thread-safe.
unsafe impl Sync for Job {}

/// How a worker failed.
enum Failure {
    /// A driver call failed; everything this worker enqueued has been waited for.
    Call(Error),
    /// Waiting for a DMA failed: a staging buffer may still be in use by the device, so the
    /// pool must not be reused or freed.
    Wait(Error),
    /// The worker's thread could not be started; nothing was done.
    Spawn,
}

/// Host → device: `bytes` bytes from pageable `src` to `dst`, staged. `Ok(false)` means nothing
/// was copied and the caller must use the driver's path (the pool is busy or cannot be
/// allocated, `src` is memory the driver knows, or a thread could not be started).
///
/// # Safety
/// `src` is readable for `bytes` bytes, `dst` is a device range as long in `ctx`, and `stream`
/// belongs to `ctx`.
pub(crate) unsafe fn htod(
    ctx: &Context,
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: Option<&Stream>,
    opts: Options,
) -> Result<bool> {
    // SAFETY: the caller's contract; an HtoD job only reads the host range.
    unsafe {
        copy(
            ctx,
            Direction::HtoD,
            HostPtr(src.cast_mut()),
            dst,
            bytes,
            stream,
            opts,
        )
    }
}

/// Device → host: `bytes` bytes from `src` to pageable `dst`, staged. `Ok(false)` as for
/// [`htod`].
///
/// # Safety
/// `dst` is writable for `bytes` bytes (it may be uninitialised), `src` is a device range as
/// long in `ctx`, and `stream` belongs to `ctx`.
pub(crate) unsafe fn dtoh(
    ctx: &Context,
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
    opts: Options,
) -> Result<bool> {
    // SAFETY: the caller's contract.
    unsafe { copy(ctx, Direction::DtoH, HostPtr(dst), src, bytes, stream, opts) }
}

/// # Safety
/// As for [`htod`] and [`dtoh`].
unsafe fn copy(
    ctx: &Context,
    dir: Direction,
    host: HostPtr,
    dev: sys::CUdeviceptr,
    bytes: usize,
    stream: Option<&Stream>,
    opts: Options,
) -> Result<bool> {
    if bytes == 0 {
        return Ok(true);
    }
    ctx.bind()?;
    // Pinned (or managed) memory is better left to the driver: it copies it with no staging.
    if backend().is_driver_memory(host.0.cast::<c_void>()) {
        return Ok(false);
    }
    let mut bufs: MutexGuard<'_, Vec<StagingBuf>> = if opts.wait_for_pool {
        ctx.inner.staging.bufs.lock()
    } else {
        match ctx.inner.staging.bufs.try_lock() {
            Some(g) => g,
            None => return Ok(false),
        }
    };
    let chunks = num_chunks(bytes, CHUNK);
    let want = worker_count(opts.threads.clamp(1, MAX_THREADS), chunks);
    let held = reserve(&mut bufs, want * BUFS_PER_WORKER);
    let workers = want.min(held / BUFS_PER_WORKER);
    if workers == 0 {
        return Ok(false);
    }
    let job = Job {
        dir,
        host,
        dev,
        bytes,
        chunks,
        workers,
        stream: stream.map_or(std::ptr::null_mut(), Stream::raw),
        abort: AtomicBool::new(false),
    };
    let mut sets = bufs[..workers * BUFS_PER_WORKER].chunks_mut(BUFS_PER_WORKER);
    let outcomes: Vec<std::result::Result<(), Failure>> = std::thread::scope(|s| {
        let first = sets.next().unwrap_or_default();
        let handles: Vec<_> = sets
            .enumerate()
            .map(|(i, set)| {
                let job = &job;
                std::thread::Builder::new()
                    .name("cudajit-staging".into())
                    .spawn_scoped(s, move || {
                        // The context is current per thread.
                        if let Err(e) = ctx.bind() {
                            job.abort.store(true, Ordering::Relaxed);
                            return Err(Failure::Call(e));
                        }
                        job.run(i + 1, set)
                    })
                    .map_err(|_| job.abort.store(true, Ordering::Relaxed))
            })
            .collect();
        let mut outcomes = vec![job.run(0, first)];
        for h in handles {
            outcomes.push(match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(Failure::Call(Error::usage("a staging thread panicked")))
                }),
                Err(()) => Err(Failure::Spawn),
            });
        }
        outcomes
    });
    let mut first_error = None;
    let mut spawn_failed = false;
    let mut wait_failed = false;
    for outcome in outcomes {
        match outcome {
            Ok(()) => {}
            Err(Failure::Spawn) => spawn_failed = true,
            Err(Failure::Call(e)) => {
                first_error.get_or_insert(e);
            }
            Err(Failure::Wait(e)) => {
                wait_failed = true;
                first_error.get_or_insert(e);
            }
        }
    }
    // A device that cannot be waited for may still read or write the buffers. If the whole
    // context can be waited for, nothing uses them any more and they stay in the pool; if not
    // (a lost device), forget them (dropping a `StagingBuf` frees nothing), leaking their
    // pinned memory rather than freeing memory a DMA may still write.
    if wait_failed && backend().ctx_synchronize().is_err() {
        bufs.clear();
    }
    match first_error {
        Some(e) => Err(e),
        // A worker that never started left its chunks undone: the driver copies everything.
        None if spawn_failed => Ok(false),
        None => Ok(true),
    }
}

impl Job {
    /// Worker `w`'s share, with its own buffers.
    fn run(&self, w: usize, bufs: &mut [StagingBuf]) -> std::result::Result<(), Failure> {
        let mut state = WorkerState {
            job: self,
            bufs,
            pending: [false; BUFS_PER_WORKER],
            unrecorded: false,
        };
        let res = match self.dir {
            Direction::HtoD => state.htod(w),
            Direction::DtoH => state.dtoh(w),
        };
        if res.is_err() {
            self.abort.store(true, Ordering::Relaxed);
        }
        // Whatever happened, wait for everything this worker enqueued before returning.
        let drained = state.drain();
        match (res, drained) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(e), Ok(())) => Err(Failure::Call(e)),
            (Err(e), Err(_)) | (Ok(()), Err(e)) => Err(Failure::Wait(e)),
        }
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }
}

/// One worker's buffers and what is in flight in them.
struct WorkerState<'a> {
    job: &'a Job,
    bufs: &'a mut [StagingBuf],
    /// Buffer `i` has a DMA in flight, marked by its recorded event.
    pending: [bool; BUFS_PER_WORKER],
    /// A DMA was enqueued but its event could not be recorded: only a stream wait covers it.
    unrecorded: bool,
}

impl WorkerState<'_> {
    /// Waits for buffer `b`'s DMA, if one is in flight. An error here is a [`Failure::Wait`]
    /// (the caller drains, which fails the same way).
    fn wait(&mut self, b: usize) -> Result<()> {
        if self.pending[b] {
            // SAFETY: the pool's live event, recorded on the job's stream.
            unsafe { backend().event_synchronize(self.bufs[b].event) }?;
            self.pending[b] = false;
        }
        Ok(())
    }

    /// Enqueues the DMA of chunk `c` between buffer `b` and the device, and records `b`'s event.
    fn enqueue(&mut self, c: usize, b: usize) -> Result<()> {
        let job = self.job;
        let (off, len) = chunk_range(c, job.bytes, CHUNK);
        let (buf, dev) = (self.bufs[b].ptr.as_ptr(), job.dev + off as u64);
        // SAFETY: the buffer holds CHUNK >= len bytes and no DMA uses it (its last one was
        // waited for); the device range is within the caller's; the stream is live.
        unsafe {
            match job.dir {
                Direction::HtoD => backend().memcpy_htod(dev, buf.cast(), len, Some(job.stream)),
                Direction::DtoH => backend().memcpy_dtoh(buf.cast(), dev, len, Some(job.stream)),
            }
        }?;
        // SAFETY: the pool's live event and the job's live stream.
        match unsafe { backend().event_record(self.bufs[b].event, job.stream) } {
            Ok(()) => {
                self.pending[b] = true;
                Ok(())
            }
            Err(e) => {
                self.unrecorded = true;
                Err(e)
            }
        }
    }

    /// Host → device: fill a free buffer with each chunk and send it.
    fn htod(&mut self, w: usize) -> Result<()> {
        let job = self.job;
        for (k, c) in worker_chunks(w, job.workers, job.chunks).enumerate() {
            if job.aborted() {
                break;
            }
            let b = k % BUFS_PER_WORKER;
            self.wait(b)?;
            let (off, len) = chunk_range(c, job.bytes, CHUNK);
            // SAFETY: the caller's host range holds `bytes` readable bytes and chunk `c` lies in
            // it; the buffer holds CHUNK >= len bytes and no DMA reads it now (waited above);
            // pinned and pageable memory do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(job.host.0.add(off), self.bufs[b].ptr.as_ptr(), len)
            };
            self.enqueue(c, b)?;
        }
        Ok(())
    }

    /// Device → host: keep the next chunk's DMA in flight while copying the last one out.
    fn dtoh(&mut self, w: usize) -> Result<()> {
        let job = self.job;
        let mut mine = worker_chunks(w, job.workers, job.chunks).peekable();
        let mut k = 0;
        match mine.peek() {
            Some(&c) if !job.aborted() => self.enqueue(c, 0)?,
            _ => return Ok(()),
        }
        while let Some(c) = mine.next() {
            let b = k % BUFS_PER_WORKER;
            if let Some(&next) = mine.peek() {
                if !job.aborted() {
                    // The other buffer was emptied in the previous step.
                    self.enqueue(next, (k + 1) % BUFS_PER_WORKER)?;
                }
            }
            if !self.pending[b] {
                // Aborted before this chunk's DMA was enqueued.
                break;
            }
            self.wait(b)?;
            let (off, len) = chunk_range(c, job.bytes, CHUNK);
            // SAFETY: the DMA into the buffer has finished (waited above); the caller's host
            // range holds `bytes` writable bytes and chunk `c` lies in it; no overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(self.bufs[b].ptr.as_ptr(), job.host.0.add(off), len)
            };
            k += 1;
        }
        Ok(())
    }

    /// Waits for every DMA this worker has in flight.
    fn drain(&mut self) -> Result<()> {
        let mut res = Ok(());
        for b in 0..BUFS_PER_WORKER {
            if let Err(e) = self.wait(b) {
                res = res.and(Err(e));
            }
        }
        if self.unrecorded {
            // SAFETY: the job's live stream.
            res = res.and(unsafe { backend().stream_synchronize(self.job.stream) });
        }
        res
    }
}

// ---------------------------------------------------------------------------------------------
// Test hooks.

/// Staged copies with an explicit thread count, for cudajit's own GPU tests. Not part of the
/// API: these may change or go away in any release.
pub mod testing {
    use super::Options;
    use crate::error::Result;
    use crate::memory::element::DeviceCopy;
    use crate::memory::slice::{check_len, check_stream, DeviceSlice, DeviceSliceMut};
    use crate::stream::Stream;

    /// Bytes per chunk and per staging buffer.
    pub const CHUNK: usize = super::CHUNK;
    /// The smallest pageable copy the public API stages.
    pub const STAGING_MIN: usize = super::STAGING_MIN;

    /// Copies `src` into `dst` through the staging path with `threads` threads (waiting for the
    /// pool if another copy uses it), on `stream` or synchronously. `Ok(true)` when it was
    /// staged; `Ok(false)` when it was not (pinned or managed `src`, no pinned memory), and
    /// nothing was copied.
    pub fn copy_from_host<T: DeviceCopy, A: DeviceSliceMut<T> + ?Sized>(
        dst: &mut A,
        src: &[T],
        stream: Option<&Stream>,
        threads: usize,
    ) -> Result<bool> {
        check_len("copy_from_host", dst.shape(), src.len())?;
        if let Some(s) = stream {
            check_stream(dst.context(), s)?;
        }
        let opts = Options {
            threads,
            wait_for_pool: true,
        };
        // SAFETY: `src` is a live slice of `num_bytes` bytes, the device range is the array's,
        // and the stream was checked to belong to its context.
        unsafe {
            super::htod(
                dst.context(),
                dst.device_ptr(),
                src.as_ptr().cast(),
                dst.num_bytes(),
                stream,
                opts,
            )
        }
    }

    /// Copies `src` into `dst` through the staging path with `threads` threads; as
    /// [`copy_from_host`].
    pub fn copy_to_host<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
        src: &A,
        dst: &mut [T],
        stream: Option<&Stream>,
        threads: usize,
    ) -> Result<bool> {
        check_len("copy_to_host", src.shape(), dst.len())?;
        if let Some(s) = stream {
            check_stream(src.context(), s)?;
        }
        let opts = Options {
            threads,
            wait_for_pool: true,
        };
        // SAFETY: `dst` is a live, exclusive slice of `num_bytes` bytes (the device holds
        // values of `T` for it), the device range is the array's, and the stream was checked.
        unsafe {
            super::dtoh(
                src.context(),
                dst.as_mut_ptr().cast(),
                src.device_ptr(),
                src.num_bytes(),
                stream,
                opts,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_is_on_unless_turned_off() {
        for on in [
            None,
            Some(""),
            Some("1"),
            Some("yes"),
            Some("on"),
            Some("2"),
        ] {
            assert!(parse_enabled(on), "{on:?}");
        }
        for off in ["0", "off", "OFF", "false", " no ", "False"] {
            assert!(!parse_enabled(Some(off)), "{off:?}");
        }
    }

    #[test]
    fn thread_count_defaults_to_the_machine_capped_and_can_be_set() {
        assert_eq!(parse_threads(None, 16), DEFAULT_THREADS);
        assert_eq!(parse_threads(None, 3), 3);
        assert_eq!(parse_threads(None, 0), 1);
        assert_eq!(parse_threads(Some(""), 4), 4);
        assert_eq!(parse_threads(Some("zero"), 4), 4);
        assert_eq!(parse_threads(Some("0"), 4), 4);
        assert_eq!(parse_threads(Some("-2"), 4), 4);
        assert_eq!(parse_threads(Some(" 12 "), 4), 12);
        assert_eq!(parse_threads(Some("1"), 16), 1);
        assert_eq!(parse_threads(Some("1000"), 16), MAX_THREADS);
    }

    #[test]
    fn threshold() {
        assert!(!wanted(0));
        assert!(!wanted(STAGING_MIN - 1));
        // On by default; the environment of the test run may turn it off.
        assert_eq!(wanted(STAGING_MIN), config().enabled);
    }

    #[test]
    fn chunks_cover_the_range_exactly_once() {
        let chunk = 10;
        for bytes in [1usize, 9, 10, 11, 99, 100, 101, 12_345] {
            let chunks = num_chunks(bytes, chunk);
            for threads in [1usize, 2, 3, 7, 8, 32] {
                let workers = worker_count(threads, chunks);
                assert!((1..=threads.min(chunks)).contains(&workers));
                let mut covered = vec![0u8; bytes];
                let mut seen = vec![false; chunks];
                for w in 0..workers {
                    let mine: Vec<usize> = worker_chunks(w, workers, chunks).collect();
                    assert!(!mine.is_empty(), "worker {w} of {workers} has no chunk");
                    assert!(mine.windows(2).all(|p| p[1] == p[0] + workers));
                    for c in mine {
                        assert!(!seen[c]);
                        seen[c] = true;
                        let (off, len) = chunk_range(c, bytes, chunk);
                        assert!((1..=chunk).contains(&len) && off + len <= bytes);
                        covered[off..off + len].iter_mut().for_each(|b| *b += 1);
                    }
                }
                assert!(seen.iter().all(|&s| s), "{bytes} bytes, {threads} threads");
                assert!(
                    covered.iter().all(|&n| n == 1),
                    "{bytes} bytes, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn the_last_chunk_is_the_remainder() {
        let bytes = 3 * CHUNK + 12_345;
        assert_eq!(num_chunks(bytes, CHUNK), 4);
        assert_eq!(chunk_range(3, bytes, CHUNK), (3 * CHUNK, 12_345));
        assert_eq!(chunk_range(0, bytes, CHUNK), (0, CHUNK));
        assert_eq!(num_chunks(4 * CHUNK, CHUNK), 4);
        assert_eq!(chunk_range(3, 4 * CHUNK, CHUNK), (3 * CHUNK, CHUNK));
    }
}
