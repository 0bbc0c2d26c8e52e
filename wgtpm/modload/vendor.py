"""``vendor/``: the build list's files inside the project, for air-gapped builds.

``wgtpm vendor`` copies the (selected) files of every module of the build
list to ``vendor/MODULE/`` and writes ``vendor/wgt.vendor.json``::

    {"schema": 1, "main": "github.com/acme/app",
     "modules": [{"path": "github.com/acme/xor-base", "version": "v0.1.0",
                  "h1": "h1:...", "explicit": true, "commit": "40 hex",
                  "files": [{"path": "xor/manifest.json", "size": 2210, "sha256": "...",
                             "artifact": "xor", "kind": "wgt"},
                            {"path": "xor/big.gguf", "size": 9, "sha256": "...", "omitted": true}]}]}

A fetched module lists every file of its release index, so that the list
hashes to the module's h1, with what the index says of it (``artifact``,
``kind``; the module's ``commit``) where it says it; a file the main module
does not ``select`` is marked ``"omitted": true`` and is not copied, but a
release's ``wgt.provenance.json`` is always copied, as ``get`` always
fetches it. A release whose signature ``get`` checked (the main module's
``trust`` lines, :mod:`wgtpm.trust`) keeps it as ``"signature"``, the
bundle's text, which ``-mod=vendor`` checks against the trust lines again
over the manifest's file list. Like the index's, those fields are outside h1; the provenance
file, inside it, says them again, and ``wgtpm verify -mod=vendor`` checks
that the two agree (:func:`manifest_index`). A module replaced by a
directory has ``"replace": "DIR"`` (as wgt.mod spells it) and no ``h1``: it
holds every file of the directory but ``.git``. The new ``vendor/`` is
written in a unique temporary directory beside it and swapped into place
whole (:func:`wgtpm._fs.replace_dir`).

``-mod=vendor`` then builds with no network and no module cache at all. The
manifest is not trusted: its modules must agree with wgt.mod's requirements
(else: run ``wgtpm vendor`` again); for every module that wgt.mod does not
replace by a directory, the h1 recomputed from the manifest's own file list
must be in wgt.sum (:func:`check_locked`; the ``h1`` field is informative
only); and before a module is used, every listed file is re-hashed and a
file under ``vendor/MODULE/`` that the manifest does not list is refused
(:func:`verify_module`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import _json, dirhash
from .._errors import UsageError, VerifyError
from .._fs import canonical_json, replace_dir, sha256_file, temp_dir
from ..index import ReleaseIndex
from ..modfetch import matches
from ..module import ModuleVersion
from ._manifest import MANIFEST, manifest_index
from .buildlist import FromDirectory
from .project import Project

__all__ = [
    "MANIFEST",
    "VENDOR",
    "check_locked",
    "manifest_h1",
    "manifest_index",
    "read_manifest",
    "vendor",
    "verify_module",
]

VENDOR = "vendor"

Manifest = dict[str, dict[str, Any]]  # module path -> its manifest entry


def vendor(project: Project) -> int:
    """Write ``vendor/`` for the project's build list; returns the number of modules."""
    project.ranged_by_log = False  # a FILE#TENSOR of a release without tables: FILE whole
    build = project.download_all()
    explicit = project.direct()
    dest = project.root / VENDOR
    with temp_dir(dest) as tmp:
        mods = [_copy_module(project, m, m.path in explicit, tmp) for m in build[1:]]
        doc = {"schema": 1, "main": project.path, "modules": mods}
        (tmp / MANIFEST).write_bytes(canonical_json(doc, pretty=True))
        replace_dir(tmp, dest)
    project.save()
    return len(mods)


