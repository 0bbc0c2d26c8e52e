"""``wgtpm paw``: install, validate and inspect PAW programs (``.paw`` bundles).

``wgtpm paw install MODULE/ARTIFACT|FILE.paw`` validates a program and places
it in the PAW SDK's cache (``$PAW_CACHE_DIR`` or ``~/.cache/programasweights``),
with its base model when the build list (or ``--base-model``) has it, so that
``programasweights.function(ID, offline=True)`` works without a network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..paw.shape import InterpreterShape
    from ..paw.validate import ValidProgram

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    paw = sub.add_parser("paw", help="install, validate and inspect PAW programs (.paw)")
    cmds = paw.add_subparsers(dest="paw_command", metavar="COMMAND", required=True)

    p = cmds.add_parser(
        "install", help="put a verified program into the PAW SDK's cache for offline use"
    )
    p.add_argument("target", metavar="MODULE/ARTIFACT|FILE.paw")
    p.add_argument(
        "--base-model", type=Path, metavar="FILE.gguf", help="also install this base-model GGUF"
    )
    p.add_argument(
        "--cache-dir", type=Path, metavar="DIR", help="the SDK cache (default: $PAW_CACHE_DIR)"
    )
    p.set_defaults(run=_run_install)

    p = cmds.add_parser("validate", help="check a .paw against the SDK's rules and its base model")
    p.add_argument("file", type=Path, metavar="FILE.paw")
    _shape_options(p)
    p.set_defaults(run=_run_validate)

    p = cmds.add_parser("inspect", help="show what a .paw holds")
    p.add_argument("file", type=Path, metavar="FILE.paw")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run_inspect)


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


def _run_install(args: argparse.Namespace) -> int:
    from ..kinds import PAW, kind_of_source
    from ..paw import sdk

    target = Path(args.target)
    if kind_of_source(args.target) == PAW or target.is_file():
        installed = sdk.install_program(
            target, cache_dir=args.cache_dir, base_model=args.base_model
        )
    else:
        from ..modload import open_resolver

        resolver = open_resolver(Path.cwd())
        if args.base_model is not None:
            installed = sdk.install_program(
                sdk.artifact_file(args.target, resolver),
                cache_dir=args.cache_dir,
                base_model=args.base_model,
            )
        else:
            installed = sdk.install_artifact(args.target, resolver, cache_dir=args.cache_dir)
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
    from ..paw.validate import validate_file

    program = validate_file(args.file, shape=_shape(args))
    a = program.adapter
    source = "the given base model" if program.shape_source == "given" else program.shape_source
    print(
        f"{args.file}: ok: program {program.program_id}, runtime {program.runtime.get('runtime_id')}, "
        f"LoRA rank {a.rank} alpha {a.alpha:g} on {len(a.layers)} layers x {len(a.modules)} modules "
        f"({', '.join(a.types)}), shapes checked against {source}"
    )
    return 0


def _run_inspect(args: argparse.Namespace) -> int:
    from ..paw.bundle import BundleError, read_bundle
    from ..paw.validate import check_bundle

    bundle = read_bundle(args.file)
    program: ValidProgram | None = None
    problems: list[str] = []
    try:
        program = check_bundle(bundle, source=str(args.file))
    except BundleError as exc:
        problems = exc.problems
    report = _report(args.file, bundle.members, bundle.meta, program, problems)
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
