"""The machinery of the hostile-request suite (``test_hostile_requests.py``).

- :class:`ServerProcess`: ``wgtpm registry serve`` as a child process on
  loopback, its stdout and stderr in one log file (read from an offset, so a
  traceback is tied to the request that caused it) and its memory read from
  ``/proc/PID/status`` (``VmRSS`` now, ``VmHWM`` the peak).
- :class:`Wire`: a request as the bytes that go on the wire, and
  :func:`exchange`, a raw-socket HTTP/1.1 client that sends them and parses
  what comes back. No HTTP library sits in between, because they refuse
  (h11, httpx) or rewrite (``..`` segments, header casing) exactly the
  requests this suite is about.
- :class:`Findings`: every check of every answer; failures are collected
  under a signature (what failed, on which route, with which status), and for
  each signature the shortest reproduction is kept, so a run reports each
  distinct failure once, with its smallest example, instead of stopping at
  the first.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import httpx

__all__ = [
    "Answer",
    "Findings",
    "Private",
    "ServerProcess",
    "Wire",
    "exchange",
    "server_env",
]

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 10.0  # seconds for a whole exchange: far above any answer of a loopback server
LOG_SETTLE = 0.3  # seconds to let the server log a failure it answered before logging
MAX_ANSWER = 64 << 20  # bytes read back from one connection at most (protects the test itself)
#: A string the strategies plant in hostile values (Host, path segments): an answer may only
#: hold it when its own request did, else it came from another request (a poisoned cache).
PROBE = "zq-probe"


# -- the server


class ServerProcess:
    """``wgtpm registry serve --data DATA --port PORT *flags`` with its output in ``log``."""

    def __init__(self, data: Path, flags: Iterable[str], env: dict[str, str]) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / f"serve-{self.port}.log"
        self._out = self.log.open("wb")
        cmd = [sys.executable, "-m", "wgtpm", "registry", "serve", "--data", str(data)]
        cmd += ["--port", str(self.port), *flags]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the registry did not start:\n{self.log_text()}")
            time.sleep(0.1)

    def log_text(self, start: int = 0) -> str:
        """The log from byte ``start`` on."""
        with self.log.open("rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", "replace")

    def log_size(self) -> int:
        return self.log.stat().st_size

    def memory(self) -> tuple[int, int]:
        """(resident bytes now, peak resident bytes) of the server process."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        now = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        peak = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        assert now and peak, status
        return int(now.group(1)) << 10, int(peak.group(1)) << 10

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


# -- the wire


@dataclass(frozen=True)
class Wire:
    """One request (or, with ``raw``, any bytes at all) and what the checks need to know.

    ``route`` names the template it was built from (the failure signature),
    ``auth`` the token presented (a key of :attr:`Findings.tokens`, or
    ``None``), ``requests`` how many answers the bytes ask for (pipelining),
    and ``half_close`` whether the client stops sending after them (a body
    shorter than its ``Content-Length``: the server may then answer nothing).
    """

    route: str
    method: str = "GET"
    target: str = "/"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    auth: str | None = None
    raw: bytes | None = None
    requests: int = 1
    half_close: bool = False
    context: str = ""  # requests sent before this one that it depends on, in words
    known: bytes = b""  # what the client sent before (an answer echoing it leaks nothing)

    def encode(self) -> bytes:
        if self.raw is not None:
            return self.raw
        lines = [f"{self.method} {self.target} HTTP/1.1"]
        names = {k.lower() for k, _ in self.headers}
        if "host" not in names:
            lines.append("Host: 127.0.0.1")
        lines += [f"{k}: {v}" for k, v in self.headers]
        if "content-length" not in names and "transfer-encoding" not in names and self.body:
            lines.append(f"Content-Length: {len(self.body)}")
        if "connection" not in names:
            lines.append("Connection: close")
        head = "\r\n".join(lines) + "\r\n\r\n"
        return head.encode("utf-8", "surrogateescape") + self.body

    def describe(self, limit: int = 600) -> str:
        """The request as a reader wants it in a failure: the bytes, cut to ``limit``."""
        data = self.encode()
        shown = repr(data[:limit])[2:-1]
        more = f" ... ({len(data)} bytes in all)" if len(data) > limit else ""
        ctx = f"  after: {self.context}\n" if self.context else ""
        return f"{ctx}  sent: {shown}{more}"


