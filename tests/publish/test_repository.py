"""Where a release's commit lies: the provenance's ``repository``, never with a credential.

- :func:`public_url` drops user information from HTTP URLs (a user name
  alone may be a token), a password from others, keeps scp-like addresses
  and paths;
- :meth:`SourceRepository.of` reads what a provenance says, and tolerates a
  release published before the key existed;
- :func:`repository_url` spells one repository one way (ssh or https, with or
  without ``.git``), so a version published again after its remote's URL
  changed form is the same bytes, not another release; a rebuild still finds
  a plain HTTP git server that answers only to the name with ``.git``;
- a publish whose ``origin`` URL carries a token records the URL without it;
- a publish and a rebuild refuse a commit whose ``build/`` is a symlink
  (builders would write through it, out of the temporary export).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, commit_all, dumb_http, git, make_package
from wgtpm._report import SILENT
from wgtpm.publish import PROVENANCE_FILE, DirectoryTarget, PublishOptions, publish_package
from wgtpm.publish._git import public_url, repository_url
from wgtpm.publish._provenance import SourceRepository


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("https://github.com/acme/xor.git", "https://github.com/acme/xor.git"),
        ("https://x-access-token:ghp_SECRET@github.com/acme/xor", "https://github.com/acme/xor"),
        ("https://ghp_SECRET@github.com/acme/xor", "https://github.com/acme/xor"),
        ("http://user:pw@mirror.local/xor.git", "http://mirror.local/xor.git"),
        ("ssh://git@host:2222/acme/xor.git", "ssh://git@host:2222/acme/xor.git"),
        ("ssh://git:pw@host/acme/xor.git", "ssh://git@host/acme/xor.git"),
        ("git@github.com:acme/xor.git", "git@github.com:acme/xor.git"),
        ("/srv/git/xor.git", "/srv/git/xor.git"),
        ("file:///srv/git/xor.git", "file:///srv/git/xor.git"),
    ],
)
def test_public_url(url: str, want: str) -> None:
    assert public_url(url) == want


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("https://github.com/acme/xor.git", "https://github.com/acme/xor"),
        ("https://github.com/acme/xor", "https://github.com/acme/xor"),
        ("git@github.com:acme/xor.git", "https://github.com/acme/xor"),
        ("github.com:acme/xor", "https://github.com/acme/xor"),
        ("ssh://git@GitHub.com/acme/xor.git/", "https://github.com/acme/xor"),
        ("git+ssh://git:pw@github.com:22/acme/xor.git", "https://github.com/acme/xor"),
        (
            "https://x-access-token:ghp_SECRET@github.com/acme/xor.git",
            "https://github.com/acme/xor",
        ),
        ("ssh://git@host:2222/acme/xor.git", "ssh://git@host:2222/acme/xor"),  # no https known
        ("http://user:pw@mirror.local/xor.git", "http://mirror.local/xor"),  # http stays http
        ("https://[::1]:8443/acme/xor.git", "https://[::1]:8443/acme/xor"),
        ("/srv/git/xor.git", "/srv/git/xor.git"),  # a clone on this machine: as it is
        ("file:///srv/git/xor.git", "file:///srv/git/xor.git"),
        ("C:/src/xor", "C:/src/xor"),
    ],
)
def test_repository_url(url: str, want: str) -> None:
    assert repository_url(url) == want


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        ({"repository": {"url": "https://h/x", "dir": "m"}}, SourceRepository("https://h/x", "m")),
        ({"repository": {"dir": ""}}, SourceRepository(None, "")),
        ({"repository": {"url": 7, "dir": None}}, SourceRepository(None, "")),
        ({}, None),  # published before releases named their repository
    ],
)
def test_source_repository_of(doc: dict[str, object], want: SourceRepository | None) -> None:
    assert SourceRepository.of(doc) == want


@pytest.mark.slow
def test_a_token_in_the_remote_url_stays_out_of_the_release(tmp_path: Path) -> None:
    pkg = make_package(
        tmp_path / "xor",
        "example.com/acme/xor",
        {"@artifacts": "xor model.wgt", "model.wgt": base_wgt()},
    )
    git(pkg, "remote", "add", "origin", "https://x-access-token:ghp_SECRET@example.com/acme/xor")
    out = tmp_path / "out"
    publish_package(pkg, PublishOptions("v0.1.0", tag=False), DirectoryTarget(out), SILENT)
    vdir = out / "example.com/acme/xor/@v"
    prov = json.loads((vdir / "v0.1.0" / PROVENANCE_FILE).read_text())
    assert prov["repository"] == {"url": "https://example.com/acme/xor", "dir": ""}
    assert "ghp_SECRET" not in (vdir / "v0.1.0.index.json").read_text()


def test_a_new_form_of_the_remote_url_publishes_the_same_bytes(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "hi"}
    )
    git(pkg, "remote", "add", "origin", "https://github.com/acme/p.git")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    prov = pkg / "dist/example.com/acme/p/@v/v0.1.0" / PROVENANCE_FILE
    assert json.loads(prov.read_text())["repository"]["url"] == "https://github.com/acme/p"
    for url in ("git@github.com:acme/p.git", "https://github.com/acme/p"):
        git(pkg, "remote", "set-url", "origin", url)
        r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
        assert r.code == 0, r.err
        assert r.out.startswith("already published (same bytes, nothing to do)"), r.out


def test_a_rebuild_fetches_from_a_server_that_needs_the_git_suffix(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "hi"}
    )
    srv = tmp_path / "srv"
    git(tmp_path, "clone", "-q", "--bare", str(pkg), str(srv / "p.git"))
    git(srv / "p.git", "update-server-info")  # what a dumb HTTP client reads
    with dumb_http(srv) as base:
        git(pkg, "remote", "add", "origin", f"{base}/p.git")
        r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
        assert r.code == 0, r.err
        prov = json.loads((pkg / "dist/example.com/acme/p/@v/v0.1.0" / PROVENANCE_FILE).read_text())
        assert prov["repository"]["url"] == f"{base}/p"  # the release's name for it
        app = tmp_path / "app"
        app.mkdir()
        monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
        assert wgtpm("init", "example.com/app", cwd=app).code == 0
        assert wgtpm("get", "example.com/acme/p@v0.1.0", cwd=app).code == 0
        r = wgtpm("verify", "--rebuild", "example.com/acme/p@v0.1.0", cwd=app)
    assert (r.code, r.out) == (0, "notes: reproduced\n"), r.err


def _linked_build_package(tmp_path: Path) -> tuple[Path, Path]:
    """A package whose commit holds ``build`` as a symlink to ``elsewhere``."""
    pkg = make_package(
        tmp_path / "xor",
        "example.com/acme/xor",
        {"@artifacts": "xor model.wgt", "model.wgt": base_wgt()},
        commit=False,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (pkg / "build").symlink_to(elsewhere)
    commit_all(pkg, "build/ is a link")
    return pkg, elsewhere


@pytest.mark.slow
def test_publish_refuses_a_committed_build_symlink(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg, elsewhere = _linked_build_package(tmp_path)
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 1 and r.out == ""
    assert r.err.strip().splitlines()[-1] == (
        "wgtpm: build is committed as a symlink, which builders would write through; "
        "untrack it (git rm --cached build), ignore build/ in .gitignore, and commit"
    )
    assert list(elsewhere.iterdir()) == []  # nothing was written through it
    assert not (pkg / "dist").exists()


@pytest.mark.slow
def test_a_rebuild_refuses_a_committed_build_symlink(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pkg, elsewhere = _linked_build_package(tmp_path)
    with monkeypatch.context() as m:
        # A release made before publish refused the link (or by another tool):
        # only the publish skips the check; the rebuild below runs the real one.
        m.setattr("wgtpm.publish._build.check_build_dir", lambda pkg: None)
        r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    shutil.rmtree(elsewhere / "xor")
    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    assert wgtpm("get", "example.com/acme/xor@v0.1.0", cwd=app).code == 0

    r = wgtpm("verify", "--rebuild", "example.com/acme/xor@v0.1.0", "--repo", str(pkg), cwd=app)
    assert r.code == 1 and r.out == ""
    commit = git(pkg, "rev-parse", "HEAD")
    assert r.err.strip().splitlines()[-1] == (
        f"wgtpm: example.com/acme/xor@v0.1.0: commit {commit[:12]}: build is committed as a "
        "symlink, which builders would write through; untrack it (git rm --cached build), "
        "ignore build/ in .gitignore, and commit"
    )
    assert list(elsewhere.iterdir()) == []  # nothing was written through it
