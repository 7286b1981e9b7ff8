//! Command-line options and the sizes of each workload.

use super::*;

// ---------------------------------------------------------------------------------------------
// Options and sizes.

/// Command-line options.
#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub(crate) quick: bool,
    pub(crate) only: Option<Vec<String>>,
    pub(crate) filter: Option<String>,
    pub(crate) reps: usize,
    pub(crate) warmup: usize,
    pub(crate) sweep: bool,
    pub(crate) list: bool,
    pub(crate) emit_ptx: Option<std::path::PathBuf>,
    pub(crate) ew: ours::EwConfig,
    /// Devices the all-reduce and sharded rows use (`--gpus N`, default 2). With 1 they
    /// rehearse on one device (a communicator and a mesh of one): the code paths and the
    /// sharded path's own cost, no scaling.
    pub(crate) gpus: usize,
}

impl Opts {
    pub(crate) fn parse(args: impl Iterator<Item = String>) -> Res<Opts> {
        let mut o = Opts {
            quick: false,
            only: None,
            filter: None,
            reps: 0,
            warmup: 3,
            sweep: false,
            list: false,
            emit_ptx: None,
            ew: ours::EwConfig::default(),
            gpus: 2,
        };
        let mut args = args;
        while let Some(a) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match a.as_str() {
                "--bench" => {} // cargo bench and the bundle's run.sh pass it
                "--quick" => o.quick = true,
                "--sweep" => o.sweep = true,
                "--list" => o.list = true,
                "--emit-ptx" => o.emit_ptx = Some(value("--emit-ptx")?.into()),
                "--only" => {
                    let v = value("--only")?;
                    let names: Vec<String> = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect();
                    if let Some(bad) = names.iter().find(|n| !WORKS.contains(&n.as_str())) {
                        return Err(format!("unknown work `{bad}` (--list names them)"));
                    }
                    o.only = Some(names);
                }
                "--reps" => {
                    o.reps = value("--reps")?
                        .parse()
                        .ok()
                        .filter(|&n: &usize| n > 0)
                        .ok_or("--reps needs a positive number")?
                }
                "--gpus" => {
                    o.gpus = value("--gpus")?
                        .parse()
                        .ok()
                        .filter(|n: &usize| (1..=8).contains(n))
                        .ok_or("--gpus needs a device count from 1 to 8")?
                }
                "--ew" => {
                    let v = value("--ew")?;
                    let p: Vec<u32> = v.split(',').filter_map(|s| s.parse().ok()).collect();
                    match p[..] {
                        [u, bps, block] if u > 0 && bps > 0 && block >= 32 && block % 32 == 0 => {
                            o.ew = ours::EwConfig {
                                unroll: u as u64,
                                blocks_per_sm: bps,
                                block,
                            }
                        }
                        _ => {
                            return Err(
                                "--ew takes UNROLL,BLOCKS_PER_SM,BLOCK (e.g. 4,8,256)".into()
                            )
                        }
                    }
                }
                "-h" | "--help" => {
                    return Err(
                        "usage: bench [--quick] [--only w1,w2] [--reps N] [--sweep] \
                         [--ew U,BPS,BLOCK] [--gpus N] [--list] [--emit-ptx DIR] [FILTER]"
                            .into(),
                    )
                }
                s if s.starts_with('-') => return Err(format!("unknown option {s}")),
                s => o.filter = Some(s.to_string()),
            }
        }
        if o.reps == 0 {
            o.reps = if o.quick { 5 } else { 20 };
        }
        if o.quick {
            o.warmup = 1;
        }
        Ok(o)
    }

    pub(crate) fn selected(&self, work: &str) -> bool {
        self.only
            .as_ref()
            .map_or(true, |l| l.iter().any(|w| w == work))
            && self
                .filter
                .as_ref()
                .map_or(true, |f| work.contains(f.as_str()))
    }
}

/// The problem sizes (`peers.py` uses the same ones and the same size labels).
pub(crate) struct Sizes {
    /// f32 elements of the 1-D workloads.
    pub(crate) n: usize,
    /// f64 elements of `add_f64`.
    pub(crate) n64: usize,
    /// Rows and columns of the matrices.
    pub(crate) mat: usize,
    /// f32 elements of each host<->device transfer.
    pub(crate) xfer: usize,
    /// Launches per repetition of `launch`.
    pub(crate) launches: u32,
    /// Kernels built per row of `compile_*`.
    pub(crate) compiles: usize,
    /// Bytes of each `peer_copy`.
    pub(crate) peer_bytes: usize,
    /// Bytes (f32) of each `all_reduce` row.
    pub(crate) all_reduce_bytes: &'static [usize],
    /// f32 elements of `sum_1gpu`, `add_1gpu`, `sum_sharded`, `add_sharded` (all devices together).
    pub(crate) n_multi: usize,
}

impl Sizes {
    pub(crate) fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                n: 1 << 22,
                n64: 1 << 21,
                mat: 2048,
                xfer: 1 << 24,
                launches: 1000,
                compiles: 3,
                peer_bytes: 16 << 20,
                all_reduce_bytes: &[4 << 20, 16 << 20],
                n_multi: 1 << 22,
            }
        } else {
            Sizes {
                n: 1 << 28,
                n64: 1 << 27,
                mat: 16384,
                xfer: 1 << 28,
                launches: 10_000,
                compiles: 7,
                peer_bytes: 1 << 30,
                all_reduce_bytes: &[4 << 20, 64 << 20, 1 << 30],
                n_multi: 1 << 30,
            }
        }
    }
}

/// `2^28 f32` for powers of two, else the number.
pub(crate) fn size_1d(n: usize, ty: &str) -> String {
    if n.is_power_of_two() {
        format!("2^{} {ty}", n.trailing_zeros())
    } else {
        format!("{n} {ty}")
    }
}

/// `1 GiB`, `64 MiB`.
pub(crate) fn size_bytes(b: usize) -> String {
    if b >= 1 << 30 && b % (1 << 30) == 0 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// The constant of the `compile` rows' kernel `i`.
pub(crate) fn compile_constant(i: usize) -> f32 {
    1.0 + i as f32 * 1e-3
}

/// The name of the `compile` rows' kernel `i` of the run tagged `tag`.
pub(crate) fn compile_name(tag: u64, i: usize) -> String {
    format!("compile_{tag:x}_{i}")
}

pub(crate) fn nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    splitmix(t ^ ((std::process::id() as u64) << 32))
}
