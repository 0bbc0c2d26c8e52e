"""``wgtpm retract vX.Y.Z -m WHY``: add a ``retract`` line to wgt.mod, as Go does.

A retraction takes effect when a version carrying it is published: queries
read retractions from the wgt.mod of a module's latest version. So the
command edits wgt.mod (comments kept) and names the next patch version to
publish; a retraction of that next version itself is the author's call.
"""

from __future__ import annotations

from pathlib import Path

from .. import modfile
from .. import version as _v
from .._errors import UsageError
from .._fs import write_atomic

__all__ = ["retract"]


def retract(pkg: Path, version: str, rationale: str) -> str:
    """Retract ``version`` in ``pkg/wgt.mod``; returns the version to publish next."""
    if not _v.is_valid(version) or _v.is_pseudo(version):
        raise UsageError(f"{version}: want a released version like v0.1.3")
    if not rationale.strip() or "\n" in rationale:
        raise UsageError("-m: give the reason on one line, e.g. -m 'trained on the wrong split'")
    path = pkg / "wgt.mod"
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise UsageError(
            f"no wgt.mod in {pkg}: run 'wgtpm retract' in a package directory"
        ) from exc
    mf = modfile.parse(data, str(path))
    if mf.is_retracted(version) is None:
        mf.add_retract(version, None, rationale.strip())
        write_atomic(path, mf.format())
    base = _v.to_semver(version)
    return f"v{base.major}.{base.minor}.{base.patch + (0 if base.prerelease else 1)}"
