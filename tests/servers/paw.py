"""A loopback PAW program hub (the API of programasweights.com).

What it serves (shapes follow the ``programasweights`` SDK's client)::

    GET /api/v1/programs/resolve/SLUG      {"program_id", "slug"}; SLUG is OWNER/NAME, one
                                           element (OWNER%2FNAME) or two
    GET /api/v1/programs/ID                {"id", "program_id", "created_at", "slug", "spec"}
    GET /api/v1/programs/SLUG/versions     {"slug", "versions": [{"version", "program_id",
                                           "is_main", "created_at"}]}
    GET /api/v1/programs/ID/download       202 + Retry-After while the bundle is "generating"
                                           (``pending`` times), then 302 to the CDN server

Errors are FastAPI-shaped: ``{"detail": "..."}`` with 404 or 401. With
``api_key`` set, a wrong ``X-API-Key`` is 401 everywhere, and a missing one is
401 for private programs (or for everything with ``require_key``).

:func:`make_paw` builds a small bundle the way the SDK expects one: a ZIP of
``meta.json`` (with ``program_id``), ``pseudo_program.txt``, ``adapter.gguf``
and ``prompt_template.txt``.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from . import CdnServer, LoopbackServer, Request, RequestLog, Response

__all__ = ["PawProgram", "PawServer", "make_paw", "paw_id"]

_EPOCH = datetime(2026, 5, 1, tzinfo=timezone.utc)


def paw_id(spec: str) -> str:
    """A program ID (32 lower-case hex digits) derived from the spec text."""
    return hashlib.sha256(spec.encode()).hexdigest()[:32]


def make_paw(
    program_id: str, spec: str = "classify", *, extra: dict[str, bytes] | None = None
) -> bytes:
    """A ``.paw`` bundle for ``program_id``: stored ZIP members, fixed timestamps."""
    meta = {"program_id": program_id, "interpreter": "Qwen/Qwen3-0.6B", "spec": spec}
    members = {
        "meta.json": json.dumps(meta, sort_keys=True).encode(),
        "pseudo_program.txt": f"Do this: {spec}\n".encode(),
        "adapter.gguf": b"GGUF" + hashlib.sha256(spec.encode()).digest() * 64,
        "prompt_template.txt": b"<|im_start|>user\n{INPUT_PLACEHOLDER}<|im_end|>\n",
        **(extra or {}),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(info, data)
    return buf.getvalue()


@dataclass
class PawProgram:
    id: str
    bundle: bytes
    created_at: datetime
    slug: str | None = None
    private: bool = False
    pending: int = 0  # downloads answered 202 before the bundle is ready


class PawServer(LoopbackServer):
    """The PAW API on loopback; bundle downloads redirect to ``cdn``."""

    name = "paw"

    def __init__(
        self,
        cdn: CdnServer,
        *,
        api_key: str | None = None,
        require_key: bool = False,
        retry_after: str = "1",
        log: RequestLog | None = None,
    ) -> None:
        super().__init__(log=log if log is not None else cdn.log)
        self.cdn = cdn
        self.api_key = api_key
        self.require_key = require_key
        self.retry_after = retry_after
        self.programs: dict[str, PawProgram] = {}
        self.slugs: dict[str, list[str]] = {}  # slug -> program ids, oldest first; last is main
        self._clock = _EPOCH

    def publish(
        self,
        spec: str,
        *,
        slug: str | None = None,
        pending: int = 1,
        private: bool = False,
        bundle: bytes | None = None,
    ) -> str:
        """Compile ``spec`` into a program (``pending`` downloads answer 202 first); returns its ID.

        With ``slug``, the slug moves to the new program, keeping its history.
        """
        pid = paw_id(spec)
        self._clock += timedelta(minutes=7)
        self.programs[pid] = PawProgram(
            pid,
            bundle if bundle is not None else make_paw(pid, spec),
            self._clock,
            slug,
            private,
            pending,
        )
        if slug is not None:
            self.slugs.setdefault(slug, []).append(pid)
        return pid

    # ------------------------------------------------------------------

    def route(self, req: Request) -> Response:
        seg = req.segments
        if seg[:3] != ("api", "v1", "programs") or len(seg) < 4:
            return _detail(404, "Not Found")
        key = req.header("x-api-key")
        if key is not None and key != self.api_key:
            return _detail(401, "Invalid API key")
        authed = key is not None
        if self.require_key and not authed:
            return _detail(401, "API key required")
        rest = seg[3:]
        if rest[0] == "resolve" and len(rest) >= 2:
            slug = "/".join(rest[1:])
            ids = self.slugs.get(slug)
            if not ids or not self._visible(self.programs[ids[-1]], authed):
                return _detail(404, f"Program '{slug}' not found")
            return Response.json({"program_id": ids[-1], "slug": slug})
        if rest[-1] == "versions" and len(rest) >= 2:
            slug = "/".join(rest[:-1])
            ids = self.slugs.get(slug)
            if not ids:
                return _detail(404, f"Program '{slug}' not found")
            versions = [
                {
                    "version": i + 1,
                    "program_id": pid,
                    "is_main": i == len(ids) - 1,
                    "created_at": _iso(self.programs[pid].created_at),
                }
                for i, pid in enumerate(ids)
            ]
            return Response.json({"slug": slug, "versions": versions})
        prog = self.programs.get(rest[0])
        if prog is None or not self._visible(prog, authed):
            return _detail(404, "Program not found")
        if len(rest) == 1:
            return Response.json(
                {
                    "id": prog.id,
                    "program_id": prog.id,
                    "created_at": _iso(prog.created_at),
                    "slug": prog.slug,
                    "spec": "...",
                }
            )
        if rest[1:] == ("download",):
            if prog.pending > 0:
                prog.pending -= 1
                return Response.json(
                    {"status": "generating"}, 202, {"Retry-After": self.retry_after}
                )
            return Response.redirect(self.cdn.put(prog.bundle, f"{prog.id}.paw"))
        return _detail(404, "Not Found")

    def _visible(self, prog: PawProgram, authed: bool) -> bool:
        return authed or not prog.private


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat()


def _detail(status: int, detail: str) -> Response:
    return Response.json({"detail": detail}, status)
