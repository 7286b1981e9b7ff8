//! The PTX text of a module cut into functions, each parsed once into typed lines that every
//! workaround reads (instead of splitting the text again), and the edits a workaround makes.
//!
//! The parse follows the text LLVM's NVPTX back end writes (one instruction per line, `\t`
//! before the operands, no comment after an instruction; a scope over several lines for the
//! conversions between 32-bit shared/local and 64-bit generic addresses, `{ .reg .b64 %tmp;`,
//! one instruction a line, the last ending in `}`) and cudajit's inline assembly (a scope
//! `{ .reg ..; a; b; }` on one line, or one instruction per line).

use std::collections::HashMap;

/// One instruction, `[@guard] op operands;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inst<'a> {
    /// The predicate guard without its `@` (`%p1`, `!%p2`), if any.
    pub(crate) guard: Option<&'a str>,
    /// The opcode with its suffixes (`selp.f32`, `cvt.rn.f32.u32`).
    pub(crate) op: &'a str,
    /// The operands' text, trimmed, without the `;` (empty for `ret`).
    pub(crate) args: &'a str,
    /// The operands, split at every `,` and trimmed (a vector `{a, b}` gives two pieces).
    pub(crate) operands: Vec<&'a str>,
}

impl<'a> Inst<'a> {
    /// Parses one instruction's text (no `;`); `None` for an empty piece, a directive (`.reg`)
    /// or a comment, and for a guard with nothing after it.
    fn parse(piece: &'a str) -> Option<Self> {
        let t = piece.trim();
        if t.is_empty() || t.starts_with('.') || t.starts_with("//") {
            return None;
        }
        let (guard, rest) = match t.strip_prefix('@') {
            Some(r) => {
                let (p, rest) = r.split_once(char::is_whitespace)?;
                (Some(p), rest.trim_start())
            }
            None => (None, t),
        };
        let (op, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let args = args.trim();
        let operands = if args.is_empty() {
            Vec::new()
        } else {
            args.split(',').map(str::trim).collect()
        };
        Some(Inst {
            guard,
            op,
            args,
            operands,
        })
    }

    /// The opcode's suffixes (`rn`, `f32`, `u32` of `cvt.rn.f32.u32`).
    pub(crate) fn suffixes(&self) -> impl Iterator<Item = &'a str> {
        self.op.split('.').skip(1)
    }

    /// The first operand (the destination of an instruction that writes one).
    pub(crate) fn dest(&self) -> Option<&'a str> {
        self.operands.first().copied()
    }

    /// The operands after the first (the sources of an instruction that writes one).
    pub(crate) fn sources(&self) -> &[&'a str] {
        self.operands.get(1..).unwrap_or(&[])
    }

    /// The first operand and the text of all the others, both trimmed (`d` and `a` of
    /// `op d, a`); `None` with fewer than two operands.
    pub(crate) fn dest_and_rest(&self) -> Option<(&'a str, &'a str)> {
        let (d, a) = self.args.split_once(',')?;
        Some((d.trim(), a.trim()))
    }

    /// Exactly two non-empty operands.
    pub(crate) fn two_operands(&self) -> Option<(&'a str, &'a str)> {
        match self.operands[..] {
            [d, a] if !d.is_empty() && !a.is_empty() => Some((d, a)),
            _ => None,
        }
    }

    /// Whether the opcode writes no register (its first operand, if any, is read).
    pub(crate) fn writes_nothing(&self) -> bool {
        [
            "st.", "bra", "call", "ret", "exit", "bar", "membar", "fence", "red.", "prefetch",
            "trap",
        ]
        .iter()
        .any(|p| self.op.starts_with(p))
    }

    /// The registers it writes (the first operand, `|` pairs and `{..}` vectors included; a
    /// guarded write counts).
    pub(crate) fn written(&self) -> impl Iterator<Item = &'a str> {
        let first = if self.writes_nothing() {
            ""
        } else {
            match self.args.strip_prefix('{') {
                Some(v) => v.split('}').next().unwrap_or(""),
                None => self.args.split(',').next().unwrap_or(""),
            }
        };
        first
            .split([',', '|'])
            .map(str::trim)
            .filter(|r| r.starts_with('%'))
    }
}

