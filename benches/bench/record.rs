//! One result row (a JSON line) and the median.

use super::*;

// ---------------------------------------------------------------------------------------------
// JSON lines.

/// One output line: a measurement, an error, or a skip (a row this machine cannot run, such
/// as a multi-GPU row on one GPU: `"skip": why`, not a failure).
pub(crate) struct Rec {
    pub(crate) work: String,
    pub(crate) size: String,
    pub(crate) imp: String,
    pub(crate) variant: Option<String>,
    pub(crate) ms: Option<f64>,
    pub(crate) min_ms: Option<f64>,
    pub(crate) max_ms: Option<f64>,
    pub(crate) reps: Option<usize>,
    pub(crate) bytes: Option<u64>,
    pub(crate) unit: Option<&'static str>,
    /// Floating-point operations of one repetition (matrix products: 2·M·N·K).
    pub(crate) flops: Option<u64>,
    pub(crate) note: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) skip: Option<String>,
    /// Devices the row ran on (multi-GPU rows).
    pub(crate) devices: Option<usize>,
    /// All-reduce bus bandwidth in GB/s (nccl-tests' busbw: bytes / time * 2(n-1)/n).
    pub(crate) busbw_gbs: Option<f64>,
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

    /// The row's JSON line (without the newline).
    pub(crate) fn line(&self) -> String {
        let mut s = String::from("{");
        let mut field = |k: &str, v: String| {
            if s.len() > 1 {
                s.push_str(", ");
            }
            s.push_str(&json_str(k));
            s.push_str(": ");
            s.push_str(&v);
        };
        field("work", json_str(&self.work));
        field("size", json_str(&self.size));
        field("impl", json_str(&self.imp));
        let num = |v: f64| {
            if v.is_finite() {
                format!("{v:.6}")
            } else {
                "null".into()
            }
        };
        if let Some(v) = &self.variant {
            field("variant", json_str(v));
        }
        if let Some(v) = self.ms {
            field("ms", num(v));
        }
        if let Some(v) = self.min_ms {
            field("min_ms", num(v));
        }
        if let Some(v) = self.max_ms {
            field("max_ms", num(v));
        }
        if let Some(v) = self.reps {
            field("reps", v.to_string());
        }
        if let Some(v) = self.bytes {
            field("bytes", v.to_string());
        }
        if let Some(v) = self.flops {
            field("flops", v.to_string());
        }
        if let Some(v) = self.unit {
            field("unit", json_str(v));
        }
        if let Some(v) = &self.note {
            field("note", json_str(v));
        }
        if let Some(v) = self.devices {
            field("devices", v.to_string());
        }
        if let Some(v) = self.busbw_gbs {
            field("busbw_gbs", num(v));
        }
        if let Some(v) = &self.error {
            field("error", json_str(v));
        }
        if let Some(v) = &self.skip {
            field("skip", json_str(v));
        }
        s.push('}');
        s
    }
}

pub(crate) fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
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
