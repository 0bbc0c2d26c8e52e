"""httpcore's internals that wgtpm uses, each checked when this is first imported.

- ``ConnectionPool._assign_requests_to_connections`` and the pool's fields
  (``_connections``, ``_requests``, ``_max_connections``,
  ``_max_keepalive_connections``) and its queued requests' (``PoolRequest``:
  ``request``, ``connection``, ``is_queued``, ``assign_to_connection``):
  :class:`FastPool` does httpcore's bookkeeping in one pass. Without them
  (httpcore 1.0.0-1.0.2 has no such method) :data:`Pool` is httpcore's own
  pool, whose bookkeeping is quadratic in the connections.
- ``httpcore._backends.sync.SyncStream``: the stream httpcore's backend makes of
  a socket, for the one :mod:`wgtpm._preconnect` opened ahead
  (:func:`sync_stream`). Without it, that socket is closed and the backend
  connects again.
- The h11 state of a response's connection, through the pool's byte stream
  (``PoolByteStream._stream``), HTTP/1.1's (``HTTP11ConnectionByteStream._connection``)
  and the connection (``HTTP11Connection._h11_state``): :func:`h11_state`,
  for a body read past h11 (:mod:`wgtpm._compat.h11`). Without them, such a
  body's connection is closed after it instead of kept.

Each missing piece is one ``wgtpm -x`` line (:func:`wgtpm._compat.fallback`);
tests/test_compat.py names any that a version in pyproject.toml's range lacks.
"""

from __future__ import annotations

import socket
from typing import Any

import httpcore

from . import fallback, missing_attributes

__all__ = [
    "POOL_MISSING",
    "FastPool",
    "Pool",
    "h11_state",
    "pool_class",
    "pool_missing",
    "state_missing",
    "stream_missing",
    "sync_stream",
]


def pool_missing() -> list[str]:
    """What :class:`FastPool` needs that this httpcore lacks (``[]``: all there)."""
    pool = httpcore.ConnectionPool
    missing = (
        []
        if callable(getattr(pool, "_assign_requests_to_connections", None))
        else ["ConnectionPool._assign_requests_to_connections"]
    )
    missing += [
        f"ConnectionPool.{n}"
        for n in missing_attributes(
            pool.__init__,
            "_connections",
            "_requests",
            "_max_connections",
            "_max_keepalive_connections",
        )
    ]
    if not callable(getattr(pool, "create_connection", None)):
        missing.append("ConnectionPool.create_connection")
    try:
        from httpcore._sync.connection_pool import PoolRequest
    except ImportError:
        return [*missing, "httpcore._sync.connection_pool.PoolRequest"]
    missing += [
        f"PoolRequest.{n}"
        for n in ("is_queued", "assign_to_connection")
        if not callable(getattr(PoolRequest, n, None))
    ]
    missing += [
        f"PoolRequest.{n}"
        for n in missing_attributes(PoolRequest.__init__, "request", "connection")
    ]
    return missing


