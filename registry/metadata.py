"""The registry's metadata in SQL, through SQLAlchemy Core: SQLite or PostgreSQL.

Tables (created and upgraded by the Alembic migrations in
``registry/migrations/``, run at startup by :func:`open_metadata_store`)::

    modules   id, path UNIQUE, private, created, proxied
    versions  id, module_id -> modules, version, h1, mod_h1, index_sha256,
              time, commit, committed, created;  UNIQUE (module_id, version)
    files     version_id -> versions, path, size, sha256;  PRIMARY KEY (version_id, path)
    uploads   id, module, version, h1, index_sha256, private, token_id, created
    upload_blobs  upload_id -> uploads (ON DELETE CASCADE), sha256;  PRIMARY KEY (both)
    tokens    id, secret_sha256 UNIQUE, prefix, scope, created, revoked
    pending_versions  module, version (PRIMARY KEY), h1, mod_h1, index_sha256,
              mod_sha256, time, commit, created
    attestations  module, version (PRIMARY KEY), sha256
    signatures    module, version (PRIMARY KEY), sha256
    tensor_tables module, version (PRIMARY KEY), sha256
    sumdb_records, sumdb_hashes, sumdb_tree   the checksum log (:mod:`registry.sumlog`)

Times are ISO 8601 UTC strings (``2026-12-01T01:33:53Z``), the same on both
databases. ``modules.private`` is fixed by the first publish of a module.
``modules.proxied`` marks a cached copy of an upstream's module
(:mod:`registry.proxy`). ``versions.committed`` is true for every version
that is recorded; a false row is a caching proxy's reservation
(:meth:`SqlMetadataStore.reserve_version`): one process, on any replica, is
fetching that version from the upstream. Readers only ever see committed rows.
A ``pending_versions`` row is a proxied version whose index the Hub API
answered before its files were all stored (:mod:`registry.ondemand`): its
index and wgt.mod are blobs, so any replica serves its files from the row
(:meth:`SqlMetadataStore.add_pending`, :meth:`~SqlMetadataStore.get_pending`).
An ``attestations`` row names the blob of a version's SLSA provenance
statement (not one of its files: h1 does not cover it), written with the
version (:attr:`NewVersion.attestation_sha256`). A ``signatures`` row, likewise,
names the blob of its signature (a model-signing bundle over its index,
:mod:`wgtpm.trust`; :attr:`NewVersion.signature_sha256`).
A ``tensor_tables`` row names the blob of the tensor tables the registry computed
for a committed public version whose release locks none (:mod:`registry.tensortables`),
written in the transaction that appends their record to the checksum log
(:meth:`SqlMetadataStore.add_tensor_tables`).
An ``upload_blobs`` row says that upload ``upload_id`` sent blob ``sha256``
itself, its hash checked: blobs are shared by sha256, and a commit may name
a stored blob only when its upload sent it or its token can read a committed
version that lists it (:meth:`SqlMetadataStore.public_blobs`,
:meth:`~SqlMetadataStore.private_blob_modules`; ``files.sha256`` is indexed).

Committing a version is one transaction that inserts the version and its
files; ``UNIQUE (module_id, version)`` makes it race-free across processes
and replicas: whoever commits second finds the first's row, and gets a no-op
when the h1s agree and :class:`ConflictError` when they do not. The same
transaction appends the version's record to the checksum log
(:func:`registry.sumlog.append`, unless the module is private), so a
version is committed if and only if it is logged, unless it was logged
already while pending: then it must have the pending row's h1s (else
:class:`ConflictError`), and the row is deleted. On SQLite
write transactions start with ``BEGIN IMMEDIATE`` (WAL mode, a busy
timeout), so concurrent writers queue instead of failing.
"""

from __future__ import annotations

import abc
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from . import sumlog as _sumlog
from ._errors import ConflictError, StoreError

__all__ = [
    "CommitOutcome",
    "FileRecord",
    "MetadataStore",
    "ModuleRecord",
    "NewVersion",
    "PendingRecord",
    "SqlMetadataStore",
    "TokenRecord",
    "UploadRecord",
    "VersionRecord",
    "metadata",
    "now",
    "open_metadata_store",
]

metadata = sa.MetaData()

modules = sa.Table(
    "modules",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("path", sa.String(512), nullable=False, unique=True),
    sa.Column("private", sa.Boolean, nullable=False),
    sa.Column("created", sa.String(32), nullable=False),
    sa.Column("proxied", sa.Boolean, nullable=False, server_default=sa.false()),
)

versions = sa.Table(
    "versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("module_id", sa.Integer, sa.ForeignKey("modules.id"), nullable=False),
    sa.Column("version", sa.String(300), nullable=False),
    sa.Column("h1", sa.String(64), nullable=False),
    sa.Column("mod_h1", sa.String(64), nullable=False),
    sa.Column("index_sha256", sa.String(64), nullable=False),
    sa.Column("time", sa.String(64)),
    sa.Column("commit", sa.String(64)),
    sa.Column("committed", sa.Boolean, nullable=False),
    sa.Column("created", sa.String(32), nullable=False),
    sa.UniqueConstraint("module_id", "version", name="uq_versions_module_version"),
)

