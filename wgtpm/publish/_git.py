"""The git side of publishing: the commit being published, its tag, and a clean export of it.

Everything here goes through gitpython (imported when a function runs).
A package may sit in a subdirectory of its repository (its tag is then
``DIR/vX.Y.Z``: :func:`._target.tag_for`), and the export
holds the whole commit so that the package sees the same neighbours it
was committed with.

``wgtpm verify --rebuild`` comes here from the other side: a release names
its repository and commit (:attr:`Checkout.repository`), and
:func:`checkout_commit` finds that commit in a local clone, or fetches it
from a URL into a private bare repository, so that :func:`export_commit`
can export it as publishing did.
"""

from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import UsageError

__all__ = [
    "Checkout",
    "checkout_commit",
    "create_tag",
    "export_commit",
    "open_checkout",
    "public_url",
    "repository_url",
    "tag_commit",
]


@dataclass(frozen=True)
class Checkout:
    """The package's git repository at HEAD: the commit, its time, where the package lies in it."""

    repo_root: Path
    subdir: str  # the package's directory relative to the repository root, "" at the root
    commit: str  # 40 hex digits
    time: str  # the commit's committer time, UTC, RFC 3339 ("2026-11-29T12:00:00Z")
    epoch: int  # the same time in seconds since 1970 (SOURCE_DATE_EPOCH for the build)
    repository: str | None = None  # where the commit can be fetched: a remote's URL, if any


def _repo(pkg: Path) -> Any:
    import git

    try:
        return git.Repo(pkg, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise UsageError(
            f"{pkg} is not in a git repository; publishing builds from a commit: "
            "run 'git init' and commit the package"
        ) from exc


def open_checkout(pkg: Path, outputs: tuple[str, ...] = ()) -> Checkout:
    """The checkout of the package in ``pkg``; refuses a dirty tree or a repository without commits.

    Untracked files under ``outputs`` (directories of the package that wgtpm
    writes: ``build/``, ``dist/``) do not make the tree dirty.
    """
    repo = _repo(pkg)
    root = Path(repo.working_tree_dir).resolve()
    subdir = pkg.resolve().relative_to(root).as_posix()
    subdir = "" if subdir == "." else subdir
    if not repo.head.is_valid():
        raise UsageError(f"{root}: HEAD has no commit yet; commit the package, then publish")
    skip = tuple(f"{subdir}/{o}/" if subdir else f"{o}/" for o in outputs)
    dirty = [f for f in _dirty(repo, subdir) if not (f[0] == "?" and f[3:].startswith(skip))]
    if dirty:
        shown = ", ".join(f[3:] for f in dirty[:5]) + (
            f" and {len(dirty) - 5} more" if len(dirty) > 5 else ""
        )
        raise UsageError(
            f"the git working tree is not clean ({shown}); commit or stash the changes "
            "(publishing builds from HEAD, never from the working directory)"
        )
    return _at(root, subdir, repo.head.commit, _remote_url(repo))


def _at(root: Path, subdir: str, commit: Any, repository: str | None) -> Checkout:
    when = datetime.fromtimestamp(commit.committed_date, timezone.utc)
    return Checkout(
        root,
        subdir,
        commit.hexsha,
        when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        int(commit.committed_date),
        repository,
    )


def _remote_url(repo: Any) -> str | None:
    """The URL of ``origin`` (else of the only remote), as a release names it
    (:func:`repository_url`)."""
    remotes = {r.name: r for r in repo.remotes}
    remote = remotes.get("origin") or (next(iter(remotes.values())) if len(remotes) == 1 else None)
    if remote is None:
        return None
    urls = list(remote.urls)
    return repository_url(urls[0]) if urls else None


def public_url(url: str) -> str:
    """``url`` without credentials: ``https://user:TOKEN@host/x`` -> ``https://host/x``.

    A token in a remote's URL must never reach a release: over HTTP a user name
    alone may be one (``https://TOKEN@github.com/...``), so all user information
    goes; over ssh the user name stays (``ssh://git@host/...`` needs it) and only
    a password goes. scp-like addresses (``git@github.com:acme/xor.git``) and
    paths are kept as they are.
    """
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(url)
    if not u.scheme or "@" not in u.netloc:
        return url
    user, host = u.netloc.rsplit("@", 1)
    keep = "" if u.scheme in ("http", "https") else user.split(":", 1)[0] + "@"
    return urlunsplit((u.scheme, keep + host, u.path, u.query, u.fragment))


#: ``[user@]host:path``, git's scp-like ssh address (a host of one letter is a Windows drive).
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^@/:]{2,}):(?P<path>[^/].*)\Z")


