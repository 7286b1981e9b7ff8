#!/usr/bin/env python3
"""The layering rule of docs/ARCHITECTURE.md, checked on the imports of src/.

Every file under src/ belongs to one layer (its top-level module); a file may name
items of its own layer and of layers below it, never of a layer above. The layers, bottom up:

  error -> ir -> backend -> runtime types (context, stream, event, memory, graph, profiler,
  nvtx, fault_injection, ipc) -> dlpack -> module -> codegen -> ops (and random) -> sharded, nccl -> distributed

`sys` is a separate crate below all of them. lib.rs (the crate root, which re-exports) is exempt.
A path through a crate-root re-export (`crate::Error`) counts as a path to the module it comes
from. Prints every import against the rule and exits 1 if there is one; `--stats` also prints
file-level back-imports and import circles (strongly connected components).
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")

LAYERS = [
    ["error"],
    ["ir"],
    ["backend"],
    ["context", "stream", "event", "memory", "graph", "profiler", "nvtx", "fault_injection", "ipc"],
    ["dlpack"],
    ["module"],
    ["codegen"],
    ["ops", "random"],
    ["sharded", "nccl"],
    ["distributed"],
]
RANK = {m: i for i, group in enumerate(LAYERS) for m in group}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for line in text.split("\n"):
        # drop // comments (doc comments too) but keep string contents roughly
        i = line.find("//")
        if i >= 0:
            line = line[:i]
        out.append(line)
    return "\n".join(out)


def module_of(path):
    """src/backend/sim/x.rs -> ['backend','sim','x']; src/codegen/mod.rs -> ['codegen']."""
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return rel


def file_of(modpath):
    """Deepest file that holds the module path (list of idents)."""
    best = None
    for n in range(len(modpath), 0, -1):
        p = os.path.join(SRC, *modpath[:n])
        for cand in (p + ".rs", os.path.join(p, "mod.rs")):
            if os.path.isfile(cand):
                return cand
    return best


def root_reexports():
    """Crate-root names re-exported by lib.rs -> top-level module they come from."""
    text = strip_comments(open(os.path.join(SRC, "lib.rs")).read())
    out = {}
    for m in re.finditer(r"pub use\s+(\w+)::(\{[^;]*\}|[\w:]+)\s*;", text, flags=re.S):
        top, rest = m.group(1), m.group(2)
        for name in re.findall(r"\b(\w+)\b", rest):
            out.setdefault(name, top)
        out.setdefault(top, top)
    return out


def expand(prefix, body):
    """Expand a use tree body `{a::b, c::{d, e}}` into paths (lists of idents)."""
    paths = []
    depth, start, parts = 0, 0, []
    inner = body.strip()
    if not inner.startswith("{"):
        return [prefix + [p for p in inner.split("::") if p]]
    inner = inner[1:-1]
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    for part in parts:
        part = part.strip()
        if not part:
            continue
        m = re.match(r"([\w:]*?)(::)?(\{.*\})$", part, flags=re.S)
        if m and m.group(3):
            head = [p for p in m.group(1).split("::") if p]
            paths += expand(prefix + head, m.group(3))
        else:
            part = re.sub(r"\s+as\s+\w+$", "", part)
            paths.append(prefix + [p for p in part.split("::") if p])
    return paths


PATH_RE = re.compile(r"\b((?:crate|super)(?:::(?:super|self))*)::((?:\w+::)*)(\{|\w+)")


def references(path):
    """(line, module path as a list of idents) for each crate path the file names."""
    text = strip_comments(open(path).read())
    here = module_of(path)
    # a mod.rs / top-level file is its own module; `super` of a file foo.rs is its parent
    refs = []
    for m in PATH_RE.finditer(text):
        head, mids, last = m.group(1), m.group(2), m.group(3)
        segs = head.split("::")
        if segs[0] == "crate":
            base = []
        else:
            base = list(here)
            for s in segs:
                if s == "super":
                    base = base[:-1]
        mid = [p for p in mids.split("::") if p]
        line = text.count("\n", 0, m.start()) + 1
        if last == "{":
            # find the balanced body
            i, depth = m.end() - 1, 0
            for j in range(i, len(text)):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
            for p in expand(base + mid, text[i : j + 1]):
                refs.append((line, p))
        else:
            refs.append((line, base + mid + [last]))
    return refs


def top_module(modpath, reexp):
    if not modpath:
        return None
    first = modpath[0]
    if first in RANK:
        return first
    if first in reexp:
        return reexp[first]
    return None


def main():
    stats = "--stats" in sys.argv
    reexp = root_reexports()
    files = []
    for d, _, fs in os.walk(SRC):
        for f in fs:
            if f.endswith(".rs"):
                files.append(os.path.join(d, f))
    files.sort()
    bad = []
    edges = {}
    for f in files:
        here = module_of(f)
        if not here:
            continue  # lib.rs
        src_top = here[0]
        if src_top not in RANK:
            bad.append(f"{os.path.relpath(f, ROOT)}: module `{src_top}` is in no layer (add it to LAYERS)")
            continue
        for line, p in references(f):
            top = top_module(p, reexp)
            if top is None:
                continue
            target = file_of(p) if p[0] in RANK else file_of([top])
            if target and target != f:
                edges.setdefault(f, set()).add(target)
            if RANK[top] > RANK[src_top]:
                bad.append(
                    f"{os.path.relpath(f, ROOT)}:{line}: `{src_top}` (layer {RANK[src_top]}) imports "
                    f"`{'::'.join(p)}` from `{top}` (layer {RANK[top]}, above it)"
                )
    bad = sorted(set(bad))
    for b in bad:
        print(b)
    if stats:
        back = sum(
            1
            for f, ts in edges.items()
            for t in ts
            if RANK.get(module_of(t)[0] if module_of(t) else "", -1) > RANK[module_of(f)[0]]
        )
        sccs = tarjan(edges)
        circles = [c for c in sccs if len(c) > 1]
        print(f"files: {len(files)}; file-level imports against the layering: {back}; "
              f"import circles: {len(circles)} (largest {max((len(c) for c in circles), default=0)} files)")
        for c in sorted(circles, key=len, reverse=True):
            print(f"  circle of {len(c)}: " + " ".join(sorted(os.path.relpath(x, SRC) for x in c)))
    if bad:
        print(f"\n{len(bad)} import(s) against the layering rule (docs/ARCHITECTURE.md)", file=sys.stderr)
        return 1
    print("layering: ok (no import runs up the layers)")
    return 0


def tarjan(edges):
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = set(edges) | {t for ts in edges.values() for t in ts}
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
