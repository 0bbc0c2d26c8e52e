"""The proxy protocol's hot path: answers that Starlette already gave once, again without it.

A committed version never changes (docs/design.md section 11), and neither does a
module's ``private`` flag, so once :mod:`registry.protocol` has answered 200
for a **public** module's ``.info``, ``.mod``, ``.index.json`` or file of a
committed version, the answer's headers (built by the same Starlette
``Response`` the slow path sends, so they are byte for byte the same) are
kept here under the request path, with the blob's sha256 or the body itself.
:class:`FastPath`, called by the app before any middleware, answers the next
GET or HEAD of that path with them, straight over ASGI: no routing, no
database, no worker thread; the blob's bytes from a bounded in-memory LRU (blobs up to
:data:`MAX_BLOB`, :data:`BLOB_BUDGET` in all), read once through the blob
store (any store). ``If-None-Match`` gets its 304 here too. When memory holds
the whole answer, the server's protocol (:mod:`registry._http`) sends it
itself, through :meth:`FastPath.answer_now`, before any ASGI request exists.

``@v/list`` and ``@latest`` of a hosted public module (one the slow path
answered once) are answered here as well, from memory, while nothing was
committed since they were built: their answers are kept with the *stamp* they
were built under, the database's :meth:`~registry.metadata.SqlMetadataStore.change_count`
(committed versions, on every replica) and this process's own commits
(``local_changes``). The count is read by one thread at a time, at most every
:data:`REFRESH_AFTER` seconds while requests come (none per request); a
request that finds it older than :data:`MAX_AGE` waits for a fresh read (the
answer_now path leaves it to the app), so a version committed on any replica
sharing the database is listed by every replica within about :data:`MAX_AGE`
seconds, and by this one at once. A changed stamp rebuilds the answer (one
query); ``If-None-Match`` with the body's sha256 gets a 304.

Everything else goes to the Starlette app, unchanged: a request with an
``Authorization`` header (its token must be checked, and a bad one is a 401
even for a public module), a ``Range``, a private module (never remembered,
so a private byte never leaves without a token), anything not yet
answered, every error, a blob the store lost (the entry is dropped and the
slow path reports it), and bodies over :data:`~registry.protocol.WHOLE_BODY`
bytes (streamed there). Requests answered here are logged by
:func:`registry.accesslog.log_access` as the slow path's are.

Memory: at most :data:`MAX_ENTRIES` paths (oldest dropped first) and
:data:`BLOB_BUDGET` bytes of blobs per process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import State
from starlette.responses import Response
from starlette.types import Scope, Send

from wgtpm import version as _v

from ._errors import RegistryError
from .accesslog import REQUEST_ID_HEADER, log_access, new_request_id
from .service import Registry

__all__ = [
    "BLOB_BUDGET",
    "MAX_AGE",
    "MAX_BLOB",
    "MAX_ENTRIES",
    "REFRESH_AFTER",
    "FastPath",
    "ProtocolCache",
    "Reply",
]

MAX_ENTRIES = 20_000  # remembered request paths (about 1 KiB each)
MAX_BLOB = 1 << 20  # blobs up to this size are kept in memory
BLOB_BUDGET = 64 << 20  # bytes of blobs kept in memory, in all
#: Seconds after which a request starts a fresh read of the change count (in a thread; the
#: request is answered from memory meanwhile): one query per interval, not per request.
REFRESH_AFTER = 0.2
#: Seconds after which a change count is too old to answer a list or @latest from memory:
#: the request waits for a fresh one. Publish-to-listed on another replica is under this
#: plus one read (a second is promised).
MAX_AGE = 0.5

Headers = list[tuple[bytes, bytes]]  # as ASGI has them: lower-case names, in order


@dataclass(frozen=True)
class Answer:
    """A remembered 200: its headers (GET and HEAD alike), the 304's headers, and its body
    (``body``, or the blob ``sha256`` of ``size`` bytes)."""

    etag: str
    headers: Headers
    not_modified: Headers
    body: bytes | None = None
    sha256: str = ""
    size: int = 0

    @classmethod
    def of(
        cls,
        headers: dict[str, str],
        content_type: str,
        *,
        body: bytes | None = None,
        sha256: str = "",
        size: int = 0,
    ) -> Answer:
        """The answer the slow path sends with ``headers`` (ETag first, Content-Length last)."""
        bare = {k: v for k, v in headers.items() if k != "Content-Length"}
        return cls(
            headers["ETag"],
            Response(status_code=200, headers=headers, media_type=content_type).raw_headers,
            Response(status_code=304, headers=bare).raw_headers,
            body,
            sha256,
            size,
        )


class Reply(NamedTuple):
    """A response ready to send, and the request's ``User-Agent`` (for the access log)."""

    status: int
    headers: Headers
    body: bytes
    ua: str | None


