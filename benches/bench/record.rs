//! One result row (a JSON line) and the median.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

use super::*;

// ---------------------------------------------------------------------------------------------
// JSON lines.

/// One output line: a measurement, an error, or a skip (a row this machine cannot run, such
/// as a multi-GPU row on one GPU: `"skip": why`, not a failure). Serialized in the fields'
/// order, the absent ones left out.
#[derive(Serialize)]
pub(crate) struct Rec {
    pub(crate) work: String,
    pub(crate) size: String,
    #[serde(rename = "impl")]
    pub(crate) imp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) variant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) min_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reps: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes: Option<u64>,
    /// Floating-point operations of one repetition (matrix products: 2·M·N·K).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flops: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unit: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// Devices the row ran on (multi-GPU rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) devices: Option<usize>,
    /// All-reduce bus bandwidth in GB/s (nccl-tests' busbw: bytes / time * 2(n-1)/n).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) busbw_gbs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skip: Option<String>,
}

impl Rec {
    pub(crate) fn new(work: &str, size: &str) -> Rec {
        Rec {
            work: work.into(),
            size: size.into(),
            imp: LIB_IMPL.into(),
            variant: None,
            ms: None,
            min_ms: None,
            max_ms: None,
            reps: None,
            bytes: None,
            flops: None,
            unit: None,
            note: None,
            error: None,
            skip: None,
            devices: None,
            busbw_gbs: None,
        }
    }
    pub(crate) fn imp(mut self, i: &str) -> Rec {
        self.imp = i.into();
        self
    }
    pub(crate) fn variant(mut self, v: impl Into<String>) -> Rec {
        self.variant = Some(v.into());
        self
    }
    /// The median of `times` (ms), with their min, max and count.
    pub(crate) fn times(mut self, times: &[f64]) -> Rec {
        self.ms = Some(median(times));
        self.min_ms = times.iter().copied().reduce(f64::min);
        self.max_ms = times.iter().copied().reduce(f64::max);
        self.reps = Some(times.len());
        self
    }
    pub(crate) fn bytes(mut self, b: usize) -> Rec {
        self.bytes = Some(b as u64);
        self
    }
    pub(crate) fn flops(mut self, f: u64) -> Rec {
        self.flops = Some(f);
        self
    }
    pub(crate) fn unit(mut self, u: &'static str) -> Rec {
        self.unit = Some(u);
        self
    }
    pub(crate) fn note(mut self, n: impl Into<String>) -> Rec {
        self.note = Some(n.into());
        self
    }
    pub(crate) fn error(mut self, e: &str) -> Rec {
        self.error = Some(e.into());
        self
    }

    /// Marks the row skipped on this machine (why), not failed.
    pub(crate) fn skip(mut self, why: &str) -> Rec {
        self.skip = Some(why.into());
        self
    }
    pub(crate) fn devices(mut self, n: usize) -> Rec {
        self.devices = Some(n);
        self
    }
    pub(crate) fn busbw_gbs(mut self, g: f64) -> Rec {
        self.busbw_gbs = Some(g);
        self
    }

    /// Prints the row's JSON line.
    pub(crate) fn emit(&self) {
        let line = self.line();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// The row's JSON line (without the newline), as `Lines` formats it.
    pub(crate) fn line(&self) -> String {
        let mut out = Vec::with_capacity(256);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Lines);
        // Serializing strings and numbers into a `Vec` cannot fail.
        if self.serialize(&mut ser).is_err() {
            return String::from("{}");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The lines' format, which `benches/report.py` and the recorded results were written with:
/// `", "` between fields and `": "` after keys, times and rates with 6 decimals (`null` when
/// not finite: serde_json's own rule), and control characters other than `\n`, `\r`, `\t` as
/// `\u00XX`.
struct Lines;

impl Formatter for Lines {
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        write!(w, "{v:.6}")
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        match escape {
            CharEscape::Backspace => w.write_all(b"\\u0008"),
            CharEscape::FormFeed => w.write_all(b"\\u000c"),
            CharEscape::Quote => w.write_all(b"\\\""),
            CharEscape::ReverseSolidus => w.write_all(b"\\\\"),
            CharEscape::Solidus => w.write_all(b"/"),
            CharEscape::LineFeed => w.write_all(b"\\n"),
            CharEscape::CarriageReturn => w.write_all(b"\\r"),
            CharEscape::Tab => w.write_all(b"\\t"),
            CharEscape::AsciiControl(c) => write!(w, "\\u{:04x}", c),
        }
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