/// What a line holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    /// A label (`$L__BB0_3:`), by name.
    Label(&'a str),
    /// One instruction.
    Inst(Inst<'a>),
    /// A scope on one line, `{ .reg ..; a; b; }` (cudajit's inline assembly): its instructions.
    /// Also the first and last lines of a scope LLVM writes over several lines (`{ .reg .b64
    /// %tmp;` and `cvt.u32.u64 %r1, %tmp; }`), the lines between being instructions.
    Scope(Vec<Inst<'a>>),
    /// Anything else: a directive or declaration, a brace alone, a piece of a multi-line
    /// `call`, a comment, a blank line.
    Other,
}

/// One line of a function's PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PtxLine<'a> {
    /// The line as written, its newline included.
    pub(crate) text: &'a str,
    /// The whitespace before its first character.
    pub(crate) indent: &'a str,
    /// What it holds.
    pub(crate) kind: Kind<'a>,
}

impl<'a> PtxLine<'a> {
    /// Parses one line (its newline included).
    fn parse(text: &'a str) -> Self {
        let body = text.trim_start();
        let indent = &text[..text.len() - body.len()];
        let code = text.split("//").next().unwrap_or("").trim();
        let kind = if let Some(label) = code.strip_suffix(':') {
            Kind::Label(label.trim())
        } else if let Some(inner) = code.strip_prefix('{') {
            Kind::Scope(
                inner
                    .trim_end_matches('}')
                    .split(';')
                    .filter_map(Inst::parse)
                    .collect(),
            )
        } else if let Some(inner) = code.strip_suffix('}').filter(|c| c.trim().ends_with(';')) {
            // The last line of a scope that spans several lines.
            Kind::Scope(inner.split(';').filter_map(Inst::parse).collect())
        } else if code.ends_with(';') {
            Inst::parse(code.trim_end_matches(';')).map_or(Kind::Other, Kind::Inst)
        } else {
            Kind::Other
        };
        PtxLine { text, indent, kind }
    }

    /// The instruction, if the line is one.
    pub(crate) fn inst(&self) -> Option<&Inst<'a>> {
        match &self.kind {
            Kind::Inst(i) => Some(i),
            _ => None,
        }
    }

    /// Its instructions: the one of an instruction line, those of a one-line scope, none for
    /// a label or any other line.
    pub(crate) fn instructions(&self) -> &[Inst<'a>] {
        match &self.kind {
            Kind::Inst(i) => std::slice::from_ref(i),
            Kind::Scope(is) => is,
            _ => &[],
        }
    }

    /// The line without its newline.
    pub(crate) fn without_newline(&self) -> &'a str {
        self.text.trim_end_matches('\n')
    }

    /// `"\n"` if the line ends with one, else `""`.
    pub(crate) fn newline(&self) -> &'static str {
        if self.text.ends_with('\n') {
            "\n"
        } else {
            ""
        }
    }

    /// The instruction's guard as it is written before an opcode, `"@%p1 "`, or `""`.
    pub(crate) fn guard_prefix(&self) -> String {
        match self.inst().and_then(|i| i.guard) {
            Some(p) => format!("@{p} "),
            None => String::new(),
        }
    }
}

/// One function of the module: its lines, from the end of the previous function (or the
/// module's start) to its closing `}` (so the module's header and declarations are lines of
/// the first function, and whatever follows the last `}` is a function of its own).
#[derive(Debug)]
pub(crate) struct Function<'a> {
    /// Its lines, in order.
    pub(crate) lines: Vec<PtxLine<'a>>,
}

impl<'a> Function<'a> {
    /// Parses one function's text.
    pub(crate) fn parse(text: &'a str) -> Self {
        Function {
            lines: text.split_inclusive('\n').map(PtxLine::parse).collect(),
        }
    }

    /// Its instruction lines: index, line and instruction.
    pub(crate) fn insts(&self) -> impl Iterator<Item = (usize, &PtxLine<'a>, &Inst<'a>)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(n, l)| Some((n, l, l.inst()?)))
    }

    /// Its instruction lines whose opcode is `op`.
    pub(crate) fn insts_of<'s>(
        &'s self,
        op: &'s str,
    ) -> impl Iterator<Item = (usize, &'s PtxLine<'a>, &'s Inst<'a>)> {
        self.insts().filter(move |(_, _, i)| i.op == op)
    }

    /// How many instructions write each register ([`Inst::written`]; the instructions of
    /// one-line scopes are not counted).
    pub(crate) fn write_counts(&self) -> HashMap<&'a str, usize> {
        let mut defs = HashMap::new();
        for (_, _, inst) in self.insts() {
            for r in inst.written() {
                *defs.entry(r).or_insert(0) += 1;
            }
        }
        defs
    }

    /// The instructions that read register `r` (as an operand after the destination).
    pub(crate) fn readers<'s>(
        &'s self,
        r: &'s str,
    ) -> impl Iterator<Item = (usize, &'s Inst<'a>)> + 's {
        self.insts()
            .filter(move |(_, _, i)| i.sources().contains(&r))
            .map(|(n, _, i)| (n, i))
    }
}

