"""``wgtpm mod edit``: apply its flags to the main module's wgt.mod, in order, as
``go mod edit`` does (the parser is in :mod:`wgtpm.cli._modcmds`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["mod_edit"]


def mod_edit(args: argparse.Namespace) -> int:
    from .._cachedir import default_root
    from ..modload.files import find_root, locked

    root = find_root(Path.cwd())
    with locked(root, default_root()):
        return _edit(root / "wgt.mod", args)


def _edit(path: Path, args: argparse.Namespace) -> int:
    """Apply ``wgtpm mod edit``'s flags to the wgt.mod at ``path``, in order."""
    from .. import modfile
    from .._errors import UsageError
    from .._fs import write_atomic
    from ..modget import parse_arg

    if not (args.edits or args.fmt or args.print_ or args.json):
        raise UsageError(
            "wgtpm mod edit: no flags given; say what to change (e.g. -require=PATH@VERSION), "
            "or -fmt, -print or -json (see 'wgtpm mod edit --help')"
        )
    mf = modfile.parse(path.read_bytes(), str(path))
    for flag, value in args.edits or []:
        if flag == "module":
            mf.set_module(value)
        elif flag in ("require", "exclude", "dropexclude"):
            p, ver = parse_arg(value)
            if not ver:
                raise UsageError(f"-{flag}={value}: want PATH@VERSION")
            {"require": mf.add_require, "exclude": mf.add_exclude, "dropexclude": mf.drop_exclude}[
                flag
            ](p, ver)
        elif flag == "droprequire":
            mf.drop_require(value)
        elif flag == "replace":
            old, sep, new = value.partition("=")
            if not sep:
                raise UsageError(f"-replace={value}: want OLD[@V]=NEW[@V]")
            op, _, ov = old.partition("@")
            if modfile.is_local_path(new):
                mf.add_replace(op, ov or None, new, None)
            else:
                np_, _, nv = new.partition("@")
                if not nv:
                    raise UsageError(
                        f"-replace={value}: a module replacement needs a version (NEW@V)"
                    )
                mf.add_replace(op, ov or None, np_, nv)
        elif flag == "dropreplace":
            op, _, ov = value.partition("@")
            mf.drop_replace(op, ov or None)
        elif flag == "retract":
            if value.startswith("["):
                lo, _, hi = value.strip("[]").partition(",")
                mf.add_retract(lo.strip(), hi.strip())
            else:
                mf.add_retract(value)
        elif flag == "select":
            p, sep, globs = value.partition("=")
            if not sep:
                raise UsageError(f"-select={value}: want PATH=GLOB[,GLOB]")
            mf.add_select(p, [g for g in globs.split(",") if g])
        elif flag == "dropselect":
            mf.drop_select(value)
        elif flag == "artifact":
            name, sep, src = value.partition("=")
            if not sep:
                raise UsageError(f"-artifact={value}: want NAME=SOURCE")
            mf.add_artifact(name, src)
        elif flag == "dropartifact":
            mf.drop_artifact(value)
        elif flag in ("license", "denylicense"):
            _license_edit(mf, flag, value)
        elif flag == "dropdenylicense":
            mf.drop_deny_license(value)
    if args.json:
        json.dump(_modfile_json(mf), sys.stdout, indent=2)
        print()
        return 0
    if args.print_:
        sys.stdout.write(mf.format().decode())
        return 0
    write_atomic(path, mf.format())
    return 0


def _license_edit(mf: Any, flag: str, value: str) -> None:
    """``-license=EXPRESSION`` or ``-denylicense=LICENSE``; a value that does not parse is
    a usage error saying why."""
    from .. import spdx
    from .._errors import UsageError

    try:
        if flag == "license":
            mf.set_license(None if value == "none" else value)
        else:
            mf.add_deny_license(value)
    except spdx.SpdxError as exc:
        raise UsageError(f"-{flag}={value}: {exc.message}; want SPDX (like MIT)") from exc


def _modfile_json(mf: Any) -> dict[str, Any]:
    """wgt.mod as JSON: Go's ``go mod edit -json`` shape, with wgtpm's lower-case keys."""
    return {
        "module": (
            {"path": mf.module.path}
            | ({"deprecated": mf.module.deprecated} if mf.module.deprecated else {})
            if mf.module
            else None
        ),
        "wgt": mf.wgt.version if mf.wgt else None,
        "require": [
            {"path": r.path, "version": r.version, "indirect": r.indirect} for r in mf.requires
        ],
        "exclude": [{"path": e.path, "version": e.version} for e in mf.excludes],
        "replace": [
            {
                "old": {"path": r.old_path, "version": r.old_version},
                "new": {"path": r.new_path, "version": r.new_version},
            }
            for r in mf.replaces
        ],
        "retract": [{"low": r.low, "high": r.high, "rationale": r.rationale} for r in mf.retracts],
        "select": [{"path": s.path, "patterns": s.patterns} for s in mf.selects],
        "artifact": [{"name": a.name, "source": a.source, "kind": a.kind} for a in mf.artifacts],
        "license": mf.license.expression if mf.license else None,
        "deny_license": [str(d.license) for d in mf.deny_licenses],
    }
