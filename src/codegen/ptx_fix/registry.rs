//! The registry of workarounds: each one's descriptor, the order in which they claim lines,
//! the set that is active for a driver, and the one loop that applies them.

use super::ptx::{functions, Edit, Function};
use super::{
    w01, w02, w03, w04, w05, w06, w07, w08, w09, w10, w11, w12, w13, w14, w15, w16, w17, w18, w19,
};
use crate::context::DriverVersion;

/// A workaround for a miscompilation of NVIDIA's PTX compiler, and what is known about it.
/// (Outside the tests, the descriptive fields are there for people: only `id`, `fixed_in` and
/// `apply` are read by the code.)
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Workaround {
    /// Its number: stable, never reused (the list in `mod.rs` and `docs/RELIABILITY.md` and
    /// the bit in a [`WorkaroundSet`] use it).
    pub(crate) id: u8,
    /// A short name (the file's, without its number).
    pub(crate) name: &'static str,
    /// What goes wrong, in one line (the file's doc comment has the whole story).
    pub(crate) fixes: &'static str,
    /// The compilers it was seen to go wrong with.
    pub(crate) seen_on: &'static [&'static str],
    /// The differential fuzzer's seeds that found it (`examples/fuzz --seed S`; the batches
    /// are replayed by `tests/fuzz.rs`); empty when it was not the fuzzer.
    pub(crate) seeds: &'static [u64],
    /// The tests that cover it, `path::name` (GPU regression tests, and the exact-output
    /// tests of the rewrite).
    pub(crate) tests: &'static [&'static str],
    /// A report of the bug upstream, where one exists (none is known for any of them).
    pub(crate) upstream: Option<&'static str>,
    /// The first driver (the CUDA version it supports) whose JIT is known to compile the
    /// pattern right; from that version on the workaround is left out. `None`: no fixed driver
    /// is known, and it always applies.
    pub(crate) fixed_in: Option<DriverVersion>,
    /// The first offline `ptxas` seen to compile it right (for the record: cudajit's PTX is
    /// compiled by the driver's JIT, which is what [`fixed_in`](Workaround::fixed_in) is about).
    pub(crate) ptxas_fixed_in: Option<DriverVersion>,
    /// The rewrite: the edits it makes to one function (reading the function as LLVM wrote
    /// it, never another workaround's output).
    pub(crate) apply: fn(&Function<'_>) -> Vec<Edit>,
}

impl Workaround {
    /// Whether it applies to PTX compiled by a driver of this version (unknown: it does).
    pub(crate) fn active_for(&self, driver: Option<DriverVersion>) -> bool {
        match (driver, self.fixed_in) {
            (Some(d), Some(fixed)) => d < fixed,
            _ => true,
        }
    }
}

/// Every workaround, by id.
pub(crate) const WORKAROUNDS: [&Workaround; 19] = [
    &w01::W01,
    &w02::W02,
    &w03::W03,
    &w04::W04,
    &w05::W05,
    &w06::W06,
    &w07::W07,
    &w08::W08,
    &w09::W09,
    &w10::W10,
    &w11::W11,
    &w12::W12,
    &w13::W13,
    &w14::W14,
    &w15::W15,
    &w16::W16,
    &w17::W17,
    &w18::W18,
    &w19::W19,
];

/// The order in which the workarounds claim lines (ids): a line is rewritten by one
/// workaround at most, the first in this list that wants it; every workaround reads the
/// function as LLVM wrote it. (Insertions, which only 11 makes, all stay, in this order, before
/// the line they precede, rewritten or not.)
///
/// No two workarounds want the same line today: each matches its own opcodes and operands
/// (4: `mov` of an immediate -1 or 1.0f; 3: `cvt` to float of a boolean select, and `selp` of
/// the bits 1 and 0; 6: `min.f64`/`max.f64`; 7: `ex2.approx`; 8: `min.f32`; 9: `selp` of an
/// immediate -0.0; 10: `mov` of a register into a float register; 1: `abs.f32`; 5: `neg.f32`,
/// `neg.f64`, `abs.f64`; 2: `neg.s32`, `neg.s64`, `abs.s64`; 12: `abs.s32`; 13: `neg.s16`, `abs.s16`; 14: `min`/`max` `.u16`/`.s16`; 15: `ld.volatile`/`ld.relaxed`; 16: `vote`, `activemask`,
/// `match.all`, `shfl.sync.idx`, `redux.sync`; 17: labels; 18: branches out of
/// compare-and-swap loops (and it inserts lines); 11 and 19 insert lines
/// and replace none), and `tests.rs` checks that no line is claimed twice. So the order
/// decides nothing yet; it is the one the `or_else` chain that applied them before had:
/// the rewrites that depend on facts about the whole function (which registers merge, are read
/// as integers, sit in a loop) come before the ones that look at one instruction alone, as the
/// more specific before the more general, so that a later rewrite that matches more broadly
/// cannot take a line from one that knows more about it.
pub(crate) const PRECEDENCE: [u8; 19] = [
    4, 3, 6, 7, 8, 9, 10, 1, 5, 2, 12, 13, 14, 15, 16, 17, 18, 11, 19,
];

