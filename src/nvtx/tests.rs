//! Unit tests of the safe layer's text and attribute handling (the calls themselves are tested
//! against a fake tool in `tests/nvtx.rs`).

use super::*;

fn c_text(s: &str) -> Vec<u8> {
    with_c_text(s, |c| c.to_bytes().to_vec())
}

#[test]
fn text_is_cut_at_an_interior_nul_and_kept_whole_otherwise() {
    assert_eq!(c_text("range"), b"range");
    assert_eq!(c_text(""), b"");
    assert_eq!(c_text("before\0after"), b"before");
    assert_eq!(c_text("\0"), b"");
    let long = "é".repeat(200); // 400 bytes: past the stack buffer
    assert_eq!(c_text(&long), long.as_bytes());
    let edge = "y".repeat(127);
    assert_eq!(c_text(&edge), edge.as_bytes());
    assert_eq!(c_text(&"z".repeat(128)), "z".repeat(128).as_bytes());
}

#[test]
fn colours_are_opaque_argb() {
    assert_eq!(Color::rgb(0x12, 0x34, 0x56).argb(), 0xff12_3456);
    assert_eq!(Color::GREEN.argb(), 0xff2c_a02c);
}

#[test]
fn attributes_build_up() {
    let a = Attributes::new()
        .color(Color::RED)
        .category(3)
        .payload(Payload::I64(-1));
    assert_eq!(a.color, Some(Color::RED));
    assert_eq!(a.category, 3);
    assert_eq!(a.payload, Some(Payload::I64(-1)));
    assert_eq!(Attributes::new(), Attributes::default());
}

#[test]
fn calls_never_panic_whatever_the_tool() {
    // Attached or not (the test may run under a profiler), every call returns.
    let attached = is_attached();
    assert_eq!(is_attached(), attached);
    name_category(1, "tests");
    name_current_thread("unit test");
    let r = range_with("unit", Attributes::new().color(Color::BLUE));
    mark("unit mark\0ignored");
    drop(r);
    start("started").end();
    assert!(os_thread_id().is_some() || !cfg!(target_os = "linux"));
}
