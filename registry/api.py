"""The publishing API, under ``/api/v1/`` (specified in ``registry/api.md``).

Every route needs ``Authorization: Bearer TOKEN`` with scope ``publish`` and
a prefix that covers the module, checked before a byte of the body is read
(401 or 403 first). Bodies and answers are JSON, except file uploads, whose
body is the file's bytes; a body is read within its cap (:mod:`registry.body`:
:data:`~registry.limits.MAX_REQUEST_JSON`, or the file's size), else 413. Errors are ``{"error": message}``
with the status of :mod:`registry._errors`.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from . import body, limits
from ._errors import BadRequestError, ForbiddenError, TooLargeError, UnauthorizedError
from .metadata import CommitOutcome, FileRecord, TokenRecord
from .service import Registry, UploadState

__all__ = ["routes"]

PREFIX = "/api/v1"


def _registry(request: Request) -> Registry:
    reg: Registry = request.app.state.registry
    return reg


async def _token(request: Request) -> TokenRecord | None:
    from .tokens import parse_authorization

    cred = parse_authorization(request.headers.get("authorization"))
    return await run_in_threadpool(_registry(request).authenticate, cred)


async def _publisher(request: Request) -> TokenRecord:
    """The request's token, which must be one that may publish: checked before any byte
    of the body is read, so that no one without a token makes the server read a body."""
    token = await _token(request)
    if token is None:
        raise UnauthorizedError("publishing needs a token: send Authorization: Bearer TOKEN")
    if token.scope != "publish":
        raise ForbiddenError(f"token {token.id} has scope {token.scope}; publishing needs publish")
    return token


async def _json_body(request: Request) -> dict[str, Any]:
    return await body.json_object(request, limits.MAX_REQUEST_JSON, "the request body")


def _str(doc: dict[str, Any], key: str, required: bool = True) -> str | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise BadRequestError(f"{key!r} must be a string")
    return value


def _file(f: FileRecord) -> dict[str, Any]:
    return {"path": f.path, "size": f.size, "sha256": f.sha256}


def _state(state: UploadState) -> dict[str, Any]:
    u = state.upload
    if state.committed is not None:
        return {"module": u.module, "version": u.version, "h1": u.h1, "committed": True}
    base = f"{PREFIX}/uploads/{u.id}"
    return {
        "upload": u.id,
        "module": u.module,
        "version": u.version,
        "h1": u.h1,
        "private": u.private,
        "committed": False,
        "missing": [_file(f) for f in state.missing],
        "files_url": f"{base}/files/",
        "paths_url": f"{base}/paths/",
        "commit_url": f"{base}/commit",
    }


def _outcome(out: CommitOutcome) -> dict[str, Any]:
    v = out.version
    return {
        "module": v.module,
        "version": v.version,
        "h1": v.h1,
        "mod_h1": v.mod_h1,
        "private": v.private,
        "created": out.created,
        "committed": True,
    }


async def start_upload(request: Request) -> JSONResponse:
    token = await _publisher(request)
    doc = await _json_body(request)
    module, version = _str(doc, "module"), _str(doc, "version")
    index = doc.get("index")
    if isinstance(index, str):
        data = index.encode("utf-8")
    elif isinstance(index, dict):
        from wgtpm._fs import canonical_json

        data = canonical_json(index, pretty=True)
    else:
        raise BadRequestError("'index' must be the wgt.index.json text (a string) or object")
    private = doc.get("private", False)
    if not isinstance(private, bool):
        raise BadRequestError("'private' must be true or false")
    assert module is not None and version is not None
    state = await run_in_threadpool(
        lambda: _registry(request).start_upload(
            token, module, version, data, private=private, h1=_str(doc, "h1", required=False)
        )
    )
    return JSONResponse(_state(state), status_code=200 if state.committed else 201)


async def get_upload(request: Request) -> JSONResponse:
    token = await _token(request)
    state = await run_in_threadpool(_registry(request).upload, request.path_params["id"], token)
    return JSONResponse(_state(state))


async def put_file(request: Request) -> JSONResponse:
    """Stream the body into the blob store; it lands only if its sha256 matches."""
    token = await _publisher(request)
    reg = _registry(request)
    uid = request.path_params["id"]
    sha, path = request.path_params.get("sha256"), request.path_params.get("path")
    entry = await run_in_threadpool(lambda: reg.file_entry(uid, token, sha256=sha, path=path))
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > entry.size:
        raise TooLargeError(
            f"{entry.path}: the index says {entry.size} bytes, the body has {declared}"
        )
    # Already there and this upload's to use (deduplicated); a blob stored for someone
    # else is taken and checked like a new one, so the answer does not tell it exists.
    if await run_in_threadpool(reg.has_file, uid, token, entry):
        return JSONResponse({**_file(entry), "stored": False})
    writer = await run_in_threadpool(reg.blobs.writer, entry.sha256, entry.size)
    try:
        # Appending to a local spool file is fast enough to do on the event loop; the
        # fsync and rename (or the S3 upload) in commit() go to a thread.
        async for chunk in body.chunks(request, entry.size, entry.path):
            writer.write(chunk)
        if writer.size != entry.size:
            raise BadRequestError(
                f"{entry.path}: the index says {entry.size} bytes, the body had {writer.size}"
            )
        await run_in_threadpool(writer.commit)
        await run_in_threadpool(reg.file_received, uid, entry)
    finally:
        writer.abort()
    return JSONResponse({**_file(entry), "stored": True}, status_code=201)


async def commit(request: Request) -> JSONResponse:
    token = await _publisher(request)
    doc = await _json_body(request)
    h1 = _str(doc, "h1", required=False)
    att = _str(doc, "attestation", required=False)  # the SLSA statement's text, outside h1
    sig = _str(doc, "signature", required=False)  # the model-signing bundle's text, outside h1
    out = await run_in_threadpool(
        _registry(request).commit,
        request.path_params["id"],
        token,
        h1,
        att.encode() if att else None,
        sig.encode() if sig else None,
    )
    return JSONResponse(_outcome(out), status_code=201 if out.created else 200)


def routes() -> list[BaseRoute]:
    """The API's routes, to mount before the protocol's catch-all."""
    return [
        Route(f"{PREFIX}/uploads", start_upload, methods=["POST"]),
        Route(f"{PREFIX}/uploads/{{id}}", get_upload, methods=["GET"]),
        Route(f"{PREFIX}/uploads/{{id}}/files/{{sha256}}", put_file, methods=["PUT"]),
        Route(f"{PREFIX}/uploads/{{id}}/paths/{{path:path}}", put_file, methods=["PUT"]),
        Route(f"{PREFIX}/uploads/{{id}}/commit", commit, methods=["POST"]),
    ]
