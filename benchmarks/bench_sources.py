"""Cold ``wgtpm get`` from a direct source, the loopback Hugging Face Hub
(tests/servers/huggingface.py, with its CDN), against peers measured in the same run,
taken in turns, each command in a fresh process with an empty cache:

- ``huggingface_hub.snapshot_download`` of the same commit from the same servers (it
  checks sizes only; wgtpm checks the sha256 of every file, synthesising the index from
  the Hub's file list: small files are downloaded and hashed first);
- ``aria2c`` (Debian's ``aria2``) fetching every file's resolve URL with 8 connections per
  file and 16 files at once: no metadata calls and no checks, the wire's practical limit.

Repositories and networks (issue 15's table):

1. ``big``: about 311 MB in 60 files (6 x 40 MiB and 10 x 5 MiB in LFS, 44 git files of
   1 KB to 1 MB), on plain loopback and with 40 ms per request, 80 ms per new
   connection and 50 MB/s per connection (``LoopbackServer.latency``,
   ``connect_latency`` and ``rate``, on the Hub and the CDN alike);
2. ``small``: 500 files of 10 KB, with 40 ms per request and 80 ms per connection, and
   with 40 ms per request and connections free;
3. ``one``: a single 256 MiB LFS file on the realistic network above, where one
   connection's cap is the limit (wgtpm fetches files of 32 MiB and up as ranges);
4. ``small-lfs``: the ``small`` files, every one in LFS, so each is an API request
   answered by a redirect to the CDN, with 40 ms per request and 80 ms per new
   connection (issue 30: at most 0.4x snapshot_download); ``big-lfs``: the ``big``
   files with the small ones in LFS too, on the realistic network (at most 0.5x);
5. ``gh``: the ``big`` files as the assets of a GitHub release (tests/servers/github.py,
   asset downloads redirected to the CDN), and ``proxy``: the same files as a module
   in a proxy-protocol tree (``WGTPROXY``), each on the realistic network, against
   ``aria2c`` fetching the same asset or file URLs.

Printed: each command's range of times over the runs, the ratio of the best times and
the range of the per-run ratios, and the CPU seconds each command took (its own, and
the servers' meanwhile). The servers run in threads of this process (so their CPU is
this process's) and hold the repositories in memory (about 320 MB at the peak); on a
2-core machine they take CPU from the clients, so ratios are noisy: run it on a quiet
machine, and look at the load it prints.

Run: ``.venv/bin/python benchmarks/bench_sources.py [--runs 3] [--only big small one gh proxy small-lfs big-lfs] [--before DIR]``

``--before DIR`` adds ``wgtpm`` from another checkout (``git worktree add DIR COMMIT``)
to the commands taken in turns, so that a change is measured against the code before
it on the same machine in the same minutes (this VM's speed drifts by 10% over a few).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT  # noqa: F401  (puts this checkout on PYTHONPATH)
from tests.servers import CdnServer, LoopbackServer, Request, Response, serve_bytes
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.proxytree import ProxyTree

MiB = 1 << 20
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
    """500 files of 10 KB, none in LFS."""
    return {f"shard{i // 50}/file{i:03d}.json": rng.randbytes(10_000) for i in range(500)}


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

    def wgtpm(self, module: str, root: Path | None = None, **env_extra: str) -> float:
        """``wgtpm get -q module@v0.1.0`` in a new project with an empty cache; the
        checkout ``root``'s wgtpm when given, else this one's."""
        work = self._fresh("wgtpm")
        proj = work / "app"
        proj.mkdir()
        (proj / "wgt.mod").write_text("module example.com/app\n")
        env = {**self.env, "WGTPM_CACHE": str(work / "cache"), "HF_HOME": str(work / "hf")}
        if root is not None:
            env["PYTHONPATH"] = str(root)
        env.update(env_extra)
        cmd = [sys.executable, "-m", "wgtpm", "get", "-q", f"{module}@v0.1.0"]
        return _timed(cmd, proj, env)

    def snapshot(self, repo: str) -> float:
        work = self._fresh("hf")
        env = {**self.env, "HF_HOME": str(work / "home")}
        cmd = [sys.executable, "-c", SNAPSHOT, repo, "v0.1.0", str(work / "cache")]
        return _timed(cmd, work, env)

    def aria2(self, urls: list[str]) -> float:
        """aria2c fetching every file's resolve URL (no metadata calls, no checks)."""
        work = self._fresh("aria")
        (work / "urls").write_text("".join(f"{u}\n  out=f{i}\n" for i, u in enumerate(urls)))
        cmd = ["aria2c", "-q", "-i", "urls", "-d", "out", "-j", "16", "-x", "8", "-s", "8"]
        cmd += ["-k", "1M", "--file-allocation=none", "--allow-overwrite=true"]
        return _timed(cmd, work, self.env)


