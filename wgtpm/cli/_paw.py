"""``wgtpm paw``: compile, install, validate and inspect PAW programs (``.paw`` bundles).

``wgtpm paw compile SPEC|--spec-file F`` is compile-by-training's command line
(every flag of compile.py, same names and defaults; ``--print-config`` prints
the same JSON): it builds a :class:`~wgtpm.paw.spec.PawSpec` and goes through
the builder a ``.pawspec`` goes through, writes ``-o`` (``program.paw``) and
installs it into the SDK cache (``--no-install`` to skip).

``wgtpm paw install MODULE/ARTIFACT|FILE.paw`` validates a program and places
it in the PAW SDK's cache (``$PAW_CACHE_DIR`` or ``~/.cache/programasweights``),
with its base model when the build list (or ``--base-model``) has it, so that
``programasweights.function(ID, offline=True)`` works without a network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from .._extras import CHECKS_BUNDLE, require

if TYPE_CHECKING:
    from ..paw.shape import InterpreterShape
    from ..paw.validate import ValidProgram

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    paw = sub.add_parser("paw", help="install, validate and inspect PAW programs (.paw)")
    cmds = paw.add_subparsers(dest="paw_command", metavar="COMMAND", required=True)

    _compile_parser(cmds)

    p = cmds.add_parser(
        "install", help="put a verified program into the PAW SDK's cache for offline use"
    )
    p.add_argument("target", metavar="MODULE/ARTIFACT|FILE.paw", help="the program to install")
    p.add_argument(
        "--base-model", type=Path, metavar="FILE.gguf", help="also install this base-model GGUF"
    )
    p.add_argument(
        "--cache-dir", type=Path, metavar="DIR", help="the SDK cache (default: $PAW_CACHE_DIR)"
    )
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
    p.set_defaults(run=_run_install)

    p = cmds.add_parser("validate", help="check a .paw against the SDK's rules and its base model")
    p.add_argument(
        "file", metavar="FILE.paw|MODULE/ARTIFACT", help="the program to check (a file or artifact)"
    )
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
    _shape_options(p)
    p.set_defaults(run=_run_validate)

    p = cmds.add_parser("inspect", help="show what a .paw holds")
    p.add_argument(
        "file", metavar="FILE.paw|MODULE/ARTIFACT", help="the program to show (a file or artifact)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run_inspect)


_DEFAULT_TEACHERS = ("gpt-5.4-mini=2400", "gpt-5.5=1200")
_MODULES = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def _compile_parser(cmds: Any) -> None:
    p = cmds.add_parser(
        "compile",
        help="compile a natural-language spec into a .paw program (compile-by-training's flags)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("spec", nargs="?", help="natural-language function specification")
    p.add_argument("--spec-file", type=Path, help="read the specification from a file")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("program.paw"),
        help="the .paw bundle to write (default: program.paw)",
    )
    p.add_argument(
        "--teacher",
        action="append",
        metavar="MODEL=EXAMPLES",
        help="teacher and example count; repeat to mix teachers (default: "
        + " ".join(_DEFAULT_TEACHERS)
        + ")",
    )
    p.add_argument(
        "--teacher-temperature", type=float, default=1.0, help="the teacher's sampling temperature"
    )
    p.add_argument(
        "--examples-per-call", type=int, default=8, help="examples asked of the teacher per request"
    )
    p.add_argument(
        "--target-examples",
        type=int,
        default=4800,
        help="training examples in all, split over the teachers",
    )
    p.add_argument("--steps", type=int, default=100, help="optimiser steps")
    p.add_argument("--batch-size", type=int, default=48, help="examples per optimiser step")
    p.add_argument(
        "--micro-batch-size",
        type=int,
        default=48,
        help="examples per forward pass (divides --batch-size)",
    )
    p.add_argument(
        "--learning-rate",
        type=float,
        default=2e-4,
        help="peak learning rate (cosine decay after warmup)",
    )
    p.add_argument(
        "--min-learning-rate",
        type=float,
        default=2e-5,
        help="the learning rate the cosine decays to",
    )
    p.add_argument("--warmup", type=float, default=0.0, help="warmup, as a fraction of --steps")
    p.add_argument("--lora-rank", type=int, default=64, help="LoRA rank")
    p.add_argument("--lora-alpha", type=float, default=16.0, help="LoRA alpha")
    p.add_argument(
        "--lora-init",
        choices=("mapper", "random"),
        default="mapper",
        help="mapper: start from the PAW compiler's adapter (needs PAW_API_KEY); random: a fresh LoRA",
    )
    p.add_argument("--target-modules", default=_MODULES, help="comma-separated LoRA modules")
    p.add_argument(
        "--max-length", type=int, default=2048, help="tokens per training example at most"
    )
    p.add_argument(
        "--loss-chunk-size",
        type=int,
        default=128,
        help="output tokens per chunk of the vocabulary projection",
    )
    p.add_argument("--synth-concurrency", type=int, default=64, help="teacher requests at once")
    p.add_argument("--retries", type=int, default=3, help="retries per teacher request")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the data order and the LoRA initialisation"
    )
    p.add_argument(
        "--base-compiler",
        default="paw-4b-qwen3-0.6b",
        help="the PAW compiler that writes the pseudo-program and the mapper adapter",
    )
    p.add_argument(
        "--interpreter",
        default="Qwen/Qwen3-0.6B",
        help="a Hugging Face model directory, or a module of the build list "
        "(OWNER/NAME means hf.co/OWNER/NAME)",
    )
    p.add_argument(
        "--gradient-checkpointing",
        action="store_true",
        help="trade compute for memory while training",
    )
    p.add_argument("--device", default="auto", help="auto, cuda, mps, or cpu")
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(
            os.environ.get("PAW_COMPILE_CACHE", "~/.cache/programasweights/compile-by-training")
        ).expanduser(),
        help="where teacher answers and mapper assets are cached ($PAW_COMPILE_CACHE)",
    )
    p.add_argument(
        "--save-examples", type=Path, help="also write the training examples to this JSONL file"
    )
    p.add_argument("--keep-adapter", type=Path, help="also keep the peft adapter directory here")
    p.add_argument(
        "--asset-timeout",
        type=int,
        default=180,
        help="seconds to wait for the PAW compiler's assets",
    )
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved configuration as JSON and stop",
    )
    p.add_argument("--json", action="store_true", help="print the final result as JSON")
    wg = p.add_argument_group("wgtpm's additions")
    wg.add_argument(
        "--no-install", action="store_true", help="do not install into the PAW SDK's cache"
    )
    wg.add_argument(
        "--examples", type=Path, metavar="FILE.jsonl", help="train on these examples too"
    )
    wg.add_argument("--runtime", metavar="ID", help="the SDK runtime id, for another interpreter")
    wg.add_argument("--base-model", metavar="FILE|MODULE/FILE", help="the runtime's base GGUF")
    wg.add_argument("--base-model-repo", metavar="OWNER/REPO", help="where the SDK downloads it")
    p.set_defaults(run=_run_compile)


def compile_config(args: argparse.Namespace) -> dict[str, Any]:
    """compile.py's ``--print-config`` document for ``args`` (``serializable_recipe``)."""
    from ..paw.teacher import PROMPT_VERSION

    teachers = [_teacher_arg(v) for v in (args.teacher or _DEFAULT_TEACHERS)]
    return {
        "teachers": [
            {
                "model": model,
                "examples": count,
                "temperature": args.teacher_temperature,
                "examples_per_call": args.examples_per_call,
                "seed": args.seed,
            }
            for model, count in teachers
        ],
        "target_examples": args.target_examples,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "micro_batch_size": args.micro_batch_size,
        "learning_rate": args.learning_rate,
        "min_learning_rate": args.min_learning_rate,
        "warmup": args.warmup,
        "lora_rank": args.lora_rank,
        "lora_alpha": args.lora_alpha,
        "lora_init": args.lora_init,
        "target_modules": _modules(args),
        "max_length": args.max_length,
        "loss_chunk_size": args.loss_chunk_size,
        "synth_concurrency": args.synth_concurrency,
        "retries": args.retries,
        "seed": args.seed,
        "base_compiler": args.base_compiler,
        "interpreter": args.interpreter,
        "gradient_checkpointing": args.gradient_checkpointing,
        "teacher_template": PROMPT_VERSION,
        "public_mapper_compile": True,
    }


