"""Every command explains itself: a description, each flag's help, an example; errors use its usage."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from wgtpm.cli import build_parser
from wgtpm.cli._help import ENVIRONMENT


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out.append(((*words, name), child))
                out += _commands(child, (*words, name))
    return out


COMMANDS = _commands(build_parser())


def test_every_command_is_walked() -> None:
    names = {" ".join(w) for w, _ in COMMANDS}
    assert {"get", "list", "cache verify", "mod edit", "paw install", "help", "path"} <= names


@pytest.mark.parametrize("words", [w for w, _ in COMMANDS], ids=" ".join)
def test_help_has_description_flags_and_example(words: tuple[str, ...], wgtpm) -> None:  # type: ignore[no-untyped-def]
    parser = dict(COMMANDS)[words]
    undocumented = [
        a.option_strings or a.dest
        for a in parser._actions
        if not a.help and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    assert not undocumented, f"wgtpm {' '.join(words)}: flags without help: {undocumented}"
    with pytest.raises(SystemExit) as exit_:
        wgtpm(*words, "--help")
    assert exit_.value.code == 0
    text = parser.format_help()
    assert parser.description, words
    assert "example:\n  wgtpm " + words[0] in text


def test_help_environment_lists_every_variable_the_code_reads(wgtpm) -> None:  # type: ignore[no-untyped-def]
    root = Path(__file__).parent.parent / "wgtpm"
    read = set()
    pattern = re.compile(
        r"(?:environ\.get\(|getenv\(|env_url\([^,]+,\s*|env_secret\([^,]+,\s*|_env_\w+\(|env\.get\()"
        r"\"([A-Z][A-Z0-9_]+)\""
    )
    for path in root.rglob("*.py"):
        read |= set(pattern.findall(path.read_text()))
    read -= {"SOURCE_DATE_EPOCH", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY"}  # build/alias/teacher
    listed = {name for name, _ in ENVIRONMENT}
    assert read, "the pattern finds the variables"
    assert read <= listed, read - listed
    r = wgtpm("help", "environment")
    assert r.code == 0
    for name in [
        "WGTPROXY",
        "WGTPRIVATE",
        "WGTNOSUMDB",
        "WGTSUMDB",
        "WGTPM_CACHE",
        "WGTFLAGS",
        "WGTPM_HTTP_TIMEOUT",
        "WGTPM_HTTP_RETRIES",
        "WGTPM_HTTP_DEADLINE",
        "WGTPM_DEBUG",
        "WGTPM_TOKEN",
        "GITHUB_TOKEN",
        "GITHUB_API_URL",
        "HF_TOKEN",
        "HF_ENDPOINT",
        "PAW_API_KEY",
        "PAW_API_URL",
    ]:
        assert re.search(rf"^  {name} ", r.out, re.M), name


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["get", "--bogus"], "usage: wgtpm get "),
        (["cache", "verify", "--nope"], "usage: wgtpm cache verify "),
        (["mod", "edit", "--nope"], "usage: wgtpm mod edit "),
        (["get", "-j", "abc"], "usage: wgtpm get "),
    ],
)
def test_flag_errors_print_the_commands_usage(argv, usage, wgtpm, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:
        wgtpm(*argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert usage in err
    assert "usage: wgtpm [-h]" not in err


@pytest.mark.parametrize(
    ("word", "fix"),
    [("install", "get"), ("add", "get"), ("download", "get"), ("lsit", "list"), ("tidyy", "tidy")],
)
def test_mistyped_command_did_you_mean(word, fix, wgtpm, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:
        wgtpm(word, "x")
    assert exit_.value.code == 2
    assert f"unknown command '{word}'; did you mean '{fix}'?" in capsys.readouterr().err


def test_help_command(wgtpm) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("help")
    assert r.code == 0 and "help environment" in r.out
    r = wgtpm("help", "cache", "verify")
    assert r.code == 0 and "usage: wgtpm cache verify" in r.out
    r = wgtpm("help", "enviroment")
    assert r.code == 1 and "did you mean 'environment'?" in r.err


def test_version(wgtpm) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("--version")  # answered before argparse, so a plain return, not argparse's exit
    assert r.code == 0
    assert r.out.startswith("wgtpm ")


def test_each_command_is_built_from_its_own_module_alone() -> None:
    import importlib

    from wgtpm.cli._parser import COMMAND_MODULES
    from wgtpm.cli._parser import COMMANDS as MODULES

    registered = {}
    for module in MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        registered |= dict.fromkeys(sub.choices, module)
    assert registered == COMMAND_MODULES  # a new command goes in the table too
    for name in registered:
        parser = build_parser(name)
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert list(action.choices) == [name]  # built alone, not by the fallback that builds all
