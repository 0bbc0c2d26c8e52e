"""wgtpm's OCI distribution client against a real registry on loopback (tests/oci/conftest.py)."""

from __future__ import annotations

import httpx

from .conftest import PASSWORD, USER, OciRegistry


def test_fixtures_answer(oci_registry: OciRegistry, oci_registry_auth: OciRegistry) -> None:
    assert httpx.get(oci_registry.url + "/v2/").status_code == 200
    assert httpx.get(oci_registry_auth.url + "/v2/").status_code == 401
    assert httpx.get(oci_registry_auth.url + "/v2/", auth=(USER, PASSWORD)).status_code == 200
    assert httpx.get(oci_registry_auth.url + "/v2/", auth=(USER, "wrong")).status_code == 401
