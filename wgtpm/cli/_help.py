"""``wgtpm help [TOPIC|COMMAND]``, the examples under every ``--help``, and "did you mean".

:func:`finish_parsers` runs once the command modules have registered their
parsers: it gives every subcommand a description (its one-line help), an
example (the ``EXAMPLES`` table) and a ``parser_`` default so that an
unrecognised flag is reported with that subcommand's usage, not the top-level
one. :data:`ENVIRONMENT` is the table that ``wgtpm help environment`` prints
and README.md repeats.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

__all__ = ["ENVIRONMENT", "EXAMPLES", "check_command", "finish_parsers", "register"]

#: Every environment variable wgtpm reads: (name, what it does).
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    (
        "WGTPROXY",
        "comma-separated module sources tried in order: proxy URLs, 'direct', 'off' "
        "(default: direct)",
    ),
    (
        "WGTPRIVATE",
        "module path globs fetched directly, never through a proxy nor looked up in "
        "the checksum database (e.g. github.com/acme/*)",
    ),
    ("WGTNOPROXY", "module path globs fetched directly (WGTPRIVATE implies it)"),
    (
        "WGTSUMDB",
        "the checksum database: its verifier key, then optionally a space and its URL "
        "(unset: none is used)",
    ),
    ("WGTNOSUMDB", "module path globs never looked up in the checksum database"),
    ("WGTPM_CACHE", "the module cache directory (default: ~/.cache/wgtpm); see 'wgtpm cache dir'"),
    ("WGTFLAGS", "default flags for every command, e.g. '-mod=mod' or '-mod=vendor'"),
    ("WGTPM_HTTP_TIMEOUT", "seconds to wait for a server's next bytes (default 30)"),
    ("WGTPM_HTTP_RETRIES", "retries of a failed request, 0 to 100 (default 4)"),
    (
        "WGTPM_HTTP_DEADLINE",
        "seconds a metadata request may take, retries included (default 30)",
    ),
    ("WGTPM_DEBUG", "1: print the traceback of an internal error"),
    ("WGTPM_TOKEN", "the access token 'wgtpm publish --to URL' sends to a wgtpm registry"),
    ("WGTPM_REGISTRY_HOST", "the address 'wgtpm registry serve' listens on (default 127.0.0.1)"),
    ("WGTPM_REGISTRY_PORT", "the port 'wgtpm registry serve' listens on (default 8080)"),
    ("WGTPM_REGISTRY_DATA", "the registry's data folder (default: the user data dir)"),
    (
        "WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT",
        "seconds the registry keeps a connection with no request open (default 10)",
    ),
    (
        "WGTPM_REGISTRY_HEADER_TIMEOUT",
        "seconds the registry waits for a request's headers (default 15)",
    ),
    (
        "WGTPM_REGISTRY_BODY_TIMEOUT",
        "seconds a request body may send nothing to the registry (default 30)",
    ),
    (
        "WGTPM_REGISTRY_DRAIN_TIMEOUT",
        "seconds the registry reads the rest of a body it already answered (default 30)",
    ),
    (
        "WGTPM_REGISTRY_PUBLIC_URL",
        "the URL the registry's pages give clients (default: the address it listens on)",
    ),
    ("WGTPM_REGISTRY_SUMDB_KEY", "the registry's checksum-log signer key itself"),
    ("WGTPM_REGISTRY_SUMDB_KEY_FILE", "a file holding the registry's signer key"),
    ("WGTPM_REGISTRY_SUMDB_NAME", "the name of a new checksum database (default: the host name)"),
    ("AWS_ENDPOINT_URL", "the S3 endpoint of a registry's s3:// blob store"),
    (
        "GITHUB_TOKEN",
        "a GitHub token, sent only to the GitHub API (private repositories, higher rate limits)",
    ),
    ("GITHUB_API_URL", "the GitHub API (default https://api.github.com; GitHub Enterprise)"),
    ("HF_TOKEN", "a Hugging Face token, sent only to the Hub (gated and private repositories)"),
    ("HF_ENDPOINT", "the Hugging Face Hub (default https://huggingface.co; a mirror)"),
    ("PAW_API_KEY", "the key for the PAW hub (paw.* modules)"),
    ("PAW_API_URL", "the PAW hub's API"),
    (
        "PAW_CACHE_DIR",
        "the PAW SDK's cache that 'wgtpm paw install' fills (default ~/.cache/programasweights)",
    ),
    ("PAW_OFFLINE", "1: 'paw install' resolves runtimes without asking the PAW hub"),
    ("PAW_HF_ASSET_URL", "where the PAW compiler's mapper assets are fetched from as a fallback"),
    (
        "PAW_COMPILE_CACHE",
        "the cache of 'wgtpm paw compile' (default ~/.cache/programasweights/compile-by-training)",
    ),
    ("TEACHER_API_KEY", "the teacher endpoint's key when the spec names no api_key_env value"),
    ("TEACHER_API_URL", "replaces the default teacher endpoint (OpenAI-compatible)"),
    ("HF_HOME", "where a Hugging Face token saved by 'hf auth login' is read from"),
    ("HF_TOKEN_PATH", "the file of that saved Hugging Face token"),
    ("XDG_CACHE_HOME", "the base of the default HF_HOME (~/.cache)"),
    ("NETRC", "the netrc file with credentials for proxies (default ~/.netrc)"),
)

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


def register(sub: Any) -> None:
    p = sub.add_parser("help", help="show help for a command, or a topic: environment")
    p.add_argument(
        "topic",
        nargs="*",
        metavar="TOPIC",
        help="'environment' (the variables wgtpm reads) or a command, e.g. 'get', 'cache verify'",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from .._errors import UsageError
    from . import build_parser

    topic = list(args.topic)
    if topic in (["environment"], ["env"]):
        print(environment_text())
        return 0
    parser = build_parser()
    target = parser
    for word in topic:
        choices = _choices(target)
        if word not in choices:
            hint = _suggest(word, [*choices, "environment"])
            raise UsageError(f"unknown help topic {' '.join(topic)!r}{hint}; try 'wgtpm help'")
        target = choices[word]
    target.print_help()
    if not topic:
        print("\nTopics: 'wgtpm help environment' lists the environment variables wgtpm reads.")
    return 0


def environment_text() -> str:
    width = max(len(n) for n, _ in ENVIRONMENT)
    lines = ["Environment variables wgtpm reads:", ""]
    lines += [f"  {name:<{width}}  {what}" for name, what in ENVIRONMENT]
    return "\n".join(lines)


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _suggest(word: str, known: list[str]) -> str:
    if word in ALIASES and ALIASES[word] in known:
        return f"; did you mean '{ALIASES[word]}'?"
    import difflib

    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_command(parser: argparse.ArgumentParser, name: str) -> None:
    """Exit 2 with a "did you mean" when ``name`` is no command (``install`` -> ``get``)."""
    known = _choices(parser)
    if name in known:
        return
    hint = _suggest(name, list(known))
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
