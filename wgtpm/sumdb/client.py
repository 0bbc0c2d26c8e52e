"""The checksum-database client: looks up a module version's wgt.sum lines and proves them.

Like Go's ``sumdb.Client``, it does no I/O of its own: it is handed a
:class:`ClientOps` (remote reads, configuration with compare-and-swap, a
cache, a log and a security-error report). For each lookup it

1. reads ``/lookup/M@V`` (from the cache, else the server): the record and a
   signed tree head;
2. verifies the tree head's signature with the configured verifier key;
3. checks that the tree head is consistent with the latest one it remembers
   (``NAME/latest``), reading and authenticating tiles as it goes; the newer
   of the two becomes the remembered one, written with compare-and-swap;
4. checks that the record is the tree's record ``ID`` (its hash, read from
   authenticated tiles);

and only then returns the lines and caches the response. Two tree heads that
cannot both be true (a fork) are a :class:`~wgtpm.SumdbSecurityError`
carrying both signed notes and the proof; ``ops.security_error`` gets the
same report first. Every other failure is a :class:`~wgtpm.SumdbVerifyError`
naming module@version. Nothing unverified is cached (tiles are cached only
once authenticated).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from .._errors import (
    SumdbConflictError,
    SumdbError,
    SumdbSecurityError,
    SumdbVerifyError,
    WgtpmError,
)
from . import note as _note
from . import tlog
from .record import TABLES_SUFFIX, lookup_path
from .tlog import HASH_SIZE, Tile, Tree

__all__ = ["DEFAULT_TILE_HEIGHT", "Client", "ClientOps"]

DEFAULT_TILE_HEIGHT = 8  # a checksum database's tiles hold 256 hashes


class ClientOps(Protocol):
    """What the client needs from the outside world; the adapters do HTTP and files.

    Paths given to :meth:`read_remote` start with ``/`` (``/lookup/M@V``,
    ``/tile/8/0/x001/234.p/7``) and are relative to ``$URL/sumdb/$NAME``.
    Configuration and cache file names start with the database name
    (``NAME/latest``, ``NAME/lookup/M@V``, ``NAME/tile/8/0/000``).
    """

    def read_remote(self, path: str) -> bytes:
        """The body served at ``path``; raises a :class:`~wgtpm.WgtpmError` on any non-200."""
        ...

    def read_config(self, file: str) -> bytes:
        """The configuration file's content; ``b""`` when it does not exist yet."""
        ...

    def write_config(self, file: str, old: bytes, new: bytes) -> None:
        """Atomically replace ``old`` by ``new``; raise :class:`~wgtpm.SumdbConflictError` if
        the file no longer holds ``old`` (another process wrote it)."""
        ...

    def read_cache(self, file: str) -> bytes | None:
        """The cached file's content, or None when it is not cached (or unreadable)."""
        ...

    def write_cache(self, file: str, data: bytes) -> None:
        """Cache ``data`` (already verified) under ``file``; failures may be ignored."""
        ...

    def log(self, msg: str) -> None:
        """Report a detail worth a debug line."""
        ...

    def security_error(self, msg: str) -> None:
        """Report proof of server misbehaviour loudly; the client raises after it returns."""
        ...


class _When(Enum):
    PAST = 1  # an older tree than the latest known
    NOW = 2  # the latest known tree
    FUTURE = 3  # a newer tree, now the latest known


class _ForkError(SumdbError):
    """Two signed trees that cannot both be true; ``report`` shows both and the proof."""

    def __init__(self, report: str, old_note: bytes, new_note: bytes) -> None:
        self.report = report
        self.old_note = old_note
        self.new_note = new_note
        super().__init__(report)


