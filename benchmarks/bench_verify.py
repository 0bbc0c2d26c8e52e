"""``wgtpm verify`` of a cached 1 GiB module against ``openssl dgst -sha256`` of the same
bytes (issue 15: within 1.2x of its time), taken in turns, page cache warm for both.

Two shapes of module, each 1 GiB of random bytes published in a proxy tree and fetched
into a fresh cache with ``wgtpm get`` (``WGTPROXY=file://``):

- ``one``: a single 1 GiB file;
- ``shards``: 8 files of 128 MiB (a sharded checkpoint).

``openssl dgst -sha256`` hashes the module's files in the cache, all in one process, on
one core (coreutils ``sha256sum`` may lack the CPU's SHA extensions, so it is the wrong
yardstick). ``wgtpm verify`` (whole command: start-up, wgt.sum, the index, every file)
runs with ``WGTPROXY=off``. Both read through the page cache, which holds the files
(each is read once before timing); the cold case needs dropping the page cache
(``/proc/sys/vm/drop_caches``), which takes root and disturbs every other process on
the machine, so it is not measured here.

Printed: each command's range of times, the ratio of the best times and the range of
the per-run ratios.

Run: ``.venv/bin/python benchmarks/bench_verify.py [--runs 7] [--size-mib 1024]
[--only one shards]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import publish_files, times_in_turns
from wgtpm.proxytree import ProxyTree

MiB = 1 << 20
TARGET = 1.2


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr.decode(errors='replace')}")


def make_module(tmp: Path, name: str, size_mib: int, count: int) -> tuple[Path, list[Path]]:
    """Publish ``count`` random files of ``size_mib`` in all as example.com/NAME, get it into a
    fresh cache; the project that requires it, and the module's files in the cache."""
    src = tmp / f"src-{name}"
    src.mkdir()
    files = {"wgt.mod": src / "wgt.mod"}
    files["wgt.mod"].write_bytes(f"module example.com/{name}\n".encode())
    block = os.urandom(MiB)
    for i in range(count):
        f = src / f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        with open(f, "wb") as out:
            for j in range(size_mib // count):
                out.write(block[j % 997 :] + block[: j % 997])  # no two MiB alike
        files[f.name] = f
    tree = ProxyTree(tmp / f"tree-{name}")
    publish_files(tree, f"example.com/{name}", "v0.1.0", files)
    for f in files.values():
        f.unlink()
    proj = tmp / f"app-{name}"
    proj.mkdir()
    (proj / "wgt.mod").write_text("module example.com/app\n")
    env = {
        **os.environ,
        "WGTPM_CACHE": str(tmp / "cache"),
        "WGTPROXY": tree.url,
    }
    run([sys.executable, "-m", "wgtpm", "get", "-q", f"example.com/{name}@v0.1.0"], proj, env)
    cached = sorted(
        (tmp / "cache" / "mod" / "example.com" / f"{name}@v0.1.0").glob("*.safetensors")
    )
    assert len(cached) == count, cached
    return proj, cached


def compare(tmp: Path, name: str, size_mib: int, count: int, runs: int) -> None:
    proj, cached = make_module(tmp, name, size_mib, count)
    env = {**os.environ, "WGTPM_CACHE": str(tmp / "cache"), "WGTPROXY": "off"}
    wgtpm = [sys.executable, "-m", "wgtpm", "verify"]
    openssl = ["openssl", "dgst", "-sha256", *map(str, cached)]
    run(wgtpm, proj, env)  # warm: the page cache, and the bytecode
    run(openssl, proj, env)
    ours, peer = times_in_turns(
        runs, lambda: run(wgtpm, proj, env), lambda: run(openssl, proj, env)
    )
    ratios = [a / b for a, b in zip(ours, peer, strict=True)]
    best = min(ours) / min(peer)
    ok = "met" if best <= TARGET else "NOT MET"
    what = f"{size_mib} MiB in {count} file{'s' if count > 1 else ''}"
    print(f"{what}, page cache warm:")
    print(
        f"  wgtpm verify {min(ours):.2f}-{max(ours):.2f} s "
        f"({size_mib / min(ours):.0f} MiB/s at best), openssl dgst -sha256 "
        f"{min(peer):.2f}-{max(peer):.2f} s ({size_mib / min(peer):.0f} MiB/s)"
    )
    print(
        f"  ratio {best:.2f}x (best), {min(ratios):.2f}-{max(ratios):.2f}x (per run); "
        f"target: within {TARGET}x ({ok})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7, help="runs of each command, taken in turns")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--only", nargs="*", default=["one", "shards"], choices=["one", "shards"])
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench_verify.") as d:
        for name in args.only:
            count = 1 if name == "one" else 8
            compare(Path(d), name, args.size_mib, count, args.runs)
    print(f"(took {time.perf_counter() - t0:.0f}s, load {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
