"""The ``wgtpm`` command line.

Each command lives in its own module (``_get.py``, ``_cache.py`` ...) that
defines ``register(subparsers)``; the module must import nothing heavy at
import time (torch, transformers, httpx ...): load those inside the command's
``run`` so that ``wgtpm get`` starts about as fast as Python itself.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .._errors import WgtpmError

__all__ = ["main"]

# The command modules, in the order ``wgtpm --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "wgtpm.cli._modcmds",
    "wgtpm.cli._cache",
    "wgtpm.cli._weightlang",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wgtpm",
        description="wgtpm resolves, locks, downloads and builds neural-network artifacts.",
    )
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.chdir:
        os.chdir(args.chdir)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = run(args)
    except WgtpmError as exc:
        print(f"wgtpm: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("wgtpm: interrupted", file=sys.stderr)
        return 130
    return code