def screen(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str | None, str | None] | None:
    """A request's ``If-None-Match`` and ``User-Agent`` (lower-case header names, as ASGI
    has them); ``None`` when it has an ``Authorization`` or ``Range`` (the app answers)."""
    inm = ua = None
    for k, v in headers:
        if k == b"authorization" or k == b"range":
            return None
        if k == b"if-none-match" and inm is None:
            inm = v.decode("latin-1")
        elif k == b"user-agent":
            ua = v.decode("latin-1")
    return inm, ua


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (or is ``*``)."""
    if if_none_match is None:
        return False
    return if_none_match.strip() == "*" or etag in [t.strip() for t in if_none_match.split(",")]


class ProtocolCache:
    """What :class:`FastPath` may answer: remembered answers by path, hosted public modules'
    list and ``@latest`` paths with their last answers (and the stamp each was built
    under), and small blobs."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {}
        #: request path of @v/list or @latest -> (module, "list" or "latest")
        self.lists: dict[str, tuple[str, str]] = {}
        #: request path -> (stamp, answer): what :attr:`lists`' paths answered last
        self.built: dict[str, tuple[object, Answer]] = {}
        self._list_bodies: dict[str, tuple[tuple[str, ...], Answer]] = {}
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._blob_bytes = 0

    def remember(self, path: str, answer: Answer) -> None:
        """Answer GET and HEAD of ``path`` with ``answer`` from now on (a committed version's
        content of a public module: it never changes)."""
        self.answers[path] = answer
        if len(self.answers) > MAX_ENTRIES:
            del self.answers[next(iter(self.answers))]

    def remember_list(self, path: str, module: str, kind: str = "list") -> None:
        """``path`` is the ``@v/list`` (``kind`` list) or ``@latest`` (``kind`` latest) of
        ``module``, hosted here and public."""
        self.lists[path] = (module, kind)
        if len(self.lists) > MAX_ENTRIES:
            old = next(iter(self.lists))
            del self.lists[old]
            self.built.pop(old, None)

    def keep_built(self, path: str, stamp: object, answer: Answer) -> None:
        """``answer`` is what ``path`` (one of :attr:`lists`) answers while ``stamp`` holds."""
        if path in self.lists:
            self.built[path] = (stamp, answer)

    def forget(self, path: str) -> None:
        self.answers.pop(path, None)

    def blob(self, sha256: str) -> bytes | None:
        data = self._blobs.get(sha256)
        if data is not None:
            self._blobs.move_to_end(sha256)
        return data

    def keep_blob(self, sha256: str, data: bytes) -> None:
        if len(data) > MAX_BLOB or sha256 in self._blobs:
            return
        self._blobs[sha256] = data
        self._blob_bytes += len(data)
        while self._blob_bytes > BLOB_BUDGET:
            _, old = self._blobs.popitem(last=False)
            self._blob_bytes -= len(old)

    def list_answer(self, module: str, versions: list[str]) -> Answer:
        """The ``@v/list`` answer for ``versions`` (committed, any order), reused while they
        stay the same."""
        key = tuple(sorted(versions))
        had = self._list_bodies.get(module)
        if had is not None and had[0] == key:
            return had[1]
        body = "".join(
            v + "\n" for v in _v.sort_versions(list(key)) if not _v.is_pseudo(v)
        ).encode()
        headers = {
            "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
            "Cache-Control": "no-cache",
            "Content-Length": str(len(body)),
        }
        answer = Answer.of(headers, "text/plain", body=body)
        self._list_bodies[module] = (key, answer)
        if len(self._list_bodies) > MAX_ENTRIES:
            del self._list_bodies[next(iter(self._list_bodies))]
        return answer


