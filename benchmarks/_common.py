"""Shared pieces of the benchmarks: a fast static file server on loopback, timing."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    root: Path
    latency: float = 0.0
    protocol_version = "HTTP/1.1"

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
