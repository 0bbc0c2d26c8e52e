"""Where the module cache lives: ``$WGTPM_CACHE``, else the platform's user cache directory.

Apart from :mod:`wgtpm.cache` so that a no-op ``wgtpm get`` finds its stamp
without loading the cache's code (:mod:`wgtpm.modload.stamp`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_root"]


def default_root() -> Path:
    """``$WGTPM_CACHE``, else the platform's cache directory for wgtpm."""
    env = os.environ.get("WGTPM_CACHE")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_cache_dir("wgtpm", appauthor=False))
