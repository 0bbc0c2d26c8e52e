"""``wgtpm build``, ``check``, ``run`` and ``inspect``: the artifact commands.

``wgtpm verify ARTIFACT`` is the lead's command; it calls :func:`verify_artifact`.
torch is imported only inside the commands that load or train a model, each
after :func:`wgtpm._extras.require` has said it is there (``check`` needs it
only for a source's imports).

An ARTIFACT on the command line is a path to an artifact directory (or a
``.paw`` file), the NAME of an artifact of the package in the current
directory (``build/NAME``), or ``MODULE/ARTIFACT`` of its build list.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import BuildError, UsageError, WgtpmError
from .._extras import RUNS_PROGRAM, require
from ..deps import ModuleResolver, ResolvedModule
from ..kinds import PAW, kind_of_source

if TYPE_CHECKING:
    from .._report import Reporter
    from ..modfile import Artifact as ModArtifact
    from ..modload.resolver import ProjectResolver, VendorResolver
    from ..weightlang.api import Artifact

__all__ = ["register", "verify_artifact"]


_ARTIFACT_HELP = "an artifact directory or .paw file, a NAME of wgt.mod, or MODULE/ARTIFACT"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("build", help="build the package's artifacts into build/, or FILE.wgt")
    p.add_argument(
        "artifacts",
        nargs="*",
        metavar="ARTIFACT",
        help="names from wgt.mod (default: all), or .wgt files to build on their own",
    )
    p.add_argument(
        "-o",
        "--out",
        metavar="DIR",
        help="with FILE.wgt: write the artifact to DIR/MODEL (default: build)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when no input changed (by default an artifact whose source, data, "
        "imports, wgt.mod, wgt.sum and tool versions are unchanged is 'up to date')",
    )
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
    p.set_defaults(run=_run_build)

    p = sub.add_parser(
        "check", help="parse and type-check a .wgt file and read its data (build resolves imports)"
    )
    p.add_argument("file", metavar="FILE.wgt", help="the WeightLang source file to check")
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")
    p.set_defaults(run=_run_check)

    p = sub.add_parser("run", help="run an artifact on one input")
    p.add_argument("artifact", metavar="ARTIFACT", help=_ARTIFACT_HELP)
    p.add_argument(
        "--input",
        required=True,
        metavar="JSON",
        help='a vector or a batch, e.g. "[[0, 1], [1, 1]]" (for a .paw: the input text)',
    )
    p.add_argument(
        "--interpreter",
        metavar="DIR",
        help="for a .paw: the interpreter model in Hugging Face format (default: from the build list)",
    )
    p.set_defaults(run=_run_run)

    p = sub.add_parser(
        "inspect",
        help="show an artifact's interface, training and provenance, "
        "or a weights file's tensors (MODULE/FILE.safetensors, MODULE)",
    )
    p.add_argument(
        "artifact",
        metavar="ARTIFACT",
        help=_ARTIFACT_HELP + "; or MODULE/FILE.safetensors|.gguf (its tensor table), "
        "or MODULE (its weights files)",
    )
    p.add_argument("--json", action="store_true", help="print the manifest (or table) as JSON")
    p.set_defaults(run=_run_inspect)


# --- build -------------------------------------------------------------------


class _LazyResolver:
    """The package's build list, opened only when a build step asks for a module.

    Building a model without module imports then needs no wgt.sum, no cache and
    no network.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._resolver: ProjectResolver | VendorResolver | None = None

    def _open(self) -> ModuleResolver:
        if self._resolver is None:
            from ..modload import open_resolver

            self._resolver = open_resolver(self.root)
        return self._resolver

    def close(self) -> None:
        """Close the build list's HTTP client, if opening it made one."""
        if self._resolver is not None:
            self._resolver.close()

    def modules(self) -> Sequence[str]:
        return self._open().modules()

    def module(self, path: str) -> ResolvedModule:
        return self._open().module(path)


