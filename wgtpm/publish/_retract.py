"""``wgtpm retract vX.Y.Z -m WHY``: add a ``retract`` line to wgt.mod, as Go does.

A retraction takes effect when a version carrying it is published: queries
read retractions from the wgt.mod of a module's latest version. So the
command edits wgt.mod (comments kept) and names the next patch version to
publish, one not tagged or retracted yet; a retraction of that next version itself is
the author's call.
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
    return _next_unused(pkg, version, mf)


def _next_unused(pkg: Path, version: str, mf: modfile.ModFile) -> str:
    """The patch after ``version``, or, when a version as high or higher of its major is
    tagged in the package's repository or named in wgt.mod's ``retract`` lines, the patch
    after the highest of them: a version not published yet."""
    import subprocess

    try:
        tags = subprocess.run(
            ["git", "-C", str(pkg), "tag", "--list"], capture_output=True, text=True, timeout=10
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):  # no git: the wgt.mod's versions only
        tags = []
    known = [t.rsplit("/", 1)[-1] for t in tags]
    known += [r.high for r in mf.retracts] + [r.low for r in mf.retracts]
    same = [
        v
        for v in known
        if _v.is_valid(v) and not _v.is_pseudo(v) and _v.major(v) == _v.major(version)
    ]
    top = _v.sort_versions([*same, version])[-1]
    base = _v.to_semver(top)
    return f"v{base.major}.{base.minor}.{base.patch + (0 if base.prerelease else 1)}"
