//! NVTX ranges and marks for Nsight Systems (and any other NVTX tool), with no CUDA toolkit
//! and no `libnvToolsExt`.
//!
//! ```no_run
//! use cudajit::nvtx::{self, Attributes, Color};
//!
//! nvtx::name_category(1, "solver");
//! let _step = nvtx::range("time step");                  // pops when dropped
//! {
//!     let _inner = nvtx::range_with("assemble", Attributes::new().color(Color::ORANGE).category(1));
//!     nvtx::mark("matrix ready");
//! }
//! ```
//!
//! # How a tool attaches
//!
//! This is the mechanism of NVTX v3, implemented in Rust: a program instrumented with NVTX
//! carries the client side itself. At the first NVTX call of the process, cudajit reads
//! `NVTX_INJECTION64_PATH` (which `nsys profile` sets in the program it launches), opens that
//! library and calls its `InitializeInjectionNvtx2`, which writes the tool's functions into
//! cudajit's table of NVTX callbacks. Every later call goes to those functions.
//!
//! When the variable is unset, the library cannot be loaded, or its entry point refuses,
//! every call here does nothing and costs one atomic load (the decision is made once per
//! process). Nothing here panics or returns an error: annotations never change what a
//! program does.
//!
//! # Threads
//!
//! [`range`] pushes onto the calling thread's stack of ranges and its [`Range`] guard pops it;
//! the guard cannot leave its thread, so ranges nest per thread as NVTX push/pop ranges do.
//! [`start`] opens a range that may end on any thread (`nvtxRangeStartEx`/`nvtxRangeEnd`).
//!
//! # Text
//!
//! Messages are passed as C strings: text after a NUL byte (`'\0'`) inside one is dropped.
//!
//! # cudajit's own ranges: `CUDAJIT_NVTX=1`
//!
//! With `CUDAJIT_NVTX=1` (or `true`, `yes`, `on`) and a tool attached, cudajit's operations
//! emit ranges of their own, named `cudajit: ...`: `Elementwise` calls, reductions, kernel
//! compilation (`cudajit: compile <kernel>`), module loads and host/device copies. Kernel
//! launches emit none (their path stays free of allocation and formatting). Without the
//! variable, or without a tool, these cost one load of a cached flag and format nothing. With
//! the variable set, a tool that cannot be loaded is reported in one line on stderr.

mod inject;
#[cfg(test)]
mod tests;

use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};

use inject::EventAttributes;

/// An ARGB colour for a range or mark (`0xAARRGGBB`; Nsight Systems ignores the alpha).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Color(pub u32);

impl Color {
    /// Red.
    pub const RED: Color = Color::rgb(0xd6, 0x27, 0x28);
    /// Orange.
    pub const ORANGE: Color = Color::rgb(0xff, 0x7f, 0x0e);
    /// Yellow.
    pub const YELLOW: Color = Color::rgb(0xe6, 0xc2, 0x29);
    /// Green.
    pub const GREEN: Color = Color::rgb(0x2c, 0xa0, 0x2c);
    /// Cyan.
    pub const CYAN: Color = Color::rgb(0x17, 0xbe, 0xcf);
    /// Blue.
    pub const BLUE: Color = Color::rgb(0x1f, 0x77, 0xb4);
    /// Purple.
    pub const PURPLE: Color = Color::rgb(0x94, 0x67, 0xbd);
    /// Grey.
    pub const GREY: Color = Color::rgb(0x7f, 0x7f, 0x7f);

    /// An opaque colour from its red, green and blue components.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Color {
        Color(0xff00_0000 | (r as u32) << 16 | (g as u32) << 8 | b as u32)
    }

    /// The ARGB value (`0xAARRGGBB`).
    pub const fn argb(self) -> u32 {
        self.0
    }
}

/// A number attached to a range or mark, which the tool shows with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A signed 64-bit integer.
    I64(i64),
    /// A 64-bit float.
    F64(f64),
    /// An unsigned 32-bit integer.
    U32(u32),
    /// A signed 32-bit integer.
    I32(i32),
    /// A 32-bit float.
    F32(f32),
}

/// A range's or mark's colour, category and payload; all optional.
///
/// ```
/// use cudajit::nvtx::{Attributes, Color, Payload};
/// let a = Attributes::new().color(Color::GREEN).category(2).payload(Payload::U64(1 << 20));
/// assert_eq!(a.category, 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Attributes {
    /// The colour (`None`: the tool's choice).
    pub color: Option<Color>,
    /// The category (0: none); name one with [`name_category`].
    pub category: u32,
    /// A number shown with the event.
    pub payload: Option<Payload>,
}

impl Attributes {
    /// No colour, no category, no payload.
    pub const fn new() -> Attributes {
        Attributes {
            color: None,
            category: 0,
            payload: None,
        }
    }

    /// With this colour.
    pub const fn color(mut self, color: Color) -> Attributes {
        self.color = Some(color);
        self
    }

    /// In this category (0: none).
    pub const fn category(mut self, category: u32) -> Attributes {
        self.category = category;
        self
    }

    /// With this payload.
    pub const fn payload(mut self, payload: Payload) -> Attributes {
        self.payload = Some(payload);
        self
    }
}

/// Whether an NVTX tool is attached to this process (for instance, it runs under
/// `nsys profile`). The first NVTX call of the process, this one included, loads the tool:
/// call it early to keep that cost out of a timed region.
pub fn is_attached() -> bool {
    inject::attached()
}

