//! CPU tests of `cudajit::nvtx` through the NVTX injection mechanism, with a fake tool in place
//! of Nsight Systems: `tests/data/fake_nvtx_injection.c`, built here with `cc`, logs every NVTX
//! call it receives. Each scenario runs in a child process (this binary, filtered to `child`),
//! since a process decides once whether a tool is attached. Linux only (the fake tool logs
//! kernel thread ids).

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use cudajit::nvtx::{self, Attributes, Color, Payload};

#[path = "support/mod.rs"]
mod support;
use support::child::Child;
use support::fixtures;

/// Set in the child process to the scenario it runs.
const CHILD: &str = "CUDAJIT_NVTX_TEST_CHILD";

/// The scratch directory of these tests: in the build's target directory, or the system's
/// temporary directory where that is gone (a GPU bundle).
fn scratch() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.is_dir() {
        target.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join("cudajit-nvtx-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fake tool, built once per run; `None` (with the reason printed) when `cc` is missing.
fn fake_tool() -> Option<&'static Path> {
    static TOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let src = fixtures::fixture("fake_nvtx_injection.c");
        // Built under a name of this process, then renamed over the shared name (atomic, so a
        // concurrent run's child always loads a whole library).
        let built = scratch().join(format!("libfake_nvtx.so.{}", std::process::id()));
        let out = scratch().join("libfake_nvtx.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let res = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
            .arg(&built)
            .arg(&src)
            .output();
        match res {
            Err(e) => Err(format!(
                "SKIPPED: cannot run the C compiler `{cc}` ({e}), so the fake NVTX tool cannot \
                 be built; this test checks nothing here"
            )),
            Ok(o) => {
                assert!(
                    o.status.success(),
                    "{cc} failed on {}:\n{}",
                    src.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                std::fs::rename(&built, &out).unwrap();
                Ok(out)
            }
        }
    });
    match TOOL.get().unwrap() {
        Ok(path) => Some(path),
        Err(why) => {
            println!("{why}");
            None
        }
    }
}

/// What a child process printed and what the fake tool logged.
struct ChildRun {
    output: String,
    log: Vec<Event>,
}

/// Runs scenario `scenario` in a child process with the tool at `tool` (or none) and `envs`.
fn run_child(scenario: &str, tool: Option<&Path>, envs: &[(&str, &str)]) -> ChildRun {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let log = scratch().join(format!("{scenario}-{}-{run}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut child = Child::test("child", CHILD, scenario)
        .env("FAKE_NVTX_LOG", &log)
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("CUDAJIT_NVTX")
        .env_remove("FAKE_NVTX_FAIL")
        .env_remove("FAKE_NVTX_ONLY_A");
    if let Some(t) = tool {
        child = child.env("NVTX_INJECTION64_PATH", t);
    }
    let out = child.envs(envs.iter().copied()).run();
    let output = out.text();
    assert!(out.passed(), "child {scenario} failed:\n{output}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    ChildRun {
        output,
        log: text.lines().map(Event::parse).collect(),
    }
}

/// One line of the fake tool's log: `tid=N kind key=value ... msg="..."`.
#[derive(Debug, Clone)]
struct Event {
    tid: u64,
    kind: String,
    fields: Vec<(String, String)>,
    line: String,
}

impl Event {
    fn parse(line: &str) -> Event {
        let (head, msg) = match line.split_once(" msg=\"") {
            Some((h, m)) => (h, Some(m.strip_suffix('"').unwrap_or(m))),
            None => (line, None),
        };
        let (head, name) = match head.split_once(" name=\"") {
            Some((h, n)) => (h, Some(n.strip_suffix('"').unwrap_or(n))),
            None => (head, None),
        };
        let mut words = head.split(' ');
        let tid = words.next().and_then(|w| w.strip_prefix("tid=")).unwrap();
        let kind = words.next().unwrap_or_default().to_string();
        let mut fields: Vec<(String, String)> = words
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        fields.extend(msg.map(|m| ("msg".to_string(), m.to_string())));
        fields.extend(name.map(|n| ("name".to_string(), n.to_string())));
        Event {
            tid: tid.parse().unwrap(),
            kind,
            fields,
            line: line.to_string(),
        }
    }

    fn get(&self, key: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The event of `kind` whose message is `msg`.
fn find<'a>(log: &'a [Event], kind: &str, msg: &str) -> &'a Event {
    log.iter()
        .find(|e| e.kind == kind && e.get("msg") == msg)
        .unwrap_or_else(|| panic!("no {kind} \"{msg}\" in the log: {log:#?}"))
}

fn position(log: &[Event], kind: &str, msg: &str) -> usize {
    let e = find(log, kind, msg);
    log.iter().position(|x| std::ptr::eq(x, e)).unwrap()
}

/// Each thread's pushes and pops pair up: returns, for every push, the index of its pop.
fn pops_of_pushes(log: &[Event]) -> Vec<(usize, usize)> {
    let mut stacks: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    let mut pairs = Vec::new();
    for (i, e) in log.iter().enumerate() {
        match e.kind.as_str() {
            "push" | "push_a" => stacks.entry(e.tid).or_default().push(i),
            "pop" => {
                let open = stacks.entry(e.tid).or_default().pop();
                pairs.push((open.expect("a pop with no push on its thread"), i));
            }
            _ => {}
        }
    }
    assert!(
        stacks.values().all(Vec::is_empty),
        "unpopped ranges: {stacks:?}"
    );
    pairs
}

/// The scenarios, run only in a child process (a no-op otherwise).
#[test]
fn child() {
    let Ok(scenario) = std::env::var(CHILD) else {
        return;
    };
    match scenario.as_str() {
        "annotate" => annotate(),
        "annotate_detached" => {
            assert!(!nvtx::is_attached());
            annotate();
        }
        "ops" => ops().unwrap(),
        other => panic!("unknown scenario {other}"),
    }
    println!("CHILD OK");
}

/// Every public call, on two threads.
fn annotate() {
    let attached = nvtx::is_attached();
    println!("attached: {attached}");
    nvtx::name_category(7, "solver");
    nvtx::name_current_thread("main thread");
    {
        let _outer = nvtx::range("outer");
        let _inner = nvtx::range_with(
            "inner",
            Attributes::new()
                .color(Color(0xff11_2233))
                .category(7)
                .payload(Payload::U64(42)),
        );
        nvtx::mark("a mark");
        nvtx::mark_with(
            "coloured mark",
            Attributes::new()
                .color(Color::GREEN)
                .payload(Payload::F64(1.5)),
        );
        let p = nvtx::range_with("i32", Attributes::new().payload(Payload::I32(-3)));
        p.end();
        let p = nvtx::range_with("f32", Attributes::new().payload(Payload::F32(0.25)));
        drop(p);
    }
    let _nul = nvtx::range("before\0after");
    drop(_nul);
    let long = "x".repeat(300);
    drop(nvtx::range(&long));
    let started = nvtx::start_with("across threads", Attributes::new().category(7));
    std::thread::spawn(move || {
        nvtx::name_current_thread("worker");
        let _w = nvtx::range("worker range");
        nvtx::mark("worker mark");
        started.end();
    })
    .join()
    .unwrap();
}

/// cudajit's own ranges (`CUDAJIT_NVTX=1`), on the simulator.
fn ops() -> cudajit::Result<()> {
    use cudajit::ops::{Elem, Elementwise, ReduceOps, Scalar};
    use cudajit::prelude::*;

    cudajit::use_simulator()?;
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let x = s.to_device(&vec![1.0f32; 1000])?;
    let y = s.to_device(&vec![2.0f32; 1000])?;
    let mut out = ctx.zeros::<f32, _>(1000)?;
    let axpy =
        Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), _>::new("axpy", |(a, x, y)| a * x + y)?;
    {
        let _step = nvtx::range("user step");
        axpy.apply(&s, (2.5, &x, &y), &mut out)?;
    }
    let total = out.sum(&s)?;
    axpy.compile_ptx(&cudajit::codegen::PtxOptions::for_cc(9, 0))?; // PTX, also on the simulator
    let host = out.to_vec_async(&s)?;
    assert_eq!(total, 4500.0);
    assert!(host.iter().all(|&v| v == 4.5));
    Ok(())
}

#[test]
fn ranges_marks_colours_categories_and_threads_reach_the_tool() {
    let Some(tool) = fake_tool() else { return };
    let run = run_child("annotate", Some(tool), &[]);
    let log = &run.log;
    assert!(run.output.contains("attached: true"), "{}", run.output);
    assert!(
        log.iter().all(|e| e.get("error").is_empty()),
        "the tool found a problem: {log:#?}"
    );

    // The tool's entry point saw NVTX's tables and version.
    let init = &log[0];
    assert_eq!(init.kind, "init", "{log:#?}");
    assert_eq!(init.get("version"), "3");
    assert_eq!(init.get("sizes"), "1:16,2:9,3:15,4:7,5:16,6:7");

    let main_tid = find(log, "push", "outer").tid;
    let cat = log.iter().find(|e| e.kind == "name_category").unwrap();
    assert_eq!((cat.get("id"), cat.get("name")), ("7", "solver"));
    let names: Vec<_> = log.iter().filter(|e| e.kind == "name_thread").collect();
    assert_eq!(names.len(), 2, "{log:#?}");
    assert_eq!(names[0].get("name"), "main thread");
    assert_eq!(names[0].get("os_tid"), main_tid.to_string());
    assert_eq!(names[1].get("os_tid"), names[1].tid.to_string());

    // Every attribute structure is NVTX's version 3, 48 bytes, ASCII message.
    for e in log
        .iter()
        .filter(|e| ["push", "mark", "start"].contains(&e.kind.as_str()))
    {
        assert_eq!(
            (e.get("version"), e.get("size"), e.get("message_type")),
            ("3", "48", "1"),
            "{e:?}"
        );
        assert_eq!(e.get("reserved0"), "0", "{e:?}");
    }
    let outer = find(log, "push", "outer");
    assert_eq!(
        (
            outer.get("depth"),
            outer.get("color_type"),
            outer.get("category")
        ),
        ("0", "0", "0")
    );
    assert_eq!(outer.get("payload"), "none");
    let inner = find(log, "push", "inner");
    assert_eq!(inner.get("depth"), "1");
    assert_eq!(
        (inner.get("color_type"), inner.get("color")),
        ("1", "0xff112233")
    );
    assert_eq!(
        (inner.get("category"), inner.get("payload")),
        ("7", "u64:42")
    );
    assert_eq!(find(log, "push", "i32").get("payload"), "i32:-3");
    assert_eq!(find(log, "push", "f32").get("payload"), "f32:0.25");
    let mark = find(log, "mark", "a mark");
    assert_eq!((mark.tid, mark.get("color_type")), (main_tid, "0"));
    let coloured = find(log, "mark", "coloured mark");
    assert_eq!(
        (coloured.get("color"), coloured.get("payload")),
        ("0xff2ca02c", "f64:1.5")
    );

    // Nesting: inner inside outer, each popped on its thread, in order.
    let pairs = pops_of_pushes(log);
    let pop_of = |msg: &str| {
        let push = position(log, "push", msg);
        pairs.iter().find(|p| p.0 == push).unwrap().1
    };
    let (o, i) = (
        position(log, "push", "outer"),
        position(log, "push", "inner"),
    );
    assert!(o < i && i < position(log, "mark", "a mark"));
    assert!(position(log, "mark", "coloured mark") < pop_of("inner"));
    assert!(pop_of("inner") < pop_of("outer"));

    // Text: cut at an interior NUL; long text whole.
    find(log, "push", "before");
    find(log, "push", &"x".repeat(300));

    // The worker's range is on the worker's thread; the started range ends there.
    let worker = find(log, "push", "worker range");
    assert_ne!(worker.tid, main_tid);
    assert_eq!(worker.get("depth"), "0");
    assert_eq!(log[pop_of("worker range")].tid, worker.tid);
    assert_eq!(find(log, "mark", "worker mark").tid, worker.tid);
    let started = find(log, "start", "across threads");
    assert_eq!((started.tid, started.get("category")), (main_tid, "7"));
    let end = log.iter().find(|e| e.kind == "end").unwrap();
    assert_eq!(end.get("id"), started.get("id"));
    assert_eq!(end.tid, worker.tid);
}

#[test]
fn a_tool_with_only_plain_message_callbacks_gets_the_messages() {
    let Some(tool) = fake_tool() else { return };
    let run = run_child("annotate", Some(tool), &[("FAKE_NVTX_ONLY_A", "1")]);
    let log = &run.log;
    find(log, "push_a", "outer");
    find(log, "push_a", "inner");
    find(log, "mark_a", "a mark");
    let started = find(log, "start_a", "across threads");
    let end = log.iter().find(|e| e.kind == "end").unwrap();
    assert_eq!(end.get("id"), started.get("id"));
    pops_of_pushes(log);
}

#[test]
fn cudajit_ops_emit_ranges_with_cudajit_nvtx() {
    let Some(tool) = fake_tool() else { return };
    let run = run_child("ops", Some(tool), &[("CUDAJIT_NVTX", "1")]);
    let log = &run.log;
    assert!(log.iter().all(|e| e.get("error").is_empty()), "{log:#?}");
    find(log, "push", "cudajit: htod copy 4000 B");
    find(log, "push", "cudajit: dtoh copy 4000 B");
    find(log, "push", "cudajit: sum_f32");
    assert!(
        log.iter()
            .any(|e| e.kind == "push" && e.get("msg").starts_with("cudajit: compile axpy")),
        "{log:#?}"
    );
    let ew = find(log, "push", "cudajit: Elementwise axpy");
    assert_eq!(ew.get("depth"), "1", "inside the user's range: {log:#?}");
    assert!(
        position(log, "push", "user step") < position(log, "push", "cudajit: Elementwise axpy")
    );
    assert!(
        log.iter()
            .any(|e| e.kind == "push" && e.get("msg").starts_with("cudajit: load module ")),
        "{log:#?}"
    );
    pops_of_pushes(log);
}

#[test]
fn without_cudajit_nvtx_cudajit_ops_emit_no_ranges() {
    let Some(tool) = fake_tool() else { return };
    let run = run_child("ops", Some(tool), &[]);
    let pushes: Vec<_> = run.log.iter().filter(|e| e.kind == "push").collect();
    assert_eq!(pushes.len(), 1, "{:#?}", run.log);
    assert_eq!(pushes[0].get("msg"), "user step");
}

#[test]
fn no_tool_means_no_op() {
    let run = run_child("annotate_detached", None, &[("CUDAJIT_NVTX", "1")]);
    assert!(run.log.is_empty(), "{:#?}", run.log);
    assert!(!run.output.contains("cudajit: NVTX"), "{}", run.output);
    let run = run_child("ops", None, &[("CUDAJIT_NVTX", "1")]);
    assert!(run.log.is_empty(), "{:#?}", run.log);
}

#[test]
fn a_missing_tool_library_means_no_op_and_one_note_with_cudajit_nvtx() {
    let missing = "/nonexistent/libnvtx-tool.so";
    let run = run_child("annotate_detached", Some(Path::new(missing)), &[]);
    assert!(!run.output.contains("cudajit: NVTX"), "{}", run.output);
    let run = run_child(
        "annotate_detached",
        Some(Path::new(missing)),
        &[("CUDAJIT_NVTX", "1")],
    );
    let notes: Vec<_> = run
        .output
        .lines()
        .filter(|l| l.starts_with("cudajit: NVTX ranges are off"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", run.output);
    assert!(notes[0].contains(missing), "{}", notes[0]);
}

#[test]
fn a_library_without_the_entry_point_means_no_op() {
    // libm: a shared library with no InitializeInjectionNvtx2.
    let libm = Path::new("libm.so.6");
    let run = run_child("annotate_detached", Some(libm), &[("CUDAJIT_NVTX", "1")]);
    assert!(
        run.output.contains("no InitializeInjectionNvtx2"),
        "{}",
        run.output
    );
}

#[test]
fn a_tool_that_declines_means_no_op() {
    let Some(tool) = fake_tool() else { return };
    let run = run_child("annotate_detached", Some(tool), &[("FAKE_NVTX_FAIL", "1")]);
    let kinds: Vec<_> = run.log.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["init", "init"], "{:#?}", run.log);
    assert!(run.log[1].line.ends_with("init declined"), "{:#?}", run.log);
}
