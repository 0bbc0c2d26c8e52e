"""A loaded project for one command: its files, its fetcher, its requirement graph, its build list.

:class:`Project` puts the pieces of :mod:`wgtpm.modload` together:
:class:`~wgtpm.modload.files.ProjectFiles` (wgt.mod and the wgt.sum ledger),
a :class:`~wgtpm.modfetch.Fetcher` built on first use
(:func:`~wgtpm.modload.fetch.open_fetcher`), and
:class:`~wgtpm.modload.reqs.Reqs` (MVS's view of the graph). Commands
(``get``, ``tidy``, ``verify``, ``vendor``, ``list``...) work through its
methods; it never prints: warnings go to ``Options.reporter``.

A project holds its fetcher's HTTP client from the first download until
:meth:`Project.close`: :meth:`Project.locked` closes it when its block ends,
and a project from :meth:`Project.load` is used as ``with Project.load(...)
as project:``.

Under ``-mod=vendor`` the network and the module cache are off limits: asking
for the cache, the fetcher or anything that needs them is a usage error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .. import mvs
from .._errors import ReadonlyError, ResolveError, UsageError
from ..module import ModuleVersion
from .buildlist import Fetched, FromDirectory, Origin, origin_of
from .files import ProjectFiles, find_root, locked
from .options import Options
from .reqs import Reqs
from .sums import SumLedger

if TYPE_CHECKING:
    from ..cache import Cache
    from ..index import ReleaseIndex
    from ..modfetch import Fetcher, TrustHook
    from ..modfile import ModFile
    from ..tensors import TensorInfo
    from .licenses import ModuleLicense

__all__ = ["Project", "plain_readonly_errors"]

MV = ModuleVersion
DOWNLOAD_MODULES_AT_ONCE = 4  # module versions downloaded at once (each runs opts.jobs files)


@contextmanager
def plain_readonly_errors() -> Iterator[None]:
    """Show a refused wgt.sum change as its one line, not under MVS's requirement chain.

    The chain explains why a version is needed; a missing wgt.sum line is a
    state of the project, and its message already names the line and the fix.
    """
    try:
        yield
    except ResolveError as exc:
        if isinstance(exc.__cause__, ReadonlyError):
            raise ReadonlyError(str(exc.__cause__)) from exc
        raise


class Project:
    """A loaded main module. Use :meth:`locked` (or :meth:`load` to read only); :meth:`save` writes."""

    def __init__(self, files: ProjectFiles, opts: Options) -> None:
        self.opts = opts
        self._files = files
        self._cache: Cache | None = None
        self._fetcher: Fetcher | None = None
        self._closing = ExitStack()  # the fetcher's block, ended by close()
        self.latest_unchecked = False  # a latest wgt.mod could not be fetched (notices.py)
        self.reqs = Reqs(files.modfile, files.root, self._fetch, self._the_cache)
        #: Read ``select FILE#TENSOR`` tensors by range with tables a checksum database
        #: logged, where the release locks none (:func:`wgtpm.tensors.logged_tables`);
        #: ``wgtpm vendor`` turns it off (it vendors such a FILE whole: nothing could prove
        #: logged tables offline).
        self.ranged_by_log = True
        self.ranged_known: dict[tuple[str, str], bool] = {}  # selection.ranged's answers

    @classmethod
    def load(cls, start: Path | None = None, opts: Options | None = None) -> Project:
        """The project whose wgt.mod is nearest at or above ``start`` (default: the working dir)."""
        opts = opts or Options()
        root = find_root(start or Path.cwd())
        return cls(ProjectFiles.load(root, opts.readonly, opts.missing_sum_fix), opts)

    @classmethod
    @contextmanager
    def locked(
        cls, start: Path | None = None, opts: Options | None = None, private: bool = False
    ) -> Iterator[Project]:
        """:meth:`load`, holding the project's lock until the block ends (unless read-only
        or ``private``: a temporary main module no other command sees), then :meth:`close`.

        See :func:`wgtpm.modload.files.locked`.
        """
        opts = opts or Options()
        root = find_root(start or Path.cwd())
        if private or opts.readonly:  # no other command sees it, or nothing will be written
            with cls(ProjectFiles.load(root, opts.readonly, opts.missing_sum_fix), opts) as project:
                yield project
            return
        from ..cache import default_root

        with (
            locked(root, opts.cache.root if opts.cache is not None else default_root()),
            cls(ProjectFiles.load(root, False), opts) as project,
        ):
            yield project

    def close(self) -> None:
        """Close the fetcher's HTTP client, if one was made (the project is done with)."""
        self._fetcher = None
        self._closing.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what it is ------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._files.root

    @property
    def path(self) -> str:
        return self._files.path

    @property
    def main(self) -> MV:
        return self._files.main

    @property
    def modfile(self) -> ModFile:
        """The main module's wgt.mod as read (and as edited, until :meth:`save`)."""
        return self._files.modfile

    @property
    def sums(self) -> SumLedger:
        """The wgt.sum ledger (check, record, read hashes)."""
        return self._files.sums

    def direct(self) -> set[str]:
        """Paths required without ``// indirect``."""
        return {r.path for r in self._files.modfile.requires if not r.indirect}

    def select_patterns(self, m: MV) -> list[str] | None:
        """The main module's ``select`` globs for ``m`` (``None``: every file is wanted;
        :func:`wgtpm.modload.selection.patterns`)."""
        from .selection import patterns

        return patterns(self, m)

    def fetch_selected_tensors(self, m: MV) -> list[tuple[str, TensorInfo, bytes]]:
        """The tensors ``select MODULE FILE#TENSOR`` lines name, fetched by range and
        verified (:func:`wgtpm.modload.selection.fetch_tensors`)."""
        from .selection import fetch_tensors

        return fetch_tensors(self, m)

    def requirements(self) -> list[MV]:
        """The main module's requirements as written."""
        return [MV(r.path, r.version) for r in self._files.modfile.requires]

    # ---- the cache and the fetcher --------------------------------------------------

    @property
    def cache(self) -> Cache:
        """The module cache (``Options.cache``, else ``WGTPM_CACHE``)."""
        if self.opts.vendor:
            raise UsageError(
                "-mod=vendor: the network and the module cache are not used; run without it"
            )
        if self._cache is None:
            from ..cache import Cache

            self._cache = self.opts.cache or Cache()
        return self._cache

    @contextmanager
    def using_cache(self) -> Iterator[None]:
        """Hold the cache lock shared, so that ``cache clean``/``gc`` wait for this command."""
        with self.cache.using():
            yield

    def _the_cache(self) -> Cache:
        return self.cache

    def fetcher(self) -> Fetcher:
        """The fetcher over the WGTPROXY chain (made on first use, closed with the project)."""
        return self._fetch()

    def _fetch(self) -> Fetcher:
        if self._fetcher is None:
            from .fetch import open_fetcher

            self._fetcher = self._closing.enter_context(
                open_fetcher(self.opts, self.cache, self.sums, self.trust_policy())
            )
        return self._fetcher

    def trust_policy(self) -> TrustHook | None:
        """The main module's trust lines (:mod:`wgtpm.trust`), or ``None`` when it has none
        or ``WGTTRUST=off`` (wgtpm.trust and cryptography load only when there are some)."""
        if not self._files.modfile.trusts:
            return None
        from ..trust import policy

        return policy(self._files.modfile.trusts, self.root)

    # ---- the build list ----------------------------------------------------------------

    def build_list(self) -> list[MV]:
        """The main module, then every selected module version, sorted by path."""
        with plain_readonly_errors():
            return mvs.build_list([self.main], self.reqs, workers=self.opts.jobs)

    def origin(self, m: MV) -> Origin:
        """Where the files of ``m`` come from (itself, a module replacement, a directory)."""
        return origin_of(self._files.modfile, self.root, m)

    def index(self, origin: Fetched) -> ReleaseIndex:
        """The verified index of a fetched origin (fetched when not cached)."""
        return self._fetch().index(origin.path, origin.version)

    def module_dir(self, m: MV) -> Path:
        """The directory holding the (verified) files of ``m``, downloading what is missing."""
        origin = self.origin(m)
        if isinstance(origin, FromDirectory):
            return origin.dir
        tree = self._fetch().download(origin.path, origin.version, self.select_patterns(m))
        self.fetch_selected_tensors(m)
        return tree

    def placed_dir(self, m: MV) -> Path | None:
        """Where the files of ``m`` lie now (the main module's root, a replacement directory,
        its cached tree), or ``None`` when it is not downloaded; downloads nothing."""
        if m.version == "":
            return self.root
        origin = self.origin(m)
        if isinstance(origin, FromDirectory):
            return origin.dir
        tree = self.cache.mod_dir(origin.path, origin.version)
        return tree if tree.is_dir() else None

    def download_all(self, build: list[MV] | None = None) -> list[MV]:
        """Download and verify every module of the build list; returns the build list.

        A module under a license the main module denies is refused first, before
        any of the build list's files is downloaded (:mod:`.licenses`).
        """
        build = build if build is not None else self.build_list()
        self.check_licenses(build)
        todo = []
        for m in build[1:]:
            origin = self.origin(m)
            if isinstance(origin, Fetched) and (
                self._fetch().missing(origin.path, origin.version, self.select_patterns(m))
                or self._files.modfile.select_tensors(m.path)  # checks its cached tensors
            ):
                todo.append(m)
        if len(todo) == 1:
            self.module_dir(todo[0])
        elif todo:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(DOWNLOAD_MODULES_AT_ONCE, len(todo))) as pool:
                for f in [pool.submit(self.module_dir, m) for m in todo]:
                    f.result()
        return build

    def files(self, build: list[MV]) -> Iterator[str]:
        """Every selected file of the build list's fetched modules, as they lie in the cache,
        one at a time (a module may list 100,000)."""
        from ..modfetch import matches

        for m in build[1:]:
            origin = self.origin(m)
            if not isinstance(origin, Fetched):
                continue
            tree = str(self.cache.mod_dir(origin.path, origin.version))
            patterns = self.select_patterns(m)
            for e in self.index(origin).files:
                if matches(patterns, e.path):
                    yield f"{tree}/{e.path}"

    def verified_meta(self, build: list[MV]) -> list[Path]:
        """The cached wgt.mod of every module version of the graph read so far, and the cached
        index of every fetched module of ``build``: the metadata a no-op ``get`` relies on."""
        out = []
        for m in self.reqs.loaded():
            origin = self.origin(m)
            if isinstance(origin, Fetched):
                out.append(self.cache.meta_path(origin.path, origin.version, "mod"))
        for m in build[1:]:
            origin = self.origin(m)
            if isinstance(origin, Fetched):
                out.append(self.cache.meta_path(origin.path, origin.version, "index.json"))
        return out

    def license_of(self, m: MV, fetch: bool = True) -> ModuleLicense | None:
        """The license ``m`` declares: its wgt.mod's, else its model card's (:mod:`.licenses`)."""
        from .licenses import license_of

        return license_of(self, m, fetch)

    def check_licenses(self, build: list[MV]) -> None:
        """Refuse a module of ``build`` under a license a ``deny-license`` line denies."""
        from .licenses import check_denied

        check_denied(self, build)

    # ---- changing and writing ------------------------------------------------------

    def set_requirements(self, build: list[MV], direct: set[str]) -> None:
        """Write the minimal requirement list that yields ``build``; ``direct`` paths stay listed."""
        reqs, main = self.reqs, self.main

        class _Final:
            def required(self, m: MV) -> list[MV]:
                return build[1:] if m == main else reqs.required(m)

            def max(self, path: str, v1: str, v2: str) -> str:
                return reqs.max(path, v1, v2)

        listed = [r.path for r in self._files.modfile.requires]
        base = [p for p in listed if p in direct] + sorted(direct - set(listed))
        minimal = mvs.req(main, base, _Final())
        self._files.modfile.set_requires(
            [(m.path, m.version, m.path not in direct) for m in minimal]
        )

    def forget_graph(self) -> None:
        """Drop what was learnt about the graph, and which wgt.sum lines it used."""
        self.reqs.forget()
        self.sums.forget_used()

    def prune_sums(self) -> None:
        """Keep in wgt.sum exactly the lines used since :meth:`forget_graph`."""
        self.sums.prune()

    def drop_unused_new_sums(self) -> None:
        """Drop the wgt.sum lines this command added but has not used since :meth:`forget_graph`."""
        self.sums.drop_unused_new()

    def changes(self) -> tuple[bool, bool]:
        """Whether (wgt.mod, wgt.sum) differ from what was loaded."""
        return self._files.changes()

    def save(self) -> None:
        """Write what changed: wgt.sum first, then wgt.mod; refuse under -mod=readonly."""
        self._files.save(self.opts.mod_mode)
