"""A module's tables after a real ``wgtpm get`` from the loopback Hugging Face Hub:
computed from the verified files and cached, or the release's own (h1-locked) and
checked against the index and the files; and ``wgtpm inspect`` of them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.servers.huggingface import HuggingFaceServer
from wgtpm import ChecksumMismatchError
from wgtpm.cache import Cache
from wgtpm.deps import ResolvedModule
from wgtpm.modload import open_resolver
from wgtpm.tensors import (
    TABLES_FILE,
    TensorFormatError,
    TensorTables,
    compute_table,
    dump_tables,
    parse_tables,
    read_tensor_bytes,
    tables_for,
)
from wgtpm.tensors._module import cached_table_path

MOD = "hf.co/acme/tiny-qwen3"
ROOT = Path(__file__).resolve().parents[2]


def _publish(hf: HuggingFaceServer, files: dict[str, bytes], tag: str = "v0.1.0") -> None:
    repo = hf.repo("acme", "tiny-qwen3")  # the same repository each time
    repo.commit(files)
    repo.tag(tag)


def _get(wgtpm, project: Path, version: str = "v0.1.0") -> ResolvedModule:  # type: ignore[no-untyped-def]
    r = wgtpm("get", f"{MOD}@{version}", cwd=project)
    assert r.code == 0, r.err
    with open_resolver(project) as res:
        return res.module(MOD)


def _tables(tmp_path: Path, files: dict[str, bytes]) -> TensorTables:
    out = {}
    for name in ("model.safetensors", "base.gguf"):
        p = tmp_path / name
        p.write_bytes(files[name])
        out[name] = compute_table(p, name)
    return TensorTables(out)


def test_tables_are_computed_from_the_verified_files_and_cached(
    wgtpm, project: Path, direct_hf: HuggingFaceServer, tiny_files: dict[str, bytes], tmp_path: Path
) -> None:
    _publish(direct_hf, tiny_files)
    module = _get(wgtpm, project)
    tables = tables_for(module)
    assert tables == _tables(tmp_path, tiny_files)
    sha = hashlib.sha256(tiny_files["model.safetensors"]).hexdigest()
    kept = cached_table_path(sha, Cache().root)
    assert (
        parse_tables(kept.read_bytes(), "kept").files["model.safetensors"]
        == tables.files["model.safetensors"]
    )
    assert tables_for(module) == tables  # from the cache now
    emb = tables.files["model.safetensors"].get("model.embed_tokens.weight")
    assert emb.dtype == "F32" and emb.shape[1] == 64
    data = read_tensor_bytes(module.dir / "model.safetensors", emb, module=MOD, version="v0.1.0")
    assert len(data) == emb.nbytes
    assert wgtpm("cache", "clean", cwd=project).code == 0
    assert not kept.exists()  # computed tables go with the cache


def test_a_copy_changed_after_verification_is_refused(
    wgtpm, project: Path, direct_hf: HuggingFaceServer, tiny_files: dict[str, bytes]
) -> None:
    _publish(direct_hf, tiny_files)
    module = _get(wgtpm, project)
    info = tables_for(module).files["model.safetensors"].get("model.norm.weight")
    blob = module.dir / "model.safetensors"
    os.chmod(blob, 0o644)
    with open(blob, "r+b") as f:
        f.seek(info.start + 3)
        b = f.read(1)
        f.seek(info.start + 3)
        f.write(bytes([b[0] ^ 0x40]))
    with pytest.raises(
        ChecksumMismatchError, match=r"tensor model\.norm\.weight of model\.safetensors"
    ):
        read_tensor_bytes(blob, info, module=MOD, version="v0.1.0", file="model.safetensors")
    sha = hashlib.sha256(tiny_files["model.safetensors"]).hexdigest()
    cached_table_path(sha, Cache().root).unlink()
    with pytest.raises(TensorFormatError) as e:
        tables_for(module)
    assert "\n" not in str(e.value) and "changed after it was verified" in str(e.value)
    assert str(e.value).startswith(f"{MOD}@v0.1.0: model.safetensors: ")


def test_the_release_tables_are_used_and_checked(
    wgtpm,
    project: Path,
    direct_hf: HuggingFaceServer,
    tiny_files: dict[str, bytes],
    tmp_path: Path,
) -> None:
    good = _tables(tmp_path, tiny_files)
    _publish(direct_hf, {**tiny_files, TABLES_FILE: dump_tables(good)})
    module = _get(wgtpm, project)
    assert tables_for(module, check=True) == good
    sha = hashlib.sha256(tiny_files["model.safetensors"]).hexdigest()
    assert not cached_table_path(sha, Cache().root).exists()  # nothing computed

    # v0.2.0: a table for another file than the release's
    t = good.files["model.safetensors"]
    wrong_file = TensorTables({**good.files, "model.safetensors": replace(t, sha256="0" * 64)})
    _publish(direct_hf, {TABLES_FILE: dump_tables(wrong_file)}, "v0.2.0")
    module = _get(wgtpm, project, "v0.2.0")
    with pytest.raises(TensorFormatError) as e:
        tables_for(module)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{MOD}@v0.2.0: {TABLES_FILE}: the table of model")

    # v0.3.0: the right file, but one tensor's hash is not what the file holds
    x = t.tensors[0]
    bad = replace(t, tensors=(replace(x, sha256="1" * 64), *t.tensors[1:]))
    _publish(
        direct_hf,
        {TABLES_FILE: dump_tables(TensorTables({**good.files, "model.safetensors": bad}))},
        "v0.3.0",
    )
    module = _get(wgtpm, project, "v0.3.0")
    with pytest.raises(TensorFormatError, match=f"tensor {x.name!r} of model.safetensors is not"):
        tables_for(module, check=True)
    loose = tables_for(module)  # unchecked: the read of that tensor is what refuses it
    with pytest.raises(ChecksumMismatchError):
        read_tensor_bytes(
            module.dir / "model.safetensors", loose.files["model.safetensors"].get(x.name)
        )


def test_inspect_a_file_and_a_module(
    wgtpm, project: Path, direct_hf: HuggingFaceServer, tiny_files: dict[str, bytes], tmp_path: Path
) -> None:
    _publish(direct_hf, tiny_files)
    _get(wgtpm, project)
    want = _tables(tmp_path, tiny_files)

    r = wgtpm("inspect", f"{MOD}/model.safetensors", "--json", cwd=project)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert (doc["module"], doc["version"], doc["file"]) == (MOD, "v0.1.0", "model.safetensors")
    assert doc["tensors"] == want.files["model.safetensors"].to_json()["tensors"]

    r = wgtpm("inspect", f"{MOD}/base.gguf", cwd=project)
    assert r.code == 0, r.err
    assert f"{MOD}@v0.1.0/base.gguf: gguf" in r.out
    assert 'general.architecture: "qwen3"' in r.out
    assert "output_norm.weight" in r.out

    r = wgtpm("inspect", MOD, "--json", cwd=project)
    assert r.code == 0, r.err
    files = {f["path"]: f for f in json.loads(r.out)["files"]}
    st = want.files["model.safetensors"]
    assert files["model.safetensors"]["tensors"] == len(st.tensors)
    assert files["model.safetensors"]["parameters"] == sum(x.numel for x in st.tensors)
    assert files["base.gguf"]["dtypes"] == {"F32": 1}

    r = wgtpm("inspect", MOD, cwd=project)
    assert r.code == 0 and r.out.startswith(f"{MOD}@v0.1.0: 2 weights files"), r.err

    r = wgtpm("inspect", f"{MOD}/modle.safetensors", cwd=project)
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1
    assert "has no weights file 'modle.safetensors'" in r.err

    local = tmp_path / "model.safetensors"
    r = wgtpm("inspect", str(local), "--json")
    assert r.code == 0 and json.loads(r.out)["sha256"] == st.sha256

    # the same command in a fresh interpreter loads no heavy library
    code = (
        "import json, sys; from wgtpm.cli import main; rc = main(sys.argv[1:]); "
        "heavy = ('numpy', 'torch', 'transformers', 'safetensors', 'gguf'); "
        "print(json.dumps([rc, sorted(m for m in heavy if m in sys.modules)]), file=sys.stderr)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in ([f"{MOD}/model.safetensors"], [MOD]):
        p = subprocess.run(
            [sys.executable, "-c", code, "inspect", *args],
            capture_output=True, text=True, cwd=project, env=env, check=False,
        )  # fmt: skip
        assert json.loads(p.stderr.strip().splitlines()[-1]) == [0, []], p.stderr


def test_a_vendored_module_without_the_cache(
    wgtpm,
    project: Path,
    direct_hf: HuggingFaceServer,
    tiny_files: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _publish(direct_hf, tiny_files)
    _get(wgtpm, project)
    assert wgtpm("vendor", cwd=project).code == 0
    assert wgtpm("cache", "clean", cwd=project).code == 0
    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    monkeypatch.setenv("WGTPROXY", "off")
    r = wgtpm("inspect", MOD, "--json", cwd=project)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["version"] == "v0.1.0"
    assert {f["path"] for f in doc["files"]} == {"model.safetensors", "base.gguf"}
    with open_resolver(project) as res:
        module = res.module(MOD)
    assert tables_for(module) == _tables(tmp_path, tiny_files)
