"""Cross-checks against compile-by-training's own functions (loaded from ../shared/prototypes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.paw.compilepy import load
from tests.paw.synth import write_peft_adapter
from wgtpm.paw.shape import QWEN3_0_6B


def test_gguf_is_byte_identical_to_compile_py(tmp_path: Path) -> None:
    from wgtpm.paw.gguf_adapter import convert_peft_adapter

    cbt = load()
    adapter = write_peft_adapter(tmp_path / "adapter", layers=12, rank=32, alpha=16.0)
    theirs = cbt.convert_to_gguf(adapter, tmp_path / "theirs.gguf", 16.0).read_bytes()
    assert convert_peft_adapter(adapter) == theirs


@pytest.fixture
def compile_py_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle written by compile.py's package_program (one Qwen3-0.6B layer, rank 64)."""
    cbt = load()
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "their-cache"))
    adapter = write_peft_adapter(
        tmp_path / "adapter", layers=1, rank=64, alpha=16.0, dims=QWEN3_0_6B.module_dims
    )
    mapper = {
        "program_id": "ab" * 10,
        "compiler_snapshot": "paw-4b-qwen3-0.6b-20260501",
        "pseudo_program": "Map a colour to a fruit.",
        "pseudo_program_strategy": "vllm_generate",
    }
    template = (
        "<|im_start|>user\nMap a colour to a fruit.\n\n[INPUT]\n{INPUT_PLACEHOLDER}\n"
        "[END_INPUT]<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    _, out = cbt.package_program(
        "Map a colour to a fruit.",
        cbt.Recipe(),
        mapper,
        adapter,
        template,
        [2.5, 0.25],
        tmp_path / "theirs.paw",
        False,
    )
    return Path(out)


def test_compile_py_bundles_validate_install_and_inspect(
    compile_py_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wgtpm: Any
) -> None:
    from programasweights import cache as paw_cache

    from wgtpm.paw.sdk import install_program
    from wgtpm.paw.validate import validate_file

    program = validate_file(compile_py_bundle)
    assert program.runtime_source == "embedded" and program.adapter.rank == 64
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "our-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    installed = install_program(compile_py_bundle)
    assert paw_cache.has_valid_program_assets(installed.program_id)
    text = wgtpm("paw", "inspect", str(compile_py_bundle)).out
    assert "None" not in text, text
    assert (
        "built by     compile-by-training-local, teachers gpt-5.4-mini=2400, gpt-5.5=1200" in text
    )
    assert f"mapper {'ab' * 10}, final loss 0.25" in text


def test_learning_rate_schedule_is_compile_pys() -> None:
    from wgtpm.paw.train import cosine_lr

    cbt = load()
    for total, warmup in ((1, 0.0), (5, 0.0), (100, 0.0), (100, 0.1), (7, 0.5), (10, 0.99)):
        for step in range(total):
            args = (step, total, 2e-4, 2e-5, warmup)
            assert cosine_lr(*args) == cbt.cosine_learning_rate(*args)


@pytest.mark.parametrize(
    ("counts", "target", "steps", "batch", "seed"),
    [
        ([2400, 1200], 4800, 100, 48, 0),
        ([4], 4800, 150, 4, 0),
        ([3, 5, 7], 10, 9, 4, 3),
        ([10, 1], 7, 5, 3, 1),
    ],
)
def test_quotas_and_schedule_are_compile_pys(
    counts: list[int], target: int, steps: int, batch: int, seed: int
) -> None:
    from wgtpm.paw.spec import Recipe
    from wgtpm.paw.train import allocate_quotas, schedule

    cbt = load()
    assert allocate_quotas(counts, target) == cbt.allocate_quotas(counts, target)
    pools = [[{"id": [p, i]} for i in range(n)] for p, n in enumerate(counts)]
    theirs = cbt.build_schedule(
        pools,
        cbt.Recipe(
            teachers=[cbt.Teacher(f"t{i}", n) for i, n in enumerate(counts)],
            target_examples=target,
            steps=steps,
            batch_size=batch,
            seed=seed,
        ),
    )
    ours = schedule(
        counts, Recipe(target_examples=target, steps=steps, batch_size=batch, seed=seed)
    )
    assert [list(item) for item in ours] == [item["id"] for item in theirs]


