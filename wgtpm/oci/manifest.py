"""A module version as an OCI artifact: the manifest wgtpm writes and the ones it reads.

The format (docs/guides/oci.md has it in full): an OCI image manifest
(``application/vnd.oci.image.manifest.v1+json``) with the ModelPack
``artifactType`` (:data:`ARTIFACT_TYPE`) and a ModelPack model config
(:data:`CONFIG_TYPE`); one layer per file of the release's index, in the
index's order (by path), whose digest is ``sha256:`` + the file's sha256, size
its size, annotations ``org.opencontainers.image.title`` (what ``oras pull``
names the file) and ``org.cncf.model.filepath`` = its path, media type by kind
(:func:`media_type_for`); then the index itself as a last layer of media type
:data:`INDEX_TYPE` titled ``wgt.index.json``. The provenance
(``wgt.provenance.json``) is a file of the index, so a layer like any other.

Readers (:func:`parse`) accept any image manifest: a wgtpm release (it has an
index layer) or an artifact pushed by ORAS, KitOps or a ModelPack tool, whose
index is made from :func:`synthesised_files` from the layers' names and digests.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._fs import canonical_json
from ..index import IndexEntry, ReleaseIndex, check_file_path

__all__ = [
    "ARTIFACT_TYPE",
    "CONFIG_TYPE",
    "INDEX_TITLE",
    "INDEX_TYPE",
    "MANIFEST_TYPE",
    "Built",
    "Descriptor",
    "Manifest",
    "ManifestError",
    "build",
    "media_type_for",
    "parse",
    "synthesised_files",
]

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
#: What ``Accept`` asks for when a manifest is read: image indexes too, so that a tag naming
#: one is refused as such (:func:`parse`), not answered 404 by registries that honour Accept.
ACCEPT = ", ".join(
    (MANIFEST_TYPE, "application/vnd.docker.distribution.manifest.v2+json", *INDEX_MANIFEST_TYPES)
)
#: The ModelPack model manifest's artifact type and config (CNCF ModelPack model-spec v1).
ARTIFACT_TYPE = "application/vnd.cncf.model.manifest.v1+json"
CONFIG_TYPE = "application/vnd.cncf.model.config.v1+json"
WEIGHT_TYPE = "application/vnd.cncf.model.weight.v1.raw"
WEIGHT_CONFIG_TYPE = "application/vnd.cncf.model.weight.config.v1.raw"
DOC_TYPE = "application/vnd.cncf.model.doc.v1.raw"
CODE_TYPE = "application/vnd.cncf.model.code.v1.raw"
DATASET_TYPE = "application/vnd.cncf.model.dataset.v1.raw"
#: wgtpm's own layers: the index, and the files of a release that only wgtpm reads.
INDEX_TYPE = "application/vnd.wgtpm.index.v1+json"
MOD_TYPE = "application/vnd.wgtpm.mod.v1"
WGT_JSON_TYPE = "application/vnd.wgtpm.metadata.v1+json"
OTHER_TYPE = "application/octet-stream"
INDEX_TITLE = "wgt.index.json"

TITLE = "org.opencontainers.image.title"
FILEPATH = "org.cncf.model.filepath"
VERSION = "org.opencontainers.image.version"
CREATED = "org.opencontainers.image.created"
REVISION = "org.opencontainers.image.revision"
MODULE = "dev.wgtpm.module"

_DIGEST = re.compile(r"sha256:([0-9a-f]{64})\Z")
_WEIGHTS = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5", ".npz", ".npy")
_WEIGHT_CONFIG = (".json", ".yaml", ".yml", ".model", ".tiktoken", ".txt", ".jinja")
_DOCS = (".md", ".rst")
_DOC_NAMES = ("readme", "license", "licence", "notice", "copying", "model_card")
_CODE = (".py", ".wgt", ".sh", ".ipynb")
_DATA = (".csv", ".jsonl", ".parquet", ".arrow", ".tsv")


class ManifestError(ValueError):
    """A manifest wgtpm cannot read as a module version; the message says why."""


def media_type_for(path: str) -> str:
    """The layer media type of the release file ``path`` (ModelPack's where one fits)."""
    name = path.rsplit("/", 1)[-1].lower()
    if path == "wgt.mod":
        return MOD_TYPE
    if path.startswith("wgt.") and name.endswith(".json"):
        return WGT_JSON_TYPE  # wgt.provenance.json, wgt.tensors.json
    if name.endswith(_WEIGHTS):
        return WEIGHT_TYPE
    if name.endswith(_DOCS) or name.split(".", 1)[0] in _DOC_NAMES:
        return DOC_TYPE
    if name.endswith(_CODE):
        return CODE_TYPE
    if name.endswith(_DATA):
        return DATASET_TYPE
    if name.endswith(_WEIGHT_CONFIG):
        return WEIGHT_CONFIG_TYPE
    return OTHER_TYPE


@dataclass(frozen=True)
class Descriptor:
    """An OCI content descriptor (a layer, the config, a subject)."""

    media_type: str
    digest: str
    size: int
    annotations: Mapping[str, str] = field(default_factory=dict)
    artifact_type: str | None = None

    @property
    def sha256(self) -> str:
        """The hex sha256 of the blob (:func:`parse` accepts only sha256 digests)."""
        return self.digest.split(":", 1)[1]

    @property
    def title(self) -> str | None:
        """The file name the layer stands for: ``org.opencontainers.image.title`` or
        ModelPack's ``org.cncf.model.filepath``."""
        return self.annotations.get(TITLE) or self.annotations.get(FILEPATH)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": self.size,
        }
        if self.artifact_type:
            out["artifactType"] = self.artifact_type
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