/// The module's text cut after each line that closes a function (`}` alone at the start of a
/// line), so that per-function facts stay in their function; the pieces cover all of it.
pub(crate) fn functions(ptx: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in ptx.split_inclusive('\n') {
        at += line.len();
        if line.trim_end() == "}" {
            pieces.push(&ptx[start..at]);
            start = at;
        }
    }
    pieces.push(&ptx[start..]);
    pieces
}

/// What a workaround does to one line of a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// Line `n` is replaced by this text (newline included where the line had one).
    Replace(usize, String),
    /// This text (whole lines) goes before line `n`.
    InsertBefore(usize, String),
}

/// `{p}mov.u32 r, %tid.x; {p}shr.u32 r, r, 16;`: a zero that ptxas cannot see as one
/// (tid.x < 1024), the run-time value behind workarounds 4, 8, 9 and 10.
pub(crate) fn tid_zero(p: &str, r: &str) -> String {
    format!("{p}mov.u32 {r}, %tid.x; {p}shr.u32 {r}, {r}, 16;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kinds_of_lines() {
        let f = Function::parse(
            "\t@!%p1 selp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n$L__BB0_2:\n\tret;\n\
             \t{ .reg .pred %cj_q; setp.nan.f32 %cj_q, %f1, %f1; @%cj_q bra $L; }\n\
             \t.reg .b32 \t%r<5>;\n\tcall.uni \n\tmov.b64 \t{%r1, %r2}, %fd1;\n\
             \t{ .reg .b64 %tmp;\n\t  cvta.to.local.u64 \t%tmp, %rd3;\n\
             \t  cvt.u32.u64 \t%r1, %tmp; }\n\t} // callseq 0",
        );
        let i = f.lines[0].inst().unwrap();
        assert_eq!(
            (i.guard, i.op, i.dest()),
            (Some("!%p1"), "selp.f32", Some("%f6"))
        );
        assert_eq!(i.sources(), ["0f00000001", "0f00000000", "%p11"]);
        assert_eq!(i.suffixes().collect::<Vec<_>>(), ["f32"]);
        assert_eq!(f.lines[0].guard_prefix(), "@!%p1 ");
        assert_eq!((f.lines[0].indent, f.lines[0].newline()), ("\t", "\n"));
        assert_eq!(f.lines[1].kind, Kind::Label("$L__BB0_2"));
        assert_eq!(f.lines[2].inst().unwrap().operands, Vec::<&str>::new());
        let Kind::Scope(scope) = &f.lines[3].kind else {
            panic!("a scope")
        };
        assert_eq!(scope.len(), 2);
        assert_eq!(scope[1].guard, Some("%cj_q"));
        assert_eq!(
            (&f.lines[4].kind, &f.lines[5].kind),
            (&Kind::Other, &Kind::Other)
        );
        let unpack = f.lines[6].inst().unwrap();
        assert_eq!(unpack.written().collect::<Vec<_>>(), ["%r1", "%r2"]);
        assert_eq!(f.lines[6].newline(), "\n");
        // A scope over three lines (LLVM's address conversions): its last line's instruction
        // writes %r1; a closing brace alone is nothing.
        assert_eq!(f.lines[7].kind, Kind::Scope(Vec::new()));
        assert_eq!(f.lines[8].inst().unwrap().op, "cvta.to.local.u64");
        let Kind::Scope(last) = &f.lines[9].kind else {
            panic!("the scope's last line")
        };
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].written().collect::<Vec<_>>(), ["%r1"]);
        assert_eq!(
            (&f.lines[10].kind, f.lines[10].newline()),
            (&Kind::Other, "")
        );
        assert_eq!(f.write_counts().get("%f6"), Some(&1));
        assert_eq!(f.readers("%fd1").count(), 1);
    }

    #[test]
    fn functions_end_at_a_closing_brace_in_the_first_column() {
        let ptx = ".func a()\n{\n\t{\n\t}\n}\n.func b()\n{\n}\n// tail";
        assert_eq!(
            functions(ptx),
            [
                ".func a()\n{\n\t{\n\t}\n}\n",
                ".func b()\n{\n}\n",
                "// tail"
            ]
        );
    }
}
