"""The checksum database's HTTP side: Go's sumdb server paths over the log in the database.

Served under ``/sumdb/$NAME/`` (``$NAME`` is the key's name; any other name
is 404), all ``GET``, exactly as Go's ``sumdb.Server`` answers them:

=============================  ===============================================  ===================
path                           body                                             Cache-Control
=============================  ===============================================  ===================
``latest``                     the signed tree head (a note over                ``no-cache``
                               ``go.sum database tree\\nN\\nHASH\\n``)
``lookup/$MODULE@$VERSION``    ``ID\\n``, the record (two wgt.sum lines), a      ``no-cache``
                               blank line, then a signed tree head holding it
``tile/8/$L/$K[.p/$W]``        ``W`` (256 when full) 32-byte hashes of level    full: immutable,
                               ``8*L``                                          partial: 60 s
``tile/8/data/$K[.p/$W]``      records ``256*K`` to ``256*K+W-1``, each as a    as above
                               lookup formats it
``supported``                  empty: this registry serves the database         ``no-cache``
                               (Go's ``$GOPROXY/sumdb/$NAME/supported``)
=============================  ===============================================  ===================

``$MODULE`` and ``$VERSION`` are escaped as in the proxy protocol (``!``
and a lower-case letter for a capital). Statuses: 400 for a malformed
lookup or tile path (as Go's server), 404 for a version that is not logged
(never published here, or private) and for a tile beyond the tree or of
another height. Private modules are never logged (:mod:`registry.sumlog`).

The tree head is signed for the current size on request; a signed head is
reused for up to ``ttl`` seconds (one second by default) so that a burst
of requests neither signs nor reads the tree each time, except that a
lookup always gets a head whose tree holds its record. Signatures are
deterministic (Ed25519), so every replica signs a tree alike.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wgtpm._errors import WgtpmError
from wgtpm.sumdb import note, tlog
from wgtpm.sumdb.record import parse_lookup_path
from wgtpm.sumdb.tlog import Tree

from .sumkey import SumdbKeyError, verifier_key
from .sumlog import SqlSumLog

__all__ = ["Answer", "SumDB", "routes"]

log = logging.getLogger("registry.sumdb")

TILE_HEIGHT = 8
IMMUTABLE = "public, max-age=31536000, immutable"
PARTIAL = "public, max-age=60"
TEXT = "text/plain; charset=UTF-8"
_MAX_INDEX = (1 << 63) - 1  # the database's BIGINT: a larger tile index cannot exist


@dataclass(frozen=True)
class Answer:
    """One response: status, body, content type and Cache-Control."""

    status: int
    body: bytes
    content_type: str = TEXT
    cache: str = "no-cache"


def _error(status: int, msg: str) -> Answer:
    return Answer(status, (msg + "\n").encode())


class SumDB:
    """The checksum database of one registry: its log, its signer, a short cache of heads."""

    def __init__(self, log: SqlSumLog, skey: str, *, ttl: float = 1.0) -> None:
        self.log = log
        self.signer = note.new_signer(skey)
        self.name = self.signer.name
        self.vkey = verifier_key(skey)
        self.ttl = ttl
        self._lock = threading.Lock()
        self._head: tuple[float, Tree, bytes] | None = None  # (when read, tree, signed note)

    @classmethod
    def open(cls, engine: Engine, skey: str, *, ttl: float = 1.0) -> SumDB:
        """The database over ``engine``'s log, signed by ``skey``; refuses a key other than the
        one the log was first signed with (replicas must share one key)."""
        db = cls(SqlSumLog(engine), skey, ttl=ttl)
        recorded = db.log.claim_key(db.vkey)
        if recorded != db.vkey:
            raise SumdbKeyError(
                f"this database's checksum log is signed by {recorded}, but this server's key "
                f"is {db.vkey}: every replica must use the same key (copy DATA/sumdb.key, or "
                "set WGTPM_REGISTRY_SUMDB_KEY or --sumdb-key-file)"
            )
        caught_up = db.log.catch_up()
        if caught_up:
            log.warning("logged %d versions committed without the checksum log", caught_up)
        return db

    def signed(self, holding: int = -1) -> bytes:
        """A signed head of the latest tree; one holding record ``holding`` when given."""
        now = time.monotonic()
        with self._lock:
            head = self._head
        if head is not None and now - head[0] < self.ttl and head[1].n > holding:
            return head[2]
        tree = self.log.tree()
        if head is not None and head[1] == tree:
            msg = head[2]
        else:
            msg = note.sign(tlog.format_tree(tree).decode(), [self.signer])
        with self._lock:
            if self._head is None or self._head[1].n <= tree.n:
                self._head = (now, tree, msg)
        return msg

    def handle(self, path: str) -> Answer:
        """The answer to ``GET /sumdb/$NAME`` + ``path`` (``path`` starts with ``/``)."""
        if path == "/latest":
            return Answer(200, self.signed())
        if path == "/supported":
            return Answer(200, b"")
        if path.startswith("/lookup/"):
            return self._lookup(path)
        if path.startswith("/tile/"):
            return self._tile(path)
        return _error(404, f"not found: {path}")

    def _lookup(self, path: str) -> Answer:
        try:
            module, version = parse_lookup_path(path)
        except WgtpmError as exc:
            return _error(400, f"invalid module@version syntax: {exc}")
        rec_id = self.log.lookup(module, version)
        if rec_id is None:
            return _error(404, f"{module}@{version}: not in this checksum database")
        texts = self.log.records(rec_id, 1)
        if len(texts) != 1:
            return _error(500, f"record {rec_id} of {module}@{version} is missing")
        return Answer(200, tlog.format_record(rec_id, texts[0]) + self.signed(rec_id))

    def _tile(self, path: str) -> Answer:
        try:
            tile = tlog.parse_tile_path(path[1:])
        except tlog.MalformedTileError:
            return _error(400, "invalid tile syntax")
        cache = IMMUTABLE if tile.W == 1 << tile.H else PARTIAL
        start = tile.N << tile.H
        if tile.H != TILE_HEIGHT:
            return _error(404, f"this database serves tiles of height {TILE_HEIGHT} only")
        if tile.L == -1:
            if start + tile.W > _MAX_INDEX:
                return _error(404, "no such records")
            texts = self.log.records(start, tile.W)
            if len(texts) != tile.W:
                return _error(404, "no such records (the log is shorter)")
            body = b"".join(tlog.format_record(start + i, t) for i, t in enumerate(texts))
            return Answer(200, body, TEXT, cache)
        if tile.L * tile.H > 62:
            return _error(404, "no such tile")
        indexes = [tlog.stored_hash_index(tile.H * tile.L, start + i) for i in range(tile.W)]
        if indexes[-1] > _MAX_INDEX:
            return _error(404, "no such tile")
        hashes = self.log.hashes(indexes)
        if hashes is None:
            return _error(404, "no such tile (the tree is smaller)")
        return Answer(200, b"".join(hashes), "application/octet-stream", cache)


async def _serve(request: Request) -> Response:
    db: SumDB | None = getattr(request.app.state.registry, "sumdb", None)
    name = request.path_params["name"]
    if db is None or name != db.name:
        ans = _error(404, f"this registry serves no checksum database named {name[:200]!r}")
    else:
        ans = await run_in_threadpool(db.handle, "/" + request.path_params["path"])
    return Response(
        ans.body,
        status_code=ans.status,
        media_type=ans.content_type,
        headers={"Cache-Control": ans.cache, "X-Content-Type-Options": "nosniff"},
    )


def routes() -> list[BaseRoute]:
    """``/sumdb/{name}/{path}``: to be mounted before the proxy protocol's catch-all."""
    return [Route("/sumdb/{name}/{path:path}", _serve, methods=["GET"])]
