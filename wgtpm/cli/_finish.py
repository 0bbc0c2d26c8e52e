"""The finishing of the parser: examples under every ``--help``, and "did you mean".

:func:`finish_parsers` runs once the command modules have registered their
parsers (:func:`wgtpm.cli._parser.build_parser`): it gives every subcommand a
description (its one-line help), an example (the :data:`EXAMPLES` table) and a
``parser_`` default so that an unrecognised flag is reported with that
subcommand's usage, not the top-level one. :func:`check_command` answers an
unknown command word. The ``help`` command (:mod:`wgtpm.cli._help`) builds on
the parser; the parser does not import it, so the two make no import cycle.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

__all__ = ["ALIASES", "EXAMPLES", "check_command", "choices", "finish_parsers", "suggest"]

#: An example under each command's ``--help``: (command words, example lines).
EXAMPLES: dict[str, str] = {
    "init": "wgtpm init github.com/acme/xor-base",
    "get": "wgtpm get github.com/acme/xor-base@v0.1.0\n"
    "  wgtpm get hf.co/acme/tiny-bert@latest --print-paths\n"
    "  wgtpm get github.com/acme/old@none     # remove a requirement",
    "tidy": "wgtpm tidy",
    "verify": "wgtpm verify\n  wgtpm verify github.com/acme/xor-base/xor --json\n"
    "  wgtpm verify --rebuild github.com/acme/xor-base@v0.1.0",
    "list": "wgtpm list -m all\n  wgtpm list -m -versions github.com/acme/xor-base\n"
    "  wgtpm list -m -u --json all",
    "graph": "wgtpm graph\n  wgtpm graph --json",
    "why": "wgtpm why github.com/acme/xor-base",
    "vendor": "wgtpm vendor",
    "sbom": "wgtpm sbom > bom.cdx.json\n  wgtpm sbom --format spdx -o bom.spdx.json",
    "path": "wgtpm path github.com/acme/xor-base\n  wgtpm path github.com/acme/xor-base/xor.wgt",
    "mod": "wgtpm mod edit -require github.com/acme/xor-base@v0.1.0",
    "mod edit": "wgtpm mod edit -require github.com/acme/xor-base@v0.1.0\n"
    "  wgtpm mod edit -artifact xor=xor.wgt -print\n  wgtpm mod edit -json",
    "cache": "wgtpm cache dir\n  wgtpm cache verify --fix",
    "cache dir": "wgtpm cache dir",
    "cache verify": "wgtpm cache verify --fix",
    "cache clean": "wgtpm cache clean",
    "cache gc": "wgtpm cache gc --json",
    "build": "wgtpm build\n  wgtpm build xor --force\n  wgtpm build model.wgt -o out",
    "check": "wgtpm check model.wgt",
    "run": "wgtpm run xor --input '[0, 1]'",
    "inspect": "wgtpm inspect xor --json",
    "paw": "wgtpm paw install github.com/acme/fruit/fruit",
    "paw install": "wgtpm paw install github.com/acme/fruit/fruit",
    "paw validate": "wgtpm paw validate build/fruit.paw --json",
    "paw compile": 'wgtpm paw compile "Map a colour to a fruit." --lora-init random '
    "--examples fruit.jsonl -o fruit.paw",
    "paw inspect": "wgtpm paw inspect build/fruit.paw",
    "registry": "wgtpm registry serve --data ./registry",
    "registry serve": "wgtpm registry serve --data ./registry --port 8080",
    "publish": "wgtpm publish --version v0.2.0 --dry-run\n"
    "  WGTPM_TOKEN=... wgtpm publish --version v0.2.0 --to https://registry.example",
    "retract": 'wgtpm retract v0.1.3 -m "trained on the wrong split"',
    "registry key": "wgtpm registry key --data ./registry",
    "registry gc": "wgtpm registry gc --data ./registry --dry-run\n"
    "  wgtpm registry gc --db postgresql://db/registry --store s3://bucket/blobs",
    "key": "wgtpm key generate --out keys/acme",
    "key generate": "wgtpm key generate --out keys/acme\n"
    "  wgtpm publish --version v0.2.0 --sign-key keys/acme.pem",
    "key fingerprint": "wgtpm key fingerprint keys/acme.pub >> keys/acme.revoked",
    "registry token": "wgtpm registry token create --prefix example.com/team",
    "registry token create": "wgtpm registry token create --prefix example.com/team --scope read",
    "registry token list": "wgtpm registry token list --data ./registry",
    "registry token revoke": "wgtpm registry token revoke 3 --data ./registry",
    "help": "wgtpm help environment\n  wgtpm help get",
}

#: Commands other tools have that mean a wgtpm command.
ALIASES: dict[str, str] = {
    "install": "get",
    "add": "get",
    "download": "get",
    "fetch": "get",
    "pull": "get",
    "update": "get",
    "upgrade": "get",
    "remove": "get",
    "uninstall": "get",
    "sync": "get",
    "lock": "tidy",
    "ls": "list",
    "show": "inspect",
    "env": "help",
    "where": "path",
}


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def suggest(word: str, known: list[str]) -> str:
    if word in ALIASES and ALIASES[word] in known:
        return f"; did you mean '{ALIASES[word]}'?"
    import difflib

    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_command(parser: argparse.ArgumentParser, name: str) -> None:
    """Exit 2 with a "did you mean" when ``name`` is no command (``install`` -> ``get``)."""
    known = choices(parser)
    if name in known:
        return
    hint = suggest(name, list(known))
    parser.print_usage(sys.stderr)
    print(
        f"wgtpm: unknown command {name!r}{hint}\nRun 'wgtpm help' for the commands.",
        file=sys.stderr,
    )
    raise SystemExit(2)


def finish_parsers(parser: argparse.ArgumentParser, words: str = "") -> None:
    """Descriptions, examples and ``parser_`` defaults for every subcommand under ``parser``."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, child in action.choices.items():
            if not isinstance(child, argparse.ArgumentParser):
                continue  # a command other than the one being run (see _Only)
            full = f"{words} {name}".strip()
            child.formatter_class = argparse.RawDescriptionHelpFormatter
            line = helps.get(name) or ""
            if line:
                line = line[:1].upper() + line[1:] + ("" if line.endswith(".") else ".")
                if child.description is None:
                    child.description = line
                elif not child.description.startswith(line):
                    child.description = f"{line}\n\n{textwrap.fill(child.description, 78)}"
            example = EXAMPLES.get(full)
            if example:
                text = f"example:\n  {example}"
                child.epilog = text if child.epilog is None else f"{child.epilog}\n\n{text}"
            child.set_defaults(parser_=child)
            finish_parsers(child, full)
