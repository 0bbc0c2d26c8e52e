"""Write releases into a proxy-protocol file tree (a static ``WGTPROXY``).

A directory written here can be served by any static web server or used
directly as ``WGTPROXY=file:///path``::

    tree = ProxyTree(Path("/srv/wgt"))
    tree.add("github.com/acme/xor-base", "v0.1.0",
             {"wgt.mod": b"module github.com/acme/xor-base\\n", "xor/weights.safetensors": ...})

Releases are immutable: adding a version that exists with other bytes is an
error; the same bytes again are accepted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import version as _v
from ._errors import ModuleError, VerifyError
from ._fs import write_atomic
from .index import IndexEntry, ReleaseIndex, build_index, synthetic_mod
from .index import parse as parse_index
from .module import check_path, check_path_major, escape_path, escape_version

__all__ = ["ProxyTree"]


def _copy_atomic(src: Path, dst: Path, sha256: str, where: tuple[str, str]) -> None:
    """Copy ``src`` to ``dst`` through a unique temporary file beside it, renamed into place
    only if the bytes copied have ``sha256`` (a file that changed since it was indexed is not)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            while chunk := inp.read(1 << 20):
                h.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != sha256:
            raise VerifyError(
                *where,
                f"{src} changed after it was indexed (sha256 {h.hexdigest()}, indexed {sha256})",
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ProxyTree:
    """A proxy-protocol tree rooted at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def url(self) -> str:
        return self.root.absolute().as_uri()

    def _vdir(self, module: str) -> Path:
        return self.root / escape_path(module) / "@v"

    def add(
        self,
        module: str,
        version: str,
        files: Mapping[str, bytes],
        *,
        time: str | None = None,
        commit: str | None = None,
        artifacts: Mapping[str, tuple[str, str]] | None = None,
        build: dict[str, Any] | None = None,
        latest: bool = True,
    ) -> ReleaseIndex:
        """Publish ``module@version`` with ``files`` (logical path -> bytes).

        ``artifacts`` maps a file path to its (artifact, kind). A missing
        ``wgt.mod`` is synthesised as ``module PATH``.
        """
        check_path(module)
        check_path_major(module, version)
        files = dict(files)
        files.setdefault("wgt.mod", synthetic_mod(module))
        arts = artifacts or {}
        entries = [
            IndexEntry(p, len(b), hashlib.sha256(b).hexdigest(), *arts.get(p, (None, None)))
            for p, b in sorted(files.items())
        ]
        t = time or _now()
        idx = build_index(module, version, entries, time=t, commit=commit, build=build)
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for i, (p, b) in enumerate(files.items()):
                paths[p] = Path(tmp) / str(i)
                paths[p].write_bytes(b)
            self.put(module, version, idx.to_json(), paths, latest=latest)
        return idx

    def put(
        self,
        module: str,
        version: str,
        index: bytes,
        files: Mapping[str, Path],
        *,
        latest: bool = True,
    ) -> bool:
        """Publish ``module@version``: its exact ``index`` bytes and ``files`` (logical path ->
        file on disk, every file the index lists). Returns False when the version was there
        already with the same h1 (nothing is written); another h1 is an error naming both.

        Each file is copied to a temporary name and renamed into place; the index
        is written last, so a version exists (``@v/list``) only once all of it does.
        """
        idx = parse_index(index, module, version)
        listed = {e.path for e in idx.files}
        if listed != set(files):
            raise ModuleError(
                module, version, f"files and index disagree: {sorted(listed ^ set(files))}"
            )
        vdir = self._vdir(module)
        ev = escape_version(version)
        old = vdir / f"{ev}.index.json"
        if old.exists():
            have = parse_index(old.read_bytes(), module, version).h1()
            if have != idx.h1():
                raise ModuleError(
                    module,
                    version,
                    f"already published in {self.root} with {have}; this release is {idx.h1()}. "
                    "Versions are immutable: publish a new version",
                )
            return False
        for e in idx.files:
            dst = vdir / ev / e.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            _copy_atomic(files[e.path], dst, e.sha256, (module, version))
        write_atomic(vdir / f"{ev}.mod", files["wgt.mod"].read_bytes())
        info: dict[str, str] = {"Version": version}
        if idx.time:
            info["Time"] = idx.time
        if idx.commit:
            info["Commit"] = idx.commit
        write_atomic(vdir / f"{ev}.info", (json.dumps(info) + "\n").encode())
        write_atomic(old, index)  # last: the version exists once its index does
        self._relist(module)
        if latest and not _v.is_pseudo(version):
            self._update_latest(module)
        return True

    def versions(self, module: str) -> list[str]:
        """The versions of ``module`` in this tree (its ``@v/list``), oldest first."""
        try:
            return (self._vdir(module) / "list").read_text().split()
        except FileNotFoundError:
            return []

    def _relist(self, module: str) -> None:
        vdir = self._vdir(module)
        vs = [p.name[: -len(".index.json")] for p in vdir.glob("*.index.json")]
        vs = [v for v in _v.sort_versions(vs) if not _v.is_pseudo(v)]
        write_atomic(vdir / "list", "".join(v + "\n" for v in vs).encode())

    def _update_latest(self, module: str) -> None:
        vdir = self._vdir(module)
        vs = (vdir / "list").read_text().split()
        rel = [v for v in vs if not _v.is_prerelease(v)] or vs
        if rel:
            best = _v.sort_versions(rel)[-1]
            os.makedirs(vdir.parent, exist_ok=True)
            write_atomic(
                vdir.parent / "@latest", (vdir / f"{escape_version(best)}.info").read_bytes()
            )

    def add_package(
        self, pkg: Path, version: str, *, time: str | None = None, commit: str | None = None
    ) -> ReleaseIndex:
        """Publish the package in ``pkg`` after ``wgtpm build``: its wgt.mod and artifacts.

        Each artifact ships what its kind's builder says it outputs
        (:meth:`wgtpm.build.Builder.outputs`): a ``.wgt`` artifact NAME ships
        ``build/NAME/*`` as ``NAME/...``, a ``paw`` one (``.pawspec`` or a
        prebuilt ``.paw``) ``build/NAME.paw`` as ``NAME.paw``, anything else
        its source file as it is.
        """
        from . import modfile
        from .build import BUILD_DIR, Target, builder_for_source

        mf = modfile.parse((pkg / "wgt.mod").read_bytes(), str(pkg / "wgt.mod"))
        assert mf.module is not None
        files: dict[str, bytes] = {"wgt.mod": (pkg / "wgt.mod").read_bytes()}
        arts: dict[str, tuple[str, str]] = {}
        for a in mf.artifacts:
            builder = builder_for_source(a.source)
            outputs = builder.outputs(Target(pkg, a.name, a.source, pkg / BUILD_DIR))
            if outputs is None:
                raise ModuleError(
                    mf.module.path,
                    version,
                    f"artifact {a.name}: its outputs are missing from {pkg / BUILD_DIR}; "
                    "run 'wgtpm build' first",
                )
            for logical, path in outputs.items():
                files[logical] = path.read_bytes()
                arts[logical] = (a.name, builder.kind)
        return self.add(mf.module.path, version, files, time=time, commit=commit, artifacts=arts)

    def set_latest(self, module: str, version: str) -> None:
        """Point ``@latest`` at ``version`` (e.g. a pseudo-version when there are no releases)."""
        vdir = self._vdir(module)
        write_atomic(
            vdir.parent / "@latest", (vdir / f"{escape_version(version)}.info").read_bytes()
        )

    def alias(self, module: str, rev: str, version: str) -> None:
        """Let ``$module/@v/$rev.info`` resolve a branch or commit name to ``version``."""
        vdir = self._vdir(module)
        write_atomic(vdir / f"{rev}.info", (vdir / f"{escape_version(version)}.info").read_bytes())
