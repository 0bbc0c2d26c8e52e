"""``wgtpm verify``: re-hash what the cache (or ``vendor/``) holds for the build list.

Like ``go mod verify``: for every module of the build list, the cached index
must hash to the one h1 line of wgt.sum (two different lines for one version
are a SECURITY ERROR), the cached wgt.mod to its ``/wgt.mod`` line, and every
selected file must be in the module tree and hash to its index entry. A
module the main module's ``trust`` lines name must have, beside its cached
index, a signature by the trusted signer over exactly that index
(:mod:`wgtpm.trust`).
A release's ``wgt.provenance.json`` (fetched whatever ``select`` says) must
agree with its index, as ``wgtpm get`` requires
(:func:`wgtpm.publish.check_provenance`): the index's artifact and kind of a
file, and its commit, are not covered by h1, the provenance is.
Nothing is downloaded. Under ``-mod=vendor``, every
vendored module is checked as a build would check it before use, and a
vendored release's provenance must agree with what ``vendor/wgt.vendor.json``
copied from its index (:func:`wgtpm.modload.vendor.manifest_index`), by the
same :func:`~wgtpm.publish.check_provenance`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from . import dirhash
from . import index as _index
from ._errors import VerifyError, WgtpmError
from ._fs import sha256_blob
from .index import IndexEntry, ReleaseIndex
from .modfetch import matches
from .modload.buildlist import Fetched
from .modload.files import MOD
from .modload.project import Project
from .modload.vendor import MANIFEST, manifest_index
from .module import ModuleVersion
from .publish._provenance import PROVENANCE_FILE, check_provenance
from .sumfile import MOD_SUFFIX

__all__ = ["verify_build"]


def verify_build(project: Project) -> list[str]:
    """Problems found, one line each (empty when everything verifies)."""
    if project.opts.vendor:
        return _verify_vendor(project)
    problems: list[str | _FileCheck | _ProvenanceCheck] = []
    cache = project.cache
    trust = project.trust_policy()
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
        if trust is not None and trust.covers(path):
            sig = cache.read_meta(path, version, "sig")  # kept when get checked it
            if sig is None:  # cached before the trust line: verify works offline, get fetches
                problems.append(
                    f"{m}: no signature was kept when it was downloaded, and a trust line asks "
                    "for one; run 'wgtpm get' to fetch and check it"
                )
            else:
                try:
                    trust.check(path, version, {e.path: e.sha256 for e in idx.files}, sig)
                except WgtpmError as exc:
                    problems.append(str(exc))
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
    out = []
    for p in problems:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, _FileCheck):
            if id(p) in modified:
                out.append(p.problem())
        elif id(p.file) not in modified:  # a modified provenance is reported as such
            out += p.problems()
    return out


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


class _ProvenanceCheck(NamedTuple):
    """The release's provenance against its index, once ``file`` hashed to its entry."""

    release: ReleaseIndex
    file: _FileCheck

    def problems(self) -> list[str]:
        try:
            check_provenance(self.release, self.file.file.read_bytes())
        except VerifyError as exc:
            return [str(exc)]
        return []


def _tree_checks(
    m: ModuleVersion, tree: Path, idx: ReleaseIndex, patterns: list[str] | None
) -> list[str | _FileCheck | _ProvenanceCheck]:
    """Every selected file of the index (and its provenance, always fetched) must be in the
    module tree with its sha256: a problem for each missing one, a check for each one there."""
    out: list[str | _FileCheck | _ProvenanceCheck] = []
    for e in idx.files:
        f = tree / e.path
        if f.is_file():
            check = _FileCheck(m, f, e)
            out.append(check)
            if e.path == PROVENANCE_FILE:
                out.append(_ProvenanceCheck(idx, check))
        elif matches(patterns, e.path) or e.path == PROVENANCE_FILE:
            out.append(f"{m}: {e.path} is missing from the cache (run 'wgtpm get')")
    return out


def _hash_files(files: Sequence[Path], sizes: Sequence[int]) -> list[str]:
    """The hex sha256 of each of ``files`` (their ``sizes`` known beforehand), in order.

    Files hash on one thread per CPU, largest first (hashlib and reads release the GIL,
    so a sharded checkpoint hashes at the speed of all the cores, not one).
    """
    workers = min(len(files), os.cpu_count() or 1)
    if workers <= 1:
        return [sha256_blob(f) for f in files]
    from concurrent.futures import ThreadPoolExecutor

    order = sorted(range(len(files)), key=lambda i: -sizes[i])
    out = [""] * len(files)
    with ThreadPoolExecutor(workers) as pool:
        for i, digest in zip(order, pool.map(sha256_blob, [files[i] for i in order]), strict=True):
            out[i] = digest
    return out


def _verify_vendor(project: Project) -> list[str]:
    from .modload.resolver import VendorResolver

    r = VendorResolver(project)
    out = []
    for path in r.modules():
        try:
            tree = r.module(path).dir  # its files re-hashed
            m = r.entry(path)
            if isinstance(project.origin(ModuleVersion(path, m["version"])), Fetched):
                _vendored_provenance(m, tree)
        except WgtpmError as exc:
            out.append(str(exc))
    return out


def _vendored_provenance(m: dict[str, Any], tree: Path) -> None:
    """Raise unless a vendored release's provenance file (if it has one, hashed already)
    says what the manifest copied from the release's index."""
    if not any(f["path"] == PROVENANCE_FILE and not f.get("omitted") for f in m["files"]):
        return
    if "commit" not in m:
        raise VerifyError(
            m["path"],
            m["version"],
            f"vendor/{MANIFEST} does not say what the index says of its files (written by an "
            "older wgtpm); run 'wgtpm vendor' again",
        )
    check_provenance(manifest_index(m), (tree / PROVENANCE_FILE).read_bytes())
