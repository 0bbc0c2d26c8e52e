"""``wgtpm verify --rebuild`` against a hostile release or clone: git never runs a program.

A release names the commit and the repository a rebuild fetches; both come
from whoever made it. Each test uses a real git repository and would create
a ``pwned`` file if git ran what the release or clone names:

- a commit that reads as an option (``--upload-pack=touch pwned;:``) is
  refused where it is read: the index (``wgtpm get``, the registry's publish
  API), the provenance, and :func:`checkout_commit` itself;
- an address that runs a program or reads this machine (``ext::``, ``fd::``,
  a leading ``-``, an ssh host that starts with ``-``, ``file://`` or a path
  that a release names) is refused, and git's own transports stay limited
  even where the user's config allows ``ext``;
- a local clone (``--repo``) whose config names a smudge filter, a
  file-system monitor and hooks is fetched from, never worked in: none runs,
  and the rebuild still reproduces the release;
- hooks that ``git init`` would copy from the user's template directory
  never run in the rebuild's private repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import httpx
import pytest

from tests.publish.conftest import dumb_http, git, make_package
from tests.registry.conftest import Live
from tests.registry.helpers import modtext
from wgtpm._errors import UsageError, VerifyError
from wgtpm.index import IndexEntry, ReleaseIndex, build_index, is_commit, parse
from wgtpm.publish import PROVENANCE_FILE, check_provenance
from wgtpm.publish._git import GitFailed, _git, checkout_commit, fetch_source

M, V = "example.com/acme/notes", "v0.1.0"
HOSTILE = "--upload-pack=touch {pwned};:"


def _pwned(tmp_path: Path) -> list[Path]:
    """Every file a hostile command of these tests could have made."""
    return sorted(tmp_path.rglob("pwned*"))


def _notes(tmp_path: Path) -> Path:
    """A package of one file artifact in a git repository, with a bare clone beside it."""
    pkg = make_package(
        tmp_path / "notes", M, {"@artifacts": "notes notes.txt", "notes.txt": "hello\n"}
    )
    git(tmp_path, "clone", "-q", "--bare", str(pkg), str(tmp_path / "remote.git"))
    return pkg


# ---- the commit ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("commit", "ok"),
    [
        ("c" * 40, True),
        ("0123456789abcdef" * 4, True),  # SHA-256 repository
        ("--upload-pack=touch pwned;:", False),
        ("C" * 40, False),
        ("c" * 39, False),
        ("c" * 41, False),
        ("c" * 40 + "\n", False),
        ("HEAD", False),
        (None, False),
        (40, False),
    ],
)
def test_is_commit(commit: object, ok: bool) -> None:
    assert is_commit(commit) is ok


def _index_doc(commit: object) -> bytes:
    entry = IndexEntry("wgt.mod", 4, "a" * 64)
    doc = json.loads(ReleaseIndex(M, V, [entry]).to_json())
    return json.dumps(doc | {"commit": commit}).encode()


@pytest.mark.parametrize(
    ("commit", "shown"),
    [
        ("--upload-pack=touch pwned;:", "'--upload-pack=touch pwned;:'"),
        ("HEAD", "'HEAD'"),
        ("C" * 40, repr("C" * 40)),
        ("c" * 40 + " ", repr("c" * 40 + " ")),
        ("-" * 100, repr("-" * 77 + "...")),
        (7, "int"),
        (["c" * 40], "list"),
    ],
)
def test_an_index_whose_commit_is_not_hex_is_refused(commit: object, shown: str) -> None:
    with pytest.raises(VerifyError) as got:
        parse(_index_doc(commit), M, V)
    assert str(got.value) == (
        f"{M}@{V}: bad wgt.index.json: commit {shown} is not a git commit (40 or 64 "
        "lower-case hex digits); the release is damaged or hostile: do not use it, and tell "
        "its publisher"
    )


@pytest.mark.parametrize(
    ("commit", "want"),
    [
        ("c" * 40, "c" * 40),
        ("d" * 64, "d" * 64),
        ("0123456789abcdef", "0123456789abcdef"),
        (None, None),
    ],
)
def test_an_index_keeps_a_commit_or_a_program_id(commit: object, want: str | None) -> None:
    # A PAW program's synthesised index names its program ID (16 to 64 hex) as the commit.
    assert parse(_index_doc(commit), M, V).commit == want


def test_a_provenance_whose_commit_is_not_a_git_commit_is_refused(tmp_path: Path) -> None:
    # The index may hold a PAW program ID; a provenance (a wgtpm publish) holds a git commit.
    pid = "0123456789abcdef0123"
    prov = {"schema": 1, "module": M, "version": V, "commit": pid, "files": {}}
    data = json.dumps(prov).encode()
    entry = IndexEntry(PROVENANCE_FILE, len(data), hashlib.sha256(data).hexdigest())
    idx = build_index(M, V, [entry], commit=pid, build=prov)
    with pytest.raises(VerifyError) as got:
        check_provenance(idx, data)
    assert str(got.value) == (
        f"{M}@{V}: {PROVENANCE_FILE} names the commit '{pid}', which is not a git commit (40 or "
        "64 lower-case hex digits); the release is damaged or hostile: do not use it, and tell "
        "its publisher"
    )


def test_checkout_commit_never_hands_git_an_option(tmp_path: Path) -> None:
    _notes(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    hostile = HOSTILE.format(pwned=tmp_path / "pwned")
    with pytest.raises(UsageError) as got:
        checkout_commit((tmp_path / "remote.git").as_uri(), hostile, "", scratch)
    assert _pwned(tmp_path) == []
    assert "is not a git commit (40 or 64 lower-case hex digits)" in str(got.value)


@pytest.mark.slow
def test_a_release_whose_commit_is_an_option_is_refused(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release rewritten so that its index and provenance name a hostile commit (a file://
    origin, which an older wgtpm fetched from, running --upload-pack)."""
    pkg = _notes(tmp_path)
    git(pkg, "remote", "add", "origin", (tmp_path / "remote.git").as_uri())
    assert wgtpm("publish", "--version", V, "--dry-run", cwd=pkg).code == 0
    vdir = pkg / "dist" / M / "@v"
    hostile = HOSTILE.format(pwned=tmp_path / "pwned")
    prov_file = vdir / V / PROVENANCE_FILE
    prov = json.loads(prov_file.read_text())
    prov["commit"] = hostile
    prov_file.write_text(json.dumps(prov))
    index_file = vdir / f"{V}.index.json"
    index = json.loads(index_file.read_text())
    index["commit"], index["build"] = hostile, prov
    for e in index["files"]:
        if e["path"] == PROVENANCE_FILE:
            e["sha256"] = hashlib.sha256(prov_file.read_bytes()).hexdigest()
            e["size"] = prov_file.stat().st_size
    index_file.write_text(json.dumps(index))

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    got = wgtpm("get", f"{M}@{V}", cwd=app)
    rebuilt = wgtpm("verify", "--rebuild", f"{M}@{V}", cwd=app)
    assert _pwned(tmp_path) == []
    assert got.code == 1 and "Traceback" not in got.err, got.err
    assert got.err.strip().splitlines()[-1] == (
        f"wgtpm: {M}@{V}: bad wgt.index.json: commit {hostile[:77] + '...'!r} is not a git "
        "commit (40 or 64 lower-case hex digits); the release is damaged or hostile: do not use "
        "it, and tell its publisher"
    )
    assert rebuilt.code == 1  # not in the build list: the get did not add it


