"""Module paths: validation, major-version suffixes, escaping, and patterns.

A module path is a sequence of ``/``-separated elements; the first is a host
name with a dot (``github.com``, ``hf.co``, ``programasweights.com``,
``models.acme.internal``). Elements use ASCII letters, digits and ``-._~``,
are not empty, and neither start nor end with a dot. The host is lower-case.
``huggingface.co/...`` is normalised to ``hf.co/...``.

A module of major version 2 or later ends its path in ``/vN``
(``github.com/acme/encoder/v2``); majors 0 and 1 have no suffix.

Paths are case-sensitive, but file systems and URLs are not always, so paths
and versions are *escaped* for both: every upper-case letter becomes ``!``
followed by its lower-case form (``hf.co/Qwen/Qwen3`` ->
``hf.co/!qwen/!qwen3``), exactly as Go escapes module paths.

Some hosts are not case-sensitive: GitHub and the Hugging Face Hub resolve
``github.com/ACME/Secret`` to the repository ``acme/secret``. A check that
must hold for every spelling of a repository (a registry's hosted namespace,
``WGTPRIVATE``) compares :func:`fold`-ed paths (:func:`match_folded`); a
registry refuses the ``huggingface.co`` alias (:func:`check_canonical`).
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import NamedTuple

from . import version as _version
from ._errors import InvalidPathError, InvalidVersionError

__all__ = [
    "CASE_INSENSITIVE_HOSTS",
    "HOST_ALIASES",
    "ModuleVersion",
    "check_canonical",
    "check_path",
    "check_path_major",
    "escape_path",
    "escape_version",
    "fold",
    "match_folded",
    "match_patterns",
    "normalise",
    "source_kind",
    "split_path_major",
    "unescape_path",
]

#: Hosts that resolve owner and repository names whatever their case (GitHub, the
#: Hugging Face Hub): ``github.com/Acme/Secret`` is the repository ``github.com/acme/secret``.
CASE_INSENSITIVE_HOSTS = frozenset({"github.com", "hf.co"})
#: Other names of a host above; a module has one name, so a registry refuses these.
HOST_ALIASES = {"huggingface.co": "hf.co", "www.huggingface.co": "hf.co"}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Matched whole (fullmatch): ``$`` also matches before a final newline, which let an
# element like ``a\n`` into a module path.
_ELEM = re.compile(r"[A-Za-z0-9\-._~]+")
_MAJOR = re.compile(r"v([2-9]|[1-9]\d+)")


class ModuleVersion(NamedTuple):
    """A module path and a version (``""`` for the main module, ``"none"`` for absent).

    A named tuple: MVS hashes and compares millions of these.
    """

    path: str
    version: str

    def __str__(self) -> str:
        return f"{self.path}@{self.version}" if self.version else self.path


def normalise(path: str) -> str:
    """Map equivalent spellings to one: ``huggingface.co/x/y`` -> ``hf.co/x/y``."""
    for alias in ("huggingface.co/", "www.huggingface.co/"):
        if path.startswith(alias):
            return "hf.co/" + path[len(alias) :]
    return path


def check_path(path: str, main: bool = False) -> None:
    """Raise :class:`InvalidPathError` unless ``path`` is a valid module path.

    ``main``: the path of a main module (its wgt.mod's ``module`` line), whose first
    element needs no dot, as Go's ``go mod init example`` (a module nobody fetches
    by that path); a dependency's path starts with a host name.
    """
    if not path:
        raise InvalidPathError(path, "empty path")
    if path != path.strip():
        raise InvalidPathError(path, "leading or trailing space")
    elems = path.split("/")
    host = elems[0]
    if "." not in host and not main:
        raise InvalidPathError(path, f"first element {host!r} must be a host name with a dot")
    if host != host.lower() and "." in host:
        raise InvalidPathError(path, f"host {host!r} must be lower-case")
    for e in elems:
        if e == "":
            raise InvalidPathError(path, "empty path element (double or trailing slash)")
        if not _ELEM.fullmatch(e):
            raise InvalidPathError(path, f"element {e!r} may use only letters, digits and -._~")
        if e.startswith(".") or e.endswith("."):
            raise InvalidPathError(path, f"element {e!r} may not start or end with a dot")
        if e.lower().startswith("v") and e[1:].startswith("0") and e[1:].isdigit() and e != "v0":
            raise InvalidPathError(
                path, f"element {e!r} looks like a major version with a leading zero"
            )
    _, major = split_path_major(path)
    if major in ("/v0", "/v1"):
        raise InvalidPathError(
            path, f"major version suffix {major} is not allowed (only v2 and up)"
        )


def split_path_major(path: str) -> tuple[str, str]:
    """Split off a ``/vN`` suffix: ``a.com/m/v2`` -> (``a.com/m``, ``/v2``)."""
    i = path.rfind("/")
    if i > 0 and re.fullmatch(r"v\d+", path[i + 1 :]):
        return path[:i], path[i:]
    return path, ""


def check_path_major(path: str, v: str) -> None:
    """Raise unless version ``v`` fits the major-version suffix of ``path``.

    ``v0.x`` and ``v1.x`` belong to paths without a suffix; ``vN.x`` (N >= 2)
    to paths ending in ``/vN``.
    """
    if v in ("", "none"):
        return
    if not _version.is_valid(v):
        raise InvalidVersionError(path, v, "not a canonical version (want vMAJOR.MINOR.PATCH)")
    _, suffix = split_path_major(path)
    want = _version.major(v)
    if suffix:
        if suffix[1:] != want:
            raise InvalidVersionError(
                path, v, f"version must be {suffix[1:]}.x.y for a path ending in {suffix}"
            )
    elif want not in ("v0", "v1"):
        raise InvalidVersionError(
            path, v, f"a {want} module must have a path ending in /{want} (like {path}/{want})"
        )


def _escape(s: str) -> str:
    out = []
    for ch in s:
        if ch == "!":
            raise ValueError(f"{s!r} contains '!'")
        if "A" <= ch <= "Z":
            out.append("!" + ch.lower())
        else:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=4096)
def escape_path(path: str) -> str:
    """The path with each capital letter written ``!`` + lower-case, safe for URLs and disks."""
    check_path(path)
    return _escape(path)


def escape_version(v: str) -> str:
    """The version escaped like a path (pre-release parts may hold capitals)."""
    return _escape(v)


def unescape_path(escaped: str) -> str:
    """Invert :func:`escape_path`; raises :class:`InvalidPathError` on malformed input."""
    out = []
    bang = False
    for ch in escaped:
        if bang:
            if not ("a" <= ch <= "z"):
                raise InvalidPathError(escaped, "'!' must be followed by a lower-case letter")
            out.append(ch.upper())
            bang = False
        elif ch == "!":
            bang = True
        elif "A" <= ch <= "Z":
            raise InvalidPathError(escaped, "escaped path holds an upper-case letter")
        else:
            out.append(ch)
    if bang:
        raise InvalidPathError(escaped, "trailing '!'")
    path = "".join(out)
    check_path(path)
    return path


def source_kind(path: str) -> str:
    """Which direct source serves ``path``: ``github``, ``huggingface``, ``paw`` or ``other``."""
    host = normalise(path).split("/", 1)[0]
    return {
        "github.com": "github",
        "hf.co": "huggingface",
        "programasweights.com": "paw",
    }.get(host, "other")


def match_patterns(patterns: str, path: str) -> bool:
    """Whether ``path`` or one of its prefixes matches a pattern of a comma-separated list.

    Patterns are globs matched element by element against a leading part of
    the path, as in ``GOPRIVATE``: ``github.com/acme`` matches
    ``github.com/acme/xor`` and ``*.corp.example`` matches
    ``models.corp.example/team/m``.
    """
    elems = path.split("/")
    for pat in (p.strip() for p in patterns.split(",")):
        if not pat:
            continue
        pelems = pat.rstrip("/").split("/")
        if len(pelems) > len(elems):
            continue
        if all(fnmatch.fnmatchcase(e, p) for e, p in zip(elems, pelems)):
            return True
    return False


def fold(path: str) -> str:
    """The one spelling under which every name of a module compares equal.

    The host is lower-cased and its alias replaced; on a host of
    :data:`CASE_INSENSITIVE_HOSTS` the whole path is lower-cased too (ASCII
    letters only, as module paths hold no others)::

        fold("github.com/Acme/Secret")       -> "github.com/acme/secret"
        fold("huggingface.co/Qwen/Qwen3")    -> "hf.co/qwen/qwen3"
        fold("example.com/Team/m")           -> "example.com/Team/m"

    Paths are still case-sensitive everywhere else (the lock, wgt.sum, the
    checksum log). ``fold`` is for the checks that must not be dodged by a
    case variant: whether a path lies in a namespace that denies something.
    It works on globs too (``*`` and ``?`` are unchanged).
    """
    host, sep, rest = path.partition("/")
    host = host.translate(_ASCII_LOWER)
    host = HOST_ALIASES.get(host, host)
    if host in CASE_INSENSITIVE_HOSTS:
        rest = rest.translate(_ASCII_LOWER)
    return host + sep + rest


def match_folded(patterns: str, path: str) -> bool:
    """:func:`match_patterns` with the path and the patterns :func:`fold`-ed.

    On a case-insensitive host ``github.com/acme`` matches
    ``github.com/ACME/secret``, and ``*/acme`` does too (whether a pattern
    ignores case is decided by the host of the path it is matched against,
    so a glob for the host does not escape the folding).
    """
    folded = fold(path)
    if folded.partition("/")[0] in CASE_INSENSITIVE_HOSTS:
        patterns = patterns.translate(_ASCII_LOWER)
    return match_patterns(",".join(fold(p.strip()) for p in patterns.split(",")), folded)


def check_canonical(path: str) -> None:
    """Raise :class:`InvalidPathError` when ``path`` names its host by an alias.

    A client normalises ``huggingface.co/x`` to ``hf.co/x`` (:func:`normalise`)
    before it asks anyone; a registry that also served the alias would keep
    two names, two histories and two checksum-log records for one
    repository, so it refuses the alias and names the path to use.
    """
    host, sep, rest = path.partition("/")
    canonical = HOST_ALIASES.get(host.translate(_ASCII_LOWER))
    if canonical is not None:
        raise InvalidPathError(path, f"{host} is an alias: use {canonical}{sep}{rest}")