@dataclass(frozen=True)
class Manifest:
    """A parsed image manifest."""

    config: Descriptor
    layers: tuple[Descriptor, ...]
    artifact_type: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    subject: Descriptor | None = None

    @functools.cached_property
    def by_title(self) -> Mapping[str, Descriptor]:
        """The file layers by name (the first of a name; the index's layer left out)."""
        out: dict[str, Descriptor] = {}
        for layer in self.layers:
            if layer.title and layer.media_type != INDEX_TYPE:
                out.setdefault(layer.title, layer)
        return out

    @functools.cached_property
    def by_digest(self) -> Mapping[str, Descriptor]:
        """The layers by digest (the first of a digest)."""
        out: dict[str, Descriptor] = {}
        for layer in self.layers:
            out.setdefault(layer.digest, layer)
        return out

    @property
    def index_layer(self) -> Descriptor | None:
        """The layer holding a wgtpm index, if this is a wgtpm release."""
        for layer in self.layers:
            if layer.media_type == INDEX_TYPE:
                return layer
        return None

    def layer_for(self, sha256: str) -> Descriptor | None:
        """The layer whose digest is ``sha256:`` + ``sha256``."""
        return self.by_digest.get("sha256:" + sha256)


@dataclass(frozen=True)
class Built:
    """What :func:`build` made: the manifest's bytes, the config's bytes (a blob to push
    too), and the index layer (its blob is the index's bytes)."""

    manifest: bytes
    config: bytes
    config_descriptor: Descriptor
    index_descriptor: Descriptor
    layers: tuple[Descriptor, ...]


def _descriptor(raw: Any, where: str) -> Descriptor:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where} is not a JSON object")
    mt, digest, size = raw.get("mediaType"), raw.get("digest"), raw.get("size")
    if not isinstance(mt, str) or not mt:
        raise ManifestError(f"{where} has no mediaType")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ManifestError(
            f"{where}: digest {str(digest)[:80]!r} is not sha256:<64 lower-case hex> "
            "(wgtpm checks files by sha256 only)"
        )
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ManifestError(f"{where}: size {size!r} is not a whole number of bytes")
    ann = raw.get("annotations") or {}
    if not isinstance(ann, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in ann.items()
    ):
        raise ManifestError(f"{where}: annotations are not a string map")
    at = raw.get("artifactType")
    return Descriptor(mt, digest, size, ann, at if isinstance(at, str) else None)