def _teacher_arg(value: str) -> tuple[str, int]:
    model, _, raw = value.rpartition("=")
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if not model or count <= 0:
        raise UsageError(f"--teacher {value!r}: want MODEL=EXAMPLES with EXAMPLES > 0")
    return model, count


def _modules(args: argparse.Namespace) -> list[str]:
    return [m.strip() for m in str(args.target_modules).split(",") if m.strip()]


def compile_spec_of(args: argparse.Namespace, recipe_only: bool = False) -> Any:
    """The :class:`~wgtpm.paw.spec.PawSpec` the flags describe; UsageError for a bad one.

    ``recipe_only``: check the recipe's flags and stop there (``None``), as compile.py's
    ``--print-config`` does: the defaults print without a specification."""
    from ..paw.spec import (
        MIN_SPEC_CHARS,
        PawSpec,
        Recipe,
        RuntimeSpec,
        TeacherModel,
        TeacherSpec,
        recipe_problems,
    )
    from ..paw.teacher import DEFAULT_URL

    compile_config(args)  # checks every --teacher
    bad = [
        f"--{flag} must be positive"
        for flag, value in (
            ("examples-per-call", args.examples_per_call),
            ("synth-concurrency", args.synth_concurrency),
        )
        if value <= 0
    ]
    if args.retries < 0:
        bad.append("--retries must not be negative")
    if args.teacher_temperature < 0:
        bad.append("--teacher-temperature must not be negative")
    modules = tuple(_modules(args))
    from ..paw.shape import TARGET_MODULES

    recipe = Recipe(
        target_examples=args.target_examples,
        steps=args.steps,
        batch_size=args.batch_size,
        micro_batch_size=args.micro_batch_size,
        learning_rate=args.learning_rate,
        min_learning_rate=args.min_learning_rate,
        warmup=args.warmup,
        lora_rank=args.lora_rank,
        lora_alpha=args.lora_alpha,
        lora_init=args.lora_init,
        target_modules=tuple(m for m in TARGET_MODULES if m in modules)
        if len(set(modules)) == len(modules) and set(modules) <= set(TARGET_MODULES)
        else modules,
        max_length=args.max_length,
        loss_chunk_size=args.loss_chunk_size,
        gradient_checkpointing=args.gradient_checkpointing,
        seed=args.seed,
        device=args.device,
        base_compiler=args.base_compiler,
    )
    bad += [f"--{k.replace('_', '-')}: {message}" for k, message in recipe_problems(recipe)]
    if bad:
        raise UsageError("; ".join(bad))
    if recipe_only:
        return None
    if args.spec and args.spec_file:
        raise UsageError("pass either a positional specification or --spec-file, not both")
    try:
        text = (
            args.spec_file.read_text(encoding="utf-8") if args.spec_file else (args.spec or "")
        ).strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--spec-file {args.spec_file}: {exc}") from exc
    if len(text) < MIN_SPEC_CHARS:
        raise UsageError(f"the specification must contain at least {MIN_SPEC_CHARS} characters")
    teacher = None
    if args.teacher or args.examples is None:
        teacher = TeacherSpec(
            url=DEFAULT_URL,
            models=tuple(
                TeacherModel(*_teacher_arg(v)) for v in (args.teacher or _DEFAULT_TEACHERS)
            ),
            examples_per_call=args.examples_per_call,
            temperature=args.teacher_temperature,
            concurrency=args.synth_concurrency,
            retries=args.retries,
        )
    interpreter = args.interpreter
    if Path(interpreter).is_dir():
        interpreter = str(Path(interpreter).resolve())
    elif not interpreter.startswith(("./", "../", "/")) and interpreter.count("/") == 1:
        interpreter = "hf.co/" + interpreter
    runtime = RuntimeSpec()
    if args.runtime or args.base_model:
        base = args.base_model
        if base and Path(base).is_file():
            base = str(Path(base).resolve())
        if not (args.runtime and base):
            raise UsageError("--runtime and --base-model go together")
        runtime = RuntimeSpec(id=args.runtime, base_model=base, repo=args.base_model_repo)
    return PawSpec(
        path=Path.cwd() / "paw-compile",
        spec=text,
        pseudo_program=text,
        interpreter=interpreter,
        examples=args.examples.resolve() if args.examples else None,
        teacher=teacher,
        recipe=recipe,
        runtime=runtime,
    )