/// The workaround with this id.
pub(crate) fn by_id(id: u8) -> Option<&'static Workaround> {
    WORKAROUNDS.iter().copied().find(|w| w.id == id)
}

/// A set of workarounds, by id (bit `id - 1`): those applied to one compilation, part of the
/// compile cache's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct WorkaroundSet(u64);

impl WorkaroundSet {
    /// Every registered workaround.
    #[cfg(test)]
    pub(crate) const ALL: WorkaroundSet = {
        let mut bits = 0;
        let mut i = 0;
        while i < WORKAROUNDS.len() {
            bits |= 1 << (WORKAROUNDS[i].id - 1);
            i += 1;
        }
        WorkaroundSet(bits)
    };

    /// The workarounds of `list` that apply to PTX compiled by a driver of this version
    /// (`None`: unknown, every one).
    pub(crate) fn select(list: &[&Workaround], driver: Option<DriverVersion>) -> Self {
        WorkaroundSet(
            list.iter()
                .filter(|w| w.active_for(driver))
                .fold(0, |bits, w| bits | 1 << (w.id - 1)),
        )
    }

    /// The registered workarounds that apply to PTX compiled by a driver of this version.
    pub(crate) fn for_driver(driver: Option<DriverVersion>) -> Self {
        Self::select(&WORKAROUNDS, driver)
    }

    /// Whether workaround `id` is in the set.
    pub(crate) fn contains(self, id: u8) -> bool {
        (1..=64).contains(&id) && self.0 & 1 << (id - 1) != 0
    }

    /// The set as bits (bit `id - 1` for workaround `id`).
    pub(crate) fn bits(self) -> u64 {
        self.0
    }

    /// The set without workaround `id`.
    #[cfg(test)]
    pub(crate) fn without(self, id: u8) -> Self {
        WorkaroundSet(self.0 & !(1 << (id - 1)))
    }
}

/// The workarounds of `active` applied to a whole module's text, one function at a time, in
/// the order of [`PRECEDENCE`].
pub(crate) fn apply(ptx: &str, active: WorkaroundSet) -> String {
    let order: Vec<&Workaround> = PRECEDENCE
        .iter()
        .filter(|&&id| active.contains(id))
        // Workarounds 17 to 19 need a target with uniform registers (and `activemask`).
        .filter(|&&id| !matches!(id, 17..=19) || w17::applies_to(ptx))
        .filter_map(|&id| by_id(id))
        .collect();
    let mut out = String::with_capacity(ptx.len() + 256);
    for text in functions(ptx) {
        let func = Function::parse(text);
        let mut replaced: Vec<Option<String>> = vec![None; func.lines.len()];
        let mut inserted: Vec<String> = vec![String::new(); func.lines.len()];
        for w in &order {
            for edit in (w.apply)(&func) {
                match edit {
                    Edit::Replace(n, new) => {
                        if let Some(slot @ None) = replaced.get_mut(n) {
                            *slot = Some(new);
                        }
                    }
                    Edit::InsertBefore(n, new) => {
                        if let Some(before) = inserted.get_mut(n) {
                            before.push_str(&new);
                        }
                    }
                }
            }
        }
        for ((line, new), before) in func.lines.iter().zip(&replaced).zip(&inserted) {
            out.push_str(before);
            out.push_str(new.as_deref().unwrap_or(line.text));
        }
    }
    out
}

/// For each line of `ptx` that some workaround wants, the ids of those that want it (for the
/// test that no line is claimed twice).
#[cfg(test)]
pub(crate) fn claims(ptx: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for text in functions(ptx) {
        let func = Function::parse(text);
        let mut by_line: std::collections::BTreeMap<usize, Vec<u8>> = Default::default();
        for w in WORKAROUNDS {
            for edit in (w.apply)(&func) {
                if let Edit::Replace(n, _) = edit {
                    by_line.entry(n).or_default().push(w.id);
                }
            }
        }
        out.extend(
            by_line
                .into_iter()
                .map(|(n, ids)| (func.lines[n].text.to_string(), ids)),
        );
    }
    out
}