@contextmanager
def _resolver_of(root: Path | None) -> Iterator[_LazyResolver | None]:
    """A :class:`_LazyResolver` of the package at ``root`` (``None``: none), closed when the
    block ends, however it ends."""
    if root is None:
        yield None
        return
    lazy = _LazyResolver(root)
    try:
        yield lazy
    finally:
        lazy.close()


def _run_build(args: argparse.Namespace) -> int:
    from .. import modfile
    from ..build import BUILD_DIR

    root = Path.cwd()
    if args.out or any(a.endswith(".wgt") for a in args.artifacts):
        return _build_files(root, args.artifacts, Path(args.out or BUILD_DIR), args.json)
    try:
        data = (root / "wgt.mod").read_bytes()
    except FileNotFoundError as exc:
        raise UsageError(
            f"no wgt.mod in {root}: run 'wgtpm build' in a package directory "
            "(or 'wgtpm check FILE.wgt' for a single file)"
        ) from exc
    mf = modfile.parse(data, "wgt.mod")
    selected = _select(mf.artifacts, args.artifacts)
    from ._render import make_reporter

    reporter = make_reporter()
    local = [(root / r.new_path).resolve() for r in mf.replaces if r.is_local]
    with closing(_LazyResolver(root)) as resolver:
        done = [_build_one(args, root, a, local, resolver, reporter) for a in selected]
    if not selected:
        print("wgtpm: wgt.mod declares no artifacts; nothing to build", file=sys.stderr)
    if args.json:
        _print_json({"artifacts": done})
    return 0


def _build_one(
    args: argparse.Namespace,
    root: Path,
    artifact: ModArtifact,
    local: list[Path],
    resolver: ModuleResolver,
    reporter: Reporter,
) -> dict[str, Any]:
    """Build one artifact of wgt.mod unless its stamp says no input changed."""
    from ..build import BUILD_DIR, Target, build_artifact, builder_for_source
    from . import _buildstamp as stamps

    target = Target(root, artifact.name, artifact.source, root / BUILD_DIR)
    builder = builder_for_source(artifact.source)
    inputs = stamps.inputs_hash(root, artifact.name, builder.kind, artifact.source, local)
    stamp = stamps.stamp_path(target.out_dir, artifact.name)
    fresh = not args.force and stamps.is_fresh(root, stamp, inputs)
    if fresh:
        summary = f"{artifact.name} is up to date (no input changed; --force rebuilds)"
    else:
        summary = build_artifact(target, resolver, reporter).summary
        stamps.record(root, stamp, inputs, builder.outputs(target) or {})
    outputs = builder.outputs(target) or {}
    if not args.json:
        print(summary)
    return {
        "name": artifact.name,
        "kind": builder.kind,
        "up_to_date": fresh,
        "summary": summary,
        "outputs": {k: str(v) for k, v in outputs.items()},
    }


def _build_files(root: Path, files: Sequence[str], out: Path, as_json: bool = False) -> int:
    """``wgtpm build FILE.wgt... [-o DIR]``: single files, in a package or not, to DIR/MODEL."""
    names = [f for f in files if not f.endswith(".wgt")]
    if not files:
        raise UsageError("-o DIR needs the .wgt files to build: wgtpm build FILE.wgt -o DIR")
    if names:
        raise UsageError(
            f"{', '.join(names)}: not .wgt files; build .wgt files on their own "
            "(wgtpm build FILE.wgt [-o DIR]) or wgt.mod's artifacts (wgtpm build [ARTIFACT...]), "
            "not both at once"
        )
    require("weightlang", purpose="wgtpm build " + " ".join(files))
    _check_writable(out)  # before any training: a model trained for nothing is a lost hour
    from ..weightlang.build import build_file
    from ..weightlang.report import build_line

    # Module imports resolve through the build list of the package here, if there is one.
    from ._render import make_reporter

    reporter = make_reporter()
    done = []
    with _resolver_of(root if (root / "wgt.mod").is_file() else None) as resolver:
        for file in files:
            result = build_file(Path(file), out, resolver=resolver, name=file, reporter=reporter)
            summary = f"built {result.path} from {file}: {build_line(result.manifest)}"
            done.append({"file": file, "path": str(result.path), "summary": summary})
            if not as_json:
                print(summary)
    if as_json:
        _print_json({"artifacts": done})
    return 0


