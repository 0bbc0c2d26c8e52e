"""Versions: canonical semantic versions with a leading ``v``, and pseudo-versions.

A version is ``vMAJOR.MINOR.PATCH`` with an optional ``-PRERELEASE``
(semver.org 2.0.0), for example ``v0.1.0``, ``v1.2.3-rc.1``. Build metadata
(``+meta``) is refused: it does not take part in ordering, so two versions that
differ only there would lock different bytes under an equal version.

A pseudo-version names a revision that is not a release tag, as Go does::

    v0.0.0-20261101120000-3f9a2b7c1d0e        no release before it (major v0)
    vX.Y.(Z+1)-0.20261101120000-3f9a2b7c1d0e  after release vX.Y.Z
    vX.Y.Z-PRE.0.20261101120000-3f9a2b7c1d0e  after pre-release vX.Y.Z-PRE

The time is the revision's commit time in UTC (``YYYYMMDDhhmmss``) and the
revision is the first 12 lower-case hex digits of the commit (or PAW program
ID). Pseudo-versions order below the release they precede, so MVS and
``@latest`` treat them as what they are: snapshots between releases.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from datetime import datetime

    import semver

__all__ = [
    "compare",
    "is_prerelease",
    "is_pseudo",
    "is_valid",
    "major",
    "major_minor",
    "max_version",
    "pseudo_base",
    "pseudo_rev",
    "pseudo_time",
    "pseudo_version",
    "sort_versions",
    "to_semver",
]

# Matched whole (fullmatch, or \Z): ``$`` also matches before a final newline, which let
# ``v1.0.0\n`` pass for a version and reach the checksum log.
_SEMVER = re.compile(
    r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?\Z"
)
_PSEUDO = re.compile(r"v\d+\.\d+\.\d+-(?:.*\.)?(?:0\.)?(\d{14})-([0-9a-f]{12})\Z")
REV_LEN = 12
# Longer versions are refused: no real one comes close, and Python refuses to
# turn numbers of over 4,300 digits into ints.
MAX_VERSION_LEN = 256


def is_valid(v: str) -> bool:
    """Whether ``v`` is a canonical version (``v1.2.3``, ``v1.2.3-rc.1``)."""
    return len(v) <= MAX_VERSION_LEN and _SEMVER.fullmatch(v) is not None


class _Parsed(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: str | None


@lru_cache(maxsize=1 << 16)
def _parsed(v: str) -> _Parsed:
    m = _SEMVER.fullmatch(v) if len(v) <= MAX_VERSION_LEN else None
    if m is None:
        raise ValueError(f"invalid version {v[:80]!r}")
    return _Parsed(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))


def to_semver(v: str) -> semver.Version:
    """``v`` as a :class:`semver.Version` (imported here only: the hot path is regex-based)."""
    import semver

    return semver.Version.parse(v[1:])


_Key = tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]


@lru_cache(maxsize=1 << 18)
def _key(v: str) -> _Key:
    """A tuple that sorts as semver precedence does (MVS compares millions of times)."""
    p = _parsed(v)
    pre = str(p.prerelease) if p.prerelease is not None else None
    parts = (
        tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in pre.split(".")) if pre else ()
    )
    return (p.major, p.minor, p.patch, 0 if pre else 1, parts)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` orders before, with or after ``b`` by semver precedence.

    The empty string (the main module) orders after every version and
    ``"none"`` before every version, as MVS needs.
    """
    if a == b:
        return 0
    if a == "" or b == "none":
        return 1
    if b == "" or a == "none":
        return -1
    ka, kb = _key(a), _key(b)
    return (ka > kb) - (ka < kb)


def max_version(a: str, b: str) -> str:
    """The higher of two versions (``a`` on a tie)."""
    return b if compare(a, b) < 0 else a


def sort_versions(vs: list[str]) -> list[str]:
    """``vs`` in ascending semver order, invalid entries dropped."""
    return sorted((v for v in vs if is_valid(v)), key=_key)


def major(v: str) -> str:
    """``v1.2.3`` -> ``v1``."""
    return "v" + str(_parsed(v).major)


def major_minor(v: str) -> str:
    """``v1.2.3`` -> ``v1.2``."""
    k = _parsed(v)
    return f"v{k.major}.{k.minor}"


def is_prerelease(v: str) -> bool:
    """Whether ``v`` has a pre-release part (pseudo-versions do)."""
    return _parsed(v).prerelease is not None


def is_pseudo(v: str) -> bool:
    """Whether ``v`` is a pseudo-version."""
    return is_valid(v) and _PSEUDO.fullmatch(v) is not None


def pseudo_time(v: str) -> datetime:
    """The commit time recorded in a pseudo-version."""
    from datetime import datetime, timezone

    m = _PSEUDO.fullmatch(v)
    if not m:
        raise ValueError(f"not a pseudo-version: {v}")
    return datetime.strptime(m.group(1), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)


def pseudo_rev(v: str) -> str:
    """The revision (12 hex digits) recorded in a pseudo-version."""
    m = _PSEUDO.fullmatch(v)
    if not m:
        raise ValueError(f"not a pseudo-version: {v}")
    return m.group(2)


def pseudo_base(v: str) -> str | None:
    """The release a pseudo-version was made after, or ``None`` for ``vX.0.0-TIME-REV``."""
    if not is_pseudo(v):
        raise ValueError(f"not a pseudo-version: {v}")
    k = _parsed(v)
    pre = str(k.prerelease)
    if re.fullmatch(r"\d{14}-[0-9a-f]{12}", pre):
        return None
    if pre.startswith("0."):
        return f"v{k.major}.{k.minor}.{k.patch - 1}"
    base_pre = pre.rsplit(".0.", 1)[0] if ".0." in pre else pre.rsplit(".", 1)[0]
    return f"v{k.major}.{k.minor}.{k.patch}-{base_pre}"


def pseudo_version(base: str | None, t: datetime, rev: str, major_version: str = "v0") -> str:
    """The pseudo-version of revision ``rev`` made at ``t``, after release ``base``.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 11, 1, 12, 0, 0, tzinfo=timezone.utc)
    >>> pseudo_version(None, t, "3f9a2b7c1d0e99")
    'v0.0.0-20261101120000-3f9a2b7c1d0e'
    >>> pseudo_version("v0.1.0", t, "3f9a2b7c1d0e99")
    'v0.1.1-0.20261101120000-3f9a2b7c1d0e'
    """
    from datetime import timezone

    rev = rev.lower()[:REV_LEN]
    if not re.fullmatch(r"[0-9a-f]{12}", rev):
        raise ValueError(f"revision must be at least 12 hex digits: {rev!r}")
    stamp = t.astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")
    if base is None:
        return f"{major_version}.0.0-{stamp}-{rev}"
    k = _parsed(base)
    if k.prerelease is not None:
        return f"{base}.0.{stamp}-{rev}"
    return f"v{k.major}.{k.minor}.{k.patch + 1}-0.{stamp}-{rev}"
