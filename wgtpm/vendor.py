"""``vendor/``: the build list's files inside the project, for air-gapped builds.

``wgtpm vendor`` copies the (selected) files of every module of the build
list to ``vendor/MODULE/`` and writes ``vendor/wgt.vendor.json``::

    {"schema": 1, "main": "github.com/acme/app",
     "modules": [{"path": "github.com/acme/xor-base", "version": "v0.1.0",
                  "h1": "h1:...", "explicit": true,
                  "files": [{"path": "xor/manifest.json", "size": 2210, "sha256": "..."}]}]}

``-mod=vendor`` then builds with no network and no module cache at all: the
build list comes from the manifest, which must agree with wgt.mod's
requirements (else: run ``wgtpm vendor`` again), and every file is checked
against its sha256 before use.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ._errors import ResolveError, UsageError, VerifyError
from ._fs import sha256_file
from .deps import ResolvedModule
from .project import Project

__all__ = ["VendorResolver", "read_manifest", "vendor"]

MANIFEST = "wgt.vendor.json"


def vendor(project: Project) -> int:
    """Write ``vendor/`` for the project's build list; returns the number of modules."""
    build = project.download_all()
    explicit = project.direct()
    root = project.root / "vendor"
    tmp = project.root / ".vendor.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    mods: list[dict[str, Any]] = []
    for m in build[1:]:
        src = project.module_dir(m)
        target = project.fetch_target(m)
        entry: dict[str, Any] = {
            "path": m.path,
            "version": m.version,
            "explicit": m.path in explicit,
        }
        files: list[dict[str, Any]] = []
        if target is not None:
            idx = project.fetcher.index(*target)
            entry["h1"] = idx.h1()
            for e in idx.files:
                if (src / e.path).is_file():
                    _copy(src / e.path, tmp / m.path / e.path)
                    files.append({"path": e.path, "size": e.size, "sha256": e.sha256})
        else:
            for f in sorted(p for p in src.rglob("*") if p.is_file() and ".git" not in p.parts):
                rel = f.relative_to(src).as_posix()
                _copy(f, tmp / m.path / rel)
                files.append({"path": rel, "size": f.stat().st_size, "sha256": sha256_file(f)})
            entry["replace"] = str(project.modfile.replacement(m.path, m.version).new_path)  # type: ignore[union-attr]
        entry["files"] = files
        mods.append(entry)
    doc = {"schema": 1, "main": project.path, "modules": mods}
    (tmp / MANIFEST).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    old = project.root / ".vendor.old"
    if root.exists():
        os.replace(root, old)
    os.replace(tmp, root)
    if old.exists():
        shutil.rmtree(old)
    project.save()
    return len(mods)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def read_manifest(project: Project) -> dict[str, dict[str, Any]]:
    """The vendored modules by path, checked against wgt.mod's requirements."""
    p = project.root / "vendor" / MANIFEST
    try:
        doc = json.loads(p.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"-mod=vendor: {p} does not exist; run 'wgtpm vendor' first") from None
    except ValueError as exc:
        raise UsageError(f"{p}: not JSON ({exc}); run 'wgtpm vendor' again") from None
    mods = {m["path"]: m for m in doc.get("modules", [])}
    for r in project.modfile.requires:
        have = mods.get(r.path)
        if have is None or have["version"] != r.version:
            got = have["version"] if have else "not vendored"
            raise UsageError(
                f"inconsistent vendoring: wgt.mod requires {r.path}@{r.version}, vendor/ has {got}; "
                "run 'wgtpm vendor' again"
            )
    return mods


class VendorResolver:
    """A resolver over ``vendor/`` that checks each module's files before handing them out."""

    def __init__(self, project: Project) -> None:
        self.root = project.root / "vendor"
        self.mods = read_manifest(project)
        for m in self.mods.values():
            h1 = m.get("h1")
            if h1 and h1 not in project.sums.file.hashes(m["path"], m["version"]):
                raise VerifyError(
                    m["path"],
                    m["version"],
                    "vendor/ does not match wgt.sum; run 'wgtpm vendor' again",
                )
        self._checked: set[str] = set()

    def modules(self) -> list[str]:
        return sorted(self.mods)

    def module(self, path: str) -> ResolvedModule:
        m = self.mods.get(path)
        if m is None:
            raise ResolveError(
                f"module {path} is not vendored; add it with 'wgtpm get {path}' and 'wgtpm vendor'"
            )
        if path not in self._checked:
            verify_module(self.root, m)
            self._checked.add(path)
        return ResolvedModule(path, m["version"], self.root / path, None)


def verify_module(root: Path, m: dict[str, Any]) -> None:
    """Re-hash a vendored module's files against the manifest."""
    for f in m.get("files", []):
        p = root / m["path"] / f["path"]
        if not p.is_file() or sha256_file(p) != f["sha256"]:
            raise VerifyError(
                m["path"],
                m["version"],
                f"vendor/{m['path']}/{f['path']} was changed or removed; run 'wgtpm vendor' again",
            )
