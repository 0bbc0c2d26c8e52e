"""The write side of the loopback GitHub and Hugging Face servers answers in the hosts' shapes.

Checked with plain ``httpx`` (GitHub) and the real ``huggingface_hub`` (the
Hub), so that the targets are tested against the protocol, not against
themselves.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from tests.publish_hosts.conftest import GH_TOKEN, HF_TOKEN
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer

AUTH = {"Authorization": f"Bearer {GH_TOKEN}", "Accept": "application/vnd.github+json"}


def create(gh: GitHubServer, **body: Any) -> httpx.Response:
    return httpx.post(f"{gh.url}/repos/acme/xor/releases", json=body, headers=AUTH)


def upload(rel: dict[str, Any], name: str, data: bytes) -> httpx.Response:
    url = rel["upload_url"].split("{")[0]
    headers = {**AUTH, "Content-Type": "application/octet-stream"}
    return httpx.post(url, params={"name": name}, content=data, headers=headers)


def test_github_draft_upload_publish(github: GitHubServer) -> None:
    repo = github.repo("acme", "xor")
    sha = repo.commit()
    r = create(github, tag_name="v1.0.0", target_commitish=sha, draft=True, body="notes")
    assert r.status_code == 201 and r.headers["location"] == r.json()["url"]
    rel = r.json()
    assert rel["draft"] and rel["published_at"] is None and rel["body"] == "notes"
    assert rel["upload_url"].startswith(github.uploads.url)
    assert rel["upload_url"].endswith(f"/releases/{rel['id']}/assets{{?name,label}}")
    assert "v1.0.0" not in repo.tags  # a draft has no tag
    assert httpx.get(f"{github.url}/repos/acme/xor/releases/tags/v1.0.0").status_code == 404

    a = upload(rel, "w.bin", b"abc")
    assert a.status_code == 201
    assert a.json()["digest"] == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert a.json()["state"] == "uploaded" and a.json()["size"] == 3
    dup = upload(rel, "w.bin", b"abc")
    assert dup.status_code == 422 and dup.json()["errors"][0]["code"] == "already_exists"
    listed = httpx.get(f"{github.url}/repos/acme/xor/releases/{rel['id']}/assets", headers=AUTH)
    assert [x["name"] for x in listed.json()] == ["w.bin"]

    p = httpx.patch(rel["url"], json={"draft": False}, headers=AUTH)
    assert p.status_code == 200 and p.json()["draft"] is False and p.json()["published_at"]
    assert repo.tags["v1.0.0"] == sha
    ref = httpx.get(f"{github.url}/repos/acme/xor/git/ref/tags/v1.0.0", headers=AUTH)
    assert ref.json()["object"]["sha"] == sha
    second = create(github, tag_name="v1.0.0")
    assert second.status_code == 422 and second.json()["errors"][0]["field"] == "tag_name"


def test_github_writes_need_the_token(github: GitHubServer) -> None:
    github.repo("acme", "xor").commit()
    assert httpx.post(f"{github.url}/repos/acme/xor/releases", json={}).status_code == 401
    rel = create(github, tag_name="v1.0.0", draft=True).json()
    url = rel["upload_url"].split("{")[0] + "?name=x"
    assert httpx.post(url, content=b"x", headers={"Content-Type": "a/b"}).status_code == 401


def test_github_immutable_release_is_frozen(github: GitHubServer) -> None:
    repo = github.repo("acme", "xor")
    repo.immutable = True
    repo.commit()
    rel = create(github, tag_name="v1.0.0", draft=True).json()
    asset = upload(rel, "a.bin", b"a").json()
    pub = httpx.patch(rel["url"], json={"draft": False}, headers=AUTH).json()
    assert pub["immutable"] is True
    late = upload(rel, "b.bin", b"b")
    assert late.status_code == 422 and "immutable" in late.json()["message"]
    gone = httpx.delete(asset["url"], headers=AUTH)
    assert gone.status_code == 422
    assert httpx.delete(rel["url"], headers=AUTH).status_code == 204
    again = create(github, tag_name="v1.0.0")
    assert again.status_code == 422
    assert again.json()["errors"][0]["message"] == "tag_name was used by an immutable release"


def test_github_failed_upload_leaves_a_starter_asset(github: GitHubServer) -> None:
    github.repo("acme", "xor").commit()
    rel = create(github, tag_name="v1.0.0", draft=True).json()
    github.fail_uploads(after=1)
    assert upload(rel, "a.bin", b"a").status_code == 201
    assert upload(rel, "b.bin", b"bbbb").status_code == 502
    assets = httpx.get(f"{github.url}/repos/acme/xor/releases/{rel['id']}/assets", headers=AUTH)
    starter = next(x for x in assets.json() if x["name"] == "b.bin")
    assert starter["state"] == "starter" and starter["size"] == 2
    assert httpx.delete(starter["url"], headers=AUTH).status_code == 204
    assert upload(rel, "b.bin", b"bbbb").status_code == 201


def test_github_create_ref(github: GitHubServer) -> None:
    sha = github.repo("acme", "xor").commit()
    url = f"{github.url}/repos/acme/xor/git/refs"
    made = httpx.post(url, json={"ref": "refs/tags/v1.0.0", "sha": sha}, headers=AUTH)
    assert made.status_code == 201 and made.json()["ref"] == "refs/tags/v1.0.0"
    again = httpx.post(url, json={"ref": "refs/tags/v1.0.0", "sha": sha}, headers=AUTH)
    assert again.status_code == 422 and again.json()["message"] == "Reference already exists"
    bad = httpx.post(url, json={"ref": "refs/tags/v2", "sha": "0" * 40}, headers=AUTH)
    assert bad.status_code == 422


@pytest.fixture
def hf_api(hf: HuggingFaceServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    import huggingface_hub.constants
    from huggingface_hub import HfApi

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
    return HfApi(endpoint=hf.url, token=HF_TOKEN)


def test_hub_commit_lfs_parent_commit_and_tag(hf: HuggingFaceServer, hf_api: Any) -> None:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    repo = hf.repo("acme", "tiny")
    head = repo.branches["main"]
    ops = [CommitOperationAdd("w.safetensors", b"W" * 100), CommitOperationAdd("a.json", b"{}")]
    info = hf_api.create_commit("acme/tiny", ops, commit_message="add", parent_commit=head)
    assert repo.branches["main"] == info.oid and repo.commits[info.oid].title == "add"
    files = repo.commits[info.oid].files
    assert files["w.safetensors"].lfs and not files["a.json"].lfs
    assert hf.lfs_store[hashlib.sha256(b"W" * 100).hexdigest()] == b"W" * 100

    with pytest.raises(HfHubHTTPError) as err:  # parent_commit is no longer the head
        hf_api.create_commit(
            "acme/tiny",
            [CommitOperationAdd("b.json", b"1")],
            commit_message="x",
            parent_commit=head,
        )
    assert err.value.response.status_code == 412

    rm = hf_api.create_commit(
        "acme/tiny", [CommitOperationDelete("a.json")], commit_message="rm", parent_commit=info.oid
    )
    assert "a.json" not in repo.commits[rm.oid].files

    hf_api.create_tag("acme/tiny", tag="v1.0.0", revision=info.oid)
    assert repo.tags["v1.0.0"] == info.oid
    with pytest.raises(HfHubHTTPError) as err:
        hf_api.create_tag("acme/tiny", tag="v1.0.0", revision=rm.oid)
    assert err.value.response.status_code == 409


def test_hub_lfs_put_checks_the_bytes_and_writes_need_the_token(hf: HuggingFaceServer) -> None:
    repo = hf.repo("acme", "tiny")
    oid = hashlib.sha256(b"data").hexdigest()
    batch = httpx.post(
        f"{hf.url}/acme/tiny.git/info/lfs/objects/batch",
        json={"operation": "upload", "transfers": ["basic"], "objects": [{"oid": oid, "size": 4}]},
        headers={"Authorization": f"Bearer {HF_TOKEN}"},
    ).json()
    href = batch["objects"][0]["actions"]["upload"]["href"]
    assert httpx.put(href, content=b"other").status_code == 400
    assert httpx.put(href.split("?")[0], content=b"data").status_code == 403  # unsigned
    assert httpx.put(href, content=b"data").status_code == 200
    url = f"{hf.url}/api/models/acme/tiny/commit/main"
    assert httpx.post(url, content=b"{}").status_code == 401
    assert repo.tags == {}
