"""``wgtpm path MODULE[/FILE|/ARTIFACT]``: where a module, a file or an artifact lies on disk.

As ``hf download`` prints the folder it filled, ``wgtpm path`` prints one
absolute path on stdout: the module's directory (its verified tree in the
cache, a local replacement directory, or the package itself for the main
module), a file of it, or one of its artifacts (``MAIN/NAME`` is
``build/NAME`` of the package). A module of the build list that is not in
the cache yet is downloaded and verified first; wgt.mod and wgt.sum are only
read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._errors import UsageError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "path", help="print where a module of the build list, or one of its files, lies on disk"
    )
    p.add_argument(
        "ref",
        metavar="MODULE[/FILE|/ARTIFACT]",
        help="a module of the build list (or the main module), optionally a file or artifact in it",
    )
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
    p.set_defaults(run=_run, mod="")


def _run(args: argparse.Namespace) -> int:
    import json

    from ..modget import path_hint
    from ..module import normalise
    from ._modcmds import _project

    fix = path_hint(args.ref)
    if fix is not None:
        raise UsageError(f"{args.ref}: not a module path; did you mean {fix}?")
    ref = normalise(args.ref.strip().rstrip("/"))
    with _project(args, quiet=True) as project:
        found = _find(project, ref)
    if args.json:
        print(json.dumps({"ref": ref, "path": str(found)}, indent=2))
    else:
        print(found)
    return 0


def _find(project: Any, ref: str) -> Path:
    from ..artifacts import BUILD_DIR, locate_artifact, locate_built
    from ..modload.buildlist import Fetched

    if ref == project.path or ref.startswith(project.path + "/"):
        rest = ref[len(project.path) + 1 :]
        if not rest:
            return Path(project.root)
        if (project.root / rest).exists():
            return Path(project.root / rest)
        built = locate_built(project.root / BUILD_DIR, rest)
        if built is not None:
            return built.path
        raise UsageError(
            f"{ref}: the main module has no file {rest!r} and no built artifact {rest!r} "
            f"(run 'wgtpm build {rest}' to build it)"
        )
    build = project.build_list()
    by_path = {m.path: m for m in build[1:]}
    parts = ref.split("/")
    for i in range(len(parts), 0, -1):
        m = by_path.get("/".join(parts[:i]))
        if m is None:
            continue
        rest = "/".join(parts[i:])
        base = project.module_dir(m) if project.placed_dir(m) is None else project.placed_dir(m)
        if not rest:
            return Path(base)
        if (base / rest).exists():
            return Path(base / rest)
        origin = project.origin(m)
        index = project.index(origin) if isinstance(origin, Fetched) else None
        art = locate_artifact(base, rest, index=index)
        if art is not None:
            return art.path
        raise UsageError(f"{m.path}@{m.version} has no file or artifact {rest!r}")
    raise UsageError(
        f"{ref}: not in the build list; 'wgtpm get {ref}' adds it "
        f"('wgtpm list -m all' shows the build list)"
    )
