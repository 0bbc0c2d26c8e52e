"""Publishing GitHub releases to the loopback GitHub, then getting them back with ``wgtpm get``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.publish_hosts.conftest import GH_TOKEN, Recorder, make_release, sum_lines
from tests.servers import Fault
from tests.servers.github import GhAsset, GhRepo, GitHubServer
from wgtpm._errors import ModuleError, UsageError
from wgtpm._report import human_size
from wgtpm._retry import Backoff
from wgtpm.cli._render import StderrReporter
from wgtpm.httpclient import HttpClient
from wgtpm.publish import github as gh_target
from wgtpm.publish._target import PublishTarget, Release
from wgtpm.publish.github import GitHubTarget

MOD = "github.com/acme/xor"
FILES = {
    "xor/manifest.json": b'{"format": "weightlang.artifact"}\n',
    "xor/weights.safetensors": b"W" * 3000,
    "README.md": b"# xor\n",
}


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gh_target, "UPLOAD_RETRY", Backoff(attempts=3, base=0.0, sleep_fn=_nap))


def _nap(seconds: float) -> None:
    pass


@pytest.fixture
def repo(github: GitHubServer) -> GhRepo:
    r = github.repo("acme", "xor")
    r.commit()
    return r


def target(github: GitHubServer, http: HttpClient, module: str = MOD, **env: str) -> GitHubTarget:
    environ = {"GITHUB_API_URL": github.url, "GITHUB_TOKEN": GH_TOKEN, **env}
    return GitHubTarget(module, http, environ)


def get_back(wgtpm, project: Path, github: GitHubServer, mp: pytest.MonkeyPatch, spec: str):  # type: ignore[no-untyped-def]
    mp.setenv("WGTPROXY", "direct")
    mp.setenv("GITHUB_API_URL", github.url)
    mp.setenv("GITHUB_TOKEN", GH_TOKEN)
    mp.setenv("WGTPM_HTTP_RETRIES", "1")
    return wgtpm("get", spec, cwd=project)


def published(repo: GhRepo) -> list[str]:
    return [r.tag_name for r in repo.releases if not r.draft]


@pytest.mark.parametrize(
    ("module", "tag"),
    [(MOD, "v0.1.0"), ("github.com/acme/xor/sub/v2", "sub/v2.0.0")],
)
def test_publish_then_get_gives_the_sum_lines(
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
    tmp_path: Path,
    github: GitHubServer,
    repo: GhRepo,
    http: HttpClient,
    reporter: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    tag: str,
) -> None:
    version = tag.rsplit("/", 1)[-1]
    sha = repo.branches["main"]
    release = make_release(tmp_path, module, version, FILES, commit=sha, notes="first")
    t: PublishTarget = target(github, http, module)
    assert t.name == "github.com/acme/xor"
    assert t.published_versions(module) == []
    t.check(release)
    out = t.publish(release, reporter)
    assert out.created and out.url.endswith(f"/releases/tag/{tag}")
    assert published(repo) == [tag] and repo.tags[tag] == sha
    rel = repo.releases[0]
    assert sorted(a.name for a in rel.assets) == sorted(
        ["wgt.mod", "wgt.index.json", "xor--manifest.json", "xor--weights.safetensors", "README.md"]
    )
    assert rel.body == "first" and not rel.prerelease
    assert t.published_versions(module) == [version]

    r = get_back(wgtpm, project, github, monkeypatch, f"{module}@{version}")
    assert r.code == 0, r.err
    assert sum_lines(project, module) == release.sum_lines()
    assert GH_TOKEN not in r.out + r.err + "\n".join(reporter.lines)


def test_uploads_go_to_the_upload_host_with_the_token_and_never_to_the_cdn(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    target(github, http).publish(release, reporter)
    ups = github.log.where(server="github-uploads", method="POST")
    assert len(ups) == 5 and all(s.header("authorization") == f"Bearer {GH_TOKEN}" for s in ups)
    assert all(s.header("content-type") == "application/octet-stream" for s in ups)
    assert not github.log.where(server="cdn", header="authorization")
    # draft first, published last: consumers never saw a release without its assets
    writes = [(s.method, s.server) for s in github.log if s.method != "GET"]
    assert writes[0] == ("POST", "github") and writes[-1] == ("PATCH", "github")


def test_a_failure_mid_way_leaves_a_draft_that_the_next_attempt_reuses(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", FILES, commit=repo.branches["main"])
    t = target(github, http)
    github.fail_uploads(after=2, times=100)  # the third asset never goes through
    with pytest.raises(ModuleError) as err:
        t.publish(release, reporter)
    assert "draft is kept" in str(err.value)
    (draft,) = repo.releases
    assert draft.draft and "v0.1.0" not in repo.tags and published(repo) == []
    assert [a.state for a in draft.assets] == ["uploaded", "uploaded"]  # the broken one deleted
    assert t.published_versions(MOD) == []
    # what a process killed mid-upload leaves: an empty asset in state "starter"
    draft.assets.append(GhAsset("xor--manifest.json", b"", state="starter"))

    github.fail_uploads(times=0)
    github.log.clear()
    out = t.publish(release, reporter)
    assert out.created and repo.releases == [draft] and published(repo) == ["v0.1.0"]
    assert all(a.state == "uploaded" for a in draft.assets) and len(draft.assets) == 5
    # the two complete assets were kept, the half-uploaded one deleted and sent again
    assert len(github.log.where(server="github-uploads", method="POST")) == 3
    assert len(github.log.where(method="DELETE", path="/repos/acme/xor/releases/assets/*")) == 1
    assert not github.log.where(method="POST", path="/repos/acme/xor/releases")


def test_a_transient_502_is_retried_within_one_publish(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    github.fail_uploads(after=1, times=1, status=502)
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    assert target(github, http).publish(release, reporter).created
    assert all(a.state == "uploaded" for a in repo.releases[0].assets)
    assert any("uploading" in ln and "again" in ln for ln in reporter.lines)


def test_an_upload_whose_answer_is_lost_is_kept_not_sent_twice(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    github.uploads.inject(Fault.reset("/repos/acme/xor/releases/*/assets", at=0.0))
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    assert target(github, http).publish(release, reporter).created
    assert len(github.log.where(server="github-uploads", method="POST")) == 5
    assert not github.log.where(method="DELETE")


def test_publishing_the_same_release_again_is_a_no_op(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    repo.immutable = True
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(github, http)
    assert t.publish(release, reporter).created
    assert repo.releases[0].immutable
    github.log.clear()
    t.check(release)
    again = t.publish(release, reporter)
    assert not again.created and again.url.endswith("/releases/tag/v0.1.0")
    assert [s.method for s in github.log] == ["GET"] * len(github.log)


def test_another_release_of_a_published_version_is_refused_naming_both(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    first = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(github, http)
    t.publish(first, reporter)
    other = make_release(tmp_path, MOD, "v0.1.0", {**FILES, "README.md": b"# changed\n"})
    for step in (t.check, lambda r: t.publish(r, reporter)):
        with pytest.raises(UsageError) as err:
            step(other)
        assert first.h1 in str(err.value) and other.h1 in str(err.value)
    assert len(repo.releases) == 1


def test_a_tag_without_a_release_is_refused(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient
) -> None:
    repo.tag("v0.1.0")
    with pytest.raises(UsageError, match=r"tag v0\.1\.0 exists"):
        target(github, http).check(make_release(tmp_path, MOD, "v0.1.0", FILES))


@pytest.mark.parametrize(
    ("release_module", "env", "message"),
    [
        ("github.com/acme/other", {}, "the target is for module github.com/acme/xor"),
        (MOD, {"GITHUB_TOKEN": ""}, "needs a token: set GITHUB_TOKEN"),
    ],
)
def test_checks_refuse_before_anything_is_sent(
    tmp_path: Path,
    github: GitHubServer,
    repo: GhRepo,
    http: HttpClient,
    release_module: str,
    env: dict[str, str],
    message: str,
) -> None:
    release = make_release(tmp_path, release_module, "v0.1.0", FILES)
    with pytest.raises(UsageError, match=message):
        target(github, http, **env).check(release)
    assert len(github.log) == 0


def test_a_path_that_cannot_be_an_asset_name_is_refused(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient
) -> None:
    release = make_release(tmp_path, MOD, "v0.1.0", {"a--b/c.json": b"{}"})
    with pytest.raises(UsageError, match="cannot be a GitHub release asset"):
        target(github, http).check(release)


def test_a_wrong_token_is_reported_without_showing_it(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    bad = "ghp_wrong_but_secret"
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    with pytest.raises(ModuleError) as err:
        target(github, http, GITHUB_TOKEN=bad).publish(release, reporter)
    assert "401" in str(err.value) and bad not in str(err.value)
    assert repo.releases == []


def test_a_release_whose_file_changed_on_disk_is_refused(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    release: Release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    release.files["README.md"].write_bytes(b"# edited after the build\n")
    with pytest.raises(UsageError, match=r"is not the README\.md the index lists"):
        target(github, http).publish(release, reporter)
    assert repo.releases == []


def test_a_draft_of_an_earlier_build_is_brought_to_this_release(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    old = make_release(tmp_path, MOD, "v0.1.0", {**FILES, "junk.bin": b"j"})
    github.fail_uploads(after=4, times=100)  # README, junk, wgt.mod, manifest arrive
    t = target(github, http)
    with pytest.raises(ModuleError):
        t.publish(old, reporter)
    github.fail_uploads(times=0)
    new = make_release(tmp_path, MOD, "v0.1.0", {**FILES, "README.md": b"# rebuilt\n"})
    t.publish(new, reporter)
    (rel,) = repo.releases
    names = {a.name: a.data for a in rel.assets}
    assert "junk.bin" not in names and names["README.md"] == b"# rebuilt\n"
    assert names["wgt.index.json"] == new.index
    assert any("deleting draft asset junk.bin" in ln for ln in reporter.lines)


def test_a_failed_publish_step_leaves_the_complete_draft(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    github.inject(Fault("status", "/repos/acme/xor/releases/*", status=500, method="PATCH"))
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    t = target(github, http)
    with pytest.raises(ModuleError, match="HTTP 500"):
        t.publish(release, reporter)
    assert published(repo) == [] and "v0.1.0" not in repo.tags and len(repo.releases[0].assets) == 5
    github.log.clear()
    assert t.publish(release, reporter).created
    assert not github.log.where(server="github-uploads")  # every asset was there already


def test_a_missing_repository_is_refused(
    tmp_path: Path, github: GitHubServer, http: HttpClient
) -> None:
    with pytest.raises(ModuleError, match="check that acme/xor exists"):
        target(github, http).check(make_release(tmp_path, MOD, "v0.1.0", FILES))


def test_a_secondary_rate_limit_on_an_upload_is_waited_out(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    github.uploads.inject(Fault.too_many("/repos/acme/xor/releases/*/assets", retry_after="1"))
    release = make_release(tmp_path, MOD, "v0.1.0", FILES)
    assert target(github, http).publish(release, reporter).created
    assert len(github.log.where(server="github-uploads", status=429)) == 1


def test_a_rate_limit_hours_away_is_not_waited_for(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    github.uploads.inject(
        Fault("status", "/repos/acme/xor/releases/*/assets", status=403, retry_after="7200")
    )
    with pytest.raises(ModuleError, match="HTTP 403"):
        target(github, http).publish(make_release(tmp_path, MOD, "v0.1.0", FILES), reporter)
    assert len(github.log.where(server="github-uploads", status=403)) == 1


class _Interrupt(Recorder):
    """A reporter through which Ctrl-C arrives after the first MiB of one asset has been sent."""

    def advance(self, label: str, n: int) -> None:
        if label == "xor--weights.safetensors":
            raise KeyboardInterrupt


def test_ctrl_c_mid_upload_leaves_a_draft_the_next_attempt_completes(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient, reporter: Recorder
) -> None:
    big = {**FILES, "xor/weights.safetensors": bytes(range(256)) * 10_000}  # 2.5 MiB: 3 chunks
    release = make_release(tmp_path, MOD, "v0.1.0", big)
    t = target(github, http)
    with pytest.raises(KeyboardInterrupt):
        t.publish(release, _Interrupt())
    (draft,) = repo.releases
    assert draft.draft and published(repo) == [] and "v0.1.0" not in repo.tags
    assert t.publish(release, reporter).created
    assets = {a.name: a for a in draft.assets}
    assert assets["xor--weights.safetensors"].data == big["xor/weights.safetensors"]
    assert all(a.state == "uploaded" for a in draft.assets) and len(assets) == 5
    # the interrupted upload left a "starter" asset, which was deleted and sent again
    sent = github.log.where(server="github-uploads", path="*name=xor--weights.safetensors")
    assert sent[0].status == 400 and sent[-1].status == 201
    assert github.log.where(method="DELETE", status=204)


@pytest.mark.parametrize(
    ("api", "url", "sent"),
    [
        ("https://api.github.com", "https://api.github.com/repos/a/b/releases", True),
        ("https://api.github.com", "https://uploads.github.com/repos/a/b/releases/1/assets", True),
        ("https://api.github.com", "http://uploads.github.com/repos/a/b/releases/1/assets", False),
        (
            "https://api.github.com",
            "https://uploads.evil.example/repos/a/b/releases/1/assets",
            False,
        ),
        ("https://ghe.example/api/v3", "https://ghe.example/api/uploads/repos/a/b", True),
        ("https://ghe.example/api/v3", "https://uploads.github.com/repos/a/b", False),
    ],
)
def test_the_token_goes_only_to_the_api_and_its_upload_host(
    http: HttpClient, api: str, url: str, sent: bool
) -> None:
    t = GitHubTarget(MOD, http, {"GITHUB_API_URL": api, "GITHUB_TOKEN": GH_TOKEN})
    t.api.trust_upload_url(url)  # as if a draft named it as its upload_url
    assert ("Authorization" in t.api.headers(url)) is sent
    assert "Authorization" not in t.api.headers("https://cdn.example/x")


class _Events(Recorder):
    """A reporter that keeps its progress events in order, and words uploads as uploads."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    def start(self, label: str, total: int) -> None:
        self.events.append(("start", label))

    def start_upload(self, label: str, total: int) -> None:
        self.events.append(("start_upload", label))

    def advance(self, label: str, n: int) -> None:
        self.events.append(("advance", label))

    def finish(self, label: str) -> None:
        self.events.append(("finish", label))


