"""Shared blobs do not cross tenants: a commit names a stored blob only if it may.

Blobs are stored once per sha256. An upload may name a stored blob without
sending it only when it sent it itself or its token can read a committed
version that lists it (a public module's, or a private one under the
token's prefix); otherwise the blob is missing, answered exactly as a blob
nobody stored, and its bytes must be sent (and are checked). Over a real
server, on SQLite with a folder and on PostgreSQL with S3.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from registry.service import Registry

from .conftest import Live
from .helpers import index_bytes, modtext, publish

TEAM = "example.com/team"
PRIV = f"{TEAM}/priv"
WORK = "example.com/teamwork"
SECRET = b"the private weights of example.com/team/priv\n" * 40
NOBODY = SECRET.replace(b"private", b"public!")  # as long, and never stored by anyone


@pytest.fixture
def http(live_any: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_any.url, timeout=30) as c:
        yield c


def tokens(live: Live) -> tuple[str, str]:
    """Publish tokens for ``example.com/team`` and ``example.com/teamwork``."""
    reg = live.registry
    assert isinstance(reg, Registry)
    return reg.create_token(TEAM, "publish")[0], reg.create_token(WORK, "publish")[0]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def start(http: httpx.Client, token: str, module: str, files: dict[str, bytes]) -> Any:
    body = {
        "module": module,
        "version": "v0.1.0",
        "index": index_bytes(module, "v0.1.0", files).decode(),
    }
    r = http.post("/api/v1/uploads", json=body, headers=auth(token))
    assert r.status_code == 201, r.text
    return r.json()


def shape(doc: dict[str, Any]) -> list[tuple[str, int]]:
    """An upload's missing files without the names and hashes that differ by design."""
    return [(m["path"], m["size"]) for m in doc["missing"]]


def put(http: httpx.Client, token: str, doc: dict[str, Any], body: bytes) -> httpx.Response:
    return http.put(doc["files_url"] + sha(body), content=body, headers=auth(token))


def test_a_private_blob_is_not_a_token_of_another_prefix(
    live_any: Live, http: httpx.Client
) -> None:
    team, work = tokens(live_any)
    priv = {"wgt.mod": modtext(PRIV), "w.bin": SECRET}
    assert publish(http, team, PRIV, "v0.1.0", priv, private=True).status_code == 201
    assert len(SECRET) == len(NOBODY)

    # example.com/teamwork names the private blob's sha256 without having its bytes ...
    steal = start(
        http, work, f"{WORK}/steal", {"wgt.mod": modtext(f"{WORK}/steal"), "w.bin": SECRET}
    )
    # ... and, for comparison, a blob nobody stored.
    other = start(
        http, work, f"{WORK}/other", {"wgt.mod": modtext(f"{WORK}/other"), "w.bin": NOBODY}
    )
    want = [("w.bin", len(SECRET)), ("wgt.mod", len(modtext(f"{WORK}/steal")))]
    assert shape(steal) == shape(other) == want
    assert sha(SECRET) in {m["sha256"] for m in steal["missing"]}

    for doc, mod in ((steal, f"{WORK}/steal"), (other, f"{WORK}/other")):
        assert put(http, work, doc, modtext(mod)).status_code == 201
    # Committing without the bytes: refused alike, naming the file as not uploaded.
    answers = [http.post(doc["commit_url"], headers=auth(work)) for doc in (steal, other)]
    assert [a.status_code for a in answers] == [400, 400]
    assert (
        answers[0].json() == answers[1].json() == {"error": "1 files are not uploaded yet: w.bin"}
    )
    status = http.get(f"/api/v1/uploads/{steal['upload']}", headers=auth(work)).json()
    assert [m["sha256"] for m in status["missing"]] == [sha(SECRET)]
    assert http.get(f"/{WORK}/steal/@v/list").status_code == 404

    # Wrong bytes under the private sha256: refused as for any other (checked, not skipped).
    wrong = http.put(steal["files_url"] + sha(SECRET), content=NOBODY, headers=auth(work))
    assert wrong.status_code == 400 and "sha256 mismatch" in wrong.json()["error"]

    # With the real bytes it works, answered as a new blob: nothing tells it was stored.
    got = [put(http, work, steal, SECRET), put(http, work, other, NOBODY)]
    assert [g.status_code for g in got] == [201, 201]
    assert [g.json()["stored"] for g in got] == [True, True]
    again = put(http, work, steal, SECRET)  # now this upload's: deduplicated
    assert again.status_code == 200 and again.json()["stored"] is False
    for doc in (steal, other):
        assert http.post(doc["commit_url"], headers=auth(work)).status_code == 201
    assert http.get(f"/{WORK}/steal/@v/v0.1.0/w.bin").content == SECRET


