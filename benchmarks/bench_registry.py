"""The registry (``wgtpm registry serve``) against nginx serving the same files statically.

In one run, in turns (registry, nginx, registry, nginx, ...), on loopback:

1. requests/s for ``@v/list`` and for downloading a 64 KiB and a 1 MiB file,
   with each of ``--conns`` concurrent keep-alive clients (``wrk`` when
   installed, else an asyncio httpx load generator), one registry process
   (SQLite and a folder) against one nginx worker (sendfile) over a
   proxy-protocol tree written by :class:`wgtpm.proxytree.ProxyTree`; printed
   as registry/nginx per round (target: file downloads at least 0.5x);
2. publish-to-visible latency: a new version published through the API,
   then ``@v/list`` polled until it shows it; p50/p95 over ``--publishes``;
3. the same requests from two ``registry serve`` processes on one SQLite
   file and one folder, the load split between their two ports (with wrk:
   one wrk per port, half the connections each, requests/s summed), and
   the latency of a version published on one replica until the other lists it;
4. the same requests from one ``registry serve --workers 2`` (one port);
5. on PostgreSQL (a throwaway cluster, :mod:`tests.registry.pgserver`; ``--db``
   picks the parts): ``@v/list``, ``.info`` and ``@latest`` from 1 replica and
   from 3 (one database, one folder, the load split between their ports) against
   nginx serving the registry's own answers as files, and the latency of a
   version published on replica 1 until replica 2 or 3 lists it.

With ``/proc`` (Linux), each load measurement also reads the CPU time the
servers' processes (and their children: nginx's worker, uvicorn's workers)
spent, per request served: unlike requests/s, that hardly depends on what
else the machine is running, and registry/nginx of it is the throughput ratio
the two would have on cores of their own.

Run: ``.venv/bin/python benchmarks/bench_registry.py [--seconds 3] [--rounds 2] [--conns 16,2]
[--db sqlite,postgresql]``
Needs nginx (Debian ``nginx``); wrk (Debian ``wrk``) is optional.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

import benchmarks._common  # noqa: F401 - the servers it starts run this checkout's wgtpm
from wgtpm.index import IndexEntry, build_index
from wgtpm.proxytree import ProxyTree

MODULE = "example.com/bench/m"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wgtpm(*args: str) -> list[str]:
    return [sys.executable, "-m", "wgtpm", *args]


def wait_up(url: str, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with status {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{what} did not start in 30 s")


@contextmanager
def registry(data: Path, log: Path, workers: int = 1, db: str | None = None) -> Iterator[str]:
    """``wgtpm registry serve`` on a folder under ``data``, and on SQLite there or ``db``."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            wgtpm(
                *("registry", "serve", "--data", str(data), "--port", str(port)),
                *("--workers", str(workers)),
                *(("--db", db) if db else ()),
            ),
            stdout=out,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"
    SERVERS[url] = proc.pid
    try:
        wait_up(url + "/healthz", proc, "wgtpm registry serve")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def nginx(root: Path, tmp: Path) -> Iterator[str]:
    """nginx, one worker, sendfile, keep-alive, serving ``root`` statically, with an access
    log as the registry keeps one (buffered, as the registry batches its JSON lines)."""
    port = free_port()
    prefix = tmp / "nginx"
    (prefix / "logs").mkdir(parents=True, exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    conf.write_text(
        f"""{user}worker_processes 1;
error_log {prefix}/logs/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log {prefix}/logs/access.log combined buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    types {{ }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""
    )
    proc = subprocess.Popen(
        [NGINX, "-c", str(conf), "-p", str(prefix), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    SERVERS[url] = proc.pid
    try:
        wait_up(url + "/", proc, "nginx")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def publish(api: httpx.Client, token: str, version: str, files: dict[str, bytes]) -> None:
    """Start, upload the missing files, commit: what ``wgtpm publish --to URL`` does."""
    auth = {"Authorization": f"Bearer {token}"}
    entries = [IndexEntry(p, len(b), hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    idx = build_index(MODULE, version, entries, time="2026-12-01T00:00:00Z").to_json()
    r = api.post(
        "/api/v1/uploads",
        json={"module": MODULE, "version": version, "index": idx.decode()},
        headers=auth,
    )
    r.raise_for_status()
    doc = r.json()
    by_sha = {hashlib.sha256(b).hexdigest(): b for b in files.values()}
    for m in doc["missing"]:
        api.put(
            f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=auth
        ).raise_for_status()
    api.post(doc["commit_url"], headers=auth).raise_for_status()


# ---- load ----------------------------------------------------------------------


#: the process serving each base URL, for its CPU time
SERVERS: dict[str, int] = {}


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of ``pid`` and its descendants; NaN without ``/proc``."""
    total, todo = 0, [pid]
    try:
        while todo:
            p = todo.pop()
            stat = Path(f"/proc/{p}/stat").read_text()
            fields = stat.rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    except (OSError, ValueError, IndexError):
        return float("nan")
    return total / os.sysconf("SC_CLK_TCK")


def wrk_rps(urls: list[str], conns: int, seconds: float) -> tuple[float, int]:
    """Requests/s over ``urls`` at once (one wrk per URL, ``conns`` split between them),
    and the number of requests."""
    per = max(1, conns // len(urls))
    procs = [
        subprocess.Popen(
            [WRK or "wrk", "-t1", f"-c{per}", f"-d{max(1, round(seconds))}s", "--latency", u],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for u in urls
    ]
    total, count = 0.0, 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 30)
        if "Non-2xx" in out or "Socket errors" in out:
            raise SystemExit(f"wrk saw errors:\n{out}")
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        n = re.search(r"(\d+) requests in", out)
        if not m or not n:
            raise SystemExit(f"wrk said:\n{out}")
        total += float(m.group(1))
        count += int(n.group(1))
    return total, count


def httpx_rps(urls: list[str], conns: int, seconds: float) -> tuple[float, int]:
    """The same with asyncio and httpx: ``conns`` clients, alternating between ``urls``."""

    async def run() -> int:
        done = 0
        end = time.monotonic() + seconds
        limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:

            async def worker(i: int) -> None:
                nonlocal done
                k = i
                while time.monotonic() < end:
                    r = await client.get(urls[k % len(urls)])
                    r.raise_for_status()
                    done += 1
                    k += 1

            await asyncio.gather(*(worker(i) for i in range(conns)))
        return done

    t0 = time.monotonic()
    n = asyncio.run(run())
    return n / (time.monotonic() - t0), n


def rps(urls: list[str], conns: int, seconds: float) -> tuple[float, float]:
    """Requests/s, and the servers' CPU microseconds per request."""
    pids = {SERVERS[u.split("/", 3)[0] + "//" + u.split("/", 3)[2]] for u in urls}
    before = sum(cpu_seconds(p) for p in pids)
    rate, n = wrk_rps(urls, conns, seconds) if WRK else httpx_rps(urls, conns, seconds)
    return rate, (sum(cpu_seconds(p) for p in pids) - before) / max(n, 1) * 1e6


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def visible_after(
    api: httpx.Client, token: str, version: str, files: dict[str, bytes], reader: str
) -> float:
    """Seconds from the start of a publish until ``reader``'s ``@v/list`` lists ``version``."""
    t0 = time.perf_counter()
    publish(api, token, version, files)
    while version not in httpx.get(f"{reader}/{MODULE}/@v/list", timeout=5).text.split():
        if time.perf_counter() - t0 > 10:
            raise SystemExit(f"{version} not visible after 10 s")
    return time.perf_counter() - t0


def on_postgresql(args: argparse.Namespace, conns: list[int], files: dict[str, bytes]) -> None:
    """@v/list, .info and @latest from 1 and 3 replicas on one PostgreSQL database, against
    nginx serving the registry's own answers as static files; then publish-to-listed from
    replica 1 to replicas 2 and 3."""
    from tests.registry.pgserver import PostgresServer, PostgresUnavailable

    try:
        pg = PostgresServer()
        pg.start()
    except PostgresUnavailable as exc:
        raise SystemExit(f"PostgreSQL is not available here: {exc}") from exc
    try:
        db = pg.create_database("bench")
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            data = tmp / "data"
            out = subprocess.run(
                wgtpm(
                    *("registry", "token", "create", "--data", str(data), "--db", db),
                    *("--prefix", MODULE),
                ),
                check=True,
                capture_output=True,
                text=True,
            )
            token = out.stdout.strip().splitlines()[-1]
            paths = {
                "@v/list": f"/{MODULE}/@v/list",
                ".info": f"/{MODULE}/@v/v1.0.0.info",
                "@latest": f"/{MODULE}/@latest",
            }
            results: dict[tuple[int, str], dict[str, list[tuple[float, float]]]] = {
                (c, k): {} for c in conns for k in paths
            }
            log, root = tmp / "registry.log", tmp / "static"
            with (
                registry(data, log, db=db) as r1,
                registry(data, log, db=db) as r2,
                registry(data, log, db=db) as r3,
                httpx.Client(base_url=r1) as api,
            ):
                publish(api, token, "v1.0.0", files)
                for p in paths.values():  # nginx serves the registry's own bytes
                    (root / p.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                    (root / p.lstrip("/")).write_bytes(httpx.get(r1 + p).content)
                with nginx(root.resolve(), tmp) as ngx:
                    for p in paths.values():
                        for r in (r1, r2, r3):
                            assert httpx.get(r + p).content == httpx.get(ngx + p).content, p
                    for _ in range(args.rounds):
                        for c in conns:
                            for name, p in paths.items():
                                for who, bases in (
                                    ("1 replica", [r1]),
                                    ("nginx", [ngx]),
                                    ("3 replicas", [r1, r2, r3]),
                                ):
                                    results[c, name].setdefault(who, []).append(
                                        rps([b + p for b in bases], conns=c, seconds=args.seconds)
                                    )
                lat = [
                    visible_after(
                        api,
                        token,
                        f"v1.3.{i}",
                        {**files, "w/n.bin": os.urandom(4096)},
                        [r2, r3][i % 2],
                    )
                    for i in range(args.publishes)
                ]
    finally:
        pg.stop()
    print()
    print(f"PostgreSQL 3 replicas (load average now {os.getloadavg()[0]:.1f})")
    print(
        f"{'requests/s':<14}{'clients':>8}{'1 replica':>11}{'3 replicas':>12}{'nginx':>10}"
        f"{'1r/nginx':>12}{'3r/nginx':>12}{'CPU us 1r':>11}{'nginx':>8}"
    )
    for (c, name), r in results.items():
        rate = {who: [x[0] for x in xs] for who, xs in r.items()}
        cpu = {who: [x[1] for x in xs] for who, xs in r.items()}
        one = [a / b for a, b in zip(rate["1 replica"], rate["nginx"], strict=True)]
        three = [a / b for a, b in zip(rate["3 replicas"], rate["nginx"], strict=True)]
        print(
            f"{name:<14}{c:>8}{max(rate['1 replica']):>11.0f}{max(rate['3 replicas']):>12.0f}"
            f"{max(rate['nginx']):>10.0f}{f'{min(one):.2f}-{max(one):.2f}x':>12}"
            f"{f'{min(three):.2f}-{max(three):.2f}x':>12}"
            f"{min(cpu['1 replica']):>11.0f}{min(cpu['nginx']):>8.0f}"
        )
    print("  (best of the rounds; ratios per round; target: >= 0.3x nginx with 3 replicas)")
    print(
        f"publish on replica 1 -> listed by replica 2 or 3: p50 "
        f"{statistics.median(lat) * 1000:.0f} ms, p95 {pct(lat, 0.95) * 1000:.0f} ms, "
        f"max {max(lat) * 1000:.0f} ms ({len(lat)} publishes; promise: under 1 s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="per load measurement")
    ap.add_argument("--rounds", type=int, default=2, help="turns of registry and nginx")
    ap.add_argument(
        "--conns", default="16,2", help="concurrent keep-alive clients: a list, one table each"
    )
    ap.add_argument("--publishes", type=int, default=10)
    ap.add_argument(
        "--db",
        default="sqlite,postgresql",
        help="databases to run on: sqlite (1 and 2 replicas, --workers 2, files), "
        "postgresql (1 and 3 replicas: @v/list, .info, @latest)",
    )
    args = ap.parse_args()
    conns = [int(c) for c in args.conns.split(",")]
    if not Path(NGINX).exists():
        raise SystemExit("nginx is not installed (Debian: apt-get install nginx)")
    tool = "wrk" if WRK else "asyncio httpx"
    print(
        f"load: {tool}, {args.conns} keep-alive connections, {args.seconds:g} s each, "
        f"{args.rounds} rounds; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    files = {
        "wgt.mod": f"module {MODULE}\n".encode(),
        "w/big.bin": os.urandom(1 << 20),
        "w/small.bin": os.urandom(64 << 10),
    }
    dbs = args.db.split(",")
    if "postgresql" in dbs:
        on_postgresql(args, conns, files)
    if "sqlite" in dbs:
        on_sqlite(args, conns, files)


def on_sqlite(args: argparse.Namespace, conns: list[int], files: dict[str, bytes]) -> None:
    """The registry on SQLite: 1 and 2 replicas and --workers 2, against nginx."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = tmp / "data"
        out = subprocess.run(
            wgtpm("registry", "token", "create", "--data", str(data), "--prefix", MODULE),
            check=True,
            capture_output=True,
            text=True,
        )
        token = out.stdout.strip().splitlines()[-1]
        tree = ProxyTree(tmp / "tree")
        tree.add(MODULE, "v1.0.0", files)
        paths = {
            "@v/list": f"/{MODULE}/@v/list",
            "64 KiB file": f"/{MODULE}/@v/v1.0.0/w/small.bin",
            "1 MiB file": f"/{MODULE}/@v/v1.0.0/w/big.bin",
        }
        results: dict[tuple[int, str], dict[str, list[tuple[float, float]]]] = {
            (c, k): {} for c in conns for k in paths
        }
        log = tmp / "registry.log"
        with (
            registry(data, log) as reg,
            nginx(tree.root.resolve(), tmp) as ngx,
            httpx.Client(base_url=reg) as api,
        ):
            publish(api, token, "v1.0.0", files)
            for p in paths.values():  # the same bytes from both
                assert httpx.get(reg + p).content == httpx.get(ngx + p).content, p
            for _ in range(args.rounds):
                for c in conns:
                    for name, p in paths.items():
                        for who, base in (("registry", reg), ("nginx", ngx)):
                            results[c, name].setdefault(who, []).append(
                                rps([base + p], c, args.seconds)
                            )
            lat = [
                visible_after(api, token, f"v1.1.{i}", {**files, "w/n.bin": os.urandom(4096)}, reg)
                for i in range(args.publishes)
            ]
        # two replicas on one SQLite file and one folder
        with registry(data, log) as r1, registry(data, log) as r2, httpx.Client(base_url=r1) as api:
            for _ in range(args.rounds):
                for c in conns:
                    for name, p in paths.items():
                        results[c, name].setdefault("2 replicas", []).append(
                            rps([r1 + p, r2 + p], c, args.seconds)
                        )
            lat2 = [
                visible_after(api, token, f"v1.2.{i}", {**files, "w/n.bin": os.urandom(4096)}, r2)
                for i in range(args.publishes)
            ]
        with registry(data, log, workers=2) as w2:
            for p in paths.values():
                httpx.get(w2 + p).raise_for_status()
            for _ in range(args.rounds):
                for c in conns:
                    for name, p in paths.items():
                        results[c, name].setdefault("--workers 2", []).append(
                            rps([w2 + p], c, args.seconds)
                        )

    print()
    print(
        f"{'requests/s':<14}{'clients':>8}{'registry':>10}{'nginx':>10}{'ratio':>13}"
        f"{'2 replicas':>12}{'--workers 2':>13}"
    )
    for (c, name), r in results.items():
        rate = {who: [x[0] for x in xs] for who, xs in r.items()}
        ratios = [a / b for a, b in zip(rate["registry"], rate["nginx"], strict=True)]
        print(
            f"{name:<14}{c:>8}{max(rate['registry']):>10.0f}{max(rate['nginx']):>10.0f}"
            f"{f'{min(ratios):.2f}-{max(ratios):.2f}x':>13}"
            f"{max(rate['2 replicas']):>12.0f}{max(rate['--workers 2']):>13.0f}"
        )
    print(
        "  (best of the rounds; the ratio is registry/nginx per round; target for files: >= 0.5x)"
    )
    print()
    print(
        f"{'CPU us/request':<14}{'clients':>8}{'registry':>10}{'nginx':>10}{'nginx/reg':>13}"
        f"{'2 replicas':>12}{'--workers 2':>13}"
    )
    for (c, name), r in results.items():
        cpu = {who: [x[1] for x in xs] for who, xs in r.items()}
        ratios = [b / a for a, b in zip(cpu["registry"], cpu["nginx"], strict=True)]
        print(
            f"{name:<14}{c:>8}{min(cpu['registry']):>10.0f}{min(cpu['nginx']):>10.0f}"
            f"{f'{min(ratios):.2f}-{max(ratios):.2f}x':>13}"
            f"{min(cpu['2 replicas']):>12.0f}{min(cpu['--workers 2']):>13.0f}"
        )
    print(
        "  (the servers' CPU time per request, least of the rounds; nginx/registry of it per"
        " round is\n   the throughput ratio on cores of their own)"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"publish-to-visible, one process: p50 {statistics.median(lat) * 1000:.0f} ms, "
        f"p95 {pct(lat, 0.95) * 1000:.0f} ms ({len(lat)} publishes of 4 KiB new + 2 known files)"
    )
    print(
        f"publish on replica 1 -> listed by replica 2: p50 {statistics.median(lat2) * 1000:.0f} ms, "
        f"p95 {pct(lat2, 0.95) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
