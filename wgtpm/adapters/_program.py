"""``wgtpm.load(REF)``: a WeightLang artifact, or a PAW program run as ``wgtpm run`` runs it.

>>> import wgtpm
>>> fruit = wgtpm.load("github.com/acme/fruit/fruit")    # doctest: +SKIP
>>> fruit("yellow")                                        # doctest: +SKIP
'banana'

``REF`` is located as :func:`wgtpm.weightlang.api.locate` locates it (``NAME``
of ``build/``, a path, or ``MODULE/ARTIFACT`` of the build list of the package
in ``project_dir``). A WeightLang artifact loads exactly as
:func:`wgtpm.weightlang.load` loads it. A ``.paw`` program goes through
:func:`wgtpm.paw.run.load_program`, the code behind ``wgtpm run``, with the
same interpreter (``interpreter=``, else the module the bundle records, from
the same build list) and backend, so ``prog(text)`` is what
``wgtpm run REF --input TEXT`` prints. One check comes first: a program that
records its interpreter as ``module@version`` runs only where the build list
selects that version (the base it was trained on); another version is an
error naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError
from ..deps import ModuleResolver, ResolvedModule
from ..kinds import PAW, kind_of_source
from ._adapter import recorded_interpreter

if TYPE_CHECKING:
    from ..modload.resolver import ProjectResolver, VendorResolver
    from ..weightlang.api import Artifact

__all__ = ["Program", "load", "load_paw"]


class Program:
    """A PAW program loaded once; ``program(text)`` is its output for ``text``.

    ``path`` is the verified ``.paw`` file, ``program_id`` its PAW program ID,
    ``interpreter`` the ``module@version`` it runs on (``None`` when given as a
    directory or run through the PAW SDK).
    """

    def __init__(
        self, path: Path, program_id: str, interpreter: str | None, run: Callable[[str], str]
    ) -> None:
        self.path = path
        self.program_id = program_id
        self.interpreter = interpreter
        self._run = run

    def __repr__(self) -> str:
        return f"<wgtpm Program {self.program_id} at {self.path}>"

    def __call__(self, text: str) -> str:
        if not isinstance(text, str):
            raise UsageError(f"program {self.program_id} takes a string, not {type(text).__name__}")
        return self._run(text)


class _LazyResolver:
    """The build list of the package in ``root``, opened when a module is first asked for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._opened: ProjectResolver | VendorResolver | None = None

    def _open(self) -> ModuleResolver:
        if self._opened is None:
            from ..modload import open_resolver

            self._opened = open_resolver(self.root)
        return self._opened

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    def modules(self) -> Sequence[str]:
        return self._open().modules()

    def module(self, path: str) -> ResolvedModule:
        return self._open().module(path)


def load(
    ref_or_path: str | Path,
    *,
    project_dir: Path | None = None,
    resolver: ModuleResolver | None = None,
    interpreter: Path | None = None,
    backend: str = "auto",
    max_new_tokens: int = 256,
) -> Artifact | Program:
    """The artifact ``ref_or_path`` names: a WeightLang :class:`Artifact` or a PAW :class:`Program`.

    ``interpreter``, ``backend`` and ``max_new_tokens`` are for PAW programs
    (see :func:`wgtpm.paw.run.load_program`); a WeightLang artifact takes none.
    """
    from ..weightlang.api import locate, open_artifact

    project = project_dir if project_dir is not None else Path.cwd()
    lazy = _LazyResolver(project) if resolver is None else None
    try:
        path = locate(ref_or_path, project_dir=project, resolver=resolver or lazy)
        if kind_of_source(path.name) != PAW:
            return open_artifact(path)
        return load_paw(
            path,
            resolver=resolver or lazy,
            interpreter=interpreter,
            backend=backend,
            max_new_tokens=max_new_tokens,
        )
    finally:
        if lazy is not None:
            lazy.close()


def load_paw(
    path: Path,
    *,
    resolver: ModuleResolver | None,
    interpreter: Path | None = None,
    backend: str = "auto",
    max_new_tokens: int = 256,
) -> Program:
    """The program at ``path``, on its pinned interpreter (see the module docstring)."""
    from ..paw.bundle import read_bundle
    from ..paw.run import load_program

    bundle = read_bundle(path)
    pinned = None
    if interpreter is None and resolver is not None:
        pinned = _pinned_interpreter(path, bundle.meta, resolver)
    run = load_program(
        path,
        interpreter=interpreter,
        resolver=resolver,
        backend=backend,
        max_new_tokens=max_new_tokens,
    )
    return Program(path, bundle.program_id, pinned, run)


def _pinned_interpreter(path: Path, meta: object, resolver: ModuleResolver) -> str | None:
    """``module@version`` of the recorded interpreter when the build list has it at that
    version (:func:`wgtpm.paw.run.pinned_interpreter` refuses another version)."""
    from ..paw.run import pinned_interpreter

    module, version = recorded_interpreter(meta)
    if module is None or version is None:
        return None
    return f"{module}@{version}" if pinned_interpreter(path, meta, resolver) else None
