"""Run a ``.paw`` program: in pure Python (transformers), or through the PAW SDK (llama.cpp).

The pure-Python path loads the interpreter in Hugging Face format, adds the
adapter's ``alpha / r * B @ A`` to each adapted weight (what llama.cpp does
with a LoRA at scale 1), fills the prompt template with the input and decodes
greedily until the end-of-turn token, as the SDK does. It needs the
interpreter's directory, which a bundle cannot carry; it comes from, in order:

1. ``interpreter=``: a Hugging Face model directory;
2. the module a wgtpm-built bundle records (``compile_by_training.interpreter``),
   looked up in ``resolver``, by default the build list of the package in the
   current directory (so ``wgtpm run build/triage.paw`` works in the package).
   A module that is not there (no package, not in the build list, unreachable)
   counts as no interpreter; one whose bytes fail verification (a checksum
   SECURITY ERROR) stops the run with that error, and so does a build list that
   selects another version of it than the one the bundle records it was trained
   on (:func:`pinned_interpreter`).

The bundle is validated first, against the interpreter's own ``config.json``
shape. ``backend="sdk"`` (or ``"auto"`` when ``llama_cpp`` is installed and no
interpreter directory is known) hands the bundle to ``programasweights.function``.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import _json
from .._errors import (
    BuildError,
    FetchError,
    NotFoundError,
    ParseError,
    ResolveError,
    UsageError,
    VerifyError,
)
from ..deps import ModuleResolver, ResolvedModule
from .bundle import read_bundle
from .prompt import fill
from .shape import HF_MODULE_PATHS, InterpreterShape
from .validate import ValidProgram, check_bundle

__all__ = ["BACKENDS", "load_program", "pinned_interpreter", "run_program"]

BACKENDS = ("auto", "transformers", "sdk")


def run_program(
    path: Path,
    text: str,
    *,
    interpreter: Path | None = None,
    resolver: ModuleResolver | None = None,
    backend: str = "auto",
    max_new_tokens: int = 256,
) -> str:
    """The program's output for ``text`` (stripped, as the SDK returns it)."""
    return load_program(
        path,
        interpreter=interpreter,
        resolver=resolver,
        backend=backend,
        max_new_tokens=max_new_tokens,
    )(text)


def load_program(
    path: Path,
    *,
    interpreter: Path | None = None,
    resolver: ModuleResolver | None = None,
    backend: str = "auto",
    max_new_tokens: int = 256,
) -> Callable[[str], str]:
    """Load the program once; the result maps an input to the program's output."""
    if backend not in BACKENDS:
        raise UsageError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    bundle = read_bundle(path)
    directory = interpreter or _recorded_interpreter(path, bundle.meta, resolver)
    if backend == "sdk" or (backend == "auto" and directory is None and _has_llama_cpp()):
        return _sdk_function(path)
    if directory is None:
        raise UsageError(
            f"{path}: no interpreter to run the program on: pass the interpreter's Hugging Face "
            "directory (--interpreter DIR), run it inside the project whose build list has the "
            "interpreter module, or install llama-cpp-python to run it through the PAW SDK"
        )
    shape = _shape_of(directory)
    program = check_bundle(bundle, source=str(path), shape=shape)
    return _TransformersProgram(program, directory, max_new_tokens)


def _recorded_interpreter(path: Path, meta: Any, resolver: ModuleResolver | None) -> Path | None:
    pinned = pinned_interpreter(path, meta, resolver)
    return pinned.dir if pinned is not None else None


