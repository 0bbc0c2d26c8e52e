"""Run the registry with uvicorn: what ``wgtpm registry serve`` does.

uvicorn handles SIGTERM and SIGINT: it stops accepting connections and lets
requests in flight finish (up to ``graceful_timeout`` seconds), runs the
app's lifespan shutdown, which closes the database and the blob store, and
then re-raises the signal, so the process ends as signalled (exit status 143
for SIGTERM in a shell, as systemd and Kubernetes expect).

uvicorn picks uvloop and httptools when they are installed (the ``registry``
extra installs them) over asyncio and h11, which cost more per request.
``workers`` above 1 runs that many processes on one listening socket
(uvicorn's supervisor), each with its own stores on the same database and
blob store, as replicas are; each is configured by
:meth:`~registry.config.Config.environ`.

Connections whose client stalls are cut (:class:`~registry.limits.Timeouts`,
from ``WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT``, ``..._HEADER_TIMEOUT``,
``..._BODY_TIMEOUT`` and ``..._DRAIN_TIMEOUT``): uvicorn's keep-alive timeout
is the same, and the protocol of :mod:`registry._http` enforces them all.

To run it under another ASGI server or ``uvicorn --factory``, use
:func:`registry.app.from_env`, configured by the environment variables of
:mod:`registry.config` (another server's protocol enforces its own timeouts).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ._errors import BadRequestError
from .accesslog import UVICORN_LOG_CONFIG, configure
from .app import RegistryApp, create_app, open_registry
from .config import Config
from .limits import Timeouts

__all__ = ["serve", "worker_app"]

log = logging.getLogger("registry.server")


def serve(
    config: Config,
    host: str = "127.0.0.1",
    port: int = 8080,
    graceful_timeout: int = 30,
    workers: int = 1,
) -> None:
    """Serve until SIGTERM or SIGINT; the stores are opened first (a bad ``--db`` or
    ``--store`` fails here, with its reason) and closed after uvicorn has drained."""
    import uvicorn

    from ._http import protocol_class

    configure()
    try:
        timeouts = Timeouts.from_env()
    except ValueError as exc:
        raise BadRequestError(str(exc)) from exc
    reg = open_registry(config)
    log.info(
        "serving on http://%s:%d (database %s, blobs %s)", host, port, reg.meta_url(), reg.blobs.url
    )
    if reg.sumdb is not None:
        log.info(
            "checksum database at /sumdb/%s/; clients set WGTSUMDB=%s",
            reg.sumdb.name,
            f'"{reg.sumdb.vkey} URL"',
        )
    if reg.proxy is not None:
        log.info("caching proxy for modules not hosted here, upstream %s", reg.proxy.name)
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "access_log": False,  # registry.accesslog writes JSON lines instead
        "log_config": UVICORN_LOG_CONFIG,
        "lifespan": "on",
        "timeout_graceful_shutdown": graceful_timeout,
        "proxy_headers": True,
        "server_header": False,
        "http": protocol_class(),  # a response's head and body in one write (registry._http)
        "timeout_keep_alive": timeouts.keep_alive,  # also enforced, before a first request too
    }
    if workers > 1:
        reg.close()  # each worker opens its own
        os.environ.update(config.environ())
        log.info("%d worker processes", workers)
        uvicorn.run("registry.server:worker_app", factory=True, workers=workers, **options)
        return
    uvicorn.run(
        # closed by the app's lifespan shutdown: uvicorn re-raises SIGTERM/SIGINT after
        # draining, so code after run() would not run
        create_app(registry=reg, close_registry=True, timeouts=timeouts),
        **options,
    )


def worker_app() -> RegistryApp:
    """One of ``serve``'s worker processes: its logging, and the app on ``Config()``."""
    configure()
    return create_app(Config(), timeouts=Timeouts.from_env())
