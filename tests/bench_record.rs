//! The benchmark's JSON lines (`benches/bench/record.rs`): every field in its place, strings
//! escaped and numbers printed as `benches/report.py` and the recorded results expect. The
//! expected lines are those of the hand-written formatter the serde_json one replaced.

/// What `record.rs` takes from the bench's root.
const LIB_IMPL: &str = "cudajit";
use std::io::Write;

#[allow(dead_code)]
#[path = "../benches/bench/record.rs"]
mod record;

use record::Rec;

#[test]
fn minimal_row() {
    assert_eq!(
        Rec::new("add", "2^20 f32").line(),
        r#"{"work": "add", "size": "2^20 f32", "impl": "cudajit"}"#
    );
}

#[test]
fn every_field_in_order() {
    let r = Rec::new("allreduce", "2^24 f32")
        .imp("cudajit-diag")
        .variant("ring")
        .times(&[1.5, 0.25, 2.0, 1.0])
        .bytes(67_108_864)
        .flops(u64::MAX)
        .unit("GB/s")
        .note("two GPUs")
        .error("boom")
        .skip("one GPU")
        .devices(2)
        .busbw_gbs(123.456_789_5);
    assert_eq!(
        r.line(),
        r#"{"work": "allreduce", "size": "2^24 f32", "impl": "cudajit-diag", "variant": "ring", "ms": 1.250000, "min_ms": 0.250000, "max_ms": 2.000000, "reps": 4, "bytes": 67108864, "flops": 18446744073709551615, "unit": "GB/s", "note": "two GPUs", "devices": 2, "busbw_gbs": 123.456789, "error": "boom", "skip": "one GPU"}"#
    );
}

#[test]
fn numbers() {
    let line = |t: &[f64]| Rec::new("w", "s").times(t).line();
    assert_eq!(
        line(&[0.1234565, 1e20, -3.0]),
        r#"{"work": "w", "size": "s", "impl": "cudajit", "ms": 0.123456, "min_ms": -3.000000, "max_ms": 100000000000000000000.000000, "reps": 3}"#
    );
    // Not finite: null (an empty run's median is NaN; min and max are absent).
    assert_eq!(
        line(&[]),
        r#"{"work": "w", "size": "s", "impl": "cudajit", "ms": null, "reps": 0}"#
    );
    assert_eq!(
        line(&[f64::INFINITY, f64::NEG_INFINITY]),
        r#"{"work": "w", "size": "s", "impl": "cudajit", "ms": null, "min_ms": null, "max_ms": null, "reps": 2}"#
    );
    assert_eq!(
        Rec::new("w", "s").busbw_gbs(f64::NAN).line(),
        r#"{"work": "w", "size": "s", "impl": "cudajit", "busbw_gbs": null}"#
    );
    assert_eq!(
        Rec::new("w", "s").busbw_gbs(-0.0).line(),
        r#"{"work": "w", "size": "s", "impl": "cudajit", "busbw_gbs": -0.000000}"#
    );
}

#[test]
fn string_escapes() {
    let s = "q\" b\\ n\n r\r t\t bs\u{8} ff\u{c} c1\u{1} us\u{1f} del\u{7f} é ∑ 🚀 /";
    assert_eq!(
        Rec::new(s, "").note(s).line(),
        concat!(
            r#"{"work": "q\" b\\ n\n r\r t\t bs\u0008 ff\u000c c1\u0001 us\u001f del"#,
            "\u{7f}",
            r#" é ∑ 🚀 /", "size": "", "impl": "cudajit", "note": "q\" b\\ n\n r\r t\t bs\u0008 ff\u000c c1\u0001 us\u001f del"#,
            "\u{7f}",
            r#" é ∑ 🚀 /"}"#
        )
    );
}
