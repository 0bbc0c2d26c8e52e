"""The publish-target conformance suite (tests/publish/test_conformance.py) for an OCI registry.

The same tests every target passes, with ``case`` an OCI namespace of the
distribution registry on loopback: published with
:class:`~wgtpm.publish.oci.OciTarget`, read back with the OCI source (and
``wgtpm get`` with ``WGTPROXY=oci://...``); its broken network refuses every
blob upload after the first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.oci.conftest import OciRegistry
from tests.oci.test_publish import Wire
from tests.publish.test_conformance import (
    Case,
    http,
    test_a_failure_part_way_publishes_nothing_and_the_retry_succeeds,
    test_a_published_version_never_changes,
    test_a_signed_release_round_trips,
    test_ctrl_c_at_any_point_leaves_nothing_or_the_whole_release,
    test_publish_then_get_back_with_the_same_h1,
    test_the_slsa_statement_is_served_beside_the_index,
)
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.publish.oci import OciTarget
from wgtpm.sources.oci import OciSource

__all__ = [
    "http",
    "test_a_failure_part_way_publishes_nothing_and_the_retry_succeeds",
    "test_a_published_version_never_changes",
    "test_a_signed_release_round_trips",
    "test_ctrl_c_at_any_point_leaves_nothing_or_the_whole_release",
    "test_publish_then_get_back_with_the_same_h1",
    "test_the_slsa_statement_is_served_beside_the_index",
]


@pytest.fixture
def case(
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Case]:
    env = {"DOCKER_CONFIG": str(tmp_path / "no-docker"), "NETRC": str(tmp_path / "no-netrc")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    url = oci_registry.oci(oci_namespace)
    made: list[HttpClient] = []

    def broken(release: object) -> OciTarget:
        wire = Wire()

        def refuse(request: httpx.Request) -> httpx.Response | None:
            uploads = wire.count("PUT", "digest=")
            if request.method == "PUT" and "digest=" in str(request.url) and uploads > 1:
                return httpx.Response(403, json={"errors": [{"code": "DENIED"}]})
            return None

        wire.answer = refuse
        faulty = HttpClient(HttpOptions(retries=1, backoff=0.01), transport=wire)
        made.append(faulty)
        return OciTarget(url, faulty, env)

    yield Case(
        "example.com/acme/conf",
        lambda: OciTarget(url, http, env),
        lambda: OciSource.from_url(url, http),
        {"WGTPROXY": url, **env},
        broken,
    )
    for c in made:
        c.close()
