"""What one record of wgtpm's checksum database holds, and the lookup path that finds it.

A record is the two wgt.sum lines of one module version, in this order, each
ending in a newline::

    github.com/acme/encoder v1.2.0 h1:AAAA...=
    github.com/acme/encoder v1.2.0/wgt.mod h1:BBBB...=

(Go's records hold go.sum lines, with ``/go.mod``; the shape is the same.)

A version whose release locks no tensor tables may get a second record, later,
from a registry that computed the tables of its ``.safetensors`` and ``.gguf``
files from the verified files (served beside the index as
``$module/@v/$version.tensors.json``): one line whose ``h1`` is Hash1 over the
one file ``wgt.tensors.json`` (as the ``/wgt.mod`` line's is over ``wgt.mod``)::

    hf.co/acme/tiny-qwen3 v0.1.0/wgt.tensors.json h1:CCCC...=

found at ``/lookup/M@V/wgt.tensors.json``. It
is no wgt.sum line: the module's h1 is the same whether it came from the
registry or not. Go's client never asks for it (its lookup syntax refuses the
suffix), and verifies trees that hold it as any others.
The log's record ``n`` is these bytes; its leaf hash is
``tlog.record_hash(text)``. A lookup, ``GET $URL/sumdb/$NAME/lookup/M@V``
with ``M`` and ``V`` escaped as in :func:`wgtpm.module.escape_path`
(``hf.co/!qwen/!qwen3@v1.0.0``), answers with the record in
:func:`wgtpm.sumdb.tlog.format_record` form followed by the signed tree head
of a tree that holds it::

    42
    github.com/acme/encoder v1.2.0 h1:AAAA...=
    github.com/acme/encoder v1.2.0/wgt.mod h1:BBBB...=

    go.sum database tree
    1234
    CCCC...=

    — sum.example.com Az3g...
"""

from __future__ import annotations

from .. import module as _module
from .. import version as _version
from .._errors import InvalidPathError, InvalidVersionError

__all__ = [
    "MOD_SUFFIX",
    "TABLES_SUFFIX",
    "lookup_path",
    "parse_lookup_path",
    "record_text",
    "tables_record_text",
]

MOD_SUFFIX = "/wgt.mod"
#: The second record of a version: the tensor tables a registry computed and logged.
TABLES_SUFFIX = "/wgt.tensors.json"


def record_text(path: str, version: str, h1: str, mod_h1: str) -> bytes:
    """The record for ``path@version``: its wgt.sum line, then its ``/wgt.mod`` line.

    Raises :class:`InvalidPathError` or :class:`InvalidVersionError` unless
    ``path`` and ``version`` are valid: the log is append-only, so a record
    that does not parse back (a version ending in a newline would split its
    line) must never be written.
    """
    _module.check_path(path)
    if not _version.is_valid(version):
        raise InvalidVersionError(path, version, "not a canonical version")
    return f"{path} {version} {h1}\n{path} {version}{MOD_SUFFIX} {mod_h1}\n".encode()


def tables_record_text(path: str, version: str, h1: str) -> bytes:
    """The tables record of ``path@version``: its one ``V/wgt.tensors.json`` line."""
    _module.check_path(path)
    if not _version.is_valid(version):
        raise InvalidVersionError(path, version, "not a canonical version")
    return f"{path} {version}{TABLES_SUFFIX} {h1}\n".encode()


def lookup_path(path: str, version: str) -> str:
    """``/lookup/ESCAPED_PATH@ESCAPED_VERSION``, under ``$URL/sumdb/$NAME``.

    ``version`` may end in ``/wgt.mod``: both lines live in one record. One that ends
    in ``/wgt.tensors.json`` asks for the tables record:
    ``/lookup/ESCAPED_PATH@ESCAPED_VERSION/wgt.tensors.json``.
    """
    if version.endswith(TABLES_SUFFIX):
        return lookup_path(path, version.removesuffix(TABLES_SUFFIX)) + TABLES_SUFFIX
    version = version.removesuffix(MOD_SUFFIX)
    if not _version.is_valid(version):
        raise InvalidVersionError(path, version, "not a canonical version")
    try:
        escaped = _module.escape_version(version)
    except ValueError as exc:
        raise InvalidVersionError(path, version, str(exc)) from None
    return f"/lookup/{_module.escape_path(path)}@{escaped}"


def parse_lookup_path(lookup: str) -> tuple[str, str]:
    """The module path and version of ``/lookup/M@V`` (escaped), for a server to answer;
    for ``/lookup/M@V/wgt.tensors.json``, the version is ``V/wgt.tensors.json``."""
    if lookup.endswith(TABLES_SUFFIX):
        path, version = parse_lookup_path(lookup.removesuffix(TABLES_SUFFIX))
        return path, version + TABLES_SUFFIX
    rest = lookup.removeprefix("/lookup/")
    escaped_path, at, escaped_version = rest.rpartition("@")
    if rest == lookup or not at:
        raise InvalidPathError(lookup, "not a lookup path (want /lookup/MODULE@VERSION)")
    path = _module.unescape_path(escaped_path)
    version = _unescape_version(path, escaped_version)
    if not _version.is_valid(version):
        raise InvalidVersionError(path, version, "not a canonical version")
    return path, version


def _unescape_version(path: str, escaped: str) -> str:
    out: list[str] = []
    bang = False
    for ch in escaped:
        if bang and not "a" <= ch <= "z":
            raise InvalidVersionError(path, escaped, "'!' must be followed by a lower-case letter")
        if not bang and "A" <= ch <= "Z":
            raise InvalidVersionError(path, escaped, "escaped version holds an upper-case letter")
        if ch == "!" and not bang:
            bang = True
            continue
        out.append(ch.upper() if bang else ch)
        bang = False
    if bang:
        raise InvalidVersionError(path, escaped, "trailing '!'")
    return "".join(out)
