"""The checksum log in the database: one linear, append-only log of wgt.sum records.

Tables (created by migration ``0002``)::

    sumdb_records  id (the record's position, from 0) PRIMARY KEY, module, version, text;
                   UNIQUE (module, version)
    sumdb_hashes   idx PRIMARY KEY, hash (32 bytes): the tree's stored hashes
                   (:func:`wgtpm.sumdb.tlog.stored_hashes`), from which every tile is read
    sumdb_tree     one row, id = 1: size, hash (the root of the first ``size`` records),
                   vkey (the verifier key of the server that signs it, set by the first start)

Records are appended by :func:`append`, at most once per version (the
unique constraint on module and version), each inside the write
transaction of one of:

- :meth:`~registry.metadata.SqlMetadataStore.add_pending`: a proxied version
  the Hub API mirrors file by file (:mod:`registry.ondemand`) is logged when
  its index is first answered, in the transaction that records it as
  pending, before its large files are fetched and stored. A client checking
  the log can then verify the first download of any of its files.
- :meth:`~registry.metadata.SqlMetadataStore.commit_version`: any other
  public version is logged in the transaction that commits it. A version
  logged while pending is not logged again: its commit must carry the h1s
  logged then (else :class:`~registry.ConflictError`, and it stays pending)
  and drops the pending row.
- :meth:`SqlSumLog.catch_up`, at startup: public versions committed without
  being logged (by a server older than the log, during a rolling upgrade).

A committed public version whose release locks no tensor tables may get a
second record, keyed ``(module, version + "/wgt.tensors.json")``: the one line
of the tables the registry computed from its verified files
(:func:`tables_record_text`, appended by
:meth:`~registry.metadata.SqlMetadataStore.add_tensor_tables` with the row that
names their blob; :mod:`registry.tensortables`).

So every public committed version is logged, and every logged version was
committed or answered as pending (one whose files never all arrive stays
logged with the h1s that were answered: clients may have recorded them).
Appends are serialised by the tree row: on PostgreSQL ``SELECT ... FOR
UPDATE`` on it (the next appender waits, then reads the new size), on
SQLite the write transaction's ``BEGIN IMMEDIATE``; so every replica on one
database extends one log. The holder of the lock only writes rows nobody
else writes, so appends cannot deadlock with other commits.

:class:`SqlSumLog` reads the log for the server (:mod:`registry.sumdb`):
the tree head, a record's id, records and stored hashes (and catches up at
startup, above).

Private modules are not logged: a log is public, and their names would leak
(clients list them in ``WGTPRIVATE`` or ``WGTNOSUMDB``). Nor is any spelling
of the hosted namespace: the caching proxy fetches (and so logs) only
modules that no token's prefix reserves in any case on GitHub or Hugging Face
(:func:`registry.tokens.reserves`, :meth:`registry.proxy.CachingProxy.admit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from wgtpm import version as _version
from wgtpm._errors import WgtpmError
from wgtpm.module import check_path
from wgtpm.sumdb import record as _record
from wgtpm.sumdb import tlog
from wgtpm.sumdb.tlog import Tree

from ._errors import StoreError

__all__ = [
    "TABLES_SUFFIX",
    "SqlSumLog",
    "append",
    "record_text",
    "sumdb_hashes",
    "sumdb_records",
    "sumdb_tree",
    "tables_record_text",
]

_T = TypeVar("_T")
_meta = sa.MetaData()

sumdb_records = sa.Table(
    "sumdb_records",
    _meta,
    sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("module", sa.String(512), nullable=False),
    sa.Column("version", sa.String(300), nullable=False),
    sa.Column("text", sa.LargeBinary, nullable=False),
    sa.UniqueConstraint("module", "version", name="uq_sumdb_records_module_version"),
)

sumdb_hashes = sa.Table(
    "sumdb_hashes",
    _meta,
    sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("hash", sa.LargeBinary(32), nullable=False),
)

sumdb_tree = sa.Table(
    "sumdb_tree",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("hash", sa.LargeBinary(32), nullable=False),
    sa.Column("vkey", sa.String(512)),
)

TREE_ROW = 1


def _loggable(module: str, version: str) -> bool:
    """Whether ``module@version`` may have a record (:func:`record_text` would raise)."""
    try:
        check_path(module)
    except WgtpmError:
        return False
    return _version.is_valid(version)


def record_text(module: str, version: str, h1: str, mod_h1: str) -> bytes:
    """The record of ``module@version``: its two wgt.sum lines."""
    return _record.record_text(module, version, h1, mod_h1)


#: The version of a tables record ends in this (:func:`wgtpm.sumdb.record.tables_record_text`).
TABLES_SUFFIX = _record.TABLES_SUFFIX


def tables_record_text(module: str, version: str, h1: str) -> bytes:
    """The second record of ``module@version``: the line of its computed tensor tables."""
    return _record.tables_record_text(module, version, h1)


class _Hashes:
    """A HashReader over ``sumdb_hashes`` in ``conn``'s transaction, plus hashes not yet read
    back (``extra``)."""

    def __init__(self, conn: Connection, extra: dict[int, bytes] | None = None) -> None:
        self.conn = conn
        self.extra = extra or {}

    def __call__(self, indexes: Sequence[int]) -> list[bytes]:
        want = [i for i in indexes if i not in self.extra]
        got = dict(self.extra)
        if want:
            rows = self.conn.execute(
                sa.select(sumdb_hashes.c.idx, sumdb_hashes.c.hash).where(
                    sumdb_hashes.c.idx.in_(sorted(set(want)))
                )
            )
            got.update((int(r.idx), bytes(r.hash)) for r in rows)
        try:
            return [got[i] for i in indexes]
        except KeyError as exc:
            raise StoreError(f"checksum log: stored hash {exc.args[0]} is missing") from None


def _lock_tree(conn: Connection) -> Tree:
    """Take the append lock (the tree row, for the rest of the transaction) and read the tree."""
    q = sa.select(sumdb_tree.c.size, sumdb_tree.c.hash).where(sumdb_tree.c.id == TREE_ROW)
    row = conn.execute(q.with_for_update()).one_or_none()
    if row is None:
        raise StoreError("checksum log: the sumdb_tree row is missing (migration 0002 not run?)")
    return Tree(int(row.size), bytes(row.hash))


def append(conn: Connection, module: str, version: str, text: bytes) -> int:
    """Append ``text`` as the record of ``module@version``, in ``conn``'s (write) transaction.

    Returns the record's id. The caller commits; an ``IntegrityError`` means
    ``module@version`` is logged already (the caller's transaction rolls back).
    """
    tree = _lock_tree(conn)
    n = tree.n
    conn.execute(sumdb_records.insert().values(id=n, module=module, version=version, text=text))
    hashes = tlog.stored_hashes(n, text, _Hashes(conn))
    first = tlog.stored_hash_index(0, n)
    new = {first + i: h for i, h in enumerate(hashes)}
    conn.execute(sumdb_hashes.insert(), [{"idx": i, "hash": h} for i, h in new.items()])
    root = tlog.tree_hash(n + 1, _Hashes(conn, new))
    conn.execute(
        sumdb_tree.update().where(sumdb_tree.c.id == TREE_ROW).values(size=n + 1, hash=root)
    )
    return n


class SqlSumLog:
    """Reads the checksum log; its one write is :meth:`catch_up` (the other appends happen
    in :meth:`~registry.metadata.SqlMetadataStore.add_pending` and
    :meth:`~registry.metadata.SqlMetadataStore.commit_version`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _read(self, fn: Callable[[Connection], _T]) -> _T:
        try:
            with self.engine.connect() as conn, conn.begin():
                return fn(conn)
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"checksum log: database error: {exc}") from exc

    def tree(self) -> Tree:
        """The latest tree head: size and root hash."""

        def read(conn: Connection) -> Tree:
            row = conn.execute(
                sa.select(sumdb_tree.c.size, sumdb_tree.c.hash).where(sumdb_tree.c.id == TREE_ROW)
            ).one_or_none()
            if row is None:
                raise StoreError("checksum log: the sumdb_tree row is missing")
            return Tree(int(row.size), bytes(row.hash))

        return self._read(read)

    def lookup(self, module: str, version: str) -> int | None:
        """The id of ``module@version``'s record; ``None`` when it is not logged."""
        q = sa.select(sumdb_records.c.id).where(
            sumdb_records.c.module == module, sumdb_records.c.version == version
        )
        rid: Any = self._read(lambda conn: conn.execute(q).scalar())
        return None if rid is None else int(rid)

    def records(self, start: int, n: int) -> list[bytes]:
        """The texts of records ``start`` to ``start + n - 1``; fewer when the log is shorter."""
        q = (
            sa.select(sumdb_records.c.text)
            .where(sumdb_records.c.id >= start, sumdb_records.c.id < start + n)
            .order_by(sumdb_records.c.id)
        )
        return self._read(lambda conn: [bytes(t) for t in conn.execute(q).scalars()])

    def hashes(self, indexes: Sequence[int]) -> list[bytes] | None:
        """The stored hashes at ``indexes``; ``None`` when one is not stored (yet)."""

        def read(conn: Connection) -> list[bytes] | None:
            try:
                return _Hashes(conn)(indexes)
            except StoreError:
                return None

        return self._read(read)

    def catch_up(self) -> int:
        """Append the public committed versions the log lacks, oldest first; returns how many.

        None exist unless a server older than the log committed versions into
        this database (a rolling upgrade): the registry runs this at startup.
        """
        q = sa.text(
            "SELECT m.path, v.version, v.h1, v.mod_h1 FROM versions v"
            " JOIN modules m ON v.module_id = m.id"
            " LEFT JOIN sumdb_records r ON r.module = m.path AND r.version = v.version"
            " WHERE v.committed AND NOT m.private AND r.id IS NULL ORDER BY v.id"
        )
        with self.engine.connect() as conn:
            conn.info["wgt_write"] = True
            try:
                with conn.begin():
                    missing = conn.execute(q).all()
                    if missing:
                        _lock_tree(conn)  # then look again: another replica may have caught up
                        missing = conn.execute(q).all()
                    # A row an older server let in with an invalid path or version (one
                    # ending in a newline) is left out: its record would not parse back.
                    missing = [r for r in missing if _loggable(r[0], r[1])]
                    for path, version, h1, mod_h1 in missing:
                        append(conn, path, version, record_text(path, version, h1, mod_h1))
                    return len(missing)
            except sa.exc.SQLAlchemyError as exc:
                raise StoreError(f"checksum log: database error: {exc}") from exc

    def claim_key(self, vkey: str) -> str:
        """Record ``vkey`` as the log's verifier key unless one is recorded; return the one
        recorded (a replica whose key differs must not sign this log)."""

        def claim(conn: Connection) -> str:
            conn.execute(
                sumdb_tree.update()
                .where(sumdb_tree.c.id == TREE_ROW, sumdb_tree.c.vkey.is_(None))
                .values(vkey=vkey)
            )
            got = conn.execute(
                sa.select(sumdb_tree.c.vkey).where(sumdb_tree.c.id == TREE_ROW)
            ).scalar()
            return str(got)

        with self.engine.connect() as conn:
            conn.info["wgt_write"] = True
            try:
                with conn.begin():
                    return claim(conn)
            except sa.exc.SQLAlchemyError as exc:
                raise StoreError(f"checksum log: database error: {exc}") from exc