def _run_compile(args: argparse.Namespace) -> int:
    import time

    if args.print_config:
        compile_spec_of(args, recipe_only=True)  # as compile.py's recipe_from_args
        print(json.dumps(compile_config(args), indent=2))
        return 0
    require("paw", purpose="wgtpm paw compile")
    started = time.perf_counter()
    spec = compile_spec_of(args)
    output: Path = args.output
    if output.suffix != ".paw":
        output = output.with_suffix(output.suffix + ".paw")
    for label, path in (
        ("output", output),
        ("saved examples", args.save_examples),
        ("kept adapter", args.keep_adapter),
    ):
        if path is not None and path.exists() and not args.force:
            raise UsageError(f"{label} path {path} already exists; pass --force to replace it")
    if args.keep_adapter is not None and args.keep_adapter.exists():
        import shutil

        shutil.rmtree(
            args.keep_adapter
        ) if args.keep_adapter.is_dir() else args.keep_adapter.unlink()
    from ..paw.build import CompileOptions, compile_program
    from ._render import make_reporter

    args.cache_dir.mkdir(parents=True, exist_ok=True)
    with _compile_resolver(spec) as resolver:
        compiled = compile_program(
            spec,
            output,
            resolver,
            CompileOptions(
                name=output.stem,
                teacher_cache=args.cache_dir / "wgtpm-teacher",
                cache_dir=args.cache_dir,
                asset_timeout=float(args.asset_timeout),
                save_examples=args.save_examples,
                keep_adapter=args.keep_adapter,
            ),
            reporter=make_reporter(),
        )
    if not args.no_install:
        from ..paw.sdk import install_program

        install_program(output)
    if args.json:
        print(
            json.dumps(
                {
                    "program_id": compiled.program_id,
                    "path": str(output.resolve()),
                    "base_program_id": compiled.base_program_id,
                    "final_loss": compiled.losses[-1],
                    "device": compiled.device,
                    "elapsed_seconds": round(time.perf_counter() - started, 3),
                }
            )
        )
    else:
        print(f"\nCompiled {output}")
        print(f"Program ID: {compiled.program_id}")
        print("\nRun it locally:")
        print("  import programasweights as paw")
        print(f'  fn = paw.function("{compiled.program_id}")')
        print('  print(fn("your input"))')
    return 0


