"""Shared pieces of the benchmarks: a fast static file server on loopback, timing, peak
memory of a command, publishing files from disk into a proxy tree."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from wgtpm._fs import sha256_file
from wgtpm.index import IndexEntry, ReleaseIndex, build_index
from wgtpm.proxytree import ProxyTree

# The commands a benchmark starts run this checkout's wgtpm, not the one the venv's
# editable install points at, so a worktree measures its own code.
ROOT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
# An installed wgtpm has its bytecode compiled: the commands may write and use it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


class _Handler(BaseHTTPRequestHandler):
    root: Path
    latency: float = 0.0
    protocol_version = "HTTP/1.1"
    # Head and body leave in two writes; with Nagle's algorithm the body of an answer on
    # a kept-alive connection waits for the client's delayed ACK (about 14 ms a small
    # answer here), as nginx's tcp_nodelay and uvicorn avoid.
    disable_nagle_algorithm = True

    def log_message(self, *a: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.latency:
            time.sleep(self.latency)
        p = (self.root / self.path.split("?", 1)[0].lstrip("/")).resolve()
        if not p.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = p.stat().st_size
        start, end = 0, size  # [start, end)
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng[6:].split("-")[0]:
            first, _, last = rng[6:].partition("-")
            start = int(first)
            end = min(size, int(last) + 1) if last else size
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        with open(p, "rb") as f:
            offset, left = start, end - start
            while left > 0:
                n = os.sendfile(self.wfile.fileno(), f.fileno(), offset, min(left, 1 << 24))
                if n == 0:
                    break
                offset += n
                left -= n


@contextmanager
def static_server(root: Path, latency: float = 0.0) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (sendfile; optional added latency per request)."""
    handler = type("H", (_Handler,), {"root": Path(root).resolve(), "latency": latency})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def best_of(n: int, fn: Callable[[], object]) -> float:
    """The fastest of ``n`` runs, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def report(name: str, ours: float, peer_name: str, peer: float, target: str) -> None:
    print(
        f"{name}: wgtpm {ours:.3f}s, {peer_name} {peer:.3f}s, ratio {ours / peer:.2f}x ({target})"
    )


def peak_rss(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float]:
    """Run ``cmd``; return its peak resident set in bytes and its wall time in seconds.

    The peak is the kernel's ``ru_maxrss`` of this one child (and of any children it
    waited for), taken with ``wait4``, not polled, so a short spike is not missed.
    """
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    err = p.stderr.read()
    p.stderr.close()
    _, status, usage = os.wait4(p.pid, 0)
    took = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    if p.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({p.returncode}):\n{err.decode(errors='replace')}"
        )
    return usage.ru_maxrss * 1024, took


def publish_files(
    tree: ProxyTree, module: str, version: str, files: Mapping[str, Path]
) -> ReleaseIndex:
    """Publish files already on disk (logical path -> file, ``wgt.mod`` included) into ``tree``.

    Each file is hashed as it streams, so a release of several GiB never sits in memory
    (``ProxyTree.add`` takes the files' bytes).
    """
    entries = [IndexEntry(p, f.stat().st_size, sha256_file(f)) for p, f in sorted(files.items())]
    idx = build_index(module, version, entries)
    tree.put(module, version, idx.to_json(), files)
    return idx


def times_in_turns(runs: int, *fns: Callable[[], object]) -> list[list[float]]:
    """Every time (seconds) of each of ``fns`` over ``runs`` rounds, taken in turns so
    that all of them meet the same machine."""
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            out[i].append(time.perf_counter() - t0)
    return out
