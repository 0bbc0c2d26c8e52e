"""The publish API: upload, commit, immutability, tokens, limits, private modules."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from registry import FolderBlobStore, Limits, Registry, open_metadata_store
from registry.app import create_app

from .helpers import h1, index_bytes, modtext, publish

M = "example.com/acme/enc"


def files(extra: bytes = b"") -> dict[str, bytes]:
    return {
        "wgt.mod": modtext(M),
        "enc/weights.bin": b"\x01\x02" * 500 + extra,
        "README.md": b"hi\n",
    }


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[Registry]:
    r = Registry(open_metadata_store(str(tmp_path / "r.db")), FolderBlobStore(tmp_path / "blobs"))
    yield r
    r.close()


@pytest.fixture
def client(reg: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(registry=reg)) as c:
        yield c


@pytest.fixture
def token(reg: Registry) -> str:
    return reg.create_token("example.com/acme", "publish")[0]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def start(
    client: TestClient,
    token: str,
    fs: dict[str, bytes],
    module: str = M,
    version: str = "v0.1.0",
    **kw: object,
) -> object:
    body = {
        "module": module,
        "version": version,
        "index": index_bytes(module, version, fs).decode(),
        **kw,
    }
    return client.post("/api/v1/uploads", json=body, headers=auth(token))


def test_publish_then_read(client: TestClient, token: str) -> None:
    fs = files()
    r = publish(client, token, M, "v0.1.0", fs)
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["h1"] == h1(fs) and doc["created"] and doc["committed"]
    assert doc["mod_h1"] == h1({"wgt.mod": fs["wgt.mod"]})
    assert client.get(f"/{M}/@v/list").text == "v0.1.0\n"
    assert client.get(f"/{M}/@v/v0.1.0/enc/weights.bin").content == fs["enc/weights.bin"]
    idx = client.get(f"/{M}/@v/v0.1.0.index.json").content
    assert idx == index_bytes(M, "v0.1.0", fs)  # byte for byte as published


def test_upload_by_path_and_status(client: TestClient, token: str) -> None:
    fs = files()
    r = start(client, token, fs)
    assert r.status_code == 201
    doc = r.json()
    assert sorted(m["path"] for m in doc["missing"]) == sorted(fs)
    put = client.put(
        doc["paths_url"] + "enc/weights.bin", content=fs["enc/weights.bin"], headers=auth(token)
    )
    assert put.status_code == 201 and put.json()["stored"]
    again = client.put(
        doc["paths_url"] + "enc/weights.bin", content=fs["enc/weights.bin"], headers=auth(token)
    )
    assert again.status_code == 200 and not again.json()["stored"]
    status = client.get(f"/api/v1/uploads/{doc['upload']}", headers=auth(token)).json()
    assert sorted(m["path"] for m in status["missing"]) == ["README.md", "wgt.mod"]
    r = client.post(doc["commit_url"], headers=auth(token))
    assert r.status_code == 400 and "2 files are not uploaded yet" in r.json()["error"]
    for p in ("README.md", "wgt.mod"):
        client.put(doc["paths_url"] + p, content=fs[p], headers=auth(token))
    assert (
        client.post(doc["commit_url"], json={"h1": h1(fs)}, headers=auth(token)).status_code == 201
    )
    assert client.get(f"/api/v1/uploads/{doc['upload']}", headers=auth(token)).status_code == 404


def test_stored_blobs_are_not_asked_for_again(client: TestClient, token: str) -> None:
    publish(client, token, M, "v0.1.0", files())
    fs = {**files(), "README.md": b"changed\n"}
    doc = start(client, token, fs, version="v0.2.0").json()
    assert [m["path"] for m in doc["missing"]] == ["README.md"]


def test_same_bytes_again_is_a_noop(client: TestClient, token: str) -> None:
    fs = files()
    assert publish(client, token, M, "v0.1.0", fs).status_code == 201
    r = start(client, token, fs)
    assert r.status_code == 200 and r.json() == {
        "module": M,
        "version": "v0.1.0",
        "h1": h1(fs),
        "committed": True,
    }


def test_other_bytes_are_a_conflict_naming_both_h1s(client: TestClient, token: str) -> None:
    assert publish(client, token, M, "v0.1.0", files()).status_code == 201
    r = publish(client, token, M, "v0.1.0", files(b"x"))
    assert r.status_code == 409
    err = r.json()["error"]
    assert h1(files()) in err and h1(files(b"x")) in err
    assert client.get(f"/{M}/@v/v0.1.0/enc/weights.bin").content == files()["enc/weights.bin"]


def test_racing_uploads_second_commit_conflicts(client: TestClient, token: str) -> None:
    a, b = files(), files(b"y")
    docs = [start(client, token, fs).json() for fs in (a, b)]
    for doc, fs in zip(docs, (a, b)):
        by_sha = {hashlib.sha256(x).hexdigest(): x for x in fs.values()}
        for m in doc["missing"]:
            client.put(
                doc["files_url"] + m["sha256"], content=by_sha[m["sha256"]], headers=auth(token)
            )
    assert client.post(docs[1]["commit_url"], headers=auth(token)).status_code == 201
    r = client.post(docs[0]["commit_url"], headers=auth(token))
    assert r.status_code == 409 and h1(a) in r.json()["error"] and h1(b) in r.json()["error"]


def test_wrong_bytes_are_refused_and_not_stored(
    client: TestClient, token: str, reg: Registry
) -> None:
    fs = files()
    doc = start(client, token, fs).json()
    sha = hashlib.sha256(fs["enc/weights.bin"]).hexdigest()
    bad = b"\x00" * len(fs["enc/weights.bin"])
    r = client.put(doc["files_url"] + sha, content=bad, headers=auth(token))
    assert r.status_code == 400 and "sha256 mismatch" in r.json()["error"]
    assert not reg.blobs.has(sha)
    r = client.put(
        doc["files_url"] + sha, content=fs["enc/weights.bin"] + b"more", headers=auth(token)
    )
    assert r.status_code == 413
    r = client.put(doc["files_url"] + sha, content=fs["enc/weights.bin"][:-1], headers=auth(token))
    assert r.status_code == 400
    r = client.put(doc["files_url"] + "f" * 64, content=b"x", headers=auth(token))
    assert r.status_code == 400 and "lists no file" in r.json()["error"]
    r = client.put(doc["paths_url"] + "..%2F..%2Fetc%2Fpasswd", content=b"x", headers=auth(token))
    assert r.status_code == 400 and "lists no file with path '../../etc/passwd'" in r.text
    assert not reg.blobs.has(sha)


@pytest.mark.parametrize(
    ("mutate", "status", "words"),
    [
        (
            lambda d: d.update(files=[f for f in d["files"] if f["path"] != "wgt.mod"]),
            400,
            "must list wgt.mod",
        ),
        (lambda d: d.update(module="example.com/acme/other"), 400, "not this version"),
        (
            lambda d: d["files"].append({"path": "../x", "size": 1, "sha256": "a" * 64}),
            400,
            "unsafe file path",
        ),
        (lambda d: d.update(schema=2), 400, "schema"),
        (lambda d: d.update(time="yesterday"), 400, "RFC 3339"),
    ],
)
def test_bad_indexes(client: TestClient, token: str, mutate, status: int, words: str) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(index_bytes(M, "v0.1.0", files()))
    mutate(doc)
    body = {"module": M, "version": "v0.1.0", "index": json.dumps(doc)}
    r = client.post("/api/v1/uploads", json=body, headers=auth(token))
    assert r.status_code == status and words in r.json()["error"], r.text


@pytest.mark.parametrize(
    ("module", "version", "words"),
    [
        ("example.com/acme/enc", "v2.0.0", "/v2"),
        ("example.com/acme/enc", "1.0.0", "version"),
        ("example.com/acme//enc", "v0.1.0", "malformed module path"),
    ],
)
def test_bad_paths_and_versions(
    client: TestClient, token: str, module: str, version: str, words: str
) -> None:
    body = {"module": module, "version": version, "index": "{}"}
    r = client.post("/api/v1/uploads", json=body, headers=auth(token))
    assert r.status_code == 400 and words in r.json()["error"], r.text


def test_wgt_mod_must_name_the_module(client: TestClient, token: str) -> None:
    fs = {**files(), "wgt.mod": modtext("example.com/acme/other")}
    r = publish(client, token, M, "v0.1.0", fs)
    assert r.status_code == 400 and "declares module example.com/acme/other" in r.json()["error"]


def test_tokens_and_scopes(client: TestClient, reg: Registry, token: str) -> None:
    fs = files()
    r = client.post("/api/v1/uploads", json={"module": M, "version": "v0.1.0", "index": "{}"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    read = reg.create_token("example.com/acme", "read")[0]
    assert start(client, read, fs).status_code == 403
    other = reg.create_token("example.com/other", "publish")[0]
    assert start(client, other, fs).status_code == 403
    assert start(client, token[:-2] + "xx", fs).status_code == 401
    assert start(client, "nonsense", fs).status_code == 401
    doc = start(client, token, fs).json()
    assert client.post(doc["commit_url"], headers=auth(other)).status_code == 403
    cred_id = token.split("_")[1]
    assert reg.meta.revoke_token(cred_id)
    assert start(client, token, fs).status_code == 401
    assert client.get(f"/api/v1/uploads/{doc['upload']}", headers=auth(token)).status_code == 401


def test_limits_are_413(tmp_path: Path) -> None:
    reg = Registry(
        open_metadata_store(str(tmp_path / "r.db")),
        FolderBlobStore(tmp_path / "blobs"),
        Limits(max_file_size=600, max_version_size=1500, max_files_per_version=3),
    )
    tok = reg.create_token("example.com", "publish")[0]
    with TestClient(create_app(registry=reg)) as c:
        small = {"wgt.mod": modtext(M), "a": b"x" * 500}
        assert start(c, tok, small).status_code == 201
        r = start(c, tok, {**small, "a": b"x" * 601})
        assert r.status_code == 413 and "limit per file" in r.json()["error"]
        r = start(c, tok, {**small, "b": b"y" * 500, "c": b"z"})
        assert r.status_code == 413 and "files" in r.json()["error"]
        r = start(c, tok, {**small, "b": b"y" * 600, "c": b"z" * 600})
        assert r.status_code == 413
        r = start(c, tok, {**small, "b": b"y" * 550})
        assert r.status_code == 201
    reg.close()


def test_private_modules_need_a_read_token(client: TestClient, reg: Registry, token: str) -> None:
    fs = files()
    r = publish(client, token, M, "v0.1.0", fs, private=True)
    assert r.status_code == 201 and r.json()["private"]
    urls = [f"/{M}/@v/list", f"/{M}/@latest", f"/{M}/@v/v0.1.0.info", f"/{M}/@v/v0.1.0/README.md"]
    unknown = client.get("/example.com/acme/nothing/@v/list")
    for u in urls:
        r = client.get(u)
        assert r.status_code == 404 and r.text.split(":", 1)[1] == unknown.text.split(":", 1)[1]
    read = reg.create_token("example.com/acme", "read")[0]
    elsewhere = reg.create_token("example.com/other", "read")[0]
    for u in urls:
        assert client.get(u, headers=auth(elsewhere)).status_code == 404
        ok = client.get(u, headers=auth(read))
        assert ok.status_code == 200
    file = client.get(urls[-1], headers=auth(read))
    assert file.content == b"hi\n" and file.headers["cache-control"].startswith("private,")
    basic = client.get(urls[-1], auth=("me", read))
    assert basic.status_code == 200
    assert client.get(urls[0], headers=auth(token)).status_code == 200  # publish implies read
    # a second publish cannot make it public
    r = publish(client, token, M, "v0.2.0", {**fs, "README.md": b"v2\n"}, private=False)
    assert r.json()["private"] and client.get(f"/{M}/@v/v0.2.0.info").status_code == 404


def test_unknown_and_expired_uploads_and_bad_json(
    client: TestClient, reg: Registry, token: str
) -> None:
    from registry.metadata import UploadRecord

    assert client.get("/api/v1/uploads/nope", headers=auth(token)).status_code == 404
    assert client.post("/api/v1/uploads/nope/commit", headers=auth(token)).status_code == 404
    reg.meta.add_upload(
        UploadRecord("old", M, "v0.1.0", "h1:x=", "a" * 64, created="2000-01-01T00:00:00Z")
    )
    for r in (
        client.get("/api/v1/uploads/old", headers=auth(token)),
        client.put("/api/v1/uploads/old/files/" + "a" * 64, content=b"x", headers=auth(token)),
        client.post("/api/v1/uploads/old/commit", headers=auth(token)),
    ):
        assert r.status_code == 404 and "start a new one" in r.json()["error"]
    r = client.post("/api/v1/uploads", content=b"[1,", headers=auth(token))
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    r = client.post(
        "/api/v1/uploads", json={"module": M, "version": "v0.1.0", "index": 3}, headers=auth(token)
    )
    assert r.status_code == 400
