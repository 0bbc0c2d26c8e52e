"""Cold ``wgtpm get`` from an OCI registry against ``oras pull`` of the same artifact.

The registry is the CNCF distribution registry (Debian's ``docker-registry``,
as tests/oci starts it), holding one module version that
``wgtpm publish --to oci://...`` pushed (:class:`wgtpm.publish.oci.OciTarget`):
by default 4 weights files of 32 MiB and 40 small files of 1 to 200 KB. Between
the clients and the registry sits a TCP relay that makes loopback a realistic
network: 80 ms when a connection opens, 40 ms before each request (the first
bytes a client sends after the registry's last answer), and 50 MB/s per
connection each way (bench_sources.py's ``REALISTIC``).

The peer is the ``oras`` Python package's ``OrasClient.pull`` (the Go ``oras``
CLI cannot be installed here: no Go module proxy), which fetches the manifest and
then each layer in turn into files named by their titles and checks nothing.
``wgtpm get`` resolves the version (tags), reads the manifest and the index,
fetches the files concurrently and checks every byte against its sha256. Both
run in a fresh process with an empty cache or output directory, in turns.

Printed: each command's range of times over the runs and the ratio of the best
times (wgtpm / oras; below 1: wgtpm is faster), and for scale the time of
``wgtpm publish`` of the same release to another namespace through the relay
(the blobs are in the registry already, so it mounts none but uploads all). On a busy machine the ratio is
noisy; look at the load it prints.

Run: ``.venv/bin/python benchmarks/bench_oci.py [--runs 3] [--big 4] [--small 40]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT  # noqa: F401  (puts this checkout on PYTHONPATH)
from tests.oci.conftest import _start
from wgtpm._report import SILENT
from wgtpm.dirhash import hash1_bytes
from wgtpm.httpclient import HttpClient
from wgtpm.index import IndexEntry, build_index
from wgtpm.publish import Release
from wgtpm.publish.oci import OciTarget

MiB = 1 << 20
MODULE = "example.com/bench/oci"
VERSION = "v0.1.0"
ORAS_PULL = (
    "import sys, oras.client; "
    "oras.client.OrasClient(hostname=sys.argv[1], insecure=True)"
    ".pull(target=sys.argv[2], outdir=sys.argv[3])"
)


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``upstream`` (a port): ``connect`` seconds when
    a connection opens, ``request`` seconds before each request (the first bytes a client
    sends after the registry last answered), ``rate`` bytes a second per connection and
    direction (0: no cap)."""

    def __init__(self, upstream: int, request: float, connect: float, rate: float) -> None:
        self.upstream, self.request, self.connect, self.rate = upstream, request, connect, rate
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        time.sleep(self.connect)
        try:
            up = socket.create_connection(("127.0.0.1", self.upstream))
        except OSError:
            conn.close()
            return
        for s in (conn, up):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        turn = ["server"]  # who sent last on this connection: a client's turn is a request
        threading.Thread(target=self._pump, args=(conn, up, turn, "client"), daemon=True).start()
        self._pump(up, conn, turn, "server")

    def _pump(self, src: socket.socket, dst: socket.socket, turn: list[str], me: str) -> None:
        sent, since = 0, time.monotonic()
        try:
            while data := src.recv(256 << 10):
                if me == "client" and turn[0] == "server" and self.request:
                    time.sleep(self.request)
                turn[0] = me
                dst.sendall(data)
                if self.rate:
                    sent += len(data)
                    ahead = sent / self.rate - (time.monotonic() - since)
                    if ahead > 0:
                        time.sleep(ahead)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def files_of(big: int, small: int) -> dict[str, bytes]:
    rng = random.Random(1)
    out = {f"model/shard-{i:02d}.safetensors": rng.randbytes(32 * MiB) for i in range(big)}
    for i in range(small):
        out[f"conf/part-{i:03d}.json"] = rng.randbytes(rng.randint(1000, 200_000))
    return out


