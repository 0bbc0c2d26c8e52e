"""Containment: a file a package build reads must be a regular file inside the package.

A package is built, and published, from the files of one directory (for a
publish, the export of a commit). Everything a builder reads from it (an
``artifact`` source of wgt.mod, a WeightLang ``data x from "..."`` file, the
files a ``.pawspec`` names) must resolve, following every symlink, to a
regular file under that directory. Otherwise a committed link decides what a
build reads and a release ships: ``data/vocab.json -> /proc/self/environ``
would publish the environment of the machine that built it (its tokens), and
a link to a named pipe or a device would hang the build or never end.

:func:`escape_problem` says why a path may not be read (``None`` when it may);
the callers that report positions (a ``.wgt``, a ``.pawspec``) put it after the
file's name as written. :func:`resolve_inside` raises it as a
:class:`~wgtpm.BuildError` naming the file. For example, with ``pkg/data.csv``
a link to ``/proc/self/environ``::

    >>> escape_problem(pkg, pkg / "data.csv")  # doctest: +SKIP
    'is a symlink to /proc/self/environ, outside the package: commit the file itself, not a link out of the package'

A path that does not exist is not refused here: the caller's own read reports
it as it always did (a broken link that points outside is refused, though).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._errors import BuildError

__all__ = ["dir_escape_problem", "escape_problem", "resolve_inside"]

#: What a file that is not regular is, by its ``stat`` type, for the message.
_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def escape_problem(root: Path, path: Path) -> str | None:
    """Why ``path`` (a file under ``root``, as the package names it) may not be read, or None.

    The three answers: ``path`` leaves ``root`` through a symlink; it lies
    outside ``root`` without one (``../x.csv``, ``/etc/x``); or it is not a
    regular file (a named pipe, a device, a socket). A directory or a missing
    file is left to the caller.
    """
    top = Path(root).absolute()
    real_top = top.resolve()
    here = Path(path).absolute()  # not normalised: a ".." after a link is the link's parent
    try:
        real = here.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return "is a symlink that loops; commit the file itself"
    if not real.is_relative_to(real_top):
        link = _link_out(top, real_top, here)
        if link is None:
            return "lies outside the package: move it into the package"
        at, target = link
        what = "is a symlink" if at == here else f"lies under the symlink {at.relative_to(top)}"
        return (
            f"{what} to {target}, outside the package: commit the file itself, "
            "not a link out of the package"
        )
    try:
        mode = real.stat().st_mode
    except OSError:
        return None  # missing: the caller's read says so
    for test, what in _NOT_REGULAR:
        if test(mode):
            return f"is {what}, not a regular file: commit the file itself"
    return None


def dir_escape_problem(root: Path, directory: Path) -> tuple[Path, str] | None:
    """The first path under ``directory`` (itself included) that :func:`escape_problem`
    refuses, with why; None when every one may be read (or ``directory`` is missing).

    Subdirectories are walked as a reader would open them, through links
    (each real directory once, so a link cycle ends).
    """
    seen: set[Path] = set()
    todo = [directory]
    while todo:
        here = todo.pop()
        why = escape_problem(root, here)
        if why is not None:
            return here, why
        real = here.absolute().resolve()
        if real in seen or not real.is_dir():
            continue
        seen.add(real)
        todo.extend(sorted(here.iterdir(), reverse=True))
    return None


def resolve_inside(root: Path, path: Path, shown: str) -> Path:
    """``path``, resolved, once :func:`escape_problem` allows it; else a :class:`BuildError`
    saying ``{shown} {why}``, where ``shown`` names the file as the package wrote it."""
    why = escape_problem(root, path)
    if why is not None:
        raise BuildError(f"{shown} {why}")
    return Path(path).absolute().resolve()


def _link_out(top: Path, real_top: Path, path: Path) -> tuple[Path, str] | None:
    """The first symlink on the way from ``top`` to ``path`` that leaves the tree, and what it
    points to (as written in the link); None when ``path`` is outside without one."""
    try:
        parts = path.relative_to(top).parts
    except ValueError:
        return None
    at = top
    for part in parts:
        at = at / part
        if part == "..":
            if not at.resolve().is_relative_to(real_top):
                return None
            continue
        if at.is_symlink() and not at.resolve().is_relative_to(real_top):
            return at, os.readlink(at)
    return None