def _check_writable(out: Path) -> None:
    """Make ``out`` and write a file in it; a usage error naming it when either fails."""
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".wgtpm-probe-"):
            pass
    except OSError as exc:
        raise UsageError(
            f"-o {out}: cannot write there ({exc.strerror or exc}); nothing was built: "
            "choose a directory you can write to"
        ) from exc


def _select(declared: Sequence[ModArtifact], names: Sequence[str]) -> list[ModArtifact]:
    by_name = {a.name: a for a in declared}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = ", ".join(by_name) or "none"
        raise UsageError(f"wgt.mod declares no artifact {', '.join(unknown)}; it declares: {known}")
    return [by_name[n] for n in names] if names else list(declared)


# --- check -------------------------------------------------------------------


def _run_check(args: argparse.Namespace) -> int:
    """Parse, type-check, read the data, and resolve imports (module imports in a package)."""
    from .._errors import ParseError
    from ..modload.files import nearest_root
    from ..weightlang.report import describe_program
    from ..weightlang.source import check_file

    source = Path(args.file)
    root = nearest_root(source.resolve().parent)
    try:
        with _resolver_of(root) as resolver:
            program, datasets, imports = check_file(source, name=args.file, resolver=resolver)
    except ParseError as exc:
        if not args.json:
            raise
        _print_json(
            {
                "file": args.file,
                "ok": False,
                "errors": [
                    {
                        "file": e.pos.file,
                        "line": e.pos.line,
                        "col": e.pos.col,
                        "message": e.message,
                    }
                    for e in exc.errors
                ],
            }
        )
        return 1
    summary = describe_program(program, datasets)
    if args.json:
        _print_json({"file": args.file, "ok": True, "summary": summary, "imports": imports})
    else:
        print(f"{args.file}: ok: {summary}")
    return 0


