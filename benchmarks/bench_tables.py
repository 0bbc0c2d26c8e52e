"""The cost of a tensor table (issue 27): :func:`wgtpm.tensors.compute_table` of a
safetensors file against ``openssl dgst -sha256`` of the same file, taken in turns,
page cache warm for both.

The file is SIZE MiB of random bytes as ``TENSORS`` F32 tensors of equal size, written
in a temporary directory (the header by hand: no safetensors library needed).
``compute_table`` reads the file once, hashing the whole file and each tensor's range
(the whole-file hash on a second thread), in this process: no interpreter start-up in
its time. ``openssl dgst -sha256`` is a fresh process per run, as a user would run it.

Printed: each side's range of times, the ratio of the best times and the range of the
per-run ratios.

Run: ``.venv/bin/python benchmarks/bench_tables.py [--size-mib 1024] [--tensors 256]
[--runs 3]`` (a test-sized run: ``--size-mib 64``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import times_in_turns
from wgtpm.tensors import compute_table

MiB = 1 << 20


def make_file(path: Path, size_mib: int, tensors: int) -> None:
    """A safetensors file of ``tensors`` F32 tensors, ``size_mib`` MiB of data in all."""
    per = size_mib * MiB // tensors // 4 * 4
    header = {
        f"model.layers.{i}.weight": {
            "dtype": "F32",
            "shape": [per // 4],
            "data_offsets": [i * per, (i + 1) * per],
        }
        for i in range(tensors)
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little") + raw)
        left = per * tensors
        j = 0
        while left:
            n = min(left, MiB)
            f.write((block[j % 997 :] + block[: j % 997])[:n])  # no two MiB alike
            left -= n
            j += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--tensors", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tables-") as tmp:
        path = Path(tmp) / "model.safetensors"
        make_file(path, args.size_mib, args.tensors)
        cmd = ["openssl", "dgst", "-sha256", str(path)]
        ours = compute_table(path, "model.safetensors")  # warms the page cache, checks it
        want = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert want.split()[-1] == ours.sha256, "compute_table's sha256 is not openssl's"
        assert len(ours.tensors) == args.tensors

        def openssl() -> None:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)

        def table() -> None:
            compute_table(path, "model.safetensors")

        t_table, t_ssl = times_in_turns(args.runs, table, openssl)
    ratios = [a / b for a, b in zip(t_table, t_ssl, strict=True)]
    print(
        f"{args.size_mib} MiB, {args.tensors} tensors, {args.runs} runs, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(f"compute_table        {min(t_table):.2f}-{max(t_table):.2f} s")
    print(f"openssl dgst -sha256 {min(t_ssl):.2f}-{max(t_ssl):.2f} s")
    print(
        f"ratio {min(t_table) / min(t_ssl):.2f}x of the best times "
        f"({min(ratios):.2f}-{max(ratios):.2f} per run)"
    )


if __name__ == "__main__":
    main()