@dataclass
class Answer:
    """One parsed response."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def text(self) -> str:
        """Status line, headers and body, for the leak checks and the failure messages."""
        head = "".join(f"{k}: {v}\n" for k, v in self.headers)
        return f"{self.status} {self.reason}\n{head}\n" + self.body.decode("latin-1")

    def excerpt(self, limit: int = 400) -> str:
        t = self.text()
        return repr(t[:limit]) + (f" ... ({len(t)} chars)" if len(t) > limit else "")


@dataclass
class Exchange:
    """What came back for a :class:`Wire`: the answers, and how the connection ended."""

    answers: list[Answer]
    error: str = ""  # "" when every answer asked for came back whole
    seconds: float = 0.0


def _parse(buf: bytes, head_only: bool) -> tuple[Answer, int] | None:
    """The first complete response in ``buf`` and its length; ``None`` when incomplete.
    A response without ``Content-Length`` or chunking runs to the end of ``buf``
    (the caller passes it once the server has closed)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP status line: {lines[0]!r}")
    status, reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
    headers = [(k.strip(), v.strip()) for k, _, v in (h.partition(":") for h in lines[1:])]
    answer = Answer(status, reason, headers, b"")
    pos = end + 4
    if head_only or status in (204, 304) or 100 <= status < 200:
        return answer, pos
    if (answer.header("transfer-encoding") or "").lower() == "chunked":
        body = bytearray()
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                return None
            size = int(buf[pos:nl].split(b";")[0], 16)
            if len(buf) < nl + 2 + size + 2:
                return None
            body += buf[nl + 2 : nl + 2 + size]
            pos = nl + 2 + size + 2
            if size == 0:
                answer.body = bytes(body)
                return answer, pos
    length = answer.header("content-length")
    if length is None:
        return None  # runs to the close
    n = int(length)
    if len(buf) < pos + n:
        return None
    answer.body = buf[pos : pos + n]
    return answer, pos + n


def exchange(port: int, wire: Wire) -> Exchange:
    """Send ``wire`` to 127.0.0.1:``port`` and read its answers (at most :data:`TIMEOUT` s)."""
    start = time.monotonic()
    deadline = start + TIMEOUT
    answers: list[Answer] = []
    buf = b""
    closed = False
    error = ""
    head_only = wire.method == "HEAD"
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        try:
            sock.sendall(wire.encode())
            if wire.half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError as exc:  # the server answered early and closed: read what it sent
            error = f"send failed: {exc}"
        while len(answers) < wire.requests:
            try:
                parsed = _parse(buf, head_only)
            except ValueError as exc:
                error = f"unparsable answer: {exc}"
                break
            if parsed is not None:
                if 100 <= parsed[0].status < 200:  # 100 Continue: an interim answer
                    buf = buf[parsed[1] :]
                    continue
                answers.append(parsed[0])
                buf = buf[parsed[1] :]
                continue
            if closed:
                tail = _to_close(buf, head_only)
                if tail is not None:
                    answers.append(tail)
                elif buf:
                    error = f"answer cut short: {buf[:200]!r}"
                break
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                error = f"no answer within {TIMEOUT:.0f} s"
                break
            try:
                chunk = sock.recv(1 << 16)
            except OSError as exc:
                chunk, error = b"", f"connection reset: {exc}"
            if not chunk:
                closed = True
            buf += chunk
            if len(buf) > MAX_ANSWER:
                error = f"answer over {MAX_ANSWER} bytes"
                break
    if len(answers) < wire.requests and not error:
        error = f"connection closed after {len(answers)} of {wire.requests} answers"
    elif len(answers) == wire.requests:
        error = ""  # a failed send or a reset after the answers does not matter
    return Exchange(answers, error, time.monotonic() - start)


