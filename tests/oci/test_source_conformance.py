"""The source conformance suite (tests/sources/test_conformance.py) against an OCI registry.

The suite's tests are imported here and run with this module's ``case``: the
same small module published as a wgtpm release on a real distribution registry,
behind a relay that injects the suite's faults.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.sources.test_conformance import (
    WEIGHTS,
    Case,
    RegistryFront,
    test_a_failing_server_is_not_not_found,
    test_a_missing_file_is_not_found,
    test_a_missing_module_is_not_found,
    test_a_missing_version_is_not_found,
    test_a_transient_failure_is_retried,
    test_file_bytes,
    test_file_range,
    test_index,
    test_info_of_a_query,
    test_info_of_a_version,
    test_known_files_are_listed_by_the_index_and_cost_nothing_after_mod,
    test_latest,
    test_mod,
    test_mod_is_cheap_and_enough_for_file,
    test_versions,
)
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.oci.auth import Credentials
from wgtpm.sources.oci import OciSource

from .conftest import OciRegistry
from .helpers import push_manifest, push_release

__all__ = [
    "test_a_failing_server_is_not_not_found",
    "test_a_missing_file_is_not_found",
    "test_a_missing_module_is_not_found",
    "test_a_missing_version_is_not_found",
    "test_a_transient_failure_is_retried",
    "test_file_bytes",
    "test_file_range",
    "test_index",
    "test_info_of_a_query",
    "test_info_of_a_version",
    "test_known_files_are_listed_by_the_index_and_cost_nothing_after_mod",
    "test_latest",
    "test_mod",
    "test_mod_is_cheap_and_enough_for_file",
    "test_versions",
]

PATH = "example.com/Acme/conf"


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=10, retries=3, backoff=0.01, max_retry_after=2)) as client:
        yield client


MOD = f"module {PATH}\n".encode()
FILES = {"wgt.mod": MOD, "w/weights.bin": WEIGHTS}


@pytest.fixture(scope="module")
def published(oci_registry: OciRegistry) -> str:
    """The module published once for every test here (they only read it); its namespace."""
    namespace = "conformance"
    mod, files = MOD, FILES
    repo = f"{namespace}/example.com/x__acme/conf"
    push_release(oci_registry, repo, PATH, "v0.1.0", {"wgt.mod": mod, "w/weights.bin": b"old"})
    digest = push_release(oci_registry, repo, PATH, "v0.2.0", files)
    # tags that are not versions, naming v0.2.0's manifest
    data = (
        httpx.Client()
        .get(
            f"{oci_registry.url}/v2/{repo}/manifests/{digest}",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        )
        .content
    )
    push_manifest(oci_registry, repo, "stable", data)
    push_manifest(oci_registry, repo, "not-a-version", data)
    return namespace


@pytest.fixture
def case(oci_registry: OciRegistry, published: str, http: HttpClient) -> Iterator[Case]:
    front = RegistryFront(oci_registry.url).start()
    try:
        yield Case(
            make=lambda: OciSource(http, f"127.0.0.1:{front.port}", published, auth=Credentials()),
            path=PATH,
            version="v0.2.0",
            versions=["v0.1.0", "v0.2.0"],
            latest="v0.2.0",
            mod=MOD,
            files=FILES,
            file="w/weights.bin",
            missing="example.com/acme/nothing",
            query="stable",
            query_version="v0.2.0",
            server=front,
            api="/v2/*",
        )
    finally:
        front.stop()
