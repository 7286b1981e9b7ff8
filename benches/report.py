#!/usr/bin/env python3
"""Renders the benchmark's JSON lines (bench.rs's and peers.py's, merged) as one table:
per workload, our time and bandwidth, each peer's best time, our speed over the best peer's
(>1: we are faster), our bandwidth as a percentage of the device-to-device copy rate measured
in the same run, and whether the project's bar (docs/BENCHMARKS.md) is met.

    python3 benches/report.py RESULTS.jsonl [MORE.jsonl ...] [--markdown OUT.md] [--json OUT.jsonl]

Lines that are not JSON objects are ignored. Reads standard input when no file is given.
"""

import argparse
import json
import re
import sys

WORKS = [
    "copy",
    "add",
    "axpy",
    "chain",
    "add_f64",
    "bcast_add",
    "sum",
    "max",
    "argmax",
    "row_sum",
    "col_sum",
    "scan",
    "scan_i32",
    "launch",
    "compile_cold",
    "compile_cached",
    "compile_new_process",
    "graph",
    "pool",
    "h2d_pinned",
    "d2h_pinned",
    "h2d_pageable",
    "d2h_pageable",
    "peer_copy",
    "all_reduce",
    "sum_1gpu",
    "sum_sharded",
    "add_1gpu",
    "add_sharded",
    "scan_1gpu",
    "scan_sharded",
    "all_reduce_procs",
    "sum_procs",
    "add_procs",
    "all_reduce_sockets",
    "sum_sockets",
    "add_sockets",
]
OURS = "cudajit"
PEERS = ["torch", "cupy", "numba"]
ELEMENTWISE = {"add", "axpy", "chain", "add_f64", "bcast_add"}
TRANSFERS = {"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"}
# The multi-GPU rows: their own table (device count, topology, bus bandwidth, scaling).
MULTI = ["peer_copy", "all_reduce", "sum_1gpu", "sum_sharded", "add_1gpu", "add_sharded",
         "scan_1gpu", "scan_sharded", "all_reduce_procs", "sum_procs", "add_procs",
         "all_reduce_sockets", "sum_sockets", "add_sockets"]
# A sharded row and its one-GPU baseline (the two-process rows too: ours over ours).
SHARDED = {"sum_sharded": "sum_1gpu", "add_sharded": "add_1gpu", "scan_sharded": "scan_1gpu",
           "sum_procs": "sum_1gpu", "add_procs": "add_1gpu",
           "sum_sockets": "sum_1gpu", "add_sockets": "add_1gpu"}
# Our two-process rows (each side two processes, one GPU each) whose torch column is
# torch.distributed's row of another name in the same run (peers.py runs torch one way).
TORCH_FROM = {"all_reduce_procs": "all_reduce", "sum_procs": "sum_sharded",
              "add_procs": "add_sharded"}
# The all-reduce rows: busbw, held to torch's rate.
ALL_REDUCE = {"all_reduce", "all_reduce_procs", "all_reduce_sockets"}
# The sharded rows' bar: at least this speed-up over one GPU (issue 12), for the rows that
# have one (a sharded scan reads its shards twice: no bar, the scaling is shown).
SHARDED_BAR = 1.95
SHARDED_BARRED = {"sum_sharded", "add_sharded", "sum_procs", "add_procs", "sum_sockets",
                  "add_sockets"}


def load(paths):
    recs = []
    streams = [open(p) for p in paths] if paths else [sys.stdin]
    for f in streams:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and "work" in r:
                recs.append(r)
    return recs


def ok(r):
    return r.get("error") is None and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0


def gbs(r):
    """GB/s (10^9 bytes per second) of a record with bytes, else None."""
    b = r.get("bytes")
    if not b or not ok(r):
        return None
    return b / (r["ms"] * 1e-3) / 1e9


def best(recs):
    """The fastest successful record, or None."""
    good = [r for r in recs if ok(r)]
    return min(good, key=lambda r: r["ms"]) if good else None


