#!/usr/bin/env python3
"""The GPU tests that do not apply on the simulator, found where they are marked: a test of
tests/gpu whose ignore reason says so,

    #[ignore = "needs a CUDA GPU; not on the simulator: <why>"]

Prints one line per test: its path as libtest names it (`module::name`), a tab, and the reason.
scripts/test.sh runs tests/gpu on the simulator skipping exactly these.
"""
import os
import re
import sys

GPU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu")
MARK = re.compile(
    r'#\[ignore\s*=\s*"[^"]*?;\s*not on the simulator:\s*((?:[^"\\]|\\.)*)"\]\s*\n'
    r"(?:\s*(?:#\[[^\n]*\]|///[^\n]*)\n)*\s*(?:pub\s+)?fn\s+(\w+)"
)


def main():
    found = []
    for name in sorted(os.listdir(GPU)):
        if not name.endswith(".rs") or name == "main.rs":
            continue
        module = name[:-3]
        text = open(os.path.join(GPU, name)).read()
        for m in MARK.finditer(text):
            found.append((f"{module}::{m.group(2)}", m.group(1).replace('\\"', '"')))
        # A marker this pattern did not pair with a test is a mistake worth failing on.
        if text.count("not on the simulator:") != sum(1 for _ in MARK.finditer(text)):
            print(f"sim-skips: {name}: a `not on the simulator:` mark is not on a test", file=sys.stderr)
            return 1
    for path, why in found:
        print(f"{path}\t{why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
