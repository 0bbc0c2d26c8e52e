"""Which Hugging Face repositories the registry mirrors, and whether it reaches upstream at all.

``--hf-allow`` (``WGTPM_REGISTRY_HF_ALLOW``) is a comma-separated list of
``OWNER/REPO`` names and ``OWNER/*`` patterns; empty (the default) mirrors
every repository::

    HfPolicy.parse("acme/*,Qwen/Qwen3-0.6B").allows("acme/tiny")   -> True
    HfPolicy.parse("acme/*,Qwen/Qwen3-0.6B").allows("other/tiny")  -> False

The list limits the repositories the caching proxy fetches for the Hub API
(:mod:`registry.hfmirror`); ``hf.co`` modules published here are served
whatever it says. Names compare exactly, though the Hub ignores their case:
the list only grants, so ``acme/*`` refuses ``ACME/x`` rather than let a
spelling it does not name through. ``--offline``
(``WGTPM_REGISTRY_OFFLINE=1``) serves only what is stored: no upstream is
opened, and a revision or file that is not stored is an error that says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["HfPolicy"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class HfPolicy:
    """The allow-list (empty: all) and the offline switch."""

    allow: tuple[str, ...] = ()
    offline: bool = False

    @classmethod
    def parse(cls, allow: str | None, offline: bool = False) -> HfPolicy:
        """``allow`` as ``--hf-allow`` takes it; raises :class:`ValueError` on a bad entry."""
        items = tuple(p.strip() for p in (allow or "").split(",") if p.strip())
        for p in items:
            owner, sep, repo = p.partition("/")
            if not sep or not _NAME.match(owner) or not (repo == "*" or _NAME.match(repo)):
                raise ValueError(
                    f"--hf-allow: {p!r} is not OWNER/REPO or OWNER/* (like acme/*,Qwen/Qwen3-0.6B)"
                )
        return cls(items, offline)

    def allows(self, repo_id: str) -> bool:
        """Whether the repository ``OWNER/REPO`` may be mirrored."""
        if not self.allow:
            return True
        owner = repo_id.partition("/")[0]
        return any(p == repo_id or p == f"{owner}/*" for p in self.allow)
