"""Structured access logs: one JSON object per request on the ``registry.access`` logger.

::

    {"time": "2026-12-01T01:33:53.120Z", "method": "GET",
     "path": "/example.com/m/@v/v1.0.0/w.bin", "status": 206, "bytes": 1048576,
     "ms": 3.2, "client": "127.0.0.1", "range": "bytes=0-1048575", "ua": "wgtpm/0.1.0"}

:func:`configure` sends the logger to a stream (stderr by default) as
JSON lines; the ``Authorization`` header is never logged.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import datetime, timezone
from typing import IO, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["UVICORN_LOG_CONFIG", "AccessLog", "JsonFormatter", "configure"]

logger = logging.getLogger("registry.access")


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


def configure(stream: IO[str] | None = None, level: int = logging.INFO) -> None:
    """Log the registry (access and errors) as JSON lines to ``stream``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("registry")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


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
            if logger.isEnabledFor(logging.INFO):
                headers = dict(scope.get("headers") or [])
                client = scope.get("client")
                fields = {
                    "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": state["status"],
                    "bytes": state["bytes"],
                    "ms": round((time.perf_counter() - start) * 1000, 2),
                    "client": client[0] if client else None,
                }
                if b"range" in headers:
                    fields["range"] = headers[b"range"].decode("latin-1")
                if b"user-agent" in headers:
                    fields["ua"] = headers[b"user-agent"].decode("latin-1")
                logger.info("access", extra={"fields": fields})
