"""The program ID of a wgtpm-built program, which anyone can recompute from the bundle.

The ID is the first 32 hex digits of the sha256 of one canonical JSON
document, :func:`wgtpm._fs.canonical_json` in its compact form (keys sorted,
no spaces, UTF-8, Python's ``json.dumps`` number format)::

    {"adapter_sha256": sha256 of adapter.gguf,
     "interpreter":    meta.json's interpreter,
     "pseudo_program": pseudo_program.txt ("" when absent),
     "recipe":         meta.json's compile_by_training.recipe,
     "runtime":        meta.json's runtime (the manifest, base model included),
     "scheme":         "wgtpm-paw/1",
     "spec":           meta.json's spec}

A bundle declares this scheme with ``compile_by_training.program_id_scheme``;
the validator then recomputes the ID and rejects a bundle whose ID does not
match its content. Programs from the PAW hub use the hub's own IDs and are
not recomputed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .._fs import canonical_json

__all__ = ["ID_SCHEME", "program_id"]

ID_SCHEME = "wgtpm-paw/1"
_ID_HEX_DIGITS = 32


def program_id(
    *,
    spec: str,
    pseudo_program: str,
    recipe: Mapping[str, Any],
    interpreter: str,
    runtime: Mapping[str, Any],
    adapter_sha256: str,
) -> str:
    """The program ID of the document above."""
    document = {
        "adapter_sha256": adapter_sha256,
        "interpreter": interpreter,
        "pseudo_program": pseudo_program,
        "recipe": recipe,
        "runtime": runtime,
        "scheme": ID_SCHEME,
        "spec": spec,
    }
    return hashlib.sha256(canonical_json(document)).hexdigest()[:_ID_HEX_DIGITS]
