"""The git side of publishing: the commit being published, its tag, and a clean export of it.

Everything here goes through gitpython (imported when a function runs).
A package may sit in a subdirectory of its repository (its tag is then
``DIR/vX.Y.Z``: :func:`._target.tag_for`), and the export
holds the whole commit so that the package sees the same neighbours it
was committed with.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import UsageError

__all__ = ["Checkout", "create_tag", "export_commit", "open_checkout", "tag_commit"]


@dataclass(frozen=True)
class Checkout:
    """The package's git repository at HEAD: the commit, its time, where the package lies in it."""

    repo_root: Path
    subdir: str  # the package's directory relative to the repository root, "" at the root
    commit: str  # 40 hex digits
    time: str  # the commit's committer time, UTC, RFC 3339 ("2026-11-29T12:00:00Z")
    epoch: int  # the same time in seconds since 1970 (SOURCE_DATE_EPOCH for the build)


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
    when = datetime.fromtimestamp(head.committed_date, timezone.utc)
    return Checkout(
        root, subdir, head.hexsha, when.strftime("%Y-%m-%dT%H:%M:%SZ"), int(head.committed_date)
    )


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