class Client:
    """A verifying client of one checksum database, named by its verifier key.

    ``vkey`` is ``name+hash+base64`` (from ``WGTSUMDB``); ``ops`` does the I/O.
    Safe to share between threads.
    """

    def __init__(
        self, vkey: str, ops: ClientOps, *, tile_height: int = DEFAULT_TILE_HEIGHT
    ) -> None:
        if tile_height < 1:
            raise ValueError(f"invalid tile height {tile_height}")
        verifier = _note.new_verifier(vkey.strip())
        self.name = verifier.name
        self.ops = ops
        self.tile_height = tile_height
        self._verifiers = _note.VerifierList(verifier)
        self._lock = threading.Lock()
        self._initialized = False
        self._latest = Tree(0, tlog.EMPTY_HASH)
        self._latest_msg = b""
        self._records: dict[str, bytes] = {}
        self._tiles: dict[Tile, bytes] = {}
        self._tiles_saved: set[Tile] = set()

    @property
    def latest(self) -> tuple[Tree, bytes]:
        """The latest tree this client has verified, and its signed note (``b""``: none yet)."""
        with self._lock:
            return self._latest, self._latest_msg

    def lookup(self, path: str, version: str) -> list[str]:
        """The wgt.sum lines the database holds for ``path`` ``version``, proven to be in its log.

        ``version`` may end in ``/wgt.mod`` for the wgt.mod line, or in
        ``/wgt.tensors.json`` for the line of the version's tables record. Raises
        :class:`~wgtpm.SumdbVerifyError` when the answer cannot be proven,
        :class:`~wgtpm.SumdbSecurityError` when the server forked its log,
        and lets the errors of ``ops.read_remote`` through.
        """
        remote = lookup_path(path, version)
        try:
            self._init()
            # the tables record's cache file sits beside M@V's (a file, not a folder)
            file = self.name + remote.replace(TABLES_SUFFIX, "#" + TABLES_SUFFIX[1:])
            text = self._verified_record(file, remote)
        except _ForkError as fork:
            self.ops.security_error(fork.report)
            raise SumdbSecurityError(
                path, version, fork.report, fork.old_note, fork.new_note
            ) from None
        except SumdbError as exc:
            raise SumdbVerifyError(
                path,
                version,
                f"checksum database {self.name}: {exc}\n"
                "Its answer could not be proven, so it was not used. If this persists, the\n"
                "server, the network or the cache under $WGTPM_CACHE/sumdb is damaged.",
            ) from exc
        prefix = f"{path} {version} "
        lines = [line for line in text.decode().split("\n") if line.startswith(prefix)]
        if not lines:
            raise SumdbVerifyError(
                path, version, f"the checksum database's record for {remote} has no line for it"
            )
        return lines

    # ---- the latest tree ----------------------------------------------------------------

    def _init(self) -> None:
        with self._lock:
            if self._initialized:
                return
        try:
            self._merge_latest(self.ops.read_config(self._latest_file))
        except _ForkError:
            raise
        except SumdbError as exc:
            raise SumdbError(f"initializing the checksum database client: {exc}") from exc
        with self._lock:
            self._initialized = True

    @property
    def _latest_file(self) -> str:
        return f"{self.name}/latest"

    def _merge_latest(self, msg: bytes) -> None:
        """Merge the signed tree ``msg`` into the latest known, and a newer one into the config."""
        if self._merge_latest_mem(msg) is not _When.FUTURE:
            return
        # Write the new latest back, merging what other processes wrote there meanwhile.
        while True:
            stored = self.ops.read_config(self._latest_file)
            if self._merge_latest_mem(stored) is not _When.PAST:
                return  # the configuration is as new as our latest, or newer (now merged)
            _, latest_msg = self.latest
            try:
                self.ops.write_config(self._latest_file, stored, latest_msg)
            except SumdbConflictError:
                self.ops.log(f"{self._latest_file} changed while being written; merging again")
                continue
            return

    def _merge_latest_mem(self, msg: bytes) -> _When:
        """Merge ``msg`` into the in-memory latest tree; say when ``msg``'s tree is from."""
        latest, latest_msg = self.latest
        if not msg:
            return _When.NOW if latest.n == 0 else _When.PAST
        try:
            signed = _note.open(msg, self._verifiers)
        except _note.NoteError as exc:
            raise SumdbError(f"reading tree note: {exc}\nnote:\n{_text(msg)}") from exc
        try:
            tree = tlog.parse_tree(signed.text)
        except tlog.TlogError as exc:
            raise SumdbError(f"reading tree: {exc}\ntree:\n{signed.text}") from exc

        while True:
            if tree.n <= latest.n:
                self._check_trees(tree, msg, latest, latest_msg)
                return _When.PAST if tree.n < latest.n else _When.NOW
            if latest.n == 0:
                # Nothing to be consistent with: at least make sure the tiles support the
                # tree before remembering it, so that a bad first tree is not kept for good.
                self._check_trees(tree, msg, tree, msg)
            else:
                self._check_trees(latest, latest_msg, tree, msg)
            with self._lock:
                if self._latest == latest:
                    self._latest, self._latest_msg = tree, msg
                    return _When.FUTURE
                latest, latest_msg = self._latest, self._latest_msg  # moved meanwhile: again

    def _check_trees(self, older: Tree, older_msg: bytes, newer: Tree, newer_msg: bytes) -> None:
        """Raise :class:`_ForkError` unless the tree ``newer`` contains the tree ``older``."""
        thr = tlog.TileHashReader(newer, _TileReader(self))
        try:
            h = tlog.tree_hash(older.n, thr)
        except SumdbError as exc:
            against = "" if older.n == newer.n else f" against tree#{newer.n}"
            raise SumdbError(f"checking tree#{older.n}{against}: {exc}") from exc
        if h == older.hash:
            return
        raise _ForkError(
            _fork_report(older, older_msg, newer, newer_msg, h, thr), older_msg, newer_msg
        )

    # ---- records ------------------------------------------------------------------------

    def _verified_record(self, file: str, remote: str) -> bytes:
        """The text of the record at ``remote``, once proven to be in the latest tree."""
        with self._lock:
            if file in self._records:
                return self._records[file]
        data = self.ops.read_cache(file)
        from_cache = data is not None
        if data is None:
            data = self.ops.read_remote(remote)
        rec_id, text, tree_msg = tlog.parse_record(data)
        self._merge_latest(tree_msg)
        self._check_record(rec_id, text)
        if not from_cache:
            self.ops.write_cache(file, data)
        with self._lock:
            self._records[file] = text
        return text

    def _check_record(self, rec_id: int, text: bytes) -> None:
        latest, _ = self.latest
        if rec_id >= latest.n:
            raise SumdbError(f"cannot validate record {rec_id} in tree of size {latest.n}")
        thr = tlog.TileHashReader(latest, _TileReader(self))
        if thr([tlog.stored_hash_index(0, rec_id)])[0] != tlog.record_hash(text):
            raise SumdbError(
                f"cannot authenticate record data in server response (record {rec_id} "
                f"is not what tree#{latest.n} holds)"
            )

    # ---- tiles --------------------------------------------------------------------------

    def _read_tile(self, tile: Tile) -> bytes:
        """The tile's data from memory, the cache (its own or the full tile) or the server."""
        with self._lock:
            if tile in self._tiles:
                return self._tiles[tile]
        data = self._fetch_tile(tile)
        with self._lock:
            return self._tiles.setdefault(tile, data)

    def _fetch_tile(self, tile: Tile) -> bytes:
        full = tile._replace(W=1 << tile.H)
        cached = self.ops.read_cache(f"{self.name}/{tile.path()}")
        if cached is not None:
            self._mark_saved(tile)
            return cached
        if tile != full:
            # Only authenticated tiles are cached, so a prefix of a cached full tile is too.
            cached = self.ops.read_cache(f"{self.name}/{full.path()}")
            if cached is not None:
                self._mark_saved(tile)
                return cached[: tile.W * HASH_SIZE]
        try:
            return self.ops.read_remote(f"/{tile.path()}")
        except WgtpmError:
            if tile == full:
                raise
            # A partial tile the server no longer has because the tile is now complete.
            try:
                return self.ops.read_remote(f"/{full.path()}")[: tile.W * HASH_SIZE]
            except WgtpmError:
                pass
            raise

    def _mark_saved(self, tile: Tile) -> None:
        with self._lock:
            self._tiles_saved.add(tile)

    def _save_tiles(self, tiles: Sequence[Tile], data: Sequence[bytes]) -> None:
        with self._lock:
            new = [(t, d) for t, d in zip(tiles, data) if t not in self._tiles_saved]
            self._tiles_saved.update(t for t, _ in new)
        for tile, d in new:
            self.ops.write_cache(f"{self.name}/{tile.path()}", d)