def repository_url(url: str) -> str:
    """The one spelling of a repository's URL that a release records: the same repository
    gives the same bytes whichever form of its URL the remote has today.

    Credentials go (:func:`public_url`); the host is lower-cased; a trailing ``/`` and
    ``.git`` go (forges answer both forms); ssh on the default port becomes https, the
    address a rebuild fetches from without a key, as Go names a repository::

        git@github.com:acme/xor.git           -> https://github.com/acme/xor
        ssh://git@GitHub.com/acme/xor.git/    -> https://github.com/acme/xor
        https://TOKEN@github.com/acme/xor.git -> https://github.com/acme/xor
        ssh://git@host:2222/acme/xor.git      -> ssh://git@host:2222/acme/xor (no https to infer)
        http://mirror.local/xor.git           -> http://mirror.local/xor (http stays http)

    Paths and ``file://`` URLs are a clone on this machine: kept as they are.
    """
    from urllib.parse import urlsplit, urlunsplit

    scp = _SCP.match(url) if "://" not in url else None
    if scp is not None:
        url = f"ssh://{scp['host']}/{scp['path']}"
    u = urlsplit(public_url(url))
    scheme = u.scheme.lower()
    if scheme not in ("https", "http", "ssh", "git+ssh", "ssh+git", "git") or not u.hostname:
        return public_url(url)
    path = u.path.rstrip("/").removesuffix(".git").rstrip("/") or "/"
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname  # IPv6
    if scheme in ("ssh", "git+ssh", "ssh+git") and u.port in (None, 22):
        return urlunsplit(("https", host, path, "", ""))
    user = f"{u.username}@" if u.username else ""
    port = f":{u.port}" if u.port else ""
    return urlunsplit((scheme, f"{user}{host}{port}", path, u.query, u.fragment))


def _dirty(repo: Any, subdir: str) -> list[str]:
    """``git status --porcelain`` lines (``XY path``) of changed, staged and untracked
    (not ignored) files under ``subdir``."""
    args = ["--porcelain", "--untracked-files=all", "--", subdir or "."]
    out: str = repo.git.status(*args)
    return [line for line in out.splitlines() if line.strip()]


def tag_commit(pkg: Path, tag: str) -> str | None:
    """The commit the local tag ``tag`` points at, or ``None`` when there is no such tag."""
    repo = _repo(pkg)
    for t in repo.tags:
        if t.name == tag:
            return str(t.commit.hexsha)
    return None


def create_tag(pkg: Path, tag: str, commit: str, message: str) -> None:
    """Create the annotated tag ``tag`` at ``commit`` (kept when it already points there)."""
    if tag_commit(pkg, tag) == commit:
        return
    _repo(pkg).create_tag(tag, ref=commit, message=message)


def export_commit(checkout: Checkout, dest: Path) -> Path:
    """Write the files of the checkout's commit into the empty directory ``dest``
    (``git archive``, never the working directory); returns the package's directory in it."""
    import git

    repo = git.Repo(checkout.repo_root)
    buf = io.BytesIO()
    repo.archive(buf, treeish=checkout.commit, format="tar")
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        # "tar", not "data": a committed symlink may leave the tree (--verify-reproducible
        # then tells whether what it names is stable); paths still stay inside dest.
        tar.extractall(dest, filter="tar")
    return dest / checkout.subdir if checkout.subdir else dest


def checkout_commit(repository: str, commit: str, subdir: str, scratch: Path) -> Checkout:
    """``commit`` of ``repository`` (a local clone's directory, or a URL git can fetch), for
    :func:`export_commit`. A URL is fetched into a bare repository made in the empty
    directory ``scratch``. Raises :class:`UsageError` when the repository cannot be read or
    fetched, or does not hold ``commit``."""
    import git

    local = Path(repository).expanduser()
    shown = public_url(repository)
    is_path = "://" not in repository and not re.match(r"^[^/]+:", repository)  # not host:path
    if is_path and not local.is_dir():
        raise UsageError(
            f"{local}: no such directory; pass --repo a local clone of the package's "
            "repository, or its URL"
        )
    if is_path:
        try:
            repo = git.Repo(local)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise UsageError(
                f"{local} is not a git repository; pass --repo a clone of the package's "
                "repository (or its URL)"
            ) from exc
        root = Path(str(repo.git_dir if repo.bare else repo.working_tree_dir)).resolve()
    else:
        repo = git.Repo.init(scratch, bare=True)
        _fetch(repo, repository, commit, shown)
        root = scratch
    try:
        found = repo.commit(commit)
    except (ValueError, git.BadName, git.GitCommandError) as exc:
        raise UsageError(
            f"commit {commit} is not in {shown}: it was never pushed there, or history was "
            "rewritten; pass --repo a clone that holds it"
        ) from exc
    return _at(root, subdir, found, shown)


def _fetch(repo: Any, url: str, commit: str, shown: str) -> None:
    """Fetch ``commit`` from ``url``: the one commit when the server allows it (GitHub does),
    else every branch and tag (a server that refuses to hand out a commit by its name).

    A release names its repository without ``.git`` (:func:`repository_url`); a server
    that answers only to the name with it (a plain ``git http-backend``) is tried second.
    """
    import git

    urls = [url]
    if "://" in url and not url.startswith("file:") and not url.endswith(".git"):
        urls.append(url + ".git")
    failed: git.GitCommandError | None = None
    for u in urls:
        try:
            repo.git.fetch("--quiet", "--depth=1", u, commit)
            return
        except git.GitCommandError:
            pass
        try:
            repo.git.fetch("--quiet", "--tags", u, "+refs/heads/*:refs/remotes/source/*")
            return
        except git.GitCommandError as exc:
            failed = failed or exc  # the name the release gives is the one to report
    assert failed is not None
    said = [ln.strip() for ln in str(failed.stderr or "").splitlines() if ln.strip()]
    why = said[-1].removeprefix("stderr: ").strip("'") if said else f"git exit {failed.status}"
    why = re.sub(r"://[^/\s@]*@", "://", why)  # no user information from git's message
    raise UsageError(
        f"cannot fetch the source repository {shown} ({why}); check the URL, or pass "
        "--repo a local clone or a mirror"
    ) from failed
