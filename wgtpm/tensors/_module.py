"""A module's tensor tables: the release's ``wgt.tensors.json``, or computed and cached.

:func:`tables_for` answers for one module of the build list, whose files the get
path has verified against wgt.sum:

1. when the release index lists ``wgt.tensors.json`` (so h1 locks it), its bytes are
   checked against the index entry and parsed, and each file's table must name a
   file of the index with the same size and sha256; one that disagrees is refused;
2. otherwise each ``.safetensors`` and ``.gguf`` file of the index present in the
   module's directory gets its table computed from the file, whose sha256 must be
   the index's (a changed copy is refused), and kept in the cache::

       $WGTPM_CACHE/tensors/<file sha256>.json    dump_tables() of that one file

   keyed by the file's content, so the same blob in two modules is read once. A
   cache entry that does not parse or describes another file is computed anew.
   A weights file a ``select FILE#TENSOR`` line left out gets the table a checksum
   database logged for it, if the cache keeps one (:mod:`._logged`: fetched and
   proven against the log when the module was downloaded). Tables are never taken
   from a source that neither h1 nor a checksum database's log vouches for.

A local directory replacement (no version, no release) has its tables computed
from the files on disk, every time, and cached nowhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from .._cachedir import default_root
from .._errors import CacheError, VerifyError
from .._fs import write_atomic
from ..deps import ResolvedModule
from ..index import ReleaseIndex
from ..index import parse as parse_index
from ._compute import compute_table, format_of
from ._errors import TensorError, TensorFormatError
from ._logged import check_against_index
from ._table import TABLES_FILE, FileTable, TensorTables, dump_tables, parse_tables

__all__ = ["cached_table_path", "release_index", "tables_for"]

_INDEX_FILE = "wgt.index.json"


def release_index(module: ResolvedModule, cache_dir: Path | None = None) -> ReleaseIndex | None:
    """The index of ``module``'s release: a ``wgt.index.json`` its directory holds, the
    file list of ``vendor/wgt.vendor.json`` for a vendored module, else the index the
    cache keeps beside its tree (``download/.../@v/V.index.json``, checked against
    wgt.sum when the module was resolved); ``None`` for a local directory."""
    if not module.version:
        return None
    own = module.dir / _INDEX_FILE
    if own.is_file():
        return parse_index(own.read_bytes(), module.path, module.version)
    vendored = _vendored_index(module)
    if vendored is not None:
        return vendored
    from ..cache import Cache

    data = Cache(cache_dir).read_meta(module.path, module.version, "index.json")
    return parse_index(data, module.path, module.version) if data is not None else None


def _vendored_index(module: ResolvedModule) -> ReleaseIndex | None:
    """The file list ``vendor/wgt.vendor.json`` keeps for a module under ``vendor/MODULE``
    (the vendor resolver checked it against wgt.sum and re-hashed the files before it
    handed the module out), as an index; ``None`` when the module is not vendored."""
    depth = len(module.path.split("/"))
    if len(module.dir.parts) <= depth or module.dir.as_posix().split("/")[-depth:] != (
        module.path.split("/")
    ):
        return None
    from ..modload._manifest import MANIFEST, manifest_index

    manifest = module.dir.parents[depth - 1] / MANIFEST
    if not manifest.is_file():
        return None
    from .. import _json

    try:
        doc = _json.loads(manifest.read_bytes())
        entry = next(m for m in doc["modules"] if m.get("path") == module.path)
        if entry.get("version") != module.version:
            return None
        return manifest_index(entry)
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        return None  # not a manifest this module came from: the cache's index is asked


def cached_table_path(sha256: str, cache_dir: Path | None = None) -> Path:
    """Where the computed table of the file with content ``sha256`` is kept."""
    return (cache_dir or default_root()) / "tensors" / f"{sha256}.json"


def tables_for(
    module: ResolvedModule,
    cache_dir: Path | None = None,
    *,
    index: ReleaseIndex | None = None,
    check: bool = False,
) -> TensorTables:
    """The tensor tables of ``module`` (see the module docstring); ``index`` is the
    verified release index when the caller holds it (else it is read as
    :func:`release_index` says). ``check``: compute the table of each of the release's
    files present here and refuse a release table that disagrees with it (reads each
    file once; without it, a tensor's bytes are checked when they are read)."""
    label = f"{module.path}@{module.version}" if module.version else module.path
    if index is None:
        index = release_index(module, cache_dir)
    if index is None:
        if module.version:
            raise TensorError(
                f"{label}: no release index in the module cache; run 'wgtpm get {module.path}'"
            )
        return _computed_local(module, label)
    entry = index.entry(TABLES_FILE)
    if entry is not None:
        tables = _released(module, label, index)
        if check:
            _check_against_files(module, label, tables)
        return tables
    files: dict[str, FileTable] = {}
    logged: TensorTables | None = None
    for e in index.files:
        path = module.dir / e.path
        if format_of(e.path) is None:
            continue
        if path.is_file():
            files[e.path] = _computed(
                path, e.path, e.sha256, e.size, f"{label}: {e.path}", cache_dir
            )
            continue
        # not selected (select FILE#TENSOR lines): a checksum database's proven tables
        if logged is None:
            logged = _kept(index, cache_dir)
        if e.path in logged.files:
            files[e.path] = logged.files[e.path]
    return TensorTables(files)


def _kept(index: ReleaseIndex, cache_dir: Path | None) -> TensorTables:
    """The logged tables the cache keeps for ``index``'s version (:mod:`._logged`)."""
    from ..cache import Cache
    from ._logged import kept_tables

    return kept_tables(Cache(cache_dir), index) or TensorTables()


def _released(module: ResolvedModule, label: str, index: ReleaseIndex) -> TensorTables:
    """The release's own tables, checked against its index: h1 locks both."""
    entry = index.entry(TABLES_FILE)
    assert entry is not None
    where = f"{label}: {TABLES_FILE}"
    try:
        data = (module.dir / TABLES_FILE).read_bytes()
    except FileNotFoundError:
        raise TensorError(
            f"{where}: listed in the release but not in {module.dir}; "
            f"run 'wgtpm get {module.path}' (a select line may leave it out: select it too)"
        ) from None
    got = hashlib.sha256(data).hexdigest()
    if got != entry.sha256 or len(data) != entry.size:
        raise VerifyError(
            module.path,
            module.version,
            f"{TABLES_FILE} in {module.dir} is not the file the release lists (sha256 {got}); "
            "'wgtpm verify' checks the module's files",
        )
    tables = parse_tables(data, where)
    check_against_index(tables, index, where)
    return tables


def _check_against_files(module: ResolvedModule, label: str, tables: TensorTables) -> None:
    """Refuse a release table that is not what the file it describes holds."""
    for rel, t in tables.files.items():
        path = module.dir / rel
        if not path.is_file():
            continue  # not selected here: checked when its bytes are read
        where = f"{label}: {TABLES_FILE}"
        got = compute_table(path, rel, where=f"{label}: {rel}")
        if got.metadata != t.metadata:
            raise TensorFormatError(where, f"the metadata of {rel} is not what the file holds")
        mine = {x.name: x for x in got.tensors}
        for x in t.tensors:
            if mine.get(x.name) != x:
                raise TensorFormatError(
                    where,
                    f"tensor {x.name!r} of {rel} is not what the file holds: the release is "
                    "inconsistent; do not use it, and tell its publisher",
                )
        if len(mine) != len(t.tensors):
            extra = sorted(set(mine) - {x.name for x in t.tensors})
            raise TensorFormatError(where, f"the table of {rel} leaves out tensor {extra[0]!r}")


def _computed(
    path: Path, relpath: str, sha256: str, size: int, where: str, cache_dir: Path | None
) -> FileTable:
    """The table of a verified file, from the cache or computed (and then cached)."""
    keep = cached_table_path(sha256, cache_dir)
    try:
        kept = parse_tables(keep.read_bytes(), str(keep))
        (t,) = kept.files.values()
        if (t.sha256, t.size, t.format) == (sha256, size, format_of(relpath)):
            return replace(t, path=relpath)
    except (OSError, TensorError, ValueError):
        pass  # missing or broken: computed anew below
    t = compute_table(path, relpath, where=where)
    if t.sha256 != sha256 or t.size != size:
        raise TensorFormatError(
            where,
            f"the file in {path.parent} has sha256 {t.sha256}, not the {sha256} its release "
            "lists: it changed after it was verified; run 'wgtpm verify'",
        )
    from ..cache import Cache

    try:
        with Cache(cache_dir).using():  # shared: 'wgtpm cache clean' waits for it
            keep.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(keep, dump_tables(TensorTables({relpath: t})))
    except (OSError, CacheError):
        pass  # a cache that cannot be written (read-only, full): the table is still right
    return t


def _computed_local(module: ResolvedModule, label: str) -> TensorTables:
    """Tables of the weights files in a local directory replacement (no release)."""
    files: dict[str, FileTable] = {}
    for p in sorted(module.dir.rglob("*")):
        rel = p.relative_to(module.dir).as_posix()
        hidden = any(s.startswith(".") for s in rel.split("/"))
        if format_of(rel) is None or hidden or not p.is_file():
            continue
        files[rel] = compute_table(p, rel, where=f"{label}: {rel}")
    return TensorTables(files)
