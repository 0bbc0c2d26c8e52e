"""Peak memory of a cold ``wgtpm get``, whatever the size of the file or the repository
(issue 15: under 200 MB), against ``huggingface_hub.snapshot_download`` of the same
repositories in the same run, taken in turns, each command in a fresh process and cache.

Repositories:

- ``big``: one 4 GiB file (``model.safetensors``, LFS on the Hub). It is a sparse file
  on disk (a random first MiB, zeros after it); the Hub serves it from a memory map, so
  the servers do not hold 4 GiB either;
- ``many``: 20,000 files of 1 to 3 KB in 20 folders, none in LFS.

Sources, all on loopback, served by a separate server process so that its memory and
CPU are not the clients':

- ``hf``: the Hugging Face-compatible Hub of ``tests/servers`` with its CDN
  (``WGTPROXY=direct``, ``hf.co/bench/NAME``); ``snapshot_download`` fetches the same;
- ``proxy``: a proxy-protocol tree (``wgtpm.proxytree``) behind the sendfile static server
  of ``benchmarks/_common.py``;
- ``file``: the same tree as ``WGTPROXY=file://...``.

The peak is the kernel's ``ru_maxrss`` of each command, taken with ``wait4`` when it
exits (so no spike between two polls is missed). ``python -m wgtpm --version`` is measured
too: the interpreter and wgtpm's imports, the floor under every get. The files written
(about 8 GiB a run for ``big``) are removed after each command.

Run: ``.venv/bin/python benchmarks/bench_memory.py [--runs 2] [--only big many]
[--sources hf proxy file] [--big-gib 4] [--files 20000]``
"""

from __future__ import annotations

import argparse
import mmap
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import peak_rss, publish_files, static_server

MB = 1_000_000
MiB = 1 << 20
TARGET = 200 * MB
SNAPSHOT = (
    "import sys; from huggingface_hub import snapshot_download; "
    "snapshot_download(sys.argv[1], revision=sys.argv[2], cache_dir=sys.argv[3])"
)


def many_files(count: int) -> dict[str, bytes]:
    rng = random.Random(15)
    return {
        f"d{i % 20:02d}/f{i:05d}.json": rng.randbytes(rng.randint(1000, 3000)) for i in range(count)
    }


def serve(tmp: Path, big_bytes: int, count: int, conn: Connection) -> None:
    """The server process: build the repositories, send their URLs, serve until told to stop."""
    from tests.servers import CdnServer
    from tests.servers.huggingface import HuggingFaceServer
    from wgtpm.proxytree import ProxyTree

    src = tmp / "src"
    src.mkdir()
    big = src / "model.safetensors"
    with open(big, "wb") as f:
        f.write(os.urandom(MiB))
        f.truncate(big_bytes)  # sparse: no disk and no page cache until read
    (src / "wgt.mod").write_bytes(b"module example.com/big\n")
    tree = ProxyTree(tmp / "tree")
    publish_files(
        tree,
        "example.com/big",
        "v0.1.0",
        {"wgt.mod": src / "wgt.mod", "model.safetensors": big},
    )
    many = many_files(count)
    tree.add("example.com/many", "v0.1.0", many)
    with open(big, "rb") as f:
        view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    with CdnServer() as cdn, HuggingFaceServer(cdn) as hf, static_server(tree.root) as proxy:
        for name, files in (("big", {"model.safetensors": view}), ("many", many)):
            repo = hf.repo("bench", name)
            repo.commit(files)  # type: ignore[arg-type]  # a memoryview serves as bytes here
            repo.tag("v0.1.0")
        del many
        for repo in hf.repos.values():  # hash now, not during the first timed listing
            for commit in repo.commits.values():
                for blob in commit.files.values():
                    _ = blob.oid, blob.sha256
        conn.send({"hf": hf.url, "proxy": proxy, "file": tree.url})
        conn.recv()  # stop


