"""What ``wgtpm.adapter`` refuses, in one line each: adapters it cannot pin or load safely.

A :class:`~wgtpm.deps.MapResolver` stands for the build list (the module
directories are real files; the loopback end-to-end tests are in
test_pinned_base.py).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import wgtpm
from tests.adapters.conftest import V1
from tests.paw.conftest import INTERPRETER_MODULE, Built
from wgtpm._fs import sha256_file
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.index import IndexEntry, build_index

TONE = "example.com/acme/tone"


def _tone(tmp_path: Path, peft_dir: Path, wgt_mod: str | None) -> Path:
    module = tmp_path / "tone-module"
    shutil.copytree(peft_dir, module / "tone")
    if wgt_mod is not None:
        (module / "wgt.mod").write_text(wgt_mod)
    return module


def _vendored(tiny_dir: Path, root: Path, version: str) -> Path:
    """The tiny Qwen3 as a vendored module directory: its files and its own wgt.index.json."""
    directory = root / f"tiny@{version}"
    if not directory.is_dir():
        shutil.copytree(tiny_dir, directory)
        entries = [
            IndexEntry(p.name, p.stat().st_size, sha256_file(p))
            for p in sorted(directory.iterdir())
        ]
        index = build_index(INTERPRETER_MODULE, version, entries, time="2026-03-01T00:00:00Z")
        (directory / "wgt.index.json").write_bytes(index.to_json())
    return directory


def _resolver(tiny_dir: Path, module: Path, version: str = V1) -> MapResolver:
    interpreter = _vendored(tiny_dir, module.parent, version)
    return MapResolver(
        {
            INTERPRETER_MODULE: ResolvedModule(INTERPRETER_MODULE, version, interpreter),
            TONE: ResolvedModule(TONE, "v0.1.0", module),
        }
    )


def _edit_config(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def edit(tone: Path) -> None:
        path = tone / "adapter_config.json"
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    return edit


REQUIRES = f"module {TONE}\nwgt 0.1\n\nrequire {INTERPRETER_MODULE} {V1}\n"
TWO = (
    f"module {TONE}\nwgt 0.1\n\nrequire (\n\t{INTERPRETER_MODULE} {V1}\n\texample.com/x v1.0.0\n)\n"
)

CASES = [
    # (what, wgt.mod, edit of tone/, the one line expected)
    (
        "pickle only",
        REQUIRES,
        lambda d: (d / "adapter_model.safetensors").unlink(),
        "never adapter_model.bin",
    ),
    (
        "not LoRA",
        REQUIRES,
        _edit_config(lambda c: c.update(peft_type="IA3")),
        "peft_type 'IA3', want 'LORA'",
    ),
    ("bad rank", REQUIRES, _edit_config(lambda c: c.update(r=0)), "r 0 is not a positive integer"),
    (
        "not JSON",
        REQUIRES,
        lambda d: (d / "adapter_config.json").write_text("{"),
        "is not readable JSON",
    ),
    ("no wgt.mod", None, lambda d: None, "has no wgt.mod to name the adapter's base"),
    (
        "base not named",
        TWO,
        _edit_config(lambda c: c.update(base_model_name_or_path="someone/else")),
        "cannot tell its base",
    ),
]


@pytest.mark.parametrize(("what", "wgt_mod", "edit", "want"), CASES, ids=[c[0] for c in CASES])
def test_refused_in_one_line(
    what: str,
    wgt_mod: str | None,
    edit: Callable[[Path], None],
    want: str,
    tiny_dir: Path,
    peft_dir: Path,
    tmp_path: Path,
) -> None:
    module = _tone(tmp_path, peft_dir, wgt_mod)
    edit(module / "tone")
    with pytest.raises(wgtpm.UsageError) as caught:
        wgtpm.adapter(f"{TONE}/tone", resolver=_resolver(tiny_dir, module))
    message = str(caught.value)
    assert want in message and f"{TONE}/tone" in message and "\n" not in message


def test_the_named_base_is_chosen_among_several_requirements(
    tiny_dir: Path, peft_dir: Path, tmp_path: Path
) -> None:
    module = _tone(tmp_path, peft_dir, TWO)  # the config names wgtpm-tests/tiny-qwen3
    adapter = wgtpm.adapter(f"{TONE}/tone", resolver=_resolver(tiny_dir, module))
    assert (adapter.base.module, adapter.base.version) == (INTERPRETER_MODULE, V1)


def test_another_selected_version_is_refused(
    tiny_dir: Path, peft_dir: Path, tmp_path: Path
) -> None:
    module = _tone(tmp_path, peft_dir, REQUIRES)
    resolver = _resolver(tiny_dir, module, version="v0.0.0-20260309000000-000000000000")
    with pytest.raises(wgtpm.ResolveError, match=f"pinned to {INTERPRETER_MODULE}@{V1}"):
        wgtpm.adapter(f"{TONE}/tone", resolver=resolver)


def test_a_program_without_a_recorded_interpreter_has_no_pinned_base(
    fruit: Built, tmp_path: Path
) -> None:
    from wgtpm.paw.bundle import read_bundle, write_bundle

    bundle = read_bundle(fruit.paw)
    meta = json.loads(bundle.members["meta.json"])
    meta["compile_by_training"]["interpreter"] = {"dir": "/somewhere/tiny-qwen3"}
    members = {**bundle.members, "meta.json": json.dumps(meta).encode()}
    local = tmp_path / "local.paw"
    write_bundle(local, members, epoch=315532800)
    with pytest.raises(wgtpm.UsageError, match="records no interpreter module@version"):
        wgtpm.adapter(str(local), resolver=MapResolver({}))


def test_not_an_adapter(tiny_dir: Path, peft_dir: Path, tmp_path: Path) -> None:
    module = _tone(tmp_path, peft_dir, REQUIRES)
    with pytest.raises(wgtpm.UsageError, match="has no adapter 'nope'"):
        wgtpm.adapter(f"{TONE}/nope", resolver=_resolver(tiny_dir, module))
    with pytest.raises(wgtpm.UsageError, match="is not a path inside module"):
        wgtpm.adapter(f"{TONE}/../tone-module/tone", resolver=_resolver(tiny_dir, module))
    with pytest.raises(wgtpm.UsageError, match="name a peft adapter as MODULE/DIR"):
        wgtpm.adapter(str(module / "tone"), resolver=_resolver(tiny_dir, module))
