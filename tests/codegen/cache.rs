//! The compile cache, tested through the public API in child processes (this test binary run
//! again with one test selected): each child gets its own environment, with `CUDAJIT_CACHE_DIR`
//! (or `XDG_CACHE_HOME` / `HOME`) pointing at a fresh temporary directory, so no test touches
//! the user's cache or another test's. Children log every cache event (`CUDAJIT_LOG_CACHE=1`)
//! and print a hash of each PTX they got; the parent counts the events.
//!
//! The cache's trust checks (issue 28) are tested here too: planted files, a directory others
//! can write, and the `CUDAJIT_CACHE_TRUST=1` opt-in.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cudajit::codegen::{Kernel, PtxOptions};

use crate::support::child::{Child, Output};

/// Set in a child: the script it runs.
const CHILD: &str = "CUDAJIT_CACHE_TEST_CHILD";
/// The child's test name.
const CHILD_TEST: &str = "cache::child_process";
/// The cache directory's key file (not a cache entry).
const KEY_FILE: &str = ".cudajit-key";
/// The format of the cache files' header.
const FORMAT: &str = "2";

fn fnv64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Runs in a child only. The script is a list of `<constant>@<major>.<minor>[f]`: for each,
/// build a fresh kernel writing that constant and compile it for that target (`f`: fastmath),
/// printing `PTX-HASH <hash>`.
#[test]
fn child_process() {
    let Some(script) = std::env::var_os(CHILD) else {
        return;
    };
    for op in script.to_str().unwrap().split_whitespace() {
        let (c, target) = op.split_once('@').unwrap();
        let c: u32 = c.parse().unwrap();
        let fast = target.ends_with('f');
        let (major, minor) = target.trim_end_matches('f').split_once('.').unwrap();
        let k = Kernel::<(&mut [u32],)>::build("cache_probe", |k, (out,)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| out.set(i, c));
        })
        .unwrap();
        let opts =
            PtxOptions::for_cc(major.parse().unwrap(), minor.parse().unwrap()).fastmath(fast);
        let ptx = k.compile_ptx(&opts).unwrap();
        assert!(ptx.contains(".visible .entry cache_probe("), "{ptx}");
        println!("PTX-HASH {:016x}", fnv64(ptx.as_bytes()));
    }
    println!("CHILD OK");
}

/// What a child did.
struct Run {
    stdout: String,
    stderr: String,
}

impl Run {
    fn from_output(out: Output) -> Run {
        assert!(out.passed(), "child failed:\n{}", out.text());
        Run {
            stdout: out.stdout,
            stderr: out.stderr,
        }
    }

    /// Log lines of one kind of cache event.
    fn count(&self, event: &str) -> usize {
        let prefix = format!("cudajit cache: {event}");
        self.stderr
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .count()
    }

    /// (compiled, memory hits, disk hits, stored, rejected)
    fn events(&self) -> (usize, usize, usize, usize, usize) {
        (
            self.count("compiled"),
            self.count("memory hit"),
            self.count("disk hit"),
            self.count("stored"),
            self.count("rejected"),
        )
    }

    /// The hash of each PTX the child got, in order.
    fn ptx(&self) -> Vec<String> {
        self.stdout
            .lines()
            .filter_map(|l| Some(l[l.find("PTX-HASH ")? + 9..].to_string()))
            .collect()
    }

    fn log(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// The environment of a child: no cache variables inherited, logging on, then `env`.
fn child_command(script: &str, env: &[(&str, OsString)]) -> Child {
    let mut child = Child::test(CHILD_TEST, CHILD, script).env("CUDAJIT_LOG_CACHE", "1");
    for var in ["CUDAJIT_CACHE", "CUDAJIT_CACHE_DIR", "XDG_CACHE_HOME"] {
        child = child.env_remove(var);
    }
    child.envs(env.iter().cloned())
}

fn run_child(script: &str, env: &[(&str, OsString)]) -> Run {
    Run::from_output(child_command(script, env).run())
}

/// A child with its disk cache in `dir`.
fn run_in(dir: &Path, script: &str) -> Run {
    run_child(script, &[("CUDAJIT_CACHE_DIR", dir.into())])
}

/// A fresh, empty directory for one test, private to this user (mode 0700 whatever the umask:
/// the cache trusts no directory that others can write).
fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cudajit-cache-test-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    set_mode(&d, 0o700);
    d
}

fn set_mode(p: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let _ = (p, mode);
}

/// The names in `dir` other than the key file.
fn names_but_the_key(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != KEY_FILE)
        .collect()
}

