"""``wgtpm verify``: re-hash what the cache (or ``vendor/``) holds for the build list.

Like ``go mod verify``: for every module of the build list, the cached index
must hash to the one h1 line of wgt.sum (two different lines for one version
are a SECURITY ERROR), the cached wgt.mod to its ``/wgt.mod`` line, and every
selected file must be in the module tree and hash to its index entry.
Nothing is downloaded. Under ``-mod=vendor``, every
vendored module is checked as a build would check it before use.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from . import dirhash
from . import index as _index
from ._errors import WgtpmError
from ._fs import sha256_file
from .index import IndexEntry, ReleaseIndex
from .modfetch import matches
from .modload.buildlist import Fetched
from .modload.files import MOD
from .modload.project import Project
from .module import ModuleVersion
from .sumfile import MOD_SUFFIX

__all__ = ["verify_build"]


def verify_build(project: Project) -> list[str]:
    """Problems found, one line each (empty when everything verifies)."""
    if project.opts.vendor:
        return _verify_vendor(project)
    problems: list[str | _FileCheck] = []
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
        if len(sums) > 1:  # two lines for one version: a SECURITY ERROR naming both
            problems.append(str(project.sums.mismatch(path, version, idx.h1())))
        elif not sums:
            problems.append(
                f"missing wgt.sum entry for {path}@{version}; {project.opts.missing_sum_fix}"
            )
        elif idx.h1() not in sums:
            problems.append(f"{m}: cached index has {idx.h1()}, wgt.sum has {sums[0]}")
        mod = cache.read_meta(path, version, "mod")
        if mod is not None:
            mod_key = version + MOD_SUFFIX
            err = project.sums.mismatch(path, mod_key, dirhash.hash1_bytes({MOD: mod}))
            if err is not None:
                problems.append(str(err))
        problems += _tree_checks(m, cache.mod_dir(path, version), idx, project.select_patterns(m))
    checks = [c for c in problems if isinstance(c, _FileCheck)]
    digests = _hash_files([c.file for c in checks], [c.entry.size for c in checks])
    modified = {id(c) for c, got in zip(checks, digests, strict=True) if got != c.entry.sha256}
    return [
        p if isinstance(p, str) else p.problem()
        for p in problems
        if id(p) in modified or isinstance(p, str)
    ]


class _FileCheck(NamedTuple):
    """A file of a module tree to hash; its problem, if it does not hash to its entry."""

    module: ModuleVersion
    file: Path
    entry: IndexEntry

    def problem(self) -> str:
        return (
            f"{self.module}: {self.entry.path} has been modified in the cache "
            "(run 'wgtpm cache clean' and get it again)"
        )


def _tree_checks(
    m: ModuleVersion, tree: Path, idx: ReleaseIndex, patterns: list[str] | None
) -> list[str | _FileCheck]:
    """Every selected file of the index must be in the module tree with its sha256: a
    problem for each missing one, a check for each one there."""
    out: list[str | _FileCheck] = []
    for e in idx.files:
        f = tree / e.path
        if f.is_file():
            out.append(_FileCheck(m, f, e))
        elif matches(patterns, e.path):
            out.append(f"{m}: {e.path} is missing from the cache (run 'wgtpm get')")
    return out


def _hash_files(files: Sequence[Path], sizes: Sequence[int]) -> list[str]:
    """The hex sha256 of each of ``files`` (their ``sizes`` known beforehand), in order.

    Files hash on one thread per CPU, largest first (hashlib and reads release the GIL,
    so a sharded checkpoint hashes at the speed of all the cores, not one).
    """
    workers = min(len(files), os.cpu_count() or 1)
    if workers <= 1:
        return [sha256_file(f) for f in files]
    from concurrent.futures import ThreadPoolExecutor

    order = sorted(range(len(files)), key=lambda i: -sizes[i])
    out = [""] * len(files)
    with ThreadPoolExecutor(workers) as pool:
        for i, digest in zip(order, pool.map(sha256_file, [files[i] for i in order]), strict=True):
            out[i] = digest
    return out


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
