"""uvicorn's internals that the registry's protocols use (:mod:`registry._http`).

The registry runs uvicorn's own HTTP protocols (``H11Protocol``, and
``HttpToolsProtocol`` when httptools is installed) subclassed: their callbacks
(``connection_made``, ``data_received``, ``on_headers_complete``, ...) are
extended, and their attributes read (``cycle``, ``flow``, ``conn``, ``parser``,
``server_state``, ...), none of which uvicorn promises. Every one of them is
named here (:data:`H11_USES`, :data:`HTTPTOOLS_USES`), and checked when this is
first imported, in the code of the class and of its request cycle and flow
control. Where one is missing, :func:`protocol_class` gives uvicorn's own
protocol unchanged (no coalesced writes, no answers from the fast path, no cut of
a stalled connection but uvicorn's own keep-alive timeout), said once with
``wgtpm -x`` and in the ``registry.http`` log.

:class:`Watched` is where the registry's protocols hook a connection's start and
end, the same for both parsers: it wraps uvicorn's transport
(:meth:`Watched.wrap_transport`) before uvicorn sees it and starts the
connection's watch (:meth:`Watched.opened`), and stops it
(:meth:`Watched.closing`) before uvicorn's ``connection_lost``.
"""

from __future__ import annotations

import asyncio
import logging
import types
from typing import Any

from uvicorn.protocols.http import h11_impl
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol

from . import fallback

try:
    from uvicorn.protocols.http import httptools_impl
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is not installed: uvicorn picks h11 too
    httptools_impl = None  # type: ignore[assignment]
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

__all__ = [
    "CALLBACKS",
    "H11_MISSING",
    "H11_USES",
    "HTTPTOOLS_MISSING",
    "HTTPTOOLS_USES",
    "H11Protocol",
    "HttpToolsProtocol",
    "Watched",
    "missing",
    "status_line",
]

#: The methods of uvicorn's protocols that the registry's extend (the rest of what they
#: use are attributes, which uvicorn's code sets).
CALLBACKS = frozenset(
    {
        "connection_made",
        "connection_lost",
        "data_received",
        "on_response_complete",
        "on_message_begin",
        "on_headers_complete",
        "on_body",
        "on_message_complete",
    }
)
#: The callbacks both protocols extend, and the attributes they read.
_COMMON = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_response_complete",
    "loop",
    "app",
    "flow",
    "cycle",
    "transport",
    "client",
    "server_state",
)
#: What :class:`registry._http.CoalescingH11` uses of ``H11Protocol``.
H11_USES = (*_COMMON, "conn")
#: What :class:`registry._http.FastHttpTools` uses of ``HttpToolsProtocol``.
HTTPTOOLS_USES = (
    *_COMMON,
    "on_message_begin",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "url",
    "headers",
    "pipeline",
    "parser",
    "root_path",
    "limit_concurrency",
    "access_log",
    "access_logger",
)
#: What both use of a request's cycle, and of a connection's flow control.
_CYCLE_USES = ("response_complete", "waiting_for_100_continue")
_FLOW_USES = ("read_paused", "write_paused")

log = logging.getLogger("registry.http")


def _names(cls: type) -> set[str]:
    """Every name the code of ``cls`` (and its bases) defines or uses: its methods and the
    attributes they set or read (``self.cycle = ...``), read without making an instance."""
    out: set[str] = set()
    for klass in cls.__mro__[:-1]:
        out.update(vars(klass))
        codes = [v.__code__ for v in vars(klass).values() if isinstance(v, types.FunctionType)]
        while codes:
            code = codes.pop()
            out.update(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return out


def missing(protocol: type, uses: tuple[str, ...], module: Any) -> list[str]:
    """Those of ``uses`` (and of what a request cycle and flow control hold) that
    ``protocol``, of uvicorn's ``module``, does not name: ``[]`` when all are there."""
    have = _names(protocol)
    out = [
        f"{protocol.__name__}.{n}"
        for n in uses
        if not (callable(getattr(protocol, n, None)) if n in CALLBACKS else n in have)
    ]
    cycle = getattr(module, "RequestResponseCycle", None)
    if cycle is None:
        out.append(f"{module.__name__}.RequestResponseCycle")
    else:
        out += [f"RequestResponseCycle.{n}" for n in _CYCLE_USES if n not in _names(cycle)]
    out += [f"FlowControl.{n}" for n in _FLOW_USES if n not in _names(FlowControl)]
    return out


def status_line(status: int) -> bytes:
    """The status line uvicorn's httptools protocol writes for ``status``."""
    return _STATUS_LINE[status]  # type: ignore[no-any-return]


class Watched:
    """A protocol's connection hooks, for both of uvicorn's protocols (put first in the bases)."""

    loop: asyncio.AbstractEventLoop

    def wrap_transport(self, transport: asyncio.BaseTransport) -> Any:
        """The transport uvicorn is given in place of ``transport``."""
        return transport

    def opened(self) -> None:
        """The connection is made (uvicorn has set itself up)."""

    def closing(self) -> None:
        """The connection is lost (before uvicorn hears of it)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(self.wrap_transport(transport))  # type: ignore[misc]
        self.opened()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing()
        super().connection_lost(exc)  # type: ignore[misc]


H11_MISSING = missing(H11Protocol, H11_USES, h11_impl)
if H11_MISSING:
    fallback("uvicorn", H11_MISSING[0], "its own h11 protocol is used")
    log.warning("uvicorn lacks %s: its own h11 protocol is used", H11_MISSING[0])
HTTPTOOLS_MISSING: list[str] = []
_STATUS_LINE: Any = None
if HttpToolsProtocol is not None:
    HTTPTOOLS_MISSING = missing(HttpToolsProtocol, HTTPTOOLS_USES, httptools_impl)
    _STATUS_LINE = getattr(httptools_impl, "STATUS_LINE", None)
    if _STATUS_LINE is None:
        HTTPTOOLS_MISSING.append("httptools_impl.STATUS_LINE")
    if HTTPTOOLS_MISSING:
        fallback("uvicorn", HTTPTOOLS_MISSING[0], "its own httptools protocol is used")
        log.warning("uvicorn lacks %s: its own httptools protocol is used", HTTPTOOLS_MISSING[0])
