"""``wgt.provenance.json``: what a release was built from, inside the release so that h1 covers it.

docs/design.md section 5 puts provenance in the index (``build``), and the index's
``artifact``/``kind`` of each file next to its hash; neither is covered by
the h1 of wgt.sum, which hashes only (path, sha256) pairs. A consumer acts on
both (which file is which artifact, of which kind, trained from what), so
wgtpm publish writes them a second time into a file of the release, listed
in ``files`` like any other: the two wgt.sum lines then lock them. The
index's ``build`` holds the same document (for readers of section 5), and
:func:`check_provenance` tells whether an index agrees with it. A worked
example (hashes elided)::

    {
      "schema": 2,
      "module": "example.com/acme/xor", "version": "v0.1.0",
      "commit": "40 hex", "time": "2026-11-29T12:00:00Z",
      "repository": {"url": "https://github.com/acme/xor", "dir": ""},
      "artifacts": {
        "xor": {"kind": "wgt", "source": "model.wgt", "builder": "wgtpm",
                "seed": 0, "data": {"xor": {"kind": "inline", "rows": 4, "sha256": "…"}},
                "training_data_sha256": "…",
                "imports": [{"layer": "h1", "module": "example.com/acme/base",
                             "version": "v0.1.0", "source_weights_sha256": "…",
                             "tensors": {"h1.weight": "…"}}]}
      },
      "files": {"xor/manifest.json": {"artifact": "xor", "kind": "wgt"}, …}
    }

A model saved by :func:`wgtpm.save` and published as files gets, on the artifact
of its ``manifest.json``, ``"imports"``: each imported tensor's ``tensor``,
``origin``, ``module``, ``version``, ``file``, ``source_tensor`` and ``sha256``.

``repository`` says where ``commit`` can be fetched again (``wgtpm verify
--rebuild``): ``url`` is the URL of the publishing checkout's ``origin``
remote (else of its only remote; absent when the checkout has no remote) in
one spelling per repository (:func:`._git.repository_url`: no credentials,
ssh as https, no ``.git``), so that the same commit published again after
the remote's URL changed form gives the same bytes; ``dir`` the package's
directory in the repository (``""`` at its root).
``time`` is the commit's time (the committer date), never the clock.
``files`` lists every artifact file (not ``wgt.mod`` nor this file).

Only what determines the release's bytes is here, since h1 covers it (docs/design.md
section 13): nothing of the machine that built it, so that two publishers of
one commit who build the same bytes get the same h1. The build environment
(:func:`tool_versions`: python, wgtpm, torch, transformers, peft, gguf,
safetensors, numpy; the builder, the wall-clock time, the platform) goes into
the SLSA provenance statement published beside the release
(:mod:`._slsa`), outside h1. Schema 1 (releases published before that)
also had a ``tools`` map of the same versions; readers still accept it
(:func:`recorded_tools`). The artifacts' records copy nothing of the
environment either: a WeightLang manifest no longer carries the prototype's
``built_with`` (:mod:`wgtpm.weightlang.manifest`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import VerifyError
from .._fs import canonical_json
from ..index import PROVENANCE_FILE, is_commit
from ..kinds import PAW, WGT

__all__ = [
    "PROVENANCE_FILE",
    "ArtifactProvenance",
    "SourceRepository",
    "check_provenance",
    "provenance_bytes",
    "recorded_tools",
    "tool_versions",
]

#: 2: no ``tools`` (they moved to the SLSA statement, outside h1); 1 had them.
SCHEMA = 2
TOOLS = ("torch", "transformers", "peft", "gguf", "safetensors", "numpy")


@dataclass(frozen=True)
class SourceRepository:
    """Where a release's commit lies: a fetchable URL (None when unknown), the package's dir."""

    url: str | None
    dir: str = ""

    def record(self) -> dict[str, str]:
        return ({"url": self.url} if self.url else {}) | {"dir": self.dir}

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> SourceRepository | None:
        """What a provenance document says (``None`` for a release published without it)."""
        rec = doc.get("repository")
        if not isinstance(rec, dict):
            return None
        url, d = rec.get("url"), rec.get("dir", "")
        return cls(url if isinstance(url, str) and url else None, d if isinstance(d, str) else "")


@dataclass(frozen=True)
class ArtifactProvenance:
    """One built artifact: its kind, source, and its files (logical path -> file on disk)."""

    name: str
    kind: str
    source: str
    outputs: Mapping[str, Path]

    def record(self) -> dict[str, Any]:
        """What the provenance says of this artifact (see the module docstring)."""
        out: dict[str, Any] = {"kind": self.kind, "source": self.source, "builder": "wgtpm"}
        if self.kind == WGT:
            out.update(_wgt_record(self.outputs))
        elif self.kind == PAW:
            out.update(_paw_record(self.outputs))
        else:
            out.update(_saved_record(self.outputs))
        return out


def _wgt_record(outputs: Mapping[str, Path]) -> dict[str, Any]:
    manifest_path = next((p for lp, p in outputs.items() if lp.endswith("/manifest.json")), None)
    if manifest_path is None:
        return {}
    m = json.loads(manifest_path.read_bytes())
    imports = []
    for imp in m.get("imports") or []:
        package = imp.get("package") or {}
        imports.append(
            {
                "layer": imp.get("layer"),
                "source": imp.get("source"),
                "module": package.get("module"),
                "version": package.get("version"),
                "commit": package.get("commit"),
                "source_weights_sha256": imp.get("source_weights_sha256"),
                "frozen": imp.get("frozen"),
                "tensors": imp.get("tensors"),
            }
        )
    training = m.get("training") or {}
    return {
        "seed": (m.get("init") or {}).get("seed"),
        "data": m.get("data") or {},
        "training_data_sha256": training.get("data_sha256"),
        "weights_sha256": (m.get("weights") or {}).get("sha256"),
        "imports": imports,
    }


#: The ``format`` of a model's manifest that :func:`wgtpm.save` wrote (wgtpm.pinned).
_SAVED_FORMAT = "wgtpm.torch.artifact"


def _saved_record(outputs: Mapping[str, Path]) -> dict[str, Any]:
    """For a ``manifest.json`` that :func:`wgtpm.save` wrote, published as a file: each
    imported tensor's origin, ``{"tensor", "origin", "module", "version", "file",
    "source_tensor", "sha256"}`` by tensor name (nothing for any other file)."""
    for logical, path in sorted(outputs.items()):
        if not logical.endswith("manifest.json"):
            continue
        try:
            m = json.loads(path.read_bytes())
            tensors = m["weights"]["tensors"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(m, dict) or m.get("format") != _SAVED_FORMAT:
            continue
        imports = []
        for name, t in sorted(tensors.items()):
            src = t.get("source") if isinstance(t, dict) else None
            if not isinstance(src, dict):
                continue
            imports.append(
                {
                    "tensor": name,
                    "origin": t.get("origin"),
                    "module": src.get("module"),
                    "version": src.get("version"),
                    "file": src.get("file"),
                    "source_tensor": src.get("tensor"),
                    "sha256": src.get("sha256"),
                }
            )
        return {"imports": imports}
    return {}


def _paw_record(outputs: Mapping[str, Path]) -> dict[str, Any]:
    import zipfile  # here: a get imports this module to check provenance (zipfile: ~30 ms)

    bundle = next(iter(outputs.values()), None)
    if bundle is None:
        return {}
    try:
        with zipfile.ZipFile(bundle) as z:
            meta = json.loads(z.read("meta.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return {}
    return {
        "program_id": meta.get("program_id"),
        "interpreter": meta.get("interpreter"),
        "compile_by_training": meta.get("compile_by_training"),
    }


def tool_versions() -> dict[str, str]:
    """Python, wgtpm and the build tools installed here (package metadata, nothing imported)."""
    import platform  # here: ~25 ms to import, which a get checking provenance never needs
    from importlib import metadata

    from .. import __version__

    out = {"python": platform.python_version(), "wgtpm": __version__}
    for name in TOOLS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def provenance_document(
    module: str,
    version: str,
    commit: str,
    time: str,
    artifacts: list[ArtifactProvenance],
    repository: SourceRepository | None = None,
) -> dict[str, Any]:
    """The provenance of a release (see the module docstring): a function of the commit and
    the built bytes alone, nothing of this machine."""
    files = {
        path: {"artifact": a.name, "kind": a.kind} for a in artifacts for path in sorted(a.outputs)
    }
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "module": module,
        "version": version,
        "commit": commit,
        "time": time,
    }
    if repository is not None:
        doc["repository"] = repository.record()
    return doc | {
        "artifacts": {a.name: a.record() for a in artifacts},
        "files": dict(sorted(files.items())),
    }


def recorded_tools(doc: Mapping[str, Any]) -> dict[str, str]:
    """The tool versions a schema-1 provenance recorded (``{}`` for schema 2, which has none:
    its build environment is in the SLSA statement)."""
    tools = doc.get("tools")
    if not isinstance(tools, dict):
        return {}
    return {str(k): v for k, v in tools.items() if isinstance(v, str)}


def provenance_bytes(doc: Mapping[str, Any]) -> bytes:
    """The bytes of ``wgt.provenance.json``: canonical JSON, two-space indent, final newline."""
    return canonical_json(doc, pretty=True)


def check_provenance(index: Any, data: bytes) -> None:
    """Raise :class:`VerifyError` unless the index (a :class:`~wgtpm.index.ReleaseIndex`) says
    of every file what ``wgt.provenance.json`` (``data``, already checked against its entry)
    says: the same artifact and kind, and the same module, version and commit, which is a
    git commit (:func:`~wgtpm.index.is_commit`: it may reach ``git fetch``)."""
    where = (index.module, index.version)
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise VerifyError(*where, f"{PROVENANCE_FILE} is not JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise VerifyError(*where, f"{PROVENANCE_FILE} has no files map")
    if not is_commit(doc.get("commit")):
        shown = str(doc.get("commit"))[:80]
        raise VerifyError(
            *where,
            f"{PROVENANCE_FILE} names the commit {shown!r}, which is not a git commit (40 or 64 "
            "lower-case hex digits); the release is damaged or hostile: do not use it, and "
            "tell its publisher",
        )
    if (doc.get("module"), doc.get("version")) != where or doc.get("commit") != index.commit:
        raise VerifyError(
            *where,
            f"{PROVENANCE_FILE} is for {doc.get('module')}@{doc.get('version')} "
            f"(commit {doc.get('commit')}), not what the index says",
        )
    if index.build and index.build != doc:
        raise VerifyError(*where, f"the index's build differs from {PROVENANCE_FILE}")
    said: dict[str, Any] = doc["files"]
    for e in index.files:
        want = said.get(e.path)
        have = {"artifact": e.artifact, "kind": e.kind} if e.artifact or e.kind else None
        if want != have:
            raise VerifyError(
                *where,
                f"{e.path}: the index says artifact/kind {have}, {PROVENANCE_FILE} says {want}; "
                "the index was changed after publishing",
            )
    extra = set(said) - {e.path for e in index.files}
    if extra:
        raise VerifyError(*where, f"{PROVENANCE_FILE} lists files the index lacks: {sorted(extra)}")
