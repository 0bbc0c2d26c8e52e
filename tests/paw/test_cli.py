"""``wgtpm paw validate`` and ``wgtpm paw inspect``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.paw.conftest import BASE_FILE, Built
from tests.paw.synth import members
from wgtpm.paw.bundle import read_bundle, write_bundle


def test_validate_ok(fruit: Built, base_dir: Path, tiny_dir: Path, wgtpm: Any) -> None:
    pid = read_bundle(fruit.paw).program_id
    result = wgtpm("paw", "validate", str(fruit.paw))
    assert result.code == 0
    assert (
        f"ok: program {pid}, runtime tiny-qwen3-test (embedded), LoRA rank 32 alpha 32 on 2 layers x 7 modules (Q4_0)"
        in result.out
    )
    assert "shapes checked against meta.json" in result.out
    assert (
        "against the given base model"
        in wgtpm("paw", "validate", str(fruit.paw), "--base-model", str(base_dir / BASE_FILE)).out
    )
    assert wgtpm("paw", "validate", str(fruit.paw), "--interpreter", str(tiny_dir)).code == 0


def test_validate_against_another_interpreter_fails(
    fruit: Built, tmp_path: Path, tiny_dir: Path, wgtpm: Any
) -> None:
    config = json.loads((tiny_dir / "config.json").read_text())
    config["num_hidden_layers"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = wgtpm(
        "paw", "validate", str(fruit.paw), "--interpreter", str(tmp_path / "config.json")
    )
    assert result.code == 1
    assert "layer 1 does not exist; the base model has 1 layers" in result.err


def test_validate_reports_every_problem(tmp_path: Path, wgtpm: Any) -> None:
    path = tmp_path / "bad.paw"
    write_bundle(path, {**members(), "prompt_template.txt": b"nothing"})
    result = wgtpm("paw", "validate", str(path))
    assert result.code == 1
    assert f"wgtpm: {path}: not a valid .paw program:" in result.err
    assert "prompt_template.txt: has 0 {INPUT_PLACEHOLDER}" in result.err


def test_inspect(fruit: Built, wgtpm: Any) -> None:
    result = wgtpm("paw", "inspect", "--json", str(fruit.paw))
    assert result.code == 0
    report = json.loads(result.out)
    assert report["valid"] and report["program_id"] == read_bundle(fruit.paw).program_id
    assert [m["name"] for m in report["members"]] == [
        "meta.json",
        "pseudo_program.txt",
        "adapter.gguf",
        "prompt_template.txt",
    ]
    assert report["adapter"]["rank"] == 32 and report["build"]["examples"]["count"] == 4
    text = wgtpm("paw", "inspect", str(fruit.paw)).out
    assert "valid PAW program" in text and "adapter      LoRA rank 32 alpha 32, layers 0-1" in text


def test_inspect_shows_an_invalid_bundle(tmp_path: Path, wgtpm: Any) -> None:
    path = tmp_path / "bad.paw"
    write_bundle(path, {**members(), "prompt_template.txt": b"nothing"})
    result = wgtpm("paw", "inspect", str(path))
    assert result.code == 0
    assert "INVALID PAW program" in result.out and "problem: prompt_template.txt" in result.out
