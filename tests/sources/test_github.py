"""The GitHub releases source against the loopback GitHub API and its CDN."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.servers import CdnServer, Fault
from tests.servers.github import GhRepo, GitHubServer
from tests.sources.conftest import fetch
from wgtpm import index as _index
from wgtpm._errors import FetchError, NotFoundError
from wgtpm.httpclient import HttpClient
from wgtpm.sources._hosted import MemoryMetaCache
from wgtpm.sources.github import GitHubSource, asset_name, asset_path, asset_problem

MOD = "github.com/acme/xor"
TOKEN = "ghp_secret"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish(
    repo: GhRepo, module: str, version: str, files: dict[str, bytes], **kw: object
) -> dict[str, bytes]:
    """A release as ``wgtpm publish`` makes it: wgt.mod, the files, and wgt.index.json as assets."""
    mod = f"module {module}\n".encode()
    files = {"wgt.mod": mod, **files}
    idx = _index.ReleaseIndex(
        module, version, [_index.IndexEntry(p, len(d), sha(d)) for p, d in files.items()]
    ).to_json()
    assets = {asset_name(p): d for p, d in files.items()}
    assets["wgt.index.json"] = idx
    elems = [e for e in module.split("/")[3:] if not (e[:1] == "v" and e[1:].isdigit())]
    prefix = "".join(e + "/" for e in elems)
    repo.release(prefix + version, assets, **kw)  # type: ignore[arg-type]
    return {**files, "wgt.index.json": idx}


@pytest.fixture
def acme(github: GitHubServer) -> GhRepo:
    repo = github.repo("acme", "xor")
    publish(repo, MOD, "v0.1.0", {"xor/weights.safetensors": b"w1" * 500})
    publish(repo, MOD, "v0.2.0", {"xor/weights.safetensors": b"w2" * 500})
    publish(repo, MOD, "v0.3.0-rc.1", {"xor/weights.safetensors": b"w3" * 500}, prerelease=True)
    publish(repo, MOD, "v0.9.0", {"x": b"draft"}, draft=True)
    repo.release("nightly", {"junk.bin": b"j"})  # not a version
    return repo


def source(github: GitHubServer, http: HttpClient, **kw: object) -> GitHubSource:
    return GitHubSource(http, api_url=github.url, **kw)  # type: ignore[arg-type]


# ---- asset names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "asset"),
    [
        ("wgt.mod", "wgt.mod"),
        ("wgt.index.json", "wgt.index.json"),
        ("xor/weights.safetensors", "xor--weights.safetensors"),
        ("data/en/vocab.json", "data--en--vocab.json"),
        ("model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors"),
        ("tokenizer_config.json", "tokenizer_config.json"),
    ],
)
def test_asset_name_round_trips(path: str, asset: str) -> None:
    assert asset_problem(path) is None
    assert asset_name(path) == asset
    assert asset_path(asset) == path


@pytest.mark.parametrize(
    "path",
    ["a--b.bin", "a-/b", "a/-b", "my file.bin", "x~1", "w(1).bin", "trailing./x", "ü.bin"],
)
def test_asset_name_refuses_what_cannot_round_trip(path: str) -> None:
    assert asset_problem(path) is not None


# ---- versions and queries ----------------------------------------------------


def test_versions_skip_drafts_and_foreign_tags(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    src = source(github, http)
    assert sorted(src.versions(MOD)) == ["v0.1.0", "v0.2.0", "v0.3.0-rc.1"]
    # Even with a token that can see drafts, a draft is not a version.
    assert "v0.9.0" not in source(github, http, token=TOKEN).versions(MOD)


def test_versions_follow_pagination(github: GitHubServer, http: HttpClient) -> None:
    repo = github.repo("acme", "many")
    for i in range(130):
        repo.release(f"v0.0.{i}", {})
    vs = source(github, http).versions("github.com/acme/many")
    assert len(vs) == 130
    pages = github.log.where(server="github", path="/repos/acme/many/releases?*")
    assert [p.status for p in pages] == [200, 200]
    assert "page=2" in pages[1].path


def test_latest_prefers_releases_over_prereleases(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    info = source(github, http).info(MOD, "latest")
    assert info.version == "v0.2.0"
    assert info.commit == acme.tags["v0.2.0"]
    assert info.time is not None and info.time.endswith("Z")


def test_latest_falls_back_to_prerelease(github: GitHubServer, http: HttpClient) -> None:
    repo = github.repo("acme", "early")
    publish(repo, "github.com/acme/early", "v0.1.0-alpha.1", {}, prerelease=True)
    assert source(github, http).info("github.com/acme/early", "latest").version == "v0.1.0-alpha.1"


def test_latest_without_releases_is_not_found(github: GitHubServer, http: HttpClient) -> None:
    github.repo("acme", "empty").commit()
    with pytest.raises(NotFoundError, match=r"no releases tagged vX\.Y\.Z"):
        source(github, http).info("github.com/acme/empty", "latest")


def test_info_by_tag_branch_and_commit(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    src = source(github, http)
    commit = acme.tags["v0.2.0"]
    assert src.info(MOD, "v0.2.0").commit == commit
    acme.branches["stable"] = commit
    assert src.info(MOD, "stable").version == "v0.2.0"
    assert src.info(MOD, commit).version == "v0.2.0"
    assert src.info(MOD, commit[:12]).version == "v0.2.0"


def test_unreleased_branch_says_what_to_do(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    acme.commit(branch="dev")
    with pytest.raises(
        NotFoundError, match="has no release: GitHub modules are fetched from release assets"
    ):
        source(github, http).info(MOD, "dev")
    with pytest.raises(NotFoundError, match="unknown revision"):
        source(github, http).info(MOD, "no-such-branch")
    with pytest.raises(NotFoundError, match="pseudo-version"):
        source(github, http).info(MOD, "v0.0.0-20260101000000-0123456789ab")


def test_subdirectory_and_major_modules(github: GitHubServer, http: HttpClient) -> None:
    repo = github.repo("acme", "mono")
    root = publish(repo, "github.com/acme/mono", "v1.0.0", {})
    enc = publish(repo, "github.com/acme/mono/enc", "v0.2.0", {"enc/w.bin": b"e"})
    v2 = publish(repo, "github.com/acme/mono/v2", "v2.1.0", {})
    src = source(github, http)
    assert src.versions("github.com/acme/mono") == ["v1.0.0"]
    assert src.versions("github.com/acme/mono/enc") == ["v0.2.0"]
    assert src.versions("github.com/acme/mono/v2") == ["v2.1.0"]
    assert src.mod("github.com/acme/mono/enc", "v0.2.0") == enc["wgt.mod"]
    assert src.index("github.com/acme/mono", "v1.0.0") == root["wgt.index.json"]
    assert src.mod("github.com/acme/mono/v2", "v2.1.0") == v2["wgt.mod"]
    with pytest.raises(NotFoundError):
        src.mod("github.com/acme/mono", "v2.1.0")  # a v2 version of a path without /v2


# ---- mod, index and files ------------------------------------------------------


def test_mod_and_index_are_the_release_assets(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    src = source(github, http)
    rel = {a.name: a.data for a in acme.releases[1].assets}
    assert src.mod(MOD, "v0.2.0") == rel["wgt.mod"]
    data = src.index(MOD, "v0.2.0")
    assert sha(data) == sha(rel["wgt.index.json"])
    idx = _index.parse(data, MOD, "v0.2.0")
    assert {e.path for e in idx.files} == {"wgt.mod", "xor/weights.safetensors"}


def test_release_without_wgt_files_is_synthesised(github: GitHubServer, http: HttpClient) -> None:
    repo = github.repo("acme", "plain")
    repo.release("v1.0.0", {"model.gguf": b"G" * 3000, "README.md": b"hi"}, digests=False)
    repo.release("v1.1.0", {"model.gguf": b"H" * 3000})
    src = source(github, http)
    assert src.mod("github.com/acme/plain", "v1.0.0") == b"module github.com/acme/plain\n"
    for v, data in (("v1.0.0", b"G" * 3000), ("v1.1.0", b"H" * 3000)):
        idx = _index.parse(src.index("github.com/acme/plain", v), "github.com/acme/plain", v)
        assert idx.entry("model.gguf") == _index.IndexEntry("model.gguf", 3000, sha(data))
    # v1.0.0's assets have no digest, so they were hashed; v1.1.0's were not downloaded.
    assert github.log.where(server="cdn", path=f"/blobs/{sha(b'G' * 3000)}/*")
    assert not github.log.where(server="cdn", path=f"/blobs/{sha(b'H' * 3000)}/*")


def test_file_url_carries_the_token_to_the_api_only(
    acme: GhRepo, github: GitHubServer, cdn: CdnServer, http: HttpClient
) -> None:
    src = source(github, http, token=TOKEN)
    req = src.file(MOD, "v0.1.0", "xor/weights.safetensors")
    assert req.url.startswith(github.url + "/repos/acme/xor/releases/assets/")
    assert req.headers["Authorization"] == f"Bearer {TOKEN}"  # the asset is on the API origin
    assert req.headers["Accept"] == "application/octet-stream"
    assert http.get(req.url, headers=req.headers).content == b"w1" * 500
    api = github.log.where(server="github", path="/repos/acme/xor/releases/assets/*")
    assert api and all(s.header("authorization") == f"Bearer {TOKEN}" for s in api)
    blobs = cdn.log.where(server="cdn")
    assert blobs and all(s.status == 200 for s in blobs)
    assert not cdn.log.where(server="cdn", header="authorization")


def test_unknown_file_and_version(acme: GhRepo, github: GitHubServer, http: HttpClient) -> None:
    src = source(github, http)
    with pytest.raises(NotFoundError, match=r"has no asset 'nope--x\.bin'"):
        src.file(MOD, "v0.1.0", "nope/x.bin")
    with pytest.raises(NotFoundError, match=r"release v0\.7\.0"):
        src.mod(MOD, "v0.7.0")
    with pytest.raises(NotFoundError, match="not a GitHub module path"):
        src.versions("github.com/acme")


def test_get_downloads_and_verifies_every_file(
    acme: GhRepo, github: GitHubServer, tmp_path: Path, http: HttpClient
) -> None:
    tree = fetch(source(github, http), tmp_path / "cache", MOD, "v0.2.0", http=http)
    assert (tree / "xor" / "weights.safetensors").read_bytes() == b"w2" * 500
    assert (tree / "wgt.mod").read_bytes() == f"module {MOD}\n".encode()


# ---- credentials, rate limits, caching ------------------------------------------------


def test_private_repository_needs_the_token(
    github: GitHubServer, http: HttpClient, tmp_path: Path
) -> None:
    repo = github.repo("acme", "secret", private=True)
    publish(repo, "github.com/acme/secret", "v1.0.0", {"w.bin": b"s" * 100})
    with pytest.raises(NotFoundError, match="set GITHUB_TOKEN"):
        source(github, http).versions("github.com/acme/secret")
    with pytest.raises(FetchError, match="GitHub refused GITHUB_TOKEN"):
        source(github, http, token="wrong").versions("github.com/acme/secret")
    src = source(github, http, token=TOKEN)
    assert src.versions("github.com/acme/secret") == ["v1.0.0"]
    tree = fetch(src, tmp_path / "cache", "github.com/acme/secret", "v1.0.0", http=http)
    assert (tree / "w.bin").read_bytes() == b"s" * 100
    assert not github.log.where(server="cdn", header="authorization")


def test_token_comes_from_the_environment(
    acme: GhRepo, github: GitHubServer, http: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", github.url + "/")
    src = GitHubSource(http)
    assert src.api_url == github.url
    src.versions(MOD)
    assert github.log.where(server="github")[-1].header("authorization") == f"Bearer {TOKEN}"


def test_version_lists_are_revalidated_by_etag(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    cache = MemoryMetaCache()
    github.rate_limit(remaining=10)
    first = source(github, http, meta_cache=cache).versions(MOD)
    assert github.remaining == 9
    second = source(github, http, meta_cache=cache).versions(MOD)
    assert first == second
    assert github.remaining == 9  # a 304 costs no rate limit
    lists = github.log.where(server="github", path="/repos/acme/xor/releases?*")
    assert [s.status for s in lists] == [200, 304]
    assert lists[0].header("if-none-match") is None
    assert (
        lists[1].header(
            "if-none-match",
        )
        is not None
    )
    # A changed listing is downloaded again.
    publish(acme, MOD, "v0.4.0", {})
    assert "v0.4.0" in source(github, http, meta_cache=cache).versions(MOD)


def test_rate_limit_far_off_is_a_clear_error(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    github.rate_limit(remaining=0, reset_in=1800)
    with pytest.raises(
        FetchError, match=r"rate limit exceeded \(60 requests an hour\).*Set GITHUB_TOKEN"
    ):
        source(github, http).versions(MOD)


def test_rate_limit_soon_over_is_waited_out(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    waits: list[float] = []
    github.rate_limit(remaining=0, reset_in=0.5, status=429)

    def sleep(s: float) -> None:
        waits.append(s)
        import time

        time.sleep(min(s, 1.5))

    assert source(github, http, sleep=sleep).versions(MOD)
    assert len(waits) == 1 and waits[0] <= 2


def test_secondary_rate_limit_with_retry_after(
    acme: GhRepo, github: GitHubServer, http: HttpClient
) -> None:
    github.inject(Fault.too_many("/repos/acme/xor/releases", retry_after="1", times=2))
    assert sorted(source(github, http).versions(MOD))[0] == "v0.1.0"
    assert [
        s.status for s in github.log.where(server="github", path="/repos/acme/xor/releases?*")
    ] == [429, 429, 200]


# ---- faults ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        Fault.flip("/blobs/*"),
        Fault.short("/blobs/*"),
        Fault.truncate("/blobs/*"),
        Fault.reset("/blobs/*"),
        Fault.error("/blobs/*", 500),
        Fault.too_many("/blobs/*", "1"),
    ],
    ids=lambda f: f"{f.kind}-{f.status}",
)
def test_metadata_faults_are_retried_until_the_digest_matches(
    acme: GhRepo, github: GitHubServer, cdn: CdnServer, http: HttpClient, fault: Fault
) -> None:
    cdn.inject(fault)
    data = source(github, http).index(MOD, "v0.1.0")
    assert sha(data) == sha(
        next(a.data for a in acme.releases[0].assets if a.name == "wgt.index.json")
    )
    assert fault.times == 0


def test_metadata_always_corrupt_is_a_clear_error(
    acme: GhRepo, github: GitHubServer, cdn: CdnServer, http: HttpClient
) -> None:
    cdn.inject(Fault.flip("/blobs/*", times=-1))
    with pytest.raises(
        FetchError,
        match=r"github.com/acme/xor@v0.1.0: release asset wgt.index.json: the bytes served do not match",
    ):
        source(github, http).index(MOD, "v0.1.0")


@pytest.mark.parametrize(
    "fault",
    [
        Fault.flip("/blobs/*/xor--weights.safetensors"),
        Fault.short("/blobs/*/xor--weights.safetensors"),
        Fault.truncate("/blobs/*/xor--weights.safetensors"),
        Fault.reset("/blobs/*/xor--weights.safetensors"),
        Fault.drip("/blobs/*/xor--weights.safetensors", 0.001, 64),
        Fault.error("/repos/acme/xor/releases/assets/*", 502),
    ],
    ids=lambda f: f"{f.kind}-{f.status}",
)
def test_file_faults_end_in_a_verified_file(
    acme: GhRepo,
    github: GitHubServer,
    cdn: CdnServer,
    http: HttpClient,
    tmp_path: Path,
    fault: Fault,
) -> None:
    src = source(github, http)
    src.index(MOD, "v0.1.0")  # metadata first, so the fault hits the file
    cdn.inject(fault) if fault.path.startswith("/blobs") else github.inject(fault)
    try:
        tree = fetch(src, tmp_path / "cache", MOD, "v0.1.0", http=http)
    except Exception as exc:  # a flipped byte is caught by the fetcher and reported, never kept
        assert "sha256" in str(exc) and "nothing was kept" in str(exc)
        assert not (tmp_path / "cache" / "blobs").exists() or not any(
            (tmp_path / "cache" / "blobs").rglob(sha(b"w1" * 500))
        )
        tree = fetch(src, tmp_path / "cache", MOD, "v0.1.0", http=http)  # the next run succeeds
    assert (tree / "xor" / "weights.safetensors").read_bytes() == b"w1" * 500


def test_persistent_file_fault_is_a_clear_error(
    acme: GhRepo, github: GitHubServer, cdn: CdnServer, http: HttpClient, tmp_path: Path
) -> None:
    src = source(github, http)
    src.index(MOD, "v0.1.0")
    cdn.inject(Fault.error("/blobs/*/xor--weights.safetensors", 503, times=-1))
    with pytest.raises(
        FetchError, match=r"github.com/acme/xor@v0.1.0: downloading xor/weights.safetensors"
    ):
        fetch(src, tmp_path / "cache", MOD, "v0.1.0", http=http)
    assert not (tmp_path / "cache" / "mod").exists() or not any(
        (tmp_path / "cache" / "mod").rglob("weights.safetensors")
    )


def test_index_json_shape(acme: GhRepo, github: GitHubServer, http: HttpClient) -> None:
    doc = json.loads(source(github, http).index(MOD, "v0.1.0"))
    assert doc["module"] == MOD and doc["version"] == "v0.1.0"
