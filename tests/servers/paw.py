"""A loopback PAW program hub (the API of programasweights.com).

What it serves (shapes follow the ``programasweights`` SDK's client)::

    GET /api/v1/programs/resolve/SLUG      {"program_id", "slug"}; SLUG is OWNER/NAME, one
                                           element (OWNER%2FNAME) or two
    GET /api/v1/programs/ID                {"id", "program_id", "created_at", "slug", "spec"}
    GET /api/v1/programs/SLUG/versions     {"slug", "versions": [{"version", "program_id",
                                           "is_main", "created_at"}]}
    GET /api/v1/programs/ID/download       202 + Retry-After while the bundle is "generating"
                                           (``pending`` times), then 302 to the CDN server
    GET /api/v1/models/runtimes/ID         a runtime manifest of ``runtimes`` (404 otherwise)
    POST /api/v1/compile                   {"spec", "compiler", "public", "ephemeral"} ->
                                           {"program_id" (20 hex digits), "pseudo_program",
                                           "compiler_snapshot", "pseudo_program_strategy"} of
                                           the mapper registered with :meth:`add_mapper`
    GET /api/v1/programs/ID/asset/FILE     a mapper asset: 202 ``pending`` times, then 200;
                                           with ``hf_only`` 404 (the assets are on Hugging Face)
    GET /hf/ID/FILE                        the Hugging Face fallback (``PAW_HF_ASSET_URL``)

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

__all__ = ["Mapper", "PawProgram", "PawServer", "make_paw", "paw_id"]

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
class Mapper:
    """What the PAW compiler answers for one spec: a pseudo-program and a peft adapter."""

    program_id: str
    pseudo_program: str
    assets: dict[str, bytes]
    pending: int = 1
    hf_only: bool = False
    compiler_snapshot: str = "paw-4b-qwen3-0.6b-20260501"
    strategy: str = "vllm_generate"
    hits: dict[str, int] | None = None


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
        self.runtimes: dict[str, dict[str, object]] = {}
        self.mappers: dict[str, Mapper] = {}  # spec -> mapper
        self.compiles: list[dict[str, object]] = []  # the body of every POST /api/v1/compile
        self._clock = _EPOCH

    def add_mapper(
        self,
        spec: str,
        pseudo_program: str,
        assets: dict[str, bytes],
        *,
        pending: int = 1,
        hf_only: bool = False,
    ) -> Mapper:
        """Register what compiling ``spec`` gives; its program ID is 20 hex digits."""
        pid = hashlib.sha256(("mapper:" + spec).encode()).hexdigest()[:20]
        mapper = Mapper(pid, pseudo_program, dict(assets), pending, hf_only, hits={})
        self.mappers[spec] = mapper
        return mapper

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
        if seg[:1] == ("hf",) and len(seg) == 3:
            return self._asset(seg[1], seg[2], hf=True)
        key = req.header("x-api-key")
        if key is not None and key != self.api_key:
            return _detail(401, "Invalid API key")
        authed = key is not None
        if self.require_key and not authed:
            return _detail(401, "API key required")
        if seg == ("api", "v1", "compile") and req.method == "POST":
            return self._compile(req, authed)
        if seg[:4] == ("api", "v1", "models", "runtimes") and len(seg) == 5:
            manifest = self.runtimes.get(seg[4])
            if manifest is None:
                return _detail(404, f"Runtime '{seg[4]}' not found")
            return Response.json(manifest)
        if seg[:3] != ("api", "v1", "programs") or len(seg) < 4:
            return _detail(404, "Not Found")
        rest = seg[3:]
        if len(rest) == 3 and rest[1] == "asset":
            return self._asset(rest[0], rest[2], hf=False)
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

    def _compile(self, req: Request, authed: bool) -> Response:
        if self.api_key is not None and not authed:
            return _detail(401, "API key required")
        body = json.loads(req.body)
        self.compiles.append(body)
        mapper = self.mappers.get(str(body.get("spec", "")).strip())
        if mapper is None:
            return _detail(422, "no compiler output for this spec")
        return Response.json(
            {
                "program_id": mapper.program_id,
                "pseudo_program": mapper.pseudo_program,
                "compiler_snapshot": mapper.compiler_snapshot,
                "pseudo_program_strategy": mapper.strategy,
            }
        )

    def _asset(self, pid: str, filename: str, *, hf: bool) -> Response:
        mapper = next((m for m in self.mappers.values() if m.program_id == pid), None)
        if mapper is None or filename not in mapper.assets:
            return _detail(404, "Asset not found")
        if mapper.hf_only != hf:
            return _detail(404, "Asset not found")
        hits = mapper.hits if mapper.hits is not None else {}
        hits[filename] = hits.get(filename, 0) + 1
        if hits[filename] <= mapper.pending:
            return Response.json({"status": "generating"}, 202, {"Retry-After": "1"})
        return Response(200, {"Content-Type": "application/octet-stream"}, mapper.assets[filename])

    def _visible(self, prog: PawProgram, authed: bool) -> bool:
        return authed or not prog.private


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat()


def _detail(status: int, detail: str) -> Response:
    return Response.json({"detail": detail}, status)