def _compile_resolver(spec: Any) -> AbstractContextManager[Any]:
    """The build list of the package in the current directory, when the flags name modules,
    for a ``with`` block (which closes its HTTP client). Outside a package, the modules
    named are fetched (``@latest`` unless a version is given) into a temporary main module,
    as ``wgtpm get M@V`` does there: nothing is written to the current directory."""
    from ..deps import MapResolver

    refs = [spec.interpreter] + ([spec.runtime.base_model] if spec.runtime.base_model else [])
    modules = [r for r in refs if spec.local_path(r) is None]
    if not modules:
        return nullcontext(MapResolver({}))
    from ..modload import open_resolver
    from ..modload.root import nearest_root

    if nearest_root(Path.cwd()) is None:
        return _outside_resolver(modules)
    return open_resolver(Path.cwd())


@contextmanager
def _outside_resolver(modules: list[str]) -> Iterator[Any]:
    """A resolver over a temporary main module that requires ``modules`` (each
    ``PATH[@VERSION]``), fetched and verified into the module cache first."""
    from ..modget import get
    from ..modload import open_resolver
    from ..modload.options import Options
    from ..modload.project import Project
    from ._modcmds import temporary_main

    with temporary_main() as d:
        with Project.load(d, Options.from_env(default="mod")) as project:
            with project.using_cache():
                get(project, [m if "@" in m else f"{m}@latest" for m in modules], save=False)
            project.save()
        with open_resolver(d) as resolver:
            yield resolver


def _shape_options(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--interpreter",
        type=Path,
        metavar="DIR|config.json",
        help="check shapes against this Hugging Face model",
    )
    group.add_argument(
        "--base-model", type=Path, metavar="FILE.gguf", help="check shapes against this base GGUF"
    )


