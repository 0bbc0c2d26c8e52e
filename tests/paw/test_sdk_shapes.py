"""Bundles in every shape the real PAW SDK accepts install, and the SDK agrees on what it got.

The SDK resolves a program's runtime in order: the manifest embedded in
meta.json, the cache's ``runtimes/``, ``GET /api/v1/models/runtimes/ID`` on
the hub, and its built-in table by interpreter. It accepts a base model
without ``size_bytes``/``sha256`` (it fills in the values it pins).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from programasweights import cache as paw_cache

from tests.paw.synth import TEMPLATE, lora_pairs, tiny_runtime
from tests.servers import CdnServer
from tests.servers.paw import PawServer
from wgtpm.paw.bundle import BundleError, write_bundle
from wgtpm.paw.gguf_adapter import adapter_bytes
from wgtpm.paw.runtime import QWEN3_RUNTIME, qwen3_runtime
from wgtpm.paw.sdk import install_program
from wgtpm.paw.shape import QWEN3_0_6B
from wgtpm.paw.validate import validate_file

PID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def sdk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "paw-cache"
    monkeypatch.setenv("PAW_CACHE_DIR", str(root))
    monkeypatch.delenv("PAW_OFFLINE", raising=False)
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")  # nothing listens there
    return root


def _qwen_adapter() -> bytes:
    return adapter_bytes(lora_pairs(QWEN3_0_6B, layers=1), alpha=16.0, quantization="F32")


def _bundle(tmp_path: Path, meta: dict[str, Any], adapter: bytes | None = None) -> Path:
    path = tmp_path / "hub.paw"
    write_bundle(
        path,
        {
            "meta.json": json.dumps(meta).encode(),
            "pseudo_program.txt": b"Map a colour to a fruit.",
            "adapter.gguf": adapter if adapter is not None else _qwen_adapter(),
            "prompt_template.txt": TEMPLATE.encode(),
        },
    )
    return path


def _hub_meta(**extra: Any) -> dict[str, Any]:
    return {
        "program_id": PID,
        "spec": "Map a colour to a fruit.",
        "interpreter": "Qwen/Qwen3-0.6B",
        "compiler_snapshot": "paw-4b-qwen3-0.6b-20260501",
        **extra,
    }


def _sdk_agrees(root: Path, pid: str) -> dict[str, Any]:
    """The SDK's own checks of the installed program; returns its runtime manifest."""
    assert paw_cache.has_valid_program_assets(pid)
    meta = paw_cache.load_cached_program_meta(pid)
    assert meta is not None
    runtime = paw_cache.get_offline_runtime_manifest(meta)
    assert runtime is not None
    return runtime


def test_no_embedded_runtime_resolves_by_runtime_id_and_interpreter(
    tmp_path: Path, sdk_cache: Path
) -> None:
    for meta in (_hub_meta(runtime_id="qwen3-0.6b-q6_k"), _hub_meta()):
        path = _bundle(tmp_path, meta)
        program = validate_file(path)
        assert program.runtime_source == "interpreter" and program.shape == QWEN3_0_6B
        installed = install_program(path)
        runtime = _sdk_agrees(sdk_cache, installed.program_id)
        assert runtime == program.runtime == paw_cache.LEGACY_RUNTIME_MANIFESTS["qwen3-0.6b-q6_k"]
        hydrated = json.loads((installed.program_dir / "meta.json").read_text())
        assert hydrated["runtime"] == runtime and hydrated["runtime_id"] == "qwen3-0.6b-q6_k"
        assert (installed.program_dir / "pseudo_program.txt").is_file()


def test_base_model_without_size_or_sha256(tmp_path: Path, sdk_cache: Path) -> None:
    runtime = qwen3_runtime()
    del runtime["local_sdk"]["base_model"]["size_bytes"]
    del runtime["local_sdk"]["base_model"]["sha256"]
    del runtime["base_inference"]
    path = _bundle(tmp_path, _hub_meta(runtime_id="qwen3-0.6b-q6_k", runtime=runtime))
    installed = install_program(path)
    sdk_runtime = _sdk_agrees(sdk_cache, installed.program_id)
    assert sdk_runtime["local_sdk"]["base_model"] == QWEN3_RUNTIME["local_sdk"]["base_model"]
    assert sdk_runtime == validate_file(path).runtime


