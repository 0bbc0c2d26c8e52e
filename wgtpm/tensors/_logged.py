"""Tensor tables a registry logged for a release that locks none: fetched, proven, kept.

A registry computes the tables of a version whose index lists no
``wgt.tensors.json`` (a Hugging Face repository, say) from its verified files,
serves them beside the index (``$module/@v/$version.tensors.json``) and appends
their record to its checksum log (``M V/wgt.tensors.json h1:...``,
:func:`wgtpm.sumdb.record.tables_record_text`). :func:`logged_tables` uses them
only when that record proves them:

1. the tables kept in the cache beside the version's index::

       $WGTPM_CACHE/download/MODULE/@v/VERSION.tensors.json

   (written only after step 3 below, atomically; a cache that is itself served as a
   ``file://`` proxy serves them too);
2. else, when ``WGTSUMDB`` names a checksum database and the module is not
   private (``WGTPRIVATE``/``WGTNOSUMDB``), the tables from the source that serves
   the version (a direct source has none);
3. their Hash1 over the one file ``wgt.tensors.json`` must be the log's line for
   ``V/wgt.tensors.json`` (:class:`~wgtpm.sumdb.remote.SumdbCheck`), and each
   file's table must name a file of the verified index with its size and sha256.

``None`` (no database, a private module, no tables served, no record in the log,
a database that cannot be reached) means: compute the tables from the file, as
without a registry. A log that holds other tables than the ones served is a
checksum SECURITY ERROR, and tables the log holds that disagree with the index
are a :class:`TensorFormatError`: neither falls back quietly.

Every tensor read with these tables is still checked against its sha256 before
it is returned; the log only vouches that everyone is told the same ranges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import CacheError, FetchError, NotFoundError, SumdbVerifyError
from ._compute import format_of
from ._errors import TensorFormatError
from ._table import TABLES_FILE, TensorTables, parse_tables

if TYPE_CHECKING:
    from ..cache import Cache
    from ..index import ReleaseIndex
    from ..modfetch import Fetcher

__all__ = ["LOGGED_EXT", "check_against_index", "kept_tables", "logged_tables"]

#: The cache's metadata name of a version's logged tables (``VERSION.tensors.json``).
LOGGED_EXT = "tensors.json"


def check_against_index(tables: TensorTables, index: ReleaseIndex, where: str) -> None:
    """Refuse ``tables`` unless each file's table names a file of ``index`` with its size,
    sha256 and format (:class:`TensorFormatError` naming ``where``)."""
    for path, t in tables.files.items():
        e = index.entry(path)
        if e is None:
            raise TensorFormatError(
                where, f"has a table for {path}, which the release does not hold"
            )
        if (t.size, t.sha256) != (e.size, e.sha256):
            raise TensorFormatError(
                where,
                f"the table of {path} is for a file of {t.size} bytes and sha256 {t.sha256}, "
                f"but the release's {path} has {e.size} bytes and sha256 {e.sha256}: "
                "the release is inconsistent; do not use it, and tell its publisher",
            )
        if format_of(path) != t.format:
            raise TensorFormatError(where, f"the table of {path} says format {t.format}")


def kept_tables(cache: Cache, index: ReleaseIndex) -> TensorTables | None:
    """The logged tables kept in ``cache`` for ``index``'s version (step 1), or ``None``."""
    data = cache.read_meta(index.module, index.version, LOGGED_EXT)
    if data is None:
        return None
    where = f"{index.module}@{index.version}: {TABLES_FILE} (logged)"
    tables = parse_tables(data, where)
    check_against_index(tables, index, where)
    return tables


def logged_tables(fetcher: Fetcher, index: ReleaseIndex) -> TensorTables | None:
    """The tables of ``index``'s version that a checksum database logged, proven (see the
    module docstring); ``None`` when there are none to prove."""
    if index.entry(TABLES_FILE) is not None:
        return None  # the release locks its own
    cache = fetcher.cache
    kept = kept_tables(cache, index)
    if kept is not None:
        return kept
    from ..sumdb.remote import check_from_env

    check = check_from_env(cache, fetcher.http)
    module, version = index.module, index.version
    if check is None or check.config.skips(module):
        return None  # nothing could prove them
    read = getattr(fetcher.source, "tables", None)
    try:
        data = read(module, version) if read is not None else None
    except (FetchError, NotFoundError):
        return None  # the source could not serve them: compute them
    if data is None:
        return None
    from ..dirhash import hash1_bytes
    from ..sumdb.record import TABLES_SUFFIX

    try:
        check(module, version + TABLES_SUFFIX, hash1_bytes({TABLES_FILE: data}))
    except SumdbVerifyError:
        return None  # not logged (yet), or the database cannot be asked: compute them
    where = f"{module}@{version}: {TABLES_FILE} (logged by {check.config.name})"
    tables = parse_tables(data, where)
    check_against_index(tables, index, where)
    try:
        with cache.using():  # shared: 'wgtpm cache clean' waits for it
            cache.write_meta(module, version, LOGGED_EXT, data)
    except (OSError, CacheError):
        pass  # a cache that cannot be written: the tables are still proven
    return tables
