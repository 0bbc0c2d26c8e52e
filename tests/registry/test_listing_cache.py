"""``@v/list`` and ``@latest`` from memory (registry/fastpath.py), on two replicas.

Two registries share one database (SQLite, then PostgreSQL) and one blob
folder, each served by a real uvicorn on loopback, as two ``registry serve``
processes would. Database work is observed through SQLAlchemy's pool events
(every read, raw or not, checks a connection out), never mocked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from registry.app import RegistryApp, create_app
from registry.metadata import SqlMetadataStore, open_metadata_store
from registry.service import Registry
from registry.stores import open_blob_store

from .conftest import _serve
from .helpers import modtext, publish

M = "example.com/acme/listed"
P = "example.com/acme/secret"  # private
PROMISE = 1.0  # seconds from a commit on one replica until every replica lists it


@dataclass
class Replica:
    url: str
    app: RegistryApp
    reg: Registry

    @property
    def meta(self) -> SqlMetadataStore:
        assert isinstance(self.reg.meta, SqlMetadataStore)
        return self.reg.meta


@pytest.fixture
def replicas(meta_url: str, tmp_path: Path) -> Iterator[tuple[list[Replica], str]]:
    """Two replicas on ``meta_url`` (migrated once) and one blob folder, and a token that
    may publish under ``example.com``."""
    open_metadata_store(meta_url).close()
    regs = [
        Registry(
            open_metadata_store(meta_url, migrate=False),
            open_blob_store(str(tmp_path / "blobs"), spool=tmp_path / f"spool{i}"),
        )
        for i in range(2)
    ]
    token, _ = regs[0].create_token("example.com", "publish")
    apps = [create_app(registry=r) for r in regs]
    servers = [_serve(app) for app in apps]
    try:
        urls = [next(s) for s in servers]
        yield [Replica(u, a, r) for u, a, r in zip(urls, apps, regs, strict=True)], token
    finally:
        for s in servers:
            s.close()
        for r in regs:
            r.close()


def _publish(url: str, token: str, module: str, version: str, private: bool = False) -> None:
    files = {"wgt.mod": modtext(module), "w/x.bin": version.encode() * 100}
    with httpx.Client(base_url=url) as c:
        r = publish(c, token, module, version, files, private=private)
    assert r.status_code == 201, r.text


def _settle(clock: Any) -> None:
    """Wait until ``clock`` (a :class:`registry.fastpath.ChangeClock`, or ``None``) has no
    count read in flight. On a busy machine a read takes far longer than it does here, so
    waiting a fixed time counts a read's checkout without its end (a flaky failure in CI)."""
    deadline = time.monotonic() + 10
    while clock is not None and clock._reading and time.monotonic() < deadline:
        time.sleep(0.01)


def _until_listed(url: str, version: str, t0: float) -> float:
    """Seconds from ``t0`` until ``url`` lists ``version``; fails past :data:`PROMISE`."""
    while True:
        body = httpx.get(url, timeout=5).text
        took = time.monotonic() - t0
        if version in body.split():
            return took
        assert took < PROMISE, f"{version} not listed by the other replica after {took:.2f} s"
        time.sleep(0.01)


def test_a_version_published_on_one_replica_is_listed_by_the_other_within_a_second(
    replicas: tuple[list[Replica], str],
) -> None:
    (a, b), token = replicas
    _publish(a.url, token, M, "v1.0.0")
    listing, latest = f"{b.url}/{M}/@v/list", f"{b.url}/{M}/@latest"
    for _ in range(3):  # b remembers both answers
        assert httpx.get(listing).text == "v1.0.0\n"
        assert httpx.get(latest).json()["Version"] == "v1.0.0"
    assert f"/{M}/@v/list" in b.app.state.protocol_cache.built
    t0 = time.monotonic()
    _publish(a.url, token, M, "v1.1.0")
    took = _until_listed(listing, "v1.1.0", t0)
    assert took < PROMISE
    assert httpx.get(latest).json()["Version"] == "v1.1.0"
    # the replica that committed lists it at once
    assert httpx.get(f"{a.url}/{M}/@v/list").text == "v1.0.0\nv1.1.0\n"


def test_a_cached_list_answers_if_none_match_with_304_until_it_changes(
    replicas: tuple[list[Replica], str],
) -> None:
    (a, b), token = replicas
    _publish(a.url, token, M, "v1.0.0")
    url = f"{b.url}/{M}/@v/list"
    first = httpx.get(url)
    etag = first.headers["etag"]
    for _ in range(3):
        r = httpx.get(url, headers={"If-None-Match": etag})
        assert (r.status_code, r.content, r.headers["etag"]) == (304, b"", etag)
    assert httpx.head(url).headers["etag"] == etag
    _publish(a.url, token, M, "v1.1.0")
    t0 = time.monotonic()
    while (r := httpx.get(url, headers={"If-None-Match": etag})).status_code == 304:
        assert time.monotonic() - t0 < PROMISE
    assert (r.status_code, r.text) == (200, "v1.0.0\nv1.1.0\n")
    assert r.headers["etag"] != etag and r.headers["cache-control"] == "no-cache"


def test_a_private_modules_list_is_never_answered_from_memory_to_an_anonymous_client(
    replicas: tuple[list[Replica], str],
) -> None:
    (a, b), token = replicas
    _publish(a.url, token, P, "v1.0.0", private=True)
    auth = {"Authorization": f"Bearer {token}"}
    for path in (f"/{P}/@v/list", f"/{P}/@latest"):
        for _ in range(3):  # the token's reader warms whatever a cache would keep
            assert httpx.get(b.url + path, headers=auth).status_code == 200
        r = httpx.get(b.url + path)
        assert r.status_code == 404 and "v1.0.0" not in r.text, r.text
        assert path not in b.app.state.protocol_cache.lists


def test_a_cached_list_costs_no_database_query(replicas: tuple[list[Replica], str]) -> None:
    """Once remembered, a list request reads nothing: the only checkouts left are the change
    count's (at most one per REFRESH_AFTER, whatever the number of requests)."""
    (a, b), token = replicas
    _publish(a.url, token, M, "v1.0.0")
    url = f"{b.url}/{M}/@v/list"
    with httpx.Client() as c:
        for _ in range(3):
            assert c.get(url).text == "v1.0.0\n"
        checkouts: list[Any] = []

        def count(*_args: Any) -> None:
            checkouts.append(1)

        clock = getattr(b.app.fast, "clock", None)
        _settle(clock)  # no read in flight whose checkout came before the count starts
        engines = {b.meta.engine, getattr(b.meta, "reader", b.meta.engine)}
        for e in engines:
            sa.event.listen(e.pool, "checkout", count)
        try:
            reads = clock.reads if clock else 0
            n, t0 = 0, time.monotonic()
            while time.monotonic() - t0 < PROMISE:
                assert c.get(url).text == "v1.0.0\n"
                n += 1
            _settle(clock)  # a count read started by the last request ends
            count_reads = (clock.reads if clock else 0) - reads
        finally:
            for e in engines:
                sa.event.remove(e.pool, "checkout", count)
    assert n > 20
    assert len(checkouts) == count_reads, (len(checkouts), count_reads, n)
    assert count_reads <= PROMISE / 0.2 + 2
