//! The disk cache's tests: entries, their MACs, and what is refused.

use super::super::test_support::{self, scratch_dir, set_mode};
use super::*;

fn temp_dir(name: &str) -> PathBuf {
    scratch_dir("disk-unit", name)
}

/// [`temp_dir`], made and private (mode 0700, whatever the umask).
fn private_dir(name: &str) -> PathBuf {
    test_support::private_dir("disk-unit", name)
}

/// Removes a test directory even where a test made it read-only.
fn remove(dir: PathBuf) {
    set_mode(&dir, 0o700);
    let _ = fs::remove_dir_all(dir);
}

const PTX: &str = "//\n.version 7.8\n.target sm_90\n";
/// A key for the encoding tests.
const MAC: MacKey = MacKey([5; 32]);

/// The header line for `ptx` stored under `key` (with its newline), with [`MAC`].
fn header(key: &Key, ptx: &str) -> String {
    header_for(key, "ptx", &MAC, ptx.as_bytes())
}

/// A PTX cache file's bytes, with [`MAC`].
fn encode(key: &Key, ptx: &str) -> Vec<u8> {
    encode_bytes(key, "ptx", &MAC, ptx.as_bytes())
}

/// Checks a PTX cache file's bytes with [`MAC`] and returns its PTX, or why it is rejected.
fn decode(key: &Key, bytes: Vec<u8>) -> Result<String, String> {
    ptx_text(decode_bytes(key, "ptx", &MAC, bytes)?)
}

/// A header of the old format (1: an FNV-1a checksum, no MAC) that is right for `body`.
fn old_header(key: &Key, format: u32, body: &[u8]) -> String {
    format!(
        "{MAGIC} {format} {VERSION} {} {} {:016x}\n",
        key.hex(),
        body.len(),
        super::super::hash::fnv1a64(body)
    )
}

/// The process's policy with `CUDAJIT_CACHE_TRUST=1`, through the same environment lookup
/// as the directory's.
fn opted_in_policy() -> Policy {
    let get = |k: &str| (k == "CUDAJIT_CACHE_TRUST").then(|| std::ffi::OsString::from("1"));
    Policy::for_process(trust::opted_in(get))
}

#[test]
fn round_trip_and_clear() {
    let dir = temp_dir("rt");
    let cache = DiskCache::new(dir.join("nested"));
    let key = Key([7; 32]);
    assert!(matches!(cache.load(&key), Lookup::Missing));
    let Stored::Written(path) = cache.store(&key, PTX) else {
        panic!("store failed")
    };
    assert_eq!(path, cache.path_for(&key));
    assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
    assert!(dir.join("nested/CACHEDIR.TAG").exists());
    // A binary body beside it (a cubin), under its own suffix.
    let cubin = [0x7f, b'E', b'L', b'F', 0, 1, 0xff];
    assert!(matches!(
        cache.load_bytes(&key, "d1.cubin"),
        Lookup::Missing
    ));
    assert!(matches!(
        cache.store_bytes(&key, "d1.cubin", &cubin),
        Stored::Written(_)
    ));
    assert!(matches!(cache.load_bytes(&key, "d1.cubin"), Lookup::Hit(b) if b == cubin));
    assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
    assert_eq!(cache.clear().unwrap(), 2);
    assert!(matches!(cache.load(&key), Lookup::Missing));
    assert_eq!(cache.clear().unwrap(), 0);
    assert_eq!(DiskCache::new(dir.join("absent")).clear().unwrap(), 0);
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn every_corruption_is_rejected() {
    let key = Key([9; 32]);
    let good = encode(&key, PTX);
    assert_eq!(decode(&key, good.clone()).unwrap(), PTX);
    let hdr = header(&key, PTX);
    let with_header = |h: String, body: &[u8]| {
        let mut v = h.into_bytes();
        v.extend_from_slice(body);
        v
    };
    let bad_utf8: &[u8] = b"\xff\xfe ptx";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated", good[..good.len() - 3].to_vec()),
        ("extended", [good.clone(), b"x".to_vec()].concat()),
        ("garbage", b"\x00\x01garbage\nmore".to_vec()),
        ("no newline", vec![b'a'; 2000]),
        (
            "other magic",
            with_header(hdr.replace(MAGIC, "other-magic"), PTX.as_bytes()),
        ),
        (
            "other format",
            with_header(
                hdr.replacen(&format!(" {FORMAT} "), " 3 ", 1),
                PTX.as_bytes(),
            ),
        ),
        (
            "format 1 with a right FNV checksum",
            with_header(old_header(&key, 1, PTX.as_bytes()), PTX.as_bytes()),
        ),
        (
            "format 2 with a right FNV checksum",
            with_header(old_header(&key, FORMAT, PTX.as_bytes()), PTX.as_bytes()),
        ),
        (
            "MAC of another key",
            encode_bytes(&key, "ptx", &MacKey([6; 32]), PTX.as_bytes()),
        ),
        (
            "MAC of another suffix",
            encode_bytes(&key, "d1.cubin", &MAC, PTX.as_bytes()),
        ),
        (
            "MAC in upper case",
            with_header(
                {
                    let (fields, sum) = hdr.trim_end().rsplit_once(' ').unwrap();
                    format!("{fields} {}\n", sum.to_ascii_uppercase())
                },
                PTX.as_bytes(),
            ),
        ),
        (
            "other version",
            with_header(
                hdr.replacen(&format!(" {VERSION} "), " 0.0.0-old ", 1),
                PTX.as_bytes(),
            ),
        ),
        (
            "other key",
            with_header(header(&Key([8; 32]), PTX), PTX.as_bytes()),
        ),
        ("flipped byte", {
            let mut v = good.clone();
            let last = v.len() - 2;
            v[last] ^= 1;
            v
        }),
        (
            "not UTF-8 (MAC right)",
            with_header(header_for(&key, "ptx", &MAC, bad_utf8), bad_utf8),
        ),
    ];
    for (what, bytes) in cases {
        assert!(decode(&key, bytes).is_err(), "{what} accepted");
    }
}

