"""The checks that run before anything is built; each refusal is one line saying what to do.

- :func:`check_version`: canonical semver with a leading ``v``, matching the
  module path's major version (``/vN``);
- :func:`check_newer`: newer than every version published at the target,
  unless ``--allow-older`` (a patch on an old line); the version itself
  being there already is a re-publish, decided by comparing h1 later;
- :func:`check_tag`: the git tag does not exist locally at another commit;
- :func:`check_replacements`: no ``replace`` by a directory (its bytes are
  neither versioned nor locked, so the build could not be repeated);
- :func:`check_build_list`: wgt.mod and wgt.sum are tidy (what ``wgtpm
  tidy`` would write, computed in memory, equals the committed files) and
  every module of the build list is downloaded and verified against wgt.sum.

The git checks (clean tree, HEAD committed) are :func:`._git.open_checkout`.
"""

from __future__ import annotations

from .. import version as _v
from .._errors import InvalidVersionError, ReadonlyError, ResolveError, UsageError
from ..modfile import ModFile
from ..modload.buildlist import FromDirectory
from ..modload.project import Project
from ..module import check_path_major

__all__ = [
    "check_build_list",
    "check_newer",
    "check_replacements",
    "check_tag",
    "check_version",
]


def check_version(module: str, version: str) -> None:
    """Refuse a version that is not ``vMAJOR.MINOR.PATCH[-PRE]`` or does not fit ``/vN``."""
    if not _v.is_valid(version):
        hint = f" (did you mean v{version}?)" if _v.is_valid("v" + version) else ""
        raise UsageError(
            f"--version {version}: not a canonical version; want vMAJOR.MINOR.PATCH, "
            f"like v0.2.0{hint}"
        )
    if _v.is_pseudo(version):
        raise UsageError(f"--version {version}: a pseudo-version names a commit, not a release")
    try:
        check_path_major(module, version)
    except InvalidVersionError as exc:
        raise UsageError(f"--version {version}: {exc.message}") from exc


def check_newer(module: str, version: str, published: list[str], allow_older: bool) -> None:
    """Refuse ``version`` unless it is newer than every published one (or ``allow_older``)."""
    if version in published or allow_older:
        return
    newer = [v for v in published if _v.is_valid(v) and _v.compare(v, version) > 0]
    if newer:
        latest = _v.sort_versions(newer)[-1]
        raise UsageError(
            f"{module}@{version} is older than the published {latest}; publish a newer "
            "version, or pass --allow-older for a patch on an older line"
        )


def check_tag(tag: str, tagged: str | None, commit: str) -> None:
    """Refuse when the git tag ``tag`` exists locally at a commit (``tagged``) other than HEAD."""
    if tagged is not None and tagged != commit:
        raise UsageError(
            f"git tag {tag} already exists at commit {tagged[:12]}, not at HEAD {commit[:12]}; "
            "versions are immutable: publish a new version"
        )


def check_replacements(mf: ModFile) -> None:
    """Refuse ``replace`` lines that point at directories."""
    local = [r for r in mf.replaces if r.is_local]
    if local:
        shown = ", ".join(f"{r.old_path} => {r.new_path}" for r in local)
        raise UsageError(
            f"wgt.mod replaces modules by directories ({shown}); a release must build from "
            "versioned, locked modules: publish those first and require them instead"
        )


def _readonly_cause(exc: BaseException) -> ReadonlyError | None:
    """The :class:`ReadonlyError` that ``exc`` is or was raised from (MVS wraps it), or None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ReadonlyError):
            return seen
        seen = seen.__cause__
    return None


def check_build_list(project: Project) -> None:
    """Refuse untidy wgt.mod/wgt.sum, and any module of the build list that does not verify.

    ``project`` is loaded read-only (``-mod=readonly``), so a missing wgt.sum
    line is an error and nothing is written.
    """
    from ..modget import tidy_in_memory

    try:
        build = tidy_in_memory(project)
        for m in build[1:]:
            origin = project.origin(m)
            if isinstance(origin, FromDirectory):  # check_replacements ran first
                raise UsageError(f"{m.path} is replaced by the directory {origin.dir}")
    except (ReadonlyError, ResolveError) as exc:
        cause = _readonly_cause(exc)
        if cause is None:
            raise
        raise UsageError(
            f"wgt.sum is not tidy ({cause}); run 'wgtpm tidy' and commit wgt.mod and wgt.sum"
        ) from exc
    mod_changed, sum_changed = project.changes()
    what = " and ".join(n for n, c in (("wgt.mod", mod_changed), ("wgt.sum", sum_changed)) if c)
    if what:
        verb = "are" if mod_changed and sum_changed else "is"
        raise UsageError(f"{what} {verb} not tidy; run 'wgtpm tidy' and commit the result")
    project.download_all(build)  # every file hashed against its index, the index against wgt.sum
