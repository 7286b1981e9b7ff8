//! The rendezvous on the CPU: ranks as threads over loopback TCP and a temporary directory
//! (no NCCL needed: the id is any 128 bytes here), a missing rank, a disagreeing world size
//! and a duplicate rank as errors on every rank that came, and the environment's parsing.

use super::*;

/// An id whose bytes say `seed`.
fn id(seed: u8) -> UniqueId {
    let mut b = [0u8; UNIQUE_ID_BYTES];
    for (i, x) in b.iter_mut().enumerate() {
        *x = seed.wrapping_mul(31).wrapping_add(i as u8);
    }
    UniqueId::from_bytes(b)
}

/// A free loopback port (bound and released; a race with other processes is unlikely).
fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Runs `rv(rank)` for each rank in `ranks` on its own thread; the results by rank.
fn run(ranks: &[usize], rv: impl Fn(usize) -> Rendezvous + Sync) -> Vec<Result<UniqueId>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = ranks
            .iter()
            .map(|&r| {
                let rv = &rv;
                s.spawn(move || rv(r).share(|| Ok(id(42))))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn tcp_ranks_share_rank_zeros_id() {
    let addr = free_addr();
    // Rank 0 last: the others retry until it listens.
    let got = run(&[3, 1, 2, 0], |r| Rendezvous::tcp(&addr, r, 4));
    for g in got {
        assert_eq!(g.unwrap(), id(42));
    }
}

#[test]
fn tcp_missing_rank_is_an_error_on_every_rank_that_came() {
    let addr = free_addr();
    let got = run(&[0, 1, 3], |r| {
        Rendezvous::tcp(&addr, r, 4).timeout(Duration::from_millis(600))
    });
    let e0 = got[0].as_ref().unwrap_err().to_string();
    assert!(e0.contains("rank(s) 2 did not arrive"), "{e0}");
    for g in &got[1..] {
        let e = g.as_ref().unwrap_err().to_string();
        assert!(
            e.contains("rank 0 refused") && e.contains("rank(s) 2"),
            "{e}"
        );
    }
}

#[test]
fn tcp_disagreements_are_errors() {
    let addr = free_addr();
    let got = run(&[0, 1], |r| {
        Rendezvous::tcp(&addr, r, if r == 0 { 2 } else { 3 }).timeout(Duration::from_secs(5))
    });
    let e0 = got[0].as_ref().unwrap_err().to_string();
    assert!(
        e0.contains("says the world has 3 ranks; this one, 2"),
        "{e0}"
    );
    let e1 = got[1].as_ref().unwrap_err().to_string();
    assert!(e1.contains("rank 0 refused"), "{e1}");
    let addr = free_addr();
    let got = run(&[0, 1, 2], |r| {
        Rendezvous::tcp(&addr, r.min(1), 3).timeout(Duration::from_secs(5))
    });
    let e0 = got[0].as_ref().unwrap_err().to_string();
    assert!(e0.contains("rank 1 arrived twice"), "{e0}");
}

#[test]
fn without_rank_zero_a_rank_times_out() {
    let addr = free_addr();
    let t0 = Instant::now();
    let e = Rendezvous::tcp(&addr, 1, 2)
        .timeout(Duration::from_millis(300))
        .share(|| Ok(id(1)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank 0 did not listen"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn bad_ranks_are_errors() {
    let e = Rendezvous::tcp("127.0.0.1:1", 2, 2).share(|| Ok(id(1)));
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("ranks are 0 to WORLD_SIZE - 1"));
    let e = Rendezvous::tcp("127.0.0.1:1", 0, 0).share(|| Ok(id(1)));
    assert!(e.is_err());
}

#[test]
fn file_ranks_share_and_a_missing_one_times_out() {
    let dir = std::env::temp_dir().join(format!("cudajit-rv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("id");
    let got = run(&[2, 0, 1], |r| Rendezvous::file(&path, r, 3));
    for g in got {
        assert_eq!(g.unwrap(), id(42));
    }
    let path = dir.join("id2");
    let got = run(&[0, 1], |r| {
        Rendezvous::file(&path, r, 3).timeout(Duration::from_millis(300))
    });
    for g in got {
        let e = g.unwrap_err().to_string();
        assert!(e.contains("rank(s) 2 did not arrive"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn given_ids_need_no_meeting() {
    let r = Rendezvous::id(id(9), 1, 2);
    assert_eq!(r.share(|| Ok(id(1))).unwrap(), id(9));
}

#[test]
fn the_environment_as_torch_sets_it() {
    let vars = |list: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            list.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let r = Rendezvous::from_vars(vars(&[
        ("MASTER_ADDR", "10.0.0.1"),
        ("MASTER_PORT", "29500"),
        ("RANK", "3"),
        ("WORLD_SIZE", "8"),
        ("CUDAJIT_RENDEZVOUS_TIMEOUT", "2.5"),
    ]))
    .unwrap();
    assert_eq!((r.rank(), r.world()), (3, 8));
    assert_eq!(r.timeout, Duration::from_millis(2500));
    assert!(matches!(&r.how, How::Tcp(a) if a == "10.0.0.1:29500"));
    let e = Rendezvous::from_vars(vars(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("RANK is not set"), "{e}");
    let e = Rendezvous::from_vars(vars(&[
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "70000"),
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a port"), "{e}");
    let e = Rendezvous::from_vars(vars(&[
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "1"),
        ("RANK", "x"),
        ("WORLD_SIZE", "1"),
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("RANK is `x`"), "{e}");
}

/// A rank in a child process (run by [`ranks_as_processes`] with `CUDAJIT_RV_CHILD` set): meets
/// the others through the environment and prints the id's first bytes.
#[test]
fn child_rank() {
    if std::env::var_os("CUDAJIT_RV_CHILD").is_none() {
        return;
    }
    let got = Rendezvous::from_env().unwrap().share(|| Ok(id(1))).unwrap();
    println!("RV {:?}", &got.as_bytes()[..4]);
}

/// Ranks 1-3 as processes (this test binary again), rank 0 here: all get rank 0's id; then a
/// world of 3 where rank 2 never starts: every process that came fails, none hangs.
#[test]
fn ranks_as_processes() {
    let spawn = |addr: &str, rank: usize, world: usize| {
        let (host, port) = addr.rsplit_once(':').unwrap();
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "nccl::rendezvous::tests::child_rank",
                "--exact",
                "--nocapture",
            ])
            .env("CUDAJIT_RV_CHILD", "1")
            .env("MASTER_ADDR", host)
            .env("MASTER_PORT", port)
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("CUDAJIT_RENDEZVOUS_TIMEOUT", "20")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let addr = free_addr();
    let kids: Vec<_> = (1..4).map(|r| spawn(&addr, r, 4)).collect();
    let mine = Rendezvous::tcp(&addr, 0, 4).share(|| Ok(id(42))).unwrap();
    let want = format!("RV {:?}", &mine.as_bytes()[..4]);
    for k in kids {
        let out = k.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains(&want), "{text}");
    }
    let addr = free_addr();
    let kid = spawn(&addr, 1, 3);
    let e = Rendezvous::tcp(&addr, 0, 3)
        .timeout(Duration::from_secs(1))
        .share(|| Ok(id(42)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank(s) 2 did not arrive"), "{e}");
    let out = kid.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("rank 0 refused")
            || String::from_utf8_lossy(&out.stderr).contains("rank 0 refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
