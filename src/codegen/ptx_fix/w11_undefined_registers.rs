//! Workaround 11: **a register undefined on one path was taken to be defined on all.**
//!
//! LLVM may leave a register undefined on a path where its value is not used (a phi with an
//! `undef` input, e.g. after loop unrolling), and that is valid PTX. ptxas then chooses the
//! undefined value to suit itself, and did so inconsistently: in fuzzer seed 18500719 (program
//! 7, only beside another program: a `while_` loop inside a `for_range` setting a `u64`
//! variable to `x_f64.cast::<u64>().max(x_u64 * v)` gave `0x800000010000003a` where Rust gives
//! 0) a register was written by the same conversion on two paths, one of which it skipped on
//! the way to the other; ptxas took the register to hold the conversion's value on every path,
//! dropped the second conversion as redundant, and kept the first only on its own path, so the
//! path through the second read whatever the physical register held (a thread index). A zero
//! written at entry to every register that some path may read before writing leaves nothing
//! undefined; ptxas removes the writes that are dead. Found by a forward "defined on every
//! path" dataflow over the function's basic blocks.
//!
//! It stays a rewrite of the PTX (issue 23 asked whether it could be made in the LLVM IR): the
//! undefined values come from LLVM's own loop transformations, not from cudajit's variables,
//! which always get a value where they are declared (`Stmt::DeclVar`). In seed 18500719 the
//! register holds a loop-invariant cast (cudajit's inline-assembly `cvt.rzi` + NaN select)
//! computed before an unrolled loop on one path and merged with `undef` on the path that skips
//! it. Storing zero into every variable's `alloca` at the kernel's entry was tried on the 104
//! kernels of the GPU findings' batches (32 and 64 per kernel) and seeds 1 to 3: it changed the
//! PTX of 50 of them and left all 7 undefined registers (in 6 kernels) undefined. A `freeze`
//! in cudajit's IR would not reach the phis that the optimiser creates afterwards either.

use std::collections::{HashMap, HashSet};

use super::ptx::{Edit, Function, Inst, Kind, PtxLine};
use super::registry::Workaround;

/// Workaround 11's descriptor.
pub(crate) const W11: Workaround = Workaround {
    id: 11,
    name: "undefined_registers",
    fixes: "a register left undefined on one path is taken to hold the same value on every \
            path",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[18500719],
    tests: &[
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w11_undefined_registers.rs::finds_a_register_undefined_on_one_path",
        "src/codegen/ptx_fix/w11_undefined_registers.rs::loops_and_straight_code_need_nothing",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// The zeroing `mov`s, before the first line after the function's declarations.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    zero_maybe_undefined(f)
        .map(|(at, init)| Edit::InsertBefore(at + 1, init))
        .into_iter()
        .collect()
}

/// One instruction's registers: those it writes on every execution and those it reads.
struct Regs<'a> {
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

/// The registers one instruction writes for sure (an unguarded write) and reads.
fn registers<'a>(i: &Inst<'a>) -> Regs<'a> {
    let mut uses: Vec<&str> = i.guard.map(regs).unwrap_or_default();
    let mut defs = Vec::new();
    if i.writes_nothing() {
        uses.extend(regs(i.args));
    } else {
        let split = if i.args.starts_with('{') {
            i.args.find('}').map(|e| e + 1)
        } else {
            i.args.find(',')
        }
        .unwrap_or(i.args.len());
        let (first, others) = i.args.split_at(split);
        // A guarded write may not happen: it defines nothing for sure.
        if i.guard.is_none() {
            defs.extend(regs(first));
        }
        uses.extend(regs(others));
    }
    Regs { defs, uses }
}

/// One basic block: its instructions, successors by label and whether it falls through.
#[derive(Default)]
struct Block<'a> {
    insts: Vec<Regs<'a>>,
    targets: Vec<&'a str>,
    falls_through: bool,
}

