"""Optional dependencies: every one is asked for here, with the line that installs it.

wgtpm's own dependencies resolve, download and verify modules. What builds,
runs, publishes or serves them comes with an extra of pyproject.toml; each
brings these modules (import names)::

    weightlang  torch, safetensors, numpy     build, check (of imports), run, inspect, verify ARTIFACT
    paw         + transformers, peft, gguf, tokenizers
                                              paw compile, validate, inspect, install; run NAME.paw
    hf          huggingface_hub               publish to Hugging Face
    publish     git (GitPython)               publish, verify --rebuild
    sbom        cyclonedx (cyclonedx-python-lib)
                                              sbom
    registry    starlette, uvicorn, sqlalchemy, alembic, psycopg, boto3
                                              registry serve, registry token

A command calls :func:`require` before it imports any of them, so that without
one the user reads a single line and the exit status of an error, 1::

    wgtpm: wgtpm inspect needs torch, safetensors, numpy (not installed):
    pip install 'wgtpm[weightlang]'

(one line; wrapped here). :func:`require` only looks the modules up
(:func:`importlib.util.find_spec`): it imports nothing. A module missing where
no command asked (a path this table does not cover) is still named with its
extra by the CLI (:func:`missing_extra_error`), never shown as a bug.
"""

from __future__ import annotations

import importlib.util
import sys

from ._errors import UsageError

__all__ = [
    "CHECKS_BUNDLE",
    "EXTRAS",
    "RUNS_PROGRAM",
    "MissingExtraError",
    "missing",
    "missing_extra_error",
    "require",
]

#: Each extra of pyproject.toml -> the modules it brings, by import name, in the order a
#: message names them. tests/test_noextras.py checks the names against pyproject.toml.
EXTRAS: dict[str, tuple[str, ...]] = {
    "weightlang": ("torch", "safetensors", "numpy"),
    "paw": ("torch", "safetensors", "numpy", "transformers", "peft", "gguf", "tokenizers"),
    "hf": ("huggingface_hub",),
    "publish": ("git",),
    "sbom": ("cyclonedx",),
    # keyless signing and verification (Sigstore); key-based ones need none of it
    "sign": ("model_signing", "sigstore", "OpenSSL"),
    "registry": ("starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg", "boto3"),
}

#: What checking a ``.paw`` bundle imports (its adapter is GGUF, read with numpy):
#: ``paw validate``, ``inspect``, ``install``, and a build from a prebuilt ``.paw``.
CHECKS_BUNDLE = ("numpy", "gguf")
#: What running a PAW program imports: ``wgtpm run NAME.paw``.
RUNS_PROGRAM = ("torch", "transformers", "numpy", "gguf")

#: How a message names a module whose distribution is called otherwise.
_SHOWN = {
    "git": "GitPython",
    "cyclonedx": "cyclonedx-python-lib",
    "model_signing": "model-signing",
    "OpenSSL": "pyOpenSSL",
}


class MissingExtraError(UsageError):
    """A command needs an optional dependency that is not installed (``--json`` kind ``missing_extra``)."""

    def __init__(self, purpose: str, extra: str, modules: list[str]) -> None:
        self.extra = extra
        self.modules = tuple(modules)
        super().__init__(
            f"{purpose} needs {', '.join(_SHOWN.get(m, m) for m in modules)} (not installed): "
            f"pip install 'wgtpm[{extra}]'"
        )


def missing(*modules: str) -> list[str]:
    """The modules of ``modules`` (top-level import names) that cannot be imported here."""
    out = []
    for name in modules:
        if name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken install counts as none
            found = False
        if not found:
            out.append(name)
    return out


def require(extra: str, *modules: str, purpose: str) -> None:
    """Raise :class:`MissingExtraError` unless the modules ``purpose`` needs are installed.

    ``modules`` are import names of ``extra`` (default: all of them): a registry
    that keeps its blobs on disk needs no boto3. ``purpose`` starts the message:
    ``"wgtpm inspect"``, ``"building artifact xor (model.wgt)"``.
    """
    brings = EXTRAS[extra]
    wanted = modules or brings
    assert set(wanted) <= set(brings), f"{wanted} are not all modules of the {extra} extra"
    absent = missing(*wanted)
    if absent:
        raise MissingExtraError(purpose, extra, absent)


def missing_extra_error(exc: BaseException, purpose: str) -> MissingExtraError | None:
    """The :class:`MissingExtraError` that ``exc`` stands for, if it says a module of an
    extra is not installed (and it is not); else ``None``, and ``exc`` is a bug.
    """
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    for extra, brings in EXTRAS.items():
        if top in brings and missing(top):
            return MissingExtraError(purpose, extra, [top])
    return None
