"""The requirement graph as MVS sees it: :class:`Reqs`, with excludes and retractions.

:class:`Reqs` implements :class:`wgtpm.mvs.Reqs` (with ``upgrade``,
``previous`` and ``prefetch``) over the main module's wgt.mod and the
verified wgt.mod files of its dependencies, as Go's ``modload/mvs.go`` does:

- ``required(m)``: the requirements in ``m``'s wgt.mod (after the main
  module's replacements), an excluded version rounded up to the next version
  that is not excluded;
- ``allowed(path)``: whether a query may pick a version: neither excluded by
  the main module nor retracted by the module's author; retractions are read
  from the wgt.mod of the module's latest version;
- ``resolve_query(path, query)``: what ``path@query`` means (``wgtpm get``);
- ``deprecation(path)``: the ``Deprecated:`` comment of the latest version's wgt.mod.

Only "not found" is ignored while loading retractions (a module or version
the sources do not have retracts nothing); a checksum mismatch, a network
failure or a wgt.mod that does not parse is an error, never a silent
"no retractions".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import modfile as _modfile
from .. import version as _v
from .._errors import ModuleError, NotFoundError, ParseError, WgtpmError
from ..module import ModuleVersion
from ..query import is_revision, pick
from .buildlist import FromDirectory, FromReplacement, origin_of
from .files import MOD

if TYPE_CHECKING:
    from ..cache import Cache
    from ..modfetch import Fetcher

__all__ = ["Reqs"]

MV = ModuleVersion
Retraction = tuple[str, str, str]  # low, high, rationale


class Reqs:
    """MVS's view of a project's requirement graph (see the module docstring)."""

    def __init__(
        self,
        main: _modfile.ModFile,
        root: Path,
        fetcher: Callable[[], Fetcher],
        cache: Callable[[], Cache],
    ) -> None:
        assert main.module is not None
        self._main = main
        self._root = root
        self._fetcher = fetcher
        self._cache = cache
        self._mods: dict[MV, _modfile.ModFile] = {}
        self._latest: dict[str, _modfile.ModFile | None] = {}  # path -> its latest wgt.mod

    # ---- wgt.mod files -------------------------------------------------------

    def mod_of(self, m: MV) -> _modfile.ModFile:
        """The parsed wgt.mod of ``m`` (after replacements), checked to declare ``m.path``."""
        if m.version == "":
            return self._main
        cached = self._mods.get(m)
        if cached is not None:
            return cached
        origin = origin_of(self._main, self._root, m)
        if isinstance(origin, FromDirectory):
            try:
                data = (origin.dir / MOD).read_bytes()
            except FileNotFoundError as exc:
                raise ModuleError(
                    m.path, m.version, f"replacement directory {origin.dir} has no {MOD}"
                ) from exc
            name = str(origin.dir / MOD)
        else:
            data = self._fetcher().mod(origin.path, origin.version)
            name = f"{origin}/{MOD}"
        try:
            mf = _modfile.parse(data, name)
        except ParseError as exc:
            raise ModuleError(m.path, m.version, f"its wgt.mod does not parse:\n{exc}") from exc
        declared = mf.module.path if mf.module else None
        if declared != m.path and not (
            isinstance(origin, FromReplacement) and declared == origin.path
        ):
            raise ModuleError(
                m.path,
                m.version,
                f"its wgt.mod declares module {declared}, but it was required as {m.path}",
            )
        self._mods[m] = mf
        return mf

    def loaded(self) -> list[MV]:
        """The module versions whose wgt.mod has been read and checked since the last forget."""
        return [m for m in self._mods if m.version != ""]

    def forget(self) -> None:
        """Drop the wgt.mod files learnt so far (they are read, and checked, again)."""
        self._mods.clear()

    def prefetch(self, ms: list[MV], workers: int) -> None:
        """Fetch the wgt.mod files of ``ms`` that are not cached, in parallel (for MVS)."""
        todo = []
        for m in ms:
            if m.version in ("", "none") or m in self._mods:
                continue
            origin = origin_of(self._main, self._root, m)
            if isinstance(origin, FromDirectory):
                continue
            if self._cache().read_meta(origin.path, origin.version, "mod") is None:
                todo.append(m)
        if len(todo) < 2:
            return
        from concurrent.futures import ThreadPoolExecutor

        def load(m: MV) -> None:
            try:
                self.mod_of(m)
            except WgtpmError:
                pass  # reported with its requirement path when MVS asks for it

        with ThreadPoolExecutor(min(workers, len(todo))) as pool:
            list(pool.map(load, todo))

    # ---- mvs.Reqs --------------------------------------------------------------

    def required(self, m: MV) -> list[MV]:
        reqs = [MV(r.path, r.version) for r in self.mod_of(m).requires]
        return [self._skip_excluded(r) for r in reqs]

    def _skip_excluded(self, r: MV) -> MV:
        if not self._main.is_excluded(r.path, r.version):
            return r
        later = [v for v in _v.sort_versions(self.versions(r.path)) if _v.compare(v, r.version) > 0]
        for v in later:
            if not self._main.is_excluded(r.path, v):
                return MV(r.path, v)
        raise ModuleError(
            r.path, r.version, "excluded in wgt.mod, and no later version is left to use"
        )

    def max(self, path: str, v1: str, v2: str) -> str:
        return v2 if _v.compare(v1, v2) < 0 else v1

    def upgrade(self, m: MV) -> MV:
        v = pick(
            "upgrade",
            m.version if m.version != "none" else None,
            self.versions(m.path),
            self.allowed(m.path),
        )
        return MV(m.path, v) if v else m

    def previous(self, m: MV) -> MV:
        ok = self.allowed(m.path)
        below = [
            v
            for v in _v.sort_versions(self.versions(m.path))
            if _v.compare(v, m.version) < 0 and ok(v)
        ]
        return MV(m.path, below[-1] if below else "none")

    # ---- versions, excludes, retractions -----------------------------------------

    def versions(self, path: str) -> list[str]:
        """The released versions of ``path`` (none when no source knows it)."""
        try:
            return self.listed(path)
        except NotFoundError:
            return []

    def listed(self, path: str) -> list[str]:
        """The released versions of ``path``; :class:`NotFoundError` says why there is no
        list (no source for its host, the proxy does not know it), for a query to show."""
        return self._fetcher().versions(path)

    def allowed(self, path: str) -> Callable[[str], bool]:
        """Whether a version may be picked by a query: not excluded, not retracted."""
        retracts = self._retractions(path)

        def ok(v: str) -> bool:
            if self._main.is_excluded(path, v):
                return False
            return not any(_v.compare(lo, v) <= 0 <= _v.compare(hi, v) for lo, hi, _ in retracts)

        return ok

    def _retractions(self, path: str) -> list[Retraction]:
        """The retractions declared in the wgt.mod of the module's latest version."""
        mf = self._latest_mod(path, "loading retractions")
        return [(r.low, r.high, r.rationale) for r in mf.retracts] if mf else []

    def _latest_mod(self, path: str, what: str) -> _modfile.ModFile | None:
        """The wgt.mod of the module's latest version (``None``: no version is listed);
        read once per command, as retractions and deprecation both come from it."""
        if path in self._latest:
            return self._latest[path]
        vs = [v for v in self.versions(path) if not self._main.is_excluded(path, v)]
        latest = pick("latest", None, vs, lambda v: True)
        if latest is None:
            return None
        try:
            data = self._fetcher().mod(path, latest, record=False)
        except NotFoundError:
            return None  # listed but gone: it retracts nothing
        try:
            mf = _modfile.parse(data, f"{path}@{latest}/{MOD}")
        except ParseError as exc:
            raise ModuleError(path, latest, f"{what}: its wgt.mod does not parse:\n{exc}") from exc
        self._latest[path] = mf
        return mf

    def deprecation(self, path: str) -> str | None:
        """The ``Deprecated:`` text on the module line of the latest version's wgt.mod, or ``None``.

        As in Go, the latest version speaks for the whole module: an author
        deprecates it by publishing one more version that says so.
        """
        mf = self._latest_mod(path, "loading its deprecation")
        return (mf.module.deprecated or None) if mf and mf.module else None

    def retraction(self, m: MV) -> str | None:
        """Why ``m`` is retracted by its author, or ``None``."""
        for lo, hi, why in self._retractions(m.path):
            if _v.compare(lo, m.version) <= 0 <= _v.compare(hi, m.version):
                return why or "no reason given"
        return None

    # ---- queries ---------------------------------------------------------------

    def resolve_query(self, path: str, query: str, current: str | None) -> str:
        """The version ``path@query`` means; raises NotFoundError when nothing fits."""
        if _v.is_valid(query):
            if self._main.is_excluded(path, query):
                raise ModuleError(
                    path, query, "excluded in wgt.mod; drop the exclude or ask for another version"
                )
            return query  # pinned: also when retracted, and without a version list
        if is_revision(query):
            return self._fetcher().info(path, query).version
        newest = query in ("latest", "upgrade")  # with none listed: the latest commit
        vs = self.versions(path) if newest else self.listed(path)
        v = pick(query, current, vs, self.allowed(path))
        if v is None and newest:
            return self._fetcher().info(path, "latest").version
        if v is None:
            raise NotFoundError(path, None, f"no version matches query {query!r}")
        return v
