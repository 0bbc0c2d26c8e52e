"""Version queries: what ``wgtpm get MODULE@QUERY`` asks for (docs/design.md section 6).

====================  ===================================================
``vX.Y.Z``            exactly that version (also when retracted)
``latest``            the highest release, else the highest pre-release;
                      ``None`` when there is neither (the caller then asks
                      the source for a pseudo-version of the default branch)
``upgrade``           like ``latest``, but never below the current version
``patch``             the highest release with the current major.minor
``v1``, ``v1.2``      the highest release with that prefix
``<v1.2``, ``<=v1.2``  the highest version below (or at) the bound
``>v1.2``, ``>=v1.2``  the lowest version above (or at) the bound
``none``              remove the module (handled by the caller)
anything else         a branch, tag or commit, resolved by the source
====================  ===================================================

Queries other than an exact version skip versions for which ``allowed``
says no (excluded or retracted ones).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import version as _v

__all__ = ["check_query", "is_revision", "meant", "pick"]

MAX_QUERY_LEN = 256
# A branch, tag or commit: what git allows in a ref name, less what could
# change a URL or a file path (no '..', no '//', no leading '/', '-' or '.').
_REVISION = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9._+/-]*\Z")

_PREFIX = re.compile(r"^v(0|[1-9]\d*)(\.(0|[1-9]\d*))?\Z")
_CMP = re.compile(r"^(<=|<|>=|>)(v.*)\Z")


def _complete(bound: str) -> str:
    """``v1`` -> ``v1.0.0``, ``v1.2`` -> ``v1.2.0`` (for comparisons)."""
    if _PREFIX.match(bound):
        parts = bound[1:].split(".")
        return "v" + ".".join(parts + ["0"] * (3 - len(parts)))
    return bound


def is_revision(query: str) -> bool:
    """Whether ``query`` is not something :func:`pick` understands (a branch or commit)."""
    return not (
        query in ("latest", "upgrade", "patch", "none")
        or _v.is_valid(query)
        or _PREFIX.match(query)
        or (_CMP.match(query) and _v.is_valid(_complete(_CMP.match(query).group(2))))  # type: ignore[union-attr]
    )


def check_query(query: str) -> str | None:
    """Why ``query`` cannot be a version query, or ``None`` when it can.

    Everything :func:`pick` understands is fine; anything else is taken as a
    branch, tag or commit and goes into a source's URLs and cache paths, so
    it must look like one.
    """
    if not query:
        return "empty version query"
    if len(query) > MAX_QUERY_LEN:
        return f"version query longer than {MAX_QUERY_LEN} characters"
    if not is_revision(query):
        return None
    if (
        not _REVISION.match(query)
        or ".." in query
        or "//" in query
        or query.endswith(("/", ".lock"))
    ):
        return (
            "not a version, a query (latest, upgrade, patch, none, v1, <v1.2) "
            "or a branch, tag or commit name"
        )
    return None


def _best(cands: list[str]) -> str | None:
    rel = [v for v in cands if not _v.is_prerelease(v)]
    pool = rel or cands
    return _v.sort_versions(pool)[-1] if pool else None


def pick(
    query: str, current: str | None, versions: list[str], allowed: Callable[[str], bool]
) -> str | None:
    """The version ``query`` selects from ``versions``, or ``None`` when none fits."""
    if _v.is_valid(query):
        return query
    ok = [v for v in versions if _v.is_valid(v) and allowed(v) and not _v.is_pseudo(v)]
    if query == "latest":
        return _best(ok)
    if query == "upgrade":
        best = _best(ok)
        if current and (best is None or _v.compare(current, best) > 0):
            return current
        return best
    if query == "patch":
        if not current:
            return _best(ok)
        mm = _v.major_minor(current)
        best = _best([v for v in ok if _v.major_minor(v) == mm])
        if best is None or _v.compare(current, best) > 0:
            return current
        return best
    if _PREFIX.match(query):
        n = query.count(".")
        return _best([v for v in ok if (_v.major(v) if n == 0 else _v.major_minor(v)) == query])
    m = _CMP.match(query)
    if m:
        op, bound = m.group(1), _complete(m.group(2))
        if op == "<":
            below = [v for v in ok if _v.compare(v, bound) < 0]
        elif op == "<=":
            below = [v for v in ok if _v.compare(v, bound) <= 0]
        else:
            above = [
                v
                for v in ok
                if (_v.compare(v, bound) > 0 if op == ">" else _v.compare(v, bound) >= 0)
            ]
            rel = [v for v in above if not _v.is_prerelease(v)] or above
            return _v.sort_versions(rel)[0] if rel else None
        return _best(below)
    return None


#: The query words: what a misspelt revision is compared with (:func:`meant`).
WORDS = ("latest", "upgrade", "patch", "none")


def meant(query: str) -> str | None:
    """The query word ``query`` is a typo of (``lastest`` -> ``latest``), or ``None``.

    A revision no source knows is most often a misspelt word; it cannot be refused
    before asking, since a branch may have any name."""
    import difflib

    if not is_revision(query):
        return None
    close = difflib.get_close_matches(query.lower(), WORDS, n=1, cutoff=0.7)
    return close[0] if close else None
