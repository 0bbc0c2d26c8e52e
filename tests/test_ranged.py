"""Large files come as parallel ranges; every way that can go wrong still ends in a
verified file (or a clear error) and nothing unverified under a final name.

The thresholds are lowered for these tests (16 MiB files in ranges of 4 MiB), in
this process and in the ``wgtpm get`` processes they start."""

from __future__ import annotations

import concurrent.futures
import hashlib
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest

from tests.servers import CdnServer, Fault, LoopbackServer, Request, Response, serve_bytes
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.conftest import RecordingSums
from wgtpm import _httptransport, _interrupt, modfetch
from wgtpm._errors import FetchError
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient
from wgtpm.modfetch import Fetcher
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.huggingface import HuggingFaceSource

MOD = "github.com/acme/big"
BIG = os.urandom(16 << 20)
SHA = hashlib.sha256(BIG).hexdigest()
FILE_PATH = f"/{MOD}/@v/v0.1.0/weights.bin"
RANGE = re.compile(r"^bytes=(\d+)-(\d+)$")


@pytest.fixture(autouse=True)
def _small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modfetch, "RANGED_MIN", 16 << 20)
    monkeypatch.setattr(modfetch, "RANGE_MIN", 4 << 20)


GET = (
    "import sys\nfrom wgtpm import modfetch\nfrom wgtpm.cli import main\n"
    "modfetch.RANGED_MIN, modfetch.RANGE_MIN = 16 << 20, 4 << 20\n"
    f"sys.exit(main(['get', '-q', '{MOD}@v0.1.0']))\n"
)


