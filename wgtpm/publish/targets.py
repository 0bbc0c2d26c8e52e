"""Which target a release goes to: ``--to URL``, a directory, or the host of the module path.

================================  ==========================================
``--dry-run`` / ``-o DIR``        :class:`DirectoryTarget` (``dist/`` or DIR)
``--to https://reg.example``      :class:`RegistryTarget` (``WGTPM_TOKEN``)
``--to oci://HOST/NAMESPACE``     ``wgtpm.publish.oci:OciTarget`` (an OCI registry)
``github.com/OWNER/REPO[/DIR]``   ``wgtpm.publish.github:GitHubTarget``
``hf.co/OWNER/REPO``              ``wgtpm.publish.huggingface:HuggingFaceTarget``
a path ``WGTOCI`` names           ``wgtpm.publish.oci:OciTarget`` (its registry, direct)
anything else                     an error: say where with ``--to URL``
================================  ==========================================

A dry run's directory target carries the target the rest of the table
chooses (``--to`` may go with ``--dry-run``), or ``None`` for a module that
would need ``--to``: its published versions are checked as a publish would.

The hosted targets live in their own modules and are imported only when
chosen (:data:`HOSTED`). Each is constructed as ``Cls(module, http,
environ)`` and reads its token and API base from ``environ`` as the matching
source does (``GITHUB_TOKEN``/``GITHUB_API_URL``, ``HF_TOKEN``/``HF_ENDPOINT``).

Every target that speaks HTTP uses the client it is given, and the caller,
which made it, closes it (``with HttpClient() as http: ...``), on every path.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError
from ..httpclient import redact_url
from ..module import source_kind
from ._directory import DirectoryTarget
from ._registry import RegistryTarget
from ._target import PublishTarget

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["DRY_RUN_DIR", "HOSTED", "hosted_target", "select_target"]

#: Where ``--dry-run`` writes, in the package directory.
DRY_RUN_DIR = "dist"

#: Hosted targets: the source kind of a module path -> "module:Class" (imported on use).
HOSTED: dict[str, str] = {
    "github": "wgtpm.publish.github:GitHubTarget",
    "huggingface": "wgtpm.publish.huggingface:HuggingFaceTarget",
}


def hosted_target(kind: str, module: str, http: HttpClient) -> PublishTarget:
    """The target of ``HOSTED[kind]`` for ``module``, over ``http``, from the environment."""
    home, _, cls = HOSTED[kind].partition(":")
    target: PublishTarget = getattr(importlib.import_module(home), cls)(module, http, os.environ)
    return target


def select_target(
    module: str, pkg: Path, http: HttpClient, *, to: str | None, dry_run: bool, out: str | None
) -> PublishTarget:
    """The target of a publish over ``http`` (see the module docstring)."""
    if dry_run or out:
        real = _real_target(module, to, http)
        return DirectoryTarget(Path(out) if out else pkg / DRY_RUN_DIR, real)
    target = _real_target(module, to, http)
    if target is None:
        raise UsageError(
            f"{module} is not hosted on GitHub or Hugging Face, nor named by WGTOCI: say "
            "where to publish it with --to https://REGISTRY or --to oci://REGISTRY/NAMESPACE "
            "(or write a proxy tree with --dry-run or -o DIR)"
        )
    return target


def _real_target(module: str, to: str | None, http: HttpClient) -> PublishTarget | None:
    """The registry of ``--to``, else the hosted target of the module path, else ``None``."""
    if to:
        if to.startswith("oci://"):
            from .oci import OciTarget

            return OciTarget(to, http, os.environ)
        if not to.startswith(("https://", "http://")):
            raise UsageError(
                f"--to {redact_url(to)}: want the registry's URL (https://registry.example, "
                "or oci://REGISTRY/NAMESPACE for an OCI registry)"
            )
        return RegistryTarget(to, http)
    kind = source_kind(module)
    if kind in HOSTED:
        return hosted_target(kind, module, http)
    return _wgtoci_target(module, http)


def _wgtoci_target(module: str, http: HttpClient) -> PublishTarget | None:
    """The OCI registry a module path names through ``WGTOCI`` (as ``direct`` reads it:
    the first element, or the ``PATTERN=HOST[:PORT]`` registry), else ``None``."""
    wgtoci = os.environ.get("WGTOCI", "")
    if not wgtoci:
        return None
    from ..module import match_patterns
    from ..sources.oci import parse_wgtoci

    for pattern, registry in parse_wgtoci(wgtoci):
        if match_patterns(pattern, module):
            from .oci import OciTarget

            where = registry or module.split("/", 1)[0]
            return OciTarget(f"oci://{where}", http, os.environ, direct=True)
    return None
