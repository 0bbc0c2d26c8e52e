"""The OCI source's settings (oci:// URLs, WGTOCI, WGTOCI_INSECURE) and what it sends where:
credentials never to blob storage, downloads resumed after a cut."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.servers import CdnServer, Fault, Request, Response
from tests.sources.test_conformance import RegistryFront
from wgtpm._errors import FetchError, NotFoundError, UsageError
from wgtpm.httpclient import HttpClient
from wgtpm.oci import manifest as oci_manifest
from wgtpm.sources.chain import from_env, parse_proxy_list
from wgtpm.sources.oci import OciDirect, OciSource, parse_oci_url, parse_wgtoci

from .conftest import PASSWORD, USER, OciRegistry
from .helpers import docker_login, push_artifact, push_manifest, push_release


def test_oci_urls() -> None:
    assert parse_oci_url("oci://Reg.Example:5000/team/models/") == (
        "reg.example:5000",
        "team/models",
    )
    assert parse_oci_url("oci://reg.example") == ("reg.example", "")
    with pytest.raises(UsageError, match="carry no credentials"):
        parse_oci_url("oci://user:pw@reg.example/ns")
    with pytest.raises(UsageError, match="not an OCI repository name"):
        parse_oci_url("oci://reg.example/Team")
    with pytest.raises(UsageError, match="oci://HOST"):
        parse_oci_url("oci:///ns")
    entries = parse_proxy_list("oci://reg.example/ns,direct")
    assert [e.url for e in entries] == ["oci://reg.example/ns", "direct"]
    with pytest.raises(UsageError, match=r"WGTPROXY=.*carry no credentials"):
        parse_proxy_list("oci://u:secret-pw@reg.example/ns")


def test_wgtoci_patterns() -> None:
    assert parse_wgtoci("oci.acme.internal, *.reg.example=reg.example:5000 ,") == [
        ("oci.acme.internal", None),
        ("*.reg.example", "reg.example:5000"),
    ]
    for bad in ("a.example=", "=x", "a.example=x/y", "a.example=h:port"):
        with pytest.raises(UsageError, match="WGTOCI="):
            parse_wgtoci(bad)


class _Inner:
    name = "inner"

    def versions(self, path: str) -> list[str]:
        return ["from-inner"]


def test_direct_dispatch_and_plain_http_only_where_allowed() -> None:
    with HttpClient() as http:
        d = OciDirect(
            _Inner(),  # type: ignore[arg-type]
            "oci.acme.internal,*.corp.example=10.1.2.3:5000,lo.example=127.0.0.1:5000",
            lambda: http,
            insecure_patterns="10.1.2.3:*",
        )
        assert d.versions("github.com/acme/xor") == ["from-inner"]
        src = d.source_for("oci.acme.internal/models/Xor")
        assert isinstance(src, OciSource)
        assert src.client.base == "https://oci.acme.internal"  # not loopback, not listed
        assert src.repository("oci.acme.internal/models/Xor") == "models/x__xor"
        corp = d.source_for("m.corp.example/team/m")
        assert isinstance(corp, OciSource)
        assert corp.client.base == "http://10.1.2.3:5000"  # WGTOCI_INSECURE
        lo = d.source_for("lo.example/m")
        assert isinstance(lo, OciSource) and lo.client.base == "http://127.0.0.1:5000"
        with pytest.raises(NotFoundError):
            d.source_for("oci.acme.internal").versions("oci.acme.internal")


def test_chain_builds_oci_sources_from_the_environment(tmp_path: Path) -> None:
    env = {
        "WGTPROXY": "oci://reg.example/ns,oci://insecure.example:5000/ns,direct",
        "WGTOCI": "oci.acme.internal",
        "WGTOCI_INSECURE": "insecure.example:5000",
    }
    from wgtpm.cache import Cache

    with HttpClient() as http:
        chain = from_env(http, env, Cache(tmp_path / "cache"))
        src = chain.source("oci://reg.example/ns")
        assert isinstance(src, OciSource) and src.client.base == "https://reg.example"
        assert src.repository("example.com/acme/m") == "ns/example.com/acme/m"
        plain = chain.source("oci://insecure.example:5000/ns")
        assert isinstance(plain, OciSource) and plain.client.base == "http://insecure.example:5000"
        direct = chain.source("direct")
        assert isinstance(direct, OciDirect)
        assert isinstance(direct.source_for("oci.acme.internal/m"), OciSource)


def _cache_blobs() -> set[str]:
    root = Path(os.environ["WGTPM_CACHE"])
    return {p.name for p in root.rglob("*") if p.is_file() and len(p.name) == 64}


def test_credentials_never_follow_a_redirect_to_blob_storage(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    cdn: CdnServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The registry answers blob GETs with a redirect to storage on another origin (as S3
    or a CDN behind Harbor, ECR or GHCR does); that storage refuses any request that
    carries credentials, as S3 does a pre-signed URL with a second credential."""
    path = "example.com/acme/cdn"
    weights = os.urandom(200_000)
    files = {"wgt.mod": f"module {path}\n".encode(), "w.bin": weights}
    repo = f"{oci_namespace}/{path}"
    push_release(oci_registry_token, repo, path, "v1.0.0", files)

    class ToCdn(RegistryFront):
        def handle(self, req: Request) -> Response:
            resp = super().handle(req)
            if "/blobs/sha256:" in req.path and req.method == "GET" and resp.status == 200:
                digest = req.path.rsplit(":", 1)[1]
                return Response.redirect(cdn.put(resp.body, "blob", digest=digest), 307)
            return resp

    front = ToCdn(oci_registry_token.url).start()
    try:
        docker = docker_login(tmp_path / "docker", f"127.0.0.1:{front.port}")
        monkeypatch.setenv("DOCKER_CONFIG", docker)
        monkeypatch.setenv("WGTPROXY", f"oci://127.0.0.1:{front.port}/{oci_namespace}")
        r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    finally:
        front.stop()
    assert r.code == 0, r.err  # type: ignore[attr-defined]
    assert hashlib.sha256(weights).hexdigest() in _cache_blobs()
    to_cdn = cdn.log.where(server="cdn")
    assert to_cdn, "the blobs came from storage"
    assert all(s.header("authorization") is None for s in to_cdn)
    # the registry itself was sent the bearer token, and the token service the password
    assert front.log.where(path="/v2/*/blobs/*", header="authorization")
    token = oci_registry_token.token_server
    assert token is not None and token.log.where(path="/token*", header="authorization")


