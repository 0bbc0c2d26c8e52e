"""``wgtpm inspect`` of weights files: ``MODULE/FILE.safetensors``, ``FILE.gguf``, ``MODULE``.

- ``wgtpm inspect MODULE/FILE.safetensors [--json]`` (or ``.gguf``, or a path to such a
  file) prints the file's tensor table: each tensor's name, dtype, shape, byte range
  and sha256, and the safetensors ``__metadata__`` or the GGUF key-values;
- ``wgtpm inspect MODULE [--json]`` lists the module's weights files with their
  tensor counts, parameter counts and dtypes.

MODULE is a module of the build list of the package in the current directory,
resolved as builds resolve it (the version wgt.mod selects, files verified against
wgt.sum). Nothing here imports torch, numpy or gguf: the tables are read from
the headers (:mod:`wgtpm.tensors`).

``--json`` prints, for a file, ``{"module", "version", "file", "format", "size",
"sha256", "metadata", "tensors": [...]}`` (the table's own keys, see
:mod:`wgtpm.tensors._table`); for a module, ``{"module", "version", "files":
[{"path", "format", "size", "sha256", "tensors", "parameters", "dtypes"}]}``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .._errors import UsageError, WgtpmError
from ..deps import ResolvedModule, split_ref
from ..tensors import FileTable, compute_table, format_of, tables_for

__all__ = ["inspect_weights"]


def inspect_weights(ref: str, as_json: bool, project_dir: Path | None = None) -> int | None:
    """Print what ``ref`` names and return 0, or ``None`` when ``ref`` names no weights
    file nor a module of the build list (the caller inspects it as an artifact)."""
    project = project_dir if project_dir is not None else Path.cwd()
    if format_of(ref) is not None:
        local = Path(ref)
        if local.is_file():
            _show_file(compute_table(local, local.name, where=ref), None, as_json)
            return 0
        return _module_file(ref, project, as_json)
    if not _looks_like_module(ref) or not (project / "wgt.mod").is_file():
        return None
    from ..modload import open_resolver

    try:
        resolver = open_resolver(project)
    except WgtpmError:
        return None  # inspected as an artifact, whose lookup says what is wrong
    with resolver:
        try:
            listed = ref in resolver.modules()
        except WgtpmError:
            return None
        if not listed:
            return None
        _show_module(resolver.module(ref), as_json)
    return 0


def _looks_like_module(ref: str) -> bool:
    first = ref.split("/", 1)[0]
    return "/" in ref and "." in first and not Path(ref).exists()


def _module_file(ref: str, project: Path, as_json: bool) -> int:
    from ..modload import open_resolver

    with open_resolver(project) as resolver:
        module, rest = split_ref(ref, resolver)
        tables = tables_for(module)
    table = tables.files.get(rest)
    if table is None:
        have = ", ".join(sorted(tables.files)) or "none"
        raise UsageError(
            f"{_label(module)} has no weights file {rest!r} here (its weights files: {have}); "
            f"'wgtpm inspect {module.path}' lists them"
        )
    _show_file(table, module, as_json)
    return 0


def _label(module: ResolvedModule) -> str:
    return f"{module.path}@{module.version}" if module.version else module.path


def _params(t: FileTable) -> int:
    return sum(x.numel for x in t.tensors)


def _show_file(t: FileTable, module: ResolvedModule | None, as_json: bool) -> None:
    if as_json:
        doc: dict[str, Any] = {"file": t.path, **t.to_json()}
        if module is not None:
            doc.update(module=module.path, version=module.version)
        print(json.dumps(doc, sort_keys=True))
        return
    where = f"{_label(module)}/{t.path}" if module is not None else t.path
    print(f"{where}: {t.format}, {t.size} bytes, sha256 {t.sha256}")
    if t.metadata:
        print("metadata:")
        for k in sorted(t.metadata):
            print(f"  {k}: {json.dumps(t.metadata[k], sort_keys=True, ensure_ascii=False)}")
    print(f"tensors: {len(t.tensors)}, parameters: {_params(t)}")
    width = max((len(x.name) for x in t.tensors), default=0)
    for x in t.tensors:
        shape = "[" + ", ".join(map(str, x.shape)) + "]"
        print(f"  {x.name:<{width}}  {x.dtype:<7} {shape:<14} {x.start}..{x.end}  {x.sha256}")


def _show_module(module: ResolvedModule, as_json: bool) -> None:
    tables = tables_for(module)
    rows: list[dict[str, Any]] = []
    for path in sorted(tables.files):
        t = tables.files[path]
        rows.append(
            {
                "path": path,
                "format": t.format,
                "size": t.size,
                "sha256": t.sha256,
                "tensors": len(t.tensors),
                "parameters": _params(t),
                "dtypes": dict(sorted(Counter(x.dtype for x in t.tensors).items())),
            }
        )
    if as_json:
        print(
            json.dumps(
                {"module": module.path, "version": module.version, "files": rows}, sort_keys=True
            )
        )
        return
    print(f"{_label(module)}: {len(rows)} weights file{'s' if len(rows) != 1 else ''}")
    for r in rows:
        dtypes = ", ".join(f"{d} x{n}" for d, n in r["dtypes"].items())
        print(
            f"  {r['path']}  {r['format']}  {r['tensors']} tensors  "
            f"{r['parameters']} parameters  {dtypes}"
        )
