"""``wgtpm verify --rebuild MODULE@VERSION``: build a dependency again from its commit.

The steps, each refusing with one line when it cannot go on:

1. ``MODULE@VERSION`` must be the build list's version of ``MODULE``, so
   that its index is locked by wgt.sum: the index is fetched and verified
   (every file of it, whatever ``select`` says), and the release's
   ``wgt.provenance.json`` (covered by h1) names the commit and where it lies
   (:class:`~._provenance.SourceRepository`; ``--repo`` overrides the URL);
2. the commit (40 or 64 lower-case hex: :func:`wgtpm.index.is_commit`) is
   fetched from the release's URL (https, http, ssh), or from ``--repo`` (a
   URL, or a local clone), into a private bare repository by a hardened git
   (:func:`._git.checkout_commit`: no option, transport helper, hook or
   clone config can run a program), and exported with ``git archive`` as
   publishing exports HEAD (:func:`._git.export_commit`); the export's
   wgt.mod must be the release's;
3. the export's build list is checked and verified as publishing checks it,
   and every artifact is built by :func:`._build.build_package`, with
   ``SOURCE_DATE_EPOCH`` at the commit's time (it refuses a committed
   ``build/`` symlink, as it does for a publish); a build error names
   module@version and the commit;
4. every file of every artifact is compared with its index entry (the sha256
   locked by h1); for a file that differs, the first differing byte is
   found against the verified copy in the cache.

``wgt.mod`` and ``wgt.provenance.json`` are not artifact files: the first
is compared in step 2, the second only names the commit. The tool versions
of the publisher's build are in the release's SLSA provenance statement
(:mod:`._slsa`), fetched from the first WGTPROXY entry that serves it
(``@v/$version.slsa.json``; through ``direct``, GitHub's release asset or
Hugging Face's file ``wgt.slsa.json``) and used only when its subject is the
release wgt.sum locks;
a release of provenance schema 1 recorded them in ``wgt.provenance.json``
itself. The versions that differ from this machine's are reported
(``tools``), next to the artifacts that differ, as a likely cause; a
release with no statement gets one note saying so.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .._errors import BuildError, UsageError, VerifyError
from .._fs import sha256_file
from .._report import Reporter
from ..index import ReleaseIndex, is_commit
from ..module import ModuleVersion
from ..version import is_valid
from ._build import build_package, first_difference
from ._git import checkout_commit, export_commit, fetch_source, public_url
from ._provenance import (
    PROVENANCE_FILE,
    SourceRepository,
    check_provenance,
    recorded_tools,
    tool_versions,
)
from ._publish import _modfile, verified_build_list
from ._release import MOD_FILE

if TYPE_CHECKING:
    from ..modload.project import Project

__all__ = ["ArtifactCheck", "Difference", "RebuildReport", "rebuild_module"]


@dataclass(frozen=True)
class Difference:
    """One file of an artifact that the rebuild did not reproduce.

    ``offset`` is the first byte that differs (the shorter file's length when
    one is a prefix of the other); ``None`` when only one side has the file.
    """

    path: str
    offset: int | None
    why: str = ""

    def __str__(self) -> str:
        if self.offset is None:
            return f"{self.path} ({self.why})"
        return f"{self.path} (first difference at byte {self.offset})"


@dataclass(frozen=True)
class ArtifactCheck:
    """One artifact of the release: reproduced when ``differences`` is empty."""

    artifact: str
    kind: str
    differences: list[Difference] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return not self.differences

    def line(self) -> str:
        """``xor: reproduced`` or ``xor: differs: FILE (first difference at byte N)``."""
        if self.reproduced:
            return f"{self.artifact}: reproduced"
        more = len(self.differences) - 1
        tail = f" and {more} more file{'s' if more > 1 else ''}" if more else ""
        return f"{self.artifact}: differs: {self.differences[0]}{tail}"


@dataclass(frozen=True)
class RebuildReport:
    """What ``verify --rebuild`` found for one module version."""

    module: str
    version: str
    commit: str
    repository: str
    artifacts: list[ArtifactCheck]
    #: tool -> (the release's version, this machine's), for the tools that differ
    tools: dict[str, tuple[str | None, str | None]]
    #: where the release's tool versions came from (a statement's URL, the provenance), or ""
    environment: str = ""

    @property
    def reproduced(self) -> bool:
        return all(a.reproduced for a in self.artifacts)

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "version": self.version,
            "commit": self.commit,
            "repository": self.repository,
            "reproduced": self.reproduced,
            "artifacts": [
                {
                    "artifact": a.artifact,
                    "kind": a.kind,
                    "status": "reproduced" if a.reproduced else "differs",
                    "differences": [
                        {"path": d.path, "offset": d.offset, "why": d.why} for d in a.differences
                    ],
                }
                for a in self.artifacts
            ],
            "tools": {t: {"release": r, "here": h} for t, (r, h) in sorted(self.tools.items())},
            "environment": self.environment or None,
        }


def rebuild_module(
    project: Project, spec: str, repo: str | None, reporter: Reporter
) -> RebuildReport:
    """Rebuild ``spec`` (``MODULE@VERSION`` of the project's build list); see the module
    docstring. ``repo`` (a local clone or a URL) overrides the repository the release names."""
    from ..modload.buildlist import Fetched
    from ..modload.fetch import open_fetcher

    if project.opts.vendor:
        raise UsageError(
            "verify --rebuild compares with the release in the module cache, not vendor/; "
            "run it with -mod=readonly"
        )
    m = _in_build_list(project, spec)
    origin = project.origin(m)
    if not isinstance(origin, Fetched):
        raise UsageError(
            f"{m.path} is replaced by a local directory in wgt.mod; there is no release to rebuild"
        )
    with open_fetcher(project.opts, project.cache, project.sums) as fetcher:
        idx = fetcher.index(origin.path, origin.version)
        tree = fetcher.download(origin.path, origin.version, None)  # every file, select or not
    where = (origin.path, origin.version)
    commit, source, doc = _provenance(idx, tree)
    url = repo or source.url
    if not url:
        raise UsageError(
            f"{origin.path}@{origin.version}: its provenance names no source repository; "
            f"pass --repo a clone (or the URL) of the repository that holds commit {commit}"
        )
    with tempfile.TemporaryDirectory(prefix="wgtpm-rebuild-") as tmp:
        work = Path(tmp)
        (work / "git").mkdir()
        (work / "src").mkdir()
        try:
            fetch_source(url, given=repo is not None)  # refused before the notice
            reporter.notice(
                f"fetching commit {commit[:12]} of {origin.path} from {public_url(url)}"
            )
            checkout = checkout_commit(
                url, commit, source.dir, work / "git", given=repo is not None
            )
            src = export_commit(checkout, work / "src")
        except UsageError as exc:
            raise UsageError(f"{origin.path}@{origin.version}: {exc}") from exc
        _same_mod(where, src, tree, commit, source.dir)
        mf = _modfile(src)
        try:
            with verified_build_list(src, reporter) as resolver:
                built = build_package(
                    src,
                    mf.artifacts,
                    resolver,
                    reporter,
                    epoch=checkout.epoch,
                    allow_untrained=True,
                )
        except BuildError as exc:
            raise VerifyError(*where, f"commit {commit[:12]}: {exc}") from exc
        checks = _compare(where, idx, tree, {a.name: (a.kind, a.outputs) for a in built})
    theirs, said = _release_tools(idx, doc, reporter)
    return RebuildReport(
        origin.path, origin.version, commit, public_url(url), checks, _tools(theirs), said
    )


def _in_build_list(project: Project, spec: str) -> ModuleVersion:
    path, at, version = spec.partition("@")
    if not path or (at and not is_valid(version)):
        raise UsageError(
            f"{spec}: want MODULE@VERSION with a full version, e.g. github.com/acme/xor-base@v0.1.0"
        )
    found = next((m for m in project.build_list()[1:] if m.path == path), None)
    if found is None:
        raise UsageError(
            f"{path} is not in the build list of {project.path}; run 'wgtpm get {spec}' first "
            "(a rebuild is compared with the release that wgt.sum locks)"
        )
    if at and found.version != version:
        raise UsageError(
            f"the build list has {found.path}@{found.version}, not {version}; "
            f"run 'wgtpm get {spec}' first, or rebuild {found.path}@{found.version}"
        )
    return found


def _provenance(idx: ReleaseIndex, tree: Path) -> tuple[str, SourceRepository, dict[str, Any]]:
    """The commit of the release, where it lies, and the whole verified provenance."""
    where = (idx.module, idx.version)
    entry = idx.entry(PROVENANCE_FILE)
    if entry is None or not idx.commit:
        raise UsageError(
            f"{idx.module}@{idx.version}: its release names no source commit (no "
            f"{PROVENANCE_FILE}; it was not published by wgtpm publish), so it cannot be rebuilt"
        )
    data = (tree / PROVENANCE_FILE).read_bytes()
    if sha256_file(tree / PROVENANCE_FILE) != entry.sha256:
        raise VerifyError(*where, f"{PROVENANCE_FILE} was modified in the cache; run 'wgtpm get'")
    check_provenance(idx, data)  # its commit is the index's, and a git commit
    doc: dict[str, Any] = json.loads(data)
    source = SourceRepository.of(doc) or SourceRepository(None, "")
    d = PurePosixPath(source.dir)
    if source.dir and (d.is_absolute() or ".." in d.parts or "\\" in source.dir):
        raise VerifyError(*where, f"{PROVENANCE_FILE} names the package dir {source.dir!r}")
    if not is_commit(idx.commit):  # what check_provenance holds; git must never see another
        raise VerifyError(*where, f"the commit {idx.commit[:80]!r} is not a git commit")
    return idx.commit, source, doc


def _same_mod(where: tuple[str, str], src: Path, tree: Path, commit: str, subdir: str) -> None:
    """The release's wgt.mod is the commit's, else this is not the commit it was built from."""
    shown = f"{subdir}/{MOD_FILE}" if subdir else MOD_FILE
    try:
        committed = (src / MOD_FILE).read_bytes()
    except OSError as exc:
        raise VerifyError(
            *where, f"commit {commit[:12]} has no {shown}; is --repo the right repository?"
        ) from exc
    if committed != (tree / MOD_FILE).read_bytes():
        raise VerifyError(
            *where,
            f"the release's {MOD_FILE} is not {shown} of commit {commit[:12]}; "
            "is --repo the right repository?",
        )


def _compare(
    where: tuple[str, str],
    idx: ReleaseIndex,
    tree: Path,
    built: Mapping[str, tuple[str, Mapping[str, Path]]],
) -> list[ArtifactCheck]:
    """Each artifact of the release (and of the rebuild) with the files that differ."""
    entries = {e.path: e for e in idx.files if e.artifact is not None}
    names = sorted({e.artifact for e in entries.values() if e.artifact} | set(built))
    out = []
    for name in names:
        kind, outputs = built.get(name, ("", {}))
        released = {p: e for p, e in entries.items() if e.artifact == name}
        kind = kind or next(iter(released.values())).kind or ""
        diffs = []
        for path in sorted(set(released) | set(outputs)):
            if path not in outputs:
                diffs.append(Difference(path, None, "the rebuild did not write it"))
            elif path not in released:
                diffs.append(Difference(path, None, "the release does not hold it"))
            elif sha256_file(outputs[path]) != released[path].sha256:
                cached = tree / path
                if sha256_file(cached) != released[path].sha256:
                    raise VerifyError(*where, f"{path} was modified in the cache; run 'wgtpm get'")
                offset = first_difference(cached, outputs[path])
                diffs.append(Difference(path, offset if offset is not None else 0))
        out.append(ArtifactCheck(name, kind, diffs))
    return out


def _release_tools(
    idx: ReleaseIndex, doc: Mapping[str, Any], reporter: Reporter
) -> tuple[dict[str, str], str]:
    """The tool versions of the release's build and where they were read: the provenance of
    schema 1, else the SLSA statement about this release (:func:`fetch_statement`)."""
    old = recorded_tools(doc)
    if old:
        return old, PROVENANCE_FILE
    from ._slsa import read_envelope, recorded_environment, subject_h1

    where = (idx.module, idx.version)
    found = fetch_statement(*where)
    if found is None:
        reporter.notice(
            f"{idx.module}@{idx.version}: no WGTPROXY entry serves its SLSA provenance "
            "statement, so the tool versions it was built with are unknown"
        )
        return {}, ""
    data, url = found
    try:
        stmt, _, sigs = read_envelope(data)
    except ValueError as exc:
        reporter.warning(f"{url}: not an SLSA provenance statement ({exc}); ignored")
        return {}, ""
    if subject_h1(stmt) != idx.h1():
        reporter.warning(
            f"{url}: the SLSA statement is about other files than the release wgt.sum locks; "
            "ignored"
        )
        return {}, ""
    signed = "signed, not checked against a trust policy" if sigs else "unsigned"
    reporter.notice(f"the release's build environment: the SLSA statement at {url} ({signed})")
    return recorded_environment(stmt), url


def fetch_statement(module: str, version: str) -> tuple[bytes, str] | None:
    """The SLSA statement of ``module@version`` from the first proxy or file tree of
    WGTPROXY that serves one (``direct``: the GitHub release asset or the Hugging Face
    file ``wgt.slsa.json``), with where it was read; ``None`` when none does (``off`` is
    skipped; a module that WGTPRIVATE names is asked of ``direct`` only). Any
    failure moves on to the next entry: the statement is information, not a check."""
    import os

    from .._errors import WgtpmError
    from ..httpclient import HttpClient, redact_url
    from ..module import escape_path, escape_version
    from ..sources.chain import DEFAULT, ChainSource, parse_proxy_list
    from ..sources.proxy import ProxySource
    from ._slsa import SLSA_ASSET

    env = os.environ
    private = ",".join(p for p in (env.get("WGTPRIVATE", ""), env.get("WGTNOPROXY", "")) if p)
    entries = parse_proxy_list(env.get("WGTPROXY", "") or DEFAULT)
    with HttpClient() as http:
        # the chain's own sources for each entry (direct as WGTOCI dispatches it, oci://,
        # proxies); a WGTPRIVATE module is asked of direct only, as the chain does
        chain = ChainSource(
            entries,
            private,
            http,
            oci=env.get("WGTOCI", ""),
            oci_insecure=env.get("WGTOCI_INSECURE", ""),
        )
        for e in chain.entries_for(module):
            if e.url == "off":
                continue
            try:
                src: Any = chain.source(e.url)
                if e.url == "direct":  # a GitHub asset, a Hugging Face file, or a referrer
                    src = src.source_for(module)
                read = getattr(src, "attestation", None)
                if read is None:
                    continue
                data = read(module, version)
            except WgtpmError:
                continue
            if not isinstance(src, ProxySource):
                return data, f"{module}@{version} {SLSA_ASSET} ({src.name})"
            rest = f"{escape_path(module)}/@v/{escape_version(version)}.slsa.json"
            return data, redact_url(f"{src.base}/{rest}")
    return None


def _tools(theirs: Mapping[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """The tools whose versions differ between the release's build and this machine (none
    when the release's are unknown: nothing to compare with)."""
    if not theirs:
        return {}
    ours = tool_versions()
    out: dict[str, tuple[str | None, str | None]] = {}
    for name in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(name), ours.get(name)
        if a != b:
            out[name] = (a if isinstance(a, str) else None, b)
    return out