/// The blocks of `body` (the first is the entry) and the block index of each label.
fn blocks<'a>(body: &[PtxLine<'a>]) -> (Vec<Block<'a>>, HashMap<&'a str, usize>) {
    let mut out = vec![Block {
        falls_through: true,
        ..Block::default()
    }];
    let mut labels = HashMap::new();
    for line in body {
        let insts = match &line.kind {
            Kind::Label(label) => {
                if !out
                    .last()
                    .is_some_and(|b| b.insts.is_empty() && b.targets.is_empty())
                {
                    out.push(Block {
                        falls_through: true,
                        ..Block::default()
                    });
                }
                labels.insert(*label, out.len() - 1);
                continue;
            }
            Kind::Inst(i) => std::slice::from_ref(i),
            Kind::Scope(insts) => &insts[..],
            Kind::Other => continue,
        };
        for i in insts {
            let block = out.last_mut().expect("one block at least");
            block.insts.push(registers(i));
            let ends = if i.op.starts_with("bra") {
                block.targets.push(i.args);
                true
            } else {
                i.op.starts_with("ret") || i.op.starts_with("exit")
            };
            if ends {
                block.falls_through = i.guard.is_some();
                out.push(Block {
                    falls_through: true,
                    ..Block::default()
                });
            }
        }
    }
    (out, labels)
}

/// `IN[i]` of the dataflow: the registers written on every path to block `i`'s start, the
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
fn maybe_undefined<'a>(body: &[PtxLine<'a>]) -> Vec<&'a str> {
    let (blocks, labels) = blocks(body);
    let n = blocks.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, b) in blocks.iter().enumerate() {
        if b.falls_through && i + 1 < n {
            preds[i + 1].push(i);
        }
        for t in &b.targets {
            if let Some(&j) = labels.get(t) {
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

/// Whether a line belongs to the declarations at the top of a function's body.
fn is_declaration(line: &PtxLine<'_>) -> bool {
    let t = line.text.trim();
    t.is_empty() || t.starts_with(".reg") || t.starts_with(".local") || t == "{"
}

/// The index of the function's last declaration line, after which the zeroing `mov`s go, and
/// those lines; `None` when no register may be undefined.
fn zero_maybe_undefined(f: &Function<'_>) -> Option<(usize, String)> {
    let open = f.lines.iter().position(|l| l.text.trim() == "{")?;
    let decls = f.lines[open..].iter().take_while(|l| is_declaration(l));
    let types: HashMap<&str, &str> = decls
        .clone()
        .filter_map(|l| {
            let mut w = l.text.trim().strip_prefix(".reg")?.split_whitespace();
            let ty = w.next()?.strip_prefix('.')?;
            let name = w.next()?.split('<').next()?;
            Some((name, ty))
        })
        .collect();
    let last_decl = open + decls.count() - 1;
    let undefined = maybe_undefined(&f.lines[last_decl + 1..]);
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
        let (at, init) = zero_maybe_undefined(&Function::parse(func)).unwrap();
        assert_eq!(at, 4);
        // %rd1 and %fd2 (never written: parameters of the test) and %p1/%p14 are read too.
        assert_eq!(
            init,
            "\tmov.pred \t%p1, 0;\n\tmov.pred \t%p14, 0;\n\tmov.b64 \t%rd1, 0;\n\
             \tmov.b64 \t%rd95, 0;\n\tmov.b64 \t%rd97, 0;\n"
        );
        let fixed = super::super::tests::fix(func);
        assert!(fixed.contains("\t.reg .b64 \t%rd<100>;\n\n\tmov.pred \t%p1, 0;\n"));
    }

    #[test]
    fn loops_and_straight_code_need_nothing() {
        let func = ".entry k()\n{\n\t.reg .b64 \t%rd<9>;\n\t.reg .pred \t%p<3>;\n\n\
                    \tld.param.u64 \t%rd1, [k_param_0];\n\tmov.u64 \t%rd2, 0;\n$L__BB0_1:\n\
                    \tadd.s64 \t%rd2, %rd2, 1;\n\tsetp.lt.u64 \t%p1, %rd2, %rd1;\n\
                    \t@%p1 bra \t$L__BB0_1;\n\tst.global.u64 \t[%rd1], %rd2;\n\tret;\n}\n";
        assert_eq!(zero_maybe_undefined(&Function::parse(func)), None);
    }
}
