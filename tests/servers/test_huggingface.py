"""The loopback Hub speaks well enough for the real ``huggingface_hub`` client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import huggingface_hub as hh
import pytest
from huggingface_hub import errors

from tests.servers import CdnServer
from tests.servers.huggingface import HfRepo, HuggingFaceServer

TOKEN = "hf_secret"
WEIGHTS = bytes(range(256)) * 20


@pytest.fixture
def hf(cdn: CdnServer) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn, token=TOKEN, tree_page_size=2, commits_page_size=2) as server:
        yield server


@pytest.fixture
def repo(hf: HuggingFaceServer) -> HfRepo:
    r = hf.repo("acme", "tiny")
    r.commit({"config.json": b"{}", "model.safetensors": WEIGHTS, "sub/dir/x.txt": b"x"})
    r.tag("v0.1.0")
    r.branch("dev")
    r.commit({"config.json": b'{"a": 1}'}, branch="dev")
    return r


@pytest.fixture
def api(hf: HuggingFaceServer) -> hh.HfApi:
    return hh.HfApi(endpoint=hf.url, token=False)


def test_model_info_with_siblings_and_lfs(repo: HfRepo, api: hh.HfApi) -> None:
    info = api.model_info("acme/tiny", revision="v0.1.0", files_metadata=True)
    assert info.sha == repo.tags["v0.1.0"]
    assert info.last_modified is not None
    siblings = {s.rfilename: s for s in info.siblings or []}
    assert set(siblings) == {".gitattributes", "config.json", "model.safetensors", "sub/dir/x.txt"}
    lfs = siblings["model.safetensors"].lfs
    assert lfs is not None and lfs.size == len(WEIGHTS)
    assert lfs.sha256 == repo.commits[info.sha].files["model.safetensors"].sha256
    assert siblings["config.json"].lfs is None
    assert api.model_info("acme/tiny", revision="dev").sha == repo.branches["dev"]
    assert api.model_info("acme/tiny").sha == repo.branches["main"]


def test_refs(repo: HfRepo, api: hh.HfApi) -> None:
    refs = api.list_repo_refs("acme/tiny")
    assert {b.name: b.target_commit for b in refs.branches} == repo.branches
    assert [(t.name, t.ref) for t in refs.tags] == [("v0.1.0", "refs/tags/v0.1.0")]


def test_tree_is_paginated_and_complete(repo: HfRepo, api: hh.HfApi, hf: HuggingFaceServer) -> None:
    entries = list(api.list_repo_tree("acme/tiny", recursive=True, revision="v0.1.0", expand=True))
    files = {e.path: e for e in entries if isinstance(e, hh.hf_api.RepoFile)}
    folders = {e.path for e in entries if isinstance(e, hh.hf_api.RepoFolder)}
    assert set(files) == {".gitattributes", "config.json", "model.safetensors", "sub/dir/x.txt"}
    assert folders == {"sub", "sub/dir"}
    assert files["model.safetensors"].lfs is not None
    assert files["config.json"].last_commit is not None
    assert len(hf.log.where(server="hf", path="/api/models/acme/tiny/tree/*")) == 3
    top = [e.path for e in api.list_repo_tree("acme/tiny", revision="v0.1.0")]
    assert sorted(top) == [".gitattributes", "config.json", "model.safetensors", "sub"]
    assert [e.path for e in api.list_repo_tree("acme/tiny", "sub/dir", revision="v0.1.0")] == [
        "sub/dir/x.txt"
    ]


def test_commits_are_paginated(repo: HfRepo, api: hh.HfApi) -> None:
    ids = [c.commit_id for c in api.list_repo_commits("acme/tiny", revision="dev")]
    assert ids[0] == repo.branches["dev"] and len(ids) == 3


def test_download_redirects_lfs_to_the_cdn_without_the_token(
    repo: HfRepo, hf: HuggingFaceServer, cdn: CdnServer, tmp_path: Path
) -> None:
    api = hh.HfApi(endpoint=hf.url, token=TOKEN)
    path = api.hf_hub_download(
        "acme/tiny", "model.safetensors", revision="v0.1.0", cache_dir=tmp_path
    )
    assert Path(path).read_bytes() == WEIGHTS
    meta = hh.get_hf_file_metadata(
        hh.hf_hub_url("acme/tiny", "model.safetensors", revision="v0.1.0", endpoint=hf.url),
        token=TOKEN,
    )
    assert meta.commit_hash == repo.tags["v0.1.0"]
    assert meta.etag == repo.commits[repo.tags["v0.1.0"]].files["model.safetensors"].sha256
    assert meta.size == len(WEIGHTS)
    assert meta.location.startswith(cdn.url)
    heads = hf.log.where(server="hf", method="HEAD")
    assert heads and all(s.header("authorization") == f"Bearer {TOKEN}" for s in heads)
    assert cdn.log.where(server="cdn", status=200)
    assert not cdn.log.where(server="cdn", header="authorization")
    small = api.hf_hub_download("acme/tiny", "sub/dir/x.txt", revision="dev", cache_dir=tmp_path)
    assert Path(small).read_bytes() == b"x"


def test_snapshot_download(repo: HfRepo, hf: HuggingFaceServer, tmp_path: Path) -> None:
    out = Path(
        hh.snapshot_download(
            "acme/tiny", revision="dev", cache_dir=tmp_path, endpoint=hf.url, token=False
        )
    )
    assert (out / "config.json").read_bytes() == b'{"a": 1}'
    assert (out / "model.safetensors").read_bytes() == WEIGHTS
    assert out.name == repo.branches["dev"]


def test_errors_map_to_the_client_exceptions(repo: HfRepo, api: hh.HfApi, tmp_path: Path) -> None:
    with pytest.raises(errors.RepositoryNotFoundError):
        api.model_info("acme/nope")
    with pytest.raises(errors.RevisionNotFoundError):
        api.model_info("acme/tiny", revision="nope")
    with pytest.raises(errors.RemoteEntryNotFoundError):
        api.hf_hub_download("acme/tiny", "nope.txt", cache_dir=tmp_path)


def test_private_repositories_need_the_token(hf: HuggingFaceServer) -> None:
    hf.repo("acme", "secret", private=True).commit({"a.txt": b"a"})
    with pytest.raises(errors.RepositoryNotFoundError):
        hh.HfApi(endpoint=hf.url, token=False).model_info("acme/secret")
    assert hh.HfApi(endpoint=hf.url, token=TOKEN).model_info("acme/secret").sha
