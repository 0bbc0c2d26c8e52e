"""The Hugging Face Hub repository that :mod:`wgtpm.publish.huggingface` writes to.

:class:`HubRepo` holds the repository, its endpoint and token, and the
``huggingface_hub`` client (imported at the first call, never on the read
path), and does its reads: the head of ``main``, the tree of a commit, the
paths of the wgtpm index at a commit. Every ``huggingface_hub`` error becomes a
:class:`~wgtpm._errors.ModuleError` here (:meth:`HubRepo.failed`). The commit
and the tag, and what their refusals mean, are the target's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import ModuleError, UsageError, WgtpmError
from ..httpclient import Credential, redact, redact_url, register_userinfo
from ._target import Release

if TYPE_CHECKING:
    from huggingface_hub import HfApi

    from ..httpclient import HttpClient

__all__ = ["BRANCH", "INDEX", "HubRepo", "status_of"]

INDEX = "wgt.index.json"
#: The branch every release is committed to.
BRANCH = "main"
T = TypeVar("T")


class HubRepo:
    """The model repository ``repo_id`` at ``endpoint``; ``token`` (``None``: none) goes
    to the endpoint's origin only."""

    def __init__(self, http: HttpClient, endpoint: str, repo_id: str, token: str | None) -> None:
        self.http = http
        self.endpoint = endpoint
        self.repo_id = repo_id
        register_userinfo(endpoint)
        self.token = token
        self._cred = Credential(endpoint, "Authorization", f"Bearer {token}") if token else None
        self._api_obj: HfApi | None = None

    def tree(self, release: Release, rev: str) -> dict[str, Any]:
        from huggingface_hub.hf_api import RepoFile

        api = self.api()
        entries = self.read(
            release,
            f"listing the files of {rev[:12]}",
            lambda: list(api.list_repo_tree(self.repo_id, recursive=True, revision=rev)),
        )
        return {e.path: e for e in entries if isinstance(e, RepoFile)}

    def api(self) -> HfApi:
        if self._api_obj is None:
            from huggingface_hub import HfApi

            self._api_obj = HfApi(
                endpoint=self.endpoint, token=self.token or False, library_name="wgtpm"
            )
        return self._api_obj

    def read(self, release: Release, what: str, fn: Callable[[], T]) -> T:
        """One read from the Hub, its errors translated."""
        try:
            return fn()
        except WgtpmError:
            raise
        except Exception as exc:  # huggingface_hub's errors, and its HTTP stack's
            raise self.failed(release, what, exc) from exc

    def failed(self, release: Release, what: str, exc: BaseException) -> ModuleError:
        status = status_of(exc)
        hint = ""
        if status in (401, 403):
            hint = f"; HF_TOKEN must be a token that can write to {self.repo_id}"
        lines = str(exc).strip().splitlines()
        first = lines[0][:300] if lines else type(exc).__name__
        return ModuleError(
            release.module,
            release.version,
            redact(f"{what}: {first}{hint}; no tag was created, so nothing is published"),
        )

    def branch_head(self, release: Release) -> str:
        """The commit :data:`BRANCH` is at; refused when the repository is not there."""
        from huggingface_hub import errors

        api = self.api()
        try:
            info = self.read(
                release,
                "reading the repository",
                lambda: api.model_info(self.repo_id, revision=BRANCH),
            )
        except ModuleError as exc:
            if isinstance(exc.__cause__, errors.RepositoryNotFoundError):
                raise UsageError(
                    f"{release.module}@{release.version}: no repository {self.repo_id} at "
                    f"{redact_url(self.endpoint)} that HF_TOKEN can see; create it first "
                    f"(hf repo create {self.repo_id})"
                ) from exc
            raise
        if not isinstance(info.sha, str) or not info.sha:
            raise ModuleError(
                release.module, release.version, f"the Hub did not say which commit {BRANCH} is"
            )
        return info.sha

    def index_paths(self, release: Release, rev: str) -> set[str]:
        """The paths the wgtpm index at ``rev`` lists; none when ``rev`` has no index."""
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        url = f"{self.endpoint}/{self.repo_id}/resolve/{rev}/{INDEX}"
        headers = self._cred.headers_for(url) if self._cred else {}
        try:
            doc = json.loads(self.http.get(url, headers=headers).content)
        except HTTPStatusError as exc:
            if exc.status == 404:
                return set()
            raise ModuleError(release.module, release.version, f"reading {INDEX}: {exc}") from exc
        except (TransportError, ResponseTooLargeError, ValueError) as exc:
            raise ModuleError(release.module, release.version, f"reading {INDEX}: {exc}") from exc
        listed = doc.get("files") if isinstance(doc, dict) else None
        return {
            f["path"]
            for f in listed or []
            if isinstance(f, dict) and isinstance(f.get("path"), str)
        }


def status_of(exc: BaseException) -> int:
    """The HTTP status of a ``huggingface_hub`` error; 0 when it has none."""
    resp = getattr(exc, "response", None)
    status = getattr(resp, "status_code", 0)
    return status if isinstance(status, int) else 0
