"""The wgtpm registry's blobs in an OCI registry (``--store oci://REGISTRY/REPOSITORY``).

The blob store conformance suite (tests/registry/test_blobs.py) and the
garbage collector's (tests/registry/test_gc.py, on SQLite) run with a
repository of the distribution registry on loopback as the store; then a
publish to a registry on that store and ``wgtpm get`` from it, and what a
blob looks like to any OCI client.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from registry import BlobNotFoundError, open_blob_store
from registry.ocistore import ARTIFACT_TYPE, TAG_PREFIX
from tests.oci.conftest import OciRegistry
from tests.registry.conftest import Live, _live
from tests.registry.test_blobs import (
    DATA,
    SHA,
    store,
    test_aborted_writer_leaves_nothing,
    test_byte_ranges,
    test_concurrent_writers_of_one_blob,
    test_large_blob_streams_in_chunks,
    test_missing_blob,
    test_names_must_be_sha256,
    test_put_then_get,
    test_range_at_the_end_is_empty,
    test_same_blob_twice_and_empty_blob,
    test_size_limit_while_streaming,
    test_wrong_bytes_are_never_visible,
)
from tests.registry.test_gc import test_gc_removes_exactly_the_unreferenced_past_the_grace

__all__ = [
    "store",
    "test_aborted_writer_leaves_nothing",
    "test_byte_ranges",
    "test_concurrent_writers_of_one_blob",
    "test_gc_removes_exactly_the_unreferenced_past_the_grace",
    "test_large_blob_streams_in_chunks",
    "test_missing_blob",
    "test_names_must_be_sha256",
    "test_put_then_get",
    "test_range_at_the_end_is_empty",
    "test_same_blob_twice_and_empty_blob",
    "test_size_limit_while_streaming",
    "test_wrong_bytes_are_never_visible",
]


@pytest.fixture
def blob_url(
    oci_registry: OciRegistry,
    oci_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker"))
    return oci_registry.oci(f"{oci_namespace}/blobs")


@pytest.fixture
def served(blob_url: str, tmp_path: Path) -> Iterator[Live]:
    """A live registry on SQLite whose blobs are in the OCI registry."""
    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", blob_url, tmp_path / "spool")


def test_a_stored_blob_is_an_oci_artifact_any_client_reads(
    blob_url: str, oci_registry: OciRegistry, oci_namespace: str, tmp_path: Path
) -> None:
    s = open_blob_store(blob_url, spool=tmp_path / "spool")
    try:
        s.put(SHA, [DATA])
        repo = f"{oci_namespace}/blobs"
        base = f"{oci_registry.url}/v2/{repo}"
        m = httpx.get(
            f"{base}/manifests/{TAG_PREFIX}{SHA}",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        ).json()
        assert m["artifactType"] == ARTIFACT_TYPE
        assert [la["digest"] for la in m["layers"]] == [f"sha256:{SHA}"]
        assert httpx.get(f"{base}/blobs/sha256:{SHA}").content == DATA
        assert [b.sha256 for b in s.list_blobs()] == [SHA]
        s.delete(SHA)
        assert not s.has(SHA) and list(s.list_blobs()) == []
        with pytest.raises(BlobNotFoundError):
            s.get(SHA)
        s.put(SHA, [DATA])  # written again after a delete
        assert b"".join(s.get(SHA)) == DATA
    finally:
        s.close()


def test_a_blob_without_its_tag_is_not_stored(
    blob_url: str, oci_registry: OciRegistry, oci_namespace: str, tmp_path: Path
) -> None:
    """Bytes the registry has but no tag keeps (a crash between blob and tag) may be
    collected by the registry at any time: the store does not count them."""
    from tests.oci.helpers import push_blob

    data = b"orphan bytes"
    push_blob(oci_registry, f"{oci_namespace}/blobs", data)
    s = open_blob_store(blob_url, spool=tmp_path / "spool")
    try:
        sha = hashlib.sha256(data).hexdigest()
        assert s.size(sha) is None
        s.put(sha, [data])
        assert s.size(sha) == len(data)
    finally:
        s.close()


def test_publish_to_a_registry_on_an_oci_store_then_get(
    served: Live,
    tmp_path: Path,
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.publish.test_conformance import make_release
    from wgtpm._report import SILENT
    from wgtpm.httpclient import HttpClient
    from wgtpm.publish import RegistryTarget

    module = "example.com/acme/stored"
    release = make_release(tmp_path / "r", module)
    with HttpClient() as http:
        assert RegistryTarget(served.url, http, token=served.token).publish(release, SILENT).created
    monkeypatch.setenv("WGTPROXY", served.url)
    r = wgtpm("get", f"{module}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    sums = [ln for ln in (project / "wgt.sum").read_text().splitlines() if module in ln]
    assert sums == release.sum_lines()