def test_an_open_upload_of_another_tenant_lends_nothing(live_any: Live, http: httpx.Client) -> None:
    team, work = tokens(live_any)
    mine = start(http, team, f"{TEAM}/wip", {"wgt.mod": modtext(f"{TEAM}/wip"), "w.bin": SECRET})
    assert put(http, team, mine, SECRET).status_code == 201  # stored, never committed
    theirs = start(http, work, f"{WORK}/m", {"wgt.mod": modtext(f"{WORK}/m"), "w.bin": SECRET})
    assert [m["path"] for m in theirs["missing"]] == ["w.bin", "wgt.mod"]
    assert put(http, work, theirs, SECRET).json()["stored"] is True


def test_public_and_own_private_blobs_are_reused_without_upload(
    live_any: Live, http: httpx.Client
) -> None:
    team, work = tokens(live_any)
    pub = {"wgt.mod": modtext(f"{TEAM}/pub"), "w.bin": NOBODY}
    assert publish(http, team, f"{TEAM}/pub", "v0.1.0", pub).status_code == 201
    priv = {"wgt.mod": modtext(PRIV), "w.bin": SECRET}
    assert publish(http, team, PRIV, "v0.1.0", priv, private=True).status_code == 201

    # Another tenant reuses the public blob: only its own wgt.mod is asked for.
    doc = start(http, work, f"{WORK}/m", {"wgt.mod": modtext(f"{WORK}/m"), "w.bin": NOBODY})
    assert [m["path"] for m in doc["missing"]] == ["wgt.mod"]
    assert put(http, work, doc, NOBODY).json()["stored"] is False
    assert put(http, work, doc, modtext(f"{WORK}/m")).status_code == 201
    assert http.post(doc["commit_url"], headers=auth(work)).status_code == 201

    # The private module's own prefix reuses its blob, in another module too.
    doc = start(http, team, f"{TEAM}/next", {"wgt.mod": modtext(f"{TEAM}/next"), "w.bin": SECRET})
    assert [m["path"] for m in doc["missing"]] == ["wgt.mod"]
    assert put(http, team, doc, modtext(f"{TEAM}/next")).status_code == 201
    assert http.post(doc["commit_url"], headers=auth(team)).status_code == 201


def test_a_prefix_covers_whole_path_elements_only(live: Live) -> None:
    team, work = tokens(live)
    with httpx.Client(base_url=live.url, timeout=30) as http:
        body = {"module": f"{WORK}/m", "version": "v0.1.0", "index": "{}"}
        r = http.post("/api/v1/uploads", json=body, headers=auth(team))
        assert r.status_code == 403 and f"does not cover {WORK}/m" in r.json()["error"]
        body["module"] = f"{TEAM}/m"
        assert http.post("/api/v1/uploads", json=body, headers=auth(work)).status_code == 403


@pytest.mark.parametrize(
    ("module", "version"),
    [
        ("example.com/m", "v1.0.0\n"),
        ("example.com/m", "v1.0.0-rc.1\n"),
        ("example.com/m\n/x", "v1.0.0"),
        ("example.com/m/x\n/y", "v1.0.0"),
    ],
)
def test_a_line_break_in_a_path_or_version_is_not_published(
    live: Live, module: str, version: str
) -> None:
    files = {"wgt.mod": modtext(module), "w.bin": b"w"}
    with httpx.Client(base_url=live.url, timeout=30) as http:
        body = {
            "module": module,
            "version": version,
            "index": index_bytes(module, version, files).decode(),
        }
        r = http.post("/api/v1/uploads", json=body, headers=auth(live.token))
        assert r.status_code == 400, r.text
        assert http.get("/example.com/m/@v/list").status_code == 404
    reg = live.registry
    assert isinstance(reg, Registry)
    assert reg.meta.list_modules() == [] and reg.meta.get_upload(r.json().get("upload", "")) is None
