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
import logging.config
import os
from typing import Any

from ._errors import BadRequestError
from .accesslog import UVICORN_LOG_CONFIG, access_sink, configure_split
from .app import RegistryApp, create_app, open_registry
from .config import Config
from .limits import Timeouts

__all__ = ["serve", "worker_app"]

log = logging.getLogger("registry.server")

ACCESS_LOG_ENV = "WGTPM_REGISTRY_ACCESS_LOG"  # off, stdout (the default) or a file
ACCESS_SAMPLE_ENV = "WGTPM_REGISTRY_ACCESS_LOG_SAMPLE"  # log 1 request in N


def _logging(access_log: str, sample: int) -> None:
    """uvicorn's loggers as JSON lines on stderr, then the registry's. Done here, not by
    uvicorn's ``log_config``: its ``dictConfig`` would close (and so stop the flushing
    thread of) the handlers set up before it."""
    logging.config.dictConfig(UVICORN_LOG_CONFIG)
    try:
        configure_split(access_sink(access_log), sample)
    except OSError as exc:
        raise BadRequestError(
            f"--access-log {access_log}: cannot append to it ({exc.strerror}); "
            "give a writable file, stdout or off"
        ) from exc
    except ValueError as exc:
        raise BadRequestError(f"--access-log-sample: {exc}") from exc


def serve(
    config: Config,
    host: str = "127.0.0.1",
    port: int = 8080,
    graceful_timeout: int = 30,
    workers: int = 1,
    access_log: str = "stdout",
    access_sample: int = 1,
) -> None:
    """Serve until SIGTERM or SIGINT; the stores are opened first (a bad ``--db`` or
    ``--store`` fails here, with its reason) and closed after uvicorn has drained.

    Errors and messages go to stderr as JSON lines; access lines where ``access_log``
    says (``off``, ``stdout`` or a file: :func:`registry.accesslog.access_sink`), 1
    request in ``access_sample`` (every 5xx)."""
    import uvicorn

    from ._http import protocol_class

    _logging(access_log, access_sample)
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
        "log_config": None,  # _logging applied UVICORN_LOG_CONFIG
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
        os.environ[ACCESS_LOG_ENV] = access_log
        os.environ[ACCESS_SAMPLE_ENV] = str(access_sample)
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
    _logging(os.environ.get(ACCESS_LOG_ENV, "stdout"), int(os.environ.get(ACCESS_SAMPLE_ENV, "1")))
    return create_app(Config(), timeouts=Timeouts.from_env())
