"""Programs installed by wgtpm, as the real ``programasweights`` SDK sees them (offline)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import programasweights as paw
import pytest
from programasweights import cache as paw_cache
from programasweights.local_program import import_local_program

from tests.paw.conftest import BASE_FILE, BASE_MODULE, Built
from wgtpm._errors import UsageError
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.index import IndexEntry, build_index
from wgtpm.paw.bundle import BundleError, read_bundle, write_bundle
from wgtpm.paw.runtime import QWEN3_RUNTIME, qwen3_runtime
from wgtpm.paw.sdk import install_artifact, install_program


@pytest.fixture
def paw_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "paw-cache"
    monkeypatch.setenv("PAW_CACHE_DIR", str(root))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")  # nothing listens there
    return root


def test_cli_install_makes_the_program_offline_ready(
    fruit: Built, base_dir: Path, paw_cache_dir: Path, wgtpm: object
) -> None:
    pid = read_bundle(fruit.paw).program_id
    assert not paw.is_offline_ready(pid)
    result = wgtpm("paw", "install", str(fruit.paw), "--base-model", str(base_dir / BASE_FILE))  # type: ignore[operator]
    assert result.code == 0, result.err
    assert f"installed program {pid}" in result.out
    assert paw.is_offline_ready(pid)
    prepared = paw.prepare_program(pid, offline=True)
    assert prepared["offline_ready"] and prepared["runtime_id"] == "tiny-qwen3-test"
    assert prepared["base_model_path"] == str(paw_cache_dir / "base_models" / BASE_FILE)
    program_dir = paw_cache_dir / "programs" / pid
    assert sorted(p.name for p in program_dir.iterdir()) == [
        "adapter.gguf",
        "meta.json",
        "prompt_template.txt",
        "pseudo_program.txt",
    ]
    assert (paw_cache_dir / ".locks" / "programs" / f"{pid}.lock").is_file()
    assert not any((paw_cache_dir / "programs" / ".staging").iterdir())
    again = wgtpm("paw", "install", str(fruit.paw))  # type: ignore[operator]
    assert again.code == 0 and f"already installed program {pid}" in again.out


def test_without_the_base_model_the_sdk_is_not_ready(
    fruit: Built, paw_cache_dir: Path, wgtpm: object
) -> None:
    pid = read_bundle(fruit.paw).program_id
    result = wgtpm("paw", "install", str(fruit.paw))  # type: ignore[operator]
    assert result.code == 0
    assert "base model tiny-qwen3.gguf is not in the SDK cache" in result.err
    assert paw_cache.has_valid_program_assets(pid)
    assert not paw.is_offline_ready(pid)
    with pytest.raises(RuntimeError, match=re.escape("not cached")):
        paw.prepare_program(pid, offline=True)


def test_install_from_the_build_list(
    fruit: Built, resolver: MapResolver, paw_cache_dir: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    release.mkdir()
    (release / "fruit.paw").write_bytes(fruit.paw.read_bytes())
    data = fruit.paw.read_bytes()
    entry = IndexEntry("fruit.paw", len(data), hashlib.sha256(data).hexdigest(), "fruit", "paw")
    (release / "wgt.index.json").write_bytes(
        build_index(
            "example.com/acme/programs", "v0.1.0", [entry], time="2026-12-01T00:00:00Z"
        ).to_json()
    )
    mods = {p: resolver.module(p) for p in resolver.modules()}
    mods["example.com/acme/programs"] = ResolvedModule(
        "example.com/acme/programs", "v0.1.0", release
    )
    installed = install_artifact("example.com/acme/programs/fruit", MapResolver(mods))
    assert installed.base_model == paw_cache_dir / "base_models" / BASE_FILE
    assert paw.is_offline_ready(installed.program_id)
    with pytest.raises(
        UsageError, match=re.escape("has no PAW program artifact 'triage'; it has fruit.paw")
    ):
        install_artifact("example.com/acme/programs/triage", MapResolver(mods))


def test_a_changed_copy_in_the_cache_is_replaced(
    fruit: Built, base_dir: Path, paw_cache_dir: Path
) -> None:
    installed = install_program(fruit.paw, base_model=base_dir / BASE_FILE)
    adapter = installed.program_dir / "adapter.gguf"
    adapter.write_bytes(b"GGUF" + b"\0" * 4096)
    (installed.program_dir / "stray.txt").write_text("x")
    again = install_program(fruit.paw)
    assert again.changed
    assert adapter.read_bytes() == read_bundle(fruit.paw).adapter
    assert not (installed.program_dir / "stray.txt").exists()
    assert paw.is_offline_ready(installed.program_id)


def test_a_wrong_base_model_is_refused(fruit: Built, paw_cache_dir: Path, tmp_path: Path) -> None:
    wrong = tmp_path / BASE_FILE
    wrong.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(UsageError, match=re.escape("not the base model tiny-qwen3.gguf")):
        install_program(fruit.paw, base_model=wrong)
    assert not (paw_cache_dir / "base_models" / BASE_FILE).exists()


def test_an_invalid_bundle_is_not_installed(
    fruit: Built, paw_cache_dir: Path, tmp_path: Path
) -> None:
    bundle = read_bundle(fruit.paw)
    broken = tmp_path / "broken.paw"
    write_bundle(broken, {**bundle.members, "prompt_template.txt": b"no placeholder"})
    with pytest.raises(BundleError, match=re.escape("want exactly one")):
        install_program(broken)
    assert not (paw_cache_dir / "programs" / bundle.program_id).exists()


def test_the_sdk_accepts_the_bundle_itself(fruit: Built, paw_cache_dir: Path) -> None:
    directory = import_local_program(fruit.paw)  # the SDK's own archive and asset checks
    assert (
        json.loads((directory / "meta.json").read_text())["program_id"]
        == read_bundle(fruit.paw).program_id
    )


def test_qwen3_runtime_is_the_sdks() -> None:
    sdk = paw_cache.LEGACY_RUNTIME_MANIFESTS["qwen3-0.6b-q6_k"]
    assert {key: QWEN3_RUNTIME[key] for key in sdk} == sdk
    normalized = paw_cache._normalize_runtime_manifest(qwen3_runtime(), require_local_model=True)
    assert normalized is not None and normalized["local_sdk"] == sdk["local_sdk"]


def test_module_for_the_base_model_is_recorded(fruit: Built) -> None:
    recorded = read_bundle(fruit.paw).meta["compile_by_training"]["base_model"]
    assert recorded == {
        "module": BASE_MODULE,
        "version": "v0.0.0-20260301000000-000000000000",
        "file": BASE_FILE,
    }