class FastPool(httpcore.ConnectionPool):
    """httpcore's connection pool, its bookkeeping done in one pass over the connections.

    httpcore runs ``_assign_requests_to_connections`` twice a request (when it is
    queued and when it ends), and it scans every connection once more for each
    idle one, and once or twice for each queued request: with the 32 to 64
    connections of a get (indexing's 32, then the downloads and their ranges) that
    was 0.3-0.45 s of CPU, a fifth of a 311 MB get's. This does the same, in the
    same order, with the same results (tests/test_pool.py compares the two on
    random pools), looking at each connection a bounded number of times.

    One difference: a connection given to a request is never closed here.
    httpcore closes one that idled past its keep-alive even when a request was
    given it, and, in a full pool, an idle one it has just given a request to
    make room for another; it closes them outside the pool's lock, by when that
    request's thread may be reading from it ("Bad file descriptor", once in a
    100,000-file get). Left alone, such a connection is used as it is: if its
    server did close it, the request fails as on any closed connection and is
    tried again.
    """

    def _assign_requests_to_connections(self) -> list[Any]:
        closing: list[Any] = []
        conns: list[Any] = self._connections
        keep = self._max_keepalive_connections
        given = {id(r.connection) for r in self._requests if r.connection is not None}
        # Closed ones go; expired ones and (as httpcore counts) idle ones while more
        # connections than max_keepalive are in the pool are closed, unless given to a
        # request.
        left = len(conns)
        kept = []
        for c in conns:
            if c.is_closed():
                left -= 1
            elif id(c) not in given and (c.has_expired() or (c.is_idle() and left > keep)):
                left -= 1
                closing.append(c)
            else:
                kept.append(c)
        conns[:] = kept
        queued = [r for r in self._requests if r.is_queued()]
        if not queued:
            return closing
        idle = [c for c in conns if c.is_idle() and id(c) not in given]
        # (origin, its available connections in order), per origin asked for: httpcore's
        # Origin has no hash, and a get asks few
        available: list[tuple[Any, list[Any]]] = []
        for r in queued:
            origin = r.request.url.origin
            ready = next((group for o, group in available if o == origin), None)
            if ready is None:
                ready = [c for c in conns if c.can_handle_request(origin) and c.is_available()]
                available.append((origin, ready))
            if ready:
                r.assign_to_connection(ready[0])
                given.add(id(ready[0]))
                if ready[0] in idle:
                    idle.remove(ready[0])
                continue
            if len(conns) >= self._max_connections:
                if not idle:
                    continue  # it waits for a connection to come free
                old = idle.pop(0)
                conns.remove(old)
                closing.append(old)
                for _, group in available:
                    if old in group:
                        group.remove(old)
            new = self.create_connection(origin)
            conns.append(new)
            r.assign_to_connection(new)
            given.add(id(new))
            for o, group in available:
                if new.can_handle_request(o) and new.is_available():
                    group.append(new)
        return closing


def pool_class(missing: list[str]) -> type[httpcore.ConnectionPool]:
    """:class:`FastPool` when nothing is ``missing`` (:func:`pool_missing`), else httpcore's own
    pool, said once with ``-x``."""
    if not missing:
        return FastPool
    fallback("httpcore", missing[0], "its own pool bookkeeping is used (slower)")
    return httpcore.ConnectionPool


def stream_missing() -> list[str]:
    """What :func:`sync_stream` needs that this httpcore lacks."""
    try:
        from httpcore._backends.sync import SyncStream
    except ImportError:
        return ["httpcore._backends.sync.SyncStream"]
    if "sock" not in SyncStream.__init__.__code__.co_varnames:
        return ["SyncStream(sock)"]
    return []


def state_missing() -> list[str]:
    """What :func:`h11_state` needs that this httpcore lacks."""
    try:
        from httpcore._sync.connection_pool import PoolByteStream
        from httpcore._sync.http11 import HTTP11Connection, HTTP11ConnectionByteStream
    except ImportError:
        return ["httpcore._sync.connection_pool.PoolByteStream or httpcore._sync.http11"]
    return [
        f"{cls.__name__}.{name}"
        for cls, name in (
            (PoolByteStream, "_stream"),
            (HTTP11ConnectionByteStream, "_connection"),
            (HTTP11Connection, "_h11_state"),
        )
        if name in missing_attributes(cls.__init__, name)
    ]


def sync_stream(sock: socket.socket) -> httpcore.NetworkStream | None:
    """httpcore's own stream over the connected ``sock``, or ``None`` where this httpcore
    has none to make (the caller then closes ``sock`` and connects as usual)."""
    if _STREAM_MISSING:
        return None
    from httpcore._backends.sync import SyncStream

    return SyncStream(sock)


def h11_state(stream: Any) -> Any:
    """The ``h11.Connection`` of the connection whose response body ``stream`` (the pool's
    byte stream) is, or ``None`` (not HTTP/1.1, or this httpcore keeps it elsewhere)."""
    if _STATE_MISSING:
        return None
    conn = getattr(getattr(stream, "_stream", None), "_connection", None)
    return getattr(conn, "_h11_state", None)


POOL_MISSING = pool_missing()
#: The pool wgtpm's transport uses: :class:`FastPool`, or httpcore's where it cannot be.
Pool = pool_class(POOL_MISSING)
_STREAM_MISSING = stream_missing()
if _STREAM_MISSING:
    fallback("httpcore", _STREAM_MISSING[0], "a connection opened ahead is made again")
_STATE_MISSING = state_missing()
if _STATE_MISSING:
    fallback("httpcore", _STATE_MISSING[0], "a large body's connection is not kept")
