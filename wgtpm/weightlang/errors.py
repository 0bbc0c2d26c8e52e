"""The errors and warnings of WeightLang, on top of :mod:`wgtpm._errors`.

::

    WgtpmError
    ├── ParseError              a .wgt or data file that does not parse or check (wgtpm._errors)
    ├── BuildError              training or writing an artifact failed (wgtpm._errors)
    │   └── LayerImportError    an ``import`` statement cannot be satisfied
    └── ArtifactError           an artifact directory that cannot be used as it is
        └── TamperedArtifactError   a file whose sha256 disagrees with the manifest

    UserWarning
    └── UntrainedWeightsWarning  a loaded artifact holds tensors that were never trained

``WgtError`` is the WeightLang 0.1.0 prototype's name for its one error
class; here it names :class:`~wgtpm.WgtpmError`, the root of them all, so
that ``except WgtError`` catches what it caught there.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import BuildError, PositionedError, WgtpmError

__all__ = [
    "ArtifactError",
    "LayerImportError",
    "TamperedArtifactError",
    "UntrainedWeightsWarning",
    "WgtError",
]

#: The prototype's name for the root of the error hierarchy (see the module docstring).
WgtError = WgtpmError


class ArtifactError(WgtpmError):
    """An artifact directory that is missing files, malformed, or inconsistent with itself.

    ``path`` is the artifact directory. The message says what to do: usually
    rebuild it (``wgtpm build``) or fetch it again.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"artifact {path}: {message}")


class TamperedArtifactError(ArtifactError):
    """A file of an artifact whose sha256 differs from the one its manifest records.

    The bytes were changed after the build: the artifact must not be used.
    """

    def __init__(self, path: str, file: str, want: str, got: str) -> None:
        self.file = file
        self.want = want
        self.got = got
        super().__init__(
            path,
            f"{file} does not match its manifest (the artifact was changed after it was built)\n"
            f"\tmanifest: sha256 {want}\n"
            f"\ton disk:  sha256 {got}\n"
            "Do not use it: rebuild it with 'wgtpm build', or remove it and fetch the module again.",
        )


class LayerImportError(BuildError):
    """One or more ``import`` statements that cannot be satisfied; ``errors`` has each position."""

    def __init__(self, errors: Sequence[PositionedError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class UntrainedWeightsWarning(UserWarning):
    """A loaded artifact holds randomly initialised tensors that no training has touched."""
