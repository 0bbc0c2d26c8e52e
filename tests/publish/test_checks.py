"""Every check that refuses a publish, each one line that says what to do.

Checks that run before the build fail in well under a second and print
nothing else; the untrained-weights check runs on the built artifact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, commit_all, git, make_package
from tests.registry.conftest import Live
from wgtpm.proxytree import ProxyTree
from wgtpm.publish._target import Release, tag_for


def publish(wgtpm, pkg: Path, *args: str):  # type: ignore[no-untyped-def]
    return wgtpm("publish", "--dry-run", *args, cwd=pkg)


def refused(r) -> str:  # type: ignore[no-untyped-def]
    """The one line of a refusal made before anything was built."""
    assert r.code == 1, r.out + r.err
    assert "building artifact" not in r.err, r.err
    return str(r.err.strip().splitlines()[-1])


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    """A package with a verbatim file artifact only: no training, the checks are what runs."""
    return make_package(
        tmp_path / "p",
        "example.com/acme/p",
        {"@artifacts": "notes notes.txt", "notes.txt": "hello\n"},
    )


def test_a_clean_package_publishes(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    r = publish(wgtpm, pkg, "--version", "v0.1.0")
    assert r.code == 0, r.err


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.1.0", "did you mean v0.1.0"),
        ("v1.0", "not a canonical version"),
        ("v0.0.0-20261101120000-3f9a2b7c1d0e", "pseudo-version"),
        ("v2.0.0", "must have a path ending in /v2"),
    ],
)
def test_bad_versions(wgtpm, pkg: Path, version: str, words: str) -> None:  # type: ignore[no-untyped-def]
    assert words in refused(publish(wgtpm, pkg, "--version", version))


def test_v2_module_needs_a_v2_version(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "p2", "example.com/acme/p/v2", {"@artifacts": "n n.txt", "n.txt": "x"}
    )
    assert "must be v2.x.y" in refused(publish(wgtpm, pkg, "--version", "v1.0.0"))
    assert publish(wgtpm, pkg, "--version", "v2.0.0").code == 0


def test_dirty_tree(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    (pkg / "notes.txt").write_text("changed\n")
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.0"))
    assert "not clean (notes.txt)" in line and "commit or stash" in line
    git(pkg, "checkout", "notes.txt")
    (pkg / "new.txt").write_text("untracked\n")
    assert "not clean (new.txt)" in refused(publish(wgtpm, pkg, "--version", "v0.1.0"))


def test_not_a_git_repository_and_no_commit(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "wgt.mod").write_text("module example.com/acme/bare\nwgt 0.1\n")
    assert "not in a git repository" in refused(publish(wgtpm, bare, "--version", "v0.1.0"))
    fresh = make_package(tmp_path / "fresh", "example.com/acme/f", {}, commit=False)
    assert "no commit yet" in refused(publish(wgtpm, fresh, "--version", "v0.1.0"))


def test_existing_tag_at_another_commit(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    git(pkg, "tag", "v0.1.0")
    (pkg / "notes.txt").write_text("v2 of the notes\n")
    commit_all(pkg, "more notes")
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.0"))
    assert "git tag v0.1.0 already exists" in line and "publish a new version" in line


def test_older_than_published_unless_allowed(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    ProxyTree(pkg / "dist").add("example.com/acme/p", "v0.2.0", {"notes.txt": b"newer\n"})
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.5"))
    assert "older than the published v0.2.0" in line and "--allow-older" in line
    r = publish(wgtpm, pkg, "--version", "v0.1.5", "--allow-older")
    assert r.code == 0, r.err


def test_untidy_wgt_sum(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    (pkg / "wgt.sum").write_text(
        "example.com/other v0.1.0 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
    )
    commit_all(pkg, "a stray wgt.sum line")
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.0"))
    assert "wgt.sum is not tidy" in line and "wgtpm tidy" in line


def test_missing_wgt_sum_line(wgtpm, pkg: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tree = ProxyTree(tmp_path / "tree")
    tree.add("example.com/acme/dep", "v0.1.0", {"a.txt": b"a"})
    monkeypatch.setenv("WGTPROXY", tree.url)
    mod = pkg / "wgt.mod"
    mod.write_text(mod.read_text() + "require example.com/acme/dep v0.1.0\n")
    commit_all(pkg, "require dep, without its wgt.sum lines")
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.0"))
    assert "not tidy" in line and "missing wgt.sum entry" in line


def test_directory_replacement(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    mod = pkg / "wgt.mod"
    mod.write_text(
        mod.read_text()
        + "require example.com/acme/dep v0.1.0\nreplace example.com/acme/dep => ../dep\n"
    )
    commit_all(pkg, "replace by a directory")
    assert "replaces modules by directories" in refused(publish(wgtpm, pkg, "--version", "v0.1.0"))


@pytest.mark.slow
def test_untrained_weights_unless_allowed(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "u",
        "example.com/acme/u",
        {"@artifacts": "xor model.wgt", "model.wgt": base_wgt(train=False)},
    )
    r = publish(wgtpm, pkg, "--version", "v0.1.0")
    assert r.code == 1
    last = r.err.strip().splitlines()[-1]
    assert "untrained" in last and "--allow-untrained" in last
    assert not (pkg / "dist").exists()
    r = publish(wgtpm, pkg, "--version", "v0.1.0", "--allow-untrained")
    assert r.code == 0, r.err


def test_target_selection(wgtpm, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for var in ("GITHUB_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # nothing listens: no network
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    other = make_package(tmp_path / "o", "example.com/acme/o", {})
    line = refused(wgtpm("publish", "--version", "v0.1.0", cwd=other))
    assert "--to https://REGISTRY" in line
    # a hosted target without its token: the variable to set, before anything is read or built
    for module, var in (("github.com/acme/gh", "GITHUB_TOKEN"), ("hf.co/acme/hf", "HF_TOKEN")):
        pkg = make_package(tmp_path / var, module, {})
        r = wgtpm("publish", "--version", "v0.1.0", cwd=pkg)
        line = refused(r)
        assert f"needs a token: set {var}" in line and "nothing was built or sent" in line
        assert len(r.err.strip().splitlines()) == 1, r.err
        assert "127.0.0.1:9" not in r.err  # no network was tried
    line = refused(wgtpm("publish", "--version", "v0.1.0", "--to", "reg.example", cwd=other))
    assert "want the registry's URL" in line


def test_retract(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("retract", "v0.1.0", "-m", "trained on the wrong split", cwd=pkg)
    assert r.code == 0, r.err
    assert "retract v0.1.0 // trained on the wrong split\n" in (pkg / "wgt.mod").read_text()
    assert "wgtpm publish --version v0.1.1" in r.err
    # every line on stderr is wgtpm's, as other commands' are
    assert [line.split(" ", 1)[0] for line in r.err.splitlines()] == ["wgtpm:", "wgtpm:"]
    assert "want a released version" in refused(wgtpm("retract", "0.1.0", "-m", "x", cwd=pkg))


def test_the_output_directory_does_not_make_the_tree_dirty(wgtpm, pkg: Path) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):
        r = wgtpm("publish", "--version", "v0.1.0", "-o", "out/tree", cwd=pkg)
        assert r.code == 0, r.err
    assert "already published" in r.out
    assert (pkg / "out/tree/example.com/acme/p/@v/v0.1.0/notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize(
    ("module", "subdir", "tag"),
    [
        ("example.com/acme/xor", "", "v1.2.3"),
        ("example.com/acme/xor", "models/xor", "models/xor/v1.2.3"),
        ("example.com/acme/xor/v2", "v2", "v2.0.0"),  # a major subdirectory is no prefix
        ("example.com/acme/xor/v2", "models/xor/v2", "models/xor/v2.0.0"),
        ("example.com/acme/xor/v2", "models/xor", "models/xor/v2.0.0"),
        ("github.com/acme/xor", "", "v1.2.3"),
        ("github.com/acme/xor/sub", "anything", "sub/v1.2.3"),  # the path says where
        ("github.com/acme/xor/sub/v2", "sub/v2", "sub/v2.0.0"),
        ("github.com/acme/v2", "", "v2.0.0"),  # a repository named v2
        ("hf.co/acme/tiny", "models", "v1.2.3"),
    ],
)
def test_tag_for_names_tags_as_go_does(module: str, subdir: str, tag: str) -> None:
    version = "v2.0.0" if "/v2" in module else "v1.2.3"
    assert tag_for(module, version, subdir) == tag


def test_a_release_is_tagged_by_tag_for() -> None:
    r = Release("github.com/acme/xor/sub/v2", "v2.0.0", None, {}, b"", "h1:x", "h1:y")
    assert r.tag == "sub/v2.0.0"


def test_a_dry_run_checks_the_versions_where_a_publish_would_go(  # type: ignore[no-untyped-def]
    wgtpm, pkg: Path, live: Live, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = wgtpm("publish", "--version", "v0.2.0", "--to", live.url, cwd=pkg)
    assert r.code == 0, r.err
    git(pkg, "tag", "-d", "v0.2.0")
    monkeypatch.delenv("WGTPM_TOKEN")  # reading the versions needs none
    line = refused(publish(wgtpm, pkg, "--version", "v0.1.0", "--to", live.url))
    assert "older than the published v0.2.0" in line
    assert not (pkg / "dist").exists()
    # the dry run's own tree alone would have let it through
    r = publish(wgtpm, pkg, "--version", "v0.1.0")
    assert r.code == 0 and "only the versions in" in r.err and "needs --to URL" in r.err


def test_a_dry_run_says_when_it_could_not_read_the_published_versions(  # type: ignore[no-untyped-def]
    wgtpm, pkg: Path, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    r = publish(wgtpm, pkg, "--version", "v0.1.0", "--to", "http://127.0.0.1:9")
    assert r.code == 0, r.err
    assert "could not read the versions published at registry http://127.0.0.1:9" in r.err
    assert (pkg / "dist/example.com/acme/p/@v/list").read_text() == "v0.1.0\n"
