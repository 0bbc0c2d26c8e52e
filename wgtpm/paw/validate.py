"""Check a ``.paw`` bundle against every rule the PAW SDK applies, and the adapter against its base model.

The rules, each reported with the member it concerns (all problems are
collected before :class:`~wgtpm.paw.bundle.BundleError` is raised):

- archive: at most 256 MiB, 256 members, 512 MiB expanded; safe member names,
  regular files, no folders, only the four known members, the three required
  ones present (:func:`~wgtpm.paw.bundle.read_bundle`);
- ``meta.json``: a UTF-8 JSON object; ``program_id`` of 16-64 lower-case hex
  digits (equal to ``expected_id`` when given, and to the recomputed ID for a
  wgtpm-built bundle, :mod:`wgtpm.paw.identity`); a non-empty ``interpreter``;
  ``runtime_id`` and ``runtime_manifest_version`` well-formed when present; an
  embedded runtime manifest the SDK accepts for offline use
  (:func:`~wgtpm.paw.runtime.runtime_problems`);
- ``prompt_template.txt``: UTF-8 text with exactly one ``{INPUT_PLACEHOLDER}``;
- ``adapter.gguf``: at least 1,024 bytes, the ``GGUF`` magic, architecture
  ``qwen3``, ``general.type=adapter``, ``adapter.type=lora``, a positive
  ``adapter.lora.alpha``, only ``blk.{L}.{module}.weight.lora_a|lora_b``
  tensors in complete pairs of one rank, and every layer and shape fitting
  the base model.

The base model's shape comes from, in order: the ``shape`` argument (a
``config.json`` or base GGUF the caller trusts), the runtime the SDK pins
(Qwen3-0.6B for ``qwen3-0.6b-q6_k``), or the ``interpreter_shape`` a
wgtpm-built bundle records.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .adapter_format import QUANTIZATIONS, TENSOR_NAME_RE
from .bundle import MIN_ADAPTER_BYTES, Bundle, BundleError, read_bundle
from .identity import ID_SCHEME, program_id
from .runtime import (
    INPUT_PLACEHOLDER,
    RuntimeLookup,
    known_shape,
    normalize_runtime,
    resolve_runtime,
    runtime_problems,
)
from .shape import GGUF_MODULE_NAMES, InterpreterShape

__all__ = ["AdapterSummary", "ValidProgram", "check_bundle", "validate_file"]

PROGRAM_ID_RE = re.compile(r"^[a-f0-9]{16,64}\Z")
_RUNTIME_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_GGUF_TO_MODULE = {v: k for k, v in GGUF_MODULE_NAMES.items()}


@dataclass(frozen=True)
class AdapterSummary:
    """What the adapter holds: rank, alpha, adapted layers and modules, tensor types."""

    rank: int
    alpha: float
    layers: tuple[int, ...]
    modules: tuple[str, ...]
    types: tuple[str, ...]


@dataclass(frozen=True)
class ValidProgram:
    """A bundle that passed every check, with what the checks learned about it."""

    bundle: Bundle
    program_id: str
    runtime: Mapping[str, Any]
    adapter: AdapterSummary
    shape: InterpreterShape
    shape_source: str
    runtime_source: str = "embedded"


def validate_file(
    path: Path,
    *,
    shape: InterpreterShape | None = None,
    expected_id: str | None = None,
    cached: RuntimeLookup | None = None,
    fetch: RuntimeLookup | None = None,
) -> ValidProgram:
    """Read and check the bundle at ``path``; raises :class:`BundleError` listing every problem."""
    return check_bundle(
        read_bundle(path),
        source=str(path),
        shape=shape,
        expected_id=expected_id,
        cached=cached,
        fetch=fetch,
    )


def check_bundle(
    bundle: Bundle,
    *,
    source: str,
    shape: InterpreterShape | None = None,
    expected_id: str | None = None,
    cached: RuntimeLookup | None = None,
    fetch: RuntimeLookup | None = None,
) -> ValidProgram:
    """Check the members of an already read bundle (see the module docstring).

    The runtime is resolved as the SDK resolves it (:func:`~wgtpm.paw.runtime.resolve_runtime`):
    embedded, then ``cached``, then ``fetch`` (the hub), then the SDK's table by interpreter.
    """
    problems: list[str] = []
    meta = _meta_object(bundle, problems)
    problems += _meta_problems(meta, expected_id)
    runtime: Mapping[str, Any] = {}
    runtime_source = ""
    if meta and not problems:
        resolved = resolve_runtime(meta, cached=cached, fetch=fetch)
        if resolved is None:
            problems += _unresolved(meta)
        elif resolved.manifest["local_sdk"].get("supported") is not True:
            problems.append(
                "meta.json: runtime.local_sdk.supported: must be true for the SDK to run the "
                "program locally"
            )
        else:
            runtime, runtime_source = resolved.manifest, resolved.source
    problems += _text_problems(bundle)
    base_shape, shape_source = _base_shape(meta, runtime, shape, problems)
    summary = _adapter_problems(bundle.adapter, base_shape, meta, problems)
    if not problems:
        problems += _identity_problems(bundle, meta)
    if problems or summary is None or base_shape is None:
        raise BundleError(source, problems)
    return ValidProgram(
        bundle=bundle,
        program_id=meta["program_id"],
        runtime=runtime,
        adapter=summary,
        shape=base_shape,
        shape_source=shape_source,
        runtime_source=runtime_source,
    )


def _unresolved(meta: Mapping[str, Any]) -> list[str]:
    """Why no runtime serves ``meta``: the embedded manifest's problems, or what was looked for."""
    embedded = meta.get("runtime")
    if isinstance(embedded, Mapping) and embedded:
        found = runtime_problems(embedded, interpreter=meta.get("interpreter"))
        if found:
            return found
    return [
        "meta.json: runtime: no runtime manifest serves this program: none embedded, none "
        f"cached or on the hub for runtime_id {meta.get('runtime_id')!r}, and the SDK has no "
        f"built-in runtime for interpreter {meta.get('interpreter')!r}"
    ]