class _TileReader:
    """The client's tiles as a :class:`~wgtpm.sumdb.tlog.TileReader`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.height = client.tile_height

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        return [self.client._read_tile(t) for t in tiles]

    def save_tiles(self, tiles: Sequence[Tile], data: Sequence[bytes]) -> None:
        self.client._save_tiles(tiles, data)


def _text(msg: bytes) -> str:
    return msg.decode("utf-8", "replace")


def _fork_report(
    older: Tree, older_msg: bytes, newer: Tree, newer_msg: bytes, h: bytes, thr: tlog.HashReader
) -> str:
    """Go's report, in wgtpm's words: both notes, then the proof that they disagree.

    The proof is the hash the newer tree gives the older tree's records and the
    consistency proof of that hash, so the report stands without the server.
    """

    def indent(msg: bytes) -> str:
        return _text(msg).replace("\n", "\n\t")

    lines = [
        "SECURITY ERROR",
        "wgt.sum checksum database server misbehavior detected!",
        "",
        f"old database:\n\t{indent(older_msg)}",
        f"new database:\n\t{indent(newer_msg)}",
        f"proof of misbehavior:\n\t{tlog.format_hash(h)}",
    ]
    try:
        proof = tlog.prove_tree(newer.n, older.n, thr)
        tlog.check_tree(proof, newer.n, newer.hash, older.n, h)
    except SumdbError as exc:
        lines.append(f"\tinternal error: {exc}")
    else:
        lines.extend(f"\t{tlog.format_hash(p)}" for p in proof)
    lines += [
        "",
        "The server signed two histories of its log that cannot both be true: someone",
        "may be serving different bytes to different users. Keep this report, trust",
        "nothing this database vouched for, and tell the server's operators.",
    ]
    return "\n".join(lines) + "\n"
