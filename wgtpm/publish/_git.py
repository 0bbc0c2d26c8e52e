"""The git side of publishing: the commit being published, its tag, and a clean export of it.

The publisher's own repository is read through gitpython (imported when a
function runs); a release's commit is fetched and exported by ``git`` itself,
hardened (:func:`_git`). A package may sit in a subdirectory of its repository (its tag is then
``DIR/vX.Y.Z``: :func:`._target.tag_for`), and the export
holds the whole commit so that the package sees the same neighbours it
was committed with.

``wgtpm verify --rebuild`` comes here from the other side: a release names
its repository and commit (:attr:`Checkout.repository`), and
:func:`checkout_commit` fetches that commit from a URL, or from the local
clone that ``--repo`` names, into a private bare repository, so that
:func:`export_commit` can export it as publishing did. Both come from
whoever made the release, so before git sees them:

- the commit is 40 (or 64) lower-case hex digits
  (:func:`wgtpm.index.is_commit`), never ``--upload-pack=...``;
- the address is an ``https://``, ``http://``, ``ssh://`` or scp-like URL,
  or a path or ``file://`` URL that ``--repo`` names (:func:`fetch_source`),
  never ``ext::...`` nor anything that starts with ``-``;
- every git command puts ``--`` before its addresses and commits, runs with
  ``GIT_ALLOW_PROTOCOL`` (https, http, ssh; file only for ``--repo``), no
  hooks, no ``core.fsmonitor``, no submodules (:data:`_HARDENED`);
- git works only in the new bare repository, whose config is git's defaults
  and the user's own: a local clone's config (a smudge filter, a monitor
  program) and hooks never run.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ..index import is_commit

__all__ = [
    "REMOTE_SCHEMES",
    "Checkout",
    "GitFailed",
    "Source",
    "checkout_commit",
    "create_tag",
    "export_commit",
    "fetch_source",
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
    commit: str  # 40 (or 64) lower-case hex digits: index.is_commit
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
    head = repo.head.commit
    return _at(root, subdir, head.hexsha, int(head.committed_date), _remote_url(repo))


def _at(root: Path, subdir: str, commit: str, epoch: int, repository: str | None) -> Checkout:
    when = datetime.fromtimestamp(epoch, timezone.utc)
    return Checkout(root, subdir, commit, when.strftime("%Y-%m-%dT%H:%M:%SZ"), epoch, repository)


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
    repo = _repo(pkg)
    with repo.git.custom_environment(**_tagger_env(repo)):
        repo.git.tag("--annotate", f"--message={message}", "--", tag, commit)


#: The tagger of a release tag in a repository whose git has no identity (a CI clone):
#: the release is already published then, and a missing identity must not fail it.
TAGGER = ("wgtpm", "wgtpm@localhost")


def _tagger_env(repo: Any) -> dict[str, str]:
    """``GIT_COMMITTER_NAME``/``_EMAIL`` of :data:`TAGGER` when git knows no committer
    identity here (``git var GIT_COMMITTER_IDENT`` fails); else nothing: the user's own."""
    import git

    try:
        repo.git.var("GIT_COMMITTER_IDENT")
    except git.GitCommandError:
        return {"GIT_COMMITTER_NAME": TAGGER[0], "GIT_COMMITTER_EMAIL": TAGGER[1]}
    return {}


def export_commit(checkout: Checkout, dest: Path) -> Path:
    """Write the files of the checkout's commit into the empty directory ``dest``
    (``git archive``, never the working directory); returns the package's directory in it."""
    if not is_commit(checkout.commit):
        raise UsageError(f"{checkout.commit[:80]!r} is not a git commit; nothing was exported")
    out = _git(checkout.repo_root, "archive", "--format=tar", "--", checkout.commit)
    with tarfile.open(fileobj=io.BytesIO(out)) as tar:
        # "tar", not "data": a committed symlink may leave the tree (--verify-reproducible
        # then tells whether what it names is stable); paths still stay inside dest.
        tar.extractall(dest, filter="tar")
    return dest / checkout.subdir if checkout.subdir else dest


# ---- fetching a release's commit (wgtpm verify --rebuild) ---------------------------

