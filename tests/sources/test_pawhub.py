"""The PAW hub source against the loopback PAW API and its CDN."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.servers import CdnServer, Fault
from tests.servers.paw import PawServer, make_paw, paw_id
from tests.sources.conftest import fetch
from wgtpm import index as _index
from wgtpm._errors import FetchError, NotFoundError
from wgtpm.httpclient import HttpClient
from wgtpm.sources.pawhub import FILE_NAME, PawHubSource

SLUG_MOD = "programasweights.com/acme/triage"
KEY = "paw_secret"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source(paw: PawServer, http: HttpClient, **kw: object) -> PawHubSource:
    sleeps: list[float] = []
    src = PawHubSource(http, api_url=paw.url, sleep=sleeps.append, **kw)  # type: ignore[arg-type]
    src.sleeps = sleeps  # type: ignore[attr-defined]
    return src


@pytest.fixture
def triage(paw: PawServer) -> str:
    paw.publish("sort tickets v1", slug="acme/triage")
    return paw.publish("sort tickets v2", slug="acme/triage", pending=2)


def test_slug_resolves_to_a_pseudo_version_of_the_program_id(
    triage: str, paw: PawServer, http: HttpClient
) -> None:
    src = source(paw, http)
    assert src.versions(SLUG_MOD) == []
    info = src.info(SLUG_MOD, "latest")
    assert info.version == f"v0.0.0-20260501001400-{triage[:12]}"
    assert info.commit == triage
    assert info.time == "2026-05-01T00:14:00Z"
    # A fresh source finds the same program from the pseudo-version alone.
    assert source(paw, http).info(SLUG_MOD, info.version) == info


def test_a_moved_slug_keeps_old_versions_fetchable(
    triage: str, paw: PawServer, http: HttpClient, tmp_path: Path
) -> None:
    old = paw_id("sort tickets v1")
    src = source(paw, http)
    version = src.info(SLUG_MOD, old).version
    assert version == f"v0.0.0-20260501000700-{old[:12]}"
    tree = fetch(source(paw, http), tmp_path / "c", SLUG_MOD, version, http=http)
    assert (tree / FILE_NAME).read_bytes() == paw.programs[old].bundle


def test_program_id_path(triage: str, paw: PawServer, http: HttpClient) -> None:
    path = f"programasweights.com/{triage}"
    src = source(paw, http)
    info = src.info(path, "latest")
    assert info == src.info(path, triage)
    assert info.version.endswith(triage[:12])
    with pytest.raises(NotFoundError, match="this module is program"):
        src.info(path, "v0.0.0-20260501001400-0123456789ab")


def test_index_lists_the_bundle_and_mod_is_synthesised(
    triage: str, paw: PawServer, http: HttpClient
) -> None:
    src = source(paw, http)
    version = src.info(SLUG_MOD, "latest").version
    assert src.mod(SLUG_MOD, version) == b"module programasweights.com/acme/triage\n"
    data = src.index(SLUG_MOD, version)
    bundle = paw.programs[triage].bundle
    idx = _index.parse(data, SLUG_MOD, version)
    assert idx.files == [
        _index.IndexEntry(FILE_NAME, len(bundle), sha(bundle), artifact="program", kind="paw")
    ]
    doc = json.loads(data)
    assert doc["commit"] == triage and doc["build"]["program_id"] == triage
    # The first two downloads answered 202 with Retry-After: 1, which was waited out.
    assert src.sleeps == [1.0, 1.0]  # type: ignore[attr-defined]
    assert [s.status for s in paw.log.where(server="paw", path="*/download")] == [202, 202, 302]


def test_get_sends_the_key_to_the_api_and_never_to_the_cdn(
    triage: str, paw: PawServer, cdn: CdnServer, http: HttpClient, tmp_path: Path
) -> None:
    src = source(paw, http, api_key=KEY)
    version = src.info(SLUG_MOD, "latest").version
    req = src.file(SLUG_MOD, version, FILE_NAME)
    assert req.url == f"{paw.url}/api/v1/programs/{triage}/download"
    assert req.headers == {"X-API-Key": KEY}
    tree = fetch(src, tmp_path / "c", SLUG_MOD, version, http=http)
    assert (tree / FILE_NAME).read_bytes() == paw.programs[triage].bundle
    api = paw.log.where(server="paw")
    assert api and all(s.header("x-api-key") == KEY for s in api)
    assert cdn.log.where(server="cdn", status=200)
    assert not cdn.log.where(server="cdn", header="x-api-key")


def test_key_from_the_environment_and_private_programs(
    paw: PawServer, http: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    paw.publish("secret", slug="acme/secret", private=True)
    with pytest.raises(NotFoundError, match=r"acme/secret.*not found \(HTTP 404\)"):
        source(paw, http).info("programasweights.com/acme/secret", "latest")
    monkeypatch.setenv("PAW_API_KEY", KEY)
    monkeypatch.setenv("PAW_API_URL", paw.url)
    assert PawHubSource(http).info("programasweights.com/acme/secret", "latest").commit
    with pytest.raises(FetchError, match="check PAW_API_KEY"):
        source(paw, http, api_key="wrong").info("programasweights.com/acme/secret", "latest")


def test_file_waits_for_a_program_still_generating(paw: PawServer, http: HttpClient) -> None:
    pid = paw.publish("slow", slug="acme/slow", pending=3)
    src = source(paw, http)
    version = src.info("programasweights.com/acme/slow", "latest").version
    req = src.file("programasweights.com/acme/slow", version, FILE_NAME)
    assert req.url.endswith(f"/{pid}/download")
    assert src.sleeps == [1.0, 1.0, 1.0]  # type: ignore[attr-defined]


def test_never_ready_is_a_clear_error(paw: PawServer, http: HttpClient) -> None:
    paw.publish("stuck", slug="acme/stuck", pending=1000)
    src = source(paw, http, max_wait=5)
    version = src.info("programasweights.com/acme/stuck", "latest").version
    with pytest.raises(FetchError, match=r"still being generated after 5s; try again"):
        src.index("programasweights.com/acme/stuck", version)


def test_unknown_things(paw: PawServer, http: HttpClient, triage: str) -> None:
    src = source(paw, http)
    with pytest.raises(NotFoundError, match="not found"):
        src.info("programasweights.com/acme/nope", "latest")
    with pytest.raises(NotFoundError, match="not a PAW module path"):
        src.info("programasweights.com/not-an-id", "latest")
    with pytest.raises(NotFoundError, match="have no releases"):
        src.mod(SLUG_MOD, "v1.0.0")
    version = src.info(SLUG_MOD, "latest").version
    with pytest.raises(NotFoundError, match=r"holds only program\.paw"):
        src.file(SLUG_MOD, version, "other.bin")
    with pytest.raises(NotFoundError, match="is version"):
        src.mod(SLUG_MOD, version.replace("20260501", "20250501"))


def test_a_bundle_for_another_program_is_refused(paw: PawServer, http: HttpClient) -> None:
    paw.publish("impostor", slug="acme/impostor", pending=0, bundle=make_paw("f" * 32))
    src = source(paw, http)
    version = src.info("programasweights.com/acme/impostor", "latest").version
    with pytest.raises(
        FetchError, match=r"no valid \.paw bundle \(meta.json names program 'f{32}'\)"
    ):
        src.index("programasweights.com/acme/impostor", version)


def test_an_unsafe_bundle_is_refused(paw: PawServer, http: HttpClient) -> None:
    pid = paw_id("evil")
    paw.publish(
        "evil", slug="acme/evil", pending=0, bundle=make_paw(pid, "evil", extra={"../x": b"x"})
    )
    src = source(paw, http)
    version = src.info("programasweights.com/acme/evil", "latest").version
    with pytest.raises(FetchError, match="unsafe member name"):
        src.index("programasweights.com/acme/evil", version)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.flip("/blobs/*"),
        Fault.short("/blobs/*"),
        Fault.truncate("/blobs/*"),
        Fault.reset("/blobs/*"),
        Fault.drip("/blobs/*", 0.001, 512),
        Fault.error("/blobs/*", 500),
        Fault.too_many("/api/v1/programs/*/download", "1"),
    ],
    ids=lambda f: f"{f.kind}-{f.status}",
)
def test_faults_end_in_a_verified_bundle(
    triage: str, paw: PawServer, cdn: CdnServer, http: HttpClient, tmp_path: Path, fault: Fault
) -> None:
    (cdn if fault.path.startswith("/blobs") else paw).inject(fault)
    src = source(paw, http)
    version = src.info(SLUG_MOD, "latest").version
    tree = fetch(src, tmp_path / "c", SLUG_MOD, version, http=http)
    assert (tree / FILE_NAME).read_bytes() == paw.programs[triage].bundle
    assert fault.times == 0


def test_bundle_always_corrupt_is_a_clear_error(
    triage: str, paw: PawServer, cdn: CdnServer, http: HttpClient
) -> None:
    cdn.inject(Fault.flip("/blobs/*", times=-1))
    src = source(paw, http)
    version = src.info(SLUG_MOD, "latest").version
    with pytest.raises(
        FetchError, match=rf"acme/triage@{version}: program {triage}: the hub serves no valid \.paw"
    ):
        src.index(SLUG_MOD, version)
