"""Adapters apply to their pinned base only; ``wgtpm.load`` runs a PAW program as ``wgtpm run`` does.

Everything goes through a real proxy on loopback: the tiny Qwen3 is published
at two revisions (``V1``, the one the fruit program and the peft LoRA were
trained on, and ``V2``, other weights), the fruit program and a peft LoRA
(``tone/``) as modules that require ``V1``; consumer packages get them with
``wgtpm get``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import wgtpm
from tests.adapters.conftest import V1, V2
from tests.paw.conftest import INTERPRETER_MODULE, Built
from wgtpm.adapters import BaseMismatchError, base_of
from wgtpm.proxytree import ProxyTree

FRUIT_MOD = "example.com/acme/fruit"
TONE_MOD = "example.com/acme/tone"


@dataclass(frozen=True)
class Projects:
    pinned: Path  # requires the fruit program and the tone adapter: the interpreter at V1
    other: Path  # requires the interpreter at V2 only
    upgraded: Path  # requires the fruit program, the tone adapter and the interpreter at V2


def _files(directory: Path, prefix: str = "") -> dict[str, bytes]:
    return {prefix + p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def _project(root: Path, name: str, wgtpm: Any, *refs: str) -> Path:
    project = root / name
    project.mkdir()
    (project / "wgt.mod").write_text(f"module example.com/{name}\nwgt 0.1\n")
    r = wgtpm("get", "-q", *refs, cwd=project)
    assert r.code == 0, r.err
    return project


@pytest.fixture
def projects(
    tiny_dir: Path,
    tiny_v2: Path,
    peft_dir: Path,
    fruit: Built,
    tree: ProxyTree,
    http_tree: Any,
    wgtpm: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Projects:
    tree.add(INTERPRETER_MODULE, V1, _files(tiny_dir))
    tree.add(INTERPRETER_MODULE, V2, _files(tiny_v2))
    requires = f"wgt 0.1\n\nrequire {INTERPRETER_MODULE} {V1}\n"
    tree.add(
        FRUIT_MOD,
        "v0.1.0",
        {
            "wgt.mod": f"module {FRUIT_MOD}\n{requires}".encode(),
            "fruit.paw": fruit.paw.read_bytes(),
        },
        artifacts={"fruit.paw": ("fruit", "paw")},
    )
    tree.add(
        TONE_MOD,
        "v0.1.0",
        {"wgt.mod": f"module {TONE_MOD}\n{requires}".encode(), **_files(peft_dir, "tone/")},
    )
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    both = (f"{FRUIT_MOD}@v0.1.0", f"{TONE_MOD}@v0.1.0")
    return Projects(
        pinned=_project(tmp_path, "pinned", wgtpm, *both),
        other=_project(tmp_path, "other", wgtpm, f"{INTERPRETER_MODULE}@{V2}"),
        upgraded=_project(tmp_path, "upgraded", wgtpm, *both, f"{INTERPRETER_MODULE}@{V2}"),
    )


def load_base(project: Path) -> Any:
    """The interpreter of ``project``'s build list, as ``wgtpm.open(...).load()`` loads it."""
    import torch

    return wgtpm.open(INTERPRETER_MODULE, project_dir=project).load(dtype=torch.float32).eval()


def _logits(model: Any) -> Any:
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([[5, 17, 42, 99, 3]])).logits


def _merged(project: Path, pairs: dict[tuple[int, str], tuple[Any, Any]], scale: float) -> Any:
    """The base with ``scale * B @ A`` added to each adapted weight: what a LoRA must compute."""
    import torch

    from wgtpm.paw.shape import HF_MODULE_PATHS

    model = load_base(project)
    with torch.no_grad():
        for (layer, module), (a, b) in pairs.items():
            weight = model.model.layers[layer].get_submodule(HF_MODULE_PATHS[module]).weight
            weight += scale * (torch.as_tensor(b) @ torch.as_tensor(a))
    return model


def _refusal(exc: BaseMismatchError, want: Any, got: Any) -> None:
    message = str(exc)
    assert "\n" not in message
    for base in (want, got):
        assert f"{base.module}@{base.version}" in message and base.weights_sha256 in message


def test_paw_adapter_applies_to_its_pinned_base_and_is_refused_on_another_revision(
    projects: Projects,
) -> None:
    import torch

    from wgtpm.paw.bundle import read_bundle
    from wgtpm.paw.gguf_adapter import load_lora_pairs

    adapter = wgtpm.adapter(f"{FRUIT_MOD}/fruit", project_dir=projects.pinned)
    assert adapter.kind == "paw" and adapter.path.name == "fruit.paw"
    base = load_base(projects.pinned)
    assert adapter.base == base_of(base)
    assert (adapter.base.module, adapter.base.version) == (INTERPRETER_MODULE, V1)

    lm = adapter.apply(base)
    pairs = load_lora_pairs(read_bundle(adapter.path).adapter)
    want = _logits(_merged(projects.pinned, pairs, adapter.alpha / adapter.rank))
    assert torch.allclose(_logits(lm), want, atol=1e-4)
    assert not torch.allclose(_logits(load_base(projects.pinned)), want, atol=1e-2)
    assert base_of(lm) == adapter.base

    other = load_base(projects.other)
    with pytest.raises(BaseMismatchError) as caught:
        adapter.apply(other)
    _refusal(caught.value, adapter.base, base_of(other))
    assert adapter.base.weights_sha256 != base_of(other).weights_sha256  # type: ignore[union-attr]