#: CPU seconds of the last command timed: (its own, the servers' in this process meanwhile).
LAST_CPU: list[tuple[float, float]] = []


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    own, servers = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    LAST_CPU.append((_cpu(resource.RUSAGE_CHILDREN) - own, _cpu(resource.RUSAGE_SELF) - servers))
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return took


@dataclass(frozen=True)
class Net:
    """A network between client and servers: seconds per request and per new connection,
    bytes a second per connection (0: none of it; plain loopback)."""

    request: float = 0.0
    connect: float = 0.0
    rate: float = 0.0

    def apply(self, *servers: LoopbackServer) -> None:
        for srv in servers:
            srv.latency, srv.connect_latency, srv.rate = self.request, self.connect, self.rate

    def __str__(self) -> str:
        if not (self.request or self.connect or self.rate):
            return "plain loopback"
        parts = [f"{self.request * 1000:.0f} ms per request"]
        parts.append(
            f"{self.connect * 1000:.0f} ms per connection" if self.connect else "connections free"
        )
        if self.rate:
            parts.append(f"{self.rate / 1e6:.0f} MB/s per connection")
        return ", ".join(parts)


REALISTIC = Net(0.040, 0.080, 50e6)
#: Another checkout whose wgtpm is measured too (``--before``).
BEFORE: Path | None = None


class Tree(ProxyTreeServer):
    """The proxy-protocol tree server, holding each file's bytes once read (so that a
    client asking for many ranges does not make it read the file again each time)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._files: dict[str, bytes] = {}

    def route(self, req: Request) -> Response:
        if req.path.endswith(".bin") or req.path.endswith(".safetensors"):
            data = self._files.get(req.path)
            if data is None:
                data = self._files[req.path] = (self.root / req.path.lstrip("/")).read_bytes()
            return serve_bytes(req, data)
        return super().route(req)


def with_before(cmds: dict[str, Callable[[], float]], run: Runner, module: str, **env: str) -> None:
    """Add the ``--before`` checkout's ``wgtpm get module`` to ``cmds``, if one was given."""
    before = BEFORE
    if before is not None:
        cmds[f"wgtpm before ({before.name})"] = lambda: run.wgtpm(module, before, **env)


def race(
    runs: int,
    title: str,
    nets: list[Net],
    servers: list[LoopbackServer],
    cmds: dict[str, Callable[[], float]],
    total: int,
) -> None:
    """Time ``cmds`` (wgtpm first) in turns under each of ``nets`` and print the ratios."""
    names = list(cmds)
    for net in nets:
        net.apply(*servers)
        LAST_CPU.clear()
        times = times_of(runs, *cmds.values())
        cpu = [LAST_CPU[i :: len(names)] for i in range(len(names))]
        print(f"{title}, {total / 1e6:.0f} MB, {net} (load {os.getloadavg()[0]:.1f}):")
        ours = min(times[0])
        for i, name in enumerate(names):
            own = min(c[0] for c in cpu[i])
            srv = min(c[1] for c in cpu[i])
            line = f"  {name} {_range(times[i])} ({total / MiB / min(times[i]):.0f} MiB/s best; CPU {own:.2f}s + servers {srv:.2f}s)"
            if i:
                line += (
                    f": wgtpm / {name.split()[0]} {ours / min(times[i]):.2f}x (best), "
                    f"{_ratios(times[0], times[i])} (per run)"
                )
            print(line)


def compare(
    tmp: Path,
    runs: int,
    name: str,
    files: dict[str, bytes],
    nets: list[Net],
    aria: bool,
    all_lfs: bool = False,
) -> None:
    """wgtpm against snapshot_download (and aria2c) of ``files`` under each of ``nets``;
    with ``all_lfs`` every file is in LFS (its resolve URL redirects to the CDN)."""
    with CdnServer() as cdn, HuggingFaceServer(cdn) as hf:
        total = sum(len(d) for d in files.values())
        repo = hf.repo("bench", name)
        if all_lfs:
            repo.lfs_patterns = ("*",)
        commit = repo.commit(files)
        repo.tag("v0.1.0")
        del files
        warm(hf)
        run = Runner(tmp, hf.url)
        urls = [
            f"{hf.url}/bench/{name}/resolve/{commit}/{quote(p)}"
            for p in repo.commits[commit].files
            if not p.startswith(".")
        ]
        cmds = {
            "wgtpm": lambda: run.wgtpm(f"hf.co/bench/{name}"),
            "snapshot_download": lambda: run.snapshot(f"bench/{name}"),
        }
        with_before(cmds, run, f"hf.co/bench/{name}")
        if aria and shutil.which("aria2c"):
            cmds["aria2c (8 connections per file, checks nothing)"] = lambda: run.aria2(urls)
        kind = ", all in LFS" if all_lfs else ""
        race(runs, f"Hugging Face, {len(urls)} files{kind}", nets, [hf, cdn], cmds, total)