def test_a_cut_download_resumes_with_range(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = "example.com/acme/cut"
    weights = os.urandom(400_000)
    files = {"wgt.mod": f"module {path}\n".encode(), "w.bin": weights}
    push_release(oci_registry, f"{oci_namespace}/{path}", path, "v1.0.0", files)
    blob = f"/v2/{oci_namespace}/{path}/blobs/sha256:{hashlib.sha256(weights).hexdigest()}"
    front = RegistryFront(oci_registry.url).start()
    try:
        front.inject(Fault.reset(blob, at=0.5))
        monkeypatch.setenv("WGTPROXY", f"oci://127.0.0.1:{front.port}/{oci_namespace}")
        r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    finally:
        front.stop()
    assert r.code == 0, r.err  # type: ignore[attr-defined]
    assert hashlib.sha256(weights).hexdigest() in _cache_blobs()
    gets = front.log.where(method="GET", path=blob)
    assert (
        len(gets) == 2
        and gets[1].header(
            "range",
        )
        is not None
    ), gets


def test_a_huge_stated_wgt_mod_is_refused_before_any_download(
    oci_registry: OciRegistry, oci_namespace: str
) -> None:
    """wgt.mod and the index are read whole: a manifest stating gigabytes for one is
    refused without a request for its blob."""
    path = "example.com/acme/huge"
    files = {"wgt.mod": f"module {path}\n".encode(), "w.bin": b"w"}
    push_release(oci_registry, f"{oci_namespace}/{path}", path, "v1.0.0", files)

    class Huge(RegistryFront):
        def handle(self, req: Request) -> Response:
            resp = super().handle(req)
            if "/manifests/" in req.path and resp.status == 200:
                doc = json.loads(resp.body)
                for layer in doc["layers"]:
                    if layer["annotations"][oci_manifest.TITLE] == "wgt.mod":
                        layer["size"] = 1 << 40
                resp.body = json.dumps(doc).encode()
                resp.headers = {
                    k: v for k, v in resp.headers.items() if k.lower() != "docker-content-digest"
                }
            return resp

    front = Huge(oci_registry.url).start()
    try:
        with HttpClient() as http:
            src = OciSource(http, f"127.0.0.1:{front.port}", oci_namespace)
            with pytest.raises(FetchError, match=r"states 1099511627776 bytes for wgt.mod"):
                src.mod(path, "v1.0.0")
        assert not front.log.where(path="/v2/*/blobs/*")
    finally:
        front.stop()


def test_a_tag_naming_an_image_index_is_refused_in_one_line(
    oci_registry: OciRegistry, oci_namespace: str
) -> None:
    """A multi-platform image (an image index) is not one artifact: refused as such, not
    reported missing."""
    path = "example.com/acme/multi"
    repo = f"{oci_namespace}/{path}"
    child = push_artifact(oci_registry, repo, "child", {"f": b"f"})
    size = len(httpx.get(f"{oci_registry.url}/v2/{repo}/manifests/child").content)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": oci_manifest.MANIFEST_TYPE, "digest": child, "size": size}],
    }
    push_manifest(oci_registry, repo, "v1.0.0", json.dumps(index).encode(), index["mediaType"])
    with HttpClient() as http:
        src = OciSource(http, oci_registry.host, oci_namespace)
        with pytest.raises(FetchError, match="names an image index") as exc:
            src.mod(path, "v1.0.0")
    assert not isinstance(exc.value, NotFoundError)


