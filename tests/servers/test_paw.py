"""The loopback PAW hub answers the official SDK's client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.servers import CdnServer
from tests.servers.paw import PawServer, paw_id

KEY = "paw_secret"


@pytest.fixture
def paw(cdn: CdnServer) -> Iterator[PawServer]:
    with PawServer(cdn, api_key=KEY) as server:
        yield server


def test_the_sdk_client_resolves_slugs_and_reads_programs(paw: PawServer) -> None:
    from programasweights.client import PAWClient

    old = paw.publish("v1", slug="acme/triage")
    new = paw.publish("v2", slug="acme/triage")
    client = PAWClient(api_url=paw.url, api_key=KEY)
    assert client.resolve_slug("acme/triage") == new
    assert client.get_program_meta(old)["program_id"] == old
    versions = client.list_slug_versions("acme/triage")["versions"]
    assert [(v["program_id"], v["is_main"]) for v in versions] == [(old, False), (new, True)]
    assert all(s.header("x-api-key") == KEY for s in paw.log.where(server="paw"))


def test_download_answers_202_then_redirects(paw: PawServer, cdn: CdnServer) -> None:
    pid = paw.publish("spec", pending=2)
    url = f"{paw.url}/api/v1/programs/{pid}/download"
    for _ in range(2):
        pending = httpx.get(url)
        assert pending.status_code == 202 and pending.headers["retry-after"] == "1"
    ready = httpx.get(url)
    assert ready.status_code == 302 and ready.headers["location"].startswith(cdn.url)
    assert httpx.get(ready.headers["location"]).content == paw.programs[pid].bundle


def test_keys_and_unknown_programs(paw: PawServer) -> None:
    pid = paw.publish("secret", slug="acme/secret", private=True)
    base = f"{paw.url}/api/v1/programs"
    assert httpx.get(f"{base}/resolve/acme%2Fsecret").status_code == 404
    assert (
        httpx.get(f"{base}/resolve/acme/secret", headers={"X-API-Key": KEY}).json()["program_id"]
        == pid
    )
    assert httpx.get(f"{base}/{pid}", headers={"X-API-Key": "wrong"}).status_code == 401
    assert httpx.get(f"{base}/{paw_id('nothing')}").json() == {"detail": "Program not found"}