def _copy_module(project: Project, m: ModuleVersion, explicit: bool, tmp: Path) -> dict[str, Any]:
    """Copy the files of ``m`` to ``tmp/MODULE/``; returns its manifest entry."""
    src = project.module_dir(m)
    origin = project.origin(m)
    entry: dict[str, Any] = {"path": m.path, "version": m.version, "explicit": explicit}
    files: list[dict[str, Any]] = []
    if isinstance(origin, FromDirectory):
        for f in sorted(p for p in src.rglob("*") if p.is_file() and ".git" not in p.parts):
            rel = f.relative_to(src).as_posix()
            _copy(f, tmp / m.path / rel)
            files.append({"path": rel, "size": f.stat().st_size, "sha256": sha256_file(f)})
        entry["replace"] = origin.written
    else:
        from ..index import PROVENANCE_FILE

        idx = project.index(origin)
        entry["h1"] = idx.h1()
        if idx.commit:
            entry["commit"] = idx.commit
        sig = project.cache.read_meta(m.path, m.version, "sig")
        if sig is not None:  # the release's signature (wgtpm.trust), as get checked it
            entry["signature"] = sig.decode("utf-8", "replace")
        patterns = project.select_patterns(m)
        for e in idx.files:
            listed = e.to_json()
            if matches(patterns, e.path) or e.path == PROVENANCE_FILE:
                _copy(src / e.path, tmp / m.path / e.path)
            else:
                listed["omitted"] = True
            files.append(listed)
        tensors = _copy_tensors(project, m, idx, tmp / m.path)
        if tensors:
            entry["tensors"] = tensors
    entry["files"] = files
    return entry


#: ``vendor/MODULE/FILE#tensors/SHA256``: the verified bytes of a tensor that a
#: ``select MODULE FILE#TENSOR`` line names, by content (FILE itself is not vendored).
TENSORS_DIR = "#tensors"


def _copy_tensors(project: Project, m: ModuleVersion, idx: ReleaseIndex, dst: Path) -> list[Any]:
    """Write the tensors ``select FILE#TENSOR`` lines name (verified against the release's
    h1-locked tables as they were fetched) under ``dst``; their manifest entries."""
    out: list[dict[str, str]] = []
    for file, info, data in project.fetch_selected_tensors(m):
        where = f"{file}{TENSORS_DIR}"
        if any(e.path.startswith(where + "/") for e in idx.files):
            raise UsageError(
                f"{m}: the release has a file under {where}/, where wgtpm vendor keeps the "
                f"tensors of {file}; select {file} whole instead"
            )
        (dst / where).mkdir(parents=True, exist_ok=True)
        (dst / where / info.sha256).write_bytes(data)
        out.append({"file": file, "tensor": info.name, "sha256": info.sha256})
    return out


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def read_manifest(vendor_dir: Path, requires: Sequence[ModuleVersion]) -> Manifest:
    """The vendored modules by path, checked against wgt.mod's ``requires``."""
    p = vendor_dir / MANIFEST
    try:
        doc = _json.loads(p.read_bytes())
    except FileNotFoundError as exc:
        raise UsageError(f"-mod=vendor: {p} does not exist; run 'wgtpm vendor' first") from exc
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{p}: not JSON ({exc}); run 'wgtpm vendor' again") from exc
    mods = {m["path"]: m for m in _modules(doc, p)}
    for r in requires:
        have = mods.get(r.path)
        if have is None or have["version"] != r.version:
            got = have["version"] if have else "not vendored"
            raise UsageError(
                f"inconsistent vendoring: wgt.mod requires {r.path}@{r.version}, vendor/ has {got}; "
                "run 'wgtpm vendor' again"
            )
    return mods


def _modules(doc: Any, p: Path) -> list[dict[str, Any]]:
    """The manifest's module entries, each shaped as the module docstring says."""

    def bad(what: str) -> UsageError:
        return UsageError(f"{p}: {what}; run 'wgtpm vendor' again")

    mods = doc.get("modules", []) if isinstance(doc, dict) else None
    if not isinstance(mods, list):
        raise bad("want an object with a list of modules")
    for m in mods:
        if not (
            isinstance(m, dict)
            and isinstance(m.get("path"), str)
            and isinstance(m.get("version"), str)
            and isinstance(m.get("files", []), list)
        ):
            raise bad("a module entry needs a path, a version and a list of files")
        for f in m.get("files", []):
            if not (
                isinstance(f, dict)
                and isinstance(f.get("path"), str)
                and isinstance(f.get("sha256"), str)
            ):
                raise bad(f"{m['path']}: a file entry needs a path and a sha256")
    return mods


def manifest_h1(m: dict[str, Any]) -> str:
    """The h1 of a module entry's own file list (omitted files included)."""
    return dirhash.hash1((f["path"], f["sha256"]) for f in m.get("files", []))


