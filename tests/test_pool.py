"""wgtpm's connection pool assigns requests to connections as httpcore's does.

``_compat.httpcore.FastPool`` replaces httpcore's bookkeeping (quadratic in the connections)
with one pass, and closes no connection it has given to a request (httpcore may, while
that request's thread reads from it). On random pools of fake connections it closes the
same connections, keeps the same ones in the same order, creates the same new ones and
assigns every queued request to the same connection as a plain transcription of
httpcore's code with that one rule, which in turn does exactly what httpcore does
wherever httpcore closes no connection it gave out.
"""

from __future__ import annotations

from typing import Any

import httpcore
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from wgtpm._compat.httpcore import FastPool as Pool

ORIGINS = [b"a", b"b", b"c"]


class FakeConnection:
    """What the pool asks of a connection, as plain flags."""

    def __init__(self, name: str, origin: bytes, state: str) -> None:
        self.name, self.origin, self.state = name, origin, state

    def is_closed(self) -> bool:
        return self.state == "closed"

    def has_expired(self) -> bool:
        return self.state == "expired"

    def is_idle(self) -> bool:
        return self.state == "idle"

    def is_available(self) -> bool:
        return self.state in ("idle", "available")

    def can_handle_request(self, origin: FakeOrigin) -> bool:
        return origin.name == self.origin

    def __repr__(self) -> str:
        return f"{self.name}:{self.origin.decode()}:{self.state}"


class FakeOrigin:
    """Compared by value and unhashable, as httpcore's ``Origin`` is."""

    def __init__(self, name: bytes) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeOrigin) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


class FakeURL:
    def __init__(self, origin: bytes) -> None:
        self.origin = FakeOrigin(origin)


class FakeRequest:
    def __init__(self, origin: bytes) -> None:
        self.url = FakeURL(origin)


class FakePoolRequest:
    def __init__(self, origin: bytes, assigned: FakeConnection | None) -> None:
        self.request = FakeRequest(origin)
        self.connection = assigned

    def is_queued(self) -> bool:
        return self.connection is None

    def assign_to_connection(self, connection: Any) -> None:
        self.connection = connection


def _run(
    cls: type,
    conns: list[tuple[bytes, str]],
    requests: list[tuple[bytes, int | None]],
    max_connections: int,
    max_keepalive: int,
    new_state: str,
) -> tuple[Any, ...]:
    pool = object.__new__(cls)
    pool._connections = [FakeConnection(f"c{i}", o, s) for i, (o, s) in enumerate(conns)]
    pool._requests = [
        FakePoolRequest(o, pool._connections[a] if a is not None and a < len(conns) else None)
        for o, a in requests
    ]
    pool._max_connections = max_connections
    pool._max_keepalive_connections = max_keepalive
    made: list[FakeConnection] = []

    def create(origin: FakeOrigin) -> FakeConnection:
        c = FakeConnection(f"new{len(made)}", origin.name, new_state)
        made.append(c)
        return c

    pool.create_connection = create
    closing = cls._assign_requests_to_connections(pool)
    return (
        [repr(c) for c in closing],
        [repr(c) for c in pool._connections],
        [repr(r.connection) for r in pool._requests],
        [repr(c) for c in made],
    )


def _reference(pool: Any) -> list[Any]:
    """httpcore's ``_assign_requests_to_connections`` as written there (quadratic), but
    closing no connection that a request was given, before or during the call: what
    ``Pool`` must do."""
    closing = []
    given = {id(r.connection) for r in pool._requests if r.connection is not None}
    for c in list(pool._connections):
        if c.is_closed():
            pool._connections.remove(c)
        elif id(c) in given:
            continue
        elif c.has_expired() or (
            c.is_idle() and len(pool._connections) > pool._max_keepalive_connections
        ):
            pool._connections.remove(c)
            closing.append(c)
    for r in [r for r in pool._requests if r.is_queued()]:
        origin = r.request.url.origin
        ready = [c for c in pool._connections if c.can_handle_request(origin) and c.is_available()]
        idle = [c for c in pool._connections if c.is_idle() and id(c) not in given]
        if ready:
            r.assign_to_connection(ready[0])
            given.add(id(ready[0]))
        elif len(pool._connections) < pool._max_connections:
            c = pool.create_connection(origin)
            pool._connections.append(c)
            r.assign_to_connection(c)
            given.add(id(c))
        elif idle:
            pool._connections.remove(idle[0])
            closing.append(idle[0])
            c = pool.create_connection(origin)
            pool._connections.append(c)
            r.assign_to_connection(c)
            given.add(id(c))
    return closing


class Reference(Pool):
    _assign_requests_to_connections = _reference


#: (connections as (origin, state), requests as (origin, index of the connection they hold
#: or None), max_connections, max_keepalive, the state of a new connection)
POOLS = st.tuples(
    st.lists(
        st.tuples(
            st.sampled_from(ORIGINS),
            st.sampled_from(["closed", "expired", "idle", "available", "busy"]),
        ),
        max_size=12,
    ),
    st.lists(
        st.tuples(st.sampled_from(ORIGINS), st.one_of(st.none(), st.integers(0, 11))),
        max_size=10,
    ),
    st.integers(1, 14),
    st.integers(0, 14),
    st.sampled_from(["busy", "available", "idle"]),
)
Args = tuple[list[tuple[bytes, str]], list[tuple[bytes, int | None]], int, int, str]


@settings(max_examples=400, deadline=None)
@given(POOLS)
# a full pool: the first idle connection makes room for a request no connection can take
@example(([(b"a", "idle"), (b"b", "idle"), (b"c", "busy")], [(b"c", None)], 3, 9, "busy"))
@example(
    ([(b"a", "idle"), (b"b", "idle")], [(b"c", None), (b"c", None), (b"a", None)], 2, 9, "idle")
)
# ... and not the one it has just given to a request
@example(([(b"a", "idle"), (b"b", "idle")], [(b"a", None), (b"c", None)], 2, 9, "busy"))
def test_the_pool_assigns_as_the_reference_does(args: Args) -> None:
    assert _run(Pool, *args) == _run(Reference, *args)


@settings(max_examples=400, deadline=None)
@given(POOLS)
def test_the_reference_is_httpcores_but_for_connections_given_to_requests(args: Args) -> None:
    closing, _, assigned, _ = stock = _run(httpcore.ConnectionPool, *args)
    assume(not set(closing) & set(assigned))  # httpcore closed none it had given out
    assert _run(Reference, *args) == stock


def test_a_connection_given_to_a_request_is_not_closed() -> None:
    """httpcore closes an expired connection even when a request was given it (outside
    its lock, maybe while the request's thread reads from it); this pool leaves it."""
    conns = [(b"a", "expired"), (b"a", "idle"), (b"b", "expired")]
    requests: list[tuple[bytes, int | None]] = [(b"a", 0), (b"a", 1)]
    closing, kept, _, _ = _run(Pool, conns, requests, 9, 1, "busy")
    assert closing == ["c2:b:expired"]  # nobody's: closed as httpcore would
    assert kept == ["c0:a:expired", "c1:a:idle"]  # given to requests: left to them
    stock_closing = _run(httpcore.ConnectionPool, conns, requests, 9, 1, "busy")[0]
    assert "c0:a:expired" in stock_closing  # what the race comes from
