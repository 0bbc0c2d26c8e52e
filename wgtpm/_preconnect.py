"""The first connection of a command, opened while the HTTP stack is still loading.

Importing httpx and httpcore takes 65-90 ms on this project's machines, and a
new connection to a far server takes a round trip (80 ms on the benchmarks'
realistic network; 20-100 ms to the Hugging Face Hub or GitHub from most
places). The two need not wait for each other: :class:`wgtpm.httpclient.HttpClient`
makes its httpx client at its first request, and just before, starts a TCP
connection to that request's host on a thread (:func:`ahead`). The transport's
backend (:class:`wgtpm._httptransport.Backend`) takes it (:func:`take`) for the
first connection it opens to that host and port, in place of connecting
again; TLS, if any, starts on it as on any other. A caller about to send
several requests at once (:meth:`wgtpm.httpclient.HttpClient.expect`) has as
many opened, each taken by one of the backend's first connections.

A connection opened ahead is only a head start. One that the server closed
meanwhile, or that the client never takes, is dropped, and the backend connects
as it always does. One that failed hands the backend its error, which the
backend raises as its own connect would have (a name that does not resolve is
looked up once, not twice).
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

__all__ = ["ahead", "drop", "take"]

_lock = threading.Lock()
_ahead: dict[tuple[str, int], list[_Ahead]] = {}


class _Ahead:
    """A TCP connection being opened on its own thread."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock: socket.socket | None = None
        self.error: OSError | None = None
        self.done = threading.Event()
        self._dropped = False
        self._guard = threading.Lock()
        threading.Thread(
            target=self._connect, args=(host, port, timeout), name="preconnect", daemon=True
        ).start()

    def _connect(self, host: str, port: int, timeout: float) -> None:
        sock = None
        try:
            sock = socket.create_connection((host, port), timeout)
        except OSError as exc:
            self.error = exc
        with self._guard:
            if sock is not None and self._dropped:
                sock.close()
            else:
                self.sock = sock
        self.done.set()

    def claim(self) -> socket.socket | None:
        """The connected socket, handed over once (``None`` after a drop or a failure)."""
        with self._guard:
            sock, self.sock = self.sock, None
        return sock

    def drop(self) -> None:
        with self._guard:
            self._dropped = True
        sock = self.claim()
        if sock is not None:
            sock.close()


def ahead(url: str, timeout: float, count: int = 1) -> None:
    """Start opening TCP connections to the host of ``url`` (``http`` or ``https``) until
    ``count`` are opened ahead and not yet taken; ``timeout`` bounds each connect."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is no number: the request says so
        return
    key = (parts.hostname, port)
    with _lock:
        pending = _ahead.setdefault(key, [])
        while len(pending) < count:
            pending.append(_Ahead(key[0], key[1], timeout))


def take(host: str, port: int, timeout: float | None) -> socket.socket | OSError | None:
    """The connection opened ahead to ``host`` and ``port``, once it is up (waiting at most
    ``timeout`` seconds for the connect under way: the one the caller would make), or the
    error that connect met; ``None`` if there is none, or the server has closed it."""
    with _lock:
        pending = _ahead.get((host, port))
        a = pending.pop(0) if pending else None
        if pending == []:
            del _ahead[(host, port)]
    if a is None or not a.done.wait(timeout):
        if a is not None:
            a.drop()
        return None
    sock = a.claim()
    if sock is None:
        return a.error
    was = sock.gettimeout()
    sock.setblocking(False)  # a look, not a wait (a socket with a timeout would wait)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        sock.settimeout(was)
        return sock  # nothing to read before any request: as it should be
    except OSError:
        pass
    sock.close()  # the server hung up (or sent what none asked for)
    return None


def drop() -> None:
    """Close the connections opened ahead that nobody took (a client is closing; one that
    another client was about to take is then opened by its backend as usual)."""
    with _lock:
        left = [a for pending in _ahead.values() for a in pending]
        _ahead.clear()
    for a in left:
        a.drop()