def test_peft_adapter_applies_to_its_pinned_base_and_is_refused_on_another_revision(
    projects: Projects, peft_dir: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    adapter = wgtpm.adapter(f"{TONE_MOD}/tone", project_dir=projects.pinned)
    assert (adapter.kind, adapter.rank, adapter.alpha) == ("peft", 4, 8.0)
    assert adapter.target_modules == ("q_proj", "v_proj")
    assert (adapter.base.module, adapter.base.version) == (INTERPRETER_MODULE, V1)

    state = load_file(str(peft_dir / "adapter_model.safetensors"))
    halves: dict[tuple[int, str], dict[str, Any]] = {}
    for name, tensor in state.items():
        parts = name.split(".")
        layer = int(parts[parts.index("layers") + 1])
        halves.setdefault((layer, parts[-3]), {})[parts[-2]] = tensor
    pairs = {k: (v["lora_A"], v["lora_B"]) for k, v in halves.items()}
    assert len(pairs) == 4  # q_proj and v_proj of both layers
    want = _logits(_merged(projects.pinned, pairs, 8 / 4))

    lm = adapter.apply(load_base(projects.pinned))
    assert torch.allclose(_logits(lm), want, atol=1e-4)
    merged = adapter.apply(load_base(projects.pinned), merge=True)
    assert torch.allclose(_logits(merged), want, atol=1e-4)
    assert base_of(merged) == adapter.base

    other = load_base(projects.other)
    with pytest.raises(BaseMismatchError) as caught:
        adapter.apply(other)
    _refusal(caught.value, adapter.base, base_of(other))


def test_a_model_without_a_recorded_base_is_refused(projects: Projects, tiny_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    adapter = wgtpm.adapter(f"{TONE_MOD}/tone", project_dir=projects.pinned)
    plain = AutoModelForCausalLM.from_pretrained(str(tiny_dir), use_safetensors=True)
    with pytest.raises(BaseMismatchError, match="the model records no base"):
        adapter.apply(plain)


def test_load_runs_a_paw_program_as_wgtpm_run(
    projects: Projects, request: pytest.FixtureRequest
) -> None:
    cli = request.getfixturevalue("wgtpm")  # the CLI runner; ``wgtpm`` here is the package
    r = cli("run", f"{FRUIT_MOD}/fruit", "--input", "yellow", cwd=projects.pinned)
    assert r.code == 0, r.err
    program = wgtpm.load(f"{FRUIT_MOD}/fruit", project_dir=projects.pinned)
    assert program("yellow") == r.out.strip() == "banana"
    assert program.interpreter == f"{INTERPRETER_MODULE}@{V1}"
    for colour in ("red", "green", "purple"):
        r = cli("run", f"{FRUIT_MOD}/fruit", "--input", colour, cwd=projects.pinned)
        assert program(colour) == r.out.strip()


def test_a_build_list_with_another_revision_of_the_base_is_refused(
    projects: Projects, request: pytest.FixtureRequest
) -> None:
    cli = request.getfixturevalue("wgtpm")  # the CLI runner; ``wgtpm`` here is the package
    r = cli("run", f"{FRUIT_MOD}/fruit", "--input", "yellow", cwd=projects.upgraded)
    assert r.code != 0 and r.out == ""
    (line,) = r.err.strip().splitlines()  # one line, as wgtpm.load's refusal
    assert line.startswith("wgtpm: ") and f"trained on {INTERPRETER_MODULE}@{V1}" in line
    assert f"selects {INTERPRETER_MODULE}@{V2}" in line
    for ref in (f"{FRUIT_MOD}/fruit", f"{TONE_MOD}/tone"):
        with pytest.raises(wgtpm.ResolveError) as caught:
            wgtpm.adapter(ref, project_dir=projects.upgraded)
        message = str(caught.value)
        assert f"{INTERPRETER_MODULE}@{V1}" in message and f"{INTERPRETER_MODULE}@{V2}" in message
    with pytest.raises(wgtpm.ResolveError, match=f"trained on {INTERPRETER_MODULE}@{V1}"):
        wgtpm.load(f"{FRUIT_MOD}/fruit", project_dir=projects.upgraded)


def test_load_takes_paths_of_artifacts_and_programs(fruit: Built, tiny_dir: Path) -> None:
    from wgtpm.adapters import Program
    from wgtpm.weightlang.api import Artifact

    xor = Path(__file__).resolve().parents[1] / "testdata/weightlang/prototype/xor"
    artifact = wgtpm.load(xor)
    assert isinstance(artifact, Artifact)
    assert artifact.predict([[0, 1], [1, 1]]).shape == (2, 1)
    program = wgtpm.load(fruit.paw, interpreter=tiny_dir)
    assert isinstance(program, Program) and program.interpreter is None
    assert program("red") == "apple"
