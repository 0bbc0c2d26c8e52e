"""The mapper stage against a loopback PAW API, and ``wgtpm paw compile`` end to end."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.paw.compilepy import load
from tests.paw.conftest import BASE_FILE
from tests.paw.synth import write_peft_adapter
from tests.servers import CdnServer
from tests.servers.openai_compat import OpenAICompatServer
from tests.servers.paw import PawServer
from wgtpm._errors import BuildError
from wgtpm.paw.mapper import ASSETS, compile_mapper, mapper_preflight
from wgtpm.paw.spec import Recipe

SPEC = "Map a colour to a fruit. Reply with the fruit only."
PSEUDO = "Colour in, fruit out: red apple, yellow banana."
FRUITS = {"red": "apple", "yellow": "banana", "green": "lime", "purple": "grape"}


def _assets(tiny_dir: Path, tmp_path: Path) -> dict[str, bytes]:
    from wgtpm.paw.shape import InterpreterShape

    shape = InterpreterShape.from_hf_config(json.loads((tiny_dir / "config.json").read_text()))
    directory = write_peft_adapter(
        tmp_path / "mapper-src", layers=shape.layers, rank=32, alpha=32.0, dims=shape.module_dims
    )
    return {name: (directory / name).read_bytes() for name in ASSETS}


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[PawServer]:
    with CdnServer() as cdn, PawServer(cdn, api_key="paw-key") as server:
        monkeypatch.setenv("PAW_API_URL", server.url)
        monkeypatch.setenv("PAW_HF_ASSET_URL", server.url + "/hf")
        monkeypatch.setenv("PAW_API_KEY", "paw-key")
        yield server


def test_compile_and_poll_the_assets(hub: PawServer, tiny_dir: Path, tmp_path: Path) -> None:
    assets = _assets(tiny_dir, tmp_path)
    mapper = hub.add_mapper(SPEC, PSEUDO, assets, pending=2)
    got = compile_mapper(SPEC, Recipe(), tmp_path / "cache", poll_interval=0.05)
    assert got.program_id == mapper.program_id and got.pseudo_program == PSEUDO
    assert hub.compiles == [
        {"spec": SPEC, "compiler": "paw-4b-qwen3-0.6b", "public": True, "ephemeral": False}
    ]
    for name in ASSETS:
        assert (got.adapter_dir / name).read_bytes() == assets[name]
        assert got.assets_sha256[name] == hashlib.sha256(assets[name]).hexdigest()
        statuses = [
            s.status for s in hub.log if s.path == f"/api/v1/programs/{got.program_id}/asset/{name}"
        ]
        assert statuses == [202, 202, 200]
    assert got.adapter_dir == tmp_path / "cache" / "mapper" / got.program_id
    assert not list(got.adapter_dir.glob("*.part"))
    # Cached: no request at all the second time, and no key needed.
    before = len(hub.log)
    assert compile_mapper(SPEC, Recipe(), tmp_path / "cache") == got
    assert len(hub.log) == before


def test_hugging_face_fallback_and_timeout(hub: PawServer, tiny_dir: Path, tmp_path: Path) -> None:
    assets = _assets(tiny_dir, tmp_path)
    hub.add_mapper(SPEC, PSEUDO, assets, pending=0, hf_only=True)
    got = compile_mapper(SPEC, Recipe(), tmp_path / "a", poll_interval=0.05)
    assert (
        got.assets_sha256["adapter_config.json"]
        == hashlib.sha256(assets["adapter_config.json"]).hexdigest()
    )
    assert any(s.path.startswith("/hf/") and s.status == 200 for s in hub.log)
    assert not any(s.path.startswith("/hf/") and s.header("x-api-key") is not None for s in hub.log)
    hub.add_mapper(SPEC, PSEUDO, assets, pending=1000)
    with pytest.raises(BuildError, match=r"timed out after 0\.2s waiting for adapter_config"):
        compile_mapper(SPEC, Recipe(), tmp_path / "b", asset_timeout=0.2, poll_interval=0.05)


def test_no_key_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAW_API_KEY", raising=False)
    with pytest.raises(BuildError, match=re.escape('lora_init = "random"')):
        mapper_preflight(SPEC, Recipe(), tmp_path)
    mapper_preflight(SPEC, Recipe(lora_init="random"), tmp_path)


def test_mapper_must_match_the_recipe(tiny_dir: Path, tmp_path: Path) -> None:
    from wgtpm.paw.mapper import load_mapper_adapter

    directory = write_peft_adapter(tmp_path / "m", layers=1, rank=32, alpha=32.0)
    with pytest.raises(BuildError, match=r"rank=32, alpha=32\.0; use those values"):
        load_mapper_adapter(directory, Recipe())
    with pytest.raises(BuildError, match="different target modules"):
        load_mapper_adapter(
            directory, Recipe(lora_rank=32, lora_alpha=32.0, target_modules=("q_proj",))
        )


def writer(model: str, seed: int, n: int) -> list[dict[str, str]]:
    colours = list(FRUITS)
    return [
        {
            "input": f"{colours[(seed * n + i) % 4]} {seed * n + i}",
            "output": FRUITS[colours[(seed * n + i) % 4]],
        }
        for i in range(n)
    ]


FLAGS = [
    "--teacher", "small=4", "--examples-per-call", "2", "--target-examples", "8",
    "--steps", "2", "--batch-size", "2", "--micro-batch-size", "2", "--lora-rank", "32",
    "--lora-alpha", "32", "--max-length", "128", "--loss-chunk-size", "16", "--device", "cpu",
    "--runtime", "tiny-qwen3-test", "--base-model-repo", "wgtpm-tests/tiny-qwen3-gguf",
]  # fmt: skip


def test_paw_compile_end_to_end(
    hub: PawServer,
    tiny_dir: Path,
    base_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wgtpm: Any,
) -> None:
    from programasweights import cache as paw_cache

    from wgtpm.paw.bundle import read_bundle

    hub.add_mapper(SPEC, PSEUDO, _assets(tiny_dir, tmp_path), pending=0)
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "sdk"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764417600")
    cache = tmp_path / "cache"
    flags = [
        *FLAGS,
        "--interpreter", str(tiny_dir), "--base-model", str(base_dir / BASE_FILE),
        "--cache-dir", str(cache),
    ]  # fmt: skip
    with OpenAICompatServer(writer, api_key="sk-teacher") as teacher:
        monkeypatch.setenv("TEACHER_API_URL", teacher.url + "/v1")
        monkeypatch.setenv("TEACHER_API_KEY", "sk-teacher")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        kept, saved = tmp_path / "kept", tmp_path / "examples.json"
        result = wgtpm(
            "paw", "compile", SPEC, *flags, "-o", str(tmp_path / "a.paw"), "--json",
            "--keep-adapter", str(kept), "--save-examples", str(saved),
        )  # fmt: skip
        assert result.code == 0, result.err
        assert teacher.requests and teacher.requests[0]["messages"][1]["content"].startswith(
            "Generate 2 diverse (input, output) example pairs"
        )
    report = json.loads(result.out)
    bundle = read_bundle(tmp_path / "a.paw")
    rows = json.loads(saved.read_text())
    assert len(rows) == 4 and set(rows[0]) == {"teacher", "input", "output"}
    assert {r["teacher"] for r in rows} == {"small"}
    # compile.py's converter turns the kept peft adapter into the bundle's adapter.gguf
    theirs = load().convert_to_gguf(kept, tmp_path / "theirs.gguf", 32.0).read_bytes()
    assert theirs == bundle.adapter
    mapper = hub.mappers[SPEC]
    assert report["program_id"] == bundle.program_id
    assert report["base_program_id"] == mapper.program_id
    assert bundle.pseudo_program == PSEUDO
    meta = bundle.meta
    assert meta["base_program_id"] == mapper.program_id
    assert meta["base_compiler_snapshot"] == mapper.compiler_snapshot
    assert meta["pseudo_program_strategy"] == "vllm_generate"
    assert meta["adapter"]["target_modules"] == sorted(meta["adapter"]["target_modules"])
    recorded = meta["compile_by_training"]["mapper"]["assets_sha256"]
    assert recorded == {n: hashlib.sha256(d).hexdigest() for n, d in mapper.assets.items()}
    their_meta_keys = {
        "version", "runtime_manifest_version", "program_id", "spec", "compiler_snapshot",
        "compiler_fingerprint", "compiler_kind", "interpreter", "runtime_id",
        "pseudo_program_strategy", "lora_rank", "lora_alpha", "prefix_steps", "runtime",
        "adapter", "program_assets", "prompt_template", "created_at", "base_program_id",
        "base_compiler_snapshot", "compile_by_training", "examples",
    }  # fmt: skip
    assert their_meta_keys <= set(meta)
    assert paw_cache.has_valid_program_assets(bundle.program_id)  # installed for the SDK
    # The same command again, with neither the PAW API nor the teacher: the same bytes.
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TEACHER_API_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("PAW_API_KEY")
    monkeypatch.delenv("TEACHER_API_KEY")
    again = wgtpm("paw", "compile", SPEC, *flags, "-o", str(tmp_path / "b.paw"), "--no-install")
    assert again.code == 0, again.err
    assert (tmp_path / "b.paw").read_bytes() == (tmp_path / "a.paw").read_bytes()
    # A fresh cache without PAW_API_KEY stops before any work, naming the way out.
    flags[-1] = str(tmp_path / "empty")
    stopped = wgtpm("paw", "compile", SPEC, *flags, "-o", str(tmp_path / "c.paw"))
    assert stopped.code != 0 and 'lora_init = "random"' in stopped.err
    assert not (tmp_path / "c.paw").exists()
    exists = wgtpm("paw", "compile", SPEC, *flags, "-o", str(tmp_path / "a.paw"))
    assert exists.code != 0 and "already exists; pass --force" in exists.err


def test_print_config_and_flags_are_compile_pys(wgtpm: Any) -> None:
    cbt = load()
    ours_parser_actions = {
        opt: action for action in _paw_compile_parser()._actions for opt in action.option_strings
    }
    for action in cbt.build_parser()._actions:
        for opt in action.option_strings:
            assert opt in ours_parser_actions, opt
            if opt not in ("-h", "--help", "--teacher"):
                assert ours_parser_actions[opt].default == action.default, opt
    for argv in (
        [],
        ["--teacher", "a=3", "--teacher", "b=1", "--steps", "5", "--seed", "7"],
        ["--lora-init", "random", "--target-modules", "q_proj,v_proj", "--warmup", "0.1"],
        ["--teacher-temperature", "0.5", "--examples-per-call", "4", "--gradient-checkpointing"],
    ):
        theirs = cbt.serializable_recipe(
            cbt.recipe_from_args(cbt.build_parser().parse_args(["x" * 10, *argv]))
        )
        result = wgtpm("paw", "compile", "x" * 10, "--print-config", *argv)
        assert result.code == 0, result.err
        assert json.loads(result.out) == theirs
    for argv in (
        ["--micro-batch-size", "5"],
        ["--warmup", "1.0"],
        ["--target-modules", "lm_head"],
        ["--steps", "0"],
        ["--teacher", "a=0"],
    ):
        with pytest.raises((ValueError, Exception)):
            cbt.recipe_from_args(cbt.build_parser().parse_args(["x" * 10, *argv]))
        assert wgtpm("paw", "compile", "x" * 10, "--print-config", *argv).code != 0
    assert wgtpm("paw", "compile", "too short", "--lora-init", "random").code != 0


def _paw_compile_parser() -> Any:
    import argparse

    from wgtpm.cli._paw import _compile_parser

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    _compile_parser(sub)
    return sub.choices["compile"]


def test_a_pawspec_with_the_mapper(
    hub: PawServer,
    tiny_dir: Path,
    tmp_path: Path,
    resolver: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The .pawspec route goes through the same builder: mapper pseudo-program, cached rebuild."""
    from tests.paw.conftest import write_package
    from wgtpm.paw.build import build_program
    from wgtpm.paw.bundle import read_bundle

    hub.add_mapper(SPEC, PSEUDO, _assets(tiny_dir, tmp_path), pending=0)
    recipe = (
        "[recipe]\nsteps = 2\nbatch_size = 2\nmicro_batch_size = 2\nlora_rank = 32\n"
        'lora_alpha = 32.0\nmax_length = 128\ndevice = "cpu"\n'
    )
    spec = write_package(tmp_path / "pkg", recipe=recipe)
    spec.write_text(spec.read_text().replace('pseudo_program = ""\n', ""))
    cache = tmp_path / "mapper-cache"
    first = build_program(spec, tmp_path / "a.paw", resolver, name="fruit", cache_dir=cache)
    bundle = read_bundle(first)
    assert bundle.pseudo_program == PSEUDO
    assert bundle.meta["base_program_id"] == hub.mappers[SPEC].program_id
    assert PSEUDO in bundle.prompt_template
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("PAW_API_KEY")
    again = build_program(spec, tmp_path / "b.paw", resolver, name="fruit", cache_dir=cache)
    assert again.read_bytes() == first.read_bytes()
