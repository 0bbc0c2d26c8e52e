"""The Hugging Face source against the loopback Hub and its CDN."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import CdnServer, Fault
from tests.servers.huggingface import HfRepo, HuggingFaceServer
from tests.sources.conftest import fetch
from wgtpm import index as _index
from wgtpm import version as _version
from wgtpm._errors import FetchError, NotFoundError, VerifyError
from wgtpm.httpclient import HttpClient
from wgtpm.sources import FileRequest, huggingface
from wgtpm.sources.huggingface import HuggingFaceSource

MOD = "hf.co/acme/tiny"
TOKEN = "hf_secret"
WEIGHTS1 = bytes(range(256)) * 40
WEIGHTS2 = bytes(reversed(range(256))) * 40


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def tiny(hf: HuggingFaceServer) -> HfRepo:
    """main: c1 (tagged v0.1.0) -> c2; dev branches off c2 with c3; v0.2.0-rc.1 tags c2."""
    repo = hf.repo("acme", "tiny")
    repo.commit(
        {
            "config.json": b'{"hidden": 8}',
            "model.safetensors": WEIGHTS1,
            "tokenizer/vocab.txt": b"a\nb\n",
        }
    )
    repo.tag("v0.1.0")
    repo.tag("nightly")
    repo.commit({"model.safetensors": WEIGHTS2})
    repo.tag("v0.2.0-rc.1")
    repo.branch("dev")
    repo.commit({"notes.md": b"dev only"}, branch="dev")
    return repo


def source(hf: HuggingFaceServer, http: HttpClient, **kw: object) -> HuggingFaceSource:
    return HuggingFaceSource(http, endpoint=hf.url, **kw)  # type: ignore[arg-type]


def test_importing_the_source_does_not_import_huggingface_hub() -> None:
    code = "import sys, wgtpm.sources.huggingface, wgtpm.sources.direct; print('huggingface_hub' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- versions and queries ----------------------------------------------------


def test_versions_are_version_tags(tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient) -> None:
    assert source(hf, http).versions(MOD) == ["v0.1.0", "v0.2.0-rc.1"]


def test_latest_is_the_highest_release_tag(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    info = source(hf, http).info(MOD, "latest")
    assert info.version == "v0.1.0"
    assert info.commit == tiny.tags["v0.1.0"]
    assert info.time == "2026-03-01T01:00:00Z"


def test_latest_without_tags_is_the_default_branch(hf: HuggingFaceServer, http: HttpClient) -> None:
    repo = hf.repo("acme", "untagged")
    c = repo.commit({"a.txt": b"a"})
    info = source(hf, http).info("hf.co/acme/untagged", "latest")
    assert info.version == f"v0.0.0-20260301010000-{c[:12]}"
    assert info.commit == c


def test_branch_becomes_a_pseudo_version_after_its_last_tag(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    src = source(hf, http)
    dev = tiny.branches["dev"]
    info = src.info(MOD, "dev")
    assert info.version == f"v0.2.0-rc.1.0.20260301030000-{dev[:12]}"
    assert info.commit == dev
    assert _version.compare(info.version, "v0.2.0-rc.1") > 0
    # The same commit by full id, by short id, and the pseudo-version itself.
    assert src.info(MOD, dev).version == info.version
    assert src.info(MOD, dev[:7]).version == info.version
    assert source(hf, http).info(MOD, info.version) == info


def test_tagged_commit_resolves_to_its_version(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    src = source(hf, http)
    assert src.info(MOD, tiny.tags["v0.1.0"]).version == "v0.1.0"
    assert src.info(MOD, "nightly").version == "v0.1.0"


def test_pseudo_version_must_match_the_commit(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    dev = tiny.branches["dev"]
    with pytest.raises(NotFoundError, match="not at the time this pseudo-version records"):
        source(hf, http).mod(MOD, f"v0.0.0-20990101000000-{dev[:12]}")
    with pytest.raises(
        NotFoundError, match=r"tiny@v0.0.0-20260301030000-0123456789ab: no commit 0123"
    ):
        source(hf, http).mod(MOD, "v0.0.0-20260301030000-0123456789ab")


def test_unknown_things_are_not_found(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    src = source(hf, http)
    with pytest.raises(NotFoundError, match=r"no tag v0\.9\.9"):
        src.mod(MOD, "v0.9.9")
    with pytest.raises(NotFoundError, match="must have a path ending in /v9"):
        src.mod(MOD, "v9.9.9")
    with pytest.raises(NotFoundError, match="no such revision"):
        src.info(MOD, "no-such-branch")
    with pytest.raises(NotFoundError, match=r"no repository acme/nope .*set HF_TOKEN"):
        src.versions("hf.co/acme/nope")
    with pytest.raises(NotFoundError, match="not a Hugging Face module path"):
        src.versions("hf.co/acme")


# ---- mod and index -------------------------------------------------------------------


def test_synthesised_mod_and_index(tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient) -> None:
    src = source(hf, http)
    assert src.mod(MOD, "v0.1.0") == b"module hf.co/acme/tiny\n"
    data = src.index(MOD, "v0.1.0")
    idx = _index.parse(data, MOD, "v0.1.0")
    served = hf.repos["acme/tiny"].commits[tiny.tags["v0.1.0"]].files
    assert {e.path: (e.size, e.sha256) for e in idx.files} == {
        p: (len(b.data), sha(b.data)) for p, b in served.items() if p != ".gitattributes"
    }
    doc = json.loads(data)
    assert doc["commit"] == tiny.tags["v0.1.0"]
    assert doc["time"] == "2026-03-01T01:00:00Z"
    assert doc["build"]["skipped"] == [".gitattributes"]
    # LFS files were not downloaded to index them: the API gave their sha256.
    assert not hf.log.where(server="hf", path="*/model.safetensors")
    assert hf.log.where(server="hf", method="GET", path="*/resolve/*/config.json")


def test_synthesised_index_is_deterministic(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    assert source(hf, http).index(MOD, "v0.1.0") == source(hf, http).index(MOD, "v0.1.0")


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"Config.json": b"{}", "config.json": b"{}"}, "differ only in case"),
        ({"w": b"a", "w/x.bin": b"b"}, "which is a file"),
    ],
)
def test_a_tree_no_index_can_hold_is_refused(
    hf: HuggingFaceServer, http: HttpClient, files: dict[str, bytes], why: str
) -> None:
    """A synthesised index is checked as a downloaded one is (on its entries, not by
    parsing its bytes again): paths that would collide in a checkout are refused."""
    repo = hf.repo("acme", "clash")
    repo.commit(files)
    repo.tag("v0.1.0")
    with pytest.raises(VerifyError, match=why):
        source(hf, http).index("hf.co/acme/clash", "v0.1.0")


def test_repository_with_its_own_wgt_files(hf: HuggingFaceServer, http: HttpClient) -> None:
    repo = hf.repo("acme", "packaged")
    mod = b"module hf.co/acme/packaged\nwgt 0.1\n"
    w = b"\x00" * 2048
    idx = _index.ReleaseIndex(
        "hf.co/acme/packaged",
        "v1.0.0",
        [
            _index.IndexEntry("wgt.mod", len(mod), sha(mod)),
            _index.IndexEntry("w.safetensors", len(w), sha(w)),
        ],
    ).to_json()
    repo.commit({"wgt.mod": mod, "wgt.index.json": idx, "w.safetensors": w})
    repo.tag("v1.0.0")
    src = source(hf, http)
    assert src.mod("hf.co/acme/packaged", "v1.0.0") == mod
    assert src.index("hf.co/acme/packaged", "v1.0.0") == idx


def test_huggingface_co_paths_are_normalised(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    src = source(hf, http)
    assert src.versions("huggingface.co/acme/tiny") == ["v0.1.0", "v0.2.0-rc.1"]
    assert src.mod("huggingface.co/acme/tiny", "v0.1.0") == b"module hf.co/acme/tiny\n"


# ---- files ---------------------------------------------------------------------


def test_get_by_tag_branch_and_commit(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    src = source(hf, http)
    tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS1
    assert (tree / "tokenizer" / "vocab.txt").read_bytes() == b"a\nb\n"
    assert not (tree / ".gitattributes").exists()
    dev = src.info(MOD, "dev").version
    tree = fetch(src, tmp_path / "c", MOD, dev, http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS2
    assert (tree / "notes.md").read_bytes() == b"dev only"
    main = tiny.branches["main"]
    by_commit = src.info(MOD, main[:10]).version
    tree = fetch(src, tmp_path / "c", MOD, by_commit, http=http)
    assert not (tree / "notes.md").exists()


def test_selective_download_fetches_only_selected_files(
    tiny: HfRepo, hf: HuggingFaceServer, cdn: CdnServer, http: HttpClient, tmp_path: Path
) -> None:
    src = source(hf, http)
    tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", ["config.json"], http=http)
    assert (tree / "config.json").read_bytes() == b'{"hidden": 8}'
    assert not (tree / "model.safetensors").exists()
    assert not cdn.log.where(server="cdn")  # the only LFS file was never downloaded


def test_small_files_cross_the_network_once(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    """Indexing downloads the small files to hash them; the fetcher takes those bytes."""
    tree = fetch(source(hf, http), tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "config.json").read_bytes() == b'{"hidden": 8}'
    assert (tree / "tokenizer" / "vocab.txt").read_bytes() == b"a\nb\n"
    for name in ("config.json", "tokenizer/vocab.txt"):
        assert len(hf.log.where(server="hf", method="GET", path=f"*/resolve/*/{name}")) == 1


def test_small_files_are_stored_without_a_lock_each(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, tmp_path: Path, monkeypatch
) -> None:
    """Bytes the fetcher is handed (and checks) need no lock: each is written under a name
    of its own, pushed to disk, then renamed into place. A lock file per blob was an inode
    more per small file, and stayed in tmp/ for good."""
    synced: list[int] = []
    fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), fsync(fd))[1])
    tree = fetch(source(hf, http), tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "config.json").read_bytes() == b'{"hidden": 8}'
    locks = {p.name for p in (tmp_path / "c" / "tmp").glob("*.lock")}
    for data in (b'{"hidden": 8}', b"a\nb\n"):
        assert f"{sha(data)}.lock" not in locks
    assert f"{sha(WEIGHTS1)}.lock" in locks  # downloaded: other processes wait for it
    assert len(synced) >= 3  # every file on disk before it got its name
    assert not [p for p in (tmp_path / "c" / "tmp").iterdir() if not p.name.endswith(".lock")]


def test_small_files_beyond_the_memory_budget_still_cross_once(
    tiny: HfRepo,
    hf: HuggingFaceServer,
    http: HttpClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A repository of 100,000 small files cannot keep them all in memory: past the
    budget they wait in a temporary file, and are still not downloaded twice."""
    monkeypatch.setattr(huggingface, "KEEP_BODIES", 0)
    tree = fetch(source(hf, http), tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "config.json").read_bytes() == b'{"hidden": 8}'
    assert (tree / "tokenizer" / "vocab.txt").read_bytes() == b"a\nb\n"
    for name in ("config.json", "tokenizer/vocab.txt"):
        assert len(hf.log.where(server="hf", method="GET", path=f"*/resolve/*/{name}")) == 1


