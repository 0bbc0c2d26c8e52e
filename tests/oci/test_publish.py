"""``wgtpm publish --to oci://REGISTRY/NAMESPACE`` against a real registry on loopback.

The CNCF distribution registry of tests/oci/conftest.py (2.8: no referrers
API). Releases are made by hand (no git, no build) except in the CLI test.
Everything published is read back as raw OCI, the way any client reads it,
never through the target itself. :class:`Wire` is the network between wgtpm
and the registry (an httpx transport): it records every request and lets a
test answer one itself (a dropped manifest push, a registry gone away). The
helpers here are shared with test_referrers.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from tests.oci.conftest import OciRegistry
from wgtpm._errors import WgtpmError
from wgtpm._report import SILENT
from wgtpm.dirhash import hash1_bytes
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.index import IndexEntry, build_index
from wgtpm.oci.client import OciClient
from wgtpm.publish import Release
from wgtpm.publish._slsa import BuildRun, envelope_bytes, statement
from wgtpm.publish.oci import OciTarget

V = "v0.1.0"
MiB = 1 << 20


class Wire(httpx.BaseTransport):
    """Loopback as it is, every request recorded as ``(METHOD, path?query)``; ``answer``
    may answer a request itself (return a response) or let it through (``None``)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen: list[tuple[str, str]] = []
        self.answer: Callable[[httpx.Request], httpx.Response | None] = lambda r: None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode()
        self.seen.append((request.method, target))
        mine = self.answer(request)
        if mine is not None:
            request.read()
            return mine
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()

    def count(self, method: str, part: str = "") -> int:
        return sum(1 for m, p in self.seen if m == method and part in p)

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.seen if m in ("POST", "PUT", "PATCH", "DELETE")]


def client(wire: Wire | None = None) -> HttpClient:
    return HttpClient(HttpOptions(timeout=10, retries=1, backoff=0.01), transport=wire)


def target(reg: OciRegistry, ns: str, http: HttpClient, environ: dict[str, str]) -> OciTarget:
    return OciTarget(reg.oci(ns), http, environ)


def release(
    d: Path,
    module: str,
    files: dict[str, bytes],
    *,
    deps: tuple[tuple[str, str, str], ...] = (),
    gguf: str = "0.19.0",
) -> Release:
    """A release of ``module`` at :data:`V` holding ``files`` (and its wgt.mod), with an
    unsigned SLSA statement naming ``deps`` (module, version, h1)."""
    d.mkdir(parents=True)
    files = {"wgt.mod": f"module {module}\nwgt 0.1\n".encode(), **files}
    paths = {}
    for p, b in files.items():
        paths[p] = d / p.replace("/", "_")
        paths[p].write_bytes(b)
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}
    entries = [IndexEntry(p, len(b), shas[p]) for p, b in files.items()]
    index = build_index(module, V, entries, time="2026-11-29T12:00:00Z")
    run = BuildRun(module, V, "c" * 40, None, "", {"gguf": gguf}, "Linux", "t0", "t1", "id", deps)
    att = envelope_bytes(statement(run, index.to_json(), shas), None)
    mod_h1 = hash1_bytes({"wgt.mod": files["wgt.mod"]})
    return Release(module, V, None, paths, index.to_json(), index.h1(), mod_h1, attestation=att)


FILES = {"data/a.bin": b"A" * 3000, "model/weights.safetensors": b"B" * 2000}


def signed(r: Release) -> Release:
    """``r`` with a model-signing bundle over its index's files."""
    from cryptography.hazmat.primitives.asymmetric import ec

    from wgtpm.trust import make_bundle

    files = {e["path"]: e["sha256"] for e in json.loads(r.index)["files"]}
    key = ec.generate_private_key(ec.SECP256R1())
    return replace(r, signature=make_bundle(f"{r.module}@{r.version}", files, key))


def raw(reg: OciRegistry, path: str, **headers: str) -> httpx.Response:
    """``GET /v2/PATH`` of the registry, as any HTTP client would (its user's credentials)."""
    auth = (reg.user, reg.password) if reg.user and reg.password else None
    return httpx.get(f"{reg.url}/v2/{path}", headers=headers, auth=auth, timeout=10)