/// Runs `f` with `text` as a C string: up to its first NUL byte, without allocating for short
/// text.
fn with_c_text<R>(text: &str, f: impl FnOnce(&CStr) -> R) -> R {
    let bytes = text.as_bytes();
    let bytes = bytes
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes, |n| &bytes[..n]);
    let mut buf = [0u8; 128];
    if bytes.len() < buf.len() {
        buf[..bytes.len()].copy_from_slice(bytes);
        return f(CStr::from_bytes_until_nul(&buf).unwrap_or_default());
    }
    f(&CString::new(bytes).unwrap_or_default())
}

/// Calls `f` with `text` and `attrs` as NVTX's attribute structure.
fn with_event<R>(text: &str, attrs: &Attributes, f: impl FnOnce(&EventAttributes<'_>) -> R) -> R {
    with_c_text(text, |c| {
        f(&EventAttributes::new(
            c,
            attrs.color.map(Color::argb),
            attrs.category,
            attrs.payload,
        ))
    })
}

/// A range on the calling thread's stack, popped when the guard drops (`nvtxRangePushEx` /
/// `nvtxRangePop`). It cannot be sent to another thread; for that, see [`start`].
#[must_use = "the range ends when this guard drops: bind it (`let _r = nvtx::range(..)`)"]
#[derive(Debug)]
pub struct Range {
    pushed: bool,
    /// Push and pop are per thread: the guard stays on its thread.
    _thread: PhantomData<*const ()>,
}

impl Range {
    /// Ends the range now (as dropping it does).
    pub fn end(self) {}
}

impl Drop for Range {
    fn drop(&mut self) {
        if self.pushed {
            inject::pop();
        }
    }
}

/// Opens a range named `name` on the calling thread until the guard drops.
pub fn range(name: &str) -> Range {
    range_with(name, Attributes::new())
}

/// Opens a range with a colour, category or payload on the calling thread until the guard
/// drops.
pub fn range_with(name: &str, attrs: Attributes) -> Range {
    let pushed = inject::attached() && with_event(name, &attrs, inject::push);
    Range {
        pushed,
        _thread: PhantomData,
    }
}

/// Marks an instant named `name` (`nvtxMarkEx`).
pub fn mark(name: &str) {
    mark_with(name, Attributes::new());
}

/// Marks an instant with a colour, category or payload.
pub fn mark_with(name: &str, attrs: Attributes) {
    if inject::attached() {
        with_event(name, &attrs, inject::mark);
    }
}

/// A range that may end on another thread than the one that started it, and may overlap
/// others (`nvtxRangeStartEx` / `nvtxRangeEnd`). It ends when dropped or [`ended`](Self::end).
#[must_use = "the range ends when this value drops: bind it (`let r = nvtx::start(..)`)"]
#[derive(Debug)]
pub struct StartedRange {
    id: Option<u64>,
}

impl StartedRange {
    /// Ends the range now (as dropping it does).
    pub fn end(self) {}
}

impl Drop for StartedRange {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            inject::end(id);
        }
    }
}

/// Starts a range named `name` that ends when the returned value drops, on any thread.
pub fn start(name: &str) -> StartedRange {
    start_with(name, Attributes::new())
}

/// Starts a range with a colour, category or payload that ends when the returned value drops.
pub fn start_with(name: &str, attrs: Attributes) -> StartedRange {
    let id = if inject::attached() {
        with_event(name, &attrs, inject::start)
    } else {
        None
    };
    StartedRange { id }
}

/// Names category `id` (as used in [`Attributes::category`]) in the tool's display.
pub fn name_category(id: u32, name: &str) {
    if inject::attached() {
        with_c_text(name, |c| inject::name_category(id, c));
    }
}

/// Names the calling thread in the tool's display (`nvtxNameOsThreadA`). Linux only: the
/// operating system's thread id comes from `/proc/thread-self`; elsewhere this does nothing.
pub fn name_current_thread(name: &str) {
    if !inject::attached() {
        return;
    }
    if let Some(tid) = os_thread_id() {
        with_c_text(name, |c| inject::name_os_thread(tid, c));
    }
}

/// The calling thread's id as the kernel knows it (`gettid()`), read from `/proc/thread-self`
/// (a link to `<pid>/task/<tid>`).
fn os_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Whether `CUDAJIT_NVTX` asks for cudajit's own ranges.
fn ops_requested() -> bool {
    std::env::var("CUDAJIT_NVTX").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// A problem loading the tool, on stderr when `CUDAJIT_NVTX` is set (the user asked for
/// ranges and would otherwise not learn why none appear).
fn note(message: &str) {
    if ops_requested() {
        eprintln!("cudajit: NVTX ranges are off: {message}");
    }
}

/// Whether cudajit's operations emit ranges: 0 not yet decided, 1 no, 2 yes.
static OPS: AtomicU8 = AtomicU8::new(0);

/// A range for one of cudajit's own operations when `CUDAJIT_NVTX` is set and a tool is
/// attached; `name` is only called then.
#[inline]
pub(crate) fn op_range(name: impl FnOnce() -> String) -> Option<Range> {
    let on = match OPS.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let on = ops_requested() && is_attached();
            OPS.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
    };
    on.then(|| range(&name()))
}