@pytest.mark.parametrize(
    ("created", "want"),
    [
        ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"),
        ("2026-12-01T11:00:00.5+01:00", "2026-12-01T10:00:00Z"),
        ("last tuesday", None),
    ],
)
def test_info_time_from_the_created_annotation(
    oci_registry: OciRegistry, oci_namespace: str, created: str, want: str | None
) -> None:
    path = "example.com/acme/timed"
    repo = f"{oci_namespace}/{path}"
    push_artifact(
        oci_registry, repo, "v1.0.0", {"f": b"f"}, annotations={oci_manifest.CREATED: created}
    )
    with HttpClient() as http:
        info = OciSource(http, oci_registry.host, oci_namespace).info(path, "v1.0.0")
    assert info.version == "v1.0.0" and info.time == want


def test_credentials_and_tokens_never_cross_registries(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """WGTPROXY names an open registry, then a token registry whose credentials are in
    config.json: the module is found in the second; the first never sees them."""
    path = "example.com/acme/private"
    files = {"wgt.mod": f"module {path}\n".encode(), "w.bin": os.urandom(1000)}
    push_release(oci_registry_token, f"{oci_namespace}/{path}", path, "v1.0.0", files)
    front = RegistryFront(oci_registry.url).start()
    try:
        monkeypatch.setenv(
            "DOCKER_CONFIG", docker_login(tmp_path / "docker", oci_registry_token.host)
        )
        monkeypatch.setenv(
            "WGTPROXY",
            f"oci://127.0.0.1:{front.port}/{oci_namespace},{oci_registry_token.oci(oci_namespace)}",
        )
        r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    finally:
        front.stop()
    assert r.code == 0, r.err  # type: ignore[attr-defined]
    assert front.log.where(path="/v2/*"), "the first registry was asked"
    assert not front.log.where(header="authorization")


@pytest.mark.parametrize("way", ["WGTPROXY", "WGTOCI"])
def test_a_token_held_for_one_registry_is_never_sent_to_the_next(
    way: str,
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """One command gets a module from a token registry (its credentials in config.json,
    a bearer token fetched and held) and then one from another registry on the same host
    (another port): the second registry is sent neither the token nor the password, the
    token service is sent the password only by the registry whose credentials they are."""
    ns = oci_namespace
    if way == "WGTPROXY":  # both registries listed; the token one asked first for both
        locked, open_ = "example.com/acme/locked", "example.com/acme/open"
        locked_repo, open_repo = f"{ns}/{locked}", f"{ns}/{open_}"
    else:  # each path names its registry
        locked, open_ = f"b.internal/{ns}/locked", f"a.internal/{ns}/open"
        locked_repo, open_repo = f"{ns}/locked", f"{ns}/open"
    push_release(
        oci_registry_token,
        locked_repo,
        locked,
        "v1.0.0",
        {"wgt.mod": f"module {locked}\n".encode()},
    )
    push_release(
        oci_registry, open_repo, open_, "v1.0.0", {"wgt.mod": f"module {open_}\n".encode()}
    )
    front = RegistryFront(oci_registry.url).start()
    token = oci_registry_token.token_server
    assert token is not None
    try:
        monkeypatch.setenv(
            "DOCKER_CONFIG", docker_login(tmp_path / "docker", oci_registry_token.host)
        )
        if way == "WGTPROXY":
            monkeypatch.setenv(
                "WGTPROXY", f"{oci_registry_token.oci(ns)},oci://127.0.0.1:{front.port}/{ns}"
            )
        else:
            monkeypatch.setenv("WGTPROXY", "direct")
            monkeypatch.setenv(
                "WGTOCI",
                f"b.internal={oci_registry_token.host},a.internal=127.0.0.1:{front.port}",
            )
        r = wgtpm("get", f"{locked}@v1.0.0", f"{open_}@v1.0.0", cwd=project)  # type: ignore[operator]
    finally:
        front.stop()
    assert r.code == 0, r.err  # type: ignore[attr-defined]
    assert token.log.where(path="/token*", header="authorization"), "a token was fetched"
    assert front.log.where(path="/v2/*"), "the second registry was asked"
    assert not front.log.where(header="authorization")
    sums = (project / "wgt.sum").read_text()
    assert locked in sums and open_ in sums


def test_refresh_fetches_a_new_token_for_a_refused_download(
    oci_registry_token: OciRegistry, oci_namespace: str
) -> None:
    """The half of resuming past a token's life that the source owns: ``refresh`` forgets
    the token the refused request carried and asks the token service again; a request
    with a token it does not hold (refreshed already by another thread) costs no token."""
    from wgtpm.oci.auth import Credentials
    from wgtpm.sources import FileRequest

    path = "example.com/acme/refresh"
    weights = os.urandom(5000)
    push_release(
        oci_registry_token,
        f"{oci_namespace}/{path}",
        path,
        "v1.0.0",
        {"wgt.mod": f"module {path}\n".encode(), "w.bin": weights},
    )
    token = oci_registry_token.token_server
    assert token is not None
    creds = Credentials(USER, PASSWORD, source="test")

    def asked() -> int:
        return len(token.log.where(path="/token*"))

    with HttpClient() as http:
        src = OciSource(http, oci_registry_token.host, oci_namespace, auth=creds)
        first = src.file(path, "v1.0.0", "w.bin")
        assert first.headers.get("Authorization", "").startswith("Bearer ")
        n = asked()
        assert src.file(path, "v1.0.0", "w.bin") == first and asked() == n  # held
        other = FileRequest(first.url, {"Authorization": "Bearer not-one-we-hold"})
        assert src.refresh(path, "v1.0.0", "w.bin", other) == first and asked() == n
        again = src.refresh(path, "v1.0.0", "w.bin", first)
        assert asked() == n + 1
        got = httpx.get(again.url, headers=dict(again.headers), follow_redirects=True)
        assert got.status_code == 200 and got.content == weights
