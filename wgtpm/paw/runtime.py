"""Runtime manifests: which base model and prompt contract the PAW SDK runs a program on.

A program's ``meta.json`` usually embeds its runtime manifest under
``runtime``; the SDK (``programasweights``) reads it to find the base-model
GGUF in ``base_models/`` and to know how the prompt template is filled in.
When it is missing (as in programs from the PAW hub), the SDK resolves it by
``runtime_id`` from its cache's ``runtimes/`` or the hub's
``/api/v1/models/runtimes/ID``, or by ``interpreter`` from its built-in table
(:func:`resolve_runtime` follows that order). The SDK pins the manifests it
knows by ``runtime_id`` (here ``qwen3-0.6b-q6_k``): a manifest naming one
must agree with the SDK's copy wherever it says something, and the SDK fills
in what it leaves out (the base model's size and sha256, for one;
:func:`normalize_runtime`). Any other ``runtime_id`` is taken as written,
which is how programs for other Qwen3 interpreters (and the tiny models of
the tests) are described.

The manifest of the SDK's Qwen3-0.6B runtime, as :data:`QWEN3_RUNTIME`::

    {"runtime_id": "qwen3-0.6b-q6_k", "manifest_version": 1,
     "interpreter": "Qwen/Qwen3-0.6B", "adapter_format": "gguf_lora",
     "prompt_template": {"format": "rendered_text", "placeholder": "{INPUT_PLACEHOLDER}"},
     "program_assets": {"adapter_filename": "adapter.gguf", ...},
     "local_sdk": {"supported": true, "n_ctx": 2048, "base_model": {
         "provider": "huggingface", "repo": "programasweights/Qwen3-0.6B-GGUF-Q6_K",
         "file": "qwen3-0.6b-q6_k.gguf", "size_bytes": 622733120,
         "sha256": "9a16ed5c…ae33c", "url": "https://huggingface.co/…"}},
     "base_inference": {"contract_version": 1, "format": "rendered_text", ...}, ...}
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from .shape import QWEN3_0_6B, InterpreterShape

__all__ = [
    "INPUT_PLACEHOLDER",
    "INTERPRETER_RUNTIMES",
    "QWEN3_RUNTIME",
    "QWEN3_RUNTIME_ID",
    "BaseModelFile",
    "ResolvedRuntime",
    "RuntimeLookup",
    "base_model_file",
    "custom_runtime",
    "known_shape",
    "normalize_runtime",
    "qwen3_runtime",
    "resolve_runtime",
    "runtime_for_program",
    "runtime_problems",
]

INPUT_PLACEHOLDER = "{INPUT_PLACEHOLDER}"
QWEN3_RUNTIME_ID = "qwen3-0.6b-q6_k"
RUNTIME_MANIFEST_VERSION = 1

_RUNTIME_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}\Z")

_PROMPT_CONTRACT = {"format": "rendered_text", "placeholder": INPUT_PLACEHOLDER}
_PROGRAM_ASSETS = {
    "adapter_filename": "adapter.gguf",
    "prefix_cache_required": False,
    "prefix_cache_filename": None,
    "prefix_tokens_filename": None,
}

QWEN3_RUNTIME: Mapping[str, Any] = {
    "runtime_id": QWEN3_RUNTIME_ID,
    "manifest_version": RUNTIME_MANIFEST_VERSION,
    "display_name": "Qwen3 0.6B (Q6_K)",
    "interpreter": "Qwen/Qwen3-0.6B",
    "adapter_format": "gguf_lora",
    "prompt_template": _PROMPT_CONTRACT,
    "program_assets": _PROGRAM_ASSETS,
    "base_inference": {
        "contract_version": 1,
        "format": "rendered_text",
        "placeholder": INPUT_PLACEHOLDER,
        # Qwen3's chat template for one user message, generation prompt on, thinking off.
        "template": (
            "<|im_start|>user\n{INPUT_PLACEHOLDER}<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ),
    },
    "local_sdk": {
        "supported": True,
        "base_model": {
            "provider": "huggingface",
            "repo": "programasweights/Qwen3-0.6B-GGUF-Q6_K",
            "file": "qwen3-0.6b-q6_k.gguf",
            "url": "https://huggingface.co/programasweights/Qwen3-0.6B-GGUF-Q6_K/resolve/main/qwen3-0.6b-q6_k.gguf",
            "size_bytes": 622733120,
            "sha256": "9a16ed5cacba959e63b62e2b6840c3eca2b51c3c3e51d31367ef8e4aafeae33c",
        },
        "n_ctx": 2048,
    },
    "js_sdk": {"supported": False, "base_model": None, "prefix_cache_supported": False},
}

#: The interpreter shape behind each runtime the SDK pins.
_KNOWN_SHAPES: Mapping[str, InterpreterShape] = {QWEN3_RUNTIME_ID: QWEN3_0_6B}


def known_shape(runtime_id: object) -> InterpreterShape | None:
    """The interpreter shape of a runtime the SDK pins, or ``None``."""
    return _KNOWN_SHAPES.get(runtime_id) if isinstance(runtime_id, str) else None


@dataclass(frozen=True)
class BaseModelFile:
    """The base-model GGUF a runtime runs on, and where the SDK may download it.

    The SDK needs ``url``, or ``provider="huggingface"`` with ``repo``.
    """

    file: str
    size_bytes: int | None
    sha256: str | None
    provider: str | None = None
    repo: str | None = None
    url: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file}
        for key in ("size_bytes", "sha256", "provider", "repo", "url"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def custom_runtime(
    runtime_id: str,
    *,
    interpreter: str,
    base_model: BaseModelFile,
    base_template: str,
    n_ctx: int = 2048,
    display_name: str | None = None,
) -> dict[str, Any]:
    """A manifest for a runtime the SDK does not pin (another Qwen3 interpreter).

    ``base_template`` is the interpreter's chat template rendered around one
    ``{INPUT_PLACEHOLDER}`` user message: how the SDK prompts the bare base model.
    """
    return {
        "runtime_id": runtime_id,
        "manifest_version": RUNTIME_MANIFEST_VERSION,
        "display_name": display_name or runtime_id,
        "interpreter": interpreter,
        "adapter_format": "gguf_lora",
        "prompt_template": dict(_PROMPT_CONTRACT),
        "program_assets": dict(_PROGRAM_ASSETS),
        "base_inference": {
            "contract_version": 1,
            "format": "rendered_text",
            "placeholder": INPUT_PLACEHOLDER,
            "template": base_template,
        },
        "local_sdk": {"supported": True, "base_model": base_model.to_json(), "n_ctx": n_ctx},
        "js_sdk": {"supported": False, "base_model": None, "prefix_cache_supported": False},
    }


def base_model_file(runtime: Mapping[str, Any]) -> BaseModelFile | None:
    """The base model a (valid) runtime manifest names, or ``None`` when it names none.

    ``size_bytes`` and ``sha256`` are ``None`` when the manifest leaves them out
    (the SDK then checks only the GGUF magic of the cached file).
    """
    local = runtime.get("local_sdk")
    base = local.get("base_model") if isinstance(local, Mapping) else None
    if not isinstance(base, Mapping):
        return None
    file, size, sha = base.get("file"), base.get("size_bytes"), base.get("sha256")
    if not isinstance(file, str):
        return None
    return BaseModelFile(
        file=file,
        size_bytes=size if isinstance(size, int) and not isinstance(size, bool) else None,
        sha256=sha.lower() if isinstance(sha, str) else None,
        provider=base.get("provider"),
        repo=base.get("repo"),
        url=base.get("url"),
    )


def runtime_problems(
    runtime: object, *, interpreter: object = None, require_local_model: bool = True
) -> list[str]:
    """Every way ``runtime`` breaks the SDK's rules for a text runtime (``[]``: the SDK takes it).

    The rules are the SDK's ``_runtime_manifest_has_valid_shape`` and, for a
    runtime the SDK pins, its ``_normalize_runtime_manifest``: ``size_bytes``
    and ``sha256`` of the base model may be left out. ``interpreter`` (when
    given) is ``meta.json``'s, which the manifest must repeat.
    """
    where = "meta.json: runtime"
    if not isinstance(runtime, Mapping):
        return [f"{where}: missing; a program needs an embedded runtime manifest (an object)"]
    problems: list[str] = []
    rid = runtime.get("runtime_id")
    if not isinstance(rid, str) or not _RUNTIME_ID_RE.fullmatch(rid):
        problems.append(f"{where}.runtime_id: {rid!r} is not a runtime id ([A-Za-z0-9._-]+)")
    version = runtime.get("manifest_version")
    if version != RUNTIME_MANIFEST_VERSION or isinstance(version, bool):
        problems.append(
            f"{where}.manifest_version: {version!r}, want {RUNTIME_MANIFEST_VERSION} "
            "(text runtimes; wgtpm does not install vision programs)"
        )
    rt_interpreter = runtime.get("interpreter")
    if not isinstance(rt_interpreter, str) or not rt_interpreter:
        problems.append(f"{where}.interpreter: {rt_interpreter!r} is not a model name")
    elif interpreter and rt_interpreter != interpreter:
        problems.append(
            f"{where}.interpreter: {rt_interpreter!r} differs from "
            f"meta.json's interpreter {interpreter!r}"
        )
    if runtime.get("adapter_format") != "gguf_lora":
        problems.append(
            f"{where}.adapter_format: {runtime.get('adapter_format')!r}, want 'gguf_lora'"
        )
    prompt = runtime.get("prompt_template")
    if prompt is not None and (
        not isinstance(prompt, Mapping)
        or prompt.get("format") != "rendered_text"
        or prompt.get("placeholder") != INPUT_PLACEHOLDER
    ):
        problems.append(f"{where}.prompt_template: want {_PROMPT_CONTRACT}")
    assets = runtime.get("program_assets")
    if assets is not None and (
        not isinstance(assets, Mapping) or assets.get("adapter_filename") != "adapter.gguf"
    ):
        problems.append(f"{where}.program_assets.adapter_filename: want 'adapter.gguf'")
    problems += _local_sdk_problems(runtime.get("local_sdk"), require_local_model)
    problems += _base_inference_problems(runtime.get("base_inference"))
    if isinstance(rid, str) and rid in _PINNED and not problems:
        problems += _pinned_problems(runtime, _PINNED[rid])
    return problems


_PINNED: Mapping[str, Mapping[str, Any]] = {QWEN3_RUNTIME_ID: QWEN3_RUNTIME}

#: The SDK's ``INTERPRETER_TO_GGUF``, for the runtimes wgtpm can check (Qwen3 LoRA adapters).
INTERPRETER_RUNTIMES: Mapping[str, str] = {"Qwen/Qwen3-0.6B": QWEN3_RUNTIME_ID}


def _local_sdk_problems(local: object, require_local_model: bool) -> list[str]:
    where = "meta.json: runtime.local_sdk"
    if not isinstance(local, Mapping):
        return [f"{where}: missing; the SDK runs programs locally only with a local_sdk section"]
    problems: list[str] = []
    supported = local.get("supported")
    if not isinstance(supported, bool):
        problems.append(f"{where}.supported: {supported!r}, want true or false")
    n_ctx = local.get("n_ctx")
    if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx <= 0):
        problems.append(f"{where}.n_ctx: {n_ctx!r} is not a positive integer")
    base = local.get("base_model")
    if not (supported or require_local_model):
        if base is not None and not isinstance(base, Mapping):
            problems.append(f"{where}.base_model: must be an object")
        return problems
    if not isinstance(base, Mapping):
        return [*problems, f"{where}.base_model: missing; name the base-model GGUF (file, url)"]
    file = base.get("file")
    if not isinstance(file, str) or not file or PurePosixPath(file).name != file or "\\" in file:
        problems.append(f"{where}.base_model.file: {file!r} is not a plain file name")
    size = base.get("size_bytes")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        problems.append(f"{where}.base_model.size_bytes: {size!r} is not a positive integer")
    sha = base.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA256_RE.fullmatch(sha)):
        problems.append(f"{where}.base_model.sha256: {sha!r} is not 64 hex digits")
    for key in ("provider", "repo", "url"):
        if base.get(key) is not None and not isinstance(base.get(key), str):
            problems.append(f"{where}.base_model.{key}: must be a string")
    if not base.get("url") and not (base.get("provider") == "huggingface" and base.get("repo")):
        problems.append(
            f"{where}.base_model: needs a url, or provider 'huggingface' with a repo, "
            "so the SDK knows where the base model comes from"
        )
    return problems


def _base_inference_problems(contract: object) -> list[str]:
    where = "meta.json: runtime.base_inference"
    if contract is None:
        return []
    if not isinstance(contract, Mapping):
        return [f"{where}: must be an object"]
    template = contract.get("template")
    if (
        contract.get("contract_version") != 1
        or contract.get("format") != "rendered_text"
        or contract.get("placeholder") != INPUT_PLACEHOLDER
        or not isinstance(template, str)
        or template.count(INPUT_PLACEHOLDER) != 1
    ):
        return [
            f"{where}: want contract_version 1, format 'rendered_text' and a template "
            f"with exactly one {INPUT_PLACEHOLDER}"
        ]
    return []


def _pinned_problems(runtime: Mapping[str, Any], pinned: Mapping[str, Any]) -> list[str]:
    """A runtime the SDK pins must agree with the SDK's copy, or the SDK drops it.

    Left-out base-model fields (``provider``, ``repo``, ``url``, ``size_bytes``,
    ``sha256``) and left-out contract keys are filled in by :func:`normalize_runtime`.
    """
    rid = pinned["runtime_id"]
    problems = [
        f"meta.json: runtime.{key}: {runtime.get(key)!r} differs from the SDK's {rid} runtime ({pinned[key]!r})"
        for key in ("interpreter", "manifest_version", "adapter_format")
        if runtime.get(key) != pinned[key]
    ]
    local, want_local = runtime["local_sdk"], pinned["local_sdk"]
    for key in ("supported", "n_ctx"):
        if local.get(key) != want_local[key]:
            problems.append(
                f"meta.json: runtime.local_sdk.{key}: differs from the SDK's {rid} runtime"
            )
    base, want_base = local.get("base_model"), want_local["base_model"]
    if not isinstance(base, Mapping):
        return [*problems, "meta.json: runtime.local_sdk.base_model: missing"]
    for key, want in want_base.items():
        if key == "file" or base.get(key) is not None:
            got = base.get(key)
            if got != want:
                problems.append(
                    f"meta.json: runtime.local_sdk.base_model.{key}: {got!r} differs from "
                    f"the SDK's {rid} runtime ({want!r})"
                )
    for section in ("prompt_template", "program_assets", "base_inference"):
        have = runtime.get(section)
        if have is not None and not isinstance(have, Mapping):
            problems.append(f"meta.json: runtime.{section}: must be an object")
        elif isinstance(have, Mapping):
            for key, want in pinned[section].items():
                if key in have and have[key] != want:
                    problems.append(
                        f"meta.json: runtime.{section}.{key}: differs from the SDK's {rid} runtime"
                    )
    return problems


def normalize_runtime(
    runtime: object, *, expected_id: str | None = None, require_local_model: bool = False
) -> dict[str, Any] | None:
    """The manifest as the SDK uses it (``_normalize_runtime_manifest``), or ``None`` if refused.

    A runtime the SDK pins gets the SDK's base-model identity (size, sha256,
    url) and contract sections filled in.
    """
    if runtime_problems(runtime, require_local_model=require_local_model):
        return None
    assert isinstance(runtime, Mapping)
    if expected_id is not None and runtime.get("runtime_id") != expected_id:
        return None
    normalized: dict[str, Any] = copy.deepcopy(dict(runtime))
    pinned = _PINNED.get(normalized["runtime_id"])
    if pinned is None:
        return normalized
    for section in ("prompt_template", "program_assets", "base_inference"):
        merged = dict(normalized.get(section) or {})
        merged.update(copy.deepcopy(dict(pinned[section])))
        normalized[section] = merged
    base = normalized["local_sdk"]["base_model"]
    base.update(copy.deepcopy(dict(pinned["local_sdk"]["base_model"])))
    return normalized


def runtime_for_program(runtime: object, meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The SDK's ``_normalize_runtime_manifest_for_program``: ``runtime`` if it serves ``meta``."""
    normalized = normalize_runtime(runtime, require_local_model=True)
    if normalized is None:
        return None
    for meta_key, key in (
        ("runtime_id", "runtime_id"),
        ("interpreter", "interpreter"),
        ("runtime_manifest_version", "manifest_version"),
    ):
        want = meta.get(meta_key)
        if (want is not None if meta_key == "runtime_manifest_version" else want) and (
            normalized.get(key) != want
        ):
            return None
    return normalized


