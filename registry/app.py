"""The ASGI application: the proxy protocol, the publishing API and ``/healthz``.

::

    app = create_app(Config(data=Path("/srv/registry")))   # opens the stores at startup
    app = create_app(registry=Registry(meta, blobs))       # or serve stores you opened

Routes: ``/healthz`` (liveness: 200 ``{"status": "ok"}`` while the process
answers at all, whatever the stores do), ``/readyz`` (readiness: 200 when the
database and the blob store answer, else 503 ``{"status": "unavailable",
"down": ["database", "blob store"]}``, naming what is down), ``/api/v1/...`` (:mod:`registry.api`), the web page
at ``/`` and ``/-/module/...`` (:mod:`registry.web`),
``/sumdb/$NAME/...`` (the checksum database, :mod:`registry.sumdb`), the
Hugging Face Hub read API (``/api/models/...`` and ``/OWNER/REPO/resolve/...``,
:mod:`registry.hfmirror`), and every other GET or HEAD is a proxy-protocol URL
(:mod:`registry.protocol`).
Module paths start with a host name holding a dot, so they never collide
with ``api``, ``healthz`` or ``sumdb``. In front of it all,
:class:`registry.fastpath.FastPath` answers again, without routing or the
database, what the protocol answered once for a public module's committed
version, and a hosted public module's ``@v/list`` and ``@latest`` from memory
while the database's count of committed versions is unchanged: no query per
request (the count is read by one thread at most every
:data:`~registry.fastpath.REFRESH_AFTER` seconds while requests come); a
changed count rebuilds an answer once, with one query for a list and the slow
path's lookups for ``@latest``. The stores are
closed when the server shuts down (uvicorn's lifespan, on SIGTERM or SIGINT).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from wgtpm.trust._revoked import RevocationFile

from . import api, hfmirror, sumdb, web
from ._errors import BadRequestError, RegistryError, StoreError, UnauthorizedError, UpstreamError
from .accesslog import AccessLog, request_id
from .config import Config
from .fastpath import FastPath, ProtocolCache
from .limits import Timeouts
from .metadata import open_metadata_store
from .protocol import parse_request_path, serve_protocol
from .proxy import open_proxy
from .service import Registry
from .stores import open_blob_store
from .sumdb import SumDB
from .sumkey import signer_key
from .tokens import parse_authorization

__all__ = ["RegistryApp", "create_app", "from_env", "open_registry"]

log = logging.getLogger("registry.app")


def open_registry(config: Config) -> Registry:
    """Open (and migrate) the database, open the blob store that ``config`` names, load
    (or create) the checksum log's signing key (:mod:`registry.sumkey`), and set up the
    caching proxy when ``config`` names an upstream (:mod:`registry.proxy`)."""
    config.data.mkdir(parents=True, exist_ok=True)
    meta = open_metadata_store(config.db_url())
    try:
        blobs = open_blob_store(
            config.store_url(), endpoint=config.s3_endpoint, spool=config.data / "spool"
        )
    except BaseException:
        meta.close()
        raise
    try:
        skey = signer_key(config.data, config.sumdb_name, config.sumdb_key_file)
        log_db = SumDB.open(meta.engine, skey)
        policy = config.hf_policy()
        public_url = config.public_base()  # printed on pages: configuration, never a Host
        proxy = (
            None
            if policy.offline  # serve only what is stored: no upstream at all
            else open_proxy(config.upstream_list(), config.data / "spool" / "proxy")
        )
    except ValueError as exc:
        blobs.close()
        meta.close()
        raise BadRequestError(str(exc)) from exc
    except BaseException:
        blobs.close()
        meta.close()
        raise
    return Registry(
        meta,
        blobs,
        config.limits,
        sumdb=log_db,
        proxy=proxy,
        hf_policy=policy,
        public_url=public_url,
        revoked=RevocationFile(config.revoked_keys_file()),
    )


def internal_message(rid: str) -> str:
    """What a 500 answers: no detail (a database's host and port, a bucket, a path),
    which goes to the error log under the same request id."""
    return f"internal error in the registry (request id {rid}); its operator can look it up"


async def _error(request: Request, exc: Exception) -> Response:
    """A :class:`RegistryError` as its status and message; a 500 (a store failed, or a
    bug: any other exception) as :func:`internal_message`, its detail logged with the
    request id. An upstream's failure (502) keeps its message: it names what failed."""
    if isinstance(exc, hfmirror.CutShort):  # a body cut on purpose: logged once, before
        raise exc
    rid = request_id(request.scope)
    status = exc.status if isinstance(exc, RegistryError) else 500
    message = str(exc)
    if status >= 500:
        # a 500 gets its traceback; a 502 one line, as any client can cause it
        trace = exc if not isinstance(exc, UpstreamError) else None
        log.error(
            "request %s: %s %s: %s", rid, request.method, request.url.path, exc, exc_info=trace
        )
        if not isinstance(exc, UpstreamError):
            message = internal_message(rid)
    headers = (
        {"WWW-Authenticate": 'Bearer realm="wgtpm-registry"'}
        if isinstance(exc, UnauthorizedError)
        else None
    )
    if not isinstance(exc, RegistryError):  # answered outside AccessLog, which adds it
        headers = {"X-Request-Id": rid}
    if request.url.path.startswith(api.PREFIX + "/"):
        body = {"error": message} if status < 500 else {"error": message, "request_id": rid}
        return JSONResponse(body, status_code=status, headers=headers)
    return PlainTextResponse(f"{message}\n", status_code=status, headers=headers)


async def _protocol(request: Request) -> Response:
    reg: Registry = request.app.state.registry
    req = parse_request_path("/" + request.path_params["path"])  # relative to any root_path
    if req is None:
        return PlainTextResponse("not found: not a proxy-protocol URL\n", status_code=404)
    cred = parse_authorization(request.headers.get("authorization"))
    token = None if cred is None else await run_in_threadpool(reg.authenticate, cred)
    return await serve_protocol(request, reg, req, token)


_NO_STORE = {"Cache-Control": "no-store"}


async def _healthz(request: Request) -> Response:
    """Liveness: the process answers. No store is asked, so a store outage (when
    cached answers can still be served) never makes every replica look dead at once."""
    return JSONResponse({"status": "ok"}, headers=_NO_STORE)


async def _readyz(request: Request) -> Response:
    """Readiness: 200 when the database and the blob store both answer, else 503 naming
    the ones down (``"database"``, ``"blob store"``); the reasons go to the error log."""
    reg: Registry = request.app.state.registry
    rid = request_id(request.scope)
    down: list[str] = []
    for name, check in (("database", reg.meta.ping), ("blob store", reg.blobs.check)):
        try:
            await run_in_threadpool(check)
        except (StoreError, OSError) as exc:
            log.error("request %s: readiness: the %s is down: %s", rid, name, exc)
            down.append(name)
    if down:
        doc = {"status": "unavailable", "down": down, "request_id": rid}
        return JSONResponse(doc, status_code=503, headers=_NO_STORE)
    return JSONResponse({"status": "ok"}, headers=_NO_STORE)


class RegistryApp(Starlette):
    """The app: Starlette, with :class:`~registry.fastpath.FastPath` ahead of all of it.
    ``timeouts`` are for the server's protocol (:mod:`registry._http`), which finds them here."""

    fast: FastPath | None = None
    timeouts: Timeouts = Timeouts()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fast = self.fast
        if fast is not None and scope["type"] == "http" and await fast.answer(scope, send):
            return
        await super().__call__(scope, receive, send)


def create_app(
    config: Config | None = None,
    *,
    registry: Registry | None = None,
    close_registry: bool = False,
    fast_path: bool = True,
    timeouts: Timeouts | None = None,
) -> RegistryApp:
    """The registry as an ASGI app, on ``registry`` or on the stores ``config`` names.

    Stores opened from ``config`` are closed at shutdown; a ``registry`` passed
    in is closed too when ``close_registry`` is set. Without ``fast_path``
    every request goes through Starlette (:mod:`registry.fastpath`). ``timeouts``
    (the defaults of :mod:`registry.limits` if not given) cut connections whose client
    stalls, under :func:`registry.server.serve`'s protocol.
    """
    if (config is None) == (registry is None):
        raise ValueError("create_app needs a config or a registry (one of them)")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if registry is not None:
            app.state.registry = registry
            try:
                yield
            finally:
                if close_registry:
                    await run_in_threadpool(registry.close)
                    log.info("registry stopped: database and blob store closed")
            return
        assert config is not None
        reg = await run_in_threadpool(open_registry, config)
        app.state.registry = reg
        log.info("registry started (database %s, blobs %s)", reg.meta_url(), reg.blobs.url)
        try:
            yield
        finally:
            await run_in_threadpool(reg.close)
            log.info("registry stopped: database and blob store closed")

    app = RegistryApp(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz, methods=["GET"]),
            *api.routes(),
            *sumdb.routes(),
            *web.routes(),
            *hfmirror.routes(),
            Route("/{path:path}", _protocol, methods=["GET", "HEAD"]),
        ],
        middleware=[Middleware(AccessLog)],
        exception_handlers={RegistryError: _error, Exception: _error},
        lifespan=lifespan,
    )
    if registry is not None:
        app.state.registry = registry
    if timeouts is not None:
        app.timeouts = timeouts
    app.state.web_pages = web.new_page_cache()
    app.state.protocol_cache = None
    if fast_path:
        app.state.protocol_cache = ProtocolCache()
        app.fast = FastPath(app.state.protocol_cache, app.state)
    return app


def from_env() -> RegistryApp:
    """The app configured by the environment (``uvicorn --factory registry.app:from_env``)."""
    return create_app(Config(), timeouts=Timeouts.from_env())
