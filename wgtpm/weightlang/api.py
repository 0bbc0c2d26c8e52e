"""Using built models from Python: ``load`` an artifact, ``predict`` with it.

>>> import wgtpm
>>> xor = wgtpm.load("github.com/acme/xor-base/xor")   # or a path, or "xor" for build/xor
>>> xor.predict([[0, 1], [1, 1]])                       # doctest: +SKIP
tensor([[0.9981], [0.0023]])
>>> wgtpm.load_layer("github.com/acme/xor-base/xor.h1")["weight"].shape   # doctest: +SKIP
torch.Size([8, 2])

A reference names an artifact in one of three ways, tried in this order:

1. ``NAME`` (no ``/``): ``build/NAME`` (or ``build/NAME.paw``) of the package in
   ``project_dir``, as ``wgtpm build`` wrote it;
2. a path to an artifact directory (or a ``.paw`` file), relative to the
   current directory or absolute;
3. ``MODULE/ARTIFACT``: an artifact of a module of the build list of the
   package in ``project_dir`` (its wgt.mod and wgt.sum; the module is
   downloaded and verified if it is not cached yet).

Every artifact is verified before use (:func:`wgtpm.weightlang.artifact.read_artifact`);
loading one with untrained tensors warns with :class:`UntrainedWeightsWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from .._errors import UsageError, WgtpmError
from ..artifacts import BUILD_DIR, locate_built
from ..deps import ModuleResolver, split_ref
from .artifact import StoredArtifact, read_artifact
from .errors import ArtifactError, UntrainedWeightsWarning
from .imports import artifact_in_module, module_label
from .manifest import Manifest
from .model import build_module

__all__ = ["Artifact", "load", "load_layer", "locate", "open_artifact"]


class Artifact:
    """A verified WeightLang artifact, ready to run.

    ``module`` is the ``torch.nn.Module`` (in eval mode; the parameters of layers
    imported frozen have ``requires_grad`` off, as in the build); ``manifest`` the
    validated manifest (``manifest.raw`` is the JSON as written).
    """

    def __init__(self, stored: StoredArtifact, module: nn.Module) -> None:
        self.path = stored.path
        self.manifest: Manifest = stored.manifest
        self.module = module
        self._tensors = stored.tensors

    def __repr__(self) -> str:
        return f"<wgtpm Artifact {self.name} at {self.path}>"

    @property
    def name(self) -> str:
        """The model's name (its ``model`` statement)."""
        return self.manifest.model

    @property
    def weights_sha256(self) -> str:
        return self.manifest.weights_sha256

    @property
    def untrained_tensors(self) -> list[str]:
        return self.manifest.untrained_tensors

    def layer(self, name: str) -> dict[str, torch.Tensor]:
        """The tensors of layer ``name`` by short name: ``{"weight": ..., "bias": ...}``."""
        spec = next((s for s in self.manifest.layers if s.name == name), None)
        if spec is None:
            known = ", ".join(s.name for s in self.manifest.layers)
            raise UsageError(f"model {self.name} has no layer {name!r}; its layers are {known}")
        prefix = f"{name}."
        return {full[len(prefix) :]: self._tensors[full].clone() for full in spec.tensor_shapes()}

    def predict(
        self, inputs: torch.Tensor | Sequence[float] | Sequence[Sequence[float]]
    ) -> torch.Tensor:
        """Run the model on one input vector ``[in]`` or a batch ``[N, in]``; same rank out."""
        width = self.manifest.input.width
        try:
            x = torch.as_tensor(inputs, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
            first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise UsageError(
                f"input {self.manifest.input.name}: not a vector of numbers ({first})"
            ) from exc
        if not bool(torch.isfinite(x).all()):
            raise UsageError(f"input {self.manifest.input.name}: holds NaN or infinite values")
        if x.dim() not in (1, 2) or x.shape[-1] != width:
            raise UsageError(
                f"input {self.manifest.input.name} takes [{width}] or [N, {width}] values, "
                f"got shape {list(x.shape)}"
            )
        with torch.no_grad():
            out: torch.Tensor = self.module(x.unsqueeze(0) if x.dim() == 1 else x)
        return out[0] if x.dim() == 1 else out


def open_artifact(path: Path, *, warn_untrained: bool = True) -> Artifact:
    """Verify and load the artifact directory ``path``; never unpickles anything."""
    stored = read_artifact(path)
    module = build_module(stored.manifest.layers)
    module.load_state_dict(dict(stored.tensors), strict=True)
    module.eval()
    for record in stored.manifest.imports:  # as the build had them: fine-tuning keeps them
        if record.get("frozen"):
            module.get_submodule(str(record["layer"])).requires_grad_(False)
    artifact = Artifact(stored, module)
    if warn_untrained and artifact.untrained_tensors:
        warnings.warn(
            f"artifact {artifact.name} ({path}) holds untrained, randomly initialised tensors: "
            f"{', '.join(artifact.untrained_tensors)}; its outputs are not meaningful",
            UntrainedWeightsWarning,
            stacklevel=3,
        )
    return artifact


def load(
    ref_or_path: str | Path,
    *,
    project_dir: Path | None = None,
    resolver: ModuleResolver | None = None,
) -> Artifact:
    """Load a verified artifact named by a path, ``NAME`` or ``MODULE/ARTIFACT``.

    ``project_dir`` (default: the current directory) is the package whose
    ``build/`` and build list are searched; ``resolver`` replaces that build
    list (tests, vendored builds).
    """
    return open_artifact(locate(ref_or_path, project_dir=project_dir, resolver=resolver))


def load_layer(
    ref: str, *, project_dir: Path | None = None, resolver: ModuleResolver | None = None
) -> dict[str, torch.Tensor]:
    """The tensors of one layer: ``load_layer("github.com/acme/xor-base/xor.h1")``.

    ``ref`` is an artifact reference (see :func:`load`) and ``.LAYER``,
    split at the first ``.`` of its last ``/`` element.
    """
    head, slash, last = ref.rpartition("/")
    artifact, dot, layer = last.partition(".")
    if not dot or not layer:
        raise UsageError(f"{ref}: expected ARTIFACT.LAYER, e.g. github.com/acme/xor-base/xor.h1")
    where = locate(head + slash + artifact, project_dir=project_dir, resolver=resolver)
    return open_artifact(where, warn_untrained=False).layer(layer)


def _main_path(project: Path) -> str | None:
    """The module path of the package in ``project`` (``None`` without a readable wgt.mod)."""
    from .. import modfile

    try:
        mf = modfile.parse((project / "wgt.mod").read_bytes(), "wgt.mod")
    except (OSError, WgtpmError):  # none, or one that does not parse: the resolver reports it
        return None
    return mf.module.path if mf.module else None


def locate(
    ref: str | Path, *, project_dir: Path | None = None, resolver: ModuleResolver | None = None
) -> Path:
    """The path of the artifact ``ref`` names (see the module docstring)."""
    project = project_dir if project_dir is not None else Path.cwd()
    text = str(ref)
    if isinstance(ref, str) and "/" not in text and text not in (".", ".."):
        # '.' and '..' are directories, never artifact names ('build/.' is no artifact)
        built = locate_built(project / BUILD_DIR, text)
        if built is not None:
            return built.path
    if Path(text).exists():
        return Path(text)
    first = text.split("/", 1)[0]
    if isinstance(ref, Path) or "/" not in text or "." not in first or first in (".", ".."):
        built_as = text if text.startswith(f"{BUILD_DIR}/") else f"{BUILD_DIR}/{text}"
        raise ArtifactError(
            text,
            f"not found: not a path, not {built_as} of the package in {project}, "
            "and not MODULE/ARTIFACT of its build list",
        )
    main = _main_path(project)
    if main is not None and text.startswith(main + "/"):
        # MAIN/ARTIFACT: the package here, as 'wgtpm build' wrote it (not a build-list module)
        name = text[len(main) + 1 :]
        built = locate_built(project / BUILD_DIR, name)
        if built is not None:
            return built.path
        raise ArtifactError(
            text,
            f"artifact {name!r} of the main module {main} is not built: "
            f"run 'wgtpm build {name}' (it writes {BUILD_DIR}/{name})",
        )
    if resolver is None:
        from ..modload import open_resolver

        resolver = open_resolver(project)
    module, rest = split_ref(text, resolver)
    found = artifact_in_module(module, rest)
    if found is not None:
        return found
    raise ArtifactError(
        text, f"module {module_label(module)} has no artifact {rest!r}; check the name"
    )
