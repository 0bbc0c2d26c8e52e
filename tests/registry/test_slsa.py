"""The registry keeps a version's SLSA statement beside it (real server on loopback).

A commit may carry the statement (``attestation``); it is served at
``@v/$version.slsa.json``, never listed among the version's files. Refused
with 400 and nothing committed: text that is no SLSA statement, a statement
about other files. A version committed without one answers 404 there, and a
private module's statement needs a token that may read the module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import pytest

from registry import Registry
from tests.registry.conftest import Live
from wgtpm.publish._slsa import BuildRun, envelope_bytes, statement

from .helpers import index_bytes, modtext

M = "example.com/acme/att"
V = "v0.1.0"


def _files(extra: bytes = b"") -> dict[str, bytes]:
    return {"wgt.mod": modtext(M), "w.bin": b"\x01" * 100 + extra}


def _statement(fs: dict[str, bytes]) -> str:
    run = BuildRun(M, V, "c" * 40, None, "", {"gguf": "0.19.0"}, "Linux", "t0", "t1", "id")
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in fs.items()}
    return envelope_bytes(statement(run, index_bytes(M, V, fs), shas), None).decode()


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=10) as c:
        yield c


def _publish(
    client: httpx.Client, token: str, fs: dict[str, bytes], att: str | None, private: bool = False
) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"}
    body = {"module": M, "version": V, "index": index_bytes(M, V, fs).decode(), "private": private}
    r = client.post("/api/v1/uploads", json=body, headers=auth)
    assert r.status_code == 201, r.text
    doc = r.json()
    by_sha = {hashlib.sha256(b).hexdigest(): b for b in fs.values()}
    for m in doc["missing"]:
        u = client.put(
            f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=auth
        )
        assert u.status_code in (200, 201), u.text
    commit: dict[str, str] = {} if att is None else {"attestation": att}
    return client.post(doc["commit_url"], json=commit, headers=auth)


def test_the_statement_is_served_beside_the_version(live: Live, client: httpx.Client) -> None:
    fs = _files()
    att = _statement(fs)
    r = _publish(client, live.token, fs, att)
    assert r.status_code == 201, r.text
    got = client.get(f"/{M}/@v/{V}.slsa.json")
    assert got.status_code == 200 and got.text == att
    assert got.headers["content-type"].startswith("application/json")
    assert client.get(f"/{M}/@v/{V}/.slsa.json").status_code in (404, 410)  # no file of it


@pytest.mark.parametrize(
    ("att", "why"),
    [
        ('{"payloadType": "text/plain", "payload": "", "signatures": []}', "not an SLSA statement"),
        ("not json", "not an SLSA statement"),
        ("other files", "subject is not this release's files"),
    ],
)
def test_a_bad_statement_is_refused_and_nothing_committed(
    live: Live, client: httpx.Client, att: str, why: str
) -> None:
    fs = _files()
    if att == "other files":
        att = _statement(_files(extra=b"other"))
    r = _publish(client, live.token, fs, att)
    assert r.status_code == 400 and why in r.json()["error"], r.text
    listed = client.get(f"/{M}/@v/list")
    assert listed.status_code == 404 or V not in listed.text


def test_without_a_statement_404_and_private_needs_a_token(
    live: Live, client: httpx.Client
) -> None:
    fs = _files()
    r = _publish(client, live.token, fs, None)
    assert r.status_code == 201, r.text
    assert client.get(f"/{M}/@v/{V}.slsa.json").status_code == 404

    reg = live.registry
    assert isinstance(reg, Registry)
    secret = "example.com/secret/att"
    pfs = {"wgt.mod": modtext(secret), "w.bin": b"\x02" * 10}
    other = reg.create_token("example.com/other", "read")[0]
    auth = {"Authorization": f"Bearer {other}"}
    tok = reg.create_token("example.com/secret", "publish")[0]
    pauth = {"Authorization": f"Bearer {tok}"}
    run = BuildRun(secret, V, "c" * 40, None, "", {}, "Linux", "t0", "t1", "id")
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in pfs.items()}
    att = envelope_bytes(statement(run, index_bytes(secret, V, pfs), shas), None).decode()
    body = {"module": secret, "version": V, "index": index_bytes(secret, V, pfs).decode()}
    doc = client.post("/api/v1/uploads", json={**body, "private": True}, headers=pauth).json()
    by_sha = {hashlib.sha256(b).hexdigest(): b for b in pfs.values()}
    for m in doc["missing"]:
        client.put(f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=pauth)
    assert client.post(doc["commit_url"], json={"attestation": att}, headers=pauth).is_success
    assert client.get(f"/{secret}/@v/{V}.slsa.json").status_code == 404  # anonymous
    assert client.get(f"/{secret}/@v/{V}.slsa.json", headers=auth).status_code in (403, 404)
    assert client.get(f"/{secret}/@v/{V}.slsa.json", headers=pauth).text == att