def test_custom_runtime_without_size_or_sha256(tmp_path: Path, sdk_cache: Path) -> None:
    from tests.paw.synth import members

    m = members()
    meta = json.loads(m["meta.json"])
    del meta["runtime"]["local_sdk"]["base_model"]["size_bytes"]
    del meta["runtime"]["local_sdk"]["base_model"]["sha256"]
    meta["compile_by_training"] = {
        "interpreter_shape": meta["compile_by_training"]["interpreter_shape"]
    }
    path = tmp_path / "custom.paw"
    write_bundle(path, {**m, "meta.json": json.dumps(meta).encode()})
    installed = install_program(path)
    assert _sdk_agrees(sdk_cache, installed.program_id) == meta["runtime"]
    base = tmp_path / "tiny.gguf"
    base.write_bytes(b"GGUF" + b"\0" * 64)
    again = install_program(path, base_model=base)
    assert again.base_model == sdk_cache / "base_models" / "tiny.gguf"
    assert paw_cache.get_cached_base_model_path(meta["runtime"]) == again.base_model


def test_runtime_from_the_cache_then_the_hub(
    tmp_path: Path, sdk_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.paw.synth import members

    m = members()
    meta = json.loads(m["meta.json"])
    runtime = meta.pop("runtime")
    meta["compile_by_training"] = {
        "interpreter_shape": meta["compile_by_training"]["interpreter_shape"]
    }
    path = tmp_path / "byid.paw"
    write_bundle(path, {**m, "meta.json": json.dumps(meta).encode()})
    with pytest.raises(BundleError, match="no runtime manifest serves this program"):
        install_program(path)
    with CdnServer() as cdn, PawServer(cdn) as hub:
        hub.runtimes["tiny-test"] = runtime
        monkeypatch.setenv("PAW_API_URL", hub.url)
        installed = install_program(path)
        assert [s.path for s in hub.log if "runtimes" in s.path] == [
            "/api/v1/models/runtimes/tiny-test"
        ]
    saved = json.loads((sdk_cache / "runtimes" / "tiny-test.v1.json").read_text())
    assert saved == runtime == _sdk_agrees(sdk_cache, installed.program_id)
    # Offline now: the cached manifest serves, as it does for the SDK.
    monkeypatch.setenv("PAW_OFFLINE", "1")
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    assert paw_cache.get_cached_runtime_manifest("tiny-test") == runtime
    program = validate_file(path, cached=lambda rid, v: saved if rid == "tiny-test" else None)
    assert program.runtime_source == "cached"


BAD: list[tuple[str, Any]] = [
    ("adapter_format", "safetensors"),
    ("manifest_version", 7),
    ("local_sdk", "yes"),
]


@pytest.mark.parametrize(("key", "value"), BAD)
def test_a_bundle_the_sdk_refuses_is_refused(
    tmp_path: Path, sdk_cache: Path, key: str, value: Any
) -> None:
    runtime = copy.deepcopy(tiny_runtime())
    runtime[key] = value
    from tests.paw.synth import members

    m = members(runtime=runtime)
    extracted = tmp_path / "extracted"
    extracted.mkdir()
    for name, data in m.items():
        (extracted / name).write_bytes(data)
    pid = json.loads(m["meta.json"])["program_id"]
    assert not paw_cache.validate_program_assets_dir(extracted, pid)
    path = tmp_path / "bad.paw"
    write_bundle(path, m)
    with pytest.raises(BundleError):
        install_program(path)


def test_get_paw_install_of_a_hub_program(
    tmp_path: Path, sdk_cache: Path, monkeypatch: pytest.MonkeyPatch, project: Path, wgtpm: Any
) -> None:
    """A hub program (runtime_id only, no embedded runtime) downloads, installs and is runnable."""
    meta = _hub_meta(runtime_id="qwen3-0.6b-q6_k")
    bundle = _bundle(tmp_path, meta).read_bytes()
    with CdnServer() as cdn, PawServer(cdn) as hub:
        hub.publish("fruit", slug="acme/fruit", pending=0, bundle=bundle)
        hub.programs[PID] = hub.programs.pop(next(iter(hub.programs)))
        hub.programs[PID].id = PID
        hub.slugs["acme/fruit"] = [PID]
        monkeypatch.setenv("WGTPROXY", "direct")
        monkeypatch.setenv("PAW_API_URL", hub.url)
        r = wgtpm("get", "--paw-install", "programasweights.com/acme/fruit", cwd=project)
    assert r.code == 0, r.err
    assert f"as PAW program {PID}" in r.err
    runtime = _sdk_agrees(sdk_cache, PID)
    assert runtime == paw_cache.LEGACY_RUNTIME_MANIFESTS["qwen3-0.6b-q6_k"]