@pytest.fixture
def no_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment without the user's Docker or podman credentials."""
    env = {"DOCKER_CONFIG": str(tmp_path / "no-docker"), "NETRC": str(tmp_path / "no-netrc")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    return env


def oci_client(reg: OciRegistry, http: HttpClient) -> OciClient:
    return OciClient(http, reg.host)


def iter_layers(manifest: dict[str, object]) -> Iterator[dict[str, object]]:
    layers = manifest["layers"]
    assert isinstance(layers, list)
    yield from layers


# ---- fixtures -----------------------------------------------------------------------


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def http(wire: Wire) -> Iterator[HttpClient]:
    with client(wire) as c:
        yield c


def _manifest(reg: OciRegistry, repo: str, ref: str) -> tuple[dict[str, object], str]:
    resp = raw(reg, f"{repo}/manifests/{ref}", Accept="application/vnd.oci.image.manifest.v1+json")
    assert resp.status_code == 200, resp.text
    return resp.json(), "sha256:" + hashlib.sha256(resp.content).hexdigest()


def published(
    reg: OciRegistry, ns: str, http: HttpClient, environ: dict[str, str], r: Release
) -> tuple[str, str]:
    """Publish ``r`` (of :data:`REPO`; it must be created): its repository and the digest
    of its manifest as the registry serves it."""
    assert target(reg, ns, http, environ).publish(r, SILENT).created
    repo = f"{ns}/{REPO}"
    return repo, _manifest(reg, repo, V)[1]


def _tags(reg: OciRegistry, repo: str) -> list[str]:
    resp = raw(reg, f"{repo}/tags/list")
    return list(resp.json().get("tags") or []) if resp.status_code == 200 else []


REPO = "example.com/acme/conf"


# ---- publishing, read back as raw OCI ----------------------------------------------------


def test_a_release_reads_back_as_an_oci_artifact_and_again_is_a_no_op(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    from wgtpm.oci.manifest import ARTIFACT_TYPE, INDEX_TITLE

    t = target(oci_registry, oci_namespace, http, no_docker_config)
    r = release(tmp_path / "r", REPO, FILES)
    assert t.published_versions(REPO) == []
    t.check(r)
    done = t.publish(r, SILENT)
    assert done.created and done.url == f"{oci_registry.host}/{oci_namespace}/{REPO}:{V}"
    assert t.published_versions(REPO) == [V]

    repo = f"{oci_namespace}/{REPO}"
    m, _ = _manifest(oci_registry, repo, V)
    assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert m["artifactType"] == ARTIFACT_TYPE
    layers = list(iter_layers(m))
    titles = [la["annotations"]["org.opencontainers.image.title"] for la in layers]  # type: ignore[index]
    assert titles == [*sorted(r.files), INDEX_TITLE]
    for layer, title in zip(layers, titles):
        blob = raw(oci_registry, f"{repo}/blobs/{layer['digest']}").content
        want = r.index if title == INDEX_TITLE else r.files[str(title)].read_bytes()
        assert blob == want, title
        assert layer["digest"] == "sha256:" + hashlib.sha256(want).hexdigest()
        assert layer["size"] == len(want)
    config = m["config"]
    assert isinstance(config, dict)
    assert raw(oci_registry, f"{repo}/blobs/{config['digest']}").status_code == 200

    # the same release again: nothing is written, the tag stays
    wire.seen.clear()
    again = target(oci_registry, oci_namespace, http, no_docker_config)
    again.check(r)
    assert again.publish(r, SILENT).created is False
    assert wire.writes() == []


def test_another_release_under_the_tag_is_refused_in_one_line(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    t = target(oci_registry, oci_namespace, http, no_docker_config)
    r = release(tmp_path / "r1", REPO, FILES)
    assert t.publish(r, SILENT).created
    before = _manifest(oci_registry, f"{oci_namespace}/{REPO}", V)
    other = release(tmp_path / "r2", REPO, {**FILES, "data/a.bin": b"other bytes"})
    with pytest.raises(WgtpmError) as err:
        t.check(other)
    msg = str(err.value)
    assert "\n" not in msg and r.h1 in msg and other.h1 in msg and "never changes" in msg
    wire.seen.clear()
    with pytest.raises(WgtpmError, match="never changes"):
        t.publish(other, SILENT)
    assert wire.writes() == []  # refused before anything went up
    assert _manifest(oci_registry, f"{oci_namespace}/{REPO}", V) == before


def test_a_small_blob_goes_up_in_one_put_a_large_one_in_chunks(
    oci_registry: OciRegistry, oci_namespace: str, http: HttpClient, wire: Wire
) -> None:
    from wgtpm.oci.push import Blob, Pusher

    repo = f"{oci_namespace}/blobs"
    p = Pusher(oci_client(oci_registry, http), repo, chunked_from=8000, chunk_size=3000)
    small, large = Blob.of(b"s" * 100), Blob.of(bytes(range(256)) * 40)  # 100, 10240 bytes
    assert p.push_blob(small) == "uploaded"
    assert wire.count("PATCH") == 0 and wire.count("PUT", "digest=") == 1
    wire.seen.clear()
    assert p.push_blob(large) == "uploaded"
    assert wire.count("PATCH") == 4  # 3000 + 3000 + 3000 + 1240
    assert wire.count("PUT", "digest=") == 1
    for b, data in ((small, small.data), (large, large.data)):
        assert raw(oci_registry, f"{repo}/blobs/{b.digest}").content == data
    wire.seen.clear()
    assert p.push_blob(large) == "present"  # HEAD only
    assert wire.writes() == []


def test_a_chunk_that_fails_on_the_way_resumes_where_the_registry_stands(
    oci_registry: OciRegistry, oci_namespace: str, http: HttpClient, wire: Wire
) -> None:
    """The second PATCH is answered 503 by the network (the registry never saw it): the
    upload asks the registry how much it holds and goes on from there, in the same
    session, sending no chunk twice that arrived."""
    from wgtpm._retry import Backoff
    from wgtpm.oci.push import Blob, Pusher

    patches: list[str] = []

    def drop_second_patch(request: httpx.Request) -> httpx.Response | None:
        if request.method == "PATCH":
            patches.append(request.headers["Content-Range"])
            if len(patches) == 2:
                return httpx.Response(503, text="bad gateway")
        return None

    wire.answer = drop_second_patch
    repo = f"{oci_namespace}/resume"
    p = Pusher(
        oci_client(oci_registry, http),
        repo,
        chunked_from=8000,
        chunk_size=3000,
        retry=Backoff(attempts=3, base=0.0),
    )
    blob = Blob.of(bytes(range(256)) * 40)  # 10240 bytes
    assert p.push_blob(blob) == "uploaded"
    assert patches == ["0-2999", "3000-5999", "3000-5999", "6000-8999", "9000-10239"]
    assert wire.count("POST", "/blobs/uploads/") == 1  # one session, resumed
    assert raw(oci_registry, f"{repo}/blobs/{blob.digest}").content == blob.data


def test_a_file_on_disk_goes_up_in_chunks_from_its_bytes(
    oci_registry: OciRegistry, oci_namespace: str, http: HttpClient, wire: Wire, tmp_path: Path
) -> None:
    from wgtpm.oci.push import Blob, Pusher

    data = hashlib.sha256(b"seed").digest() * 1000  # 32000 bytes
    f = tmp_path / "w.bin"
    f.write_bytes(data)
    blob = Blob("sha256:" + hashlib.sha256(data).hexdigest(), len(data), path=f)
    repo = f"{oci_namespace}/files"
    p = Pusher(oci_client(oci_registry, http), repo, chunked_from=10000, chunk_size=7000)
    assert p.push_blob(blob) == "uploaded"
    assert wire.count("PATCH") == 5
    assert raw(oci_registry, f"{repo}/blobs/{blob.digest}").content == data


def test_a_blob_a_dependency_has_is_mounted_not_uploaded(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    """A release that ships a file its dependency ships too (a tokenizer, base weights):
    the blob is mounted from the dependency's repository in the same namespace."""
    shared = hashlib.sha256(b"x").digest() * (MiB // 32 + 1)  # just over 1 MiB
    t = target(oci_registry, oci_namespace, http, no_docker_config)
    base = release(tmp_path / "base", "example.com/acme/base", {"tok/vocab.bin": shared})
    assert t.publish(base, SILENT).created
    app = release(
        tmp_path / "app",
        "example.com/acme/app",
        {"tok/vocab.bin": shared, "head.bin": b"h" * 10},
        deps=(("example.com/acme/base", V, base.h1),),
    )
    wire.seen.clear()
    assert t.publish(app, SILENT).created
    digest = "sha256:" + hashlib.sha256(shared).hexdigest()
    base_repo = f"{oci_namespace}/example.com/acme/base"
    assert wire.count("POST", f"mount={digest.replace(':', '%3A')}&from={base_repo}") == 1
    assert wire.count("PATCH") == 0
    uploads = [p for m, p in wire.seen if m == "PUT" and "digest=" in p]
    assert not any(digest.replace(":", "%3A") in p for p in uploads)
    repo = f"{oci_namespace}/example.com/acme/app"
    assert raw(oci_registry, f"{repo}/blobs/{digest}").content == shared


# ---- a push that fails leaves no tag ------------------------------------------------------


def _drop_tag_push(request: httpx.Request) -> httpx.Response | None:
    if request.method == "PUT" and request.url.path.endswith(f"/manifests/{V}"):
        return httpx.Response(503, text="proxy: upstream went away")
    return None


def _registry_gone_after_two_uploads(
    wire: Wire,
) -> Callable[[httpx.Request], httpx.Response | None]:
    def answer(request: httpx.Request) -> httpx.Response | None:
        if wire.count("PUT", "digest=") > 2:
            raise httpx.ConnectError("connection refused", request=request)
        return None

    return answer


@pytest.mark.parametrize("fault", ["tag push dropped", "registry gone"])
def test_a_push_that_fails_leaves_no_tag_and_the_next_completes_it(
    fault: str,
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    repo = f"{oci_namespace}/{REPO}"
    r = signed(release(tmp_path / "r", REPO, FILES))
    wire.answer = (
        _drop_tag_push if fault == "tag push dropped" else _registry_gone_after_two_uploads(wire)
    )
    with pytest.raises(WgtpmError) as err:
        target(oci_registry, oci_namespace, http, no_docker_config).publish(r, SILENT)
    msg = str(err.value)
    assert "\n" not in msg and "no tag was pushed" in msg, msg
    wire.answer = lambda r: None  # the network heals
    assert V not in _tags(oci_registry, repo)
    assert (
        target(oci_registry, oci_namespace, http, no_docker_config).published_versions(REPO) == []
    )
    wire.seen.clear()
    assert target(oci_registry, oci_namespace, http, no_docker_config).publish(r, SILENT).created
    assert V in _tags(oci_registry, repo)
    if fault == "tag push dropped":  # all but the tag was there: no blob, no referrer again
        digest = _manifest(oci_registry, repo, V)[1]
        assert wire.writes() == [
            ("PUT", f"/v2/{repo}/manifests/{digest}"),
            ("PUT", f"/v2/{repo}/manifests/{V}"),
        ]


# ---- a module path that names its registry (WGTOCI) ---------------------------------------


def test_a_path_wgtoci_names_is_published_to_its_registry_and_got_direct(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    no_docker_config: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
) -> None:
    """``oci.acme.internal/NAME/Xor`` with ``WGTOCI=oci.acme.internal=HOST:PORT``: the
    publish needs no --to, and lands in the repository ``NAME/x__xor`` that ``direct``
    reads."""
    from wgtpm.publish.targets import select_target

    name = oci_namespace  # a repository no other test uses
    module = f"oci.acme.internal/{name}/Xor"
    monkeypatch.setenv("WGTOCI", f"oci.acme.internal={oci_registry.host}")
    t = select_target(module, tmp_path, http, to=None, dry_run=False, out=None)
    assert t.name == f"OCI registry oci://{oci_registry.host}"
    r = release(tmp_path / "r", module, FILES)
    assert t.publish(r, SILENT).created
    assert V in _tags(oci_registry, f"{name}/x__xor")
    monkeypatch.setenv("WGTPROXY", "direct")
    got = wgtpm("get", f"{module}@{V}", cwd=project)
    assert got.code == 0, got.err
    sums = [ln for ln in (project / "wgt.sum").read_text().splitlines() if module in ln]
    assert sums == r.sum_lines()
