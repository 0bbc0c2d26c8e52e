"""Artifact kinds: one :class:`Builder` per kind, one registry, one locator.

The kinds and which source is which live in the pure :mod:`wgtpm.kinds`
(so :mod:`wgtpm.modfile` can answer ``Artifact.kind``); this package holds
what each kind does::

    _builder.py   Builder protocol, Target (one artifact line), BuildResult
    _wgt.py       wgt:  .wgt  -> build/NAME/        (WeightLang, compiled and trained)
    _paw.py       paw:  .pawspec -> build/NAME.paw  (LoRA-finetuned); a prebuilt .paw, validated
    _file.py      file: anything else -> build/SOURCE (verbatim)
    _registry.py  builder_for_source, builder_for_kind, build_artifact

The locator (a module's files + a name -> kind, path, files) is
:mod:`wgtpm.artifacts`, below this package: WeightLang imports and the PAW
installer, which the builders run, ask it without importing every builder
(an import cycle otherwise). Its names are re-exported here for callers
that build. The CLI (``wgtpm build``) and the proxy-tree writer ask here
instead of testing suffixes. Importing this package loads neither torch nor numpy: each builder imports its tools in ``build``.

    >>> from wgtpm.build import Target, build_artifact
    >>> # build_artifact(Target(pkg, "xor", "model.wgt", pkg / "build"), resolver, reporter)
"""

from ..artifacts import (
    BUILD_DIR,
    BUNDLE_SUFFIX,
    INDEX_FILE,
    LocatedArtifact,
    locate_artifact,
    locate_built,
    module_artifact,
    module_index,
    release_artifacts,
)
from ._builder import Builder, BuildResult, Target
from ._paw import SPEC_SUFFIX
from ._registry import build_artifact, builder_for_kind, builder_for_source, builders

__all__ = [
    "BUILD_DIR",
    "BUNDLE_SUFFIX",
    "INDEX_FILE",
    "SPEC_SUFFIX",
    "BuildResult",
    "Builder",
    "LocatedArtifact",
    "Target",
    "build_artifact",
    "builder_for_kind",
    "builder_for_source",
    "builders",
    "locate_artifact",
    "locate_built",
    "module_artifact",
    "module_index",
    "release_artifacts",
]