class Runner:
    """Runs each command cold (fresh cache, fresh project) and returns its peak RSS."""

    def __init__(self, tmp: Path, urls: dict[str, str]) -> None:
        self.tmp, self.urls = tmp, urls
        env = {**os.environ, "HF_ENDPOINT": urls["hf"]}
        env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "NETRC", "WGTFLAGS", "WGTSUMDB"):
            env.pop(var, None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed wgtpm has its bytecode compiled
        self.env = env

    def _fresh(self) -> Path:
        work = self.tmp / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        return work

    def wgtpm(self, source: str, name: str) -> tuple[int, float]:
        work = self._fresh()
        proj = work / "app"
        proj.mkdir()
        (proj / "wgt.mod").write_text("module example.com/app\n")
        env = {**self.env, "WGTPM_CACHE": str(work / "cache"), "HF_HOME": str(work / "hf")}
        if source == "hf":
            env["WGTPROXY"], target = "direct", f"hf.co/bench/{name}@v0.1.0"
        else:
            env["WGTPROXY"], target = self.urls[source], f"example.com/{name}@v0.1.0"
        try:
            return peak_rss([sys.executable, "-m", "wgtpm", "get", "-q", target], proj, env)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def snapshot(self, name: str) -> tuple[int, float]:
        work = self._fresh()
        env = {**self.env, "HF_HOME": str(work / "home")}
        cmd = [sys.executable, "-c", SNAPSHOT, f"bench/{name}", "v0.1.0", str(work / "cache")]
        try:
            return peak_rss(cmd, work, env)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def floor(self) -> tuple[int, float]:
        return peak_rss([sys.executable, "-m", "wgtpm", "--version"], self.tmp, self.env)


def _mb(peaks: list[int]) -> str:
    lo, hi = min(peaks) / MB, max(peaks) / MB
    return f"{hi:.0f} MB" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} MB"


def _secs(times: list[float]) -> str:
    return f"{min(times):.1f}-{max(times):.1f} s" if len(times) > 1 else f"{times[0]:.1f} s"


def compare(run: Runner, name: str, args: argparse.Namespace) -> None:
    """Peak RSS of ``wgtpm get`` from each source and of snapshot_download, for repo ``name``."""
    what = f"one {args.big_gib:g} GiB file" if name == "big" else f"{args.files} files"
    cmds = [(f"wgtpm get ({s})", lambda s=s: run.wgtpm(s, name)) for s in args.sources]
    if "hf" in args.sources:
        cmds.append(("snapshot_download (hf)", lambda: run.snapshot(name)))
    results: list[list[tuple[int, float]]] = [[] for _ in cmds]
    for _ in range(args.runs):  # in turns, so that all meet the same machine
        for i, (_label, fn) in enumerate(cmds):
            results[i].append(fn())
    print(f"{what}:")
    peer = max(p for p, _ in results[-1]) if "hf" in args.sources else None
    for (label, _fn), res in zip(cmds, results, strict=True):
        peaks = [p for p, _ in res]
        line = f"  {label:24} peak {_mb(peaks):>12}, {_secs([t for _, t in res])}"
        if label.startswith("wgtpm"):
            ok = "met" if max(peaks) < TARGET else "NOT MET"
            line += f"; {max(peaks) / TARGET:.2f}x the target ({ok})"
            if peer is not None:
                line += f", {max(peaks) / peer:.2f}x snapshot_download"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2, help="runs of each command, taken in turns")
    ap.add_argument("--only", nargs="*", default=["big", "many"], choices=["big", "many"])
    ap.add_argument("--sources", nargs="*", default=["hf", "proxy", "file"])
    ap.add_argument("--big-gib", type=float, default=4.0)
    ap.add_argument("--files", type=int, default=20_000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}; peak RSS of each command (target: under "
        f"{TARGET / MB:.0f} MB for wgtpm)"
    )
    with tempfile.TemporaryDirectory(prefix="bench_memory.") as d:
        tmp = Path(d)
        ctx = multiprocessing.get_context("spawn")
        here, there = ctx.Pipe()
        server = ctx.Process(
            target=serve, args=(tmp, int(args.big_gib * (1 << 30)), args.files, there)
        )
        server.start()
        try:
            urls = here.recv()
            print(f"(servers ready after {time.perf_counter() - t0:.0f}s)")
            run = Runner(tmp, urls)
            floor = [run.floor()[0] for _ in range(args.runs)]
            print(f"python -m wgtpm --version (start-up, no work): {_mb(floor)}")
            for name in args.only:
                compare(run, name, args)
        finally:
            here.send("stop")
            server.join(timeout=30)
    print(f"(took {time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