# --- run, inspect, verify ---------------------------------------------------------


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """Show the loader's warnings (untrained tensors) as ``wgtpm: warning:`` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        print(f"wgtpm: warning: {w.message}", file=sys.stderr)


def _locate(ref: str, purpose: str) -> Path:
    """The artifact ``ref`` names; the weightlang extra first (the locator of
    :mod:`wgtpm.weightlang.api` loads torch)."""
    require("weightlang", purpose=purpose)
    from ..weightlang.api import locate

    with closing(_LazyResolver(Path.cwd())) as resolver:  # opened for MODULE/ARTIFACT only
        return locate(ref, project_dir=Path.cwd(), resolver=resolver)


def _open(ref: str, *, warn: bool, purpose: str) -> Artifact:
    path = _locate(ref, purpose)
    from ..weightlang.api import open_artifact

    if kind_of_source(path.name) == PAW:
        raise UsageError(f"{ref} is a PAW program, not a WeightLang artifact")
    return open_artifact(path, warn_untrained=warn)


def _run_run(args: argparse.Namespace) -> int:
    if kind_of_source(args.artifact) == PAW and Path(args.artifact).is_file():
        # a .paw file on disk needs the paw extra, not the weightlang locator
        print(_run_paw(Path(args.artifact), args.input, args.interpreter))
        return 0
    path = _locate(args.artifact, "wgtpm run")
    if kind_of_source(path.name) == PAW:
        print(_run_paw(path, args.input, args.interpreter))
        return 0
    from ..weightlang.api import open_artifact

    with _warnings_to_stderr():
        artifact = open_artifact(path, warn_untrained=True)
    try:
        inputs = json.loads(args.input)
    except ValueError as exc:
        raise UsageError(f"--input is not valid JSON ({exc}); expected e.g. '[0, 1]'") from exc
    except RecursionError as exc:
        raise UsageError("--input is nested too deeply; expected e.g. '[0, 1]'") from exc
    out = artifact.predict(inputs)
    try:  # NaN is not JSON: a model that overflows says so instead of printing it
        print(json.dumps({artifact.manifest.output.name: out.tolist()}, allow_nan=False))
    except ValueError as exc:
        raise BuildError(
            f"{path}: the output {artifact.manifest.output.name} holds NaN or infinite values "
            "for this input (the model overflows)"
        ) from exc
    return 0


def _run_paw(path: Path, text: str, interpreter: str | None = None) -> str:
    require("paw", *RUNS_PROGRAM, purpose="running a PAW program")
    from ..paw.run import run_program

    # A JSON string literal ('"some text"') is decoded; anything else is the text itself.
    if text.startswith('"'):
        try:
            text = str(json.loads(text))
        except ValueError:
            pass
    # The program's interpreter model may be a module of this package's build list.
    root = Path.cwd()
    interp = Path(interpreter) if interpreter else None
    with _resolver_of(root if (root / "wgt.mod").is_file() else None) as resolver:
        return str(run_program(path, text, interpreter=interp, resolver=resolver))


def _run_inspect(args: argparse.Namespace) -> int:
    from ._inspect_tensors import inspect_weights

    shown = inspect_weights(args.artifact, args.json)  # MODULE/FILE.safetensors, MODULE
    if shown is not None:
        return shown
    if _inspect_saved(args.artifact, args.json):
        return 0
    artifact = _open(args.artifact, warn=False, purpose="wgtpm inspect")
    from ..weightlang.manifest import manifest_bytes
    from ..weightlang.report import describe_manifest

    if args.json:
        sys.stdout.write(manifest_bytes(artifact.manifest.raw).decode("ascii"))
    else:
        print(describe_manifest(str(artifact.path), artifact.manifest))
    return 0


def _inspect_saved(ref: str, as_json: bool) -> bool:
    """Print a model saved by ``wgtpm.save`` (torch, with tensor origins); ``False`` for others."""
    from ..pinned._manifest import (
        describe_saved,
        is_saved_model,
        manifest_bytes,
        read_saved_manifest,
    )

    path = _locate(ref, "wgtpm inspect")
    if not is_saved_model(path):
        return False
    manifest = read_saved_manifest(path)
    if as_json:
        sys.stdout.write(manifest_bytes(manifest).decode("utf-8"))
    else:
        print(describe_saved(str(path), manifest))
    return True


def verify_artifact(ref: str, as_json: bool) -> int:
    """Verify the artifact ``ref`` names; print the result. For ``wgtpm verify ARTIFACT``.

    Text mode raises the error (the CLI prints it and exits 1); JSON mode prints
    ``{"artifact", "ok", "error"}`` or ``{"artifact", "ok", "model", "weights_sha256",
    "tensors", "untrained"}`` and returns 1 or 0.
    """
    try:
        artifact = _open(ref, warn=False, purpose="wgtpm verify ARTIFACT")
    except WgtpmError as exc:
        if not as_json:
            raise
        _print_json({"artifact": ref, "ok": False, "error": str(exc)})
        return 1
    report: dict[str, Any] = {
        "artifact": str(artifact.path),
        "ok": True,
        "model": artifact.name,
        "weights_sha256": artifact.weights_sha256,
        "tensors": len(artifact.manifest.tensors),
        "untrained": artifact.untrained_tensors,
    }
    if as_json:
        _print_json(report)
        return 0
    print(
        f"{artifact.path}: ok: model {artifact.name}, weights sha256 {artifact.weights_sha256}, "
        f"{report['tensors']} tensors verified"
    )
    if artifact.untrained_tensors:
        print(f"{artifact.path}: note: untrained tensors: {', '.join(artifact.untrained_tensors)}")
    return 0


def _print_json(obj: object) -> None:
    print(json.dumps(obj, sort_keys=True))
