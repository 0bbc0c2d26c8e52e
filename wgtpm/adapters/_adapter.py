"""``wgtpm.adapter(REF)``: a LoRA adapter of the build list, pinned to the base it was trained on.

Two kinds of adapter are understood, both named ``MODULE/NAME`` of the build
list of the package in ``project_dir`` (a ``.paw`` file may also be a path):

- ``peft``: a directory ``NAME/`` of the module holding ``adapter_config.json``
  (``peft_type`` ``LORA``) and ``adapter_model.safetensors``. Its base is the
  module the adapter module's own ``wgt.mod`` requires, at the version it
  requires: the one whose path is the config's ``base_model_name_or_path``
  (or ``hf.co/`` + it), else the only requirement there is.
- ``paw``: a PAW program (``NAME.paw``, validated as ``wgtpm paw validate``
  does); its base is the interpreter module and version its bundle records
  (``meta.json``: ``compile_by_training.interpreter``), which is what
  ``wgtpm run`` runs it on. A program that records none (one built from a
  local directory, or one from the PAW hub) has no pinned base here.

The base's weights sha256 comes from the base module of the same build list,
which must select the very version the adapter records; a build list that
selects another version of it is an error naming both. Nothing is unpickled:
peft reads ``adapter_model.safetensors`` only, and a ``.paw``'s GGUF LoRA is
converted in memory (:mod:`wgtpm.adapters._lora`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _json
from .._errors import ParseError, ResolveError, UsageError, WgtpmError
from ..deps import ModuleResolver, ResolvedModule, split_ref
from ..kinds import PAW
from ._base import (
    BaseIdentity,
    BaseMismatchError,
    base_identity,
    base_of,
    describe,
    mark_base,
)

__all__ = ["PEFT_CONFIG", "PEFT_WEIGHTS", "Adapter", "open_adapter", "project_resolver"]

PEFT_CONFIG = "adapter_config.json"
PEFT_WEIGHTS = "adapter_model.safetensors"

#: An adapter_config.json larger than this is not a peft config (they are a few KiB).
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class Adapter:
    """A verified LoRA adapter and the base it is pinned to.

    ``kind`` is ``"peft"`` or ``"paw"``; ``path`` the adapter directory or
    ``.paw`` file (read-only, in the module cache); ``base`` its pinned base;
    ``rank``, ``alpha`` and ``target_modules`` describe the LoRA.
    """

    ref: str
    kind: str
    path: Path
    base: BaseIdentity
    rank: int
    alpha: float
    target_modules: tuple[str, ...]
    _bundle: Any = field(default=None, repr=False, compare=False)

    def check(self, model: object) -> None:
        """Raise :class:`BaseMismatchError` unless ``model``'s recorded base is :attr:`base`."""
        got = base_of(model)
        if got != self.base:
            raise BaseMismatchError(self.ref, self.base, got)

    def apply(self, model: Any, *, merge: bool = False) -> Any:
        """The LoRA applied to ``model``, its pinned base (checked first; see :meth:`check`).

        Returns a ``peft.PeftModel`` wrapping ``model`` (whose modules it changes
        in place), or with ``merge=True`` the model with the LoRA merged into its
        weights. Either records the same base as ``model``.
        """
        self.check(model)
        from ._lora import apply_paw, apply_peft

        if self.kind == "peft":
            out = apply_peft(model, self.path, where=self.ref)
        else:
            out = apply_paw(model, self._bundle, where=self.ref)
        if merge:
            out = out.merge_and_unload()
        mark_base(out, self.base)
        return out


@contextmanager
def project_resolver(
    project_dir: Path | None, resolver: ModuleResolver | None
) -> Iterator[ModuleResolver]:
    """``resolver``, or the build list of the package in ``project_dir`` (closed afterwards)."""
    if resolver is not None:
        yield resolver
        return
    from ..modload import open_resolver

    opened = open_resolver(project_dir if project_dir is not None else Path.cwd())
    try:
        yield opened
    finally:
        opened.close()


def open_adapter(
    ref: str | Path,
    *,
    project_dir: Path | None = None,
    resolver: ModuleResolver | None = None,
) -> Adapter:
    """The adapter ``ref`` names: ``MODULE/NAME`` of the build list, or a ``.paw`` file path."""
    text = str(ref)
    local = Path(text)
    with project_resolver(project_dir, resolver) as res:
        if local.is_file() and local.suffix == ".paw":
            return _paw_adapter(text, local, res)
        if local.exists():
            raise UsageError(
                f"{text}: name a peft adapter as MODULE/DIR of the build list (its wgt.mod "
                "requires the base), or give a .paw program"
            )
        module, rest = split_ref(text, res)
        if any(part in ("", ".", "..") for part in rest.split("/")):
            raise UsageError(f"{text}: {rest!r} is not a path inside module {_label(module)}")
        where = module.dir / rest
        if (where / PEFT_CONFIG).is_file():
            return _peft_adapter(text, module, where, res)
        from ..build import module_artifact

        found = module_artifact(module, rest)
        if found is not None and found.kind == PAW:
            return _paw_adapter(text, found.path, res)
        raise UsageError(
            f"{text}: module {_label(module)} has no adapter {rest!r}: want a directory "
            f"{rest}/ with {PEFT_CONFIG} and {PEFT_WEIGHTS}, or a PAW program {rest}.paw"
        )