ANSWERS: list[Any] = [
    '{"examples": [{"input": "a", "output": "b"}]}',
    '{"data": [{"input": "a", "output": "b"}, {"input": 1, "output": "x"}]}',
    '{"items": [{"input": "a", "output": "b", "extra": 1}]}',
    '{"items": "none", "data": [{"input": "c", "output": "d"}]}',
    '{"examples": "x"}',
    '[{"input": "a", "output": "b"}]',
    "not json",
    '{"other": []}',
]


@pytest.mark.parametrize("content", ANSWERS)
def test_answer_parsing_is_compile_pys(content: str) -> None:
    from wgtpm.paw.teacher import parse_answer

    cbt = load()
    body = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
    ours = [{"input": e.input, "output": e.output} for e in parse_answer(body)]
    assert ours == cbt.parse_examples(content)


def _train_both(
    tiny_dir: Path, tmp_path: Path, lora_init: str, mapper_dir: Path | None = None
) -> tuple[list[float], list[float]]:
    from wgtpm.paw.examples import Example
    from wgtpm.paw.prompt import raw_prompt, render_chat
    from wgtpm.paw.spec import Recipe
    from wgtpm.paw.train import train_lora

    cbt = load()
    pools = [
        [{"input": "red", "output": "apple"}, {"input": "yellow", "output": "banana"}],
        [{"input": "green", "output": "lime"}, {"input": "purple", "output": "grape"}],
    ]
    common: dict[str, Any] = {
        "target_examples": 6,
        "steps": 3,
        "batch_size": 4,
        "micro_batch_size": 2,
        "learning_rate": 1e-2,
        "min_learning_rate": 1e-3,
        "lora_rank": 32,
        "lora_alpha": 32.0,
        "lora_init": lora_init,
        "max_length": 64,
        "loss_chunk_size": 8,
        "seed": 3,
    }
    import torch

    theirs = cbt.train(
        cbt.Recipe(
            teachers=[cbt.Teacher("a", 2), cbt.Teacher("b", 2)],
            interpreter=str(tiny_dir),
            **common,
        ),
        mapper_dir,
        "Map a colour to a fruit.",
        pools,
        tmp_path / "their-adapter",
        torch.device("cpu"),
    )[2]
    from transformers import AutoTokenizer

    template = render_chat(
        AutoTokenizer.from_pretrained(str(tiny_dir)), raw_prompt("Map a colour to a fruit.")
    )
    ours = train_lora(
        tiny_dir,
        [[Example(e["input"], e["output"]) for e in pool] for pool in pools],
        template,
        Recipe(device="cpu", **common),
        mapper_dir=mapper_dir,
    ).losses
    return ours, theirs


# compile.py's peft call asks transformers 5 for a deprecated property.
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_a_training_run_is_compile_pys(tiny_dir: Path, tmp_path: Path) -> None:
    ours, theirs = _train_both(tiny_dir, tmp_path, "random")
    assert ours == pytest.approx(theirs, rel=1e-4)


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_mapper_initialisation_is_compile_pys(tiny_dir: Path, tmp_path: Path) -> None:
    from wgtpm.paw.shape import InterpreterShape

    config = json.loads((tiny_dir / "config.json").read_text())
    shape = InterpreterShape.from_hf_config(config)
    mapper = write_peft_adapter(
        tmp_path / "mapper", layers=shape.layers, rank=32, alpha=32.0, dims=shape.module_dims
    )
    ours, theirs = _train_both(tiny_dir, tmp_path, "mapper", mapper)
    assert ours == pytest.approx(theirs, rel=1e-4)
    random_start, _ = _train_both(tiny_dir, tmp_path / "r", "random")
    assert ours[0] != pytest.approx(random_start[0], rel=1e-3)
