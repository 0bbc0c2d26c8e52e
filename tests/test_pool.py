"""wgtpm's connection pool assigns requests to connections exactly as httpcore's does.

``_httptransport.Pool`` replaces httpcore's bookkeeping (quadratic in the connections)
with one pass; on random pools of fake connections, both close the same connections,
keep the same ones in the same order, create the same new ones and assign every queued
request to the same connection.
"""

from __future__ import annotations

from typing import Any

import httpcore
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wgtpm._httptransport import Pool

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


@settings(max_examples=400, deadline=None)
@given(
    conns=st.lists(
        st.tuples(
            st.sampled_from(ORIGINS),
            st.sampled_from(["closed", "expired", "idle", "available", "busy"]),
        ),
        max_size=12,
    ),
    requests=st.lists(
        st.tuples(st.sampled_from(ORIGINS), st.one_of(st.none(), st.integers(0, 11))),
        max_size=10,
    ),
    max_connections=st.integers(1, 14),
    max_keepalive=st.integers(0, 14),
    new_state=st.sampled_from(["busy", "available", "idle"]),
)
# a full pool: the first idle connection makes room for a request no connection can take
@example([(b"a", "idle"), (b"b", "idle"), (b"c", "busy")], [(b"c", None)], 3, 9, "busy")
@example([(b"a", "idle"), (b"b", "idle")], [(b"c", None), (b"c", None), (b"a", None)], 2, 9, "idle")
def test_the_pool_assigns_as_httpcores_does(
    conns: list[tuple[bytes, str]],
    requests: list[tuple[bytes, int | None]],
    max_connections: int,
    max_keepalive: int,
    new_state: str,
) -> None:
    args = (conns, requests, max_connections, max_keepalive, new_state)
    assert _run(Pool, *args) == _run(httpcore.ConnectionPool, *args)
