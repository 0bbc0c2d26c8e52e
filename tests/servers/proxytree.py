"""A static web server over a proxy-protocol tree (what ``python -m http.server`` would be),
with the fault injection and request log of :mod:`tests.servers`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from . import LoopbackServer, Request, Response, serve_bytes


class ProxyTreeServer(LoopbackServer):
    """Serves the files under ``root``; 404 for anything else (directories included)."""

    name = "proxy"

    def __init__(self, root: Path, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.root = Path(root).resolve()

    def route(self, req: Request) -> Response:
        if req.method not in ("GET", "HEAD"):
            return Response.text("method not allowed", 405)
        p = (self.root / unquote(req.path).lstrip("/")).resolve()
        if self.root not in p.parents or not p.is_file():
            return Response.text("not found", 404)
        return serve_bytes(req, p.read_bytes())
