"""``wgtpm cache dir|verify|clean|gc``."""

from __future__ import annotations

import argparse
import sys
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
        c.set_defaults(run=_run, what=name)
    p.set_defaults(run=lambda a: (p.print_help(sys.stderr), 2)[1])


def _run(args: argparse.Namespace) -> int:
    from ..cache import Cache

    cache = Cache()
    if args.what == "dir":
        print(cache.root)
        return 0
    if args.what == "verify":
        problems = cache.verify()
        for pr in problems:
            print(pr, file=sys.stderr)
        if not problems:
            print("cache verified")
        return 1 if problems else 0
    if args.what == "clean":
        cache.clean()
        return 0
    n, size = cache.gc()
    print(f"removed {n} files ({size} bytes)")
    return 0
