"""Two measurements of ``wgtpm get`` from a direct source, the loopback Hugging Face Hub
(tests/servers/huggingface.py, with its CDN), printed against peers measured in the same run:

1. a cold ``wgtpm get hf.co/bench/big@v0.1.0`` of a repository of about 300 MB in 60 files
   (6 shards of 40 MB and 10 files of 5 MB stored with LFS, 44 small files of 1 KB to 1 MB
   in git) against ``huggingface_hub.snapshot_download`` of the same commit from the same
   servers, each in a fresh process with an empty cache. wgtpm checks the sha256 of every
   file (synthesising the index from the tree API: the small files are downloaded and hashed
   first); snapshot_download checks sizes only. Target: wgtpm at least as fast (ratio <= 1).

2. a cold ``wgtpm get hf.co/bench/small@v0.1.0`` of 200 files of 1 KB (none in LFS), with
   50 ms added to every request of the Hub and of the CDN, against the ideal of full
   concurrency. The ideal is the time of the same command against the same servers without
   the added latency, plus two latencies, one for each round trip that must wait on the one
   before it for a client that opens as many connections at once as it likes:

   1. ``GET /api/models/bench/small/revision/v0.1.0?blobs=true``: the commit the tag names
      and every file with its size and git blob id;
   2. ``GET /bench/small/resolve/COMMIT/PATH`` for all 200 files at once (each is checked
      against its blob id and hashed with sha256 for the index as it arrives; nothing has
      to be downloaded twice).

   So ``ideal = t(no latency) + 2 * 50 ms``, and the ratio measured / ideal says how much
   of the latency wgtpm fails to hide. snapshot_download of the same repository under the
   same latency is printed for context.

Every command runs as a subprocess with its own empty cache (``WGTPM_CACHE``, ``HF_HOME``)
and ``WGTPROXY=direct``, ``HF_ENDPOINT`` pointing at the loopback Hub; times are the best
of a few runs, taken in turns. The servers run in threads of this process and hold the\nrepositories in memory (about 320 MB at the peak).

Run: ``.venv/bin/python benchmarks/bench_sources.py [--runs 3]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import report
from tests.servers import CdnServer
from tests.servers.huggingface import HuggingFaceServer

MiB = 1 << 20
LATENCY = 0.05
SNAPSHOT = (
    "import sys; from huggingface_hub import snapshot_download; "
    "snapshot_download(sys.argv[1], revision=sys.argv[2], cache_dir=sys.argv[3])"
)


def big_repo(rng: random.Random) -> dict[str, bytes]:
    """About 300 MB in 60 files: LFS shards and blobs, and small git files of mixed sizes."""
    files: dict[str, bytes] = {}
    for i in range(6):
        files[f"model-{i + 1:05d}-of-00006.safetensors"] = rng.randbytes(40 * MiB)
    for i in range(10):
        files[f"extra/part{i:02d}.bin"] = rng.randbytes(5 * MiB)
    for i in range(44):
        size = int(1024 * 1024 ** (i / 43))  # 1 KB .. 1 MB, spread evenly on a log scale
        files[f"small/file{i:02d}.json"] = rng.randbytes(size)
    return files


def small_repo(rng: random.Random) -> dict[str, bytes]:
    return {f"shard{i // 50}/file{i:03d}.json": rng.randbytes(1024) for i in range(200)}


def warm(hf: HuggingFaceServer) -> None:
    """Hash every blob now, so that no timed run pays for the server's first listing."""
    for repo in hf.repos.values():
        for commit in repo.commits.values():
            for blob in commit.files.values():
                _ = blob.oid, blob.sha256


class Runner:
    """Times ``wgtpm get`` and ``snapshot_download`` cold, each in a fresh process and cache.

    Clearing the last run's files and flushing them to disk happen before the clock starts.
    """

    def __init__(self, tmp: Path, endpoint: str) -> None:
        self.tmp = tmp
        env = {**os.environ, "HF_ENDPOINT": endpoint, "WGTPROXY": "direct"}
        env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "NETRC", "WGTFLAGS"):
            env.pop(var, None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed wgtpm has its bytecode compiled
        self.env = env

    def _fresh(self, name: str) -> Path:
        d = self.tmp / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        os.sync()
        return d

    def wgtpm(self, repo: str) -> float:
        work = self._fresh("wgtpm")
        proj = work / "app"
        proj.mkdir()
        (proj / "wgt.mod").write_text("module example.com/app\n")
        env = {**self.env, "WGTPM_CACHE": str(work / "cache"), "HF_HOME": str(work / "hf")}
        cmd = [sys.executable, "-m", "wgtpm", "get", "-q", f"hf.co/{repo}@v0.1.0"]
        return _timed(cmd, proj, env)

    def snapshot(self, repo: str) -> float:
        work = self._fresh("hf")
        env = {**self.env, "HF_HOME": str(work / "home")}
        cmd = [sys.executable, "-c", SNAPSHOT, repo, "v0.1.0", str(work / "cache")]
        return _timed(cmd, work, env)


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return took


def best(runs: int, *fns: Callable[[], float]) -> list[float]:
    """The best time of each of ``fns``, run in turns so that all meet the same machine."""
    times = [float("inf")] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            times[i] = min(times[i], fn())
    return times


def cold_get(tmp: Path, runs: int) -> None:
    rng = random.Random(1)
    with CdnServer() as cdn, HuggingFaceServer(cdn) as hf:
        files = big_repo(rng)
        total = sum(len(d) for d in files.values())
        repo = hf.repo("bench", "big")
        repo.commit(files)
        repo.tag("v0.1.0")
        del files
        warm(hf)
        run = Runner(tmp, hf.url)
        ours, peer = best(runs, lambda: run.wgtpm("bench/big"), lambda: run.snapshot("bench/big"))
    name = f"cold get of {total / 1e6:.0f} MB in 60 files, every sha256 checked"
    report(name, ours, "snapshot_download", peer, "target: at most 1.00x")
    print(f"  ({total / MiB / ours:.0f} MiB/s against {total / MiB / peer:.0f} MiB/s)")


def latency(tmp: Path, runs: int) -> None:
    rng = random.Random(2)
    with CdnServer() as cdn, HuggingFaceServer(cdn) as hf:
        repo = hf.repo("bench", "small")
        repo.commit(small_repo(rng))
        repo.tag("v0.1.0")
        warm(hf)
        run = Runner(tmp, hf.url)
        (t0,) = best(runs, lambda: run.wgtpm("bench/small"))
        hf.latency = cdn.latency = LATENCY
        ours, peer = best(
            runs, lambda: run.wgtpm("bench/small"), lambda: run.snapshot("bench/small")
        )
    ideal = t0 + 2 * LATENCY
    ms = f"{LATENCY * 1000:.0f} ms"
    print(
        f"200 files of 1 KB, {ms} added per request: wgtpm {ours:.3f}s, ideal {ideal:.3f}s, "
        f"ratio {ours / ideal:.2f}x"
    )
    print(f"  (ideal: {t0:.3f}s without latency + 2 x {ms}; snapshot_download {peer:.3f}s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="runs of each command; the best counts")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        cold_get(Path(d), args.runs)
        latency(Path(d), args.runs)
    print(f"(took {time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