def pinned_interpreter(
    path: Path, meta: Any, resolver: ModuleResolver | None
) -> ResolvedModule | None:
    """The interpreter module a wgtpm-built bundle records, as the build list has it.

    ``None`` when the bundle records none, or the build list cannot give it (no
    package, not in its build list, unreachable): then there is no interpreter.
    A bundle that records ``module@version`` runs only where the build list selects
    that version, the base it was trained on: another one is a
    :class:`~wgtpm.ResolveError` naming both (``wgtpm run`` and ``wgtpm.load`` alike).
    """
    build = meta.get("compile_by_training") if isinstance(meta, dict) else None
    record = build.get("interpreter") if isinstance(build, dict) else None
    module = record.get("module") if isinstance(record, dict) else None
    version = record.get("version") if isinstance(record, dict) else None
    if not isinstance(module, str) or not module:
        return None
    try:
        if resolver is None:
            from ..modload import open_resolver

            resolver = open_resolver(Path.cwd())
        selected = resolver.module(module)
    except VerifyError:
        # Bytes that disagree with wgt.sum (a SECURITY ERROR) or with their index are
        # never "no interpreter": the user must see them as they are.
        raise
    except (UsageError, ParseError, ResolveError, NotFoundError, FetchError, OSError):
        return None  # no package here, the module is not in its build list, or unreachable
    if isinstance(version, str) and version and selected.version != version:
        shown = f"@{selected.version}" if selected.version else f" ({selected.dir})"
        raise ResolveError(
            f"{path}: the program was trained on {module}@{version} (its meta.json records it), "
            f"but the build list selects {module}{shown}: a program runs only on the interpreter "
            f"it was trained on; require {module} {version}"
        )
    return selected


def _shape_of(directory: Path) -> InterpreterShape:
    try:
        config = _json.loads((directory / "config.json").read_text(encoding="utf-8"))
        return InterpreterShape.from_hf_config(config)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{directory} is not a Hugging Face model directory with a Qwen3 config.json: {exc}"
        ) from exc


def _has_llama_cpp() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _sdk_function(path: Path) -> Callable[[str], str]:
    try:
        import programasweights
    except ImportError as exc:
        raise UsageError("running through the SDK needs: pip install programasweights") from exc
    function: Callable[[str], str] = programasweights.function(str(path))
    return function


class _TransformersProgram:
    """The interpreter with the program's LoRA merged in, decoding greedily."""

    def __init__(self, program: ValidProgram, directory: Path, max_new_tokens: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from .gguf_adapter import load_lora_pairs

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self._torch = torch
        self._template = program.bundle.prompt_template
        self._max_new_tokens = max_new_tokens
        model: Any
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(directory))
            # safetensors only: weights are never unpickled (docs/design.md section 9).
            model = AutoModelForCausalLM.from_pretrained(
                str(directory), dtype=torch.float32, use_safetensors=True
            )
        except (OSError, ValueError) as exc:
            raise BuildError(f"cannot load the interpreter from {directory}: {exc}") from exc
        model.eval()
        self._model = model
        # transformers 5 renamed past_key_values to cache.
        forward = inspect.signature(self._model.forward).parameters
        self._cache_arg = "cache" if "cache" in forward else "past_key_values"
        scale = program.adapter.alpha / program.adapter.rank
        layers = self._model.model.layers
        with torch.no_grad():
            for (layer, module), (a, b) in load_lora_pairs(program.bundle.adapter).items():
                weight = layers[layer].get_submodule(HF_MODULE_PATHS[module]).weight
                weight += scale * (torch.from_numpy(b) @ torch.from_numpy(a)).to(weight.dtype)

    def __call__(self, text: str) -> str:
        torch = self._torch
        ids = self._tokenizer.encode(fill(self._template, text), add_special_tokens=False)
        eos = self._tokenizer.eos_token_id
        out: list[int] = []
        with torch.no_grad():
            tokens = torch.tensor([ids])
            cache = None
            for _ in range(self._max_new_tokens):
                result = self._model(input_ids=tokens, use_cache=True, **{self._cache_arg: cache})
                cache = getattr(result, self._cache_arg)
                token = int(result.logits[0, -1].argmax())
                if token == eos:
                    break
                out.append(token)
                tokens = torch.tensor([[token]])
        return str(self._tokenizer.decode(out, skip_special_tokens=True)).strip()