def check_locked(m: dict[str, Any], sums: list[str]) -> None:
    """Require the h1 of the entry's file list among wgt.sum's lines ``sums`` for it."""
    h1 = manifest_h1(m)
    if sums == [h1]:
        return
    have = " and ".join(sums) or "nothing"
    raise VerifyError(
        m["path"],
        m["version"],
        f"vendor/ does not match wgt.sum: the files vendor/{MANIFEST} lists hash to {h1}, "
        f"wgt.sum has {have}; run 'wgtpm vendor' again",
    )


def verify_module(vendor_dir: Path, m: dict[str, Any], others: Iterable[str] = ()) -> None:
    """Re-hash a vendored module's files against the manifest entry ``m``.

    Every listed file (but omitted ones) must be there with its sha256, and
    no other file may be under ``vendor/MODULE/``, except inside the
    directories of the vendored modules ``others`` nested in it.
    """
    path, version = m["path"], m["version"]
    root = vendor_dir / path
    listed = set()
    for f in m.get("files", []):
        rel = f["path"]
        if _unsafe(rel):
            raise VerifyError(path, version, f"vendor/{MANIFEST} lists an unsafe path {rel!r}")
        if f.get("omitted"):
            continue
        listed.add(rel)
        p = root / rel
        if not p.is_file() or sha256_file(p) != f["sha256"]:
            raise VerifyError(
                path,
                version,
                f"vendor/{path}/{rel} was changed or removed; run 'wgtpm vendor' again",
            )
    listed |= _verify_tensors(vendor_dir, m)
    nested = [o[len(path) + 1 :] for o in others if o.startswith(path + "/")]
    for p in sorted(root.rglob("*")) if root.is_dir() else []:
        rel = p.relative_to(root).as_posix()
        if p.is_dir() and not p.is_symlink():
            continue
        if rel in listed or any(rel.startswith(n + "/") for n in nested):
            continue
        raise VerifyError(
            path,
            version,
            f"vendor/{path}/{rel} is not listed in vendor/{MANIFEST}; "
            "remove it or run 'wgtpm vendor' again",
        )


def _unsafe(rel: str) -> bool:
    parts = rel.split("/")
    return (
        not rel
        or rel.startswith("/")
        or "\\" in rel
        or "\x00" in rel
        or (len(rel) > 1 and rel[1] == ":")
        or any(p in ("", ".", "..") for p in parts)
    )


def _verify_tensors(vendor_dir: Path, m: dict[str, Any]) -> set[str]:
    """Check each vendored tensor of ``m`` (its ``tensors`` entries) against the module's
    vendored ``wgt.tensors.json``, whose bytes the file list (h1) locks and the caller
    re-hashed: the tensor must be in its file's table with that sha256, and its bytes
    must hash to it. The paths checked, relative to ``vendor/MODULE``."""
    from .._fs import is_hex64
    from ..tensors import TABLES_FILE, TensorError, check_tensor_bytes, parse_tables

    path, version = m["path"], m["version"]
    tensors = m.get("tensors") or []
    if not tensors:
        return set()
    root = vendor_dir / path
    locked = {f["path"] for f in m.get("files", []) if not f.get("omitted")}
    if TABLES_FILE not in locked:
        raise VerifyError(
            path, version, f"vendor/{MANIFEST} lists tensors but not the release's {TABLES_FILE}"
        )
    tables = parse_tables((root / TABLES_FILE).read_bytes(), f"vendor/{path}/{TABLES_FILE}")
    seen = set()
    for t in tensors:
        file, name, sha = (
            t.get(k) if isinstance(t, dict) else None for k in ("file", "tensor", "sha256")
        )
        table = tables.files.get(file) if isinstance(file, str) else None
        if table is None or not isinstance(name, str) or not is_hex64(sha):
            raise VerifyError(path, version, f"vendor/{MANIFEST}: a bad tensor entry {t!r:.200}")
        try:
            info = table.get(name)
        except TensorError as exc:
            raise VerifyError(path, version, f"vendor/{MANIFEST}: {exc}") from exc
        rel = f"{file}{TENSORS_DIR}/{sha}"
        p = root / rel
        if info.sha256 != sha or not p.is_file():
            raise VerifyError(
                path,
                version,
                f"vendor/{path}/{rel} was changed or removed; run 'wgtpm vendor' again",
            )
        check_tensor_bytes(p.read_bytes(), info, str(file), module=path, version=version)
        seen.add(rel)
    return seen
