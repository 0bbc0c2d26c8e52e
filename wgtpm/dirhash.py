"""The h1 hash of a set of files (docs/design.md section 4).

``h1`` is Go's dirhash Hash1. For files named ``a`` and ``b/c``::

    summary = sha256(a) + "  a\\n" + sha256(b/c) + "  b/c\\n"   # hex digests, names sorted
    h1 = "h1:" + base64(sha256(summary))

which is the same as ``sha256sum $(find . -type f | sort) | sha256sum``,
base64-encoded instead of hex. File names must not contain a newline.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping

__all__ = ["hash1", "hash1_bytes"]

PREFIX = "h1:"


def hash1(files: Iterable[tuple[str, str]]) -> str:
    """h1 over (name, hex sha256 of content) pairs, in any order."""
    summary = hashlib.sha256()
    for name, digest in sorted(files):
        if "\n" in name:
            raise ValueError(f"file name contains a newline: {name!r}")
        summary.update(f"{digest}  {name}\n".encode())
    return PREFIX + base64.b64encode(summary.digest()).decode("ascii")


def hash1_bytes(files: Mapping[str, bytes]) -> str:
    """h1 over in-memory files (name -> content)."""
    return hash1((name, hashlib.sha256(data).hexdigest()) for name, data in files.items())
