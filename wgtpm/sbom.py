"""``wgtpm sbom``: the build list as an AI bill of materials, CycloneDX 1.6 or SPDX 2.3 JSON.

Every module of the build list is one entry, gathered by :func:`collect`
from what wgtpm has verified (never from a source's say-so): the module
version, its h1 and the h1 of its wgt.mod as wgt.sum locks them, each file of
its index with its sha256 and size, its license (:mod:`wgtpm.modload.licenses`),
where its commit lies (the release's provenance: ``commit``, ``repository``)
and which of the build list it requires.

CycloneDX (the field's library, ``cyclonedx-python-lib``; the ``sbom`` extra)::

    metadata.component      the main module, type machine-learning-model
    components[]            one per dependency, type machine-learning-model, bom-ref PATH@VERSION,
                            licenses (an SPDX id, an expression, or a name), properties
                            wgtpm:h1, wgtpm:mod-h1, wgtpm:commit, wgtpm:replace, wgtpm:signer,
                            an external reference of type vcs to the repository,
                            and one nested component of type file per file, with its SHA-256
    dependencies[]          the requirement edges, within the build list

SPDX 2.3 (written here: no library is needed for JSON this plain): one
package per module (``licenseDeclared``: the license, ids the SPDX list does
not know written ``LicenseRef-…`` and listed under
``hasExtractedLicensingInfos``), one file per file of a module with its
SHA256 checksum, and ``DESCRIBES``, ``CONTAINS`` and ``DEPENDS_ON``
relationships. Both formats name wgtpm as the creating tool.

Signers: for a module some trust line of the main module covers
(:mod:`wgtpm.trust`), the signature ``get`` checked and cached is checked again
against that line, and its signer (``key sha256:FINGERPRINT``, or ``identity
ID (issuer URL)``) goes into :attr:`BomModule.signers`, coming out as
``wgtpm:signer`` properties (CycloneDX) and ``signer:`` in the package comment (SPDX). A
module no line covers, or ``WGTTRUST=off``, lists no signer: only a verified
signature names one.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from . import spdx
from .modload.buildlist import Fetched, replacement_text

if TYPE_CHECKING:
    from .modload.licenses import ModuleLicense
    from .modload.project import Project
    from .module import ModuleVersion

__all__ = ["FORMATS", "BomFile", "BomModule", "collect", "cyclonedx_json", "spdx_json"]

FORMATS = ("cyclonedx", "spdx")
_PROPERTY = "wgtpm:"  # the namespace of wgtpm's CycloneDX properties


@dataclass(frozen=True)
class BomFile:
    """One file of a module version, as its verified index lists it."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class BomModule:
    """One module of the build list, as the bill of materials describes it.

    ``version`` is "" for the main module; ``h1``/``mod_h1`` are the wgt.sum
    hashes (``None`` for the main module and directory replacements);
    ``signers`` names whoever signed it, when the main module's trust lines verified it
    (module docstring).
    """

    path: str
    version: str
    license: ModuleLicense | None = None
    h1: str | None = None
    mod_h1: str | None = None
    commit: str | None = None
    repository: str | None = None
    replace: str | None = None
    requires: tuple[str, ...] = ()  # bom refs (PATH@VERSION) of the modules it requires
    files: tuple[BomFile, ...] = ()
    signers: tuple[str, ...] = field(default=())

    @property
    def ref(self) -> str:
        """The module's reference within the document: ``PATH@VERSION``, or the path (main)."""
        return f"{self.path}@{self.version}" if self.version else self.path


def collect(project: Project, build: list[ModuleVersion]) -> list[BomModule]:
    """The entries of the bill of materials for ``build`` (the main module first)."""
    selected = {m.path: m for m in build}
    trust = project.trust_policy()
    out = []
    for m in build:
        requires = tuple(
            _ref(selected[r.path]) for r in project.reqs.required(m) if r.path in selected
        )
        lic = project.license_of(m)
        if m.version == "":
            out.append(BomModule(m.path, "", lic, requires=requires))
            continue
        origin = project.origin(m)
        replace = replacement_text(origin)
        if not isinstance(origin, Fetched):  # a directory: no index, no hashes
            out.append(BomModule(m.path, m.version, lic, replace=replace, requires=requires))
            continue
        idx = project.index(origin)
        mod_h1 = next(iter(project.sums.hashes(origin.path, origin.version + "/wgt.mod")), None)
        repo = idx.build.get("repository") if isinstance(idx.build, dict) else None
        url = repo.get("url") if isinstance(repo, dict) else None
        out.append(
            BomModule(
                m.path,
                m.version,
                lic,
                h1=idx.h1(),
                mod_h1=mod_h1,
                commit=idx.commit,
                repository=url if isinstance(url, str) else None,
                replace=replace,
                requires=requires,
                files=tuple(BomFile(e.path, e.sha256, e.size) for e in idx.files),
                signers=_signers(project, trust, origin, idx),
            )
        )
    return out


