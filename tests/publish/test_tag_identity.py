"""A release tag in a clone where git knows no identity (a fresh CI runner): the tag is
made with wgtpm's own tagger instead of failing a release that is already published; a tag git
refuses for another reason (signing without a key) is a warning saying how to add it, exit 0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from wgtpm.publish._git import TAGGER, create_tag, tag_commit


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_tag_is_made_without_a_git_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / "gitconfig"
    cfg.write_text("[user]\n\tuseConfigOnly = true\n")  # no guessing from the host name
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "wgt.mod").write_text("module example.com/m\n")
    _git(repo, "add", "wgt.mod")
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "one")
    commit = _git(repo, "rev-parse", "HEAD")
    with pytest.raises(subprocess.CalledProcessError):  # git itself refuses to tag here
        _git(repo, "tag", "-a", "-m", "x", "probe", commit)
    create_tag(repo, "v1.0.0", commit, "example.com/m v1.0.0")
    assert tag_commit(repo, "v1.0.0") == commit
    assert TAGGER[1] in _git(repo, "cat-file", "-p", "v1.0.0")


def test_a_configured_identity_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Ada")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ada@example.com")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ada@example.com")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f").write_text("x")
    _git(repo, "add", "f")
    _git(repo, "commit", "-qm", "one")
    commit = _git(repo, "rev-parse", "HEAD")
    create_tag(repo, "v1.0.0", commit, "m v1.0.0")
    assert "ada@example.com" in _git(repo, "cat-file", "-p", "v1.0.0")


def _no_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str = "") -> None:
    """HOME an empty folder, no GIT_* identity, git's config only ``config`` (and a user
    setting that keeps git from guessing an identity from the host's name)."""
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / "gitconfig"
    cfg.write_text("[user]\n\tuseConfigOnly = true\n" + config)
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))


@pytest.mark.slow
def test_publish_in_a_clone_without_an_identity_exits_0_and_tags(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_identity(tmp_path, monkeypatch)
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 0, r.err
    assert "internal error" not in r.err
    assert TAGGER[1] in _git(base_pkg, "cat-file", "-p", "v0.1.0")


@pytest.mark.slow
def test_a_tag_that_git_refuses_is_a_warning_after_a_publish(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a user config that signs tags with a gpg that fails (no key on a CI runner)
    _no_identity(tmp_path, monkeypatch, "[tag]\n\tgpgSign = true\n[gpg]\n\tprogram = false\n")
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 0, r.err
    assert "internal error" not in r.err
    commit = _git(base_pkg, "rev-parse", "HEAD")
    warned = [x for x in r.err.splitlines() if "the git tag v0.1.0 was not created" in x]
    assert len(warned) == 1, r.err
    assert "example.com/acme/xor@v0.1.0 is published" in warned[0]
    assert f"git tag -a -m 'example.com/acme/xor v0.1.0' v0.1.0 {commit}" in warned[0]
    assert _git(base_pkg, "tag") == ""
    listing = httpx.get(f"{live.url}/example.com/acme/xor/@v/list").text.split()
    assert listing == ["v0.1.0"]