def test_every_asset_is_reported_as_an_upload_from_start_to_finish(
    tmp_path: Path, github: GitHubServer, repo: GhRepo, http: HttpClient
) -> None:
    """Each asset is begun as an upload before its bytes advance and is finished after;
    the CLI's reporter then says 'uploaded', never 'downloaded', for them."""
    big = {**FILES, "xor/weights.safetensors": bytes(range(256)) * 10_000}  # 3 chunks
    rec = _Events()
    target(github, http).publish(make_release(tmp_path / "a", MOD, "v0.1.0", big), rec)
    names = {"wgt.mod", "wgt.index.json", "xor--manifest.json", "xor--weights.safetensors"}
    assert {label for _, label in rec.events} == names | {"README.md"}
    for name in names:
        mine = [what for what, label in rec.events if label == name]
        chunks = 3 if name == "xor--weights.safetensors" else 1
        assert mine == ["start_upload"] + ["advance"] * chunks + ["finish"], name

    out = io.StringIO()  # another version, through the CLI's reporter on a pipe
    release = make_release(tmp_path / "b", MOD, "v0.2.0", big)
    target(github, http).publish(release, StderrReporter(out, tty=False))
    (rel,) = [r for r in repo.releases if r.tag_name == "v0.2.0"]
    shown = [line for line in out.getvalue().splitlines() if "load" in line]
    assert sorted(shown) == sorted(
        f"wgtpm: uploaded {a.name} ({human_size(len(a.data))})" for a in rel.assets
    )
    assert "wgtpm: uploaded xor--weights.safetensors (2.4 MiB)" in shown
