"""Structured access logs: one JSON object per request on the ``registry.access`` logger.

::

    {"time": "2026-12-01T01:33:53.120Z", "method": "GET",
     "path": "/example.com/m/@v/v1.0.0/w.bin", "status": 206, "bytes": 1048576,
     "ms": 3.2, "client": "127.0.0.1", "range": "bytes=0-1048575", "ua": "wgtpm/0.1.0"}

:func:`configure` sends the logger to a stream (stderr by default) as
JSON lines; the ``Authorization`` header is never logged. Access lines are
written in batches (:class:`JsonLinesHandler`): every :data:`FLUSH_SECONDS`, when
:data:`FLUSH_BYTES` are waiting, and before any other record (so a startup
error or the shutdown message follows every request before it). A write per
request costs a busy server more than the request itself.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from datetime import datetime, timezone
from json.encoder import encode_basestring_ascii as encode_basestring
from typing import IO, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "FLUSH_BYTES",
    "FLUSH_SECONDS",
    "UVICORN_LOG_CONFIG",
    "AccessLog",
    "JsonFormatter",
    "JsonLinesHandler",
    "configure",
    "log_access",
    "log_request",
]

FLUSH_SECONDS = 0.5  # the longest an access line waits in the buffer
FLUSH_BYTES = 64 << 10

logger = logging.getLogger("registry.access")
_root = logging.getLogger("registry")


class JsonFormatter(logging.Formatter):
    """A record as one JSON line: its ``fields`` (access logs) or level and message."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            return json.dumps(fields, separators=(",", ":"))
        doc = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, separators=(",", ":"))


class JsonLinesHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """JSON lines on a stream; access lines (:meth:`write_access`) are batched.

    A daemon thread flushes the batch every :data:`FLUSH_SECONDS`; any other
    record flushes it first, then is written at once.
    """

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        self.setFormatter(JsonFormatter())
        self._batch: list[str] = []
        self._size = 0
        self._ticker = threading.Thread(target=self._tick, name="access-log", daemon=True)
        self._stopped = threading.Event()  # not _closed: logging.Handler sets that to True
        self._ticker.start()

    def write_access(self, line: str) -> None:
        """Queue one access line (a JSON object, without its newline)."""
        with self.lock:  # type: ignore[union-attr]
            self._batch.append(line)
            self._size += len(line)
            if self._size >= FLUSH_BYTES:
                self._write_batch()

    def _write_batch(self) -> None:
        if self._batch:
            self._batch.append("")
            text = "\n".join(self._batch)
            self._batch, self._size = [], 0
            self.stream.write(text)
            self.stream.flush()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            try:
                self._write_batch()
            except (OSError, ValueError):  # the stream is gone: nothing left to tell
                self._batch, self._size = [], 0
            super().flush()

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and record.name == logger.name:
            self.write_access(json.dumps(fields, separators=(",", ":")))
            return
        self.flush()
        super().emit(record)

    def close(self) -> None:
        self._stopped.set()
        self.flush()
        super().close()

    def _tick(self) -> None:
        while not self._stopped.wait(FLUSH_SECONDS):
            if self._batch:
                self.flush()


def configure(stream: IO[str] | None = None, level: int = logging.INFO) -> None:
    """Log the registry (access and errors) as JSON lines to ``stream``."""
    for old in _root.handlers:
        old.close()
    _root.handlers[:] = [JsonLinesHandler(stream or sys.stderr)]
    _root.setLevel(level)
    _root.propagate = False


def log_request(scope: Scope, status: int, nbytes: int, start: float) -> None:
    """Log one finished request (``start`` from :func:`time.perf_counter`) as its JSON line."""
    rng = ua = None
    for k, v in scope.get("headers") or ():
        if k == b"range":
            rng = v.decode("latin-1")
        elif k == b"user-agent":
            ua = v.decode("latin-1")
    client = scope.get("client")
    log_access(
        scope["method"],
        scope["path"],
        status,
        nbytes,
        start,
        client[0] if client else None,
        rng,
        ua,
    )


def log_access(
    method: str,
    path: str,
    status: int,
    nbytes: int,
    start: float,
    client: str | None,
    rng: str | None = None,
    ua: str | None = None,
) -> None:
    """:func:`log_request` with the request's fields read already.

    Written straight to the batch when :func:`configure` set the logging up and
    nothing changed it since; otherwise as a record on ``registry.access``.
    """
    if not logger.isEnabledFor(logging.INFO):
        return
    stamp = _stamp()
    ms = round((time.perf_counter() - start) * 1000, 2)
    handlers = _root.handlers
    sink = handlers[0] if len(handlers) == 1 and not logger.handlers else None
    if isinstance(sink, JsonLinesHandler):
        # json.dumps of the same fields, without its per-call set-up (a hot path)
        line = (
            f'{{"time":"{stamp}","method":{_json_str(method)},"path":{_json_str(path)},'
            f'"status":{status},"bytes":{nbytes},"ms":{ms!r},'
            f'"client":{"null" if client is None else _json_str(client)}'
        )
        if rng is not None:
            line += f',"range":{encode_basestring(rng)}'
        if ua is not None:
            line += f',"ua":{_json_str(ua)}'
        sink.write_access(line + "}")
        return
    fields: dict[str, Any] = {
        "time": stamp,
        "method": method,
        "path": path,
        "status": status,
        "bytes": nbytes,
        "ms": ms,
        "client": client,
    }
    if rng is not None:
        fields["range"] = rng
    if ua is not None:
        fields["ua"] = ua
    logger.info("access", extra={"fields": fields})


_second: list[Any] = [-1, ""]  # the last whole second stamped, and its text


def _stamp() -> str:
    """The current UTC time as ``datetime.isoformat(timespec="milliseconds")`` writes it."""
    t = time.time()
    sec = int(t)
    if sec != _second[0]:
        _second[:] = [sec, datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_second[1]}.{int((t - sec) * 1000):03d}+00:00"


_encoded: dict[str, str] = {}


def _json_str(s: str) -> str:
    """``s`` as a JSON string; the few that repeat (paths, clients, agents) are kept."""
    out = _encoded.get(s)
    if out is None:
        if len(_encoded) >= 4096:
            _encoded.clear()
        out = _encoded[s] = encode_basestring(s)
    return out


# uvicorn's own messages (startup errors, tracebacks of bugs) as JSON lines too.
UVICORN_LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "registry.accesslog.JsonFormatter"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn.error": {"level": "WARNING"},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
    },
}


class AccessLog:
    """ASGI middleware that logs each HTTP request when its response is done."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        state: dict[str, Any] = {"status": 500, "bytes": 0}

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
            elif message["type"] == "http.response.body":
                state["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            log_request(scope, state["status"], state["bytes"], start)
