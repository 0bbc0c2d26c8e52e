"""The command line parser: argparse, built for the command being run.

Each command module (``_modcmds``, ``_cache`` ...) defines
``register(subparsers)``; :func:`build_parser` calls them all, or for the
command being run only its own module (:data:`COMMAND_MODULES`), and builds
only that command's parser (:class:`_Only`). A usage error is
argparse's message on stderr and, under ``--json``, also a JSON object on
stdout (:func:`print_json_error`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any, NoReturn

from . import version_line

__all__ = ["COMMANDS", "COMMAND_MODULES", "build_parser", "parse", "print_json_error"]

#: The module that registers each command, in the order ``wgtpm --help`` lists them: the
#: parser of one command imports only its module (importing the other six costs about 5 ms
#: a start). tests/test_cli_help.py checks the table against what each module registers.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(
        ("init", "get", "tidy", "verify", "list", "graph", "why", "vendor", "mod", "sbom"),
        "wgtpm.cli._modcmds",
    ),
    "path": "wgtpm.cli._path",
    "cache": "wgtpm.cli._cache",
    **dict.fromkeys(("build", "check", "run", "inspect"), "wgtpm.cli._weightlang"),
    "paw": "wgtpm.cli._paw",
    "registry": "wgtpm.cli._registry",
    "publish": "wgtpm.cli._publish",
    "retract": "wgtpm.cli._publish",
    "key": "wgtpm.cli._key",
    "help": "wgtpm.cli._help",
}
#: The command modules, each once, in that order.
COMMANDS: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_MODULES.values()))


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

    json_errors = False  # set by parse() when the command line asks for --json

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            print_json_error(f"{self.prog}: {message}", "usage")
        super().error(message)


def print_json_error(message: str, kind: str) -> None:
    """``{"error": {"message": MESSAGE, "kind": KIND}}`` on stdout (see ``wgtpm.cli._fail``)."""
    import json

    print(json.dumps({"error": {"message": message, "kind": kind}}, indent=2))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wgtpm",
        description="wgtpm resolves, locks, downloads and builds neural-network artifacts.",
    )
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR")
    parser.add_argument("--version", action="version", version=version_line())
    parser.add_argument(
        "-x",
        dest="trace",
        action="store_true",
        help="print each HTTP request as it happens (GET URL -> STATUS (SIZE, TIME)), as go -x",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    target = _Only(sub, only) if only else sub
    own = COMMAND_MODULES.get(only) if only else None
    for name in (own,) if own else COMMANDS:
        importlib.import_module(name).register(target)
    if only and only not in sub.choices:
        return build_parser()
    from ._finish import finish_parsers

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


def _command_flags_after_command(argv: list[str]) -> list[str]:
    """``wgtpm -mod=vendor list -m`` -> ``wgtpm list -m -mod=vendor``: a command's ``-mod``
    given before the command word, as a Go habit (``go -mod=vendor`` is an error in Go
    too, but a plain mistake), goes where the command's parser reads it."""
    moved: list[str] = []
    rest = list(argv)
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        flag = rest[i].partition("=")[0]
        if flag in ("-mod", "--mod"):
            n = 1 if "=" in rest[i] or i + 1 >= len(rest) else 2
            moved += rest[i : i + n]
            del rest[i : i + n]
        elif rest[i] == "-C":
            i += 2
        else:
            i += 1
    if not moved or i >= len(rest):
        return argv
    return rest[: i + 1] + moved + rest[i + 1 :]


def parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and what it read from ``argv``; a usage error exits 2, as argparse does."""
    argv = _command_flags_after_command(argv)
    name = _command_name(argv)
    _Parser.json_errors = "--json" in argv or "-json" in argv
    parser = build_parser(name)
    if name is not None:
        from ._finish import check_command

        check_command(parser, name)  # 'wgtpm install' -> did you mean 'wgtpm get'?
    args, extra = parser.parse_known_args(argv)
    if extra:  # the command's own usage, not the top-level one
        own = getattr(args, "parser_", parser)
        own.error(f"unrecognized arguments: {' '.join(extra)}{_mod_hint(extra, own.prog)}")
    return parser, args


def _mod_hint(extra: list[str], prog: str) -> str:
    """Where a command without a ``-mod`` flag (``build``, ``run``...) reads the mode from."""
    for i, a in enumerate(extra):
        flag, eq, value = a.partition("=")
        if flag in ("-mod", "--mod"):
            if not eq:  # "-mod vendor": argparse may have taken "vendor" as an argument
                later = extra[i + 1 : i + 2]
                value = later[0] if later and later[0] in ("mod", "readonly", "vendor") else "MODE"
            return f"; {prog} reads -mod from WGTFLAGS: WGTFLAGS=-mod={value} {prog}"
    return ""