def github(tmp: Path, runs: int, files: dict[str, bytes]) -> None:
    """wgtpm against aria2c of the same files as the assets of a GitHub release."""
    assets = {p.replace("/", "--"): d for p, d in files.items()}
    total = sum(len(d) for d in assets.values())
    with CdnServer() as cdn, GitHubServer(cdn) as gh:
        gh.repo("bench", "big").release("v0.1.0", assets)
        run = Runner(tmp, "")
        urls = [f"{gh.url}/bench/big/releases/download/v0.1.0/{n}" for n in assets]
        cmds = {"wgtpm": lambda: run.wgtpm("github.com/bench/big", GITHUB_API_URL=gh.url)}
        with_before(cmds, run, "github.com/bench/big", GITHUB_API_URL=gh.url)
        if shutil.which("aria2c"):
            cmds["aria2c (8 connections per file, checks nothing)"] = lambda: run.aria2(urls)
        race(runs, f"GitHub release, {len(assets)} assets", [REALISTIC], [gh, cdn], cmds, total)


def proxy(tmp: Path, runs: int, files: dict[str, bytes]) -> None:
    """wgtpm against aria2c of the same files as a module in a proxy-protocol tree."""
    tree = ProxyTree(tmp / "tree")
    mod = "example.com/big"
    tree.add(mod, "v0.1.0", {"wgt.mod": f"module {mod}\n".encode(), **files})
    total = sum(len(d) for d in files.values())
    with Tree(tree.root) as srv:
        run = Runner(tmp, "")
        urls = [f"{srv.url}/{mod}/@v/v0.1.0/{quote(p)}" for p in files]
        cmds = {"wgtpm": lambda: run.wgtpm(mod, WGTPROXY=srv.url)}
        with_before(cmds, run, mod, WGTPROXY=srv.url)
        if shutil.which("aria2c"):
            cmds["aria2c (8 connections per file, checks nothing)"] = lambda: run.aria2(urls)
        race(runs, f"proxy protocol, {len(files)} files", [REALISTIC], [srv], cmds, total)


def _range(ts: list[float]) -> str:
    return f"{min(ts):.2f}-{max(ts):.2f}s" if len(ts) > 1 else f"{ts[0]:.2f}s"


def _ratios(a: list[float], b: list[float]) -> str:
    rs = [x / y for x, y in zip(a, b, strict=True)]
    return f"{min(rs):.2f}-{max(rs):.2f}x"


def times_of(runs: int, *fns: Callable[[], float]) -> list[list[float]]:
    """Every time of each of ``fns``, run in turns so that all meet the same machine."""
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            out[i].append(fn())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="runs of each command, taken in turns")
    every = ["big", "small", "one", "gh", "proxy", "small-lfs", "big-lfs"]
    ap.add_argument("--only", nargs="*", default=every, choices=every)
    ap.add_argument("--before", type=Path, help="another checkout, measured in turns too")
    args = ap.parse_args()
    global BEFORE
    BEFORE = args.before.resolve() if args.before else None
    t0 = time.perf_counter()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as d:
        if "big" in args.only:
            compare(Path(d), args.runs, "big", big_repo(random.Random(1)), [Net(), REALISTIC], True)
        if "one" in args.only:
            one = {"model.safetensors": os.urandom(256 * MiB)}
            compare(Path(d), args.runs, "one", one, [REALISTIC], True)
        if "small" in args.only:
            nets = [Net(0.040, 0.080), Net(0.040)]
            compare(Path(d), args.runs, "small", small_repo(random.Random(2)), nets, False)
        if "small-lfs" in args.only:
            files = small_repo(random.Random(2))
            compare(Path(d), args.runs, "small-lfs", files, [Net(0.040, 0.080)], False, True)
        if "big-lfs" in args.only:
            files = big_repo(random.Random(1))
            compare(Path(d), args.runs, "big-lfs", files, [REALISTIC], True, True)
        if "gh" in args.only:
            github(Path(d), args.runs, big_repo(random.Random(1)))
        if "proxy" in args.only:
            proxy(Path(d), args.runs, big_repo(random.Random(1)))
    print(f"(took {time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
