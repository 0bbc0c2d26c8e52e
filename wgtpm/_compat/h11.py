"""h11's internals that wgtpm uses: the byte count of a body's reader.

A large download's body is read past h11 (:class:`wgtpm._httptransport.Body`);
h11 has no call to say so, so :func:`read_outside` sets what its reader of a
``Content-Length`` body has left (``ContentLengthReader._remaining``, reached
as ``Connection._reader``) to 0, and h11 ends the message as if it had read it,
so the connection is kept for the next request. Without those (checked when this
is first imported), nothing is touched and such a connection is closed after
its body (:func:`wgtpm._compat.fallback`).
"""

from __future__ import annotations

from typing import Any

import h11

from . import fallback, missing_attributes

__all__ = ["MISSING", "read_outside", "reader_missing"]


def reader_missing() -> list[str]:
    """What :func:`read_outside` needs that this h11 lacks (``[]``: all there)."""
    try:
        from h11._readers import ContentLengthReader
    except ImportError:
        return ["h11._readers.ContentLengthReader"]
    return [
        *(f"Connection.{n}" for n in missing_attributes(h11.Connection.__init__, "_reader")),
        *(
            f"ContentLengthReader.{n}"
            for n in missing_attributes(ContentLengthReader.__init__, "_remaining")
        ),
    ]


def read_outside(conn: Any, n: int) -> bool:
    """Tell ``conn`` (an ``h11.Connection`` reading a body) that the last ``n`` bytes of the
    body were read past it, so that it ends the message; whether it was told. Only a
    ``Content-Length`` reader with exactly ``n`` bytes left is touched."""
    if MISSING:
        return False
    from h11._readers import ContentLengthReader

    reader: Any = getattr(conn, "_reader", None)
    if type(reader) is not ContentLengthReader or getattr(reader, "_remaining", -1) != n:
        return False
    reader._remaining = 0
    return True


MISSING = reader_missing()
if MISSING:
    fallback("h11", MISSING[0], "a large body's connection is not kept")
