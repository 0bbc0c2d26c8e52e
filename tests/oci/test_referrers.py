"""A release's signature and SLSA statement attach to its manifest as OCI referrers.

On the distribution registry (2.8, no referrers API) through the spec's tag
schema (an image index tagged ``sha256-<hex>``); on a registry with the OCI
1.1 referrers API (emulated on the wire in front of the same registry:
``OCI-Subject`` on a push with a subject, ``GET /v2/<name>/referrers/<digest>``)
through the API alone. Either way :func:`wgtpm.oci.push.read_attachment`,
what the source serves ``@v/$version.sig`` and ``.slsa.json`` from, finds them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from tests.oci.conftest import OciRegistry
from tests.oci.test_publish import (
    FILES,
    REPO,
    V,
    Wire,
    _manifest,
    _tags,
    http,
    no_docker_config,
    oci_client,
    published,
    raw,
    release,
    signed,
    target,
    wire,
)
from wgtpm._report import SILENT
from wgtpm.httpclient import HttpClient
from wgtpm.oci.push import (
    IMAGE_INDEX_TYPE,
    SIGNATURE_TYPE,
    STATEMENT_TYPE,
    Pusher,
    PushError,
    read_attachment,
    referrers,
    referrers_tag,
)

__all__ = ["http", "no_docker_config", "wire"]  # fixtures


def test_attachments_go_under_the_tag_schema_without_a_referrers_api(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    r = signed(release(tmp_path / "r", REPO, FILES))
    repo, subject = published(oci_registry, oci_namespace, http, no_docker_config, r)
    assert raw(oci_registry, f"{repo}/referrers/{subject}").status_code == 404  # no API
    tag = referrers_tag(subject)
    assert tag == "sha256-" + subject.split(":")[1] and tag in _tags(oci_registry, repo)
    idx = raw(oci_registry, f"{repo}/manifests/{tag}", Accept=IMAGE_INDEX_TYPE)
    assert idx.headers["content-type"] == IMAGE_INDEX_TYPE
    listed = idx.json()["manifests"]
    assert [d["artifactType"] for d in listed] == [SIGNATURE_TYPE, STATEMENT_TYPE]
    for d, data, title in zip(listed, (r.signature, r.attestation), ("wgt.sig", "wgt.slsa.json")):
        m, digest = _manifest(oci_registry, repo, d["digest"])
        assert digest == d["digest"] and m["artifactType"] == d["artifactType"]
        assert m["subject"]["digest"] == subject  # type: ignore[index]
        layers = m["layers"]
        assert isinstance(layers, list) and len(layers) == 1
        layer = layers[0]
        assert layer["annotations"]["org.opencontainers.image.title"] == title
        assert raw(oci_registry, f"{repo}/blobs/{layer['digest']}").content == data

    oci = oci_client(oci_registry, http)
    assert read_attachment(oci, repo, subject, SIGNATURE_TYPE) == r.signature
    assert read_attachment(oci, repo, subject, STATEMENT_TYPE) == r.attestation
    assert read_attachment(oci, repo, subject, "application/vnd.example.other") is None

    # the same release built elsewhere (another statement): a no-op that keeps the first
    again = signed(release(tmp_path / "r2", REPO, FILES, gguf="0.18.0"))
    assert again.h1 == r.h1 and again.attestation != r.attestation
    t = target(oci_registry, oci_namespace, http, no_docker_config)
    assert t.publish(again, SILENT).created is False
    assert read_attachment(oci, repo, subject, STATEMENT_TYPE) == r.attestation
    # attaching another of a type the subject has keeps the first, listed once
    p = Pusher(oci, repo)
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject}
    desc["size"] = len(raw(oci_registry, f"{repo}/manifests/{V}").content)  # type: ignore[assignment]
    assert p.attach(desc, STATEMENT_TYPE, b"a later statement", "wgt.slsa.json")[1] is False
    assert len(referrers(oci, repo, subject, STATEMENT_TYPE)) == 1


def test_an_unsigned_release_has_only_its_statement(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    r = release(tmp_path / "r", REPO, FILES)
    repo, subject = published(oci_registry, oci_namespace, http, no_docker_config, r)
    oci = oci_client(oci_registry, http)
    assert read_attachment(oci, repo, subject, SIGNATURE_TYPE) is None
    assert read_attachment(oci, repo, subject, STATEMENT_TYPE) == r.attestation
    nothing = replace(r, attestation=b"", module="example.com/acme/bare")
    nothing = replace(nothing, index=nothing.index.replace(REPO.encode(), nothing.module.encode()))
    assert (
        target(oci_registry, oci_namespace, http, no_docker_config).publish(nothing, SILENT).created
    )
    bare = f"{oci_namespace}/example.com/acme/bare"
    assert [t for t in _tags(oci_registry, bare) if t.startswith("sha256-")] == []


class ReferrersApi:
    """The OCI 1.1 referrers API, emulated on the wire in front of a registry without it:
    a manifest pushed with a ``subject`` is answered with ``OCI-Subject`` and listed."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.listed: dict[str, list[dict[str, object]]] = {}
        self.answered = 0

    def __call__(self, request: httpx.Request) -> httpx.Response | None:
        path = request.url.path
        if request.method == "GET" and "/referrers/" in path:
            subject = path.rsplit("/", 1)[1]
            want = request.url.params.get("artifactType")
            found = [
                d for d in self.listed.get(subject, []) if not want or d["artifactType"] == want
            ]
            self.answered += 1
            headers = {"Content-Type": IMAGE_INDEX_TYPE}
            if want:
                headers["OCI-Filters-Applied"] = "artifactType"
            index = {"schemaVersion": 2, "mediaType": IMAGE_INDEX_TYPE, "manifests": found}
            return httpx.Response(200, headers=headers, content=json.dumps(index).encode())
        if request.method == "PUT" and "/manifests/" in path:
            body = request.read()
            doc = json.loads(body)
            if "subject" not in doc:
                return None
            resp = self.wire.inner.handle_request(request)
            resp.read()
            subject = doc["subject"]["digest"]
            self.listed.setdefault(subject, []).append(
                {
                    "mediaType": doc["mediaType"],
                    "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
                    "size": len(body),
                    "artifactType": doc["artifactType"],
                }
            )
            headers = {**resp.headers, "OCI-Subject": subject}
            return httpx.Response(resp.status_code, headers=headers, content=resp.content)
        return None