def _meta_object(bundle: Bundle, problems: list[str]) -> Mapping[str, Any]:
    raw = bundle.members.get("meta.json", b"")
    if not bundle.meta:
        try:
            raw.decode("utf-8")
            problems.append("meta.json: not a JSON object")
        except UnicodeDecodeError:
            problems.append("meta.json: not UTF-8 text")
    return bundle.meta


def _meta_problems(meta: Mapping[str, Any], expected_id: str | None) -> list[str]:
    if not meta:
        return []
    problems: list[str] = []
    pid = meta.get("program_id")
    if not isinstance(pid, str) or not PROGRAM_ID_RE.fullmatch(pid):
        problems.append(f"meta.json: program_id {pid!r} is not 16-64 lower-case hex digits")
    elif expected_id is not None and pid != expected_id:
        problems.append(f"meta.json: program_id {pid} does not match the expected {expected_id}")
    interpreter = meta.get("interpreter")
    if not isinstance(interpreter, str) or not interpreter:
        problems.append(
            "meta.json: interpreter is missing (the base model's name, e.g. 'Qwen/Qwen3-0.6B')"
        )
    rid = meta.get("runtime_id")
    if rid is not None and (not isinstance(rid, str) or not _RUNTIME_ID_RE.fullmatch(rid)):
        problems.append(f"meta.json: runtime_id {rid!r} is not a runtime id ([A-Za-z0-9._-]+)")
    runtime = meta.get("runtime")
    if rid is not None and isinstance(runtime, Mapping) and runtime.get("runtime_id") != rid:
        problems.append(
            f"meta.json: runtime_id {rid!r} differs from the embedded runtime's {runtime.get('runtime_id')!r}"
        )
    version = meta.get("runtime_manifest_version")
    if version is not None and (version != 1 or isinstance(version, bool)):
        problems.append(f"meta.json: runtime_manifest_version {version!r} is not 1 (text programs)")
    if runtime not in (None, {}) and normalize_runtime(runtime) is None:
        # The SDK refuses a program whose embedded runtime is malformed (validate_program_assets_dir).
        problems += runtime_problems(runtime, require_local_model=False) or [
            "meta.json: runtime: not a runtime manifest the SDK accepts"
        ]
    return problems