def test_the_publish_api_refuses_a_commit_that_is_not_hex(live: Live) -> None:
    files = {"wgt.mod": modtext(M)}
    entries = [IndexEntry(p, len(b), hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    doc = json.loads(ReleaseIndex(M, V, entries).to_json())
    doc["commit"] = "--upload-pack=touch pwned;:"
    body = {"module": M, "version": V, "index": json.dumps(doc)}
    auth = {"Authorization": f"Bearer {live.token}"}
    r = httpx.post(f"{live.url}/api/v1/uploads", json=body, headers=auth)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert "commit '--upload-pack=touch pwned;:' is not a git commit" in error
    assert "\n" not in error


# ---- the address ---------------------------------------------------------------------


def _allow_every_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user config that lets git run any transport, ``ext::`` (a shell command) too."""
    config = tmp_path / "gitconfig"
    config.write_text('[protocol]\n\tallow = always\n[protocol "ext"]\n\tallow = always\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("ext::sh -c touch% {pwned}", "a git transport helper address"),
        ("fd::3", "a git transport helper address"),
        ("--upload-pack=touch {pwned};:", "starts with '-'"),
        ("-oProxyCommand=touch {pwned}:x", "starts with '-'"),
        ("ssh://-oProxyCommand=touch%20{pwned}/x", "not an https://, http://, ssh://"),
        ("git@-oProxyCommand=touch:x", "not an https://, http://, ssh://"),
        ("https://example.com/x\nfoo", "a control character"),
        ("git://example.com/x", "not an https://, http://, ssh://"),
        ("http://[::1/x", "not an https://, http://, ssh://"),
        ("{remote_uri}", "a path on this machine"),
        ("{remote}", "a path on this machine"),
        ("", "empty"),
    ],
)
def test_a_release_may_name_only_a_network_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str, why: str
) -> None:
    _notes(tmp_path)
    _allow_every_protocol(tmp_path, monkeypatch)  # what wgtpm refuses, git would run
    remote = tmp_path / "remote.git"
    url = address.format(pwned=tmp_path / "pwned", remote=remote, remote_uri=remote.as_uri())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    commit = git(remote, "rev-parse", "HEAD")
    with pytest.raises(UsageError) as got:
        checkout_commit(url, commit, "", scratch)
    assert _pwned(tmp_path) == []
    (line,) = str(got.value).splitlines() or [""]
    assert why in line and line.endswith(
        "refused; pass --repo a local clone (or the URL) of the repository that holds the commit"
    ), line
    assert list(scratch.iterdir()) == []  # refused before git ran


@pytest.mark.parametrize(
    "address",
    ["https://github.com/acme/x", "http://127.0.0.1:8/x", "ssh://git@host:2222/x", "git@host:x"],
)
def test_network_urls_are_fetched_from(address: str) -> None:
    assert fetch_source(address, given=False).address == address


def test_repo_may_name_a_local_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _notes(tmp_path)
    commit = git(pkg, "rev-parse", "HEAD")
    # A clone in a directory whose name reads as an option: given as a path (./ first: a
    # --repo that starts with - is refused), git sees it absolute, after --.
    odd = tmp_path / "--upload-pack=touch pwned;:"
    shutil.copytree(tmp_path / "remote.git", odd)
    monkeypatch.chdir(tmp_path)
    for i, repo in enumerate([str(pkg), (tmp_path / "remote.git").as_uri(), f"./{odd.name}"]):
        scratch = tmp_path / f"scratch{i}"
        scratch.mkdir()
        got = checkout_commit(repo, commit, "", scratch, given=True)
        assert (got.commit, got.repo_root) == (commit, scratch)
    assert _pwned(tmp_path) == []


def test_git_itself_refuses_other_transports_whatever_the_user_config_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second line of defence, under :func:`fetch_source`: GIT_ALLOW_PROTOCOL."""
    pkg = _notes(tmp_path)
    _allow_every_protocol(tmp_path, monkeypatch)
    scratch = tmp_path / "scratch"
    _git(tmp_path, "init", "--bare", "--quiet", "--", str(scratch))
    helper = f"ext::sh -c touch% {tmp_path / 'pwned'}"
    for url, local in [(helper, False), (helper, True), (str(pkg), False)]:
        with pytest.raises(GitFailed) as got:
            _git(scratch, "fetch", "--", url, "HEAD", local=local)
        assert "not allowed" in str(got.value)
    assert _pwned(tmp_path) == []


# ---- what runs in the repositories -----------------------------------------------------


def _arm(git_dir: Path, pwned: Path) -> None:
    """Hooks for everything a fetch, a checkout or an archive might run, each making a file."""
    hooks = git_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in (
        "post-checkout",
        "reference-transaction",
        "pre-auto-gc",
        "post-merge",
        "post-index-change",
        "fsmonitor-watchman",
    ):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {pwned}-hook-{name}\n")
        hook.chmod(0o755)


@pytest.mark.slow
def test_a_hostile_clone_runs_nothing_during_a_rebuild(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commit's .gitattributes names a filter; the clone's config defines it (and a
    file-system monitor, and hooks). Before, ``git archive`` ran in the clone: its smudge
    filter ran on every file."""
    pkg = make_package(
        tmp_path / "notes",
        M,
        {
            "@artifacts": "notes notes.txt",
            "notes.txt": "hello\n",
            ".gitattributes": "* filter=evil\n",
        },
    )
    assert wgtpm("publish", "--version", V, "--dry-run", cwd=pkg).code == 0
    clone = tmp_path / "clone"
    shutil.copytree(pkg, clone)
    pwned = tmp_path / "pwned"
    git(clone, "config", "filter.evil.smudge", f"touch {pwned}-smudge; cat")
    git(clone, "config", "filter.evil.clean", "cat")
    git(clone, "config", "core.fsmonitor", f"touch {pwned}-fsmonitor; false")
    git(clone, "config", "core.hooksPath", str(clone / ".git/hooks"))
    _arm(clone / ".git", pwned)
    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    assert wgtpm("get", f"{M}@{V}", cwd=app).code == 0

    r = wgtpm("verify", "--rebuild", f"{M}@{V}", "--repo", str(clone), cwd=app)
    assert (r.code, r.out) == (0, "notes: reproduced\n"), r.err
    assert _pwned(tmp_path) == []


@pytest.mark.slow
def test_template_hooks_never_run_in_the_rebuild_repository(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``git init`` copies hooks from init.templateDir; the fetch of every branch (what a
    server that refuses a commit by name gets) would run reference-transaction."""
    pkg = _notes(tmp_path)
    template = tmp_path / "template"
    template.mkdir()
    pwned = tmp_path / "pwned"
    _arm(template, pwned)
    config = tmp_path / "gitconfig"
    config.write_text(f"[init]\n\ttemplateDir = {template}\n")
    # A dumb-protocol server cannot hand out one commit: every branch is fetched.
    srv = tmp_path / "srv"
    git(tmp_path, "clone", "-q", "--bare", str(pkg), str(srv / "notes.git"))
    git(srv / "notes.git", "update-server-info")
    with dumb_http(srv) as base:
        git(pkg, "remote", "add", "origin", f"{base}/notes.git")
        assert wgtpm("publish", "--version", V, "--dry-run", cwd=pkg).code == 0
        app = tmp_path / "app"
        app.mkdir()
        monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
        assert wgtpm("init", "example.com/app", cwd=app).code == 0
        assert wgtpm("get", f"{M}@{V}", cwd=app).code == 0
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
        r = wgtpm("verify", "--rebuild", f"{M}@{V}", cwd=app)
    assert (r.code, r.out) == (0, "notes: reproduced\n"), r.err
    assert _pwned(tmp_path) == []


@pytest.mark.slow
def test_a_release_that_names_a_path_is_rebuilt_only_from_repo(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pkg = _notes(tmp_path)
    url = (tmp_path / "remote.git").as_uri()
    git(pkg, "remote", "add", "origin", url)
    assert wgtpm("publish", "--version", V, "--dry-run", cwd=pkg).code == 0
    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    assert wgtpm("get", f"{M}@{V}", cwd=app).code == 0

    r = wgtpm("verify", "--rebuild", f"{M}@{V}", cwd=app)
    assert (r.code, r.out) == (1, "")
    assert r.err.strip() == (
        f"wgtpm: {M}@{V}: the source repository {url!r} is a path on this machine; a release "
        "may name only a URL: refused; pass --repo a local clone (or the URL) of the "
        "repository that holds the commit"
    )
    r = wgtpm("verify", "--rebuild", f"{M}@{V}", "--repo", url, cwd=app)
    assert (r.code, r.out) == (0, "notes: reproduced\n"), r.err