def release(d: Path, files: dict[str, bytes]) -> Release:
    files = {"wgt.mod": f"module {MODULE}\nwgt 0.1\n".encode(), **files}
    paths = {}
    for p, b in files.items():
        paths[p] = d / hashlib.sha256(p.encode()).hexdigest()
        paths[p].write_bytes(b)
    entries = [IndexEntry(p, len(b), hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    index = build_index(MODULE, VERSION, entries, time="2026-12-01T00:00:00Z")
    mod_h1 = hash1_bytes({"wgt.mod": files["wgt.mod"]})
    return Release(MODULE, VERSION, None, paths, index.to_json(), index.h1(), mod_h1)


def _fresh(d: Path) -> Path:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    os.sync()
    return d


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return took


@contextmanager
def registry(tmp: Path) -> Iterator[str]:
    """A distribution registry on loopback; its ``host:port``."""
    gen = _start(tmp, basic_auth=False)
    reg = next(gen)
    try:
        yield reg.host
    finally:
        gen.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="runs of each command, taken in turns")
    ap.add_argument("--big", type=int, default=4, help="weights files of 32 MiB")
    ap.add_argument("--small", type=int, default=40, help="files of 1 to 200 KB")
    args = ap.parse_args()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = files_of(args.big, args.small)
        total = sum(len(b) for b in files.values())
        (tmp / "rel").mkdir()
        rel = release(tmp / "rel", files)
        del files
        (tmp / "reg").mkdir()
        with registry(tmp / "reg") as host, HttpClient() as http:
            t0 = time.perf_counter()
            OciTarget(f"oci://{host}/bench", http, os.environ).publish(rel, SILENT)
            print(
                f"published {len(rel.files)} files, {total / 1e6:.0f} MB in "
                f"{time.perf_counter() - t0:.1f}s (plain loopback)"
            )
            relay = Relay(int(host.rsplit(":", 1)[1]), 0.040, 0.080, 50e6)
            near = f"127.0.0.1:{relay.port}"
            t0 = time.perf_counter()  # the same release again, to a fresh namespace
            OciTarget(f"oci://{near}/again", http, os.environ).publish(rel, SILENT)
            pushed = time.perf_counter() - t0
            env = {k: v for k, v in os.environ.items() if k not in ("WGTFLAGS", "NETRC")}
            env["DOCKER_CONFIG"] = str(tmp / "no-docker")

            def wgtpm() -> float:
                work = _fresh(tmp / "wgtpm")
                proj = work / "app"
                proj.mkdir()
                (proj / "wgt.mod").write_text("module example.com/app\n")
                e = {**env, "WGTPM_CACHE": str(work / "cache"), "WGTPROXY": f"oci://{near}/bench"}
                cmd = [sys.executable, "-m", "wgtpm", "get", "-q", f"{MODULE}@{VERSION}"]
                return _timed(cmd, proj, e)

            repo = f"{near}/bench/{MODULE}:{VERSION}"

            def oras() -> float:
                work = _fresh(tmp / "oras")
                return _timed(
                    [sys.executable, "-c", ORAS_PULL, near, repo, str(work / "out")], work, env
                )

            times: list[list[float]] = [[], []]
            for _ in range(args.runs):
                times[0].append(wgtpm())
                times[1].append(oras())
            relay.close()
    ours, peer = min(times[0]), min(times[1])
    print(
        f"cold get of {total / 1e6:.0f} MB in {len(rel.files)} files, 40 ms per request, "
        f"80 ms per connection, 50 MB/s per connection (load {os.getloadavg()[0]:.1f}):"
    )
    print(f"  wgtpm get  {min(times[0]):.2f}-{max(times[0]):.2f}s")
    print(f"  oras pull  {min(times[1]):.2f}-{max(times[1]):.2f}s (Python oras, checks nothing)")
    print(f"  wgtpm / oras {ours / peer:.2f}x (best of {args.runs})")
    print(f"  (wgtpm publish of the same release on that network: {pushed:.2f}s)")


if __name__ == "__main__":
    main()