def _text_problems(bundle: Bundle) -> list[str]:
    problems: list[str] = []
    raw = bundle.members.get("prompt_template.txt", b"")
    try:
        count = raw.decode("utf-8").count(INPUT_PLACEHOLDER)
        if count != 1:
            problems.append(
                f"prompt_template.txt: has {count} {INPUT_PLACEHOLDER}, want exactly one"
            )
    except UnicodeDecodeError:
        problems.append("prompt_template.txt: not UTF-8 text")
    try:
        bundle.members.get("pseudo_program.txt", b"").decode("utf-8")
    except UnicodeDecodeError:
        problems.append("pseudo_program.txt: not UTF-8 text")
    return problems


def _base_shape(
    meta: Mapping[str, Any],
    runtime: Mapping[str, Any],
    given: InterpreterShape | None,
    problems: list[str],
) -> tuple[InterpreterShape | None, str]:
    recorded: InterpreterShape | None = None
    build = meta.get("compile_by_training")
    if isinstance(build, Mapping) and "interpreter_shape" in build:
        try:
            recorded = InterpreterShape.from_json(build["interpreter_shape"])
        except ValueError as exc:
            problems.append(f"meta.json: compile_by_training.interpreter_shape: {exc}")
    rid = runtime.get("runtime_id", meta.get("runtime_id"))
    pinned = known_shape(rid)
    if pinned is not None and recorded is not None and recorded != pinned:
        problems.append(
            f"meta.json: compile_by_training.interpreter_shape ({recorded.describe()}) is not the "
            f"shape of runtime {rid}'s base model ({pinned.describe()})"
        )
    if given is not None:
        return given, "given"
    if pinned is not None:
        return pinned, f"runtime {rid}"
    if recorded is not None:
        return recorded, "meta.json"
    if not meta or not runtime:
        return None, ""  # meta.json's own problem says enough
    problems.append(
        "adapter.gguf: cannot check the adapter against its base model: the runtime is not one "
        "the SDK pins and meta.json records no interpreter_shape; pass the interpreter's "
        "config.json or the base-model GGUF"
    )
    return None, ""


def _adapter_problems(
    data: bytes, shape: InterpreterShape | None, meta: Mapping[str, Any], problems: list[str]
) -> AdapterSummary | None:
    where = "adapter.gguf"
    if len(data) < MIN_ADAPTER_BYTES:
        problems.append(f"{where}: {len(data)} bytes, the SDK needs at least {MIN_ADAPTER_BYTES}")
    if not data.startswith(b"GGUF"):
        problems.append(f"{where}: no GGUF magic at the start; not a GGUF file")
        return None
    from .gguf_adapter import read_adapter_info  # numpy and gguf: only when a bundle is checked

    try:
        info = read_adapter_info(data)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None
    before = len(problems)
    fields = info.fields
    for key, want in (
        ("general.architecture", "qwen3"),
        ("general.type", "adapter"),
        ("adapter.type", "lora"),
    ):
        if fields.get(key) != want:
            problems.append(f"{where}: {key} is {fields.get(key)!r}, want {want!r}")
    alpha = fields.get("adapter.lora.alpha")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        problems.append(f"{where}: adapter.lora.alpha is {alpha!r}, want a positive number")
        alpha = 0.0
    pairs: dict[tuple[int, str], dict[str, tuple[int, ...]]] = {}
    types: set[str] = set()
    for tensor in info.tensors:
        match = TENSOR_NAME_RE.fullmatch(tensor.name)
        if not match:
            problems.append(
                f"{where}: tensor {tensor.name!r} is not blk.L.{{attn_q|attn_k|attn_v|attn_output|"
                "ffn_gate|ffn_up|ffn_down}.weight.lora_a|lora_b"
            )
            continue
        if tensor.ggml_type not in QUANTIZATIONS:
            problems.append(
                f"{where}: tensor {tensor.name} has type {tensor.ggml_type}, want one of {QUANTIZATIONS}"
            )
        types.add(tensor.ggml_type)
        if len(tensor.shape) != 2:
            problems.append(
                f"{where}: tensor {tensor.name} has {len(tensor.shape)} dimensions, want 2"
            )
            continue
        pairs.setdefault((int(match[1]), _GGUF_TO_MODULE[match[2]]), {})[match[3]] = tensor.shape
    if not pairs and len(problems) == before:
        problems.append(f"{where}: holds no LoRA tensors")
    ranks = _pair_problems(pairs, shape, problems)
    _meta_adapter_problems(meta, ranks, float(alpha), problems)
    if len(problems) != before or len(ranks) != 1:
        return None
    return AdapterSummary(
        rank=ranks.pop(),
        alpha=float(alpha),
        layers=tuple(sorted({layer for layer, _ in pairs})),
        modules=tuple(m for m in GGUF_MODULE_NAMES if any(m == mod for _, mod in pairs)),
        types=tuple(sorted(types)),
    )


