"""Minimal version selection (docs/design.md section 6), as Go does it.

The build list of a target is the target followed by, for every module
reachable in the requirement graph, the highest version required anywhere
(https://research.swtch.com/vgo-mvs). It is deterministic and needs no
solver. This module is pure: it asks a :class:`Reqs` for requirements and
compares versions through it, and never touches the network or the disk.

Versions are strings; ``""`` is the main module (newer than any version) and
``"none"`` means "not required" (older than any version).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from ._errors import ResolveError, UsageError, WgtpmError
from .module import ModuleVersion

__all__ = [
    "DowngradeReqs",
    "Override",
    "Reqs",
    "UpgradeReqs",
    "build_list",
    "downgrade",
    "req",
    "upgrade",
    "upgrade_all",
]

MV = ModuleVersion


class Reqs(Protocol):
    """The requirement graph."""

    def required(self, m: MV) -> list[MV]:
        """The requirements of ``m`` (from its wgt.mod)."""
        ...

    def max(self, path: str, v1: str, v2: str) -> str:
        """The higher of two versions of ``path`` (``v1`` on a tie)."""
        ...


class UpgradeReqs(Reqs, Protocol):
    def upgrade(self, m: MV) -> MV:
        """The version ``m`` upgrades to (the latest allowed)."""
        ...


class DowngradeReqs(Reqs, Protocol):
    def previous(self, m: MV) -> MV:
        """The next version below ``m`` (``version == "none"`` when there is none)."""
        ...


class _Graph:
    def __init__(self, reqs: Reqs, targets: Sequence[MV]) -> None:
        self.reqs = reqs
        self.targets = list(targets)
        self.required: dict[MV, list[MV]] = {}
        self.selected: dict[str, str] = {}
        for t in targets:
            self.selected[t.path] = t.version

    def add(self, m: MV, reqs: list[MV]) -> None:
        self.required[m] = reqs
        for r in reqs:
            cur = self.selected.get(r.path)
            self.selected[r.path] = (
                r.version if cur is None else self.reqs.max(r.path, cur, r.version)
            )

    def build_list(self) -> list[MV]:
        tpaths = {t.path for t in self.targets}
        rest = sorted(MV(p, v) for p, v in self.selected.items() if p not in tpaths and v != "none")
        return [MV(t.path, self.selected[t.path]) for t in self.targets] + rest

    def find_path(self, bad: Callable[[MV], bool]) -> list[MV]:
        """The shortest requirement path from a target to a module for which ``bad`` holds."""
        parent: dict[MV, MV | None] = {t: None for t in self.targets}
        queue = list(self.targets)
        for m in queue:
            if bad(m):
                path: list[MV] = []
                cur: MV | None = m
                while cur is not None:
                    path.append(cur)
                    cur = parent[cur]
                return path[::-1]
            for r in self.required.get(m, []):
                if r not in parent:
                    parent[r] = m
                    queue.append(r)
        return []


def _build(
    targets: Sequence[MV],
    reqs: Reqs,
    upgrade_fn: Callable[[MV], MV] | None = None,
    workers: int = 1,
) -> list[MV]:
    g = _Graph(reqs, targets)
    errs: dict[MV, Exception] = {}

    def visit(m: MV) -> tuple[MV, list[MV], Exception | None]:
        try:
            required = reqs.required(m) if m.version != "none" else []
            if upgrade_fn is not None:
                u = upgrade_fn(m)
                if u != m:
                    required = [u, *required]
            return m, required, None
        except WgtpmError as exc:
            return m, [], exc

    seen: set[MV] = set(targets)
    frontier = list(targets)
    prefetch = getattr(reqs, "prefetch", None)
    while frontier:
        if prefetch is not None and workers > 1:
            prefetch(frontier, workers)  # e.g. fetch uncached wgt.mod files in parallel
        results = [visit(m) for m in frontier]
        frontier = []
        for m, required, err in results:
            if err is not None:
                errs[m] = err
            g.add(m, required)
            for r in required:
                if r not in seen:
                    seen.add(r)
                    frontier.append(r)
    if errs:
        chain = g.find_path(lambda m: m in errs)
        bad = chain[-1] if chain else next(iter(errs))
        # "none" nodes are upgrade placeholders (upgrade() adds them), not requirements
        shown = [str(m) for m in chain[:-1] if m.version != "none"] + [str(bad)]
        # the chain already ends in module@version: do not say it twice
        if isinstance(errs[bad], UsageError):  # a setting, not this module: say it alone
            raise errs[bad]
        msg = str(errs[bad]).removeprefix(f"{bad}: ").removeprefix(f"{bad.path}: ")
        raise ResolveError(msg, shown) from errs[bad]
    out = g.build_list()
    for t, got in zip(targets, out):
        if t != got:

            def raised(m: MV, p: str = t.path, v: str = got.version) -> bool:
                return m.path == p and m.version == v

            raise ResolveError(
                f"{t.path} is required at {got.version}, above the version being built ({t.version})",
                [str(m) for m in g.find_path(raised)],
            )
    return out


def build_list(targets: Sequence[MV], reqs: Reqs, workers: int = 1) -> list[MV]:
    """The targets, then the selected version of every other reachable module, sorted by path.

    When ``reqs`` has a ``prefetch(modules, workers)`` method and ``workers > 1``,
    it is called with each breadth-first level before that level is read, so a
    source on the network can load many wgt.mod files at once.
    """
    return _build(targets, reqs, None, workers)


def upgrade_all(target: MV, reqs: UpgradeReqs, workers: int = 1) -> list[MV]:
    """The build list with every module upgraded to its latest version."""
    return _build(
        [target], reqs, lambda m: target if m.path == target.path else reqs.upgrade(m), workers
    )


class Override:
    """``reqs`` with the target's requirements replaced by ``list``."""

    def __init__(self, target: MV, lst: list[MV], reqs: Reqs) -> None:
        self.target, self.list, self.reqs = target, lst, reqs

    def required(self, m: MV) -> list[MV]:
        return self.list if m == self.target else self.reqs.required(m)

    def max(self, path: str, v1: str, v2: str) -> str:
        return self.reqs.max(path, v1, v2)


