"""The proxy protocol as the registry serves it: URLs, statuses, ETags, ranges, caching."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from registry import FolderBlobStore, GoneError, Registry, open_metadata_store
from registry.app import create_app
from registry.protocol import ProtocolRequest, _range, parse_request_path

from .helpers import modtext, publish

M = "example.com/Acme/Enc"  # capitals: escaped as !acme/!enc
E = "example.com/!acme/!enc"
DATA = bytes(range(256)) * 8


@pytest.mark.parametrize(
    ("path", "want"),
    [
        (f"/{E}/@v/list", ProtocolRequest(M, "list")),
        (f"/{E}/@latest", ProtocolRequest(M, "latest")),
        (f"/{E}/@v/v1.0.0.info", ProtocolRequest(M, "info", "v1.0.0")),
        (f"/{E}/@v/v1.0.0.mod", ProtocolRequest(M, "mod", "v1.0.0")),
        (f"/{E}/@v/v1.0.0.index.json", ProtocolRequest(M, "index", "v1.0.0")),
        (f"/{E}/@v/v1.0.0-!r!c.1.info", ProtocolRequest(M, "info", "v1.0.0-RC.1")),
        (f"/{E}/@v/v1.0.0/a/b.bin", ProtocolRequest(M, "file", "v1.0.0", "a/b.bin")),
        (f"/{E}/@v/v1.0.0/x.info", ProtocolRequest(M, "file", "v1.0.0", "x.info")),
        (f"/{E}/@v/", None),
        (f"/{E}/@v/v1.0.0", None),
        (f"/{E}/@v/v1.0.0/", None),
        (f"/{E}", None),
        ("/", None),
    ],
)
def test_parse_request_path(path: str, want: ProtocolRequest | None) -> None:
    assert parse_request_path(path) == want


@pytest.mark.parametrize(
    "path", [f"/{M}/@v/list", "/example.com/a!/@v/list", "/nodot/m/@latest", f"/{E}/@v/V1.0.0.info"]
)
def test_malformed_paths_are_gone(path: str) -> None:
    with pytest.raises(GoneError):
        parse_request_path(path)


@pytest.mark.parametrize(
    ("header", "want"),
    [
        (None, None),
        ("bytes=0-9", (0, 10)),
        ("bytes=10-", (10, 100)),
        ("bytes=-10", (90, 100)),
        ("bytes=90-200", (90, 100)),
        ("bytes=99-99", (99, 100)),
        ("bytes=100-", False),
        ("bytes=5-4", False),
        ("bytes=-0", False),
        ("bytes=0-1,5-6", None),  # several ranges: send it all
        ("items=0-1", None),
        ("bytes=-", None),
    ],
)
def test_range_header(header: str | None, want: object) -> None:
    assert _range(header, 100) == want


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    reg = Registry(open_metadata_store(str(tmp_path / "r.db")), FolderBlobStore(tmp_path / "b"))
    tok = reg.create_token("example.com", "publish")[0]
    with TestClient(create_app(registry=reg)) as c:
        for v in ("v0.1.0", "v0.2.0", "v0.3.0-rc.1", "v0.0.0-20261129120000-abcdefabcdef"):
            fs = {"wgt.mod": modtext(M), "w/data.bin": DATA + v.encode()}
            assert publish(c, tok, M, v, fs).status_code == 201
        yield c
    reg.close()


def test_list_and_latest(client: TestClient) -> None:
    r = client.get(f"/{E}/@v/list")
    assert r.text == "v0.1.0\nv0.2.0\nv0.3.0-rc.1\n"  # no pseudo-versions
    assert r.headers["cache-control"] == "no-cache" and r.headers["etag"]
    assert (
        client.get(f"/{E}/@v/list", headers={"If-None-Match": r.headers["etag"]}).status_code == 304
    )
    latest = client.get(f"/{E}/@latest").json()
    assert latest == {"Version": "v0.2.0", "Time": "2026-11-29T12:00:00Z"}


def test_version_content_is_immutable_with_sha256_etags(client: TestClient) -> None:
    import hashlib

    body = DATA + b"v0.1.0"
    sha = hashlib.sha256(body).hexdigest()
    r = client.get(f"/{E}/@v/v0.1.0/w/data.bin")
    assert r.content == body
    assert r.headers["etag"] == f'"{sha}"'
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert r.headers["accept-ranges"] == "bytes"
    assert (
        client.get(f"/{E}/@v/v0.1.0/w/data.bin", headers={"If-None-Match": f'"{sha}"'}).status_code
        == 304
    )
    mod = client.get(f"/{E}/@v/v0.1.0.mod")
    assert (
        mod.content == modtext(M)
        and mod.headers["etag"] == f'"{hashlib.sha256(modtext(M)).hexdigest()}"'
    )
    info = client.get(f"/{E}/@v/v0.1.0.info")
    assert info.json() == {"Version": "v0.1.0", "Time": "2026-11-29T12:00:00Z"}
    assert "immutable" in info.headers["cache-control"]
    assert client.get(f"/{E}/@v/v0.1.0.index.json").json()["module"] == M


def test_ranges(client: TestClient) -> None:
    url = f"/{E}/@v/v0.1.0/w/data.bin"
    body = DATA + b"v0.1.0"
    r = client.get(url, headers={"Range": "bytes=10-19"})
    assert r.status_code == 206 and r.content == body[10:20]
    assert r.headers["content-range"] == f"bytes 10-19/{len(body)}"
    r = client.get(url, headers={"Range": "bytes=-6"})
    assert r.status_code == 206 and r.content == b"v0.1.0"
    r = client.get(url, headers={"Range": f"bytes={len(body)}-"})
    assert r.status_code == 416 and r.headers["content-range"] == f"bytes */{len(body)}"
    r = client.get(url, headers={"Range": "bytes=10-19", "If-Range": '"other"'})
    assert r.status_code == 200 and r.content == body
    r = client.head(url)
    assert (
        r.status_code == 200 and r.content == b"" and r.headers["content-length"] == str(len(body))
    )


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/example.com/nothing/@v/list", 404),
        ("/example.com/nothing/@latest", 404),
        (f"/{E}/@v/v9.9.9.info", 404),
        (f"/{E}/@v/v9.9.9/w/data.bin", 404),
        (f"/{E}/@v/main.info", 404),  # queries are not resolved here
        (f"/{E}/@v/v0.1.0/w/other.bin", 410),  # a committed version never gains a file
        (f"/{M}/@v/list", 410),  # unescaped capitals
        ("/not-a-host/m/@v/list", 410),
        ("/favicon.ico", 404),
    ],
)
def test_not_found_and_gone(client: TestClient, path: str, status: int) -> None:
    r = client.get(path)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/plain")


def test_only_get_and_head(client: TestClient) -> None:
    assert client.post(f"/{E}/@v/list").status_code == 405
    assert client.get("/healthz").json() == {"status": "ok"}


def test_served_under_a_root_path(tmp_path: Path) -> None:
    """Behind a reverse proxy at /reg (uvicorn --root-path /reg), URLs keep working."""
    reg = Registry(open_metadata_store(str(tmp_path / "r.db")), FolderBlobStore(tmp_path / "b"))
    tok = reg.create_token("example.com", "publish")[0]
    with TestClient(create_app(registry=reg), root_path="/reg") as c:
        fs = {"wgt.mod": modtext(M), "w/data.bin": DATA}
        assert publish(c, tok, M, "v0.1.0", fs).status_code == 201
        assert c.get(f"/reg/{E}/@v/list").text == "v0.1.0\n"
        assert c.get(f"/reg/{E}/@v/v0.1.0/w/data.bin").content == DATA
    reg.close()


def test_readyz_is_503_when_a_store_fails_and_healthz_stays_200(
    tmp_path: Path, s3_url: str
) -> None:
    """Liveness never asks the stores (a store outage must not make a load balancer drop
    every replica at once); readiness names what is down."""
    from registry import open_blob_store

    missing_bucket = "s3://no-such-bucket-" + s3_url.split("/")[2][-8:] + "/blobs"
    reg = Registry(open_metadata_store(str(tmp_path / "r.db")), open_blob_store(missing_bucket))
    with TestClient(create_app(registry=reg)) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["status"] == "unavailable"
        assert r.json()["down"] == ["blob store"]
        assert c.get("/healthz").status_code == 200
    reg.close()


def test_default_config_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry import Config

    monkeypatch.setenv("WGTPM_REGISTRY_DATA", str(tmp_path / "d"))
    monkeypatch.delenv("WGTPM_REGISTRY_DB", raising=False)
    monkeypatch.delenv("WGTPM_REGISTRY_STORE", raising=False)
    c = Config()
    assert c.data == tmp_path / "d"
    assert c.db_url() == f"sqlite:///{tmp_path / 'd' / 'registry.db'}"
    assert c.store_url() == str(tmp_path / "d" / "blobs")
    monkeypatch.setenv("WGTPM_REGISTRY_DB", "postgresql://db/x")
    monkeypatch.setenv("WGTPM_REGISTRY_STORE", "s3://b/p")
    assert (Config().db_url(), Config().store_url()) == ("postgresql://db/x", "s3://b/p")
    assert Config(db="sqlite:///other.db").db_url() == "sqlite:///other.db"
