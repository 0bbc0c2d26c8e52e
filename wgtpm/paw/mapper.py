"""The mapper stage of compile-by-training: the PAW compiler's pseudo-program and LoRA.

``POST {PAW_API_URL}/api/v1/compile`` with ``{"spec", "compiler", "public":
true, "ephemeral": false}`` (``X-API-Key: $PAW_API_KEY``) answers a program
ID (20 characters), the generated ``pseudo_program``, the compiler snapshot
and the pseudo-program strategy. The mapper's peft adapter
(``adapter_config.json``, ``adapter_model.safetensors``) is then fetched from
``{PAW_API_URL}/api/v1/programs/ID/asset/FILE``, falling back to
``{PAW_HF_ASSET_URL}/ID/FILE`` (Hugging Face), both polled every
``poll_interval`` seconds until ``asset_timeout`` (the API answers 202 while
the adapter is being made). Files are written through ``.part`` files.

Everything is cached under ``cache_dir``: the answer by the sha256 of the
request (``mapper/requests/<sha256>.json``, with the assets' sha256) and the
assets under ``mapper/<program_id>/``, as compile.py lays them out. A
rebuild finds both and makes no request; an asset whose bytes no longer
match the recorded sha256 is fetched again.

The adapter must have the recipe's rank, alpha and target modules; it
initialises the LoRA in place of a random one (:func:`load_mapper_adapter`
reads only ``r``, ``lora_alpha``, ``target_modules`` and ``lora_dropout`` of
its config, and its tensors from safetensors; nothing is unpickled).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import BuildError
from .._fs import canonical_json, sha256_file, write_atomic
from .._report import SILENT, Reporter
from .spec import Recipe

__all__ = [
    "ASSETS",
    "DEFAULT_API_URL",
    "DEFAULT_HF_ASSET_URL",
    "Mapper",
    "compile_mapper",
    "load_mapper_adapter",
    "mapper_preflight",
]

DEFAULT_API_URL = "https://programasweights.com"
DEFAULT_HF_ASSET_URL = "https://huggingface.co/programasweights/paw-programs/resolve/main"
ASSETS = ("adapter_config.json", "adapter_model.safetensors")
_UNSUPPORTED = ("use_dora", "use_rslora", "modules_to_save", "rank_pattern", "alpha_pattern")


@dataclass(frozen=True)
class Mapper:
    """What the PAW compiler gave: its program, pseudo-program, and adapter directory."""

    program_id: str
    pseudo_program: str
    strategy: str
    compiler_snapshot: str
    adapter_dir: Path
    assets_sha256: Mapping[str, str]

    def provenance(self) -> dict[str, Any]:
        return {
            "program_id": self.program_id,
            "compiler_snapshot": self.compiler_snapshot,
            "pseudo_program_strategy": self.strategy,
            "assets_sha256": dict(self.assets_sha256),
        }


def _api() -> tuple[str, str | None]:
    return (os.environ.get("PAW_API_URL") or DEFAULT_API_URL).rstrip("/"), os.environ.get(
        "PAW_API_KEY"
    )


def _request_path(cache_dir: Path, spec: str, compiler: str) -> Path:
    key = hashlib.sha256(canonical_json({"compiler": compiler, "spec": spec})).hexdigest()
    return cache_dir / "mapper" / "requests" / f"{key}.json"


def _cached(cache_dir: Path, spec: str, compiler: str) -> Mapper | None:
    try:
        record = json.loads(_request_path(cache_dir, spec, compiler).read_text(encoding="utf-8"))
        directory = cache_dir / "mapper" / record["program_id"]
        sums = record["assets_sha256"]
        if all(sha256_file(directory / name) == sums[name] for name in ASSETS):
            return Mapper(
                record["program_id"],
                record["pseudo_program"],
                record["pseudo_program_strategy"],
                record["compiler_snapshot"],
                directory,
                {name: sums[name] for name in ASSETS},
            )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def mapper_preflight(spec: str, recipe: Recipe, cache_dir: Path) -> None:
    """Before any work: a mapper build needs ``$PAW_API_KEY`` unless its mapper is cached."""
    if recipe.lora_init != "mapper" or os.environ.get("PAW_API_KEY"):
        return
    if _cached(cache_dir, spec, recipe.base_compiler) is None:
        raise BuildError(
            'lora_init = "mapper" starts the LoRA from the PAW compiler\'s adapter, which needs '
            "PAW_API_KEY (none is set and no mapper for this spec is cached); set PAW_API_KEY, "
            'or train from a random LoRA with lora_init = "random" (--lora-init random)'
        )


def compile_mapper(
    spec: str,
    recipe: Recipe,
    cache_dir: Path,
    *,
    asset_timeout: float = 180.0,
    poll_interval: float = 3.0,
    reporter: Reporter = SILENT,
) -> Mapper:
    """The mapper for ``spec``, from the cache or the PAW API (see the module docstring)."""
    cached = _cached(cache_dir, spec, recipe.base_compiler)
    if cached is not None:
        reporter.notice(f"mapper {cached.program_id}: cached")
        return cached
    import httpx

    api, key = _api()
    headers = {"User-Agent": "wgtpm", **({"X-API-Key": key} if key else {})}
    reporter.notice(f"compiling the mapper with {recipe.base_compiler} at {api}")
    try:
        response = httpx.post(
            f"{api}/api/v1/compile",
            json={
                "spec": spec,
                "compiler": recipe.base_compiler,
                "public": True,
                "ephemeral": False,
            },
            headers=headers,
            timeout=300.0,
        )
    except httpx.HTTPError as exc:
        raise BuildError(f"PAW compiler at {api}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise BuildError(
            f"PAW compiler at {api} answered HTTP {response.status_code}: {response.text[:200]!r}; "
            "check PAW_API_KEY and base_compiler"
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    pid = body.get("program_id")
    if not isinstance(pid, str) or len(pid) != 20 or not pid.isalnum():
        raise BuildError(f"the PAW compiler returned an invalid program ID: {pid!r}")
    pseudo = body.get("pseudo_program")
    if not isinstance(pseudo, str):
        raise BuildError("the PAW compiler returned no pseudo-program")
    directory = cache_dir / "mapper" / pid
    directory.mkdir(parents=True, exist_ok=True)
    sums = {
        name: _download(api, key, pid, name, directory, asset_timeout, poll_interval)
        for name in ASSETS
    }
    snapshot = body.get("compiler_snapshot") or recipe.base_compiler
    strategy = body.get("pseudo_program_strategy") or "vllm_generate"
    record = {
        "program_id": pid,
        "pseudo_program": pseudo,
        "compiler_snapshot": str(snapshot),
        "pseudo_program_strategy": str(strategy),
        "assets_sha256": sums,
    }
    path = _request_path(cache_dir, spec, recipe.base_compiler)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, canonical_json(record, pretty=True))
    return Mapper(pid, pseudo, str(strategy), str(snapshot), directory, sums)


def _download(
    api: str,
    key: str | None,
    pid: str,
    name: str,
    directory: Path,
    timeout: float,
    interval: float,
) -> str:
    """Fetch one asset into ``directory`` (API first, then Hugging Face); its sha256."""
    import httpx

    hf = (os.environ.get("PAW_HF_ASSET_URL") or DEFAULT_HF_ASSET_URL).rstrip("/")
    urls = (f"{api}/api/v1/programs/{pid}/asset/{name}", f"{hf}/{pid}/{name}")
    output = directory / name
    deadline = time.monotonic() + timeout
    last: dict[str, str] = {}
    while True:
        for url in urls:
            headers = {"X-API-Key": key} if key and url == urls[0] else {}  # never to HF
            try:
                with httpx.stream(
                    "GET", url, headers=headers, follow_redirects=True, timeout=120.0
                ) as response:
                    last[url] = str(response.status_code)
                    if response.status_code != 200:
                        continue
                    part = output.with_name(output.name + ".part")
                    digest = hashlib.sha256()
                    with part.open("wb") as f:
                        for chunk in response.iter_bytes(1 << 20):
                            digest.update(chunk)
                            f.write(chunk)
                    if part.stat().st_size == 0:
                        part.unlink()
                        raise BuildError(f"mapper {pid}: {url} gave an empty {name}")
                    os.replace(part, output)
                    return digest.hexdigest()
            except httpx.HTTPError as exc:
                last[url] = type(exc).__name__
        if time.monotonic() + interval > deadline:
            break
        time.sleep(interval)
    raise BuildError(
        f"mapper {pid}: timed out after {timeout:g}s waiting for {name} "
        f"({', '.join(f'{u}: {s}' for u, s in last.items())}); raise --asset-timeout or retry later"
    )


def load_mapper_adapter(directory: Path, recipe: Recipe) -> tuple[float, dict[str, Any]]:
    """(lora_dropout, peft state dict) of the mapper adapter, checked against ``recipe``."""
    try:
        config = json.loads((directory / "adapter_config.json").read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise BuildError(f"mapper adapter {directory}: adapter_config.json: {exc}") from exc
    rank = config.get("r", 0)
    alpha = config.get("lora_alpha", 0)
    modules = config.get("target_modules") or []
    try:
        rank, alpha, modules = int(rank), float(alpha), set(modules)
    except (TypeError, ValueError) as exc:
        raise BuildError(f"mapper adapter {directory}: adapter_config.json: {exc}") from exc
    if rank != recipe.lora_rank or alpha != recipe.lora_alpha:
        raise BuildError(
            f"mapper initialization has rank={rank}, alpha={alpha}; use those values "
            '(lora_rank, lora_alpha) or lora_init = "random" (--lora-init random)'
        )
    if modules != set(recipe.target_modules):
        raise BuildError(
            f"mapper initialization has different target modules ({sorted(modules)}); use them "
            'or lora_init = "random" (--lora-init random)'
        )
    odd = [k for k in _UNSUPPORTED if config.get(k)]
    if odd:
        raise BuildError(f"mapper adapter {directory}: unsupported peft options {odd}")
    dropout = config.get("lora_dropout", 0.0)
    if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout < 1:
        raise BuildError(f"mapper adapter {directory}: lora_dropout {dropout!r} is not in [0, 1)")
    from safetensors.torch import load_file

    try:
        state = load_file(str(directory / "adapter_model.safetensors"))
    except (OSError, ValueError, RuntimeError) as exc:
        raise BuildError(f"mapper adapter {directory}: adapter_model.safetensors: {exc}") from exc
    return float(dropout), dict(state)
