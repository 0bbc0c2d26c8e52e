"""Pushing to the test registries with plain httpx, apart from the code under test."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from wgtpm.oci import manifest as oci_manifest

from .conftest import PASSWORD, SERVICE, USER, OciRegistry

#: One client for every push (a client per request costs tens of ms of TLS setup).
_client = httpx.Client(timeout=30)


def docker_login(d: Path, host: str, user: str = USER, password: str = PASSWORD) -> str:
    """``d`` made a Docker config directory whose config.json holds ``user:password`` for
    ``host`` (as ``docker login`` writes it); its path, for ``DOCKER_CONFIG``."""
    d.mkdir(exist_ok=True)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (d / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    return str(d)


def _headers(reg: OciRegistry, repo: str) -> dict[str, str]:
    if reg.token_server is not None:
        r = _client.get(
            f"{reg.token_server.url}/token",
            params={"service": SERVICE, "scope": f"repository:{repo}:pull,push"},
            auth=(reg.user or "", reg.password or ""),
        )
        r.raise_for_status()
        return {"Authorization": "Bearer " + r.json()["token"]}
    if reg.user is not None:
        return {"Authorization": httpx.BasicAuth(reg.user, reg.password or "")._auth_header}
    return {}


def push_blob(reg: OciRegistry, repo: str, data: bytes) -> str:
    """Upload ``data`` (monolithic POST then PUT); returns its digest."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    h = _headers(reg, repo)
    r = _client.post(f"{reg.url}/v2/{repo}/blobs/uploads/", headers=h)
    assert r.status_code == 202, r.text
    loc = httpx.URL(reg.url).join(r.headers["location"])
    r = _client.put(
        loc.copy_merge_params({"digest": digest}),
        content=data,
        headers={**h, "Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 201, r.text
    return digest


def push_manifest(
    reg: OciRegistry,
    repo: str,
    ref: str,
    data: bytes,
    media_type: str = oci_manifest.MANIFEST_TYPE,
) -> str:
    h = _headers(reg, repo)
    r = _client.put(
        f"{reg.url}/v2/{repo}/manifests/{ref}",
        content=data,
        headers={**h, "Content-Type": media_type},
    )
    assert r.status_code == 201, r.text
    return "sha256:" + hashlib.sha256(data).hexdigest()


def push_artifact(
    reg: OciRegistry,
    repo: str,
    tag: str,
    files: dict[str, bytes],
    *,
    artifact_type: str = "application/vnd.example+type",
    layer_type: str = "application/octet-stream",
    annotations: dict[str, str] | None = None,
) -> str:
    """An artifact as ``oras push`` makes one: empty config, one titled layer per file."""
    config = b"{}"
    push_blob(reg, repo, config)
    layers: list[dict[str, Any]] = []
    for name, data in files.items():
        layers.append(
            {
                "mediaType": layer_type,
                "digest": push_blob(reg, repo, data),
                "size": len(data),
                "annotations": {oci_manifest.TITLE: name},
            }
        )
    doc: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": oci_manifest.MANIFEST_TYPE,
        "artifactType": artifact_type,
        "config": {
            "mediaType": "application/vnd.oci.empty.v1+json",
            "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
            "size": len(config),
        },
        "layers": layers,
    }
    if annotations:
        doc["annotations"] = annotations
    return push_manifest(reg, repo, tag, json.dumps(doc).encode())


def release(
    module: str, version: str, files: dict[str, bytes], *, time: str | None = None
) -> tuple[bytes, oci_manifest.Built]:
    """The index bytes and the built manifest of a wgtpm release of ``files``."""
    from wgtpm.index import IndexEntry, build_index

    entries = [IndexEntry(p, len(b), hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    idx = build_index(module, version, entries, time=time)
    data = idx.to_json()
    return data, oci_manifest.build(idx, data)


def push_release(
    reg: OciRegistry,
    repo: str,
    module: str,
    version: str,
    files: dict[str, bytes],
    *,
    time: str | None = None,
) -> str:
    """Push a wgtpm release (its files, index and config as blobs, then the manifest tagged
    with the version) as :mod:`wgtpm.oci.manifest` lays it out; returns the manifest digest."""
    index_bytes, built = release(module, version, files, time=time)
    for data in [*files.values(), index_bytes, built.config]:
        push_blob(reg, repo, data)
    return push_manifest(reg, repo, version.replace("+", "_"), built.manifest)