def test_a_registry_with_the_referrers_api_keeps_the_list_itself(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    api = ReferrersApi(wire)
    wire.answer = api
    r = signed(release(tmp_path / "r", REPO, FILES))
    repo, subject = published(oci_registry, oci_namespace, http, no_docker_config, r)
    assert [d["artifactType"] for d in api.listed[subject]] == [SIGNATURE_TYPE, STATEMENT_TYPE]
    assert [t for t in _tags(oci_registry, repo) if t.startswith("sha256-")] == []  # no fallback
    wire.seen.clear()
    oci = oci_client(oci_registry, http)
    assert read_attachment(oci, repo, subject, SIGNATURE_TYPE) == r.signature
    assert read_attachment(oci, repo, subject, STATEMENT_TYPE) == r.attestation
    assert not any(referrers_tag(subject) in p for _, p in wire.seen)  # the API sufficed


def test_an_attachment_with_other_bytes_than_its_digest_is_refused(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    r = signed(release(tmp_path / "r", REPO, FILES))
    repo, subject = published(oci_registry, oci_namespace, http, no_docker_config, r)
    sig_digest = "sha256:" + hashlib.sha256(r.signature).hexdigest()

    def tamper(request: httpx.Request) -> httpx.Response | None:
        if request.method == "GET" and request.url.path.endswith(f"/blobs/{sig_digest}"):
            return httpx.Response(200, content=r.signature.replace(b"a", b"b", 1))
        return None

    wire.answer = tamper
    with pytest.raises(PushError, match="other bytes"):
        read_attachment(oci_client(oci_registry, http), repo, subject, SIGNATURE_TYPE)


def test_a_referrers_list_overwritten_by_another_writer_is_written_again(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    wire: Wire,
    tmp_path: Path,
    no_docker_config: dict[str, str],
) -> None:
    """The tag schema's list is last-writer-wins: a client that appended at the same time
    may overwrite ours. Here the first write of the list is lost (another writer's list
    without ours replaced it); the list is read back and written again."""
    lost: list[str] = []

    def lose_first_list(request: httpx.Request) -> httpx.Response | None:
        if request.method == "PUT" and "/manifests/sha256-" in request.url.path and not lost:
            lost.append(request.url.path)
            return httpx.Response(201)
        return None

    wire.answer = lose_first_list
    r = signed(release(tmp_path / "r", REPO, FILES))
    repo, subject = published(oci_registry, oci_namespace, http, no_docker_config, r)
    assert lost
    oci = oci_client(oci_registry, http)
    assert read_attachment(oci, repo, subject, SIGNATURE_TYPE) == r.signature
    assert read_attachment(oci, repo, subject, STATEMENT_TYPE) == r.attestation