#: The URL schemes a release's repository may name: git reaches them over the network
#: and runs nothing the URL names (``ext::``, ``fd::`` and other transport helpers do)
#: and reads nothing of this machine (``file://`` and paths: only ``--repo`` names one).
#: ``git+ssh`` and ``ssh+git`` are git's other spellings of ssh.
REMOTE_SCHEMES = ("https", "http", "ssh", "git+ssh", "ssh+git")
#: GIT_ALLOW_PROTOCOL of every git command here: it overrides every ``protocol.*.allow``
#: of any config, so no transport outside these runs whatever the user's config allows.
_PROTOCOLS = "https:http:ssh"
#: The same, for a repository on this machine that ``--repo`` names.
_PROTOCOLS_LOCAL = _PROTOCOLS + ":file"
#: Config that no repository's or user's config overrides: no hooks (a fetch runs the
#: reference-transaction hook), no file-system monitor program, no submodule fetched.
_HARDENED = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "fetch.recurseSubmodules=false",
)
#: Environment that would point git at another repository than the one named with -C.
_REPO_ENV = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    }
)
#: Commit times from 1970 to the end of year 9999 (what a build's SOURCE_DATE_EPOCH and
#: an RFC 3339 time can say).
MAX_EPOCH = 253402300800
#: ``scheme::address``: git hands such an address to the program git-remote-SCHEME.
_HELPER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")


@dataclass(frozen=True)
class Source:
    """Where a rebuild may fetch a commit from (:func:`fetch_source`)."""

    address: str  # what ``git fetch`` is given: a URL, or an absolute path
    local: bool  # a repository on this machine (only ever one that --repo names)


def fetch_source(repository: str, *, given: bool) -> Source:
    """``repository`` checked before git sees it, or :class:`UsageError`.

    A release's repository (``given`` false) must be an ``https://``, ``http://``
    or ``ssh://`` URL (:data:`REMOTE_SCHEMES`) or an scp-like ``[user@]host:path``;
    one that ``--repo`` names (``given``) may also be a path or a ``file://`` URL of
    a repository on this machine. Never a transport helper (``ext::sh -c ...``), never
    anything that starts with ``-`` (git would read it as an option), no host or user
    that starts with ``-`` (ssh would), no control character.
    """
    why = _address_problem(repository)
    try:
        kind = "" if why else _kind(repository)
    except ValueError:  # urlsplit: a bad IPv6 host, a bad port
        kind = "bad"
    if not why and kind == "local" and not given:
        why = "a path on this machine; a release may name only a URL"
    if not why and kind == "bad":
        why = f"not an {', '.join(s + '://' for s in REMOTE_SCHEMES[:3])} or git@host:path URL"
    if why:
        shown = _shown(repository)
        todo = (
            "give --repo a local clone, or an https://, http://, ssh:// or git@host:path URL"
            if given
            else "pass --repo a local clone (or the URL) of the repository that holds the commit"
        )
        raise UsageError(f"the source repository {shown!r} is {why}: refused; {todo}")
    if kind == "local" and "://" not in repository:
        return Source(str(Path(repository).expanduser().resolve()), True)
    return Source(repository, kind == "local")


def _shown(url: str) -> str:
    """``url`` as an error shows it: no credentials, at most 200 characters."""
    try:
        url = public_url(url)
    except ValueError:  # not a URL urlsplit reads: its user information cannot be told
        url = re.sub(r"^([^:/]*://)[^/@]*@", r"\1", url)
    return url if len(url) <= 200 else url[:197] + "..."


def _address_problem(url: str) -> str | None:
    """Why git must never be handed ``url``, whatever its kind."""
    if not url:
        return "empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return "an address with a control character"
    if url.startswith("-"):
        return "an address that starts with '-', which git would read as an option"
    if _HELPER.match(url):
        return "a git transport helper address (SCHEME::...), which runs a program"
    return None


def _kind(url: str) -> str:
    """``remote`` (a URL or scp-like address git fetches over the network), ``local``
    (a path, or a ``file://`` URL) or ``bad`` (anything else: another scheme, a host
    or user starting with ``-``)."""
    from urllib.parse import urlsplit

    if "://" in url:
        u = urlsplit(url)
        scheme = u.scheme.lower()
        if scheme == "file":
            return "local"
        if scheme not in REMOTE_SCHEMES or not u.hostname:
            return "bad"
        return "bad" if u.netloc.startswith("-") or u.hostname.startswith("-") else "remote"
    colon, slash = url.find(":"), url.find("/")
    if colon > 1 and (slash < 0 or colon < slash):  # git's scp-like rule (1: a drive letter)
        userhost = url[:colon]
        host = userhost.rsplit("@", 1)[-1]
        path = url[colon + 1 :]
        if not host or not path or userhost.startswith("-") or host.startswith("-"):
            return "bad"
        return "remote"
    return "local"


class GitFailed(UsageError):
    """A git command that exited non-zero; the message is git's last line of stderr."""