def _shape(args: argparse.Namespace) -> InterpreterShape | None:
    from ..paw.gguf_adapter import read_gguf_info
    from ..paw.shape import InterpreterShape

    try:
        if args.interpreter is not None:
            config = (
                args.interpreter / "config.json" if args.interpreter.is_dir() else args.interpreter
            )
            return InterpreterShape.from_hf_config(json.loads(config.read_text(encoding="utf-8")))
        if args.base_model is not None:
            return InterpreterShape.from_gguf_fields(read_gguf_info(args.base_model).fields)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the base model's shape: {exc}") from exc
    return None


def _program_file(text: str) -> Path:
    """A ``.paw`` path, or the file of ``MODULE/ARTIFACT`` of the build list (as install takes)."""
    path = Path(text)
    first = text.split("/", 1)[0]
    if path.exists() or "/" not in text or "." not in first or first in (".", ".."):
        return path
    from ..modload import open_resolver
    from ..paw import sdk

    with open_resolver(Path.cwd()) as resolver:
        return sdk.artifact_file(text, resolver)


def _run_install(args: argparse.Namespace) -> int:
    require("paw", *CHECKS_BUNDLE, purpose="wgtpm paw install")
    from ..kinds import PAW, kind_of_source
    from ..paw import sdk

    target = Path(args.target)
    if kind_of_source(args.target) == PAW or target.is_file():
        installed = sdk.install_program(
            target, cache_dir=args.cache_dir, base_model=args.base_model
        )
    else:
        from ..modload import open_resolver

        with open_resolver(Path.cwd()) as resolver:
            if args.base_model is not None:
                installed = sdk.install_program(
                    sdk.artifact_file(args.target, resolver),
                    cache_dir=args.cache_dir,
                    base_model=args.base_model,
                )
            else:
                installed = sdk.install_artifact(args.target, resolver, cache_dir=args.cache_dir)
    if args.json:
        doc = {
            "program_id": installed.program_id,
            "program_dir": str(installed.program_dir),
            "changed": installed.changed,
            "base_model": str(installed.base_model) if installed.base_model else None,
        }
        print(json.dumps(doc, indent=2))
        return 0
    state = "installed" if installed.changed else "already installed"
    print(f"{state} program {installed.program_id} in {installed.program_dir}")
    if installed.base_model is not None:
        print(f"base model {installed.base_model_file} in {installed.base_model.parent}")
    else:
        print(
            f"wgtpm: note: the base model {installed.base_model_file} is not in the SDK cache; the SDK "
            "downloads it on first use, or add its module to wgt.mod (or pass --base-model) to use "
            "the program offline",
            file=sys.stderr,
        )
    return 0


def _run_validate(args: argparse.Namespace) -> int:
    require("paw", *CHECKS_BUNDLE, purpose="wgtpm paw validate")
    from ..paw.sdk import sdk_cache_dir, sdk_runtime_lookups
    from ..paw.validate import validate_file

    path = _program_file(args.file)
    cached, _ = sdk_runtime_lookups(sdk_cache_dir())  # offline: the SDK's cached runtimes
    program = validate_file(path, shape=_shape(args), cached=cached)
    a = program.adapter
    source = "the given base model" if program.shape_source == "given" else program.shape_source
    if args.json:
        doc = {
            "file": str(path),
            "ok": True,
            "program_id": program.program_id,
            "runtime_id": program.runtime.get("runtime_id"),
            "lora_rank": a.rank,
            "lora_alpha": a.alpha,
            "shapes_checked_against": source,
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"{args.file}: ok: program {program.program_id}, runtime {program.runtime.get('runtime_id')} "
        f"({program.runtime_source}), "
        f"LoRA rank {a.rank} alpha {a.alpha:g} on {len(a.layers)} layers x {len(a.modules)} modules "
        f"({', '.join(a.types)}), shapes checked against {source}"
    )
    return 0


def _run_inspect(args: argparse.Namespace) -> int:
    require("paw", *CHECKS_BUNDLE, purpose="wgtpm paw inspect")
    from ..paw.bundle import BundleError, read_bundle
    from ..paw.validate import check_bundle

    path = _program_file(args.file)
    bundle = read_bundle(path)
    program: ValidProgram | None = None
    problems: list[str] = []
    from ..paw.sdk import sdk_cache_dir, sdk_runtime_lookups

    cached, _ = sdk_runtime_lookups(sdk_cache_dir())
    try:
        program = check_bundle(bundle, source=str(path), cached=cached)
    except BundleError as exc:
        problems = exc.problems
    report = _report(path, bundle.members, bundle.meta, program, problems)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(_describe(report))
    return 0


