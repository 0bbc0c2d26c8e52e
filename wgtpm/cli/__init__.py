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
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from .._errors import UsageError, WgtpmError

__all__ = ["DEBUG_ENV", "main"]

# Set to 1 to print the traceback of an internal error.
DEBUG_ENV = "WGTPM_DEBUG"

# The command modules, in the order ``wgtpm --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "wgtpm.cli._modcmds",
    "wgtpm.cli._path",
    "wgtpm.cli._cache",
    "wgtpm.cli._weightlang",
    "wgtpm.cli._paw",
    "wgtpm.cli._registry",
    "wgtpm.cli._publish",
    "wgtpm.cli._help",
)


class _Ignored:
    """Stands in for the parsers of commands other than the one being run."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **kw: self


class _Only:
    """A subparsers object that builds only the parser of command ``name``.

    Building all two dozen parsers costs more than a no-op ``wgtpm get``
    itself; ``--help`` and unknown commands still build them all.
    """

    def __init__(self, sub: Any, name: str) -> None:
        self._sub, self._name = sub, name

    def add_parser(self, name: str, **kw: Any) -> Any:
        return self._sub.add_parser(name, **kw) if name == self._name else _Ignored()


class _Parser(argparse.ArgumentParser):
    """argparse's parser; under ``--json`` a usage error is also a JSON object on stdout.

    Subcommand parsers are made of the same class, so this covers every one.
    """

    json_errors = False  # set by main() when the command line asks for --json

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            _print_json_error(f"{self.prog}: {message}", "usage")
        super().error(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wgtpm",
        description="wgtpm resolves, locks, downloads and builds neural-network artifacts.",
    )
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR")
    parser.add_argument("--version", action="version", version=f"wgtpm {__version__}")
    parser.add_argument(
        "-x",
        dest="trace",
        action="store_true",
        help="print each HTTP request as it happens (GET URL -> STATUS (SIZE, TIME)), as go -x",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    target = _Only(sub, only) if only else sub
    for name in COMMANDS:
        importlib.import_module(name).register(target)
    if only and only not in sub.choices:
        return build_parser()
    from ._help import finish_parsers

    finish_parsers(parser)
    return parser


def _command_name(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` when it is easy to see (else ``None``: build everything)."""
    rest = list(argv)
    while rest[:1] == ["-x"] or (rest[:1] == ["-C"] and len(rest) >= 2):
        rest = rest[1:] if rest[0] == "-x" else rest[2:]
    if rest and not rest[0].startswith("-"):
        return rest[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = _command_name(argv)
    _Parser.json_errors = "--json" in argv or "-json" in argv
    parser = build_parser(name)
    if name is not None:
        from ._help import check_command

        check_command(parser, name)  # 'wgtpm install' -> did you mean 'wgtpm get'?
    args, extra = parser.parse_known_args(argv)
    if extra:  # the command's own usage, not the top-level one
        getattr(args, "parser_", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    from .._interrupt import handling
    from .._report import set_network
    from ._render import LineReporter

    set_network(LineReporter(progress=False), trace=args.trace)
    try:
        if args.chdir:
            try:
                os.chdir(args.chdir)
            except OSError as exc:
                raise UsageError(f"-C {args.chdir}: {exc.strerror or exc}") from exc
        with handling():  # Ctrl-C stops the download threads too
            code: int = run(args)
    except WgtpmError as exc:
        return _fail(args, str(exc), _kind(exc))
    except OSError as exc:  # a file we could not read or write: say which, not a traceback
        return _fail(args, _os_error(exc), "os")
    except KeyboardInterrupt:
        print("wgtpm: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line, the traceback only when asked for
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            traceback.print_exc()
        if getattr(args, "json", False):
            _print_json_error(
                f"internal error: {type(exc).__name__}: {_first_line(exc)}", "internal"
            )
        print(
            f"wgtpm: internal error: {type(exc).__name__}: {_first_line(exc)}\n"
            f"wgtpm: this is a bug in wgtpm; run again with {DEBUG_ENV}=1 for the traceback "
            "and report it",
            file=sys.stderr,
        )
        return 70  # EX_SOFTWARE
    return code


def _fail(args: argparse.Namespace, message: str, kind: str) -> int:
    """Print an error: one ``wgtpm:`` line on stderr, and under ``--json`` a JSON object on stdout.

    The JSON form is ``{"error": {"message": MESSAGE, "kind": KIND}}``, KIND
    the error's class in lower case without ``Error`` (``usage``, ``readonly``,
    ``fetch``, ``os`` ...), so a script reads stdout alone.
    """
    print(f"wgtpm: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        _print_json_error(message, kind)
    return 1


def _print_json_error(message: str, kind: str) -> None:
    import json

    print(json.dumps({"error": {"message": message, "kind": kind}}, indent=2))


def _kind(exc: BaseException) -> str:
    """``UsageError`` -> ``usage``, ``NotFoundError`` -> ``not_found``."""
    name = type(exc).__name__.removesuffix("Error") or "error"
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _os_error(exc: OSError) -> str:
    """``FILE: reason`` (``FILE -> OTHER: reason`` for a rename), or just the reason."""
    what = exc.strerror or str(exc)
    if exc.filename is None:
        return what
    where = _final_name(str(exc.filename))
    if exc.filename2 is not None and _final_name(str(exc.filename2)) != where:
        where += f" -> {_final_name(str(exc.filename2))}"
    return f"{where}: {what}"


def _final_name(name: str) -> str:
    """The file a temporary file of ``write_atomic`` stands for: ``DIR/.wgt.sum.k3j.tmp`` ->
    ``DIR/wgt.sum`` (what the user knows; the temporary name is an implementation detail)."""
    import re

    head, sep, base = name.rpartition("/")
    m = re.fullmatch(r"\.(.+)\.[A-Za-z0-9_]+\.tmp", base)
    return head + sep + m.group(1) if m else name


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 200 else line[:200] + "..."