/// The cache files (`*.ptx`) in `dir`, sorted.
fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    v.sort();
    v
}

/// Checks that `path` is a well-formed cache file whose PTX hashes to `ptx_hash`.
fn check_file(path: &Path, ptx_hash: &str) {
    let bytes = std::fs::read(path).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    let header = std::str::from_utf8(&bytes[..nl]).unwrap();
    let body = &bytes[nl + 1..];
    let f: Vec<&str> = header.split(' ').collect();
    let stem = path.file_stem().unwrap().to_str().unwrap();
    assert_eq!(f.len(), 6, "{header}");
    assert_eq!(&f[..2], ["cudajit-ptx-cache", FORMAT], "{header}");
    assert_eq!(f[2], env!("CARGO_PKG_VERSION"));
    assert_eq!(f[3], stem, "the header names the file's key");
    assert!(stem.len() == 64 && stem.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(f[4], body.len().to_string());
    assert!(
        f[5].len() == 64 && f[5].bytes().all(|b| b.is_ascii_hexdigit()),
        "a MAC: {header}"
    );
    assert_eq!(format!("{:016x}", fnv64(body)), ptx_hash);
}

#[test]
fn same_kernel_built_twice_compiles_once() {
    let dir = temp_dir("twice");
    let run = run_in(&dir, "1@7.5 1@7.5");
    assert_eq!(run.events(), (1, 1, 0, 1, 0), "{}", run.log());
    let ptx = run.ptx();
    assert_eq!(ptx.len(), 2);
    assert_eq!(ptx[0], ptx[1]);
    let files = cache_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    check_file(&files[0], &ptx[0]);
    assert!(
        !dir.join("CACHEDIR.TAG").exists(),
        "the tag is only written in a directory cudajit creates"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn second_process_reads_the_disk_cache() {
    let root = temp_dir("disk");
    let dir = root.join("made-by-cudajit");
    let first = run_in(&dir, "5@7.5");
    assert_eq!(first.events(), (1, 0, 0, 1, 0), "{}", first.log());
    assert!(dir.join("CACHEDIR.TAG").exists());
    let second = run_in(&dir, "5@7.5 5@7.5");
    assert_eq!(
        second.events(),
        (0, 1, 1, 0, 0),
        "the second process compiles nothing:\n{}",
        second.log()
    );
    assert_eq!(first.ptx()[0], second.ptx()[0]);
    assert_eq!(second.ptx()[0], second.ptx()[1]);
    let files = cache_files(&dir);
    assert_eq!(files.len(), 1);
    check_file(&files[0], &first.ptx()[0]);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn corrupt_files_are_ignored_and_replaced() {
    let dir = temp_dir("corrupt");
    let first = run_in(&dir, "11@9.0");
    let ptx_hash = first.ptx()[0].clone();
    let file = cache_files(&dir).pop().unwrap();
    let good = std::fs::read(&file).unwrap();
    let nl = good.iter().position(|&b| b == b'\n').unwrap();
    let header = std::str::from_utf8(&good[..nl]).unwrap().to_string();
    let body = &good[nl + 1..];
    let fields: Vec<&str> = header.split(' ').collect();
    let with = |h: String, b: &[u8]| [h.as_bytes(), b"\n", b].concat();
    let bad_body: &[u8] = b"\xff\xfe not UTF-8";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("header only", good[..=nl].to_vec()),
        ("garbage", b"\x7fELF\x00\x01 garbage".repeat(50)),
        (
            "another version",
            with(header.replacen(fields[2], "0.0.1-old", 1), body),
        ),
        (
            "another format",
            with(header.replacen(&format!(" {FORMAT} "), " 99 ", 1), body),
        ),
        (
            "format 1 (an FNV checksum, no MAC)",
            with(
                format!(
                    "{} 1 {} {} {} {:016x}",
                    fields[0],
                    fields[2],
                    fields[3],
                    body.len(),
                    fnv64(body)
                ),
                body,
            ),
        ),
        (
            "another key",
            with(header.replacen(fields[3], &"0".repeat(64), 1), body),
        ),
        ("flipped byte", {
            let mut v = good.clone();
            let i = nl + 1 + body.len() / 2;
            v[i] ^= 0x20;
            v
        }),
        (
            "not UTF-8 (length right, an FNV checksum)",
            with(
                format!(
                    "{} {} {} {} {} {:016x}",
                    fields[0],
                    fields[1],
                    fields[2],
                    fields[3],
                    bad_body.len(),
                    fnv64(bad_body)
                ),
                bad_body,
            ),
        ),
    ];
    for (what, bytes) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let run = run_in(&dir, "11@9.0");
        assert_eq!(
            run.events(),
            (1, 0, 0, 1, 1),
            "{what}: rejected, compiled, stored:\n{}",
            run.log()
        );
        assert_eq!(run.ptx()[0], ptx_hash, "{what}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            good,
            "{what}: replaced by a valid file"
        );
    }
    let again = run_in(&dir, "11@9.0");
    assert_eq!(again.events(), (0, 0, 1, 0, 0), "{}", again.log());
    let names = names_but_the_key(&dir);
    assert_eq!(names.len(), 1, "no temporary files left: {names:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cache_off_writes_nothing() {
    let root = temp_dir("off");
    for value in ["0", "off", "false", "OFF"] {
        let dir = root.join(value);
        let run = run_child(
            "2@7.5 2@7.5",
            &[
                ("CUDAJIT_CACHE", value.into()),
                ("CUDAJIT_CACHE_DIR", dir.clone().into()),
            ],
        );
        assert_eq!(
            run.events(),
            (1, 1, 0, 0, 0),
            "CUDAJIT_CACHE={value}: the memory cache stays:\n{}",
            run.log()
        );
        assert!(!dir.exists(), "CUDAJIT_CACHE={value} created {dir:?}");
    }
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn different_options_and_kernels_get_different_keys() {
    let dir = temp_dir("keys");
    let run = run_in(&dir, "3@7.5 3@9.0 3@7.5f 3@9.0f 4@7.5 3@7.5 3@9.0f");
    assert_eq!(run.events(), (5, 2, 0, 5, 0), "{}", run.log());
    let ptx = run.ptx();
    assert_ne!(ptx[0], ptx[1], "sm_75 and sm_90 PTX differ");
    assert_ne!(ptx[0], ptx[4], "different constants, different PTX");
    assert_eq!(ptx[0], ptx[5]);
    assert_eq!(ptx[3], ptx[6]);
    assert_eq!(cache_files(&dir).len(), 5, "one file per key");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unusable_cache_dir_does_not_fail_the_compile() {
    let root = temp_dir("unusable");
    // A directory below a regular file can never be created (whoever runs the test).
    let file = root.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let run = run_in(&file.join("cache"), "6@7.5 7@7.5 6@7.5");
    assert_eq!(run.events(), (2, 1, 0, 0, 0), "{}", run.log());
    assert_eq!(
        run.count("disk error writing"),
        1,
        "logged once, then the disk cache is off:\n{}",
        run.log()
    );
    let _ = std::fs::remove_dir_all(root);
}

/// A read-only directory still serves hits; writing to it fails quietly.
#[cfg(unix)]
#[test]
fn read_only_cache_dir_serves_hits_and_compiles_the_rest() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("read-only");
    let first = run_in(&dir, "8@7.5");
    assert_eq!(first.events().0, 1);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = dir.join("probe");
    let writable = std::fs::write(&probe, b"").is_ok();
    if !writable {
        let run = run_in(&dir, "8@7.5 9@7.5 10@7.5");
        assert_eq!(run.events(), (2, 0, 1, 0, 0), "{}", run.log());
        assert_eq!(run.count("disk error writing"), 1, "{}", run.log());
        assert_eq!(run.ptx()[0], first.ptx()[0]);
        assert_eq!(cache_files(&dir).len(), 1);
    } else {
        // Running as root: permissions do not apply; unusable_cache_dir_does_not_fail_the_compile
        // covers the failing write.
        let _ = std::fs::remove_file(&probe);
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn cache_dir_defaults_to_xdg_then_home() {
    let root = temp_dir("defaults");
    let (xdg, home) = (root.join("xdg"), root.join("home"));
    let run = run_child(
        "12@7.5",
        &[
            ("XDG_CACHE_HOME", xdg.clone().into()),
            ("HOME", home.clone().into()),
        ],
    );
    assert_eq!(run.events().3, 1, "{}", run.log());
    assert_eq!(cache_files(&xdg.join("cudajit")).len(), 1);
    assert!(!home.exists());
    let run = run_child(
        "12@7.5",
        &[("XDG_CACHE_HOME", "".into()), ("HOME", home.clone().into())],
    );
    assert_eq!(run.events().3, 1, "{}", run.log());
    assert_eq!(cache_files(&home.join(".cache/cudajit")).len(), 1);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn concurrent_processes_share_one_valid_file() {
    let dir = temp_dir("concurrent");
    let children: Vec<_> = (0..4)
        .map(|_| {
            child_command(
                "13@9.0 14@9.0",
                &[("CUDAJIT_CACHE_DIR", dir.clone().into())],
            )
            .spawn()
        })
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|c| Run::from_output(c.wait()))
        .collect();
    for r in &runs {
        let (compiled, _, disk, _, rejected) = r.events();
        assert_eq!(compiled + disk, 2, "{}", r.log());
        assert_eq!(rejected, 0, "never half a file:\n{}", r.log());
        assert_eq!(r.ptx(), runs[0].ptx());
    }
    let files = cache_files(&dir);
    assert_eq!(files.len(), 2);
    let names = names_but_the_key(&dir);
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
    let mut found: Vec<String> = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).unwrap();
            let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
            let hash = format!("{:016x}", fnv64(&bytes[nl + 1..]));
            check_file(f, &hash);
            hash
        })
        .collect();
    found.sort();
    let mut expected = runs[0].ptx();
    expected.sort();
    assert_eq!(found, expected);
    let _ = std::fs::remove_dir_all(dir);
}

/// A file planted in the cache directory with everything a cache file had before format 2 (a
/// right header, length and FNV checksum) and other PTX: refused, compiled again, replaced; the
/// planted PTX never reaches the program.
#[test]
fn planted_file_without_a_valid_mac_is_refused() {
    let dir = temp_dir("planted");
    let first = run_in(&dir, "15@9.0");
    let file = cache_files(&dir).pop().unwrap();
    let good = std::fs::read(&file).unwrap();
    let nl = good.iter().position(|&b| b == b'\n').unwrap();
    let header = std::str::from_utf8(&good[..nl]).unwrap();
    let f: Vec<&str> = header.split(' ').collect();
    let planted = String::from_utf8(good[nl + 1..].to_vec())
        .unwrap()
        .replace("cache_probe", "cache_probe_planted_by_someone_else");
    for format in ["1", FORMAT] {
        let forged = format!(
            "{} {format} {} {} {} {:016x}\n{planted}",
            f[0],
            f[2],
            f[3],
            planted.len(),
            fnv64(planted.as_bytes())
        );
        std::fs::write(&file, forged).unwrap();
        let run = run_in(&dir, "15@9.0");
        assert_eq!(
            run.events(),
            (1, 0, 0, 1, 1),
            "format {format}: rejected, compiled, stored:\n{}",
            run.log()
        );
        assert_eq!(run.ptx(), first.ptx(), "the planted PTX is never used");
        assert_eq!(std::fs::read(&file).unwrap(), good, "replaced");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The warning lines of a child.
fn warnings(run: &Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("cudajit: warning:"))
        .collect()
}

/// A cache directory others can write is neither read nor written (one warning that says why
/// and what to do); with `CUDAJIT_CACHE_TRUST=1` it is used.
#[cfg(unix)]
#[test]
fn world_writable_cache_dir_is_not_used() {
    let dir = temp_dir("world-writable");
    let first = run_in(&dir, "16@7.5");
    assert_eq!(first.events(), (1, 0, 0, 1, 0), "{}", first.log());
    assert!(warnings(&first).is_empty(), "{}", first.log());
    set_mode(&dir, 0o777);
    let before = names_but_the_key(&dir);
    let run = run_in(&dir, "16@7.5 17@7.5");
    assert_eq!(
        run.events(),
        (2, 0, 0, 0, 0),
        "nothing read, nothing stored:\n{}",
        run.log()
    );
    assert_eq!(run.ptx()[0], first.ptx()[0]);
    let w = warnings(&run);
    assert_eq!(w.len(), 1, "one warning:\n{}", run.log());
    for part in [
        &*dir.to_string_lossy(),
        "0o777",
        "chmod go-w",
        "CUDAJIT_CACHE_DIR",
        "CUDAJIT_CACHE_TRUST=1",
    ] {
        assert!(w[0].contains(part), "{part:?} missing: {}", w[0]);
    }
    assert_eq!(names_but_the_key(&dir), before, "nothing written");
    // Opted in, the same directory serves its hit.
    let run = run_child(
        "16@7.5",
        &[
            ("CUDAJIT_CACHE_DIR", dir.clone().into()),
            ("CUDAJIT_CACHE_TRUST", "1".into()),
        ],
    );
    assert_eq!(run.events(), (0, 0, 1, 0, 0), "{}", run.log());
    assert!(warnings(&run).is_empty(), "{}", run.log());
    set_mode(&dir, 0o700);
    let _ = std::fs::remove_dir_all(dir);
}
