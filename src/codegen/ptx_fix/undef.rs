//! Rewrite 11 of `ptx_fix`: registers that may be read before they are written get a zero at
//! the function's entry.
//!
//! LLVM may leave a register undefined on a path where its value is not used (a phi with an
//! `undef` input, e.g. after loop unrolling), and that is valid PTX. ptxas then chooses the
//! undefined value to suit itself, and did so inconsistently: in fuzzer seed 18500719 a
//! register was written by the same conversion on two paths, one of which it skipped on the
//! way to the other; ptxas took the register to hold the conversion's value on every path,
//! dropped the second conversion as redundant, and kept the first only on its own path, so
//! the path through the second read whatever the physical register held (a thread index). A
//! zero written at entry to every register that some path may read before writing leaves
//! nothing undefined; ptxas removes the writes that are dead. Found by a forward "defined on
//! every path" dataflow over the function's basic blocks.

use std::collections::{HashMap, HashSet};

use super::writes_nothing;

/// One instruction's registers: those it writes on every execution and those it reads.
struct Inst<'a> {
    defs: Vec<&'a str>,
    uses: Vec<&'a str>,
}

/// The registers named in `s` (`%` + letters + digits; cudajit's scoped `%cj_*` registers and
/// special registers such as `%tid.x` are not).
fn regs(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &s[start..i];
        let letters = name[1..].trim_end_matches(|c: char| c.is_ascii_digit());
        let followed_by_dot = b.get(i) == Some(&b'.');
        if !followed_by_dot
            && !letters.is_empty()
            && letters.len() < name.len() - 1
            && letters.bytes().all(|c| c.is_ascii_alphabetic())
        {
            out.push(name);
        }
    }
    out
}

/// Parses one instruction's text (no `;`).
fn inst(text: &str) -> Option<Inst<'_>> {
    let t = text.trim();
    if t.is_empty() || t.starts_with('.') || t.starts_with("//") {
        return None;
    }
    let (pred, rest) = match t.strip_prefix('@') {
        Some(r) => {
            let (p, rest) = r.split_once(char::is_whitespace)?;
            (Some(p), rest.trim_start())
        }
        None => (None, t),
    };
    let (op, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let mut uses: Vec<&str> = pred.map(regs).unwrap_or_default();
    let mut defs = Vec::new();
    if writes_nothing(op) {
        uses.extend(regs(args));
    } else {
        let args = args.trim_start();
        let split = if args.starts_with('{') {
            args.find('}').map(|e| e + 1)
        } else {
            args.find(',')
        }
        .unwrap_or(args.len());
        let (first, others) = args.split_at(split);
        // A predicated write may not happen: it defines nothing for sure.
        if pred.is_none() {
            defs.extend(regs(first));
        }
        uses.extend(regs(others));
    }
    Some(Inst { defs, uses })
}

/// One basic block: its instructions, successors by label and whether it falls through.
#[derive(Default)]
struct Block<'a> {
    insts: Vec<Inst<'a>>,
    targets: Vec<&'a str>,
    falls_through: bool,
}

/// The function's blocks (the first is the entry) and the block index of each label.
fn blocks<'a>(body: &[&'a str]) -> (Vec<Block<'a>>, HashMap<String, usize>) {
    let mut out = vec![Block {
        falls_through: true,
        ..Block::default()
    }];
    let mut labels = HashMap::new();
    for line in body {
        let code = line.split("//").next().unwrap_or("").trim();
        if let Some(label) = code.strip_suffix(':') {
            if !out
                .last()
                .is_some_and(|b| b.insts.is_empty() && b.targets.is_empty())
            {
                out.push(Block {
                    falls_through: true,
                    ..Block::default()
                });
            }
            labels.insert(label.trim().to_string(), out.len() - 1);
            continue;
        }
        let pieces: Vec<&str> = match code.strip_prefix('{') {
            Some(inner) => inner.trim_end_matches('}').split(';').collect(),
            None if code.ends_with(';') => vec![code.trim_end_matches(';')],
            None => continue,
        };
        for piece in pieces {
            let Some(i) = inst(piece) else { continue };
            let t = piece.trim();
            let unpredicated = !t.starts_with('@');
            let op_at = if unpredicated {
                t
            } else {
                t.split_once(char::is_whitespace)
                    .map_or("", |(_, r)| r.trim_start())
            };
            let (op, args) = op_at.split_once(char::is_whitespace).unwrap_or((op_at, ""));
            let block = out.last_mut().expect("one block at least");
            block.insts.push(i);
            let ends = if op.starts_with("bra") {
                block.targets.push(args.trim());
                true
            } else {
                op.starts_with("ret") || op.starts_with("exit")
            };
            if ends {
                block.falls_through = !unpredicated;
                out.push(Block {
                    falls_through: true,
                    ..Block::default()
                });
            }
        }
    }
    (out, labels)
}

/// IN[i] of the dataflow: the registers written on every path to block `i`'s start, the
/// meet of its predecessors' OUT (the entry starts from nothing); `None` while no
/// predecessor has been reached.
fn written_on_entry<'a>(
    i: usize,
    preds: &[usize],
    out: &[Option<HashSet<&'a str>>],
) -> Option<HashSet<&'a str>> {
    let mut inn: Option<HashSet<&str>> = (i == 0).then(HashSet::new);
    for o in preds.iter().filter_map(|&p| out[p].as_ref()) {
        inn = Some(match inn {
            None => o.clone(),
            Some(s) => s.intersection(o).copied().collect(),
        });
    }
    inn
}