class _Tampering:
    """A source that hands the fetcher other bytes than the ones it indexed."""

    def __init__(self, src: HuggingFaceSource) -> None:
        self.src = src
        self.name = src.name

    def __getattr__(self, name: str) -> object:
        return getattr(self.src, name)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        req = self.src.file(path, version, name)
        return req if req.body is None else FileRequest(req.url, req.headers, b"tampered")


def test_bytes_kept_from_indexing_are_verified(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    src = _Tampering(source(hf, http))
    with pytest.raises(VerifyError, match="nothing was kept"):
        fetch(src, tmp_path / "c", MOD, "v0.1.0", ["config.json"], http=http)  # type: ignore[arg-type]
    assert not list((tmp_path / "c").rglob(sha(b'{"hidden": 8}')))


def test_refs_are_listed_once_per_command(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = source(hf, http)
    src.versions(MOD)
    src.info(MOD, "v0.1.0")
    src.mod(MOD, "v0.2.0-rc.1")
    assert len(hf.log.where(server="hf", path="/api/models/acme/tiny/refs*")) == 1
    monkeypatch.setattr(huggingface, "REFS_TTL", 0.0)  # a long-lived process sees new tags
    tiny.tag("v0.3.0")
    assert "v0.3.0" in src.versions(MOD)


def test_token_reaches_the_hub_and_never_the_cdn(
    hf: HuggingFaceServer, cdn: CdnServer, http: HttpClient, tmp_path: Path
) -> None:
    repo = hf.repo("acme", "private", private=True)
    repo.commit({"model.safetensors": WEIGHTS1, "config.json": b"{}"})
    repo.tag("v1.0.0")
    with pytest.raises(NotFoundError, match="if it is private, set HF_TOKEN"):
        source(hf, http).versions("hf.co/acme/private")
    src = source(hf, http, token=TOKEN)
    req = src.file("hf.co/acme/private", "v1.0.0", "model.safetensors")
    assert req.url == f"{hf.url}/acme/private/resolve/{repo.tags['v1.0.0']}/model.safetensors"
    assert req.headers == {"Authorization": f"Bearer {TOKEN}"}
    tree = fetch(src, tmp_path / "c", "hf.co/acme/private", "v1.0.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS1
    resolves = hf.log.where(server="hf", path="/acme/private/resolve/*")
    assert resolves and all(s.header("authorization") == f"Bearer {TOKEN}" for s in resolves)
    assert cdn.log.where(server="cdn", status=200)
    assert not cdn.log.where(server="cdn", header="authorization")


def test_endpoint_and_token_from_the_environment(
    hf: HuggingFaceServer, http: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    hf.repo("acme", "private", private=True).commit({"a.txt": b"a"})
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    src = HuggingFaceSource(http)
    assert src.endpoint == hf.url
    assert src.info("hf.co/acme/private", "main").version.startswith("v0.0.0-")


# ---- faults ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [
        Fault.flip("/acme/tiny/resolve/*/config.json"),
        Fault.short("/acme/tiny/resolve/*/config.json"),
        Fault.reset("/acme/tiny/resolve/*/config.json"),
        Fault.error("/acme/tiny/resolve/*/config.json", 500),
        Fault.too_many("/acme/tiny/resolve/*/config.json", "1"),
    ],
    ids=lambda f: f"{f.kind}-{f.status}",
)
def test_small_file_faults_while_indexing_are_retried(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, fault: Fault
) -> None:
    hf.inject(fault)
    idx = _index.parse(source(hf, http).index(MOD, "v0.1.0"), MOD, "v0.1.0")
    assert idx.entry("config.json") == _index.IndexEntry("config.json", 13, sha(b'{"hidden": 8}'))
    assert fault.times == 0


def test_small_file_always_corrupt_is_a_clear_error(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient
) -> None:
    hf.inject(Fault.flip("/acme/tiny/resolve/*/config.json", times=-1))
    with pytest.raises(
        FetchError,
        match=r"hf.co/acme/tiny@v0.1.0: config.json: the bytes served do not match .*git blob id",
    ):
        source(hf, http).index(MOD, "v0.1.0")


@pytest.mark.parametrize(
    "fault",
    [
        Fault.flip("/blobs/*/model.safetensors"),
        Fault.short("/blobs/*/model.safetensors"),
        Fault.truncate("/blobs/*/model.safetensors", at=0.3),
        Fault.reset("/blobs/*/model.safetensors", at=0.7),
        Fault.drip("/blobs/*/model.safetensors", 0.001, 1024),
        Fault.error("/blobs/*/model.safetensors", 503),
    ],
    ids=lambda f: f"{f.kind}-{f.status}",
)
def test_lfs_file_faults_end_in_a_verified_file(
    tiny: HfRepo,
    hf: HuggingFaceServer,
    cdn: CdnServer,
    http: HttpClient,
    tmp_path: Path,
    fault: Fault,
) -> None:
    src = source(hf, http)
    cdn.inject(fault)
    try:
        tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    except Exception as exc:  # corrupt bytes are refused and dropped; the next run succeeds
        assert "nothing was kept" in str(exc)
        assert not list((tmp_path / "c").rglob(sha(WEIGHTS1)))
        tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS1
    assert fault.times == 0


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_hub_errors_are_retried(
    tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient, status: int
) -> None:
    hf.inject(Fault.error("/api/models/acme/tiny/refs", status, times=2))
    hf.inject(Fault.error("/api/models/acme/tiny/revision/*", status, times=1))
    assert source(hf, http).info(MOD, "dev").commit == tiny.branches["dev"]


def test_hub_outage_is_a_clear_error(tiny: HfRepo, hf: HuggingFaceServer, http: HttpClient) -> None:
    hf.inject(Fault.error("/api/models/acme/tiny/refs", 503, times=-1))
    with pytest.raises(FetchError, match=r"hf.co/acme/tiny: listing refs: .*503"):
        source(hf, http).versions(MOD)


def test_small_lfs_files_come_straight_from_the_cdn(
    hf: HuggingFaceServer, cdn: CdnServer, http: HttpClient, tmp_path: Path
) -> None:
    """Issue 30: a small LFS file costs a request to the API and one to the CDN. While one
    downloads, where the next ones redirect is asked ahead (a HEAD each), so that each
    download goes to the CDN at once; the token still never reaches the CDN."""
    repo = hf.repo("acme", "shards", private=True)
    files = {f"part{i}.bin": bytes([i]) * 1000 for i in range(6)}
    repo.commit(files)
    repo.tag("v1.0.0")
    mod = "hf.co/acme/shards"
    src = source(hf, http, token=TOKEN)
    reqs = [src.file(mod, "v1.0.0", name) for name in sorted(files)]
    assert reqs[0].url.startswith(f"{hf.url}/acme/shards/resolve/")  # nothing asked yet
    assert all(r.url.startswith(f"{cdn.url}/blobs/") and not r.headers for r in reqs[1:])
    heads = hf.log.where(server="hf", method="HEAD", path="/acme/shards/resolve/*")
    assert len(heads) == 5
    assert all(s.header("authorization") == f"Bearer {TOKEN}" for s in heads)
    tree = fetch(source(hf, http, token=TOKEN), tmp_path / "c", mod, "v1.0.0", http=http)
    assert {n: (tree / n).read_bytes() for n in files} == files
    assert not cdn.log.where(server="cdn", header="authorization")