def status(recs):
    """The cell of an implementation without a measurement: "skip" when every record of it
    is a skip (the machine cannot run the row), "error" when one failed, "-" when none."""
    if not recs:
        return "-"
    if all(r.get("skip") is not None for r in recs):
        return "skip"
    return "error"


def fmt_time(ms, unit):
    if ms is None:
        return "-"
    if unit == "us":
        return "%.2f us" % (ms * 1e3)
    if ms < 0.1:
        return "%.1f us" % (ms * 1e3)
    if ms < 10:
        return "%.3f ms" % ms
    return "%.1f ms" % ms


def fmt_gbs(v):
    return "-" if v is None else "%.0f" % v if v >= 100 else "%.1f" % v


def fmt_rate(r, g):
    """The rate column: TFLOP/s for a record with flops (matrix products), else GB/s."""
    if r is not None and ok(r) and r.get("flops"):
        return "%.1f TFLOP/s" % (r["flops"] / (r["ms"] * 1e-3) / 1e12)
    return fmt_gbs(g)


class Row:
    def __init__(self, work, size, recs):
        self.work, self.size = work, size
        self.recs = recs
        self.ours_all = [r for r in recs if r.get("impl") == OURS]
        self.ours = best(self.ours_all)
        self.peer = {p: best([r for r in recs if r.get("impl") == p]) for p in PEERS}
        self.peer_tried = {p: any(r.get("impl") == p for r in recs) for p in PEERS}
        self.unit = next((r.get("unit") for r in recs if r.get("unit")), None)
        peers = [r for r in self.peer.values() if r is not None]
        self.best_peer = min(peers, key=lambda r: r["ms"]) if peers else None

    def ratio(self, other=None):
        """Our speed over `other`'s (default: the best peer): >1 means we are faster."""
        o = other if other is not None else self.best_peer
        if self.ours is None or o is None:
            return None
        return o["ms"] / self.ours["ms"]


def bar(row, copy_gbs):
    """Whether the project's bar is met: 'ok', 'MISS: why', or '-' (no bar, or no data)."""
    w, ours = row.work, row.ours
    if ours is None:
        return "-"
    g = gbs(ours)
    pct = g / copy_gbs * 100 if g is not None and copy_gbs else None
    misses = []
    if w in ELEMENTWISE:
        t = row.ratio(row.peer["torch"])
        if t is None:
            return "- (no torch)"
        if t < 1:
            misses.append("%.2fx torch" % t)
        # The broadcast add moves a copy's bytes (read one matrix, write one): the copy rate
        # is its ceiling, so it is held to the copy rate within 3% (run-to-run noise).
        floor = 97 if w == "bcast_add" else 100
        if pct is None:
            misses.append("no copy rate")
        elif pct < floor:
            misses.append("%.1f%% of copy" % pct)
    elif w in ("sum", "max", "argmax"):
        c = row.ratio(row.peer["cupy"])
        if c is None:
            return "- (no cupy)"
        if c < 1:
            misses.append("%.2fx cupy" % c)
    elif w in ("row_sum", "col_sum"):
        # The bar (docs/ANCHORS): at least the best peer, and 90% of the copy rate.
        b = row.ratio()
        if b is not None and b < 1:
            misses.append("%.2fx the best peer" % b)
        if pct is None:
            return "- (no copy rate)"
        if pct < 90:
            misses.append("%.0f%% of copy < 90%%" % pct)
    elif w in ("scan", "scan_i32"):
        b = row.ratio()
        if b is None:
            return "- (no peer)"
        if b < 1:
            misses.append("%.2fx the best peer" % b)
        if pct is None:
            misses.append("no copy rate")
        elif pct < 90:
            misses.append("%.0f%% of copy < 90%%" % pct)
    elif w == "launch":
        us = ours["ms"] * 1e3
        if us > 2:
            misses.append("%.2f us > 2 us" % us)
    elif w == "compile_cold":
        n = row.ratio(row.peer["numba"])
        if n is None:
            return "- (no numba)"
        if n < 4:
            misses.append("%.2fx numba < 4x" % n)
    elif w == "compile_cached":
        c = row.ratio(row.peer["cupy"])
        if c is None:
            return "- (no cupy)"
        if c < 1:
            misses.append("%.2fx cupy" % c)
    elif w == "compile_new_process":
        if ours["ms"] > 0.1:
            misses.append("%.3f ms > 0.1 ms" % ours["ms"])
    elif w == "graph":
        us = ours["ms"] * 1e3
        if us > 1:
            misses.append("%.2f us > 1 us per kernel" % us)
        t = row.ratio(row.peer["torch"])
        if t is not None and t < 1:
            misses.append("%.2fx torch" % t)
    elif w == "pool":
        b = row.ratio()
        if b is None:
            return "- (no peer)"
        if b < 1:
            misses.append("%.2fx the best peer" % b)
    elif w in ("h2d_pinned", "d2h_pinned"):
        t = row.ratio(row.peer["torch"])
        if t is None:
            return "- (no torch)"
        if t < 0.97:  # "at torch's rate", within 3% noise
            misses.append("%.2fx torch" % t)
    elif w == "h2d_pageable":
        t = row.ratio(row.peer["torch"])
        if t is None:
            return "- (no torch)"
        if t < 2:
            misses.append("%.2fx torch < 2x" % t)
    else:
        return "-"
    return "MISS: " + ", ".join(misses) if misses else "ok"


