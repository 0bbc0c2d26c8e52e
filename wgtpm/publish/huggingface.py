"""Publishing a module version to a Hugging Face model repository: ``hf.co/OWNER/REPO[/vN]``.

What consumers read back is :mod:`wgtpm.sources.huggingface`: the git tag
``vX.Y.Z`` of the repository, and at its commit ``wgt.index.json``,
``wgt.mod`` and every file of the index under its own logical path (Hub
paths may hold ``/``). Beside them the commit holds ``wgt.slsa.json``, the
build's SLSA provenance statement (:mod:`._slsa`) and ``wgt.sig``, the
release's signature (:mod:`wgtpm.trust`), which the index does not
list: a source of a repository with a ``wgt.index.json`` reads only what the
index lists, so the statement is no file of the module.

The flow, all or nothing
------------------------
1. **check**: the release is of this target's module; ``HF_TOKEN`` is set;
   the repository exists (create it on the Hub first: ``hf repo create
   OWNER/REPO``); the head of ``main`` is remembered. A tag ``vX.Y.Z`` whose
   index has the same h1 makes the publish a no-op; another h1 is refused,
   naming both.
2. **one commit** (``HfApi.create_commit`` on ``main`` with ``parent_commit``
   the head the check saw, so a change pushed in between is refused by the
   Hub with 412 and reported, not overwritten): every file of the index,
   ``wgt.index.json``, a model card ``README.md`` unless the release ships
   one (YAML metadata: ``library_name: wgtpm``, ``tags`` with ``wgtpm`` and
   the artifact kinds, the module path, version and h1; the ``wgtpm get``
   line and the wgt.sum lines), and the deletion of files the previous
   wgtpm release listed that this one does not hold. Large files go through
   the Hub's LFS (or Xet) upload before the commit, which ``huggingface_hub``
   retries.
3. **verify**: the tree at the new commit holds exactly the release's bytes
   (LFS sha256, or the git blob id of small files).
4. **tag** ``vX.Y.Z`` at that commit (``HfApi.create_tag``).

A failed upload or commit leaves no tag, so no version: at most LFS objects
no commit refers to, or (when tagging failed) an untagged commit that the
next attempt finds unchanged and tags. ``huggingface_hub`` is imported only
when a Hugging Face target talks to the Hub. ``HF_TOKEN`` goes to the
``HF_ENDPOINT`` origin only and is never shown in a message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import index as _index
from .. import module as _module
from .._errors import ModuleError, NotFoundError, UsageError, WgtpmError
from .._report import Reporter
from ..httpclient import redact_url
from ..sources._hosted import git_blob_id, repo_elems
from ..sources.huggingface import DEFAULT_ENDPOINT, HuggingFaceSource
from ..trust import SIG_ASSET
from ._hfhub import BRANCH, INDEX, HubRepo, status_of
from ._slsa import SLSA_ASSET
from ._target import Published, Release, listed_versions, token_needed
from .github import local_files

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["HuggingFaceTarget", "model_card"]

CARD = "README.md"


class HuggingFaceTarget:
    """Publishes releases of ``module`` to its Hugging Face repository (see the module docstring)."""

    def __init__(self, module: str, http: HttpClient, environ: Mapping[str, str]) -> None:
        self.module = _module.normalise(module)
        elems = repo_elems(self.module, "hf.co")
        if elems is None or len(elems) != 2:
            raise UsageError(f"{module}: not a Hugging Face module path (want hf.co/OWNER/REPO)")
        self.repo_id = f"{elems[0]}/{elems[1]}"
        self.http = http
        self.endpoint = (environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        self.token = environ.get("HF_TOKEN") or environ.get("HUGGING_FACE_HUB_TOKEN") or None
        self.hub = HubRepo(http, self.endpoint, self.repo_id, self.token)
        self._head: str | None = None  # the head of main that check() saw

    @property
    def name(self) -> str:
        return f"hf.co/{self.repo_id}"

    # ---- the PublishTarget protocol -------------------------------------------

    def ready(self) -> None:
        if self.token is None:
            raise token_needed(
                self.name,
                "HF_TOKEN",
                f"to a Hugging Face token that can write to {self.repo_id}",
            )

    def published_versions(self, module: str) -> list[str]:
        return listed_versions(self._source(), module)

    def check(self, release: Release) -> None:
        self._check_release(release)
        head = self.hub.branch_head(release)
        self._existing(release)
        self._head = head

    def publish(self, release: Release, reporter: Reporter) -> Published:
        self._check_release(release)
        url = redact_url(f"{self.endpoint}/{self.repo_id}/tree/{release.tag}")
        if self._existing(release):
            reporter.notice(f"{self.name}: tag {release.tag} is already this release")
            return Published(url, created=False)
        files = local_files(release)
        head = self._head or self.hub.branch_head(release)
        ops = self._operations(release, files, head)
        reporter.notice(f"{self.name}: uploading {len(files) + 1} files in one commit")
        oid = self._commit(release, ops, head)
        self._verify(release, oid, files)
        self._tag(release, oid)
        self._head = None
        reporter.notice(f"{self.name}: tagged {release.tag} at commit {oid[:12]}")
        return Published(url, created=True)

    # ---- checks -------------------------------------------------------------------

    def _check_release(self, release: Release) -> None:
        where = f"{release.module}@{release.version}"
        if _module.normalise(release.module) != self.module:
            raise UsageError(
                f"{where}: cannot publish to {self.name}: the target is for module {self.module}"
            )
        for kept, what in ((SLSA_ASSET, "SLSA provenance"), (SIG_ASSET, "signature")):
            if kept in release.files:
                raise UsageError(
                    f"{where}: the release holds {kept}, where {self.name} keeps the "
                    f"release's {what}; rename it"
                )
        self.ready()

    def _existing(self, release: Release) -> bool:
        """Whether tag ``vX.Y.Z`` holds this release already; refused when it holds another."""
        src = self._source()
        try:
            if release.version not in src.versions(release.module):
                return False
        except NotFoundError:
            return False  # no repository: hub.branch_head says what to do
        try:
            data = src.index(release.module, release.version)
            h1 = _index.parse(data, release.module, release.version).h1()
        except ModuleError as exc:
            h1 = f"an index wgtpm cannot read ({exc.message})"
        if h1 != release.h1:
            raise UsageError(
                f"{release.module}@{release.version}: {self.name} has tag {release.tag} "
                f"already, with {h1}; this release is {release.h1}. A published version never "
                "changes: publish a new version"
            )
        return True

    # ---- the commit ----------------------------------------------------------------

    def _operations(
        self, release: Release, files: list[tuple[_index.IndexEntry, Path]], head: str
    ) -> list[Any]:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        ops: list[Any] = [CommitOperationAdd(e.path, str(p)) for e, p in files]
        ops.append(CommitOperationAdd(INDEX, release.index))
        paths = {e.path for e, _ in files} | {INDEX}
        if release.attestation:  # beside the index, outside h1
            ops.append(CommitOperationAdd(SLSA_ASSET, release.attestation))
            paths.add(SLSA_ASSET)
        if release.signature:  # the model-signing bundle over the index (wgtpm.trust)
            ops.append(CommitOperationAdd(SIG_ASSET, release.signature))
            paths.add(SIG_ASSET)
        if CARD not in paths:
            ops.append(CommitOperationAdd(CARD, model_card(release, [e for e, _ in files])))
            paths.add(CARD)
        for stale in sorted(self._previous_files(release, head) - paths):
            ops.append(CommitOperationDelete(stale))
        return ops

    def _previous_files(self, release: Release, head: str) -> set[str]:
        """Files of the previous wgtpm release at ``head`` (its index's paths) still in the tree."""
        old = self.hub.index_paths(release, head)
        return old & set(self.hub.tree(release, head)) if old else set()

    def _commit(self, release: Release, ops: list[Any], head: str) -> str:
        from huggingface_hub import errors

        api = self.hub.api()
        try:
            info = api.create_commit(
                self.repo_id,
                ops,
                commit_message=f"Publish {release.module} {release.version}",
                commit_description=release.notes or None,
                revision=BRANCH,
                parent_commit=head,
            )
        except errors.HfHubHTTPError as exc:
            if status_of(exc) == 412:
                raise ModuleError(
                    release.module,
                    release.version,
                    f"{self.name} changed while publishing: {BRANCH} is no longer at commit "
                    f"{head[:12]}, which the checks saw, so the Hub refused the commit (HTTP 412). "
                    "Nothing was tagged. Look at what changed, then run `wgtpm publish` again",
                ) from exc
            raise self.hub.failed(release, "uploading the files", exc) from exc
        except Exception as exc:  # huggingface_hub's own network and protocol errors
            if isinstance(exc, WgtpmError):
                raise
            raise self.hub.failed(release, "uploading the files", exc) from exc
        return str(info.oid)

    def _verify(
        self, release: Release, oid: str, files: list[tuple[_index.IndexEntry, Path]]
    ) -> None:
        """Refuse to tag a commit whose tree does not hold exactly the release's bytes.

        An LFS file is compared by its sha256 and size, any other by its git blob id.
        """
        tree = self.hub.tree(release, oid)
        index = _index.IndexEntry(
            INDEX, len(release.index), hashlib.sha256(release.index).hexdigest()
        )
        wanted: list[tuple[_index.IndexEntry, Callable[[], bytes]]] = [
            (e, p.read_bytes) for e, p in files
        ]
        wanted.append((index, lambda: release.index))
        if release.attestation:
            att = release.attestation
            entry = _index.IndexEntry(SLSA_ASSET, len(att), hashlib.sha256(att).hexdigest())
            wanted.append((entry, lambda: att))
        if release.signature:
            sig = release.signature
            entry = _index.IndexEntry(SIG_ASSET, len(sig), hashlib.sha256(sig).hexdigest())
            wanted.append((entry, lambda: sig))
        for entry, read in wanted:
            f = tree.get(entry.path)
            if f is None:
                ok = False
            elif f.lfs is not None:
                ok = (f.lfs.sha256, f.lfs.size) == (entry.sha256, entry.size)
            else:
                ok = f.blob_id == git_blob_id(read())
            if not ok:
                raise ModuleError(
                    release.module,
                    release.version,
                    f"commit {oid[:12]} of {self.name} does not hold the release's {entry.path}; "
                    "it was not tagged. Run `wgtpm publish` again",
                )

    def _tag(self, release: Release, oid: str) -> None:
        from huggingface_hub import errors

        api = self.hub.api()
        try:
            api.create_tag(
                self.repo_id,
                tag=release.tag,
                revision=oid,
                tag_message=f"{release.module} {release.version} {release.h1}",
            )
        except errors.HfHubHTTPError as exc:
            if status_of(exc) == 409 and self._existing(release):
                return  # tagged with this very release by a concurrent publish
            raise self.hub.failed(release, f"creating tag {release.tag}", exc) from exc
        except Exception as exc:
            if isinstance(exc, WgtpmError):
                raise
            raise self.hub.failed(release, f"creating tag {release.tag}", exc) from exc

    # ---- the read side ------------------------------------------------------------

    def _source(self) -> HuggingFaceSource:
        """A fresh read side (no refs cached from before this call)."""
        return HuggingFaceSource(self.http, endpoint=self.endpoint, token=self.token or "")


# ---- the model card -----------------------------------------------------------------


def model_card(release: Release, entries: list[_index.IndexEntry]) -> bytes:
    """The ``README.md`` of a release that ships none: YAML metadata, then how to get it.

    The metadata block (what the Hub indexes)::

        ---
        library_name: wgtpm
        license: "apache-2.0"      (when wgt.mod declares it)
        tags:
        - wgtpm
        - wgt
        wgtpm:
          module: "hf.co/acme/tiny"
          version: "v0.1.0"
          h1: "h1:..."
        ---
    """
    q = json.dumps  # a JSON string is a YAML scalar, quoted safely
    kinds = sorted({e.kind for e in entries if e.kind})
    lines = ["---", "library_name: wgtpm", *_card_license(release), "tags:", "- wgtpm"]
    lines += [f"- {q(k)}" for k in kinds]
    lines += [
        "wgtpm:",
        f"  module: {q(release.module)}",
        f"  version: {q(release.version)}",
        f"  h1: {q(release.h1)}",
        "---",
        "",
        f"# {release.module}",
        "",
        f"This repository is the wgtpm module `{release.module}`; its versions are the git tags "
        f"`vX.Y.Z`. This is `{release.version}`. Get it with",
        "",
        "```sh",
        f"wgtpm get {release.module}@{release.version}",
        "```",
        "",
        "`wgtpm get` checks every file against these wgt.sum lines:",
        "",
        "```",
        *release.sum_lines(),
        "```",
        "",
        "| file | artifact | kind | bytes |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{e.path}` | {e.artifact or ''} | {e.kind or ''} | {e.size} |" for e in entries]
    if release.notes:
        lines += ["", "## Release notes", "", release.notes.strip()]
    return ("\n".join(lines) + "\n").encode()


def _card_license(release: Release) -> list[str]:
    """The card's ``license`` lines for the license the release's wgt.mod declares: the Hub
    takes one id (lower case, as its list spells them); an expression goes under
    ``license: other`` with ``license_name``, as the Hub asks for licenses off its list."""
    from .. import spdx
    from ..modfile import parse

    mod = release.files.get("wgt.mod")
    lic = parse(mod.read_bytes(), str(mod)).license if mod is not None else None
    if lic is None:
        return []
    if isinstance(lic.parsed, spdx.License) and lic.parsed.exception is None:
        return [f"license: {json.dumps(lic.parsed.id.lower())}"]
    return ["license: other", f"license_name: {json.dumps(lic.expression)}"]