def _to_close(buf: bytes, head_only: bool) -> Answer | None:
    """A response that ran to the close: its head is whole and it has no length."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    try:
        parsed = _parse(buf[: end + 4], True)
    except ValueError:
        return None
    if parsed is None:
        return None
    answer = parsed[0]
    if (
        answer.header("content-length") is not None
        or (answer.header("transfer-encoding") or "").lower() == "chunked"
    ):
        if not head_only and answer.status not in (204, 304):
            return None  # it promised a length, and the close came first
    elif not head_only:
        answer.body = buf[end + 4 :]
    return answer


# -- the checks


@dataclass(frozen=True)
class Private:
    """A private module: the byte strings of it that no one else may ever see, the
    names of the tokens that may read it, and the (lower-case) strings that name it in a
    URL, compared with the URL percent-decoded, in lower case and without ``!`` (so that
    every case variant and escape of the name counts: none answers anyone else with a 2xx
    or 3xx)."""

    module: str
    markers: tuple[bytes, ...]
    readers: frozenset[str]
    names: tuple[str, ...]


@dataclass
class Failure:
    kind: str
    route: str
    status: str
    wire: Wire
    detail: str
    count: int = 1

    def message(self) -> str:
        return (
            f"[{self.kind}] {self.wire.method!r} on route {self.route} (status {self.status}),"
            f" {self.count} case(s); the shortest:\n{self.wire.describe()}\n  {self.detail}"
        )


@dataclass
class Findings:
    """Sends requests, checks every answer, and keeps the distinct failures.

    ``tokens`` maps a token's name to its text (none may ever appear in an
    answer); ``private`` lists the private modules (their markers may appear
    only in an answer to a request that presents one of their readers, or
    that carried the marker itself); ``allowed_5xx`` are the statuses above
    499 that are documented answers (503: a store is down; 502: the caching
    proxy's upstream failed).
    """

    server: ServerProcess
    tokens: dict[str, str]
    private: list[Private]
    allowed_5xx: frozenset[int] = frozenset({502, 503})
    failures: dict[tuple[str, str, str], Failure] = field(default_factory=dict)
    sent: int = 0

    def send(self, wire: Wire) -> list[Answer]:
        """Send ``wire``, check what came back, and return the answers."""
        log_start = self.server.log_size()
        got = exchange(self.server.port, wire)
        self.sent += 1
        if got.error or any(a.status >= 500 for a in got.answers):
            self._settle(log_start)
        self.check(wire, got, log_start)
        return got.answers

    def _settle(self, start: int) -> None:
        """Wait (up to :data:`LOG_SETTLE`) for the log line of a failure: uvicorn logs an
        app's exception after the 500 has been sent."""
        deadline = time.monotonic() + LOG_SETTLE
        while time.monotonic() < deadline:
            if '"level":"error"' in self._new_log(start):
                time.sleep(0.02)  # the rest of the record
                return
            time.sleep(0.01)

    def fail(self, kind: str, wire: Wire, status: str, detail: str) -> None:
        key = (kind, wire.route, status)
        old = self.failures.get(key)
        if old is None:
            self.failures[key] = Failure(kind, wire.route, status, wire, detail)
            return
        old.count += 1
        if len(wire.encode()) + len(wire.context) < len(old.wire.encode()) + len(old.wire.context):
            old.wire, old.detail = wire, detail

    def check(self, wire: Wire, got: Exchange, log_start: int) -> None:
        status = ",".join(str(a.status) for a in got.answers) or "none"
        kinds, details = [], []
        if got.error and not (wire.half_close and not got.answers):
            kinds.append("no answer")
            details.append(got.error)
        for a in got.answers:
            if a.status >= 500 and a.status not in self.allowed_5xx:
                kinds.append(f"{a.status}")
                details.append(f"got {a.excerpt()}")
        new_log = self._new_log(log_start)
        if "Traceback" in new_log:
            kinds.append("traceback in log")
        if kinds:  # one bug, one failure: its symptoms joined, and the exception it raised
            details.append(f"log: {_log_excerpt(new_log)}" if new_log.strip() else "log: -")
            kinds += _exception_names(new_log)
            self.fail(" + ".join(kinds), wire, status, "\n  ".join(details))
        sent = wire.encode() + wire.known
        for a in got.answers:
            self._leaks(wire, sent, a, status)

    def _leaks(self, wire: Wire, sent: bytes, a: Answer, status: str) -> None:
        text = a.text().encode("latin-1", "replace")
        for name, token in self.tokens.items():
            secret = token.split("_", 2)[2].encode()  # wgt_ID_SECRET; SECRET may hold "_"
            if token.encode() in text or secret in text:
                self.fail("token in answer", wire, status, f"the {name} token is in {a.excerpt()}")
        target = unquote(wire.target).lower().replace("!", "")
        for p in self.private:
            if wire.auth in p.readers:
                continue
            if a.status < 400 and any(n in target for n in p.names):
                self.fail(
                    "private module answered",
                    wire,
                    status,
                    f"{p.module} is private; presented token: {wire.auth}; got {a.excerpt()}",
                )
            for m in p.markers:
                if m in text and m not in sent:
                    where = text.find(m)
                    self.fail(
                        "private byte in answer",
                        wire,
                        status,
                        f"{p.module}'s {m[:40]!r} at offset {where} of {a.excerpt(300)}"
                        f" (presented token: {wire.auth})",
                    )
                    break
        probe = PROBE.encode()
        if probe in text and probe not in sent:
            self.fail(
                "another request's content",
                wire,
                status,
                f"{PROBE!r} (planted by an earlier request) is in {a.excerpt()}",
            )
        if (a.header("content-type") or "").startswith("text/html") and b"<" + probe in text:
            self.fail(
                "unescaped markup", wire, status, f"<{PROBE} is raw in the HTML: {a.excerpt()}"
            )

    def _new_log(self, start: int) -> str:
        return self.server.log_text(start) if self.server.log_size() > start else ""

    def report(self) -> str:
        return "\n\n".join(
            f.message() for f in sorted(self.failures.values(), key=lambda f: (f.kind, f.route))
        )


def _exception_names(text: str) -> list[str]:
    """The classes of the exceptions whose tracebacks ``text`` (the server's log) holds."""
    names = []
    for line in text.splitlines():
        try:
            exc = str(json.loads(line).get("exc", ""))
        except (ValueError, AttributeError):
            continue
        if exc:
            names.append(exc.splitlines()[-1].partition(":")[0])
    return sorted(set(names))


def _log_excerpt(text: str, limit: int = 1200) -> str:
    """The log's error records: each message with the last lines of its traceback (where
    the exception is named), else the log's first lines."""
    shown = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            if "Traceback" in line or "Error" in line:
                shown.append(line)
            continue
        if isinstance(doc, dict) and doc.get("level") in ("error", "critical", "warning"):
            exc = str(doc.get("exc", "")).splitlines()
            tail = "\n      ".join(exc[-3:]) if exc else ""
            shown.append(
                f"{doc.get('logger')}: {doc.get('message')}" + (f"\n      {tail}" if tail else "")
            )
    out = "\n    ".join(shown) or "\n    ".join(text.splitlines()[:5])
    return out[:limit] + (" ..." if len(out) > limit else "")


def server_env() -> dict[str, str]:
    """The server's environment: this checkout first on the path, no user settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WGTPM_", "HF_", "WGT"))}
    env["PYTHONPATH"] = str(ROOT)
    env["WGTPM_HTTP_RETRIES"] = "0"
    return env
