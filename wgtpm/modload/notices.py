"""What the build list tells the user: retracted versions, deprecated modules, and
``select`` lines that match no file.

Each takes the :class:`~wgtpm.modload.project.Project` and a build list and
reports through ``Options.reporter`` (warnings and notices, as ``go get``
prints them); none fails a command, and what needs a module's latest wgt.mod is best effort::

    wgtpm: warning: github.com/acme/b@v0.2.0: retracted by module author: trained on the wrong split
    wgtpm: module github.com/acme/old is deprecated: use github.com/acme/new
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .. import version as _v
from .._errors import FetchError
from ..module import ModuleVersion
from .buildlist import Fetched

if TYPE_CHECKING:
    from .project import Project

__all__ = ["warn_deprecated", "warn_empty_selects", "warn_retracted"]

MV = ModuleVersion
_T = TypeVar("_T")


def warn_retracted(project: Project, build: list[MV]) -> None:
    """Report each released version of the build list that its author retracted."""
    for m in build[1:]:
        if _v.is_valid(m.version) and not _v.is_pseudo(m.version):
            why = _latest_says(project, project.reqs.retraction, m)
            if why:
                project.opts.reporter.warning(f"{m}: retracted by module author: {why}")
                project.opts.reporter.notice(
                    "to switch to the latest unretracted version, run:\n"
                    f"\twgtpm get {m.path}@latest"
                )


def warn_deprecated(project: Project, build: list[MV], named: set[str]) -> None:
    """Report each module named, or required directly, whose latest wgt.mod deprecates it
    (as ``go get`` does: ``module M is deprecated: TEXT``)."""
    direct = project.direct() | named
    for m in build[1:]:
        if m.path in direct:
            why = _latest_says(project, project.reqs.deprecation, m.path)
            if why:
                project.opts.reporter.notice(f"module {m.path} is deprecated: {why}")


def _latest_says(project: Project, check: Callable[[_T], str | None], arg: _T) -> str | None:
    """``check(arg)``, which reads the wgt.mod of a module's latest version: best effort,
    as in Go. When that cannot be fetched (the registry is down, the version list does
    not come), one note says so and the command goes on without such checks: the
    versions it selected were fetched and verified already."""
    if project.latest_unchecked:
        return None
    try:
        return check(arg)
    except FetchError as exc:
        project.latest_unchecked = True
        project.opts.reporter.notice(f"note: retractions and deprecations not checked: {exc}")
        return None


def warn_empty_selects(project: Project, build: list[MV]) -> None:
    """Warn for each ``select`` line that selects no file of its module (a typo, most often)."""
    from ..modfetch import matches

    for m in build[1:]:
        patterns = project.select_patterns(m)
        origin = project.origin(m)
        if not patterns or not isinstance(origin, Fetched):
            continue
        names = [e.path for e in project.index(origin).files if e.path != "wgt.mod"]
        if not any(matches(patterns, n) for n in names):
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            project.opts.reporter.warning(
                f"select {m.path}={','.join(patterns)} matches no file of {m}; "
                f"its files: {shown or 'none'}"
            )
