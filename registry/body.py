"""Request bodies, read within a cap: every route that reads a body reads it here.

A body is refused with :class:`~registry._errors.TooLargeError` (413) before
a byte of it is read when its ``Content-Length`` is over the cap, and once
past the cap while it is read (a chunked body declares no length); so no
request holds more than its cap in memory. A client that goes away while its
body is read ends the request quietly (a 400 no one receives, no traceback).

JSON and forms are parsed in a worker thread when they are large
(:data:`INLINE_PARSE`), so a 16 MiB document does not stall the event loop,
and checked before the route looks at them: malformed text, nesting deeper
than :data:`~registry.limits.MAX_JSON_DEPTH` and a document that is not an
object are a 400 with one line that says what is wrong::

    doc = await json_object(request, limits.MAX_REQUEST_JSON, "the upload request")
    form = await form_fields(request, limits.MAX_PATHS_INFO_BODY, "the paths-info form")
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from . import limits
from ._errors import BadRequestError, TooLargeError

__all__ = [
    "INLINE_PARSE",
    "check_depth",
    "chunks",
    "declared_length",
    "form_fields",
    "json_object",
    "parse_json",
    "read",
]

#: Bodies up to this size are parsed on the event loop; larger ones in a worker thread.
INLINE_PARSE = 64 << 10


def declared_length(request: Request, cap: int, what: str) -> int | None:
    """The request's ``Content-Length`` (``None`` when it sends none: chunked);
    :class:`TooLargeError` when it is over ``cap``."""
    text = request.headers.get("content-length")
    if text is None:
        return None
    if not text.strip().isdigit():
        raise BadRequestError(f"Content-Length {text[:40]!r} is not a number of bytes")
    # More digits than any cap has is over it (and int() refuses past 4,300 digits).
    n = int(text) if len(text.strip()) <= 19 else cap + 1
    if n > cap:
        raise TooLargeError(f"{what} may have at most {cap} bytes; this one declares {n}")
    return n


async def chunks(request: Request, cap: int, what: str) -> AsyncIterator[bytes]:
    """The body's chunks as they come, refused (:class:`TooLargeError`) once more than
    ``cap`` bytes came or were declared."""
    declared_length(request, cap, what)
    seen = 0
    try:
        async for chunk in request.stream():
            seen += len(chunk)
            if seen > cap:
                raise TooLargeError(f"{what} may have at most {cap} bytes")
            yield chunk
    except ClientDisconnect:
        raise BadRequestError(f"the client closed the connection while sending {what}") from None


async def read(request: Request, cap: int, what: str) -> bytes:
    """The whole body, at most ``cap`` bytes (:func:`chunks`)."""
    body = bytearray()
    async for chunk in chunks(request, cap, what):
        body += chunk
    return bytes(body)


async def json_object(request: Request, cap: int, what: str) -> dict[str, Any]:
    """The body as a JSON object (``{}`` for an empty body)."""
    body = await read(request, cap, what)
    if not body:
        return {}
    if len(body) > INLINE_PARSE:
        doc = await run_in_threadpool(parse_json, body, what)
    else:
        doc = parse_json(body, what)
    if not isinstance(doc, dict):
        raise BadRequestError(f"{what} must be a JSON object, not {_kind(doc)}")
    return doc


async def form_fields(request: Request, cap: int, what: str) -> dict[str, list[str]]:
    """The body as an ``application/x-www-form-urlencoded`` form: each name's values."""
    body = await read(request, cap, what)
    if len(body) > INLINE_PARSE:
        return await run_in_threadpool(_parse_form, body)
    return _parse_form(body)


def _parse_form(body: bytes) -> dict[str, list[str]]:
    return parse_qs(body.decode("utf-8", "replace"))


def parse_json(data: bytes, what: str) -> Any:
    """``data`` parsed as JSON and checked by :func:`check_depth`; :class:`BadRequestError`
    with one line (the position of a syntax error) otherwise."""
    try:
        doc = json.loads(data)
    except RecursionError:
        raise BadRequestError(
            f"{what} nests deeper than {limits.MAX_JSON_DEPTH} arrays or objects"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a huge integer
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadRequestError(f"{what} is not JSON: {first}") from None
    check_depth(doc, what)
    return doc


def check_depth(doc: Any, what: str, limit: int = limits.MAX_JSON_DEPTH) -> None:
    """:class:`BadRequestError` when ``doc`` nests more than ``limit`` arrays or objects
    (walked without recursion, so that nothing after it recurses too deep)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            raise BadRequestError(f"{what} nests deeper than {limit} arrays or objects")
        stack.extend((c, depth + 1) for c in children)


def _kind(doc: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(doc), "a number"
    )
