"""Publishing to the loopback Hugging Face Hub with the real ``huggingface_hub``, then ``wgtpm get``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.publish_hosts.conftest import HF_TOKEN, Recorder, make_release, sum_lines
from tests.servers import Fault
from tests.servers.huggingface import HfRepo, HuggingFaceServer
from wgtpm._errors import ModuleError, UsageError
from wgtpm.httpclient import HttpClient
from wgtpm.publish._target import PublishTarget
from wgtpm.publish.huggingface import HuggingFaceTarget

MOD = "hf.co/acme/tiny"
FILES = {
    "tiny/manifest.json": b'{"format": "weightlang.artifact"}\n',
    "tiny/weights.safetensors": b"W" * 4000,
    "tiny/head.safetensors": b"H" * 2000,
}


@pytest.fixture(autouse=True)
def _lfs_not_xet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback Hub speaks LFS; huggingface_hub would use Xet where hf_xet is installed."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)


@pytest.fixture
def repo(hf: HuggingFaceServer) -> HfRepo:
    return hf.repo("acme", "tiny")


def target(
    hf: HuggingFaceServer, http: HttpClient, module: str = MOD, **env: str
) -> HuggingFaceTarget:
    return HuggingFaceTarget(module, http, {"HF_ENDPOINT": hf.url, "HF_TOKEN": HF_TOKEN, **env})


def files_at(repo: HfRepo, rev: str) -> dict[str, bytes]:
    sha = repo.resolve(rev)
    assert sha is not None
    return {p: b.data for p, b in repo.commits[sha].files.items()}


def test_publish_in_one_commit_and_a_tag_then_get_gives_the_sum_lines(
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
    tmp_path: Path,
    hf: HuggingFaceServer,
    repo: HfRepo,
    http: HttpClient,
    reporter: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES, notes="first cut")
    t: PublishTarget = target(hf, http)
    assert t.name == MOD and t.published_versions(MOD) == []
    before = len(repo.commits)
    t.check(release)
    out = t.publish(release, reporter)
    assert out.created and out.url.endswith("/acme/tiny/tree/v0.1.0")
    assert len(repo.commits) == before + 1  # one commit
    tree = files_at(repo, "v0.1.0")
    assert repo.tags["v0.1.0"] == repo.branches["main"]
    for name, data in FILES.items():
        assert tree[name] == data
    assert tree["wgt.index.json"] == release.index
    assert t.published_versions(MOD) == ["v0.1.0"]
    assert len(hf.log.where(method="PUT", path="/lfs-upload/*")) == 2  # the two .safetensors

    card = tree["README.md"].decode()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["library_name"] == "wgtpm" and "wgtpm" in meta["tags"] and "file" in meta["tags"]
    assert meta["wgtpm"] == {"module": MOD, "version": "v0.1.0", "h1": release.h1}
    assert f"wgtpm get {MOD}@v0.1.0" in card and "first cut" in card
    assert hf.validated and hf.validated[-1] == card  # the Hub's metadata check saw it

    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert sum_lines(project, MOD) == release.sum_lines()
    assert HF_TOKEN not in r.out + r.err + "\n".join(reporter.lines)
    assert not hf.log.where(server="cdn", header="authorization")
    assert not hf.log.where(path="/lfs-upload/*", header="authorization")


def test_a_shipped_readme_is_kept_and_stale_files_of_the_last_release_go(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    t = target(hf, http)
    t.publish(make_release(tmp_path, MOD, "v0.1.0", {**FILES, "old.json": b"{}"}), reporter)
    repo.commit({"notes.txt": b"a file someone added by hand"})
    mine = b"# tiny, by hand\n"
    second = make_release(tmp_path, MOD, "v0.2.0", {**FILES, "README.md": mine})
    t.check(second)
    t.publish(second, reporter)
    tree = files_at(repo, "v0.2.0")
    assert tree["README.md"] == mine
    assert "old.json" not in tree  # listed by the last wgtpm index, not by this one
    assert "notes.txt" in tree and ".gitattributes" in tree  # never wgtpm's to remove
    assert "old.json" in files_at(repo, "v0.1.0")


def test_a_concurrent_commit_between_check_and_commit_is_detected(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(hf, http)
    t.check(release)
    seen = repo.branches["main"]
    other = repo.commit({"config.json": b'{"someone": "else"}'})  # pushed meanwhile
    with pytest.raises(ModuleError) as err:
        t.publish(release, reporter)
    msg = str(err.value)
    assert "HTTP 412" in msg and seen[:12] in msg and "Nothing was tagged" in msg
    assert repo.tags == {} and repo.branches["main"] == other
    t.check(release)  # looking again sees the new head
    assert t.publish(release, reporter).created
    assert files_at(repo, "v0.1.0")["config.json"] == b'{"someone": "else"}'


def test_a_failed_commit_leaves_no_tag_and_the_retry_reuses_the_uploads(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(hf, http)
    head = repo.branches["main"]
    hf.inject(Fault.error("/api/models/acme/tiny/commit/main", 500))
    with pytest.raises(ModuleError, match="no tag was created"):
        t.publish(release, reporter)
    assert repo.tags == {} and repo.branches["main"] == head
    assert t.published_versions(MOD) == []
    hf.log.clear()
    assert t.publish(release, reporter).created
    assert not hf.log.where(method="PUT")  # the LFS objects were already stored
    assert "v0.1.0" in repo.tags


def test_a_refused_lfs_upload_leaves_no_commit_and_no_tag(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    head = repo.branches["main"]
    hf.inject(Fault.error("/lfs-upload/*", 403))
    with pytest.raises(ModuleError, match="no tag was created"):
        target(hf, http).publish(release, reporter)
    assert repo.tags == {} and repo.branches["main"] == head
    assert target(hf, http).publish(release, reporter).created


def test_the_same_release_again_is_a_no_op_and_another_is_refused_naming_both(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(hf, http)
    t.publish(release, reporter)
    commits = len(repo.commits)
    t.check(release)
    again = t.publish(release, reporter)
    assert not again.created and len(repo.commits) == commits
    other = make_release(tmp_path, MOD, "v0.1.0", {**FILES, "tiny/manifest.json": b"{}"})
    with pytest.raises(UsageError) as err:
        t.check(other)
    assert release.h1 in str(err.value) and other.h1 in str(err.value)
    with pytest.raises(UsageError):
        t.publish(other, reporter)
    assert len(repo.commits) == commits


def test_a_tag_lost_after_the_commit_is_created_by_the_next_attempt(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    hf.inject(Fault.error("/api/models/acme/tiny/tag/*", 503))
    with pytest.raises(ModuleError, match=r"creating tag v0\.1\.0"):
        target(hf, http).publish(release, reporter)
    commits = len(repo.commits)
    assert repo.tags == {}
    t = target(hf, http)
    t.check(release)
    assert t.publish(release, reporter).created
    assert len(repo.commits) == commits  # nothing changed, so no second commit
    assert repo.tags["v0.1.0"] == repo.branches["main"]


@pytest.mark.parametrize(
    ("module", "env", "message"),
    [
        ("hf.co/acme/other", {}, "the target is for module hf.co/acme/tiny"),
        (MOD, {"HF_TOKEN": ""}, "needs a token: set HF_TOKEN"),
    ],
)
def test_checks_refuse_before_anything_is_sent(
    tmp_path: Path,
    hf: HuggingFaceServer,
    repo: HfRepo,
    http: HttpClient,
    module: str,
    env: dict[str, str],
    message: str,
) -> None:
    with pytest.raises(UsageError, match=message):
        target(hf, http, **env).check(make_release(tmp_path, module, "v0.1.0", FILES))
    assert len(hf.log) == 0


def test_a_missing_repository_says_to_create_it(
    tmp_path: Path, hf: HuggingFaceServer, http: HttpClient
) -> None:
    with pytest.raises(UsageError, match="hf repo create acme/tiny"):
        target(hf, http).check(make_release(tmp_path, MOD, "v0.1.0", FILES))


def test_a_wrong_token_is_reported_without_showing_it(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    bad = "hf_wrong_but_secret"
    with pytest.raises(ModuleError) as err:
        target(hf, http, HF_TOKEN=bad).publish(
            make_release(tmp_path, MOD, "v0.1.0", FILES), reporter
        )
    assert bad not in str(err.value) and repo.tags == {}


def test_a_transient_500_on_an_lfs_upload_is_retried(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    hf.inject(Fault.error("/lfs-upload/*", 500))  # huggingface_hub retries it after a second
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    assert target(hf, http).publish(release, reporter).created
    assert len(hf.log.where(method="PUT", status=500)) == 1
    assert files_at(repo, "v0.1.0")["tiny/weights.safetensors"] == FILES["tiny/weights.safetensors"]


def test_a_repository_that_keeps_json_in_lfs_publishes_and_verifies(
    tmp_path: Path, hf: HuggingFaceServer, repo: HfRepo, http: HttpClient, reporter: Recorder
) -> None:
    repo.lfs_patterns = (*repo.lfs_patterns, "*.json")
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    assert target(hf, http).publish(release, reporter).created
    sha = repo.tags["v0.1.0"]
    assert repo.commits[sha].files["wgt.index.json"].lfs
    assert repo.commits[sha].files["wgt.index.json"].data == release.index
