"""The main module: its wgt.mod and wgt.sum, its requirement graph, its build list.

:class:`Project` loads ``wgt.mod`` (searching upward from a directory, as
``go`` does) and ``wgt.sum``, answers MVS's questions about the requirement
graph through a :class:`~wgtpm.modfetch.Fetcher`, checks every hash against
wgt.sum (recording new ones unless ``-mod=readonly``), and writes both files
back only when they changed: wgt.sum first, then wgt.mod, each atomically,
so an interrupted command leaves each file either as it was or fully new.

``-mod`` modes (flag or ``WGTFLAGS``): ``mod`` (default for ``get`` and
``tidy``: update files), ``readonly`` (any needed change is an error),
``vendor`` (use ``vendor/`` and nothing else).
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import modfile as _modfile
from . import mvs
from . import sumfile as _sumfile
from . import version as _v
from ._errors import (
    ChecksumMismatchError,
    ModuleError,
    NotFoundError,
    ParseError,
    ReadonlyError,
    ResolveError,
    UsageError,
    WgtpmError,
)
from ._fs import write_atomic
from .cache import Cache
from .modfetch import Fetcher, FetchOptions, Progress, matches
from .module import ModuleVersion
from .query import is_revision, pick
from .sources import FileRequest, RevInfo, Source

if TYPE_CHECKING:
    from .deps import ModuleResolver, ResolvedModule
    from .httpclient import HttpClient

__all__ = ["Options", "Project", "find_root", "open_resolver"]

MOD = "wgt.mod"
SUM = "wgt.sum"
MV = ModuleVersion


@dataclass
class Options:
    """How a command treats the project files and the network."""

    mod_mode: str = ""  # "", "mod", "readonly" or "vendor"
    jobs: int = 16
    progress: Progress | None = None
    source: Source | None = None  # default: WGTPROXY from the environment
    cache: Cache | None = None

    @classmethod
    def from_env(cls, mod_flag: str = "", **kw: object) -> Options:
        """``-mod`` from the flag, else from ``WGTFLAGS`` (e.g. ``WGTFLAGS=-mod=readonly``)."""
        mode = mod_flag
        if not mode:
            for word in shlex.split(os.environ.get("WGTFLAGS", "")):
                if word.startswith(("-mod=", "--mod=")):
                    mode = word.split("=", 1)[1]
        if mode not in ("", "mod", "readonly", "vendor"):
            raise UsageError(f"-mod={mode}: want mod, readonly or vendor")
        return cls(mod_mode=mode, **kw)  # type: ignore[arg-type]


def find_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding a wgt.mod."""
    from ._noop import find_root as nearest

    root = nearest(start)
    if root is None:
        raise UsageError(
            f"no {MOD} in {start.absolute()} or any parent directory; create one with 'wgtpm init MODULE'"
        )
    return root


@dataclass
class _Sums:
    """wgt.sum as the fetcher sees it: check known hashes, record (or refuse) new ones."""

    file: _sumfile.SumFile
    readonly: bool
    used: set[tuple[str, str]] = field(default_factory=set)

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        if record:
            self.used.add((path, version))
        have = self.file.hashes(path, version)
        if have and h1 not in have:
            base = version.removesuffix("/wgt.mod")
            what = "wgt.mod" if version.endswith("/wgt.mod") else "the release (its index)"
            raise ChecksumMismatchError(path, base, what, have[0], h1)
        if not have and record:
            if self.readonly:
                raise ReadonlyError(
                    f"{path}@{version.removesuffix('/wgt.mod')}: missing wgt.sum entry "
                    "(-mod=readonly); run 'wgtpm get' or 'wgtpm tidy' to add it"
                )
            self.file.add(path, version, h1)


