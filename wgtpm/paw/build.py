"""Compile a ``.pawspec`` into a ``.paw`` program: examples, LoRA training, GGUF, bundle.

The ``.pawspec`` of a package and ``wgtpm paw compile`` (compile.py's command
line, which builds a :class:`~wgtpm.paw.spec.PawSpec` from its flags) both go
through :func:`compile_spec`. The steps, each reported on the log:

0. preflight, before any work (compile-by-training's): the training device
   is usable, a ``lora_init = "mapper"`` build has ``$PAW_API_KEY`` or a
   cached mapper, and teacher synthesis has an API key or a complete cache;
1. find the interpreter: a local directory, or a module of the build list
   (``resolver.module(path).dir``, verified against wgt.sum);
2. settle the SDK runtime: the SDK's ``qwen3-0.6b-q6_k`` for Qwen3-0.6B, or the
   ``[runtime]`` table, whose base-model GGUF is hashed for the manifest;
3. the mapper stage (:mod:`wgtpm.paw.mapper`) when ``lora_init = "mapper"``:
   the PAW compiler's pseudo-program and initial LoRA;
4. gather the examples: the JSONL file, then each teacher model's, one pool each;
5. render the prompt template (the pseudo-program around the input) with
   the interpreter's chat template, and train the LoRA
   (:mod:`wgtpm.paw.train`), one log line per step with its loss;
6. write the adapter as GGUF (:mod:`wgtpm.paw.gguf_adapter`), derive the program
   ID (:mod:`wgtpm.paw.identity`) and write the bundle byte-stably, stamped with
   ``$SOURCE_DATE_EPOCH`` (the commit's time) or 1980-01-01, never the clock;
7. check the written bundle with the validator, as a consumer will.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _json
from .._errors import BuildError, ResolveError
from .._fs import sha256_file, write_atomic
from .._report import SILENT, Reporter
from ..deps import ModuleResolver, split_ref
from .bundle import BundleError, read_bundle, source_date_epoch, write_bundle
from .examples import Example, examples_sha256, read_jsonl
from .identity import ID_SCHEME, program_id
from .mapper import Mapper
from .prompt import raw_prompt, render_chat
from .runtime import INPUT_PLACEHOLDER, BaseModelFile, custom_runtime, qwen3_runtime
from .shape import QWEN3_0_6B, InterpreterShape
from .spec import PawSpec, load_spec
from .validate import check_bundle

__all__ = ["CompileOptions", "Compiled", "build_program", "compile_program", "compile_spec"]


@dataclass(frozen=True)
class _Interpreter:
    dir: Path
    record: dict[str, str]
    shape: InterpreterShape


def build_program(
    spec_path: Path,
    out_path: Path,
    resolver: ModuleResolver,
    *,
    name: str,
    reporter: Reporter = SILENT,
    teacher_cache: Path | None = None,
    cache_dir: Path | None = None,
    root: Path | None = None,
) -> Path:
    """Build the program ``spec_path`` describes into ``out_path``; returns ``out_path``.

    ``name`` is the artifact's name in wgt.mod (for messages only: the program
    ID does not depend on it). ``root`` is the package directory when the spec
    is an artifact of one: the files the spec names must lie inside it
    (:func:`~wgtpm.paw.spec.parse_spec`), checked before any work. Each step is
    a ``reporter.notice`` line starting ``paw NAME:``. Raises :class:`~wgtpm.ParseError` for a bad spec or examples
    file and :class:`~wgtpm.BuildError` for anything else.
    """
    return compile_spec(
        load_spec(spec_path, root=root),
        out_path,
        resolver,
        CompileOptions(name=name, teacher_cache=teacher_cache, cache_dir=cache_dir),
        reporter=reporter,
    )


@dataclass(frozen=True)
class CompileOptions:
    """How a build runs (none of it changes the program's bytes).

    ``cache_dir`` holds the mapper (default ``$WGTPM_CACHE/paw-mapper``),
    ``teacher_cache`` the teacher's answers (default ``$WGTPM_CACHE/paw-teacher``).
    """

    name: str
    teacher_cache: Path | None = None
    cache_dir: Path | None = None
    asset_timeout: float = 180.0
    poll_interval: float = 3.0
    save_examples: Path | None = None
    keep_adapter: Path | None = None


@dataclass(frozen=True)
class Compiled:
    """A written program: where, its ID, the mapper's program, the losses and the device."""

    path: Path
    program_id: str
    base_program_id: str | None
    losses: list[float]
    device: str


def compile_spec(
    spec: PawSpec,
    out_path: Path,
    resolver: ModuleResolver,
    options: CompileOptions,
    *,
    reporter: Reporter = SILENT,
) -> Path:
    """Compile ``spec`` into the bundle ``out_path`` (see the module docstring)."""
    return compile_program(spec, out_path, resolver, options, reporter=reporter).path


def compile_program(
    spec: PawSpec,
    out_path: Path,
    resolver: ModuleResolver,
    options: CompileOptions,
    *,
    reporter: Reporter = SILENT,
) -> Compiled:
    """:func:`compile_spec`, returning what the build learned."""
    name = options.name
    say = reporter.notice
    prefixed = _Prefixed(reporter, f"paw {name}: ")
    from .mapper import compile_mapper
    from .teacher import default_cache_dir

    teacher_cache = options.teacher_cache or default_cache_dir()
    mapper_cache = options.cache_dir or default_cache_dir().parent / "paw-mapper"
    device = _preflight(spec, teacher_cache, mapper_cache)
    say(f"paw {name}: preflight: {device}")
    interpreter = _find_interpreter(spec, resolver)
    tokenizer = _tokenizer(interpreter.dir)
    runtime, base_record = _runtime(spec, interpreter, resolver, tokenizer)
    mapper = None
    if spec.recipe.lora_init == "mapper":
        mapper = compile_mapper(
            spec.spec,
            spec.recipe,
            mapper_cache,
            asset_timeout=options.asset_timeout,
            poll_interval=options.poll_interval,
            reporter=prefixed,
        )
    pseudo = mapper.pseudo_program if mapper is not None else spec.pseudo_program
    pools = _pools(spec, prefixed, teacher_cache)
    if options.save_examples is not None:
        _save_examples(options.save_examples, spec, pools)
    template = render_chat(tokenizer, raw_prompt(pseudo))
    count = sum(len(p) for p in pools)
    init = f"the mapper of {mapper.program_id}" if mapper is not None else "a random LoRA"
    say(f"paw {name}: training a rank-{spec.recipe.lora_rank} LoRA from {init} on {count} examples")

    from .gguf_adapter import adapter_bytes
    from .train import StepReport, train_lora

    def report(s: StepReport) -> None:
        say(f"paw {name}: step {s.step}/{s.steps} loss {s.loss:.4f} lr {s.learning_rate:.2e}")

    started = time.monotonic()
    result = train_lora(
        interpreter.dir,
        pools,
        template,
        spec.recipe,
        mapper_dir=mapper.adapter_dir if mapper is not None else None,
        on_step=report,
        save_adapter=options.keep_adapter,
    )
    try:
        adapter = adapter_bytes(
            result.pairs, alpha=spec.recipe.lora_alpha, quantization=spec.recipe.quantization
        )
    except ValueError as exc:
        raise BuildError(f"paw {name}: cannot write the GGUF adapter: {exc}") from exc
    provenance: dict[str, Any] = {
        "interpreter": interpreter.record,
        "interpreter_shape": interpreter.shape.to_json(),
    }
    if base_record is not None:
        provenance["base_model"] = base_record
    if mapper is not None:
        provenance["mapper"] = mapper.provenance()
    members = _members(
        spec, pseudo, mapper, provenance, runtime, template, adapter, pools, result.losses
    )
    write_bundle(out_path, members, epoch=source_date_epoch())
    try:
        checked = check_bundle(read_bundle(out_path), source=str(out_path))
    except BundleError as exc:
        raise BuildError(
            f"paw {name}: the built bundle does not validate (a wgtpm bug): {exc}"
        ) from exc
    say(
        f"paw {name}: wrote {out_path} (program {checked.program_id}, loss "
        f"{result.losses[0]:.4f} -> {result.losses[-1]:.4f}, {time.monotonic() - started:.1f}s on {result.device})"
    )
    return Compiled(
        out_path,
        checked.program_id,
        mapper.program_id if mapper is not None else None,
        result.losses,
        result.device,
    )


def _preflight(spec: PawSpec, teacher_cache: Path, mapper_cache: Path) -> str:
    """compile-by-training's checks before any work: device, PAW API key, teacher key or cache."""
    from .mapper import mapper_preflight
    from .train import choose_device

    device = choose_device(spec.recipe.device)
    mapper_preflight(spec.spec, spec.recipe, mapper_cache)
    if spec.teacher is not None:
        from .teacher import preflight

        preflight(spec.spec, spec.teacher, seed=spec.recipe.seed, cache_dir=teacher_cache)
    return str(device)


def _save_examples(path: Path, spec: PawSpec, pools: list[list[Example]]) -> None:
    """compile.py's ``--save-examples``: ``[{"teacher", "input", "output"}, ...]``, indented."""
    names = _pool_names(spec)
    rows = [
        {"teacher": source, "input": e.input, "output": e.output}
        for source, pool in zip(names, pools, strict=True)
        for e in pool
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(rows, indent=2, ensure_ascii=False).encode("utf-8"))


def _pool_names(spec: PawSpec) -> list[str]:
    names = [spec.examples.name] if spec.examples is not None else []
    if spec.teacher is not None:
        names += [m.name for m in spec.teacher.models]
    return names


def _find_interpreter(spec: PawSpec, resolver: ModuleResolver) -> _Interpreter:
    local = spec.local_path(spec.interpreter)
    if local is not None:
        directory, record = local, {"dir": spec.interpreter}
    else:
        try:
            module = resolver.module(spec.interpreter)
        except ResolveError as exc:
            raise BuildError(f"{spec.path}: interpreter {spec.interpreter}: {exc}") from exc
        directory, record = module.dir, {"module": module.path, "version": module.version}
    try:
        config = _json.loads((directory / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "qwen3":
            raise BuildError(
                f"{spec.path}: interpreter {spec.interpreter} is a {config.get('model_type')!r} model; "
                "PAW programs are LoRA adapters for Qwen3 (model_type 'qwen3')"
            )
        shape = InterpreterShape.from_hf_config(config)
    except (OSError, ValueError) as exc:
        raise BuildError(
            f"{spec.path}: interpreter {spec.interpreter} at {directory} is not a Hugging Face model "
            f"directory with a usable config.json: {exc}"
        ) from exc
    return _Interpreter(directory, record, shape)


def _tokenizer(directory: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ValueError) as exc:
        raise BuildError(
            f"cannot load the interpreter's tokenizer from {directory}: {exc}"
        ) from exc


def _runtime(
    spec: PawSpec, interpreter: _Interpreter, resolver: ModuleResolver, tokenizer: Any
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The runtime manifest, and where its base model came from (``None`` for the SDK's own)."""
    rt = spec.runtime
    if rt.is_builtin:
        if interpreter.shape != QWEN3_0_6B:
            raise BuildError(
                f"{spec.path}: the interpreter ({interpreter.shape.describe()}) is not Qwen3-0.6B, the "
                "base model of the SDK's qwen3-0.6b-q6_k runtime; add a [runtime] table naming the "
                "base-model GGUF the SDK should run this program on"
            )
        return qwen3_runtime(), None
    assert rt.base_model is not None
    path, provider, repo, url, record = _base_model_source(spec, rt.base_model, resolver)
    base = BaseModelFile(
        file=path.name,
        size_bytes=path.stat().st_size,
        sha256=sha256_file(path),
        provider="huggingface" if (rt.repo or repo) and not rt.url else provider,
        repo=rt.repo or repo,
        url=rt.url or url,
    )
    if not base.url and not base.repo:
        raise BuildError(
            f'{spec.path}: [runtime] base_model {rt.base_model} is a local file; add repo = "OWNER/REPO" '
            '(Hugging Face) or url = "https://..." so the SDK knows where the base model comes from'
        )
    name = (
        rt.interpreter
        or interpreter.record.get("module", "").removeprefix("hf.co/")
        or interpreter.dir.name
    )
    manifest = custom_runtime(
        rt.id,
        interpreter=name,
        base_model=base,
        base_template=render_chat(tokenizer, INPUT_PLACEHOLDER),
        n_ctx=rt.n_ctx,
        display_name=rt.display_name,
    )
    return manifest, record


def _base_model_source(
    spec: PawSpec, ref: str, resolver: ModuleResolver
) -> tuple[Path, str | None, str | None, str | None, dict[str, str]]:
    """(file, provider, repo, url, provenance record) of the base-model GGUF ``ref``."""
    local = spec.local_path(ref)
    if local is not None:
        path, provider, repo, url = local, None, None, None
        record = {"file": ref}
    else:
        try:
            module, rest = split_ref(ref, resolver)
        except ResolveError as exc:
            raise BuildError(f"{spec.path}: [runtime] base_model {ref}: {exc}") from exc
        path = module.dir / rest
        record = {"module": module.path, "version": module.version, "file": rest}
        if module.path.startswith("hf.co/"):
            provider, repo, url = "huggingface", module.path.removeprefix("hf.co/"), None
        else:
            provider, repo, url = None, None, None
    if not path.is_file():
        raise BuildError(f"{spec.path}: [runtime] base_model {ref}: no such file {path}")
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise BuildError(f"{spec.path}: [runtime] base_model {ref} is not a GGUF file")
    return path, provider, repo, url, record


def _pools(spec: PawSpec, reporter: Reporter, teacher_cache: Path) -> list[list[Example]]:
    """The example pools: the JSONL file's, then one per teacher model."""
    pools: list[list[Example]] = []
    if spec.examples is not None:
        pools.append(read_jsonl(spec.examples))
    if spec.teacher is not None:
        from .teacher import synthesize_pools

        pools += synthesize_pools(
            spec.spec,
            spec.teacher,
            seed=spec.recipe.seed,
            cache_dir=teacher_cache,
            reporter=reporter,
        )
    if not any(pools):
        raise BuildError(f"{spec.path}: no training examples")
    return [p for p in pools]


def _members(
    spec: PawSpec,
    pseudo: str,
    mapper: Mapper | None,
    provenance: dict[str, Any],
    runtime: dict[str, Any],
    template: str,
    adapter: bytes,
    pools: list[list[Example]],
    losses: list[float],
) -> dict[str, bytes]:
    recipe = spec.recipe.identity()
    adapter_sha = hashlib.sha256(adapter).hexdigest()
    pid = program_id(
        spec=spec.spec,
        pseudo_program=pseudo,
        recipe=recipe,
        interpreter=runtime["interpreter"],
        runtime=runtime,
        adapter_sha256=adapter_sha,
    )
    examples = [e for pool in pools for e in pool]
    sources: dict[str, Any] = {"pools": [len(p) for p in pools]}
    if spec.examples is not None:
        sources["file"] = spec.examples.name
    if spec.teacher is not None:
        sources["teacher"] = [
            {"model": m.name, "examples": m.examples} for m in spec.teacher.models
        ]
    meta: dict[str, Any] = {
        "version": 4,
        "runtime_manifest_version": runtime["manifest_version"],
        "program_id": pid,
        "spec": spec.spec,
        "compiler_snapshot": "wgtpm-compile-by-training",
        "compiler_fingerprint": hashlib.sha256(
            json.dumps(recipe, sort_keys=True).encode()
        ).hexdigest()[:16],
        "compiler_kind": "finetune_lora",
        "interpreter": runtime["interpreter"],
        "runtime_id": runtime["runtime_id"],
        "pseudo_program_strategy": mapper.strategy if mapper is not None else "spec",
        "lora_rank": spec.recipe.lora_rank,
        "lora_alpha": spec.recipe.lora_alpha,
        "prefix_steps": 0,
        "runtime": runtime,
        "adapter": {
            "format": "gguf_lora",
            "lora_rank": spec.recipe.lora_rank,
            "lora_alpha": spec.recipe.lora_alpha,
            "target_modules": sorted(spec.recipe.target_modules),
            "quantization": spec.recipe.quantization,
        },
        "program_assets": runtime["program_assets"],
        "prompt_template": runtime["prompt_template"],
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(source_date_epoch())),
    }
    if mapper is not None:
        meta["base_program_id"] = mapper.program_id
        meta["base_compiler_snapshot"] = mapper.compiler_snapshot
    meta["compile_by_training"] = {
        "builder": "wgtpm",
        "program_id_scheme": ID_SCHEME,
        "recipe": recipe,
        "adapter_sha256": adapter_sha,
        **provenance,
        "examples": {"count": len(examples), "sha256": examples_sha256(examples), **sources},
        "first_loss": losses[0],
        "final_loss": losses[-1],
    }
    meta["examples"] = []
    return {
        "meta.json": (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode(),
        "pseudo_program.txt": pseudo.encode(),
        "adapter.gguf": adapter,
        "prompt_template.txt": template.encode(),
    }


class _Prefixed:
    """A reporter that puts ``prefix`` before every message to ``inner``."""

    def __init__(self, inner: Reporter, prefix: str) -> None:
        self._inner, self._prefix = inner, prefix

    def notice(self, message: str) -> None:
        self._inner.notice(self._prefix + message)

    def warning(self, message: str) -> None:
        self._inner.warning(self._prefix + message)

    def start(self, label: str, total: int) -> None:
        self._inner.start(label, total)

    def advance(self, label: str, n: int) -> None:
        self._inner.advance(label, n)

    def finish(self, label: str) -> None:
        self._inner.finish(label)
