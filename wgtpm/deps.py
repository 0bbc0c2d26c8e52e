"""What a build step sees of the package's dependencies.

Builders (WeightLang imports, a PAW program's interpreter) never fetch or
choose versions themselves: they are handed a :class:`ModuleResolver` that
answers from the enclosing package's build list, whose bytes were already
verified against wgt.sum. A reference such as
``github.com/acme/xor-base/xor`` names a module of the build list followed by
a path inside it; :func:`split_ref` finds the longest module prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from ._errors import ResolveError

__all__ = ["MapResolver", "ModuleResolver", "ResolvedModule", "split_ref"]


class ResolvedModule(NamedTuple):
    """One module of the build list, with its verified files on disk.

    ``version`` is the selected version, or ``""`` for a local directory
    replacement; ``dir`` holds the module's files (read-only in the cache);
    ``commit`` is the source commit recorded in the release, when known.
    """

    path: str
    version: str
    dir: Path
    commit: str | None = None


class ModuleResolver(Protocol):
    """Answers questions about the build list of the package being built."""

    def modules(self) -> Sequence[str]:
        """The module paths of the build list (the main module excluded)."""
        ...

    def module(self, path: str) -> ResolvedModule:
        """The selected version of ``path``, downloaded and verified.

        Raises :class:`ResolveError` when ``path`` is not in the build list.
        """
        ...


def split_ref(ref: str, resolver: ModuleResolver) -> tuple[ResolvedModule, str]:
    """Split ``MODULE/REST`` at the longest module of the build list.

    >>> # with github.com/acme/xor-base in the build list:
    >>> # split_ref("github.com/acme/xor-base/xor", r) -> (<xor-base>, "xor")
    """
    paths = set(resolver.modules())
    parts = ref.split("/")
    for i in range(len(parts) - 1, 0, -1):
        prefix = "/".join(parts[:i])
        if prefix in paths:
            return resolver.module(prefix), "/".join(parts[i:])
    raise ResolveError(
        f"{ref}: no module of the build list is a prefix of this reference; "
        "add the module with 'wgtpm get MODULE' (imports name a module of wgt.mod, without a version)"
    )


class MapResolver:
    """A resolver over a fixed mapping, for tests and for vendored builds."""

    def __init__(self, mods: Mapping[str, ResolvedModule]) -> None:
        self._mods = dict(mods)

    def modules(self) -> Sequence[str]:
        return sorted(self._mods)

    def module(self, path: str) -> ResolvedModule:
        try:
            return self._mods[path]
        except KeyError as exc:
            raise ResolveError(
                f"module {path} is not in the build list; add it with 'wgtpm get {path}'"
            ) from exc