class Project:
    """A loaded main module. Use :meth:`load`; call :meth:`save` to write changes."""

    def __init__(
        self, root: Path, mf: _modfile.ModFile, sums: _sumfile.SumFile, opts: Options
    ) -> None:
        if mf.module is None:
            raise UsageError(f"{root / MOD}: no module statement; add 'module PATH' at the top")
        self.root = root
        self.modfile = mf
        self.opts = opts
        self.sums = _Sums(sums, readonly=opts.mod_mode in ("readonly", "vendor"))
        self._orig_mod = mf.format()
        self._orig_sum = sums.format()
        self._fetcher: Fetcher | None = None
        self._http: HttpClient | None = None
        self._http_lock = threading.Lock()
        self._mods: dict[MV, _modfile.ModFile] = {}

    @classmethod
    def load(cls, start: Path | None = None, opts: Options | None = None) -> Project:
        root = find_root(start or Path.cwd())
        data = (root / MOD).read_bytes()
        mf = _modfile.parse(data, str(root / MOD))
        try:
            sums = _sumfile.parse((root / SUM).read_bytes(), str(root / SUM))
        except FileNotFoundError:
            sums = _sumfile.SumFile()
        return cls(root, mf, sums, opts or Options())

    @property
    def path(self) -> str:
        assert self.modfile.module is not None
        return self.modfile.module.path

    @property
    def main(self) -> MV:
        return MV(self.path, "")

    @property
    def fetcher(self) -> Fetcher:
        if self._fetcher is None:
            if self.opts.mod_mode == "vendor":
                raise UsageError(
                    "-mod=vendor: the network and the module cache are not used; run without it"
                )
            self._fetcher = Fetcher(
                self.opts.cache or Cache(),
                self.opts.source or _LazySource(self._shared_http),
                self.sums,
                http=self._shared_http,
                opts=FetchOptions(jobs=self.opts.jobs),
                progress=self.opts.progress,
            )
        return self._fetcher

    def _shared_http(self) -> HttpClient:
        """One HTTP client for the sources and the downloads (connections are reused)."""
        with self._http_lock:
            if self._http is None:
                from .httpclient import HttpClient

                self._http = HttpClient()
            return self._http

    # ---- the requirement graph (mvs.Reqs) -------------------------------

    def mod_of(self, m: MV) -> _modfile.ModFile:
        """The parsed wgt.mod of ``m`` (after replacements), checked to declare ``m.path``."""
        cached = self._mods.get(m)
        if cached is not None:
            return cached
        if m.version == "":
            return self.modfile
        repl = self.modfile.replacement(m.path, m.version)
        if repl is not None and repl.is_local:
            d = (self.root / repl.new_path).resolve()
            try:
                data = (d / MOD).read_bytes()
            except FileNotFoundError:
                raise ModuleError(
                    m.path, m.version, f"replacement directory {d} has no {MOD}"
                ) from None
            name = str(d / MOD)
        else:
            src = MV(repl.new_path, repl.new_version or "") if repl else m
            data = self.fetcher.mod(src.path, src.version)
            name = f"{src.path}@{src.version}/{MOD}"
        try:
            mf = _modfile.parse(data, name)
        except ParseError as exc:
            raise ModuleError(m.path, m.version, f"its wgt.mod does not parse:\n{exc}") from None
        declared = mf.module.path if mf.module else None
        if declared != m.path and not (repl and declared == repl.new_path):
            raise ModuleError(
                m.path,
                m.version,
                f"its wgt.mod declares module {declared}, but it was required as {m.path}",
            )
        self._mods[m] = mf
        return mf

    def forget_graph(self) -> None:
        """Drop what was learnt about the graph, and which wgt.sum lines it used."""
        self._mods.clear()
        self.sums.used.clear()

    def prefetch(self, ms: list[MV], workers: int) -> None:
        """Fetch the wgt.mod files of ``ms`` that are not cached, in parallel (for MVS)."""
        todo = []
        for m in ms:
            if m.version in ("", "none") or m in self._mods:
                continue
            target = self.fetch_target(m)
            if target is not None and self.fetcher.cache.read_meta(*target, "mod") is None:
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

    def required(self, m: MV) -> list[MV]:
        reqs = [MV(r.path, r.version) for r in self.mod_of(m).requires]
        return [self._skip_excluded(r) for r in reqs]

    def _skip_excluded(self, r: MV) -> MV:
        if not self.modfile.is_excluded(r.path, r.version):
            return r
        later = [v for v in _v.sort_versions(self.versions(r.path)) if _v.compare(v, r.version) > 0]
        for v in later:
            if not self.modfile.is_excluded(r.path, v):
                return MV(r.path, v)
        raise ModuleError(
            r.path, r.version, "excluded in wgt.mod, and no later version is left to use"
        )

    def max(self, path: str, v1: str, v2: str) -> str:
        return v2 if _v.compare(v1, v2) < 0 else v1

    def versions(self, path: str) -> list[str]:
        try:
            return self.fetcher.versions(path)
        except NotFoundError:
            return []

    def allowed(self, path: str) -> Callable[[str], bool]:
        """Whether a version may be picked by a query: not excluded, not retracted."""
        retracts = self._retractions(path)

        def ok(v: str) -> bool:
            if self.modfile.is_excluded(path, v):
                return False
            return not any(_v.compare(lo, v) <= 0 <= _v.compare(hi, v) for lo, hi, _ in retracts)

        return ok

    def _retractions(self, path: str) -> list[tuple[str, str, str]]:
        """The retractions declared in the wgt.mod of the module's latest version."""
        vs = [v for v in self.versions(path) if not self.modfile.is_excluded(path, v)]
        latest = pick("latest", None, vs, lambda v: True)
        if latest is None:
            return []
        try:
            data = self.fetcher.mod(path, latest, record=False)
            mf = _modfile.parse(data, f"{path}@{latest}/{MOD}")
        except WgtpmError:
            return []
        return [(r.low, r.high, r.rationale) for r in mf.retracts]

    def retraction(self, m: MV) -> str | None:
        """Why ``m`` is retracted by its author, or ``None``."""
        for lo, hi, why in self._retractions(m.path):
            if _v.compare(lo, m.version) <= 0 <= _v.compare(hi, m.version):
                return why or "no reason given"
        return None

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

    def build_list(self) -> list[MV]:
        """The main module, then every selected module version, sorted by path."""
        return mvs.build_list([self.main], self, workers=self.opts.jobs)

    def resolve_query(self, path: str, query: str, current: str | None) -> str:
        """The version ``path@query`` means; raises NotFoundError when nothing fits."""
        if _v.is_valid(query):
            if self.modfile.is_excluded(path, query):
                raise ModuleError(
                    path, query, "excluded in wgt.mod; drop the exclude or ask for another version"
                )
            return query  # pinned: also when retracted, and without a version list
        if is_revision(query):
            info = self.fetcher.info(path, query)
            return info.version
        v = pick(query, current, self.versions(path), self.allowed(path))
        if v is None and query in ("latest", "upgrade"):
            return self.fetcher.info(path, "latest").version
        if v is None:
            raise NotFoundError(path, None, f"no version matches query {query!r}")
        return v

    # ---- files of the build list -------------------------------------------

    def fetch_target(self, m: MV) -> tuple[str, str] | None:
        """Where the files of ``m`` come from: itself, a module replacement, or ``None`` for a directory."""
        repl = self.modfile.replacement(m.path, m.version)
        if repl is None:
            return m.path, m.version
        if repl.is_local:
            return None
        return repl.new_path, repl.new_version or ""

    def module_dir(self, m: MV, download: bool = True) -> Path:
        """The directory holding the (verified) files of ``m``."""
        target = self.fetch_target(m)
        if target is None:
            repl = self.modfile.replacement(m.path, m.version)
            assert repl is not None
            return (self.root / repl.new_path).resolve()
        path, version = target
        patterns = self.modfile.select_patterns(m.path)
        if download:
            return self.fetcher.download(path, version, patterns)
        return self.fetcher.cache.mod_dir(path, version)

    def download_all(self, build: list[MV] | None = None) -> list[MV]:
        """Download and verify every module of the build list; returns the build list."""
        build = build if build is not None else self.build_list()
        todo = []
        for m in build[1:]:
            target = self.fetch_target(m)
            if target is not None and self.fetcher.missing(
                *target, self.modfile.select_patterns(m.path)
            ):
                todo.append(m)
        if len(todo) == 1:
            self.module_dir(todo[0])
        elif todo:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(4, len(todo))) as pool:
                for f in [pool.submit(self.module_dir, m) for m in todo]:
                    f.result()
        return build

    def files(self, build: list[MV]) -> list[Path]:
        """Every selected file of the build list's modules, as they lie in the cache."""
        out = []
        for m in build[1:]:
            target = self.fetch_target(m)
            if target is None:
                continue
            tree = self.fetcher.cache.mod_dir(*target)
            patterns = self.modfile.select_patterns(m.path)
            out += [
                tree / e.path
                for e in self.fetcher.index(*target).files
                if matches(patterns, e.path)
            ]
        return out

    def warn_retracted(self, build: list[MV]) -> None:
        for m in build[1:]:
            if _v.is_valid(m.version) and not _v.is_pseudo(m.version):
                why = self.retraction(m)
                if why:
                    print(
                        f"wgtpm: warning: {m}: retracted by module author: {why}", file=sys.stderr
                    )
                    print(
                        f"wgtpm: to switch to the latest unretracted version, run:\n\twgtpm get {m.path}@latest",
                        file=sys.stderr,
                    )

    # ---- writing ------------------------------------------------------------

    def set_requirements(self, build: list[MV], direct: set[str]) -> None:
        """Write the minimal requirement list that yields ``build``; ``direct`` paths stay listed."""

        class _Final:
            def required(_self, m: MV) -> list[MV]:
                return build[1:] if m == self.main else self.required(m)

            def max(_self, path: str, v1: str, v2: str) -> str:
                return self.max(path, v1, v2)

        listed = [r.path for r in self.modfile.requires]
        base = [p for p in listed if p in direct] + sorted(direct - set(listed))
        minimal = mvs.req(self.main, base, _Final())
        self.modfile.set_requires([(m.path, m.version, m.path not in direct) for m in minimal])

    def direct(self) -> set[str]:
        """Paths required without ``// indirect``."""
        return {r.path for r in self.modfile.requires if not r.indirect}

    def changes(self) -> tuple[bool, bool]:
        """Whether (wgt.mod, wgt.sum) differ from what was loaded."""
        return self.modfile.format() != self._orig_mod, self.sums.file.format() != self._orig_sum

    def save(self) -> None:
        """Write what changed: wgt.sum first, then wgt.mod; refuse under -mod=readonly."""
        mod_changed, sum_changed = self.changes()
        if not (mod_changed or sum_changed):
            return
        if self.opts.mod_mode in ("readonly", "vendor"):
            what = " and ".join(n for n, c in ((MOD, mod_changed), (SUM, sum_changed)) if c)
            raise ReadonlyError(
                f"{what} need updates, but -mod={self.opts.mod_mode} is in force; run 'wgtpm tidy' or "
                "'wgtpm get' without it"
            )
        if sum_changed:
            write_atomic(self.root / SUM, self.sums.file.format())
            self._orig_sum = self.sums.file.format()
        if mod_changed:
            write_atomic(self.root / MOD, self.modfile.format())
            self._orig_mod = self.modfile.format()

    # ---- for builders ---------------------------------------------------------

    def resolver(self) -> ProjectResolver:
        return ProjectResolver(self)


