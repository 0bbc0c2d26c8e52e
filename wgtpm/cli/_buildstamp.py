"""Build stamps: ``wgtpm build`` skips an artifact whose inputs have not changed.

After a build succeeds, ``build/.stamp.NAME`` records two things::

    inputs 9f2c...                     sha256 of everything the build read
    output 3a7e...  build/xor/manifest.json
    output 51d0...  build/xor/weights.safetensors

The next ``wgtpm build`` recomputes the inputs' hash and re-hashes the
outputs; when both match it says ``NAME is up to date`` and does not
retrain (``--force`` always rebuilds). The inputs are, in this order:
the tools (wgtpm, Python and torch versions), the artifact's name, kind and
source path, the package's wgt.mod and wgt.sum (which pin every module
import), every file of the package outside ``build/``, ``vendor/`` and hidden
directories (the source, its data, a .pawspec's examples), the files of each
local directory replacement (whose ``build/`` a module import may read), and
the manifest of every artifact a ``.wgt`` file imports by path
(``import h from "../enc/build/enc".h``). Hashing the whole package is
coarse on purpose: an input that is missed would make a stale artifact look
fresh, while an extra one only costs a rebuild.
"""

from __future__ import annotations

import hashlib
import platform
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import __version__

__all__ = ["inputs_hash", "is_fresh", "record", "stamp_path"]

#: Directories of a package that are not build inputs.
SKIPPED_DIRS = frozenset({"build", "vendor", "__pycache__", "node_modules"})

_PATH_IMPORT = re.compile(rb'\bimport\s+\w+\s+from\s+"([^"]+)"')


def stamp_path(out_dir: Path, name: str) -> Path:
    return out_dir / f".stamp.{name}"


def _tool_versions() -> str:
    from importlib import metadata

    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "none"
    return f"wgtpm {__version__}\npython {platform.python_version()}\ntorch {torch}\n"


def _files(root: Path, skip_build: bool) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if any(part.startswith(".") for part in rel):
            continue
        if skip_build and rel and rel[0] in SKIPPED_DIRS:
            continue
        if "__pycache__" in rel or not p.is_file():
            continue
        yield p


def _hash_tree(h: hashlib._Hash, label: str, root: Path, skip_build: bool) -> None:
    h.update(f"tree {label}\n".encode())
    for p in _files(root, skip_build):
        h.update(f"{p.relative_to(root).as_posix()}\0".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())


def inputs_hash(
    project: Path, name: str, kind: str, source: str, local_replacements: Iterable[Path]
) -> str:
    """The sha256 of everything building artifact ``name`` reads (see the module docstring)."""
    h = hashlib.sha256(b"wgtpm build stamp 1\n")
    h.update(_tool_versions().encode())
    h.update(f"artifact {name} {kind} {source}\n".encode())
    for fixed in ("wgt.mod", "wgt.sum"):
        f = project / fixed
        h.update(f"{fixed}\0".encode() + (f.read_bytes() if f.is_file() else b"-"))
    _hash_tree(h, ".", project, skip_build=True)
    for d in sorted(local_replacements):
        if d.is_dir():
            _hash_tree(h, str(d), d, skip_build=False)
    src = project / source
    if src.suffix == ".wgt" and src.is_file():
        for ref in _PATH_IMPORT.findall(src.read_bytes()):
            target = (src.parent / ref.decode(errors="replace")).resolve()
            h.update(f"import {ref.decode(errors='replace')}\n".encode())
            if target.is_dir():
                _hash_tree(h, str(target), target, skip_build=False)
            elif target.is_file():
                h.update(hashlib.sha256(target.read_bytes()).digest())
    return h.hexdigest()


def _read(stamp: Path) -> tuple[str, dict[str, str]] | None:
    try:
        lines = stamp.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    inputs, outputs = "", {}
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "inputs":
            inputs = rest
        elif word == "output":
            digest, _, path = rest.partition("  ")
            outputs[path] = digest
    return inputs, outputs


def is_fresh(project: Path, stamp: Path, inputs: str) -> bool:
    """Whether ``stamp`` records ``inputs`` and every output it lists is there, unchanged."""
    got = _read(stamp)
    if got is None or got[0] != inputs or not got[1]:
        return False
    for rel, digest in got[1].items():
        p = project / rel
        try:
            if hashlib.sha256(p.read_bytes()).hexdigest() != digest:
                return False
        except OSError:
            return False
    return True


def record(project: Path, stamp: Path, inputs: str, outputs: Mapping[str, Path]) -> None:
    """Write ``stamp`` after a successful build (best effort: without it the next build rebuilds)."""
    from .._fs import write_atomic

    lines = [f"inputs {inputs}\n"]
    for path in sorted(outputs.values()):
        try:
            rel = path.relative_to(project).as_posix()
            lines.append(f"output {hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}\n")
        except (OSError, ValueError):
            return
    try:
        write_atomic(stamp, "".join(lines).encode())
    except OSError:
        pass