files = sa.Table(
    "files",
    metadata,
    sa.Column(
        "version_id",
        sa.Integer,
        sa.ForeignKey("versions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False, index=True),
)

uploads = sa.Table(
    "uploads",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("module", sa.String(512), nullable=False),
    sa.Column("version", sa.String(300), nullable=False),
    sa.Column("h1", sa.String(64), nullable=False),
    sa.Column("index_sha256", sa.String(64), nullable=False),
    sa.Column("private", sa.Boolean, nullable=False),
    sa.Column("token_id", sa.String(64)),
    sa.Column("created", sa.String(32), nullable=False, index=True),
)

upload_blobs = sa.Table(
    "upload_blobs",
    metadata,
    sa.Column(
        "upload_id",
        sa.String(64),
        sa.ForeignKey("uploads.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("sha256", sa.String(64), primary_key=True),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(512), nullable=False),
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("created", sa.String(32), nullable=False),
    sa.Column("revoked", sa.String(32)),
)


attestations = sa.Table(
    "attestations",
    metadata,
    sa.Column("module", sa.String(512), primary_key=True),
    sa.Column("version", sa.String(300), primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
)


signatures = sa.Table(
    "signatures",
    metadata,
    sa.Column("module", sa.String(512), primary_key=True),
    sa.Column("version", sa.String(300), primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
)


tensor_tables = sa.Table(
    "tensor_tables",
    metadata,
    sa.Column("module", sa.String(512), primary_key=True),
    sa.Column("version", sa.String(300), primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
)


pending_versions = sa.Table(
    "pending_versions",
    metadata,
    sa.Column("module", sa.String(512), primary_key=True),
    sa.Column("version", sa.String(300), primary_key=True),
    sa.Column("h1", sa.String(64), nullable=False),
    sa.Column("mod_h1", sa.String(64), nullable=False),
    sa.Column("index_sha256", sa.String(64), nullable=False),
    sa.Column("mod_sha256", sa.String(64), nullable=False),
    sa.Column("time", sa.String(64)),
    sa.Column("commit", sa.String(64)),
    sa.Column("created", sa.String(32), nullable=False),
)


def now() -> str:
    """The current UTC time as the tables store it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ModuleRecord:
    path: str
    private: bool
    created: str
    proxied: bool = False


@dataclass(frozen=True)
class FileRecord:
    """One file of a committed version."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class VersionRecord:
    """A committed ``module@version``."""

    module: str
    version: str
    h1: str
    mod_h1: str
    index_sha256: str
    time: str | None
    commit: str | None
    private: bool
    created: str


@dataclass(frozen=True)
class NewVersion:
    """What :meth:`MetadataStore.commit_version` records."""

    module: str
    version: str
    h1: str
    mod_h1: str
    index_sha256: str
    files: Sequence[FileRecord]
    time: str | None = None
    commit: str | None = None
    private: bool = False
    proxied: bool = False  # a new module is marked as a cached copy of the upstream's
    attestation_sha256: str | None = None  # the blob of its SLSA statement, outside h1
    signature_sha256: str | None = None  # the blob of its signature (wgtpm.trust), outside h1


@dataclass(frozen=True)
class PendingRecord:
    """A proxied version logged from its index before its files are all stored: its index
    and wgt.mod are the blobs ``index_sha256`` and ``mod_sha256``."""

    module: str
    version: str
    h1: str
    mod_h1: str
    index_sha256: str
    mod_sha256: str
    time: str | None = None
    commit: str | None = None
    created: str = field(default_factory=now)


@dataclass(frozen=True)
class CommitOutcome:
    """The committed version, and whether this call created it (``False``: it was there)."""

    version: VersionRecord
    created: bool


@dataclass(frozen=True)
class UploadRecord:
    """An upload session: the index is stored, files may still be missing."""

    id: str
    module: str
    version: str
    h1: str
    index_sha256: str
    private: bool = False
    token_id: str | None = None
    created: str = field(default_factory=now)


@dataclass(frozen=True)
class TokenRecord:
    """A token as stored: only the sha256 of its secret."""

    id: str
    secret_sha256: str
    prefix: str
    scope: str
    created: str = field(default_factory=now)
    revoked: str | None = None


class MetadataStore(abc.ABC):
    """What the registry keeps besides blobs. Every implementation passes
    ``tests/registry/test_metadata.py``."""

    @abc.abstractmethod
    def get_module(self, path: str) -> ModuleRecord | None: ...

    @abc.abstractmethod
    def list_modules(self) -> list[ModuleRecord]:
        """Every module with at least one committed version, sorted by path."""

    @abc.abstractmethod
    def all_versions(self) -> dict[str, list[str]]:
        """The committed versions of every module, by module path (one query, for pages)."""

    @abc.abstractmethod
    def reserve_version(self, module: str, version: str, stale_before: str) -> str:
        """Claim the right to fill ``module@version`` (a proxied module, public).

        Returns ``"committed"`` when it is committed already, ``"busy"`` when
        another process reserved it at ``stale_before`` or later, else
        ``"reserved"``: the caller holds it (a stale reservation is taken
        over) until it commits the version or calls :meth:`release_version`.
        """

    @abc.abstractmethod
    def renew_reservation(self, module: str, version: str) -> bool:
        """Stamp a reservation of ``module@version`` with the current time, so that a long
        fill is not taken for dead; ``False`` when there is no reservation (any more)."""

    @abc.abstractmethod
    def release_version(self, module: str, version: str) -> None:
        """Drop a reservation of ``module@version`` (a committed version stays)."""

    @abc.abstractmethod
    def list_versions(self, module: str) -> list[str]:
        """The committed versions of ``module``, in no particular order."""

    @abc.abstractmethod
    def get_version(self, module: str, version: str) -> VersionRecord | None: ...

    @abc.abstractmethod
    def list_files(self, module: str, version: str) -> list[FileRecord]:
        """The files of a committed version, sorted by path."""

    @abc.abstractmethod
    def get_file(self, module: str, version: str, path: str) -> FileRecord | None: ...

    def find_file(
        self, module: str, version: str, path: str
    ) -> tuple[ModuleRecord | None, VersionRecord | None, FileRecord | None]:
        """The module, its committed ``version`` and that version's file ``path``, each
        ``None`` when missing (a store may read them at once)."""
        mod = self.get_module(module)
        v = None if mod is None else self.get_version(module, version)
        return mod, v, None if v is None else self.get_file(module, version, path)

    def get_attestation(self, module: str, version: str) -> str | None:
        """The sha256 of the blob holding the SLSA statement of ``module@version``, if any."""
        return None

    def get_signature(self, module: str, version: str) -> str | None:
        """The sha256 of the blob holding the signature of ``module@version``, if any."""
        return None

    def get_tensor_tables(self, module: str, version: str) -> str | None:
        """The sha256 of the blob holding the tensor tables the registry computed and
        logged for ``module@version``, if any."""
        return None

    def add_tensor_tables(self, module: str, version: str, sha256: str, record: bytes) -> str:
        """Name blob ``sha256`` as the computed tensor tables of the committed public
        ``module@version`` and append ``record`` (their line) to the checksum log, in one
        transaction; returns the sha256 recorded (another replica's, when it was first)."""
        raise NotImplementedError

    @abc.abstractmethod
    def commit_version(self, new: NewVersion) -> CommitOutcome:
        """Record ``new`` atomically; a no-op when it is there with the same h1s.

        Raises :class:`ConflictError` when it is there with other h1s. A new
        module takes ``new.private``; an existing one keeps its flag.
        """

    @abc.abstractmethod
    def add_pending(self, rec: PendingRecord) -> PendingRecord | None:
        """Record ``rec`` and log its h1s in one transaction; the row recorded first when
        there is one (another replica's), ``None`` when the version is committed already."""

    @abc.abstractmethod
    def get_pending(self, module: str, version: str) -> PendingRecord | None: ...

    @abc.abstractmethod
    def add_upload(self, upload: UploadRecord) -> None: ...

    @abc.abstractmethod
    def get_upload(self, upload_id: str) -> UploadRecord | None: ...

    @abc.abstractmethod
    def delete_upload(self, upload_id: str) -> None: ...

    @abc.abstractmethod
    def delete_uploads_before(self, created: str) -> int:
        """Forget upload sessions started before ``created``; returns how many."""

    @abc.abstractmethod
    def count_uploads_before(self, created: str) -> int:
        """How many upload sessions started before ``created`` (what
        :meth:`delete_uploads_before` would forget)."""

    @abc.abstractmethod
    def add_upload_blob(self, upload_id: str, sha256: str) -> None:
        """Record that upload ``upload_id`` sent blob ``sha256`` (its hash checked); a no-op
        when recorded already or when the upload is gone."""

    @abc.abstractmethod
    def upload_blobs(self, upload_id: str) -> set[str]:
        """The sha256s upload ``upload_id`` sent itself."""

    @abc.abstractmethod
    def public_blobs(self, shas: Collection[str]) -> set[str]:
        """Those of ``shas`` that a committed version of a public module lists."""

    @abc.abstractmethod
    def private_blob_modules(self, shas: Collection[str]) -> dict[str, set[str]]:
        """For each of ``shas`` that a committed version of a private module lists, the
        paths of those modules."""

    @abc.abstractmethod
    def blob_references(self, shas: Collection[str] | None = None) -> set[str]:
        """The sha256s that a row names (of ``shas``, or all when ``None``): a file of any
        version, the index of a version, an upload or a pending version, a pending
        version's wgt.mod, an attestation, a signature, a blob an upload sent
        (:mod:`registry.gc`)."""

    @abc.abstractmethod
    def open_indexes(self) -> set[str]:
        """The sha256s of the indexes of uploads and pending versions: their files are
        referenced too, before any ``files`` row names them (:mod:`registry.gc`)."""

    @abc.abstractmethod
    def add_token(self, token: TokenRecord) -> None: ...

    @abc.abstractmethod
    def get_token(self, token_id: str) -> TokenRecord | None: ...

    @abc.abstractmethod
    def list_tokens(self) -> list[TokenRecord]: ...

    @abc.abstractmethod
    def revoke_token(self, token_id: str) -> bool:
        """Mark the token revoked; ``False`` when there is no such token."""

    @abc.abstractmethod
    def ping(self) -> None:
        """Raise :class:`StoreError` unless the database answers."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""


def _set_beside(conn: Any, table: sa.Table, module: str, version: str, sha: str) -> None:
    """Name the blob served beside ``module@version`` (its SLSA statement or its
    signature) in ``table``, over a row a lost commit may have left."""
    conn.execute(table.delete().where(table.c.module == module, table.c.version == version))
    conn.execute(table.insert().values(module=module, version=version, sha256=sha))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" hook below issues BEGIN
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    # Switching a new file to WAL needs it to itself and does not wait for the busy timeout:
    # while another starter holds a transaction, retry (once in WAL, the mode sticks).
    deadline = time.monotonic() + 30
    while cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            cur.execute("PRAGMA journal_mode=WAL")  # answers the mode it got (memory: memory)
            break
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    for pragma in ("PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"):
        cur.execute(pragma)
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("wgt_write") else "BEGIN")


def _inserted_id(res: sa.CursorResult[Any]) -> int:
    pk = res.inserted_primary_key
    assert pk is not None, "an INSERT of one row has a primary key"
    return int(pk[0])


def _version(
    module: str,
    version: str,
    h1: str,
    mod_h1: str,
    index_sha256: str,
    time: str | None,
    commit: str | None,
    private: Any,
    created: str,
) -> VersionRecord:
    return VersionRecord(
        module, version, h1, mod_h1, index_sha256, time, commit, bool(private), created
    )


def normalise_url(url: str) -> str:
    """``postgresql://`` (and ``postgres://``) through psycopg 3; a bare path as SQLite."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    if "://" not in url:
        return "sqlite:///" + str(Path(url).absolute())
    return url


def create_engine(url: str) -> Engine:
    """An engine for ``url`` with the settings the store relies on."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=10,
            max_overflow=40,  # one per worker thread at most (anyio's default pool is 40)
        )
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        sa.event.listen(engine, "begin", _sqlite_begin)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _reader(engine: Engine) -> Engine:
    """The engine :meth:`SqlMetadataStore._fetch` reads with: ``engine`` itself on SQLite
    (its connections run without a transaction already), else one of the same URL in
    autocommit, whose pool neither pings at checkout nor rolls back at return."""
    if engine.dialect.name == "sqlite":
        return engine
    return sa.create_engine(
        engine.url,
        isolation_level="AUTOCOMMIT",
        pool_reset_on_return=None,
        pool_size=10,
        max_overflow=20,
    )


_VERSION_COLS = (
    modules.c.path,
    versions.c.version,
    versions.c.h1,
    versions.c.mod_h1,
    versions.c.index_sha256,
    versions.c.time,
    versions.c.commit,
    modules.c.private,
    versions.c.created,
)
_IN_CHUNK = 500  # sha256s per IN (...) list: SQLite allows 32,766 bound parameters, old ones 999
_MODULE_COLS = (modules.c.path, modules.c.private, modules.c.created, modules.c.proxied)
_by_module = modules.c.path == sa.bindparam("module")
_of_version = sa.and_(
    versions.c.module_id == modules.c.id,
    versions.c.version == sa.bindparam("version"),
    versions.c.committed.is_(True),
)
# The reads on every request, prebuilt, compiled once per store and run by _fetch.
_READS: dict[str, sa.Select[Any]] = {
    "module": sa.select(*_MODULE_COLS).where(_by_module),
    "versions": sa.select(versions.c.version)
    .join(modules, versions.c.module_id == modules.c.id)
    .where(_by_module, versions.c.committed.is_(True)),
    "version": sa.select(*_VERSION_COLS)
    .select_from(modules)
    .join(versions, _of_version)
    .where(_by_module),
    "file": sa.select(files.c.path, files.c.size, files.c.sha256)
    .join(versions, files.c.version_id == versions.c.id)
    .join(modules, _of_version)
    .where(_by_module, files.c.path == sa.bindparam("path")),
    "find": sa.select(
        *_MODULE_COLS, *_VERSION_COLS[1:7], versions.c.created, files.c.size, files.c.sha256
    )
    .select_from(modules)
    .outerjoin(versions, _of_version)
    .outerjoin(
        files, sa.and_(files.c.version_id == versions.c.id, files.c.path == sa.bindparam("path"))
    )
    .where(_by_module),
    # the change signal (:meth:`SqlMetadataStore.change_count`): committed versions only grow
    "changes": sa.select(sa.func.count())
    .select_from(versions)
    .where(versions.c.committed.is_(True)),
}


class SqlMetadataStore(MetadataStore):
    """:class:`MetadataStore` on any database SQLAlchemy reaches (SQLite, PostgreSQL).

    The reads every request makes (:data:`_READS`) are compiled once and run
    straight on a pooled DBAPI connection (:meth:`_fetch`): SQLAlchemy's work per
    execution costs ten times the query itself on SQLite. On PostgreSQL they go
    through a second pool in autocommit (:func:`_reader`): no transaction to end, no
    rollback and no ping per read; a connection that fails is dropped and the read
    tried once more on another (pre-ping only after an error).

    :attr:`local_changes` counts the versions this process committed: with
    :meth:`change_count` (every process's), it tells a cache when its answers may
    be out of date (:class:`registry.fastpath.FastPath`).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.reader = _reader(engine)
        self.local_changes = 0
        self._bump = threading.Lock()  # commits run in worker threads: no increment lost
        #: reads are from a local file (SQLite): cheap enough to run on the event loop
        self.local = engine.dialect.name == "sqlite"
        self._dbapi_error: type[Exception] = engine.dialect.loaded_dbapi.Error
        self._reads: dict[str, tuple[str, tuple[str, ...] | None]] = {}
        for name, stmt in _READS.items():
            c = stmt.compile(dialect=engine.dialect)
            self._reads[name] = (str(c), tuple(c.positiontup) if c.positiontup else None)

    def _fetch(self, read: str, **params: str) -> list[Any]:
        """The rows of the prebuilt read ``read`` (a key of :data:`_READS`)."""
        sql, order = self._reads[read]
        args: Any = params if order is None else tuple(params[k] for k in order)
        for attempt in range(2):
            try:
                conn = self.reader.raw_connection()
            except (SQLAlchemyError, self._dbapi_error) as exc:
                raise StoreError(f"database error: {exc}") from exc
            try:
                cur = conn.cursor()
                cur.execute(sql, args)
                rows = list(cur.fetchall())
                cur.close()
                return rows
            except self._dbapi_error as exc:
                conn.invalidate()  # closed, never handed out again (the server restarted?)
                if attempt:
                    raise StoreError(f"database error: {exc}") from exc
            finally:
                conn.close()  # back to the pool (SQLite, PostgreSQL: autocommit, no rollback)
        raise AssertionError("unreachable")

    def change_count(self) -> int:
        """The number of committed versions, on any replica: it changes whenever one is
        committed (published, or stored by the caching proxy), in the committing
        transaction, and never otherwise (versions are never deleted). One indexed
        count; :class:`registry.fastpath.FastPath` reads it a few times a second."""
        return int(self._fetch("changes")[0][0])

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                conn.info["wgt_write"] = write
                with conn.begin():
                    yield conn
        except (ConflictError, IntegrityError):
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"database error: {exc}") from exc

    # -- modules, versions, files

    @staticmethod
    def _module_record(row: Any) -> ModuleRecord:
        return ModuleRecord(row.path, bool(row.private), row.created, bool(row.proxied))

    def get_module(self, path: str) -> ModuleRecord | None:
        rows = self._fetch("module", module=path)
        if not rows:
            return None
        m_path, private, created, proxied = rows[0]
        return ModuleRecord(m_path, bool(private), created, bool(proxied))

    def list_modules(self) -> list[ModuleRecord]:
        has = sa.exists().where(versions.c.module_id == modules.c.id, versions.c.committed)
        with self._tx() as conn:
            rows = conn.execute(sa.select(*_MODULE_COLS).where(has).order_by(modules.c.path))
            return [self._module_record(r) for r in rows]

    def all_versions(self) -> dict[str, list[str]]:
        q = (
            sa.select(modules.c.path, versions.c.version)
            .join(modules, versions.c.module_id == modules.c.id)
            .where(versions.c.committed.is_(True))
        )
        out: dict[str, list[str]] = {}
        with self._tx() as conn:
            for r in conn.execute(q):
                out.setdefault(r.path, []).append(r.version)
        return out

    def reserve_version(self, module: str, version: str, stale_before: str) -> str:
        try:
            with self._tx(write=True) as conn:
                module_id, _ = self._module_id(conn, module, False, proxied=True)
                row = conn.execute(
                    sa.select(versions.c.id, versions.c.committed, versions.c.created).where(
                        versions.c.module_id == module_id, versions.c.version == version
                    )
                ).one_or_none()
                if row is not None and row.committed:
                    return "committed"
                if row is not None and row.created >= stale_before:
                    return "busy"
                if row is not None:  # its filler died or hung: take it over
                    conn.execute(
                        versions.update().where(versions.c.id == row.id).values(created=now())
                    )
                    return "reserved"
                conn.execute(
                    versions.insert().values(
                        module_id=module_id,
                        version=version,
                        h1="",
                        mod_h1="",
                        index_sha256="",
                        committed=False,
                        created=now(),
                    )
                )
                return "reserved"
        except IntegrityError:
            return "busy"  # another replica inserted the module or the reservation first

    def renew_reservation(self, module: str, version: str) -> bool:
        ids = sa.select(modules.c.id).where(modules.c.path == module).scalar_subquery()
        with self._tx(write=True) as conn:
            res = conn.execute(
                versions.update()
                .where(
                    versions.c.module_id == ids,
                    versions.c.version == version,
                    versions.c.committed.is_(False),
                )
                .values(created=now())
            )
            return bool(res.rowcount)

    def release_version(self, module: str, version: str) -> None:
        ids = sa.select(modules.c.id).where(modules.c.path == module).scalar_subquery()
        with self._tx(write=True) as conn:
            conn.execute(
                versions.delete().where(
                    versions.c.module_id == ids,
                    versions.c.version == version,
                    versions.c.committed.is_(False),
                )
            )
            conn.execute(  # nor a module row that only held the reservation
                modules.delete().where(
                    modules.c.path == module,
                    modules.c.proxied.is_(True),
                    ~sa.exists().where(versions.c.module_id == modules.c.id),
                )
            )

    def list_versions(self, module: str) -> list[str]:
        return [r[0] for r in self._fetch("versions", module=module)]

    def _version_query(self) -> sa.Select[Any]:
        return sa.select(versions.c.id, *_VERSION_COLS).join(
            modules, versions.c.module_id == modules.c.id
        )

    @staticmethod
    def _version_record(row: Any) -> VersionRecord:
        return VersionRecord(
            module=row.path,
            version=row.version,
            h1=row.h1,
            mod_h1=row.mod_h1,
            index_sha256=row.index_sha256,
            time=row.time,
            commit=row.commit,
            private=bool(row.private),
            created=row.created,
        )

    def _find_version(self, conn: Connection, module: str, version: str) -> Any:
        q = self._version_query().where(
            modules.c.path == module,
            versions.c.version == version,
            versions.c.committed.is_(True),
        )
        return conn.execute(q).one_or_none()

    def get_version(self, module: str, version: str) -> VersionRecord | None:
        rows = self._fetch("version", module=module, version=version)
        return _version(*rows[0]) if rows else None

    def get_attestation(self, module: str, version: str) -> str | None:
        return self._beside(attestations, module, version)

    def get_signature(self, module: str, version: str) -> str | None:
        return self._beside(signatures, module, version)

    def get_tensor_tables(self, module: str, version: str) -> str | None:
        return self._beside(tensor_tables, module, version)

    def _beside(self, table: sa.Table, module: str, version: str) -> str | None:
        """The blob sha256 that ``table`` (a module, version, sha256 table of something kept
        beside a version: its attestation, signature, tensor tables) names, if any."""
        q = sa.select(table.c.sha256).where(table.c.module == module, table.c.version == version)
        with self._tx() as conn:
            row = conn.execute(q).one_or_none()
        return None if row is None else str(row.sha256)

    def add_tensor_tables(self, module: str, version: str, sha256: str, record: bytes) -> str:
        for _ in range(5):
            have = self.get_tensor_tables(module, version)
            if have is not None:
                return have
            try:
                with self._tx(write=True) as conn:
                    conn.execute(
                        tensor_tables.insert().values(module=module, version=version, sha256=sha256)
                    )
                    _sumlog.append(conn, module, version + _sumlog.TABLES_SUFFIX, record)
                return sha256
            except IntegrityError:
                continue  # another replica recorded them first: read theirs
        raise StoreError(f"could not record the tensor tables of {module}@{version}")

    def _files_query(self, module: str, version: str) -> sa.Select[Any]:
        return (
            sa.select(files.c.path, files.c.size, files.c.sha256)
            .join(versions, files.c.version_id == versions.c.id)
            .join(modules, versions.c.module_id == modules.c.id)
            .where(
                modules.c.path == module,
                versions.c.version == version,
                versions.c.committed.is_(True),
            )
        )

    def list_files(self, module: str, version: str) -> list[FileRecord]:
        with self._tx() as conn:
            rows = conn.execute(self._files_query(module, version).order_by(files.c.path))
            return [FileRecord(r.path, int(r.size), r.sha256) for r in rows]

    def get_file(self, module: str, version: str, path: str) -> FileRecord | None:
        rows = self._fetch("file", module=module, version=version, path=path)
        return FileRecord(rows[0][0], int(rows[0][1]), rows[0][2]) if rows else None

    def find_file(
        self, module: str, version: str, path: str
    ) -> tuple[ModuleRecord | None, VersionRecord | None, FileRecord | None]:
        """One query (outer joins of the three tables) instead of three."""
        rows = self._fetch("find", module=module, version=version, path=path)
        if not rows:
            return None, None, None
        (m_path, private, m_created, proxied, v, h1, mod_h1, idx, t, commit, created, size, sha) = (
            rows[0]
        )
        mod = ModuleRecord(m_path, bool(private), m_created, bool(proxied))
        if v is None:
            return mod, None, None
        rec = _version(m_path, v, h1, mod_h1, idx, t, commit, private, created)
        return mod, rec, None if sha is None else FileRecord(path, int(size), sha)

    def commit_version(self, new: NewVersion) -> CommitOutcome:
        for _ in range(5):
            try:
                with self._tx(write=True) as conn:
                    row = self._find_version(conn, new.module, new.version)
                    if row is not None:
                        return self._same_or_conflict(self._version_record(row), new)
                    module_id, private = self._module_id(
                        conn, new.module, new.private, proxied=new.proxied
                    )
                    conn.execute(  # a caching proxy's reservation gives way to the version
                        versions.delete().where(
                            versions.c.module_id == module_id,
                            versions.c.version == new.version,
                            versions.c.committed.is_(False),
                        )
                    )
                    stamp = now()
                    res = conn.execute(
                        versions.insert().values(
                            module_id=module_id,
                            version=new.version,
                            h1=new.h1,
                            mod_h1=new.mod_h1,
                            index_sha256=new.index_sha256,
                            time=new.time,
                            commit=new.commit,
                            committed=True,
                            created=stamp,
                        )
                    )
                    version_id = _inserted_id(res)
                    for table, sha in (
                        (attestations, new.attestation_sha256),
                        (signatures, new.signature_sha256),
                    ):
                        if sha:
                            _set_beside(conn, table, new.module, new.version, sha)
                    if new.files:
                        conn.execute(
                            files.insert(),
                            [
                                {
                                    "version_id": version_id,
                                    "path": f.path,
                                    "size": f.size,
                                    "sha256": f.sha256,
                                }
                                for f in new.files
                            ],
                        )
                    pending = self._pending_row(conn, new.module, new.version)
                    if pending is not None:  # logged when its index was answered
                        if (pending.h1, pending.mod_h1) != (new.h1, new.mod_h1):
                            raise ConflictError(new.module, new.version, pending.h1, new.h1)
                        conn.execute(
                            pending_versions.delete().where(
                                pending_versions.c.module == new.module,
                                pending_versions.c.version == new.version,
                            )
                        )
                    elif not private:  # logged in this transaction, or not committed at all
                        _sumlog.append(
                            conn,
                            new.module,
                            new.version,
                            _sumlog.record_text(new.module, new.version, new.h1, new.mod_h1),
                        )
                    row = self._find_version(conn, new.module, new.version)
                    outcome = CommitOutcome(self._version_record(row), created=True)
                with self._bump:  # committed: this process's caches drop their lists
                    self.local_changes += 1
                return outcome
            except IntegrityError:
                continue  # another process committed the module or version first: look again
        raise StoreError(f"could not commit {new.module}@{new.version}: the database kept refusing")

    @staticmethod
    def _pending_row(conn: Connection, module: str, version: str) -> Any:
        return conn.execute(
            sa.select(pending_versions).where(
                pending_versions.c.module == module, pending_versions.c.version == version
            )
        ).one_or_none()

    def get_pending(self, module: str, version: str) -> PendingRecord | None:
        with self._tx() as conn:
            row = self._pending_row(conn, module, version)
        return None if row is None else PendingRecord(**row._mapping)

    def add_pending(self, rec: PendingRecord) -> PendingRecord | None:
        for _ in range(5):
            try:
                with self._tx(write=True) as conn:
                    if self._find_version(conn, rec.module, rec.version) is not None:
                        return None
                    row = self._pending_row(conn, rec.module, rec.version)
                    if row is not None:
                        return PendingRecord(**row._mapping)
                    conn.execute(pending_versions.insert().values(**rec.__dict__))
                    mod = conn.execute(
                        sa.select(modules.c.private).where(modules.c.path == rec.module)
                    ).one_or_none()
                    if mod is None or not mod.private:  # proxied modules are public
                        _sumlog.append(
                            conn,
                            rec.module,
                            rec.version,
                            _sumlog.record_text(rec.module, rec.version, rec.h1, rec.mod_h1),
                        )
                    return rec
            except IntegrityError:
                continue  # another replica recorded it first: read theirs
        raise StoreError(f"could not record {rec.module}@{rec.version}: the database kept refusing")

    @staticmethod
    def _same_or_conflict(have: VersionRecord, new: NewVersion) -> CommitOutcome:
        if have.h1 != new.h1 or have.mod_h1 != new.mod_h1:
            raise ConflictError(new.module, new.version, have.h1, new.h1)
        return CommitOutcome(have, created=False)

    @staticmethod
    def _module_id(
        conn: Connection, path: str, private: bool, *, proxied: bool = False
    ) -> tuple[int, bool]:
        """The module's id and private flag; a new module is created with ``private``
        and ``proxied``."""
        row = conn.execute(
            sa.select(modules.c.id, modules.c.private).where(modules.c.path == path)
        ).one_or_none()
        if row is not None:
            return int(row.id), bool(row.private)
        res = conn.execute(
            modules.insert().values(path=path, private=private, created=now(), proxied=proxied)
        )
        return _inserted_id(res), private

    # -- uploads

    def add_upload(self, upload: UploadRecord) -> None:
        with self._tx(write=True) as conn:
            conn.execute(uploads.insert().values(**upload.__dict__))

    def get_upload(self, upload_id: str) -> UploadRecord | None:
        with self._tx() as conn:
            row = conn.execute(sa.select(uploads).where(uploads.c.id == upload_id)).one_or_none()
        if row is None:
            return None
        m = row._mapping
        return UploadRecord(**{**m, "private": bool(m["private"])})

    def delete_upload(self, upload_id: str) -> None:
        with self._tx(write=True) as conn:
            conn.execute(upload_blobs.delete().where(upload_blobs.c.upload_id == upload_id))
            conn.execute(uploads.delete().where(uploads.c.id == upload_id))

    def delete_uploads_before(self, created: str) -> int:
        old = sa.select(uploads.c.id).where(uploads.c.created < created)
        with self._tx(write=True) as conn:
            conn.execute(upload_blobs.delete().where(upload_blobs.c.upload_id.in_(old)))
            return conn.execute(uploads.delete().where(uploads.c.created < created)).rowcount

    def count_uploads_before(self, created: str) -> int:
        q = sa.select(sa.func.count()).select_from(uploads).where(uploads.c.created < created)
        with self._tx() as conn:
            return int(conn.execute(q).scalar_one())

    def add_upload_blob(self, upload_id: str, sha256: str) -> None:
        try:
            with self._tx(write=True) as conn:
                live = sa.exists().where(uploads.c.id == upload_id)
                there = sa.exists().where(
                    upload_blobs.c.upload_id == upload_id, upload_blobs.c.sha256 == sha256
                )
                conn.execute(
                    upload_blobs.insert().from_select(
                        ["upload_id", "sha256"],
                        sa.select(sa.literal(upload_id), sa.literal(sha256)).where(live, ~there),
                    )
                )
        except IntegrityError:
            pass  # the same body raced in twice, or the upload was deleted meanwhile

    def upload_blobs(self, upload_id: str) -> set[str]:
        with self._tx() as conn:
            rows = conn.execute(
                sa.select(upload_blobs.c.sha256).where(upload_blobs.c.upload_id == upload_id)
            )
            return {r.sha256 for r in rows}

    def _blob_rows(self, shas: Collection[str], private: bool) -> list[Any]:
        """``(sha256, module path)`` of the committed versions of public (or private) modules
        that list one of ``shas``, distinct, in chunks of bound parameters."""
        cols = (files.c.sha256,) if not private else (files.c.sha256, modules.c.path)
        out: list[Any] = []
        todo = sorted(set(shas))
        with self._tx() as conn:
            for i in range(0, len(todo), _IN_CHUNK):
                q = (
                    sa.select(*cols)
                    .distinct()
                    .join(versions, files.c.version_id == versions.c.id)
                    .join(modules, versions.c.module_id == modules.c.id)
                    .where(
                        files.c.sha256.in_(todo[i : i + _IN_CHUNK]),
                        versions.c.committed.is_(True),
                        modules.c.private.is_(private),
                    )
                )
                out.extend(conn.execute(q).all())
        return out

    def public_blobs(self, shas: Collection[str]) -> set[str]:
        return {r.sha256 for r in self._blob_rows(shas, private=False)}

    def private_blob_modules(self, shas: Collection[str]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for r in self._blob_rows(shas, private=True):
            out.setdefault(r.sha256, set()).add(r.path)
        return out

    # -- references, for the garbage collector

    def blob_references(self, shas: Collection[str] | None = None) -> set[str]:
        cols = (
            files.c.sha256,
            versions.c.index_sha256,
            uploads.c.index_sha256,
            upload_blobs.c.sha256,
            attestations.c.sha256,
            signatures.c.sha256,
            tensor_tables.c.sha256,
            pending_versions.c.index_sha256,
            pending_versions.c.mod_sha256,
        )
        todo = None if shas is None else sorted(set(shas))
        out: set[str] = set()
        with self._tx() as conn:
            for col in cols:
                if todo is None:
                    out.update(r[0] for r in conn.execute(sa.select(col).distinct()))
                    continue
                for i in range(0, len(todo), _IN_CHUNK):
                    q = sa.select(col).distinct().where(col.in_(todo[i : i + _IN_CHUNK]))
                    out.update(r[0] for r in conn.execute(q))
        out.discard("")  # a proxy's reservation names no index yet
        return out

    def open_indexes(self) -> set[str]:
        with self._tx() as conn:
            q = sa.union(
                sa.select(uploads.c.index_sha256), sa.select(pending_versions.c.index_sha256)
            )
            return {r[0] for r in conn.execute(q)}

    # -- tokens

    def add_token(self, token: TokenRecord) -> None:
        with self._tx(write=True) as conn:
            conn.execute(tokens.insert().values(**token.__dict__))

    def get_token(self, token_id: str) -> TokenRecord | None:
        with self._tx() as conn:
            row = conn.execute(sa.select(tokens).where(tokens.c.id == token_id)).one_or_none()
        return None if row is None else TokenRecord(**row._mapping)

    def list_tokens(self) -> list[TokenRecord]:
        with self._tx() as conn:
            rows = conn.execute(sa.select(tokens).order_by(tokens.c.created, tokens.c.id))
            return [TokenRecord(**r._mapping) for r in rows]

    def revoke_token(self, token_id: str) -> bool:
        with self._tx(write=True) as conn:
            res = conn.execute(
                tokens.update()
                .where(tokens.c.id == token_id, tokens.c.revoked.is_(None))
                .values(revoked=now())
            )
            if res.rowcount:
                return True
            return (
                conn.execute(sa.select(tokens.c.id).where(tokens.c.id == token_id)).first()
                is not None
            )

    def ping(self) -> None:
        with self._tx() as conn:
            conn.execute(sa.text("SELECT 1"))

    def close(self) -> None:
        if self.reader is not self.engine:
            self.reader.dispose()
        self.engine.dispose()


def open_metadata_store(url: str, *, migrate: bool = True) -> SqlMetadataStore:
    """The store at ``url`` (``sqlite:///PATH``, a bare path, or ``postgresql://...``),
    upgraded to the newest schema first unless ``migrate`` is off."""
    engine = create_engine(url)
    if migrate:
        from .migrations import upgrade

        try:
            upgrade(engine)
        except SQLAlchemyError as exc:
            engine.dispose()
            raise StoreError(f"migrating the database at {engine.url!r}: {exc}") from exc
    return SqlMetadataStore(engine)