def _label(module: ResolvedModule) -> str:
    return f"{module.path}@{module.version}" if module.version else module.path


def _pinned(
    ref: str, module: str, version: str, resolver: ModuleResolver, recorded_by: str
) -> BaseIdentity:
    """The identity of ``module@version`` from the build list, which must select that version."""
    try:
        selected = resolver.module(module)
    except ResolveError as exc:
        raise ResolveError(f"adapter {ref}: its base {module}@{version}: {exc}") from exc
    if selected.version != version:
        raise ResolveError(
            f"adapter {ref} is pinned to {module}@{version} ({recorded_by}), but the build list "
            f"selects {describe(base_identity(selected))}: an adapter applies only to the base "
            f"it was trained on; require {module} {version}, or use an adapter trained on "
            f"{_label(selected)}"
        )
    return base_identity(selected)


# --- peft ----------------------------------------------------------------------------


def _peft_adapter(
    ref: str, module: ResolvedModule, where: Path, resolver: ModuleResolver
) -> Adapter:
    config = _peft_config(ref, where)
    if not (where / PEFT_WEIGHTS).is_file():
        raise UsageError(
            f"adapter {ref}: {PEFT_WEIGHTS} is missing; wgtpm loads peft adapters from "
            "safetensors only (never adapter_model.bin, which is a pickle)"
        )
    base_path, version = _required_base(ref, module, config.get("base_model_name_or_path"))
    base = _pinned(ref, base_path, version, resolver, f"{module.path}'s wgt.mod requires it")
    targets = config.get("target_modules")
    modules = (
        tuple(sorted(str(t) for t in targets))
        if isinstance(targets, list)
        else ((str(targets),) if targets else ())
    )
    return Adapter(ref, "peft", where, base, config["r"], float(config["lora_alpha"]), modules)


def _peft_config(ref: str, where: Path) -> dict[str, Any]:
    path = where / PEFT_CONFIG
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UsageError(f"adapter {ref}: {PEFT_CONFIG} is over {MAX_CONFIG_BYTES} bytes")
        config = _json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"adapter {ref}: {PEFT_CONFIG} is not readable JSON ({exc})") from exc
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        got = config.get("peft_type") if isinstance(config, dict) else None
        raise UsageError(f"adapter {ref}: {PEFT_CONFIG}: peft_type {got!r}, want 'LORA'")
    rank, alpha = config.get("r"), config.get("lora_alpha")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        raise UsageError(f"adapter {ref}: {PEFT_CONFIG}: r {rank!r} is not a positive integer")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise UsageError(f"adapter {ref}: {PEFT_CONFIG}: lora_alpha {alpha!r} is not a number")
    return config


def _required_base(ref: str, module: ResolvedModule, named: object) -> tuple[str, str]:
    """The base ``module``'s wgt.mod requires: (path, version)."""
    from .. import modfile

    try:
        mf = modfile.parse((module.dir / "wgt.mod").read_bytes(), f"{_label(module)}/wgt.mod")
    except OSError as exc:
        raise UsageError(
            f"adapter {ref}: module {_label(module)} has no wgt.mod to name the adapter's base"
        ) from exc
    except (ParseError, WgtpmError) as exc:
        raise UsageError(f"adapter {ref}: {exc}") from exc
    requires = {r.path: r.version for r in mf.requires}
    if isinstance(named, str):
        for path in (named, f"hf.co/{named}"):
            if path in requires:
                return path, requires[path]
    if len(requires) == 1:
        return next(iter(requires.items()))
    listed = ", ".join(sorted(requires)) or "none"
    raise UsageError(
        f"adapter {ref}: cannot tell its base: {PEFT_CONFIG} names base_model_name_or_path "
        f"{named!r}, which {_label(module)}'s wgt.mod does not require (it requires: {listed})"
    )


# --- PAW ---------------------------------------------------------------------------


def _paw_adapter(ref: str, path: Path, resolver: ModuleResolver) -> Adapter:
    from ..paw.bundle import read_bundle
    from ..paw.validate import check_bundle

    program = check_bundle(read_bundle(path), source=ref)
    module, version = recorded_interpreter(program.bundle.meta)
    if module is None or version is None:
        raise UsageError(
            f"adapter {ref}: the program records no interpreter module@version "
            "(meta.json: compile_by_training.interpreter), so it has no pinned base; "
            "rebuild it with 'wgtpm build' from a package whose build list has the interpreter"
        )
    base = _pinned(ref, module, version, resolver, "its meta.json records it")
    return Adapter(
        ref,
        "paw",
        path,
        base,
        program.adapter.rank,
        program.adapter.alpha,
        tuple(sorted(program.adapter.modules)),
        program.bundle,
    )


def recorded_interpreter(meta: Any) -> tuple[str | None, str | None]:
    """(module, version) of the interpreter a wgtpm-built bundle records; ``None`` for what it lacks."""
    build = meta.get("compile_by_training") if isinstance(meta, dict) else None
    record = build.get("interpreter") if isinstance(build, dict) else None
    if not isinstance(record, dict):
        return None, None
    module, version = record.get("module"), record.get("version")
    return (
        module if isinstance(module, str) and module else None,
        version if isinstance(version, str) and version else None,
    )
