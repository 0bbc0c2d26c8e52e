"""Reading JSON that someone else wrote: every failure is a :class:`json.JSONDecodeError`.

:func:`json.loads` raises ``RecursionError`` on deeply nested input,
``UnicodeDecodeError`` on bytes that are not UTF-8, and a plain
``ValueError`` for an integer of more than 4,300 digits. Callers that read
files or answers from elsewhere use :func:`loads` and handle one exception
(``JSONDecodeError``, a ``ValueError``) with the message and position it
carries.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads"]


def loads(data: str | bytes, **kw: Any) -> Any:
    """``json.loads(data, **kw)``, with every way it fails as a ``JSONDecodeError``."""
    try:
        return json.loads(data, **kw)
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:
        raise json.JSONDecodeError("nested too deeply", "", 0) from exc
    except ValueError as exc:  # not UTF-8; a number too long to read
        first = str(exc).split(";")[0]
        raise json.JSONDecodeError(first, "", 0) from exc
