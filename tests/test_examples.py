"""The examples a user copies stay valid: every wgt.mod, model and PAW spec parses, and
the commands README.md and docs/ show are commands of the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wgtpm.cli import build_parser
from wgtpm.modfile import parse as parse_mod

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = ROOT / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.iterdir() if p.is_dir())


def test_every_example_has_a_readme_and_a_wgt_mod() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "xor-base",
        "xor-classifier",
        "fruit",
        "triage",
        "consumer",
        "word-kind",
    }
    for ex in EXAMPLES:
        assert (ex / "README.md").is_file(), ex
        assert (ex / "wgt.mod").is_file(), ex


@pytest.mark.parametrize("ex", EXAMPLES, ids=lambda p: p.name)
def test_wgt_mod_parses_and_its_artifacts_exist(ex: Path) -> None:
    mf = parse_mod((ex / "wgt.mod").read_bytes(), str(ex / "wgt.mod"))
    assert mf.module is not None
    for art in mf.artifacts:
        if (ex / "train.py").is_file() and art.source.startswith(TRAINED_DIR):
            continue  # written by the package's train.py (run end to end by its test)
        assert (ex / art.source).is_file(), f"{ex.name}: artifact {art.name}: {art.source}"


#: Where an example with a train.py (a torch model, saved by wgtpm.save) writes its model;
#: its wgt.mod ships the files as artifacts once train.py has run and they are committed.
TRAINED_DIR = "model/"


def test_word_kind_ships_what_its_train_py_saves() -> None:
    """examples/word-kind's artifacts are the two files wgtpm.save writes into model/;
    tests/pinned/test_example_word_kind.py trains, publishes and runs it."""
    mf = parse_mod((EXAMPLES_DIR / "word-kind/wgt.mod").read_bytes(), "wgt.mod")
    assert sorted(a.source for a in mf.artifacts) == [
        TRAINED_DIR + "manifest.json",
        TRAINED_DIR + "weights.safetensors",
    ]
    assert [r.path for r in mf.requires] == ["hf.co/wgtpm-demo/tiny-qwen3"]
    train = (EXAMPLES_DIR / "word-kind/train.py").read_text()
    for call in ("wgtpm.open(", ".tensor(", "wgtpm.graft(", "freeze=True", "wgtpm.save("):
        assert call in train


@pytest.mark.parametrize(
    "source", sorted((ROOT / "examples").glob("*/*.wgt")), ids=lambda p: p.parent.name
)
def test_weightlang_models_check(source: Path) -> None:
    from wgtpm.weightlang.check import check
    from wgtpm.weightlang.syntax import parse_file

    check(parse_file(source))


@pytest.mark.parametrize(
    "spec", sorted((ROOT / "examples").glob("*/*.pawspec")), ids=lambda p: p.parent.name
)
def test_paw_specs_parse_and_their_examples_are_jsonl(spec: Path) -> None:
    from wgtpm.paw.spec import load_spec

    parsed = load_spec(spec)
    assert parsed.interpreter
    for line in spec.with_suffix(".jsonl").read_text().splitlines():
        row = json.loads(line)
        assert set(row) == {"input", "output"}


def test_triage_declares_the_real_interpreter() -> None:
    from wgtpm.paw.spec import load_spec

    assert load_spec(ROOT / "examples/triage/triage.pawspec").interpreter == "hf.co/Qwen/Qwen3-0.6B"


def _commands(parser: object) -> dict[str, object]:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_readme_commands_are_cli_commands() -> None:
    """Every ``wgtpm CMD [SUB]`` in the shell blocks of README.md and docs/ names a real
    (sub)command."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    blocks = re.findall(r"```(?:sh|console)\n(.*?)```", text, re.S)
    top = _commands(build_parser())
    seen = 0
    for block in blocks:
        for m in re.finditer(
            r"(?:^|[$&|;][ \t]*|/bin/)wgtpm((?:[ \t]+-C[ \t]+\S+)?)[ \t]+([a-z][a-z-]*)"
            r"(?:[ \t]+([a-z][a-z-]*))?",
            block,
            re.M,
        ):
            cmd, sub = m.group(2), m.group(3)
            assert cmd in top, f"docs: wgtpm {cmd} is not a command"
            subs = _commands(top[cmd])
            if subs and sub is not None:
                assert sub in subs, f"docs: wgtpm {cmd} {sub} is not a command"
            seen += 1
    assert seen > 20


def test_graph_formats() -> None:
    top = _commands(build_parser())
    graph = top["graph"]
    ns = graph.parse_args(["--format", "mermaid"])  # type: ignore[attr-defined]
    assert ns.format == "mermaid"


def test_graph_pictures_draw_every_edge_and_dash_unselected_versions() -> None:
    from wgtpm.cli._modcmds import _graph_picture

    edges = [("example.com/app", "a.com/x@v1.0.0"), ("a.com/x@v1.0.0", 'a.com/"y"@v0.1.0')]
    dot = _graph_picture("dot", "example.com/app", edges, {"example.com/app", "a.com/x@v1.0.0"})
    assert dot.startswith("digraph wgtpm {") and dot.count("->") == 2
    assert 'label="a.com/\\"y\\"@v0.1.0", style=dashed' in dot
    mmd = _graph_picture("mermaid", "example.com/app", edges, {"a.com/x@v1.0.0"})
    assert mmd.startswith("flowchart LR") and mmd.count("-->") == 2
    assert "#quot;y#quot;" in mmd and "class m2 unselected" in mmd


def test_quick_start_shows_the_pinned_api_and_its_guide_links_resolve() -> None:
    """README's quick start shows wgtpm.open(...).tensor(...), graft and save, and links
    the guide; every relative link of the guide names a file or directory that exists."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quick start")
    quick = readme[start : readme.index("\n## ", start + 1)]
    for call in ("wgtpm.open(", ".tensor(", "wgtpm.graft(", "wgtpm.save("):
        assert call in quick, call
    assert "(docs/guides/pinned-layers.md)" in quick
    guide = ROOT / "docs/guides/pinned-layers.md"
    links = re.findall(r"\]\(([^)#:]+)\)", guide.read_text(encoding="utf-8"))
    assert links
    for link in links:
        assert (guide.parent / link).exists(), link