def _pair_problems(
    pairs: Mapping[tuple[int, str], Mapping[str, tuple[int, ...]]],
    shape: InterpreterShape | None,
    problems: list[str],
) -> set[int]:
    ranks: set[int] = set()
    for (layer, module), halves in sorted(pairs.items()):
        name = f"adapter.gguf: blk.{layer}.{GGUF_MODULE_NAMES[module]}.weight"
        if set(halves) != {"a", "b"}:
            missing = "lora_b" if "a" in halves else "lora_a"
            problems.append(f"{name}.{missing} is missing; LoRA tensors come in a/b pairs")
            continue
        (a_in, a_rank), (b_rank, b_out) = halves["a"], halves["b"]
        if a_rank != b_rank:
            problems.append(f"{name}: lora_a has rank {a_rank} but lora_b has rank {b_rank}")
        ranks.add(a_rank)
        if shape is None:
            continue
        if layer >= shape.layers:
            problems.append(
                f"{name}: layer {layer} does not exist; the base model has {shape.layers} layers"
            )
            continue
        want_in, want_out = shape.module_dims(module)
        if (a_in, b_out) != (want_in, want_out):
            problems.append(
                f"{name}: adapts a {a_in}->{b_out} projection, but the base model's {module} is "
                f"{want_in}->{want_out}"
            )
    if len(ranks) > 1:
        problems.append(f"adapter.gguf: tensors disagree on the LoRA rank ({sorted(ranks)})")
    return ranks


def _meta_adapter_problems(
    meta: Mapping[str, Any], ranks: set[int], alpha: float, problems: list[str]
) -> None:
    declared = meta.get("adapter")
    if not isinstance(declared, Mapping):
        return
    rank = declared.get("lora_rank")
    if rank is not None and len(ranks) == 1 and rank not in ranks:
        problems.append(
            f"meta.json: adapter.lora_rank {rank!r} differs from adapter.gguf's rank {min(ranks)}"
        )
    want_alpha = declared.get("lora_alpha")
    if (
        isinstance(want_alpha, (int, float))
        and alpha
        and abs(float(want_alpha) - alpha) > 1e-6 * max(1.0, alpha)
    ):
        problems.append(
            f"meta.json: adapter.lora_alpha {want_alpha!r} differs from adapter.gguf's {alpha}"
        )


def _identity_problems(bundle: Bundle, meta: Mapping[str, Any]) -> list[str]:
    build = meta.get("compile_by_training")
    if not isinstance(build, Mapping) or build.get("program_id_scheme") != ID_SCHEME:
        return []
    recipe = build.get("recipe")
    spec = meta.get("spec")
    if not isinstance(recipe, Mapping) or not isinstance(spec, str):
        return [f"meta.json: a {ID_SCHEME} program needs spec and compile_by_training.recipe"]
    adapter_sha = hashlib.sha256(bundle.adapter).hexdigest()
    if build.get("adapter_sha256") not in (None, adapter_sha):
        return ["meta.json: compile_by_training.adapter_sha256 is not the sha256 of adapter.gguf"]
    want = program_id(
        spec=spec,
        pseudo_program=bundle.pseudo_program,
        recipe=recipe,
        interpreter=meta["interpreter"],
        runtime=meta.get("runtime") or {},
        adapter_sha256=adapter_sha,
    )
    if want != meta["program_id"]:
        return [
            f"meta.json: program_id {meta['program_id']} does not match the bundle's content "
            f"({ID_SCHEME} gives {want}); a member was changed after the build"
        ]
    return []
