"""uvicorn's HTTP/1.1 protocol, sending a response's head in one write with its body.

uvicorn writes a response's status line and headers, then its body, as two
writes to the socket, and each write is a trip through the network stack (on
loopback, the receiver's side of it too). A profile of ``registry serve``
answering 64 KiB files to 16 keep-alive clients put 18% of the server's
samples in the head's write and 31% in the body's. :class:`CoalescingTransport`
holds a short write (a head, a small chunk) until the next write or the end
of the event loop's turn, whichever comes first, and sends it with that next
write in one ``writelines`` (one ``writev`` on uvloop). Nothing waits longer
than the turn in which it was written, and the bytes keep their order.

``protocol_class()`` is what :func:`registry.server.serve` gives uvicorn: the
protocol uvicorn itself would pick (httptools when installed, else h11) over
that transport.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["CoalescingTransport", "protocol_class"]

HOLD = 16 << 10  # writes up to this size wait for the next one (a response's head fits)


class CoalescingTransport:
    """``transport``, holding a short write until the next write or the end of the loop's turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._t = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._t.writelines((held, data))
        elif len(data) <= HOLD and not self._t.is_closing():
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._t.write(data)

    def writelines(self, lines: Iterable[bytes | bytearray | memoryview]) -> None:
        self.flush()
        self._t.writelines(lines)

    def flush(self) -> None:
        """Send what is held now."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._t.is_closing():
                self._t.write(held)

    def write_eof(self) -> None:
        self.flush()
        self._t.write_eof()

    def close(self) -> None:
        self.flush()
        self._t.close()

    def abort(self) -> None:
        self._held = None
        self._t.abort()

    def __getattr__(self, name: str) -> Any:  # the rest of the transport, unchanged
        return getattr(self._t, name)


class CoalescingH11(H11Protocol):
    """uvicorn's h11 protocol over :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        wrapped: Any = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is not installed: uvicorn would pick h11 too
    HttpToolsProtocol = None  # type: ignore[assignment,misc]
else:

    class CoalescingHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol over :class:`CoalescingTransport`."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            wrapped: Any = CoalescingTransport(transport, self.loop)
            super().connection_made(wrapped)


def protocol_class() -> type[asyncio.Protocol]:
    """The protocol uvicorn would pick (httptools when installed, else h11), coalescing."""
    if HttpToolsProtocol is None:
        return CoalescingH11
    return CoalescingHttpTools