def _signers(project: Project, trust: Any, origin: Fetched, idx: Any) -> tuple[str, ...]:
    """The signer of ``origin``'s cached signature, checked again against the trust line
    that covers it; ``()`` when none covers it, or it does not verify (``verify`` says why)."""
    if trust is None or not trust.covers(origin.path):
        return ()
    from ._errors import WgtpmError
    from .trust import BadSignature, signed_by

    sig = project.cache.read_meta(origin.path, origin.version, "sig")
    try:
        trust.check(origin.path, origin.version, {e.path: e.sha256 for e in idx.files}, sig)
        return (signed_by(sig),) if sig is not None else ()
    except (WgtpmError, BadSignature):
        return ()


def _ref(m: ModuleVersion) -> str:
    return f"{m.path}@{m.version}" if m.version else m.path


def _wgtpm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wgtpm")
    except PackageNotFoundError:
        return "0+unknown"


# ---- CycloneDX ------------------------------------------------------------------------


def cyclonedx_json(modules: list[BomModule]) -> str:
    """The CycloneDX 1.6 JSON document of ``modules`` (the main module first)."""
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6

    components = {m.ref: _component(m) for m in modules}
    bom = Bom()
    main = components[modules[0].ref]
    bom.metadata.component = main
    bom.metadata.tools.components.add(
        Component(type=ComponentType.APPLICATION, name="wgtpm", version=_wgtpm_version())
    )
    for m in modules[1:]:
        bom.components.add(components[m.ref])
    for m in modules:
        bom.register_dependency(components[m.ref], [components[r] for r in m.requires])
    return JsonV1Dot6(bom).output_as_string(indent=2) + "\n"


def _component(m: BomModule) -> Any:
    from cyclonedx.model import (
        ExternalReference,
        ExternalReferenceType,
        HashAlgorithm,
        HashType,
        Property,
        XsUri,
    )
    from cyclonedx.model.component import Component, ComponentType

    props = [
        Property(name=_PROPERTY + k, value=v)
        for k, v in (
            ("h1", m.h1),
            ("mod-h1", m.mod_h1),
            ("commit", m.commit),
            ("replace", m.replace),
            ("license-source", m.license.source if m.license else None),
        )
        if v
    ]
    props += [Property(name=_PROPERTY + "signer", value=s) for s in m.signers]
    refs = []
    if m.repository:
        refs.append(ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(m.repository)))
    files = [
        Component(
            type=ComponentType.FILE,
            name=f.path,
            bom_ref=f"{m.ref}#{f.path}",
            hashes=[HashType(alg=HashAlgorithm.SHA_256, content=f.sha256)],
            properties=[Property(name=_PROPERTY + "size", value=str(f.size))],
        )
        for f in m.files
    ]
    licenses = [_cyclonedx_license(m.license)] if m.license else []
    return Component(
        type=ComponentType.MACHINE_LEARNING_MODEL,
        name=m.path,
        version=m.version or None,
        bom_ref=m.ref,
        licenses=licenses,
        properties=props,
        external_references=refs,
        components=files,
    )


def _cyclonedx_license(lic: ModuleLicense) -> Any:
    """A known SPDX id as ``license.id``; another single license as ``license.name``; an
    expression as ``expression`` (ids the SPDX list does not know written ``LicenseRef-…``)."""
    from cyclonedx.model.license import DisjunctiveLicense, LicenseExpression
    from cyclonedx.spdx import fixup_id

    if lic.parsed is None:
        return DisjunctiveLicense(name=lic.expression)
    if isinstance(lic.parsed, spdx.License) and lic.parsed.exception is None:
        known = fixup_id(lic.parsed.id)
        return DisjunctiveLicense(id=known) if known else DisjunctiveLicense(name=lic.expression)
    return LicenseExpression(_spdx_license(lic, {}))


# ---- SPDX 2.3 ---------------------------------------------------------------------------

_SPDX_ID = re.compile(r"[^A-Za-z0-9.\-]+")
_OPERATOR = {"AND", "OR", "WITH"}