#[test]
fn corrupt_file_is_replaced_by_the_next_store() {
    let dir = temp_dir("replace");
    let cache = DiskCache::new(dir.clone());
    let key = Key([3; 32]);
    fs::create_dir_all(&dir).unwrap();
    set_mode(&dir, 0o700);
    fs::write(cache.path_for(&key), b"junk").unwrap();
    assert!(matches!(cache.load(&key), Lookup::Rejected(_)));
    assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
    assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".tmp")),
        "temporary file left: {names:?}"
    );
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn unwritable_directory_turns_writes_off_once() {
    let dir = temp_dir("unwritable");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    fs::write(&file, b"").unwrap();
    let cache = DiskCache::new(file.join("cache"));
    let key = Key([1; 32]);
    assert!(matches!(
        cache.store(&key, PTX),
        Stored::Failed { first: true, .. }
    ));
    assert!(!cache.is_writable());
    assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
    assert!(matches!(
        cache.load(&key),
        Lookup::Failed(_) | Lookup::Missing
    ));
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn trim_removes_the_least_recently_used() {
    let dir = temp_dir("trim");
    let cache = DiskCache::new(dir.clone());
    let t0 = SystemTime::now() - Duration::from_secs(10_000);
    for i in 0..6u8 {
        let key = Key([i; 32]);
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        let f = fs::OpenOptions::new()
            .append(true)
            .open(cache.path_for(&key))
            .unwrap();
        f.set_modified(t0 + Duration::from_secs(i as u64)).unwrap();
    }
    // A hit makes key 0 the most recently used.
    assert!(matches!(cache.load(&Key([0; 32])), Lookup::Hit(_)));
    assert_eq!(cache.trim(10, 3).unwrap(), 0, "under the bound");
    assert_eq!(cache.trim(5, 3).unwrap(), 3);
    let left: Vec<bool> = (0..6u8)
        .map(|i| cache.path_for(&Key([i; 32])).exists())
        .collect();
    assert_eq!(left, [true, false, false, false, true, true]);
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn cache_file_names() {
    assert!(is_cache_file_name(&format!("{}.ptx", "ab".repeat(32))));
    assert!(!is_cache_file_name(&format!("{}.ptx", "AB".repeat(32))));
    assert!(!is_cache_file_name("CACHEDIR.TAG"));
    assert!(!is_cache_file_name("kernel.ptx"));
    let key = "0f".repeat(32);
    assert!(is_cache_file_name(&format!("{key}.d13000.cubin")));
    assert!(!is_cache_file_name(&format!("{key}.cubin")));
    assert!(!is_cache_file_name(&format!("{key}.d1-3.cubin")));
    assert!(!is_cache_file_name(&format!("{key}..cubin")));
    assert!(is_temp_name(".abc.12.0.tmp"));
}

#[test]
fn planted_file_with_a_valid_header_and_old_checksum_is_refused() {
    let dir = private_dir("planted");
    let cache = DiskCache::new(dir.clone());
    let key = Key([4; 32]);
    assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
    let real = fs::read(cache.path_for(&key)).unwrap();
    let planted = "//\n.version 7.8\n.target sm_90\n// planted\n";
    for format in [1, FORMAT] {
        let mut bytes = old_header(&key, format, planted.as_bytes()).into_bytes();
        bytes.extend_from_slice(planted.as_bytes());
        fs::write(cache.path_for(&key), &bytes).unwrap();
        assert!(
            matches!(cache.load(&key), Lookup::Rejected(_)),
            "format {format}: the planted file is refused"
        );
    }
    // A planted body of the right length under a real entry's header (a real MAC, of
    // another body).
    let nl = real.iter().position(|&b| b == b'\n').unwrap();
    let body = format!("{:<1$}", "// planted", PTX.len());
    let forged = [&real[..=nl], body.as_bytes()].concat();
    assert_eq!(forged.len(), real.len());
    fs::write(cache.path_for(&key), &forged).unwrap();
    assert!(matches!(cache.load(&key), Lookup::Rejected(why) if why.contains("MAC")));
    // The next store replaces it with a real entry.
    assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
    assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
    assert_eq!(fs::read(cache.path_for(&key)).unwrap(), real);
    remove(dir);
}

#[test]
fn file_made_with_another_directory_key_is_refused() {
    let (a, b) = (private_dir("key-a"), private_dir("key-b"));
    let (ca, cb) = (DiskCache::new(a.clone()), DiskCache::new(b.clone()));
    let key = Key([5; 32]);
    assert!(matches!(ca.store(&key, PTX), Stored::Written(_)));
    assert!(matches!(cb.load(&key), Lookup::Missing));
    fs::copy(ca.path_for(&key), cb.path_for(&key)).unwrap();
    assert!(
        matches!(cb.load(&key), Lookup::Rejected(why) if why.contains("MAC")),
        "a file of another key is refused"
    );
    assert!(matches!(ca.load(&key), Lookup::Hit(p) if p == PTX));
    // A cubin renamed into the PTX's place is refused too (the suffix is authenticated).
    assert!(matches!(
        ca.store_bytes(&key, "d1.cubin", PTX.as_bytes()),
        Stored::Written(_)
    ));
    fs::copy(ca.path_with(&key, "d1.cubin"), ca.path_for(&key)).unwrap();
    assert!(matches!(
        DiskCache::new(a.clone()).load(&key),
        Lookup::Rejected(_)
    ));
    remove(a);
    remove(b);
}

#[cfg(unix)]
#[test]
fn directory_made_by_cudajit_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_dir("made");
    let cache = DiskCache::new(dir.join("cache"));
    assert!(matches!(
        cache.store(&Key([2; 32]), PTX),
        Stored::Written(_)
    ));
    let mode = fs::metadata(dir.join("cache"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let key = fs::metadata(dir.join("cache").join(trust::KEY_FILE)).unwrap();
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    remove(dir);
}

#[cfg(unix)]
#[test]
fn world_writable_directory_is_neither_read_nor_written() {
    let dir = private_dir("world-writable");
    let key = Key([6; 32]);
    assert!(matches!(
        DiskCache::new(dir.clone()).store(&key, PTX),
        Stored::Written(_)
    ));
    set_mode(&dir, 0o777);
    let cache = DiskCache::new(dir.clone());
    let access = cache.access(false).unwrap();
    let Some(Access::Untrusted(u)) = access else {
        panic!("trusted: {access:?}")
    };
    assert_eq!(u.problem, Problem::DirWritable { mode: 0o777 });
    let warning = u.to_string();
    assert!(warning.contains(&dir.display().to_string()), "{warning}");
    assert!(warning.contains("CUDAJIT_CACHE_TRUST=1"), "{warning}");
    assert!(matches!(cache.load(&key), Lookup::Missing), "not read");
    assert!(!cache.is_trusted(false));
    let before: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(matches!(cache.store(&Key([7; 32]), PTX), Stored::Disabled));
    assert!(!cache.is_writable());
    let after: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before.len(), after.len(), "nothing written");
    assert!(cache.clear().is_err(), "nothing deleted");
    assert!(cache.path_for(&key).exists());
    // Opted in, it is used.
    let opted = DiskCache::with_policy(dir.clone(), opted_in_policy());
    assert!(matches!(opted.load(&key), Lookup::Hit(p) if p == PTX));
    remove(dir);
}

#[cfg(unix)]
#[test]
fn directory_of_another_user_is_not_read() {
    if !trust::can_chown() {
        return;
    }
    let dir = private_dir("other-user");
    let key = Key([8; 32]);
    assert!(matches!(
        DiskCache::new(dir.clone()).store(&key, PTX),
        Stored::Written(_)
    ));
    std::os::unix::fs::chown(&dir, Some(trust::NOBODY), Some(trust::NOBODY)).unwrap();
    let cache = DiskCache::new(dir.clone());
    assert!(matches!(
        cache.access(false).unwrap(),
        Some(Access::Untrusted(Untrusted {
            problem: Problem::DirOwner {
                uid: trust::NOBODY,
                ..
            },
            ..
        }))
    ));
    assert!(matches!(cache.load(&key), Lookup::Missing));
    assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
    remove(dir);
}

#[cfg(unix)]
#[test]
fn file_of_another_user_is_rejected() {
    if !trust::can_chown() {
        return;
    }
    let dir = private_dir("other-file");
    let cache = DiskCache::new(dir.clone());
    let key = Key([9; 32]);
    assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
    std::os::unix::fs::chown(cache.path_for(&key), Some(trust::NOBODY), None).unwrap();
    assert!(
        matches!(cache.load(&key), Lookup::Rejected(why) if why.contains("owned by uid 65534"))
    );
    // Replaced by the next store (the directory is ours).
    assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
    assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
    remove(dir);
}

#[cfg(unix)]
#[test]
fn key_file_readable_by_others_makes_the_cache_untrusted() {
    let dir = private_dir("key-0644");
    let key = Key([10; 32]);
    assert!(matches!(
        DiskCache::new(dir.clone()).store(&key, PTX),
        Stored::Written(_)
    ));
    set_mode(&dir.join(trust::KEY_FILE), 0o644);
    let cache = DiskCache::new(dir.clone());
    assert!(matches!(
        cache.access(false).unwrap(),
        Some(Access::Untrusted(Untrusted {
            problem: Problem::KeyMode { mode: 0o644 },
            ..
        }))
    ));
    assert!(matches!(cache.load(&key), Lookup::Missing));
    assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
    remove(dir);
}

/// A shared cache: filled by one user, shipped with its key (readable by all), made
/// read-only; another user opts in with `CUDAJIT_CACHE_TRUST=1` and gets hits.
#[cfg(unix)]
#[test]
fn opted_in_read_only_prefilled_cache_serves_hits() {
    let dir = private_dir("shared");
    let key = Key([11; 32]);
    let cubin = [0x7f, b'E', b'L', b'F', 2];
    let filler = DiskCache::new(dir.clone());
    assert!(matches!(filler.store(&key, PTX), Stored::Written(_)));
    assert!(matches!(
        filler.store_bytes(&key, "d1.cubin", &cubin),
        Stored::Written(_)
    ));
    set_mode(&dir.join(trust::KEY_FILE), 0o644);
    let given_away = trust::effective_uid() == 0;
    if given_away {
        for e in fs::read_dir(&dir).unwrap() {
            std::os::unix::fs::chown(e.unwrap().path(), Some(trust::NOBODY), None).unwrap();
        }
        std::os::unix::fs::chown(&dir, Some(trust::NOBODY), None).unwrap();
    }
    set_mode(&dir, 0o555);
    let user = DiskCache::new(dir.clone());
    assert!(
        matches!(user.load(&key), Lookup::Missing),
        "not opted in: not trusted"
    );
    let shared = DiskCache::with_policy(dir.clone(), opted_in_policy());
    assert!(matches!(shared.load(&key), Lookup::Hit(p) if p == PTX));
    assert!(matches!(shared.load_bytes(&key, "d1.cubin"), Lookup::Hit(b) if b == cubin));
    assert!(shared.is_trusted(false));
    // The shared cache still authenticates its entries.
    let other = Key([12; 32]);
    let mut planted = old_header(&other, FORMAT, PTX.as_bytes()).into_bytes();
    planted.extend_from_slice(PTX.as_bytes());
    set_mode(&dir, 0o755);
    fs::write(shared.path_for(&other), planted).unwrap();
    set_mode(&dir, 0o555);
    assert!(matches!(shared.load(&other), Lookup::Rejected(_)));
    remove(dir);
}

/// A directory whose key cannot be read (here a dangling link in its place) serves nothing
/// and takes no writes, opted in or not; the link is left alone.
#[cfg(unix)]
#[test]
fn directory_without_a_usable_key_is_not_used() {
    let dir = private_dir("no-key");
    let key_path = dir.join(trust::KEY_FILE);
    std::os::unix::fs::symlink(dir.join("absent"), &key_path).unwrap();
    for policy in [Policy::for_process(false), opted_in_policy()] {
        let cache = DiskCache::with_policy(dir.clone(), policy);
        assert!(
            matches!(cache.access(false).unwrap(), Some(Access::NoKey(_))),
            "{policy:?}"
        );
        assert!(matches!(cache.load(&Key([13; 32])), Lookup::Missing));
        assert!(matches!(cache.store(&Key([13; 32]), PTX), Stored::Disabled));
        assert!(!cache.path_for(&Key([13; 32])).exists());
    }
    assert!(fs::symlink_metadata(&key_path)
        .unwrap()
        .file_type()
        .is_symlink());
    remove(dir);
}