def _git(where: Path, *args: str, local: bool = False) -> bytes:
    """Run ``git -C where ARGS`` hardened (:data:`_HARDENED`, :data:`_PROTOCOLS`); its
    stdout, or :class:`GitFailed` with git's last line of stderr."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    env["GIT_ALLOW_PROTOCOL"] = _PROTOCOLS_LOCAL if local else _PROTOCOLS
    cmd = ["git", *_HARDENED, "-C", str(where), *args]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise UsageError(
            f"cannot run git ({exc}); install git to fetch a release's commit"
        ) from exc
    if done.returncode != 0:
        said = [ln.strip() for ln in done.stderr.decode(errors="replace").splitlines()]
        said = [ln for ln in said if ln]
        why = said[-1] if said else f"git exit {done.returncode}"
        raise GitFailed(re.sub(r"://[^/\s@]*@", "://", why))  # no user information
    return done.stdout


def checkout_commit(
    repository: str, commit: str, subdir: str, scratch: Path, *, given: bool = False
) -> Checkout:
    """``commit`` of ``repository``, for :func:`export_commit`, fetched into a bare
    repository made in the empty directory ``scratch``.

    ``repository`` is checked by :func:`fetch_source` (``given``: --repo names it, so
    a path on this machine may do), ``commit`` by :func:`~wgtpm.index.is_commit`. A
    local clone is fetched from too, never worked in: its config (a smudge filter that
    ``git archive`` would run, ``core.fsmonitor``) and hooks stay out of the rebuild.
    Raises :class:`UsageError` when the repository cannot be read or fetched, or does
    not hold ``commit``."""
    if not is_commit(commit):
        raise UsageError(
            f"{commit[:80]!r} is not a git commit (40 or 64 lower-case hex digits); "
            "refusing to hand it to git"
        )
    source = fetch_source(repository, given=given)
    shown = public_url(repository)
    if source.local and "://" not in repository:
        local = Path(source.address)
        if not local.is_dir():
            raise UsageError(
                f"{repository}: no such directory; pass --repo a local clone of the package's "
                "repository, or its URL"
            )
        if not ((local / ".git").exists() or (local / "objects").is_dir()):
            raise UsageError(
                f"{repository} is not a git repository; pass --repo a clone of the package's "
                "repository (or its URL)"
            )
    _git(scratch, "init", "--bare", "--quiet", "--template=", "--", str(scratch))
    _fetch(scratch, source, commit, shown)
    try:
        raw = _git(scratch, "cat-file", "commit", "--", commit)
    except GitFailed as exc:
        raise UsageError(
            f"commit {commit} is not in {shown}: it was never pushed there, or history was "
            "rewritten; pass --repo a clone that holds it"
        ) from exc
    epoch = _committer_time(raw)
    return _at(scratch, subdir, commit, epoch, shown)


def _committer_time(raw: bytes) -> int:
    """The committer time (seconds since 1970) of a commit object's bytes
    (``committer NAME <EMAIL> 1764417600 +0000``)."""
    for line in raw.split(b"\n"):
        if not line:
            break  # the end of the headers
        if line.startswith(b"committer "):
            when = line.rsplit(b" ", 2)[-2]
            if when.isdigit() and int(when) < MAX_EPOCH:
                return int(when)
            break
    raise UsageError(
        "the commit has no committer time wgtpm can read; the repository is damaged or hostile"
    )


def _fetch(scratch: Path, source: Source, commit: str, shown: str) -> None:
    """Fetch ``commit`` from ``source`` into ``scratch``: the one commit when the server
    allows it (GitHub does; a local clone does), else every branch and tag (a server that
    refuses to hand out a commit by its name). Every address goes after ``--``.

    A release names its repository without ``.git`` (:func:`repository_url`); a server
    that answers only to the name with it (a plain ``git http-backend``) is tried second.
    """
    url = source.address
    urls = [url]
    if not source.local and "://" in url and not url.endswith(".git"):
        urls.append(url + ".git")
    failed: GitFailed | None = None
    for u in urls:
        one = ("--depth=1", "--", u, commit)
        every = ("--tags", "--", u, "+refs/heads/*:refs/remotes/source/*")
        try:
            _git(scratch, "fetch", "--quiet", "--no-recurse-submodules", *one, local=source.local)
            return
        except GitFailed:
            pass
        try:
            _git(scratch, "fetch", "--quiet", "--no-recurse-submodules", *every, local=source.local)
            return
        except GitFailed as exc:
            failed = failed or exc  # the name the release gives is the one to report
    assert failed is not None
    raise UsageError(
        f"cannot fetch the source repository {shown} ({failed}); check the URL, or pass "
        "--repo a local clone or a mirror"
    ) from failed