def table(headers, rows, align):
    """A markdown table with padded columns (readable as plain text too)."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]

    def line(cells):
        out = []
        for c, w, a in zip(cells, widths, align):
            c = str(c)
            out.append(c.rjust(w) if a == "r" else c.ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2))
                         for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def row_gbs(r):
    """A row's GB/s: the all-reduce's bus bandwidth where the record has one, else bytes/time."""
    if r is None or not ok(r):
        return None
    if isinstance(r.get("busbw_gbs"), (int, float)):
        return r["busbw_gbs"]
    return gbs(r)


def multi_bar(row, base):
    """The multi-GPU bars: peer copy and all-reduce at least torch's rate in the same run;
    a sharded row at least SHARDED_BAR times its one-GPU baseline (ours over ours)."""
    if row.ours is None:
        return "-"
    if row.work not in SHARDED.values() and row.ours.get("devices") == 1:
        return "- (one device: a rehearsal, --gpus 1)"
    if row.work == "peer_copy" or row.work in ALL_REDUCE:
        t = row.ratio(row.peer["torch"])
        if t is None:
            return "- (no torch)"
        return "ok" if t >= 1 else "MISS: %.2fx torch" % t
    if row.work in SHARDED:
        if row.work not in SHARDED_BARRED:
            return "-"
        if base is None or base.ours is None:
            return "- (no one-GPU row)"
        sc = base.ours["ms"] / row.ours["ms"]
        return "ok" if sc >= SHARDED_BAR else "MISS: %.2fx one GPU < %.2fx" % (sc, SHARDED_BAR)
    return "-"


def multi_section(rows, topo):
    """The multi-GPU table: per row, the device count, our time and GB/s (all-reduce: busbw),
    torch's and CuPy's, the ratio (torch's time / ours), the speed-up of a sharded row over its
    one-GPU row (ours; torch's), and the bar; then the topology."""
    out = ["", "## Multi-GPU", ""]
    devices = sorted({r.get("devices") for row in rows for r in row.recs
                      if ok(r) and isinstance(r.get("devices"), int)})
    out.append("- devices used by the rows: %s" % (", ".join(map(str, devices)) or "none measured"))
    skips = sorted({r["skip"] for row in rows for r in row.recs if r.get("skip")})
    for s in skips:
        out.append("- skipped: %s" % s)
    out += ["- GB/s: peer_copy counts bytes moved; all_reduce shows nccl-tests' bus bandwidth "
            "(busbw = bytes / time * 2(n-1)/n); sum and add count bytes read + written. "
            "ratio = torch's time / ours (>1: cudajit is faster); scaling = the one-GPU row's time "
            "/ the sharded row's, each side its own.", ""]
    by_key = {(row.work, row.size): row for row in rows}
    headers = ["work", "size", "GPUs", "cudajit", "GB/s", "torch", "GB/s", "cupy", "GB/s",
               "ratio", "scaling (ours; torch)", "bar"]
    body = []
    for row in rows:
        cells = [row.work, row.size]
        devs = {r.get("devices") for r in row.recs if ok(r) and r.get("devices")}
        cells.append("/".join(str(d) for d in sorted(devs)) or "-")
        for recs, best_rec in ((row.ours_all, row.ours), ) + tuple(
                ([r for r in row.recs if r.get("impl") == p], row.peer[p]) for p in ("torch", "cupy")):
            if best_rec is not None:
                cells += [fmt_time(best_rec["ms"], row.unit), fmt_gbs(row_gbs(best_rec))]
            else:
                cells += [status(recs), "-"]
        t = row.ratio(row.peer["torch"])
        cells.append("-" if t is None else "%.2fx" % t)
        base = by_key.get((SHARDED.get(row.work), row.size))
        sc = "-"
        if row.work in SHARDED and base is not None:
            parts = []
            for mine, one in ((row.ours, base.ours), (row.peer["torch"], base.peer["torch"])):
                parts.append("%.2fx" % (one["ms"] / mine["ms"]) if mine and one else "-")
            sc = "; ".join(parts)
        cells += [sc, multi_bar(row, base)]
        body.append(cells)
    out.append(table(headers, body, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "l"]))
    if topo:
        out += ["", "Topology (`nvidia-smi topo -m`, saved by bench.sh):", "", "```"]
        out += [line.rstrip() for line in topo.rstrip().splitlines()]
        out.append("```")
    return out


def size_key(size):
    """Sorts size labels by magnitude ("4 MiB" before "16 MiB" before "1 GiB"), then by text."""
    m = re.match(r"(\d+) (MiB|GiB)", size)
    if m:
        return (0, int(m.group(1)) << (20 if m.group(2) == "MiB" else 30), size)
    m = re.match(r"2\^(\d+)", size)
    if m:
        return (0, 1 << int(m.group(1)), size)
    return (1, 0, size)


def render(recs, topo=None):
    env = [r for r in recs if r.get("work") == "_env"]
    data = [r for r in recs if r.get("work") != "_env"]
    groups = {}
    for r in data:
        groups.setdefault((r["work"], r.get("size", "?")), []).append(r)
    # torch.distributed's rows also stand in the two-process rows named after them.
    for alias, base in TORCH_FROM.items():
        for (w, size), recs in list(groups.items()):
            if w == base and any(k == (alias, size) for k in groups):
                groups[(alias, size)] += [dict(r, work=alias) for r in recs
                                          if r.get("impl") == "torch"]
    order = {w: i for i, w in enumerate(WORKS)}
    keys = sorted(groups, key=lambda k: (order.get(k[0], len(WORKS)), k[0], size_key(k[1])))
    rows = [Row(w, s, groups[(w, s)]) for w, s in keys]

    # The ceiling: our device-to-device copy in this run, else the best peer's.
    copy_gbs, copy_src = None, None
    for row in rows:
        if row.work == "copy":
            if row.ours is not None:
                copy_gbs, copy_src = gbs(row.ours), "cudajit " + (row.ours.get("variant") or "copy")
            elif row.best_peer is not None:
                copy_gbs = gbs(row.best_peer)
                copy_src = "%s %s" % (row.best_peer["impl"], row.best_peer.get("variant") or "")

    out = ["# cudajit vs torch, CuPy, numba-cuda", ""]
    for r in env:
        who = r.get("impl", "?")
        text = " ".join(str(r.get("note") or r.get("error") or "").split())
        out.append("- %s: %s" % (who, text))
    if copy_gbs:
        out.append("- copy rate (the ceiling): %.0f GB/s, %s" % (copy_gbs, copy_src.strip()))
    out += [
        "",
        "ratio = best peer's time / ours (>1: cudajit is faster); % copy = our GB/s over the "
        "copy rate; peers show their fastest variant. GB/s counts bytes read + written "
        "(transfers: bytes moved); matrix products show TFLOP/s (2·M·N·K per product) "
        "instead, and their ratio is to cuBLAS (torch.matmul, cupy.matmul).",
        "",
    ]
    headers = ["work", "size", "cudajit", "GB/s", "torch", "cupy", "numba", "ratio", "% copy", "bar"]
    body = []
    for row in rows:
        if row.work in MULTI:
            continue
        unit = row.unit
        ours = row.ours
        if ours is not None:
            ours_t = fmt_time(ours["ms"], unit)
        else:
            ours_t = status(row.ours_all)
        g = gbs(ours) if ours else None
        peers = []
        for p in PEERS:
            pr = row.peer[p]
            if pr is not None:
                peers.append(fmt_time(pr["ms"], unit))
            else:
                peers.append(status([r for r in row.recs if r.get("impl") == p]))
        ratio = row.ratio()
        pct = "-"
        if g is not None and copy_gbs and row.work not in TRANSFERS:
            pct = "%.0f%%" % (g / copy_gbs * 100)
        body.append([row.work, row.size, ours_t, fmt_rate(ours, g)] + peers +
                    ["-" if ratio is None else "%.2fx" % ratio, pct, bar(row, copy_gbs)])
    if body:
        out.append(table(headers, body, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "l"]))
    multi = [row for row in rows if row.work in MULTI]
    if multi:
        out += multi_section(multi, topo)

    # Every record: variants, notes, errors.
    out += ["", "## Every measurement", ""]
    det = []
    for row in rows:
        for r in sorted(row.recs, key=lambda r: (r.get("impl") != OURS, r.get("impl", ""),
                                                 r.get("ms") if ok(r) else 1e30)):
            what = r.get("error")
            if what is not None:
                what = "ERROR: " + what
            elif r.get("skip") is not None:
                what = "SKIP: " + r["skip"]
            else:
                what = r.get("note") or ""
                if ok(r) and r.get("min_ms") is not None and r.get("max_ms") is not None:
                    spread = "min %s, max %s, n=%s" % (fmt_time(r["min_ms"], row.unit),
                                                       fmt_time(r["max_ms"], row.unit),
                                                       r.get("reps", "?"))
                    what = spread + ("; " + what if what else "")
            det.append([row.work, row.size, r.get("impl", "?"), r.get("variant") or "",
                        fmt_time(r["ms"], row.unit) if ok(r) else "-",
                        fmt_rate(r, row_gbs(r)), what.replace("|", "/")])
    out.append(table(["work", "size", "impl", "variant", "time", "GB/s", "notes"], det,
                     ["l", "l", "l", "l", "r", "r", "l"]))
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", help="JSON-lines files (default: standard input)")
    p.add_argument("--markdown", help="also write the report here")
    p.add_argument("--json", help="also write the merged records here, one per line")
    p.add_argument("--summary-only", action="store_true", help="leave out the per-measurement table")
    p.add_argument("--topo", help="a file with the GPU topology and count (bench.sh's topo.txt), "
                   "shown under the multi-GPU table")
    a = p.parse_args(argv)
    recs = load(a.files)
    if not recs:
        print("report.py: no records", file=sys.stderr)
        return 1
    topo = None
    if a.topo:
        try:
            with open(a.topo) as f:
                topo = f.read()
        except OSError as e:
            topo = "(could not read %s: %s)" % (a.topo, e)
    text = render(recs, topo)
    if a.summary_only:
        text = text.split("\n## Every measurement")[0] + "\n"
    sys.stdout.write(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(render(recs, topo))
    if a.json:
        with open(a.json, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