def latest_answer(body: bytes) -> Answer:
    """The ``@latest`` answer whose body is ``body`` (the ``.info`` document)."""
    headers = {
        "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
        "Cache-Control": "no-cache",
        "Content-Length": str(len(body)),
    }
    return Answer.of(headers, "application/json", body=body)


class ChangeClock:
    """The change count of a registry's database as last read, and when (see the module's
    docstring); :meth:`stamp` is ``None`` when it is too old to answer from memory."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.count: int | None = None
        self.read_at = float("-inf")  # time.monotonic() when the last good read started
        self.reads = 0  # reads done, for tests and the benchmark
        self._lock = threading.Lock()
        self._reading = False

    def _meta(self) -> object:
        return self.state.registry.meta

    def stamp(self, now: float) -> object | None:
        """The stamp that answers built now carry: ``(count, local commits)``; ``None``
        when the count is older than :data:`MAX_AGE` (read it first: :meth:`read`).
        Starts a read in a thread when it is older than :data:`REFRESH_AFTER`."""
        age = now - self.read_at
        if age > MAX_AGE or self.count is None:
            return None
        if age > REFRESH_AFTER:
            self.read_soon()
        return (self.count, getattr(self._meta(), "local_changes", 0))

    def read_soon(self) -> None:
        """Read the count in a thread of its own, unless one is reading it already."""
        with self._lock:
            if self._reading:
                return
            self._reading = True
        threading.Thread(target=self._read_quietly, name="wgtpm-changes", daemon=True).start()

    def _read_quietly(self) -> None:
        try:
            self.read()
        except RegistryError:
            pass  # the next request that needs it reads again, and the slow path reports
        finally:
            with self._lock:
                self._reading = False

    def read(self) -> None:
        """Read the count now (blocking: a worker thread's call)."""
        start = time.monotonic()
        count = self._meta().change_count()  # type: ignore[attr-defined]
        self.reads += 1
        if start > self.read_at:
            self.count, self.read_at = count, start

    def supported(self) -> bool:
        return hasattr(self._meta(), "change_count")


class FastPath:
    """Answers what :class:`ProtocolCache` holds (:meth:`answer`), ahead of the app whose
    ``state`` holds the registry."""

    def __init__(self, cache: ProtocolCache, state: State) -> None:
        self.cache = cache
        self.state = state
        self.clock = ChangeClock(state)
        self.protocol_hits = 0  # requests answered through answer_now

    async def answer(self, scope: Scope, send: Send) -> bool:
        """Answer the HTTP request ``scope`` if it may; ``False`` when the app must (nothing
        was sent then)."""
        path = scope["path"]
        answer = self.cache.answers.get(path)
        if answer is None and path not in self.cache.lists:
            return False
        start = time.perf_counter()
        method = scope["method"]
        if method not in ("GET", "HEAD") or scope.get("root_path"):
            return False
        seen = screen(scope["headers"])
        if seen is None:
            return False
        inm, ua = seen
        if answer is None:
            answer = await self._list(path)
            if answer is None:
                return False
        status, headers, body = self.reply(answer, method, inm)
        if body is None:
            body = await self._read(path, answer)
            if body is None:
                return False
        rid = new_request_id()
        headers = [*headers, (REQUEST_ID_HEADER, rid.encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        client = scope.get("client")
        log_access(
            method, path, status, len(body), start, client[0] if client else None, ua=ua, rid=rid
        )
        return True

    def answer_now(self, method: str, path: str, headers: Headers) -> Reply | None:
        """What :meth:`answer` would send for this request when memory holds all of it (a
        remembered answer and its body: no list, no blob to read); ``None`` otherwise.

        For a server's own protocol (:mod:`registry._http`), which sends it and logs it
        itself (:attr:`protocol_hits` counts them).
        """
        answer = self.cache.answers.get(path) or self._built(path)
        if answer is None or method not in ("GET", "HEAD"):
            return None
        seen = screen(headers)
        if seen is None:
            return None
        status, out, body = self.reply(answer, method, seen[0])
        if body is None:
            return None
        self.protocol_hits += 1
        return Reply(status, out, body, seen[1])

    def reply(
        self, answer: Answer, method: str, if_none_match: str | None
    ) -> tuple[int, Headers, bytes | None]:
        """The status, headers and body that answer a GET or HEAD with ``answer``; the body
        is ``None`` when it is a blob not in memory."""
        if matches(if_none_match, answer.etag):
            return 304, answer.not_modified, b""
        if method == "HEAD":
            return 200, answer.headers, b""
        body = answer.body
        return 200, answer.headers, self.cache.blob(answer.sha256) if body is None else body

    async def _read(self, path: str, answer: Answer) -> bytes | None:
        reg: Registry = self.state.registry
        try:
            data = await run_in_threadpool(_read_blob, reg, answer.sha256, answer.size)
        except (RegistryError, OSError):
            self.cache.forget(path)  # the slow path reports what went wrong
            return None
        self.cache.keep_blob(answer.sha256, data)
        return data

    def _built(self, path: str) -> Answer | None:
        """The list or ``@latest`` answer for ``path`` built under the current stamp, when
        the stamp is fresh (no database read here)."""
        had = self.cache.built.get(path)
        if had is None:
            return None
        stamp = self.clock.stamp(time.monotonic())
        return had[1] if stamp is not None and had[0] == stamp else None

    async def _list(self, path: str) -> Answer | None:
        answer = self._built(path)
        if answer is not None:
            return answer
        module, kind = self.cache.lists[path]
        reg: Registry = self.state.registry
        try:
            if not self.clock.supported():  # no change count: read the versions each time
                return await self._build(reg, module, kind)
            stamp = self.clock.stamp(time.monotonic())
            if stamp is None:
                await run_in_threadpool(self.clock.read)
                stamp = self.clock.stamp(time.monotonic())
            answer = await self._build(reg, module, kind)
        except RegistryError:
            return None  # the slow path reports it
        if answer is not None and stamp is not None:
            self.cache.keep_built(path, stamp, answer)
        return answer

    async def _build(self, reg: Registry, module: str, kind: str) -> Answer | None:
        """The answer for ``module``'s list or ``@latest`` from the database (``None``:
        the app answers: it went private, or has no release)."""
        if kind == "list":
            meta = reg.meta
            if getattr(meta, "local", False):  # SQLite answers faster than a thread hop
                vs = meta.list_versions(module)
            else:
                vs = await run_in_threadpool(meta.list_versions, module)
            return self.cache.list_answer(module, vs)
        rev, private = await run_in_threadpool(reg.resolve, module, "latest", None)
        return None if private else latest_answer(reg.info(rev))


def _read_blob(reg: Registry, sha256: str, size: int) -> bytes:
    """The blob, checked against its address before it is kept in memory (a blob changed on
    disk is left to the slow path, and to the client's own check)."""
    data = b"".join(reg.blobs.get(sha256, 0, size))
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        raise OSError(f"blob {sha256} does not hold its {size} bytes")
    return data
