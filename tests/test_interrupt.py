"""Ctrl-C, silent servers and ``-x``: what a person at the terminal sees and gets.

- a real SIGINT to a ``wgtpm get`` that downloads from a throttled loopback server
  stops it within about a second, keeps the partial file, says what was
  interrupted, exits 130 and leaves wgt.mod and wgt.sum as they were;
- a server that accepts and never answers is named after a few seconds, the
  retries are shown, and the error names the host and ``WGTPM_HTTP_TIMEOUT``;
- ``wgtpm -x`` prints each request as it ends.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers import Fault, LoopbackServer, Request, Response
from tests.servers.hostile import HostileServer
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.proxytree import ProxyTree

MOD = "github.com/acme/big"
BIG = os.urandom(8 << 20)
FILE_PATH = f"/{MOD}/@v/v0.1.0/weights.bin"


@pytest.fixture
def big(tree: ProxyTree) -> ProxyTree:
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": BIG})
    return tree


def snapshot(project: Path) -> dict[str, bytes | None]:
    return {
        n: (project / n).read_bytes() if (project / n).exists() else None
        for n in ("wgt.mod", "wgt.sum")
    }


@pytest.mark.parametrize("jobs", ["16", "1"])
def test_ctrl_c_stops_the_download_and_keeps_the_partial_file(
    wgtpm, big, project, monkeypatch, jobs: str
) -> None:
    part = Cache().root / "tmp" / f"{hashlib.sha256(BIG).hexdigest()}.partial"
    before = snapshot(project)
    with ProxyTreeServer(big.root) as srv:
        # about 1.6 MB/s: 5 s for the whole file
        srv.inject(Fault.drip(FILE_PATH, delay=0.01, chunk=16 * 1024, times=1))
        env = {**os.environ, "WGTPROXY": srv.url}
        proc = subprocess.Popen(
            [sys.executable, "-m", "wgtpm", "get", "-j", jobs, f"{MOD}@v0.1.0"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not part.exists() or part.stat().st_size < 300_000):
            time.sleep(0.02)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err_b = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        err = err_b.decode()
        assert proc.returncode == 130, err
        assert took < 3.0, f"took {took:.1f}s to stop"  # about 0.2 s unloaded; CI is slow
        assert f"wgtpm: interrupted: {MOD}@v0.1.0: " in err and "kept for resuming" in err, err
        assert "of 8.0 MiB" in err, err
        assert "downloaded" not in err, err
        assert snapshot(project) == before
        kept = part.stat().st_size
        assert 0 < kept < len(BIG)
        assert not (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").exists()

        # the next get resumes from the kept bytes
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        ranges = [s.header("range") for s in srv.log.where(path=FILE_PATH)]
    assert ranges[-1] is not None and ranges[-1] != "bytes=0-"
    assert (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").read_bytes() == BIG


def test_a_server_that_never_answers_is_named_retried_and_blamed(
    wgtpm, project, monkeypatch
) -> None:
    before = snapshot(project)
    with HostileServer() as srv:
        monkeypatch.setenv("WGTPROXY", srv.url + "/silent")
        monkeypatch.setenv("WGTPM_HTTP_TIMEOUT", "1")
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "1")
        t0 = time.monotonic()
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        took = time.monotonic() - t0
    host = srv.url.split("://", 1)[1]
    assert r.code == 1
    assert took < 20
    lines = r.err.splitlines()
    # a notice before the timeout, naming the URL
    assert any(f"{srv.url}/silent/{MOD}/@v/" in ln and "no answer for" in ln for ln in lines), r.err
    assert any("retrying in" in ln and "(try 2 of 2)" in ln for ln in lines), r.err
    last = lines[-1]
    assert host in last and "WGTPM_HTTP_TIMEOUT" in last, r.err
    assert "gave up after 2 tries" in last and "WGTPM_HTTP_RETRIES" in last, r.err
    assert snapshot(project) == before


def test_x_prints_each_request(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        url = srv.url
        monkeypatch.setenv("WGTPROXY", url)
        r = wgtpm("-x", "get", "-q", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert f"wgtpm: GET {url}{FILE_PATH} -> 200 (8.0 MiB, " in r.err, r.err
    assert f"wgtpm: GET {url}/{MOD}/@v/v0.1.0.mod -> 200 (" in r.err, r.err
    # and without -x, nothing of the kind
    r = wgtpm("get", "-q", f"{MOD}@v0.1.0", cwd=project)
    assert "GET " not in r.err


class _Redirector(LoopbackServer):
    """Answers ``/f/N`` with a redirect to ``target/N``; ``target`` serves the bytes."""

    name = "api"

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def route(self, req: Request) -> Response:
        return Response.redirect(f"{self.target}/b/{req.segments[-1]}", headers={"X-Pad": "x"})


class _Blobs(LoopbackServer):
    name = "blobs"

    def route(self, req: Request) -> Response:
        return Response(200, {}, req.segments[-1].encode() * 100)


def test_redirects_keep_their_connections() -> None:
    """The API host and the storage host each see a few connections, not one per file."""
    with _Blobs() as blobs, _Redirector(blobs.url) as api:
        with HttpClient(HttpOptions()) as http:
            for i in range(30):
                assert http.get_bytes(f"{api.url}/f/{i}") == str(i).encode() * 100
                with http.stream(f"{api.url}/f/{i}") as resp:
                    assert b"".join(resp.iter_bytes()) == str(i).encode() * 100
        assert api.connections <= 2, api.connections
        assert blobs.connections <= 2, blobs.connections