def spawn_get(project: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", GET],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def big(tree: ProxyTree) -> ProxyTree:
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": BIG})
    return tree


def closed_ranges(srv: ProxyTreeServer) -> list[tuple[int, int]]:
    out = []
    for s in srv.log.where(path=FILE_PATH):
        m = RANGE.match(s.header("range") or "")
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def leftovers() -> list[Path]:
    tmp = Cache().root / "tmp"
    return [p for p in tmp.glob(f"{SHA}.partial*")] if tmp.exists() else []


def got_it() -> None:
    assert (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").read_bytes() == BIG
    assert not leftovers()


def test_a_large_file_comes_in_ranges(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        ranges = sorted(closed_ranges(srv))
    assert ranges == [(i << 22, ((i + 1) << 22) - 1) for i in range(4)]  # 4 MiB each
    got_it()


def test_a_range_cut_midway_resumes(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.reset(FILE_PATH, at=0.5, times=2))
        srv.inject(Fault.truncate(FILE_PATH, at=0.3, times=1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        starts = {a for a, _ in closed_ranges(srv)}
    assert len(starts) > 4  # some range went on from where it was cut
    got_it()


class _IgnoresRange(ProxyTreeServer):
    def route(self, req: Request) -> Response:
        resp = super().route(req)
        if resp.status == 206:
            p = self.root / req.path.lstrip("/")
            return Response(200, {}, p.read_bytes())
        return resp


class _OtherLength(ProxyTreeServer):
    """Answers ranges as if the file were a byte longer (a different file than indexed)."""

    def route(self, req: Request) -> Response:
        resp = super().route(req)
        if req.path == FILE_PATH:
            return serve_bytes(req, BIG + b"!")
        return resp


def test_a_server_that_ignores_range_gets_one_stream(wgtpm, big, project, monkeypatch) -> None:
    with _IgnoresRange(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    got_it()


def test_a_different_length_is_refused_and_nothing_kept(wgtpm, big, project, monkeypatch) -> None:
    with _OtherLength(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "weights.bin" in r.err and "more than the" in r.err, r.err
    assert not leftovers()
    assert not (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").exists()


def test_a_failing_range_is_a_clear_error_and_the_rest_is_kept(
    wgtpm, big, project, monkeypatch
) -> None:
    monkeypatch.setattr(modfetch.FetchOptions, "resume_attempts", 1)
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.error(FILE_PATH, status=503, times=-1))
        srv.faults._faults[-1].method = "GET"  # every GET of the file fails
        monkeypatch.setenv("WGTPROXY", srv.url)
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "weights.bin" in r.err and "503" in r.err, r.err


def journals() -> dict[int, int]:
    """``{range start: bytes in the file}`` of the ranges of the partial download."""
    part = Cache().root / "tmp" / f"{SHA}.partial"
    out = {}
    for p in leftovers():
        start = p.name[len(part.name) + 1 :]
        if start.isdigit() and len(raw := p.read_bytes()) == 20:
            out[int(start)] = int(raw)
    return out


def test_killed_while_ranges_download_resumes(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.drip(FILE_PATH, delay=0.02, chunk=64 * 1024, times=-1))
        env = {**os.environ, "WGTPROXY": srv.url}
        proc = spawn_get(project, env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            len([n for n in journals().values() if n > 256 << 10]) < 3
        ):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        kept = journals()
        assert len([n for n in kept.values() if n > 256 << 10]) >= 3, kept
        assert all(n < 4 << 20 for n in kept.values()), kept
        part = (Cache().root / "tmp" / f"{SHA}.partial").read_bytes()
        for start, n in kept.items():  # every byte a journal counts is in the file
            assert part[start : start + n] == BIG[start : start + n]
        assert SHA not in [p.name for p in (Cache().root / "blobs").rglob("*")]
        srv.faults.clear()
        srv.log.clear()
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        starts = [a for a, _ in closed_ranges(srv)]
    assert any(a % (4 << 20) for a in starts), starts  # ranges went on where they stopped
    got_it()


def test_two_processes_share_one_ranged_download(big, tmp_path) -> None:
    projects = []
    for n in ("p1", "p2"):
        d = tmp_path / n
        d.mkdir()
        (d / "wgt.mod").write_text(f"module example.com/{n}\n")
        projects.append(d)
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.drip(FILE_PATH, delay=0.01, chunk=256 * 1024, times=-1))
        env = {**os.environ, "WGTPROXY": srv.url}
        procs = [spawn_get(d, env) for d in projects]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        ranges = closed_ranges(srv)
    assert len(ranges) == 4  # one process fetched the ranges; the other waited for its blob
    got_it()


def test_files_enough_to_keep_the_jobs_busy_are_not_split(
    wgtpm, tree, project, monkeypatch
) -> None:
    other = os.urandom(16 << 20)
    files = {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": BIG, "other.bin": other}
    tree.add(MOD, "v0.1.0", files)
    with ProxyTreeServer(tree.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", "-j", "2", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        assert not closed_ranges(srv)  # two jobs, two large files: one stream each
    got_it()


def _journal(start: int, n: int) -> None:
    tmp = Cache().root / "tmp"
    (tmp / f"{SHA}.partial.{start}").write_bytes(b"%020d" % n)


def test_journals_that_count_bytes_never_written_end_in_a_clean_download(
    wgtpm, big, project, monkeypatch
) -> None:
    # a power cut may keep a journal while losing the bytes it counts: they read as zeros
    tmp = Cache().root / "tmp"
    tmp.mkdir(parents=True)
    with open(tmp / f"{SHA}.partial", "wb") as f:
        f.write(BIG[: 4 << 20])
        f.truncate(len(BIG))
    for start in range(0, len(BIG), 4 << 20):
        _journal(start, 4 << 20)
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    got_it()


def test_a_ranged_partial_goes_on_as_one_stream_from_its_contiguous_bytes(
    wgtpm, big, project, monkeypatch
) -> None:
    # killed while in ranges; the next run streams (the server now ignores Range)
    tmp = Cache().root / "tmp"
    tmp.mkdir(parents=True)
    with open(tmp / f"{SHA}.partial", "wb") as f:
        f.write(BIG[: 6 << 20])
        f.seek(8 << 20)
        f.write(BIG[8 << 20 : 9 << 20])
    _journal(0, 4 << 20)
    _journal(4 << 20, 2 << 20)
    _journal(8 << 20, 1 << 20)
    _journal(12 << 20, 0)
    with _IgnoresRange(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        assert [s.header("range") for s in srv.log.where(path=FILE_PATH)][-1] == "bytes=6291456-"
    got_it()


def _range_times(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch, delay: float, chunk: int, latency=0.0
) -> list[float]:
    """``wgtpm get`` of the big file from a server whose every range drips ``chunk`` bytes
    every ``delay`` seconds, after ``latency``; when each range was asked, in order."""
    with ProxyTreeServer(tree.root) as srv:
        srv.latency = latency
        srv.inject(Fault.drip(FILE_PATH, delay=delay, chunk=chunk, times=-1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        return sorted(s.at for s in srv.log.where(path=FILE_PATH) if s.header("range"))


def test_a_slow_line_gets_more_connections(wgtpm, big, project, monkeypatch) -> None:
    # each connection drips 32 KiB every 20 ms (1.6 MB/s): a 4 MiB range takes 2.6 s,
    # so ranges asked for well before that came from widening, not from a finished range
    asked = _range_times(wgtpm, big, project, monkeypatch, 0.02, 32 << 10)
    assert len(asked) == 4
    assert asked[-1] - asked[0] < 1.5, asked  # all four at once, not two then two
    got_it()


def test_a_far_server_gets_every_range_at_its_first_answer(
    wgtpm, big, project, monkeypatch
) -> None:
    """A first range answered FAR_ANSWER or more after it was asked starts the others at
    once. The pace rule alone would never widen here (RANGE_SLOW 0), and each range
    drips for 2.6 s, so ranges asked together came from the far rule."""
    monkeypatch.setattr(modfetch, "RANGE_SLOW", 0)
    far = modfetch.FAR_ANSWER * 2
    asked = _range_times(wgtpm, big, project, monkeypatch, 0.02, 32 << 10, latency=far)
    assert len(asked) == 4
    assert asked[-1] - asked[0] < 1.5, asked
    got_it()


def test_a_near_server_keeps_the_pace_rule(wgtpm, big, project, monkeypatch) -> None:
    """The contrast: answered at once (loopback), a drip with RANGE_SLOW 0 comes one
    range after the other (0.64 s each), on the one connection the file starts with."""
    monkeypatch.setattr(modfetch, "RANGE_SLOW", 0)
    monkeypatch.setattr(modfetch, "FAR_ANSWER", 60.0)  # however busy this machine is
    asked = _range_times(wgtpm, big, project, monkeypatch, 0.01, 64 << 10)
    assert len(asked) == 4
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(asked)), asked
    got_it()


def test_pace_widens_at_once_for_a_far_server(monkeypatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(modfetch.time, "monotonic", lambda: clock[0])
    state, widened, far = _State(), [], [False]
    pace = modfetch._Pace(state, lambda: 1, widened.append, lambda: far[0])  # type: ignore[arg-type]
    pace.tick()
    assert widened == []
    far[0] = True
    pace.tick()  # no bytes yet, no window: the answer's delay is enough
    assert widened == [modfetch.ALL_RANGES]
    clock[0] += 10
    state.done[0] = 1 << 20
    pace.tick()
    assert widened == [modfetch.ALL_RANGES]  # once


class _State:
    def __init__(self) -> None:
        self.done = [0, 0]
        self.wait = 0.0

    def come(self) -> int:
        return sum(self.done)

    def waited(self) -> float:
        return self.wait


def test_pace_widens_only_when_each_connection_is_slow(monkeypatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(modfetch.time, "monotonic", lambda: clock[0])
    state, running, widened = _State(), [2], []

    def widen(n: int) -> None:
        widened.append(n)
        running[0] += n

    pace = modfetch._Pace(state, lambda: running[0], widen)  # type: ignore[arg-type]
    pace.tick()  # nothing yet: the window has not started (connecting)
    clock[0] += 1.0
    state.done[0] = 1 << 20
    pace.tick()  # first bytes: the window starts now
    assert widened == []
    fast = int(modfetch.RANGE_SLOW * 2 * modfetch.PACE_WINDOW * 1.5)
    clock[0] += modfetch.PACE_WINDOW * 1.01  # (a whole window, float error aside)
    state.done[0] += fast
    pace.tick()
    assert widened == []  # two connections each faster than RANGE_SLOW: enough
    clock[0] += modfetch.PACE_WINDOW * 1.01
    state.done[1] += int(modfetch.RANGE_SLOW * modfetch.PACE_WINDOW)  # half as fast as needed
    state.wait += modfetch.PACE_WINDOW * 0.8  # ... because the hash kept them waiting
    pace.tick()
    assert widened == []  # the line was not what held them back
    stale = modfetch.PACE_WINDOW * modfetch.PACE_STALE
    clock[0] += stale
    state.done[1] += int(modfetch.RANGE_SLOW * 0.75 * stale * 2)  # 3/4 as fast, a long window
    pace.tick()
    assert widened == []  # the pace was not looked at for that long: this process stalled
    clock[0] += modfetch.PACE_WINDOW * 1.01
    state.done[1] += int(modfetch.RANGE_SLOW * modfetch.PACE_WINDOW)  # half as fast, again
    pace.tick()
    assert widened == [modfetch.ALL_RANGES]  # capped connections: every range at once
    clock[0] += modfetch.PACE_WINDOW / 2
    pace.tick()
    assert widened == [modfetch.ALL_RANGES]  # not before a whole window


def test_pace_widens_after_a_long_window_of_a_capped_line(monkeypatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(modfetch.time, "monotonic", lambda: clock[0])
    state, widened = _State(), []
    pace = modfetch._Pace(state, lambda: 1, widened.append)  # type: ignore[arg-type]
    state.done[0] = 1 << 20
    pace.tick()  # first bytes: the window starts now
    stale = modfetch.PACE_WINDOW * modfetch.PACE_STALE * 1.2
    clock[0] += stale  # a busy machine ticked late ...
    state.done[0] += int(modfetch.RANGE_SLOW * 0.4 * stale)  # ... and the line is capped
    pace.tick()
    assert widened == [modfetch.ALL_RANGES]


@pytest.fixture
def h11_fed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes handed to h11, counted; bodies of 1 MiB and up skip it."""
    import h11

    fed = [0]
    receive = h11.Connection.receive_data

    def counting(self: h11.Connection, data: bytes) -> None:
        fed[0] += len(data)
        receive(self, data)

    monkeypatch.setattr(h11.Connection, "receive_data", counting)
    monkeypatch.setattr(_httptransport, "RAW_MIN", 1 << 20)
    return fed


@pytest.mark.parametrize("server", [ProxyTreeServer, _IgnoresRange], ids=["ranges", "one stream"])
def test_a_large_body_skips_h11_and_a_cut_in_it_resumes(
    wgtpm, big, project, monkeypatch, h11_fed, server
) -> None:
    # in ranges the bodies are read from the socket into buffers (the bytes next in line
    # for the hash) or spliced into the file (the others); one stream reads them past h11
    spliced, received = [], []
    splice, recv_into = _httptransport.Stream.splice, _httptransport.Stream.recv_into

    def counting_splice(self, *args):  # type: ignore[no-untyped-def]
        spliced.append(n := splice(self, *args))
        return n

    def counting_recv(self, *args):  # type: ignore[no-untyped-def]
        received.append(n := recv_into(self, *args))
        return n

    monkeypatch.setattr(_httptransport.Stream, "splice", counting_splice)
    monkeypatch.setattr(_httptransport.Stream, "recv_into", counting_recv)
    with server(big.root) as srv:
        srv.inject(Fault.truncate(FILE_PATH, at=0.5, times=1))
        srv.inject(Fault.reset(FILE_PATH, at=0.7, times=1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        asked = [s for s in srv.log.where(path=FILE_PATH) if s.method == "GET"]
    assert len(asked) > (4 if server is ProxyTreeServer else 1)  # cut bodies went on
    assert h11_fed[0] < len(BIG) // 4, h11_fed  # the bodies' bytes went past h11
    assert bool(spliced or received) == (server is ProxyTreeServer), (spliced, received)
    got_it()


def test_a_spliced_range_that_stalls_times_out_and_resumes(
    wgtpm, big, project, monkeypatch, h11_fed
) -> None:
    monkeypatch.setenv("WGTPM_HTTP_TIMEOUT", "1")
    with ProxyTreeServer(big.root) as srv:
        # one range's body: 1 MiB, then nothing for 3 s (past the timeout)
        srv.inject(Fault.drip(FILE_PATH, delay=3.0, chunk=1 << 20, times=1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        starts = {a for a, _ in closed_ranges(srv)}
    assert len(starts) > 4, starts  # the stalled range went on from its first MiB
    got_it()


class _Blobs(LoopbackServer):
    """Serves the 16 MiB file at every path (Range works)."""

    def route(self, req: Request) -> Response:
        return serve_bytes(req, BIG)


def _read_body(resp: httpx.Response, f: BinaryIO, size: int, how: str) -> int:
    """Read ``resp``'s body of at most ``size`` bytes into ``f`` with a BodyReader, spliced
    into the file or through a buffer; how many bytes came."""
    at = 0
    buf = bytearray(1 << 20)
    with _httptransport.BodyReader(resp, size) as body:
        while True:
            if how == "spliced":
                n = body.into_file(f.fileno(), at, size - at)
            else:
                n = body.into(memoryview(buf))
                os.pwrite(f.fileno(), buf[:n], at)
            if not n:
                return at
            at += n


@pytest.mark.parametrize("how", ["spliced", "into buffers", "read past h11"])
def test_a_body_read_past_h11_keeps_its_connection(tmp_path, h11_fed, how) -> None:
    """h11 is told the body it did not see has come, so the connection serves the next
    request; a body cut short closes it."""
    out = tmp_path / "out"
    with _Blobs() as srv, HttpClient() as http, open(out, "wb+") as f:

        def get(url: str) -> bytes:
            with http.stream(url) as resp:
                if how == "read past h11":
                    return b"".join(resp.iter_bytes())
                f.truncate(0)
                assert _read_body(resp, f, len(BIG), how) == len(BIG)
                f.seek(0)
                return f.read()

        for i in range(3):
            assert get(f"{srv.url}/f{i}") == BIG
        assert srv.connections == 1
        assert h11_fed[0] < len(BIG)  # the bodies' bytes went past h11
        srv.inject(Fault.truncate("/cut", at=0.5))
        with pytest.raises(httpx.HTTPError):
            get(f"{srv.url}/cut")
        assert get(f"{srv.url}/after") == BIG
        assert srv.connections == 2  # the cut one was not pooled


@pytest.mark.parametrize("how", ["spliced", "into buffers"])
def test_bodies_past_h11_share_pooled_connections_between_threads(
    tmp_path, monkeypatch, how
) -> None:
    """A connection that goes back to the pool the moment its body ends is taken by
    another thread's request at once: what the first request set on it (its reads'
    size, which says whether a body goes past h11) must be undone before, not after."""
    monkeypatch.setenv("WGTPM_HTTP_TIMEOUT", "2")  # a body left waiting fails, fast
    size = 2 << 20
    with _Blobs() as srv, HttpClient() as http:

        def worker(k: int) -> None:
            with open(tmp_path / f"out{k}", "wb+") as f:
                for i in range(12):
                    start = (k * 12 + i) % 8 * size
                    hdrs = {"Range": f"bytes={start}-{start + size - 1}"}
                    with http.stream(f"{srv.url}/f", headers=hdrs) as resp:
                        got = _read_body(resp, f, size, how)
                    assert got == size
                    f.seek(0)
                    assert f.read(size) == BIG[start : start + size]

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for fut in [pool.submit(worker, k) for k in range(6)]:
                fut.result()
        assert srv.connections <= 12  # pooled, not one per body


class _LongRanges(ProxyTreeServer):
    """Answers a range with the right Content-Range but a body a MiB longer."""

    def route(self, req: Request) -> Response:
        resp = super().route(req)
        if resp.status == 206:
            return Response(206, resp.headers, resp.body + os.urandom(1 << 20))
        return resp


def test_a_range_longer_than_asked_is_refused_and_the_file_comes_as_one_stream(
    wgtpm, big, project, monkeypatch, h11_fed
) -> None:
    with _LongRanges(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err  # refused as ranges; fetched as one stream
    got_it()


class _ExpiringCdn(CdnServer):
    """A CDN whose signed URLs stop working once, after ``good`` requests (they expired)."""

    good = 1 << 30

    def handle(self, req: Request) -> Response:
        with self._lock:
            self.good -= 1
            expired = self.good == -1
        if expired:
            return Response.text("Request has expired", 403)
        return super().handle(req)


def _hf_fetch(tmp_path: Path, cdn: CdnServer) -> tuple[HuggingFaceServer, Path]:
    """Download a 16 MiB LFS file of the loopback Hub (its CDN ``cdn``) in ranges."""
    with HuggingFaceServer(cdn, token="hf_secret") as hub, HttpClient() as http:
        repo = hub.repo("acme", "big")
        repo.commit({"model.safetensors": BIG})
        repo.tag("v0.1.0")
        src = HuggingFaceSource(http, endpoint=hub.url, token="hf_secret")
        fetcher = Fetcher(Cache(tmp_path / "c"), src, RecordingSums(), http=lambda: http)
        tree = fetcher.download("hf.co/acme/big", "v0.1.0")
        assert (tree / "model.safetensors").read_bytes() == BIG
    return hub, tree


def test_ranges_after_the_first_skip_the_redirect(tmp_path: Path) -> None:
    """The first ranges learn the CDN URL the Hub redirects to; the others go there
    directly, without the token (the CDN refuses a request that carries one)."""
    with CdnServer() as cdn:
        hub, _ = _hf_fetch(tmp_path, cdn)
        ranges = cdn.log.where(server="cdn", method="GET")
    resolves = hub.log.where(server="hf", path="*/resolve/*/model.safetensors")
    assert len(ranges) == 4  # 16 MiB in 4 MiB ranges
    assert len(resolves) == modfetch.RANGES_FIRST  # the ranges started before any answer
    assert all(r.header("authorization") is None for r in ranges)


def test_a_learned_url_that_expires_is_asked_for_again(tmp_path: Path) -> None:
    with _ExpiringCdn() as cdn:
        cdn.good = modfetch.RANGES_FIRST  # the first ranges' own; the next one is refused
        hub, _ = _hf_fetch(tmp_path, cdn)
        refused = cdn.log.where(server="cdn", status=403)
        asked = cdn.log.where(server="cdn", method="GET")
    resolves = hub.log.where(server="hf", path="*/resolve/*/model.safetensors")
    assert len(refused) == 1
    # asked again after the refusal (and by a range that started before the new URL was
    # learned), but not before every range as without learning
    assert modfetch.RANGES_FIRST + 1 <= len(resolves) < len(asked)


def test_a_learned_url_that_expires_on_the_last_try_fails_the_range(tmp_path: Path) -> None:
    """Asking again for an expired URL counts as a try: on a range's last one, the get
    fails with the range's error (it once ended the range unfilled, and the hash waited
    for its bytes for ever)."""
    opts = modfetch.FetchOptions(resume_attempts=0)
    with _ExpiringCdn() as cdn, HuggingFaceServer(cdn, token="hf_secret") as hub:
        cdn.good = modfetch.RANGES_FIRST  # the first ranges' own; the next one is refused
        repo = hub.repo("acme", "big")
        repo.commit({"model.safetensors": BIG})
        repo.tag("v0.1.0")
        with HttpClient() as http:
            src = HuggingFaceSource(http, endpoint=hub.url, token="hf_secret")
            cache = Cache(tmp_path / "c")
            fetcher = Fetcher(cache, src, RecordingSums(), http=lambda: http, opts=opts)
            errors: list[BaseException] = []

            def get() -> None:
                try:
                    fetcher.download("hf.co/acme/big", "v0.1.0")
                except BaseException as exc:
                    errors.append(exc)

            th = threading.Thread(target=get, daemon=True)
            th.start()
            th.join(120)  # a hang guard, not a speed check
            if th.is_alive():
                _interrupt.CANCEL.set()  # let the stuck download go, then fail
                th.join(10)
                _interrupt.CANCEL.clear()
                raise AssertionError("the download never ended")
    assert len(errors) == 1
    err = errors[0]
    assert isinstance(err, FetchError), err
    assert "gave up after 1 tries" in str(err) and "403" in str(err), err
