"""wgtpm's OCI distribution client against a real registry on loopback (tests/oci/conftest.py)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator

import httpx
import pytest

from tests.servers import Fault, LoopbackServer, Request, Response
from wgtpm.httpclient import HttpClient, HttpOptions, redact
from wgtpm.oci.auth import Credentials
from wgtpm.oci.client import (
    OciClient,
    OciError,
    OciNotFoundError,
    RegistryAuthError,
    is_loopback,
    parse_challenge,
)

from .conftest import IDENTITY_TOKEN, PASSWORD, USER, OciRegistry
from .helpers import push_artifact, push_blob, push_manifest


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(retries=1, backoff=0.01)) as client:
        yield client


def test_fixtures_answer(oci_registry: OciRegistry, oci_registry_auth: OciRegistry) -> None:
    assert httpx.get(oci_registry.url + "/v2/").status_code == 200
    assert httpx.get(oci_registry_auth.url + "/v2/").status_code == 401
    assert httpx.get(oci_registry_auth.url + "/v2/", auth=(USER, PASSWORD)).status_code == 200
    assert httpx.get(oci_registry_auth.url + "/v2/", auth=(USER, "wrong")).status_code == 401


def test_parse_challenge() -> None:
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.example/token",service="reg.example",'
        'scope="repository:a/b:pull,push", error="invalid_token"'
    )
    assert scheme == "bearer"
    assert params == {
        "realm": "https://auth.example/token",
        "service": "reg.example",
        "scope": "repository:a/b:pull,push",
        "error": "invalid_token",
    }
    assert parse_challenge('Basic realm="x"') == ("basic", {"realm": "x"})


def test_loopback_is_plain_http_only(http: HttpClient) -> None:
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost") and is_loopback("[::1]:80")
    assert not is_loopback("reg.example") and not is_loopback("127.0.0.1.nip.io")
    assert OciClient(http, "127.0.0.1:5000").base == "http://127.0.0.1:5000"
    assert OciClient(http, "reg.example").base == "https://reg.example"
    assert OciClient(http, "reg.example", plain_http=True).base == "http://reg.example"


def test_tags_paginate_and_manifest_digest(
    http: HttpClient, oci_registry: OciRegistry, oci_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = f"{oci_namespace}/m"
    digests = {}
    for i in range(5):
        digests[f"v0.{i}.0"] = push_artifact(oci_registry, repo, f"v0.{i}.0", {"f.txt": b"%d" % i})
    monkeypatch.setattr("wgtpm.oci.client.PAGE", 2)  # 3 pages, followed by Link
    client = OciClient(http, oci_registry.host, auth=Credentials())
    assert sorted(client.tags(repo)) == sorted(digests)
    got = client.manifest(repo, "v0.3.0")
    assert got.digest == digests["v0.3.0"]
    assert got.digest == "sha256:" + hashlib.sha256(got.data).hexdigest()
    assert got.media_type == "application/vnd.oci.image.manifest.v1+json"
    assert client.manifest(repo, got.digest).data == got.data
    with pytest.raises(OciNotFoundError, match="not found"):
        client.tags(f"{oci_namespace}/absent")
    with pytest.raises(OciNotFoundError):
        client.manifest(repo, "v9.9.9")


def test_blob_size_and_resumed_stream(
    http: HttpClient, oci_registry: OciRegistry, oci_namespace: str
) -> None:
    repo = f"{oci_namespace}/b"
    data = bytes(range(256)) * 4096  # 1 MiB
    digest = push_blob(oci_registry, repo, data)
    client = OciClient(http, oci_registry.host, auth=Credentials())
    assert client.blob_size(repo, digest) == len(data)
    assert b"".join(client.blob_chunks(repo, digest, len(data))) == data
    tail = b"".join(client.blob_chunks(repo, digest, len(data), offset=1000))
    assert tail == data[1000:]
    with pytest.raises(OciError, match="longer than the 10 bytes"):
        b"".join(client.blob_chunks(repo, digest, 10))
    with pytest.raises(OciNotFoundError):
        client.blob_size(repo, "sha256:" + "0" * 64)


class _Lying(LoopbackServer):
    """Serves one manifest body for every reference, with a stated digest."""

    name = "lying-registry"

    def __init__(self, body: bytes, said: str | None) -> None:
        super().__init__()
        self.body, self.said = body, said

    def route(self, req: Request) -> Response:
        headers = {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}
        if self.said:
            headers["Docker-Content-Digest"] = self.said
        return Response(200, headers, self.body)


def test_manifest_whose_digest_is_not_the_one_asked_for(http: HttpClient) -> None:
    body = b'{"schemaVersion":2,"layers":[]}'
    real = "sha256:" + hashlib.sha256(body).hexdigest()
    other = "sha256:" + "1" * 64
    with _Lying(body, None) as srv:
        client = OciClient(http, f"127.0.0.1:{srv.port}", auth=Credentials())
        assert client.manifest("a/b", real).digest == real
        assert client.manifest("a/b", "v1.0.0").digest == real
        with pytest.raises(OciError, match="not the one asked for"):
            client.manifest("a/b", other)
    with _Lying(body, other) as srv:
        client = OciClient(http, f"127.0.0.1:{srv.port}", auth=Credentials())
        with pytest.raises(OciError, match="says the manifest's digest is sha256:1111"):
            client.manifest("a/b", "v1.0.0")


def test_basic_auth(http: HttpClient, oci_registry_auth: OciRegistry, oci_namespace: str) -> None:
    repo = f"{oci_namespace}/basic"
    push_artifact(oci_registry_auth, repo, "v1.0.0", {"x": b"x"})
    ok = OciClient(http, oci_registry_auth.host, auth=Credentials(USER, PASSWORD, source="test"))
    assert ok.tags(repo) == ["v1.0.0"]
    assert ok.authorization(repo)["Authorization"].startswith("Basic ")
    nobody = OciClient(http, oci_registry_auth.host, auth=Credentials())
    with pytest.raises(RegistryAuthError, match="wants a user and password; log in"):
        nobody.tags(repo)
    wrong = OciClient(
        http, oci_registry_auth.host, auth=Credentials(USER, "not-the-password", source="test")
    )
    with pytest.raises(RegistryAuthError, match="refused with the credentials from test") as exc:
        wrong.tags(repo)
    assert "not-the-password" not in str(exc.value)


def test_bearer_token_flow(
    http: HttpClient, oci_registry_token: OciRegistry, oci_namespace: str
) -> None:
    repo = f"{oci_namespace}/tok"
    data = b"weights" * 1000
    digest = push_blob(oci_registry_token, repo, data)
    push_artifact(oci_registry_token, repo, "v1.0.0", {"w.bin": data})
    token = oci_registry_token.token_server
    assert token is not None
    client = OciClient(http, oci_registry_token.host, auth=Credentials(USER, PASSWORD, source="t"))
    before = token.issued
    assert client.tags(repo) == ["v1.0.0"]
    assert client.blob_size(repo, digest) == len(data)
    assert b"".join(client.blob_chunks(repo, digest, len(data))) == data
    assert token.issued == before + 1  # one token for the pull scope, then reused
    # every request to the realm carried the credentials; none to the registry did Basic
    sent = token.log.where(path="/token*")
    assert sent and all((s.header("authorization") or "").startswith("Basic ") for s in sent)
    # an identity token (config.json's identitytoken, a helper's <token>) is a refresh token
    ident = OciClient(
        http, oci_registry_token.host, auth=Credentials(identity_token=IDENTITY_TOKEN)
    )
    assert ident.tags(repo) == ["v1.0.0"]
    # anonymous: the token grants nothing and the registry refuses it
    anon = OciClient(http, oci_registry_token.host, auth=Credentials())
    with pytest.raises(RegistryAuthError, match="refused with no credentials"):
        anon.tags(repo)
    bad = OciClient(
        http, oci_registry_token.host, auth=Credentials(USER, "bad-password-x", source="t")
    )
    with pytest.raises(
        RegistryAuthError, match="token service refused the credentials from t"
    ) as e:
        bad.tags(repo)
    assert "bad-password-x" not in str(e.value)
    assert "bad-password-x" not in redact("x bad-password-x y")


def test_manifest_json_roundtrip_through_registry(
    http: HttpClient, oci_registry: OciRegistry, oci_namespace: str
) -> None:
    repo = f"{oci_namespace}/raw"
    cfg = push_blob(oci_registry, repo, b"{}")
    doc = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/x-test",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": cfg, "size": 2},
        "layers": [],
    }
    data = json.dumps(doc).encode()
    d = push_manifest(oci_registry, repo, "v0.0.1", data)
    assert (
        OciClient(http, oci_registry.host, auth=Credentials()).manifest(repo, "v0.0.1").digest == d
    )


class _NoRanges(LoopbackServer):
    """Serves one blob whole (200) whatever the Range asked for."""

    name = "no-ranges"

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = data

    def route(self, req: Request) -> Response:
        return Response(200, {"Content-Type": "application/octet-stream"}, self.data)


def test_blob_stream_resumed_from_a_registry_that_ignores_range(http: HttpClient) -> None:
    """A cut, then a 200 with the whole blob to the Range request: the bytes the caller
    already has are not handed out again."""
    data = os.urandom(200_000)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with _NoRanges(data) as srv:
        srv.inject(Fault.reset("/v2/*", at=0.5))
        client = OciClient(http, f"127.0.0.1:{srv.port}", auth=Credentials())
        assert b"".join(client.blob_chunks("a/b", digest, len(data))) == data
        gets = srv.log.where(path="/v2/*")
        assert len(gets) == 2 and gets[1].header("range") is not None