def _report(
    path: Path, members: Any, meta: Any, program: ValidProgram | None, problems: list[str]
) -> dict[str, Any]:
    runtime = program.runtime if program is not None else meta.get("runtime")
    runtime = runtime if isinstance(runtime, dict) else {}
    local = runtime.get("local_sdk")
    local = local if isinstance(local, dict) else {}
    report: dict[str, Any] = {
        "path": str(path),
        "valid": program is not None,
        "problems": problems,
        "program_id": meta.get("program_id"),
        "interpreter": meta.get("interpreter"),
        "runtime_id": runtime.get("runtime_id", meta.get("runtime_id")),
        "runtime_source": program.runtime_source if program is not None else None,
        "base_model": local.get("base_model"),
        "spec": meta.get("spec"),
        "compiler_snapshot": meta.get("compiler_snapshot"),
        "base_program_id": meta.get("base_program_id"),
        "members": [
            {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in members.items()
        ],
    }
    if program is not None:
        a = program.adapter
        report["adapter"] = {
            "rank": a.rank,
            "alpha": a.alpha,
            "layers": list(a.layers),
            "modules": list(a.modules),
            "types": list(a.types),
        }
    build = meta.get("compile_by_training")
    if isinstance(build, dict):
        report["build"] = build
    return report


def _built_by(report: dict[str, Any], build: dict[str, Any]) -> str:
    """One line of provenance: wgtpm's schema (``builder``, ``examples``) or compile.py's."""
    parts = [str(build.get("builder") or report.get("compiler_snapshot") or "compile-by-training")]
    examples = build.get("examples")
    if isinstance(examples, dict):
        parts.append(f"{examples.get('count')} examples (sha256 {examples.get('sha256')})")
    recipe = build.get("recipe")
    if isinstance(recipe, dict):
        teachers = recipe.get("teachers")
        if isinstance(teachers, list) and teachers:
            parts.append(
                "teachers "
                + ", ".join(
                    f"{t.get('model')}={t.get('examples')}" for t in teachers if isinstance(t, dict)
                )
            )
        if recipe.get("steps") is not None:
            parts.append(f"{recipe.get('steps')} steps")
    base = report.get("base_program_id") or (
        build.get("mapper", {}).get("program_id") if isinstance(build.get("mapper"), dict) else None
    )
    if base:
        parts.append(f"mapper {base}")
    if build.get("final_loss") is not None:
        parts.append(f"final loss {build.get('final_loss')}")
    return ", ".join(parts)


def _describe(report: dict[str, Any]) -> str:
    lines = [
        f"{report['path']}: {'valid' if report['valid'] else 'INVALID'} PAW program {report['program_id']}",
        f"  interpreter  {report['interpreter']} (runtime {report['runtime_id']}"
        + (f", {report['runtime_source']})" if report.get("runtime_source") else ")"),
    ]
    base = report.get("base_model")
    if isinstance(base, dict):
        lines.append(
            f"  base model   {base.get('file')} ({base.get('size_bytes')} bytes, sha256 {base.get('sha256')})"
        )
    adapter = report.get("adapter")
    if adapter:
        lines.append(
            f"  adapter      LoRA rank {adapter['rank']} alpha {adapter['alpha']:g}, layers "
            f"{adapter['layers'][0]}-{adapter['layers'][-1]}, {', '.join(adapter['modules'])} ({', '.join(adapter['types'])})"
        )
    build = report.get("build")
    if isinstance(build, dict):
        lines.append(f"  built by     {_built_by(report, build)}")
    spec = str(report.get("spec") or "").strip().splitlines()
    if spec:
        lines.append(f"  spec         {spec[0][:100]}")
    lines.append("  members")
    lines += [f"    {m['name']:<20} {m['size']:>10}  {m['sha256']}" for m in report["members"]]
    lines += [f"  problem: {p}" for p in report["problems"]]
    return "\n".join(lines)
