"""Fixtures for the registry: its stores on every backend, and a live server.

- ``postgres`` (session): a PostgreSQL cluster of its own (:mod:`.pgserver`);
  each test that uses ``meta_url`` on PostgreSQL gets a fresh database in it.
- ``s3_endpoint`` (session): moto's S3 server on loopback; each test gets a
  fresh bucket.
- ``meta_url`` / ``blob_url``: parametrised over SQLite and PostgreSQL, and
  over a folder and S3; the conformance tests run once per backend.
- ``live``: the registry served by a real uvicorn on ``127.0.0.1`` in a
  thread, with a publish token and a checksum database named ``sum.test``
  (its verifier key in ``Live.vkey``; signed heads are not cached).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .pgserver import PostgresServer, PostgresUnavailable

_db_names = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
        server.start()
    except PostgresUnavailable as exc:
        if os.environ.get("WGTPM_REQUIRE_POSTGRES"):
            raise
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    ThreadedMotoServer = pytest.importorskip(
        "moto.server", reason="moto[server] is not installed (pip install 'wgtpm[registry]')"
    ).ThreadedMotoServer

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture
def s3_url(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the moto server, as ``s3://bucket/prefix``."""
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    bucket = f"wgtpm-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket=bucket)
    client.close()
    return f"s3://{bucket}/blobs"


@pytest.fixture(params=["sqlite", "postgresql"])
def meta_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    pg: PostgresServer = request.getfixturevalue("postgres")
    return pg.create_database(f"t{next(_db_names)}_{uuid.uuid4().hex[:8]}")


@pytest.fixture(params=["folder", "s3"])
def blob_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "folder":
        return str(tmp_path / "blobs")
    url: str = request.getfixturevalue("s3_url")
    return url


@dataclass
class Live:
    """A registry served over real HTTP on loopback."""

    url: str
    registry: object
    token: str
    vkey: str = ""


def _serve(app: object, **options: Any) -> Iterator[str]:
    """``app`` served by uvicorn in a thread on loopback (its URL); ``options`` go to its
    ``Config`` (``http=`` a protocol class)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options = {"log_level": "warning", "access_log": False, "lifespan": "on", **options}
    config = uvicorn.Config(app, **options)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _live(meta_url: str, blob_url: str, spool: Path) -> Iterator[Live]:
    from registry.app import create_app
    from registry.metadata import open_metadata_store
    from registry.service import Registry
    from registry.stores import open_blob_store
    from registry.sumdb import SumDB
    from wgtpm.sumdb import note

    meta = open_metadata_store(meta_url)
    skey, vkey = note.generate_key("sum.test")
    reg = Registry(
        meta, open_blob_store(blob_url, spool=spool), sumdb=SumDB.open(meta.engine, skey, ttl=0)
    )
    text, _ = reg.create_token("example.com", "publish")
    try:
        for url in _serve(create_app(registry=reg)):
            yield Live(url, reg, text, vkey)
    finally:
        reg.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """The registry on SQLite and a folder, served by uvicorn; ``token`` may publish anything
    under ``example.com``."""
    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool")


@pytest.fixture(params=["sqlite+folder", "postgresql+s3"])
def live_any(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """:func:`live` on SQLite and a folder, then on PostgreSQL and S3."""
    if request.param == "sqlite+folder":
        yield from _live(
            f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool"
        )
        return
    pg: PostgresServer = request.getfixturevalue("postgres")
    db = pg.create_database(f"t{next(_db_names)}_{uuid.uuid4().hex[:8]}")
    yield from _live(db, request.getfixturevalue("s3_url"), tmp_path / "spool")
