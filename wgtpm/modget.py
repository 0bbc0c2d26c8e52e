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

import itertools
import re
from dataclasses import dataclass

from . import module as _module
from . import mvs
from . import version as _v
from ._errors import NotFoundError, ResolveError, UsageError
from .modload.buildlist import Fetched
from .modload.notices import warn_deprecated, warn_empty_selects, warn_retracted
from .modload.project import Project, plain_readonly_errors
from .module import ModuleVersion
from .query import WORDS, check_query, is_revision, meant

__all__ = [
    "Change",
    "check_module_arg",
    "get",
    "parse_arg",
    "path_hint",
    "tidy",
    "tidy_in_memory",
]

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
    shown = arg if len(arg) <= SHOWN_ARG else arg[:SHOWN_ARG] + "..."
    fix = path_hint(arg)
    if fix is not None:
        raise UsageError(f"{shown}: not a module path; did you mean {fix}?")
    path, at, query = arg.partition("@")
    path = check_module_arg(path)
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


def check_module_arg(arg: str) -> str:
    """The normalised module path ``arg`` names; a URL or ``OWNER/REPO`` gets "did you mean"."""
    fix = path_hint(arg)
    if fix is not None:
        raise UsageError(f"{arg}: not a module path; did you mean {fix}?")
    path = _module.normalise(arg)
    _module.check_path(path)
    return path


# A web address of a repository -> its module path host.
_URL_HOSTS = {
    "huggingface.co": "hf.co",
    "www.huggingface.co": "hf.co",
    "hf.co": "hf.co",
    "github.com": "github.com",
    "www.github.com": "github.com",
}


def path_hint(arg: str) -> str | None:
    """The module path (with ``@query``) a person meant by ``arg``, or ``None`` if it is one.

    ``https://huggingface.co/acme/repo`` -> ``hf.co/acme/repo``;
    ``https://github.com/o/r.git`` -> ``github.com/o/r``;
    ``https://github.com/o/r/releases/tag/v0.1.0`` -> ``github.com/o/r@v0.1.0``;
    ``https://huggingface.co/acme/repo/tree/main`` -> ``hf.co/acme/repo@main``;
    ``acme/repo`` (a Hugging Face repo id) -> ``hf.co/acme/repo``.
    """
    text, at, query = arg.strip().partition("@")
    scheme, sep, rest = text.partition("://")
    if sep:
        if scheme.lower() not in ("http", "https"):
            return None
        text = rest
    elems = [e for e in text.split("/") if e]
    if not elems:
        return None
    host = _URL_HOSTS.get(elems[0].lower()) if sep else None  # a path without scheme is a path
    if host is not None and len(elems) >= 3:
        owner, repo, tail = elems[1], elems[2].removesuffix(".git"), elems[3:]
        if not at and len(tail) >= 2 and tail[0] == "tree":
            query, at = tail[1], "@"
        elif not at and len(tail) >= 3 and tail[:2] == ["releases", "tag"]:
            query, at = tail[2], "@"
        fixed = f"{host}/{owner}/{repo}"
        return None if fixed + at + query == arg else fixed + at + query
    if sep:
        return None
    if len(elems) == 2 and "." not in elems[0] and elems[0] not in ("hf.co", "github.com"):
        return f"hf.co/{elems[0]}/{elems[1]}{at}{query}"
    return None


# "1.2.3", "1.2", "<1.2": a version or a bound without its v (a digits-only word may be a commit)
_MISSING_V = re.compile(r"(<=|<|>=|>)?\d+\.\d+(\.\d+\S*)?\Z")