/// The registers of `body` that some path from the entry reads before writing.
fn maybe_undefined<'a>(body: &[&'a str]) -> Vec<&'a str> {
    let (blocks, labels) = blocks(body);
    let n = blocks.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, b) in blocks.iter().enumerate() {
        if b.falls_through && i + 1 < n {
            preds[i + 1].push(i);
        }
        for t in &b.targets {
            if let Some(&j) = labels.get(*t) {
                preds[j].push(i);
            }
        }
    }
    // OUT[b]: registers written on every path from the entry to b's end (None: not reached yet).
    let mut out: Vec<Option<HashSet<&str>>> = vec![None; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            let Some(mut set) = written_on_entry(i, &preds[i], &out) else {
                continue;
            };
            for inst in &blocks[i].insts {
                set.extend(inst.defs.iter().copied());
            }
            if out[i].as_ref() != Some(&set) {
                out[i] = Some(set);
                changed = true;
            }
        }
    }
    let mut undefined = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let Some(mut set) = written_on_entry(i, &preds[i], &out) else {
            continue; // unreachable
        };
        for inst in &b.insts {
            undefined.extend(inst.uses.iter().filter(|u| !set.contains(*u)));
            set.extend(inst.defs.iter().copied());
        }
    }
    undefined.sort_unstable();
    undefined.dedup();
    undefined
}

/// For function `func` (one piece of `ptx_fix::functions`): the index of the line after which
/// to insert the zeroing `mov`s, and those lines; `None` when no register may be undefined.
pub(crate) fn zero_maybe_undefined(func: &str) -> Option<(usize, String)> {
    let lines: Vec<&str> = func.split_inclusive('\n').collect();
    let open = lines.iter().position(|l| l.trim() == "{")?;
    let types: HashMap<&str, &str> = lines[open..]
        .iter()
        .map_while(|l| {
            let t = l.trim();
            (t.is_empty() || t.starts_with(".reg") || t.starts_with(".local") || t == "{")
                .then_some(t)
        })
        .filter_map(|t| {
            let mut w = t.strip_prefix(".reg")?.split_whitespace();
            let ty = w.next()?.strip_prefix('.')?;
            let name = w.next()?.split('<').next()?;
            Some((name, ty))
        })
        .collect();
    let last_decl = open
        + lines[open..]
            .iter()
            .take_while(|l| {
                let t = l.trim();
                t.is_empty() || t.starts_with(".reg") || t.starts_with(".local") || t == "{"
            })
            .count()
        - 1;
    let undefined = maybe_undefined(&lines[last_decl + 1..]);
    let mut init = String::new();
    for r in undefined {
        let prefix = r.trim_end_matches(|c: char| c.is_ascii_digit());
        let zero = match types.get(prefix).copied() {
            Some("pred") => "0",
            Some("f32") => "0f00000000",
            Some("f64") => "0d0000000000000000",
            Some("b16" | "b32" | "b64" | "u16" | "u32" | "u64" | "s16" | "s32" | "s64") => "0",
            _ => continue, // a type not declared at the top: leave it
        };
        let ty = types[prefix];
        init.push_str(&format!("\tmov.{ty} \t{r}, {zero};\n"));
    }
    (!init.is_empty()).then_some((last_decl, init))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_register_undefined_on_one_path() {
        // %rd95 is written on the fall-through path only, then read after the join; %rd96 is
        // written before the branch; %rd97 only under a predicate.
        let func = ".entry k()\n{\n\t.reg .pred \t%p<20>;\n\t.reg .b64 \t%rd<100>;\n\n\
                    \tmov.u64 \t%rd96, 1;\n\t@%p14 bra \t$L__BB0_44;\n\
                    \t{ .reg .pred %cj_nan; cvt.rzi.u64.f64 %rd95, %fd2; setp.nan.f64 %cj_nan, \
                    %fd2, %fd2; selp.b64 %rd95, 0, %rd95, %cj_nan; }\n\
                    $L__BB0_44:\n\t@%p1 mov.u64 \t%rd97, 2;\n\tadd.s64 \t%rd98, %rd95, %rd96;\n\
                    \tadd.s64 \t%rd99, %rd98, %rd97;\n\tst.global.u64 \t[%rd1], %rd99;\n\tret;\n}\n";
        let (at, init) = zero_maybe_undefined(func).unwrap();
        assert_eq!(at, 4);
        // %rd1 and %fd2 (never written: parameters of the test) and %p1/%p14 are read too.
        assert_eq!(
            init,
            "\tmov.pred \t%p1, 0;\n\tmov.pred \t%p14, 0;\n\tmov.b64 \t%rd1, 0;\n\
             \tmov.b64 \t%rd95, 0;\n\tmov.b64 \t%rd97, 0;\n"
        );
    }

    #[test]
    fn loops_and_straight_code_need_nothing() {
        let func = ".entry k()\n{\n\t.reg .b64 \t%rd<9>;\n\t.reg .pred \t%p<3>;\n\n\
                    \tld.param.u64 \t%rd1, [k_param_0];\n\tmov.u64 \t%rd2, 0;\n$L__BB0_1:\n\
                    \tadd.s64 \t%rd2, %rd2, 1;\n\tsetp.lt.u64 \t%p1, %rd2, %rd1;\n\
                    \t@%p1 bra \t$L__BB0_1;\n\tst.global.u64 \t[%rd1], %rd2;\n\tret;\n}\n";
        assert_eq!(zero_maybe_undefined(func), None);
    }
}
