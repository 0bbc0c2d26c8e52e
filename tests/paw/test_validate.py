"""Every rule of the validator, one broken at a time, against a bundle that passes them all."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.paw.synth import DELETE, TEMPLATE, TINY, edit_meta, gguf_bytes, lora_pairs, members
from wgtpm.paw.bundle import BundleError, write_bundle
from wgtpm.paw.gguf_adapter import adapter_bytes
from wgtpm.paw.runtime import qwen3_runtime
from wgtpm.paw.shape import QWEN3_0_6B, InterpreterShape
from wgtpm.paw.validate import validate_file

Members = dict[str, bytes]
A = "blk.0.attn_q.weight.lora_a"
B = "blk.0.attn_q.weight.lora_b"
ADAPTER_KV = {"general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 16.0}
Q_PAIR = {A: np.zeros((32, 64)), B: np.zeros((64, 32))}


def _write(tmp_path: Path, m: Members) -> Path:
    path = tmp_path / "p.paw"
    write_bundle(path, m)
    return path


def _adapter(
    arch: str = "qwen3",
    kv: dict[str, object] | None = None,
    tensors: dict[str, object] | None = None,
) -> Members:
    return members(
        adapter=gguf_bytes(
            arch, ADAPTER_KV if kv is None else kv, Q_PAIR if tensors is None else tensors
        )
    )


def test_the_baseline_passes(tmp_path: Path) -> None:
    program = validate_file(_write(tmp_path, members()))
    assert program.adapter.rank == 32 and program.adapter.alpha == 16.0
    assert program.adapter.layers == (0, 1) and program.adapter.types == ("F32",)
    assert program.shape == TINY and program.shape_source == "meta.json"


CASES: list[tuple[str, Callable[[], Members], str]] = [
    (
        "meta not json",
        lambda: {**members(), "meta.json": b"{not json"},
        "meta.json: not a JSON object",
    ),
    ("meta not utf8", lambda: {**members(), "meta.json": b"\xff\xfe"}, "meta.json: not UTF-8"),
    (
        "id not hex",
        lambda: edit_meta(members(), program_id="Not-An-ID"),
        "program_id 'Not-An-ID' is not 16-64 lower-case hex",
    ),
    (
        "id too short",
        lambda: edit_meta(members(), program_id="abc123"),
        "is not 16-64 lower-case hex",
    ),
    (
        "id upper case",
        lambda: edit_meta(members(), program_id="A" * 20),
        "is not 16-64 lower-case hex",
    ),
    (
        "content changed",
        lambda: edit_meta(members(), spec="Map a fruit to a colour."),
        "does not match the bundle's content",
    ),
    (
        "no interpreter",
        lambda: edit_meta(members(), interpreter=DELETE),
        "meta.json: interpreter is missing",
    ),
    (
        "bad runtime id",
        lambda: edit_meta(members(), runtime_id="../x"),
        "runtime_id '../x' is not a runtime id",
    ),
    (
        "runtime id differs",
        lambda: edit_meta(members(), runtime_id="other"),
        "differs from the embedded runtime's",
    ),
    (
        "manifest version",
        lambda: edit_meta(members(), runtime_manifest_version=2),
        "runtime_manifest_version 2 is not 1",
    ),
    ("no runtime", lambda: edit_meta(members(), runtime=DELETE), "no runtime manifest serves"),
    (
        "adapter format",
        lambda: edit_meta(members(), runtime__adapter_format="safetensors"),
        "adapter_format: 'safetensors', want 'gguf_lora'",
    ),
    (
        "runtime interpreter",
        lambda: edit_meta(members(), runtime__interpreter="Qwen/Other"),
        "differs from meta.json's interpreter",
    ),
    (
        "not local",
        lambda: edit_meta(members(), runtime__local_sdk__supported=False),
        "local_sdk.supported: must be true",
    ),
    (
        "base no source",
        lambda: edit_meta(members(), runtime__local_sdk__base_model__repo=DELETE),
        "needs a url, or provider 'huggingface' with a repo",
    ),
    (
        "base bad sha",
        lambda: edit_meta(members(), runtime__local_sdk__base_model__sha256="xyz"),
        "base_model.sha256: 'xyz' is not 64 hex digits",
    ),
    (
        "base path",
        lambda: edit_meta(members(), runtime__local_sdk__base_model__file="../x.gguf"),
        "base_model.file: '../x.gguf' is not a plain file name",
    ),
    (
        "base template",
        lambda: edit_meta(members(), runtime__base_inference__template="no placeholder"),
        "runtime.base_inference: want contract_version 1",
    ),
    (
        "template none",
        lambda: {**members(), "prompt_template.txt": b"no placeholder"},
        "prompt_template.txt: has 0 {INPUT_PLACEHOLDER}, want exactly one",
    ),
    (
        "template two",
        lambda: {**members(), "prompt_template.txt": (TEMPLATE + TEMPLATE).encode()},
        "has 2 {INPUT_PLACEHOLDER}",
    ),
    (
        "template bytes",
        lambda: {**members(), "prompt_template.txt": b"\xff{INPUT_PLACEHOLDER}"},
        "prompt_template.txt: not UTF-8",
    ),
    (
        "pseudo bytes",
        lambda: {**members(), "pseudo_program.txt": b"\xff"},
        "pseudo_program.txt: not UTF-8",
    ),
    (
        "adapter small",
        lambda: {**members(), "adapter.gguf": b"GGUF" + b"\0" * 100},
        "adapter.gguf: 104 bytes, the SDK needs at least 1024",
    ),
    (
        "adapter magic",
        lambda: {**members(), "adapter.gguf": b"GGML" + b"\0" * 2000},
        "no GGUF magic",
    ),
    (
        "adapter garbage",
        lambda: {**members(), "adapter.gguf": b"GGUF" + b"\xff" * 2000},
        "adapter.gguf: not a readable GGUF file",
    ),
    ("arch", lambda: _adapter(arch="llama"), "general.architecture is 'llama', want 'qwen3'"),
    (
        "type",
        lambda: _adapter(kv={**ADAPTER_KV, "general.type": "model"}),
        "general.type is 'model', want 'adapter'",
    ),
    (
        "lora type",
        lambda: _adapter(kv={**ADAPTER_KV, "adapter.type": "control_vector"}),
        "adapter.type is 'control_vector', want 'lora'",
    ),
    (
        "no alpha",
        lambda: _adapter(kv={k: v for k, v in ADAPTER_KV.items() if k != "adapter.lora.alpha"}),
        "adapter.lora.alpha is None",
    ),
    (
        "zero alpha",
        lambda: _adapter(kv={**ADAPTER_KV, "adapter.lora.alpha": 0.0}),
        "adapter.lora.alpha is 0.0",
    ),
    (
        "tensor name",
        lambda: _adapter(tensors={**Q_PAIR, "blk.0.attn_norm.weight": np.ones(64)}),
        "tensor 'blk.0.attn_norm.weight' is not blk.L.",
    ),
    ("no tensors", lambda: _adapter(tensors={}), "adapter.gguf: holds no LoRA tensors"),
    (
        "missing b",
        lambda: _adapter(tensors={A: np.zeros((32, 64))}),
        "blk.0.attn_q.weight.lora_b is missing",
    ),
    (
        "rank pair",
        lambda: _adapter(tensors={A: np.zeros((32, 64)), B: np.zeros((64, 16))}),
        "lora_a has rank 32 but lora_b has rank 16",
    ),
    (
        "ranks differ",
        lambda: _adapter(
            tensors={
                **Q_PAIR,
                "blk.1.attn_k.weight.lora_a": np.zeros((16, 64)),
                "blk.1.attn_k.weight.lora_b": np.zeros((32, 16)),
            }
        ),
        "tensors disagree on the LoRA rank ([16, 32])",
    ),
    (
        "layer",
        lambda: _adapter(
            tensors={
                "blk.2.attn_q.weight.lora_a": np.zeros((32, 64)),
                "blk.2.attn_q.weight.lora_b": np.zeros((64, 32)),
            }
        ),
        "layer 2 does not exist; the base model has 2 layers",
    ),
    (
        "shape",
        lambda: _adapter(tensors={A: np.zeros((32, 128)), B: np.zeros((64, 32))}),
        "adapts a 128->64 projection, but the base model's q_proj is 64->64",
    ),
    (
        "meta rank",
        lambda: edit_meta(members(), adapter={"lora_rank": 8}),
        "adapter.lora_rank 8 differs from adapter.gguf's rank 32",
    ),
    ("no shape", lambda: members(shape=None), "cannot check the adapter against its base model"),
]


@pytest.mark.parametrize(("name", "make", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_names_what_is_wrong(
    tmp_path: Path, name: str, make: Callable[[], Members], message: str
) -> None:
    with pytest.raises(BundleError) as info:
        validate_file(_write(tmp_path, make()))
    assert any(message in p for p in info.value.problems), info.value.problems
    assert str(tmp_path / "p.paw") in str(info.value)


def test_expected_id(tmp_path: Path) -> None:
    path = _write(tmp_path, members())
    pid = validate_file(path).program_id
    assert validate_file(path, expected_id=pid).program_id == pid
    with pytest.raises(BundleError, match=re.escape("does not match the expected 0000")):
        validate_file(path, expected_id="0" * 32)


def test_given_shape_wins_over_the_recorded_one(tmp_path: Path) -> None:
    path = _write(tmp_path, members())
    wider = InterpreterShape(
        layers=2, hidden=128, intermediate=128, heads=4, kv_heads=2, head_dim=16
    )
    with pytest.raises(
        BundleError,
        match=re.escape("adapts a 64->64 projection, but the base model's q_proj is 128->64"),
    ):
        validate_file(path, shape=wider)


def test_qwen3_runtime_is_checked_against_qwen3_0_6b(tmp_path: Path) -> None:
    # A rank-1 F32 adapter on two layers of the real Qwen3-0.6B shapes: small, and valid.
    adapter = adapter_bytes(
        lora_pairs(QWEN3_0_6B, rank=1, layers=2), alpha=16.0, quantization="F32"
    )
    good = validate_file(
        _write(tmp_path, members(adapter=adapter, runtime=qwen3_runtime(), shape=None))
    )
    assert good.shape == QWEN3_0_6B and good.shape_source == "runtime qwen3-0.6b-q6_k"
    # The tiny adapter does not fit Qwen3-0.6B.
    with pytest.raises(BundleError, match=re.escape("but the base model's q_proj is 1024->2048")):
        validate_file(_write(tmp_path, members(runtime=qwen3_runtime(), shape=None)))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("local_sdk", "base_model", "sha256"),
            "00" * 32,
            "differs from the SDK's qwen3-0.6b-q6_k runtime",
        ),
        (
            ("local_sdk", "base_model", "file"),
            "other.gguf",
            "base_model.file: 'other.gguf' differs",
        ),
        (("local_sdk", "n_ctx"), 4096, "local_sdk.n_ctx: differs"),
        (
            ("interpreter",),
            "Qwen/Qwen3-1.7B",
            "runtime.interpreter: 'Qwen/Qwen3-1.7B' differs from the SDK's",
        ),
    ],
)
def test_pinned_runtime_must_match_the_sdk(
    tmp_path: Path, path: tuple[str, ...], value: object, message: str
) -> None:
    adapter = adapter_bytes(
        lora_pairs(QWEN3_0_6B, rank=1, layers=1), alpha=16.0, quantization="F32"
    )
    runtime = qwen3_runtime()
    target = runtime
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    m = members(adapter=adapter, runtime=runtime, shape=None)
    if path == ("interpreter",):
        m = edit_meta(m, interpreter=value)
    with pytest.raises(BundleError) as info:
        validate_file(_write(tmp_path, m))
    assert any(message in p for p in info.value.problems), info.value.problems


def test_recorded_shape_must_agree_with_a_pinned_runtime(tmp_path: Path) -> None:
    adapter = adapter_bytes(
        lora_pairs(QWEN3_0_6B, rank=1, layers=1), alpha=16.0, quantization="F32"
    )
    with pytest.raises(
        BundleError, match=re.escape("is not the shape of runtime qwen3-0.6b-q6_k's base model")
    ):
        validate_file(
            _write(tmp_path, members(adapter=adapter, runtime=qwen3_runtime(), shape=TINY))
        )


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    m = edit_meta(members(), program_id="x", interpreter=DELETE)
    m["prompt_template.txt"] = b"none"
    with pytest.raises(BundleError) as info:
        validate_file(_write(tmp_path, m))
    assert len(info.value.problems) >= 3