class _LazySource:
    """The WGTPROXY chain, built on first use (a no-op ``get`` never needs it)."""

    def __init__(self, http: Callable[[], HttpClient]) -> None:
        self._http = http
        self._src: Source | None = None
        self._lock = threading.Lock()

    def _get(self) -> Source:
        with self._lock:
            if self._src is None:
                from .sources.chain import from_env

                self._src = from_env(self._http())
            return self._src

    @property
    def name(self) -> str:
        return self._get().name

    def versions(self, path: str) -> list[str]:
        return self._get().versions(path)

    def info(self, path: str, query: str) -> RevInfo:
        return self._get().info(path, query)

    def mod(self, path: str, version: str) -> bytes:
        return self._get().mod(path, version)

    def index(self, path: str, version: str) -> bytes:
        return self._get().index(path, version)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        return self._get().file(path, version, name)


class ProjectResolver:
    """A :class:`~wgtpm.deps.ModuleResolver` over a project's build list."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._build: dict[str, MV] | None = None

    def _list(self) -> dict[str, MV]:
        if self._build is None:
            self._build = {m.path: m for m in self.project.build_list()[1:]}
        return self._build

    def modules(self) -> list[str]:
        return sorted(self._list())

    def module(self, path: str) -> ResolvedModule:
        m = self._list().get(path)
        if m is None:
            raise ResolveError(
                f"module {path} is not in the build list of {self.project.path}; "
                f"add it with 'wgtpm get {path}'"
            )
        d = self.project.module_dir(m)
        target = self.project.fetch_target(m)
        if target is None:  # a local directory replacement: no version, no commit
            from .deps import ResolvedModule

            return ResolvedModule(m.path, "", d, None)
        commit = self.project.fetcher.index(*target).commit
        self.project.save()
        from .deps import ResolvedModule

        return ResolvedModule(m.path, m.version, d, commit)


def open_resolver(project_dir: Path) -> ModuleResolver:
    """The resolver for the package in ``project_dir`` (``WGTFLAGS``, ``-mod=vendor`` honoured)."""
    project = Project.load(project_dir, Options.from_env())
    if project.opts.mod_mode == "vendor":
        from .vendor import VendorResolver

        return VendorResolver(project)
    return project.resolver()
