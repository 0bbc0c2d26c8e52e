"""``wgtpm verify``: re-hash what the cache (or ``vendor/``) holds for the build list.

Like ``go mod verify``: for every module of the build list, the cached index
must hash to the h1 in wgt.sum, and every file in the module tree must hash
to its index entry. Nothing is downloaded. Under ``-mod=vendor``, every
vendored module is checked as a build would check it before use.
"""

from __future__ import annotations

from . import index as _index
from ._errors import WgtpmError
from ._fs import sha256_file
from .modload.buildlist import Fetched
from .modload.project import Project

__all__ = ["verify_build"]


def verify_build(project: Project) -> list[str]:
    """Problems found, one line each (empty when everything verifies)."""
    if project.opts.vendor:
        return _verify_vendor(project)
    problems: list[str] = []
    cache = project.cache
    for m in project.build_list()[1:]:
        origin = project.origin(m)
        if not isinstance(origin, Fetched):
            continue
        path, version = origin.path, origin.version
        raw = cache.read_meta(path, version, "index.json")
        if raw is None:
            problems.append(f"{m}: not downloaded (run 'wgtpm get')")
            continue
        try:
            idx = _index.parse(raw, path, version)
        except WgtpmError as exc:
            problems.append(f"{m}: cached index is broken: {exc}")
            continue
        sums = project.sums.hashes(path, version)
        if idx.h1() not in sums:
            problems.append(
                f"{m}: cached index has {idx.h1()}, wgt.sum has {', '.join(sums) or 'nothing'}"
            )
        tree = cache.mod_dir(path, version)
        for e in idx.files:
            f = tree / e.path
            if f.is_file() and sha256_file(f) != e.sha256:
                problems.append(
                    f"{m}: {e.path} has been modified in the cache (run 'wgtpm cache clean' and get it again)"
                )
    return problems


def _verify_vendor(project: Project) -> list[str]:
    from .modload.resolver import VendorResolver

    r = VendorResolver(project)
    out = []
    for path in r.modules():
        try:
            r.module(path)
        except WgtpmError as exc:
            out.append(str(exc))
    return out
