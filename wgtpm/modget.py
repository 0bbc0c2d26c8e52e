"""``wgtpm get`` and ``wgtpm tidy``: change the requirements, keep the bytes locked.

``get MODULE@QUERY...`` resolves each query (:mod:`wgtpm.query`), lowers
what must go down with MVS's downgrade (``@none`` removes), raises what must
go up with MVS's upgrade, writes the minimal requirement list that yields the
new build list, downloads and verifies every module of it, and records new
hashes in wgt.sum. With no arguments it downloads and verifies the build list
as it stands. ``tidy`` rewrites the requirements minimally and prunes wgt.sum
to exactly the lines the build needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import module as _module
from . import mvs
from . import version as _v
from ._errors import ResolveError, UsageError
from .modload.buildlist import Fetched
from .modload.project import Project, plain_readonly_errors
from .module import ModuleVersion
from .query import check_query, is_revision

__all__ = ["Change", "get", "parse_arg", "tidy"]

MV = ModuleVersion


@dataclass(frozen=True)
class Change:
    """One line of what ``get`` did: added, upgraded, downgraded or removed."""

    path: str
    old: str | None
    new: str | None

    def __str__(self) -> str:
        if self.old is None:
            return f"added {self.path} {self.new}"
        if self.new is None:
            return f"removed {self.path} {self.old}"
        verb = "upgraded" if _v.compare(self.new, self.old) > 0 else "downgraded"
        return f"{verb} {self.path} {self.old} => {self.new}"


SHOWN_ARG = 80  # characters of a malformed argument shown in its error


def parse_arg(arg: str) -> tuple[str, str]:
    """``path[@query]`` -> (normalised path, query or "").

    The query is checked before anything is asked of a source
    (:func:`wgtpm.query.check_query`): a branch or commit name goes into URLs
    and cache paths. A version without its ``v`` is refused with the fix:
    ``m@0.1.0`` -> ``did you mean m@v0.1.0?``.
    """
    path, at, query = arg.partition("@")
    path = _module.normalise(path)
    _module.check_path(path)
    shown = arg if len(arg) <= SHOWN_ARG else arg[:SHOWN_ARG] + "..."
    if "@" in query:
        raise UsageError(f"{shown}: more than one '@'")
    if not at:
        return path, ""
    m = _MISSING_V.match(query)
    if m is not None:
        op = m.group(1) or ""
        fixed = op + "v" + query[len(op) :]
        if not is_revision(fixed):
            raise UsageError(f"{shown}: a version starts with 'v'; did you mean {path}@{fixed}?")
    why = check_query(query)
    if why is not None:
        raise UsageError(f"{shown}: {why}")
    return path, query


# "1.2.3", "1.2", "<1.2": a version or a bound without its v (a digits-only word may be a commit)
_MISSING_V = re.compile(r"(<=|<|>=|>)?\d+\.\d+(\.\d+\S*)?\Z")


def get(project: Project, args: list[str], save: bool = True) -> tuple[list[MV], list[Change]]:
    """Run ``wgtpm get ARGS``; returns the new build list and what changed.

    With ``save=False`` the new wgt.mod and wgt.sum stay in memory: the caller
    saves them (``project.save()``) once the rest of its work succeeded.
    """
    current = project.build_list()
    if not args:
        project.download_all(current)
        if save:
            project.save()
        return current, []
    before = {m.path: m.version for m in current[1:]}
    targets: list[MV] = []
    for arg in args:
        path, query = parse_arg(arg)
        if path == project.path:
            raise UsageError(f"{arg}: cannot get the main module itself")
        if query == "none":
            targets.append(MV(path, "none"))
            continue
        v = project.reqs.resolve_query(path, query or "upgrade", before.get(path))
        _module.check_path_major(path, v)
        targets.append(MV(path, v))

    downs = [
        t
        for t in targets
        if t.version == "none" or (t.path in before and _v.compare(t.version, before[t.path]) < 0)
    ]
    ups = [t for t in targets if t not in downs]
    build = current
    with plain_readonly_errors():
        if downs:
            build = mvs.downgrade(project.main, project.reqs, *downs)
        if ups:
            build = mvs.upgrade(
                project.main, mvs.Override(project.main, build[1:], project.reqs), *ups
            )
    chosen = {m.path: m.version for m in build[1:]}
    for t in targets:
        got = chosen.get(t.path)
        if t.version == "none":
            if got is not None:
                raise ResolveError(f"cannot remove {t.path}: it is still required at {got}")
        elif got != t.version:
            raise ResolveError(
                f"{t} was asked for, but other requirements select {t.path}@{got}; "
                f"see 'wgtpm why {t.path}' and ask for a compatible version"
            )
    direct = (project.direct() | {t.path for t in ups}) - {
        t.path for t in downs if t.version == "none"
    }
    project.set_requirements(build, direct)
    # Walk the final graph afresh, so that wgt.sum keeps only the lines it uses
    # (and those it had): the queries and the downgrade tried other versions.
    project.forget_graph()
    build = project.download_all()
    project.drop_unused_new_sums()
    project.warn_retracted(build)
    if save:
        project.save()
    return build, _changes(before, chosen)


def _changes(before: dict[str, str], after: dict[str, str]) -> list[Change]:
    out = []
    for p in sorted(set(before) | set(after)):
        if before.get(p) != after.get(p):
            out.append(Change(p, before.get(p), after.get(p)))
    return out


def tidy(project: Project) -> list[MV]:
    """Minimal requirements, and wgt.sum pruned to exactly what the build needs."""
    build = project.build_list()
    project.set_requirements(build, project.direct())
    project.forget_graph()
    build = project.build_list()
    for m in build[1:]:
        origin = project.origin(m)
        if isinstance(origin, Fetched):
            project.index(origin)  # marks its wgt.sum lines as used
    project.prune_sums()
    project.save()
    return build
