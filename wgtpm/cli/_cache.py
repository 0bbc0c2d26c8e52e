"""``wgtpm cache dir|verify|clean|gc``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("cache", help="inspect and maintain the module cache")
    csub = p.add_subparsers(dest="cachecmd", metavar="SUBCOMMAND")
    for name, helptext in (
        ("dir", "print the cache directory"),
        ("verify", "re-hash every blob and module tree"),
        ("clean", "remove everything (waits for other wgtpm processes)"),
        ("gc", "remove blobs no module uses and partial downloads"),
    ):
        c = csub.add_parser(name, help=helptext)
        c.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
        if name == "verify":
            c.add_argument(
                "--fix",
                action="store_true",
                help="remove each corrupted file (and the links to it) so that the next "
                "'wgtpm get' downloads it again; the rest of the cache stays",
            )
        c.set_defaults(run=_run, what=name)
    p.set_defaults(run=lambda a: (p.print_help(sys.stderr), 2)[1])


def _run(args: argparse.Namespace) -> int:
    from ..cache import Cache

    cache = Cache()
    if args.what == "dir":
        return _out(args, {"dir": str(cache.root)}, str(cache.root))
    if args.what == "verify":
        return _verify(cache, args)
    if args.what == "clean":
        cache.clean()
        return _out(args, {"cleaned": str(cache.root)}, None)
    n, size = cache.gc()
    return _out(
        args,
        {"removed_files": n, "removed_bytes": size},
        f"removed {n} files ({size / 2**20:.1f} MiB)",
    )


def _verify(cache: Any, args: argparse.Namespace) -> int:
    problems = cache.verify()
    removed: list[Path] = cache.repair(problems) if args.fix and problems else []
    for pr in problems:
        print(pr, file=sys.stderr)
    modules = sorted({_module_of(cache.root, p) for p in removed} - {""})
    if removed:
        print(f"wgtpm: removed {len(removed)} corrupted files from the cache", file=sys.stderr)
        if modules:
            print(
                f"wgtpm: run 'wgtpm get' in a project that uses {', '.join(modules)} "
                "to download them again",
                file=sys.stderr,
            )
    doc = {
        "ok": not problems,
        "problems": [{"path": str(p.path), "message": p.message} for p in problems],
        "removed": [str(p) for p in removed],
        "refetch": modules,
        "fixed": bool(args.fix and removed),
    }
    text = "cache verified" if not problems else None
    _out(args, doc, text)
    return 0 if not problems or (args.fix and removed) else 1


def _module_of(root: Path, p: Path) -> str:
    """``mod/github.com/acme/b@v0.1.0/b/w.bin`` -> ``github.com/acme/b@v0.1.0`` (escaped)."""
    try:
        parts = p.relative_to(root / "mod").parts
    except ValueError:
        return ""
    for i, part in enumerate(parts):
        if "@" in part:
            return "/".join(parts[: i + 1])
    return ""


def _out(args: argparse.Namespace, doc: dict[str, Any], text: str | None) -> int:
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    elif text is not None:
        print(text)
    return 0
