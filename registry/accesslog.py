"""Structured access logs: one JSON object per request on the ``registry.access`` logger.

::

    {"time": "2026-12-01T01:33:53.120+00:00", "id": "3f9c01aa-0000002a", "method": "GET",
     "path": "/example.com/m/@v/v1.0.0/w.bin", "status": 206, "bytes": 1048576,
     "ms": 3.2, "client": "127.0.0.1", "range": "bytes=0-1048575", "ua": "wgtpm/0.1.0"}

Fields: ``time`` (UTC, when the response ended), ``id`` (the request id, also sent
as the ``X-Request-Id`` response header and named in every error line and 5xx
body), ``method``, ``path`` (without the query), ``status``, ``bytes`` (of the
response body), ``ms`` (from the request's start to its response's end),
``client`` (the peer's address, or the forwarded one behind a proxy), and, when
the request sent them, ``range`` and ``ua`` (its ``User-Agent``). The
``Authorization`` header is never logged.

:func:`configure` sends the whole logger to one stream (stderr by default);
:func:`configure_split` (``wgtpm registry serve``) sends errors to stderr and
access lines where ``--access-log`` says (:func:`access_sink`): ``off``,
``stdout``, or appended to a file that is reopened when logrotate moves it
(:class:`ReopeningFile`), keeping 1 request in ``sample`` (5xx answers always). Access lines are
written in batches (:class:`JsonLinesHandler`): every :data:`FLUSH_SECONDS`, when
:data:`FLUSH_BYTES` are waiting, and before any other record (so a startup
error or the shutdown message follows every request before it). A write per
request costs a busy server more than the request itself.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import secrets
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
    "REQUEST_ID_HEADER",
    "UVICORN_LOG_CONFIG",
    "AccessLog",
    "JsonFormatter",
    "JsonLinesHandler",
    "ReopeningFile",
    "access_sink",
    "configure",
    "configure_split",
    "log_access",
    "log_request",
    "new_request_id",
    "request_id",
]

FLUSH_SECONDS = 0.5  # the longest an access line waits in the buffer
FLUSH_BYTES = 64 << 10

logger = logging.getLogger("registry.access")
_root = logging.getLogger("registry")

REQUEST_ID_HEADER = b"x-request-id"
# a request id: this process's random prefix and a counter, unique across replicas and
# workers without a random draw per request (the fast path logs 10,000s a second)
_ID_PREFIX = secrets.token_hex(4)
_ids = itertools.count(1)


def new_request_id() -> str:
    """A new request id, ``PREFIX-COUNTER`` (8 and 8 hex digits)."""
    return f"{_ID_PREFIX}-{next(_ids):08x}"


_sampling = [1, 0]  # keep 1 access line in _sampling[0]; _sampling[1] counts


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
        self.before: list[JsonLinesHandler] = []  # flushed before any record of this one
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
                super().flush()
            except (OSError, ValueError):  # the stream is gone: nothing left to tell
                self._batch, self._size = [], 0

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and record.name == logger.name:
            self.write_access(json.dumps(fields, separators=(",", ":")))
            return
        for other in self.before:  # the access lines up to a shutdown message, say
            other.flush()
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
    for old in _root.handlers + logger.handlers:
        old.close()
    _root.handlers[:] = [JsonLinesHandler(stream or sys.stderr)]
    logger.handlers[:] = []
    logger.propagate = True
    logger.setLevel(logging.NOTSET)
    _sampling[:] = [1, 0]
    _root.setLevel(level)
    _root.propagate = False


class ReopeningFile:
    """A text file opened for appending, reopened when its path no longer names it.

    Before each batch of lines :meth:`write` compares the open file's device and
    inode with the path's: after logrotate renames the file (or deletes it) the next
    batch goes to a new file at the path, so no SIGHUP is needed; ``copytruncate``
    works too, as writes append. A stat per batch (at most two a second) is cheap.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = self._open()

    def _open(self) -> IO[str]:
        return open(self.path, "a", encoding="utf-8")

    def _moved(self) -> bool:
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return True
        was = os.fstat(self._file.fileno())
        return (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino)

    def write(self, text: str) -> int:
        if self._moved():
            self._file.close()
            self._file = self._open()
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def access_sink(spec: str) -> IO[str] | None:
    """Where ``--access-log SPEC`` sends access lines: ``None`` for ``off``, stdout for
    ``stdout``, else the file ``SPEC`` (appended to; :class:`ReopeningFile`). An unwritable
    file raises :class:`OSError` here, before the server starts."""
    if spec == "off":
        return None
    if spec == "stdout":
        return sys.stdout
    return ReopeningFile(spec)  # type: ignore[return-value]


def configure_split(access: IO[str] | None, sample: int = 1, level: int = logging.INFO) -> None:
    """Errors and other messages as JSON lines on stderr; access lines on ``access``
    (none when ``None``), 1 request in ``sample`` of those answered below 500."""
    if sample < 1:
        raise ValueError(f"the access log sample must be 1 or more, not {sample}")
    configure(sys.stderr, level)
    _sampling[:] = [sample, 0]
    logger.propagate = False
    if access is None:
        logger.setLevel(logging.WARNING)  # log_access returns at once
        return
    sink = JsonLinesHandler(access)
    logger.handlers[:] = [sink]
    for h in _root.handlers:
        if isinstance(h, JsonLinesHandler):
            h.before.append(sink)


def log_request(
    scope: Scope, status: int, nbytes: int, start: float, rid: str | None = None
) -> None:
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
        rid,
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
    rid: str | None = None,
) -> None:
    """:func:`log_request` with the request's fields read already.

    Written straight to the batch when :func:`configure` set the logging up and
    nothing changed it since; otherwise as a record on ``registry.access``.
    """
    if not logger.isEnabledFor(logging.INFO):
        return
    every = _sampling[0]
    if every > 1 and status < 500:
        _sampling[1] += 1
        if _sampling[1] % every:
            return
    stamp = _stamp()
    ms = round((time.perf_counter() - start) * 1000, 2)
    own = logger.handlers
    if own:
        sink = own[0] if len(own) == 1 and not logger.propagate else None
    else:
        sink = _root.handlers[0] if len(_root.handlers) == 1 else None
    if isinstance(sink, JsonLinesHandler):
        rid_json = "null" if rid is None else f'"{rid}"'  # hex digits and a dash
        # json.dumps of the same fields, without its per-call set-up (a hot path)
        line = (
            f'{{"time":"{stamp}","id":{rid_json},'
            f'"method":{_json_str(method)},"path":{_json_str(path)},'
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
        "id": rid,
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


SCOPE_KEY = "wgtpm.request_id"  # where AccessLog keeps a request's id in its ASGI scope


def request_id(scope: Scope) -> str:
    """The id :class:`AccessLog` gave this request (``-`` outside it)."""
    return str(scope.get(SCOPE_KEY, "-"))


class AccessLog:
    """ASGI middleware that logs each HTTP request when its response is done, with a
    request id (:func:`new_request_id`) it also sends as ``X-Request-Id``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        state: dict[str, Any] = {"status": 500, "bytes": 0}
        rid = new_request_id()
        scope[SCOPE_KEY] = rid

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                message["headers"] = [
                    *message.get("headers", ()),
                    (REQUEST_ID_HEADER, rid.encode()),
                ]
            elif message["type"] == "http.response.body":
                state["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            log_request(scope, state["status"], state["bytes"], start, rid)