def spdx_json(modules: list[BomModule], now: datetime | None = None) -> str:
    """The SPDX 2.3 JSON document of ``modules`` (the main module first)."""
    when = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ids = {m.ref: f"SPDXRef-Module-{i}-{_spdx_id(m.path)}" for i, m in enumerate(modules)}
    extracted: dict[str, str] = {}
    packages, files, rels = [], [], []
    rels.append(_rel("SPDXRef-DOCUMENT", "DESCRIBES", ids[modules[0].ref]))
    for i, m in enumerate(modules):
        pkg: dict[str, Any] = {
            "SPDXID": ids[m.ref],
            "name": m.path,
            "downloadLocation": m.repository or "NOASSERTION",
            "filesAnalyzed": False,
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": _spdx_license(m.license, extracted),
            "copyrightText": "NOASSERTION",
            "primaryPackagePurpose": "OTHER",
        }
        if m.version:
            pkg["versionInfo"] = m.version
        notes = [f"{k}: {v}" for k, v in (("h1", m.h1), ("wgt.mod h1", m.mod_h1)) if v]
        notes += [f"commit: {m.commit}"] if m.commit else []
        notes += [f"replaced by: {m.replace}"] if m.replace else []
        notes += [f"signer: {s}" for s in m.signers]
        if notes:
            pkg["comment"] = "; ".join(notes)
        packages.append(pkg)
        for j, f in enumerate(m.files):
            fid = f"SPDXRef-File-{i}-{j}"
            files.append(
                {
                    "SPDXID": fid,
                    "fileName": "./" + f.path,
                    "checksums": [{"algorithm": "SHA256", "checksumValue": f.sha256}],
                    "licenseConcluded": "NOASSERTION",
                    "copyrightText": "NOASSERTION",
                }
            )
            rels.append(_rel(ids[m.ref], "CONTAINS", fid))
        rels += [_rel(ids[m.ref], "DEPENDS_ON", ids[r]) for r in m.requires if r in ids]
    doc: dict[str, Any] = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{modules[0].path} build list",
        "documentNamespace": f"https://spdx.org/spdxdocs/wgtpm-{_spdx_id(modules[0].path)}-"
        f"{uuid.uuid4()}",
        "creationInfo": {"created": when, "creators": [f"Tool: wgtpm-{_wgtpm_version()}"]},
        "packages": packages,
        "files": files,
        "relationships": rels,
    }
    if extracted:
        doc["hasExtractedLicensingInfos"] = [
            {"licenseId": ref, "extractedText": text, "name": text}
            for ref, text in sorted(extracted.items())
        ]
    return json.dumps(doc, indent=2) + "\n"


def _spdx_id(text: str) -> str:
    return _SPDX_ID.sub("-", text).strip("-") or "x"


def _rel(a: str, kind: str, b: str) -> dict[str, str]:
    return {"spdxElementId": a, "relationshipType": kind, "relatedSpdxElement": b}


def _spdx_license(lic: ModuleLicense | None, extracted: dict[str, str]) -> str:
    """An SPDX 2.3 license expression for ``lic``: known ids in their canonical spelling,
    others as ``LicenseRef-…`` (recorded in ``extracted``); NOASSERTION when none."""
    if lic is None:
        return "NOASSERTION"
    if lic.parsed is None:  # not an expression: the whole text is one license of its own
        ref = "LicenseRef-" + _spdx_id(lic.expression)
        extracted[ref] = lic.expression
        return ref
    from cyclonedx.spdx import fixup_id

    out = []
    after_with = False
    for word in re.findall(r"\(|\)|[^\s()]+", str(lic.parsed)):
        if word in "()" or word in _OPERATOR:
            out.append(word)
        elif after_with:
            out.append(word)  # an exception id stands as written
        elif word.startswith(("LicenseRef-", "DocumentRef-")):
            # every LicenseRef a document uses is defined in it; a DocumentRef becomes one
            ref = word if word.startswith("LicenseRef-") else "LicenseRef-" + _spdx_id(word)
            extracted[ref] = word
            out.append(ref)
        else:
            known = fixup_id(word.rstrip("+"))
            if known is not None:
                out.append(known + ("+" if word.endswith("+") else ""))
            else:
                ref = "LicenseRef-" + _spdx_id(word)
                extracted[ref] = word
                out.append(ref)
        after_with = word == "WITH"
    return " ".join(out).replace("( ", "(").replace(" )", ")")


def write(project: Project, fmt: str) -> str:
    """The bill of materials of the project's build list in ``fmt`` (one of :data:`FORMATS`)."""
    build = project.build_list()
    modules = collect(project, build)
    return cyclonedx_json(modules) if fmt == "cyclonedx" else spdx_json(modules)
