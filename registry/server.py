"""Run the registry with uvicorn: what ``wgtpm registry serve`` does.

uvicorn handles SIGTERM and SIGINT: it stops accepting connections, lets
requests in flight finish (up to ``graceful_timeout`` seconds), then runs the
app's lifespan shutdown, which closes the database and the blob store.
"""

from __future__ import annotations

import logging

from .accesslog import configure
from .app import create_app
from .config import Config

__all__ = ["serve"]

log = logging.getLogger("registry.server")


def serve(
    config: Config, host: str = "127.0.0.1", port: int = 8080, graceful_timeout: int = 30
) -> None:
    """Serve until SIGTERM or SIGINT."""
    import uvicorn

    configure()
    log.info(
        "serving on http://%s:%d (db %s, store %s)", host, port, config.db_url(), config.store_url()
    )
    uvicorn.run(
        create_app(config),
        host=host,
        port=port,
        access_log=False,  # registry.accesslog writes JSON lines instead
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=graceful_timeout,
        proxy_headers=True,
    )
