"""Compile-by-training on the tiny interpreter: learning, progress, reproducibility."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paw.conftest import FRUIT, Built, write_package
from wgtpm._errors import BuildError, ParseError
from wgtpm.deps import MapResolver
from wgtpm.paw.build import build_program
from wgtpm.paw.bundle import read_bundle
from wgtpm.paw.identity import program_id
from wgtpm.paw.run import load_program
from wgtpm.paw.validate import validate_file


def test_build_learns_the_mapping(fruit: Built, tiny_dir: Path) -> None:
    steps = [line for line in fruit.log if " step " in line]
    assert len(steps) == 150
    losses = [float(re.search(r"loss (\S+)", line)[1]) for line in steps]  # type: ignore[index]
    assert losses[-1] < 0.1 < losses[0] / 10
    program = load_program(fruit.paw, interpreter=tiny_dir)
    assert {colour: program(colour) for colour in FRUIT} == FRUIT


def test_run_finds_the_interpreter_in_the_build_list(fruit: Built, resolver: MapResolver) -> None:
    from wgtpm.paw.run import run_program

    assert run_program(fruit.paw, "purple", resolver=resolver) == "grape"


def test_bundle_is_what_the_sdk_expects(fruit: Built) -> None:
    with zipfile.ZipFile(fruit.paw) as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == [
        "meta.json",
        "pseudo_program.txt",
        "adapter.gguf",
        "prompt_template.txt",
    ]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.compress_type for i in infos} == {zipfile.ZIP_STORED}
    program = validate_file(fruit.paw)
    meta = program.bundle.meta
    assert program.shape_source == "meta.json"
    assert meta["interpreter"] == "wgtpm-tests/tiny-qwen3" == meta["runtime"]["interpreter"]
    assert meta["runtime"]["local_sdk"]["base_model"]["repo"] == "wgtpm-tests/tiny-qwen3-gguf"
    assert meta["compile_by_training"]["interpreter"]["module"] == "hf.co/wgtpm-tests/tiny-qwen3"
    assert meta["compile_by_training"]["examples"]["count"] == 4
    assert program.adapter.types == ("Q4_0",)
    assert program.adapter.layers == (0, 1) and len(program.adapter.modules) == 7
    assert program.bundle.prompt_template.startswith(
        "<|im_start|>user\n[INPUT]\n{INPUT_PLACEHOLDER}"
    )


def test_program_id_is_recomputable(fruit: Built) -> None:
    import hashlib

    bundle = read_bundle(fruit.paw)
    meta = bundle.meta
    assert meta["program_id"] == program_id(
        spec=meta["spec"],
        pseudo_program="",
        recipe=meta["compile_by_training"]["recipe"],
        interpreter=meta["interpreter"],
        runtime=meta["runtime"],
        adapter_sha256=hashlib.sha256(bundle.adapter).hexdigest(),
    )


def test_rebuild_is_byte_identical(
    fruit: Built, tmp_path: Path, rebuild: Callable[[Path, Path], Path]
) -> None:
    again = rebuild(fruit.spec, tmp_path / "again.paw")
    assert again.read_bytes() == fruit.paw.read_bytes()


def test_source_date_epoch_stamps_the_zip(
    tmp_path: Path, rebuild: Callable[[Path, Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_package(tmp_path / "pkg", recipe=_short_recipe(""))
    plain = rebuild(spec, tmp_path / "plain.paw")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764417600")  # 2025-11-29T12:00:00Z
    stamped = rebuild(spec, tmp_path / "stamped.paw")
    with zipfile.ZipFile(stamped) as archive:
        assert {i.date_time for i in archive.infolist()} == {(2025, 11, 29, 12, 0, 0)}
        meta = json.loads(archive.read("meta.json"))
    assert meta["created_at"] == "2025-11-29T12:00:00Z"
    assert stamped.read_bytes() != plain.read_bytes()
    assert meta["program_id"] == read_bundle(plain).program_id  # the time is not content


def test_local_interpreter_and_f32(tmp_path: Path, tiny_dir: Path, base_dir: Path) -> None:
    spec = write_package(tmp_path / "pkg", recipe=_short_recipe('quantization = "F32"'))
    text = spec.read_text()
    text = text.replace('"hf.co/wgtpm-tests/tiny-qwen3"', f'"{tiny_dir}"')
    text = text.replace(
        'base_model = "hf.co/wgtpm-tests/tiny-qwen3-gguf/tiny-qwen3.gguf"',
        'base_model = "./base.gguf"\nrepo = "acme/tiny-gguf"',
    )
    spec.write_text(text)
    (tmp_path / "pkg" / "base.gguf").write_bytes((base_dir / "tiny-qwen3.gguf").read_bytes())
    out = build_program(spec, tmp_path / "f32.paw", MapResolver({}), name="fruit")
    program = validate_file(out)
    assert program.adapter.types == ("F32",)
    assert program.bundle.meta["compile_by_training"]["interpreter"] == {"dir": str(tiny_dir)}


def _short_recipe(extra: str) -> str:
    return f'[recipe]\nlora_init = "random"\nsteps = 2\nbatch_size = 2\nmicro_batch_size = 2\nlora_rank = 32\nmax_length = 128\ndevice = "cpu"\n{extra}\n'


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s.replace('"hf.co/wgtpm-tests/tiny-qwen3"', '"hf.co/acme/missing"'),
            "hf.co/acme/missing is not in the build list",
        ),
        (
            lambda s: s.replace(
                'base_model = "hf.co/wgtpm-tests/tiny-qwen3-gguf/tiny-qwen3.gguf"',
                'base_model = "./nowhere.gguf"',
            ),
            "no such file",
        ),
        (
            lambda s: s.replace(
                'base_model = "hf.co/wgtpm-tests/tiny-qwen3-gguf/tiny-qwen3.gguf"',
                'base_model = "./fruit.jsonl"',
            ),
            "not a GGUF file",
        ),
        (lambda s: s.split("[runtime]")[0], "is not Qwen3-0.6B"),
    ],
)
def test_build_errors_say_what_to_fix(
    tmp_path: Path, resolver: MapResolver, edit: Callable[[str], str], message: str
) -> None:
    spec = write_package(tmp_path / "pkg", recipe=_short_recipe(""))
    spec.write_text(edit(spec.read_text()))
    with pytest.raises(BuildError, match=re.escape(message)):
        build_program(spec, tmp_path / "x.paw", resolver, name="fruit")
    assert not (tmp_path / "x.paw").exists()


def test_bad_examples_file_names_the_line(tmp_path: Path, resolver: MapResolver) -> None:
    spec = write_package(tmp_path / "pkg", recipe=_short_recipe(""))
    bad = '{"input": "red", "output": "apple"}\n{"input": 3}\nnot json\n'
    (tmp_path / "pkg" / "fruit.jsonl").write_text(bad)
    with pytest.raises(ParseError) as info:
        build_program(spec, tmp_path / "x.paw", resolver, name="fruit")
    where = [(Path(e.pos.file).name, e.pos.line) for e in info.value.errors]
    assert where == [("fruit.jsonl", 2), ("fruit.jsonl", 3)]