def upgrade(target: MV, reqs: Reqs, *upgrades: MV, workers: int = 1) -> list[MV]:
    """The build list after raising each of ``upgrades`` to at least its version."""
    lst = list(reqs.required(target))
    in_list = {m.path for m in lst}
    to: dict[str, str] = {}
    for u in upgrades:
        if u.path not in in_list:
            lst.append(MV(u.path, "none"))
            in_list.add(u.path)
        to[u.path] = reqs.max(u.path, to[u.path], u.version) if u.path in to else u.version
    return _build(
        [target],
        Override(target, lst, reqs),
        lambda m: MV(m.path, to[m.path]) if m.path in to else m,
        workers,
    )


def downgrade(target: MV, reqs: DowngradeReqs, *downgrades: MV) -> list[MV]:
    """The build list after lowering each of ``downgrades`` to at most its version.

    ``MV(path, "none")`` removes a module. Downgrades only lower modules,
    never raise one: a version whose requirements would raise another module
    is passed over for an older one (research.swtch.com/vgo-mvs, algorithm 4).
    """
    lst = build_list([target], reqs)[1:]
    mx = {r.path: r.version for r in lst}
    for d in downgrades:
        if d.path not in mx or reqs.max(d.path, mx[d.path], d.version) != d.version:
            mx[d.path] = d.version

    added: set[MV] = set()
    excluded: set[MV] = set()
    rdeps: dict[MV, list[MV]] = {}

    def exclude(m: MV) -> None:
        stack = [m]
        while stack:
            x = stack.pop()
            if x in excluded:
                continue
            excluded.add(x)
            stack.extend(rdeps.get(x, []))

    def add(m: MV) -> None:
        if m in added:
            return
        added.add(m)
        v = mx.get(m.path)
        if v is not None and reqs.max(m.path, m.version, v) != v:
            exclude(m)  # m would be an upgrade, not a downgrade
            return
        try:
            required = reqs.required(m)
        except WgtpmError:
            exclude(m)
            return
        for r in required:
            add(r)
            if r in excluded:
                exclude(m)
                return
            rdeps.setdefault(r, []).append(m)

    downgraded = [target]
    for r in lst:
        add(r)
        keep = True
        while r in excluded:
            p = reqs.previous(r)
            v = mx[r.path]
            if reqs.max(r.path, v, r.version) != v and reqs.max(r.path, p.version, v) != p.version:
                p = MV(p.path, v)
            if p.version == "none":
                keep = False
                break
            add(p)
            r = p
        if keep:
            downgraded.append(r)

    actual = build_list([target], Override(target, downgraded, reqs))
    actual_v = {m.path: m.version for m in actual}
    final = [MV(m.path, actual_v[m.path]) for m in lst if m.path in actual_v]
    return build_list([target], Override(target, final, reqs))


def req(main: MV, base: Iterable[str], reqs: Reqs) -> list[MV]:
    """The minimal requirement list of ``main`` that yields the same build list.

    Paths in ``base`` are kept (wgt.mod lists direct dependencies even when
    another dependency implies them); everything else implied is dropped.
    """
    lst = build_list([main], reqs)
    mx = {m.path: m.version for m in lst}
    cache: dict[MV, list[MV]] = {main: []}
    postorder: list[MV] = []

    def walk_post(m: MV) -> None:
        stack: list[tuple[MV, int]] = [(m, 0)]
        while stack:
            x, i = stack.pop()
            if i == 0:
                if x in cache:
                    continue
                cache[x] = reqs.required(x)
            kids = cache[x]
            if i < len(kids):
                stack.append((x, i + 1))
                if kids[i] not in cache:
                    stack.append((kids[i], 0))
            else:
                postorder.append(x)

    for m in lst:
        walk_post(m)

    have: set[MV] = set()

    def walk(m: MV) -> None:
        stack = [m]
        while stack:
            x = stack.pop()
            if x in have:
                continue
            have.add(x)
            stack.extend(cache.get(x, []))

    out: list[MV] = []
    seen_base: set[str] = set()
    for path in base:
        if path in seen_base or path not in mx:
            continue
        m = MV(path, mx[path])
        out.append(m)
        walk(m)
        seen_base.add(path)
    for m in reversed(postorder):
        if mx.get(m.path) != m.version:
            continue
        if m not in have:
            out.append(m)
            walk(m)
    return sorted(out, key=lambda m: m.path)