#: ``lookup(runtime_id, manifest_version)``: a runtime manifest from somewhere, or ``None``.
RuntimeLookup = Callable[[str, "int | None"], "Mapping[str, Any] | None"]


@dataclass(frozen=True)
class ResolvedRuntime:
    """The runtime a program runs on, and where it was found.

    ``source`` is ``embedded``, ``cached``, ``hub`` or ``interpreter`` (the
    SDK's built-in table), in the SDK's order of resolution.
    """

    manifest: dict[str, Any]
    source: str


def resolve_runtime(
    meta: Mapping[str, Any],
    *,
    cached: RuntimeLookup | None = None,
    fetch: RuntimeLookup | None = None,
) -> ResolvedRuntime | None:
    """The runtime of ``meta``, resolved as the SDK's ``resolve_runtime_manifest`` does.

    In order: the embedded manifest, the manifest ``cached`` finds for
    ``runtime_id``, the one ``fetch`` gets from the hub
    (``GET {PAW_API_URL}/api/v1/models/runtimes/{id}``), and the SDK's
    built-in runtime of ``interpreter``. Each must serve the program (same
    runtime id, interpreter and manifest version when ``meta`` names them).
    """
    embedded = runtime_for_program(meta.get("runtime"), meta)
    if embedded is not None:
        return ResolvedRuntime(embedded, "embedded")
    rid = meta.get("runtime_id")
    version = meta.get("runtime_manifest_version")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    if isinstance(rid, str) and _RUNTIME_ID_RE.fullmatch(rid):
        for source, lookup in (("cached", cached), ("hub", fetch)):
            if lookup is None:
                continue
            found = lookup(rid, version)
            manifest = normalize_runtime(found, expected_id=rid) if found is not None else None
            resolved = runtime_for_program(manifest, meta) if manifest is not None else None
            if resolved is not None:
                return ResolvedRuntime(resolved, source)
    interpreter = meta.get("interpreter")
    builtin = INTERPRETER_RUNTIMES.get(interpreter) if isinstance(interpreter, str) else None
    if builtin is not None:
        resolved = runtime_for_program(copy.deepcopy(dict(_PINNED[builtin])), meta)
        if resolved is not None:
            return ResolvedRuntime(resolved, "interpreter")
    return None


def qwen3_runtime() -> dict[str, Any]:
    """A fresh copy of :data:`QWEN3_RUNTIME`."""
    return copy.deepcopy(dict(QWEN3_RUNTIME))
