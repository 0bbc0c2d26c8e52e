"""An in-memory checksum database, as Go's sumdb TestServer and Server, and a ClientOps over dicts.

:class:`TestServer` keeps a log of records, signs tree heads with a test key
and answers the paths of ``$URL/sumdb/$NAME``: ``/latest``,
``/lookup/M@V`` and ``/tile/H/L/K[.p/W]`` (hash and ``data`` tiles).
:class:`MemoryOps` is a :class:`~wgtpm.sumdb.client.ClientOps` whose remote
is a server's :meth:`TestServer.handle`, with configuration and cache in dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from wgtpm import NotFoundError, SumdbConflictError
from wgtpm.sumdb import note, record, tlog
from wgtpm.sumdb.tlog import Tree


class HashStore(list[bytes]):
    """A log's stored hashes; also its HashReader."""

    def __call__(self, indexes: Sequence[int]) -> list[bytes]:
        return [self[i] for i in indexes]


class TestServer:
    """A checksum database in memory: records, their tree, signed heads and tiles."""

    __test__ = False  # not a pytest class

    def __init__(self, skey: str, height: int = 8) -> None:
        self.skey = skey
        self.signer = note.new_signer(skey)
        self.height = height
        self.hashes = HashStore()
        self.records: list[bytes] = []
        self.ids: dict[str, int] = {}  # escaped lookup path -> record id
        self.snapshots: dict[str, bytes] = {}  # lookup responses as they were when added

    @property
    def size(self) -> int:
        return len(self.records)

    def add(self, lookup: str, text: bytes) -> int:
        """Append a record, answered at ``lookup`` (``/lookup/M@V``, escaped)."""
        rec_id = len(self.records)
        self.hashes.extend(tlog.stored_hashes(rec_id, text, self.hashes))
        self.records.append(text)
        self.ids[lookup] = rec_id
        self.snapshots[lookup] = self.handle(lookup)
        return rec_id

    def add_module(self, path: str, version: str, h1: str, mod_h1: str) -> int:
        return self.add(
            record.lookup_path(path, version), record.record_text(path, version, h1, mod_h1)
        )

    def tree(self, size: int | None = None) -> Tree:
        n = self.size if size is None else size
        return Tree(n, tlog.tree_hash(n, self.hashes))

    def signed(self, size: int | None = None) -> bytes:
        """The signed tree head of the first ``size`` records (default: all)."""
        return note.sign(tlog.format_tree(self.tree(size)).decode(), [self.signer])

    def handle(self, path: str) -> bytes:
        """The body served at ``path``, as Go's sumdb.Server answers; NotFoundError if none."""
        if path == "/latest":
            return self.signed()
        if path.startswith("/lookup/"):
            if path not in self.ids:
                raise NotFoundError(path, None, "no such record")
            rec_id = self.ids[path]
            return tlog.format_record(rec_id, self.records[rec_id]) + self.signed()
        if path.startswith("/tile/"):
            return self._tile(path)
        raise NotFoundError(path, None, "not found")

    def _tile(self, path: str) -> bytes:
        try:
            tile = tlog.parse_tile_path(path[1:])
        except tlog.MalformedTileError as exc:
            raise NotFoundError(path, None, str(exc)) from None
        start = tile.N << tile.H
        if self.height != tile.H:
            raise NotFoundError(path, None, "wrong tile height")
        if tile.L == -1:
            if start + tile.W > self.size:
                raise NotFoundError(path, None, "no such records")
            return b"".join(
                tlog.format_record(i, self.records[i]) for i in range(start, start + tile.W)
            )
        last = tlog.stored_hash_index(tile.H * tile.L, start + tile.W - 1)
        if last >= len(self.hashes):
            raise NotFoundError(path, None, "no such tile")
        return tlog.read_tile_data(tile, self.hashes)

    def fork(self) -> TestServer:
        """An independent copy: from here on, two histories."""
        return copy.deepcopy(self)


class MemoryOps:
    """ClientOps over dicts; ``remote`` answers read_remote (a server's handle, or a stand-in)."""

    def __init__(self, remote: Callable[[str], bytes]) -> None:
        self.remote = remote
        self.config: dict[str, bytes] = {}
        self.cache: dict[str, bytes] = {}
        self.reads: list[str] = []
        self.logs: list[str] = []
        self.security: list[str] = []
        self.remote_ok = True
        self.tiles_ok = True
        self.before_write: Callable[[str], None] | None = None  # runs inside write_config

    def read_remote(self, path: str) -> bytes:
        self.reads.append(path)
        if not self.remote_ok or (path.startswith("/tile/") and not self.tiles_ok):
            raise NotFoundError(path, None, "remote reads are switched off")
        return self.remote(path)

    def read_config(self, file: str) -> bytes:
        return self.config.get(file, b"")

    def write_config(self, file: str, old: bytes, new: bytes) -> None:
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(file)
        if self.config.get(file, b"") != old:
            raise SumdbConflictError(f"{file} changed")
        self.config[file] = new

    def read_cache(self, file: str) -> bytes | None:
        return self.cache.get(file)

    def write_cache(self, file: str, data: bytes) -> None:
        self.cache[file] = data

    def log(self, msg: str) -> None:
        self.logs.append(msg)

    def security_error(self, msg: str) -> None:
        self.security.append(msg)