def get(
    project: Project, args: list[str], save: bool = True, update: str = ""
) -> tuple[list[MV], list[Change]]:
    """Run ``wgtpm get ARGS``; returns the new build list and what changed.

    ``update`` is ``go get -u``'s: ``"latest"`` (``-u``) or ``"patch"`` (``-u=patch``)
    also upgrades the dependencies of the modules named, of the whole build list when
    none is named, to their latest (patch) release; the modules it only upgrades do
    not become direct requirements.

    With ``save=False`` the new wgt.mod and wgt.sum stay in memory: the caller
    saves them (``project.save()``) once the rest of its work succeeded.
    """
    _check_separate_versions(args)
    current = project.build_list()
    given = len(args)  # the modules asked for by name; -u's come after them
    if update:
        args = args + _update_args(project, current, args, update)
    if not args:
        project.download_all(current)
        warn_empty_selects(project, current)
        if save:
            project.save()
        return current, []
    before = {m.path: m.version for m in current[1:]}
    targets: list[MV] = []
    named: set[str] = set()  # the modules asked for by name (not by -u): direct from now on
    for i, arg in enumerate(args):
        path, query = parse_arg(arg)
        if i < given:
            named.add(path)
        if path == project.path:
            raise UsageError(f"{arg}: cannot get the main module itself")
        if query == "none":
            targets.append(MV(path, "none"))
            continue
        try:
            v = project.reqs.resolve_query(path, query or "upgrade", before.get(path))
            if before.get(path) != v:
                # Asked for here, not required by anyone: a missing version is this
                # argument's error, not a requirement chain from the main module.
                project.reqs.required(MV(path, v))
        except NotFoundError as exc:
            parent = _known_parent(path, set(before))
            word = meant(query) if query else None
            hint = (
                f"; did you mean {parent}? ({path[len(parent) + 1 :]} would be an artifact "
                "or file of it, not a module)"
                if parent
                else f"; did you mean {path}@{word}?"
                if word
                else ""
            )
            raise NotFoundError(exc.path, exc.version, exc.message + hint) from exc
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
    direct = (project.direct() | {t.path for t in ups if t.path in named}) - {
        t.path for t in downs if t.version == "none"
    }
    project.set_requirements(build, direct)
    # Walk the final graph afresh, so that wgt.sum keeps only the lines it uses
    # (and those it had): the queries and the downgrade tried other versions.
    project.forget_graph()
    build = project.download_all()
    project.drop_unused_new_sums()
    warn_retracted(project, build)
    warn_deprecated(project, build, {t.path for t in ups if t.path in named})
    warn_empty_selects(project, build)
    if save:
        project.save()
    return build, _changes(before, chosen)


def _check_separate_versions(args: list[str]) -> None:
    """``wgtpm get M v0.1.0``: a version (or a query word) given as its own argument after
    a module is a usage error that names ``M@v0.1.0``, before anything is fetched."""
    for prev, arg in itertools.pairwise(args):
        if "@" in prev or "@" in arg or "/" in arg:
            continue
        if _v.is_valid(arg) or arg in WORDS or _MISSING_V.match(arg):
            fixed = arg if arg[:1] == "v" or not arg[:1].isdigit() else "v" + arg
            raise UsageError(
                f"{arg}: not a module path; a version goes after the module and an '@': "
                f"did you mean {prev}@{fixed}?"
            )


def _update_args(project: Project, current: list[MV], args: list[str], update: str) -> list[str]:
    """The ``PATH@upgrade`` (or ``@patch``) arguments ``-u`` adds: for each module the named
    modules require, directly or not, at the versions the graph has now (each module of
    the build list when none is named)."""
    query = "patch" if update == "patch" else "upgrade"
    if not args:
        scope = {m.path for m in current[1:]}
    else:
        selected = {m.path: m for m in current[1:]}
        named = dict(parse_arg(a) for a in args)
        queue = []
        for path, q in named.items():
            if q == "none":
                continue
            now = selected.get(path)
            v = project.reqs.resolve_query(path, q or "upgrade", now.version if now else None)
            queue.append(MV(path, v))
        scope = set()
        for m in queue:
            for r in project.reqs.required(m):
                if r.path not in scope and r.path not in named:
                    scope.add(r.path)
                    queue.append(selected.get(r.path, r))
    if query == "patch":  # a patch of the version selected now (a new one comes as required)
        scope &= {m.path for m in current[1:]}
    return [f"{p}@{query}" for p in sorted(scope)]


def _known_parent(path: str, modules: set[str]) -> str | None:
    """The module of ``modules`` that ``path`` lies under (MODULE/ARTIFACT given for MODULE)."""
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        if path in modules:
            return path
    return None


def _changes(before: dict[str, str], after: dict[str, str]) -> list[Change]:
    out = []
    for p in sorted(set(before) | set(after)):
        if before.get(p) != after.get(p):
            out.append(Change(p, before.get(p), after.get(p)))
    return out


def tidy_in_memory(project: Project) -> list[MV]:
    """What ``tidy`` would write, made in memory: minimal requirements, wgt.sum pruned.

    ``project.changes()`` then says whether wgt.mod or wgt.sum was untidy
    (``wgtpm publish`` refuses that); :func:`tidy` saves the result.
    """
    build = project.build_list()
    project.set_requirements(build, project.direct())
    project.forget_graph()
    build = project.build_list()
    for m in build[1:]:
        origin = project.origin(m)
        if isinstance(origin, Fetched):
            project.index(origin)  # marks its wgt.sum lines as used
    project.prune_sums()
    return build


def tidy(project: Project) -> list[MV]:
    """Minimal requirements, and wgt.sum pruned to exactly what the build needs."""
    build = tidy_in_memory(project)
    project.save()
    return build