def parse(data: bytes, content_type: str | None = None) -> Manifest:
    """Parse an image manifest; :class:`ManifestError` says why one cannot be read."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"the manifest is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ManifestError("the manifest is not a JSON object")
    mt = doc.get("mediaType") or content_type
    if mt in INDEX_MANIFEST_TYPES or "manifests" in doc:
        raise ManifestError(
            "the tag names an image index (a list of manifests, e.g. per platform), "
            "not one artifact; wgtpm reads single-manifest artifacts"
        )
    if doc.get("schemaVersion") != 2:
        raise ManifestError(f"schemaVersion is {doc.get('schemaVersion')!r}, not 2")
    layers = doc.get("layers")
    if not isinstance(layers, list):
        raise ManifestError("the manifest has no layers list")
    ann = doc.get("annotations") or {}
    if not isinstance(ann, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in ann.items()
    ):
        raise ManifestError("the manifest's annotations are not a string map")
    at = doc.get("artifactType")
    subject = doc.get("subject")
    return Manifest(
        _descriptor(doc.get("config"), "the config descriptor"),
        tuple(_descriptor(raw, f"layer {i}") for i, raw in enumerate(layers)),
        at if isinstance(at, str) else None,
        ann,
        _descriptor(subject, "the subject") if subject is not None else None,
    )


def build(index: ReleaseIndex, index_bytes: bytes) -> Built:
    """The manifest of the release ``index`` (whose exact bytes, as wgt.sum's h1 locks
    them through the files they list, are ``index_bytes``).

    Deterministic: the same index gives the same manifest bytes, so publishing the same
    release twice is a no-op. The time is the index's (the release's commit time), never
    the clock's.
    """
    import hashlib

    layers: list[Descriptor] = []
    for e in sorted(index.files, key=lambda e: e.path):
        if e.path == INDEX_TITLE:
            raise ManifestError(
                f"{index.module}@{index.version}: a file named {INDEX_TITLE} would collide "
                "with the index's layer; rename it"
            )
        layers.append(
            Descriptor(
                media_type_for(e.path),
                "sha256:" + e.sha256,
                e.size,
                {FILEPATH: e.path, TITLE: e.path},
            )
        )
    index_desc = Descriptor(
        INDEX_TYPE,
        "sha256:" + hashlib.sha256(index_bytes).hexdigest(),
        len(index_bytes),
        {TITLE: INDEX_TITLE},
    )
    layers.append(index_desc)
    descriptor: dict[str, Any] = {"name": index.module, "version": index.version}
    if index.time:
        descriptor["createdAt"] = index.time
    config = canonical_json(
        {
            "descriptor": descriptor,
            "config": {},
            "modelfs": {"type": "layers", "diffIds": [layer.digest for layer in layers]},
        }
    )
    config_desc = Descriptor(
        CONFIG_TYPE, "sha256:" + hashlib.sha256(config).hexdigest(), len(config)
    )
    ann = {MODULE: index.module, VERSION: index.version}
    if index.time:
        ann[CREATED] = index.time
    if index.commit:
        ann[REVISION] = index.commit
    doc = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "config": config_desc.to_json(),
        "layers": [layer.to_json() for layer in layers],
        "annotations": ann,
    }
    return Built(canonical_json(doc), config, config_desc, index_desc, tuple(layers))


def synthesised_files(m: Manifest) -> list[IndexEntry]:
    """The files of an artifact that has no index (pushed by ``oras push``, KitOps, a
    ModelPack tool): one per layer, named by its title (``org.opencontainers.image.title``
    or ``org.cncf.model.filepath``), its sha256 and size those the manifest states. A layer
    without a name is not a file anyone could ask for and is left out. :class:`ManifestError`
    when two layers name the same path or a name is not a safe relative path."""
    files: list[IndexEntry] = []
    seen: dict[str, str] = {}
    for i, layer in enumerate(m.layers):
        name = layer.title
        if not name:
            continue
        why = check_file_path(name)
        if why is not None:
            raise ManifestError(f"layer {i} is named {name[:100]!r}: {why}")
        if name in seen and seen[name] != layer.digest:
            raise ManifestError(f"two layers are both named {name!r}")
        if name not in seen:
            seen[name] = layer.digest
            files.append(IndexEntry(name, layer.size, layer.sha256))
    if not files:
        raise ManifestError(
            "no layer has a file name (org.opencontainers.image.title or "
            "org.cncf.model.filepath): nothing to make a module of"
        )
    return files


def layer_paths(m: Manifest) -> Sequence[str]:
    """The file names of ``m``'s layers, in order (``""`` for an unnamed one)."""
    return [layer.title or "" for layer in m.layers]
